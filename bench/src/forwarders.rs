//! `forwarders`: the four forwarders (l2fwd, l3fwd, ndnfwd, cryptofwd) memory to memory at
//! their default settings (vector size 256, sub-batch 16, prefetch distance 4, the
//! examples' tables and traffic), against the same graph run a packet at a time (vectors
//! of 1, sub-batch 1: what a scalar per-packet pipeline pays). l3fwd also on the real tier1
//! table, with generated traffic and with a real capture.
//!
//! Both settings run on one graph per case, in interleaved timed chunks (the order
//! reversed every other round); a figure is the median over chunks. Mpps and cycles per
//! packet are by the TSC over whole turns of the main loop, input and tx included; the
//! per-node figures are each node's cycles from the runtime table over the packets the
//! input produced.

pub mod graphs;

use std::path::PathBuf;
use std::time::Instant;

use pktvec::lookup::routes;
use pktvec::nodes::apps::l3fwd::{L3fwd, L3fwdConfig};
use serde_json::json;

use crate::c_harness::{missing, shared_data, skip_note};
use crate::sitting::{Common, Headline, Sitting};
use graphs::{interleave, median, node_cycles, spread, Chunk, Setting};

/// Options of `forwarders`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    common: Common,
    /// Timed chunks per setting and case; default 5, 2 with --quick
    #[arg(long)]
    reps: Option<usize>,
    /// Seconds per chunk; default 1.0, 0.2 with --quick
    #[arg(long)]
    chunk_secs: Option<f64>,
    /// The real IPv4 table (`prefix [next-hop]` per line, .xz read through xzcat), by
    /// default under $PKTVEC_SHARED_DATA when that is set, else under shared/data next to
    /// this checkout; the tier1 rows are left out if it is missing
    #[arg(long, default_value_os_t = shared_data("routes/tier1-fulltable-ipv4.txt.xz"))]
    routes: PathBuf,
    /// The real capture replayed through l3fwd on the real table (left out if missing)
    #[arg(long, default_value_os_t = shared_data("pcap/pcapplusplus/mixed/example.pcap"))]
    pcap: PathBuf,
}

/// The anchor's name in the headline rows.
const ANCHOR: &str = "same graph, vectors of 1";

