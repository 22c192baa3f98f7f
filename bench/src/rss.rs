//! `rss`: software receive-side scaling, the Toeplitz hash of `pktvec_workers::rss`, in
//! cycles per tuple over a vector of 256 random tuples (IPv4 5-tuples: 12 bytes of source,
//! destination, ports; IPv6: 36 bytes), against DPDK's `rte_softrss` as its own
//! `thash_perf_autotest` measures it:
//! `echo thash_perf_autotest | dpdk-test --no-huge -m 512 --no-pci -l 0`.
//!
//! Paths: the per-byte table path (`Path::Table`, what pktvec takes on CPUs without GFNI),
//! the GFNI path (`Path::Gfni`, GF2P8AFFINEQB on AVX-512 registers, where the CPU has it),
//! each one tuple per call (`hash_fixed`) and in bulk (`hash_tuples` over the whole vector),
//! the bit-by-bit scalar reference, and (with the `dpdk` feature) `rte_softrss` itself
//! called in-process through pktvec-dpdk-sys's shim, over the same tuples and with the same
//! loop. The GFNI rows are left out (`-`) on a CPU without GFNI. The autotest takes about
//! 25 s on this VM, so `--quick` skips it and compares against the in-process `rte_softrss`
//! instead (a different anchor name in the headline).

use std::hint::black_box;

use pktvec::graph::clock;
use pktvec_workers::rss::{toeplitz_scalar, Path, Toeplitz, Tuple, DEFAULT_KEY};
use serde_json::json;

use crate::sitting::{Common, Headline, Sitting};

/// Options of `rss`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    common: Common,
    /// Passes over the 256-tuple vector per timed repetition (table and GFNI paths; the
    /// scalar reference and rte_softrss make a tenth as many); default 20,000, 2,000 with
    /// --quick
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

/// Median TSC cycles per tuple of `hash_tuples` over all of `v`, `passes` times.
fn cycles_per_tuple_bulk(t: &Toeplitz, v: &[Tuple], passes: u64) -> f64 {
    let mut out = vec![0u32; v.len()];
    let mut runs = Vec::with_capacity(REPS);
    for _ in 0..REPS {
        let t0 = clock::now();
        for _ in 0..passes {
            t.hash_tuples(black_box(v), &mut out);
            black_box(&mut out);
        }
        let t1 = clock::now();
        runs.push((t1 - t0) as f64 / (passes as f64 * v.len() as f64));
    }
    median(runs)
}

/// The tuples of `v` as `Tuple`s (the same bytes): IPv4 5-tuples for 12 bytes, IPv6
/// 5-tuples for 36.
fn as_tuples<const N: usize>(v: &[[u8; N]]) -> Vec<Tuple> {
    const { assert!(N == 12 || N == 36) };
    v.iter()
        .map(|x| {
            let port = |i: usize| u16::from_be_bytes([x[i], x[i + 1]]);
            let tuple = match N {
                12 => Tuple::v4(
                    [x[0], x[1], x[2], x[3]].into(),
                    [x[4], x[5], x[6], x[7]].into(),
                    Some((port(8), port(10))),
                ),
                _ => {
                    let addr = |i: usize| -> [u8; 16] { std::array::from_fn(|j| x[i + j]) };
                    Tuple::v6(addr(0).into(), addr(16).into(), Some((port(32), port(34))))
                }
            };
            debug_assert_eq!(tuple.as_bytes(), &x[..]);
            tuple
        })
        .collect()
}

/// One tuple length's figures, cycles per tuple (`None`: a path this CPU lacks, or
/// rte_softrss not measured).
#[derive(Debug, Default, Clone, serde::Serialize)]
struct Row {
    bytes: usize,
    table: f64,
    table_bulk: f64,
    gfni: Option<f64>,
    gfni_bulk: Option<f64>,
    scalar: f64,
    rte_softrss_inproc: Option<f64>,
    rte_softrss_dpdk_test: Option<f64>,
}

/// Measures the paths for `N`-byte tuples (12 or 36).
fn measure<const N: usize>(passes: u64) -> Row {
    let v = tuples::<N>(0x9e37_79b9_7f4a_7c15 ^ N as u64);
    let vt = as_tuples(&v);
    let default = Toeplitz::default();
    let t = default
        .clone()
        .with_path(Path::Table)
        .unwrap_or(default.clone());
    let table = cycles_per_tuple(&v, passes, |x| t.hash_fixed(x));
    let table_bulk = cycles_per_tuple_bulk(&t, &vt, passes);
    let (gfni, gfni_bulk) = match default.with_path(Path::Gfni) {
        Ok(g) => (
            Some(cycles_per_tuple(&v, passes, |x| g.hash_fixed(x))),
            Some(cycles_per_tuple_bulk(&g, &vt, passes)),
        ),
        Err(_) => (None, None),
    };
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
        table_bulk,
        gfni,
        gfni_bulk,
        scalar,
        rte_softrss_inproc,
        rte_softrss_dpdk_test: None,
    }
}

