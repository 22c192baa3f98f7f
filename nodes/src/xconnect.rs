//! `l2-xconnect`: sends every packet received on interface `i` out of interface
//! `map[i]` (VPP's l2 cross-connect, DPDK l2fwd's port pairs), optionally rewriting the
//! Ethernet source MAC to the output interface's.
//!
//! ```
//! use pktvec_nodes::xconnect::XConnect;
//! let x = XConnect::pairs(4); // 0<->1, 2<->3
//! assert_eq!(x.map(), &[1, 0, 3, 2]);
//! ```

use pktvec_graph::{next_nodes, node_errors, Context, Frame, Node, Verdict};
use pktvec_packet::wire::MacAddr;

next_nodes! {
    /// Arcs of `l2-xconnect`.
    pub enum XConnectNext {
        /// Cross-connected packets.
        Output = "interface-output",
    }
}

node_errors! {
    /// Drop reasons of `l2-xconnect`.
    pub enum XConnectError {
        /// The receive interface has no peer.
        NoPeer = "no cross-connect for rx interface",
        /// Shorter than an Ethernet header (with source MAC rewrite).
        Truncated = "truncated frame",
    }
}

/// The `l2-xconnect` node.
#[derive(Debug, Clone)]
pub struct XConnect {
    map: Vec<u16>,
    macs: Option<Vec<MacAddr>>,
}

impl XConnect {
    /// Output interface for each receive interface.
    pub fn new(map: Vec<u16>) -> Self {
        XConnect { map, macs: None }
    }
    /// Interfaces paired as DPDK's l2fwd does: 0↔1, 2↔3, … (`n` interfaces).
    pub fn pairs(n: u16) -> Self {
        XConnect::new((0..n).map(|i| i ^ 1).collect())
    }
    /// Also rewrite the source MAC to `macs[tx_if]`.
    pub fn with_source_macs(mut self, macs: Vec<MacAddr>) -> Self {
        self.macs = Some(macs);
        self
    }
    /// The map.
    pub fn map(&self) -> &[u16] {
        &self.map
    }
}

impl Node for XConnect {
    type Next = XConnectNext;
    type Error = XConnectError;

    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        let (map, macs) = (&self.map, &self.macs);
        cx.process_packets(frame, |p| {
            let Some(&tx) = map.get(p.meta().rx_if as usize) else {
                return Verdict::Drop(XConnectError::NoPeer);
            };
            if let Some(macs) = macs {
                let Some(mac) = macs.get(tx as usize) else {
                    return Verdict::Drop(XConnectError::NoPeer);
                };
                match p.data_mut().get_mut(6..12) {
                    Some(src) => src.copy_from_slice(&mac.0),
                    None => return Verdict::Drop(XConnectError::Truncated),
                }
            }
            p.meta_mut().tx_if = tx;
            Verdict::Next(XConnectNext::Output)
        });
    }
}
