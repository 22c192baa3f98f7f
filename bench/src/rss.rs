//! `rss`: software receive-side scaling, the Toeplitz hash of `pktvec_workers::rss`, in
//! cycles per tuple over a vector of 256 random tuples (IPv4 5-tuples: 12 bytes of source,
//! destination, ports; IPv6: 36 bytes), against DPDK's `rte_softrss` as its own
//! `thash_perf_autotest` measures it:
//! `echo thash_perf_autotest | dpdk-test --no-huge -m 512 --no-pci -l 0`.
//!
//! Paths: the per-byte table path (the one pktvec uses), the bit-by-bit scalar reference,
//! and (with the `dpdk` feature) `rte_softrss` itself called in-process through
//! pktvec-dpdk-sys's shim, over the same tuples and with the same loop. The autotest takes
//! about 25 s on this VM, so `--quick` skips it and compares against the in-process
//! `rte_softrss` instead (a different anchor name in the headline).

use std::hint::black_box;

use pktvec::graph::clock;
use pktvec_workers::rss::{toeplitz_scalar, Toeplitz, DEFAULT_KEY};
use serde_json::json;

use crate::sitting::{Common, Headline, Sitting};

/// Options of `rss`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    common: Common,
    /// Passes over the 256-tuple vector per timed repetition (table path; the slower paths
    /// make a tenth as many); default 20,000, 2,000 with --quick
    #[arg(long)]
    passes: Option<u64>,
    /// Do not run dpdk-test's thash_perf_autotest (the headline then compares against the
    /// in-process rte_softrss, when built with the dpdk feature)
    #[arg(long)]
    no_dpdk: bool,
}

/// The anchor's name in the headline rows: DPDK's own autotest.
const ANCHOR: &str = "rte_softrss (dpdk-test)";
/// The anchor's name when the autotest is skipped: rte_softrss in this process.
const ANCHOR_INPROC: &str = "rte_softrss (in-process, shim)";
/// Tuples per vector.
const VECTOR: usize = 256;
/// Timed repetitions per path (the median is kept).
const REPS: usize = 7;

/// Median of a non-empty list (NaN if empty).
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// `VECTOR` pseudo-random tuples of `N` bytes (xorshift, fixed seed).
fn tuples<const N: usize>(seed: u64) -> Vec<[u8; N]> {
    let mut s = seed | 1;
    (0..VECTOR)
        .map(|_| {
            std::array::from_fn(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                s as u8
            })
        })
        .collect()
}

/// Median TSC cycles per tuple of `hash` over `passes` passes of `v`.
fn cycles_per_tuple<T>(v: &[T], passes: u64, hash: impl Fn(&T) -> u32) -> f64 {
    let mut runs = Vec::with_capacity(REPS);
    for _ in 0..REPS {
        let mut acc = 0u32;
        let t0 = clock::now();
        for _ in 0..passes {
            for t in black_box(v) {
                acc ^= hash(t);
            }
        }
        let t1 = clock::now();
        black_box(acc);
        runs.push((t1 - t0) as f64 / (passes as f64 * v.len() as f64));
    }
    median(runs)
}

/// One tuple length's figures, cycles per tuple.
#[derive(Debug, Default, Clone, serde::Serialize)]
struct Row {
    bytes: usize,
    table: f64,
    scalar: f64,
    rte_softrss_inproc: Option<f64>,
    rte_softrss_dpdk_test: Option<f64>,
}

/// Measures the paths for `N`-byte tuples.
fn measure<const N: usize>(passes: u64) -> Row {
    let v = tuples::<N>(0x9e37_79b9_7f4a_7c15 ^ N as u64);
    let t = Toeplitz::default();
    let table = cycles_per_tuple(&v, passes, |x| t.hash_fixed(x));
    let slow = (passes / 10).max(1);
    let scalar = cycles_per_tuple(&v, slow, |x| toeplitz_scalar(&DEFAULT_KEY, x));
    #[cfg(feature = "dpdk")]
    let rte_softrss_inproc = {
        use pktvec_workers::rss::dpdk::{softrss, words};
        let w: Vec<Vec<u32>> = v.iter().map(|x| words(x)).collect();
        Some(cycles_per_tuple(&w, slow, |x| softrss(x, &DEFAULT_KEY)))
    };
    #[cfg(not(feature = "dpdk"))]
    let rte_softrss_inproc = None;
    Row {
        bytes: N,
        table,
        scalar,
        rte_softrss_inproc,
        rte_softrss_dpdk_test: None,
    }
}

