//! `lpm6`: IPv6 LPM lookup cost of pktvec's `Lpm6` and, in the same sitting, of DPDK's
//! rte_lpm6 (`benches/dpdk/lpm6_bench.c`) on the same routes and the same keys.
//!
//! Tables: a generated one (`routes::generate_ipv6`, the seed's /48–/64 prefixes) and the
//! real tier-1 table. Keys: 90% inside a random route of the table, 10% uniform in
//! 2000::/3, shuffled. Each round runs pktvec (every method, `--reps` passes, the fastest
//! kept), then the C harness (builds rte_lpm6, `--reps` passes of `rte_lpm6_lookup` and
//! `rte_lpm6_lookup_bulk_func` over vectors of 256, the fastest kept); the figures are
//! medians over `--rounds` rounds. The last round's harness then stays and serves
//! `--pairs` single passes paired with pktvec's vector + prefetch, back to back: the
//! headline is each side's median over the pairs and the median of the pairs' ratios.
//! Both sides report the hits and the sum of next hops (modulo 2^21, rte_lpm6's next-hop
//! width); the run fails if they differ.

use std::hint::black_box;
use std::net::Ipv6Addr;
use std::path::{Path, PathBuf};

use pktvec::graph::clock;
use pktvec::lookup::ipv6::Lpm6;
use pktvec::lookup::routes::{
    generate_ipv6, load_ipv6_file, random_ipv6_keys, random_keys_in, write_keys_file,
    write_routes_file, Route6, SplitMix64,
};
use serde_json::json;

use crate::c_harness::{self, median, thousands, Error, Scratch, Served};
use crate::pairs::{served_pass, Paired};
use crate::sitting::{Common, Sitting};

/// The tier-1 IPv6 table (160,147 prefixes) in the routes directory.
const TIER1: &str = "tier1-fulltable-ipv6.txt.xz";
/// rte_lpm6 stores 21-bit next hops (DPDK 22.11): answers are compared modulo 2^21.
const DPDK_NH_MASK: u32 = (1 << 21) - 1;
/// Keys per vector.
const VEC: usize = 256;

/// Options of `pktvec-bench lpm6`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    common: Common,
    /// Prefixes of the generated table (`routes::generate_ipv6`, /48–/64)
    /// [default: 200000; --quick: 20000]
    #[arg(long)]
    routes: Option<usize>,
    /// Keys per table (90% inside a route, 10% uniform in 2000::/3) [default: 1048576;
    /// --quick: 65536]
    #[arg(long)]
    keys: Option<usize>,
    /// Passes per method per round (the fastest is kept) [default: 7; --quick: 2]
    #[arg(long)]
    reps: Option<usize>,
    /// Rounds, pktvec then rte_lpm6 in each (figures are medians over them)
    /// [default: 3; --quick: 1]
    #[arg(long)]
    rounds: Option<usize>,
    /// Repeat the first N keys over the whole key list (N distinct keys, so the lines
    /// their lookups read stay cached): separates the lookups' compute from their cache
    /// misses; 0 = every key drawn (the default)
    #[arg(long, default_value_t = 0)]
    distinct: usize,
    /// Pairs of single passes per table after the rounds (each after an untimed one),
    /// vector + prefetch and rte_lpm6_lookup_bulk_func back to back, which of the two goes
    /// first alternating: the headline ratio is the median of the pairs' ratios
    /// [default: 15; --quick: 3]
    #[arg(long)]
    pairs: Option<usize>,
    /// Leave out the real tier-1 table
    #[arg(long)]
    no_tier1: bool,
    /// Skip DPDK: time pktvec only (no ratio rows)
    #[arg(long)]
    no_dpdk: bool,
    /// Directory of the real route tables: $PKTVEC_SHARED_DATA/routes when that is set,
    /// else shared/data/routes next to this checkout; without the tier-1 file the tier1
    /// rows are skipped, with a note
    #[arg(long, default_value_os_t = c_harness::default_routes_dir())]
    routes_dir: PathBuf,
}

/// Cycles per key of `f`: the fastest of `reps` passes after one untimed pass.
fn time_per_key(reps: usize, n: usize, mut f: impl FnMut() -> u64) -> f64 {
    black_box(f());
    let mut best = f64::MAX;
    for _ in 0..reps {
        let t0 = clock::now();
        black_box(f());
        best = best.min((clock::now() - t0) as f64 / n as f64);
    }
    best
}

