//! `whippersnapper`: the synthetic benchmark suite of seed `003_*` (one feature at a time:
//! parsing, tables, checksum, state, header changes, field writes, flows, a shared
//! register), each point generated from a [`Record`] of `pktvec-synth`, run on pktvec and
//! on its twin program in DPDK's SWX P4 pipeline in the same sitting.
//!
//! * **Throughput**: both sides read the same pcap's frames from memory (pktvec's
//!   `PcapSource` copies each frame into a buffer; SWX's source port into an mbuf) and
//!   count them out; a do-nothing program on the same frames (`input → tx`; SWX: `rx; tx
//!   2`) is timed in the same rounds, alternating, and subtracted: net cycles per packet
//!   (each side's least cost over the rounds: on a shared guest interference only adds).
//!   Slope = least squares of net cycles over the sweep (per added header, table, write…).
//! * **Latency** (pktvec only, graph only): p50/p99 from leaving the input node to reaching
//!   the sink, with one packet in flight (vectors of 1) and under full load (vectors of 256,
//!   the input always full).
//! * **Memory per table entry**: pktvec's table bytes and SWX's heap growth (DPDK heap +
//!   libc) per entry, table-size benchmark.
//! * `--equivalence`: for every record, the packets pktvec emits are compared byte for byte
//!   with SWX's (one pass over the pcap, both outputs written as pcap).
//!
//! ```text
//! cargo run --release -p pktvec-bench -- whippersnapper
//! cargo run --release -p pktvec-bench -- whippersnapper --equivalence --no-save
//! ```

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Barrier};

use pktvec::graph::{clock, Graph, GraphBuilder, GraphConfig};
use pktvec::io::capture::{
    read_capture, Capture, CountingSink, PcapSink, PcapSource, PcapSourceNext,
};
use pktvec::packet::{BufferPool, PoolConfig};
use pktvec_synth::pipeline::{self, Built};
use pktvec_synth::record::{Bench, Record, Share};
use pktvec_synth::swx::{Twin, BASELINE_SPEC};
use pktvec_synth::traffic;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::c_harness::{median, Scratch, Served};
use crate::sitting::{Common, Headline, Sitting};
use crate::swx::Swx;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// The vector size of the timed runs (the graph default).
const VECTOR: usize = 256;

/// Options of `whippersnapper`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    common: Common,
    /// Benchmarks to run (comma-separated names, e.g. parse-headers,table-size; default all)
    #[arg(long, value_delimiter = ',')]
    benches: Vec<String>,
    /// Timed rounds per point, alternating pktvec, its do-nothing graph, SWX and its do-nothing
    /// program; each side's least cost is kept
    #[arg(long, default_value_t = 7)]
    rounds: usize,
    /// Packets per timed round
    #[arg(long, default_value_t = 1 << 20)]
    packets: u64,
    /// Do not run the SWX twin (pktvec only)
    #[arg(long)]
    no_dpdk: bool,
    /// Compare pktvec's output with SWX's, byte for byte, for every record, then stop
    #[arg(long)]
    equivalence: bool,
    /// Keep the generated specs, entries, pcaps and outputs in this directory
    #[arg(long)]
    files: Option<PathBuf>,
    /// SWX instructions per `rte_swx_pipeline_run` call
    #[arg(long, default_value_t = 1000)]
    swx_burst: u32,
    /// Load SWX's exact-match entries through DPDK's control API (O(n^2): small tables
    /// only) instead of straight into the pipeline's tables
    #[arg(long)]
    swx_ctl_load: bool,
}

/// One measured point.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct Point {
    /// The record's name (`bench/knob/param`).
    pub name: String,
    /// Benchmark.
    pub bench: String,
    /// The knob (variant, registers, write kind…).
    pub knob: String,
    /// The swept parameter.
    pub param: u32,
    /// pktvec: net cycles per packet (benchmark − do-nothing).
    pub pktvec_net: f64,
    /// pktvec: cycles per packet, input and output included.
    pub pktvec_gross: f64,
    /// SWX: net cycles per packet.
    pub swx_net: Option<f64>,
    /// SWX: cycles per packet, input and output included.
    pub swx_gross: Option<f64>,
    /// pktvec latency, one packet in flight: p50, p99 (ns).
    pub lat_one: (f64, f64),
    /// pktvec latency under full load: p50, p99 (ns).
    pub lat_full: (f64, f64),
    /// pktvec table bytes per entry (table benchmarks).
    pub pktvec_bytes_per_entry: Option<f64>,
    /// SWX heap bytes per entry (table benchmarks).
    pub swx_bytes_per_entry: Option<f64>,
}

