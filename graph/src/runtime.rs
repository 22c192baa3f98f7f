//! Per-graph state shared by the dispatcher and the nodes' [`Context`](crate::Context):
//! the buffer pool, every node's pending vector, the ready queue and the counters.

use crate::capture::Tap;
use crate::trace::Trace;
use crate::GraphConfig;
use pktvec_packet::BufferPool;
use std::collections::VecDeque;

/// Error index 0: a packet reached the drop node without a reason.
pub(crate) const ERROR_UNSPECIFIED: u16 = 0;

pub(crate) struct Runtime {
    pub pool: BufferPool,
    /// Buffer indices waiting for each node.
    pub pending: Vec<Vec<u32>>,
    /// Whether each node is in `ready`.
    pub scheduled: Vec<bool>,
    /// Nodes with pending packets, in the order they got their first packet (FIFO).
    pub ready: VecDeque<u32>,
    /// Drop counts per graph-wide error index.
    pub error_counts: Vec<u64>,
    pub drop_node: u32,
    pub cfg: GraphConfig,
    pub trace: Trace,
    pub taps: Vec<Option<Tap>>,
    pub any_tap: bool,
    /// Packets put into the graph with [`Graph::inject`](crate::Graph::inject).
    pub injected: u64,
}

impl Runtime {
    #[inline(always)]
    pub fn schedule(&mut self, node: u32) {
        let s = &mut self.scheduled[node as usize];
        if !*s {
            *s = true;
            // Capacity is the node count and each node is queued at most once: no growth.
            self.ready.push_back(node);
        }
    }

    /// Appends `bis` to `node`'s pending vector and schedules it.
    #[inline(always)]
    pub fn push(&mut self, node: u32, bis: &[u32]) {
        self.pending[node as usize].extend_from_slice(bis);
        self.schedule(node);
    }

    /// Appends one buffer to `node`'s pending vector and schedules it.
    #[inline(always)]
    pub fn push_one(&mut self, node: u32, bi: u32) {
        self.pending[node as usize].push(bi);
        self.schedule(node);
    }

    /// Packets waiting in pending vectors.
    pub fn in_flight(&self) -> u64 {
        self.pending.iter().map(|p| p.len() as u64).sum()
    }
}
