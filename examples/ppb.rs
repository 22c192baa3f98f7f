//! The path-based packet batcher in front of l3fwd (IPv4 + IPv6): cycles per packet end to
//! end (batcher included), with the batcher off or at a batch size, on alternating,
//! realistic or single-path traffic. `scripts/ppb_sweep.py` runs it across batch sizes,
//! natively (TSC) and under cachegrind (I1/D1 misses per packet).
//!
//! ```sh
//! cargo run --release --example ppb -- --traffic alternating --batch 128 -n 2000000
//! cargo run --release --example ppb -- --traffic alternating --batch 0     # batcher off
//! # A/B in one process: off, off with vectors of 128, b = 128, b = 256, taking turns in
//! # chunks of 100,000 packets; medians and paired ratios against the first
//! cargo run --release --example ppb -- --traffic single --ab 0,0/128,128,256 -n 4000000
//! ```

use clap::{Parser, ValueEnum};
use pktvec::batcher::{Batcher, BatcherConfig, BatcherNext, ReplaySource};
use pktvec::graph::builtin::NullSink;
use pktvec::graph::{clock, Graph, GraphBuilder, GraphConfig};
use pktvec::io::generator::Generator;
use pktvec::io::profile::TrafficProfile;
use pktvec::nodes::apps::l3fwd::{L3fwd, L3fwdConfig};
use pktvec::packet::{BufferPool, PoolConfig};
use std::time::Instant;

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
enum Traffic {
    /// 64-byte IPv4 and IPv6 strictly alternating (seed 001's worst case).
    Alternating,
    /// A realistic mix: IPv4 70%, IPv6 25%, ARP, VLAN, unknown EtherTypes, malformed.
    Realistic,
    /// 64-byte IPv4 only: one path, where batching can only cost.
    Single,
}

#[derive(Parser, Debug)]
#[command(about = "l3fwd behind the path-based packet batcher")]
struct Cli {
    /// Traffic.
    #[arg(long, value_enum, default_value_t = Traffic::Alternating)]
    traffic: Traffic,
    /// Batch size of the batcher; 0 = batcher off (packets pass straight through).
    #[arg(long, default_value_t = 128)]
    batch: usize,
    /// Graph vector size.
    #[arg(long, default_value_t = 256)]
    vector_size: usize,
    /// Packets.
    #[arg(short = 'n', long, default_value_t = 2_000_000)]
    packets: u64,
    /// IPv4 routes (generated).
    #[arg(long, default_value_t = 100_000)]
    route_count: usize,
    /// IPv6 routes (generated).
    #[arg(long, default_value_t = 20_000)]
    route6_count: usize,
    /// Distinct packets generated and replayed.
    #[arg(long, default_value_t = 65_536)]
    pregen: usize,
    /// Flush deadline of the batcher, microseconds.
    #[arg(long, default_value_t = 100.0)]
    deadline_us: f64,
    /// Send every vector to ethernet-input (by default the batcher starts untagged
    /// IPv4/IPv6 vectors at ip4-input/ip6-input, doing ethernet-input's work itself).
    #[arg(long)]
    no_direct: bool,
    /// Keep every vector at most `--batch` packets (by default, on uniform traffic with
    /// nothing held, further whole bursts of the same path join the vector handed over,
    /// up to the graph's vector size: `BatcherConfig::uniform_vectors`).
    #[arg(long)]
    no_uniform_vectors: bool,
    /// Also time the run in chunks of this many packets and report the median and the
    /// lowest chunk's cycles per packet (robust to other processes on a shared machine).
    #[arg(long, default_value_t = 250_000)]
    chunk: u64,
    /// Print one JSON object instead of tables.
    #[arg(long)]
    json: bool,
    /// A/B mode: several configurations in one process, each `BATCH[/VECTOR]` (batch 0 =
    /// batcher off; vector size default `--vector-size`; a batch ending in `x`, e.g.
    /// `128x`: without uniform vectors, as `--no-uniform-vectors`), each its own graph over the same
    /// packets and tables. They take turns (rotating the order each round) running
    /// `--ab-chunk` packets, `-n` packets each in all; the first round is warm-up. Prints
    /// each one's median cycles per packet over its chunks and the median (and quartiles)
    /// of its chunk's ratio to the first configuration's chunk in the same round: other
    /// processes on a shared machine slow neighbouring chunks alike, so the ratios are far
    /// steadier than runs in separate processes.
    #[arg(long, value_delimiter = ',')]
    ab: Vec<String>,
    /// Data room of the pool's buffers, bytes (with the 128-byte headroom: a stride of
    /// 2176 bytes, 34 cache lines, by default; an odd number of lines, e.g. 2112, spreads
    /// the buffers' first data lines over all L1d sets instead of half of them).
    #[arg(long, default_value_t = 2048)]
    data_room: u16,
    /// `--ab` over one graph: the configurations (all of one vector size) take turns on
    /// the same graph, switched between chunks with `Batcher::set_batching` and
    /// `set_uniform_vectors` (same pool, tables and memory for all, so no configuration
    /// gains or loses by where its own graph landed in memory).
    #[arg(long)]
    ab_one_graph: bool,
    /// Packets per turn in `--ab` mode.
    #[arg(long, default_value_t = 100_000)]
    ab_chunk: u64,
}

