//! The tuner: picks vector size B and sub-batch b from a calibration, and re-decides
//! online. Live cycles per packet are compared with the prediction; when they drift by more
//! than a threshold (the traffic mix or the table size changed), it explores a bounded set
//! of neighbours of the current choice, a few vectors each, keeps the best measured, and
//! rescales the model to the new level.
//!
//! The seeds' rule that sub-batch prefetching hurts on small, cache-resident tables is
//! applied explicitly as well as through the model's Δsub: when the table is cache resident
//! ([`Tuner::cache_resident`]: the probe says the table fits the private L2, or, size
//! unknown, the calibration's hideable stall is a small share of the cost), the
//! predicted choice is restricted to sub-batches of at most
//! [`TunerConfig::resident_max_sub_batch`]. Its mirror: on a table that is not resident
//! the choice takes no sub-batch below [`TunerConfig::beyond_min_sub_batch`].
//! Neighbouring sub-batches often differ by less than the model's error; a caller that can
//! measure confirms the choice among them ([`Tuner::sub_batch_neighbours`],
//! [`Tuner::confirm`]).
//!
//! The path batcher's setting (off or a batch size) is the third dimension:
//! [`BatchTuner`], from the PPB model ([`crate::ppb::BatchedGraph`]), for the vector size
//! in force.

use crate::calibrate::Calibration;
use crate::ppb::{BatchedGraph, Batching};
use serde::{Deserialize, Serialize};

/// Tuner settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TunerConfig {
    /// Vector sizes allowed.
    pub vectors: Vec<usize>,
    /// Sub-batch sizes allowed.
    pub sub_batches: Vec<usize>,
    /// Relative drift of measured vs predicted cycles per packet that triggers exploration.
    pub drift: f64,
    /// Measurement windows (calls to [`Tuner::observe`]) spent on each explored setting.
    pub windows_per_try: usize,
    /// Consecutive windows beyond `drift` (same sign) before exploring: one noisy window
    /// does not start an exploration.
    #[serde(default = "default_confirm")]
    pub confirm_windows: usize,
    /// Exploration rounds at most per drift: a round measures the current setting and its
    /// neighbours; when the best measured is not the round's centre, the next round is
    /// centred on it (settings already measured are not measured again).
    #[serde(default = "default_rounds")]
    pub max_rounds: usize,
    /// Relative gain the best measured setting of a round must show over the round's
    /// centre to be moved to (hysteresis: within the noise, stay).
    #[serde(default = "default_min_gain")]
    pub min_gain: f64,
    /// For [`Tuner::observe_profile`]: L1 distance between a window's traffic profile and
    /// the profile seen after the last decision that counts as a change.
    #[serde(default = "default_profile_drift")]
    pub profile_drift: f64,
    /// For [`Tuner::observe_profile`]: windows averaged into the reference profile and
    /// into the recent profile it is compared with (averaging divides the per-window noise).
    #[serde(default = "default_profile_windows")]
    pub profile_windows: usize,
    /// Where the lookup table's bytes fit by the probe's cache sizes ([`CacheFit::of`]);
    /// `None` if unknown (then only the calibration decides, see
    /// [`Tuner::cache_resident`]).
    #[serde(default)]
    pub table_fit: Option<CacheFit>,
    /// Where the table's size is unknown (`table_fit` = `None`), the calibration says
    /// "cache resident" when Σ Δhide over the nodes (the stall a sub-batch could hide) is
    /// below this share of the predicted cycles per packet at the
    /// largest vector and b = 1 (Δstall ≈ 0). Default 0.10: on the 2-vCPU VM the fitted
    /// share of the same l3fwd run with a 1.2 MiB FIB ranged 4.5–37% between sittings
    /// (l3fwd 7.4 MiB: 23–47%; l2fwd 57 MiB: 53–69%), so a higher threshold would cap b
    /// where the grid's best is b = 32–64 (docs/results/model.md).
    #[serde(default = "default_resident_stall_share")]
    pub resident_stall_share: f64,
    /// Largest sub-batch the predicted choice may use on a cache-resident table (the seeds:
    /// prefetching sub-batches hurt there).
    #[serde(default = "default_resident_max_sub_batch")]
    pub resident_max_sub_batch: usize,
    /// Smallest sub-batch the predicted choice may use on a table that is *not* cache
    /// resident (the mirror of `resident_max_sub_batch`). Seed `000_*` Fig. 6: beyond the
    /// caches throughput grows with b up to 64 and dips at 128. On this VM the fitted Δsub,
    /// from four sub-batches in a noisy sitting, sometimes puts b* at 8–16; pooled over 24
    /// sittings b = 16 gave 92.4% of the best on l3fwd's 7 MiB FIB, b = 32 and 64 ≥ 95.6%
    /// in every case beyond the L2 (docs/results/model.md, "Tuner quality"). 1: no floor.
    #[serde(default = "default_beyond_min_sub_batch")]
    pub beyond_min_sub_batch: usize,
    /// [`Tuner::best_predicted`] takes the largest vector size whose best prediction is
    /// within this share of the overall best: predicted differences smaller than the
    /// model's error are ties, and on a tie the larger vector amortises more. 0: strict.
    #[serde(default = "default_vector_tie")]
    pub vector_tie: f64,
    /// Within the chosen vector size, on a table that is not cache resident, the tuner
    /// takes the largest sub-batch whose prediction is within this share of that vector's
    /// best (on a resident table the smallest): the fitted Δsub, from four sub-batches in
    /// a noisy sitting, often puts b* at 8–16 where b = 32–64 measures best beyond the
    /// L2 (docs/results/model.md). 0: strict.
    #[serde(default = "default_vector_tie")]
    pub sub_batch_tie: f64,
    /// Whether the cache-pressure term Δcache·B enters the tuner's choice (it always
    /// enters [`Tuner::predict`]). Off by default: over the sixteen stored sittings of
    /// docs/results/model-sitting4.json it moved the choice to V = 64 or 128 in 8 of 32
    /// choices while the pooled best vector size was 256 (128 on l2fwd large, within 2%).
    #[serde(default)]
    pub cache_term: bool,
}

fn default_vector_tie() -> f64 {
    0.03
}

/// Which cache level a table's bytes fit, by the probe's sizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum CacheFit {
    /// Within the (private) L2: lookups hit in a few cycles, nothing worth hiding.
    L2,
    /// Beyond the L2, within the last-level cache: LLC hits are worth hiding, not resident.
    Llc,
    /// Beyond the last-level cache: lookups miss to memory, sub-batches have work to hide.
    Memory,
}

