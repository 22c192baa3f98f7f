//! [`Graph`]: the built graph and its dispatcher.
//!
//! One call of [`Graph::run_once`] is one turn of VPP's main loop: every input node is
//! polled once, then nodes with pending packets run, oldest first, until nothing is pending.
//! A node is called with at most `V` packets; if more are pending (fan-in, cycles), the rest
//! stay pending and the node runs again: nothing is dropped for lack of room.
//!
//! The dispatcher reads the cycle counter once per node call and charges the difference
//! since the previous read to the node, as VPP does.

use crate::capture::{CaptureError, Tap};
use crate::context::Context;
use crate::frame::Frame;
use crate::node::{Node, NodeKind};
use crate::runtime::{CallSite, Pending, ReadyRing, Runtime};
use crate::stats::{Conservation, ErrorTable, NodeStats, RuntimeTable};
use crate::trace::Trace;
use crate::{clock, GraphConfig, GraphError, InputDrain};
use pktvec_packet::{BufferPool, MetaFlags, Packet};
use std::path::Path;

/// Object-safe face of [`Node`]: the one dynamic call per vector.
pub(crate) trait DynNode: Send {
    fn process_dyn(&mut self, rt: &mut Runtime, site: &CallSite, frame: &mut Frame) -> u64;
    fn format_trace_dyn(&self, pkt: Packet<'_>, out: &mut String);
    fn takes_raw_dyn(&self) -> bool;
    fn type_name_dyn(&self) -> &'static str;
    fn as_any(&self) -> &dyn std::any::Any;
    fn as_any_mut(&mut self) -> &mut dyn std::any::Any;
}

impl<N: Node> DynNode for N {
    #[inline]
    fn process_dyn(&mut self, rt: &mut Runtime, site: &CallSite, frame: &mut Frame) -> u64 {
        let mut cx = Context::<N>::new(rt, site);
        self.process(&mut cx, frame);
        cx.emitted()
    }

    fn format_trace_dyn(&self, pkt: Packet<'_>, out: &mut String) {
        self.format_trace(pkt, out)
    }

    fn takes_raw_dyn(&self) -> bool {
        self.takes_raw()
    }

    fn type_name_dyn(&self) -> &'static str {
        std::any::type_name::<N>()
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn std::any::Any {
        self
    }
}

pub(crate) struct NodeSlot {
    pub name: String,
    pub kind: NodeKind,
    pub node: Box<dyn DynNode>,
    /// Id, arcs (then the drop node) and error base, as a call hands them to the node.
    pub site: CallSite,
    pub arc_names: &'static [&'static str],
    pub stats: NodeStats,
}

/// A node asked for by name that the graph does not have, or not of the type asked for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NodeLookupError {
    /// No node of that name.
    #[error("no node named `{name}`; known nodes: {}", known.join(", "))]
    Unknown {
        /// The name asked for.
        name: String,
        /// The graph's node names, sorted.
        known: Vec<String>,
    },
    /// The node exists but has another type.
    #[error("node `{name}` is a `{found}`, not a `{wanted}`")]
    WrongType {
        /// The name asked for.
        name: String,
        /// The type asked for.
        wanted: &'static str,
        /// The node's type.
        found: &'static str,
    },
}

/// The graph-wide names the builder resolved: drop reasons and creation reasons, each as
/// (node, reason) by graph-wide index, and where each node's creation reasons start.
pub(crate) struct Names {
    pub errors: Vec<(String, String)>,
    pub created: Vec<(String, String)>,
    /// Per node, the index of its first creation reason; one more entry at the end.
    pub created_base: Vec<u32>,
}

