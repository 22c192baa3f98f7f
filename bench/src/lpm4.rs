//! `lpm4`: IPv4 LPM lookup cost of pktvec's `Lpm4` and, in the same sitting, of DPDK's
//! rte_lpm (`benches/dpdk/lpm4_bench.c`) on the same route tables and the same random
//! destinations, in cycles per lookup.
//!
//! Per table, rte_lpm is built once by its harness (in `serve` mode), then `--rounds`
//! rounds alternate: every pktvec method (`--reps` passes, each after an untimed warm-up),
//! then every rte_lpm method (`--reps` passes). A round's figure is a method's best pass;
//! the reported figure is the median over the rounds. The headline's vector rows come from
//! `--pairs` pairs of single passes after the rounds, pktvec's default vector lookup and
//! rte_lpm_lookup_bulk back to back (a round's two sides are a second or more apart, and
//! this host's memory can change speed in between): each side's median over the pairs,
//! and the median of the pairs' ratios. Every method of both libraries
//! answers every key; the answers are folded into an FNV-1a checksum (a miss counted as
//! 0xffffffff) and the run fails if any two disagree. Next hops are cut to 24 bits on both
//! sides (rte_lpm's width).

use std::path::{Path, PathBuf};

use pktvec::graph::clock;
use pktvec::lookup::ipv4::{Lpm4, Lpm4Config, PrefetchLevel, ReadPath, DEFAULT_SUB_BATCH, MISS};
use pktvec::lookup::routes::{self, Route4};
use pktvec::packet::mem;
use serde_json::json;

use crate::c_harness::{self, median, thousands, Error, Scratch, Served};
use crate::pairs::{served_pass, Paired};
use crate::sitting::{Common, Headline, Sitting};

/// Keys per vector: the graph's vector size.
const VEC: usize = 256;
/// The tier-1 IPv4 table (2024, 901,899 prefixes) in the routes directory.
const TIER1: &str = "tier1-fulltable-ipv4.txt.xz";
/// The RIPE RIS 2010 fib of AS4777, merged with tier1 into `union`.
const RIPE: &str = "ripe-ris-bview-20100701.0759.peer-as4777.fib.tsv.xz";
/// rte_lpm's tbl8 groups (each 256 entries); enough for every table here.
const TBL8S: u32 = 65_536;

/// Options of `pktvec-bench lpm4`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    common: Common,
    /// Route tables, comma-separated: `union` (tier1 ∪ RIPE 2010 AS4777 fib, 1,069,869 real
    /// prefixes), `tier1` (901,899 real prefixes), `uniform` (`routes::generate_ipv4`: BGP
    /// length histogram, uniform placement, the worst case), `clustered`
    /// (`routes::generate_ipv4_clustered`, placed like tier1), or a route file's path
    /// [default: union,tier1,uniform,clustered; --quick: tier1,uniform,clustered]
    #[arg(long, value_delimiter = ',')]
    tables: Vec<String>,
    /// Prefixes of the generated tables [default: 1000000; --quick: 100000]
    #[arg(long)]
    routes: Option<usize>,
    /// Random destinations (uniform over 2^32, seed 42), a multiple of 256
    /// [default: 1048576; --quick: 65536]
    #[arg(long)]
    keys: Option<usize>,
    /// Passes per method per round (a round's figure is the best pass) [default: 3; --quick: 2]
    #[arg(long)]
    reps: Option<usize>,
    /// Rounds, pktvec and rte_lpm alternating (the figure is the median over them)
    /// [default: 5; --quick: 1]
    #[arg(long)]
    rounds: Option<usize>,
    /// Pairs of single passes per table and sub-batch (b = 256 and 16), pktvec's default
    /// read path and rte_lpm_lookup_bulk back to back, which of the two goes first
    /// alternating: the headline ratio is the median of the pairs' ratios [default: 15;
    /// --quick: 3]
    #[arg(long)]
    pairs: Option<usize>,
    /// Skip DPDK: time pktvec only (no ratio rows)
    #[arg(long)]
    no_dpdk: bool,
    /// Build rte_lpm with rte_lpm_add (minutes per 1M routes) instead of writing the same
    /// tbl24/tbl8 entries directly into the table rte_lpm_create allocated (the default;
    /// the answers' checksums show that both hold the same table)
    #[arg(long)]
    rte_lpm_add: bool,
    /// Directory of the real route tables: $PKTVEC_SHARED_DATA/routes when that is set,
    /// else shared/data/routes next to this checkout; without their files the default
    /// tables' real ones (tier1, union) are skipped, with a note
    #[arg(long, default_value_os_t = c_harness::default_routes_dir())]
    routes_dir: PathBuf,
    /// Keep the route and key files both sides read in this directory (for
    /// `benches/dpdk/lpm4_count.c` under cachegrind) instead of a scratch directory
    #[arg(long)]
    files: Option<PathBuf>,
    /// Time nothing: run one pktvec method PASSES times per table (`single`, `raw:B` =
    /// `lookup_vector_raw` with sub-batch B, `portable:B`, `dir24:D`) and print the answers'
    /// checksum, for `valgrind --tool=cachegrind` (the difference of two pass counts is the
    /// lookups' cost)
    #[arg(long, value_name = "METHOD")]
    count: Option<String>,
    /// Passes of `--count`
    #[arg(long, default_value_t = 1)]
    passes: usize,
}

