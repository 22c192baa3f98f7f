//! Measurement graphs shared by the benches and the measuring tool (`pktvec-bench`).
//!
//! * [`topologies`] / [`build`]: the topologies of DPDK's `graph_perf_autotest`, rebuilt on
//!   pktvec, for dispatch overhead (`benches/graph_overhead.rs`, `pktvec-bench dispatch`).
//! * [`prefetch_graph`]: a header-touching node over a large pool visited in random order,
//!   for the prefetching loop (`benches/prefetch_loop.rs`, `pktvec-bench prefetch`).
//!
//! As in DPDK's test, the "packets" are buffer indices that no node dereferences: sources
//! write a burst of indices straight into the next node's pending vector (one bulk copy per
//! arc with [`Context::enqueue_slice`](pktvec_graph::Context::enqueue_slice), as DPDK's
//! sources reserve slots in the next node's stream), one-arc workers hand their whole vector
//! to the next node, multi-arc workers split it by percentages (one bulk copy per arc,
//! remainder to the last arc, as DPDK's workers do with `rte_node_enqueue`), sinks forget
//! it. What is measured is the engine: scheduling, the dynamic call, the
//! hand-over or copy, the counters.
//!
//! ```
//! use pktvec::perf::{build, topologies};
//! let spec = &topologies()[0];
//! assert_eq!(spec.name, "hr_4s_1n_1src_1snk");
//! let mut g = build(spec).unwrap();
//! for _ in 0..10 {
//!     g.run_once();
//! }
//! let calls: u64 = g.runtime().rows.iter().map(|r| r.calls).sum();
//! assert_eq!(calls, 10 * spec.nodes_per_walk as u64);
//! ```

use pktvec_graph::{
    next_nodes, Context, Frame, Graph, GraphBuilder, GraphConfig, GraphError, NoError, NoNext,
    Node, NodeKind, Verdict,
};
use pktvec_packet::builder::PacketBuilder;
use pktvec_packet::wire::Ipv4Packet;
use pktvec_packet::{BufferPool, PoolConfig};
use std::net::Ipv4Addr;

next_nodes! {
    /// Arcs of the perf nodes; unused arcs lead to `drop` and are never taken.
    pub enum PerfNext {
        /// First arc.
        A0 = "drop",
        /// Second arc.
        A1 = "drop",
        /// Third arc.
        A2 = "drop",
        /// Fourth arc.
        A3 = "drop",
    }
}

const ARCS: [PerfNext; 4] = [PerfNext::A0, PerfNext::A1, PerfNext::A2, PerfNext::A3];

/// Input node: emits `burst` indices per poll (never dereferenced).
pub struct PerfSource {
    idx: Vec<u32>,
}

impl Node for PerfSource {
    type Next = PerfNext;
    type Error = NoError;
    const KIND: NodeKind = NodeKind::Input;
    #[inline]
    fn process(&mut self, cx: &mut Context<'_, Self>, _frame: &mut Frame) {
        // Straight into the next node's pending vector, as DPDK's test source reserves
        // its slots in the next node's stream (`rte_node_next_stream_get`).
        cx.enqueue_slice(&self.idx, PerfNext::A0);
    }
}

/// Worker: one arc = whole-vector hand-over; several = split by percentages.
pub struct PerfWorker {
    pct: Vec<u32>,
}

impl Node for PerfWorker {
    type Next = PerfNext;
    type Error = NoError;
    #[inline]
    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        if self.pct.len() == 1 {
            cx.enqueue_all(frame, PerfNext::A0);
            return;
        }
        let n = frame.len();
        let bufs = frame.buffers();
        let mut start = 0;
        let last = self.pct.len() - 1;
        for (arc, &p) in self.pct.iter().enumerate() {
            let end = if arc == last {
                n
            } else {
                (start + p as usize * n / 100).min(n)
            };
            cx.enqueue_slice(&bufs[start..end], ARCS[arc]);
            start = end;
        }
        frame.clear();
    }
}

/// Sink: forgets the indices.
pub struct PerfSink;

impl Node for PerfSink {
    type Next = NoNext;
    type Error = NoError;
    const KIND: NodeKind = NodeKind::Sink;
    #[inline]
    fn process(&mut self, _cx: &mut Context<'_, Self>, frame: &mut Frame) {
        frame.clear();
    }
}

