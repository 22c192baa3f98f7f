//! The capture reader on every link type it replays (files written with `pcap-file`'s own
//! writers), what it skips and says, timestamps and pcapng interfaces through
//! `PcapSource` → `PcapSink`, real captures from `shared/data/pcap`, and tshark reading
//! what the sink wrote.

use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
use pcap_file::pcapng::blocks::enhanced_packet::EnhancedPacketBlock;
use pcap_file::pcapng::blocks::interface_description::{
    InterfaceDescriptionBlock, InterfaceDescriptionOption,
};
use pcap_file::pcapng::blocks::simple_packet::SimplePacketBlock;
use pcap_file::pcapng::{Block, PcapNgWriter};
use pcap_file::{DataLink, Endianness, TsResolution};
use pktvec_graph::{Context, Frame, GraphBuilder, GraphConfig, NoError, NoNext, Node, NodeKind};
use pktvec_io::capture::{
    link_type, packet_timestamp, read_capture, to_ethernet, Capture, CaptureIoError, PcapSink,
    PcapSource, PcapSourceNext, SkipReason, SYNTHETIC_DST_MAC, SYNTHETIC_SRC_MAC,
};
use pktvec_packet::{BufferPool, PoolConfig, NO_INTERFACE};
use proptest::prelude::*;
use std::borrow::Cow;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::Duration;

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("pktvec-io-lt-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

/// Writes a pcap of link type `link` (any number) with `pcap-file`'s writer.
fn write_linktype(
    path: &Path,
    link: u32,
    endianness: Endianness,
    ts_resolution: TsResolution,
    packets: &[(Duration, Vec<u8>)],
) {
    let header = PcapHeader {
        datalink: DataLink::from(link),
        endianness,
        ts_resolution,
        snaplen: 65535,
        ..PcapHeader::default()
    };
    let mut w = PcapWriter::with_header(File::create(path).unwrap(), header).unwrap();
    for (ts, data) in packets {
        w.write_packet(&PcapPacket::new(*ts, data.len() as u32, data))
            .unwrap();
    }
}

/// Little-endian, microsecond pcap of `link` with packets 1 s apart from t = 1000 s.
fn read_linktype(name: &str, link: u32, packets: &[Vec<u8>]) -> Capture {
    let path = tmp(name);
    let stamped: Vec<_> = packets
        .iter()
        .enumerate()
        .map(|(i, p)| (Duration::from_secs(1000 + i as u64), p.clone()))
        .collect();
    write_linktype(
        &path,
        link,
        Endianness::Little,
        TsResolution::MicroSecond,
        &stamped,
    );
    read_capture(&path).unwrap()
}

const IPV4: [u8; 20] = [
    0x45, 0, 0, 20, 0, 1, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
];

fn ipv6() -> Vec<u8> {
    let mut p = vec![0x60, 0, 0, 0, 0, 0, 59, 64];
    p.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
    p.extend_from_slice(&[0; 11]);
    p.push(1);
    p.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
    p.extend_from_slice(&[0; 11]);
    p.push(2);
    p
}

/// The frame the reader must make: synthetic destination, `src`, `ethertype`, `payload`.
fn synthetic(src: [u8; 6], ethertype: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = SYNTHETIC_DST_MAC.to_vec();
    f.extend_from_slice(&src);
    f.extend_from_slice(&ethertype.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// A Linux cooked v1 header.
fn sll(addr: &[u8], protocol: u16, payload: &[u8]) -> Vec<u8> {
    let mut h = vec![0, 0, 0, 1]; // to us, ARPHRD_ETHER
    h.extend_from_slice(&(addr.len() as u16).to_be_bytes());
    let mut a = [0u8; 8];
    a[..addr.len().min(8)].copy_from_slice(&addr[..addr.len().min(8)]);
    h.extend_from_slice(&a);
    h.extend_from_slice(&protocol.to_be_bytes());
    h.extend_from_slice(payload);
    h
}

/// A Linux cooked v2 header.
fn sll2(addr: &[u8], protocol: u16, payload: &[u8]) -> Vec<u8> {
    let mut h = protocol.to_be_bytes().to_vec();
    h.extend_from_slice(&[0, 0]); // reserved
    h.extend_from_slice(&3u32.to_be_bytes()); // interface index
    h.extend_from_slice(&1u16.to_be_bytes()); // ARPHRD_ETHER
    h.push(4); // outgoing
    h.push(addr.len() as u8);
    let mut a = [0u8; 8];
    a[..addr.len().min(8)].copy_from_slice(&addr[..addr.len().min(8)]);
    h.extend_from_slice(&a);
    h.extend_from_slice(payload);
    h
}

const MAC: [u8; 6] = [0x00, 0x1b, 0x21, 0xaa, 0xbb, 0xcc];

#[test]
fn synthetic_macs_are_locally_administered_unicast() {
    for mac in [SYNTHETIC_SRC_MAC, SYNTHETIC_DST_MAC] {
        assert_eq!(mac[0] & 0x01, 0, "unicast");
        assert_eq!(mac[0] & 0x02, 0x02, "locally administered");
    }
    assert_ne!(SYNTHETIC_SRC_MAC, SYNTHETIC_DST_MAC);
}

#[test]
fn ethernet_is_kept_as_captured_with_its_timestamps() {
    let frames = vec![vec![0xffu8; 60], vec![1u8; 13], vec![]];
    let cap = read_linktype("eth.pcap", link_type::ETHERNET, &frames);
    assert_eq!(
        cap.packets, frames,
        "Ethernet frames are not checked, runts included"
    );
    assert_eq!(
        cap.timestamps,
        [1000, 1001, 1002].map(Duration::from_secs).to_vec()
    );
    assert_eq!(cap.interfaces, [0, 0, 0]);
    assert_eq!(cap.interface_link_types, [1]);
    assert_eq!(cap.link_types.get(&1), Some(&3));
    assert_eq!((cap.skipped, cap.warning()), (0, None));
}

#[test]
fn the_fcs_bits_of_a_pcap_link_type_field_are_ignored() {
    // 0x30000001: FCS length 3 (without the "present" bit) on Ethernet, as in many of
    // tcpdump's test captures; libpcap reads the low 16 bits only.
    let cap = read_linktype("fcs-bits.pcap", 0x3000_0001, &[vec![0xffu8; 60]]);
    assert_eq!(cap.interface_link_types, [link_type::ETHERNET]);
    assert_eq!(cap.packets, [vec![0xffu8; 60]]);
}

#[test]
fn pcap_timestamps_in_both_resolutions_and_byte_orders() {
    let ts = Duration::new(1_700_000_000, 123_456_789);
    for (res, want) in [
        (TsResolution::NanoSecond, ts),
        (
            TsResolution::MicroSecond,
            Duration::new(1_700_000_000, 123_456_000),
        ),
    ] {
        for endianness in [Endianness::Big, Endianness::Little] {
            let path = tmp("ts.pcap");
            write_linktype(&path, 1, endianness, res, &[(ts, vec![0u8; 60])]);
            let cap = read_capture(&path).unwrap();
            assert_eq!(cap.timestamps, [want], "{res:?} {endianness:?}");
        }
    }
}

#[test]
fn linux_sll_gets_a_synthetic_header_with_the_sender_mac() {
    let v6 = ipv6();
    let vlan = [0x00, 0x64, 0x08, 0x00, 0x45, 0x00]; // TCI 100, then IPv4
    let packets = vec![
        sll(&MAC, 0x0800, &IPV4),
        sll(&MAC, 0x86dd, &v6),
        sll(&[], 0x0806, &[0, 1, 8, 0]), // no address: synthetic source
        sll(&[1, 2, 3, 4, 5, 6, 7, 8], 0x0800, &IPV4), // 8-byte address: synthetic source
        sll(&MAC, 0x8100, &vlan),        // VLAN: the tag follows, as in Ethernet
        sll(&MAC, 0x0004, &[0xaa, 0xaa, 3]), // 802.2 LLC: not an EtherType
        sll(&MAC, 0x0001, &[0xff, 0xff]), // 802.3 (Novell): not an EtherType
        vec![0, 0, 0, 1, 0, 6, 1, 2, 3, 4, 5, 6, 0, 0, 8], // 15 bytes: truncated header
        sll(&MAC, 0x0800, &[]),          // header only: an empty IPv4 frame
    ];
    let cap = read_linktype("sll.pcap", link_type::LINUX_SLL, &packets);
    assert_eq!(
        cap.packets,
        vec![
            synthetic(MAC, 0x0800, &IPV4),
            synthetic(MAC, 0x86dd, &v6),
            synthetic(SYNTHETIC_SRC_MAC, 0x0806, &[0, 1, 8, 0]),
            synthetic(SYNTHETIC_SRC_MAC, 0x0800, &IPV4),
            synthetic(MAC, 0x8100, &vlan),
            synthetic(MAC, 0x0800, &[]),
        ]
    );
    assert_eq!(
        cap.timestamps,
        [1000, 1001, 1002, 1003, 1004, 1008].map(Duration::from_secs)
    );
    assert_eq!(cap.skipped, 3);
    assert_eq!(
        cap.skipped_by_reason.get(&SkipReason::NotEtherType),
        Some(&2)
    );
    assert_eq!(
        cap.skipped_by_reason.get(&SkipReason::TruncatedHeader),
        Some(&1)
    );
    assert!(cap.skipped_by_link_type.is_empty());
    assert_eq!(cap.link_types.get(&113), Some(&9));
    assert_eq!(
        cap.warning().unwrap(),
        "skipped 3 packets: truncated link-layer header 1, SLL protocol not an EtherType 2"
    );
}

#[test]
fn linux_sll2_gets_a_synthetic_header_with_the_sender_mac() {
    let packets = vec![
        sll2(&MAC, 0x0800, &IPV4),
        sll2(&[], 0x86dd, &ipv6()),
        sll2(&MAC, 0x0004, &[0xaa]),
        sll2(&MAC, 0x0800, &[])[..19].to_vec(),
    ];
    let cap = read_linktype("sll2.pcap", link_type::LINUX_SLL2, &packets);
    assert_eq!(
        cap.packets,
        vec![
            synthetic(MAC, 0x0800, &IPV4),
            synthetic(SYNTHETIC_SRC_MAC, 0x86dd, &ipv6()),
        ]
    );
    assert_eq!(cap.skipped, 2);
    assert_eq!(
        cap.skipped_by_reason.get(&SkipReason::NotEtherType),
        Some(&1)
    );
    assert_eq!(
        cap.skipped_by_reason.get(&SkipReason::TruncatedHeader),
        Some(&1)
    );
}

#[test]
fn raw_ip_under_every_number_takes_its_ethertype_from_the_version_nibble() {
    let v6 = ipv6();
    for lt in [
        link_type::RAW,
        link_type::DLT_RAW_12,
        link_type::DLT_RAW_14,
        link_type::IPV4,
        link_type::IPV6,
    ] {
        let packets = vec![
            IPV4.to_vec(),
            v6.clone(),
            vec![0x50, 0, 0, 0], // version 5
            vec![],              // nothing at all
            vec![0x45],          // a version nibble is enough: the graph checks the rest
        ];
        let cap = read_linktype(&format!("raw{lt}.pcap"), lt, &packets);
        assert_eq!(
            cap.packets,
            vec![
                synthetic(SYNTHETIC_SRC_MAC, 0x0800, &IPV4),
                synthetic(SYNTHETIC_SRC_MAC, 0x86dd, &v6),
                synthetic(SYNTHETIC_SRC_MAC, 0x0800, &[0x45]),
            ],
            "link type {lt}"
        );
        assert_eq!(cap.skipped, 2, "link type {lt}");
        assert_eq!(cap.skipped_by_reason.get(&SkipReason::NotIp), Some(&1));
        assert_eq!(
            cap.skipped_by_reason.get(&SkipReason::TruncatedHeader),
            Some(&1)
        );
        assert_eq!(cap.interface_link_types, [lt]);
    }
}

#[test]
fn bsd_null_in_both_byte_orders_and_loop_in_big_endian() {
    let v6 = ipv6();
    let with_af = |af: [u8; 4], p: &[u8]| {
        let mut d = af.to_vec();
        d.extend_from_slice(p);
        d
    };
    // NULL: the family in the writer's byte order, whichever it was; the file's own byte
    // order does not matter.
    for endianness in [Endianness::Little, Endianness::Big] {
        let packets: Vec<(Duration, Vec<u8>)> = [
            with_af(2u32.to_le_bytes(), &IPV4),
            with_af(2u32.to_be_bytes(), &IPV4),
            with_af(24u32.to_le_bytes(), &v6),
            with_af(28u32.to_be_bytes(), &v6),
            with_af(30u32.to_le_bytes(), &v6),
            with_af(30u32.to_be_bytes(), &v6),
            with_af(7u32.to_le_bytes(), &IPV4), // AF_ISO: not IP
            vec![2, 0, 0],                      // too short for the family
        ]
        .into_iter()
        .map(|d| (Duration::from_secs(1), d))
        .collect();
        let path = tmp("null.pcap");
        write_linktype(
            &path,
            link_type::NULL,
            endianness,
            TsResolution::MicroSecond,
            &packets,
        );
        let cap = read_capture(&path).unwrap();
        let v4f = synthetic(SYNTHETIC_SRC_MAC, 0x0800, &IPV4);
        let v6f = synthetic(SYNTHETIC_SRC_MAC, 0x86dd, &v6);
        assert_eq!(
            cap.packets,
            vec![v4f.clone(), v4f, v6f.clone(), v6f.clone(), v6f.clone(), v6f],
            "{endianness:?}"
        );
        assert_eq!(cap.skipped_by_reason.get(&SkipReason::NotIp), Some(&1));
        assert_eq!(
            cap.skipped_by_reason.get(&SkipReason::TruncatedHeader),
            Some(&1)
        );
    }
    // LOOP: big-endian only.
    let cap = read_linktype(
        "loop.pcap",
        link_type::LOOP,
        &[
            with_af(2u32.to_be_bytes(), &IPV4),
            with_af(24u32.to_be_bytes(), &v6),
            with_af(2u32.to_le_bytes(), &IPV4),
        ],
    );
    assert_eq!(
        cap.packets,
        vec![
            synthetic(SYNTHETIC_SRC_MAC, 0x0800, &IPV4),
            synthetic(SYNTHETIC_SRC_MAC, 0x86dd, &v6),
        ]
    );
    assert_eq!(cap.skipped_by_reason.get(&SkipReason::NotIp), Some(&1));
}

#[test]
fn other_link_types_are_counted_per_type_and_named_in_the_warning_and_error() {
    // A file of a link type not replayed: read, counted, refused by PcapSource::open.
    let path = tmp("radiotap.pcap");
    let packets: Vec<_> = (0..4)
        .map(|_| (Duration::from_secs(1), vec![0u8; 40]))
        .collect();
    write_linktype(
        &path,
        127,
        Endianness::Little,
        TsResolution::MicroSecond,
        &packets,
    );
    let cap = read_capture(&path).unwrap();
    assert!(cap.packets.is_empty());
    assert_eq!(cap.skipped, 4);
    assert_eq!(cap.skipped_by_link_type.get(&127), Some(&4));
    assert_eq!(cap.skipped_by_reason.get(&SkipReason::LinkType), Some(&4));
    assert_eq!(
        cap.warning().unwrap(),
        "skipped 4 packets: link type IEEE802_11_RADIOTAP 4"
    );
    let err = PcapSource::open(&path).err().unwrap();
    assert!(matches!(err, CaptureIoError::NothingUsable { .. }));
    assert_eq!(
        err.to_string(),
        format!(
            "{}: no packets pktvec can replay (link types: IEEE802_11_RADIOTAP 4 packets)",
            path.display()
        )
    );
    // A number the registry does not name, and an SLL file whose every packet is skipped
    // for another reason: the error says why.
    let cap = read_linktype("odd.pcap", 4000, &[vec![0u8; 20]]);
    assert_eq!(cap.skipped_by_link_type.get(&4000), Some(&1));
    assert_eq!(
        cap.warning().unwrap(),
        "skipped 1 packet: link type LINKTYPE 4000 1"
    );
    let path = tmp("llc.pcap");
    write_linktype(
        &path,
        link_type::LINUX_SLL,
        Endianness::Little,
        TsResolution::MicroSecond,
        &[
            (Duration::ZERO, sll(&MAC, 0x0004, &[0xaa])),
            (Duration::ZERO, sll(&MAC, 0x0004, &[0xaa])),
        ],
    );
    assert_eq!(
        PcapSource::open(&path).err().unwrap().to_string(),
        format!(
            "{}: no packets pktvec can replay (link types: LINUX_SLL 2 packets; skipped: SLL \
             protocol not an EtherType 2)",
            path.display()
        )
    );
    // A valid file with no packets at all.
    let path = tmp("none.pcap");
    write_linktype(&path, 1, Endianness::Little, TsResolution::MicroSecond, &[]);
    let cap = read_capture(&path).unwrap();
    assert!(cap.packets.is_empty() && cap.warning().is_none());
    assert_eq!(
        PcapSource::open(&path).err().unwrap().to_string(),
        format!(
            "{}: no packets pktvec can replay (the file holds no packets)",
            path.display()
        )
    );
}

#[test]
fn a_cut_file_says_so_in_the_warning() {
    let path = tmp("cut-sll.pcap");
    write_linktype(
        &path,
        link_type::LINUX_SLL,
        Endianness::Little,
        TsResolution::MicroSecond,
        &[
            (Duration::ZERO, sll(&MAC, 0x0800, &IPV4)),
            (Duration::ZERO, sll(&MAC, 0x0004, &[0xaa])),
            (Duration::ZERO, sll(&MAC, 0x0800, &IPV4)),
        ],
    );
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() - 5]).unwrap();
    let cap = read_capture(&path).unwrap();
    assert!(cap.truncated);
    assert_eq!(cap.packets.len(), 1);
    assert_eq!(
        cap.warning().unwrap(),
        "skipped 1 packet: SLL protocol not an EtherType 1; corrupt or cut short after 2 \
         packets (those are kept)"
    );
}

#[test]
fn snaplen_limited_captures_are_read_whole() {
    // tcpdump -s 68: every record's original length is above the header's snaplen, which
    // pcap-file's checked reader refuses; the raw records are fine.
    let path = tmp("snap.pcap");
    let mut bytes = 0xa1b2_c3d4u32.to_le_bytes().to_vec();
    bytes.extend_from_slice(&2u16.to_le_bytes());
    bytes.extend_from_slice(&4u16.to_le_bytes());
    bytes.extend_from_slice(&[0; 8]);
    bytes.extend_from_slice(&68u32.to_le_bytes());
    bytes.extend_from_slice(&link_type::RAW.to_le_bytes());
    for i in 0..3u32 {
        bytes.extend_from_slice(&(100 + i).to_le_bytes());
        bytes.extend_from_slice(&250_000u32.to_le_bytes());
        bytes.extend_from_slice(&20u32.to_le_bytes());
        bytes.extend_from_slice(&1500u32.to_le_bytes());
        bytes.extend_from_slice(&IPV4);
    }
    std::fs::write(&path, &bytes).unwrap();
    let cap = read_capture(&path).unwrap();
    assert_eq!(cap.packets.len(), 3);
    assert!(!cap.truncated);
    assert_eq!(cap.timestamps[2], Duration::new(102, 250_000_000));
}

/// A pcapng: interface 0 Ethernet (default µs timestamps), interface 1 raw IP with
/// nanosecond timestamps, interface 2 radiotap; a packet of an undescribed interface; a
/// simple packet block (interface 0, no timestamp); then a second section whose interface
/// 0 is Linux SLL with 2^-10 s units and a 100 s offset.
fn write_pcapng(path: &Path) {
    let mut w = PcapNgWriter::new(File::create(path).unwrap()).unwrap();
    let iface = |lt: DataLink, opts: Vec<InterfaceDescriptionOption<'static>>| {
        Block::InterfaceDescription(InterfaceDescriptionBlock {
            linktype: lt,
            snaplen: 0,
            options: opts,
        })
    };
    let epb = |id: u32, units: u64, data: Vec<u8>| {
        Block::EnhancedPacket(EnhancedPacketBlock {
            interface_id: id,
            timestamp: Duration::from_nanos(units), // raw units, as pcap-file stores them
            original_len: data.len() as u32,
            data: Cow::Owned(data),
            options: vec![],
        })
    };
    w.write_block(&iface(DataLink::ETHERNET, vec![])).unwrap();
    w.write_block(&iface(
        DataLink::RAW,
        vec![InterfaceDescriptionOption::IfTsResol(9)],
    ))
    .unwrap();
    w.write_block(&iface(DataLink::IEEE802_11_RADIOTAP, vec![]))
        .unwrap();
    w.write_block(&epb(0, 5_000_001, vec![0xee; 60])).unwrap();
    w.write_block(&epb(1, 7_000_000_123, IPV4.to_vec()))
        .unwrap();
    w.write_block(&epb(2, 1, vec![0; 30])).unwrap();
    w.write_block(&epb(1, 8_000_000_000, ipv6())).unwrap();
    w.write_block(&Block::SimplePacket(SimplePacketBlock {
        original_len: 60,
        data: Cow::Owned(vec![0xdd; 60]),
    }))
    .unwrap();
    let mut file = w.into_inner();
    // An EPB naming interface 9, which no IDB describes, written by hand.
    let mut body = 9u32.to_le_bytes().to_vec();
    body.extend_from_slice(&[0; 8]);
    body.extend_from_slice(&4u32.to_le_bytes());
    body.extend_from_slice(&4u32.to_le_bytes());
    body.extend_from_slice(&[0x45, 0, 0, 4]);
    let total = (12 + body.len()) as u32;
    use std::io::Write;
    file.write_all(&6u32.to_le_bytes()).unwrap();
    file.write_all(&total.to_le_bytes()).unwrap();
    file.write_all(&body).unwrap();
    file.write_all(&total.to_le_bytes()).unwrap();
    // A second section.
    let mut w = PcapNgWriter::new(file).unwrap();
    w.write_block(&iface(
        DataLink::LINUX_SLL,
        vec![
            InterfaceDescriptionOption::IfTsResol(0x80 | 10),
            InterfaceDescriptionOption::IfTsOffset(100),
        ],
    ))
    .unwrap();
    w.write_block(&epb(0, 2048, sll(&MAC, 0x0800, &IPV4)))
        .unwrap();
    w.into_inner().flush().unwrap();
}

