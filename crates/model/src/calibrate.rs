//! Calibration: fit the batching model's parameters per node from measured runs (the
//! seed's offline phase): cycles per packet at a few vector sizes give Δshared and
//! Δnecessary (a line in 1/B); at a few sub-batch sizes, Δfetch and Δhide (a line in
//! (b − 1)/b) and, with three or more sub-batch sizes at one vector size, the sub-batch
//! cost Δsub (a plane in (b − 1)/b and b − 1).

use crate::batching::{Compute, Node, Stall};
use serde::{Deserialize, Serialize};

/// One measurement of one node: cycles per packet at (vector size, sub-batch).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// Vector size B.
    pub vector: usize,
    /// Sub-batch b.
    pub sub_batch: usize,
    /// Measured cycles per packet of the node.
    pub cycles_per_packet: f64,
}

/// A calibrated graph: one model node per graph node, by name.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// (node name, model).
    pub nodes: Vec<(String, Node)>,
}

/// Least squares y = a + c/v + g·v over vector sizes `vs` (normal equations, 3×3);
/// returns (a, c, g), or None if the system is singular (fewer than 3 distinct sizes).
fn fit3(vs: &[f64], ys: &[f64]) -> Option<(f64, f64, f64)> {
    let rows: Vec<[f64; 3]> = vs.iter().map(|&v| [1.0, 1.0 / v, v]).collect();
    lstsq3(&rows, ys)
}

/// Least squares y = p0·r0 + p1·r1 + p2·r2 over `rows` (normal equations, 3×3); None if
/// singular.
fn lstsq3(rows: &[[f64; 3]], ys: &[f64]) -> Option<(f64, f64, f64)> {
    let mut m = [[0.0f64; 4]; 3];
    for (r, &y) in rows.iter().zip(ys) {
        for i in 0..3 {
            for j in 0..3 {
                m[i][j] += r[i] * r[j];
            }
            m[i][3] += r[i] * y;
        }
    }
    // Gaussian elimination with partial pivoting.
    for col in 0..3 {
        let piv = (col..3).max_by(|&a, &b| m[a][col].abs().total_cmp(&m[b][col].abs()))?;
        if m[piv][col].abs() < 1e-12 {
            return None;
        }
        m.swap(col, piv);
        let pivot = m[col];
        for (r, row) in m.iter_mut().enumerate() {
            if r != col {
                let f = row[col] / pivot[col];
                for (x, p) in row.iter_mut().zip(pivot.iter()).skip(col) {
                    *x -= f * p;
                }
            }
        }
    }
    Some((m[0][3] / m[0][0], m[1][3] / m[1][1], m[2][3] / m[2][2]))
}

/// Least squares y = a + c·x; returns (a, c).
fn line(xs: &[f64], ys: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    if xs.is_empty() {
        return (0.0, 0.0);
    }
    let (mx, my) = (xs.iter().sum::<f64>() / n, ys.iter().sum::<f64>() / n);
    let sxx: f64 = xs.iter().map(|x| (x - mx) * (x - mx)).sum();
    if sxx == 0.0 {
        return (my, 0.0);
    }
    let sxy: f64 = xs.iter().zip(ys).map(|(x, y)| (x - mx) * (y - my)).sum();
    let c = sxy / sxx;
    (my - c * mx, c)
}

/// Fits one node. Samples at the largest vector size fit the stall part against (b − 1)/b
/// and b − 1 (`fit_stall`); then every other vector size's samples, moved to the largest
/// sub-batch with that stall part (the model's stall does not depend on B), and the
/// largest vector's sample at the largest sub-batch fit the compute part against 1/B (and
/// B, with four or more vector sizes). A node whose cost does not fall with b gets no stall
/// part.
pub fn fit_node(samples: &[Sample]) -> Node {
    fit_node_with(samples, SpanRule::default())
}

/// How the calibration chooses the stall's shape ([`Stall::hide_span`]) among the seeds'
/// (b − 1)/b and the linear spans it tries.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum SpanRule {
    /// The smallest squared error over the sub-batch samples, keeping the seeds' form unless
    /// a span is 5% better.
    #[default]
    PreferSeeds,
    /// The smallest leave-one-out error: each sub-batch sample predicted from a fit of the
    /// others, so that a shape is judged on points it was not fitted to (one noisy sample
    /// cannot pick a shape that only it supports).
    LeaveOneOut,
}