/// One topology of `graph_perf_autotest`.
#[derive(Clone, Debug)]
pub struct TopologySpec {
    /// DPDK's test case name without the `graph_` prefix.
    pub name: &'static str,
    /// Indices per source poll.
    pub burst: usize,
    /// Vector size (512 where two sources feed one chain, as rte_graph's stream grows).
    pub vector_size: usize,
    /// Sources: (name, percentages per arc target, targets).
    pub sources: Vec<(String, Vec<String>)>,
    /// Workers: (name, percentage per arc, targets).
    pub workers: Vec<(String, Vec<u32>, Vec<String>)>,
    /// Sink names.
    pub sinks: Vec<String>,
    /// Node calls per walk (sources + workers + sinks).
    pub nodes_per_walk: usize,
    /// Packets entering per walk.
    pub packets_per_walk: usize,
    /// Node visits per walk: packets summed over all node calls (sources and sinks included).
    pub node_visits_per_walk: usize,
}

fn w(stage: usize, i: usize) -> String {
    format!("worker-{stage}-{i}")
}

fn chain(name: &'static str, burst: usize, sources: usize, sinks: usize) -> TopologySpec {
    let mut workers = Vec::new();
    for s in 0..4 {
        if s < 3 {
            workers.push((w(s, 0), vec![100], vec![w(s + 1, 0)]));
        } else if sinks == 1 {
            workers.push((w(s, 0), vec![100], vec!["sink-0".to_string()]));
        } else {
            workers.push((
                w(s, 0),
                vec![50, 50],
                vec!["sink-0".to_string(), "sink-1".to_string()],
            ));
        }
    }
    let per = burst * sources;
    TopologySpec {
        name,
        burst,
        vector_size: 256 * sources,
        sources: (0..sources)
            .map(|i| (format!("source-{i}"), vec![w(0, 0)]))
            .collect(),
        workers,
        sinks: (0..sinks).map(|i| format!("sink-{i}")).collect(),
        nodes_per_walk: sources + 4 + sinks,
        packets_per_walk: per,
        // Sources emit `per` in all, each of the 4 workers and the sinks together see `per`.
        node_visits_per_walk: per * 6,
    }
}

/// The seven topologies of DPDK 22.11's `graph_perf_autotest`, in its order.
pub fn topologies() -> Vec<TopologySpec> {
    let mut v = vec![
        chain("hr_4s_1n_1src_1snk", 256, 1, 1),
        chain("hr_4s_1n_1src_1snk_brst_one", 1, 1, 1),
        chain("hr_4s_1n_2src_1snk", 256, 2, 1),
        chain("hr_4s_1n_1src_2snk", 256, 1, 2),
    ];

    // Widening tree: 1 -> 2 -> 3 -> 4 workers, then one sink each.
    let mut workers = vec![(w(0, 0), vec![50, 50], vec![w(1, 0), w(1, 1)])];
    for i in 0..2 {
        workers.push((w(1, i), vec![33, 34, 33], (0..3).map(|k| w(2, k)).collect()));
    }
    for i in 0..3 {
        workers.push((
            w(2, i),
            vec![25, 25, 25, 25],
            (0..4).map(|k| w(3, k)).collect(),
        ));
    }
    for i in 0..4 {
        workers.push((w(3, i), vec![100], vec![format!("sink-{i}")]));
    }
    v.push(TopologySpec {
        name: "tree_4s_4n_1src_4snk",
        burst: 256,
        vector_size: 256,
        sources: vec![("source-0".into(), vec![w(0, 0)])],
        workers,
        sinks: (0..4).map(|i| format!("sink-{i}")).collect(),
        nodes_per_walk: 1 + 10 + 4,
        packets_per_walk: 256,
        node_visits_per_walk: 256 * 6,
    });

    // Narrowing tree: source splits to 4, then 3, then 2 workers, one sink.
    let mut workers = Vec::new();
    for i in 0..4 {
        workers.push((w(0, i), vec![33, 33, 34], (0..3).map(|k| w(1, k)).collect()));
    }
    for i in 0..3 {
        workers.push((w(1, i), vec![50, 50], (0..2).map(|k| w(2, k)).collect()));
    }
    for i in 0..2 {
        workers.push((w(2, i), vec![100], vec!["sink-0".to_string()]));
    }
    v.push(TopologySpec {
        name: "reverse_tree_3s_4n_1src_1snk",
        burst: 256,
        vector_size: 256,
        sources: vec![("source-0".into(), (0..4).map(|k| w(0, k)).collect())],
        workers,
        sinks: vec!["sink-0".into()],
        nodes_per_walk: 1 + 9 + 1,
        packets_per_walk: 256,
        node_visits_per_walk: 256 * 5,
    });

    // Four independent chains of five workers.
    let mut workers = Vec::new();
    for s in 0..5 {
        for i in 0..4 {
            let next = if s < 4 {
                w(s + 1, i)
            } else {
                format!("sink-{i}")
            };
            workers.push((w(s, i), vec![100], vec![next]));
        }
    }
    v.push(TopologySpec {
        name: "parallel_tree_5s_4n_4src_4snk",
        burst: 256,
        vector_size: 256,
        sources: (0..4)
            .map(|i| (format!("source-{i}"), vec![w(0, i)]))
            .collect(),
        workers,
        sinks: (0..4).map(|i| format!("sink-{i}")).collect(),
        nodes_per_walk: 4 + 20 + 4,
        packets_per_walk: 1024,
        node_visits_per_walk: 1024 * 7,
    });
    v
}