#[test]
fn pcapng_interfaces_keep_their_link_types_and_timestamp_units() {
    let path = tmp("multi.pcapng");
    write_pcapng(&path);
    let cap = read_capture(&path).unwrap();
    assert!(!cap.truncated);
    assert_eq!(cap.interface_link_types, [1, 101, 127, 113]);
    assert_eq!(
        cap.packets,
        vec![
            vec![0xee; 60],
            synthetic(SYNTHETIC_SRC_MAC, 0x0800, &IPV4),
            synthetic(SYNTHETIC_SRC_MAC, 0x86dd, &ipv6()),
            vec![0xdd; 60],
            synthetic(MAC, 0x0800, &IPV4),
        ]
    );
    assert_eq!(cap.interfaces, [0, 1, 1, 0, 3]);
    assert_eq!(
        cap.timestamps,
        [
            Duration::new(5, 1_000), // 5_000_001 µs
            Duration::new(7, 123),   // ns
            Duration::new(8, 0),     // ns
            Duration::new(8, 0),     // no timestamp: its predecessor's
            Duration::new(102, 0),   // 2048 / 1024 s + 100 s
        ]
    );
    assert_eq!(
        cap.link_types
            .iter()
            .map(|(&k, &v)| (k, v))
            .collect::<Vec<_>>(),
        [(1, 2), (101, 2), (113, 1), (127, 1)]
    );
    assert_eq!(cap.skipped, 2);
    assert_eq!(cap.skipped_by_link_type.get(&127), Some(&1));
    assert_eq!(
        cap.skipped_by_reason.get(&SkipReason::UnknownInterface),
        Some(&1)
    );
    assert_eq!(
        cap.warning().unwrap(),
        "skipped 2 packets: link type IEEE802_11_RADIOTAP 1, undescribed pcapng interface 1"
    );
}

