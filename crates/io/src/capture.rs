//! pcap and pcapng files: read a capture into memory and replay it into the graph
//! ([`PcapSource`]), write what reaches a node to a pcap file ([`PcapSink`]).
//!
//! Parsing is done by the maintained `pcap-file` crate; this module only adapts it to
//! buffers and nodes. Writing is done here (a 24-byte file header and a 16-byte record
//! header per packet) so the sink can flush its buffer after every vector.
//!
//! ```
//! use pktvec_io::capture::{read_capture, write_pcap};
//! let dir = std::env::temp_dir().join(format!("pktvec-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir)?;
//! let path = dir.join("two.pcap");
//! write_pcap(&path, &[vec![0xffu8; 60], vec![0x01; 64]])?;
//! let cap = read_capture(&path)?;
//! assert_eq!(cap.packets.len(), 2);
//! assert_eq!(cap.packets[1].len(), 64);
//! # std::fs::remove_dir_all(&dir).ok();
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Link types
//!
//! The graph's packets are Ethernet frames, so every packet [`read_capture`] keeps is one:
//!
//! | link type (`LINKTYPE_*`) | number | what the graph gets |
//! |---|---|---|
//! | `ETHERNET` | 1 | the frame as captured |
//! | `LINUX_SLL` (Linux cooked v1) | 113 | a synthetic Ethernet header, EtherType = the SLL protocol field, then the payload after the 16-byte SLL header |
//! | `LINUX_SLL2` (Linux cooked v2) | 276 | the same after the 20-byte SLL2 header |
//! | `RAW` | 101, and DLT 12 and 14 as some files write it | a synthetic Ethernet header, EtherType from the IP version nibble (4: IPv4, 6: IPv6), then the packet |
//! | `IPV4`, `IPV6` | 228, 229 | the same |
//! | `NULL` (BSD loopback) | 0 | a synthetic Ethernet header, EtherType from the 4-byte address family in the writer's byte order (either is recognised): 2 = IPv4; 24, 28, 30 = IPv6 |
//! | `LOOP` (OpenBSD loopback) | 108 | the same, the family in big-endian |
//!
//! The synthetic Ethernet header is 14 bytes: destination [`SYNTHETIC_DST_MAC`], source
//! [`SYNTHETIC_SRC_MAC`] (both locally administered unicast), then the EtherType. For SLL and
//! SLL2 the source is the link-layer address from the cooked header when it is 6 bytes long,
//! so L2 learning still sees the real senders. [`to_ethernet`] is that conversion.
//!
//! Packets that cannot become a frame are skipped and counted ([`Capture::skipped`], by
//! [`SkipReason`] in [`Capture::skipped_by_reason`], and packets of link types not in the
//! table by link type in [`Capture::skipped_by_link_type`]): packets shorter than their
//! link-layer header, SLL/SLL2 protocol values that are not EtherTypes (below 0x0600: 0x0001
//! for 802.3 frames, 0x0004 for 802.2 LLC, CAN, ...), raw IP whose version nibble is neither
//! 4 nor 6, NULL/LOOP families other than IPv4/IPv6, and pcapng packets of an interface the
//! file never described. [`Capture::warning`] names them in one line; a file where nothing
//! is left is an error for [`PcapSource::open`] ([`CaptureIoError::NothingUsable`]).
//!
//! # Timestamps and interfaces
//!
//! Each kept packet keeps its capture timestamp ([`Capture::timestamps`]) and, for pcapng,
//! the interface it was captured on ([`Capture::interfaces`], numbered across the file's
//! sections in order of their Interface Description Blocks; always 0 for pcap). pcapng
//! timestamps honour each interface's `if_tsresol` and `if_tsoffset`.
//!
//! [`PcapSource`] writes the timestamp into the buffer's metadata, in the last 8 bytes of
//! [`BufferMeta::user`] ([`TIMESTAMP_USER_BYTES`]; [`packet_timestamp`] reads it), so it
//! travels with the packet through the graph, and [`PcapSink`] writes it back. A node that
//! uses those bytes of the user area for itself changes the timestamp the sink writes;
//! [`PcapSource::with_timestamps`]`(false)` leaves the user area alone.

use pcap_file::pcap::PcapReader;
use pcap_file::pcapng::blocks::interface_description::InterfaceDescriptionOption;
use pcap_file::pcapng::{Block, PcapNgReader};
use pcap_file::TsResolution;
use pktvec_graph::builtin::SourceError;
use pktvec_graph::{next_nodes, Context, Frame, NoError, NoNext, Node, NodeKind};
use pktvec_packet::{BufferMeta, NO_INTERFACE};
use std::collections::BTreeMap;
use std::fmt;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Destination MAC address of the synthetic Ethernet header put in front of packets
/// captured without one (locally administered, unicast).
///
/// ```
/// use pktvec_io::capture::{to_ethernet, link_type, SYNTHETIC_DST_MAC};
/// let frame = to_ethernet(link_type::RAW, &[0x45, 0, 0, 20])?;
/// assert_eq!(frame[..6], SYNTHETIC_DST_MAC);
/// assert_eq!(SYNTHETIC_DST_MAC[0] & 0b11, 0b10); // locally administered, unicast
/// # Ok::<(), pktvec_io::capture::SkipReason>(())
/// ```
pub const SYNTHETIC_DST_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x02];

/// Source MAC address of the synthetic Ethernet header (locally administered, unicast),
/// unless the cooked (SLL/SLL2) header carried a 6-byte sender address.
///
/// ```
/// use pktvec_io::capture::{to_ethernet, link_type, SYNTHETIC_SRC_MAC};
/// let frame = to_ethernet(link_type::RAW, &[0x60, 0, 0, 0])?;
/// assert_eq!(frame[6..12], SYNTHETIC_SRC_MAC);
/// assert_eq!(frame[12..14], [0x86, 0xdd]);
/// # Ok::<(), pktvec_io::capture::SkipReason>(())
/// ```
pub const SYNTHETIC_SRC_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x01];

/// Link-layer header types (the `LINKTYPE_*` numbers of the tcpdump.org registry, as pcap
/// and pcapng files record them) that [`read_capture`] replays, and their names.
///
/// ```
/// use pktvec_io::capture::link_type;
/// assert!(link_type::is_replayed(link_type::LINUX_SLL));
/// assert!(!link_type::is_replayed(127));
/// assert_eq!(link_type::name(127), "IEEE802_11_RADIOTAP");
/// assert_eq!(link_type::name(12), "RAW (DLT 12)");
/// ```
pub mod link_type {
    use pcap_file::DataLink;

