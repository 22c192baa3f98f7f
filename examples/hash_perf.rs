//! The L2 switch's table lookups on pktvec's exact-match hash and, in the same sitting, on
//! DPDK's `rte_hash` with the same keys and lookup sequence; prints both and their ratio.
//!
//! ```text
//! cargo build --release --example hash_perf
//! flock /tmp/pktvec-bench.lock target/release/examples/hash_perf                  # pktvec only
//! flock /tmp/pktvec-bench.lock target/release/examples/hash_perf --dpdk           # and rte_hash
//! flock /tmp/pktvec-bench.lock target/release/examples/hash_perf --dpdk \
//!     --json docs/results/lookup-hash.json --svg docs/results/lookup-hash.svg
//! ```
//!
//! `--from-json FILE [--svg OUT]` re-prints and re-plots a saved `--json` run.
//!
//! Options: `--sizes 1K,64K,1M,16M,96M` (K = 2^10, M = 2^20 entries), `--lookups N` (per
//! repetition, a multiple of 512; default 2^22), `--reps R` (median of R, default 5),
//! `--miss-pct P` (share of lookups for keys not in the table, default 0), `--burst B`
//! (rte_hash burst, 1..=64, default 64), `--dir D` (where the key files go, default
//! `$TMPDIR/pktvec-hash-bench`), `--dpdk-bin PATH` (default: build `benches/dpdk/hash_bench.c`
//! into `$TMPDIR/pktvec_hash_bench` with `cc` and `pkg-config libdpdk`).
//!
//! The workload (seed `000_*` §3, L2 forwarding): vectors of 256 packets, each packet two
//! lookups in one MAC table (VPP's l2fib is one table for learning and forwarding): the 256
//! source MACs of a vector, then its 256 destination MACs. Keys are distinct pseudo-random
//! MACs; lookups pick keys uniformly from the table. Unit: TSC cycles per lookup (total
//! cycles of the pass / lookups).
//!
//! pktvec variants: `no-prefetch` = one `lookup` per key (hash, search); `bulk` =
//! `lookup_bulk` (hash + prefetch the 256 keys of a half-vector, then search); `b=…` =
//! `lookup_bulk_sub` with sub-batch b (Algorithm 1). rte_hash: `rte_hash_lookup_bulk_data`
//! in bursts of `--burst` over each half-vector, and `rte_hash_lookup_data` per key.

mod perf_report;

use perf_report::{median, Series};
use pktvec::graph::clock;
use pktvec::lookup::hash::{HashTable, MacTable};
use pktvec::packet::wire::MacAddr;
use serde::{Deserialize, Serialize};
use std::hint::black_box;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

const SUB_BATCHES: [usize; 6] = [4, 8, 16, 32, 64, 128];

#[derive(Serialize, Deserialize, Clone, Debug, Default)]
struct Row {
    entries: usize,
    table_mib: f64,
    bytes_per_entry: f64,
    keys_in_secondary_pct: f64,
    build_ns_per_insert: f64,
    lookups: usize,
    miss_pct: f64,
    no_prefetch: f64,
    bulk: f64,
    sub_batch: Vec<(usize, f64)>,
    best_b: usize,
    best: f64,
    prefetch_gain_pct: f64,
    dpdk_burst: Option<usize>,
    dpdk_bulk: Option<f64>,
    dpdk_single: Option<f64>,
    dpdk_bytes_per_entry: Option<f64>,
    dpdk_table_mib: Option<f64>,
    dpdk_add_fail: Option<usize>,
    dpdk_hits: Option<u64>,
    dpdk_build_ns_per_insert: Option<f64>,
    /// rte_hash bulk cycles / pktvec bulk cycles (> 1: pktvec faster).
    speedup_vs_dpdk_bulk: Option<f64>,
}

/// A bijection of 48-bit integers: distinct indices give distinct, random-looking MACs.
fn mac(i: u64) -> MacAddr {
    const M: u64 = (1 << 48) - 1;
    let mut x = i.wrapping_add(0x1234_5678_9abc) & M;
    x = x.wrapping_mul(0x9e37_79b9_7f4b) & M;
    x ^= x >> 23;
    x = x.wrapping_mul(0xc2b2_ae3d_27d5) & M;
    x ^= x >> 19;
    let b = x.to_be_bytes();
    MacAddr::new([b[2], b[3], b[4], b[5], b[6], b[7]])
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        ((self.next() as u128 * n as u128) >> 64) as usize
    }
}

