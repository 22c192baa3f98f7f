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