fn fnv(answers: &[Option<u32>]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for a in answers {
        let v = a.unwrap_or(u32::MAX);
        for s in (0..32).step_by(8) {
            h ^= u64::from((v >> s) & 0xff);
            h = h.wrapping_mul(0x100_0000_01b3);
        }
    }
    h
}

/// (name, uses the raw `u32` output, body)
type Method<'a> = (
    String,
    bool,
    Box<dyn Fn(&[u32], &mut [Option<u32>], &mut [u32]) + 'a>,
);

/// A method called on each vector of [`VEC`] keys, writing the output slice `pick` chooses.
fn per_vector<'a, T: 'a>(
    name: String,
    raw: bool,
    pick: for<'x> fn(&'x mut [Option<u32>], &'x mut [u32]) -> &'x mut [T],
    f: impl Fn(&[u32], &mut [T]) + 'a,
) -> Method<'a> {
    let body = move |k: &[u32], o: &mut [Option<u32>], r: &mut [u32]| {
        for (k, out) in k.chunks(VEC).zip(pick(o, r).chunks_mut(VEC)) {
            f(k, out);
        }
    };
    (name, raw, Box::new(body))
}

fn per_vector_raw<'a>(name: String, f: impl Fn(&[u32], &mut [u32]) + 'a) -> Method<'a> {
    per_vector(name, true, |_, r| r, f)
}

fn per_vector_option<'a>(name: String, f: impl Fn(&[u32], &mut [Option<u32>]) + 'a) -> Method<'a> {
    per_vector(name, false, |o, _| o, f)
}

/// The sub-batches of `lookup_vector_raw` measured (the headline's is 256).
const SUB_BATCHES: [usize; 5] = [16, 32, 64, 128, 256];

