//! The path-batcher overhead model: what a vector costs each node it visits (per-packet work,
//! plus the code and packet lines it fetches), so that batching packets by path saves the
//! code fetches of nodes a mixed vector would visit (after Yan et al., "PPB: a Path-based
//! Packet Batcher to Accelerate Vector Packet Processor", eq. (1)–(5)).
//!
//! O_node(i) = s_i·B_i + I + D (1); I = ⌈P/L⌉·A_M·W (2); D = k_i·⌈64/L⌉·A_M·W (3);
//! O_vec(j) = Σ_i O_node(i) over the d_j nodes vector j visits (4);
//! O_total = Σ_j Σ_i s_i·B_i + Σ_j Σ_i (I + D) (5). Here `P` is each node's own code
//! footprint (the seed assumes one i-cache's worth per node), and the same terms give the
//! predicted I1 and D1 misses.

use serde::{Deserialize, Serialize};

/// Machine constants of the model.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    /// L: cache line, bytes.
    pub line: usize,
    /// A_M: cycles of one memory access (a miss).
    pub access_cycles: f64,
    /// W: amplification of a miss by contention with DMA (1 = none, memory to memory).
    pub dma_amplification: f64,
    /// L1i size, bytes: a node whose code is resident between its calls costs no I.
    pub l1i: usize,
}

/// One node as the model sees it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NodeCost {
    /// Name.
    pub name: String,
    /// B_i: business-processing cycles per packet.
    pub per_packet: f64,
    /// P: code footprint, bytes (from the binary's symbol sizes or cachegrind).
    pub code_bytes: usize,
    /// k_i: data cache lines missed per packet (buffers, tables).
    pub data_lines: f64,
}

impl Machine {
    /// I of eq. (2): the code fetch of one call of a node with `code_bytes` of code.
    pub fn i_cost(&self, code_bytes: usize) -> f64 {
        code_bytes.div_ceil(self.line) as f64 * self.access_cycles * self.dma_amplification
    }
    /// D of eq. (3): the data fetch of `k` lines per packet for `s` packets.
    pub fn d_cost(&self, k: f64, s: usize) -> f64 {
        k * s as f64
            * 64usize.div_ceil(self.line) as f64
            * self.access_cycles
            * self.dma_amplification
    }
    /// O_node of eq. (1) for a vector of `s` packets: (cycles, I1 misses, D1 misses).
    pub fn node_overhead(&self, n: &NodeCost, s: usize) -> (f64, f64, f64) {
        if s == 0 {
            return (0.0, 0.0, 0.0);
        }
        let i_lines = n.code_bytes.div_ceil(self.line) as f64;
        let d_lines = n.data_lines * s as f64;
        (
            s as f64 * n.per_packet + self.i_cost(n.code_bytes) + self.d_cost(n.data_lines, s),
            i_lines,
            d_lines,
        )
    }
}

/// A processing path: the nodes its packets visit, in order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Path {
    /// Share of the traffic on this path (0..=1).
    pub share: f64,
    /// Indices into the node list.
    pub nodes: Vec<usize>,
}

/// Predicted overhead of one vector of `vector` packets drawn from `paths`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct VectorCost {
    /// O_vec: cycles for the vector (eq. 4), expected value.
    pub cycles: f64,
    /// Expected I1 misses (code lines fetched per node call).
    pub i1_misses: f64,
    /// Expected D1 misses.
    pub d1_misses: f64,
}

/// Share of the packets of `mix` that visit node `i` (at most 1).
fn visit_share(mix: &[Path], i: usize) -> f64 {
    mix.iter()
        .filter(|p| p.nodes.contains(&i))
        .map(|p| p.share)
        .sum::<f64>()
        .min(1.0)
}

/// Probability that a vector of `vector` packets, each visiting a node with probability
/// `q` independently, calls that node: 1 − (1 − q)^vector.
fn call_probability(q: f64, vector: usize) -> f64 {
    1.0 - (1.0 - q.min(1.0)).powi(vector.min(i32::MAX as usize) as i32)
}

/// Expected O_vec (eq. 4) for a vector of `vector` packets whose paths are drawn from
/// `paths` independently (batcher off), or all on one path (batcher on: pass a single
/// path with share 1). A node runs once per vector if any of its packets visits it, on the
/// expected number that do: P(node called) = 1 − Π_paths through it... computed per path
/// as 1 − (1 − share)^vector for nodes of one path, and exactly for shared nodes.
pub fn vector_cost(m: &Machine, nodes: &[NodeCost], paths: &[Path], vector: usize) -> VectorCost {
    let mut out = VectorCost::default();
    for (i, n) in nodes.iter().enumerate() {
        let q = visit_share(paths, i);
        if q <= 0.0 {
            continue;
        }
        let called = call_probability(q, vector);
        let s = q * vector as f64;
        let per =
            n.per_packet * s + called * m.i_cost(n.code_bytes) + m.d_cost(n.data_lines, 1) * s;
        out.cycles += per;
        out.i1_misses += called * n.code_bytes.div_ceil(m.line) as f64;
        out.d1_misses += n.data_lines * s;
    }
    out
}