/// A source that splits its burst evenly over several targets (the reverse tree's).
struct SplitSource {
    idx: Vec<u32>,
    arcs: usize,
}

impl Node for SplitSource {
    type Next = PerfNext;
    type Error = NoError;
    const KIND: NodeKind = NodeKind::Input;
    #[inline]
    fn process(&mut self, cx: &mut Context<'_, Self>, _frame: &mut Frame) {
        // One bulk copy into each next node's pending vector (DPDK's test source takes one
        // stream per edge).
        let n = self.idx.len();
        let per = n / self.arcs;
        for (arc, &next) in ARCS.iter().enumerate().take(self.arcs) {
            let end = if arc + 1 == self.arcs {
                n
            } else {
                (arc + 1) * per
            };
            cx.enqueue_slice(&self.idx[arc * per..end], next);
        }
    }
}

/// Builds a topology over a small pool (the indices are never dereferenced).
pub fn build(spec: &TopologySpec) -> Result<Graph, GraphError> {
    build_with_clock(spec, true)
}

/// [`build`], with the dispatcher's per-call clock read on or off
/// ([`GraphConfig::node_cycles`]): off, the runtime table has no cycles and a node call
/// costs one counter read less.
///
/// ```
/// let spec = &pktvec::perf::topologies()[0];
/// let mut g = pktvec::perf::build_with_clock(spec, false)?;
/// g.run_once();
/// assert_eq!(g.runtime().total_cycles(), 0);
/// # Ok::<(), pktvec::graph::GraphError>(())
/// ```
pub fn build_with_clock(spec: &TopologySpec, node_cycles: bool) -> Result<Graph, GraphError> {
    let mut b = GraphBuilder::new(GraphConfig {
        vector_size: spec.vector_size,
        node_cycles,
        ..GraphConfig::default()
    });
    let idx: Vec<u32> = (0..spec.burst as u32).collect();
    for (name, targets) in &spec.sources {
        if targets.len() == 1 {
            b.add(name.as_str(), PerfSource { idx: idx.clone() });
        } else {
            b.add(
                name.as_str(),
                SplitSource {
                    idx: idx.clone(),
                    arcs: targets.len(),
                },
            );
        }
        for (a, t) in targets.iter().enumerate() {
            b.set_next(name, ARCS[a], t);
        }
    }
    for (name, pct, targets) in &spec.workers {
        b.add(name.as_str(), PerfWorker { pct: pct.clone() });
        for (a, t) in targets.iter().enumerate() {
            b.set_next(name, ARCS[a], t);
        }
    }
    for s in &spec.sinks {
        b.add(s.as_str(), PerfSink);
    }
    let pool = BufferPool::new(PoolConfig {
        buffers: 1024,
        ..PoolConfig::default()
    })
    .map_err(|e| GraphError::BadConfig(e.to_string()))?;
    b.build(pool)
}

next_nodes! {
    /// Arc of [`ReplaySource`].
    pub enum ReplayNext {
        /// To the TTL node.
        Out = "ip4-ttl",
    }
}

/// Input node: each poll emits the next `V` indices of a list of allocated, pre-filled
/// buffers (no allocation, no copy of packet bytes), cycling.
pub struct ReplaySource {
    idx: Vec<u32>,
    pos: usize,
}