    /// BSD loopback: a 4-byte address family in the writer's byte order, then the packet.
    pub const NULL: u32 = 0;
    /// Ethernet.
    pub const ETHERNET: u32 = 1;
    /// Raw IP under the DLT number some systems write for it (`DLT_RAW` on most BSDs).
    pub const DLT_RAW_12: u32 = 12;
    /// Raw IP under the DLT number OpenBSD writes for it.
    pub const DLT_RAW_14: u32 = 14;
    /// Raw IPv4 or IPv6, told apart by the version nibble.
    pub const RAW: u32 = 101;
    /// OpenBSD loopback: a 4-byte big-endian address family, then the packet.
    pub const LOOP: u32 = 108;
    /// Linux cooked capture, version 1 (16-byte header).
    pub const LINUX_SLL: u32 = 113;
    /// Raw IPv4.
    pub const IPV4: u32 = 228;
    /// Raw IPv6.
    pub const IPV6: u32 = 229;
    /// Linux cooked capture, version 2 (20-byte header).
    pub const LINUX_SLL2: u32 = 276;

    /// True for the link types whose packets [`read_capture`](super::read_capture) turns
    /// into Ethernet frames.
    ///
    /// ```
    /// use pktvec_io::capture::link_type;
    /// assert!(link_type::is_replayed(link_type::NULL));
    /// assert!(!link_type::is_replayed(9)); // PPP
    /// ```
    pub fn is_replayed(link_type: u32) -> bool {
        matches!(
            link_type,
            NULL | ETHERNET
                | DLT_RAW_12
                | DLT_RAW_14
                | RAW
                | LOOP
                | LINUX_SLL
                | IPV4
                | IPV6
                | LINUX_SLL2
        )
    }

    /// The link type's registry name without the `LINKTYPE_` prefix (`"LINUX_SLL"`,
    /// `"IEEE802_11_RADIOTAP"`), `"RAW (DLT 12)"`/`"RAW (DLT 14)"` for the raw-IP DLT
    /// numbers, or `"LINKTYPE <n>"` for a number the registry does not name.
    ///
    /// ```
    /// use pktvec_io::capture::link_type;
    /// assert_eq!(link_type::name(link_type::LINUX_SLL2), "LINUX_SLL2");
    /// assert_eq!(link_type::name(70_000), "LINKTYPE 70000");
    /// ```
    pub fn name(link_type: u32) -> String {
        match link_type {
            DLT_RAW_12 | DLT_RAW_14 => format!("RAW (DLT {link_type})"),
            n => match DataLink::from(n) {
                DataLink::Unknown(n) => format!("LINKTYPE {n}"),
                known => format!("{known:?}"),
            },
        }
    }
}

/// Why [`read_capture`] skipped a packet (see the module documentation).
///
/// ```
/// use pktvec_io::capture::{to_ethernet, link_type, SkipReason};
/// assert_eq!(to_ethernet(link_type::LINUX_SLL, &[0; 10]), Err(SkipReason::TruncatedHeader));
/// assert_eq!(to_ethernet(link_type::RAW, &[0x20; 20]), Err(SkipReason::NotIp));
/// assert_eq!(to_ethernet(127, &[0; 20]), Err(SkipReason::LinkType));
/// assert_eq!(SkipReason::NotEtherType.to_string(), "SLL protocol not an EtherType");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SkipReason {
    /// The packet's link type is not one pktvec replays ([`link_type::is_replayed`]);
    /// counted per link type in [`Capture::skipped_by_link_type`].
    LinkType,
    /// Shorter than its link-layer header (SLL 16 bytes, SLL2 20, NULL/LOOP 4), or a raw
    /// IP packet with no byte at all.
    TruncatedHeader,
    /// An SLL/SLL2 protocol value below 0x0600, which is not an EtherType (0x0001: 802.3
    /// frame, 0x0004: 802.2 LLC frame, 0x000c: CAN, ...).
    NotEtherType,
    /// Raw IP whose version nibble is neither 4 nor 6, or a NULL/LOOP address family that
    /// is neither IPv4 nor IPv6.
    NotIp,
    /// A pcapng packet of an interface no Interface Description Block described.
    UnknownInterface,
}

impl SkipReason {
    /// A short description, as [`Display`](fmt::Display) writes it.
    ///
    /// ```
    /// use pktvec_io::capture::SkipReason;
    /// assert_eq!(SkipReason::TruncatedHeader.describe(), "truncated link-layer header");
    /// ```
    pub fn describe(self) -> &'static str {
        match self {
            SkipReason::LinkType => "link type not replayed",
            SkipReason::TruncatedHeader => "truncated link-layer header",
            SkipReason::NotEtherType => "SLL protocol not an EtherType",
            SkipReason::NotIp => "not IPv4 or IPv6",
            SkipReason::UnknownInterface => "undescribed pcapng interface",
        }
    }
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.describe())
    }
}

const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_IPV6: u16 = 0x86dd;

/// A synthetic Ethernet header from `src`, then `payload`.
fn synthetic_frame(src: &[u8; 6], ethertype: u16, payload: &[u8]) -> Vec<u8> {
    let mut frame = Vec::with_capacity(14 + payload.len());
    frame.extend_from_slice(&SYNTHETIC_DST_MAC);
    frame.extend_from_slice(src);
    frame.extend_from_slice(&ethertype.to_be_bytes());
    frame.extend_from_slice(payload);
    frame
}

/// EtherType of a raw IP packet, from its version nibble.
fn ip_version_ethertype(packet: &[u8]) -> Result<u16, SkipReason> {
    match packet.first().map(|b| b >> 4) {
        None => Err(SkipReason::TruncatedHeader),
        Some(4) => Ok(ETHERTYPE_IPV4),
        Some(6) => Ok(ETHERTYPE_IPV6),
        Some(_) => Err(SkipReason::NotIp),
    }
}

/// EtherType of a BSD address family value.
fn address_family_ethertype(af: u32) -> Option<u16> {
    match af {
        2 => Some(ETHERTYPE_IPV4),
        24 | 28 | 30 => Some(ETHERTYPE_IPV6),
        _ => None,
    }
}

/// The source MAC for a cooked header's address field: the address if it is 6 bytes long.
fn cooked_source(addr_len: u16, addr: &[u8; 8]) -> [u8; 6] {
    match (addr_len, addr.first_chunk::<6>()) {
        (6, Some(mac)) => *mac,
        _ => SYNTHETIC_SRC_MAC,
    }
}

/// A cooked header's protocol field as an EtherType.
fn cooked_ethertype(protocol: u16) -> Result<u16, SkipReason> {
    if protocol >= 0x0600 {
        Ok(protocol)
    } else {
        Err(SkipReason::NotEtherType)
    }
}