/// Runs dpdk-test's `thash_perf_autotest` once: (key length in bytes, cycles per
/// `rte_softrss` call) for each length it measures.
fn run_dpdk_test() -> Result<Vec<(usize, f64)>, Box<dyn std::error::Error>> {
    let text = crate::dpdk_test::run("thash_perf_autotest", 512, "0")?;
    let parsed = parse_dpdk(&text);
    if parsed.is_empty() {
        let tail: Vec<&str> = text.lines().rev().take(20).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        return Err(format!(
            "could not parse dpdk-test's output; its end:\n{}",
            tail.join("\n")
        )
        .into());
    }
    Ok(parsed)
}

/// Parses `Average rte_softrss() takes <c> cycles for key len <n>` lines (the tuple length
/// in bytes, despite the name; `rte_softrss_be` lines are left out).
fn parse_dpdk(text: &str) -> Vec<(usize, f64)> {
    text.lines()
        .filter_map(|l| {
            let rest = l.trim().strip_prefix("Average rte_softrss() takes")?;
            let mut w = rest.split_whitespace();
            let cycles: f64 = w.next()?.parse().ok()?;
            let len: usize = rest.rsplit_once("key len")?.1.trim().parse().ok()?;
            Some((len, cycles))
        })
        .collect()
}

/// Runs the measurement.
pub fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let quick = args.common.quick;
    let passes = args
        .passes
        .unwrap_or(if quick { 2_000 } else { 20_000 })
        .max(10);
    let use_dpdk_test = !quick && !args.no_dpdk;
    let sitting = Sitting::begin(
        "rss",
        "Software RSS (Toeplitz) vs rte_softrss",
        "multicore.md",
        &args.common,
    )?;
    println!(
        "{VECTOR} random tuples, {passes} passes x {REPS} repetitions (median; scalar and rte_softrss {} passes), {}",
        (passes / 10).max(1),
        if use_dpdk_test {
            "then echo thash_perf_autotest | dpdk-test --no-huge -m 512 --no-pci -l 0"
        } else {
            "no dpdk-test (--quick or --no-dpdk)"
        }
    );
    let mut rows = vec![measure::<12>(passes), measure::<36>(passes)];
    if use_dpdk_test {
        for (len, cycles) in run_dpdk_test()? {
            if let Some(r) = rows.iter_mut().find(|r| r.bytes == len) {
                r.rte_softrss_dpdk_test = Some(cycles);
            }
        }
    }
    println!(
        "\n{:>6} {:>12} {:>12} {:>18} {:>18}",
        "bytes", "table", "scalar", "rte_softrss (in)", "rte_softrss (test)"
    );
    let opt = |v: Option<f64>| v.map_or("-".to_string(), |c| format!("{c:.1}"));
    for r in &rows {
        println!(
            "{:>6} {:>12.1} {:>12.1} {:>18} {:>18}",
            r.bytes,
            r.table,
            r.scalar,
            opt(r.rte_softrss_inproc),
            opt(r.rte_softrss_dpdk_test)
        );
    }
    let headline: Vec<Headline> = rows
        .iter()
        .filter_map(|r| {
            let case = match r.bytes {
                12 => "IPv4 5-tuple (12 B)",
                _ => "IPv6 5-tuple (36 B)",
            };
            let (name, anchor) = match (r.rte_softrss_dpdk_test, r.rte_softrss_inproc) {
                (Some(c), _) => (ANCHOR, c),
                (None, Some(c)) => (ANCHOR_INPROC, c),
                (None, None) => return None,
            };
            Some(Headline::cost(case, "cycles/tuple", r.table, name, anchor).target(10.0))
        })
        .collect();
    let detail = json!({
        "vector": VECTOR,
        "passes": passes,
        "repetitions": REPS,
        "key": "Microsoft/Intel default",
        "dpdk_test": use_dpdk_test,
        "rows": rows,
        "tsc_hz": clock::tsc_hz(),
    });
    sitting.finish(headline, detail)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_thash_perf_autotest() {
        let text = "RTE>>thash_perf_autotest\n\
            Average rte_softrss() takes \t\t75.2 cycles for key len 8\n\
            Average rte_softrss_be() takes \t\t73.9 cycles for key len 8\n\
            Average rte_softrss() takes \t\t127.0 cycles for key len 12\n\
            Test OK\n";
        assert_eq!(parse_dpdk(text), vec![(8, 75.2), (12, 127.0)]);
    }
}