/// Records what reaches it: receive interface, timestamp, bytes.
#[derive(Default)]
struct Recorder {
    seen: Vec<(u16, Option<Duration>, Vec<u8>)>,
}

impl Node for Recorder {
    type Next = NoNext;
    type Error = NoError;
    const KIND: NodeKind = NodeKind::Sink;
    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        for &bi in frame.buffers() {
            let m = cx.pool().meta(bi);
            self.seen
                .push((m.rx_if, packet_timestamp(m), cx.pool().data(bi).to_vec()));
        }
        cx.free_frame(frame);
    }
}

fn record(src: PcapSource, pool: PoolConfig, vector: usize) -> (Recorder, u64) {
    let mut b = GraphBuilder::new(GraphConfig {
        vector_size: vector,
        ..GraphConfig::default()
    });
    b.add("pcap", src)
        .add("rec", Recorder::default())
        .set_next("pcap", PcapSourceNext::Out, "rec");
    let mut g = b.build(BufferPool::new(pool).unwrap()).unwrap();
    g.run_until_idle();
    let c = g.conservation();
    assert!(c.is_balanced(), "{c}");
    let no_buffer = g.node::<PcapSource>("pcap").unwrap().no_buffer();
    assert_eq!(g.errors().count("pcap", "no buffer"), no_buffer);
    assert_eq!(c.dropped_without_buffer, no_buffer);
    let rec = std::mem::take(g.node_mut::<Recorder>("rec").unwrap());
    (rec, no_buffer)
}

