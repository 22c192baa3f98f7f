//! IPv6 LPM lookup cost of pktvec's `Lpm6` and, in the same sitting, of DPDK's `rte_lpm6`
//! on the SAME routes and the SAME keys; prints cycles per lookup and the ratios.
//!
//! ```text
//! cargo run --release --example lpm6_perf                          # pktvec only
//! flock /tmp/pktvec-bench.lock cargo run --release --example lpm6_perf -- --dpdk \
//!     --rounds 3 --json docs/results/lookup-ipv6.json --svg docs/results/lookup-ipv6.svg
//! ```
//!
//! Tables: `gen200k` = `routes::generate_ipv6(200_000, 1)` (the seed's 200,000 /48–/64
//! prefixes); `tier1` = the real table in `shared/data/routes/tier1-fulltable-ipv6.txt.xz`
//! (160,147 prefixes), when present. Keys: `--keys` (default 1,048,576) addresses, 90% inside
//! a random route of the table (`routes::random_keys_in`) and 10% uniform in 2000::/3
//! (`routes::random_ipv6_keys`), shuffled together, so most lookups hit.
//!
//! With `--dpdk` the routes and keys are written to `--dir` (default `/tmp/pktvec-lpm6`) as
//! text, and `benches/dpdk/lpm6_bench.c` (compiled to `--dpdk-bin`, default
//! `/tmp/lpm6_bench`, if missing) loads them into `rte_lpm6` and times `rte_lpm6_lookup` and
//! `rte_lpm6_lookup_bulk_func` (vectors of 256). Both sides print the number of hits and the
//! sum of next hops (modulo 2^21, rte_lpm6's next-hop width), which must agree. Cycles are
//! TSC cycles (`pktvec::graph::clock`); each figure is the fastest of `--reps` passes over all keys (the same on the C side), and the
//! table shows the median over `--rounds` rounds (pktvec then DPDK in each round).

mod perf_report;

use perf_report::{median, Series};
use pktvec::graph::clock;
use pktvec::lookup::ipv6::Lpm6;
use pktvec::lookup::routes::{
    generate_ipv6, load_ipv6_file, random_ipv6_keys, random_keys_in, write_keys_file,
    write_routes_file, Route6, SplitMix64,
};
use serde::Serialize;
use std::hint::black_box;
use std::net::Ipv6Addr;
use std::path::{Path, PathBuf};
use std::process::Command;

const TIER1: &str = "/work/shared/data/routes/tier1-fulltable-ipv6.txt.xz";

#[derive(Serialize, Clone, Debug, Default)]
struct Row {
    table: String,
    routes: usize,
    keys: usize,
    hit_fraction: f64,
    lines_per_lookup: f64,
    pktvec_bytes: usize,
    pktvec_bytes_per_route: f64,
    pktvec_build_ms: f64,
    single: f64,
    bulk: f64,
    vector_nopf: f64,
    vector_pf: f64,
    dpdk_single: Option<f64>,
    dpdk_bulk: Option<f64>,
    dpdk_bytes: Option<usize>,
    dpdk_number_tbl8s: Option<u64>,
    dpdk_build_ms: Option<f64>,
    dpdk_checksum_ok: Option<bool>,
    /// rte_lpm6_lookup cycles / pktvec single cycles (rate ratio, higher is better).
    ratio_single: Option<f64>,
    /// rte_lpm6_lookup_bulk_func cycles / pktvec vector-with-prefetch cycles.
    ratio_vector: Option<f64>,
    /// rte_lpm6_lookup_bulk_func cycles / pktvec lookup_bulk cycles.
    ratio_bulk: Option<f64>,
}

/// Cycles per key of `f` over all keys: the fastest of `reps` passes (the machine is shared
/// with compiles that the benchmark lock does not stop; the minimum is the least disturbed).
fn time_per_key(reps: usize, n: usize, mut f: impl FnMut() -> u64) -> f64 {
    black_box(f());
    let mut v = Vec::new();
    for _ in 0..reps {
        let t0 = clock::now();
        black_box(f());
        v.push((clock::now() - t0) as f64 / n as f64);
    }
    v.into_iter().fold(f64::MAX, f64::min)
}

/// rte_lpm6 stores 21-bit next hops (DPDK 22.11): ids are compared modulo 2^21.
const DPDK_NH_MASK: u32 = (1 << 21) - 1;

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

struct Ours {
    row: Row,
    checksum: (u64, u64),
}

