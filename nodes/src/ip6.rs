//! IPv6 nodes: `ip6-input` (header checks) and `ip6-rewrite` (hop limit − 1, new Ethernet
//! header from an adjacency). Both expect the packet to start at the IPv6 header.
//!
//! ```
//! use pktvec_nodes::ip6::{ip6_input_one, Ip6InputError};
//! use pktvec_graph::Verdict;
//! use pktvec_packet::{BufferPool, builder::PacketBuilder};
//! let f = PacketBuilder::ethernet([2, 0, 0, 0, 0, 1].into(), [2, 0, 0, 0, 0, 2].into())
//!     .ipv6("2001:db8::1".parse()?, "2001:db8::2".parse()?)
//!     .hop_limit(1)
//!     .udp(1, 2)
//!     .build();
//! let mut pool = BufferPool::new(Default::default())?;
//! let bi = pool.alloc_with(&f[14..])?;
//! assert_eq!(ip6_input_one(&mut pool.packet_mut(bi)), Verdict::Drop(Ip6InputError::HopLimit));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::ip4::{push_ethernet, Adjacency};
use pktvec_graph::{next_nodes, node_errors, Context, Frame, Node, Verdict};
use pktvec_packet::wire::{EtherType, Ipv6Packet, WireError};
use pktvec_packet::{Packet, PacketMut};
use std::fmt::Write as _;

next_nodes! {
    /// Arcs of `ip6-input`.
    pub enum Ip6InputNext {
        /// Good packets.
        Lookup = "ip6-lookup",
    }
}

node_errors! {
    /// Drop reasons of `ip6-input`.
    pub enum Ip6InputError {
        /// Shorter than 40 bytes.
        Truncated = "truncated ipv6 header",
        /// Version is not 6.
        BadVersion = "bad ip version",
        /// Payload length larger than the packet.
        BadLength = "ipv6 length mismatch",
        /// Hop limit 0 or 1.
        HopLimit = "hop limit expired",
    }
}

/// The `ip6-input` node.
#[derive(Debug, Default, Clone, Copy)]
pub struct Ip6Input;

/// Checks one packet that starts at its IPv6 header; trims Ethernet padding.
#[inline(always)]
pub fn ip6_input_one(pkt: &mut PacketMut<'_>) -> Verdict<Ip6InputNext, Ip6InputError> {
    let ip = match Ipv6Packet::new_checked(pkt.data()) {
        Ok(ip) => ip,
        Err(WireError::Truncated) => return Verdict::Drop(Ip6InputError::Truncated),
        Err(WireError::BadVersion) => return Verdict::Drop(Ip6InputError::BadVersion),
        Err(_) => return Verdict::Drop(Ip6InputError::BadLength),
    };
    if ip.hop_limit() <= 1 {
        return Verdict::Drop(Ip6InputError::HopLimit);
    }
    let total = 40 + ip.payload_len() as usize;
    pkt.truncate(total);
    Verdict::Next(Ip6InputNext::Lookup)
}

impl Node for Ip6Input {
    type Next = Ip6InputNext;
    type Error = Ip6InputError;

    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        cx.process_packets(frame, ip6_input_one);
    }

    fn format_trace(&self, pkt: Packet<'_>, out: &mut String) {
        format_ip6(pkt.data(), out);
    }
}

/// One line describing an IPv6 header (for traces).
pub fn format_ip6(data: &[u8], out: &mut String) {
    match Ipv6Packet::new_checked(data) {
        Ok(ip) => {
            let _ = write!(
                out,
                "IP6: {} -> {} {} hop limit {} payload {}",
                ip.src_addr(),
                ip.dst_addr(),
                ip.next_header(),
                ip.hop_limit(),
                ip.payload_len()
            );
        }
        Err(e) => {
            let _ = write!(out, "IP6: bad header ({e}), {} bytes", data.len());
        }
    }
}

next_nodes! {
    /// Arcs of `ip6-rewrite`.
    pub enum Ip6RewriteNext {
        /// Rewritten packets.
        Output = "interface-output",
    }
}

node_errors! {
    /// Drop reasons of `ip6-rewrite`.
    pub enum Ip6RewriteError {
        /// The adjacency index in the metadata is not in the table.
        NoAdjacency = "no adjacency",
        /// Hop limit would reach 0.
        HopLimit = "hop limit expired",
        /// No headroom for the Ethernet header.
        NoHeadroom = "no headroom for the l2 header",
        /// Not an IPv6 header.
        NotIp6 = "not an ipv6 header",
    }
}

/// The `ip6-rewrite` node: adjacency index in `BufferMeta::opaque`.
#[derive(Debug, Clone, Default)]
pub struct Ip6Rewrite {
    adjacencies: Vec<Adjacency>,
}

impl Ip6Rewrite {
    /// A rewrite node over an adjacency table.
    pub fn new(adjacencies: Vec<Adjacency>) -> Self {
        Ip6Rewrite { adjacencies }
    }
}

/// Rewrites one packet that starts at its IPv6 header.
#[inline(always)]
pub fn ip6_rewrite_one(
    adjs: &[Adjacency],
    pkt: &mut PacketMut<'_>,
) -> Verdict<Ip6RewriteNext, Ip6RewriteError> {
    let Some(adj) = adjs.get(pkt.meta().opaque as usize) else {
        return Verdict::Drop(Ip6RewriteError::NoAdjacency);
    };
    let Ok(mut ip) = Ipv6Packet::new_checked(pkt.data_mut()) else {
        return Verdict::Drop(Ip6RewriteError::NotIp6);
    };
    match ip.decrement_hop_limit() {
        Some(h) if h > 0 => {}
        _ => return Verdict::Drop(Ip6RewriteError::HopLimit),
    }
    if push_ethernet(pkt, adj, EtherType::IPV6) {
        Verdict::Next(Ip6RewriteNext::Output)
    } else {
        Verdict::Drop(Ip6RewriteError::NoHeadroom)
    }
}

impl Node for Ip6Rewrite {
    type Next = Ip6RewriteNext;
    type Error = Ip6RewriteError;

    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        let adjs = &self.adjacencies;
        cx.process_packets(frame, |p| ip6_rewrite_one(adjs, p));
    }

    fn format_trace(&self, pkt: Packet<'_>, out: &mut String) {
        let _ = write!(out, "adjacency {}: ", pkt.meta().opaque);
        format_ip6(pkt.data(), out);
    }
}
