//! `l3fwd-graph`: pktvec's l3fwd against DPDK's own IPv4 forwarding graph (librte_graph with
//! librte_node's ethdev_rx → pkt_cls → ip4_lookup → ip4_rewrite → ethdev_tx, as DPDK's
//! l3fwd-graph example wires it; `benches/dpdk/graph_l3fwd.c`), one core, memory to memory,
//! on the same routes and the same pre-drawn stream of frames, in the same sitting.
//!
//! Both sides read what this writes: the generated IPv4 routes (`routes::generate_ipv4`,
//! seed 1: l3fwd's default table, next hops already `% ports`) and the stream (the first
//! `--stream` frames of l3fwd's generator over those routes, 64-byte IPv4/UDP). pktvec's
//! input is `GeneratorSource::pregenerate` of that same generator (built twice from the
//! same profile: the same frames); the harness replays the file. Per packet, both inputs
//! take a fresh buffer and copy a frame into it; both outputs free.
//!
//! Before timing, each side sends the whole stream through once and the run stops unless
//! both send the same number of packets out of every port and drop the same number, and
//! unless the first frame each port sent is byte-identical on both sides. After every
//! rte_graph run its mempool must be full again.
//!
//! Then `--rounds` rounds, each one chunk of `--chunk-secs` per variant (pktvec with its
//! FIB on transparent huge pages, as l3fwd builds it; pktvec with its FIB on 4 KiB pages,
//! as rte_lpm has under `--no-huge`; rte_graph), the order reversed every other round. A
//! figure is the median over the rounds; the headline ratio is pktvec's Mpps over
//! rte_graph's.

use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Arc;

use pktvec::graph::{clock, Graph};
use pktvec::io::capture::read_capture;
use pktvec::lookup::ipv4::{Lpm4, Lpm4Config};
use pktvec::lookup::routes::{self, Route4};
use pktvec::nodes::apps::l3fwd::{L3fwd, L3fwdConfig, INTERFACE_OUTPUT};
use pktvec::nodes::output::InterfaceOutput;
use serde_json::json;

use crate::c_harness::{self, thousands, Error, Scratch, Served};
use crate::forwarders::graphs::{self, median, node_cycles, run_for, spread, Chunk};
use crate::sitting::{Common, Headline, Sitting};

/// The anchor's name in the headline rows.
const ANCHOR: &str = "rte_graph l3fwd (librte_node)";
/// Packets an input hands on per turn on both sides (pktvec's vector, RTE_GRAPH_BURST_SIZE).
const BURST: usize = 256;

/// Options of `pktvec-bench l3fwd-graph`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    common: Common,
    /// Generated IPv4 routes (`routes::generate_ipv4`, seed 1) [default: 500000; --quick: 20000]
    #[arg(long)]
    routes: Option<usize>,
    /// Flows of the traffic (uniform popularity) [default: 1048576; --quick: 16384]
    #[arg(long)]
    flows: Option<usize>,
    /// Frames in the pre-drawn stream both sides replay, a multiple of 256
    /// [default: 1048576; --quick: 16384]
    #[arg(long)]
    stream: Option<usize>,
    /// Share of destinations inside a route (the rest go to 240.0.0.0/4 and are dropped)
    #[arg(long, default_value_t = 0.98)]
    hit_rate: f64,
    /// Output ports (a route's next hop modulo this picks one)
    #[arg(long, default_value_t = 4)]
    ports: u16,
    /// Rounds, the variants alternating in each [default: 5; --quick: 1]
    #[arg(long)]
    rounds: Option<usize>,
    /// Seconds per timed chunk [default: 1.0; --quick: 0.1]
    #[arg(long)]
    chunk_secs: Option<f64>,
    /// Mbufs in rte_graph's mempool (pktvec's pool holds 16384 buffers)
    #[arg(long, default_value_t = 16383)]
    mbufs: u32,
    /// Build rte_graph's rte_lpm with rte_lpm_add (tens of seconds for 500k routes) instead
    /// of writing the same entries into its tbl24/tbl8 directly
    #[arg(long)]
    rte_lpm_add: bool,
    /// rte_graph's input takes its mbufs with rte_pktmbuf_alloc_bulk (which also resets each
    /// mbuf's second cache line) instead of as an rx driver does (rte_mempool_get_bulk and
    /// the first line's fields)
    #[arg(long)]
    pktmbuf_alloc: bool,
    /// Keep the route and frame files in this directory (to run the harness by hand)
    #[arg(long)]
    files: Option<PathBuf>,
}