impl CacheFit {
    /// The level `table_bytes` fits, from the probe's L2 and LLC sizes (0 = unknown: then
    /// that level is skipped; both unknown → [`CacheFit::Llc`], the calibration decides).
    ///
    /// ```
    /// use pktvec_model::tuner::CacheFit;
    /// assert_eq!(CacheFit::of(58_304, 1 << 20, 32 << 20), CacheFit::L2);
    /// assert_eq!(CacheFit::of(7_762_460, 1 << 20, 32 << 20), CacheFit::Llc);
    /// assert_eq!(CacheFit::of(59_652_352, 1 << 20, 32 << 20), CacheFit::Memory);
    /// ```
    pub fn of(table_bytes: usize, l2: usize, llc: usize) -> CacheFit {
        if l2 > 0 && table_bytes <= l2 {
            CacheFit::L2
        } else if llc > 0 && table_bytes > llc {
            CacheFit::Memory
        } else {
            CacheFit::Llc
        }
    }
}

fn default_resident_stall_share() -> f64 {
    0.10
}

fn default_resident_max_sub_batch() -> usize {
    8
}

fn default_beyond_min_sub_batch() -> usize {
    32
}

fn default_profile_windows() -> usize {
    4
}

fn default_profile_drift() -> f64 {
    0.15
}

fn default_min_gain() -> f64 {
    0.05
}

fn default_confirm() -> usize {
    2
}

fn default_rounds() -> usize {
    3
}

impl Default for TunerConfig {
    fn default() -> Self {
        TunerConfig {
            vectors: vec![32, 64, 128, 256],
            sub_batches: vec![1, 4, 8, 16, 32, 64, 128],
            drift: 0.15,
            windows_per_try: 2,
            confirm_windows: default_confirm(),
            max_rounds: default_rounds(),
            min_gain: default_min_gain(),
            profile_drift: default_profile_drift(),
            profile_windows: default_profile_windows(),
            table_fit: None,
            resident_stall_share: default_resident_stall_share(),
            resident_max_sub_batch: default_resident_max_sub_batch(),
            beyond_min_sub_batch: default_beyond_min_sub_batch(),
            vector_tie: default_vector_tie(),
            sub_batch_tie: default_vector_tie(),
            cache_term: false,
        }
    }
}

/// What the tuner wants now.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Setting {
    /// Vector size.
    pub vector: usize,
    /// Sub-batch.
    pub sub_batch: usize,
}

/// The online tuner.
#[derive(Clone, Debug)]
pub struct Tuner {
    cfg: TunerConfig,
    calib: Calibration,
    scale: f64,
    current: Setting,
    exploring: Vec<Setting>,
    results: Vec<(Setting, f64)>,
    window: usize,
    acc: f64,
    decisions: u64,
    drifting: usize,
    drift_sign: f64,
    round: usize,
    centre: Setting,
    windows: u64,
    reference: Option<Vec<f64>>,
    ref_windows: Vec<Vec<f64>>,
    recent: std::collections::VecDeque<Vec<f64>>,
    skip_next: bool,
}

impl Tuner {
    /// A tuner starting at the calibration's best setting.
    pub fn new(cfg: TunerConfig, calib: Calibration) -> Self {
        let mut t = Tuner {
            current: Setting {
                vector: 256,
                sub_batch: 16,
            },
            cfg,
            calib,
            scale: 1.0,
            exploring: Vec::new(),
            results: Vec::new(),
            window: 0,
            acc: 0.0,
            decisions: 0,
            drifting: 0,
            drift_sign: 0.0,
            round: 0,
            centre: Setting {
                vector: 256,
                sub_batch: 16,
            },
            windows: 0,
            reference: None,
            ref_windows: Vec::new(),
            recent: std::collections::VecDeque::new(),
            skip_next: false,
        };
        t.current = t.best_predicted();
        t
    }

    /// Σ Δhide over the nodes (cycles per packet a sub-batch could hide) as a share of the
    /// predicted cycles per packet at the largest vector size and b = 1.
    pub fn stall_share(&self) -> f64 {
        let v = self.cfg.vectors.iter().copied().max().unwrap_or(256);
        let hide: f64 = self
            .calib
            .nodes
            .iter()
            .map(|(_, n)| n.stall.delta_hide)
            .sum();
        let total = self.calib.predict(v, 1, |_| 1.0);
        if total > 0.0 {
            hide / total
        } else {
            0.0
        }
    }

    /// Whether the table is treated as cache resident: the probe says it fits the private
    /// L2 ([`TunerConfig::table_fit`] = [`CacheFit::L2`]); beyond the L2 (LLC or memory)
    /// it is not; where the table's size is unknown (`None`), when the calibrated hideable
    /// stall is below [`TunerConfig::resident_stall_share`] of the cost (Δstall ≈ 0).
    /// (Until this round a table in the LLC was also left to the calibration; on this VM
    /// the fitted share of l3fwd's 1.2 MiB FIB flipped across the threshold with the noise
    /// and capped b at 8, while b = 32 measured best pooled over sixteen sittings.)
    ///
    /// ```
    /// use pktvec_model::batching::{Compute, Node, Stall};
    /// use pktvec_model::calibrate::Calibration;
    /// use pktvec_model::tuner::{Tuner, TunerConfig};
    /// let node = |hide: f64| Node {
    ///     compute: Compute { delta_shared: 2000.0, delta_necessary: 100.0, delta_cache: 0.0 },
    ///     stall: Stall { delta_fetch: hide, delta_hide: hide, delta_sub: 0.0, hide_span: 0.0 } };
    /// let calib = |hide| Calibration { nodes: vec![("lookup".into(), node(hide))] };
    /// // 10 of 118 cycles hideable (8.5%): resident; b is capped (8 by default).
    /// let t = Tuner::new(TunerConfig::default(), calib(10.0));
    /// assert!(t.cache_resident() && t.setting().sub_batch <= 8);
    /// // 200 of 308: beyond the caches, the largest b.
    /// let t = Tuner::new(TunerConfig::default(), calib(200.0));
    /// assert!(!t.cache_resident() && t.setting().sub_batch == 128);
    /// ```
    pub fn cache_resident(&self) -> bool {
        match self.cfg.table_fit {
            Some(CacheFit::L2) => true,
            Some(CacheFit::Llc) | Some(CacheFit::Memory) => false,
            None => self.stall_share() < self.cfg.resident_stall_share,
        }
    }

    /// Settings the predicted choice may take: b ≤ V; b ≤ `resident_max_sub_batch` on a
    /// cache-resident table, otherwise b ≥ `beyond_min_sub_batch` (lowered to the largest
    /// allowed sub-batch ≤ V when none reaches it, so every vector size keeps a setting).
    fn candidates(&self) -> Vec<Setting> {
        let resident = self.cache_resident();
        let cap = if resident {
            self.cfg.resident_max_sub_batch.max(1)
        } else {
            usize::MAX
        };
        let mut all = Vec::new();
        // Largest vectors first: on a tie the larger vector amortises more.
        for &v in self.cfg.vectors.iter().rev() {
            let floor = if resident {
                1
            } else {
                let fits = self.cfg.sub_batches.iter().copied().filter(|&b| b <= v);
                self.cfg.beyond_min_sub_batch.min(fits.max().unwrap_or(1))
            };
            for &b in &self.cfg.sub_batches {
                if b <= v && b <= cap && b >= floor {
                    all.push(Setting {
                        vector: v,
                        sub_batch: b,
                    });
                }
            }
        }
        all
    }