#[test]
fn each_pcapng_interface_arrives_on_its_own_rx_interface_with_its_timestamp() {
    let path = tmp("multi-rx.pcapng");
    write_pcapng(&path);
    let cap = read_capture(&path).unwrap();
    let want_ts = cap.timestamps.clone();
    let want_data = cap.packets.clone();
    let src = PcapSource::open(&path).unwrap().with_rx_interface(10);
    assert_eq!(
        src.capture().skipped,
        2,
        "the counts stay visible on the node"
    );
    let (rec, no_buffer) = record(src, PoolConfig::default(), 256);
    assert_eq!(no_buffer, 0);
    assert_eq!(
        rec.seen.iter().map(|s| s.0).collect::<Vec<_>>(),
        [10, 11, 11, 10, 13]
    );
    assert_eq!(
        rec.seen.iter().map(|s| s.1.unwrap()).collect::<Vec<_>>(),
        want_ts
    );
    assert_eq!(
        rec.seen.iter().map(|s| s.2.clone()).collect::<Vec<_>>(),
        want_data
    );
    // Without timestamps in the metadata, and with no receive interface.
    let src = PcapSource::open(&path)
        .unwrap()
        .with_timestamps(false)
        .with_rx_interface(NO_INTERFACE);
    let (rec, _) = record(src, PoolConfig::default(), 256);
    assert!(rec
        .seen
        .iter()
        .all(|s| s.0 == NO_INTERFACE && s.1.is_none()));
    // Past the last interface number: none.
    let src = PcapSource::open(&path)
        .unwrap()
        .with_rx_interface(u16::MAX - 2);
    let (rec, _) = record(src, PoolConfig::default(), 256);
    assert_eq!(
        rec.seen.iter().map(|s| s.0).collect::<Vec<_>>(),
        [
            u16::MAX - 2,
            u16::MAX - 1,
            u16::MAX - 1,
            u16::MAX - 2,
            NO_INTERFACE
        ]
    );
}