/// Turns one captured packet of link type `link_type` (a `LINKTYPE_*` number) into the
/// Ethernet frame the graph replays: Ethernet is copied as it is, the other
/// [replayed link types](link_type::is_replayed) get the synthetic header described in the
/// module documentation. Never panics; a packet that cannot become a frame gives the
/// [`SkipReason`].
///
/// ```
/// use pktvec_io::capture::{to_ethernet, link_type, SYNTHETIC_DST_MAC};
/// // Linux cooked v1: outgoing (4), ARPHRD_ETHER (1), 6-byte address, protocol IPv4.
/// let mut sll = vec![0, 4, 0, 1, 0, 6, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff, 0, 0, 0x08, 0x00];
/// sll.extend_from_slice(&[0x45, 0, 0, 20]);
/// let frame = to_ethernet(link_type::LINUX_SLL, &sll)?;
/// assert_eq!(frame[..6], SYNTHETIC_DST_MAC);
/// assert_eq!(frame[6..12], [0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff]);
/// assert_eq!(frame[12..], [0x08, 0x00, 0x45, 0, 0, 20]);
/// // BSD loopback, little-endian AF_INET.
/// let frame = to_ethernet(link_type::NULL, &[2, 0, 0, 0, 0x45, 0])?;
/// assert_eq!(frame[12..], [0x08, 0x00, 0x45, 0]);
/// # Ok::<(), pktvec_io::capture::SkipReason>(())
/// ```
pub fn to_ethernet(link_type: u32, data: &[u8]) -> Result<Vec<u8>, SkipReason> {
    match link_type {
        link_type::ETHERNET => Ok(data.to_vec()),
        link_type::LINUX_SLL => {
            // packet type (2), ARPHRD type (2), address length (2), address (8), protocol (2)
            let (h, payload) = data
                .split_first_chunk::<16>()
                .ok_or(SkipReason::TruncatedHeader)?;
            let addr_len = u16::from_be_bytes([h[4], h[5]]);
            let addr = [h[6], h[7], h[8], h[9], h[10], h[11], h[12], h[13]];
            let ethertype = cooked_ethertype(u16::from_be_bytes([h[14], h[15]]))?;
            Ok(synthetic_frame(
                &cooked_source(addr_len, &addr),
                ethertype,
                payload,
            ))
        }
        link_type::LINUX_SLL2 => {
            // protocol (2), reserved (2), interface index (4), ARPHRD type (2), packet
            // type (1), address length (1), address (8)
            let (h, payload) = data
                .split_first_chunk::<20>()
                .ok_or(SkipReason::TruncatedHeader)?;
            let ethertype = cooked_ethertype(u16::from_be_bytes([h[0], h[1]]))?;
            let addr = [h[12], h[13], h[14], h[15], h[16], h[17], h[18], h[19]];
            Ok(synthetic_frame(
                &cooked_source(u16::from(h[11]), &addr),
                ethertype,
                payload,
            ))
        }
        link_type::RAW
        | link_type::DLT_RAW_12
        | link_type::DLT_RAW_14
        | link_type::IPV4
        | link_type::IPV6 => {
            let ethertype = ip_version_ethertype(data)?;
            Ok(synthetic_frame(&SYNTHETIC_SRC_MAC, ethertype, data))
        }
        link_type::NULL | link_type::LOOP => {
            let (af, payload) = data
                .split_first_chunk::<4>()
                .ok_or(SkipReason::TruncatedHeader)?;
            let big = address_family_ethertype(u32::from_be_bytes(*af));
            let ethertype = if link_type == link_type::LOOP {
                big
            } else {
                big.or_else(|| address_family_ethertype(u32::from_le_bytes(*af)))
            };
            let ethertype = ethertype.ok_or(SkipReason::NotIp)?;
            Ok(synthetic_frame(&SYNTHETIC_SRC_MAC, ethertype, payload))
        }
        _ => Err(SkipReason::LinkType),
    }
}

/// Errors reading or writing captures.
#[derive(Debug, thiserror::Error)]
pub enum CaptureIoError {
    /// The file could not be opened, read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not a pcap or pcapng capture, or is corrupt.
    #[error("{path}: {msg}")]
    Format {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        msg: String,
    },
    /// The file is a capture, but none of its packets can be replayed: it has none, or
    /// they are all of link types pktvec does not replay or were skipped for another
    /// [`SkipReason`]. The message names the file, its link types with their packet counts
    /// and, when packets were skipped for other reasons than their link type, those.
    #[error("{path}: no packets pktvec can replay ({link_types}{})", skipped_suffix(.skipped))]
    NothingUsable {
        /// The file.
        path: PathBuf,
        /// Its link types with packet counts ([`Capture::link_type_summary`]), e.g.
        /// `"link types: IEEE802_11_RADIOTAP 4 packets"`, or `"the file holds no packets"`.
        link_types: String,
        /// What was skipped for other reasons than the link type, e.g. `"truncated
        /// link-layer header 2"`; empty if nothing was.
        skipped: String,
    },
}

fn skipped_suffix(skipped: &str) -> String {
    if skipped.is_empty() {
        String::new()
    } else {
        format!("; skipped: {skipped}")
    }
}

/// A capture read into memory: the packets the graph can replay, as Ethernet frames, with
/// their timestamps and interfaces, and what was skipped.
///
/// `timestamps` and `interfaces` run parallel to `packets` when [`read_capture`] fills
/// them; a hand-built capture may leave them shorter (or empty): a packet without an entry
/// has no timestamp and interface 0.
///
/// ```
/// use pktvec_io::capture::Capture;
/// let cap = Capture { packets: vec![vec![0u8; 60]; 3], ..Default::default() };
/// assert!(cap.warning().is_none());
/// assert_eq!(cap.link_type_summary(), "the file holds no packets");
/// ```
#[derive(Debug, Clone, Default)]
pub struct Capture {
    /// Ethernet frames, in file order (synthetic headers included, see the module docs).
    pub packets: Vec<Vec<u8>>,
    /// Each packet's capture timestamp (since the Unix epoch), parallel to `packets`.
    pub timestamps: Vec<Duration>,
    /// Each packet's interface, parallel to `packets`: the index into
    /// `interface_link_types` (pcapng; numbered across sections), 0 for pcap.
    pub interfaces: Vec<u32>,
    /// Link type of each interface (one for pcap: the low 16 bits of its header's field,
    /// as libpcap reads it, the upper ones being FCS length and reserved bits; one per
    /// Interface Description Block for pcapng).
    pub interface_link_types: Vec<u32>,
    /// Packets per link type the file had (kept or skipped), by `LINKTYPE_*` number.
    pub link_types: BTreeMap<u32, u64>,
    /// Packets skipped in all (the sum of `skipped_by_reason`).
    pub skipped: u64,
    /// Packets skipped, by reason.
    pub skipped_by_reason: BTreeMap<SkipReason, u64>,
    /// Packets skipped because their link type is not replayed, by `LINKTYPE_*` number
    /// (these add up to `skipped_by_reason[&SkipReason::LinkType]`).
    pub skipped_by_link_type: BTreeMap<u32, u64>,
    /// True if the capture was truncated or corrupt after some packets (they are kept).
    pub truncated: bool,
}