/// O_total of eq. (5) for `packets` packets in vectors of at most `vector`.
pub fn total_cost(
    m: &Machine,
    nodes: &[NodeCost],
    paths: &[Path],
    vector: usize,
    packets: u64,
) -> f64 {
    let n_vec = packets.div_ceil(vector.max(1) as u64) as f64;
    n_vec * vector_cost(m, nodes, paths, vector).cycles
}

/// Expected number of distinct paths in a vector of `vector` packets (batcher off).
pub fn expected_paths(paths: &[Path], vector: usize) -> f64 {
    paths
        .iter()
        .map(|p| call_probability(p.share, vector))
        .sum()
}

/// The vectors a batcher forms from a path mix: elephant paths (share ≥ `elephant_share`)
/// get a queue of their own, every other path shares one mice queue; each queue is
/// `(share of the packets, the path mix inside it, shares summing to 1)`. Without a
/// batcher (`None`) there is one queue holding the whole mix.
///
/// ```
/// use pktvec_model::ppb::{batcher_queues, Path};
/// let mix = vec![Path { share: 0.9, nodes: vec![0, 1] }, Path { share: 0.1, nodes: vec![0, 2] }];
/// assert_eq!(batcher_queues(&mix, None).len(), 1);
/// let q = batcher_queues(&mix, Some(0.05));
/// assert_eq!(q.len(), 2);
/// assert_eq!(q[0].1[0].share, 1.0);
/// ```
pub fn batcher_queues(paths: &[Path], elephant_share: Option<f64>) -> Vec<(f64, Vec<Path>)> {
    let Some(e) = elephant_share else {
        return vec![(1.0, paths.to_vec())];
    };
    let mut out: Vec<(f64, Vec<Path>)> = paths
        .iter()
        .filter(|p| p.share >= e)
        .map(|p| {
            (
                p.share,
                vec![Path {
                    share: 1.0,
                    nodes: p.nodes.clone(),
                }],
            )
        })
        .collect();
    let mice: Vec<&Path> = paths.iter().filter(|p| p.share < e).collect();
    let total: f64 = mice.iter().map(|p| p.share).sum();
    if total > 0.0 {
        out.push((
            total,
            mice.iter()
                .map(|p| Path {
                    share: p.share / total,
                    nodes: p.nodes.clone(),
                })
                .collect(),
        ));
    }
    out
}

/// The calibrated parameters of the cache-miss side of the model (I1 and D1 misses).
///
/// * I1 (eq. 2 with a residency ratio): a call of node *i* fetches its executed code,
///   ⌈P_i/L⌉ lines, or `narrow_code_ratio` of them when the call has fewer packets than the
///   prefetch width (the 4-wide loop does not run); a share `code_miss_ratio` of those
///   lines misses (1 when the code between two calls of the node far exceeds the L1i,
///   small when it nearly fits: calibrated per L1i size). With a capacity
///   (`l1i_bytes` > 0 and `code_capacity` > 0) the ratio is one for all L1i
///   sizes and the fetched lines are scaled by the share of the code footprint F (the code
///   a round of vectors runs, [`code_footprint`]) that does not fit:
///   max(0, 1 − `code_capacity` × `l1i_bytes` / F) — a hot loop whose code fits the L1i
///   does not miss.
/// * D1 (eq. 3 with the packet lines' reuse): k = `d_compulsory` lines per packet miss
///   whatever the vector size (packet data, descriptors, table lines), and `d_reuse` lines
///   per packet are touched again by later nodes and miss with probability
///   1 − exp(−W/C), W = `d_lines_per_packet` × the packets in flight (the vector; twice
///   the batch with a batcher, one batch filling while one leaves), C = the L1d lines.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MissParams {
    /// Share of the executed code lines of a call that miss the L1i.
    pub code_miss_ratio: f64,
    /// Share of a node's code a call with fewer packets than the prefetch width executes.
    pub narrow_code_ratio: f64,
    /// D1 lines per packet that miss at any vector size.
    pub d_compulsory: f64,
    /// D1 lines per packet re-touched by later nodes.
    pub d_reuse: f64,
    /// Distinct D1 lines per packet in flight (sets the reuse distance).
    pub d_lines_per_packet: f64,
    /// L1i size in bytes for the capacity term (0: no capacity term).
    #[serde(default)]
    pub l1i_bytes: f64,
    /// Share of the L1i the code footprint can use before it misses (conflicts, data in a
    /// unified level, the rest of the program); 0: no capacity term.
    #[serde(default)]
    pub code_capacity: f64,
}