#[test]
fn a_short_pool_drops_and_counts_what_finds_no_buffer() {
    let packets: Vec<Vec<u8>> = (0..100u8).map(|i| vec![i; 60]).collect();
    let cap = Capture {
        packets: packets.clone(),
        ..Default::default()
    };
    // 16 buffers, vectors of 64: the first poll gets 16 of the 64 it wants and drops 48,
    // as a NIC with an empty ring does; the second wants the last 36, gets 16, drops 20.
    let pool = PoolConfig {
        buffers: 16,
        ..PoolConfig::default()
    };
    let (rec, no_buffer) = record(PcapSource::new(cap), pool, 64);
    let want: Vec<Vec<u8>> = packets[..16]
        .iter()
        .chain(&packets[64..80])
        .cloned()
        .collect();
    assert_eq!(rec.seen.into_iter().map(|s| s.2).collect::<Vec<_>>(), want);
    assert_eq!(no_buffer, 48 + 20);
    // Enough buffers: none.
    let cap = Capture {
        packets,
        ..Default::default()
    };
    let (_, no_buffer) = record(PcapSource::new(cap), PoolConfig::default(), 64);
    assert_eq!(no_buffer, 0);
}

/// Replays `input` through `PcapSource` → `PcapSink`, checking the output file is complete
/// while the graph still holds the sink; returns the output path.
fn replay_to_pcap(input: &Path, out_name: &str) -> PathBuf {
    let out = tmp(out_name);
    let src = PcapSource::open(input).unwrap();
    let want = src.capture().clone();
    let mut b = GraphBuilder::new(GraphConfig::default());
    b.add("pcap", src)
        .add("out", PcapSink::create(&out).unwrap())
        .set_next("pcap", PcapSourceNext::Out, "out");
    // Room for the largest frames of the real captures (2,952 bytes), none cut.
    let pool = PoolConfig {
        data_room: 9216,
        ..PoolConfig::default()
    };
    let mut g = b.build(BufferPool::new(pool).unwrap()).unwrap();
    assert_eq!(g.run_until_idle(), want.packets.len() as u64);
    assert_eq!(g.node::<PcapSource>("pcap").unwrap().truncated_to_room(), 0);
    // Flushed after every vector: complete before the sink is closed or dropped.
    let back = read_capture(&out).unwrap();
    assert!(!back.truncated);
    assert_eq!(back.packets.len(), want.packets.len());
    for (i, (b, w)) in back.packets.iter().zip(&want.packets).enumerate() {
        assert!(
            b == w,
            "{} #{i}: {} bytes back, {} in",
            input.display(),
            b.len(),
            w.len()
        );
    }
    let micros = |t: &Duration| Duration::from_micros(t.as_micros() as u64);
    assert_eq!(
        back.timestamps,
        want.timestamps.iter().map(micros).collect::<Vec<_>>(),
        "original timestamps, to the microsecond"
    );
    assert_eq!(back.interface_link_types, [link_type::ETHERNET]);
    let sink = g.node_mut::<PcapSink>("out").unwrap();
    assert_eq!(sink.written(), want.packets.len() as u64);
    sink.flush().unwrap();
    sink.finish().unwrap();
    sink.finish().unwrap();
    out
}

