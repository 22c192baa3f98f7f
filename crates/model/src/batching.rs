//! The batching / sub-batching model, per node: a vector spreads a node's per-call cost over
//! its packets, and a sub-batch of prefetched lookups hides memory latency behind the other
//! packets' work (after Bhardwaj et al., "A Performance Model for Automatic Optimization of
//! Software Packet Processing Pipelines"; its section and equation numbers in brackets).
//!
//! Symbols follow the paper's eq. (4)–(6): for vector (batch) size `B` and sub-batch `b`,
//! Θ ∝ Δcompute(B) + Δstall/B, Δcompute(B) = Δshared/B + Δnecessary (5),
//! Δstall/B = Δfetch − Δhide/B (6). Here Δhide grows with the sub-batch as the work that
//! overlaps the other `b − 1` keys' misses: Δstall(b)/b = Δfetch − Δhide·(b − 1)/b, never
//! below zero. Throughput follows `000_*`: min(c, f_mem, f_dma).
//!
//! The seeds also report that sub-batch prefetching *hurts* when the table is small and
//! cache resident (`000_*` §3.5; `002_*` §4.5: beyond the optimum "a small dip in
//! performance because of the increased cache contention"): there is nothing to hide, but
//! the two-phase loop (prefetch b keys, then use them) touches b packets' metadata and
//! headers twice and keeps b keys and slots live, so L1 pressure and loop overhead grow
//! with b. That cost is Δsub per packet per extra packet of sub-batch,
//! Δstall(b)/b = max(0, Δfetch − Δhide·(b − 1)/b) + Δsub·(b − 1), and Δhide does not offset
//! it where nothing misses: with Δhide ≈ 0 the smallest b wins. Where Δhide > 0 the best
//! sub-batch is b* = √(Δhide/Δsub) ([`Stall::best_sub_batch`]).

use serde::{Deserialize, Serialize};

/// Cycles a node spends computing, per packet, at vector size `B`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Compute {
    /// Δshared: cycles per vector (call overhead, loop set-up, code fetch), amortised over B.
    pub delta_shared: f64,
    /// Δnecessary: cycles every packet costs whatever the batching.
    pub delta_necessary: f64,
    /// Δcache: cycles per packet added per packet of vector size, as a larger vector's
    /// buffers, metadata and table lines compete for the caches (`002_*` §3, "Summary":
    /// large batches make packet data, descriptors and table entries compete for the
    /// cache). Zero where the fit finds no such growth.
    #[serde(default)]
    pub delta_cache: f64,
}

impl Compute {
    /// Δcompute(B) = Δshared/B + Δnecessary (eq. 5), plus Δcache·B for the cache pressure
    /// of large vectors.
    pub fn delta_compute(&self, vector: usize) -> f64 {
        let b = vector.max(1) as f64;
        self.delta_shared / b + self.delta_necessary + self.delta_cache * b
    }
}

/// Cycles a node waits for memory, per packet, at sub-batch `b`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Stall {
    /// Δfetch: stall cycles per packet with nothing to overlap them (b = 1).
    pub delta_fetch: f64,
    /// Δhide: cycles of each miss the other keys of a sub-batch can hide (b → ∞).
    pub delta_hide: f64,
    /// Δsub: cycles per packet added by each further packet of the sub-batch: the two-phase
    /// loop's second pass over b packets' metadata and headers and its b live keys (L1
    /// pressure, loop overhead). Not offset by Δhide when nothing misses (a cache-resident
    /// table). Zero where the fit finds no such growth.
    #[serde(default)]
    pub delta_sub: f64,
    /// The sub-batch span over which Δhide is reached: a miss is overlapped by the work of
    /// the other b − 1 keys of its sub-batch, so the hidden part grows linearly with b until
    /// that work covers the whole latency, Δhide·min(1, (b − 1)/span) (the sub-batch must be long enough for
    /// the prefetches to land before their keys are used). 0: the
    /// seeds' saturating form Δhide·(b − 1)/b (the calibration picks the form that fits).
    #[serde(default)]
    pub hide_span: f64,
}

impl Stall {
    /// Δstall/b = max(0, Δfetch − Δhide·(b − 1)/b) (eq. 6) + Δsub·(b − 1) (the sub-batch's
    /// own cost).
    ///
    /// ```
    /// use pktvec_model::batching::Stall;
    /// // A cache-resident table: almost nothing to hide, each packet of sub-batch costs
    /// // 0.3 cycles per packet: b = 64 pays 0.3·63 = 18.9 cycles per packet more than b = 1
    /// // and hides at most 2; small sub-batches win.
    /// let small = Stall { delta_fetch: 2.0, delta_hide: 2.0, delta_sub: 0.3, hide_span: 0.0 };
    /// assert!(small.stall_per_packet(4) < small.stall_per_packet(64));
    /// assert_eq!(small.best_sub_batch(), 3); // √(2/0.3) ≈ 2.6
    /// // A table beyond the caches: 200 cycles to hide, large sub-batches win.
    /// let large = Stall { delta_fetch: 200.0, delta_hide: 200.0, delta_sub: 0.05, hide_span: 0.0 };
    /// assert!(large.stall_per_packet(64) < large.stall_per_packet(4));
    /// assert_eq!(large.best_sub_batch(), 63); // √(200/0.05) ≈ 63.2
    /// ```
    pub fn stall_per_packet(&self, sub_batch: usize) -> f64 {
        let b = sub_batch.max(1) as f64;
        (self.delta_fetch - self.delta_hide * self.hidden_share(sub_batch)).max(0.0)
            + self.delta_sub * (b - 1.0)
    }