impl MissParams {
    /// The share of the fetched code lines that can miss for a code footprint of
    /// `footprint` bytes: max(0, 1 − code_capacity × l1i_bytes / footprint), or 1 without a
    /// capacity term.
    ///
    /// ```
    /// use pktvec_model::ppb::MissParams;
    /// let p = MissParams { l1i_bytes: 32768.0, code_capacity: 0.9, ..Default::default() };
    /// assert_eq!(p.overflow_share(27_000.0), 0.0); // fits: no misses
    /// assert!((p.overflow_share(58_982.4) - 0.5).abs() < 1e-9);
    /// ```
    pub fn overflow_share(&self, footprint: f64) -> f64 {
        if self.l1i_bytes <= 0.0 || self.code_capacity <= 0.0 {
            return 1.0;
        }
        if footprint <= 0.0 {
            return 0.0;
        }
        (1.0 - self.code_capacity * self.l1i_bytes / footprint).max(0.0)
    }
}

/// How a traffic's paths follow each other in the packet stream, which sets how many of
/// them a vector of consecutive packets holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Order {
    /// Each packet's path drawn independently: a node visited by a share q of the packets
    /// is called in a vector of v with probability 1 − (1 − q)^v.
    #[default]
    Independent,
    /// The paths interleaved evenly (round robin, e.g. strictly alternating IPv4/IPv6):
    /// a vector of v consecutive packets calls such a node with probability min(1, q·v)
    /// (with two alternating paths, every vector of 2 or more calls both).
    Interleaved,
}

impl Order {
    /// Probability that a vector of `vector` consecutive packets calls a node visited by
    /// a share `q` of the packets.
    ///
    /// ```
    /// use pktvec_model::ppb::Order;
    /// assert_eq!(Order::Independent.call_probability(0.5, 2), 0.75);
    /// assert_eq!(Order::Interleaved.call_probability(0.5, 2), 1.0);
    /// assert_eq!(Order::Interleaved.call_probability(0.25, 2), 0.5);
    /// ```
    pub fn call_probability(self, q: f64, vector: usize) -> f64 {
        match self {
            Order::Independent => call_probability(q, vector),
            Order::Interleaved => (q.max(0.0) * vector as f64).min(1.0),
        }
    }
}

/// Expected I1 and D1 misses per packet for vectors (or batches) of `vector` packets from
/// the path mix `paths` in the given `order`: batcher off (`elephant_share = None`, mixed vectors) or on
/// (vectors of one queue, [`batcher_queues`]). `width` is the prefetch loop width (4 in
/// pktvec's nodes) and `l1d_lines` the L1d size in lines. Per packet, so that I1 = Σ over
/// the queues of (share / vector) × the expected I1 misses of one vector of that queue.
///
/// ```
/// use pktvec_model::ppb::{misses_per_packet, MissParams, NodeCost, Order, Path};
/// let node = |c: usize| NodeCost { name: String::new(), per_packet: 0.0, code_bytes: c, data_lines: 0.0 };
/// let nodes = vec![node(2048), node(4096), node(4096)];
/// let mix = vec![Path { share: 0.5, nodes: vec![0, 1] }, Path { share: 0.5, nodes: vec![0, 2] }];
/// let p = MissParams { code_miss_ratio: 1.0, narrow_code_ratio: 1.0, ..Default::default() };
/// let mix = (mix.as_slice(), Order::Independent);
/// let (off, _) = misses_per_packet(&nodes, mix, 64, None, 4, 512.0, &p);
/// let (on, _) = misses_per_packet(&nodes, mix, 64, Some(0.05), 4, 512.0, &p);
/// // Off: 32 + 64 + 64 lines per vector of 64; on: 32 + 64 lines per vector of 64.
/// assert!((off - 160.0 / 64.0).abs() < 1e-6);
/// assert!((on - 96.0 / 64.0).abs() < 1e-9);
/// ```
pub fn misses_per_packet(
    nodes: &[NodeCost],
    paths: (&[Path], Order),
    vector: usize,
    elephant_share: Option<f64>,
    width: usize,
    l1d_lines: f64,
    p: &MissParams,
) -> (f64, f64) {
    let (wide, narrow) = code_lines_per_packet(nodes, paths, vector, elephant_share, width);
    let overflow = p.overflow_share(code_footprint(nodes, paths, vector, elephant_share));
    let i1 = p.code_miss_ratio * (wide + p.narrow_code_ratio * narrow) * overflow;
    let in_flight = vector as f64 * if elephant_share.is_some() { 2.0 } else { 1.0 };
    let d1 = p.d_compulsory
        + p.d_reuse * (1.0 - (-(in_flight * p.d_lines_per_packet) / l1d_lines.max(1.0)).exp());
    (i1, d1)
}