impl Capture {
    /// Converts and keeps one packet, or counts why not.
    fn add(&mut self, link_type: u32, interface: u32, timestamp: Duration, data: &[u8]) {
        *self.link_types.entry(link_type).or_insert(0) += 1;
        match to_ethernet(link_type, data) {
            Ok(frame) => {
                self.packets.push(frame);
                self.timestamps.push(timestamp);
                self.interfaces.push(interface);
            }
            Err(reason) => {
                if reason == SkipReason::LinkType {
                    *self.skipped_by_link_type.entry(link_type).or_insert(0) += 1;
                }
                self.skip(reason);
            }
        }
    }

    fn skip(&mut self, reason: SkipReason) {
        self.skipped += 1;
        *self.skipped_by_reason.entry(reason).or_insert(0) += 1;
    }

    /// The file's link types with their packet counts, `"link types: LINUX_SLL 518
    /// packets"` (several are comma-separated, in `LINKTYPE_*` order), or `"the file holds
    /// no packets"`.
    ///
    /// ```
    /// use pktvec_io::capture::Capture;
    /// let mut cap = Capture::default();
    /// cap.link_types.insert(127, 4);
    /// cap.link_types.insert(1, 1);
    /// assert_eq!(cap.link_type_summary(), "link types: ETHERNET 1 packet, IEEE802_11_RADIOTAP 4 packets");
    /// ```
    pub fn link_type_summary(&self) -> String {
        if self.link_types.is_empty() {
            return "the file holds no packets".to_string();
        }
        let parts: Vec<String> = self
            .link_types
            .iter()
            .map(|(&lt, &n)| {
                let s = if n == 1 { "" } else { "s" };
                format!("{} {n} packet{s}", link_type::name(lt))
            })
            .collect();
        format!("link types: {}", parts.join(", "))
    }

    /// What was skipped, one item per link type not replayed and per other reason:
    /// `"link type IEEE802_11_RADIOTAP 10, truncated link-layer header 2"`; empty if
    /// nothing was.
    fn skipped_items(&self, with_link_types: bool) -> String {
        let mut parts = Vec::new();
        if with_link_types {
            for (&lt, &n) in &self.skipped_by_link_type {
                parts.push(format!("link type {} {n}", link_type::name(lt)));
            }
        }
        for (&reason, &n) in &self.skipped_by_reason {
            if reason != SkipReason::LinkType {
                parts.push(format!("{reason} {n}"));
            }
        }
        parts.join(", ")
    }

