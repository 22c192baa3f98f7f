//! [`Context`]: what a node sees while it processes a vector.
//!
//! The context gives a node its packets (through the buffer pool), its settings (vector
//! size, prefetch distance, sub-batch size) and the ways to send packets on:
//!
//! | call | moves | cost |
//! |---|---|---|
//! | [`Context::process_packets`] | runs a per-packet function in a prefetching loop, then enqueues the whole frame | one call per vector |
//! | [`Context::process_packets_split`] | the same with a fast path in the loop and the rest after it | one call per vector |
//! | [`Context::process_packets_split_to`] | the same for a fast path with one arc: no next slot written in the loop | one call per vector |
//! | [`Context::process_sub_batches`] | two-phase loop: key + bucket prefetch for `b` packets, then lookups | one call per vector |
//! | [`Context::enqueue_frame`] | every packet to the arc in its next slot, grouped in runs | bulk copies, or O(1) |
//! | [`Context::enqueue_all`] | the whole frame to one arc | O(1) hand-over if the next node has nothing pending |
//! | [`Context::enqueue_raw`] | an input node's whole frame, buffers not handed to the pool, to a node that sends them as they are | O(1), no per-packet work |
//! | [`Context::enqueue_slice`] | a run of the frame to one arc | one bulk copy |
//! | [`Context::enqueue`], [`Context::drop_buffer`] | one packet | slow path |
//!
//! See [`Node`](crate::node) for a complete node.

use crate::loops;
use crate::node::{ErrorReason, Next, Node, NodeKind, Verdict};
use crate::runtime::{CallSite, Runtime};
use crate::{Frame, MAX_VECTOR_SIZE};
use pktvec_packet::{BufferMeta, BufferPool, MetaFlags, Packet, PacketMut, PacketsMut};
use std::marker::PhantomData;

/// Largest sub-batch size `b` of the two-phase loop.
pub const MAX_SUB_BATCH: usize = 256;

/// The view a node has of the graph while it runs.
pub struct Context<'a, N: Node + ?Sized> {
    rt: &'a mut Runtime,
    /// This node's id, arcs and error base.
    site: &'a CallSite,
    emitted: u64,
    _node: PhantomData<fn(&N)>,
}

impl<'a, N: Node + ?Sized> Context<'a, N> {
    #[inline(always)]
    pub(crate) fn new(rt: &'a mut Runtime, site: &'a CallSite) -> Self {
        Context {
            rt,
            site,
            emitted: 0,
            _node: PhantomData,
        }
    }

    pub(crate) fn emitted(&self) -> u64 {
        self.emitted
    }

    /// The buffer pool: packet bytes and metadata.
    #[inline(always)]
    pub fn pool(&self) -> &BufferPool {
        &self.rt.pool
    }

    /// The buffer pool, writable.
    #[inline(always)]
    pub fn pool_mut(&mut self) -> &mut BufferPool {
        &mut self.rt.pool
    }

