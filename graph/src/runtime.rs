//! Per-graph state shared by the dispatcher and the nodes' [`Context`](crate::Context):
//! the buffer pool, every node's pending vector, the ready queue and the counters.

use crate::capture::Tap;
use crate::trace::Trace;
use crate::{Frame, GraphConfig};
use pktvec_packet::BufferPool;

/// Error index 0: a packet reached the drop node without a reason.
pub(crate) const ERROR_UNSPECIFIED: u16 = 0;

pub(crate) struct Runtime {
    pub pool: BufferPool,
    /// Per node: buffer indices waiting for it, and whether it is in `ready`.
    pub nodes: Vec<Pending>,
    /// Nodes with pending packets, in the order they got their first packet (FIFO).
    pub ready: ReadyRing,
    /// Drop counts per graph-wide error index.
    pub error_counts: Vec<u64>,
    pub drop_node: u32,
    pub cfg: GraphConfig,
    pub trace: Trace,
    pub taps: Vec<Option<Tap>>,
    pub any_tap: bool,
    /// Something looks at packets on their way: a trace, latency stamps or a capture tap
    /// (`trace.active || latency.on || any_tap`, kept by [`Runtime::refresh_observe`]).
    /// The dispatcher and `Context` test this one flag per call and take the slow path
    /// only when it is set.
    pub observe: bool,
    /// Per node: whether it takes raw buffers ([`Node::takes_raw`](crate::Node::takes_raw)),
    /// asked once when the graph is built.
    pub takes_raw: Vec<bool>,
    /// Packets put into the graph with [`Graph::inject`](crate::Graph::inject).
    pub injected: u64,
    /// Packets sink nodes took in but then dropped (a full transmit queue): counted by
    /// the sink and by the drop node, so conservation subtracts them from the output.
    pub sink_drops: u64,
    /// Packets made by nodes, per graph-wide creation reason ([`Node::CREATED`]).
    ///
    /// [`Node::CREATED`]: crate::Node::CREATED
    pub created_counts: Vec<u64>,
    /// Per node, its first index into `created_counts`; one more entry at the end.
    pub created_base: Vec<u32>,
    /// Packets input nodes received but had no buffer for (counted as input and dropped).
    pub unreceived: u64,
    /// Packets dropped without a buffer: `unreceived` plus copies nodes could not make.
    pub unbuffered_drops: u64,
    /// Per-packet latency (off by default).
    pub latency: crate::latency::Latency,
}

/// What a node call needs to know of its node, fixed when the graph is built: handed to
/// the node's [`Context`](crate::Context) by reference, so a call passes one pointer for all.
pub(crate) struct CallSite {
    /// Node id of each arc; one more entry at the end: the drop node.
    pub arcs: Box<[u32]>,
    /// The node's id.
    pub id: u32,
    /// Graph-wide index of the node's "invalid next arc" error; its reasons follow.
    pub error_base: u16,
    /// Whether the node is an input node (its packets enter the graph).
    pub is_input: bool,
}

/// What waits for one node. A node is in the ready ring exactly while its `bufs` is not
/// empty: it is queued when packets come to an empty pending vector and leaves the ring
/// when the dispatcher takes them.
pub(crate) struct Pending {
    pub bufs: Vec<u32>,
    /// How many of the first `bufs` are raw (see [`Frame::raw_len`](crate::Frame::raw_len));
    /// at most `bufs.len()`.
    pub raw: usize,
}

/// FIFO of node ids with a fixed power-of-two capacity larger than the node count. Each
/// node is queued at most once (only while it has pending packets, see [`Pending`]), so it
/// never overflows.
pub(crate) struct ReadyRing {
    buf: Box<[u32]>,
    mask: u32,
    head: u32,
    tail: u32,
}

impl ReadyRing {
    pub fn new(nodes: usize) -> Self {
        let cap = (nodes + 1).next_power_of_two();
        ReadyRing {
            buf: vec![0; cap].into_boxed_slice(),
            mask: cap as u32 - 1,
            head: 0,
            tail: 0,
        }
    }

    #[inline(always)]
    pub fn push(&mut self, node: u32) {
        if let Some(slot) = self.buf.get_mut((self.tail & self.mask) as usize) {
            *slot = node;
        }
        self.tail = self.tail.wrapping_add(1);
    }

    #[inline(always)]
    pub fn pop(&mut self) -> Option<u32> {
        if self.head == self.tail {
            return None;
        }
        let x = self.buf.get((self.head & self.mask) as usize).copied();
        self.head = self.head.wrapping_add(1);
        x
    }

    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.head == self.tail
    }
}

impl Runtime {
    /// Recomputes [`observe`](Self::observe); called whenever tracing, latency or a
    /// capture tap is started or stopped.
    pub fn refresh_observe(&mut self) {
        self.observe = self.trace.active || self.latency.on || self.any_tap;
    }

    /// Appends `bis` to `node`'s pending vector; queues the node if nothing was pending.
    #[inline(always)]
    pub fn push(&mut self, node: u32, bis: &[u32]) {
        if bis.is_empty() {
            return;
        }
        let p = &mut self.nodes[node as usize];
        if p.bufs.is_empty() {
            self.ready.push(node);
        }
        p.bufs.extend_from_slice(bis);
    }

    /// Moves the whole of `frame` to `node`'s pending vector, by swapping the two vectors
    /// when nothing is pending (rte_graph's stream move), and queues the node; the frame
    /// is left empty and its raw count 0. What comes is not raw (a raw prefix the frame
    /// had is lost here: the pool does not hold those buffers) unless the caller, which
    /// knows better (`Context::enqueue_raw`), says so in the returned pending vector.
    #[inline(always)]
    pub fn hand_over(&mut self, node: u32, frame: &mut Frame) -> &mut Pending {
        let p = &mut self.nodes[node as usize];
        if p.bufs.is_empty() {
            std::mem::swap(&mut p.bufs, &mut frame.bufs);
            // Callers hand over non-empty frames; an empty one must not queue the node.
            if !p.bufs.is_empty() {
                self.ready.push(node);
            }
        } else {
            p.bufs.extend_from_slice(&frame.bufs);
        }
        frame.clear();
        p
    }

    /// Appends one buffer to `node`'s pending vector; queues the node if nothing was pending.
    #[inline(always)]
    pub fn push_one(&mut self, node: u32, bi: u32) {
        let p = &mut self.nodes[node as usize];
        if p.bufs.is_empty() {
            self.ready.push(node);
        }
        p.bufs.push(bi);
    }

    /// Packets waiting in pending vectors.
    pub fn in_flight(&self) -> u64 {
        self.nodes.iter().map(|p| p.bufs.len() as u64).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_ring_is_fifo_and_wraps() {
        let mut r = ReadyRing::new(3);
        assert!(r.is_empty());
        for round in 0..10u32 {
            for k in 0..4 {
                r.push(round * 10 + k);
            }
            for k in 0..4 {
                assert_eq!(r.pop(), Some(round * 10 + k));
            }
            assert_eq!(r.pop(), None);
        }
    }
}
