//! Per-packet latency through a graph: a timestamp taken when a packet leaves an input
//! node, read when it reaches a sink, into a histogram per sink (p50, p99, p99.9, max).
//!
//! Off by default and then free: one flag tested per vector where packets leave an input
//! node and where a sink is called. On ([`Graph::latency_enable`](crate::Graph::latency_enable)),
//! each buffer index gets a 32-bit TSC stamp in an array beside the pool (4 bytes a
//! buffer; a packet may stay up to 2³² cycles), and each sink a log-linear histogram
//! (16 sub-buckets per power of two: quantiles within 1/16 of the truth).
//!
//! ```
//! use pktvec_graph::builtin::{NullSink, PacketSource, SourceNext};
//! use pktvec_graph::{GraphBuilder, GraphConfig};
//! use pktvec_packet::{BufferPool, PoolConfig};
//! let mut b = GraphBuilder::new(GraphConfig::default());
//! b.add("source", PacketSource::new(vec![vec![0u8; 60]]).with_limit(10_000))
//!     .add("tx", NullSink)
//!     .set_next("source", SourceNext::Out, "tx");
//! let mut g = b.build(BufferPool::new(PoolConfig::default())?)?;
//! assert!(g.latency().rows.is_empty()); // off by default
//! g.latency_enable(true);
//! g.run_until_idle();
//! let t = g.latency();
//! assert_eq!(t.rows[0].sink, "tx");
//! assert_eq!(t.rows[0].packets, 10_000);
//! assert!(t.rows[0].p50 <= t.rows[0].p99 && t.rows[0].p99 <= t.rows[0].max);
//! println!("{t}"); // sink, packets, p50/p99/p99.9/max in cycles and µs
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use serde::Serialize;
use std::fmt;

/// Sub-buckets per power of two.
const SUB: u32 = 16;
const SUB_BITS: u32 = 4;
/// Buckets: values below 16 exactly, then 16 per power of two up to 2⁶⁴.
const BUCKETS: usize = (SUB + (64 - SUB_BITS) * SUB) as usize;

/// A log-linear histogram of cycle counts.
///
/// ```
/// use pktvec_graph::latency::Histogram;
/// let mut h = Histogram::default();
/// for v in 1..=1000u64 {
///     h.record(v);
/// }
/// assert_eq!(h.count(), 1000);
/// assert_eq!(h.max(), 1000);
/// let p50 = h.quantile(0.5);
/// assert!((470..=532).contains(&p50), "{p50}"); // within 1/16
/// ```
#[derive(Clone)]
pub struct Histogram {
    counts: Box<[u64]>,
    count: u64,
    max: u64,
    sum: u128,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            counts: vec![0; BUCKETS].into_boxed_slice(),
            count: 0,
            max: 0,
            sum: 0,
        }
    }
}

impl fmt::Debug for Histogram {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Histogram")
            .field("count", &self.count)
            .field("max", &self.max)
            .finish()
    }
}

#[inline]
fn bucket(v: u64) -> usize {
    if v < u64::from(SUB) {
        return v as usize;
    }
    let e = 63 - v.leading_zeros(); // ≥ SUB_BITS
    let sub = (v >> (e - SUB_BITS)) & u64::from(SUB - 1);
    (SUB + (e - SUB_BITS) * SUB) as usize + sub as usize
}

/// The largest value of bucket `b`.
fn bucket_top(b: usize) -> u64 {
    let b = b as u32;
    if b < SUB {
        return u64::from(b);
    }
    let e = (b - SUB) / SUB + SUB_BITS;
    let sub = u64::from((b - SUB) % SUB);
    let lo = (1u64 << e) | (sub << (e - SUB_BITS));
    lo.saturating_add((1u64 << (e - SUB_BITS)) - 1)
}

impl Histogram {
    /// Records one value.
    #[inline]
    pub fn record(&mut self, v: u64) {
        self.counts[bucket(v)] += 1;
        self.count += 1;
        self.max = self.max.max(v);
        self.sum += u128::from(v);
    }

    /// Values recorded.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The largest value recorded.
    pub fn max(&self) -> u64 {
        self.max
    }

    /// The mean (0 when empty).
    pub fn mean(&self) -> f64 {
        match self.count {
            0 => 0.0,
            n => self.sum as f64 / n as f64,
        }
    }