/// The headline rows: per tuple length the table path (one tuple per call), then where
/// measured the GFNI path one tuple per call and in bulk, all against the same anchor.
fn headline(rows: &[Row]) -> Vec<Headline> {
    let mut out = Vec::new();
    for r in rows {
        let case = match r.bytes {
            12 => "IPv4 5-tuple (12 B)",
            _ => "IPv6 5-tuple (36 B)",
        };
        let (name, anchor) = match (r.rte_softrss_dpdk_test, r.rte_softrss_inproc) {
            (Some(c), _) => (ANCHOR, c),
            (None, Some(c)) => (ANCHOR_INPROC, c),
            (None, None) => continue,
        };
        let paths = [
            (String::from(case), Some(r.table)),
            (format!("{case}, GFNI"), r.gfni),
            (format!("{case}, GFNI bulk"), r.gfni_bulk),
        ];
        for (case, cycles) in paths {
            if let Some(c) = cycles {
                out.push(Headline::cost(&case, "cycles/tuple", c, name, anchor).target(10.0));
            }
        }
    }
    out
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
    println!(
        "paths: table{}",
        if Path::Gfni.available() {
            ", gfni (GFNI + AVX-512)"
        } else {
            "; gfni not available on this CPU or build (its rows are -)"
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
        "\n{:>6} {:>10} {:>11} {:>10} {:>10} {:>10} {:>18} {:>18}",
        "bytes",
        "table",
        "table bulk",
        "gfni",
        "gfni bulk",
        "scalar",
        "rte_softrss (in)",
        "rte_softrss (test)"
    );
    let opt = |v: Option<f64>| v.map_or("-".to_string(), |c| format!("{c:.1}"));
    for r in &rows {
        println!(
            "{:>6} {:>10.1} {:>11.1} {:>10} {:>10} {:>10.1} {:>18} {:>18}",
            r.bytes,
            r.table,
            r.table_bulk,
            opt(r.gfni),
            opt(r.gfni_bulk),
            r.scalar,
            opt(r.rte_softrss_inproc),
            opt(r.rte_softrss_dpdk_test)
        );
    }
    let headline = headline(&rows);
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

    #[test]
    fn bulk_tuples_carry_the_same_bytes() {
        let v12 = tuples::<12>(1);
        let v36 = tuples::<36>(2);
        for (t, x) in as_tuples(&v12).iter().zip(&v12) {
            assert_eq!(t.as_bytes(), &x[..]);
        }
        for (t, x) in as_tuples(&v36).iter().zip(&v36) {
            assert_eq!(t.as_bytes(), &x[..]);
        }
        // and every path hashes them alike, one at a time and in bulk
        let t = Toeplitz::default();
        let vt = as_tuples(&v12);
        let mut out = vec![0u32; vt.len()];
        t.hash_tuples(&vt, &mut out);
        for (x, h) in v12.iter().zip(&out) {
            assert_eq!(*h, toeplitz_scalar(&DEFAULT_KEY, x));
            assert_eq!(t.hash_fixed(x), *h);
        }
    }

    #[test]
    fn headline_has_a_row_per_measured_path() {
        let row = |bytes, gfni| Row {
            bytes,
            table: 10.0,
            table_bulk: 9.0,
            gfni,
            gfni_bulk: gfni.map(|g| g / 2.0),
            scalar: 100.0,
            rte_softrss_inproc: Some(200.0),
            rte_softrss_dpdk_test: None,
        };
        let h = headline(&[row(12, Some(4.0)), row(36, None)]);
        let cases: Vec<&str> = h.iter().map(|h| h.case.as_str()).collect();
        assert_eq!(
            cases,
            [
                "IPv4 5-tuple (12 B)",
                "IPv4 5-tuple (12 B), GFNI",
                "IPv4 5-tuple (12 B), GFNI bulk",
                "IPv6 5-tuple (36 B)"
            ]
        );
        assert!(h
            .iter()
            .all(|h| h.anchor_name == ANCHOR_INPROC && h.anchor == 200.0));
        assert_eq!(h[2].pktvec, 2.0);
    }
}