/// The code footprint of a round of vectors: Σ_nodes code bytes × the probability that a
/// round (one vector of each batcher queue, or one mixed vector) calls the node — the code
/// that runs between two calls of the same node.
///
/// ```
/// use pktvec_model::ppb::{code_footprint, NodeCost, Order, Path};
/// let node = |c: usize| NodeCost { name: String::new(), per_packet: 0.0, code_bytes: c, data_lines: 0.0 };
/// let nodes = vec![node(2048), node(4096), node(4096)];
/// let mix = vec![Path { share: 0.5, nodes: vec![0, 1] }, Path { share: 0.5, nodes: vec![0, 2] }];
/// // Alternating, vectors of 2 (batcher off): every vector runs all three nodes.
/// assert_eq!(code_footprint(&nodes, (&mix, Order::Interleaved), 2, None), 10240.0);
/// // With the batcher: one vector per path per round, all three nodes again.
/// assert_eq!(code_footprint(&nodes, (&mix, Order::Interleaved), 2, Some(0.05)), 10240.0);
/// ```
pub fn code_footprint(
    nodes: &[NodeCost],
    (paths, order): (&[Path], Order),
    vector: usize,
    elephant_share: Option<f64>,
) -> f64 {
    let v = vector.max(1);
    let queues = batcher_queues(paths, elephant_share);
    nodes
        .iter()
        .enumerate()
        .map(|(i, n)| {
            // P(no vector of the round calls node i) = Π_queues (1 − P_q(called)).
            let none: f64 = queues
                .iter()
                .map(|(_, mix)| 1.0 - order.call_probability(visit_share(mix, i), v))
                .product();
            n.code_bytes as f64 * (1.0 - none)
        })
        .sum()
}

/// Expected code lines per packet fetched by node calls, split into calls with at least
/// `width` packets (wide) and fewer (narrow): Σ_queues share/vector × Σ_nodes
/// P(called) × ⌈P_i/64⌉ (the model's I of eq. 2 in lines), P(called) by the paths' order
/// ([`Order::call_probability`]). The calibration's features.
pub fn code_lines_per_packet(
    nodes: &[NodeCost],
    (paths, order): (&[Path], Order),
    vector: usize,
    elephant_share: Option<f64>,
    width: usize,
) -> (f64, f64) {
    let (mut wide, mut narrow) = (0.0, 0.0);
    let v = vector.max(1);
    for (share, mix) in batcher_queues(paths, elephant_share) {
        for (i, n) in nodes.iter().enumerate() {
            let q = visit_share(&mix, i);
            if q <= 0.0 {
                continue;
            }
            let lines =
                n.code_bytes.div_ceil(64) as f64 * order.call_probability(q, v) * share / v as f64;
            if q * v as f64 >= width as f64 {
                wide += lines;
            } else {
                narrow += lines;
            }
        }
    }
    (wide, narrow)
}

/// The path batcher's setting: off (packets pass straight through in mixed vectors of the
/// graph's vector size) or on at a batch size (vectors of one path, or of the mice queue).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Batching {
    /// Batcher off.
    Off,
    /// Batcher on, vectors of this many packets (at most the graph's vector size).
    Batch(usize),
}

impl std::fmt::Display for Batching {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Batching::Off => write!(f, "off"),
            Batching::Batch(b) => write!(f, "batch {b}"),
        }
    }
}

/// A processing path of a graph behind the path batcher: the nodes its packets visit with
/// the batcher off and on (on, the batcher may start the path further in, e.g. at
/// `ip4-input` instead of `ethernet-input`). Indices into [`BatchedGraph::nodes`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BatchedPath {
    /// Name (e.g. "ipv4").
    pub name: String,
    /// Nodes visited with the batcher off.
    pub off: Vec<usize>,
    /// Nodes visited with the batcher on.
    pub on: Vec<usize>,
}

/// One node's calibrated cost in the PPB model: O_node = s·B_i + I + D (eq. 1) split into
/// what a call costs whatever its size (`per_call`: the code fetch I of eq. 2 and the
/// call's fixed work) and what each packet costs (s·B_i + D: business processing and data
/// misses), the latter separately with the batcher off and on (held packets are touched
/// again later, so D per packet differs).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CallCost {
    /// Node name.
    pub name: String,
    /// Cycles per call (vector).
    pub per_call: f64,
    /// Cycles per packet, batcher off.
    pub per_packet_off: f64,
    /// Cycles per packet, batcher on.
    pub per_packet_on: f64,
    /// Cycles per packet per unit of next-hop mixedness: a node whose vector's packets go
    /// to different next nodes (the vector splits into paths there) pays this per packet
    /// × the probability that two of its packets take different next nodes
    /// (1 − Σ_k r_k², r_k the share going to next node k). 0 where every vector is whole.
    #[serde(default)]
    pub split: f64,
}

