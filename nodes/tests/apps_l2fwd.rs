//! l2fwd (`pktvec_nodes::apps::l2fwd`) end to end through pcap files: generated traffic
//! between the stations of the MAC table (IPv4, IPv6, ARP, NDN, unknown EtherTypes and
//! malformed frames, runts included) plus broadcast, multicast, unknown-unicast and
//! same-interface frames, one input pcap per receive interface, one output pcap per transmit
//! interface. Every output frame is checked against a switch model computed here (known
//! destination → its station's interface, bytes unchanged; broadcast/multicast/unknown →
//! one copy on every other interface, or dropped by policy; destination on the receiving
//! interface → filtered; shorter than an Ethernet header → dropped), every input is
//! accounted for, and in + flood copies = out + drops by reason.

mod apps_common;

use apps_common::*;

use pktvec_io::generator::Generator;
use pktvec_io::profile::TrafficProfile;
use pktvec_nodes::apps::l2fwd::{station_mac, L2fwd, L2fwdConfig};
use pktvec_nodes::l2::{L2Forward, UnknownUnicast};
use pktvec_packet::builder::PacketBuilder;
use pktvec_packet::wire::MacAddr;
use pktvec_packet::PoolConfig;
use std::net::Ipv4Addr;

const PORTS: u16 = 4;
const STATIONS: u32 = 64;

/// The switch model: (transmit interfaces, drop) for a frame received on `rx`.
fn reference(
    frame: &[u8],
    rx: u16,
    policy: UnknownUnicast,
) -> Result<Vec<u16>, (&'static str, &'static str)> {
    if frame.len() < 14 {
        return Err(("l2-learn", "truncated frame"));
    }
    let dst = MacAddr(frame[..6].try_into().unwrap());
    let flood = || (0..PORTS).filter(|&p| p != rx).collect();
    if dst.0[0] & 1 == 1 {
        return Ok(flood()); // broadcast and multicast: always flooded
    }
    // Station i is 02:00:<i big-endian> on interface i % PORTS.
    let i = u32::from_be_bytes(dst.0[2..6].try_into().unwrap());
    let known = dst.0[..2] == [2, 0] && i < STATIONS;
    match (known, policy) {
        (true, _) if (i % PORTS as u32) as u16 == rx => {
            Err(("l2-forward", "destination on the receiving interface"))
        }
        (true, _) => Ok(vec![(i % PORTS as u32) as u16]),
        (false, UnknownUnicast::Drop) => Err(("l2-forward", "unknown unicast")),
        (false, UnknownUnicast::Flood) => Ok(flood()),
    }
}

/// Frames the generator does not make, each from a known station on its own interface.
fn hand_made() -> Vec<(u16, Vec<u8>)> {
    let from = |s: u32, dst: MacAddr| {
        PacketBuilder::ethernet(station_mac(s), dst)
            .ipv4(Ipv4Addr::new(10, 0, 0, s as u8), Ipv4Addr::new(10, 0, 1, 1))
            .udp(1000 + s as u16, 53)
            .payload_len(20 + s as usize)
            .pad_to(60)
            .build()
    };
    let rx = |s: u32| (s % PORTS as u32) as u16;
    vec![
        (rx(1), from(1, MacAddr::BROADCAST)),
        (rx(2), from(2, [0x01, 0x00, 0x5e, 0, 0, 0xfb].into())), // multicast
        (rx(3), from(3, [0x02, 0x99, 0, 0, 0, 1].into())),       // unknown unicast
        (rx(4), from(4, station_mac(STATIONS + 5))),             // unknown station
        (rx(5), from(5, station_mac(9))),                        // 5 and 9 share interface 1
        (rx(6), from(6, station_mac(7))),                        // known
        (rx(7), from(7, station_mac(6))[..12].to_vec()),         // only the MACs
        (rx(8), from(8, station_mac(1))[..13].to_vec()),         // one byte short
        (rx(9), Vec::new()),                                     // empty
    ]
}

