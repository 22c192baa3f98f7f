//! Pairs of single passes, pktvec's and a DPDK harness's back to back: how the lookup
//! areas (`lpm4`, `lpm6`, `hash`) get their headline ratios on a host whose memory can
//! change speed between passes seconds apart.
//!
//! Each pair is one untimed and one timed pass of each side, which goes first alternating
//! (pktvec in even pairs); the ratio of a pair is the anchor's cycles over pktvec's. The
//! headline takes each side's median and the median of the pairs' ratios; the data files
//! keep every pass.

use serde_json::json;

use crate::c_harness::{median, Error, Served};
use crate::sitting::Headline;

/// The lower and upper quartiles of `v` (nearest rank); NaN for an empty `v`.
pub fn quartiles(v: &[f64]) -> (f64, f64) {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    if s.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    let at = |q: f64| s[((s.len() - 1) as f64 * q).round() as usize];
    (at(0.25), at(0.75))
}

/// The pairs of one case.
pub struct Paired {
    /// pktvec's median cycles a lookup.
    pub ours: f64,
    /// The anchor's median cycles a lookup.
    pub theirs: f64,
    /// Median of the pairs' ratios (anchor / pktvec).
    pub ratio: f64,
    /// Lower quartile of the ratios.
    pub q1: f64,
    /// Upper quartile of the ratios.
    pub q3: f64,
    /// Every pass of pktvec, in pair order.
    pub ours_all: Vec<f64>,
    /// Every pass of the anchor, in pair order.
    pub theirs_all: Vec<f64>,
}

impl Paired {
    /// Runs `n` pairs. `ours` and `theirs` each time one pass (after their own untimed
    /// one) and return its cycles a lookup and a value that `check` compares (hits or a
    /// checksum); the first error stops the run.
    pub fn run(
        n: usize,
        mut ours: impl FnMut() -> Result<(f64, u64), Error>,
        mut theirs: impl FnMut() -> Result<(f64, u64), Error>,
        check: impl Fn(u64, u64) -> Result<(), Error>,
    ) -> Result<Paired, Error> {
        let (mut ours_all, mut theirs_all, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
        for i in 0..n.max(1) {
            let ((o, o_check), (t, t_check)) = if i % 2 == 0 {
                let o = ours()?;
                (o, theirs()?)
            } else {
                let t = theirs()?;
                (ours()?, t)
            };
            check(o_check, t_check)?;
            ours_all.push(o);
            theirs_all.push(t);
            ratios.push(t / o);
        }
        let (q1, q3) = quartiles(&ratios);
        Ok(Paired {
            ours: median(ours_all.clone()),
            theirs: median(theirs_all.clone()),
            ratio: median(ratios),
            q1,
            q3,
            ours_all,
            theirs_all,
        })
    }

    /// The headline row: the two medians, with the median of the ratios as the ratio.
    pub fn headline(&self, case: &str, anchor: &str, target: f64) -> Headline {
        let mut h =
            Headline::cost(case, "cycles/lookup", self.ours, anchor, self.theirs).target(target);
        h.ratio = self.ratio;
        h
    }

    /// One line for the log.
    pub fn summary(&self, anchor: &str) -> String {
        format!(
            "{} pairs, {anchor} / pktvec median {:.2} (quartiles {:.2}-{:.2}); pktvec {:.1}, {anchor} {:.1} cycles",
            self.ours_all.len(),
            self.ratio,
            self.q1,
            self.q3,
            self.ours,
            self.theirs
        )
    }

    /// The data file's record, the anchor's values under its name.
    pub fn json(&self, anchor: &str) -> serde_json::Value {
        let mut v = json!({
            "pktvec_median": self.ours,
            "ratio_median": self.ratio,
            "ratio_q1": self.q1,
            "ratio_q3": self.q3,
            "pktvec": self.ours_all,
        });
        v[format!("{anchor}_median")] = json!(self.theirs);
        v[anchor] = json!(self.theirs_all);
        v
    }
}

/// One pass served by a harness: sends `cmd` and reads its `result NAME CYCLES VALUE` line;
/// returns the cycles and VALUE as printed.
pub fn served_pass(s: &mut Served, cmd: &str) -> Result<(f64, String), Error> {
    for f in s.command(cmd)? {
        if let [r, _, cyc, value] = f.as_slice() {
            if r == "result" {
                return Ok((cyc.parse()?, value.clone()));
            }
        }
    }
    Err(format!("harness: no result line for {cmd}").into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quartiles_by_nearest_rank() {
        assert_eq!(quartiles(&[4.0, 1.0, 3.0, 2.0, 5.0]), (2.0, 4.0));
        assert_eq!(quartiles(&[7.0]), (7.0, 7.0));
        assert!(quartiles(&[]).0.is_nan());
    }

    #[test]
    fn pairs_alternate_and_take_medians() {
        let mut calls = Vec::new();
        let cell = std::cell::RefCell::new(&mut calls);
        let mut k = 0.0;
        let p = Paired::run(
            4,
            || {
                cell.borrow_mut().push('o');
                k += 1.0;
                Ok((10.0 + k, 7))
            },
            || {
                cell.borrow_mut().push('t');
                Ok((40.0, 7))
            },
            |a, b| if a == b { Ok(()) } else { Err("differ".into()) },
        )
        .unwrap();
        assert_eq!(calls.iter().collect::<String>(), "ottootto");
        assert_eq!(p.ours_all, vec![11.0, 12.0, 13.0, 14.0]);
        assert_eq!(p.theirs, 40.0);
        assert!(
            (p.ratio - median(vec![40.0 / 11.0, 40.0 / 12.0, 40.0 / 13.0, 40.0 / 14.0])).abs()
                < 1e-12
        );
        assert!(p.q1 <= p.ratio && p.ratio <= p.q3);
        let h = p.headline("case", "anchor", 2.0);
        assert_eq!(h.ratio, p.ratio);
        assert_eq!(h.met(), Some(true));
        let j = p.json("rte_x");
        assert_eq!(j["rte_x_median"], json!(40.0));
        assert_eq!(j["rte_x"].as_array().map(Vec::len), Some(4));
    }

    #[test]
    fn a_failed_check_stops_the_run() {
        let r = Paired::run(
            3,
            || Ok((1.0, 1)),
            || Ok((2.0, 2)),
            |a, b| if a == b { Ok(()) } else { Err("differ".into()) },
        );
        assert!(r.is_err());
    }
}