fn parse_size(s: &str) -> Result<usize, String> {
    let s = s.trim();
    let (num, mul) = match s.chars().last() {
        Some('K' | 'k') => (&s[..s.len() - 1], 1 << 10),
        Some('M' | 'm') => (&s[..s.len() - 1], 1 << 20),
        Some('G' | 'g') => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.parse::<usize>()
        .map(|n| n * mul)
        .map_err(|e| format!("bad size {s}: {e}"))
}

fn human(n: usize) -> String {
    if n >= 1 << 20 && n % (1 << 20) == 0 {
        format!("{}M", n >> 20)
    } else if n >= 1 << 10 && n % (1 << 10) == 0 {
        format!("{}K", n >> 10)
    } else {
        n.to_string()
    }
}

fn write_macs(path: &Path, macs: impl Iterator<Item = MacAddr>) -> std::io::Result<()> {
    let mut w = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
    for m in macs {
        w.write_all(&m.0)?;
    }
    w.flush()
}

/// One timed pass over the sequence: per vector, the 256 source MACs then the 256
/// destination MACs, each half with `f`. Returns cycles per lookup.
fn pass(
    seq: &[MacAddr],
    out: &mut [Option<u32>],
    mut f: impl FnMut(&[MacAddr], &mut [Option<u32>]) -> usize,
) -> (f64, usize) {
    let mut hits = 0;
    let t0 = clock::now();
    for half in seq.chunks_exact(256) {
        hits += f(half, out);
        black_box(out[0]);
    }
    let c = clock::now() - t0;
    (c as f64 / seq.len() as f64, hits)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flag = |f: &str| args.iter().any(|a| a == f);
    let value = |f: &str| {
        args.iter()
            .position(|a| a == f)
            .and_then(|i| args.get(i + 1).cloned())
    };
    let sizes: Vec<usize> = value("--sizes")
        .unwrap_or_else(|| "1K,64K,1M,16M,96M".into())
        .split(',')
        .map(parse_size)
        .collect::<Result<_, _>>()?;
    let lookups: usize = value("--lookups").map_or(Ok(1 << 22), |s| s.parse())?;
    let lookups = (lookups / 512).max(1) * 512;
    let reps: usize = value("--reps").map_or(Ok(5), |s| s.parse())?;
    let miss_pct: f64 = value("--miss-pct").map_or(Ok(0.0), |s| s.parse())?;
    let burst: usize = value("--burst").map_or(Ok(64), |s| s.parse())?;
    let dir = value("--dir").map_or_else(
        || std::env::temp_dir().join("pktvec-hash-bench"),
        PathBuf::from,
    );
    if let Some(path) = value("--from-json") {
        // Re-plot a saved run without measuring.
        let rows: Vec<Row> = serde_json::from_str(&std::fs::read_to_string(&path)?)?;
        print_rows(&rows);
        if let Some(svg) = value("--svg") {
            plot(&rows, &svg)?;
            eprintln!("wrote {svg}");
        }
        return Ok(());
    }
    let dpdk = flag("--dpdk");
    std::fs::create_dir_all(&dir)?;
    let dpdk_bin = if dpdk {
        Some(dpdk_binary(value("--dpdk-bin"))?)
    } else {
        None
    };
    let hz = clock::tsc_hz();
    println!(
        "TSC {:.3} GHz; {lookups} lookups ({} vectors of 256 packets x 2 MACs) x {reps} reps (median); {miss_pct}% misses",
        hz / 1e9,
        lookups / 512
    );

    let mut rows = Vec::new();
    for &n in &sizes {
        eprintln!("== {} entries", human(n));
        let mut row = measure_pktvec(n, lookups, reps, miss_pct, &dir, dpdk)?;
        if let Some(bin) = &dpdk_bin {
            add_dpdk(&mut row, bin, &dir, burst, reps, hz)?;
        }
        print_rows(std::slice::from_ref(&row));
        rows.push(row);
    }
    println!();
    println!("== summary (TSC cycles per lookup; lower is better)");
    print_rows(&rows);
    if let Some(path) = value("--json") {
        std::fs::write(&path, serde_json::to_string_pretty(&rows)?)?;
        eprintln!("wrote {path}");
    }
    if let Some(path) = value("--svg") {
        plot(&rows, &path)?;
        eprintln!("wrote {path}");
    }
    Ok(())
}

fn measure_pktvec(
    n: usize,
    lookups: usize,
    reps: usize,
    miss_pct: f64,
    dir: &Path,
    write_files: bool,
) -> Result<Row, Box<dyn std::error::Error>> {
    let keys: Vec<MacAddr> = (0..n as u64).map(mac).collect();
    let mut t: MacTable = HashTable::new(n)?;
    let t0 = Instant::now();
    for (i, k) in keys.iter().enumerate() {
        t.insert(*k, i as u32)?;
    }
    let build = t0.elapsed().as_secs_f64() * 1e9 / n as f64;
    let st = t.stats();
    let mut rng = Rng(0x2545_f491_4f6c_dd1d ^ n as u64);
    let miss_every = if miss_pct > 0.0 {
        (100.0 / miss_pct).round() as usize
    } else {
        usize::MAX
    };
    let seq: Vec<MacAddr> = (0..lookups)
        .map(|i| {
            if i % miss_every == miss_every - 1 {
                mac((n + rng.below(1 << 30)) as u64)
            } else {
                keys[rng.below(n)]
            }
        })
        .collect();
    if write_files {
        write_macs(&dir.join(format!("keys-{n}.bin")), keys.iter().copied())?;
        write_macs(&dir.join(format!("lookups-{n}.bin")), seq.iter().copied())?;
    }
    drop(keys);
    eprintln!(
        "  built: {:.1} MiB, {:.2} B/entry, {:.1}% keys in secondary bucket, {build:.0} ns/insert",
        t.memory_bytes() as f64 / (1 << 20) as f64,
        t.bytes_per_entry(),
        100.0 * st.in_secondary as f64 / n as f64
    );

    let mut out = vec![None; 256];
    // Warm-up pass (fills caches and TLB for the small tables as a running switch would).
    pass(&seq, &mut out, |k, o| t.lookup_bulk(k, o));
    let mut nop = Vec::new();
    let mut bulk = Vec::new();
    let mut sub: Vec<Vec<f64>> = vec![Vec::new(); SUB_BATCHES.len()];
    let mut expect_hits = None;
    for _ in 0..reps {
        let (c, h0) = pass(&seq, &mut out, |k, o| t.lookup_bulk_no_prefetch(k, o));
        nop.push(c);
        let (c, h1) = pass(&seq, &mut out, |k, o| t.lookup_bulk(k, o));
        bulk.push(c);
        assert_eq!(h0, h1);
        for (j, &b) in SUB_BATCHES.iter().enumerate() {
            let (c, h) = pass(&seq, &mut out, |k, o| t.lookup_bulk_sub(k, o, b));
            assert_eq!(h, h1);
            sub[j].push(c);
        }
        expect_hits = Some(h1);
    }
    let hits = expect_hits.unwrap_or(0);
    let no_prefetch = median(nop);
    let bulk = median(bulk);
    let mut sub_batch: Vec<(usize, f64)> = SUB_BATCHES
        .iter()
        .zip(sub)
        .map(|(&b, v)| (b, median(v)))
        .collect();
    sub_batch.push((256, bulk));
    let (best_b, best) = sub_batch
        .iter()
        .copied()
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .unwrap_or((256, bulk));
    eprintln!(
        "  pktvec: no-prefetch {no_prefetch:.1}, bulk {bulk:.1}, best b={best_b} {best:.1} cycles/lookup; hits {hits}/{lookups}"
    );
    Ok(Row {
        entries: n,
        table_mib: t.memory_bytes() as f64 / (1 << 20) as f64,
        bytes_per_entry: t.bytes_per_entry(),
        keys_in_secondary_pct: 100.0 * st.in_secondary as f64 / n as f64,
        build_ns_per_insert: build,
        lookups,
        miss_pct,
        no_prefetch,
        bulk,
        sub_batch,
        best_b,
        best,
        prefetch_gain_pct: 100.0 * (no_prefetch / bulk - 1.0),
        ..Row::default()
    })
}

fn dpdk_binary(given: Option<String>) -> Result<PathBuf, Box<dyn std::error::Error>> {
    if let Some(p) = given {
        return Ok(PathBuf::from(p));
    }
    let bin = std::env::temp_dir().join("pktvec_hash_bench");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/dpdk/hash_bench.c");
    eprintln!("building {} from {}", bin.display(), src.display());
    let status = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "cc -O3 $(pkg-config --cflags libdpdk) '{}' -o '{}' $(pkg-config --libs libdpdk)",
            src.display(),
            bin.display()
        ))
        .status()?;
    if !status.success() {
        return Err("building the rte_hash harness failed (need cc and libdpdk-dev)".into());
    }
    Ok(bin)
}