    /// The value below which a share `q` of the values lie (the top of its bucket, at most
    /// the maximum); 0 when empty.
    pub fn quantile(&self, q: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let want = ((q.clamp(0.0, 1.0) * self.count as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (b, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= want {
                return bucket_top(b).min(self.max);
            }
        }
        self.max
    }

    /// Adds another histogram's values (another worker's, say).
    pub fn merge(&mut self, o: &Histogram) {
        for (a, b) in self.counts.iter_mut().zip(o.counts.iter()) {
            *a += b;
        }
        self.count += o.count;
        self.max = self.max.max(o.max);
        self.sum += o.sum;
    }
}

/// The graph's latency state: stamps per buffer, a histogram per node (sinks fill theirs).
#[derive(Default)]
pub(crate) struct Latency {
    pub on: bool,
    pub stamps: Vec<u32>,
    pub hists: Vec<Histogram>,
}

impl Latency {
    /// Stamps packets leaving an input node.
    #[inline]
    pub fn stamp(&mut self, bis: &[u32], now: u64) {
        let t = now as u32;
        for &bi in bis {
            if let Some(s) = self.stamps.get_mut(bi as usize) {
                *s = t;
            }
        }
    }

    /// Records the packets reaching sink `node`.
    #[inline]
    pub fn record(&mut self, node: usize, bis: &[u32], now: u64) {
        let t = now as u32;
        let Latency { stamps, hists, .. } = self;
        if let Some(h) = hists.get_mut(node) {
            for &bi in bis {
                if let Some(&s) = stamps.get(bi as usize) {
                    h.record(u64::from(t.wrapping_sub(s)));
                }
            }
        }
    }
}

/// One sink's latency: from leaving an input node to reaching this sink.
#[derive(Clone, Debug, Serialize)]
pub struct LatencyRow {
    /// The sink node (`tx`, `drop`, …).
    pub sink: String,
    /// Packets recorded.
    pub packets: u64,
    /// Median, TSC cycles.
    pub p50: u64,
    /// 99th percentile, cycles.
    pub p99: u64,
    /// 99.9th percentile, cycles.
    pub p999: u64,
    /// Largest, cycles.
    pub max: u64,
    /// Mean, cycles.
    pub mean: f64,
    /// The histogram (for merging workers' rows).
    #[serde(skip)]
    pub histogram: Histogram,
}

impl LatencyRow {
    /// A row from a histogram.
    pub fn of(sink: &str, h: &Histogram) -> LatencyRow {
        LatencyRow {
            sink: sink.to_string(),
            packets: h.count(),
            p50: h.quantile(0.5),
            p99: h.quantile(0.99),
            p999: h.quantile(0.999),
            max: h.max(),
            mean: h.mean(),
            histogram: h.clone(),
        }
    }
}

/// Latency per sink ([`Graph::latency`](crate::Graph::latency)); `Display` prints it with
/// microseconds at the TSC rate.
#[derive(Clone, Debug, Default, Serialize)]
pub struct LatencyTable {
    /// One row per sink that received packets.
    pub rows: Vec<LatencyRow>,
}

impl LatencyTable {
    /// Rows of several tables merged by sink name (workers' graphs).
    pub fn merged<'a>(tables: impl IntoIterator<Item = &'a LatencyTable>) -> LatencyTable {
        let mut rows: Vec<LatencyRow> = Vec::new();
        for t in tables {
            for r in &t.rows {
                match rows.iter_mut().find(|x| x.sink == r.sink) {
                    Some(x) => {
                        let mut h = x.histogram.clone();
                        h.merge(&r.histogram);
                        *x = LatencyRow::of(&r.sink, &h);
                    }
                    None => rows.push(r.clone()),
                }
            }
        }
        LatencyTable { rows }
    }
}

impl fmt::Display for LatencyTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ghz = crate::clock::tsc_hz() / 1e9;
        let us = |c: u64| c as f64 / ghz / 1000.0;
        writeln!(
            f,
            "{:<16} {:>12} {:>10} {:>10} {:>10} {:>12}   (cycles; µs at {ghz:.3} GHz)",
            "latency to", "packets", "p50", "p99", "p99.9", "max"
        )?;
        for r in &self.rows {
            writeln!(
                f,
                "{:<16} {:>12} {:>10} {:>10} {:>10} {:>12}   ({:.2} / {:.2} / {:.2} / {:.2} µs)",
                r.sink,
                r.packets,
                r.p50,
                r.p99,
                r.p999,
                r.max,
                us(r.p50),
                us(r.p99),
                us(r.p999),
                us(r.max)
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_cover_every_value_in_order() {
        let mut last = 0;
        for v in (0..5000u64).chain([1 << 20, (1 << 20) + 1, u64::MAX / 3, u64::MAX]) {
            let b = bucket(v);
            assert!(b < BUCKETS);
            assert!(b >= last || v < 5000, "{v}");
            assert!(bucket_top(b) >= v, "{v}: top {}", bucket_top(b));
            // a bucket is at most 1/16 of its values wide
            assert!(bucket_top(b) - v <= v / 16 + 1, "{v}");
            if v < 5000 {
                last = b;
            }
        }
    }

    #[test]
    fn quantiles_of_a_known_distribution() {
        let mut h = Histogram::default();
        for _ in 0..990 {
            h.record(100);
        }
        for _ in 0..10 {
            h.record(100_000);
        }
        assert_eq!(h.quantile(0.5), 103); // the top of 100's bucket (96..=103)
        assert_eq!(h.quantile(0.99), 103);
        assert!(h.quantile(0.999) >= 100_000 && h.quantile(0.999) <= 100_000 * 17 / 16);
        assert_eq!(h.max(), 100_000);
        let mut g = Histogram::default();
        g.record(7);
        g.merge(&h);
        assert_eq!(g.count(), 1001);
        assert_eq!(g.quantile(0.0), 7);
    }
}