/// One measured run of one node for [`BatchedGraph::fit`]: per input packet, the node's
/// calls (vectors), packets and cycles, and whether the batcher was on.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct CallSample {
    /// Batcher on during the run.
    pub on: bool,
    /// Calls (vectors) of the node per input packet.
    pub calls: f64,
    /// Packets of the node per input packet.
    pub packets: f64,
    /// Cycles of the node per input packet.
    pub cycles: f64,
    /// The node's packets per input packet × their next-hop mixedness, from the model's
    /// paths for the run's traffic ([`NodeLoad::mixed`]).
    pub mixed: f64,
}

/// A node's expected load per input packet ([`BatchedGraph::node_load`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NodeLoad {
    /// Calls (vectors).
    pub calls: f64,
    /// Packets.
    pub packets: f64,
    /// Packets × next-hop mixedness (1 − Σ_k r_k² within the vectors the node sees).
    pub mixed: f64,
}

/// The path-batcher model in cycles: a graph behind the path batcher, its
/// paths, and each node's calibrated [`CallCost`]. The cost of a packet is
/// Σ_i calls_i·per_call_i + q_i·per_packet_i, where q_i is the share of the packets that
/// visit node i and calls_i its expected calls per packet: with the batcher off a vector
/// of V packets splits into its paths ([`expected_paths`]) and node i runs once if any of
/// its packets visits it, calls_i = (1 − (1 − q_i)^V)/V; with the batcher on at batch b,
/// each queue ([`batcher_queues`]: elephant paths alone, mice together) sends vectors of
/// min(b, V) packets of its own mix.
///
/// ```
/// use pktvec_model::ppb::{BatchedGraph, BatchedPath, Batching, CallCost};
/// let node = |name: &str, per_call: f64, per_packet: f64| CallCost {
///     name: name.into(), per_call, per_packet_off: per_packet, per_packet_on: per_packet,
///     split: 0.0 };
/// let g = BatchedGraph {
///     nodes: vec![node("input", 500.0, 20.0), node("ip4", 3000.0, 30.0), node("ip6", 3000.0, 30.0)],
///     paths: vec![
///         BatchedPath { name: "ipv4".into(), off: vec![0, 1], on: vec![0, 1] },
///         BatchedPath { name: "ipv6".into(), off: vec![0, 2], on: vec![0, 2] },
///     ],
///     elephant_share: 0.05,
/// };
/// // Alternating IPv4/IPv6 in vectors of 256: each path's nodes run on 128 packets off,
/// // on 256 with the batcher at 256: half the per-call cost per packet.
/// let off = g.cycles_per_packet(&[0.5, 0.5], 256, Batching::Off);
/// let on = g.cycles_per_packet(&[0.5, 0.5], 256, Batching::Batch(256));
/// assert!((off - (500.0 / 256.0 + 20.0 + 2.0 * 3000.0 / 256.0 + 30.0)).abs() < 1e-6);
/// assert!((on - (500.0 / 256.0 + 20.0 + 3000.0 / 256.0 + 30.0)).abs() < 1e-6);
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BatchedGraph {
    /// The nodes' costs.
    pub nodes: Vec<CallCost>,
    /// The paths.
    pub paths: Vec<BatchedPath>,
    /// A path with at least this share of the packets gets a queue of its own (the
    /// batcher's `elephant_share`).
    pub elephant_share: f64,
}

