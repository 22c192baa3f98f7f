//! The tuner: picks vector size B and sub-batch b from a calibration, and re-decides
//! online. Live cycles per packet are compared with the prediction; when they drift by more
//! than a threshold (the traffic mix or the table size changed), it explores a bounded set
//! of neighbours of the current choice, a few vectors each, keeps the best measured, and
//! rescales the model to the new level.

use crate::calibrate::Calibration;
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
}

impl Default for TunerConfig {
    fn default() -> Self {
        TunerConfig {
            vectors: vec![32, 64, 128, 256],
            sub_batches: vec![1, 4, 8, 16, 32, 64, 128],
            drift: 0.15,
            windows_per_try: 2,
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
        };
        t.current = t.best_predicted();
        t
    }

    /// The setting with the lowest predicted cycles per packet.
    pub fn best_predicted(&self) -> Setting {
        let mut best = (f64::INFINITY, self.current);
        // Largest vectors first: on a tie the larger vector amortises more.
        for &v in self.cfg.vectors.iter().rev() {
            for &b in &self.cfg.sub_batches {
                if b > v {
                    continue;
                }
                let c = self.predict(Setting {
                    vector: v,
                    sub_batch: b,
                });
                if c < best.0 {
                    best = (
                        c,
                        Setting {
                            vector: v,
                            sub_batch: b,
                        },
                    );
                }
            }
        }
        best.1
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

    /// Feeds one window's measured cycles per packet (at [`setting`](Self::setting));
    /// returns the setting for the next window.
    pub fn observe(&mut self, cycles_per_packet: f64) -> Setting {
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
            // Done: keep the best measured, rescale the model to it.
            let (best, c) = self
                .results
                .iter()
                .copied()
                .min_by(|a, b| a.1.total_cmp(&b.1))
                .expect("at least one result");
            let raw = self.calib.predict(best.vector, best.sub_batch, |_| 1.0);
            if raw > 0.0 {
                self.scale = c / raw;
            }
            self.current = best;
            self.results.clear();
            self.decisions += 1;
            return best;
        }
        let predicted = self.predict(self.current);
        if predicted > 0.0 && ((cycles_per_packet - predicted) / predicted).abs() > self.cfg.drift {
            // Bounded exploration: the current setting, its neighbours in b and in B.
            let nb = |xs: &[usize], x: usize| -> Vec<usize> {
                let i = xs.iter().position(|&y| y == x).unwrap_or(0);
                xs[i.saturating_sub(1)..(i + 2).min(xs.len())].to_vec()
            };
            let mut tries = Vec::new();
            for v in nb(&self.cfg.vectors, self.current.vector) {
                for b in nb(&self.cfg.sub_batches, self.current.sub_batch) {
                    if b <= v {
                        tries.push(Setting {
                            vector: v,
                            sub_batch: b,
                        });
                    }
                }
            }
            self.exploring = tries;
            self.current = self.exploring.pop().expect("the current setting at least");
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
            assert!(windows < 40, "bounded exploration");
        }
        // Settled: no more exploration while the model (rescaled) matches.
        let c = 1.5 * truth.predict(s.vector, s.sub_batch, |_| 1.0);
        assert_eq!(t.observe(c), s);
        assert!(!t.exploring());
    }
}