/// Runs the measurement.
pub fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let sitting = Sitting::begin(
        "forwarders",
        "Forwarders: Mpps, vectors vs one packet at a time",
        "forwarders.md",
        &args.common,
    )?;
    let quick = sitting.quick();
    let reps = args.reps.unwrap_or(if quick { 2 } else { 5 }).max(1);
    let secs = args.chunk_secs.unwrap_or(if quick { 0.2 } else { 1.0 });
    let vectors = Setting::new(256, 16);
    let scalar = Setting::new(1, 1);
    let pregen = 65_536;

    let mut rows = Vec::new();
    let mut cases = Vec::new();
    let mut measure = |name: &str,
                       what: &str,
                       setup_s: f64,
                       g: &mut pktvec::graph::Graph|
     -> Result<(), Box<dyn std::error::Error>> {
        let chunks = interleave(g, &[vectors, scalar], reps, secs)?;
        let (on, off) = (&chunks[0], &chunks[1]);
        let mpps = |c: &[Chunk]| spread(&c.iter().map(Chunk::mpps).collect::<Vec<_>>());
        let cpp = |c: &[Chunk]| median(&c.iter().map(Chunk::cycles_per_packet).collect::<Vec<_>>());
        let (m_on, m_off) = (mpps(on), mpps(off));
        println!(
            "{name:<30} {:7.2} Mpps ({:.2}-{:.2}), {:6.1} cycles/packet | vectors of 1: {:6.2} Mpps, {:7.1} cycles/packet",
            m_on[0], m_on[1], m_on[2], cpp(on), m_off[0], cpp(off)
        );
        let nodes = |c: &[Chunk]| {
            node_cycles(c)
                .into_iter()
                .map(|(n, v)| json!({"node": n, "cycles_per_packet": v}))
                .collect::<Vec<_>>()
        };
        rows.push(Headline::rate(name, "Mpps", m_on[0], ANCHOR, m_off[0]));
        cases.push(json!({
            "case": name, "what": what, "setup_seconds": setup_s,
            "vectors": {"B": vectors.vector, "b": vectors.sub, "mpps": m_on, "cycles_per_packet": cpp(on),
                        "nodes": nodes(on)},
            "scalar": {"B": 1, "b": 1, "mpps": m_off, "cycles_per_packet": cpp(off), "nodes": nodes(off)},
        }));
        Ok(())
    };

    let t = Instant::now();
    let app = graphs::l2_app(65_536)?;
    let mut g = graphs::l2fwd(&app, pregen)?;
    measure(
        "l2fwd, 64Ki stations",
        "l2-learn → l2-forward → interface-output, 4 ports, flood",
        t.elapsed().as_secs_f64(),
        &mut g,
    )?;
    drop((g, app));

    let t = Instant::now();
    let l3 = L3fwd::new(L3fwdConfig::default())?;
    let mut g = graphs::l3fwd(&l3, graphs::L3_IPV4, pregen)?;
    measure(
        "l3fwd, 500k generated routes",
        "IPv4 traffic, 98% route hits; 500,000 generated IPv4 + 200,000 IPv6 routes",
        t.elapsed().as_secs_f64(),
        &mut g,
    )?;
    drop(g);

    // the rows left out for want of the real data, for the data file
    let mut skipped = Vec::new();
    let lost = missing(std::slice::from_ref(&args.routes));
    if lost.is_empty() {
        let t = Instant::now();
        let r4 = routes::load_ipv4_file(&args.routes)?;
        let n = r4.len();
        let real = L3fwd::with_routes(L3fwdConfig::default(), r4, l3.routes6().to_vec())?;
        drop(l3);
        let mut g = graphs::l3fwd(&real, graphs::L3_IPV4, pregen)?;
        measure(
            "l3fwd, tier1 table",
            &format!("IPv4 traffic to the real table's prefixes ({n} routes)"),
            t.elapsed().as_secs_f64(),
            &mut g,
        )?;
        drop(g);
        let lost = missing(std::slice::from_ref(&args.pcap));
        if lost.is_empty() {
            let t = Instant::now();
            let mut g = graphs::l3fwd_pcap(&real, &args.pcap)?;
            measure(
                "l3fwd, tier1, real capture",
                &format!("{} replayed in a loop", args.pcap.display()),
                t.elapsed().as_secs_f64(),
                &mut g,
            )?;
        } else {
            skipped.push(skip_note(
                "real capture",
                &lost,
                "the real-capture row skipped",
            ));
        }
    } else {
        skipped.push(skip_note("real route tables", &lost, "tier1 rows skipped"));
    }

    let t = Instant::now();
    let ndn = graphs::ndn_app(100_000)?;
    let mut g = graphs::ndnfwd(&ndn, pregen)?;
    measure(
        "ndnfwd, 100k names",
        "ethernet-input → ndn-lookup → interface-output, generated name prefixes",
        t.elapsed().as_secs_f64(),
        &mut g,
    )?;
    drop((g, ndn));

    let t = Instant::now();
    let mut g = graphs::cryptofwd(pregen)?;
    measure(
        "cryptofwd, AES-128-GCM",
        "crypto (seal every payload) → l2-xconnect → interface-output",
        t.elapsed().as_secs_f64(),
        &mut g,
    )?;
    drop(g);

    let mut detail = json!({
        "reps": reps, "chunk_seconds": secs, "pregen": pregen,
        "statistic": "median over timed chunks (TSC); vectors and vectors-of-1 chunks interleaved on one graph",
        "cases": cases,
    });
    if !skipped.is_empty() {
        detail["skipped"] = json!(skipped.join("; "));
    }
    sitting.finish(rows, detail)?;
    Ok(())
}