/// l3fwd behind a batcher at `batch` (0 = off) with graph vectors of `vector_size`.
fn build(
    cli: &Cli,
    app: &L3fwd,
    src: ReplaySource,
    batch: usize,
    vector_size: usize,
    uniform_vectors: bool,
) -> Result<Graph, Box<dyn std::error::Error>> {
    let cfg = BatcherConfig {
        enabled: batch > 0,
        batch_size: batch.max(1),
        flush_deadline_us: cli.deadline_us,
        uniform_vectors,
        ..BatcherConfig::default()
    };
    let mut b = GraphBuilder::new(GraphConfig {
        vector_size,
        ..GraphConfig::default()
    });
    b.add("batcher", Batcher::new(src, cfg));
    let nodes = app.add_to(&mut b);
    if !cli.no_direct {
        b.set_next("batcher", BatcherNext::Ip4, &nodes.ethernet_to_ip4.to)
            .set_next("batcher", BatcherNext::Ip6, &nodes.ethernet_to_ip6.to);
    }
    b.add(&nodes.output_to_tx.to, NullSink);
    Ok(b.build(BufferPool::new(PoolConfig {
        buffers: 16384,
        data_room: cli.data_room,
        ..PoolConfig::default()
    })?)?)
}

/// Median, first and third quartile of `v` (sorted in place).
fn quartiles(v: &mut [f64]) -> [f64; 3] {
    v.sort_by(f64::total_cmp);
    let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
    [at(0.5), at(0.25), at(0.75)]
}