/// Every pktvec method measured, in the order they run.
fn methods(lpm: &Lpm4) -> Vec<Method<'_>> {
    let mut m: Vec<Method> = Vec::new();
    m.push((
        "single lookup()".into(),
        false,
        Box::new(|k, o, _| {
            for (k, o) in k.iter().zip(o.iter_mut()) {
                *o = lpm.lookup(*k);
            }
        }),
    ));
    m.push(per_vector_option(
        "lookup_bulk (no prefetch)".into(),
        |k, o| lpm.lookup_bulk(k, o),
    ));
    m.push(per_vector_option(
        "lookup_vector_batched b=32".into(),
        |k, o| lpm.lookup_vector_batched(k, o, 32),
    ));
    // The graph's two-phase helper: prefetch(key) for a sub-batch, then lookup(key).
    m.push((
        "prefetch()+lookup() b=32".into(),
        false,
        Box::new(|k, o, _| {
            for (k, o) in k.chunks(32).zip(o.chunks_mut(32)) {
                for &key in k {
                    lpm.prefetch(key);
                }
                for (key, o) in k.iter().zip(o.iter_mut()) {
                    *o = lpm.lookup(*key);
                }
            }
        }),
    ));
    m.push(per_vector_raw(
        "lookup_bulk_raw (no prefetch)".into(),
        |k, r| lpm.lookup_bulk_raw(k, r),
    ));
    for b in SUB_BATCHES {
        m.push(per_vector_raw(
            format!("lookup_vector_raw b={b}"),
            move |k, r| lpm.lookup_vector_raw(k, r, b),
        ));
    }
    // The read path forced (the rows above run `ReadPath::Auto`: each thread times the
    // paths and reads the cheapest; see the last row for the master alone).
    for b in [16usize, 256] {
        for (path, name) in [
            (ReadPath::Compressed, "compressed path"),
            (ReadPath::Lines, "lines"),
        ] {
            m.push(per_vector_raw(
                format!("lookup_vector_raw b={b} {name}"),
                move |k, r| {
                    lpm.set_read_path(path);
                    lpm.lookup_vector_raw(k, r, b);
                    lpm.set_read_path(ReadPath::Auto);
                },
            ));
        }
    }
    // The prefetch level forced (the rows above run `PrefetchLevel::Auto`).
    for b in [16usize, 64, 256] {
        for level in [PrefetchLevel::L1, PrefetchLevel::L2] {
            m.push(per_vector_raw(
                format!("lookup_vector_raw b={b} prefetch {level:?}"),
                move |k, r| {
                    lpm.set_prefetch_level(level);
                    lpm.set_read_path(ReadPath::Compressed);
                    lpm.lookup_vector_raw(k, r, b);
                    lpm.set_read_path(ReadPath::Auto);
                    lpm.set_prefetch_level(PrefetchLevel::Auto);
                },
            ));
        }
    }
    m.push(per_vector_raw(
        "lookup_vector_raw_portable b=256".into(),
        |k, r| lpm.lookup_vector_raw_portable(k, r, 256),
    ));
    m.push(per_vector_raw(
        "lookup_vector_pipelined d=16".into(),
        |k, r| lpm.lookup_vector_pipelined(k, r, 16),
    ));
    m.push(per_vector_option(
        format!("lookup_vector (Option, b={DEFAULT_SUB_BATCH})"),
        |k, o| lpm.lookup_vector(k, o),
    ));
    // Last: the DIR-24-8 master's 64 MiB first level evicts the read path from the caches
    // (each pass starts with an untimed warm-up).
    m.push(per_vector_raw(
        "DIR-24-8 master lookup_vector_dir24 d=32".into(),
        |k, r| lpm.lookup_vector_dir24(k, r, 32),
    ));
    m
}

/// The path [`ReadPath::Auto`] has this thread reading.
fn auto_label(lpm: &Lpm4) -> &'static str {
    match lpm.auto_read_path() {
        Some(ReadPath::Dir24) => "DIR-24-8 master",
        Some(ReadPath::Lines) => "lines",
        Some(_) => "compressed path",
        None => "(no vector yet)",
    }
}

/// One round of pktvec's methods: `reps` passes, each method's best cycles per key and its
/// answers' checksum.
fn pktvec_round(lpm: &Lpm4, keys: &[u32], reps: usize) -> Vec<(String, f64, u64)> {
    let methods = methods(lpm);
    let mut out = vec![None; keys.len()];
    let mut raw = vec![0u32; keys.len()];
    let mut best = vec![f64::MAX; methods.len()];
    let mut sums = vec![0u64; methods.len()];
    for _ in 0..reps {
        // Untimed warm-up: the read path as warm as a running router keeps it.
        for (k, r) in keys.chunks(VEC).zip(raw.chunks_mut(VEC)) {
            lpm.lookup_vector_raw(k, r, VEC);
        }
        for (i, (_, is_raw, f)) in methods.iter().enumerate() {
            out.iter_mut().for_each(|o| *o = Some(u32::MAX - 1));
            raw.iter_mut().for_each(|o| *o = u32::MAX - 1);
            let t0 = clock::now();
            f(keys, &mut out, &mut raw);
            let c = (clock::now() - t0) as f64 / keys.len() as f64;
            best[i] = best[i].min(c);
            if *is_raw {
                for (o, r) in out.iter_mut().zip(&raw) {
                    *o = (*r != MISS).then_some(*r);
                }
            }
            sums[i] = fnv(&out);
        }
    }
    methods
        .into_iter()
        .zip(best.into_iter().zip(sums))
        .map(|((name, _, _), (c, s))| (name, c, s))
        .collect()
}

