//! IPv4 nodes: `ip4-input` (header checks and policies) and `ip4-rewrite` (TTL − 1 with an
//! incremental checksum update, new Ethernet header from an adjacency).
//!
//! Both expect the packet to start at the IPv4 header (as `ethernet-input` leaves it).
//! `ip4-lookup` (which fills the adjacency index in `BufferMeta::opaque`) lives with the
//! forwarding tables.
//!
//! ```
//! use pktvec_graph::{builtin::{NullSink, PacketSource, SourceNext}, GraphBuilder, GraphConfig};
//! use pktvec_nodes::ip4::{Adjacency, Ip4Input, Ip4InputNext, Ip4Rewrite};
//! use pktvec_packet::builder::PacketBuilder;
//! use pktvec_packet::BufferPool;
//! use std::net::Ipv4Addr;
//!
//! let eth = PacketBuilder::ethernet([2, 0, 0, 0, 0, 1].into(), [2, 0, 0, 0, 0, 2].into())
//!     .ipv4(Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2))
//!     .udp(1, 2)
//!     .build();
//! let ip_only = eth[14..].to_vec();
//! let adj = Adjacency { tx_if: 3, src_mac: [2, 0, 0, 0, 0, 9].into(), dst_mac: [2, 0, 0, 0, 0, 8].into() };
//! let mut b = GraphBuilder::new(GraphConfig::default());
//! b.add("src", PacketSource::new(vec![ip_only]).with_limit(10))
//!     .add("ip4-input", Ip4Input::default())
//!     .add("ip4-rewrite", Ip4Rewrite::new(vec![adj]))
//!     .add("interface-output", NullSink)
//!     .set_next("src", SourceNext::Out, "ip4-input")
//!     .set_next("ip4-input", Ip4InputNext::Lookup, "ip4-rewrite");
//! let mut g = b.build(BufferPool::new(Default::default())?)?;
//! g.run_until_idle();
//! assert_eq!(g.runtime().row("interface-output").unwrap().packets, 10);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use pktvec_graph::{next_nodes, node_errors, Context, Frame, Node, Verdict};
use pktvec_packet::wire::{EtherType, Ipv4Packet, MacAddr, WireError};
use pktvec_packet::{MetaFlags, Packet, PacketMut};
use std::fmt::Write as _;

/// Accept or drop (serde: `"accept"`, `"drop"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    /// Let the packet through.
    #[default]
    Accept,
    /// Drop it with a counted reason.
    Drop,
}

/// What `ip4-input` checks and lets through (serde: missing fields take the defaults).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Ip4InputConfig {
    /// Verify the header checksum (drop on mismatch).
    pub verify_checksum: bool,
    /// Packets with IPv4 options.
    pub options: Policy,
    /// Fragments (MF set or offset ≠ 0).
    pub fragments: Policy,
}

impl Default for Ip4InputConfig {
    fn default() -> Self {
        Ip4InputConfig {
            verify_checksum: true,
            options: Policy::Accept,
            fragments: Policy::Accept,
        }
    }
}

next_nodes! {
    /// Arcs of `ip4-input`.
    pub enum Ip4InputNext {
        /// Good packets.
        Lookup = "ip4-lookup",
    }
}

node_errors! {
    /// Drop reasons of `ip4-input`.
    pub enum Ip4InputError {
        /// Shorter than 20 bytes.
        Truncated = "truncated ipv4 header",
        /// Version is not 4.
        BadVersion = "bad ip version",
        /// IHL below 5 or beyond the packet.
        BadHeaderLength = "bad ipv4 header length",
        /// Total length smaller than the header or larger than the packet.
        BadLength = "ipv4 length mismatch",
        /// Header checksum mismatch.
        BadChecksum = "bad ipv4 header checksum",
        /// TTL 0 or 1: it cannot be forwarded.
        TtlExpired = "ttl expired",
        /// Options present and not allowed.
        Options = "ipv4 options not allowed",
        /// Fragment and not allowed.
        Fragment = "ipv4 fragment not allowed",
    }
}

/// The `ip4-input` node.
#[derive(Debug, Default, Clone, Copy)]
pub struct Ip4Input {
    /// Checks and policies.
    pub config: Ip4InputConfig,
}

impl Ip4Input {
    /// A node with these checks.
    pub fn new(config: Ip4InputConfig) -> Self {
        Ip4Input { config }
    }
}

/// Checks one packet that starts at its IPv4 header; trims Ethernet padding.
#[inline(always)]
pub fn ip4_input_one(
    cfg: &Ip4InputConfig,
    pkt: &mut PacketMut<'_>,
) -> Verdict<Ip4InputNext, Ip4InputError> {
    let ip = match Ipv4Packet::new_checked(pkt.data()) {
        Ok(ip) => ip,
        Err(e) => {
            return Verdict::Drop(match e {
                WireError::Truncated => Ip4InputError::Truncated,
                WireError::BadVersion => Ip4InputError::BadVersion,
                WireError::BadHeaderLength => Ip4InputError::BadHeaderLength,
                _ => Ip4InputError::BadLength,
            })
        }
    };
    if cfg.verify_checksum && !ip.verify_checksum() {
        return Verdict::Drop(Ip4InputError::BadChecksum);
    }
    if ip.ttl() <= 1 {
        return Verdict::Drop(Ip4InputError::TtlExpired);
    }
    if cfg.options == Policy::Drop && ip.header_len() > 20 {
        return Verdict::Drop(Ip4InputError::Options);
    }
    if cfg.fragments == Policy::Drop && ip.is_fragment() {
        return Verdict::Drop(Ip4InputError::Fragment);
    }
    let total = ip.total_len() as usize;
    pkt.truncate(total);
    let m = pkt.meta_mut();
    m.flags.insert(MetaFlags::IP4_CSUM_OK);
    Verdict::Next(Ip4InputNext::Lookup)
}