/// `--ab` mode (see [`Cli::ab`]).
fn ab(cli: &Cli, app: &L3fwd, packets: Vec<Vec<u8>>) -> Result<(), Box<dyn std::error::Error>> {
    let mut cfgs = Vec::new();
    for c in &cli.ab {
        let (b, v) = c.split_once('/').unwrap_or((c, ""));
        let (b, join) = match b.strip_suffix('x') {
            Some(b) => (b, false),
            None => (b, !cli.no_uniform_vectors),
        };
        let v = if v.is_empty() {
            cli.vector_size
        } else {
            v.parse()?
        };
        cfgs.push((c.clone(), b.parse::<usize>()?, v, join));
    }
    // Built in a rotated order (by process id): where a graph's pool and tables land in
    // memory biases its timing by a few percent (identical configurations differ by up to
    // 8% in one process), so over several runs every configuration takes every place; or
    // one graph for all (`--ab-one-graph`).
    let k = cfgs.len();
    let first = std::process::id() as usize % k;
    let one = cli.ab_one_graph;
    if one && cfgs.iter().any(|c| c.2 != cfgs[0].2) {
        return Err("--ab-one-graph: all configurations need one vector size".into());
    }
    let mut built: Vec<Option<Graph>> = (0..k).map(|_| None).collect();
    for j in 0..if one { 1 } else { k } {
        let i = (first + j) % k;
        let (_, b, v, join) = &cfgs[i];
        let b = if one {
            cfgs.iter().map(|c| c.1).max().unwrap_or(0).max(1)
        } else {
            *b
        };
        let src = ReplaySource::new(packets.clone()).looping(true);
        built[i] = Some(build(cli, app, src, b, *v, *join)?);
    }
    let mut graphs: Vec<Graph> = built.into_iter().flatten().collect();
    let rounds = (cli.packets / cli.ab_chunk.max(1)).max(2) as usize;
    let hz = clock::tsc_hz();
    // The thread's CPU time: time on the CPU, not time descheduled on a shared machine.
    let cpu_t0 = cpu_time::ThreadTime::now();
    let cpu_ns = || cpu_t0.elapsed().as_nanos() as f64;
    // Per configuration and round: TSC cycles per packet of its chunk, and the thread's
    // CPU time per packet in TSC cycles (excludes time descheduled).
    let mut tsc = vec![vec![0f64; rounds]; k];
    let mut cpu = vec![vec![0f64; rounds]; k];
    for r in 0..rounds {
        for j in 0..k {
            let i = (r + j) % k;
            let g = &mut graphs[if one { 0 } else { i }];
            if one {
                let bt = g
                    .node_mut::<Batcher<ReplaySource>>("batcher")
                    .expect("batcher node");
                bt.set_batching(cfgs[i].1 > 0, cfgs[i].1.max(1));
                bt.set_uniform_vectors(cfgs[i].3);
            }
            let (t0, c0, mut done) = (cpu_ns(), clock::now(), 0u64);
            while done < cli.ab_chunk {
                done += g.run_once();
            }
            tsc[i][r] = (clock::now() - c0) as f64 / done as f64;
            cpu[i][r] = (cpu_ns() - t0) * hz / 1e9 / done as f64;
        }
    }
    let stats = |m: &[Vec<f64>], i: usize| {
        let mut own: Vec<f64> = m[i][1..].to_vec();
        let mut ratio: Vec<f64> = (1..rounds).map(|r| m[i][r] / m[0][r]).collect();
        (quartiles(&mut own), quartiles(&mut ratio))
    };
    let mut out = Vec::new();
    for i in 0..k {
        let ([m, lo, hi], [rm, rlo, rhi]) = stats(&cpu, i);
        let ([tm, tlo, thi], [trm, trlo, trhi]) = stats(&tsc, i);
        let c = graphs[if one { 0 } else { i }].conservation();
        if !c.is_balanced() {
            return Err("packets were lost".into());
        }
        if !cli.json {
            println!(
                "{:>10}: CPU time {m:6.1} cycles/packet ({lo:.1}-{hi:.1}), vs {}: {rm:.4} ({rlo:.4}-{rhi:.4}); \
                 TSC {tm:6.1} ({tlo:.1}-{thi:.1}), vs {}: {trm:.4} ({trlo:.4}-{trhi:.4})",
                cfgs[i].0, cfgs[0].0, cfgs[0].0
            );
        }
        out.push(serde_json::json!({
            "config": cfgs[i].0, "batch": cfgs[i].1, "vector_size": cfgs[i].2, "uniform_vectors": cfgs[i].3,
            "cpu_cycles_per_packet": [m, lo, hi], "cpu_ratio": [rm, rlo, rhi],
            "tsc_cycles_per_packet": [tm, tlo, thi], "tsc_ratio": [trm, trlo, trhi],
            "cpu_chunks": cpu[i], "tsc_chunks": tsc[i],
        }));
    }
    if cli.json {
        println!(
            "{}",
            serde_json::json!({
                "traffic": format!("{:?}", cli.traffic).to_lowercase(), "direct": !cli.no_direct,
                "chunk": cli.ab_chunk, "rounds": rounds, "built_first": first, "one_graph": one, "ab": out,
            })
        );
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let cli = Cli::parse();
    let app = L3fwd::new(L3fwdConfig {
        route_count: cli.route_count,
        route6_count: cli.route6_count,
        ip4_lookup_sub_batch: Some(64),
        ..L3fwdConfig::default()
    })?;
    let profile = match cli.traffic {
        Traffic::Alternating => "order = \"alternating\"\n[mix]\nipv4 = 1.0\nipv6 = 1.0\n[sizes]\nfixed = 64\n[destinations]\nipv4_hit_rate = 1.0\nipv6_hit_rate = 1.0",
        Traffic::Realistic => "sizes = \"imix\"\n[mix]\nipv4 = 70.0\nipv6 = 25.0\narp = 1.0\nunknown_ethertype = 1.0\nmalformed = 1.0\nvlan = 0.02\n[flows]\ncount = 10000",
        Traffic::Single => "[mix]\nipv4 = 1.0\n[sizes]\nfixed = 64\n[destinations]\nipv4_hit_rate = 1.0",
    };
    let mut gen = Generator::builder(TrafficProfile::from_toml(profile)?)
        .ipv4_prefixes(app.routes4().iter().map(|r| (r.addr, r.len)).collect())
        .ipv6_prefixes(app.routes6().iter().map(|r| (r.addr, r.len)).collect())
        .build()?;
    let packets: Vec<Vec<u8>> = (0..cli.pregen)
        .map(|_| gen.next_packet().1.to_vec())
        .collect();
    if !cli.ab.is_empty() {
        return ab(&cli, &app, packets);
    }
    let src = ReplaySource::new(packets)
        .looping(true)
        .with_limit(cli.packets);
    let mut g = build(
        &cli,
        &app,
        src,
        cli.batch,
        cli.vector_size,
        !cli.no_uniform_vectors,
    )?;
    let (t0, c0) = (Instant::now(), clock::now());
    let mut last = Instant::now();
    let mut done = 0u64;
    let mut chunks: Vec<f64> = Vec::new();
    let (mut chunk_c0, mut chunk_n0) = (c0, 0u64);
    loop {
        let n = g.run_once();
        done += n;
        if cli.chunk > 0 && done - chunk_n0 >= cli.chunk {
            let c = clock::now();
            chunks.push((c - chunk_c0) as f64 / (done - chunk_n0) as f64);
            (chunk_c0, chunk_n0) = (c, done);
        }
        if n == 0 && g.conservation().in_flight == 0 {
            break;
        }
        if !cli.json && last.elapsed().as_secs_f64() >= 1.0 {
            last = Instant::now();
            eprintln!("ppb: {done:>12} / {} packets", cli.packets);
        }
    }
    let cycles = clock::now() - c0;
    let secs = t0.elapsed().as_secs_f64();
    let st = g
        .node::<Batcher<ReplaySource>>("batcher")
        .expect("batcher node")
        .stats();
    let c = g.conservation();
    let cpp = cycles as f64 / done.max(1) as f64;
    // The first chunk includes warm-up; leave it out when there are others.
    let mut steady: Vec<f64> = chunks
        .iter()
        .skip((chunks.len() > 1) as usize)
        .copied()
        .collect();
    steady.sort_by(f64::total_cmp);
    let chunk_median = steady.get(steady.len() / 2).copied().unwrap_or(cpp);
    let chunk_min = steady.first().copied().unwrap_or(cpp);
    if cli.json {
        println!(
            "{}",
            serde_json::json!({
                "traffic": format!("{:?}", cli.traffic).to_lowercase(), "batch": cli.batch, "uniform_vectors": !cli.no_uniform_vectors,
                "vector_size": cli.vector_size, "direct": !cli.no_direct, "packets": done, "seconds": secs,
                "cycles_per_packet": cpp, "chunk_cycles_median": chunk_median,
                "chunk_cycles_min": chunk_min, "mpps": done as f64 / secs / 1e6,
                "runtime": g.runtime(), "batcher": st, "conservation": c,
            })
        );
    } else {
        println!("{}\n\n{}", g.runtime(), g.errors());
        println!(
            "batcher {}: latency p50 {:.1} us, p99 {:.1} us, max {:.1} us; queues {:?}",
            if cli.batch > 0 { "on" } else { "off" },
            st.latency_p50_ns / 1e3,
            st.latency_p99_ns / 1e3,
            st.latency_max_ns / 1e3,
            st.queues
                .iter()
                .filter(|q| q.vectors > 0)
                .map(|q| (
                    q.paths.clone(),
                    q.vectors,
                    (q.mean_fill * 100.0).round() / 100.0
                ))
                .collect::<Vec<_>>()
        );
        println!(
            "ppb: {done} packets in {secs:.3} s: {:.2} Mpps, {cpp:.1} cycles/packet end to end \
             (chunks of {}: median {chunk_median:.1}, lowest {chunk_min:.1})",
            done as f64 / secs / 1e6,
            cli.chunk
        );
        println!("conservation: {c}");
    }
    if !c.is_balanced() || c.buffers_in_use != 0 {
        return Err("packets were lost".into());
    }
    Ok(())
}
