//! IPv4 LPM lookup cost of pktvec's `Lpm4` and, in the same sitting, of DPDK's rte_lpm on
//! the same route table and the same random destinations; prints cycles per lookup and ratios.
//!
//! ```text
//! cargo build --release --example lpm4_perf
//! flock /tmp/pktvec-bench.lock target/release/examples/lpm4_perf                # pktvec only
//! target/release/examples/lpm4_perf --dpdk --lock /tmp/pktvec-bench.lock        # and rte_lpm
//! ... --dpdk --json docs/results/lookup-ipv4.json --svg docs/results/lookup-ipv4.svg
//! ```
//!
//! Options: `--routes N` (generated table size, default 1,000,000), `--keys N` (random
//! destinations, default 1,048,576), `--reps N` (passes per method; the best is reported,
//! default 5), `--rounds N` (repeat the pktvec passes and the rte_lpm run N times per table,
//! alternating, and report each method's best over all rounds; default 1),
//! `--tables gen,tier1` (which tables, comma-separated: `gen` = `routes::generate_ipv4`,
//! uniform placement; `clustered` = `routes::generate_ipv4_clustered`, both with `--routes`
//! prefixes and seed 1; `tier1` = the tier1 dump; `union` = `routes::union_prefixes` of the
//! tier1 dump and the RIPE 2010 fib, 1,069,869 real prefixes, next hop = index in the
//! sorted union; or a route file's path), `--stats-only` (print each table's size, read
//! path and /18-quarter runs, time nothing), `--count METHOD --passes N` (no timing: run
//! one method N times for `valgrind --tool=cachegrind`, see `count_passes`; writes the route
//! and key files for `benches/dpdk/lpm4_count.c`), `--dpdk` (build and run
//! `benches/dpdk/lpm4_bench.c` against the files written to `--dir`, default /tmp, with the
//! EAL on `--no-huge -m 2048` as the issue prescribes), `--dpdk-huge` (also run it with 1 GiB
//! of 2 MiB hugetlbfs pages; needs `nr_hugepages` reserved and hugetlbfs mounted),
//! `--lock PATH` (take `flock PATH` around each timing round only, instead of running the
//! whole program under `flock`: rte_lpm is built once per table by its harness, outside the
//! lock, and then waits between rounds).
//!
//! pktvec is measured twice per table: `Lpm4Config::huge_pages` true (the default: the
//! 64 MiB first level is advised to use transparent huge pages) and false (4 KiB pages).
//!
//! Every method of both libraries answers every key; answers are folded into an FNV-1a
//! checksum (a miss counted as 0xffffffff) and the run fails if the two libraries disagree.

use pktvec::graph::clock;
use pktvec::lookup::ipv4::{Lpm4, Lpm4Config, PrefetchLevel, DEFAULT_SUB_BATCH, MISS};
use pktvec::lookup::routes::{self, Route4};
use pktvec::packet::mem;
use serde::Serialize;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const VEC: usize = 256;
const TIER1: &str = "/work/shared/data/routes/tier1-fulltable-ipv4.txt.xz";
const RIPE: &str = "/work/shared/data/routes/ripe-ris-bview-20100701.0759.peer-as4777.fib.tsv.xz";

#[derive(Serialize, Clone, Debug)]
struct Row {
    table: String,
    library: String,
    method: String,
    cycles_per_lookup: f64,
    mlookups_per_s: f64,
    checksum: String,
    /// rte_lpm_lookup cycles / this method's cycles (higher is better), if measured.
    speedup_vs_rte_lpm_lookup: Option<f64>,
    /// rte_lpm_lookup_bulk cycles (EAL `--no-huge`, 4 KiB pages, as the issue prescribes) /
    /// this method's cycles, if measured.
    speedup_vs_rte_lpm_bulk: Option<f64>,
    /// rte_lpm_lookup_bulk cycles with the EAL on 2 MiB hugetlbfs pages / this method's
    /// cycles, if measured (`--dpdk-huge`).
    speedup_vs_rte_lpm_bulk_hugepages: Option<f64>,
}