#[test]
fn a_finished_sink_frees_what_reaches_it_unwritten() {
    let out = tmp("finished.pcap");
    let cap = Capture {
        packets: vec![vec![0u8; 60]; 10],
        ..Default::default()
    };
    let mut b = GraphBuilder::new(GraphConfig {
        vector_size: 4,
        ..GraphConfig::default()
    });
    b.add("pcap", PcapSource::new(cap))
        .add("out", PcapSink::create(&out).unwrap())
        .set_next("pcap", PcapSourceNext::Out, "out");
    let mut g = b
        .build(BufferPool::new(PoolConfig::default()).unwrap())
        .unwrap();
    g.run_once();
    assert_eq!(read_capture(&out).unwrap().packets.len(), 4);
    g.node_mut::<PcapSink>("out").unwrap().finish().unwrap();
    g.run_until_idle();
    let sink = g.node::<PcapSink>("out").unwrap();
    assert_eq!((sink.unwritten(), sink.errors()), (6, 0));
    assert!(g.conservation().is_balanced());
    assert_eq!(read_capture(&out).unwrap().packets.len(), 4);
}

/// `frame.protocols` of every packet of `path`, if tshark is installed.
fn tshark_protocols(path: &Path) -> Option<Vec<String>> {
    let out = std::process::Command::new("tshark")
        .args([
            "-r",
            path.to_str()?,
            "-T",
            "fields",
            "-e",
            "frame.protocols",
        ])
        .output()
        .ok()?;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_string)
            .collect(),
    )
}