    /// One line naming what was skipped and whether the file was cut short, for printing
    /// when a capture is opened; `None` if every packet of an intact file was kept.
    ///
    /// ```
    /// use pktvec_io::capture::{Capture, SkipReason};
    /// let mut cap = Capture { packets: vec![vec![0u8; 60]; 3], ..Default::default() };
    /// assert_eq!(cap.warning(), None);
    /// cap.skipped = 12;
    /// cap.skipped_by_reason.insert(SkipReason::LinkType, 10);
    /// cap.skipped_by_reason.insert(SkipReason::TruncatedHeader, 2);
    /// cap.skipped_by_link_type.insert(127, 10);
    /// assert_eq!(
    ///     cap.warning().unwrap(),
    ///     "skipped 12 packets: link type IEEE802_11_RADIOTAP 10, truncated link-layer header 2"
    /// );
    /// ```
    pub fn warning(&self) -> Option<String> {
        let mut parts = Vec::new();
        if self.skipped > 0 {
            let s = if self.skipped == 1 { "" } else { "s" };
            parts.push(format!(
                "skipped {} packet{s}: {}",
                self.skipped,
                self.skipped_items(true)
            ));
        }
        if self.truncated {
            parts.push(format!(
                "corrupt or cut short after {} packets (those are kept)",
                self.packets.len() as u64 + self.skipped
            ));
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }

    /// `Ok` if the capture has a packet to replay, else [`CaptureIoError::NothingUsable`]
    /// naming `path` (the file it came from), its link types and what was skipped.
    ///
    /// ```
    /// use pktvec_io::capture::{Capture, CaptureIoError};
    /// let mut cap = Capture::default();
    /// cap.link_types.insert(127, 4);
    /// cap.skipped_by_link_type.insert(127, 4);
    /// let err = cap.ensure_replayable("foo.pcap").unwrap_err();
    /// assert!(matches!(err, CaptureIoError::NothingUsable { .. }));
    /// assert_eq!(
    ///     err.to_string(),
    ///     "foo.pcap: no packets pktvec can replay (link types: IEEE802_11_RADIOTAP 4 packets)"
    /// );
    /// ```
    pub fn ensure_replayable(&self, path: impl AsRef<Path>) -> Result<(), CaptureIoError> {
        if !self.packets.is_empty() {
            return Ok(());
        }
        Err(CaptureIoError::NothingUsable {
            path: path.as_ref().to_path_buf(),
            link_types: self.link_type_summary(),
            skipped: self.skipped_items(false),
        })
    }
}

/// A pcapng interface as the reader needs it.
struct Interface {
    link_type: u32,
    /// `if_tsresol`: units of the timestamps (default 6: microseconds).
    ts_resolution: u8,
    /// `if_tsoffset`: seconds to add (signed).
    ts_offset: i64,
}

/// A pcapng timestamp of `units` in `resolution` (`if_tsresol`: 10^-n seconds, or 2^-n if
/// the top bit is set) plus `offset` seconds; saturating, never panics.
fn pcapng_timestamp(units: u64, resolution: u8, offset: i64) -> Duration {
    let units = u128::from(units);
    let nanos: u128 = if resolution & 0x80 == 0 {
        let exp = u32::from(resolution);
        if exp <= 9 {
            units * 10u128.pow(9 - exp)
        } else {
            10u128.checked_pow(exp - 9).map_or(0, |div| units / div)
        }
    } else {
        (units * 1_000_000_000) >> u32::from(resolution & 0x7f)
    };
    let secs = u64::try_from(nanos / 1_000_000_000).unwrap_or(u64::MAX);
    let ts = Duration::new(secs, (nanos % 1_000_000_000) as u32);
    let off = Duration::from_secs(offset.unsigned_abs());
    if offset >= 0 {
        ts.saturating_add(off)
    } else {
        ts.saturating_sub(off)
    }
}

/// Reads a pcap or pcapng file (detected by its magic number) into memory, turning the
/// packets of every [replayed link type](link_type::is_replayed) into Ethernet frames and
/// counting the rest (see the module documentation).
///
/// A corrupt tail after valid packets is not an error: the packets before it are returned
/// and [`Capture::truncated`] is set. A file that is not a capture at all is an error. A
/// valid capture with nothing to replay is returned as it is (no packets, the counts say
/// why); [`PcapSource::open`] refuses it ([`Capture::ensure_replayable`]).
///
/// ```
/// use pktvec_io::capture::{read_capture, write_pcap};
/// let path = std::env::temp_dir().join(format!("pktvec-doc-read-{}.pcap", std::process::id()));
/// write_pcap(&path, &[vec![0u8; 60]])?;
/// let cap = read_capture(&path)?;
/// assert_eq!((cap.packets.len(), cap.skipped, cap.truncated), (1, 0, false));
/// assert_eq!(cap.interface_link_types, [1]);
/// assert_eq!(cap.timestamps.len(), 1);
/// # std::fs::remove_file(&path).ok();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn read_capture(path: impl AsRef<Path>) -> Result<Capture, CaptureIoError> {
    let path = path.as_ref();
    let io = |source| CaptureIoError::Io {
        path: path.to_path_buf(),
        source,
    };
    let fmt = |msg: String| CaptureIoError::Format {
        path: path.to_path_buf(),
        msg,
    };
    let mut magic = [0u8; 4];
    File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .map_err(io)?;
    let reader = BufReader::new(File::open(path).map_err(io)?);
    let mut cap = Capture::default();
    if magic == [0x0a, 0x0d, 0x0d, 0x0a] {
        let mut r = PcapNgReader::new(reader).map_err(|e| fmt(e.to_string()))?;
        let mut interfaces: Vec<Interface> = Vec::new();
        // Interface ids restart at 0 in every section.
        let mut section_base = 0usize;
        let mut last_ts = Duration::ZERO;
        while let Some(block) = r.next_block() {
            let Ok(block) = block else {
                cap.truncated = true;
                break;
            };
            let (id, units, data) = match block {
                Block::SectionHeader(_) => {
                    section_base = interfaces.len();
                    continue;
                }
                Block::InterfaceDescription(d) => {
                    let mut iface = Interface {
                        link_type: u32::from(d.linktype),
                        ts_resolution: 6,
                        ts_offset: 0,
                    };
                    for opt in &d.options {
                        match opt {
                            InterfaceDescriptionOption::IfTsResol(r) => iface.ts_resolution = *r,
                            InterfaceDescriptionOption::IfTsOffset(o) => {
                                iface.ts_offset = *o as i64
                            }
                            _ => {}
                        }
                    }
                    cap.interface_link_types.push(iface.link_type);
                    interfaces.push(iface);
                    continue;
                }
                // pcap-file hands the raw timestamp units over as nanoseconds.
                Block::EnhancedPacket(p) => (
                    p.interface_id,
                    Some(u64::try_from(p.timestamp.as_nanos()).unwrap_or(u64::MAX)),
                    p.data,
                ),
                Block::SimplePacket(p) => (0, None, p.data),
                Block::Packet(p) => (u32::from(p.interface_id), Some(p.timestamp), p.data),
                _ => continue,
            };
            let global = section_base.saturating_add(id as usize);
            let Some(iface) = interfaces.get(global) else {
                cap.skip(SkipReason::UnknownInterface);
                continue;
            };
            // A simple packet block has no timestamp: it gets its predecessor's.
            if let Some(units) = units {
                last_ts = pcapng_timestamp(units, iface.ts_resolution, iface.ts_offset);
            }
            cap.add(iface.link_type, global as u32, last_ts, &data);
        }
    } else {
        let mut r = PcapReader::new(reader).map_err(|e| fmt(e.to_string()))?;
        let header = r.header();
        // The upper 16 bits hold the FCS length and reserved bits: libpcap ignores them
        // for the link type, and so do we.
        let link = u32::from(header.datalink) & 0xffff;
        let frac_nanos = match header.ts_resolution {
            TsResolution::MicroSecond => 1_000,
            TsResolution::NanoSecond => 1,
        };
        cap.interface_link_types.push(link);
        // The raw records: pcap-file's checked packets refuse an original length above the
        // header's snaplen, which snaplen-limited captures (tcpdump -s) have everywhere.
        while let Some(p) = r.next_raw_packet() {
            let Ok(p) = p else {
                cap.truncated = true;
                break;
            };
            let ts = Duration::from_secs(u64::from(p.ts_sec))
                .saturating_add(Duration::from_nanos(u64::from(p.ts_frac) * frac_nanos));
            cap.add(link, 0, ts, &p.data);
        }
    }
    Ok(cap)
}

/// Writes Ethernet frames to a pcap file (timestamps 1 µs apart from now).
///
/// ```
/// use pktvec_io::capture::{read_capture, write_pcap};
/// let path = std::env::temp_dir().join(format!("pktvec-doc-write-{}.pcap", std::process::id()));
/// write_pcap(&path, &[vec![1u8; 60], vec![2u8; 60]])?;
/// let cap = read_capture(&path)?;
/// assert_eq!(cap.timestamps[1] - cap.timestamps[0], std::time::Duration::from_micros(1));
/// # std::fs::remove_file(&path).ok();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn write_pcap(path: impl AsRef<Path>, packets: &[Vec<u8>]) -> Result<(), CaptureIoError> {
    let mut w = PcapFileWriter::create(path)?;
    for p in packets {
        w.write(p)?;
    }
    w.finish()
}

/// Snapshot length written in the pcap header; longer packets are cut to it (their
/// original length is recorded). tcpdump's maximum.
const WRITE_SNAPLEN: u32 = 262_144;

/// A buffered pcap writer (Ethernet link type, microsecond timestamps, little-endian).
///
/// ```
/// use pktvec_io::capture::{read_capture, PcapFileWriter};
/// use std::time::Duration;
/// let path = std::env::temp_dir().join(format!("pktvec-doc-writer-{}.pcap", std::process::id()));
/// let mut w = PcapFileWriter::create(&path)?;
/// w.write_at(&[0u8; 60], Duration::new(1_700_000_000, 123_456_000))?;
/// w.flush()?; // the file is complete now, the writer still open
/// assert_eq!(read_capture(&path)?.timestamps, [Duration::new(1_700_000_000, 123_456_000)]);
/// w.finish()?;
/// # std::fs::remove_file(&path).ok();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct PcapFileWriter {
    writer: BufWriter<File>,
    path: PathBuf,
    written: u64,
    /// Base of the timestamps of packets written without one.
    start: Duration,
}