/// A benchmark's slope for one knob.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct Slope {
    /// Benchmark.
    pub bench: String,
    /// Knob.
    pub knob: String,
    /// What one step adds.
    pub unit: String,
    /// pktvec's least-squares slope, cycles per step.
    pub pktvec: f64,
    /// SWX's (same program for every pktvec knob of the parse and table benchmarks).
    pub swx: Option<f64>,
}

fn knob(r: &Record) -> String {
    r.name().split('/').nth(1).unwrap_or("-").to_string()
}

fn graph_for(
    r: Option<&Record>,
    frames: &[Vec<u8>],
    shared: Option<Arc<[AtomicU64]>>,
    out: Option<&Path>,
) -> Res<(Graph, Option<Built>)> {
    let cap = Capture {
        packets: frames.to_vec(),
        ..Default::default()
    };
    let cfg = GraphConfig {
        node_cycles: false,
        ..GraphConfig::default()
    };
    let mut b = GraphBuilder::new(cfg);
    let src = PcapSource::new(cap).with_timestamps(false);
    match out {
        Some(p) => {
            b.add("input", src);
            b.add("tx", PcapSink::create(p)?);
        }
        None => {
            b.add("input", src.looping(true));
            b.add("tx", CountingSink::new(4));
        }
    }
    let built = match r {
        Some(r) => {
            let built = pipeline::add_to_shared(r, &mut b, "tx", shared)?;
            b.set_next("input", PcapSourceNext::Out, &built.entry);
            Some(built)
        }
        None => {
            b.set_next("input", PcapSourceNext::Out, "tx");
            None
        }
    };
    let pool = BufferPool::new(PoolConfig {
        buffers: 8192,
        ..PoolConfig::default()
    })?;
    Ok((b.build(pool)?, built))
}

/// Cycles per packet over about `packets` packets (whole vectors).
fn time(g: &mut Graph, packets: u64) -> f64 {
    let v = VECTOR as u64;
    let runs = packets.div_ceil(v).max(1);
    let t0 = clock::now();
    for _ in 0..runs {
        g.run_once();
    }
    (clock::now() - t0) as f64 / (runs * v) as f64
}

fn latency(g: &mut Graph, vector: usize, packets: u64, ns_per_cycle: f64) -> Res<(f64, f64)> {
    g.set_vector_size(vector)?;
    g.latency_enable(true);
    let runs = packets.div_ceil(vector as u64);
    for _ in 0..runs {
        g.run_once();
    }
    let t = g.latency();
    g.latency_enable(false);
    g.set_vector_size(VECTOR)?;
    let row = t
        .rows
        .iter()
        .find(|r| r.sink == "tx")
        .ok_or("no packet reached tx")?;
    Ok((row.p50 as f64 * ns_per_cycle, row.p99 as f64 * ns_per_cycle))
}

/// The least of the rounds' costs: on a shared guest, interference only adds cycles.
fn least(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::INFINITY, f64::min)
}

/// Least-squares slope of y over x.
fn slope(pts: &[(f64, f64)]) -> f64 {
    let n = pts.len() as f64;
    if pts.len() < 2 {
        return 0.0;
    }
    let (sx, sy) = pts.iter().fold((0.0, 0.0), |(a, b), p| (a + p.0, b + p.1));
    let (mx, my) = (sx / n, sy / n);
    let (num, den) = pts.iter().fold((0.0, 0.0), |(a, b), p| {
        (a + (p.0 - mx) * (p.1 - my), b + (p.0 - mx).powi(2))
    });
    if den == 0.0 {
        0.0
    } else {
        num / den
    }
}

/// The SWX side: compiled programs (by spec text) and served pipelines.
struct SwxSide {
    swx: Swx,
    dir: PathBuf,
    compiled: HashMap<String, PathBuf>,
    n: usize,
}