#[test]
fn sll_raw_ip_and_null_replayed_into_a_pcap_sink_read_back_in_tshark_as_ip() {
    let v6 = ipv6();
    let null = |af: u32, p: &[u8]| {
        let mut d = af.to_le_bytes().to_vec();
        d.extend_from_slice(p);
        d
    };
    let t = |i: u64| Duration::new(1_600_000_000 + i, 250_000);
    let inputs: [(&str, u32, Vec<Vec<u8>>); 4] = [
        (
            "in-sll.pcap",
            link_type::LINUX_SLL,
            vec![sll(&MAC, 0x0800, &IPV4), sll(&MAC, 0x86dd, &v6)],
        ),
        (
            "in-sll2.pcap",
            link_type::LINUX_SLL2,
            vec![sll2(&MAC, 0x0800, &IPV4), sll2(&MAC, 0x86dd, &v6)],
        ),
        (
            "in-raw.pcap",
            link_type::RAW,
            vec![IPV4.to_vec(), v6.clone()],
        ),
        (
            "in-null.pcap",
            link_type::NULL,
            vec![null(2, &IPV4), null(30, &v6)],
        ),
    ];
    for (name, lt, packets) in inputs {
        let input = tmp(name);
        let stamped: Vec<_> = packets
            .into_iter()
            .enumerate()
            .map(|(i, p)| (t(i as u64), p))
            .collect();
        write_linktype(
            &input,
            lt,
            Endianness::Little,
            TsResolution::MicroSecond,
            &stamped,
        );
        let out = replay_to_pcap(&input, &format!("out-{name}"));
        if let Some(protocols) = tshark_protocols(&out) {
            assert_eq!(
                protocols,
                ["eth:ethertype:ip", "eth:ethertype:ipv6"],
                "{name}"
            );
        } else {
            eprintln!("tshark not installed: not checking {name} with it");
        }
    }
}

fn shared_pcap(rel: &str) -> Option<PathBuf> {
    let base = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/pcap");
    let path = base.join(rel);
    if path.exists() {
        Some(path)
    } else {
        eprintln!(
            "skipping {rel}: shared data not present at {}",
            base.display()
        );
        None
    }
}