/// `n` pairs ([`Paired`]): pktvec's `lookup_vector_raw` with sub-batch `b` on its default
/// read path, and rte_lpm_lookup_bulk in the served harness; both must answer alike.
fn paired(lpm: &Lpm4, keys: &[u32], b: usize, n: usize, s: &mut Served) -> Result<Paired, Error> {
    let mut raw = vec![0u32; keys.len()];
    let ours = || {
        let mut pass = || {
            for (k, r) in keys.chunks(VEC).zip(raw.chunks_mut(VEC)) {
                lpm.lookup_vector_raw(k, r, b);
            }
        };
        pass();
        let t0 = clock::now();
        pass();
        let c = (clock::now() - t0) as f64 / keys.len() as f64;
        let out: Vec<Option<u32>> = raw.iter().map(|&r| (r != MISS).then_some(r)).collect();
        Ok((c, fnv(&out)))
    };
    let theirs = || {
        let (c, sum) = served_pass(s, "bulk")?;
        Ok((c, u64::from_str_radix(&sum, 16)?))
    };
    Paired::run(n, ours, theirs, |a, b| {
        if a == b {
            Ok(())
        } else {
            Err("pairs: pktvec and rte_lpm answer differently".into())
        }
    })
}

/// One measured method over all rounds.
struct Series {
    library: &'static str,
    method: String,
    rounds: Vec<f64>,
    checksum: u64,
}

impl Series {
    fn median(&self) -> f64 {
        median(self.rounds.clone())
    }
}

/// Folds a round's figures into the series (same methods in the same order).
fn add_round(all: &mut Vec<Series>, library: &'static str, round: Vec<(String, f64, u64)>) {
    for (method, c, sum) in round {
        match all
            .iter_mut()
            .find(|s| s.library == library && s.method == method)
        {
            Some(s) => {
                s.rounds.push(c);
                if s.checksum != sum {
                    s.checksum = sum; // a disagreement shows up in the final comparison
                }
            }
            None => all.push(Series {
                library,
                method,
                rounds: vec![c],
                checksum: sum,
            }),
        }
    }
}

/// The real route files (in the routes directory) the table `spec` is read from; none for a
/// generated table or a route file's path.
fn real_files(spec: &str) -> &'static [&'static str] {
    match spec {
        "tier1" => &[TIER1],
        "union" => &[TIER1, RIPE],
        _ => &[],
    }
}

/// A table by name: (what the rows call it, its routes).
fn load_table(spec: &str, n_routes: usize, dir: &Path) -> Result<(String, Vec<Route4>), Error> {
    let real = |file: &str| -> Result<Vec<Route4>, Error> {
        let p = dir.join(file);
        routes::load_ipv4_file(&p)
            .map_err(|e| format!("{}: {e} (see --routes-dir)", p.display()).into())
    };
    let (name, table) = match spec {
        "uniform" | "gen" => ("uniform".to_string(), routes::generate_ipv4(n_routes, 1)),
        "clustered" => (
            "clustered".to_string(),
            routes::generate_ipv4_clustered(n_routes, 1),
        ),
        "tier1" => ("tier1".to_string(), real(TIER1)?),
        "union" => {
            let (a, b) = (real(TIER1)?, real(RIPE)?);
            (
                "union tier1+RIPE".to_string(),
                routes::union_prefixes(&[&a, &b]),
            )
        }
        path => (path.to_string(), routes::load_ipv4_file(path)?),
    };
    // rte_lpm carries 24-bit next hops: the same on both sides.
    let table = table
        .into_iter()
        .map(|r| Route4 {
            next_hop: r.next_hop & 0xff_ffff,
            ..r
        })
        .collect();
    Ok((name, table))
}

