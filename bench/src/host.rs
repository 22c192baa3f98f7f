//! `host`: what this machine's memory does, for reading every other area's figures.
//!
//! Three probes, each timed with the TSC on one core:
//!
//! * **Load latency by working set**: dependent loads, one 64-byte line each, in one
//!   random cycle over working sets of 16 KiB to 256 MiB (a pointer chase: no load can start
//!   before the one before it ends). Measured on 4 KiB pages and on memory advised for
//!   transparent huge pages (TLB misses out of the picture). On a last-level cache shared
//!   with other tenants, a walk this slow loses lines between its visits, so it shows less
//!   cache than a loop with misses in flight gets.
//! * **Loads in flight**: the same cycle walked by [`LANES`] cursors at once (each load
//!   still depends on its own cursor's last one), which is what a prefetching vector
//!   lookup gets from the memory system: cycles per load with that many misses in flight.
//! * **Streaming read**: 64-byte lines copied in address order out of a 64 MiB buffer
//!   (what a replayed traffic stream costs its source node), cycles per line, on both kinds
//!   of pages.
//!
//! The cache sizes the kernel reports (sysfs) are printed beside them.

use pktvec::graph::clock;
use pktvec::packet::mem::{advise_hugepages, collapse_hugepages};
use pktvec::perf::shuffled;
use serde::Serialize;

use crate::sitting::{Common, Sitting};

/// Options of `host`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    common: Common,
    /// Timed loads per working set (the median of three runs is kept); default 1,000,000,
    /// 200,000 with --quick
    #[arg(long)]
    loads: Option<usize>,
    /// Largest working set of the latency probe, in MiB (default 256; 64 with --quick)
    #[arg(long)]
    max_mib: Option<usize>,
}

/// One working set of the latency probe.
#[derive(Serialize, Debug)]
struct Latency {
    kib: usize,
    /// Cycles per dependent load, 4 KiB pages.
    small_pages: f64,
    /// Cycles per dependent load, memory advised for transparent huge pages.
    huge_pages: f64,
    /// Cycles per load with [`LANES`] chases in flight, 4 KiB pages.
    parallel_small_pages: f64,
    /// The same on memory advised for transparent huge pages.
    parallel_huge_pages: f64,
}

/// Cursors of the loads-in-flight probe.
const LANES: usize = 16;

/// A cache as sysfs describes it.
#[derive(Serialize, Debug)]
struct Cache {
    level: u32,
    kind: String,
    size: String,
    /// CPUs sharing it (`shared_cpu_list`).
    shared_with: String,
}

const LINE: usize = 64;
const WORDS: usize = LINE / 8;

/// Working sets of the latency probe, in KiB, up to `max_kib`.
fn sizes(max_kib: usize) -> Vec<usize> {
    let mut v = Vec::new();
    let mut k = 16usize;
    while k <= max_kib {
        v.push(k);
        // between 2 and 64 MiB, where last-level caches end, also the midpoints
        if (2048..65536).contains(&k) {
            v.push(k * 3 / 2);
        }
        k *= 2;
    }
    v
}

/// `n` zeroed words, on huge pages when `huge`: advised before the first touch, and
/// collapsed after it (the allocator may reuse pages already faulted in as 4 KiB pages).
fn buffer(n: usize, huge: bool) -> Vec<u64> {
    let mut v: Vec<u64> = Vec::with_capacity(n);
    if huge {
        advise_hugepages(v.spare_capacity_mut());
    }
    v.resize(n, 0);
    if huge {
        collapse_hugepages(&v);
    }
    v
}

/// "4 MiB", "16 KiB": a working set for tables and the terminal.
pub fn size_label(kib: u64) -> String {
    if kib >= 1024 {
        format!("{} MiB", kib as f64 / 1024.0)
    } else {
        format!("{kib} KiB")
    }
}

/// Cycles per load over lines visited in the order `order` (a permutation of the lines,
/// the last linked back to the first: one cycle through all of them): one cursor (every
/// load waits for the one before), then [`LANES`] cursors spread evenly round the cycle,
/// advanced in turn. Each after a warm-up lap (at most `loads`), `loads` timed loads
/// three times, the median.
fn chase(order: &[u32], loads: usize, huge: bool) -> (f64, f64) {
    let lines = order.len();
    let mut mem = buffer(lines * WORDS, huge);
    for (i, &o) in order.iter().enumerate() {
        let next = order[(i + 1) % lines];
        mem[o as usize * WORDS] = next as u64 * WORDS as u64;
    }
    let mut p = [0usize; LANES];
    for (l, c) in p.iter_mut().enumerate() {
        *c = order[l * lines / LANES] as usize * WORDS;
    }
    for _ in 0..lines.min(loads) {
        p[0] = mem[p[0]] as usize;
    }
    let median = |mut runs: [f64; 3]| {
        runs.sort_by(f64::total_cmp);
        runs[1]
    };
    let mut one = [0f64; 3];
    for r in &mut one {
        let t = clock::now();
        for _ in 0..loads {
            p[0] = mem[p[0]] as usize;
        }
        *r = (clock::now() - t) as f64 / loads as f64;
    }
    let steps = loads.div_ceil(LANES);
    let mut many = [0f64; 3];
    for r in &mut many {
        let t = clock::now();
        for _ in 0..steps {
            for c in p.iter_mut() {
                *c = mem[*c] as usize;
            }
        }
        *r = (clock::now() - t) as f64 / (steps * LANES) as f64;
    }
    std::hint::black_box(p);
    (median(one), median(many))
}