impl BatchedGraph {
    /// Per node, the expected [`NodeLoad`] per input packet for the path shares `shares`
    /// (one per path, summing to 1), vector size `vector` and the batcher setting. A
    /// node's vectors hold its queue's mix (off: the whole traffic); the input node (the
    /// first node of every path, the batcher) always sees the whole traffic, and with the
    /// batcher on its packets' "next hops" are their queues.
    pub fn node_load(&self, shares: &[f64], vector: usize, batching: Batching) -> Vec<NodeLoad> {
        let mut out = vec![NodeLoad::default(); self.nodes.len()];
        let on = matches!(batching, Batching::Batch(_));
        let mix: Vec<Path> = self
            .paths
            .iter()
            .zip(shares)
            .filter(|(_, &s)| s > 0.0)
            .map(|(p, &s)| Path {
                share: s,
                nodes: if on { p.on.clone() } else { p.off.clone() },
            })
            .collect();
        let (queues, v) = match batching {
            Batching::Off => (batcher_queues(&mix, None), vector.max(1)),
            Batching::Batch(b) => (
                batcher_queues(&mix, Some(self.elephant_share)),
                b.min(vector).max(1),
            ),
        };
        let input = mix
            .first()
            .and_then(|p| p.nodes.first().copied())
            .filter(|&i| mix.iter().all(|p| p.nodes.first() == Some(&i)));
        for (share, qmix) in &queues {
            for (i, o) in out.iter_mut().enumerate() {
                let q = visit_share(qmix, i);
                if q <= 0.0 {
                    continue;
                }
                o.calls += share * call_probability(q, v) / v as f64;
                o.packets += share * q;
                if Some(i) != input {
                    o.mixed += share * q * mixedness(qmix, i, None);
                }
            }
        }
        if let Some(i) = input {
            // The input node sees the whole traffic: with the batcher on, its packets'
            // next hops are their queues.
            let queue_of = |p: &Path| -> usize {
                queues
                    .iter()
                    .position(|(_, qm)| qm.iter().any(|x| x.nodes == p.nodes))
                    .unwrap_or(0)
            };
            let key: Option<&dyn Fn(&Path) -> usize> = if on { Some(&queue_of) } else { None };
            out[i].mixed = mixedness(&mix, i, key);
        }
        out
    }

    /// Predicted cycles per packet (all nodes, batcher included) for the path shares, the
    /// vector size and the batcher setting.
    pub fn cycles_per_packet(&self, shares: &[f64], vector: usize, batching: Batching) -> f64 {
        let on = matches!(batching, Batching::Batch(_));
        self.node_load(shares, vector, batching)
            .iter()
            .zip(&self.nodes)
            .map(|(l, n)| {
                l.calls * n.per_call
                    + l.packets
                        * if on {
                            n.per_packet_on
                        } else {
                            n.per_packet_off
                        }
                    + l.mixed * n.split
            })
            .sum()
    }

    /// Fits each node's [`CallCost`] from measured runs (the seed's offline phase):
    /// least squares of cycles = per_call·calls + per_packet·packets + split·mixed, all
    /// ≥ 0, with separate per-packet costs off and on for the input node (the first node
    /// of every path: the batcher, whose work differs) and one for every other node (its
    /// per-packet work is the same; the batcher changes its calls); a coefficient without
    /// data (never sees mixed vectors) stays 0.
    /// `samples[i]` are node i's runs; runs at two or more packets per call (e.g. the
    /// batcher off at two vector sizes, on at two batch sizes) identify the per-call part,
    /// runs on traffic of one and of several paths the split part.
    ///
    /// ```
    /// use pktvec_model::ppb::{BatchedGraph, BatchedPath, CallSample};
    /// // The input node (the batcher): 2000 cycles per call, 30 per packet off and 35 on,
    /// // 12 per packet of mixed traffic it splits.
    /// let run = |on: bool, per_call: f64, mixed: f64| CallSample { on, calls: 1.0 / per_call,
    ///     packets: 1.0, mixed, cycles: 2000.0 / per_call + if on { 35.0 } else { 30.0 } + 12.0 * mixed };
    /// let s = vec![run(false, 64.0, 0.5), run(false, 256.0, 0.5), run(true, 64.0, 0.0),
    ///              run(true, 256.0, 0.0), run(false, 256.0, 0.0)];
    /// let one = vec![BatchedPath { name: "p".into(), off: vec![0], on: vec![0] }];
    /// let g = BatchedGraph::fit(&["batcher".to_string()], one, 0.05, &[s]);
    /// let n = &g.nodes[0];
    /// assert!((n.per_call - 2000.0).abs() < 1e-6 && (n.per_packet_on - 35.0).abs() < 1e-6);
    /// assert!((n.split - 12.0).abs() < 1e-6);
    /// ```
    pub fn fit(
        names: &[String],
        paths: Vec<BatchedPath>,
        elephant_share: f64,
        samples: &[Vec<CallSample>],
    ) -> BatchedGraph {
        // The input node (first on every path): the batcher itself, whose per-packet work
        // differs off and on. Every other node does the same work per packet either way
        // (eq. 1: s·B_i + D; the batcher changes its calls, I): one per-packet cost.
        let input = paths
            .first()
            .and_then(|p| p.off.first().copied())
            .filter(|&i| {
                paths
                    .iter()
                    .all(|p| p.off.first() == Some(&i) && p.on.first() == Some(&i))
            });
        let nodes = names
            .iter()
            .zip(samples)
            .enumerate()
            .map(|(i, (name, s))| {
                let own = input == Some(i);
                let rows: Vec<[f64; 4]> = s
                    .iter()
                    .map(|x| {
                        let (off, on) = match (own, x.on) {
                            (true, true) => (0.0, x.packets),
                            _ => (x.packets, 0.0),
                        };
                        [x.calls, off, on, x.mixed]
                    })
                    .collect();
                let ys: Vec<f64> = s.iter().map(|x| x.cycles).collect();
                let c = nnls(&rows, &ys);
                CallCost {
                    name: name.clone(),
                    per_call: c[0],
                    per_packet_off: c[1],
                    per_packet_on: if own { c[2] } else { c[1] },
                    split: c[3],
                }
            })
            .collect();
        BatchedGraph {
            nodes,
            paths,
            elephant_share,
        }
    }