fn measure_ours(
    name: &str,
    routes: &[Route6],
    keys: &[Ipv6Addr],
    reps: usize,
) -> Result<Ours, Box<dyn std::error::Error>> {
    let t0 = std::time::Instant::now();
    let mut t = Lpm6::from_routes(routes.iter().map(|r| (r.addr, r.len, r.next_hop)))?;
    let build_ms = t0.elapsed().as_secs_f64() * 1e3;
    t.shrink_to_fit();
    let k: Vec<u128> = keys.iter().map(|&a| u128::from(a)).collect();
    let n = k.len();
    let mut out = vec![None; n];
    t.lookup_vector(&k, &mut out)?;
    let cs = checksum(&out);
    let lines: u64 = k.iter().map(|&x| u64::from(t.accesses(x))).sum();

    let single = time_per_key(reps, n, || {
        let mut acc = 0u64;
        for &x in &k {
            acc = acc.wrapping_add(u64::from(t.lookup(x).unwrap_or(0)));
        }
        acc
    });
    let bulk = time_per_key(reps, n, || {
        for (kc, oc) in k.chunks(256).zip(out.chunks_mut(256)) {
            t.lookup_bulk(kc, oc).ok();
        }
        out[n / 2].unwrap_or(0).into()
    });
    let mut vec_time = |pf: bool| {
        time_per_key(reps, n, || {
            for (kc, oc) in k.chunks(256).zip(out.chunks_mut(256)) {
                t.lookup_vector_with(kc, oc, pf).ok();
            }
            out[n / 2].unwrap_or(0).into()
        })
    };
    let vector_nopf = vec_time(false);
    let vector_pf = vec_time(true);
    let s = t.stats();
    eprintln!(
        "  {name}: pktvec single {single:.1}  bulk {bulk:.1}  vec {vector_nopf:.1}  vec+pf {vector_pf:.1} cycles/lookup; {:?}",
        s
    );
    Ok(Ours {
        row: Row {
            table: name.to_string(),
            routes: t.len(),
            keys: n,
            hit_fraction: cs.0 as f64 / n as f64,
            lines_per_lookup: lines as f64 / n as f64,
            pktvec_bytes: s.lookup_bytes,
            pktvec_bytes_per_route: s.bytes_per_route(),
            pktvec_build_ms: build_ms,
            single,
            bulk,
            vector_nopf,
            vector_pf,
            ..Row::default()
        },
        checksum: cs,
    })
}

fn dpdk_bin(path: &Path) -> Result<(), Box<dyn std::error::Error>> {
    if path.exists() {
        return Ok(());
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/dpdk/lpm6_bench.c");
    eprintln!("building {} from {}", path.display(), src.display());
    let status = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "cc -O3 $(pkg-config --cflags libdpdk) '{}' -o '{}' $(pkg-config --libs libdpdk)",
            src.display(),
            path.display()
        ))
        .status()?;
    if !status.success() {
        return Err("building the DPDK harness failed (needs libdpdk-dev)".into());
    }
    Ok(())
}