/// [`fit_node`] with the shape chosen by `rule`.
///
/// ```
/// use pktvec_model::batching::{Compute, Node, Stall};
/// use pktvec_model::calibrate::{fit_node_with, Sample, SpanRule};
/// let truth = Node {
///     compute: Compute { delta_shared: 2000.0, delta_necessary: 30.0, delta_cache: 0.0 },
///     stall: Stall { delta_fetch: 120.0, delta_hide: 120.0, delta_sub: 0.0, hide_span: 15.0 },
/// };
/// let s: Vec<Sample> = [(16, 16), (32, 32), (64, 64), (128, 64), (256, 64), (256, 1), (256, 4), (256, 16), (256, 32)]
///     .iter()
///     .map(|&(v, b)| Sample { vector: v, sub_batch: b, cycles_per_packet: truth.cycles_per_packet(v, b) })
///     .collect();
/// let fit = fit_node_with(&s, SpanRule::LeaveOneOut);
/// for b in [2, 8] {
///     let (p, t) = (fit.cycles_per_packet(256, b), truth.cycles_per_packet(256, b));
///     assert!((p - t).abs() / t < 0.02, "b {b}: {p} vs {t}");
/// }
/// ```
pub fn fit_node_with(samples: &[Sample], rule: SpanRule) -> Node {
    let bmax = samples.iter().map(|s| s.sub_batch).max().unwrap_or(1);
    let vmax = samples.iter().map(|s| s.vector).max().unwrap_or(1);
    let at_v: Vec<&Sample> = samples.iter().filter(|s| s.vector == vmax).collect();
    let ys: Vec<f64> = at_v.iter().map(|s| s.cycles_per_packet).collect();
    let ks: Vec<f64> = at_v.iter().map(|s| s.sub_batch as f64 - 1.0).collect();
    // The hidden share's shape: the seeds' (b − 1)/b, or linear up to a span
    // (`Stall::hide_span`), chosen by `rule`.
    let mut best: Option<(f64, Stall)> = None;
    for span in HIDE_SPANS {
        let shape = Stall {
            hide_span: span,
            ..Stall::default()
        };
        let xs: Vec<f64> = at_v
            .iter()
            .map(|s| shape.hidden_share(s.sub_batch))
            .collect();
        let (hide, sub, sse) = fit_stall(&xs, &ks, &ys);
        let (score, better) = match rule {
            // Prefer the seeds' form unless a span fits clearly better (5%).
            SpanRule::PreferSeeds => (sse, best.map_or(true, |(b, _)| sse < 0.95 * b)),
            SpanRule::LeaveOneOut => {
                let cv = loo_error(&xs, &ks, &ys);
                (cv, best.map_or(true, |(b, _)| cv < b))
            }
        };
        if better {
            best = Some((
                score,
                Stall {
                    delta_fetch: hide,
                    delta_hide: hide,
                    delta_sub: sub,
                    hide_span: if hide > 0.0 { span } else { 0.0 },
                },
            ));
        }
    }
    let st = best.map(|b| b.1).unwrap_or_default();
    // The stall part relative to no stall (Δfetch = Δhide: never clipped at zero).
    let stall = |b: usize| st.stall_per_packet(b);
    let at_b: Vec<(f64, f64)> = samples
        .iter()
        .filter(|s| s.vector != vmax || s.sub_batch == bmax)
        .map(|s| {
            (
                s.vector as f64,
                s.cycles_per_packet - stall(s.sub_batch) + stall(bmax),
            )
        })
        .collect();
    let xs: Vec<f64> = at_b.iter().map(|s| 1.0 / s.0).collect();
    let ys: Vec<f64> = at_b.iter().map(|s| s.1).collect();
    let (mut a, mut c) = line(&xs, &ys);
    let mut g = 0.0;
    // With 4+ vector sizes, also fit the cache-pressure term; keep it only if it is a
    // growth (g > 0) and the amortised part stays non-negative.
    let vs: Vec<f64> = at_b.iter().map(|s| s.0).collect();
    let mut distinct = vs.clone();
    distinct.sort_by(f64::total_cmp);
    distinct.dedup();
    if distinct.len() >= 4 {
        if let Some((a3, c3, g3)) = fit3(&vs, &ys) {
            if g3 > 0.0 && c3 >= 0.0 {
                (a, c, g) = (a3, c3, g3);
            }
        }
    }
    // y(b) = Δnecessary + Δshared/B + Δfetch − Δhide·(b−1)/b + Δsub·(b−1): the slopes
    // against (b−1)/b and b−1 are −Δhide and Δsub. Only Δnecessary + (Δfetch − Δhide) is
    // identifiable from these runs (the part of a miss no sub-batch hides looks like
    // per-packet work), so Δfetch is set to Δhide and the rest is Δnecessary; predictions
    // are the same either way. The compute line was fitted at b = bmax, whose stall part
    // Δhide/bmax + Δsub·(bmax − 1) is taken out of its intercept.
    Node {
        compute: Compute {
            delta_shared: c.max(0.0),
            delta_necessary: (a - stall(bmax)).max(0.0),
            delta_cache: g,
        },
        stall: st,
    }
}