fn add_dpdk(
    row: &mut Row,
    bin: &Path,
    dir: &Path,
    burst: usize,
    reps: usize,
    hz: f64,
) -> Result<(), Box<dyn std::error::Error>> {
    let n = row.entries;
    // rte_hash: buckets for the next power of two, 16-byte key slots, a free-slot ring.
    let mib = (n.next_power_of_two() * 16 + n * 24) / (1 << 20) + 256;
    let keys = dir.join(format!("keys-{n}.bin"));
    let seq = dir.join(format!("lookups-{n}.bin"));
    let mem = mib.to_string();
    let args = [
        "--no-huge",
        "-m",
        &mem,
        "--no-pci",
        "-l",
        "0",
        "--log-level=1",
        "--file-prefix=pktvec_hash",
        "--",
    ];
    eprintln!(
        "  running: {} {} {} {} {n} {burst} {reps}",
        bin.display(),
        args.join(" "),
        keys.display(),
        seq.display()
    );
    let out = Command::new(bin)
        .args(args)
        .arg(&keys)
        .arg(&seq)
        .arg(n.to_string())
        .arg(burst.to_string())
        .arg(reps.to_string())
        .output()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.starts_with("RESULT "))
        .ok_or_else(|| {
            format!(
                "no RESULT from the rte_hash harness:\n{text}\n{}",
                String::from_utf8_lossy(&out.stderr)
            )
        })?;
    let get = |k: &str| -> Option<f64> {
        line.split_whitespace()
            .find_map(|kv| kv.strip_prefix(k)?.strip_prefix('='))
            .and_then(|v| v.parse().ok())
    };
    let dpdk_hz = get("tsc_hz").unwrap_or(hz);
    let bulk = get("bulk_cycles_per_lookup").ok_or("no bulk figure")?;
    let mem = get("mem_bytes").unwrap_or(0.0);
    row.dpdk_burst = Some(burst);
    row.dpdk_bulk = Some(bulk);
    row.dpdk_single = get("single_cycles_per_lookup");
    row.dpdk_bytes_per_entry = Some(mem / n as f64);
    row.dpdk_table_mib = Some(mem / (1 << 20) as f64);
    row.dpdk_add_fail = get("add_fail").map(|v| v as usize);
    row.dpdk_hits = get("hits_bulk").map(|v| v as u64);
    row.dpdk_build_ns_per_insert = get("build_cycles").map(|c| c / dpdk_hz * 1e9 / n as f64);
    row.speedup_vs_dpdk_bulk = Some(bulk / row.bulk);
    eprintln!(
        "  rte_hash: bulk {bulk:.1}, single {:.1} cycles/lookup; {:.1} B/entry; {} adds failed",
        row.dpdk_single.unwrap_or(f64::NAN),
        mem / n as f64,
        row.dpdk_add_fail.unwrap_or(0)
    );
    Ok(())
}