impl PcapFileWriter {
    /// Creates (truncates) the file and writes the pcap header.
    pub fn create(path: impl AsRef<Path>) -> Result<Self, CaptureIoError> {
        let path = path.as_ref().to_path_buf();
        let io = |source| CaptureIoError::Io {
            path: path.clone(),
            source,
        };
        let file = File::create(&path).map_err(io)?;
        let mut writer = BufWriter::new(file);
        let mut header = [0u8; 24];
        header[0..4].copy_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
        header[4..6].copy_from_slice(&2u16.to_le_bytes());
        header[6..8].copy_from_slice(&4u16.to_le_bytes());
        // thiszone and sigfigs stay 0
        header[16..20].copy_from_slice(&WRITE_SNAPLEN.to_le_bytes());
        header[20..24].copy_from_slice(&link_type::ETHERNET.to_le_bytes());
        writer.write_all(&header).map_err(io)?;
        Ok(PcapFileWriter {
            writer,
            path,
            written: 0,
            start: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default(),
        })
    }

    /// Appends one frame, stamped 1 µs after the previous frame written without a
    /// timestamp (the first at the writer's creation time).
    pub fn write(&mut self, data: &[u8]) -> Result<(), CaptureIoError> {
        let ts = self
            .start
            .saturating_add(Duration::from_micros(self.written));
        self.write_at(data, ts)
    }

    /// Appends one frame with its timestamp (since the Unix epoch; kept to the
    /// microsecond, seconds past `u32::MAX` saturate). Frames longer than 262,144 bytes are
    /// cut to that, with their original length recorded.
    pub fn write_at(&mut self, data: &[u8], timestamp: Duration) -> Result<(), CaptureIoError> {
        let orig_len = u32::try_from(data.len()).unwrap_or(u32::MAX);
        let incl_len = orig_len.min(WRITE_SNAPLEN);
        let mut record = [0u8; 16];
        let secs = u32::try_from(timestamp.as_secs()).unwrap_or(u32::MAX);
        record[0..4].copy_from_slice(&secs.to_le_bytes());
        record[4..8].copy_from_slice(&timestamp.subsec_micros().to_le_bytes());
        record[8..12].copy_from_slice(&incl_len.to_le_bytes());
        record[12..16].copy_from_slice(&orig_len.to_le_bytes());
        let body = data.get(..incl_len as usize).unwrap_or(data);
        self.writer
            .write_all(&record)
            .and_then(|()| self.writer.write_all(body))
            .map_err(|source| CaptureIoError::Io {
                path: self.path.clone(),
                source,
            })?;
        self.written += 1;
        Ok(())
    }

    /// Frames written so far.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// Writes what is buffered to the file, so that it holds every frame written so far.
    pub fn flush(&mut self) -> Result<(), CaptureIoError> {
        self.writer.flush().map_err(|source| CaptureIoError::Io {
            path: self.path.clone(),
            source,
        })
    }

    /// Flushes and closes the file.
    pub fn finish(mut self) -> Result<(), CaptureIoError> {
        self.flush()
    }
}

/// Bytes of [`BufferMeta::user`] where [`PcapSource`] stores a packet's capture timestamp
/// (the last 8): nanoseconds since the Unix epoch plus one, little-endian; 0 means none,
/// which is what a freshly allocated buffer holds.
///
/// ```
/// use pktvec_io::capture::TIMESTAMP_USER_BYTES;
/// assert_eq!(TIMESTAMP_USER_BYTES, 20..28);
/// assert_eq!(TIMESTAMP_USER_BYTES.end, pktvec_packet::META_USER_BYTES);
/// ```
pub const TIMESTAMP_USER_BYTES: std::ops::Range<usize> = 20..28;

/// The capture timestamp [`PcapSource`] recorded in a buffer's metadata
/// ([`TIMESTAMP_USER_BYTES`]), `None` if there is none (a buffer from another source).
///
/// ```
/// use pktvec_io::capture::{packet_timestamp, set_packet_timestamp};
/// use pktvec_packet::BufferMeta;
/// use std::time::Duration;
/// let mut meta = BufferMeta::default();
/// assert_eq!(packet_timestamp(&meta), None);
/// set_packet_timestamp(&mut meta, Some(Duration::new(1_700_000_000, 5)));
/// assert_eq!(packet_timestamp(&meta), Some(Duration::new(1_700_000_000, 5)));
/// set_packet_timestamp(&mut meta, Some(Duration::ZERO));
/// assert_eq!(packet_timestamp(&meta), Some(Duration::ZERO));
/// ```
pub fn packet_timestamp(meta: &BufferMeta) -> Option<Duration> {
    let bytes = meta.user.last_chunk::<8>()?;
    let stored = u64::from_le_bytes(*bytes);
    stored.checked_sub(1).map(Duration::from_nanos)
}

/// Records a capture timestamp in a buffer's metadata ([`TIMESTAMP_USER_BYTES`]; `None`
/// clears it). Timestamps past 2554 (u64 nanoseconds) saturate. See [`packet_timestamp`].
///
/// ```
/// use pktvec_io::capture::{packet_timestamp, set_packet_timestamp};
/// use pktvec_packet::BufferMeta;
/// let mut meta = BufferMeta::default();
/// set_packet_timestamp(&mut meta, Some(std::time::Duration::from_secs(7)));
/// set_packet_timestamp(&mut meta, None);
/// assert_eq!(packet_timestamp(&meta), None);
/// ```
pub fn set_packet_timestamp(meta: &mut BufferMeta, timestamp: Option<Duration>) {
    let stored = timestamp.map_or(0, |ts| {
        u64::try_from(ts.as_nanos())
            .unwrap_or(u64::MAX)
            .saturating_add(1)
    });
    if let Some(bytes) = meta.user.last_chunk_mut::<8>() {
        *bytes = stored.to_le_bytes();
    }
}

next_nodes! {
    /// The one arc of [`PcapSource`].
    pub enum PcapSourceNext {
        /// Every packet (by default to `ethernet-input`).
        Out = "ethernet-input",
    }
}