#[test]
fn real_sll_sll2_raw_ip_and_null_captures_replay_and_read_back_in_tshark() {
    for (rel, lt, n) in [
        (
            "pcapplusplus/mixed/linux-sll.pcap",
            link_type::LINUX_SLL,
            518,
        ),
        ("pcapplusplus/mixed/raw-ip.pcap", link_type::RAW, 100),
        ("zeek/linuxsll-arp.pcap", link_type::LINUX_SLL, 12),
        ("zeek/linux_dlt_sll2.pcap", link_type::LINUX_SLL2, 6),
        ("zeek/rotation.pcap", link_type::RAW, 20),
        ("zeek/tunnels/socks.pcap", link_type::NULL, 18),
        ("zeek/udp-multiple-source-ports.pcap", link_type::NULL, 3),
        ("zeek/icmp/icmp6-mldv2.pcap", link_type::IPV6, 5),
    ] {
        let Some(path) = shared_pcap(rel) else {
            continue;
        };
        let cap = read_capture(&path).unwrap();
        assert_eq!(cap.packets.len(), n, "{rel}");
        assert_eq!((cap.skipped, cap.truncated), (0, false), "{rel}");
        assert_eq!(cap.interface_link_types, [lt], "{rel}");
        assert_eq!(cap.link_types.get(&lt), Some(&(n as u64)));
        assert_eq!(cap.timestamps.len(), n);
        assert!(cap.timestamps.windows(2).all(|w| w[0] <= w[1]), "{rel}");
        assert!(cap.timestamps[0] > Duration::from_secs(1_000_000_000));
        // Every frame starts with the synthetic destination and an IP, ARP or RARP
        // EtherType.
        for f in &cap.packets {
            assert_eq!(f[..6], SYNTHETIC_DST_MAC);
            assert!(
                [[0x08, 0x00], [0x86, 0xdd], [0x08, 0x06], [0x80, 0x35]].contains(&[f[12], f[13]]),
                "{rel}: {:02x?}",
                &f[..14]
            );
        }
        let out = replay_to_pcap(&path, &format!("real-{lt}-{n}.pcap"));
        // tshark dissects the same IP layers in the replayed file as in the original.
        if let (Some(orig), Some(back)) = (tshark_protocols(&path), tshark_protocols(&out)) {
            assert_eq!(back.len(), n);
            let ip_layers = |p: &String| {
                p.split(':')
                    .filter(|l| ["ip", "ipv6", "tcp", "udp", "arp", "icmp", "icmpv6"].contains(l))
                    .collect::<Vec<_>>()
                    .join(":")
            };
            for (i, (o, b)) in orig.iter().zip(&back).enumerate() {
                assert!(b.starts_with("eth:ethertype:"), "{rel} #{i}: {b}");
                assert_eq!(ip_layers(o), ip_layers(b), "{rel} #{i}: {o} vs {b}");
            }
        }
    }
}

#[test]
fn a_radiotap_capture_is_an_error_naming_its_link_type() {
    let Some(path) = shared_pcap("zeek/arp-who-has-radiotap.pcap") else {
        return;
    };
    let cap = read_capture(&path).unwrap();
    assert!(cap.packets.is_empty());
    assert!(cap.skipped > 0);
    assert_eq!(cap.skipped_by_link_type.get(&127), Some(&cap.skipped));
    let err = PcapSource::open(&path).err().unwrap().to_string();
    assert!(
        err.contains("no packets pktvec can replay (link types: IEEE802_11_RADIOTAP "),
        "{err}"
    );
    assert!(err.starts_with(&path.display().to_string()), "{err}");
}

proptest! {
    #[test]
    fn conversion_never_panics_and_keeps_the_payload(
        lt in prop_oneof![
            Just(0u32), Just(1), Just(12), Just(14), Just(101), Just(108), Just(113),
            Just(228), Just(229), Just(276), any::<u32>()
        ],
        data in proptest::collection::vec(any::<u8>(), 0..64),
    ) {
        match to_ethernet(lt, &data) {
            Ok(frame) if lt == link_type::ETHERNET => prop_assert_eq!(frame, data),
            Ok(frame) => {
                prop_assert!(frame.len() >= 14);
                prop_assert_eq!(&frame[..6], &SYNTHETIC_DST_MAC[..]);
                // The payload is the packet's tail after its link-layer header.
                prop_assert!(data.ends_with(&frame[14..]));
            }
            Err(SkipReason::LinkType) => prop_assert!(!link_type::is_replayed(lt)),
            Err(_) => prop_assert!(link_type::is_replayed(lt)),
        }
    }

    #[test]
    fn any_file_after_a_valid_header_reads_without_panicking(
        lt in prop_oneof![Just(0u32), Just(1), Just(101), Just(108), Just(113), Just(276), any::<u32>()],
        tail in proptest::collection::vec(any::<u8>(), 0..300),
        ng in any::<bool>(),
    ) {
        let path = tmp(&format!("fuzz-{}.cap", u8::from(ng)));
        let mut bytes = Vec::new();
        if ng {
            // SHB (28 bytes, little-endian), then an IDB of the link type.
            bytes.extend_from_slice(&[0x0a, 0x0d, 0x0d, 0x0a, 28, 0, 0, 0, 0x4d, 0x3c, 0x2b, 0x1a, 1, 0, 0, 0]);
            bytes.extend_from_slice(&[0xff; 8]);
            bytes.extend_from_slice(&[28, 0, 0, 0]);
            bytes.extend_from_slice(&[1, 0, 0, 0, 20, 0, 0, 0]);
            bytes.extend_from_slice(&(lt as u16).to_le_bytes());
            bytes.extend_from_slice(&[0, 0, 0, 0, 0, 0, 20, 0, 0, 0]);
        } else {
            bytes.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
            bytes.extend_from_slice(&[2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
            bytes.extend_from_slice(&65535u32.to_le_bytes());
            bytes.extend_from_slice(&lt.to_le_bytes());
        }
        bytes.extend_from_slice(&tail);
        std::fs::write(&path, &bytes).unwrap();
        if let Ok(cap) = read_capture(&path) {
            prop_assert_eq!(cap.packets.len(), cap.timestamps.len());
            prop_assert_eq!(cap.packets.len(), cap.interfaces.len());
            let seen: u64 = cap.link_types.values().sum();
            let unknown_if = cap.skipped_by_reason.get(&SkipReason::UnknownInterface).copied().unwrap_or(0);
            prop_assert_eq!(seen + unknown_if, cap.packets.len() as u64 + cap.skipped);
            let _ = cap.warning();
            let _ = cap.ensure_replayable(&path);
        }
    }
}