    /// The path shares of the traffic from each node's packets per input packet (a
    /// window's runtime stats, with the batcher off or on): each path's share is the
    /// packets of its marker node, the first of its nodes that no other path visits,
    /// normalised to sum 1 (paths without a marker get none).
    ///
    /// ```
    /// use pktvec_model::ppb::{BatchedGraph, BatchedPath};
    /// let g = BatchedGraph { nodes: Vec::new(), elephant_share: 0.05, paths: vec![
    ///     BatchedPath { name: "ipv4".into(), off: vec![0, 1, 2], on: vec![0, 2] },
    ///     BatchedPath { name: "ipv6".into(), off: vec![0, 1, 3], on: vec![0, 3] }] };
    /// assert_eq!(g.shares_from_node_packets(&[1.0, 1.0, 0.25, 0.75]), vec![0.25, 0.75]);
    /// ```
    pub fn shares_from_node_packets(&self, node_packets: &[f64]) -> Vec<f64> {
        let visits =
            |k: usize, i: usize| self.paths[k].off.contains(&i) || self.paths[k].on.contains(&i);
        let raw: Vec<f64> = (0..self.paths.len())
            .map(|k| {
                let p = &self.paths[k];
                p.on.iter()
                    .chain(&p.off)
                    .find(|&&i| (0..self.paths.len()).all(|j| j == k || !visits(j, i)))
                    .and_then(|&i| node_packets.get(i).copied())
                    .unwrap_or(0.0)
            })
            .collect();
        let total: f64 = raw.iter().sum();
        if total > 0.0 {
            raw.iter().map(|x| x / total).collect()
        } else {
            raw
        }
    }
}

/// Probability that two packets of `mix` visiting node `i` take different next hops
/// (1 − Σ_k r_k²): the next node on their path, or `key` of their path if given.
fn mixedness(mix: &[Path], i: usize, key: Option<&dyn Fn(&Path) -> usize>) -> f64 {
    let mut by_next: Vec<(usize, f64)> = Vec::new();
    let mut total = 0.0;
    for p in mix {
        let Some(pos) = p.nodes.iter().position(|&n| n == i) else {
            continue;
        };
        let k = match key {
            Some(f) => f(p),
            None => p.nodes.get(pos + 1).copied().unwrap_or(usize::MAX),
        };
        match by_next.iter_mut().find(|e| e.0 == k) {
            Some(e) => e.1 += p.share,
            None => by_next.push((k, p.share)),
        }
        total += p.share;
    }
    if total <= 0.0 {
        return 0.0;
    }
    1.0 - by_next.iter().map(|e| (e.1 / total).powi(2)).sum::<f64>()
}

/// Non-negative least squares over N columns (a column without data is left at 0): the
/// unconstrained fit over the active columns, dropping the most negative coefficient and
/// refitting until none is negative; collinear columns drop the first active one.
fn nnls<const N: usize>(rows: &[[f64; N]], ys: &[f64]) -> [f64; N] {
    let mut active: Vec<usize> = (0..N)
        .filter(|&j| rows.iter().any(|r| r[j] != 0.0))
        .collect();
    loop {
        let k = active.len();
        if k == 0 {
            return [0.0; N];
        }
        // Normal equations over the active columns.
        let mut m = vec![vec![0.0f64; k + 1]; k];
        for (r, &y) in rows.iter().zip(ys) {
            for a in 0..k {
                for b in 0..k {
                    m[a][b] += r[active[a]] * r[active[b]];
                }
                m[a][k] += r[active[a]] * y;
            }
        }
        let mut ok = true;
        for col in 0..k {
            let piv = (col..k)
                .max_by(|&a, &b| m[a][col].abs().total_cmp(&m[b][col].abs()))
                .unwrap_or(col);
            if m[piv][col].abs() < 1e-12 {
                ok = false;
                break;
            }
            m.swap(col, piv);
            let pivot = m[col].clone();
            for (r, row) in m.iter_mut().enumerate() {
                if r != col {
                    let f = row[col] / pivot[col];
                    for (x, p) in row.iter_mut().zip(&pivot).skip(col) {
                        *x -= f * p;
                    }
                }
            }
        }
        if !ok {
            // Collinear columns (e.g. one packets-per-call value only): drop the per-call
            // column first, it is the one the data cannot separate.
            active.remove(0);
            continue;
        }
        let coef: Vec<f64> = (0..k).map(|a| m[a][k] / m[a][a]).collect();
        match (0..k)
            .filter(|&a| coef[a] < 0.0)
            .min_by(|&a, &b| coef[a].total_cmp(&coef[b]))
        {
            Some(a) => {
                active.remove(a);
            }
            None => {
                let mut out = [0.0; N];
                for (a, &j) in active.iter().enumerate() {
                    out[j] = coef[a];
                }
                return out;
            }
        }
    }
}