impl SwxSide {
    fn compile(&mut self, spec: &str) -> Res<PathBuf> {
        if let Some(p) = self.compiled.get(spec) {
            return Ok(p.clone());
        }
        self.n += 1;
        let path = self.dir.join(format!("p{}.spec", self.n));
        std::fs::write(&path, spec)?;
        let so = self.swx.compile(&path, &self.dir)?;
        self.compiled.insert(spec.to_string(), so.clone());
        Ok(so)
    }

    /// Writes the pcap, entries and iospec of `twin` under `tag`; returns (tables, iospec).
    fn files(
        &self,
        tag: &str,
        twin: Option<&Twin>,
        frames: &[Vec<u8>],
        loops: u32,
        outputs: &[String],
    ) -> Res<(Vec<(String, PathBuf)>, PathBuf)> {
        let pcap = self.dir.join(format!("{tag}.pcap"));
        pktvec::io::capture::write_pcap(&pcap, frames)?;
        let mut tables = Vec::new();
        if let Some(t) = twin {
            for (name, text) in &t.tables {
                let p = self.dir.join(format!("{tag}-{name}.txt"));
                std::fs::write(&p, text)?;
                tables.push((name.clone(), p));
            }
        }
        let outs: Vec<&str> = outputs.iter().map(String::as_str).collect();
        let io = Twin::iospec(
            &pcap.display().to_string(),
            loops,
            frames.len() as u32,
            &outs,
        );
        let iop = self.dir.join(format!("{tag}.io"));
        std::fs::write(&iop, io)?;
        Ok((tables, iop))
    }

    fn serve(
        &mut self,
        tag: &str,
        spec: &str,
        twin: Option<&Twin>,
        frames: &[Vec<u8>],
        packets: u64,
    ) -> Res<(Served, Option<f64>)> {
        let so = self.compile(spec)?;
        let none = vec!["none".to_string(); 3];
        let (tables, io) = self.files(tag, twin, frames, 0, &none)?;
        let s = self.swx.serve(&so, &io, &tables, packets)?;
        let mem = s.info_value::<f64>("mem_bytes").unwrap_or(0.0)
            + s.info_value::<f64>("libc_bytes").unwrap_or(0.0);
        let entries = s.info_value::<f64>("entries").unwrap_or(0.0);
        Ok((s, (entries > 0.0).then_some(mem / entries)))
    }
}

fn swx_round(s: &mut Served) -> Res<f64> {
    let lines = s.round()?;
    let f = lines
        .iter()
        .find(|f| f.first().map(String::as_str) == Some("packets"))
        .ok_or("swx_bench: no packets line")?;
    let p: f64 = f
        .get(1)
        .and_then(|v| v.parse().ok())
        .ok_or("swx_bench: bad packets")?;
    let c: f64 = f
        .get(3)
        .and_then(|v| v.parse().ok())
        .ok_or("swx_bench: bad cycles")?;
    Ok(c / p)
}

fn selected(args: &Args) -> Res<Vec<Bench>> {
    if args.benches.is_empty() {
        return Ok(Bench::ALL.to_vec());
    }
    args.benches
        .iter()
        .map(|n| {
            Bench::ALL
                .iter()
                .copied()
                .find(|b| b.name() == n)
                .ok_or_else(|| {
                    let names: Vec<&str> = Bench::ALL.iter().map(|b| b.name()).collect();
                    format!("unknown benchmark {n:?} (benchmarks: {})", names.join(", ")).into()
                })
        })
        .collect()
}

/// A slope under this many cycles per step is within the noise of a sitting: the headline
/// counts it as this much.
const SLOPE_FLOOR: f64 = 1.0;

/// The benchmarks a `--quick` timing run covers when none are named (one of each kind of
/// program: parse, dependent tables, a large table, checksum, field writes).
const QUICK: [Bench; 5] = [
    Bench::ParseHeaders,
    Bench::TablesDependent,
    Bench::TableSize,
    Bench::Checksum,
    Bench::FieldWrites,
];