/// Input node replaying a capture held in memory: one vector per poll, optionally looping
/// (for benchmarks), with an optional packet limit.
///
/// Each packet's metadata gets its receive interface, `base + k` for a packet captured on
/// interface `k` of the file (`base` is [`with_rx_interface`](Self::with_rx_interface),
/// default 0; a pcap file has only interface 0, a pcapng file one per Interface Description
/// Block, so each of its interfaces arrives on its own rx interface), and its capture
/// timestamp ([`packet_timestamp`]).
///
/// Like a NIC whose receive ring has no buffers, it does not wait for the pool: packets it
/// has no buffer for when polled are dropped, counted under "no buffer" in the graph's
/// error counters and in [`no_buffer`](Self::no_buffer), and count towards the limit.
///
/// ```
/// use pktvec_graph::{builtin::NullSink, GraphBuilder, GraphConfig};
/// use pktvec_io::capture::{Capture, PcapSource, PcapSourceNext};
/// use pktvec_packet::{BufferPool, PoolConfig};
/// let cap = Capture { packets: vec![vec![0u8; 60]; 10], ..Default::default() };
/// let mut b = GraphBuilder::new(GraphConfig::default());
/// b.add("pcap-input", PcapSource::new(cap).looping(true).with_limit(1000))
///     .add("tx", NullSink)
///     .set_next("pcap-input", PcapSourceNext::Out, "tx");
/// let mut g = b.build(BufferPool::new(PoolConfig::default())?)?;
/// assert_eq!(g.run_until_idle(), 1000);
/// assert_eq!(g.node::<PcapSource>("pcap-input").unwrap().no_buffer(), 0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct PcapSource {
    capture: Capture,
    pos: usize,
    looping: bool,
    limit: Option<u64>,
    produced: u64,
    too_long: u64,
    no_buffer: u64,
    rx_if: u16,
    timestamps: bool,
}

impl PcapSource {
    /// A source over a capture (an empty one produces nothing).
    ///
    /// ```
    /// use pktvec_io::capture::{Capture, PcapSource};
    /// let src = PcapSource::new(Capture { packets: vec![vec![0u8; 60]], ..Default::default() });
    /// assert_eq!(src.capture().packets.len(), 1);
    /// ```
    pub fn new(capture: Capture) -> Self {
        PcapSource {
            capture,
            pos: 0,
            looping: false,
            limit: None,
            produced: 0,
            too_long: 0,
            no_buffer: 0,
            rx_if: 0,
            timestamps: true,
        }
    }

    /// Reads a file and makes a source of it; a capture with no packet to replay is an
    /// error ([`CaptureIoError::NothingUsable`]). What was skipped stays readable through
    /// [`capture`](Self::capture) (print [`Capture::warning`]).
    ///
    /// ```
    /// use pktvec_io::capture::{write_pcap, CaptureIoError, PcapSource};
    /// let path = std::env::temp_dir().join(format!("pktvec-doc-open-{}.pcap", std::process::id()));
    /// write_pcap(&path, &[])?;
    /// let err = PcapSource::open(&path).err().unwrap();
    /// assert!(matches!(err, CaptureIoError::NothingUsable { .. }));
    /// assert!(err.to_string().ends_with("no packets pktvec can replay (the file holds no packets)"));
    /// write_pcap(&path, &[vec![0u8; 60]])?;
    /// let src = PcapSource::open(&path)?;
    /// assert_eq!(src.capture().warning(), None);
    /// # std::fs::remove_file(&path).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open(path: impl AsRef<Path>) -> Result<Self, CaptureIoError> {
        let capture = read_capture(&path)?;
        capture.ensure_replayable(&path)?;
        Ok(Self::new(capture))
    }

    /// Starts again at the first packet after the last one.
    pub fn looping(mut self, on: bool) -> Self {
        self.looping = on;
        self
    }

    /// Stops after `n` packets in all.
    pub fn with_limit(mut self, n: u64) -> Self {
        self.limit = Some(n);
        self
    }

    /// Receive interface recorded in the packets' metadata: `rx_if` for the file's
    /// interface 0, `rx_if + k` for its interface `k` (pcapng files with several
    /// interfaces). [`NO_INTERFACE`] gives every packet no interface; a sum past the last
    /// interface number gives that packet none too.
    ///
    /// ```
    /// use pktvec_io::capture::{Capture, PcapSource};
    /// let src = PcapSource::new(Capture::default()).with_rx_interface(4);
    /// # let _ = src;
    /// ```
    pub fn with_rx_interface(mut self, rx_if: u16) -> Self {
        self.rx_if = rx_if;
        self
    }

    /// Whether the capture timestamps are written into the buffers' metadata
    /// ([`TIMESTAMP_USER_BYTES`] of the user area; on by default). Turn it off when the
    /// graph's nodes use those bytes for themselves; [`PcapSink`] then stamps the packets
    /// when it writes them.
    ///
    /// ```
    /// use pktvec_io::capture::{Capture, PcapSource};
    /// let src = PcapSource::new(Capture::default()).with_timestamps(false);
    /// # let _ = src;
    /// ```
    pub fn with_timestamps(mut self, on: bool) -> Self {
        self.timestamps = on;
        self
    }

    /// The capture replayed, with what was skipped when it was read
    /// ([`Capture::skipped`], [`Capture::warning`], [`Capture::link_types`]).
    pub fn capture(&self) -> &Capture {
        &self.capture
    }

    /// Packets produced so far.
    pub fn produced(&self) -> u64 {
        self.produced
    }

    /// Packets truncated to the buffer's data room.
    pub fn truncated_to_room(&self) -> u64 {
        self.too_long
    }

    /// Packets dropped because the pool had no buffer for them.
    pub fn no_buffer(&self) -> u64 {
        self.no_buffer
    }

    /// The receive interface of packet `i`.
    fn rx_interface(&self, i: usize) -> u16 {
        if self.rx_if == NO_INTERFACE {
            return NO_INTERFACE;
        }
        let k = self.capture.interfaces.get(i).copied().unwrap_or(0);
        u32::from(self.rx_if)
            .checked_add(k)
            .and_then(|v| u16::try_from(v).ok())
            .unwrap_or(NO_INTERFACE)
    }
}

