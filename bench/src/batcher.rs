//! `batcher`: l3fwd (IPv4 + IPv6, 100,000 / 20,000 generated routes) behind the path-based
//! batcher (`pktvec::batcher`), cycles per packet end to end (batcher included) with the
//! batcher off and at a few batch sizes, on alternating, realistic and single-path traffic.
//!
//! All configurations of one traffic run on one graph, switched between chunks with
//! `Batcher::set_batching` (same pool, tables and memory for all); they take turns, the
//! order rotating every round, the first round warm-up. A chunk is timed by the thread's
//! CPU time (time on the CPU, not time descheduled), in TSC cycles per packet; a figure is
//! the median over chunks, and the per-round ratio to the "off" chunk is kept as well.
//!
//! `--cachegrind` adds seed `001_*` Fig. 5: I1 and D1 misses per packet under
//! `valgrind --tool=cachegrind`, re-running this binary (a hidden child mode) at 50,000
//! and 150,000 packets so set-up cancels; "off" there has graph vectors of b (the paper's
//! "without PPB" at that batch size). Without it, the previous data file's cachegrind
//! figures are carried over, with their date.

use std::process::Command;

use pktvec::batcher::{Batcher, BatcherConfig, BatcherNext, ReplaySource};
use pktvec::graph::builtin::NullSink;
use pktvec::graph::{clock, Graph, GraphBuilder, GraphConfig};
use pktvec::io::generator::Generator;
use pktvec::io::profile::TrafficProfile;
use pktvec::nodes::apps::l3fwd::{L3fwd, L3fwdConfig};
use pktvec::packet::{BufferPool, PoolConfig};
use serde_json::{json, Value};

use crate::forwarders::graphs::{median, plot_lines, spread};
use crate::sitting::{Common, Headline, Record, Sitting};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// Options of `batcher`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    common: Common,
    /// Batch sizes timed against the batcher off (128 is the headline's)
    #[arg(long, value_delimiter = ',')]
    batches: Option<Vec<usize>>,
    /// Rounds (every configuration one chunk each); default 100, 6 with --quick
    #[arg(long)]
    rounds: Option<usize>,
    /// Packets per chunk
    #[arg(long, default_value_t = 200_000)]
    chunk: u64,
    /// Also count I1/D1 misses per packet under valgrind's cachegrind (a few minutes)
    #[arg(long)]
    cachegrind: bool,
    /// Batch sizes of the cachegrind runs
    #[arg(long, value_delimiter = ',', default_values_t = [32usize, 128, 256])]
    cg_batches: Vec<usize>,
    /// Child mode of --cachegrind: TRAFFIC:BATCH:VECTOR:PACKETS
    #[arg(long, hide = true)]
    cg_child: Option<String>,
}

/// The traffics, as generator profiles.
pub const TRAFFICS: [(&str, &str); 3] = [
    // 64-byte IPv4 and IPv6 strictly alternating (seed 001's worst case).
    ("alternating", "order = \"alternating\"\n[mix]\nipv4 = 1.0\nipv6 = 1.0\n[sizes]\nfixed = 64\n[destinations]\nipv4_hit_rate = 1.0\nipv6_hit_rate = 1.0"),
    // IPv4 70%, IPv6 25%, ARP, VLAN, unknown EtherTypes, malformed; IMIX sizes.
    ("realistic", "sizes = \"imix\"\n[mix]\nipv4 = 70.0\nipv6 = 25.0\narp = 1.0\nunknown_ethertype = 1.0\nmalformed = 1.0\nvlan = 0.02\n[flows]\ncount = 10000"),
    // 64-byte IPv4 only: one path, where batching can only cost.
    ("single", "[mix]\nipv4 = 1.0\n[sizes]\nfixed = 64\n[destinations]\nipv4_hit_rate = 1.0"),
];