/// Test fixture shared by this module's and the tuner's tests: an IPv4 and an IPv6 path
/// over nodes batcher 0, ethernet-input 1, ip4 2, ip6 3, output 4 (direct entry when on).
#[cfg(test)]
pub(crate) fn ipv4_ipv6_paths() -> Vec<BatchedPath> {
    let path = |name: &str, l3: usize| BatchedPath {
        name: name.into(),
        off: vec![0, 1, l3, 4],
        on: vec![0, l3, 4],
    };
    vec![path("ipv4", 2), path("ipv6", 3)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batching_one_path_per_vector_costs_less() {
        let m = Machine {
            line: 64,
            access_cycles: 10.0,
            dma_amplification: 1.0,
            l1i: 32768,
        };
        let node = |name: &str| NodeCost {
            name: name.into(),
            per_packet: 10.0,
            code_bytes: 4096,
            data_lines: 0.5,
        };
        let nodes = vec![node("eth"), node("ip4"), node("ip6")];
        let mixed = vec![
            Path {
                share: 0.5,
                nodes: vec![0, 1],
            },
            Path {
                share: 0.5,
                nodes: vec![0, 2],
            },
        ];
        let off = vector_cost(&m, &nodes, &mixed, 256);
        let on4 = vector_cost(
            &m,
            &nodes,
            &[Path {
                share: 1.0,
                nodes: vec![0, 1],
            }],
            256,
        );
        assert!((expected_paths(&mixed, 256) - 2.0).abs() < 1e-9);
        assert!(on4.i1_misses < off.i1_misses);
        assert!((on4.i1_misses - 128.0).abs() < 1e-9, "two nodes × 64 lines");
        assert!(
            (off.i1_misses - 192.0).abs() < 1e-6,
            "three nodes × 64 lines"
        );
        assert!(
            (off.d1_misses - on4.d1_misses).abs() < 1e-9,
            "same data per packet"
        );
    }

    #[test]
    fn the_vector_splits_where_the_paths_diverge() {
        let node = |n: &str| CallCost {
            name: n.into(),
            per_call: 0.0,
            per_packet_off: 0.0,
            per_packet_on: 0.0,
            split: 0.0,
        };
        // batcher 0, ethernet-input 1, ip4 2, ip6 3, output 4.
        let g = BatchedGraph {
            nodes: ["batcher", "eth", "ip4", "ip6", "out"].map(node).to_vec(),
            paths: ipv4_ipv6_paths(),
            elephant_share: 0.05,
        };
        let alt = [0.5, 0.5];
        let off = g.node_load(&alt, 256, Batching::Off);
        // Off: the batcher sends everything to ethernet-input (whole), which splits it.
        assert_eq!(off[0].mixed, 0.0);
        assert!((off[1].mixed - 0.5).abs() < 1e-12);
        assert_eq!((off[2].mixed, off[4].mixed), (0.0, 0.0));
        assert!((off[2].packets - 0.5).abs() < 1e-12 && (off[2].calls - 1.0 / 256.0).abs() < 1e-9);
        // On: the batcher splits the traffic into its queues; every vector after is whole.
        let on = g.node_load(&alt, 256, Batching::Batch(64));
        assert!((on[0].mixed - 0.5).abs() < 1e-12);
        assert_eq!(on[1].packets, 0.0);
        assert!(on[2..].iter().all(|l| l.mixed == 0.0));
        assert!(
            (on[4].calls - 1.0 / 64.0).abs() < 1e-12,
            "one output call per batch"
        );
        assert!((on[2].calls - 0.5 / 64.0).abs() < 1e-12);
        // One path: nothing splits, with the batcher or without.
        for b in [Batching::Off, Batching::Batch(64)] {
            assert!(g
                .node_load(&[1.0, 0.0], 256, b)
                .iter()
                .all(|l| l.mixed == 0.0));
        }
    }
}
