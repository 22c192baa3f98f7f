//! The path-batcher overhead model of seed `001_*` §II-B, eq. (1)–(5).
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

/// Expected O_vec (eq. 4) for a vector of `vector` packets whose paths are drawn from
/// `paths` independently (batcher off), or all on one path (batcher on: pass a single
/// path with share 1). A node runs once per vector if any of its packets visits it, on the
/// expected number that do: P(node called) = 1 − Π_paths through it... computed per path
/// as 1 − (1 − share)^vector for nodes of one path, and exactly for shared nodes.
pub fn vector_cost(m: &Machine, nodes: &[NodeCost], paths: &[Path], vector: usize) -> VectorCost {
    let mut out = VectorCost::default();
    for (i, n) in nodes.iter().enumerate() {
        // Share of packets that visit node i.
        let q: f64 = paths
            .iter()
            .filter(|p| p.nodes.contains(&i))
            .map(|p| p.share)
            .sum();
        if q <= 0.0 {
            continue;
        }
        let called = 1.0 - (1.0 - q.min(1.0)).powi(vector as i32);
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
        .map(|p| 1.0 - (1.0 - p.share).powi(vector as i32))
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
///   small when it nearly fits: calibrated per L1i size).
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
}

/// Expected I1 and D1 misses per packet for vectors (or batches) of `vector` packets from
/// the path mix `paths`: batcher off (`elephant_share = None`, mixed vectors) or on
/// (vectors of one queue, [`batcher_queues`]). `width` is the prefetch loop width (4 in
/// pktvec's nodes) and `l1d_lines` the L1d size in lines. Per packet, so that I1 = Σ over
/// the queues of (share / vector) × the expected I1 misses of one vector of that queue.
///
/// ```
/// use pktvec_model::ppb::{misses_per_packet, MissParams, NodeCost, Path};
/// let node = |c: usize| NodeCost { name: String::new(), per_packet: 0.0, code_bytes: c, data_lines: 0.0 };
/// let nodes = vec![node(2048), node(4096), node(4096)];
/// let mix = vec![Path { share: 0.5, nodes: vec![0, 1] }, Path { share: 0.5, nodes: vec![0, 2] }];
/// let p = MissParams { code_miss_ratio: 1.0, narrow_code_ratio: 1.0, ..Default::default() };
/// let (off, _) = misses_per_packet(&nodes, &mix, 64, None, 4, 512.0, &p);
/// let (on, _) = misses_per_packet(&nodes, &mix, 64, Some(0.05), 4, 512.0, &p);
/// // Off: 32 + 64 + 64 lines per vector of 64; on: 32 + 64 lines per vector of 64.
/// assert!((off - 160.0 / 64.0).abs() < 1e-6);
/// assert!((on - 96.0 / 64.0).abs() < 1e-9);
/// ```
pub fn misses_per_packet(
    nodes: &[NodeCost],
    paths: &[Path],
    vector: usize,
    elephant_share: Option<f64>,
    width: usize,
    l1d_lines: f64,
    p: &MissParams,
) -> (f64, f64) {
    let (wide, narrow) = code_lines_per_packet(nodes, paths, vector, elephant_share, width);
    let i1 = p.code_miss_ratio * (wide + p.narrow_code_ratio * narrow);
    let in_flight = vector as f64 * if elephant_share.is_some() { 2.0 } else { 1.0 };
    let d1 = p.d_compulsory
        + p.d_reuse * (1.0 - (-(in_flight * p.d_lines_per_packet) / l1d_lines.max(1.0)).exp());
    (i1, d1)
}

/// Expected code lines per packet fetched by node calls, split into calls with at least
/// `width` packets (wide) and fewer (narrow): Σ_queues share/vector × Σ_nodes
/// P(called) × ⌈P_i/64⌉ (the model's I of eq. 2 in lines). The calibration's features.
pub fn code_lines_per_packet(
    nodes: &[NodeCost],
    paths: &[Path],
    vector: usize,
    elephant_share: Option<f64>,
    width: usize,
) -> (f64, f64) {
    let (mut wide, mut narrow) = (0.0, 0.0);
    let v = vector.max(1);
    for (share, mix) in batcher_queues(paths, elephant_share) {
        for (i, n) in nodes.iter().enumerate() {
            let q: f64 = mix
                .iter()
                .filter(|p| p.nodes.contains(&i))
                .map(|p| p.share)
                .sum::<f64>()
                .min(1.0);
            if q <= 0.0 {
                continue;
            }
            let called = 1.0 - (1.0 - q).powi(v as i32);
            let lines = n.code_bytes.div_ceil(64) as f64 * called * share / v as f64;
            if q * v as f64 >= width as f64 {
                wide += lines;
            } else {
                narrow += lines;
            }
        }
    }
    (wide, narrow)
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
}