/// l3fwd's routes and `n` pre-generated packets of `traffic`.
fn setup(traffic: &str, v4: usize, v6: usize, n: usize) -> Res<(L3fwd, Vec<Vec<u8>>)> {
    let profile = TRAFFICS
        .iter()
        .find(|t| t.0 == traffic)
        .ok_or_else(|| format!("unknown traffic {traffic}"))?
        .1;
    let app = L3fwd::new(L3fwdConfig {
        route_count: v4,
        route6_count: v6,
        ..L3fwdConfig::default()
    })?;
    let mut gen = Generator::builder(TrafficProfile::from_toml(profile)?)
        .ipv4_prefixes(app.routes4().iter().map(|r| (r.addr, r.len)).collect())
        .ipv6_prefixes(app.routes6().iter().map(|r| (r.addr, r.len)).collect())
        .build()?;
    let packets = (0..n).map(|_| gen.next_packet().1.to_vec()).collect();
    Ok((app, packets))
}

/// l3fwd behind a batcher sized for `batch` (0 = off), IPv4/IPv6 vectors entering at
/// `ip4-input`/`ip6-input`, graph vectors of `vector`.
fn build(
    app: &L3fwd,
    src: ReplaySource,
    batch: usize,
    vector: usize,
    deadline_us: f64,
) -> Res<Graph> {
    let cfg = BatcherConfig {
        enabled: batch > 0,
        batch_size: batch.max(1),
        flush_deadline_us: deadline_us,
        ..BatcherConfig::default()
    };
    let mut b = GraphBuilder::new(GraphConfig {
        vector_size: vector,
        ..GraphConfig::default()
    });
    b.add("batcher", Batcher::new(src, cfg));
    let nodes = app.add_to(&mut b);
    b.set_next("batcher", BatcherNext::Ip4, &nodes.ethernet_to_ip4.to)
        .set_next("batcher", BatcherNext::Ip6, &nodes.ethernet_to_ip6.to);
    b.add(&nodes.output_to_tx.to, NullSink);
    Ok(b.build(BufferPool::new(PoolConfig {
        buffers: 16384,
        ..PoolConfig::default()
    })?)?)
}