/// Cycles per line of copying `mib` MiB in address order, 64 bytes at a time, into a
/// 16 KiB ring (a vector of 256 buffers' first lines); the fastest of five passes.
fn stream(mib: usize, huge: bool) -> f64 {
    let words = mib * 1024 * 1024 / 8;
    let mut src = buffer(words, huge);
    for (i, w) in src.iter_mut().enumerate() {
        *w = i as u64;
    }
    let mut ring = vec![[0u64; WORDS]; 256];
    let mut best = f64::MAX;
    for _ in 0..5 {
        let t = clock::now();
        for (i, line) in src.chunks_exact(WORDS).enumerate() {
            ring[i & 255].copy_from_slice(line);
        }
        std::hint::black_box(&mut ring);
        best = best.min((clock::now() - t) as f64 / (words / WORDS) as f64);
    }
    best
}

/// CPU 0's caches from sysfs (empty where sysfs has none).
fn caches() -> Vec<Cache> {
    let mut out = Vec::new();
    for i in 0..8 {
        let dir = format!("/sys/devices/system/cpu/cpu0/cache/index{i}");
        let read = |f: &str| {
            std::fs::read_to_string(format!("{dir}/{f}"))
                .map(|s| s.trim().to_string())
                .ok()
        };
        let (Some(level), Some(kind), Some(size)) = (read("level"), read("type"), read("size"))
        else {
            continue;
        };
        out.push(Cache {
            level: level.parse().unwrap_or(0),
            kind,
            size,
            shared_with: read("shared_cpu_list").unwrap_or_default(),
        });
    }
    out
}

/// Runs the probes.
pub fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let sitting = Sitting::begin(
        "host",
        "Memory of this host: load latency by working set, streaming reads",
        "host.md",
        &args.common,
    )?;
    let quick = sitting.quick();
    let loads = args
        .loads
        .unwrap_or(if quick { 200_000 } else { 1_000_000 })
        .max(1000);
    let max_mib = args.max_mib.unwrap_or(if quick { 64 } else { 256 }).max(1);
    let cs = caches();
    for c in &cs {
        println!(
            "L{} {:<12} {:>8}  shared by CPUs {}",
            c.level, c.kind, c.size, c.shared_with
        );
    }
    println!();
    println!(
        "{:>11}  {:>15}  {:>15}  {:>18}  {:>18}",
        "working set", "dependent, 4K", "dependent, huge", "16 in flight, 4K", "16 in flight, huge"
    );
    let mut lat = Vec::new();
    for (i, kib) in sizes(max_mib * 1024).into_iter().enumerate() {
        // One visiting order for both kinds of pages.
        let order = shuffled((kib * 1024 / LINE).max(LANES) as u32, 1 + i as u64);
        let (small, par_small) = chase(&order, loads, false);
        let (huge, par_huge) = chase(&order, loads, true);
        let label = size_label(kib as u64);
        println!("{label:>11}  {small:>15.1}  {huge:>15.1}  {par_small:>18.1}  {par_huge:>18.1}");
        lat.push(Latency {
            kib,
            small_pages: small,
            huge_pages: huge,
            parallel_small_pages: par_small,
            parallel_huge_pages: par_huge,
        });
    }
    let stream_mib = 64;
    let (s_small, s_huge) = (stream(stream_mib, false), stream(stream_mib, true));
    println!();
    println!(
        "streaming read of {stream_mib} MiB, 64-byte lines in address order: \
         {s_small:.1} cycles a line on 4 KiB pages, {s_huge:.1} on huge pages"
    );
    if let Some(svg) = sitting.plot_path("latency") {
        let series = |f: fn(&Latency) -> f64| -> Vec<(f64, f64)> {
            lat.iter().map(|l| (l.kib as f64 / 1024.0, f(l))).collect()
        };
        crate::plot::lines(
            &svg,
            &format!(
                "Cycles a load by working set, {}",
                sitting.machine.cpu_model
            ),
            "working set (MiB)",
            "cycles per load",
            &[
                (
                    "dependent, 4 KiB pages".to_string(),
                    series(|l| l.small_pages),
                ),
                (
                    "dependent, huge pages".to_string(),
                    series(|l| l.huge_pages),
                ),
                (
                    format!("{LANES} in flight, 4 KiB pages"),
                    series(|l| l.parallel_small_pages),
                ),
                (
                    format!("{LANES} in flight, huge pages"),
                    series(|l| l.parallel_huge_pages),
                ),
            ],
        )?;
    }
    let detail = serde_json::json!({
        "caches": cs,
        "loads_per_size": loads,
        "latency": lat,
        "stream": {
            "mib": stream_mib,
            "cycles_per_line_small_pages": s_small,
            "cycles_per_line_huge_pages": s_huge,
        },
        "lanes": LANES,
        "note": "latency: one random cycle of 64-byte lines, cycles per load with one cursor (dependent) and with `lanes` cursors in flight, median of three runs; stream: 64-byte lines copied in address order into a 16 KiB ring, fastest of five passes",
    });
    sitting.finish(Vec::new(), detail)?;
    Ok(())
}