#[derive(Serialize, Clone, Debug)]
struct TableInfo {
    table: String,
    routes: usize,
    keys: usize,
    groups: u32,
    pktvec_bytes: usize,
    pktvec_bytes_per_route: f64,
    rte_lpm_bytes: Option<u64>,
    rte_lpm_bytes_per_route: Option<f64>,
    rte_lpm_tbl8s: u32,
    build_ms: f64,
    /// pktvec's read path (directory + records), bytes.
    read_path_bytes: usize,
    /// /18 quarters of the table (`routes::ipv4_quarter_stats`).
    quarters: routes::Ipv4QuarterStats,
    /// Growth of this process's AnonHugePages (KiB) while building the THP-advised table.
    thp_kib: Option<u64>,
    /// `/proc/loadavg` at the start of each timing round (inside the lock).
    loadavg: Vec<String>,
}

#[derive(Serialize)]
struct Report {
    tsc_hz: f64,
    tables: Vec<TableInfo>,
    rows: Vec<Row>,
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

/// (method name, best cycles per lookup, answer checksum)
type Measured = (String, f64, u64);

/// (name, uses the raw `u32` output, body)
type Method<'a> = (
    String,
    bool,
    Box<dyn Fn(&[u32], &mut [Option<u32>], &mut [u32]) + 'a>,
);

/// A method called on each vector of [`VEC`] keys, writing the output slice `pick` chooses
/// (`raw`: the `u32` one, else the `Option` one).
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

/// A method that answers in raw form (`MISS` for no route), called on each vector of
/// [`VEC`] keys.
fn per_vector_raw<'a>(name: String, f: impl Fn(&[u32], &mut [u32]) + 'a) -> Method<'a> {
    per_vector(name, true, |_, r| r, f)
}

/// A method that answers `Option`s, called on each vector of [`VEC`] keys.
fn per_vector_option<'a>(name: String, f: impl Fn(&[u32], &mut [Option<u32>]) + 'a) -> Method<'a> {
    per_vector(name, false, |o, _| o, f)
}