/// Runs the measurement.
pub fn run(args: Args) -> Result<(), Error> {
    let quick = args.common.quick;
    let mut tables = if args.tables.is_empty() {
        let t: &[&str] = if quick {
            &["tier1", "uniform", "clustered"]
        } else {
            &["union", "tier1", "uniform", "clustered"]
        };
        t.iter().map(|s| s.to_string()).collect()
    } else {
        args.tables.clone()
    };
    let pick = |v: Option<usize>, full: usize, q: usize| v.unwrap_or(if quick { q } else { full });
    let n_routes = pick(args.routes, 1_000_000, 100_000);
    let n_keys = pick(args.keys, 1 << 20, 1 << 16);
    let n_keys = (n_keys - n_keys % VEC).max(VEC);
    let reps = pick(args.reps, 3, 2).max(1);
    let rounds = pick(args.rounds, 5, 1).max(1);
    let n_pairs = pick(args.pairs, 15, 3).max(1);

    let sitting = Sitting::begin(
        "lpm4",
        "IPv4 LPM vs rte_lpm",
        "lookup-tables.md",
        &args.common,
    )?;
    // The default tables: the real ones are left out, with a note, when their files are not
    // here (a clone without the shared data); tables named with --tables are read or fail.
    let mut skipped = None;
    if args.tables.is_empty() {
        let path = |f: &&str| args.routes_dir.join(f);
        let wanted: Vec<PathBuf> = tables
            .iter()
            .flat_map(|t| real_files(t))
            .map(path)
            .collect();
        let lost = c_harness::missing(&wanted);
        if !lost.is_empty() {
            let gone: Vec<String> = tables
                .iter()
                .filter(|t| real_files(t).iter().any(|f| lost.contains(&path(f))))
                .cloned()
                .collect();
            let what = format!("{} rows skipped", gone.join("/"));
            skipped = Some(c_harness::skip_note("real route tables", &lost, &what));
            tables.retain(|t| !gone.contains(t));
        }
    }
    let harness = if args.no_dpdk || args.count.is_some() {
        None
    } else {
        Some(c_harness::build("lpm4_bench")?)
    };
    let scratch = Scratch::new("lpm4")?;
    let files = match &args.files {
        Some(d) => {
            std::fs::create_dir_all(d)?;
            d.clone()
        }
        None => scratch.path(""),
    };
    let key_addrs = routes::random_ipv4_keys(n_keys, 42);
    let keys: Vec<u32> = key_addrs.iter().copied().map(u32::from).collect();
    let keys_path = files.join("lpm4_keys.txt");
    routes::write_keys_file(&keys_path, &key_addrs)?;
    println!(
        "{} random destinations; {reps} passes per method per round, median of {rounds} rounds{}",
        thousands(n_keys),
        if harness.is_some() {
            "; rte_lpm on --no-huge (4 KiB pages)"
        } else {
            "; DPDK skipped"
        }
    );

    let mut headline = Vec::new();
    let mut detail_tables = Vec::new();
    let mut curves = Vec::new();
    for spec in &tables {
        let (name, table) = load_table(spec, n_routes, &args.routes_dir)?;
        let quarters = routes::ipv4_quarter_stats(&table);
        let thp0 = mem::anon_huge_pages_kib();
        let t0 = std::time::Instant::now();
        let lpm = Lpm4::from_routes(Lpm4Config::default(), &table)?;
        let build_ms = t0.elapsed().as_secs_f64() * 1e3;
        let thp_kib = thp0
            .zip(mem::anon_huge_pages_kib())
            .map(|(a, b)| b.saturating_sub(a));
        let case = format!("{name} ({} prefixes)", thousands(lpm.len()));
        let routes_path = files.join("lpm4_routes.txt");
        routes::write_routes_file(&routes_path, &table)?;
        if let Some(method) = &args.count {
            let sum = count_passes(&lpm, &keys, method, args.passes)?;
            println!("{case}: {method} x{}: checksum {sum:016x}", args.passes);
            continue;
        }
        let lpm_4k = Lpm4::from_routes(
            Lpm4Config {
                huge_pages: false,
                ..Default::default()
            },
            &table,
        )?;
        drop(table);
        eprintln!(
            "{case}: built in {build_ms:.0} ms; read path {:.2} MiB; THP advised {}",
            lpm.read_path_bytes() as f64 / 1048576.0,
            lpm.huge_pages_advised()
        );
        let mut served = match &harness {
            Some(bin) => {
                let mut a = c_harness::eal_args("lpm4", 2048);
                a.extend([
                    routes_path.display().to_string(),
                    keys_path.display().to_string(),
                    reps.to_string(),
                    TBL8S.to_string(),
                    "serve".into(),
                ]);
                if !args.rte_lpm_add {
                    a.push("fill".into());
                }
                Some(Served::start(bin, &a)?)
            }
            None => None,
        };
        let rte_mem: Option<u64> = served.as_ref().and_then(|s| s.info_value("memory"));
        let mut all: Vec<Series> = Vec::new();
        let mut loadavg = Vec::new();
        for round in 0..rounds {
            let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
            eprintln!(
                "{case}: round {} of {rounds}; load {}",
                round + 1,
                load.trim()
            );
            loadavg.push(load.trim().to_string());
            let mut mine: Vec<(String, f64, u64)> = pktvec_round(&lpm, &keys, reps)
                .into_iter()
                .map(|(m, c, s)| (format!("{m} [THP]"), c, s))
                .collect();
            mine.extend(
                pktvec_round(&lpm_4k, &keys, reps)
                    .into_iter()
                    .map(|(m, c, s)| (format!("{m} [4 KiB]"), c, s)),
            );
            eprintln!(
                "{case}: after the round, ReadPath::Auto reads the {} (THP) and the {} (4 KiB)",
                auto_label(&lpm),
                auto_label(&lpm_4k)
            );
            add_round(&mut all, "pktvec", mine);
            if let Some(s) = served.as_mut() {
                let mut theirs = Vec::new();
                for f in s.round()? {
                    if let [r, name, cyc, sum] = f.as_slice() {
                        if r == "result" {
                            theirs.push((
                                name.clone(),
                                cyc.parse()?,
                                u64::from_str_radix(sum, 16)?,
                            ));
                        }
                    }
                }
                add_round(&mut all, "rte_lpm", theirs);
            }
        }
        // Pairs of single passes, back to back: the host's state (how fast its memory
        // answers; it can move either side's figure by half between rounds seconds
        // apart) is nearly the same for both passes of a pair.
        let mut pairs = Vec::new();
        if let Some(s) = served.as_mut() {
            for b in [256usize, 16] {
                let p = paired(&lpm, &keys, b, n_pairs, s)?;
                eprintln!("{case}: b={b}: {}", p.summary("rte_lpm_lookup_bulk"));
                pairs.push((b, p));
            }
        }
        drop(served);
        c_harness::remove_eal_dir("lpm4");
        let want = all[0].checksum;
        if let Some(bad) = all.iter().find(|s| s.checksum != want) {
            return Err(format!(
                "{case}: {} {} answers differ (checksum {:016x} vs {want:016x})",
                bad.library, bad.method, bad.checksum
            )
            .into());
        }
        let get = |lib: &str, m: &str| {
            all.iter()
                .find(|s| s.library == lib && s.method == m)
                .map(Series::median)
        };
        let ours_single = get("pktvec", "single lookup() [THP]").unwrap_or(f64::NAN);
        // b = 256 (a whole vector) and b = 16 (the graph's default sub-batch): each side's
        // median over the pairs, and the median of the pairs' ratios.
        for (b, p) in &pairs {
            headline.push(p.headline(&format!("{case}: vector b={b}"), "rte_lpm_lookup_bulk", 2.0));
        }
        if let Some(single) = get("rte_lpm", "rte_lpm_lookup") {
            headline.push(Headline::cost(
                &format!("{case}: single lookup()"),
                "cycles/lookup",
                ours_single,
                "rte_lpm_lookup",
                single,
            ));
        }
        println!();
        println!("{case}: cycles per lookup (median of {rounds} rounds)");
        let bulk = get("rte_lpm", "rte_lpm_lookup_bulk");
        for s in &all {
            let m = s.median();
            println!(
                "  {:<8} {:<52} {:>8.2}{}",
                s.library,
                s.method,
                m,
                bulk.map_or(String::new(), |b| format!("  x bulk {:.2}", b / m))
            );
        }
        let mut curve = Vec::new();
        for b in SUB_BATCHES {
            if let Some(c) = get("pktvec", &format!("lookup_vector_raw b={b} [THP]")) {
                curve.push((b as f64, c));
            }
        }
        curves.push((format!("pktvec {name}"), curve));
        if let Some(b) = bulk {
            curves.push((
                format!("rte_lpm_lookup_bulk {name}"),
                vec![(SUB_BATCHES[0] as f64, b), (256.0, b)],
            ));
        }
        let mem_bytes = lpm.memory_bytes();
        detail_tables.push(json!({
            "table": name,
            "routes": lpm.len(),
            "keys": keys.len(),
            "groups": lpm.groups_in_use(),
            "pktvec_bytes": mem_bytes,
            "pktvec_bytes_per_route": mem_bytes as f64 / lpm.len() as f64,
            "read_path_bytes": lpm.read_path_bytes(),
            "rte_lpm_bytes": rte_mem,
            "rte_lpm_bytes_per_route": rte_mem.map(|m| m as f64 / lpm.len() as f64),
            "rte_lpm_tbl8s": TBL8S,
            "rte_lpm_built_by": if args.rte_lpm_add { "rte_lpm_add" } else { "fill" },
            "build_ms": build_ms,
            "thp_kib": thp_kib,
            "quarters": quarters,
            "loadavg": loadavg,
            "checksum": format!("{want:016x}"),
            "pairs": pairs.iter().map(|(b, p)| {
                let mut j = p.json("rte_lpm_lookup_bulk");
                j["b"] = json!(b);
                j
            }).collect::<Vec<_>>(),
            "rows": all.iter().map(|s| json!({
                "library": s.library,
                "method": s.method,
                "cycles_per_lookup": s.median(),
                "rounds": s.rounds,
            })).collect::<Vec<_>>(),
        }));
    }
    if args.count.is_some() {
        return Ok(());
    }
    if let Some(p) = sitting.plot_path("subbatch") {
        crate::plot::lines(
            &p,
            "IPv4 LPM: lookup_vector_raw (THP) by sub-batch b, and rte_lpm_lookup_bulk",
            "sub-batch b",
            "TSC cycles per lookup (median of rounds)",
            &curves,
        )?;
    }
    let mut detail = json!({
        "keys": n_keys,
        "reps": reps,
        "rounds": rounds,
        "vector": VEC,
        "dpdk": harness.is_some(),
        "pairs": n_pairs,
        "note": "rows: cycles per lookup, per round the best of `reps` passes, median over rounds; [THP] = Lpm4Config::huge_pages true (default), [4 KiB] = false; rte_lpm on EAL --no-huge. pairs (the headline): single passes of lookup_vector_raw (default read path, THP) and rte_lpm_lookup_bulk back to back, the first of a pair alternating; medians of each side and of the pairs' ratios",
        "tables": detail_tables,
    });
    if let Some(s) = skipped {
        detail["skipped"] = json!(s);
    }
    sitting.finish(headline, detail)?;
    Ok(())
}

