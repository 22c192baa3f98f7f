//! `arp-input`: answers ARP requests for our addresses and learns neighbours from every
//! valid ARP packet. Expects the packet to start at the ARP header.
//!
//! The neighbour table is a `hashbrown` map (control plane: it allocates when a new
//! neighbour appears, never for known ones).
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

/// The `arp-input` node.
#[derive(Debug, Clone, Default)]
pub struct ArpInput {
    ours: Vec<(Ipv4Addr, MacAddr)>,
    neighbors: HashMap<Ipv4Addr, MacAddr>,
    replies: u64,
}

impl ArpInput {
    /// Answers for these (address, MAC) pairs.
    pub fn new(ours: Vec<(Ipv4Addr, MacAddr)>) -> Self {
        ArpInput {
            ours,
            neighbors: HashMap::new(),
            replies: 0,
        }
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
        node.neighbors.insert(spa, sha);
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