/// (hits, sum of next hops modulo 2^21)
fn checksum(out: &[Option<u32>]) -> (u64, u64) {
    out.iter().fold((0, 0), |(h, s), o| match o {
        Some(v) => (h + 1, s + u64::from(*v & DPDK_NH_MASK)),
        None => (h, s),
    })
}

fn make_keys(routes: &[Route6], n: usize, seed: u64) -> Vec<Ipv6Addr> {
    let inside = n * 9 / 10;
    let mut keys = random_keys_in(routes, inside, seed);
    keys.extend(random_ipv6_keys(n - inside, seed ^ 0x55));
    let mut rng = SplitMix64::new(seed ^ 0xabc);
    for i in (1..keys.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        keys.swap(i, j);
    }
    keys
}

/// One round of pktvec's methods: (single, lookup_bulk, vector no prefetch, vector with
/// prefetch) cycles per lookup.
fn pktvec_round(t: &Lpm6, k: &[u128], reps: usize) -> [f64; 4] {
    let n = k.len();
    let mut out = vec![None; n];
    let single = time_per_key(reps, n, || {
        let mut acc = 0u64;
        for &x in k {
            acc = acc.wrapping_add(u64::from(t.lookup(x).unwrap_or(0)));
        }
        acc
    });
    let bulk = time_per_key(reps, n, || {
        for (kc, oc) in k.chunks(VEC).zip(out.chunks_mut(VEC)) {
            t.lookup_bulk(kc, oc).ok();
        }
        out[n / 2].unwrap_or(0).into()
    });
    let mut vec_time = |pf: bool| {
        time_per_key(reps, n, || {
            for (kc, oc) in k.chunks(VEC).zip(out.chunks_mut(VEC)) {
                t.lookup_vector_with(kc, oc, pf).ok();
            }
            out[n / 2].unwrap_or(0).into()
        })
    };
    let nopf = vec_time(false);
    let pf = vec_time(true);
    [single, bulk, nopf, pf]
}

/// A harness's `key=value` lines.
type KeyValues = Vec<(String, f64)>;

/// The harness's `key=value` lines; with `serve`, also the harness itself, serving
/// single bulk passes (see [`paired`]).
fn run_dpdk(
    bin: &Path,
    routes: &Path,
    keys: &Path,
    reps: usize,
    serve: bool,
) -> Result<(KeyValues, Option<Served>), Error> {
    let mut a = c_harness::eal_args("lpm6", 2048);
    a.extend([
        routes.display().to_string(),
        keys.display().to_string(),
        reps.to_string(),
        VEC.to_string(),
    ]);
    let parse = |l: &str| {
        let (a, b) = l.split_once('=')?;
        Some((a.to_string(), b.trim().parse().ok()?))
    };
    if serve {
        a.push("serve".into());
        let s = Served::start(bin, &a)?;
        let kv = s.info.iter().flatten().filter_map(|f| parse(f)).collect();
        return Ok((kv, Some(s)));
    }
    let out = c_harness::run_once(bin, &a);
    c_harness::remove_eal_dir("lpm6");
    Ok((out?.lines().filter_map(parse).collect(), None))
}

/// `n` pairs ([`Paired`]): pktvec's vector lookup with prefetch and
/// rte_lpm6_lookup_bulk_func in the served harness; both must find as many routes.
fn paired(t: &Lpm6, k: &[u128], n: usize, s: &mut Served) -> Result<Paired, Error> {
    let mut out = vec![None; k.len()];
    let ours = || {
        let mut pass = || {
            for (kc, oc) in k.chunks(VEC).zip(out.chunks_mut(VEC)) {
                t.lookup_vector_with(kc, oc, true).ok();
            }
        };
        pass();
        let t0 = clock::now();
        pass();
        let c = (clock::now() - t0) as f64 / k.len() as f64;
        Ok((c, out.iter().filter(|o| o.is_some()).count() as u64))
    };
    let theirs = || {
        let (c, hits) = served_pass(s, "bulk")?;
        Ok((c, hits.parse()?))
    };
    Paired::run(n, ours, theirs, |o, t| {
        if o == t {
            Ok(())
        } else {
            Err(format!("pairs: pktvec found {o} routes, rte_lpm6 {t}").into())
        }
    })
}