/// One timed rte_graph run, as the harness printed it.
#[derive(Clone, Debug, Default)]
struct DpdkRun {
    packets: u64,
    cycles: u64,
    walk_cycles: u64,
    input_cycles: u64,
    drops: u64,
    tx: Vec<u64>,
    /// (node, calls, objects, cycles) from rte_graph's per-node stats.
    nodes: Vec<(String, u64, u64, u64)>,
}

impl DpdkRun {
    fn mpps(&self) -> f64 {
        self.packets as f64 * clock::tsc_hz() / self.cycles.max(1) as f64 / 1e6
    }

    fn cycles_per_packet(&self) -> f64 {
        self.cycles as f64 / self.packets.max(1) as f64
    }

    fn walk_per_packet(&self) -> f64 {
        self.walk_cycles as f64 / self.packets.max(1) as f64
    }

    fn input_per_packet(&self) -> f64 {
        self.input_cycles as f64 / self.packets.max(1) as f64
    }

    /// The output step's share: the turns' cycles less input and walk.
    fn output_per_packet(&self) -> f64 {
        self.cycles
            .saturating_sub(self.input_cycles + self.walk_cycles) as f64
            / self.packets.max(1) as f64
    }
}

/// The value after `key` in a line's fields.
fn field<T: std::str::FromStr>(f: &[String], key: &str) -> Option<T> {
    f.iter()
        .position(|x| x == key)
        .and_then(|i| f.get(i + 1))
        .and_then(|v| v.parse().ok())
}

/// The numbers after `tx` to the end of the line.
fn tx_list(f: &[String]) -> Vec<u64> {
    f.iter()
        .skip_while(|x| *x != "tx")
        .skip(1)
        .filter_map(|v| v.parse().ok())
        .collect()
}

/// Checks a `mempool avail A size S` line.
fn check_mempool(f: &[String], when: &str) -> Result<(), Error> {
    let avail: u64 = field(f, "avail").ok_or("harness: bad mempool line")?;
    let size: u64 = field(f, "size").ok_or("harness: bad mempool line")?;
    if avail != size {
        return Err(format!("rte_graph {when}: mempool holds {avail} of {size} mbufs").into());
    }
    Ok(())
}

/// Parses one `run` of the harness.
fn parse_run(lines: &[Vec<String>]) -> Result<DpdkRun, Error> {
    let mut r = DpdkRun::default();
    let mut mempool = false;
    for f in lines {
        match f.first().map(String::as_str) {
            Some("result") => {
                r.packets = field(f, "packets").ok_or("harness: bad result line")?;
                r.cycles = field(f, "cycles").ok_or("harness: bad result line")?;
                r.walk_cycles = field(f, "walk_cycles").ok_or("harness: bad result line")?;
                r.input_cycles = field(f, "input_cycles").ok_or("harness: bad result line")?;
                r.drops = field(f, "drops").ok_or("harness: bad result line")?;
                r.tx = tx_list(f);
            }
            Some("node") => r.nodes.push((
                f.get(1).cloned().unwrap_or_default(),
                field(f, "calls").unwrap_or(0),
                field(f, "objs").unwrap_or(0),
                field(f, "cycles").unwrap_or(0),
            )),
            Some("mempool") => {
                check_mempool(f, "after a timed run")?;
                mempool = true;
            }
            _ => {}
        }
    }
    if !mempool || r.packets == 0 {
        return Err(format!("harness: incomplete run output: {lines:?}").into());
    }
    let out: u64 = r.tx.iter().sum::<u64>() + r.drops;
    if out != r.packets {
        return Err(format!(
            "rte_graph: {} packets in, {out} out or dropped ({:?}, {} drops)",
            r.packets, r.tx, r.drops
        )
        .into());
    }
    Ok(r)
}