    /// Read access to packet `bi`.
    #[inline(always)]
    pub fn packet(&self, bi: u32) -> Packet<'_> {
        self.rt.pool.packet(bi)
    }

    /// Write access to packet `bi`.
    #[inline(always)]
    pub fn packet_mut(&mut self, bi: u32) -> PacketMut<'_> {
        self.rt.pool.packet_mut(bi)
    }

    /// The graph's vector size `V`: the most packets a node gets per call.
    #[inline(always)]
    pub fn vector_size(&self) -> usize {
        self.rt.cfg.vector_size
    }

    /// How many packets ahead the loop helpers prefetch (0 = no prefetch).
    #[inline(always)]
    pub fn prefetch_distance(&self) -> usize {
        self.rt.cfg.prefetch_distance
    }

    /// Sub-batch size `b` of the two-phase loop.
    #[inline(always)]
    pub fn sub_batch(&self) -> usize {
        self.rt.cfg.sub_batch.clamp(1, MAX_SUB_BATCH)
    }

    /// This node's id in the graph.
    #[inline(always)]
    pub fn node_id(&self) -> u32 {
        self.site.id
    }

    /// Graph-wide error index of one of this node's drop reasons (what
    /// [`BufferMeta::error`](pktvec_packet::BufferMeta::error) holds for a packet dropped
    /// with it).
    #[inline(always)]
    pub fn error_index(&self, reason: N::Error) -> u16 {
        self.site.error_base + 1 + reason.index()
    }

    /// The map from verdicts to next-slot values, for nodes that fill
    /// [`Frame::nexts_mut`] themselves before [`enqueue_frame`](Self::enqueue_frame).
    #[inline(always)]
    pub fn verdict_map(&self) -> VerdictMap<N> {
        VerdictMap {
            drop_arc: self.drop_arc(),
            error_base: self.site.error_base + 1,
            _node: PhantomData,
        }
    }

    /// Node id an arc of this node leads to, as the graph was wired (the drop node for an
    /// arc index the node does not have). Lets a node choose per vector between arcs, e.g.
    /// skip a step only when an arc was pointed past it.
    #[inline(always)]
    pub fn next_node_id(&self, next: N::Next) -> u32 {
        self.site
            .arcs
            .get(next.index() as usize)
            .copied()
            .unwrap_or(self.rt.drop_node)
    }

    #[inline(always)]
    fn drop_arc(&self) -> u16 {
        (self.site.arcs.len() - 1) as u16
    }

    /// Node id of an arc; an arc index the node does not have leads to the drop node and
    /// marks the packets with this node's "invalid next arc" error.
    #[inline(always)]
    fn target(&mut self, arc: u16, bis: &[u32]) -> u32 {
        match self.site.arcs.get(arc as usize) {
            Some(&t) => t,
            None => {
                let e = self.site.error_base;
                for &bi in bis {
                    self.rt.pool.meta_mut(bi).error = e;
                }
                self.rt.drop_node
            }
        }
    }

    /// Work done on every packet that leaves this node: the emitted count and, when
    /// something observes packets (a trace, latency, a capture tap), the slow path.
    #[inline(always)]
    fn leaving(&mut self, bis: &[u32]) {
        self.emitted += bis.len() as u64;
        if self.rt.observe {
            self.leaving_observed(bis);
        }
    }

    /// Trace marking and latency stamps for input nodes, and this node's capture tap.
    #[cold]
    #[inline(never)]
    fn leaving_observed(&mut self, bis: &[u32]) {
        if self.site.is_input && self.rt.latency.on {
            self.rt.latency.stamp(bis, crate::clock::now());
        }
        if self.site.is_input && self.rt.trace.budget > 0 {
            self.mark_traced(bis);
        }
        if self.rt.any_tap {
            let rt = &mut *self.rt;
            if let Some(tap) = rt.taps[self.site.id as usize].as_mut() {
                tap.write(&rt.pool, bis);
            }
        }
    }

    #[cold]
    fn mark_traced(&mut self, bis: &[u32]) {
        for &bi in bis {
            if self.rt.trace.budget == 0 {
                break;
            }
            let idx = self.rt.trace.start_packet(bi);
            let m = self.rt.pool.meta_mut(bi);
            m.flags.insert(MetaFlags::TRACED);
            m.trace_index = idx;
        }
    }

    /// Sends every packet of `frame` to the arc in its next slot
    /// ([`Frame::nexts_mut`]), in bulk: runs of packets going to the same arc are copied
    /// at once, and when all go to one arc whose node has nothing pending, the frame is
    /// handed over without copying. The frame is empty afterwards.
    #[inline]
    pub fn enqueue_frame(&mut self, frame: &mut Frame) {
        let n = frame.bufs.len();
        if n == 0 {
            return;
        }
        let nexts = &frame.nexts[..n];
        let first = nexts[0];
        // Branch-free over the whole vector, so it vectorizes (16 lanes per AVX2 op).
        if nexts.iter().fold(0u16, |acc, &x| acc | (x ^ first)) == 0 {
            self.move_frame(frame, first);
            return;
        }
        self.leaving_frame(frame);
        let mut i = 0;
        while i < n {
            let arc = frame.nexts[i];
            let j = run_end(&frame.nexts[..n], i, arc);
            let run = &frame.bufs[i..j];
            let t = self.target(arc, run);
            self.rt.push(t, run);
            i = j;
        }
        frame.clear();
    }

    #[inline(always)]
    fn leaving_frame(&mut self, frame: &Frame) {
        // `leaving` needs `&mut self` and the indices; the frame is not part of `self`.
        self.leaving(&frame.bufs);
    }

    /// Sends the whole frame on one arc. O(1) when the next node has nothing pending (the
    /// vectors are swapped, as rte_graph's stream move); a bulk copy otherwise.
    #[inline]
    pub fn enqueue_all(&mut self, frame: &mut Frame, next: N::Next) {
        if !frame.bufs.is_empty() {
            self.move_frame(frame, next.index());
        }
    }

    #[inline(always)]
    fn move_frame(&mut self, frame: &mut Frame, arc: u16) {
        self.leaving_frame(frame);
        let t = self.target(arc, &frame.bufs);
        self.rt.hand_over(t, frame);
    }

    /// True if [`enqueue_raw`](Self::enqueue_raw) on arc `next` would hand the frame over
    /// raw: the arc's node [takes raw buffers](crate::Node::takes_raw), all that is pending
    /// for it is raw too, and nothing looks into packets on the way (no trace waiting to
    /// mark packets, no capture tap on this node).
    #[inline]
    pub fn can_enqueue_raw(&self, next: N::Next) -> bool {
        let Some(&t) = self.site.arcs.get(next.index() as usize) else {
            return false;
        };
        let rt = &*self.rt;
        let p = &rt.nodes[t as usize];
        rt.takes_raw[t as usize]
            && p.raw == p.bufs.len()
            && rt.trace.budget == 0
            && !(rt.any_tap && rt.taps[self.site.id as usize].is_some())
    }

    /// Sends the whole frame on arc `next` as *raw* buffers, without their metadata: an
    /// input node whose packets go straight to a node that sends them on as they are (a
    /// DPDK rx queue wired to a tx queue, testpmd's io forwarding) skips handing each
    /// buffer to the pool and back. Returns false and leaves the frame as it is when
    /// [`can_enqueue_raw`](Self::can_enqueue_raw) is false; the caller then hands the
    /// buffers to the pool (e.g. [`BufferPool::adopt_bulk_as`]) and enqueues them as usual.
    ///
    /// The receiving node sees them as the first [`Frame::raw_len`] indices of its frame.
    /// The pool does not hold them, so through it they read as empty packets.
    ///
    /// # Safety
    /// Every index of `frame` must be a buffer of the graph's pool that the pool does not
    /// hold, handed over by its owner now as for [`BufferPool::adopt`]: the receiving node
    /// either adopts it or gives it back to the pool's backend (a driver's transmit)
    /// without adopting it, and the graph adopts what is still pending when it is dropped.
    ///
    /// ```
    /// use pktvec_graph::{Context, Frame, GraphBuilder, Node, NodeKind, NoError, NoNext};
    /// use pktvec_packet::{BufferPool, PoolConfig};
    /// pktvec_graph::next_nodes! { pub enum LendNext { Out = "keep" } }
    /// /// Lends its buffers (out of the pool, as a driver's) to `keep` when it can.
    /// struct Lend(Vec<u32>);
    /// impl Node for Lend {
    ///     type Next = LendNext;
    ///     type Error = NoError;
    ///     const KIND: NodeKind = NodeKind::Input;
    ///     fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
    ///         if !self.0.is_empty() && cx.can_enqueue_raw(LendNext::Out) {
    ///             frame.extend_from_slice(&self.0);
    ///             self.0.clear();
    ///             // SAFETY: released from the pool below and lent once.
    ///             unsafe { cx.enqueue_raw(frame, LendNext::Out) };
    ///         }
    ///     }
    /// }
    /// /// Counts raw buffers, adopts them, and frees everything.
    /// struct Keep(usize);
    /// impl Node for Keep {
    ///     type Next = NoNext;
    ///     type Error = NoError;
    ///     const KIND: NodeKind = NodeKind::Sink;
    ///     fn takes_raw(&self) -> bool { true }
    ///     fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
    ///         self.0 += frame.raw_len();
    ///         for &bi in &frame.buffers()[..frame.raw_len()] {
    ///             // SAFETY: a raw buffer is the graph's to hand over (see `Lend`).
    ///             unsafe { cx.pool_mut().adopt(bi) };
    ///         }
    ///         cx.free_frame(frame);
    ///     }
    /// }
    /// let mut pool = BufferPool::new(PoolConfig { buffers: 8, ..PoolConfig::default() })?;
    /// let mut out = [0u32; 2];
    /// assert_eq!(pool.alloc_bulk(&mut out), 2);
    /// for bi in out {
    ///     pool.release(bi); // out of the pool now, as a driver's buffer is
    /// }
    /// let mut b = GraphBuilder::new(pktvec_graph::GraphConfig::default());
    /// b.add("lend", Lend(out.to_vec()));
    /// b.add("keep", Keep(0));
    /// let mut g = b.build(pool)?;
    /// assert_eq!(g.run_once(), 2);
    /// assert_eq!(g.node::<Keep>("keep").unwrap().0, 2);
    /// assert_eq!((g.pool().in_use(), g.pool().free_count()), (0, 8));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    // SAFETY: an `unsafe` function because every index must be a buffer its owner hands over
    // (# Safety above): the receiving node may give it to a driver without a check.
    #[inline]
    pub unsafe fn enqueue_raw(&mut self, frame: &mut Frame, next: N::Next) -> bool {
        let n = frame.bufs.len();
        if n == 0 {
            return true;
        }
        if !self.can_enqueue_raw(next) {
            return false;
        }
        self.emitted += n as u64;
        if self.site.is_input && self.rt.latency.on {
            self.rt.latency.stamp(&frame.bufs, crate::clock::now());
        }
        let t = self.site.arcs[next.index() as usize];
        let p = self.rt.hand_over(t, frame);
        // Everything pending was raw (`can_enqueue_raw`), and so is what came.
        p.raw = p.bufs.len();
        true
    }

    /// Sends a run of packets on one arc with one bulk copy (rte_node_enqueue's `count`
    /// form), for nodes that know where their runs are. The packets must come from the
    /// node's frame, and the frame must not be enqueued again afterwards: clear it.
    #[inline]
    pub fn enqueue_slice(&mut self, bufs: &[u32], next: N::Next) {
        if bufs.is_empty() {
            return;
        }
        self.leaving(bufs);
        let t = self.target(next.index(), bufs);
        self.rt.push(t, bufs);
    }

    /// Sends one packet on an arc (slow path: prefer the whole-frame calls).
    #[inline]
    pub fn enqueue(&mut self, bi: u32, next: N::Next) {
        self.leaving(std::slice::from_ref(&bi));
        let t = self.target(next.index(), std::slice::from_ref(&bi));
        self.rt.push_one(t, bi);
    }

    /// Drops one packet with a reason (slow path). A sink may drop what it cannot deliver
    /// (a full transmit queue): the packet then counts as dropped, not as output.
    #[inline]
    pub fn drop_buffer(&mut self, bi: u32, reason: N::Error) {
        if N::KIND == NodeKind::Sink {
            self.rt.sink_drops += 1;
        }
        self.rt.pool.meta_mut(bi).error = self.error_index(reason);
        self.leaving(std::slice::from_ref(&bi));
        let d = self.rt.drop_node;
        self.rt.push_one(d, bi);
    }

    /// Counts `n` packets this node made (allocated or copied, e.g. flood copies) and sends
    /// on itself, under `reason`, one of [`Node::CREATED`]: they count as graph input in
    /// [`Conservation`](crate::Conservation) and per node in the runtime table and
    /// [`Graph::created`](crate::Graph::created). Count once per vector where possible.
    ///
    /// `reason` must be a variant of the enum whose `REASONS` are the node's
    /// [`Node::CREATED`] (checked in debug builds); an index past them is not counted.
    ///
    /// ```
    /// use pktvec_graph::{builtin, node_errors, next_nodes, Context, ErrorReason, Frame, GraphBuilder, GraphConfig, Node};
    /// next_nodes! { pub enum DupNext { Out = "tx" } }
    /// node_errors! { pub enum DupError { NoBuffer = "copy: no buffer" } }
    /// node_errors! { pub enum DupCreated { Copy = "duplicate" } }
    /// /// Sends every packet and a copy of it.
    /// struct Dup;
    /// impl Node for Dup {
    ///     type Next = DupNext;
    ///     type Error = DupError;
    ///     const CREATED: &'static [&'static str] = DupCreated::REASONS;
    ///     fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
    ///         for i in 0..frame.len() {
    ///             match cx.pool_mut().clone_packet(frame.buffers()[i]) {
    ///                 Some(c) => {
    ///                     cx.count_created(DupCreated::Copy, 1);
    ///                     cx.enqueue(c, DupNext::Out);
    ///                 }
    ///                 None => cx.drop_uncreated(DupCreated::Copy, DupError::NoBuffer, 1),
    ///             }
    ///         }
    ///         cx.enqueue_all(frame, DupNext::Out);
    ///     }
    /// }
    /// let mut b = GraphBuilder::new(GraphConfig::default());
    /// b.add("src", builtin::PacketSource::new(vec![vec![0; 60]]).with_limit(10));
    /// b.add("dup", Dup).add("tx", builtin::NullSink);
    /// b.set_next("src", builtin::SourceNext::Out, "dup");
    /// let mut g = b.build(pktvec_packet::BufferPool::new(Default::default())?)?;
    /// g.run_until_idle();
    /// let c = g.conservation();
    /// assert_eq!((c.input, c.created, c.output), (10, 10, 20));
    /// assert!(c.is_balanced(), "{c}");
    /// assert_eq!(g.created().count("dup", "duplicate"), 10);
    /// assert_eq!(g.runtime().row("dup").unwrap().created, 10);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn count_created<R: ErrorReason>(&mut self, reason: R, n: u64) {
        debug_assert_eq!(
            R::REASONS,
            N::CREATED,
            "count_created: the reason's enum is not the node's CREATED"
        );
        let rt = &mut *self.rt;
        let base = rt.created_base[self.site.id as usize] as usize;
        let end = rt.created_base[self.site.id as usize + 1] as usize;
        let i = base + reason.index() as usize;
        if i < end {
            rt.created_counts[i] += n;
        }
    }

    /// Counts `n` packets this node meant to make (e.g. flood copies) but could not, for
    /// want of a buffer: made under `created` ([`count_created`](Self::count_created)) and
    /// dropped at once under `error`, so they show in the error counters and conservation
    /// stays exact although no buffer ever carried them.
    #[inline]
    pub fn drop_uncreated<R: ErrorReason>(&mut self, created: R, error: N::Error, n: u64) {
        self.count_created(created, n);
        self.count_unbuffered_drops(error, n);
    }

    /// For input nodes: counts `n` packets that arrived (a capture's next packets, a
    /// device's receive) but got no buffer because the pool was empty, under `error`
    /// (typically "no buffer"). They count as graph input and as dropped, so an exhausted
    /// pool shows in the error counters instead of silence. Other nodes use
    /// [`drop_uncreated`](Self::drop_uncreated).
    #[inline]
    pub fn drop_unreceived(&mut self, error: N::Error, n: u64) {
        debug_assert!(self.site.is_input, "drop_unreceived is for input nodes");
        self.rt.unreceived += n;
        self.count_unbuffered_drops(error, n);
    }

    #[inline]
    fn count_unbuffered_drops(&mut self, error: N::Error, n: u64) {
        let e = self.error_index(error) as usize;
        if let Some(c) = self.rt.error_counts.get_mut(e) {
            *c += n;
            self.rt.unbuffered_drops += n;
        }
    }

    /// Drops every packet of the frame with one reason.
    #[inline]
    pub fn drop_frame(&mut self, frame: &mut Frame, reason: N::Error) {
        if N::KIND == NodeKind::Sink {
            self.rt.sink_drops += frame.bufs.len() as u64;
        }
        let e = self.error_index(reason);
        for &bi in &frame.bufs {
            self.rt.pool.meta_mut(bi).error = e;
        }
        let d = self.drop_arc();
        self.move_frame(frame, d);
    }

    /// Frees every buffer of the frame (for sinks). Returns how many were freed.
    #[inline]
    pub fn free_frame(&mut self, frame: &mut Frame) -> usize {
        let n = self.rt.pool.free_bulk(&frame.bufs);
        frame.clear();
        n
    }

    /// Allocates up to `n` buffers (bounded by the frame's room) and appends them to the
    /// frame; returns how many it got (fewer when the pool runs low). For input nodes.
    #[inline]
    pub fn alloc_into(&mut self, frame: &mut Frame, n: usize) -> usize {
        let want = n.min(frame.room());
        let start = frame.bufs.len();
        frame.bufs.resize(start + want, 0);
        let got = self.rt.pool.alloc_bulk(&mut frame.bufs[start..]);
        frame.bufs.truncate(start + got);
        got
    }

    /// [`alloc_into`](Self::alloc_into) that also fills each buffer, as
    /// [`BufferPool::alloc_bulk_blocks`]: the `k`-th buffer allocated gets `packet(k)`'s
    /// block, length and metadata fields. For input nodes replaying minimum-size frames.
    #[inline]
    pub fn alloc_blocks_into<'b>(
        &mut self,
        frame: &mut Frame,
        n: usize,
        packet: impl FnMut(usize) -> pktvec_packet::pool::Block64<'b>,
    ) -> usize {
        let want = n.min(frame.room());
        let start = frame.bufs.len();
        frame.bufs.resize(start + want, 0);
        let got = self
            .rt
            .pool
            .alloc_bulk_blocks(&mut frame.bufs[start..], packet);
        frame.bufs.truncate(start + got);
        got
    }

    /// Runs `f` on every packet of the frame and sends each where `f` says, then enqueues
    /// the whole frame in bulk. The loop ([`loops::quad_loop`]) prefetches the
    /// metadata and first data line of the packets
    /// [`prefetch_distance`](Self::prefetch_distance) ahead.
    ///
    /// The closure gets each packet writable (`pkt.data_mut()`) and returns its
    /// [`Verdict`]; it must not panic on a malformed packet (check lengths, drop with a
    /// reason). A node that looks packets up in a table does better with
    /// [`process_sub_batches`](Self::process_sub_batches).
    ///
    /// ```
    /// use pktvec_graph::builtin::{NullSink, PacketSource, SourceNext};
    /// use pktvec_graph::{next_nodes, node_errors, Context, Frame, GraphBuilder, GraphConfig, Node, Verdict};
    /// use pktvec_packet::{BufferPool, PoolConfig};
    ///
    /// next_nodes! { pub enum MarkNext { Tx = "tx" } }
    /// node_errors! { pub enum MarkError { Empty = "empty packet" } }
    ///
    /// /// Sets the first byte of every packet to 0xff.
    /// struct Mark;
    ///
    /// impl Node for Mark {
    ///     type Next = MarkNext;
    ///     type Error = MarkError;
    ///
    ///     fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
    ///         cx.process_packets(frame, |pkt| match pkt.data_mut().first_mut() {
    ///             Some(b) => {
    ///                 *b = 0xff;
    ///                 Verdict::Next(MarkNext::Tx)
    ///             }
    ///             None => Verdict::Drop(MarkError::Empty),
    ///         });
    ///     }
    /// }
    ///
    /// let mut b = GraphBuilder::new(GraphConfig::default());
    /// b.add("source", PacketSource::new(vec![vec![0u8; 60]]).with_limit(3))
    ///     .add("mark", Mark)
    ///     .add("tx", NullSink)
    ///     .set_next("source", SourceNext::Out, "mark");
    /// let mut g = b.build(BufferPool::new(PoolConfig::default())?)?;
    /// g.trace_add(1);
    /// g.run_until_idle();
    /// // The trace shows the packet as `tx` got it: first byte ff.
    /// assert!(g.trace().to_string().contains("len 60: ff 00"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline(always)]
    pub fn process_packets<F>(&mut self, frame: &mut Frame, mut f: F)
    where
        F: FnMut(&mut PacketMut<'_>) -> Verdict<N::Next, N::Error>,
    {
        let d = self.rt.cfg.prefetch_distance;
        let map = self.verdict_map();
        let n = frame.bufs.len();
        let (bufs, nexts) = (&frame.bufs[..], &mut frame.nexts[..n]);
        let mut pk = self.rt.pool.packets_mut();
        packet_loop(&mut pk, bufs, nexts, d, |p| {
            let v = f(p);
            map.slot(v, p.meta_mut())
        });
        self.enqueue_frame(frame);
    }

    /// [`process_packets`](Self::process_packets) in two passes: `fast` decides the usual
    /// packets and returns `None` for any it leaves to `slow`, which then runs on each of
    /// those, in order, after the whole vector has been through `fast`. Each packet's
    /// verdict is `fast`'s, or `slow`'s where `fast` gave none; the frame is then enqueued
    /// as one. With no call on its path, the per-packet loop keeps its state in registers
    /// (a call, even a rare one, makes the compiler save and reload them around every
    /// packet). `slow` must give every packet its full verdict (it may re-check what
    /// `fast` checked).
    ///
    /// ```
    /// use pktvec_graph::builtin::{NullSink, PacketSource, SourceNext};
    /// use pktvec_graph::{next_nodes, node_errors, Context, Frame, GraphBuilder, GraphConfig, Node, Verdict};
    /// use pktvec_packet::{BufferPool, PoolConfig};
    ///
    /// next_nodes! { pub enum MarkNext { Tx = "tx" } }
    /// node_errors! { pub enum MarkError { Empty = "empty packet" } }
    ///
    /// /// Sets the first byte of every packet to 0xff; empty packets take the slow path.
    /// struct Mark;
    ///
    /// impl Node for Mark {
    ///     type Next = MarkNext;
    ///     type Error = MarkError;
    ///
    ///     fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
    ///         cx.process_packets_split(
    ///             frame,
    ///             |pkt| {
    ///                 let b = pkt.data_mut().first_mut()?;
    ///                 *b = 0xff;
    ///                 Some(Verdict::Next(MarkNext::Tx))
    ///             },
    ///             |_| Verdict::Drop(MarkError::Empty),
    ///         );
    ///     }
    /// }
    ///
    /// let mut b = GraphBuilder::new(GraphConfig::default());
    /// b.add("source", PacketSource::new(vec![vec![0u8; 60], vec![]]).with_limit(4))
    ///     .add("mark", Mark)
    ///     .add("tx", NullSink)
    ///     .set_next("source", SourceNext::Out, "mark");
    /// let mut g = b.build(BufferPool::new(PoolConfig::default())?)?;
    /// g.run_until_idle();
    /// assert_eq!(g.runtime().row("tx").unwrap().packets, 2);
    /// assert_eq!(g.errors().count("mark", "empty packet"), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline(always)]
    pub fn process_packets_split<F, S>(&mut self, frame: &mut Frame, mut fast: F, mut slow: S)
    where
        F: FnMut(&mut PacketMut<'_>) -> Option<Verdict<N::Next, N::Error>>,
        S: FnMut(&mut PacketMut<'_>) -> Verdict<N::Next, N::Error>,
    {
        let d = self.rt.cfg.prefetch_distance;
        let map = self.verdict_map();
        debug_assert!(map.drop_arc < DEFERRED);
        let n = frame.bufs.len();
        let (bufs, nexts) = (&frame.bufs[..], &mut frame.nexts[..n]);
        let mut pk = self.rt.pool.packets_mut();
        packet_loop(&mut pk, bufs, nexts, d, |p| match fast(p) {
            Some(v) => map.slot(v, p.meta_mut()),
            None => DEFERRED,
        });
        // Branch-free over the whole vector, so it vectorizes, as in `enqueue_frame`.
        if nexts.iter().fold(false, |a, &x| a | (x == DEFERRED)) {
            for (slot, &bi) in nexts.iter_mut().zip(bufs) {
                if *slot == DEFERRED {
                    // SAFETY: every index of `bufs` is in the pool (`packet_loop` checked
                    // them all, or panicked).
                    let mut p = unsafe { pk.packet_mut_unchecked(bi) };
                    *slot = map.slot(slow(&mut p), p.meta_mut());
                }
            }
        }
        self.enqueue_frame(frame);
    }

    /// [`process_packets_split`](Self::process_packets_split) for a node whose fast path
    /// has one arc: `fast` returns `true` for a packet it sends to `next` and `false`
    /// (with no edit) for one it leaves to `slow`. The next slots are filled with `next`
    /// once for the vector, so the loop writes a slot only for a packet `fast` declines:
    /// nothing to store, and the slots' address need not stay in a register, for the
    /// usual packet.
    ///
    /// ```
    /// use pktvec_graph::builtin::{NullSink, PacketSource, SourceNext};
    /// use pktvec_graph::{next_nodes, node_errors, Context, Frame, GraphBuilder, GraphConfig, Node, Verdict};
    /// use pktvec_packet::{BufferPool, PoolConfig};
    ///
    /// next_nodes! { pub enum MarkNext { Tx = "tx" } }
    /// node_errors! { pub enum MarkError { Empty = "empty packet" } }
    ///
    /// /// Sets the first byte of every packet to 0xff; empty packets take the slow path.
    /// struct Mark;
    ///
    /// impl Node for Mark {
    ///     type Next = MarkNext;
    ///     type Error = MarkError;
    ///
    ///     fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
    ///         cx.process_packets_split_to(
    ///             frame,
    ///             MarkNext::Tx,
    ///             |pkt| match pkt.data_mut().first_mut() {
    ///                 Some(b) => {
    ///                     *b = 0xff;
    ///                     true
    ///                 }
    ///                 None => false,
    ///             },
    ///             |_| Verdict::Drop(MarkError::Empty),
    ///         );
    ///     }
    /// }
    ///
    /// let mut b = GraphBuilder::new(GraphConfig::default());
    /// b.add("source", PacketSource::new(vec![vec![0u8; 60], vec![]]).with_limit(4))
    ///     .add("mark", Mark)
    ///     .add("tx", NullSink)
    ///     .set_next("source", SourceNext::Out, "mark");
    /// let mut g = b.build(BufferPool::new(PoolConfig::default())?)?;
    /// g.run_until_idle();
    /// assert_eq!(g.runtime().row("tx").unwrap().packets, 2);
    /// assert_eq!(g.errors().count("mark", "empty packet"), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline(always)]
    pub fn process_packets_split_to<F, S>(
        &mut self,
        frame: &mut Frame,
        next: N::Next,
        mut fast: F,
        mut slow: S,
    ) where
        F: FnMut(&mut PacketMut<'_>) -> bool,
        S: FnMut(&mut PacketMut<'_>) -> Verdict<N::Next, N::Error>,
    {
        let n = frame.bufs.len();
        if n > MAX_VECTOR_SIZE {
            // More than the set below can mark (no graph builds such a frame): the
            // general loop, the same verdicts.
            return self.process_packets_split(
                frame,
                |p| fast(p).then_some(Verdict::Next(next)),
                slow,
            );
        }
        let d = self.rt.cfg.prefetch_distance;
        let map = self.verdict_map();
        let (bufs, nexts) = (&frame.bufs[..], &mut frame.nexts[..n]);
        nexts.fill(next.index());
        let mut pk = self.rt.pool.packets_mut();
        if !pk.all_in_range(bufs) {
            bad_index(bufs);
        }
        // The packets `fast` declines, as a bit set on the stack: marking one needs no
        // address kept in a register through the loop (the next slots' would be).
        let mut declined = [0u64; MAX_VECTOR_SIZE / 64];
        loops::quad_loop(
            &mut pk,
            bufs,
            d,
            |pk, bi| pk.prefetch(bi),
            |pk, i, bi| {
                // SAFETY: every index of `bufs` is in the pool (`all_in_range` above).
                let mut p = unsafe { pk.packet_mut_unchecked(bi) };
                if !fast(&mut p) {
                    if let Some(w) = declined.get_mut(i / 64) {
                        *w |= 1 << (i % 64);
                    }
                }
            },
        );
        for (w, &bits) in declined[..n.div_ceil(64)].iter().enumerate() {
            let mut bits = bits;
            while bits != 0 {
                let i = w * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                if let (Some(slot), Some(&bi)) = (nexts.get_mut(i), bufs.get(i)) {
                    // SAFETY: every index of `bufs` is in the pool (checked above).
                    let mut p = unsafe { pk.packet_mut_unchecked(bi) };
                    *slot = map.slot(slow(&mut p), p.meta_mut());
                }
            }
        }
        self.enqueue_frame(frame);
    }

    /// Two-phase processing for table lookups (after the seed paper on batching): for each
    /// sub-batch of [`sub_batch`](Self::sub_batch) packets, `key` extracts the lookup key
    /// of every packet (and should prefetch its table bucket), then `lookup` finishes each packet
    /// with its key, by which time the buckets are on their way to the cache. The headers of
    /// the next sub-batch are prefetched during the first phase. Then the frame is enqueued.
    #[inline(always)]
    pub fn process_sub_batches<K, FK, FL>(&mut self, frame: &mut Frame, mut key: FK, mut lookup: FL)
    where
        K: Copy + Default,
        FK: FnMut(Packet<'_>) -> K,
        FL: FnMut(&mut PacketMut<'_>, K) -> Verdict<N::Next, N::Error>,
    {
        let b = self.sub_batch();
        let map = self.verdict_map();
        let n = frame.bufs.len();
        let (bufs, nexts) = (&frame.bufs[..], &mut frame.nexts[..n]);
        loops::two_phase::<K, _>(
            &mut self.rt.pool.packets_mut(),
            bufs,
            b,
            |pk, _i, bi| key(pk.packet(bi)),
            |pk, bi| pk.prefetch(bi),
            |pk, i, bi, k| {
                let mut p = pk.packet_mut(bi);
                let v = lookup(&mut p, k);
                nexts[i] = map.slot(v, p.meta_mut());
            },
        );
        self.enqueue_frame(frame);
    }

    /// Counts each packet of the frame under its error index (for the drop node).
    pub(crate) fn count_drops(&mut self, frame: &Frame) {
        let counts = &mut self.rt.error_counts;
        for &bi in &frame.bufs {
            let e = self.rt.pool.meta(bi).error as usize;
            let e = if e < counts.len() {
                e
            } else {
                crate::runtime::ERROR_UNSPECIFIED as usize
            };
            counts[e] += 1;
        }
    }
}

/// The next slot of a packet `process_packets_split`'s fast pass left to its slow pass
/// (no arc: a node's arcs and its drop arc are below it).
const DEFERRED: u16 = u16::MAX;

/// The per-packet loop of the `process_packets*` methods: one index test for the whole
/// vector, then `step` on each packet in order (prefetching `d` ahead), its result the
/// packet's next slot.
#[inline(always)]
fn packet_loop(
    pk: &mut PacketsMut<'_>,
    bufs: &[u32],
    nexts: &mut [u16],
    d: usize,
    mut step: impl FnMut(&mut PacketMut<'_>) -> u16,
) {
    // One index test per vector instead of one per packet.
    if !pk.all_in_range(bufs) {
        bad_index(bufs);
    }
    loops::quad_loop_into(
        pk,
        bufs,
        nexts,
        d,
        |pk, bi| pk.prefetch(bi),
        |pk, bi| {
            // SAFETY: every index of `bufs` is in the pool (`all_in_range` above).
            let mut p = unsafe { pk.packet_mut_unchecked(bi) };
            step(&mut p)
        },
    );
}

/// A frame holds an index that is not a buffer of the pool: a bug upstream, not a packet
/// error (the per-packet accessors panic the same way).
#[cold]
#[inline(never)]
fn bad_index(bufs: &[u32]) -> ! {
    panic!("a frame holds a buffer index outside the pool: {bufs:?}")
}

/// End of the run of `arc` that starts at `start`: compares 16 entries at a time into a
/// branch-free OR of differences (it vectorizes), then finishes one by one.
#[inline(always)]
fn run_end(nexts: &[u16], start: usize, arc: u16) -> usize {
    const CHUNK: usize = 16;
    let n = nexts.len();
    let mut j = start + 1;
    for chunk in nexts[j.min(n)..].chunks_exact(CHUNK) {
        let chunk: &[u16; CHUNK] = match chunk.try_into() {
            Ok(c) => c,
            Err(_) => break,
        };
        if chunk.iter().fold(0u16, |acc, &x| acc | (x ^ arc)) != 0 {
            break;
        }
        j += CHUNK;
    }
    while j < n && nexts[j] == arc {
        j += 1;
    }
    j
}

/// Turns a node's [`Verdict`]s into next-slot values (see [`Context::verdict_map`]).
///
/// ```
/// # use pktvec_graph::*;
/// # next_nodes! { pub enum MyNext { Out = "out" } }
/// # node_errors! { pub enum MyError { Bad = "bad" } }
/// struct Manual;
/// impl Node for Manual {
///     type Next = MyNext;
///     type Error = MyError;
///     fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
///         let map = cx.verdict_map();
///         let (bufs, nexts) = frame.split_mut();
///         for (slot, &bi) in nexts.iter_mut().zip(bufs) {
///             let mut p = cx.packet_mut(bi);
///             let v = if p.is_empty() { Verdict::Drop(MyError::Bad) } else { Verdict::Next(MyNext::Out) };
///             *slot = map.slot(v, p.meta_mut());
///         }
///         cx.enqueue_frame(frame);
///     }
/// }
/// ```
pub struct VerdictMap<N: Node + ?Sized> {
    drop_arc: u16,
    error_base: u16,
    _node: PhantomData<fn(&N)>,
}

impl<N: Node + ?Sized> Clone for VerdictMap<N> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<N: Node + ?Sized> Copy for VerdictMap<N> {}

impl<N: Node + ?Sized> VerdictMap<N> {
    /// The next-slot value of a verdict; for a drop, also records the reason in `meta`.
    #[inline(always)]
    pub fn slot(self, v: Verdict<N::Next, N::Error>, meta: &mut BufferMeta) -> u16 {
        match v {
            Verdict::Next(x) => x.index(),
            Verdict::Drop(e) => {
                meta.error = self.error_base + e.index();
                self.drop_arc
            }
        }
    }
}
