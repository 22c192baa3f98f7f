//! `arp-input`: answers ARP requests for our addresses and learns neighbours from every
//! valid ARP packet. Expects the packet to start at the ARP header.
//!
//! The neighbour table is a `hashbrown` map of fixed capacity, allocated when the node is
//! made ([`DEFAULT_NEIGHBOR_LIMIT`], or [`ArpInput::with_neighbor_limit`]): the packet path
//! never allocates, and a flood of ARP from new senders cannot grow it without bound (VPP
//! limits its neighbour table too). Once full, known neighbours are still updated and new
//! ones are not learned, counted in [`ArpInput::not_learned`].
//!
//! ```
//! use pktvec_nodes::arp::{arp_input_one, ArpInput, ArpNext};
//! use pktvec_graph::Verdict;
//! use pktvec_packet::{BufferPool, builder::PacketBuilder, wire::{ArpPacket, ArpOperation}};
//! use std::net::Ipv4Addr;
//! let me = Ipv4Addr::new(10, 0, 0, 1);
//! let mut node = ArpInput::new(vec![(me, [2, 0, 0, 0, 0, 0xaa].into())]);
//! let req = PacketBuilder::ethernet([2, 0, 0, 0, 0, 7].into(), [0xff; 6].into())
//!     .arp_request([2, 0, 0, 0, 0, 7].into(), Ipv4Addr::new(10, 0, 0, 7), me)
//!     .build();
//! let mut pool = BufferPool::new(Default::default())?;
//! let bi = pool.alloc_with(&req[14..])?;
//! assert_eq!(arp_input_one(&mut node, &mut pool.packet_mut(bi)), Verdict::Next(ArpNext::Reply));
//! let reply = pool.data(bi);
//! let arp = ArpPacket::new_checked(&reply[14..])?;
//! assert_eq!(arp.operation(), ArpOperation::REPLY);
//! assert_eq!(arp.target_proto_addr(), Ipv4Addr::new(10, 0, 0, 7));
//! assert_eq!(node.neighbor(Ipv4Addr::new(10, 0, 0, 7)), Some([2, 0, 0, 0, 0, 7].into()));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::ip4::{push_ethernet, Adjacency};
use hashbrown::HashMap;
use pktvec_graph::{next_nodes, node_errors, Context, Frame, Node, Verdict};
use pktvec_packet::wire::{ArpOperation, ArpPacket, EtherType, MacAddr};
use pktvec_packet::{Packet, PacketMut};
use std::fmt::Write as _;
use std::net::Ipv4Addr;

next_nodes! {
    /// Arcs of `arp-input`.
    pub enum ArpNext {
        /// Replies we built.
        Reply = "interface-output",
    }
}

node_errors! {
    /// Drop reasons of `arp-input` (learning happens before any of them).
    pub enum ArpError {
        /// Not Ethernet/IPv4 ARP, or truncated.
        Malformed = "malformed arp",
        /// A request for an address that is not ours, or a reply (learned, then dropped).
        NotForUs = "arp not for us",
        /// No headroom for the reply's Ethernet header.
        NoHeadroom = "no headroom for the l2 header",
    }
}

/// Neighbours an [`ArpInput`] learns at most, unless set with
/// [`ArpInput::with_neighbor_limit`].
pub const DEFAULT_NEIGHBOR_LIMIT: usize = 4096;

/// The `arp-input` node.
#[derive(Debug, Clone)]
pub struct ArpInput {
    ours: Vec<(Ipv4Addr, MacAddr)>,
    neighbors: HashMap<Ipv4Addr, MacAddr>,
    limit: usize,
    not_learned: u64,
    replies: u64,
}

impl Default for ArpInput {
    fn default() -> Self {
        ArpInput::new(Vec::new())
    }
}

impl ArpInput {
    /// Answers for these (address, MAC) pairs; learns up to [`DEFAULT_NEIGHBOR_LIMIT`]
    /// neighbours.
    pub fn new(ours: Vec<(Ipv4Addr, MacAddr)>) -> Self {
        ArpInput {
            ours,
            neighbors: HashMap::with_capacity(DEFAULT_NEIGHBOR_LIMIT),
            limit: DEFAULT_NEIGHBOR_LIMIT,
            not_learned: 0,
            replies: 0,
        }
    }

    /// Learns at most `limit` neighbours (the table is allocated for them now).
    ///
    /// ```
    /// use pktvec_nodes::arp::ArpInput;
    /// let node = ArpInput::new(vec![]).with_neighbor_limit(16);
    /// assert_eq!((node.neighbor_count(), node.not_learned()), (0, 0));
    /// ```
    pub fn with_neighbor_limit(mut self, limit: usize) -> Self {
        self.limit = limit;
        self.neighbors = HashMap::with_capacity(limit);
        self
    }