/// A built graph: nodes, arcs, the buffer pool and the runtime counters of one worker.
///
/// [`run_once`](Self::run_once) is one turn: poll the input nodes, then run every node with
/// pending packets; [`run_until_idle`](Self::run_until_idle) turns until nothing moves.
/// Afterwards the graph answers VPP's `show` commands: [`runtime`](Self::runtime),
/// [`errors`](Self::errors), [`trace`](Self::trace), and checks itself with
/// [`conservation`](Self::conservation). [`node`](Self::node) gives a node back by name
/// and type, to read its own counters.
///
/// ```
/// use pktvec_graph::builtin::{NullSink, PacketSource, SourceNext};
/// use pktvec_graph::{GraphBuilder, GraphConfig};
/// use pktvec_packet::{BufferPool, PoolConfig};
///
/// let mut b = GraphBuilder::new(GraphConfig::default());
/// b.add("source", PacketSource::new(vec![vec![0u8; 60]]).with_limit(1000))
///     .add("tx", NullSink)
///     .set_next("source", SourceNext::Out, "tx");
/// let mut graph = b.build(BufferPool::new(PoolConfig::default())?)?;
/// graph.trace_add(2);
/// while graph.run_once() > 0 {}
/// println!("{}\n{}\n{}", graph.runtime(), graph.errors(), graph.trace());
/// assert_eq!(graph.runtime().row("tx").unwrap().packets, 1000);
/// let c = graph.conservation();
/// assert!(c.is_balanced() && c.output == 1000 && c.buffers_in_use == 0);
/// assert!(graph.node::<NullSink>("tx").is_ok());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Graph {
    slots: Vec<NodeSlot>,
    inputs: Vec<u32>,
    sinks: Vec<u32>,
    error_names: Vec<(String, String)>,
    created_names: Vec<(String, String)>,
    spare: Frame,
    rt: Runtime,
}

impl std::fmt::Debug for Graph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Graph")
            .field(
                "nodes",
                &self.slots.iter().map(|s| &s.name).collect::<Vec<_>>(),
            )
            .field("config", &self.rt.cfg)
            .field("pool", &self.rt.pool)
            .finish()
    }
}

impl Graph {
    pub(crate) fn new(
        cfg: GraphConfig,
        slots: Vec<NodeSlot>,
        names: Names,
        drop_node: u32,
        pool: BufferPool,
    ) -> Graph {
        let n = slots.len();
        let cap = pending_capacity(cfg.vector_size);
        let inputs = (0..n as u32)
            .filter(|&i| slots[i as usize].kind == NodeKind::Input)
            .collect();
        let sinks = (0..n as u32)
            .filter(|&i| slots[i as usize].kind == NodeKind::Sink && i != drop_node)
            .collect();
        Graph {
            inputs,
            sinks,
            spare: Frame::with_capacity(cfg.vector_size),
            rt: Runtime {
                pool,
                nodes: (0..n)
                    .map(|_| Pending {
                        bufs: Vec::with_capacity(cap),
                        raw: 0,
                    })
                    .collect(),
                ready: ReadyRing::new(n),
                error_counts: vec![0; names.errors.len()],
                drop_node,
                cfg,
                trace: Trace::default(),
                taps: (0..n).map(|_| None).collect(),
                any_tap: false,
                observe: false,
                takes_raw: slots.iter().map(|s| s.node.takes_raw_dyn()).collect(),
                injected: 0,
                sink_drops: 0,
                created_counts: vec![0; names.created.len()],
                created_base: names.created_base,
                unreceived: 0,
                unbuffered_drops: 0,
                latency: Default::default(),
            },
            error_names: names.errors,
            created_names: names.created,
            slots,
        }
    }

    /// The buffer pool.
    pub fn pool(&self) -> &BufferPool {
        &self.rt.pool
    }

    /// The buffer pool, writable (to allocate packets to [`inject`](Self::inject)).
    pub fn pool_mut(&mut self) -> &mut BufferPool {
        &mut self.rt.pool
    }

    /// The settings in force.
    pub fn config(&self) -> &GraphConfig {
        &self.rt.cfg
    }

    /// Changes the vector size `V` (1..=[`MAX_VECTOR_SIZE`](crate::MAX_VECTOR_SIZE)).
    /// Growing it reserves memory once.
    pub fn set_vector_size(&mut self, v: usize) -> Result<(), GraphError> {
        let cfg = GraphConfig {
            vector_size: v,
            ..self.rt.cfg.clone()
        };
        cfg.validate()?;
        self.rt.cfg.vector_size = v;
        self.spare.set_limit(v);
        let cap = pending_capacity(v);
        for p in &mut self.rt.nodes {
            if p.bufs.capacity() < cap {
                p.bufs.reserve(cap - p.bufs.len());
            }
        }
        Ok(())
    }

    /// Changes the prefetch distance of the loop helpers (0 = no prefetch).
    pub fn set_prefetch_distance(&mut self, d: usize) {
        self.rt.cfg.prefetch_distance = d;
    }