    /// The setting with the lowest predicted cycles per packet (among the
    /// [`cache_resident`](Self::cache_resident)-restricted ones), preferring the largest
    /// vector size whose best is within [`TunerConfig::vector_tie`] of it.
    pub fn best_predicted(&self) -> Setting {
        let all: Vec<(f64, Setting)> = self
            .candidates()
            .into_iter()
            .map(|s| (self.score(s), s))
            .collect();
        let Some(min) = all.iter().map(|a| a.0).min_by(f64::total_cmp) else {
            return self.current;
        };
        let limit = min * (1.0 + self.cfg.vector_tie.max(0.0));
        // Candidates come largest vector first: the first vector with a setting within the
        // limit wins, with its own best sub-batch.
        let Some(v) = all.iter().find(|a| a.0 <= limit).map(|a| a.1.vector) else {
            return self.current;
        };
        let at_v: Vec<(f64, Setting)> = all.iter().copied().filter(|a| a.1.vector == v).collect();
        let best_v = at_v
            .iter()
            .map(|a| a.0)
            .min_by(f64::total_cmp)
            .unwrap_or(min);
        let limit = best_v * (1.0 + self.cfg.sub_batch_tie.max(0.0));
        let near = at_v.iter().filter(|a| a.0 <= limit).map(|a| a.1);
        // Beyond the caches, the largest near-best sub-batch (latency to hide); on a
        // resident table, the smallest (the seeds: prefetching sub-batches hurt there).
        let pick = if self.cache_resident() {
            near.min_by_key(|s| s.sub_batch)
        } else {
            near.max_by_key(|s| s.sub_batch)
        };
        pick.unwrap_or(self.current)
    }

    /// The prediction the choice is made on: [`predict`](Self::predict), without the
    /// Δcache·B term unless [`TunerConfig::cache_term`].
    fn score(&self, s: Setting) -> f64 {
        if self.cfg.cache_term {
            return self.predict(s);
        }
        self.scale
            * self
                .calib
                .nodes
                .iter()
                .map(|(_, n)| {
                    let mut n = *n;
                    n.compute.delta_cache = 0.0;
                    n.cycles_per_packet(s.vector, s.sub_batch)
                })
                .sum::<f64>()
    }

    /// Predicted cycles per packet of a setting (model × the online scale factor).
    pub fn predict(&self, s: Setting) -> f64 {
        self.scale * self.calib.predict(s.vector, s.sub_batch, |_| 1.0)
    }

    /// The setting to run now.
    pub fn setting(&self) -> Setting {
        self.current
    }

    /// Decisions taken so far (explorations finished).
    pub fn decisions(&self) -> u64 {
        self.decisions
    }

    /// True while exploring.
    pub fn exploring(&self) -> bool {
        !self.exploring.is_empty() || !self.results.is_empty()
    }

    /// Windows observed so far.
    pub fn windows(&self) -> u64 {
        self.windows
    }

    /// The `k` settings with the lowest predicted cycles per packet, best first (larger
    /// vectors first on ties). A caller that can afford a few measurements confirms the
    /// choice among them ([`confirm`](Self::confirm)) instead of trusting predictions
    /// that differ by less than the measurement noise.
    ///
    /// ```
    /// use pktvec_model::batching::{Compute, Node, Stall};
    /// use pktvec_model::calibrate::Calibration;
    /// use pktvec_model::tuner::{Tuner, TunerConfig};
    /// let node = Node { compute: Compute { delta_shared: 2000.0, delta_necessary: 20.0, delta_cache: 0.0 },
    ///                   stall: Stall { delta_fetch: 50.0, delta_hide: 45.0, delta_sub: 0.0, hide_span: 0.0 } };
    /// let t = Tuner::new(TunerConfig::default(), Calibration { nodes: vec![("lookup".into(), node)] });
    /// let top = t.top_predicted(3);
    /// assert_eq!(top[0], t.setting());
    /// assert!(t.predict(top[0]) <= t.predict(top[2]));
    /// ```
    pub fn top_predicted(&self, k: usize) -> Vec<Setting> {
        let mut all: Vec<(f64, Setting)> = self
            .candidates()
            .into_iter()
            .map(|s| (self.score(s), s))
            .collect();
        // Stable sort: ties keep the larger-vector-first order.
        all.sort_by(|a, b| a.0.total_cmp(&b.0));
        all.into_iter().take(k).map(|(_, s)| s).collect()
    }

    /// The current setting and the `k − 1` allowed sub-batches nearest to it in the list
    /// [`TunerConfig::sub_batches`] at the same vector size (the smaller first on equal
    /// distance): what a caller that can afford a few measurements confirms
    /// ([`confirm`](Self::confirm)). Predicted differences between neighbouring sub-batches
    /// are often smaller than the model's error (docs/results/model.md: b = 32 and 64
    /// within 3% on l3fwd's 7 MiB FIB, in either order between sittings); the vector size
    /// is left to the model, whose Δshared/B is fitted well.
    ///
    /// ```
    /// use pktvec_model::batching::{Compute, Node, Stall};
    /// use pktvec_model::calibrate::Calibration;
    /// use pktvec_model::tuner::{CacheFit, Setting, Tuner, TunerConfig};
    /// let node = Node { compute: Compute { delta_shared: 2000.0, delta_necessary: 20.0, delta_cache: 0.0 },
    ///                   stall: Stall { delta_fetch: 50.0, delta_hide: 45.0, delta_sub: 0.0, hide_span: 0.0 } };
    /// let cfg = TunerConfig { table_fit: Some(CacheFit::Memory), ..TunerConfig::default() };
    /// let t = Tuner::new(cfg, Calibration { nodes: vec![("lookup".into(), node)] });
    /// // Beyond the L2 nothing below the floor (32): the choice, b = 128, and b = 64.
    /// let set = |b| Setting { vector: 256, sub_batch: b };
    /// assert_eq!(t.setting(), set(128));
    /// assert_eq!(t.sub_batch_neighbours(3), vec![set(128), set(64), set(32)]);
    /// ```
    pub fn sub_batch_neighbours(&self, k: usize) -> Vec<Setting> {
        let cur = self.current;
        let pos = |b: usize| self.cfg.sub_batches.iter().position(|&x| x == b);
        let at = pos(cur.sub_batch).unwrap_or(0) as isize;
        let mut near: Vec<(usize, Setting)> = self
            .candidates()
            .into_iter()
            .filter(|s| s.vector == cur.vector)
            .filter_map(|s| Some(((pos(s.sub_batch)? as isize - at).unsigned_abs(), s)))
            .collect();
        // Stable: equal distances keep the list's (ascending) order, the smaller first.
        near.sort_by_key(|n| n.0);
        let mut out = vec![cur];
        out.extend(near.into_iter().map(|n| n.1).filter(|&s| s != cur));
        out.truncate(k.max(1));
        out
    }