/// Runs the measurement.
pub fn run(args: Args) -> Res<()> {
    if let Some(spec) = &args.cg_child {
        return cg_child(spec);
    }
    let sitting = Sitting::begin(
        "batcher",
        "Path batcher in front of l3fwd: cycles per packet, off vs on",
        "batcher.md",
        &args.common,
    )?;
    let quick = sitting.quick();
    let batches = args.batches.clone().unwrap_or_else(|| {
        if quick {
            vec![128]
        } else {
            vec![8, 32, 128, 256]
        }
    });
    let rounds = args.rounds.unwrap_or(if quick { 6 } else { 100 }).max(2);
    let chunk = if quick {
        args.chunk.min(50_000)
    } else {
        args.chunk
    };
    let hz = clock::tsc_hz();
    let mut rows = Vec::new();
    let mut per_traffic = Vec::new();
    let mut curves = Vec::new();
    for (traffic, _) in TRAFFICS {
        let (app, packets) = setup(traffic, 100_000, 20_000, 65_536)?;
        let max_b = batches.iter().copied().max().unwrap_or(1);
        let src = ReplaySource::new(packets.clone()).looping(true);
        let mut g = build(&app, src, max_b, 256, 100.0)?;
        let cfgs: Vec<usize> = std::iter::once(0).chain(batches.iter().copied()).collect();
        let k = cfgs.len();
        let (mut cpu, mut tsc) = (vec![Vec::new(); k], vec![Vec::new(); k]);
        let t0 = cpu_time::ThreadTime::now();
        for r in 0..rounds {
            for j in 0..k {
                let i = (r + j) % k;
                g.node_mut::<Batcher<ReplaySource>>("batcher")
                    .map_err(|e| e.to_string())?
                    .set_batching(cfgs[i] > 0, cfgs[i].max(1));
                let (c0, n0) = (t0.elapsed().as_nanos() as f64, clock::now());
                let mut done = 0u64;
                while done < chunk {
                    done += g.run_once();
                }
                if r > 0 {
                    let cpu_ns = t0.elapsed().as_nanos() as f64 - c0;
                    cpu[i].push(cpu_ns * hz / 1e9 / done as f64);
                    tsc[i].push((clock::now() - n0) as f64 / done as f64);
                }
            }
        }
        let ratio = |m: &[Vec<f64>], i: usize| {
            spread(
                &m[i]
                    .iter()
                    .zip(&m[0])
                    .map(|(a, b)| a / b)
                    .collect::<Vec<_>>(),
            )
        };
        let mut configs = Vec::new();
        let mut curve = Vec::new();
        for i in 0..k {
            let (c, t) = (spread(&cpu[i]), spread(&tsc[i]));
            let (cr, tr) = (ratio(&cpu, i), ratio(&tsc, i));
            println!(
                "{traffic:<12} {:>4}: {:6.1} cycles/packet (CPU time; {:.1}-{:.1}), on/off {:.4} ({:.4}-{:.4}); TSC {:6.1}",
                if cfgs[i] == 0 { "off".to_string() } else { cfgs[i].to_string() },
                c[0], c[1], c[2], cr[0], cr[1], cr[2], t[0]
            );
            if i > 0 {
                curve.push((cfgs[i] as f64, cr[0]));
            }
            configs.push(
                json!({"batch": cfgs[i], "cpu_cycles_per_packet": c, "cpu_ratio_to_off": cr,
                                "tsc_cycles_per_packet": t, "tsc_ratio_to_off": tr}),
            );
        }
        let off = median(&cpu[0]);
        if let Some(i) = cfgs.iter().position(|&b| b == 128) {
            let row = Headline::cost(
                traffic,
                "cycles/packet",
                median(&cpu[i]),
                "batcher off (same graph)",
                off,
            );
            rows.push(if traffic == "alternating" {
                row.target(1.0)
            } else {
                row
            });
        }
        curves.push((traffic.to_string(), curve));
        let latency = latency(&app, packets, if quick { 200_000 } else { 2_000_000 })?;
        per_traffic.push(json!({"traffic": traffic, "configs": configs, "latency_b128": latency}));
    }
    if let Some(path) = sitting.plot_path("curve") {
        plot_lines(
            &path,
            "l3fwd behind the batcher: cycles per packet, on / off (CPU time, median)",
            "batch size",
            "cycles on / off",
            &curves,
        )?;
    }

    let cachegrind = if args.cachegrind {
        let cg = cachegrind(&args.cg_batches)?;
        for (traffic, _) in &TRAFFICS[..2] {
            if let Some(path) = sitting.plot_path(&format!("cachegrind-{traffic}")) {
                let series: Vec<(String, Vec<(f64, f64)>)> = ["I1", "D1"]
                    .iter()
                    .flat_map(|ev| ["on", "off"].map(|mode| (*ev, mode)))
                    .map(|(ev, mode)| {
                        let pts = cg["points"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .filter(|p| p["traffic"] == *traffic && p["mode"] == mode)
                            .filter_map(|p| Some((p["batch"].as_f64()?, p[ev].as_f64()?)))
                            .collect();
                        (format!("{ev} {mode}"), pts)
                    })
                    .collect();
                let title =
                    format!("misses per packet (cachegrind, I1 8 KiB, D1 32 KiB), {traffic}");
                plot_lines(
                    &path,
                    &title,
                    "batch size b (off: vectors of b)",
                    "misses / packet",
                    &series,
                )?;
            }
        }
        cg
    } else {
        // Carried over from the previous data file, if it has them.
        let old = Record::load(&args.common.data_dir().join("batcher.json")).ok();
        old.and_then(|r| {
            let mut cg = r.detail.get("cachegrind").cloned()?;
            if cg.get("measured").is_none() {
                cg["measured"] = json!(r.machine.date);
            }
            Some(cg)
        })
        .unwrap_or(Value::Null)
    };
    let detail = json!({
        "routes": [100_000, 20_000], "chunk": chunk, "rounds": rounds, "batches": batches,
        "statistic": "median over chunks of the thread's CPU time per packet (TSC cycles); configurations rotate on one graph, first round warm-up",
        "traffics": per_traffic, "cachegrind": cachegrind,
    });
    sitting.finish(rows, detail)?;
    Ok(())
}

/// The batcher's added latency at b = 128 (deadline 100 µs) over `n` packets on a fresh
/// graph: p50, p99 and max held time, ns.
fn latency(app: &L3fwd, packets: Vec<Vec<u8>>, n: u64) -> Res<Value> {
    let src = ReplaySource::new(packets).looping(true).with_limit(n);
    let mut g = build(app, src, 128, 256, 100.0)?;
    g.run_until_idle();
    let st = g
        .node::<Batcher<ReplaySource>>("batcher")
        .map_err(|e| e.to_string())?
        .stats();
    Ok(
        json!({"p50_ns": st.latency_p50_ns, "p99_ns": st.latency_p99_ns, "max_ns": st.latency_max_ns}),
    )
}

/// `--cg-child TRAFFIC:BATCH:VECTOR:PACKETS`: one run for cachegrind (20,000 / 5,000 routes,
/// 4,096 distinct packets, no flush deadline: a time deadline means nothing under
/// valgrind's slowdown, and without one the runs are deterministic).
fn cg_child(spec: &str) -> Res<()> {
    let f: Vec<&str> = spec.split(':').collect();
    let [traffic, batch, vector, n] = f[..] else {
        return Err("--cg-child TRAFFIC:BATCH:VECTOR:PACKETS".into());
    };
    let (app, packets) = setup(traffic, 20_000, 5_000, 4096)?;
    let src = ReplaySource::new(packets)
        .looping(true)
        .with_limit(n.parse()?);
    let mut g = build(&app, src, batch.parse()?, vector.parse()?, 1e9)?;
    g.run_until_idle();
    let c = g.conservation();
    if !c.is_balanced() {
        return Err("packets were lost".into());
    }
    Ok(())
}

/// I1 (8 KiB simulated L1i) and D1 misses per packet, on at each batch and off with
/// vectors of that size, alternating and realistic traffic.
fn cachegrind(batches: &[usize]) -> Res<Value> {
    let exe = std::env::current_exe()?;
    let run = |traffic: &str, batch: usize, vector: usize, n: u64| -> Res<[f64; 3]> {
        let out = Command::new("valgrind")
            .args([
                "--tool=cachegrind",
                "--cache-sim=yes",
                "--cachegrind-out-file=/dev/null",
                "--I1=8192,8,64",
            ])
            .arg(&exe)
            .args(["batcher", "--lock", "", "--no-save", "--cg-child"])
            .arg(format!("{traffic}:{batch}:{vector}:{n}"))
            .output()
            .map_err(|e| format!("valgrind: {e} (is valgrind installed?)"))?;
        let err = String::from_utf8_lossy(&out.stderr);
        if !out.status.success() {
            return Err(format!("valgrind run failed: {err}").into());
        }
        let get = |key: &str| -> Res<f64> {
            let line = err
                .lines()
                .find(|l| l.contains(key))
                .ok_or_else(|| format!("no {key:?} in cachegrind's output"))?;
            let num = line
                .split(':')
                .nth(1)
                .and_then(|r| r.split_whitespace().next())
                .unwrap_or("");
            Ok(num.replace(',', "").parse()?)
        };
        Ok([get("I1  misses:")?, get("D1  misses:")?, get("I   refs:")?])
    };
    let mut points = Vec::new();
    for (traffic, _) in &TRAFFICS[..2] {
        for &b in batches {
            for (mode, batch, vector) in [("on", b, 256), ("off", 0, b)] {
                let lo = run(traffic, batch, vector, 50_000)?;
                let hi = run(traffic, batch, vector, 150_000)?;
                let per: Vec<f64> = hi
                    .iter()
                    .zip(lo)
                    .map(|(h, l)| (h - l) / 100_000.0)
                    .collect();
                println!(
                    "cachegrind {traffic:<12} b {b:>3} {mode:<3}: I1 {:.3} D1 {:.3} instructions {:.0} per packet",
                    per[0], per[1], per[2]
                );
                points.push(
                    json!({"traffic": traffic, "batch": b, "mode": mode, "vector": vector,
                                   "I1": per[0], "D1": per[1], "Ir": per[2]}),
                );
            }
        }
    }
    Ok(
        json!({"measured": crate::sitting::utc_now(), "I1_size": 8192, "points": points,
              "method": "(misses at 150,000 - at 50,000 packets) / 100,000; 20,000 / 5,000 routes; no flush deadline"}),
    )
}