/// The hidden-share shapes the calibration tries ([`Stall::hide_span`]): 0 is the seeds'
/// (b − 1)/b; the others a linear growth reaching Δhide at b = span + 1.
const HIDE_SPANS: [f64; 10] = [0.0, 2.0, 3.0, 5.0, 7.0, 11.0, 15.0, 23.0, 31.0, 47.0];

/// Leave-one-out squared error of [`fit_stall`]: each sample predicted from a fit of the
/// others (the level y0 by least squares given the slopes). With fewer than 4 samples the
/// plain squared error.
fn loo_error(xs: &[f64], ks: &[f64], ys: &[f64]) -> f64 {
    if ys.len() < 4 {
        return fit_stall(xs, ks, ys).2;
    }
    (0..ys.len())
        .map(|i| {
            let keep = |v: &[f64]| -> Vec<f64> {
                v.iter()
                    .enumerate()
                    .filter(|(j, _)| *j != i)
                    .map(|(_, x)| *x)
                    .collect()
            };
            let (x, k, y) = (keep(xs), keep(ks), keep(ys));
            let (hide, sub, _) = fit_stall(&x, &k, &y);
            let y0 = y
                .iter()
                .zip(&x)
                .zip(&k)
                .map(|((y, x), k)| y + hide * x - sub * k)
                .sum::<f64>()
                / y.len() as f64;
            (y0 - hide * xs[i] + sub * ks[i] - ys[i]).powi(2)
        })
        .sum()
}

/// Fits y = y0 − Δhide·x + Δsub·k (x = the hidden share at b, k = b − 1) with Δhide,
/// Δsub ≥ 0: the plane when three or more distinct sub-batches make it identifiable and
/// both slopes have the right sign, else the better (least squares) of the one-slope lines
/// (or none); returns (Δhide, Δsub, squared error).
fn fit_stall(xs: &[f64], ks: &[f64], ys: &[f64]) -> (f64, f64, f64) {
    let sse = |y0: f64, hide: f64, sub: f64| -> f64 {
        xs.iter()
            .zip(ks)
            .zip(ys)
            .map(|((x, k), y)| (y0 - hide * x + sub * k - y).powi(2))
            .sum()
    };
    let mut distinct = ks.to_vec();
    distinct.sort_by(f64::total_cmp);
    distinct.dedup();
    if distinct.len() >= 3 {
        let rows: Vec<[f64; 3]> = xs.iter().zip(ks).map(|(&x, &k)| [1.0, x, k]).collect();
        if let Some((y0, s1, s2)) = lstsq3(&rows, ys) {
            if s1 <= 0.0 && s2 >= 0.0 {
                return (-s1, s2, sse(y0, -s1, s2));
            }
        }
    }
    let mean = ys.iter().sum::<f64>() / ys.len().max(1) as f64;
    let mut best = (sse(mean, 0.0, 0.0), 0.0, 0.0);
    let (y0, slope) = line(xs, ys);
    if slope <= 0.0 {
        best = (sse(y0, -slope, 0.0), -slope, 0.0);
    }
    let (y0, slope) = line(ks, ys);
    if slope > 0.0 && sse(y0, 0.0, slope) < best.0 {
        best = (sse(y0, 0.0, slope), 0.0, slope);
    }
    (best.1, best.2, best.0)
}

impl Calibration {
    /// Fits every node from `(node name, sample)` measurements.
    pub fn fit(samples: &[(String, Sample)]) -> Calibration {
        Self::fit_with(samples, SpanRule::default())
    }

