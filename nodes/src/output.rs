//! `interface-output`: counts packets and bytes per transmit interface
//! (`BufferMeta::tx_if`) and passes them on to the transmit node (a pcap sink, a counting
//! sink, or a DPDK tx queue in a later issue). Packets for an interface that does not exist
//! are dropped with a reason.
//!
//! ```
//! use pktvec_nodes::output::InterfaceOutput;
//! let out = InterfaceOutput::new(4);
//! assert_eq!(out.counters().len(), 4);
//! ```

use pktvec_graph::{next_nodes, node_errors, Context, Frame, Node, Verdict};
use pktvec_packet::Packet;
use std::fmt::Write as _;

next_nodes! {
    /// Arcs of `interface-output`.
    pub enum OutputNext {
        /// Transmit.
        Tx = "tx",
    }
}

node_errors! {
    /// Drop reasons of `interface-output`.
    pub enum OutputError {
        /// `tx_if` is not an interface of this node.
        BadInterface = "no such tx interface",
    }
}

/// Packets and bytes sent on one interface.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PortCounters {
    /// Packets.
    pub packets: u64,
    /// Bytes (frame length without FCS).
    pub bytes: u64,
}

/// The `interface-output` node.
#[derive(Debug, Clone)]
pub struct InterfaceOutput {
    ports: Vec<PortCounters>,
}

impl InterfaceOutput {
    /// A node for interfaces `0..interfaces`.
    pub fn new(interfaces: usize) -> Self {
        InterfaceOutput {
            ports: vec![PortCounters::default(); interfaces],
        }
    }
    /// Counters per interface.
    pub fn counters(&self) -> &[PortCounters] {
        &self.ports
    }
}

impl Node for InterfaceOutput {
    type Next = OutputNext;
    type Error = OutputError;

    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        // Only the metadata is read (tx_if, and the length the packet edits keep in step
        // with the data): no packet view, no prefetch of data lines. The metadata lines are
        // warm: the rewrite node just wrote them.
        let ports = &mut self.ports[..];
        // The pool's lines as a local view: their address stays in a register across the
        // counter stores (through the pool it would be reloaded for every packet).
        let pool = cx.pool_mut().packets_mut();
        let mut bad = false;
        // One index test per vector (a bad index is a bug upstream: `meta` panics on it too).
        assert!(
            pool.all_in_range(frame.buffers()),
            "interface-output: a buffer index outside the pool"
        );
        for &bi in frame.buffers() {
            // SAFETY: every index of the frame is in the pool (asserted above).
            let m = unsafe { pool.meta_unchecked(bi) };
            match ports.get_mut(usize::from(m.tx_if)) {
                Some(c) => {
                    c.packets += 1;
                    c.bytes += u64::from(m.len);
                }
                None => bad = true,
            }
        }
        if !bad {
            // Every packet goes to tx: the whole vector moves at once.
            cx.enqueue_all(frame, OutputNext::Tx);
            return;
        }
        let map = cx.verdict_map();
        let (bufs, nexts) = frame.split_mut();
        let pool = cx.pool_mut();
        for (slot, &bi) in nexts.iter_mut().zip(bufs) {
            let m = pool.meta_mut(bi);
            let v = if usize::from(m.tx_if) < ports.len() {
                Verdict::Next(OutputNext::Tx)
            } else {
                Verdict::Drop(OutputError::BadInterface)
            };
            *slot = map.slot(v, m);
        }
        cx.enqueue_frame(frame);
    }

    fn format_trace(&self, pkt: Packet<'_>, out: &mut String) {
        let _ = write!(
            out,
            "tx interface {}, {} bytes",
            pkt.meta().tx_if,
            pkt.len()
        );
    }
}