    /// Changes the sub-batch size `b` of the two-phase loop (clamped to
    /// 1..=[`MAX_SUB_BATCH`](crate::MAX_SUB_BATCH) when used).
    pub fn set_sub_batch(&mut self, b: usize) {
        self.rt.cfg.sub_batch = b;
    }

    /// Number of nodes (the drop node included).
    pub fn node_count(&self) -> usize {
        self.slots.len()
    }

    /// Id of the node with this name.
    pub fn node_id(&self, name: &str) -> Option<u32> {
        self.slots
            .iter()
            .position(|s| s.name == name)
            .map(|i| i as u32)
    }

    /// The node named `name`, if it has type `N` (to read a node's own counters or
    /// state, e.g. a sink's per-interface counts). An unknown name is an error that lists
    /// the known names; a node of another type, one that names both types.
    ///
    /// ```
    /// use pktvec_graph::{builtin::{NullSink, PacketSource, SourceNext}, GraphBuilder, GraphConfig};
    /// let mut b = GraphBuilder::new(GraphConfig::default());
    /// b.add("src", PacketSource::new(vec![vec![0; 60]]).with_limit(5)).add("tx", NullSink);
    /// b.set_next("src", SourceNext::Out, "tx");
    /// let mut g = b.build(pktvec_packet::BufferPool::new(Default::default()).unwrap()).unwrap();
    /// g.run_until_idle();
    /// assert_eq!(g.node::<PacketSource>("src").unwrap().produced(), 5);
    /// assert!(g.node::<NullSink>("src").unwrap_err().to_string().contains("not a"));
    /// let e = g.node::<NullSink>("txx").unwrap_err();
    /// assert_eq!(e.to_string(), "no node named `txx`; known nodes: drop, src, tx");
    /// ```
    pub fn node<N: Node>(&self, name: &str) -> Result<&N, NodeLookupError> {
        let id = self.lookup(name)?;
        let node = &self.slots[id as usize].node;
        node.as_any()
            .downcast_ref()
            .ok_or_else(|| wrong_type::<N>(name, node.type_name_dyn()))
    }

    /// The node named `name`, writable, if it has type `N` (e.g. to change a node's
    /// configuration between runs). Errors as [`node`](Self::node).
    pub fn node_mut<N: Node>(&mut self, name: &str) -> Result<&mut N, NodeLookupError> {
        let id = self.lookup(name)?;
        let node = &mut self.slots[id as usize].node;
        let found = node.type_name_dyn();
        node.as_any_mut()
            .downcast_mut()
            .ok_or_else(|| wrong_type::<N>(name, found))
    }

    /// Id of the node named `name`, or an error listing the known names.
    fn lookup(&self, name: &str) -> Result<u32, NodeLookupError> {
        self.node_id(name).ok_or_else(|| {
            let mut known: Vec<String> = self.slots.iter().map(|s| s.name.clone()).collect();
            known.sort();
            NodeLookupError::Unknown {
                name: name.to_string(),
                known,
            }
        })
    }

    /// Name of node `id`.
    pub fn node_name(&self, id: u32) -> Option<&str> {
        self.slots.get(id as usize).map(|s| s.name.as_str())
    }