    /// Senders not learned because the table was full.
    pub fn not_learned(&self) -> u64 {
        self.not_learned
    }
    /// The MAC learned for a neighbour.
    pub fn neighbor(&self, ip: Ipv4Addr) -> Option<MacAddr> {
        self.neighbors.get(&ip).copied()
    }
    /// Number of neighbours learned.
    pub fn neighbor_count(&self) -> usize {
        self.neighbors.len()
    }
    /// Replies sent.
    pub fn replies(&self) -> u64 {
        self.replies
    }
}

/// Handles one ARP packet (starting at the ARP header): learns, and turns requests for our
/// addresses into replies with an Ethernet header back to the requester.
pub fn arp_input_one(node: &mut ArpInput, pkt: &mut PacketMut<'_>) -> Verdict<ArpNext, ArpError> {
    let rx_if = pkt.meta().rx_if;
    let Ok(mut arp) = ArpPacket::new_checked(pkt.data_mut()) else {
        return Verdict::Drop(ArpError::Malformed);
    };
    let (sha, spa) = (arp.sender_hw_addr(), arp.sender_proto_addr());
    if sha.is_unicast() && !spa.is_unspecified() {
        if let Some(known) = node.neighbors.get_mut(&spa) {
            *known = sha;
        } else if node.neighbors.len() < node.limit {
            node.neighbors.insert(spa, sha);
        } else {
            node.not_learned += 1;
        }
    }
    if arp.operation() != ArpOperation::REQUEST {
        return Verdict::Drop(ArpError::NotForUs);
    }
    let tpa = arp.target_proto_addr();
    let Some(&(ip, mac)) = node.ours.iter().find(|(a, _)| *a == tpa) else {
        return Verdict::Drop(ArpError::NotForUs);
    };
    arp.set_operation(ArpOperation::REPLY);
    arp.set_target_hw_addr(sha);
    arp.set_target_proto_addr(spa);
    arp.set_sender_hw_addr(mac);
    arp.set_sender_proto_addr(ip);
    let adj = Adjacency {
        tx_if: rx_if,
        src_mac: mac,
        dst_mac: sha,
    };
    if !push_ethernet(pkt, &adj, EtherType::ARP) {
        return Verdict::Drop(ArpError::NoHeadroom);
    }
    node.replies += 1;
    Verdict::Next(ArpNext::Reply)
}

impl Node for ArpInput {
    type Next = ArpNext;
    type Error = ArpError;

    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        cx.process_packets(frame, |p| arp_input_one(self, p));
    }

    fn format_trace(&self, pkt: Packet<'_>, out: &mut String) {
        match ArpPacket::new_checked(pkt.data()) {
            Ok(a) => {
                let _ = write!(
                    out,
                    "ARP {}: {} ({}) asks for {}",
                    if a.operation() == ArpOperation::REQUEST {
                        "request"
                    } else {
                        "reply"
                    },
                    a.sender_proto_addr(),
                    a.sender_hw_addr(),
                    a.target_proto_addr()
                );
            }
            Err(e) => {
                let _ = write!(out, "ARP: malformed ({e})");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pktvec_packet::builder::PacketBuilder;
    use pktvec_packet::BufferPool;

    /// Found by the `l3fwd` fuzz target: unsolicited ARP from ever new senders grew the
    /// neighbour table without bound. Now it stops at its limit, keeps updating the
    /// neighbours it knows, counts the rest, and never reallocates.
    #[test]
    fn the_neighbour_table_stops_at_its_limit() {
        let me = Ipv4Addr::new(10, 0, 0, 1);
        let mut node =
            ArpInput::new(vec![(me, [2, 0, 0, 0, 0, 0xaa].into())]).with_neighbor_limit(100);
        let capacity = node.neighbors.capacity();
        let mut pool = BufferPool::new(Default::default()).unwrap();
        let mut send = |node: &mut ArpInput, k: u32, last: u8| {
            let sha: MacAddr = [2, 0, 0, 0, 1, last].into();
            let spa = Ipv4Addr::from(0x0a01_0000 + k);
            let req = PacketBuilder::ethernet(sha, [0xff; 6].into())
                .arp_request(sha, spa, Ipv4Addr::new(10, 9, 9, 9))
                .build();
            let bi = pool.alloc_with(&req[14..]).unwrap();
            let v = arp_input_one(node, &mut pool.packet_mut(bi));
            pool.free(bi);
            assert_eq!(v, Verdict::Drop(ArpError::NotForUs));
        };
        for k in 0..250 {
            send(&mut node, k, 1);
        }
        assert_eq!((node.neighbor_count(), node.not_learned()), (100, 150));
        assert_eq!(node.neighbors.capacity(), capacity, "no reallocation");
        // A known neighbour that moves is still updated.
        send(&mut node, 5, 2);
        assert_eq!(
            node.neighbor(Ipv4Addr::from(0x0a01_0005)),
            Some([2, 0, 0, 0, 1, 2].into())
        );
        assert_eq!(node.neighbor(Ipv4Addr::from(0x0a01_0000 + 200)), None);
    }
}