impl Node for PcapSource {
    type Next = PcapSourceNext;
    type Error = SourceError;
    const KIND: NodeKind = NodeKind::Input;

    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        let total = self.capture.packets.len();
        if total == 0 {
            return;
        }
        let mut want = cx.vector_size().min(frame.room());
        if let Some(limit) = self.limit {
            want = want.min(limit.saturating_sub(self.produced + self.no_buffer) as usize);
        }
        if !self.looping {
            want = want.min(total.saturating_sub(self.pos));
        }
        if want == 0 {
            return;
        }
        let got = cx.alloc_into(frame, want);
        let start = frame.len() - got;
        for &bi in &frame.buffers()[start..] {
            let i = self.pos;
            self.pos += 1;
            if self.pos >= total && self.looping {
                self.pos = 0;
            }
            let rx_if = self.rx_interface(i);
            let ts = self.capture.timestamps.get(i).copied();
            let data = self.capture.packets.get(i).map_or(&[][..], |p| &p[..]);
            let mut p = cx.pool_mut().packet_mut(bi);
            let n = data.len().min(p.tailroom());
            self.too_long += u64::from(n < data.len());
            if let Ok(dst) = p.append(n) {
                dst.copy_from_slice(&data[..n]);
            }
            let meta = p.meta_mut();
            meta.rx_if = rx_if;
            if self.timestamps {
                set_packet_timestamp(meta, ts);
            }
        }
        self.produced += got as u64;
        if got < want {
            // The packets that found no buffer are lost, as on a NIC: skip them (`want`
            // stayed within the capture when not looping).
            let missing = want - got;
            self.pos += missing;
            if self.looping {
                self.pos %= total;
            }
            self.no_buffer += missing as u64;
            cx.drop_unreceived(SourceError::NoBuffer, missing as u64);
        }
        cx.enqueue_all(frame, PcapSourceNext::Out);
    }
}

/// Sink node writing every packet it receives to a pcap file (Ethernet link type), then
/// freeing it.
///
/// A packet keeps the timestamp [`PcapSource`] read from its capture
/// ([`packet_timestamp`]); others are stamped 1 µs apart from the sink's creation. The
/// file is flushed after every vector, so it is complete (every packet of every finished
/// `process` call) whenever the graph stops, not only when the sink is dropped;
/// [`flush`](Self::flush) and [`finish`](Self::finish) are there for the caller too.
/// Write errors stop the writing (counted in [`PcapSink::errors`]); packets are still
/// freed, as they are after [`finish`](Self::finish), and counted in
/// [`unwritten`](Self::unwritten).
///
/// ```
/// use pktvec_graph::{GraphBuilder, GraphConfig};
/// use pktvec_io::capture::{read_capture, Capture, PcapSink, PcapSource, PcapSourceNext};
/// use pktvec_packet::{BufferPool, PoolConfig};
/// use std::time::Duration;
/// let path = std::env::temp_dir().join(format!("pktvec-doc-sink-{}.pcap", std::process::id()));
/// let cap = Capture {
///     packets: vec![vec![0u8; 60]; 2],
///     timestamps: vec![Duration::from_secs(5), Duration::from_secs(9)],
///     ..Default::default()
/// };
/// let mut b = GraphBuilder::new(GraphConfig::default());
/// b.add("pcap-input", PcapSource::new(cap))
///     .add("pcap-out", PcapSink::create(&path)?)
///     .set_next("pcap-input", PcapSourceNext::Out, "pcap-out");
/// let mut g = b.build(BufferPool::new(PoolConfig::default())?)?;
/// assert_eq!(g.run_until_idle(), 2);
/// // Complete on disk while the graph (and the sink) still exist.
/// let back = read_capture(&path)?;
/// assert_eq!(back.timestamps, [Duration::from_secs(5), Duration::from_secs(9)]);
/// g.node_mut::<PcapSink>("pcap-out").unwrap().finish()?;
/// # std::fs::remove_file(&path).ok();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct PcapSink {
    writer: Option<PcapFileWriter>,
    errors: u64,
    unwritten: u64,
}

impl PcapSink {
    /// A sink writing to `path`.
    pub fn create(path: impl AsRef<Path>) -> Result<Self, CaptureIoError> {
        Ok(PcapSink {
            writer: Some(PcapFileWriter::create(path)?),
            errors: 0,
            unwritten: 0,
        })
    }

    /// Write errors seen.
    pub fn errors(&self) -> u64 {
        self.errors
    }

    /// Packets written so far.
    pub fn written(&self) -> u64 {
        self.writer.as_ref().map_or(0, PcapFileWriter::written)
    }

    /// Packets freed without being written: after a write error or [`finish`](Self::finish).
    pub fn unwritten(&self) -> u64 {
        self.unwritten
    }

    /// Writes what is buffered to the file (the sink already does after every vector). A
    /// failure stops the writing, as a write error does. Nothing to do once finished.
    pub fn flush(&mut self) -> Result<(), CaptureIoError> {
        let Some(w) = self.writer.as_mut() else {
            return Ok(());
        };
        let r = w.flush();
        if r.is_err() {
            self.errors += 1;
            self.writer = None;
        }
        r
    }

    /// Flushes and closes the file; packets that reach the sink afterwards are freed
    /// unwritten. Nothing to do if already finished.
    pub fn finish(&mut self) -> Result<(), CaptureIoError> {
        match self.writer.take() {
            Some(w) => w.finish().inspect_err(|_| self.errors += 1),
            None => Ok(()),
        }
    }
}

impl Drop for PcapSink {
    fn drop(&mut self) {
        let _ = self.finish();
    }
}

impl Node for PcapSink {
    type Next = NoNext;
    type Error = NoError;
    const KIND: NodeKind = NodeKind::Sink;

    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        let mut written = 0u64;
        if let Some(w) = self.writer.as_mut() {
            let mut failed = false;
            for &bi in frame.buffers() {
                let data = cx.pool().data(bi);
                let r = match packet_timestamp(cx.pool().meta(bi)) {
                    Some(ts) => w.write_at(data, ts),
                    None => w.write(data),
                };
                if r.is_err() {
                    failed = true;
                    break;
                }
                written += 1;
            }
            if !failed && written > 0 && w.flush().is_err() {
                failed = true;
            }
            if failed {
                self.errors += 1;
                self.writer = None;
            }
        }
        self.unwritten += frame.len() as u64 - written;
        cx.free_frame(frame);
    }
}

/// Sink node counting packets and bytes per transmit interface, then freeing them.
#[derive(Debug, Default, Clone)]
pub struct CountingSink {
    /// Packets per `tx_if` (index = interface; packets without one are counted last).
    pub packets: Vec<u64>,
    /// Bytes per `tx_if`, same indexing.
    pub bytes: Vec<u64>,
}

impl CountingSink {
    /// A sink for interfaces `0..interfaces` (and one more slot for "no interface").
    pub fn new(interfaces: usize) -> Self {
        CountingSink {
            packets: vec![0; interfaces + 1],
            bytes: vec![0; interfaces + 1],
        }
    }
}

impl Node for CountingSink {
    type Next = NoNext;
    type Error = NoError;
    const KIND: NodeKind = NodeKind::Sink;

    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        let last = self.packets.len().saturating_sub(1);
        if !self.packets.is_empty() {
            for &bi in frame.buffers() {
                let m = cx.pool().meta(bi);
                let i = (m.tx_if as usize).min(last);
                self.packets[i] += 1;
                self.bytes[i] += m.len as u64;
            }
        }
        cx.free_frame(frame);
    }
}