/// What one side did with the whole stream, sent through once.
#[derive(Debug, PartialEq)]
struct Check {
    tx: Vec<u64>,
    drops: u64,
}

/// Sends exactly `n` packets (whole vectors) through a fresh pktvec graph, capturing what
/// `interface-output` sends on into `pcap`; returns the per-port counts and drops.
fn pktvec_check(g: &mut Graph, n: usize, pcap: Option<&std::path::Path>) -> Result<Check, Error> {
    g.reset_stats();
    if let Some(p) = pcap {
        g.capture_start(INTERFACE_OUTPUT, p, Some(n.min(1 << 16) as u64))?;
    }
    let mut done = 0u64;
    while done < n as u64 {
        let got = g.run_once();
        if got == 0 {
            return Err("pktvec: the input produced nothing".into());
        }
        done += got;
    }
    if pcap.is_some() {
        g.capture_stop(INTERFACE_OUTPUT)?;
    }
    if done != n as u64 {
        return Err(format!("pktvec: {done} packets sent through, not {n}").into());
    }
    let out = g.node::<InterfaceOutput>(INTERFACE_OUTPUT)?;
    Ok(Check {
        tx: out.counters().iter().map(|c| c.packets).collect(),
        drops: g.errors().total(),
    })
}

/// The first frame of each port in a capture of l3fwd's output (the port is the
/// destination MAC's last two bytes, `adjacency(p)`'s `02:bb:00:00:p`).
fn first_per_port(pcap: &std::path::Path, ports: u16) -> Result<Vec<Option<Vec<u8>>>, Error> {
    let cap = read_capture(pcap)?;
    let mut first = vec![None; ports as usize];
    for p in cap.packets {
        if p.len() >= 6 && p[..4] == [2, 0xbb, 0, 0] {
            let port = usize::from(u16::from_be_bytes([p[4], p[5]]));
            if let Some(slot @ None) = first.get_mut(port) {
                *slot = Some(p);
            }
        }
    }
    Ok(first)
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The rte_lpm tbl8 groups the routes need (one per /24 holding a longer prefix), with
/// room to spare, as a power of two.
fn tbl8s_for(routes: &[Route4]) -> u32 {
    let mut v: Vec<u32> = routes
        .iter()
        .filter(|r| r.len > 24)
        .map(|r| u32::from(r.addr) >> 8)
        .collect();
    v.sort_unstable();
    v.dedup();
    (v.len() as u32 + 256).next_power_of_two()
}

/// Writes the first `n` frames of `gen` as (16-bit little-endian length, bytes) records.
fn write_frames(
    path: &std::path::Path,
    gen: &mut pktvec::io::generator::Generator,
    n: usize,
) -> Result<(), Error> {
    let mut w = std::io::BufWriter::new(
        std::fs::File::create(path).map_err(|e| format!("{}: {e}", path.display()))?,
    );
    for _ in 0..n {
        let (_, frame) = gen.next_packet();
        let len = u16::try_from(frame.len())?;
        w.write_all(&len.to_le_bytes())?;
        w.write_all(frame)?;
    }
    w.flush()?;
    Ok(())
}

/// Runs the measurement.
pub fn run(args: Args) -> Result<(), Error> {
    let quick = args.common.quick;
    let pick = |v: Option<usize>, full: usize, q: usize| v.unwrap_or(if quick { q } else { full });
    let n_routes = pick(args.routes, 500_000, 20_000).max(1);
    let n_flows = pick(args.flows, 1 << 20, 1 << 14).max(1);
    let stream = pick(args.stream, 1 << 20, 1 << 14);
    if stream == 0 || !stream.is_multiple_of(BURST) {
        return Err(format!("--stream must be a positive multiple of {BURST}").into());
    }
    let rounds = pick(args.rounds, 5, 1).max(1);
    let secs = args
        .chunk_secs
        .unwrap_or(if quick { 0.1 } else { 1.0 })
        .max(0.001);
    let ports = args.ports.clamp(1, 16);

    let sitting = Sitting::begin(
        "l3fwd-graph",
        "l3fwd vs DPDK's rte_graph l3fwd",
        "l3fwd-graph.md",
        &args.common,
    )?;
    let harness = c_harness::build_with("graph_l3fwd", "-lrte_net_ring")?;
    let scratch = Scratch::new("l3fwd-graph")?;
    let files = match &args.files {
        Some(d) => {
            std::fs::create_dir_all(d)?;
            d.clone()
        }
        None => scratch.path(""),
    };
    let routes_path = files.join("l3fwd_graph_routes.txt");
    let frames_path = files.join("l3fwd_graph_frames.bin");
    let pcap_path = scratch.path("pktvec_out.pcap");

    // The routes and the stream, written for the harness.
    let t = std::time::Instant::now();
    let cfg = L3fwdConfig {
        ports,
        ..L3fwdConfig::default()
    };
    let app = L3fwd::with_routes(cfg.clone(), routes::generate_ipv4(n_routes, 1), Vec::new())?;
    let fib_4k = Lpm4::from_routes(
        Lpm4Config {
            huge_pages: false,
            ..Lpm4Config::default()
        },
        app.routes4(),
    )?;
    let app_4k = L3fwd::with_fib4(cfg, Arc::new(fib_4k), app.routes4().to_vec())?;
    routes::write_routes_file(&routes_path, app.routes4())?;
    let profile = format!(
        "[mix]\nipv4 = 1.0\n[flows]\ncount = {n_flows}\n[sizes]\nfixed = 64\n\
         [destinations]\nipv4_hit_rate = {}\n",
        args.hit_rate
    );
    write_frames(
        &frames_path,
        &mut graphs::l3_generator(&app, &profile, None)?,
        stream,
    )?;
    let tbl8s = tbl8s_for(app.routes4());
    println!(
        "{} routes, {} flows, a stream of {} 64-byte frames ({}% to routes), {ports} ports; \
         {rounds} rounds of {secs} s chunks; files written in {:.1} s",
        thousands(n_routes),
        thousands(n_flows),
        thousands(stream),
        args.hit_rate * 100.0,
        t.elapsed().as_secs_f64()
    );

    // rte_graph: built once, checked, then served.
    // EAL memory: two 64 MiB tbl24 (ip4_lookup's own table and ours), the tbl8 groups
    // (1 KiB each), the mbufs (2.5 KiB each) and room for the rest.
    let mem_mib = 2 * 64 + 64 + (tbl8s as usize >> 10) + ((args.mbufs as usize * 2560) >> 20);
    let mut hargs = c_harness::eal_args("l3fwd-graph", mem_mib.next_multiple_of(64));
    hargs.extend([
        routes_path.display().to_string(),
        frames_path.display().to_string(),
        ports.to_string(),
        secs.to_string(),
        args.mbufs.to_string(),
        tbl8s.to_string(),
        "serve".into(),
    ]);
    if args.rte_lpm_add {
        hargs.push("add".into());
    }
    if args.pktmbuf_alloc {
        hargs.push("pktmbuf_alloc".into());
    }
    let t = std::time::Instant::now();
    let mut served = Served::start(&harness, &hargs)?;
    let dpdk_setup = t.elapsed().as_secs_f64();
    let line = |key: &str| {
        served
            .info
            .iter()
            .find(|f| f.first().map(String::as_str) == Some(key))
            .cloned()
    };
    let info = line("info").ok_or("harness: no info line")?;
    let check = line("check").ok_or("harness: no check line")?;
    if line("lpm_swap").is_none() {
        return Err("harness: the LPM was not swapped".into());
    }
    check_mempool(
        &line("mempool").ok_or("harness: no mempool line")?,
        "after the check pass",
    )?;
    let dpdk_check = Check {
        tx: tx_list(&check),
        drops: field(&check, "drops").ok_or("harness: bad check line")?,
    };
    let samples: Vec<(usize, String)> = served
        .info
        .iter()
        .filter(|f| f.first().map(String::as_str) == Some("sample"))
        .filter_map(|f| Some((f.get(1)?.parse().ok()?, f.get(2)?.clone())))
        .collect();
    let groups: i64 = field(&info, "groups").unwrap_or(-1);
    eprintln!(
        "rte_graph: {} routes in rte_lpm ({} of {tbl8s} tbl8 groups, by {}), set up in {dpdk_setup:.1} s",
        field::<u64>(&info, "routes").unwrap_or(0),
        groups,
        info.iter()
            .skip_while(|x| *x != "build")
            .nth(1)
            .map_or("?", String::as_str)
    );

    // pktvec: the two graphs, each checked on the whole stream first.
    let t = std::time::Instant::now();
    let mut g = graphs::l3fwd(&app, &profile, stream)?;
    let mut g_4k = graphs::l3fwd(&app_4k, &profile, stream)?;
    let pktvec_setup = t.elapsed().as_secs_f64();
    let ours = pktvec_check(&mut g, stream, Some(&pcap_path))?;
    let ours_4k = pktvec_check(&mut g_4k, stream, None)?;
    println!(
        "whole stream once: pktvec tx {:?} drops {}; rte_graph tx {:?} drops {}",
        ours.tx, ours.drops, dpdk_check.tx, dpdk_check.drops
    );
    if ours != dpdk_check || ours_4k != dpdk_check {
        return Err(format!(
            "the two forwarders disagree on the same stream: pktvec {ours:?} (4 KiB FIB {ours_4k:?}), rte_graph {dpdk_check:?}"
        )
        .into());
    }
    let firsts = first_per_port(&pcap_path, ports)?;
    let mut compared = 0;
    for (port, frame) in firsts.iter().enumerate() {
        let theirs = samples.iter().find(|(p, _)| *p == port).map(|(_, h)| h);
        match (frame, theirs) {
            (Some(f), Some(h)) if hex(f) == *h => compared += 1,
            (None, None) => {}
            (f, h) => {
                return Err(format!(
                    "port {port}: first frame out differs: pktvec {:?}, rte_graph {h:?}",
                    f.as_deref().map(hex)
                )
                .into())
            }
        }
    }
    println!(
        "same packets out of every port, same drops; the first frame out of each of {compared} ports byte-identical"
    );

    // Warm-up, then the rounds.
    let _ = run_for(&mut g, secs / 4.0);
    let _ = run_for(&mut g_4k, secs / 4.0);
    let _ = parse_run(&served.round()?)?;
    let mut chunks: [Vec<Chunk>; 2] = [Vec::new(), Vec::new()];
    let mut dpdk: Vec<DpdkRun> = Vec::new();
    for round in 0..rounds {
        let mut order = [0usize, 1, 2];
        if round % 2 == 1 {
            order.reverse();
        }
        for v in order {
            match v {
                0 => chunks[0].push(run_for(&mut g, secs)),
                1 => chunks[1].push(run_for(&mut g_4k, secs)),
                _ => dpdk.push(parse_run(&served.round()?)?),
            }
        }
    }
    drop(served);
    c_harness::remove_eal_dir("l3fwd-graph");

    let mpps = |c: &[Chunk]| spread(&c.iter().map(Chunk::mpps).collect::<Vec<_>>());
    let cpp = |c: &[Chunk]| median(&c.iter().map(Chunk::cycles_per_packet).collect::<Vec<_>>());
    let d_mpps = spread(&dpdk.iter().map(DpdkRun::mpps).collect::<Vec<_>>());
    let d_cpp = median(
        &dpdk
            .iter()
            .map(DpdkRun::cycles_per_packet)
            .collect::<Vec<_>>(),
    );
    let d_walk = median(
        &dpdk
            .iter()
            .map(DpdkRun::walk_per_packet)
            .collect::<Vec<_>>(),
    );
    let d_input = median(
        &dpdk
            .iter()
            .map(DpdkRun::input_per_packet)
            .collect::<Vec<_>>(),
    );
    let d_output = median(
        &dpdk
            .iter()
            .map(DpdkRun::output_per_packet)
            .collect::<Vec<_>>(),
    );
    // per round: pktvec's Mpps over rte_graph's of the same round
    let paired = |c: &[Chunk]| {
        median(
            &c.iter()
                .zip(&dpdk)
                .map(|(a, b)| a.mpps() / b.mpps())
                .collect::<Vec<_>>(),
        )
    };
    let d_packets: u64 = dpdk.iter().map(|r| r.packets).sum();
    let mut d_nodes: Vec<(String, u64, u64, u64)> = Vec::new();
    for r in &dpdk {
        for (n, calls, objs, cyc) in &r.nodes {
            match d_nodes.iter_mut().find(|e| e.0 == *n) {
                Some(e) => {
                    e.1 += calls;
                    e.2 += objs;
                    e.3 += cyc;
                }
                None => d_nodes.push((n.clone(), *calls, *objs, *cyc)),
            }
        }
    }

    let case = format!(
        "{} routes, {} flows",
        thousands(n_routes),
        thousands(n_flows)
    );
    let names = ["pktvec l3fwd", "pktvec l3fwd, FIB on 4 KiB pages"];
    println!();
    for (i, name) in names.iter().enumerate() {
        let m = mpps(&chunks[i]);
        println!(
            "{name:<36} {:7.2} Mpps ({:.2}-{:.2}), {:6.1} cycles/packet; ÷ rte_graph {:.2}× (paired rounds {:.2}×)",
            m[0],
            m[1],
            m[2],
            cpp(&chunks[i]),
            m[0] / d_mpps[0],
            paired(&chunks[i])
        );
    }
    println!(
        "{ANCHOR:<36} {:7.2} Mpps ({:.2}-{:.2}), {:6.1} cycles/packet: input {d_input:.1}, \
         rte_graph_walk {d_walk:.1}, output {d_output:.1}",
        d_mpps[0], d_mpps[1], d_mpps[2], d_cpp
    );
    println!("\ncycles per input packet, by node (all rounds' cycles over all rounds' packets):");
    let ours_nodes = node_cycles(&chunks[0]);
    for (n, c) in &ours_nodes {
        println!("  pktvec     {n:<20} {c:7.2}");
    }
    for (n, calls, objs, cyc) in &d_nodes {
        println!(
            "  rte_graph  {n:<20} {:7.2}   ({} objs/call)",
            *cyc as f64 / d_packets.max(1) as f64,
            objs.checked_div(*calls).unwrap_or(0)
        );
    }
    print!("\npktvec's runtime table, last chunk:\n{}", g.runtime());

    let rows = vec![
        Headline::rate(
            &format!("{case}: pktvec (FIB on THP)"),
            "Mpps",
            mpps(&chunks[0])[0],
            ANCHOR,
            d_mpps[0],
        )
        .target(1.5),
        Headline::rate(
            &format!("{case}: pktvec, FIB on 4 KiB pages"),
            "Mpps",
            mpps(&chunks[1])[0],
            ANCHOR,
            d_mpps[0],
        )
        .target(1.5),
    ];
    let variant = |i: usize| {
        json!({
            "name": names[i],
            "mpps": mpps(&chunks[i]),
            "cycles_per_packet": cpp(&chunks[i]),
            "ratio_over_rte_graph": mpps(&chunks[i])[0] / d_mpps[0],
            "paired_ratio_median": paired(&chunks[i]),
            "rounds_mpps": chunks[i].iter().map(Chunk::mpps).collect::<Vec<_>>(),
            "nodes": node_cycles(&chunks[i]).into_iter()
                .map(|(n, c)| json!({"node": n, "cycles_per_packet": c})).collect::<Vec<_>>(),
        })
    };
    let detail = json!({
        "routes": n_routes,
        "flows": n_flows,
        "stream": stream,
        "hit_rate": args.hit_rate,
        "ports": ports,
        "rounds": rounds,
        "chunk_seconds": secs,
        "mbufs": args.mbufs,
        "tbl8s": tbl8s,
        "tbl8_groups_used": groups,
        "rte_lpm_built_by": if args.rte_lpm_add { "rte_lpm_add" } else { "fill" },
        "rte_graph_input": if args.pktmbuf_alloc { "rte_pktmbuf_alloc_bulk" } else { "rte_mempool_get_bulk" },
        "setup_seconds": {"rte_graph": dpdk_setup, "pktvec": pktvec_setup},
        "check": {"tx": ours.tx, "drops": ours.drops, "first_frames_compared": compared},
        "statistic": "median over rounds (TSC over whole loop turns: input alloc+copy, graph, output free); variants interleaved, order reversed every other round",
        "pktvec": [variant(0), variant(1)],
        "rte_graph": {
            "mpps": d_mpps,
            "cycles_per_packet": d_cpp,
            "walk_cycles_per_packet": d_walk,
            "input_cycles_per_packet": d_input,
            "output_cycles_per_packet": d_output,
            "rounds_mpps": dpdk.iter().map(DpdkRun::mpps).collect::<Vec<_>>(),
            "nodes": d_nodes.iter().map(|(n, calls, objs, cyc)| json!({
                "node": n, "calls": calls, "objs": objs,
                "cycles_per_packet": *cyc as f64 / d_packets.max(1) as f64,
            })).collect::<Vec<_>>(),
        },
    });
    sitting.finish(rows, detail)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn a_run_is_parsed_and_conserved() {
        let lines: Vec<Vec<String>> = [
            "result packets 512 cycles 1000 walk_cycles 600 input_cycles 300 drops 12 tx 100 200 100 100",
            "node ip4_lookup calls 2 objs 512 cycles 300",
            "mempool avail 16383 size 16383",
        ]
        .iter()
        .map(|l| words(l))
        .collect();
        let r = parse_run(&lines).unwrap();
        assert_eq!((r.packets, r.drops, r.tx.len()), (512, 12, 4));
        assert_eq!(r.nodes[0], ("ip4_lookup".into(), 2, 512, 300));
        let mut leaky = lines.clone();
        leaky[2] = words("mempool avail 16000 size 16383");
        assert!(parse_run(&leaky).is_err());
        let mut lossy = lines;
        lossy[0] = words(
            "result packets 512 cycles 1000 walk_cycles 600 input_cycles 300 drops 0 tx 1 2 3 4",
        );
        assert!(parse_run(&lossy).is_err());
    }

    #[test]
    fn tbl8_groups_cover_the_long_prefixes() {
        let r = |a: [u8; 4], len| Route4 {
            addr: a.into(),
            len,
            next_hop: 0,
        };
        let t = tbl8s_for(&[
            r([1, 2, 3, 0], 25),
            r([1, 2, 3, 128], 26),
            r([9, 0, 0, 0], 8),
        ]);
        assert_eq!(t, 512); // 1 group + 256 spare, rounded up
    }
}