fn records(args: &Args, quick: bool) -> Res<Vec<Record>> {
    let mut out = Vec::new();
    let mut benches = selected(args)?;
    if quick && args.benches.is_empty() && !args.equivalence {
        benches.retain(|b| QUICK.contains(b));
    }
    for b in benches {
        let mut v = Record::sweep(b);
        if quick {
            // Two points per knob, tables of at most 2^14 entries.
            let params = b.sweep();
            let keep = [params[0], params[params.len().min(2) - 1]];
            v.retain(|r| keep.contains(&r.param) && !(r.bench == Bench::TableSize && r.param > 14));
            for r in &mut v {
                r.packets = r.packets.min(4096);
                r.flow_table_log2 = r.flow_table_log2.min(14);
            }
        }
        out.extend(v);
    }
    Ok(out)
}

/// Multi-worker run of the shared register: `workers` threads, each its own graph over the
/// same register; cycles per packet per worker (median over workers).
fn shared_register(r: &Record, frames: &[Vec<u8>], packets: u64) -> Res<f64> {
    let w = r.param as usize;
    let shared = (r.share == Share::Atomic).then(pktvec_synth::nodes::SharedRegister::shared_array);
    let barrier = Barrier::new(w);
    let cores = core_affinity::get_core_ids().unwrap_or_default();
    let results: Vec<Result<f64, String>> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..w)
            .map(|i| {
                let (shared, barrier, core) = (
                    shared.clone(),
                    &barrier,
                    cores.get(i % cores.len().max(1)).copied(),
                );
                s.spawn(move || -> Result<f64, String> {
                    if let Some(c) = core {
                        core_affinity::set_for_current(c);
                    }
                    let (mut g, _) =
                        graph_for(Some(r), frames, shared, None).map_err(|e| e.to_string())?;
                    time(&mut g, packets / 8);
                    barrier.wait();
                    Ok(time(&mut g, packets))
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("worker panicked".to_string()))
            })
            .collect()
    });
    let mut v = Vec::new();
    for x in results {
        v.push(x?);
    }
    Ok(median(v))
}

/// Runs every record once through pktvec and SWX (pcap in, pcap out) and compares.
fn equivalence(args: &Args, recs: &[Record]) -> Res<()> {
    let scratch = Scratch::new("whippersnapper-eq")?;
    let dir = args.files.clone().unwrap_or_else(|| scratch.path(""));
    std::fs::create_dir_all(&dir)?;
    let mut side = SwxSide {
        swx: Swx::new()?
            .direct(!args.swx_ctl_load)
            .quick_compile()
            .mem_mib(256),
        dir: dir.clone(),
        compiled: HashMap::new(),
        n: 0,
    };
    let mut failed = Vec::new();
    for (i, r) in recs.iter().enumerate() {
        let mut r = r.clone();
        r.packets = r.packets.min(256);
        if r.bench == Bench::SharedRegister {
            r.param = 1;
        }
        let frames = traffic::frames(&r);
        let ours = dir.join(format!("e{i}-pktvec.pcap"));
        {
            let (mut g, _) = graph_for(Some(&r), &frames, None, Some(&ours))?;
            g.run_until_idle();
        }
        let twin = Twin::new(&r);
        let so = side.compile(&twin.spec)?;
        let outs: Vec<String> = (0..3)
            .map(|p| dir.join(format!("e{i}-swx-{p}.pcap")).display().to_string())
            .collect();
        let (tables, io) = side.files(&format!("e{i}"), Some(&twin), &frames, 1, &outs)?;
        let summary = side.swx.once(&so, &io, &tables)?;
        let a = read_capture(&ours)?.packets;
        let b = read_capture(Path::new(&outs[2]))?.packets;
        let verdict = if a == b && a.len() == frames.len() {
            "identical".to_string()
        } else {
            let first = a.iter().zip(&b).position(|(x, y)| x != y);
            failed.push(r.name());
            format!(
                "DIFFERENT: pktvec {} packets, SWX {} ({}), first differing packet {first:?}",
                a.len(),
                b.len(),
                summary.lines().last().unwrap_or("")
            )
        };
        println!("{:<36} {:>5} packets  {verdict}", r.name(), frames.len());
    }
    if failed.is_empty() {
        println!(
            "all {} records: pktvec's output is byte-identical to SWX's",
            recs.len()
        );
        Ok(())
    } else {
        Err(format!("{} records differ: {}", failed.len(), failed.join(", ")).into())
    }
}