fn print_rows(rows: &[Row]) {
    let opt = |x: Option<f64>, p: usize| x.map_or("-".to_string(), |v| format!("{v:.p$}"));
    println!(
        "{:>7} {:>9} {:>7} {:>6} | {:>8} {:>8} {:>12} {:>7} | {:>8} {:>8} {:>7} | {:>8}",
        "entries",
        "MiB",
        "B/entry",
        "2nd%",
        "no-pf",
        "bulk",
        "best (b)",
        "pf gain",
        "rte bulk",
        "rte 1",
        "rte B/e",
        "speedup"
    );
    for r in rows {
        println!(
            "{:>7} {:>9.1} {:>7.2} {:>6.1} | {:>8.1} {:>8.1} {:>7.1} ({:>3}) {:>6.1}% | {:>8} {:>8} {:>7} | {:>8}",
            human(r.entries),
            r.table_mib,
            r.bytes_per_entry,
            r.keys_in_secondary_pct,
            r.no_prefetch,
            r.bulk,
            r.best,
            r.best_b,
            r.prefetch_gain_pct,
            opt(r.dpdk_bulk, 1),
            opt(r.dpdk_single, 1),
            opt(r.dpdk_bytes_per_entry, 1),
            opt(r.speedup_vs_dpdk_bulk, 2),
        );
    }
    println!("cycles per lookup; pf gain = no-pf / bulk - 1; speedup = rte bulk / pktvec bulk (> 1: pktvec faster)");
}

fn plot(rows: &[Row], path: &str) -> Result<(), Box<dyn std::error::Error>> {
    let series = |label, rgb, f: fn(&Row) -> Option<f64>| Series::of(label, rgb, rows, f);
    perf_report::BarChart {
        caption: "MAC table, 2 lookups/packet, vectors of 256: TSC cycles per lookup (log scale, lower is better)".into(),
        y_desc: "TSC cycles per lookup".into(),
        size: (960, 520),
        groups: rows.iter().map(|r| format!("{} entries", human(r.entries))).collect(),
        series: vec![
            series("pktvec lookup per key (no prefetch)", (140, 170, 230), |r| Some(r.no_prefetch)),
            series("pktvec lookup_bulk (prefetch, b=256)", (20, 60, 200), |r| Some(r.bulk)),
            series("pktvec best sub-batch b", (0, 150, 80), |r| Some(r.best)),
            series("rte_hash_lookup_bulk_data", (220, 40, 40), |r| r.dpdk_bulk),
            series("rte_hash_lookup_data per key", (240, 160, 140), |r| r.dpdk_single),
        ],
        log_from: Some(8.0),
        value_labels: false,
        headroom: 3.0,
        legend_upper_right: false,
    }
    .write_svg(path)
}