    /// The share of Δhide a sub-batch of `sub_batch` hides: (b − 1)/b, or with a
    /// [`hide_span`](Self::hide_span) min(1, (b − 1)/span).
    ///
    /// ```
    /// use pktvec_model::batching::Stall;
    /// let seeds = Stall { delta_fetch: 100.0, delta_hide: 100.0, ..Default::default() };
    /// assert_eq!(seeds.hidden_share(2), 0.5);
    /// // A miss needs the work of 12 other keys to be hidden: b = 2 hides 1/12 of it.
    /// let span = Stall { hide_span: 12.0, ..seeds };
    /// assert!((span.hidden_share(2) - 1.0 / 12.0).abs() < 1e-12);
    /// assert_eq!(span.hidden_share(13), 1.0);
    /// ```
    pub fn hidden_share(&self, sub_batch: usize) -> f64 {
        let b = sub_batch.max(1) as f64;
        if self.hide_span > 0.0 {
            ((b - 1.0) / self.hide_span).min(1.0)
        } else {
            (b - 1.0) / b
        }
    }

    /// The sub-batch with the lowest [`stall_per_packet`](Self::stall_per_packet) over the
    /// integers (b* = √(Δhide/Δsub) where the stall is not yet fully hidden; unbounded —
    /// `usize::MAX` — without a sub-batch cost; 1 without anything to hide).
    pub fn best_sub_batch(&self) -> usize {
        if self.delta_hide <= 0.0 {
            return 1;
        }
        if self.hide_span > 0.0 {
            // Piecewise linear: the best is b = 1 or where the whole of Δhide is reached.
            let full = self.hide_span.ceil() as usize + 1;
            return if self.stall_per_packet(full) < self.stall_per_packet(1) {
                full
            } else {
                1
            };
        }
        if self.delta_sub <= 0.0 {
            return usize::MAX;
        }
        let x = (self.delta_hide / self.delta_sub).sqrt();
        let (lo, hi) = (x.floor().max(1.0) as usize, x.ceil().max(1.0) as usize);
        if self.stall_per_packet(hi) < self.stall_per_packet(lo) {
            hi
        } else {
            lo
        }
    }
}

/// One node of the model.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Node {
    /// Compute part.
    pub compute: Compute,
    /// Memory stall part (zero for nodes without table lookups).
    pub stall: Stall,
}

impl Node {
    /// Θ(B, b) for this node: cycles per packet.
    pub fn cycles_per_packet(&self, vector: usize, sub_batch: usize) -> f64 {
        self.compute.delta_compute(vector) + self.stall.stall_per_packet(sub_batch)
    }
}

/// What limits throughput.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Bound {
    /// The CPU (c).
    Compute,
    /// The CPU–memory interface (f_mem).
    Memory,
    /// The I/O–memory interface (f_dma).
    Io,
}

/// Throughput of a graph: min(c, f_mem, f_dma) in packets per second, and which bound.
///
/// * c = TSC rate / Σ Θ_node (the path's cycles per packet),
/// * f_mem = memory-level parallelism / (memory latency × cache-line misses per packet),
/// * f_dma = the I/O rate (packets per second the ports deliver; infinite memory to memory).
pub fn throughput(
    cycles_per_packet: f64,
    tsc_hz: f64,
    misses_per_packet: f64,
    mem_latency_s: f64,
    mlp: f64,
    io_pps: f64,
) -> (f64, Bound) {
    let c = tsc_hz / cycles_per_packet.max(1e-9);
    let m = if misses_per_packet > 0.0 {
        mlp / (mem_latency_s * misses_per_packet)
    } else {
        f64::INFINITY
    };
    let d = io_pps;
    if c <= m && c <= d {
        (c, Bound::Compute)
    } else if m <= d {
        (m, Bound::Memory)
    } else {
        (d, Bound::Io)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes() {
        let n = Node {
            compute: Compute {
                delta_shared: 1000.0,
                delta_necessary: 10.0,
                delta_cache: 0.0,
            },
            stall: Stall {
                delta_fetch: 50.0,
                delta_hide: 45.0,
                delta_sub: 0.0,
                hide_span: 0.0,
            },
        };
        assert!(n.cycles_per_packet(1, 1) > n.cycles_per_packet(256, 1));
        assert!(n.cycles_per_packet(256, 1) > n.cycles_per_packet(256, 64));
        assert_eq!(n.stall.stall_per_packet(1), 50.0);
        let big = Stall {
            delta_fetch: 10.0,
            delta_hide: 40.0,
            delta_sub: 0.0,
            hide_span: 0.0,
        };
        assert_eq!(big.stall_per_packet(64), 0.0, "never negative");
        // The sub-batch cost is not offset by Δhide once the stall is hidden.
        let resident = Stall {
            delta_fetch: 1.0,
            delta_hide: 1.0,
            delta_sub: 0.6,
            hide_span: 0.0,
        };
        assert!((resident.stall_per_packet(64) - (1.0 / 64.0 + 0.6 * 63.0)).abs() < 1e-9);
        assert!(resident.stall_per_packet(1) < resident.stall_per_packet(2));
        assert_eq!(resident.best_sub_batch(), 1);
        let (r, b) = throughput(100.0, 2.6e9, 0.0, 100e-9, 10.0, f64::INFINITY);
        assert_eq!((r, b), (2.6e7, Bound::Compute));
        let (_, b) = throughput(100.0, 2.6e9, 10.0, 100e-9, 2.0, f64::INFINITY);
        assert_eq!(b, Bound::Memory);
        let (r, b) = throughput(100.0, 2.6e9, 0.0, 100e-9, 2.0, 1e6);
        assert_eq!((r, b), (1e6, Bound::Io));
    }
}
