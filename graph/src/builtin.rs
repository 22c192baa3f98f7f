//! Nodes every graph can use: the drop node, a null sink and a packet source.
//!
//! * [`DropNode`] (`"drop"`) is added to every graph by the builder: it counts each packet
//!   under the reason in its metadata and frees it.
//! * [`NullSink`] frees what it receives (a stand-in for an output interface).
//! * [`PacketSource`] is an input node that replays template packets (from a capture, a
//!   builder, a test) into freshly allocated buffers.
//!
//! ```
//! use pktvec_graph::{builtin::{NullSink, PacketSource, SourceNext}, GraphBuilder, GraphConfig};
//! use pktvec_packet::{BufferPool, PoolConfig};
//!
//! let mut b = GraphBuilder::new(GraphConfig::default());
//! b.add("source", PacketSource::new(vec![vec![0xaa; 64]; 3]).with_limit(10));
//! b.add("out", NullSink);
//! b.set_next("source", SourceNext::Out, "out");
//! let mut g = b.build(BufferPool::new(PoolConfig::default()).unwrap()).unwrap();
//! g.run_until_idle();
//! assert_eq!(g.runtime().row("out").unwrap().packets, 10);
//! assert_eq!(g.pool().in_use(), 0);
//! ```

use crate::context::Context;
use crate::frame::Frame;
use crate::node::{NoError, NoNext, Node, NodeKind};
use crate::{next_nodes, node_errors};
use pktvec_packet::BufferPool;

/// Name under which the builder adds the [`DropNode`].
pub const DROP_NODE: &str = "drop";

/// Counts every packet under the error index in its metadata, then frees it.
#[derive(Debug, Default)]
pub struct DropNode;

impl Node for DropNode {
    type Next = NoNext;
    type Error = NoError;
    const KIND: NodeKind = NodeKind::Sink;

    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        cx.count_drops(frame);
        cx.free_frame(frame);
    }
}

/// Frees every packet it receives; the runtime table counts them.
#[derive(Debug, Default, Clone, Copy)]
pub struct NullSink;

impl Node for NullSink {
    type Next = NoNext;
    type Error = NoError;
    const KIND: NodeKind = NodeKind::Sink;

    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        cx.free_frame(frame);
    }
}

next_nodes! {
    /// The one arc of [`PacketSource`].
    pub enum SourceNext {
        /// Every packet (by default to `ethernet-input`; change it with `set_next`).
        Out = "ethernet-input",
    }
}

node_errors! {
    /// Drop reasons of packet sources.
    pub enum SourceError {
        /// The pool had no buffer for the packet: it is dropped, as a NIC drops what
        /// arrives when its receive ring has no buffers.
        NoBuffer = "no buffer",
    }
}

/// An input node that copies template packets, round robin, into new buffers: up to one
/// vector per poll, until an optional packet limit.
///
/// Like a NIC, it does not wait for buffers: packets it has no buffer for when polled are
/// dropped and counted under "no buffer" (see [`SourceError`]), and count towards the limit.
#[derive(Debug, Clone)]
pub struct PacketSource {
    templates: Vec<Vec<u8>>,
    next_template: usize,
    limit: Option<u64>,
    produced: u64,
    no_buffer: u64,
    rx_if: u16,
}

impl PacketSource {
    /// A source over these packets (an empty list produces nothing).
    pub fn new(templates: Vec<Vec<u8>>) -> Self {
        PacketSource {
            templates,
            next_template: 0,
            limit: None,
            produced: 0,
            no_buffer: 0,
            rx_if: 0,
        }
    }

    /// Stops after `n` packets in all.
    pub fn with_limit(mut self, n: u64) -> Self {
        self.limit = Some(n);
        self
    }

    /// Sets the receive interface recorded in each packet's metadata.
    pub fn with_rx_interface(mut self, rx_if: u16) -> Self {
        self.rx_if = rx_if;
        self
    }

    /// Packets produced so far.
    pub fn produced(&self) -> u64 {
        self.produced
    }

    /// Packets dropped so far because the pool had no buffer for them.
    pub fn no_buffer(&self) -> u64 {
        self.no_buffer
    }
}

impl Node for PacketSource {
    type Next = SourceNext;
    type Error = SourceError;
    const KIND: NodeKind = NodeKind::Input;

    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        if self.templates.is_empty() {
            return;
        }
        let mut want = cx.vector_size();
        if let Some(limit) = self.limit {
            want = want.min(limit.saturating_sub(self.produced + self.no_buffer) as usize);
        }
        let templates = &self.templates;
        let next = &mut self.next_template;
        let (got, _) = fill_frame(cx, frame, want, self.rx_if, || {
            let t = &templates[*next];
            *next = (*next + 1) % templates.len();
            t
        });
        self.produced += got as u64;
        if got < want {
            let missing = want - got;
            self.next_template = (self.next_template + missing) % self.templates.len();
            self.no_buffer += missing as u64;
            cx.drop_unreceived(SourceError::NoBuffer, missing as u64);
        }
        cx.enqueue_all(frame, SourceNext::Out);
    }
}

/// What input nodes that copy bytes into fresh buffers share: allocates up to `want`
/// buffers (bounded by the frame's room and the pool), appends them to `frame`, copies the
/// bytes `next()` returns into each (truncated to the buffer's room) and records `rx_if`.
/// Returns the number of buffers filled and how many packets were truncated.
///
/// ```
/// use pktvec_graph::{builtin::fill_frame, next_nodes, Context, Frame, NoError, Node, NodeKind};
/// next_nodes! { pub enum OneNext { Out = "tx" } }
/// /// Sends the same 60-byte frame forever.
/// struct Repeat(Vec<u8>);
/// impl Node for Repeat {
///     type Next = OneNext;
///     type Error = NoError;
///     const KIND: NodeKind = NodeKind::Input;
///     fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
///         let bytes = &self.0;
///         let want = cx.vector_size();
///         fill_frame(cx, frame, want, 0, || bytes);
///         cx.enqueue_all(frame, OneNext::Out);
///     }
/// }
/// ```
pub fn fill_frame<'a, N: Node + ?Sized>(
    cx: &mut Context<'_, N>,
    frame: &mut Frame,
    want: usize,
    rx_if: u16,
    next: impl FnMut() -> &'a [u8],
) -> (usize, u64) {
    let got = cx.alloc_into(frame, want);
    let start = frame.len() - got;
    let truncated = copy_into_buffers(cx.pool_mut(), &frame.buffers()[start..], rx_if, next);
    (got, truncated)
}

/// Copies the bytes `next()` returns into each of the fresh buffers `bufs` (truncated to a
/// buffer's room) and records `rx_if`, as a NIC's receive would; returns how many packets
/// were truncated. What [`fill_frame`] and other packet sources (the path batcher's replay)
/// share.
pub fn copy_into_buffers<'a>(
    pool: &mut BufferPool,
    bufs: &[u32],
    rx_if: u16,
    mut next: impl FnMut() -> &'a [u8],
) -> u64 {
    let mut truncated = 0;
    for &bi in bufs {
        let data = next();
        let mut p = pool.packet_mut(bi);
        let n = data.len().min(p.tailroom());
        truncated += (n < data.len()) as u64;
        if let Ok(dst) = p.append(n) {
            dst.copy_from_slice(&data[..n]);
        }
        p.meta_mut().rx_if = rx_if;
    }
    truncated
}