    /// Adopts the best of measured `(setting, cycles per packet)` pairs (e.g. the
    /// [`top_predicted`](Self::top_predicted) settings, each measured) and rescales the
    /// model to it; returns it. Ignores an empty list.
    pub fn confirm(&mut self, measured: &[(Setting, f64)]) -> Setting {
        if let Some(&(best, c)) = measured.iter().min_by(|a, b| a.1.total_cmp(&b.1)) {
            self.adopt(best, c);
        }
        self.current
    }

    fn adopt(&mut self, best: Setting, c: f64) {
        let raw = self.calib.predict(best.vector, best.sub_batch, |_| 1.0);
        if raw > 0.0 {
            self.scale = c / raw;
        }
        self.current = best;
    }

    /// One exploration round around `centre`: the centre and its neighbours in B and b
    /// not measured yet in this exploration.
    fn round_around(&mut self, centre: Setting) {
        let nb = |xs: &[usize], x: usize| -> Vec<usize> {
            let i = xs.iter().position(|&y| y == x).unwrap_or(0);
            xs[i.saturating_sub(1)..(i + 2).min(xs.len())].to_vec()
        };
        let mut tries = Vec::new();
        for v in nb(&self.cfg.vectors, centre.vector) {
            for b in nb(&self.cfg.sub_batches, centre.sub_batch) {
                let s = Setting {
                    vector: v,
                    sub_batch: b,
                };
                if b <= v && !self.results.iter().any(|r| r.0 == s) {
                    tries.push(s);
                }
            }
        }
        // Measure the centre first (popped last = pushed first is measured last; reverse
        // so the centre, if new, is measured first).
        tries.retain(|&s| s != centre);
        if !self.results.iter().any(|r| r.0 == centre) {
            tries.push(centre);
        }
        self.centre = centre;
        self.round += 1;
        self.exploring = tries;
    }

    /// Feeds one window's measured cycles per packet (at [`setting`](Self::setting));
    /// returns the setting for the next window.
    ///
    /// Outside exploration, a window whose cycles per packet differ from the (rescaled)
    /// prediction by more than `drift`, `confirm_windows` times in a row with the same
    /// sign, starts an exploration: rounds of the current setting and its neighbours,
    /// `windows_per_try` windows each, re-centred on the best measured up to `max_rounds`
    /// times (moving only for a gain above `min_gain`); then the best measured is kept and
    /// the model rescaled to it.
    pub fn observe(&mut self, cycles_per_packet: f64) -> Setting {
        self.windows += 1;
        if self.exploring() {
            self.acc += cycles_per_packet;
            self.window += 1;
            if self.window < self.cfg.windows_per_try {
                return self.current;
            }
            self.results
                .push((self.current, self.acc / self.window as f64));
            self.window = 0;
            self.acc = 0.0;
            if let Some(next) = self.exploring.pop() {
                self.current = next;
                return next;
            }
            let (mut best, mut c) = self
                .results
                .iter()
                .copied()
                .min_by(|a, b| a.1.total_cmp(&b.1))
                .expect("at least one result");
            if let Some(&(centre, cc)) = self.results.iter().find(|r| r.0 == self.centre) {
                if c > cc * (1.0 - self.cfg.min_gain) {
                    (best, c) = (centre, cc);
                }
            }
            if best != self.centre && self.round < self.cfg.max_rounds.max(1) {
                self.round_around(best);
                if let Some(next) = self.exploring.pop() {
                    self.current = next;
                    return next;
                }
            }
            // Done: keep the best measured, rescale the model to it.
            self.adopt(best, c);
            self.results.clear();
            self.round = 0;
            self.decisions += 1;
            return best;
        }
        let predicted = self.predict(self.current);
        let rel = if predicted > 0.0 {
            (cycles_per_packet - predicted) / predicted
        } else {
            0.0
        };
        if rel.abs() > self.cfg.drift {
            if self.drifting > 0 && rel.signum() != self.drift_sign {
                self.drifting = 0;
            }
            self.drift_sign = rel.signum();
            self.drifting += 1;
        } else {
            self.drifting = 0;
        }
        if self.drifting >= self.cfg.confirm_windows.max(1) {
            self.start_exploration();
        }
        self.current
    }

    fn start_exploration(&mut self) {
        self.drifting = 0;
        self.round = 0;
        let c = self.current;
        self.round_around(c);
        self.current = self.exploring.pop().expect("the current setting at least");
    }

    /// Like [`observe`](Self::observe), but a change is detected from a traffic *profile*
    /// instead of the absolute cycles: any vector of shares that a slower or faster machine
    /// leaves alone, e.g. each node's share of the packets and of the cycles (a new path mix
    /// moves the packet shares, a table that outgrows the caches moves the lookup node's
    /// cycle share). After each decision, one window is skipped (the switch's transient) and
    /// the mean of the next `profile_windows` windows is the reference; then the mean of the
    /// last `profile_windows` windows farther than `profile_drift` (L1 distance) from it
    /// starts an exploration, which runs as in `observe` on the cycles. On a machine whose
    /// speed drifts by tens of percent, absolute cycles cannot tell a traffic change from
    /// the machine.
    ///
    /// ```
    /// use pktvec_model::batching::{Compute, Node, Stall};
    /// use pktvec_model::calibrate::Calibration;
    /// use pktvec_model::tuner::{Tuner, TunerConfig};
    /// let node = Node { compute: Compute { delta_shared: 2000.0, delta_necessary: 20.0, delta_cache: 0.0 },
    ///                   stall: Stall { delta_fetch: 50.0, delta_hide: 45.0, delta_sub: 0.0, hide_span: 0.0 } };
    /// let mut t = Tuner::new(TunerConfig::default(), Calibration { nodes: vec![("lookup".into(), node)] });
    /// // The machine slows down 1.5× but the profile is the same: no exploration.
    /// for _ in 0..5 { t.observe_profile(90.0, &[0.5, 0.5]); }
    /// assert!(!t.exploring());
    /// // The mix changes: half of the packets now take another node.
    /// for _ in 0..4 { t.observe_profile(60.0, &[0.25, 0.75]); }
    /// assert!(t.exploring());
    /// ```
    pub fn observe_profile(&mut self, cycles_per_packet: f64, profile: &[f64]) -> Setting {
        if self.exploring() {
            let s = self.observe(cycles_per_packet);
            if !self.exploring() {
                self.reference = None;
                self.ref_windows.clear();
                self.recent.clear();
                self.skip_next = true;
            }
            return s;
        }
        self.windows += 1;
        if self.skip_next {
            self.skip_next = false;
            return self.current;
        }
        let n = self.cfg.profile_windows.max(1);
        let mean = |xs: &mut dyn Iterator<Item = &Vec<f64>>| -> Vec<f64> {
            let mut m: Vec<f64> = Vec::new();
            let mut k: f64 = 0.0;
            for x in xs {
                if m.len() < x.len() {
                    m.resize(x.len(), 0.0);
                }
                for (a, b) in m.iter_mut().zip(x) {
                    *a += b;
                }
                k += 1.0;
            }
            m.iter_mut().for_each(|a| *a /= k.max(1.0));
            m
        };
        let Some(r) = &self.reference else {
            self.ref_windows.push(profile.to_vec());
            if self.ref_windows.len() >= n {
                self.reference = Some(mean(&mut self.ref_windows.iter()));
                self.ref_windows.clear();
            }
            return self.current;
        };
        self.recent.push_back(profile.to_vec());
        if self.recent.len() > n {
            self.recent.pop_front();
        }
        if self.recent.len() < n {
            return self.current;
        }
        let cur = mean(&mut self.recent.iter());
        let d: f64 = r.iter().zip(&cur).map(|(a, b)| (a - b).abs()).sum::<f64>()
            + r.len().abs_diff(cur.len()) as f64;
        if d > self.cfg.profile_drift {
            self.reference = None;
            self.recent.clear();
            self.start_exploration();
        }
        self.current
    }
}