    /// [`Calibration::fit`] with the stall's shape chosen by `rule`.
    pub fn fit_with(samples: &[(String, Sample)], rule: SpanRule) -> Calibration {
        let mut names: Vec<&String> = samples.iter().map(|(n, _)| n).collect();
        names.sort();
        names.dedup();
        Calibration {
            nodes: names
                .into_iter()
                .map(|n| {
                    let s: Vec<Sample> = samples
                        .iter()
                        .filter(|(m, _)| m == n)
                        .map(|(_, s)| *s)
                        .collect();
                    (n.clone(), fit_node_with(&s, rule))
                })
                .collect(),
        }
    }

    /// Predicted cycles per packet of the whole graph (sum over nodes; each node's share of
    /// the packets is 1 unless `share` says otherwise).
    pub fn predict(&self, vector: usize, sub_batch: usize, share: impl Fn(&str) -> f64) -> f64 {
        self.nodes
            .iter()
            .map(|(n, m)| share(n) * m.cycles_per_packet(vector, sub_batch))
            .sum()
    }

    /// Saves as JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("plain data")
    }

    /// Loads from JSON.
    pub fn from_json(s: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(s)
    }
}

/// Fits the I1 side of [`MissParams`](crate::ppb::MissParams) for one L1i size from
/// `(wide, narrow, measured I1 per packet)` triples, where wide/narrow are
/// [`code_lines_per_packet`](crate::ppb::code_lines_per_packet) of the measured setting:
/// I1 = ratio × (wide + narrow_ratio × narrow), least squares on the logarithm (relative
/// errors), narrow_ratio searched over 0..=1. Returns (code_miss_ratio, narrow_code_ratio).
///
/// ```
/// let pts = [(10.0, 0.0, 5.0), (0.0, 10.0, 2.5), (4.0, 4.0, 3.0)];
/// let (m, phi) = pktvec_model::calibrate::fit_code_misses(&pts);
/// assert!((m - 0.5).abs() < 1e-9 && (phi - 0.5).abs() < 1e-9);
/// ```
pub fn fit_code_misses(samples: &[(f64, f64, f64)]) -> (f64, f64) {
    let mut best = (f64::INFINITY, 0.0, 1.0);
    for k in 0..=100 {
        let phi = k as f64 / 100.0;
        let measured: Vec<&(f64, f64, f64)> = samples.iter().filter(|s| s.2 > 0.0).collect();
        // A φ that predicts no lines where misses were measured cannot fit (leaving those
        // points out would make it look better than it is).
        if measured.is_empty() || measured.iter().any(|s| s.0 + phi * s.1 <= 0.0) {
            continue;
        }
        let pts: Vec<(f64, f64)> = measured
            .iter()
            .map(|s| ((s.0 + phi * s.1).ln(), s.2.ln()))
            .collect();
        let lm = pts.iter().map(|(x, y)| y - x).sum::<f64>() / pts.len() as f64;
        let err: f64 = pts.iter().map(|(x, y)| (x + lm - y).powi(2)).sum();
        if err < best.0 - 1e-12 {
            best = (err, lm.exp(), phi);
        }
    }
    (best.1, best.2)
}

/// Fits the I1 side of [`MissParams`](crate::ppb::MissParams) with the capacity term, one set for all L1i sizes,
/// from `(wide, narrow, footprint bytes, L1i bytes, measured I1 per packet)`:
/// I1 = ratio × (wide + narrow_ratio × narrow) × max(0, 1 − capacity × L1i / footprint).
/// narrow_ratio and capacity are searched on grids (0..=1 and 0.5..=1.5), the ratio by
/// least squares of relative errors (each point's error over max(measured, `floor`), so
/// points measured at ≈ 0 count without dominating). Returns (code_miss_ratio,
/// narrow_code_ratio, code_capacity).
///
/// ```
/// let truth = |w: f64, f: f64, c: f64| 0.8 * w * (1.0 - 0.9 * c / f).max(0.0);
/// let pts: Vec<(f64, f64, f64, f64, f64)> = [(40.0, 20000.0, 32768.0), (40.0, 40000.0, 32768.0),
///     (40.0, 40000.0, 8192.0), (10.0, 60000.0, 32768.0)]
///     .iter().map(|&(w, f, c)| (w, 0.0, f, c, truth(w, f, c))).collect();
/// let (m, _, k) = pktvec_model::calibrate::fit_code_capacity(&pts, 0.01);
/// assert!((m - 0.8).abs() < 1e-6 && (k - 0.9).abs() < 1e-9);
/// ```
pub fn fit_code_capacity(samples: &[(f64, f64, f64, f64, f64)], floor: f64) -> (f64, f64, f64) {
    let mut best = (f64::INFINITY, 0.0, 1.0, 0.0);
    for kc in 0..=100 {
        let capacity = 0.5 + kc as f64 / 100.0;
        for kp in 0..=20 {
            let phi = kp as f64 / 20.0;
            let xs: Vec<(f64, f64, f64)> = samples
                .iter()
                .map(|&(w, n, f, c, y)| {
                    let over = if f > 0.0 {
                        (1.0 - capacity * c / f).max(0.0)
                    } else {
                        0.0
                    };
                    ((w + phi * n) * over, y.max(0.0), y.max(floor))
                })
                .collect();
            let (sxy, sxx) = xs.iter().fold((0.0, 0.0), |a, (x, y, d)| {
                (a.0 + x * y / (d * d), a.1 + x * x / (d * d))
            });
            let m = if sxx > 0.0 { sxy / sxx } else { 0.0 };
            let err: f64 = xs.iter().map(|(x, y, d)| ((m * x - y) / d).powi(2)).sum();
            if err < best.0 - 1e-12 {
                best = (err, m, phi, capacity);
            }
        }
    }
    (best.1, best.2, best.3)
}