/// Runs `whippersnapper`.
pub fn run(args: Args) -> Res<()> {
    let quick = args.common.quick;
    let recs = records(&args, quick)?;
    if args.equivalence {
        return equivalence(&args, &recs);
    }
    let sitting = Sitting::begin(
        "whippersnapper",
        "Whippersnapper suite vs DPDK SWX",
        "whippersnapper.md",
        &args.common,
    )?;
    let ns_per_cycle = 1e9 / clock::tsc_hz();
    let ghz = clock::tsc_hz() / 1e9;
    let packets = if quick {
        args.packets.min(1 << 16)
    } else {
        args.packets
    };
    let rounds = if quick {
        args.rounds.min(2)
    } else {
        args.rounds
    };
    let scratch = Scratch::new("whippersnapper")?;
    let mut swx = if args.no_dpdk {
        None
    } else {
        let dir = args.files.clone().unwrap_or_else(|| scratch.path(""));
        std::fs::create_dir_all(&dir)?;
        Some(SwxSide {
            swx: Swx::new()?
                .mem_mib(4096)
                .burst_instr(args.swx_burst)
                .direct(!args.swx_ctl_load),
            dir,
            compiled: HashMap::new(),
            n: 0,
        })
    };
    let mut points = Vec::new();
    for (i, r) in recs.iter().enumerate() {
        let frames = traffic::frames(r);
        let (mut g, built) = graph_for(Some(r), &frames, None, None)?;
        let (mut base, _) = graph_for(None, &frames, None, None)?;
        let twin = Twin::new(r);
        // One SWX pipeline runs on one core: the shared register's twin is its 1-worker point.
        let one_core = !(r.bench == Bench::SharedRegister && r.param > 1);
        let mut served = match swx.as_mut().filter(|_| one_core) {
            Some(s) => {
                let (bench, per_entry) =
                    s.serve(&format!("r{i}"), &twin.spec, Some(&twin), &frames, packets)?;
                let (base, _) = s.serve(&format!("b{i}"), BASELINE_SPEC, None, &frames, packets)?;
                Some((bench, base, per_entry))
            }
            None => None,
        };
        time(&mut g, packets / 4);
        time(&mut base, packets / 4);
        let (mut pk, mut pkg, mut sw, mut swg) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for _ in 0..rounds {
            let gross = if r.bench == Bench::SharedRegister {
                shared_register(r, &frames, packets)?
            } else {
                time(&mut g, packets)
            };
            let b = time(&mut base, packets);
            pk.push(b);
            pkg.push(gross);
            if let Some((bench, base, _)) = served.as_mut() {
                let x = swx_round(bench)?;
                let y = swx_round(base)?;
                sw.push(y);
                swg.push(x);
            }
        }
        let lat_one = latency(&mut g, 1, 20_000, ns_per_cycle)?;
        let lat_full = latency(&mut g, 256, 200_000, ns_per_cycle)?;
        let c = g.conservation();
        let out = g
            .node::<CountingSink>("tx")
            .map(|s| s.packets[2])
            .unwrap_or(0);
        let dropped: u64 = g.errors().rows.iter().map(|e| e.count).sum();
        if dropped > 0 || out == 0 {
            return Err(format!(
                "{}: pktvec dropped {dropped} packets ({} out on port 2); conservation {c:?}",
                r.name(),
                out
            )
            .into());
        }
        let built = built.ok_or("no pipeline")?;
        let p = Point {
            name: r.name(),
            bench: r.bench.name().into(),
            knob: knob(r),
            param: r.param,
            pktvec_net: least(&pkg) - least(&pk),
            pktvec_gross: least(&pkg),
            swx_net: served.as_ref().map(|_| least(&swg) - least(&sw)),
            swx_gross: served.as_ref().map(|_| least(&swg)),
            lat_one,
            lat_full,
            pktvec_bytes_per_entry: (built.table_entries > 0)
                .then(|| built.table_bytes as f64 / built.table_entries as f64),
            swx_bytes_per_entry: served
                .as_ref()
                .and_then(|s| s.2)
                .filter(|_| built.table_entries > 0),
        };
        println!(
            "{:<36} pktvec net {:>7.1} (gross {:>6.1}) | SWX net {:>7} (gross {:>6}) cycles/pkt | latency 1: {:.0}/{:.0} ns, full: {:.0}/{:.0} ns",
            p.name,
            p.pktvec_net,
            p.pktvec_gross,
            p.swx_net.map_or("-".into(), |x| format!("{x:.1}")),
            p.swx_gross.map_or("-".into(), |x| format!("{x:.1}")),
            p.lat_one.0,
            p.lat_one.1,
            p.lat_full.0,
            p.lat_full.1
        );
        served.take();
        points.push(p);
    }
    // Slopes per (bench, knob).
    let mut slopes = Vec::new();
    let mut headline = Vec::new();
    for b in selected(&args)? {
        let mut knobs: Vec<String> = points
            .iter()
            .filter(|p| p.bench == b.name())
            .map(|p| p.knob.clone())
            .collect();
        knobs.dedup();
        knobs.sort();
        knobs.dedup();
        for k in knobs {
            let pts: Vec<&Point> = points
                .iter()
                .filter(|p| p.bench == b.name() && p.knob == k)
                .collect();
            let x = |p: &Point| {
                if b.log_scale() {
                    f64::from(p.param).log2()
                } else {
                    f64::from(p.param)
                }
            };
            let pk: Vec<(f64, f64)> = pts.iter().map(|p| (x(p), p.pktvec_net)).collect();
            let sw: Vec<(f64, f64)> = pts
                .iter()
                .filter_map(|p| p.swx_net.map(|s| (x(p), s)))
                .collect();
            let s = Slope {
                bench: b.name().into(),
                knob: k.clone(),
                unit: b.unit().into(),
                pktvec: slope(&pk),
                swx: (sw.len() >= 2).then(|| slope(&sw)),
            };
            // Where SWX's slope is above the noise: pktvec's against it (target: half).
            if let Some(sx) = s.swx.filter(|&x| x >= 2.0 * SLOPE_FLOOR) {
                let case = if k == "-" {
                    format!("{}: cycles per {}", b.name(), b.unit())
                } else {
                    format!("{} ({k}): cycles per {}", b.name(), b.unit())
                };
                let h = Headline::cost(&case, "cycles", s.pktvec.max(SLOPE_FLOOR), "SWX", sx);
                // Without prefetch is the ablation that shows the prefetch's gain: no target.
                headline.push(if k == "no-prefetch" { h } else { h.target(2.0) });
            }
            slopes.push(s);
        }
        // Plot: net cycles over the parameter, every knob, both sides.
        if let Some(path) = sitting.plot_path(b.name()) {
            let mut series = Vec::new();
            let mut knobs: Vec<&str> = points
                .iter()
                .filter(|p| p.bench == b.name())
                .map(|p| p.knob.as_str())
                .collect();
            knobs.sort();
            knobs.dedup();
            for k in &knobs {
                let pts: Vec<&Point> = points
                    .iter()
                    .filter(|p| p.bench == b.name() && p.knob == *k)
                    .collect();
                series.push((
                    format!("pktvec {k}"),
                    pts.iter()
                        .map(|p| (f64::from(p.param), p.pktvec_net))
                        .collect(),
                ));
                let sw: Vec<(f64, f64)> = pts
                    .iter()
                    .filter_map(|p| p.swx_net.map(|s| (f64::from(p.param), s)))
                    .collect();
                // The parse and table knobs are pktvec's alone: SWX runs one program.
                let one_program = b.twin_ignores_knobs();
                let drawn = one_program && series.iter().any(|(n, _)| n == "SWX");
                if !sw.is_empty() && !drawn {
                    let label = if one_program {
                        "SWX".to_string()
                    } else {
                        format!("SWX {k}")
                    };
                    series.push((label, sw));
                }
            }
            crate::plot::lines_linear(
                &path,
                &format!("{}: net cycles per packet", b.name()),
                b.unit(),
                "cycles/packet",
                &series,
            )?;
        }
    }
    for s in &slopes {
        println!(
            "slope {:<20} {:<12} pktvec {:>7.2}  SWX {:>7}  cycles per {}",
            s.bench,
            s.knob,
            s.pktvec,
            s.swx.map_or("-".into(), |x| format!("{x:.2}")),
            s.unit
        );
    }
    let detail = json!({
        "tsc_ghz": ghz,
        "packets_per_round": packets,
        "rounds": rounds,
        "points": points,
        "slopes": slopes,
    });
    sitting.finish(headline, detail)?;
    Ok(())
}