/// Settings of the [`BatchTuner`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BatchTunerConfig {
    /// Batch sizes the batcher may take (besides off); each at most the vector size.
    pub batches: Vec<usize>,
    /// A batch size is chosen over "off" (and a measured setting over the model's choice
    /// during exploration) only when it is cheaper by more than this share: switching the
    /// batcher on holds packets, so within the noise, stay off.
    pub min_gain: f64,
    /// Settings measured per re-decision: the model's best `explore`, and "off" if it is
    /// not among them (bounded exploration: at most `explore` + 1 settings).
    pub explore: usize,
    /// Windows measured per explored setting (their median is used).
    pub windows_per_try: usize,
    /// L1 distance between the window's path shares and the shares of the last decision
    /// that counts as a traffic change.
    pub share_drift: f64,
    /// Consecutive windows beyond `share_drift` before re-deciding.
    pub confirm_windows: usize,
}

impl Default for BatchTunerConfig {
    fn default() -> Self {
        BatchTunerConfig {
            batches: vec![32, 64, 128, 256],
            min_gain: 0.03,
            explore: 2,
            windows_per_try: 3,
            share_drift: 0.2,
            confirm_windows: 2,
        }
    }
}

/// The tuner's third dimension: the path batcher off or its batch size, for the current
/// path mix, from the PPB model ([`BatchedGraph`]: what the per-call cost of each node
/// costs per packet when a vector splits into its paths, off, or runs one path, on).
///
/// Online ([`observe`](Self::observe)), each window's path shares (from the nodes'
/// packets, [`BatchedGraph::shares_from_node_packets`]) are compared with the shares of
/// the last decision; a change beyond [`BatchTunerConfig::share_drift`] for
/// `confirm_windows` windows starts a bounded exploration: the model's best `explore`
/// settings for the new mix and "off", `windows_per_try` windows each; the best measured is kept
/// (the model's first choice unless another is better by `min_gain`). The machine's own
/// speed swings leave the shares alone, so they start nothing.
///
/// ```
/// use pktvec_model::ppb::{BatchedGraph, BatchedPath, Batching, CallCost};
/// use pktvec_model::tuner::{BatchTuner, BatchTunerConfig};
/// let node = |name: &str, per_call: f64, off: f64, on: f64| CallCost {
///     name: name.into(), per_call, per_packet_off: off, per_packet_on: on, split: 0.0 };
/// let model = BatchedGraph {
///     // The batcher costs 8 cycles per packet more when on.
///     nodes: vec![node("batcher", 500.0, 20.0, 28.0), node("ip4", 6000.0, 30.0, 30.0),
///                 node("ip6", 6000.0, 30.0, 30.0)],
///     paths: vec![BatchedPath { name: "ipv4".into(), off: vec![0, 1], on: vec![0, 1] },
///                 BatchedPath { name: "ipv6".into(), off: vec![0, 2], on: vec![0, 2] }],
///     elephant_share: 0.05 };
/// let t = BatchTuner::new(BatchTunerConfig::default(), model, 256, &[0.5, 0.5]);
/// // Alternating IPv4/IPv6: batching halves the per-call cost of each path's nodes.
/// assert_eq!(t.setting(), Batching::Batch(256));
/// // One path: nothing to gain, the batcher's own cost remains: off.
/// assert_eq!(t.best_predicted(&[1.0, 0.0]), Batching::Off);
/// ```
#[derive(Clone, Debug)]
pub struct BatchTuner {
    cfg: BatchTunerConfig,
    model: BatchedGraph,
    vector: usize,
    current: Batching,
    decided_for: Vec<f64>,
    drifting: usize,
    exploring: Vec<Batching>,
    first: Option<Batching>,
    results: Vec<(Batching, f64)>,
    tries: Vec<f64>,
    decisions: u64,
    windows: u64,
}

impl BatchTuner {
    /// A tuner for vectors of `vector` packets, starting at the model's choice for the
    /// path shares `shares`.
    pub fn new(
        cfg: BatchTunerConfig,
        model: BatchedGraph,
        vector: usize,
        shares: &[f64],
    ) -> BatchTuner {
        let mut t = BatchTuner {
            cfg,
            model,
            vector,
            current: Batching::Off,
            decided_for: shares.to_vec(),
            drifting: 0,
            exploring: Vec::new(),
            first: None,
            results: Vec::new(),
            tries: Vec::new(),
            decisions: 0,
            windows: 0,
        };
        t.current = t.best_predicted(shares);
        t
    }

    /// The settings the batcher may take at this vector size: off and each batch size
    /// up to the vector size.
    pub fn candidates(&self) -> Vec<Batching> {
        std::iter::once(Batching::Off)
            .chain(
                self.cfg
                    .batches
                    .iter()
                    .filter(|&&b| b <= self.vector)
                    .map(|&b| Batching::Batch(b)),
            )
            .collect()
    }

    /// Predicted cycles per packet of a setting for the path shares.
    pub fn predict(&self, shares: &[f64], b: Batching) -> f64 {
        self.model.cycles_per_packet(shares, self.vector, b)
    }