fn run(seed: u64, vector_size: usize, policy: UnknownUnicast) {
    let app = L2fwd::new(L2fwdConfig {
        ports: PORTS,
        table_size: STATIONS as usize,
        unknown_unicast: policy,
        ..L2fwdConfig::default()
    })
    .unwrap();
    let profile = TrafficProfile::from_toml(&format!(
        "seed = {seed}\n[mix]\nipv4 = 3.0\nipv6 = 1.0\narp = 0.3\nndn = 0.2\nunknown_ethertype = 0.2\nmalformed = 1.0\nvlan = 0.2\nqinq = 0.1\n[flows]\ncount = 200\n[sizes]\nuniform = {{ min = 64, max = 400 }}\n[l2]\nhosts = {STATIONS}\nports = {PORTS}\n"
    ))
    .unwrap();
    let mut gen = Generator::builder(profile).build().unwrap();
    let mut per_port = vec![Vec::new(); PORTS as usize];
    for _ in 0..2500 {
        let (f, bytes) = gen.next_packet();
        let bytes = bytes.to_vec();
        per_port[gen.flows()[f].rx_if as usize].push(bytes);
    }
    for _ in 0..3 {
        for (rx, f) in hand_made() {
            per_port[rx as usize].push(f);
        }
    }

    let dir = TestDir::new(&format!("apps-l2fwd-{seed}-{vector_size}-{policy:?}"));
    let (g, outputs) = run_through_pcaps(
        &dir,
        &per_port,
        vector_size,
        PoolConfig {
            buffers: 8192,
            ..PoolConfig::default()
        },
        app.entry(),
        PORTS as usize,
        |b| app.add_to(b).output_to_tx.to,
    );

    let mut want: Vec<Vec<Vec<u8>>> = vec![Vec::new(); PORTS as usize];
    let mut want_drops = Vec::new();
    let (mut n_in, mut copies) = (0u64, 0u64);
    for (rx, pkts) in per_port.iter().enumerate() {
        for f in pkts {
            n_in += 1;
            match reference(f, rx as u16, policy) {
                Ok(ports) => {
                    copies += ports.len() as u64 - 1;
                    for p in ports {
                        want[p as usize].push(f.clone()); // a switch does not touch the bytes
                    }
                }
                Err(d) => want_drops.push(d),
            }
        }
    }
    for p in 0..PORTS as usize {
        assert_same_frames(
            &format!("l2fwd port {p} (seed {seed}, V {vector_size}, {policy:?})"),
            &outputs[p],
            &want[p],
        );
    }
    let want_drops = count_drops(&want_drops);
    assert_eq!(drops(&g), want_drops, "drops by reason");

    // Conservation with flooding: every flood copy is a packet the graph made.
    let (flood_copies, no_buffer) = g.node::<L2Forward>("l2-forward").unwrap().flood_counters();
    assert_eq!((flood_copies, no_buffer), (copies, 0));
    let c = g.conservation();
    let n_out: u64 = outputs.iter().map(|o| o.len() as u64).sum();
    assert_eq!(c.input, n_in);
    assert_eq!(c.output, n_out);
    assert_eq!(c.input + flood_copies, c.output + c.dropped, "{c}");
    assert_eq!(c.dropped, c.dropped_by_reason, "{c}");
    assert_eq!(c.dropped, want_drops.values().sum::<u64>());
    assert_eq!((c.in_flight, c.buffers_in_use), (0, 0));
    // Learning saw only stations on their own interfaces: the table did not change.
    for s in 0..STATIONS {
        assert_eq!(app.fib().port(station_mac(s)), Some(s % PORTS as u32));
    }
    assert!(n_out > 2000, "{n_out} forwarded");
}

#[test]
fn l2fwd_flood_pcap_matches_switch_model() {
    run(31, 256, UnknownUnicast::Flood);
}

#[test]
fn l2fwd_drop_policy_pcap_matches_switch_model() {
    run(32, 256, UnknownUnicast::Drop);
}

#[test]
fn l2fwd_small_vectors_pcap_matches_switch_model() {
    run(33, 5, UnknownUnicast::Flood);
}