impl Node for ReplaySource {
    type Next = ReplayNext;
    type Error = NoError;
    const KIND: NodeKind = NodeKind::Input;
    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        let n = cx.vector_size().min(self.idx.len());
        if self.pos + n > self.idx.len() {
            self.pos = 0;
        }
        frame.extend_from_slice(&self.idx[self.pos..self.pos + n]);
        self.pos += n;
        cx.enqueue_all(frame, ReplayNext::Out);
    }
}

next_nodes! {
    /// Arc of [`TtlNode`].
    pub enum TtlNext {
        /// To the sink.
        Out = "sink",
    }
}

/// Reads the IPv4 header at the metadata's L3 offset and rewrites TTL and checksum: one
/// metadata line and one data line per packet. Never drops (a TTL of 0 is reset to 255) so
/// the work per packet is constant.
pub struct TtlNode;

impl Node for TtlNode {
    type Next = TtlNext;
    type Error = NoError;
    #[inline]
    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        cx.process_packets(frame, |p| {
            let off = p.meta().l3_offset as usize;
            if let Some(l3) = p.data_mut().get_mut(off..) {
                if let Ok(mut ip) = Ipv4Packet::new_checked(l3) {
                    if ip.decrement_ttl_update_checksum().is_none() {
                        ip.set_ttl(255);
                        ip.fill_checksum();
                    }
                }
            }
            Verdict::Next(TtlNext::Out)
        });
    }
}

/// A permutation of `0..n` from a seed (xorshift Fisher–Yates).
pub fn shuffled(n: u32, mut seed: u64) -> Vec<u32> {
    let mut v: Vec<u32> = (0..n).collect();
    seed |= 1;
    for i in (1..v.len()).rev() {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        v.swap(i, (seed % (i as u64 + 1)) as usize);
    }
    v
}

/// Bytes of memory per buffer with the default pool layout (metadata + headroom + data room).
pub const BYTES_PER_BUFFER: usize = 64 + 128 + 2048;

/// `source → ip4-ttl → sink` over a pool of `buffers` 64-byte IPv4/UDP frames, all
/// allocated up front and visited in a random order, so that with a pool larger than the
/// caches every packet's metadata and header line miss unless prefetched.
///
/// ```
/// let mut g = pktvec::perf::prefetch_graph(1024).unwrap();
/// g.set_prefetch_distance(4);
/// g.run_once();
/// assert_eq!(g.runtime().row("ip4-ttl").unwrap().packets, 256);
/// ```
pub fn prefetch_graph(buffers: u32) -> Result<Graph, GraphError> {
    let frame = PacketBuilder::ethernet([2, 0, 0, 0, 0, 1].into(), [2, 0, 0, 0, 0, 2].into())
        .ipv4(Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2))
        .udp(1, 2)
        .payload_len(18)
        .build();
    let mut pool = BufferPool::new(PoolConfig {
        buffers,
        ..PoolConfig::default()
    })
    .map_err(|e| GraphError::BadConfig(e.to_string()))?;
    let mut idx = vec![0u32; buffers as usize];
    pool.alloc_bulk_exact(&mut idx)
        .map_err(|e| GraphError::BadConfig(e.to_string()))?;
    for &bi in &idx {
        let mut p = pool.packet_mut(bi);
        if let Ok(dst) = p.append(frame.len()) {
            dst.copy_from_slice(&frame);
        }
        p.meta_mut().l3_offset = 14;
    }
    let mut b = GraphBuilder::new(GraphConfig::default());
    b.add(
        "source",
        ReplaySource {
            idx: shuffled(buffers, 0x9e37_79b9_7f4a_7c15),
            pos: 0,
        },
    )
    .add("ip4-ttl", TtlNode)
    .add("sink", PerfSink);
    b.build(pool)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_topology_builds_and_calls_each_node_once_per_walk() {
        for spec in topologies() {
            let mut g = build(&spec).unwrap();
            for _ in 0..7 {
                g.run_once();
            }
            let rt = g.runtime();
            let calls: u64 = rt.rows.iter().map(|r| r.calls).sum();
            assert_eq!(calls, 7 * spec.nodes_per_walk as u64, "{}", spec.name);
            let visits: u64 = rt.rows.iter().map(|r| r.packets).sum();
            assert_eq!(
                visits,
                7 * spec.node_visits_per_walk as u64,
                "{}\n{rt}",
                spec.name
            );
            assert!(rt.rows.iter().all(|r| r.calls == 7), "{}\n{rt}", spec.name);
            assert!(
                rt.row("drop").is_none(),
                "{}: nothing is dropped",
                spec.name
            );
        }
    }
}