/// Runs every method once per pass, `reps` passes (interleaved, so drifts in machine load
/// hit all methods alike); returns each method's best cycles per key and its checksum.
fn ours(lpm: &Lpm4, keys: &[u32], reps: usize) -> Vec<Measured> {
    let mut methods: Vec<Method> = Vec::new();
    methods.push((
        "single lookup()".into(),
        false,
        Box::new(|k, o, _| {
            for (k, o) in k.iter().zip(o.iter_mut()) {
                *o = lpm.lookup(*k);
            }
        }),
    ));
    methods.push(per_vector_option(
        "vector-256 lookup_bulk (no prefetch)".into(),
        |k, o| lpm.lookup_bulk(k, o),
    ));
    methods.push(per_vector_option(
        "vector-256 lookup_vector_batched b=32".into(),
        |k, o| lpm.lookup_vector_batched(k, o, 32),
    ));
    // The graph's two-phase helper: prefetch(key) for a sub-batch, then lookup(key).
    methods.push((
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
    methods.push(per_vector_raw(
        "vector-256 lookup_bulk_raw (no prefetch)".into(),
        |k, r| lpm.lookup_bulk_raw(k, r),
    ));
    for b in [16usize, 32, 64, 128, 256] {
        methods.push(per_vector_raw(
            format!("vector-256 lookup_vector_raw b={b}"),
            move |k, r| lpm.lookup_vector_raw(k, r, b),
        ));
    }
    // The prefetch level forced (the rows above run `PrefetchLevel::Auto`), to show what
    // the automatic choice gains on this machine.
    for b in [16usize, 32, 64, 256] {
        for level in [PrefetchLevel::L1, PrefetchLevel::L2] {
            methods.push(per_vector_raw(
                format!("vector-256 lookup_vector_raw b={b} prefetch {level:?}"),
                move |k, r| {
                    lpm.set_prefetch_level(level);
                    lpm.lookup_vector_raw(k, r, b);
                    lpm.set_prefetch_level(PrefetchLevel::Auto);
                },
            ));
        }
    }
    for b in [64usize, 128, 256] {
        methods.push(per_vector_raw(
            format!("vector-256 lookup_vector_raw_portable b={b}"),
            move |k, r| lpm.lookup_vector_raw_portable(k, r, b),
        ));
    }
    for d in [4usize, 8, 16] {
        methods.push(per_vector_raw(
            format!("vector-256 lookup_vector_pipelined d={d}"),
            move |k, r| lpm.lookup_vector_pipelined(k, r, d),
        ));
    }
    methods.push(per_vector_option(
        format!("vector-256 lookup_vector (Option, b={DEFAULT_SUB_BATCH})"),
        |k, o| lpm.lookup_vector(k, o),
    ));
    // Last: the DIR-24-8 master's 64 MiB first level evicts the read path from the
    // caches (each pass starts with an untimed warm-up, below).
    for d in [16usize, 32] {
        methods.push(per_vector_raw(
            format!("DIR-24-8 master lookup_vector_dir24 d={d}"),
            move |k, r| lpm.lookup_vector_dir24(k, r, d),
        ));
    }
    let mut out = vec![None; keys.len()];
    let mut raw = vec![0u32; keys.len()];
    let mut best = vec![f64::MAX; methods.len()];
    let mut sums = vec![0u64; methods.len()];
    for _ in 0..reps {
        // Untimed warm-up: every method is timed with the read path as warm as the
        // method before it left it (rte_lpm's harness runs its methods back to back too);
        // without it the first method after the DIR-24-8 rows starts from cold caches.
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

/// Folds a round's figures into the best so far (same methods in the same order); keeps the
/// first checksum (all are compared against each other later).
fn best_of(best: &mut Vec<Measured>, round: Vec<Measured>) {
    if best.is_empty() {
        *best = round;
        return;
    }
    for (b, r) in best.iter_mut().zip(round) {
        if r.2 != b.2 {
            b.2 = r.2; // a disagreement shows up in the final comparison
        }
        b.1 = b.1.min(r.1);
    }
}

fn build_harness(dir: &Path) -> Result<PathBuf, Box<dyn std::error::Error>> {
    let bin = dir.join("lpm4_bench");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/dpdk/lpm4_bench.c");
    let cmd = format!(
        "cc -O3 $(pkg-config --cflags libdpdk) {} -o {} $(pkg-config --libs libdpdk)",
        src.display(),
        bin.display()
    );
    eprintln!("building: {cmd}");
    let st = Command::new("sh").arg("-c").arg(&cmd).status()?;
    if !st.success() {
        return Err(format!("building the harness failed: {cmd}").into());
    }
    Ok(bin)
}

/// The benchmark lock (`--lock PATH`), held while a `flock PATH` child process runs:
/// taken around each timing round only, so the minutes of table building (rte_lpm_add)
/// do not keep the other users of the machine waiting. Released on drop.
struct BenchLock(Option<std::process::Child>);

impl BenchLock {
    /// Waits for the lock at `path` (no lock if `None`).
    fn take(path: Option<&str>) -> Result<Self, Box<dyn std::error::Error>> {
        let Some(path) = path else {
            return Ok(BenchLock(None));
        };
        let mut child = Command::new("flock")
            .args([path, "sh", "-c", "echo locked; exec cat >/dev/null"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()?;
        let mut line = String::new();
        let out = child.stdout.as_mut().ok_or("flock: no stdout")?;
        BufReader::new(out).read_line(&mut line)?;
        if line.trim() != "locked" {
            return Err(format!("flock {path} failed").into());
        }
        Ok(BenchLock(Some(child)))
    }
}

impl Drop for BenchLock {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            drop(c.stdin.take()); // `cat` sees end of input; `flock` exits and unlocks
            let _ = c.wait();
        }
    }
}

/// The C harness in `serve` mode: builds rte_lpm once, then times its methods on each
/// [`round`](Self::round).
struct Harness {
    child: std::process::Child,
    out: BufReader<std::process::ChildStdout>,
    hugepages: bool,
    /// rte_lpm's bytes as configured (the harness's `memory` line).
    mem: Option<u64>,
}

impl Harness {
    /// Starts the harness and waits until it has built the table.
    fn start(
        bin: &Path,
        routes: &Path,
        keys: &Path,
        reps: usize,
        tbl8s: u32,
        hugepages: bool,
    ) -> Result<Self, Box<dyn std::error::Error>> {
        let args = harness_args(routes, keys, reps, tbl8s, hugepages, true);
        eprintln!("starting: {} {}", bin.display(), args.join(" "));
        let mut child = Command::new(bin)
            .args(&args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()?;
        let out = BufReader::new(child.stdout.take().ok_or("harness: no stdout")?);
        let mut h = Harness {
            child,
            out,
            hugepages,
            mem: None,
        };
        loop {
            let f = h.next_line()?;
            match f.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
                ["ready"] => return Ok(h),
                ["memory", b] => h.mem = Some(b.parse()?),
                _ => eprintln!("  {}", f.join(" ")),
            }
        }
    }

    /// The harness's next output line, split into fields; an error if it has exited.
    fn next_line(&mut self) -> Result<Vec<String>, Box<dyn std::error::Error>> {
        let mut line = String::new();
        if self.out.read_line(&mut line)? == 0 {
            return Err(format!("lpm4_bench exited: {:?}", self.child.wait()?).into());
        }
        Ok(line.split_whitespace().map(String::from).collect())
    }

    /// One timing round: every method, `reps` passes.
    fn round(&mut self) -> Result<Vec<Measured>, Box<dyn std::error::Error>> {
        let stdin = self.child.stdin.as_mut().ok_or("harness: no stdin")?;
        stdin.write_all(b"run\n")?;
        stdin.flush()?;
        let mut rows = Vec::new();
        loop {
            let f = self.next_line()?;
            let f: Vec<&str> = f.iter().map(String::as_str).collect();
            match f.as_slice() {
                ["end"] => return Ok(rows),
                ["result", ..] => rows.push(parse_result(&f, self.hugepages)?),
                _ => eprintln!("  {}", f.join(" ")),
            }
        }
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        drop(self.child.stdin.take()); // end of input: the harness exits
        let _ = self.child.wait();
    }
}

/// A harness `result <name> <cycles> <checksum>` line as a row.
fn parse_result(f: &[&str], hugepages: bool) -> Result<Measured, Box<dyn std::error::Error>> {
    let [_, name, cyc, sum] = f else {
        return Err(format!("bad harness line: {f:?}").into());
    };
    Ok((
        if hugepages {
            format!("{name} (2 MiB hugepages)")
        } else {
            name.to_string()
        },
        cyc.parse()?,
        u64::from_str_radix(sum, 16)?,
    ))
}

/// The harness's command line.
fn harness_args(
    routes: &Path,
    keys: &Path,
    reps: usize,
    tbl8s: u32,
    hugepages: bool,
    serve: bool,
) -> Vec<String> {
    // As the issue prescribes: `--no-huge -m 2048`; with `hugepages`, the EAL takes 1 GiB
    // of 2 MiB pages from a mounted hugetlbfs instead.
    let eal: &[&str] = if hugepages {
        &["-m", "1024", "--file-prefix", "lpm4huge"]
    } else {
        &["--no-huge", "-m", "2048"]
    };
    let mut args: Vec<String> = eal.iter().map(|s| s.to_string()).collect();
    args.extend(
        [
            "--no-pci",
            "-l",
            "0",
            "--log-level=1",
            "--",
            &routes.display().to_string(),
            &keys.display().to_string(),
            &reps.to_string(),
            &tbl8s.to_string(),
        ]
        .map(String::from),
    );
    if serve {
        args.push("serve".into());
    }
    args
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flag = |f: &str| args.iter().any(|a| a == f);
    let value = |f: &str| {
        args.iter()
            .position(|a| a == f)
            .and_then(|i| args.get(i + 1).cloned())
    };
    let n_routes: usize = value("--routes").map_or(Ok(1_000_000), |s| s.parse())?;
    let n_keys: usize = value("--keys").map_or(Ok(1 << 20), |s| s.parse())?;
    let reps: usize = value("--reps").map_or(Ok(5), |s| s.parse())?;
    let rounds: usize = value("--rounds").map_or(Ok(1), |s| s.parse())?.max(1);
    let tables = value("--tables").unwrap_or_else(|| "gen,tier1".into());
    let stats_only = flag("--stats-only");
    let count = value("--count");
    let passes: usize = value("--passes").map_or(Ok(1), |s| s.parse())?;
    let dir = PathBuf::from(value("--dir").unwrap_or_else(|| "/tmp".into()));
    let dpdk = flag("--dpdk") || flag("--dpdk-huge");
    let dpdk_huge = flag("--dpdk-huge");
    let lock_path = value("--lock");
    let tbl8s: u32 = 65_536;
    let hz = clock::tsc_hz();
    let harness = if dpdk && !stats_only && count.is_none() {
        Some(build_harness(&dir)?)
    } else {
        None
    };

    let n_keys = n_keys - n_keys % VEC;
    let keys: Vec<u32> = routes::random_ipv4_keys(n_keys, 42)
        .into_iter()
        .map(u32::from)
        .collect();
    let keys_path = dir.join("lpm4_keys.txt");
    routes::write_keys_file(&keys_path, &routes::random_ipv4_keys(n_keys, 42))?;

    let mut report = Report {
        tsc_hz: hz,
        tables: Vec::new(),
        rows: Vec::new(),
    };
    for table in tables.split(',') {
        let (name, table_routes): (String, Vec<Route4>) = match table {
            "gen" => (
                format!("generated {n_routes}"),
                routes::generate_ipv4(n_routes, 1),
            ),
            "clustered" => (
                format!("clustered {n_routes}"),
                routes::generate_ipv4_clustered(n_routes, 1),
            ),
            "tier1" => {
                if !Path::new(TIER1).exists() {
                    eprintln!("note: {TIER1} not present, skipping");
                    continue;
                }
                ("tier1 real".to_string(), routes::load_ipv4_file(TIER1)?)
            }
            "union" => {
                if !Path::new(TIER1).exists() || !Path::new(RIPE).exists() {
                    eprintln!("note: {TIER1} or {RIPE} not present, skipping");
                    continue;
                }
                let a = routes::load_ipv4_file(TIER1)?;
                let b = routes::load_ipv4_file(RIPE)?;
                (
                    "union tier1+ripe".to_string(),
                    routes::union_prefixes(&[&a, &b]),
                )
            }
            path => (path.to_string(), routes::load_ipv4_file(path)?),
        };
        // rte_lpm carries 24-bit next hops: use the same on both sides.
        let table_routes: Vec<Route4> = table_routes
            .into_iter()
            .map(|r| Route4 {
                next_hop: r.next_hop & 0xff_ffff,
                ..r
            })
            .collect();
        let quarters = routes::ipv4_quarter_stats(&table_routes);
        let thp0 = mem::anon_huge_pages_kib();
        let t0 = std::time::Instant::now();
        let lpm = Lpm4::from_routes(Lpm4Config::default(), &table_routes)?;
        let build_ms = t0.elapsed().as_secs_f64() * 1e3;
        let thp_kib = thp0
            .zip(mem::anon_huge_pages_kib())
            .map(|(a, b)| b.saturating_sub(a));
        eprintln!(
            "{name}: {} routes; /18 quarters: {} single-run ({:.1}%), {} multi-run, {:.2} runs per multi-run quarter; read path {:.2} MiB",
            lpm.len(),
            quarters.single_run,
            100.0 * quarters.single_run_share(),
            quarters.multi_run,
            (quarters.runs - u64::from(quarters.single_run)) as f64 / quarters.multi_run.max(1) as f64,
            lpm.read_path_bytes() as f64 / 1048576.0,
        );
        if stats_only {
            continue;
        }
        if let Some(method) = &count {
            // Deterministic counts: run one method `passes` times, untimed (under
            // `valgrind --tool=cachegrind`, the difference of two pass counts is the cost
            // of the lookups alone); also writes the files that `benches/dpdk/lpm4_count.c`
            // counts rte_lpm_lookup_bulk on.
            routes::write_routes_file(dir.join("lpm4_routes.txt"), &table_routes)?;
            let sum = count_passes(&lpm, &keys, method, passes)?;
            println!("{name}: {method} x{passes}: checksum {sum:016x}");
            continue;
        }
        let lpm_4k = Lpm4::from_routes(
            Lpm4Config {
                huge_pages: false,
                ..Default::default()
            },
            &table_routes,
        )?;
        let routes_path = dir.join("lpm4_routes.txt");
        routes::write_routes_file(&routes_path, &table_routes)?;
        eprintln!(
            "{name}: {} routes, built in {build_ms:.0} ms; read path {:.2} MiB; THP advised {}, AnonHugePages +{:?} KiB",
            lpm.len(),
            lpm.read_path_bytes() as f64 / 1048576.0,
            lpm.huge_pages_advised(),
            thp_kib
        );

        // rte_lpm is built once per table (its harness waits between rounds), before the
        // rounds and outside the lock.
        let mut harnesses = Vec::new();
        if let Some(bin) = &harness {
            // 4 KiB pages always; 2 MiB hugepages too when asked.
            for huge in [false, true].into_iter().take(1 + usize::from(dpdk_huge)) {
                harnesses.push(Harness::start(
                    bin,
                    &routes_path,
                    &keys_path,
                    reps,
                    tbl8s,
                    huge,
                )?);
            }
        }
        let rte_mem = harnesses.first().and_then(|h| h.mem);
        // `rounds` rounds of (pktvec passes, rte_lpm passes), each under the lock: each
        // figure is the best over all rounds, so both libraries are timed in several
        // moments of the sitting.
        let mut mine: Vec<Measured> = Vec::new();
        let mut theirs: Vec<Measured> = Vec::new();
        let mut loadavg = Vec::new();
        for round in 0..rounds {
            let _lock = BenchLock::take(lock_path.as_deref())?;
            let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
            eprintln!(
                "{name}: round {} of {rounds}; load {}",
                round + 1,
                load.trim()
            );
            loadavg.push(load.trim().to_string());
            let mut m: Vec<Measured> = ours(&lpm, &keys, reps)
                .into_iter()
                .map(|(m, c, s)| (format!("{m} [THP]"), c, s))
                .collect();
            m.extend(
                ours(&lpm_4k, &keys, reps)
                    .into_iter()
                    .map(|(m, c, s)| (format!("{m} [4 KiB]"), c, s)),
            );
            best_of(&mut mine, m);
            let mut t = Vec::new();
            for h in harnesses.iter_mut() {
                t.extend(h.round()?);
            }
            best_of(&mut theirs, t);
        }
        drop(harnesses);
        drop(lpm_4k);
        let find = |n: &str| theirs.iter().find(|r| r.0 == n).map(|r| r.1);
        let base = find("rte_lpm_lookup");
        let bulk = find("rte_lpm_lookup_bulk");
        let bulk_huge = find("rte_lpm_lookup_bulk (2 MiB hugepages)");
        let want = mine[0].2;
        for (lib, rows) in [("pktvec", &mine), ("rte_lpm", &theirs)] {
            for (method, c, sum) in rows.iter() {
                if *sum != want {
                    return Err(format!(
                        "{name}: {lib} {method} answers differ (checksum {sum:016x} vs {want:016x})"
                    )
                    .into());
                }
                report.rows.push(Row {
                    table: name.clone(),
                    library: lib.to_string(),
                    method: method.clone(),
                    cycles_per_lookup: *c,
                    mlookups_per_s: hz / c / 1e6,
                    checksum: format!("{sum:016x}"),
                    speedup_vs_rte_lpm_lookup: base.map(|b| b / c),
                    speedup_vs_rte_lpm_bulk: bulk.map(|b| b / c),
                    speedup_vs_rte_lpm_bulk_hugepages: bulk_huge.map(|b| b / c),
                });
            }
        }
        let mem = lpm.memory_bytes();
        report.tables.push(TableInfo {
            table: name.clone(),
            routes: lpm.len(),
            keys: keys.len(),
            groups: lpm.groups_in_use(),
            pktvec_bytes: mem,
            pktvec_bytes_per_route: mem as f64 / lpm.len() as f64,
            rte_lpm_bytes: rte_mem,
            rte_lpm_bytes_per_route: rte_mem.map(|m| m as f64 / lpm.len() as f64),
            rte_lpm_tbl8s: tbl8s,
            build_ms,
            thp_kib,
            loadavg,
            read_path_bytes: lpm.read_path_bytes(),
            quarters,
        });
    }
    if count.is_some() {
        return Ok(());
    }
    print_report(&report);
    if let Some(p) = value("--json") {
        std::fs::write(&p, serde_json::to_string_pretty(&report)?)?;
        eprintln!("wrote {p}");
    }
    if let Some(p) = value("--svg") {
        plot(&report, &p)?;
        eprintln!("wrote {p}");
    }
    Ok(())
}

/// `--count METHOD --passes N`: `passes` untimed passes of one method over all keys
/// (`single`, `raw:B` = `lookup_vector_raw` with sub-batch B, `portable:B`, `dir24:D`);
/// returns the answers' checksum.
fn count_passes(
    lpm: &Lpm4,
    keys: &[u32],
    method: &str,
    passes: usize,
) -> Result<u64, Box<dyn std::error::Error>> {
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

fn print_report(r: &Report) {
    println!();
    println!(
        "TSC {:.3} GHz; best of the passes; all answers identical across methods and libraries",
        r.tsc_hz / 1e9
    );
    for t in &r.tables {
        println!();
        println!(
            "{}: {} routes, {} random keys, {} groups; /18 quarters single-run {:.1}%; memory pktvec {:.1} MiB ({:.1} B/route, read path {:.2} MiB){}",
            t.table,
            t.routes,
            t.keys,
            t.groups,
            100.0 * t.quarters.single_run_share(),
            t.pktvec_bytes as f64 / 1048576.0,
            t.pktvec_bytes_per_route,
            t.read_path_bytes as f64 / 1048576.0,
            t.rte_lpm_bytes.map_or(String::new(), |b| format!(
                ", rte_lpm {:.1} MiB ({:.1} B/route, {} tbl8s)",
                b as f64 / 1048576.0,
                b as f64 / t.routes as f64,
                t.rte_lpm_tbl8s
            ))
        );
        println!(
            "  {:<8} {:<58} {:>10} {:>10} {:>8} {:>8} {:>8}",
            "library", "method", "cyc/lookup", "Mlookup/s", "x single", "x bulk", "x bulkHP"
        );
        for row in r.rows.iter().filter(|x| x.table == t.table) {
            let o = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.2}"));
            println!(
                "  {:<8} {:<58} {:>10.2} {:>10.1} {:>8} {:>8} {:>8}",
                row.library,
                row.method,
                row.cycles_per_lookup,
                row.mlookups_per_s,
                o(row.speedup_vs_rte_lpm_lookup),
                o(row.speedup_vs_rte_lpm_bulk),
                o(row.speedup_vs_rte_lpm_bulk_hugepages)
            );
        }
    }
    println!();
    println!("x single / x bulk / x bulkHP = rte_lpm_lookup / rte_lpm_lookup_bulk (--no-huge) / rte_lpm_lookup_bulk (2 MiB hugepages) cycles / row cycles (higher is better for pktvec)");
    println!("[THP] = Lpm4Config::huge_pages true (default), [4 KiB] = false");
}

fn plot(r: &Report, path: &str) -> Result<(), Box<dyn std::error::Error>> {
    use plotters::prelude::*;
    // one 650-pixel panel per table
    let width = 650 * r.tables.len().max(2) as u32;
    let root = SVGBackend::new(path, (width, 760)).into_drawing_area();
    root.fill(&WHITE)?;
    let panels = root.split_evenly((1, r.tables.len().max(1)));
    for (t, area) in r.tables.iter().zip(panels.iter()) {
        let rows: Vec<&Row> = r.rows.iter().filter(|x| x.table == t.table).collect();
        let max = rows.iter().map(|x| x.cycles_per_lookup).fold(0.0, f64::max) * 1.15;
        let mut chart = ChartBuilder::on(area)
            .caption(
                format!("{} ({} routes): cycles/lookup", t.table, t.routes),
                ("sans-serif", 16),
            )
            .margin(10)
            .x_label_area_size(20)
            .y_label_area_size(330)
            .build_cartesian_2d(0f64..max, 0f64..rows.len() as f64)?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(rows.len() * 2 + 1)
            .y_label_formatter(&|y| {
                let i = y.floor() as usize;
                if (y - y.floor() - 0.5).abs() < 1e-6 {
                    rows.get(i)
                        .map_or(String::new(), |x| format!("{} {}", x.library, x.method))
                } else {
                    String::new()
                }
            })
            .y_label_style(("sans-serif", 10))
            .x_desc("TSC cycles per lookup (lower is better)")
            .draw()?;
        chart.draw_series(rows.iter().enumerate().map(|(i, x)| {
            let color = match (x.library.as_str(), x.method.ends_with("[4 KiB]")) {
                ("pktvec", false) => BLUE,
                ("pktvec", true) => RGBColor(120, 160, 230),
                _ => RED,
            };
            Rectangle::new(
                [
                    (0.0, i as f64 + 0.15),
                    (x.cycles_per_lookup, i as f64 + 0.85),
                ],
                color.filled(),
            )
        }))?;
        chart.draw_series(rows.iter().enumerate().map(|(i, x)| {
            Text::new(
                format!("{:.1}", x.cycles_per_lookup),
                (x.cycles_per_lookup + max * 0.01, i as f64 + 0.35),
                ("sans-serif", 10),
            )
        }))?;
    }
    root.present()?;
    Ok(())
}