    /// Names of the nodes node `id`'s arcs lead to, in arc order (the implicit drop arc
    /// last).
    pub fn next_names(&self, id: u32) -> Vec<&str> {
        self.slots
            .get(id as usize)
            .map(|s| {
                s.site
                    .arcs
                    .iter()
                    .map(|&t| self.slots[t as usize].name.as_str())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Puts allocated buffers into node `node`'s pending vector (for packets that come from
    /// outside any input node). They count as graph input. Returns false if `node` is not
    /// a node that takes packets.
    pub fn inject(&mut self, node: u32, bis: &[u32]) -> bool {
        match self.slots.get(node as usize) {
            Some(s) if s.kind != NodeKind::Input => {
                self.rt.injected += bis.len() as u64;
                self.rt.push(node, bis);
                true
            }
            _ => false,
        }
    }

    /// One turn of the main loop: polls every input node once and runs pending nodes
    /// until none has packets (or [`GraphConfig::max_calls_per_run`] calls were made in
    /// the turn; the rest then waits for the next turn). [`GraphConfig::input_drain`]
    /// says whether the pending nodes run after all input nodes or right after the input
    /// node that fed them. Returns the packets the input nodes produced.
    pub fn run_once(&mut self) -> u64 {
        let mut t = self.now();
        let mut produced = 0;
        let mut budget = self.rt.cfg.max_calls_per_run;
        for k in 0..self.inputs.len() {
            let id = self.inputs[k];
            let n = self.call_input(id);
            let now = self.now();
            let s = &mut self.slots[id as usize].stats;
            s.calls += 1;
            s.vectors += (n > 0) as u64;
            s.packets += n;
            s.cycles += now - t;
            t = now;
            produced += n;
            let now = match self.rt.cfg.input_drain {
                InputDrain::AfterAll => false,
                InputDrain::AfterEach => n > 0,
                InputDrain::WhenFull => n >= self.rt.cfg.vector_size as u64,
            };
            if now {
                (t, budget) = self.drain(t, budget);
            }
        }
        self.drain(t, budget);
        produced
    }

    /// Runs pending nodes without polling the input nodes (after [`inject`](Self::inject)).
    pub fn dispatch_pending(&mut self) {
        let budget = self.rt.cfg.max_calls_per_run;
        self.drain(self.now(), budget);
    }

    /// The cycle counter, or 0 without [`GraphConfig::node_cycles`].
    #[inline(always)]
    fn now(&self) -> u64 {
        if self.rt.cfg.node_cycles {
            clock::now()
        } else {
            0
        }
    }

    /// Calls [`run_once`](Self::run_once) until the input nodes produce nothing and nothing
    /// is pending. Returns the packets produced.
    pub fn run_until_idle(&mut self) -> u64 {
        let mut total = 0;
        loop {
            let n = self.run_once();
            total += n;
            if n == 0 && self.rt.ready.is_empty() {
                return total;
            }
        }
    }

    /// Runs pending nodes until none is left or `budget` calls were made; `t` is the clock
    /// at the start. Returns the clock at the end and the calls left of `budget`.
    fn drain(&mut self, mut t: u64, mut budget: usize) -> (u64, usize) {
        // Split borrows: the node table, the arcs, the counters, the working frame and the
        // runtime are distinct fields, so nothing is moved per call.
        let Graph {
            slots,
            spare,
            rt,
            error_names,
            ..
        } = self;
        let v = rt.cfg.vector_size;
        if budget == 0 {
            return (t, budget);
        }
        while let Some(id) = rt.ready.pop() {
            let idu = id as usize;
            let pending = &mut rt.nodes[idu];
            if pending.bufs.len() <= v {
                // O(1): the pending vector becomes the frame, the empty frame becomes the
                // pending vector.
                std::mem::swap(&mut spare.bufs, &mut pending.bufs);
                spare.raw = std::mem::take(&mut pending.raw);
            } else {
                // More than one vector waits: take the oldest V, keep the rest (not empty)
                // for later, queued again.
                spare.bufs.extend_from_slice(&pending.bufs[..v]);
                pending.bufs.drain(..v);
                spare.raw = pending.raw.min(v);
                pending.raw -= spare.raw;
                rt.ready.push(id);
            }
            let n = spare.bufs.len() as u64;
            let slot = &mut slots[idu];
            if rt.observe {
                observe_entry(slot, rt, error_names, spare);
            }
            slot.node.process_dyn(rt, &slot.site, spare);
            spare.clear();
            let now = if rt.cfg.node_cycles { clock::now() } else { 0 };
            let s = &mut slot.stats;
            s.calls += 1;
            s.vectors += 1;
            s.packets += n;
            s.cycles += now.wrapping_sub(t);
            t = now;
            budget -= 1;
            if budget == 0 {
                break;
            }
        }
        (t, budget)
    }

    #[inline]
    fn call_input(&mut self, id: u32) -> u64 {
        let Graph {
            slots, spare, rt, ..
        } = self;
        let slot = &mut slots[id as usize];
        let emitted = slot.node.process_dyn(rt, &slot.site, spare);
        spare.clear();
        if !rt.trace.just_marked.is_empty() {
            self.record_marked(id);
        }
        emitted
    }

    #[cold]
    fn record_marked(&mut self, id: u32) {
        let marked = std::mem::take(&mut self.rt.trace.just_marked);
        let slot = &self.slots[id as usize];
        for &bi in &marked {
            let p = self.rt.pool.packet(bi);
            let mut text = String::new();
            slot.node.format_trace_dyn(p, &mut text);
            let idx = p.meta().trace_index;
            self.rt.trace.record(idx, &slot.name, text);
        }
    }

    /// Starts (`true`) or stops measuring each packet's latency from leaving an input node
    /// to reaching a sink (see [`latency`](crate::latency)); starting clears what was
    /// measured. Off by default.
    pub fn latency_enable(&mut self, on: bool) {
        let l = &mut self.rt.latency;
        l.on = on;
        if on {
            l.stamps = vec![0; self.rt.pool.capacity()];
            l.hists = (0..self.slots.len())
                .map(|_| crate::latency::Histogram::default())
                .collect();
        }
        self.rt.refresh_observe();
    }

    /// Whether latency is being measured.
    pub fn latency_enabled(&self) -> bool {
        self.rt.latency.on
    }

    /// The latency to each sink that received packets since measuring started (empty when
    /// it never was).
    pub fn latency(&self) -> crate::latency::LatencyTable {
        let rows = self
            .rt
            .latency
            .hists
            .iter()
            .enumerate()
            .filter(|(_, h)| h.count() > 0)
            .map(|(i, h)| crate::latency::LatencyRow::of(&self.slots[i].name, h))
            .collect();
        crate::latency::LatencyTable { rows }
    }

    /// Traces the next `n` packets produced by input nodes (adds to any budget left).
    pub fn trace_add(&mut self, n: usize) {
        self.rt.trace.add(n);
        self.rt.refresh_observe();
    }

    /// The packet trace; `Display` prints it like VPP's `show trace`.
    pub fn trace(&self) -> &Trace {
        &self.rt.trace
    }

    /// Empties the trace and stops tracing.
    pub fn trace_clear(&mut self) {
        self.rt.trace.clear();
        self.rt.refresh_observe();
    }

    /// Starts copying the packets that node `node` sends on to a pcap file, at most
    /// `max_packets` of them if given. Replaces a capture already running on the node.
    pub fn capture_start(
        &mut self,
        node: &str,
        path: impl AsRef<Path>,
        max_packets: Option<u64>,
    ) -> Result<(), CaptureError> {
        let id = self.lookup(node)?;
        let tap = Tap::create(path.as_ref(), max_packets)?;
        if let Some(old) = self.rt.taps[id as usize].replace(tap) {
            old.finish()?;
        }
        self.rt.any_tap = true;
        self.rt.refresh_observe();
        Ok(())
    }

    /// Stops the capture on `node`, completes the file and returns the packets written.
    pub fn capture_stop(&mut self, node: &str) -> Result<u64, CaptureError> {
        let id = self.lookup(node)?;
        let tap = self.rt.taps[id as usize]
            .take()
            .ok_or_else(|| CaptureError::NotCapturing(node.to_string()))?;
        self.rt.any_tap = self.rt.taps.iter().any(Option::is_some);
        self.rt.refresh_observe();
        tap.finish()
    }

    /// Raw counters of node `id`.
    pub fn node_stats(&self, id: u32) -> Option<NodeStats> {
        self.slots.get(id as usize).map(|s| s.stats)
    }

    /// The runtime table (VPP's `show runtime`); `Display` prints it, serde serializes it.
    pub fn runtime(&self) -> RuntimeTable {
        let names: Vec<String> = self.slots.iter().map(|s| s.name.clone()).collect();
        let kinds: Vec<NodeKind> = self.slots.iter().map(|s| s.kind).collect();
        let stats: Vec<NodeStats> = self.slots.iter().map(|s| s.stats).collect();
        let b = &self.rt.created_base;
        let created: Vec<u64> = (0..self.slots.len())
            .map(|i| {
                self.rt.created_counts[b[i] as usize..b[i + 1] as usize]
                    .iter()
                    .sum()
            })
            .collect();
        RuntimeTable::new(&names, &kinds, &stats, &created, self.rt.cfg.vector_size)
    }

    /// Drop counters by node and reason (VPP's `show errors`).
    pub fn errors(&self) -> ErrorTable {
        ErrorTable::from_counts(&self.rt.error_counts, &self.error_names)
    }

    /// Packets nodes made, by node and reason ([`Node::CREATED`]; non-zero rows only).
    /// `Display` prints it like [`errors`](Self::errors).
    pub fn created(&self) -> ErrorTable {
        ErrorTable::from_counts(&self.rt.created_counts, &self.created_names)
    }

    /// The (node, reason) of a graph-wide error index.
    pub fn error_name(&self, index: u16) -> Option<(&str, &str)> {
        self.error_names
            .get(index as usize)
            .map(|(n, r)| (n.as_str(), r.as_str()))
    }

    /// Packets in against packets out, dropped and in flight, since the last reset.
    pub fn conservation(&self) -> Conservation {
        let input = self
            .inputs
            .iter()
            .map(|&i| self.slots[i as usize].stats.packets)
            .sum::<u64>()
            + self.rt.injected
            + self.rt.unreceived;
        let output = self
            .sinks
            .iter()
            .map(|&i| self.slots[i as usize].stats.packets)
            .sum::<u64>()
            - self.rt.sink_drops;
        Conservation {
            input,
            created: self.rt.created_counts.iter().sum(),
            output,
            dropped: self.slots[self.rt.drop_node as usize].stats.packets
                + self.rt.unbuffered_drops,
            dropped_without_buffer: self.rt.unbuffered_drops,
            dropped_by_reason: self.rt.error_counts.iter().sum(),
            in_flight: self.rt.in_flight(),
            buffers_in_use: self.rt.pool.in_use() as u64,
        }
    }

    /// Zeroes the runtime counters, the error counters and the injected count.
    pub fn reset_stats(&mut self) {
        self.slots
            .iter_mut()
            .for_each(|s| s.stats = NodeStats::default());
        self.rt.error_counts.iter_mut().for_each(|c| *c = 0);
        self.rt.injected = 0;
        self.rt.sink_drops = 0;
        self.rt.created_counts.iter_mut().for_each(|c| *c = 0);
        self.rt.unreceived = 0;
        self.rt.unbuffered_drops = 0;
    }
}

impl Drop for Graph {
    /// Hands raw buffers still pending (lent by an input node, see
    /// [`Context::enqueue_raw`]; only when a run stopped at its call budget) to the pool,
    /// so that the pool, dropped next, gives them back to its backend with the rest.
    fn drop(&mut self) {
        let rt = &mut self.rt;
        for p in &mut rt.nodes {
            for &bi in &p.bufs[..p.raw] {
                // SAFETY: a raw index is a buffer its owner handed over to the graph, not
                // held by the pool (the contract of `enqueue_raw`); no node will see it again.
                unsafe { rt.pool.adopt(bi) };
            }
            p.raw = 0;
        }
    }
}

fn wrong_type<N: Node>(name: &str, found: &'static str) -> NodeLookupError {
    NodeLookupError::WrongType {
        name: name.to_string(),
        wanted: std::any::type_name::<N>(),
        found,
    }
}

/// What a node call does while something observes packets ([`Runtime::observe`]): trace
/// records for the traced packets entering the node, their latency when it is a sink.
#[cold]
#[inline(never)]
fn observe_entry(
    slot: &NodeSlot,
    rt: &mut Runtime,
    error_names: &[(String, String)],
    frame: &Frame,
) {
    let id = slot.site.id;
    if rt.trace.active {
        record_entry(slot, id, rt, error_names, frame);
    }
    if rt.latency.on && slot.kind == NodeKind::Sink {
        rt.latency.record(id as usize, &frame.bufs, clock::now());
    }
}

#[cold]
fn record_entry(
    slot: &NodeSlot,
    id: u32,
    rt: &mut Runtime,
    error_names: &[(String, String)],
    frame: &Frame,
) {
    // Raw buffers have no metadata to read.
    for &bi in &frame.buffers()[frame.raw_len()..] {
        let p = rt.pool.packet(bi);
        if p.meta().flags.contains(MetaFlags::TRACED) {
            let mut text = String::new();
            if id == rt.drop_node {
                // What the dropping node decided: VPP's error-drop trace line.
                let e = p.meta().error as usize;
                let (node, reason) = error_names
                    .get(e)
                    .or(error_names.first())
                    .map_or(("?", "unspecified reason"), |(n, r)| {
                        (n.as_str(), r.as_str())
                    });
                text = format!("{node}: {reason}");
            } else {
                slot.node.format_trace_dyn(p, &mut text);
            }
            let idx = p.meta().trace_index;
            rt.trace.record(idx, &slot.name, text);
        }
    }
}

/// Initial capacity of each pending vector: room for several vectors of fan-in before the
/// first growth.
fn pending_capacity(v: usize) -> usize {
    (4 * v).max(64)
}