    /// The settings by predicted cycles per packet, best first; "off" is first unless a
    /// batch size is predicted cheaper by more than `min_gain`.
    pub fn ranked(&self, shares: &[f64]) -> Vec<(Batching, f64)> {
        let mut all: Vec<(Batching, f64)> = self
            .candidates()
            .into_iter()
            .map(|b| (b, self.predict(shares, b)))
            .collect();
        let off = all[0].1;
        let margin = 1.0 - self.cfg.min_gain.max(0.0);
        // Off competes with its cost lowered by the margin (hysteresis towards off).
        all.sort_by(|a, b| {
            let k = |x: &(Batching, f64)| {
                if x.0 == Batching::Off {
                    off * margin
                } else {
                    x.1
                }
            };
            k(a).total_cmp(&k(b))
        });
        all
    }

    /// The model's choice for the path shares.
    pub fn best_predicted(&self, shares: &[f64]) -> Batching {
        self.ranked(shares)[0].0
    }

    /// The setting to run now.
    pub fn setting(&self) -> Batching {
        self.current
    }

    /// The model.
    pub fn model(&self) -> &BatchedGraph {
        &self.model
    }

    /// True while exploring.
    pub fn exploring(&self) -> bool {
        self.first.is_some()
    }

    /// Re-decisions finished.
    pub fn decisions(&self) -> u64 {
        self.decisions
    }

    /// Windows observed.
    pub fn windows(&self) -> u64 {
        self.windows
    }

