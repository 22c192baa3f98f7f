//! Nodes shared by the benches: sources that replay buffer indices without allocating and
//! sinks that discard them without freeing, so a bench measures the graph, not the pool.
#![allow(dead_code)]

use pktvec::graph::{next_nodes, Context, Frame, NoError, NoNext, Node, NodeKind};

next_nodes! {
    /// The one arc of the bench nodes.
    pub enum Out { Next = "next" }
}

/// Input node: each poll emits the next `burst` indices of a fixed list (cyclic).
pub struct IndexSource {
    pub idx: Vec<u32>,
    pub pos: usize,
    pub burst: usize,
}

impl IndexSource {
    pub fn new(idx: Vec<u32>, burst: usize) -> Self {
        IndexSource { idx, pos: 0, burst }
    }
}

impl Node for IndexSource {
    type Next = Out;
    type Error = NoError;
    const KIND: NodeKind = NodeKind::Input;
    #[inline]
    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        let n = self.burst.min(cx.vector_size());
        if self.pos + n > self.idx.len() {
            self.pos = 0;
        }
        frame.extend_from_slice(&self.idx[self.pos..self.pos + n]);
        self.pos += n;
        cx.enqueue_all(frame, Out::Next);
    }
}

/// Sink that forgets the indices (the buffers stay allocated and are replayed).
pub struct Discard;

impl Node for Discard {
    type Next = NoNext;
    type Error = NoError;
    const KIND: NodeKind = NodeKind::Sink;
    #[inline]
    fn process(&mut self, _cx: &mut Context<'_, Self>, frame: &mut Frame) {
        frame.clear();
    }
}

/// Forwards the whole vector on its one arc (a stream move when the next is idle).
pub struct PassThrough;

impl Node for PassThrough {
    type Next = Out;
    type Error = NoError;
    #[inline]
    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        cx.enqueue_all(frame, Out::Next);
    }
}