/// `--count METHOD --passes N`: untimed passes of one method over all keys; returns the
/// answers' checksum.
fn count_passes(lpm: &Lpm4, keys: &[u32], method: &str, passes: usize) -> Result<u64, Error> {
    let (kind, arg) = method.split_once(':').unwrap_or((method, "256"));
    let arg: usize = arg.parse()?;
    let mut raw = vec![0u32; keys.len()];
    for _ in 0..passes {
        let chunks = keys.chunks(VEC).zip(raw.chunks_mut(VEC));
        match kind {
            "single" => {
                for (k, r) in keys.iter().zip(raw.iter_mut()) {
                    *r = lpm.lookup(*k).unwrap_or(MISS);
                }
            }
            "raw" => chunks.for_each(|(k, r)| lpm.lookup_vector_raw(k, r, arg)),
            "portable" => chunks.for_each(|(k, r)| lpm.lookup_vector_raw_portable(k, r, arg)),
            "dir24" => chunks.for_each(|(k, r)| lpm.lookup_vector_dir24(k, r, arg)),
            _ => return Err(format!("--count: unknown method {method}").into()),
        }
    }
    let out: Vec<Option<u32>> = raw.iter().map(|&r| (r != MISS).then_some(r)).collect();
    Ok(fnv(&out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_method_agrees_on_a_small_table() {
        let table = routes::generate_ipv4(2_000, 1);
        let lpm = Lpm4::from_routes(Lpm4Config::default(), &table).unwrap();
        let keys: Vec<u32> = routes::random_ipv4_keys(1024, 7)
            .into_iter()
            .map(u32::from)
            .collect();
        let r = pktvec_round(&lpm, &keys, 1);
        assert!(r.iter().all(|m| m.2 == r[0].2), "{r:?}");
    }
}