fn run_dpdk(
    bin: &Path,
    routes: &Path,
    keys: &Path,
    reps: usize,
) -> Result<Vec<(String, String)>, Box<dyn std::error::Error>> {
    let out = Command::new(bin)
        .args([
            "--no-huge",
            "-m",
            "2048",
            "--no-pci",
            "-l",
            "0",
            "--log-level=1",
        ])
        .arg("--")
        .arg(routes)
        .arg(keys)
        .arg(reps.to_string())
        .arg("256")
        .output()?;
    if !out.status.success() {
        return Err(format!(
            "{} failed: {}",
            bin.display(),
            String::from_utf8_lossy(&out.stderr)
        )
        .into());
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(a, b)| (a.to_string(), b.trim().to_string()))
        .collect())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flag = |f: &str| args.iter().any(|a| a == f);
    let value = |f: &str| {
        args.iter()
            .position(|a| a == f)
            .and_then(|i| args.get(i + 1).cloned())
    };
    let nkeys: usize = value("--keys").map_or(Ok(1 << 20), |s| s.parse())?;
    let nroutes: usize = value("--routes").map_or(Ok(200_000), |s| s.parse())?;
    let reps: usize = value("--reps").map_or(Ok(7), |s| s.parse())?;
    let rounds: usize = value("--rounds").map_or(Ok(1), |s| s.parse())?;
    let dir = PathBuf::from(value("--dir").unwrap_or_else(|| "/tmp/pktvec-lpm6".into()));
    let bin = PathBuf::from(value("--dpdk-bin").unwrap_or_else(|| "/tmp/lpm6_bench".into()));
    let dpdk = flag("--dpdk");
    let hz = clock::tsc_hz();
    println!(
        "TSC {:.3} GHz; {nkeys} keys (90% inside a route), fastest of {reps} passes per figure, {rounds} round(s)",
        hz / 1e9
    );

    let mut tables: Vec<(String, Vec<Route6>)> =
        vec![("gen200k".into(), generate_ipv6(nroutes, 1))];
    if !flag("--no-tier1") {
        if Path::new(TIER1).exists() {
            tables.push(("tier1".into(), load_ipv6_file(TIER1)?));
        } else {
            eprintln!("note: {TIER1} not present; tier1 table skipped");
        }
    }
    if dpdk {
        dpdk_bin(&bin)?;
        std::fs::create_dir_all(&dir)?;
    }

    let mut all: Vec<Vec<Row>> = Vec::new();
    for round in 0..rounds {
        eprintln!("round {}/{rounds}", round + 1);
        let mut rows = Vec::new();
        for (name, routes) in &tables {
            let keys = make_keys(routes, nkeys, 42);
            let ours = measure_ours(name, routes, &keys, reps)?;
            let mut row = ours.row;
            if dpdk {
                let rp = dir.join(format!("{name}.routes.txt"));
                let kp = dir.join(format!("{name}.keys.txt"));
                write_routes_file(&rp, routes)?;
                write_keys_file(&kp, &keys)?;
                let kv = run_dpdk(&bin, &rp, &kp, reps)?;
                let get = |k: &str| kv.iter().find(|(a, _)| a == k).map(|(_, b)| b.clone());
                let num = |k: &str| get(k).and_then(|v| v.parse::<f64>().ok());
                row.dpdk_single = num("single_cycles_min");
                row.dpdk_bulk = num("bulk_cycles_min");
                row.dpdk_bytes = num("memory_bytes").map(|v| v as usize);
                row.dpdk_number_tbl8s = num("number_tbl8s").map(|v| v as u64);
                row.dpdk_build_ms = num("build_cycles").map(|c| c / hz * 1e3);
                let ok = num("hits") == Some(ours.checksum.0 as f64)
                    && num("nh_sum") == Some(ours.checksum.1 as f64)
                    && num("bulk_hits") == Some(ours.checksum.0 as f64)
                    && num("bulk_nh_sum") == Some(ours.checksum.1 as f64);
                row.dpdk_checksum_ok = Some(ok);
                if !ok {
                    eprintln!(
                        "  WARNING {name}: results differ: pktvec hits/sum {:?}, dpdk {:?}/{:?}",
                        ours.checksum,
                        get("hits"),
                        get("nh_sum")
                    );
                }
                eprintln!(
                    "  {name}: rte_lpm6 single {:.1}  bulk {:.1} cycles/lookup",
                    row.dpdk_single.unwrap_or(0.0),
                    row.dpdk_bulk.unwrap_or(0.0)
                );
            }
            rows.push(row);
        }
        all.push(rows);
    }

    // Median over rounds of each timed figure.
    let mut rows = all[0].clone();
    for (i, r) in rows.iter_mut().enumerate() {
        let med = |f: &dyn Fn(&Row) -> Option<f64>| -> Option<f64> {
            let v: Vec<f64> = all.iter().filter_map(|rs| f(&rs[i])).collect();
            (!v.is_empty()).then(|| median(v))
        };
        r.single = med(&|x| Some(x.single)).unwrap_or(0.0);
        r.bulk = med(&|x| Some(x.bulk)).unwrap_or(0.0);
        r.vector_nopf = med(&|x| Some(x.vector_nopf)).unwrap_or(0.0);
        r.vector_pf = med(&|x| Some(x.vector_pf)).unwrap_or(0.0);
        r.dpdk_single = med(&|x| x.dpdk_single);
        r.dpdk_bulk = med(&|x| x.dpdk_bulk);
        r.dpdk_checksum_ok = r
            .dpdk_checksum_ok
            .map(|_| all.iter().all(|rs| rs[i].dpdk_checksum_ok == Some(true)));
        r.ratio_single = r.dpdk_single.map(|d| d / r.single);
        r.ratio_bulk = r.dpdk_bulk.map(|d| d / r.bulk);
        r.ratio_vector = r.dpdk_bulk.map(|d| d / r.vector_pf);
    }
    print_table(&rows, rounds);
    if let Some(path) = value("--json") {
        std::fs::write(&path, serde_json::to_string_pretty(&all)?)?;
        eprintln!("wrote {path} (every round)");
    }
    if let Some(path) = value("--svg") {
        plot(&rows, &path)?;
        eprintln!("wrote {path}");
    }
    Ok(())
}