/// Runs the measurement.
pub fn run(args: Args) -> Result<(), Error> {
    let quick = args.common.quick;
    let pick = |v: Option<usize>, full: usize, q: usize| v.unwrap_or(if quick { q } else { full });
    let n_routes = pick(args.routes, 200_000, 20_000);
    let n_keys = pick(args.keys, 1 << 20, 1 << 16);
    let reps = pick(args.reps, 7, 2).max(1);
    let rounds = pick(args.rounds, 3, 1).max(1);
    let n_pairs = pick(args.pairs, 15, 3).max(1);

    let sitting = Sitting::begin(
        "lpm6",
        "IPv6 LPM vs rte_lpm6",
        "lookup-tables.md",
        &args.common,
    )?;
    let bin = if args.no_dpdk {
        None
    } else {
        Some(c_harness::build("lpm6_bench")?)
    };
    println!(
        "{} keys per table (90% inside a route); fastest of {reps} passes, median of {rounds} rounds{}",
        thousands(n_keys),
        if bin.is_some() { "; rte_lpm6 on --no-huge (4 KiB pages)" } else { "; DPDK skipped" }
    );
    let mut tables: Vec<(String, Vec<Route6>)> = vec![(
        format!("generated {} /48-/64", thousands(n_routes)),
        generate_ipv6(n_routes, 1),
    )];
    let mut skipped = None;
    if !args.no_tier1 {
        let p = args.routes_dir.join(TIER1);
        let lost = c_harness::missing(std::slice::from_ref(&p));
        if lost.is_empty() {
            let t = load_ipv6_file(&p)
                .map_err(|e| format!("{}: {e} (see --routes-dir, --no-tier1)", p.display()))?;
            tables.push((format!("tier1 ({} real prefixes)", thousands(t.len())), t));
        } else {
            skipped = Some(c_harness::skip_note(
                "real route tables",
                &lost,
                "tier1 rows skipped",
            ));
        }
    }
    let scratch = Scratch::new("lpm6")?;

    let mut headline = Vec::new();
    let mut detail_tables = Vec::new();
    for (name, routes) in &tables {
        let mut keys = make_keys(routes, n_keys, 42);
        if args.distinct > 0 {
            for i in args.distinct..keys.len() {
                keys[i] = keys[i % args.distinct];
            }
        }
        let t0 = std::time::Instant::now();
        let mut t = Lpm6::from_routes(routes.iter().map(|r| (r.addr, r.len, r.next_hop)))?;
        let build_ms = t0.elapsed().as_secs_f64() * 1e3;
        t.shrink_to_fit();
        let k: Vec<u128> = keys.iter().map(|&a| u128::from(a)).collect();
        let mut out = vec![None; k.len()];
        t.lookup_vector(&k, &mut out)?;
        let ours_sum = checksum(&out);
        drop(out);
        let lines: u64 = k.iter().map(|&x| u64::from(t.accesses(x))).sum();
        let (rp, kp) = (scratch.path("routes.txt"), scratch.path("keys.txt"));
        if bin.is_some() {
            write_routes_file(&rp, routes)?;
            write_keys_file(&kp, &keys)?;
        }
        let mut ours: Vec<[f64; 4]> = Vec::new();
        let mut theirs: Vec<(f64, f64)> = Vec::new();
        let mut dpdk_info = Vec::new();
        let mut pairs = None;
        for round in 0..rounds {
            eprintln!("{name}: round {} of {rounds}", round + 1);
            ours.push(pktvec_round(&t, &k, reps));
            if let Some(bin) = &bin {
                // The last round's harness stays to serve the pairs.
                let (kv, served) = run_dpdk(bin, &rp, &kp, reps, round + 1 == rounds)?;
                let get = |key: &str| kv.iter().find(|(a, _)| a == key).map(|(_, v)| *v);
                let (h, s) = (ours_sum.0 as f64, ours_sum.1 as f64);
                for (hk, sk) in [("hits", "nh_sum"), ("bulk_hits", "bulk_nh_sum")] {
                    if get(hk) != Some(h) || get(sk) != Some(s) {
                        return Err(format!(
                            "{name}: answers differ: pktvec hits/sum {ours_sum:?}, rte_lpm6 {:?}/{:?}",
                            get(hk),
                            get(sk)
                        )
                        .into());
                    }
                }
                theirs.push((
                    get("single_cycles_min").ok_or("no single_cycles_min")?,
                    get("bulk_cycles_min").ok_or("no bulk_cycles_min")?,
                ));
                dpdk_info = kv;
                if let Some(mut s) = served {
                    let p = paired(&t, &k, n_pairs, &mut s)?;
                    drop(s);
                    c_harness::remove_eal_dir("lpm6");
                    eprintln!("{name}: {}", p.summary("rte_lpm6_lookup_bulk_func"));
                    pairs = Some(p);
                }
            }
        }
        let col = |i: usize| median(ours.iter().map(|r| r[i]).collect());
        let [single, bulk, nopf, pf] = [col(0), col(1), col(2), col(3)];
        let rte_single = (!theirs.is_empty()).then(|| median(theirs.iter().map(|r| r.0).collect()));
        let rte_bulk = (!theirs.is_empty()).then(|| median(theirs.iter().map(|r| r.1).collect()));
        // Each round's own ratio (vector + prefetch against the bulk function, timed
        // seconds apart): how far the ratio moves within the sitting.
        let mut round_ratios: Vec<f64> =
            ours.iter().zip(&theirs).map(|(o, t)| t.1 / o[3]).collect();
        round_ratios.sort_by(f64::total_cmp);
        println!();
        println!(
            "{name}: pktvec single {single:.1}, lookup_bulk {bulk:.1}, vector-256 {nopf:.1}, vector-256 + prefetch {pf:.1}{} cycles/lookup{}",
            match (rte_single, rte_bulk) {
                (Some(a), Some(b)) => format!("; rte_lpm6_lookup {a:.1}, rte_lpm6_lookup_bulk_func {b:.1}"),
                _ => String::new(),
            },
            match (round_ratios.first(), round_ratios.last()) {
                (Some(lo), Some(hi)) => format!(
                    "; per-round ratios {lo:.2}-{hi:.2}× (median {:.2}×)",
                    round_ratios[round_ratios.len() / 2]
                ),
                _ => String::new(),
            }
        );
        if let Some(p) = &pairs {
            // At least 2× on the real table, 5× on the generated one (/48–/64, where
            // rte_lpm6 reads a line per 8 bits past its tbl24 and pktvec a leaf).
            let target = if name.starts_with("tier1") { 2.0 } else { 5.0 };
            headline.push(p.headline(
                &format!("{name}: vector-256 + prefetch"),
                "rte_lpm6_lookup_bulk_func",
                target,
            ));
        }
        let s = t.stats();
        let info = |key: &str| dpdk_info.iter().find(|(a, _)| a == key).map(|(_, v)| *v);
        detail_tables.push(json!({
            "table": name,
            "routes": t.len(),
            "keys": k.len(),
            "hit_fraction": ours_sum.0 as f64 / k.len() as f64,
            "lines_per_lookup": lines as f64 / k.len() as f64,
            "pktvec_bytes": s.lookup_bytes,
            "pktvec_bytes_per_route": s.bytes_per_route(),
            "pktvec_build_ms": build_ms,
            "cycles_per_lookup": {
                "pktvec lookup": single,
                "pktvec lookup_bulk": bulk,
                "pktvec vector-256 no prefetch": nopf,
                "pktvec vector-256 + prefetch": pf,
                "rte_lpm6_lookup": rte_single,
                "rte_lpm6_lookup_bulk_func": rte_bulk,
            },
            "rounds": {
                "pktvec [lookup, lookup_bulk, vector no prefetch, vector + prefetch]": ours,
                "rte_lpm6 [lookup, lookup_bulk_func]": theirs,
            },
            "round_ratios_vector_prefetch_vs_bulk": round_ratios,
            "pairs": pairs.as_ref().map(|p| p.json("rte_lpm6_lookup_bulk_func")),
            "rte_lpm6_bytes": info("memory_bytes"),
            "rte_lpm6_bytes_per_route": info("memory_bytes").map(|b| b / t.len() as f64),
            "rte_lpm6_number_tbl8s": info("number_tbl8s"),
        }));
    }
    let mut detail = json!({
        "keys": n_keys,
        "distinct_keys": args.distinct,
        "reps": reps,
        "rounds": rounds,
        "dpdk": bin.is_some(),
        "pairs": n_pairs,
        "note": "cycles per lookup: per round the fastest of `reps` passes, median over rounds; lines_per_lookup = cache lines pktvec reads after its 256 KiB first level. pairs (the headline): single passes of vector + prefetch and rte_lpm6_lookup_bulk_func back to back after the last round, each after an untimed one, the first of a pair alternating; medians of each side and of the pairs' ratios",
        "tables": detail_tables,
    });
    if let Some(s) = skipped {
        detail["skipped"] = json!(s);
    }
    sitting.finish(headline, detail)?;
    Ok(())
}