impl Node for Ip4Input {
    type Next = Ip4InputNext;
    type Error = Ip4InputError;

    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        let cfg = self.config;
        cx.process_packets(frame, |p| ip4_input_one(&cfg, p));
    }

    fn format_trace(&self, pkt: Packet<'_>, out: &mut String) {
        format_ip4(pkt.data(), out);
    }
}

/// One line describing an IPv4 header (for traces).
pub fn format_ip4(data: &[u8], out: &mut String) {
    match Ipv4Packet::new_checked(data) {
        Ok(ip) => {
            let _ = write!(
                out,
                "IP4: {} -> {} {} ttl {} len {} checksum {:#06x}{}",
                ip.src_addr(),
                ip.dst_addr(),
                ip.protocol(),
                ip.ttl(),
                ip.total_len(),
                ip.checksum(),
                if ip.is_fragment() { " fragment" } else { "" }
            );
        }
        Err(e) => {
            let _ = write!(out, "IP4: bad header ({e}), {} bytes", data.len());
        }
    }
}

/// Where a route sends packets: the output interface and the Ethernet header to write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Adjacency {
    /// Transmit interface.
    pub tx_if: u16,
    /// Our MAC on that interface.
    pub src_mac: MacAddr,
    /// The next hop's MAC.
    pub dst_mac: MacAddr,
}

next_nodes! {
    /// Arcs of `ip4-rewrite`.
    pub enum Ip4RewriteNext {
        /// Rewritten packets.
        Output = "interface-output",
    }
}

node_errors! {
    /// Drop reasons of `ip4-rewrite`.
    pub enum Ip4RewriteError {
        /// The adjacency index in the metadata is not in the table.
        NoAdjacency = "no adjacency",
        /// TTL would reach 0.
        TtlExpired = "ttl expired",
        /// No headroom for the Ethernet header.
        NoHeadroom = "no headroom for the l2 header",
        /// Not an IPv4 header (a node upstream is wrong).
        NotIp4 = "not an ipv4 header",
    }
}

/// The `ip4-rewrite` node: adjacency index in `BufferMeta::opaque`.
#[derive(Debug, Clone, Default)]
pub struct Ip4Rewrite {
    adjacencies: Vec<Adjacency>,
}

impl Ip4Rewrite {
    /// A rewrite node over an adjacency table.
    pub fn new(adjacencies: Vec<Adjacency>) -> Self {
        Ip4Rewrite { adjacencies }
    }
    /// The adjacency table.
    pub fn adjacencies(&self) -> &[Adjacency] {
        &self.adjacencies
    }
}

/// Writes a 14-byte Ethernet header in front of the packet.
#[inline(always)]
pub fn push_ethernet(pkt: &mut PacketMut<'_>, adj: &Adjacency, ethertype: EtherType) -> bool {
    match pkt.prepend(14) {
        Ok(h) => {
            h[0..6].copy_from_slice(&adj.dst_mac.0);
            h[6..12].copy_from_slice(&adj.src_mac.0);
            h[12..14].copy_from_slice(&ethertype.0.to_be_bytes());
            let m = pkt.meta_mut();
            m.tx_if = adj.tx_if;
            m.l2_offset = m.data_offset;
            true
        }
        Err(_) => false,
    }
}

/// Rewrites one packet that starts at its IPv4 header.
#[inline(always)]
pub fn ip4_rewrite_one(
    adjs: &[Adjacency],
    pkt: &mut PacketMut<'_>,
) -> Verdict<Ip4RewriteNext, Ip4RewriteError> {
    let Some(adj) = adjs.get(pkt.meta().opaque as usize) else {
        return Verdict::Drop(Ip4RewriteError::NoAdjacency);
    };
    let Ok(mut ip) = Ipv4Packet::new_checked(pkt.data_mut()) else {
        return Verdict::Drop(Ip4RewriteError::NotIp4);
    };
    match ip.decrement_ttl_update_checksum() {
        Some(t) if t > 0 => {}
        _ => return Verdict::Drop(Ip4RewriteError::TtlExpired),
    }
    if push_ethernet(pkt, adj, EtherType::IPV4) {
        Verdict::Next(Ip4RewriteNext::Output)
    } else {
        Verdict::Drop(Ip4RewriteError::NoHeadroom)
    }
}

impl Node for Ip4Rewrite {
    type Next = Ip4RewriteNext;
    type Error = Ip4RewriteError;

    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        let adjs = &self.adjacencies;
        cx.process_packets(frame, |p| ip4_rewrite_one(adjs, p));
    }

    fn format_trace(&self, pkt: Packet<'_>, out: &mut String) {
        let _ = write!(out, "adjacency {}: ", pkt.meta().opaque);
        format_ip4(pkt.data(), out);
    }
}