    /// Feeds one window: its measured cycles per packet (at [`setting`](Self::setting))
    /// and its path shares; returns the setting for the next window.
    pub fn observe(&mut self, cycles_per_packet: f64, shares: &[f64]) -> Batching {
        self.windows += 1;
        if let Some(first) = self.first {
            self.tries.push(cycles_per_packet);
            if self.tries.len() < self.cfg.windows_per_try.max(1) {
                return self.current;
            }
            // The median of the setting's windows: one window hit by another process
            // does not decide.
            self.tries.sort_by(f64::total_cmp);
            let m = self.tries[self.tries.len() / 2];
            self.tries.clear();
            self.results.push((self.current, m));
            if let Some(next) = self.exploring.pop() {
                self.current = next;
                return next;
            }
            // Done: the model's first choice unless another measured better by min_gain.
            let first_c = self
                .results
                .iter()
                .find(|r| r.0 == first)
                .map_or(f64::INFINITY, |r| r.1);
            let best = self
                .results
                .iter()
                .copied()
                .min_by(|a, b| a.1.total_cmp(&b.1))
                .expect("at least one result");
            self.current = if best.1 < first_c * (1.0 - self.cfg.min_gain) {
                best.0
            } else {
                first
            };
            self.results.clear();
            self.first = None;
            self.decisions += 1;
            return self.current;
        }
        let d: f64 = self
            .decided_for
            .iter()
            .zip(shares)
            .map(|(a, b)| (a - b).abs())
            .sum::<f64>()
            + self.decided_for.len().abs_diff(shares.len()) as f64;
        if d > self.cfg.share_drift {
            self.drifting += 1;
        } else {
            self.drifting = 0;
        }
        if self.drifting >= self.cfg.confirm_windows.max(1) {
            self.drifting = 0;
            self.decided_for = shares.to_vec();
            let mut top: Vec<Batching> = self
                .ranked(shares)
                .into_iter()
                .take(self.cfg.explore.max(1))
                .map(|r| r.0)
                .collect();
            self.first = Some(top[0]);
            // "Off" is always measured too: the baseline the batcher must beat.
            if !top.contains(&Batching::Off) {
                top.push(Batching::Off);
            }
            top.reverse(); // popped from the back: the model's best first
            self.current = top.pop().expect("one candidate");
            self.exploring = top;
        }
        self.current
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batching::{Compute, Node, Stall};

    fn calib(fetch: f64) -> Calibration {
        Calibration {
            nodes: vec![(
                "lookup".into(),
                Node {
                    compute: Compute {
                        delta_shared: 2000.0,
                        delta_necessary: 20.0,
                        delta_cache: 0.0,
                    },
                    stall: Stall {
                        delta_fetch: fetch,
                        delta_hide: fetch * 0.9,
                        delta_sub: 0.0,
                        hide_span: 0.0,
                    },
                },
            )],
        }
    }

    #[test]
    fn picks_large_sub_batches_only_when_lookups_miss() {
        let t = Tuner::new(TunerConfig::default(), calib(100.0));
        assert_eq!(
            t.setting(),
            Setting {
                vector: 256,
                sub_batch: 128
            }
        );
        // A cache-resident table: no stall to hide; the model prefers no sub-batching cost
        // (all b equal): the first, smallest b wins ties.
        let t = Tuner::new(TunerConfig::default(), calib(0.0));
        assert_eq!(t.setting().sub_batch, 1);
    }

    /// A synthetic calibration in the shape the tune example fits: a lookup node whose
    /// hideable stall is `hide` cycles per packet and whose sub-batch costs `sub` cycles
    /// per packet per packet of sub-batch, plus an input node without lookups.
    fn calib_table(hide: f64, sub: f64) -> Calibration {
        let node = |shared, necessary, hide, sub| Node {
            compute: Compute {
                delta_shared: shared,
                delta_necessary: necessary,
                delta_cache: 0.0,
            },
            stall: Stall {
                delta_fetch: hide,
                delta_hide: hide,
                delta_sub: sub,
                hide_span: 0.0,
            },
        };
        Calibration {
            nodes: vec![
                ("input".into(), node(500.0, 27.0, 0.0, 0.0)),
                ("lookup".into(), node(3000.0, 60.0, hide, sub)),
            ],
        }
    }

    #[test]
    fn small_table_small_sub_batch_large_table_large_sub_batch() {
        // Small, cache-resident table (like l2fwd with 4,096 stations): 10 hideable cycles
        // of ≈ 120, a small sub-batch cost: resident, b capped and small.
        let t = Tuner::new(TunerConfig::default(), calib_table(10.0, 0.3));
        assert!(t.cache_resident());
        assert!(t.setting().sub_batch <= 8, "{:?}", t.setting());
        assert_eq!(t.setting().vector, 256);
        // Even without the explicit cap, Δsub alone moves the choice to b* = √(10/0.3) ≈ 5.8,
        // of the grid's {4, 8}: 8 (by 0.05 cycles per packet; strict, no sub-batch tie).
        let uncapped = TunerConfig {
            resident_max_sub_batch: usize::MAX,
            sub_batch_tie: 0.0,
            ..TunerConfig::default()
        };
        let t = Tuner::new(uncapped.clone(), calib_table(10.0, 0.3));
        assert_eq!(t.setting().sub_batch, 8, "{:?}", t.setting());
        // Without Δsub the model alone would take the largest b; the cap stops it.
        let t = Tuner::new(uncapped, calib_table(10.0, 0.0));
        assert_eq!(t.setting().sub_batch, 128);
        // With the cap: the smallest sub-batch within `sub_batch_tie` of the capped best
        // (b = 8 hides 1.25 cycles more than b = 4 of ≈ 120: a tie on a resident table).
        let t = Tuner::new(TunerConfig::default(), calib_table(10.0, 0.0));
        assert_eq!(t.setting().sub_batch, 4);
        assert!(t.top_predicted(40).iter().all(|s| s.sub_batch <= 8));
        // Large table beyond the caches (like l2fwd with 4M stations): 400 hideable cycles,
        // the same Δsub: not resident, large b (√(400/0.3) ≈ 37 → 32 of the grid).
        let t = Tuner::new(TunerConfig::default(), calib_table(400.0, 0.3));
        assert!(!t.cache_resident());
        assert!(t.setting().sub_batch >= 32, "{:?}", t.setting());
        let t = Tuner::new(TunerConfig::default(), calib_table(400.0, 0.0));
        assert_eq!(t.setting().sub_batch, 128);
        // The probe says the table fits the L2: resident whatever the calibration says;
        // beyond the LLC: never resident; in between: the calibration decides.
        let with = |fit| TunerConfig {
            table_fit: Some(fit),
            ..TunerConfig::default()
        };
        let t = Tuner::new(with(CacheFit::L2), calib_table(400.0, 0.0));
        assert!(t.cache_resident());
        assert_eq!(t.setting().sub_batch, 8);
        let t = Tuner::new(with(CacheFit::Memory), calib_table(10.0, 0.0));
        assert!(!t.cache_resident());
        assert_eq!(t.setting().sub_batch, 128);
        // Beyond the L2, within the LLC: not resident whatever the calibration says.
        let t = Tuner::new(with(CacheFit::Llc), calib_table(10.0, 0.0));
        assert!(!t.cache_resident());
        let t = Tuner::new(with(CacheFit::Llc), calib_table(400.0, 0.0));
        assert!(!t.cache_resident());
    }

    #[test]
    fn near_ties_go_to_the_larger_vector() {
        // Δcache makes V = 128 predicted 1% cheaper than V = 256 (124.6 vs 125.8 cycles):
        // within the tie margin.
        let node = Node {
            compute: Compute {
                delta_shared: 2000.0,
                delta_necessary: 100.0,
                delta_cache: 0.07,
            },
            stall: Stall::default(),
        };
        let c = Calibration {
            nodes: vec![("n".into(), node)],
        };
        let t = Tuner::new(TunerConfig::default(), c.clone());
        assert_eq!(t.setting().vector, 256);
        // Strict, with Δcache in the choice: the smaller vector.
        let strict = TunerConfig {
            vector_tie: 0.0,
            cache_term: true,
            ..TunerConfig::default()
        };
        let t = Tuner::new(strict, c.clone());
        assert_eq!(t.setting().vector, 128);
        // Strict, Δcache left out of the choice (the default): 256 again.
        let t = Tuner::new(
            TunerConfig {
                vector_tie: 0.0,
                ..TunerConfig::default()
            },
            c,
        );
        assert_eq!(t.setting().vector, 256);
    }

    #[test]
    fn beyond_the_l2_the_sub_batch_has_a_floor() {
        // Beyond the L2 with a fitted Δsub that puts the model's minimum at b = 3–4
        // (√(10/1) ≈ 3.2): the floor lifts the choice to b ≥ 32.
        let c = calib_table(10.0, 1.0);
        let cfg = |fit, floor| TunerConfig {
            table_fit: Some(fit),
            beyond_min_sub_batch: floor,
            ..TunerConfig::default()
        };
        let free = Tuner::new(cfg(CacheFit::Llc, 1), c.clone()).setting();
        assert!(free.sub_batch <= 8, "{free:?}");
        for fit in [CacheFit::Llc, CacheFit::Memory] {
            let t = Tuner::new(cfg(fit, 32), c.clone());
            assert!(t.setting().sub_batch >= 32, "{:?}", t.setting());
            assert!(t.top_predicted(50).iter().all(|s| s.sub_batch >= 32));
        }
        // The floor does not apply to a resident table (there the cap does).
        let t = Tuner::new(cfg(CacheFit::L2, 32), c.clone());
        assert!(t.setting().sub_batch <= 8);
        // A vector smaller than the floor keeps its largest sub-batch (b = V).
        let small = TunerConfig {
            vectors: vec![16],
            ..cfg(CacheFit::Memory, 32)
        };
        let t = Tuner::new(small, c);
        assert_eq!(
            t.setting(),
            Setting {
                vector: 16,
                sub_batch: 16
            }
        );
    }

    #[test]
    fn near_best_sub_batches_go_to_the_larger_beyond_the_caches() {
        // A table in the LLC: b* = √(40/0.15) ≈ 16 by the model, b = 32 within 1%.
        let c = calib_table(40.0, 0.15);
        let cfg = TunerConfig {
            table_fit: Some(CacheFit::Llc),
            ..TunerConfig::default()
        };
        let strict = TunerConfig {
            sub_batch_tie: 0.0,
            beyond_min_sub_batch: 1,
            ..cfg.clone()
        };
        let s = Tuner::new(strict, c.clone()).setting();
        let t = Tuner::new(cfg, c.clone());
        assert_eq!(s.sub_batch, 16, "strict: the model's own minimum");
        assert!(t.setting().sub_batch > 16, "{:?}", t.setting());
        assert!(t.predict(t.setting()) <= t.predict(s) * 1.03);
        // The same calibration for an L2-resident table: the smallest near-best, ≤ 8.
        let t = Tuner::new(
            TunerConfig {
                table_fit: Some(CacheFit::L2),
                ..TunerConfig::default()
            },
            c,
        );
        assert!(t.setting().sub_batch <= 8);
    }

    #[test]
    fn re_decides_after_a_change_within_bounded_windows() {
        let truth = calib(100.0);
        let mut t = Tuner::new(TunerConfig::default(), calib(100.0));
        // The table grows: everything costs 1.5× the model.
        let mut windows = 0;
        let mut s = t.setting();
        loop {
            let c = 1.5 * truth.predict(s.vector, s.sub_batch, |_| 1.0);
            s = t.observe(c);
            windows += 1;
            if t.decisions() == 1 {
                break;
            }
            // confirm_windows + max_rounds rounds of at most 9 settings × windows_per_try.
            assert!(windows <= 2 + 3 * 9 * 2, "bounded exploration");
        }
        // Settled: no more exploration while the model (rescaled) matches.
        let c = 1.5 * truth.predict(s.vector, s.sub_batch, |_| 1.0);
        assert_eq!(t.observe(c), s);
        assert!(!t.exploring());
    }

    #[test]
    fn one_noisy_window_does_not_explore() {
        let truth = calib(100.0);
        let mut t = Tuner::new(TunerConfig::default(), calib(100.0));
        let s = t.setting();
        let c = truth.predict(s.vector, s.sub_batch, |_| 1.0);
        assert_eq!(t.observe(2.0 * c), s);
        assert_eq!(t.observe(c), s);
        assert_eq!(t.observe(2.0 * c), s);
        assert!(!t.exploring());
    }

    #[test]
    fn re_centres_on_the_best_measured_until_it_stops_moving() {
        // The model believes in b = 128; in truth every sub-batch above 1 costs more
        // (a cache-resident table): the rounds walk b down to 1.
        let mut t = Tuner::new(TunerConfig::default(), calib(100.0));
        assert_eq!(t.setting().sub_batch, 128);
        let truth =
            |s: Setting| 30.0 + 2000.0 / s.vector as f64 + 3.0 * (s.sub_batch as f64).log2();
        let mut s = t.setting();
        for _ in 0..200 {
            s = t.observe(truth(s));
            if t.decisions() == 1 {
                break;
            }
        }
        assert_eq!(t.decisions(), 1);
        assert_eq!(s.vector, 256);
        assert!(s.sub_batch <= 16, "walked down from 128: {s:?}");
    }

    #[test]
    fn confirm_adopts_the_best_measured_of_the_top_k() {
        let mut t = Tuner::new(TunerConfig::default(), calib(100.0));
        let top = t.top_predicted(3);
        assert_eq!(top.len(), 3);
        let m: Vec<(Setting, f64)> = top
            .iter()
            .enumerate()
            .map(|(i, &s)| (s, 100.0 - i as f64))
            .collect();
        assert_eq!(t.confirm(&m), top[2]);
        assert!(
            (t.predict(top[2]) - 98.0).abs() < 1e-9,
            "rescaled to the measurement"
        );
    }

    /// A batched l3fwd-like graph: the batcher, a shared output node, and one node per
    /// path whose per-call cost the batcher can amortise.
    fn batched(batcher_on_extra: f64) -> BatchedGraph {
        use crate::ppb::CallCost;
        let node = |name: &str, per_call: f64, off: f64, on: f64| CallCost {
            name: name.into(),
            per_call,
            per_packet_off: off,
            per_packet_on: on,
            split: 0.0,
        };
        BatchedGraph {
            nodes: vec![
                node("batcher", 700.0, 25.0, 25.0 + batcher_on_extra),
                node("ethernet-input", 900.0, 40.0, 40.0),
                node("ip4", 8000.0, 80.0, 80.0),
                node("ip6", 9000.0, 120.0, 120.0),
                node("output", 1500.0, 10.0, 10.0),
            ],
            paths: crate::ppb::ipv4_ipv6_paths(),
            elephant_share: 0.05,
        }
    }

    #[test]
    fn batcher_decision_follows_the_model() {
        let alt = [0.5, 0.5];
        let single = [1.0, 0.0];
        // The batcher on costs 45 cycles per packet more (≈ what ethernet-input saves).
        let t = BatchTuner::new(BatchTunerConfig::default(), batched(45.0), 256, &alt);
        // The choice is the model's minimum (with the hysteresis towards off).
        let ranked = t.ranked(&alt);
        let best_batch = ranked
            .iter()
            .filter(|r| r.0 != Batching::Off)
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .unwrap();
        let off = t.predict(&alt, Batching::Off);
        assert_eq!(
            best_batch.0,
            Batching::Batch(256),
            "largest batch amortises most"
        );
        assert!(best_batch.1 < off * 0.97, "{best_batch:?} vs off {off}");
        assert_eq!(t.setting(), Batching::Batch(256));
        // Single path: batching saves no per-call cost (the path's vectors are whole
        // anyway) and smaller batches add calls: off.
        assert_eq!(t.best_predicted(&single), Batching::Off);
        assert!(t.predict(&single, Batching::Batch(32)) > t.predict(&single, Batching::Batch(256)));
        // A batcher twice as costly: off on alternating traffic too.
        let t = BatchTuner::new(BatchTunerConfig::default(), batched(200.0), 256, &alt);
        assert_eq!(t.setting(), Batching::Off);
        // Vectors of 64: batch sizes above 64 are not candidates.
        let t = BatchTuner::new(BatchTunerConfig::default(), batched(45.0), 64, &alt);
        assert!(!t.candidates().contains(&Batching::Batch(128)));
        assert_eq!(t.setting(), Batching::Batch(64));
    }

    #[test]
    fn batcher_tuner_re_decides_on_a_mix_change_and_settles() {
        let model = batched(45.0);
        // The machine runs 1.3× slower than the model predicts; the truth has the model's
        // shape.
        let truth = |shares: &[f64], b: Batching| 1.3 * model.cycles_per_packet(shares, 256, b);
        let cfg = BatchTunerConfig::default();
        let bound = cfg.confirm_windows + (cfg.explore + 1) * cfg.windows_per_try;
        let mut t = BatchTuner::new(cfg, model.clone(), 256, &[1.0, 0.0]);
        assert_eq!(t.setting(), Batching::Off);
        // Single path, slower machine, small share noise: no exploration.
        for w in 0..20 {
            let s = [1.0 - 0.01 * (w % 3) as f64, 0.01 * (w % 3) as f64];
            t.observe(truth(&s, t.setting()) * (1.0 + 0.2 * (w % 2) as f64), &s);
            assert!(!t.exploring() && t.decisions() == 0);
        }
        // Alternating: re-decided within the bound, to a batch size, and stays there.
        let alt = [0.5, 0.5];
        let mut n = 0;
        while t.decisions() == 0 {
            t.observe(truth(&alt, t.setting()), &alt);
            n += 1;
            assert!(n <= bound, "bounded exploration");
        }
        assert_eq!(t.setting(), Batching::Batch(256));
        for _ in 0..10 {
            t.observe(truth(&alt, t.setting()), &alt);
        }
        assert_eq!((t.decisions(), t.setting()), (1, Batching::Batch(256)));
        // Back to one path: off again.
        let one = [1.0, 0.0];
        while t.decisions() == 1 {
            t.observe(truth(&one, t.setting()), &one);
        }
        assert_eq!(t.setting(), Batching::Off);
        // A measurement that contradicts the model wins the exploration: on alternating
        // traffic, if batching measured 20% worse than off, the tuner keeps off.
        let mut t = BatchTuner::new(BatchTunerConfig::default(), model.clone(), 256, &one);
        while t.decisions() == 0 {
            let s = t.setting();
            let c = truth(&alt, s) * if s == Batching::Off { 1.0 } else { 1.4 };
            t.observe(c, &alt);
        }
        assert_eq!(t.setting(), Batching::Off);
    }
}