fn print_table(rows: &[Row], rounds: usize) {
    let opt = |x: Option<f64>, p: usize| x.map_or("-".to_string(), |v| format!("{v:.p$}"));
    println!();
    println!("cycles per lookup, median of {rounds} round(s)");
    println!(
        "{:<8} {:>7} {:>6} {:>6} | {:>7} {:>7} {:>7} {:>7} | {:>8} {:>8} | {:>7} {:>7} {:>7} {:>3}",
        "table",
        "routes",
        "hit%",
        "lines",
        "single",
        "bulk",
        "vec256",
        "vec+pf",
        "rte_1",
        "rte_bulk",
        "x_1",
        "x_bulk",
        "x_vec",
        "ok"
    );
    for r in rows {
        println!(
            "{:<8} {:>7} {:>6.1} {:>6.2} | {:>7.1} {:>7.1} {:>7.1} {:>7.1} | {:>8} {:>8} | {:>7} {:>7} {:>7} {:>3}",
            r.table,
            r.routes,
            100.0 * r.hit_fraction,
            r.lines_per_lookup,
            r.single,
            r.bulk,
            r.vector_nopf,
            r.vector_pf,
            opt(r.dpdk_single, 1),
            opt(r.dpdk_bulk, 1),
            opt(r.ratio_single, 2),
            opt(r.ratio_bulk, 2),
            opt(r.ratio_vector, 2),
            r.dpdk_checksum_ok.map_or("-", |b| if b { "yes" } else { "NO" }),
        );
    }
    println!();
    println!("memory");
    for r in rows {
        println!(
            "{:<8} pktvec {:>8.1} MiB ({:>6.1} B/route, build {:.0} ms)   rte_lpm6 {} MiB ({} B/route, number_tbl8s {}, build {} ms)",
            r.table,
            r.pktvec_bytes as f64 / 1048576.0,
            r.pktvec_bytes_per_route,
            r.pktvec_build_ms,
            opt(r.dpdk_bytes.map(|b| b as f64 / 1048576.0), 1),
            opt(r.dpdk_bytes.map(|b| b as f64 / r.routes as f64), 1),
            r.dpdk_number_tbl8s.map_or("-".into(), |v| v.to_string()),
            opt(r.dpdk_build_ms, 0),
        );
    }
    println!(
        "lines = cache lines read per lookup after pktvec's 256 KiB first level; x_1 = rte_lpm6_lookup / pktvec single,\n\
         x_bulk = rte_lpm6_lookup_bulk_func(256) / pktvec lookup_bulk, x_vec = rte_lpm6_lookup_bulk_func(256) / pktvec vector+prefetch\n\
         (rate ratios: > 1 means pktvec is faster); ok = both answered the same (hits and sum of next hops)"
    );
}

fn plot(rows: &[Row], path: &str) -> Result<(), Box<dyn std::error::Error>> {
    let series = |label, rgb, f: fn(&Row) -> Option<f64>| Series::of(label, rgb, rows, f);
    perf_report::BarChart {
        caption: "IPv6 LPM: TSC cycles per lookup (lower is better), same routes and keys".into(),
        y_desc: "cycles / lookup".into(),
        size: (1000, 500),
        groups: rows
            .iter()
            .map(|r| format!("{} ({} routes)", r.table, r.routes))
            .collect(),
        series: vec![
            series("pktvec lookup", (150, 180, 230), |r| Some(r.single)),
            series("pktvec lookup_bulk", (90, 130, 210), |r| Some(r.bulk)),
            series("pktvec vector-256, no prefetch", (40, 90, 190), |r| {
                Some(r.vector_nopf)
            }),
            series("pktvec vector-256 + prefetch", (10, 40, 130), |r| {
                Some(r.vector_pf)
            }),
            series("rte_lpm6_lookup", (240, 150, 130), |r| r.dpdk_single),
            series("rte_lpm6_lookup_bulk_func (256)", (200, 40, 30), |r| {
                r.dpdk_bulk
            }),
        ],
        log_from: None,
        value_labels: true,
        headroom: 1.35,
        legend_upper_right: true,
    }
    .write_svg(path)
}