/// Fits the D1 side of [`MissParams`](crate::ppb::MissParams) from `(packets in flight,
/// measured D1 per packet)` pairs: D1 = k0 + R·(1 − exp(−n·w/C)) with C = `l1d_lines`;
/// w searched on a geometric grid, (k0, R) by least squares weighted by 1/D1² (relative
/// errors). Returns (d_compulsory, d_reuse, d_lines_per_packet).
///
/// ```
/// let f = |n: f64| 4.0 + 10.0 * (1.0 - (-n * 2.0 / 512.0).exp());
/// let pts: Vec<(f64, f64)> = [4.0, 64.0, 256.0].iter().map(|&n| (n, f(n))).collect();
/// let (k0, r, w) = pktvec_model::calibrate::fit_data_misses(&pts, 512.0);
/// assert!((k0 - 4.0).abs() < 0.1 && (r - 10.0).abs() < 0.5 && (w - 2.0).abs() < 0.1);
/// ```
pub fn fit_data_misses(samples: &[(f64, f64)], l1d_lines: f64) -> (f64, f64, f64) {
    let mut best = (f64::INFINITY, 0.0, 0.0, 0.0);
    for k in 0..=400 {
        let w = 0.05 * 1.02f64.powi(k);
        // Weighted least squares y = k0 + R·f.
        let (mut s00, mut s01, mut s11, mut t0, mut t1) = (0.0, 0.0, 0.0, 0.0, 0.0);
        for &(n, y) in samples {
            if y <= 0.0 {
                continue;
            }
            let f = 1.0 - (-n * w / l1d_lines).exp();
            let wt = 1.0 / (y * y);
            s00 += wt;
            s01 += wt * f;
            s11 += wt * f * f;
            t0 += wt * y;
            t1 += wt * f * y;
        }
        let det = s00 * s11 - s01 * s01;
        if det.abs() < 1e-18 {
            continue;
        }
        let r = (s00 * t1 - s01 * t0) / det;
        let k0 = (t0 - s01 * r) / s00;
        if r < 0.0 || k0 < 0.0 {
            continue;
        }
        let err: f64 = samples
            .iter()
            .filter(|s| s.1 > 0.0)
            .map(|&(n, y)| ((k0 + r * (1.0 - (-n * w / l1d_lines).exp()) - y) / y).powi(2))
            .sum();
        if err < best.0 {
            best = (err, k0, r, w);
        }
    }
    (best.1, best.2, best.3)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Samples of `truth` at each (B, b) of `points`, as calibration runs would measure them.
    fn measured(truth: &Node, points: impl IntoIterator<Item = (usize, usize)>) -> Vec<Sample> {
        points
            .into_iter()
            .map(|(vector, sub_batch)| Sample {
                vector,
                sub_batch,
                cycles_per_packet: truth.cycles_per_packet(vector, sub_batch),
            })
            .collect()
    }

    #[test]
    fn recovers_a_known_node() {
        let truth = Node {
            compute: Compute {
                delta_shared: 3000.0,
                delta_necessary: 25.0,
                delta_cache: 0.05,
            },
            stall: Stall {
                delta_fetch: 80.0,
                delta_hide: 70.0,
                delta_sub: 0.2,
                hide_span: 0.0,
            },
        };
        let vectors = [16, 32, 64, 128, 256].map(|v| (v, 64));
        let s = measured(
            &truth,
            vectors
                .into_iter()
                .chain([1, 2, 4, 8, 16, 32].map(|b| (256, b))),
        );
        let fit = fit_node(&s);
        for v in [8, 16, 256] {
            for b in [1, 4, 64] {
                let (p, t) = (fit.cycles_per_packet(v, b), truth.cycles_per_packet(v, b));
                assert!((p - t).abs() / t < 0.02, "v {v} b {b}: {p} vs {t}");
            }
        }
        assert!((fit.stall.delta_sub - 0.2).abs() < 1e-6, "{fit:?}");
        let c = Calibration::fit(&s.iter().map(|x| ("n".to_string(), *x)).collect::<Vec<_>>());
        assert_eq!(Calibration::from_json(&c.to_json()).unwrap(), c);
    }

    /// A table beyond the caches whose misses are hidden only once the other keys' work
    /// covers the latency (linear in b up to b = 16, as l2fwd's 57 MiB table measures): the
    /// fit picks the span shape and predicts the small sub-batches the seeds' (b − 1)/b
    /// form would call half hidden at b = 2.
    #[test]
    fn fits_a_linear_hiding_span() {
        let truth = Node {
            compute: Compute {
                delta_shared: 3000.0,
                delta_necessary: 60.0,
                delta_cache: 0.0,
            },
            stall: Stall {
                delta_fetch: 280.0,
                delta_hide: 280.0,
                delta_sub: 0.0,
                hide_span: 15.0,
            },
        };
        let vectors = [16, 32, 64, 128, 256].map(|v| (v, v.min(64)));
        let s = measured(
            &truth,
            vectors.into_iter().chain([1, 4, 16, 32].map(|b| (256, b))),
        );
        let fit = fit_node(&s);
        assert_eq!(fit.stall.hide_span, 15.0, "{fit:?}");
        for v in [16, 64, 256] {
            for b in [1, 2, 4, 8, 16, 64] {
                let (p, t) = (fit.cycles_per_packet(v, b), truth.cycles_per_packet(v, b));
                assert!((p - t).abs() / t < 1e-6, "v {v} b {b}: {p} vs {t}");
            }
        }
        assert_eq!(fit.stall.best_sub_batch(), 16);
    }

    /// A cache-resident table measured at the tune example's calibration settings
    /// (B ∈ {32, 64, 128, 256} at b = 64; b ∈ {1, 4, 16} at B = 256): b = 4 is cheaper
    /// than b = 64, and the fit says so through Δsub.
    #[test]
    fn fits_the_sub_batch_cost_of_a_resident_table() {
        let truth = Node {
            compute: Compute {
                delta_shared: 2000.0,
                delta_necessary: 60.0,
                delta_cache: 0.05,
            },
            stall: Stall {
                delta_fetch: 8.0,
                delta_hide: 8.0,
                delta_sub: 0.4,
                hide_span: 0.0,
            },
        };
        let mut s = Vec::new();
        for v in [32, 64, 128, 256] {
            // As in the tune example: b = min(64, V), so V = 32 runs at b = 32.
            s.push(Sample {
                vector: v,
                sub_batch: v.min(64),
                cycles_per_packet: truth.cycles_per_packet(v, v.min(64)),
            });
        }
        for b in [1, 4, 16] {
            s.push(Sample {
                vector: 256,
                sub_batch: b,
                cycles_per_packet: truth.cycles_per_packet(256, b),
            });
        }
        let fit = fit_node(&s);
        assert!((fit.stall.delta_sub - 0.4).abs() < 1e-6, "{fit:?}");
        assert!((fit.stall.delta_hide - 8.0).abs() < 1e-6, "{fit:?}");
        assert!((fit.compute.delta_cache - 0.05).abs() < 1e-6, "{fit:?}");
        assert!(fit.cycles_per_packet(256, 4) < fit.cycles_per_packet(256, 64));
        for v in [16, 128, 256] {
            for b in [1, 2, 4, 8, 32, 64] {
                let (p, t) = (fit.cycles_per_packet(v, b), truth.cycles_per_packet(v, b));
                assert!((p - t).abs() / t < 1e-6, "v {v} b {b}: {p} vs {t}");
            }
        }
    }
}
