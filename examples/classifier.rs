//! `classifier`: the seed's flow classifier on shared flow state. Every worker runs the
//! l7-filter HTTP pattern over each TCP flow's first 500 payload bytes (both directions,
//! reassembled in sequence), counts bytes and packets per class and keeps each flow's
//! packet rate, under the synchronisation chosen with `--sync`.
//!
//! ```text
//! cargo run --release --example classifier
//! cargo run --release --example classifier -- --workers 4 --sync affinity -n 1000000
//! cargo run --release --example classifier -- --sync coarse --flows 256 --rate 2000000
//! cargo run --release --example classifier -- --pcap-in ../shared/data/pcap/pcapplusplus/mixed/http-packets.pcap -n 1985
//! ```
//! Prints the run (runtime, drops, conservation, sections), then per class: flows, packets,
//! bytes and packet rate over the run, and the share of packets with a packet of their
//! flow among the 100 before them. An RTM strategy on a CPU without RTM is an error.

use clap::Parser;
use pktvec::nf::classifier::{
    generate, Class, Classifier, ClassifierConfig, FlowKey, TrafficConfig,
};
use pktvec::nf::runtime::{run, same_flow_share, RunConfig};
use pktvec::state::{Domain, Strategy, SyncConfig};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

#[derive(Parser, Debug)]
#[command(about = "l7-filter HTTP classification of TCP flows on shared flow state")]
struct Cli {
    /// Workers.
    #[arg(long, default_value_t = 1)]
    workers: usize,
    /// Synchronisation: coarse, fine, affinity, rtm, rtm-coarse.
    #[arg(long, default_value = "fine")]
    sync: Strategy,
    /// Packets each worker receives.
    #[arg(short = 'n', long = "packets", default_value_t = 200_000)]
    packets: u64,
    /// Generated flows open at once per worker (fewer: more same-flow packets close
    /// together).
    #[arg(long, default_value_t = 1024)]
    flows: usize,
    /// Offered packets a second per worker (into a 1024-slot receive ring); unpaced if
    /// absent.
    #[arg(long)]
    rate: Option<f64>,
    /// Replay this capture (every worker, looping) instead of generated traffic.
    #[arg(long)]
    pcap_in: Option<PathBuf>,
    /// Traffic seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Record each packet's read and write sets and print how often packets conflict
    /// (the conflict profiler; slower)
    #[arg(long)]
    profile: bool,
    /// Lock stripes (a power of two).
    #[arg(long, default_value_t = 1024)]
    stripes: usize,
    /// Accept IPv4 packets with a wrong header checksum (captures with offloaded ones).
    #[arg(long)]
    no_verify_checksum: bool,
}

fn main() -> ExitCode {
    match go(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn go(cli: Cli) -> Result<(), Box<dyn std::error::Error>> {
    let domain = Domain::new(SyncConfig {
        strategy: cli.sync,
        workers: cli.workers,
        stripes: cli.stripes,
        ..SyncConfig::default()
    })?;
    let cc = ClassifierConfig {
        verify_ipv4_checksum: !cli.no_verify_checksum,
        ..ClassifierConfig::default()
    };
    let nf = Arc::new(Classifier::new(&domain, cc)?);
    let (traffic, truth) = match &cli.pcap_in {
        Some(p) => {
            let cap = pktvec::io::capture::read_capture(p)?;
            if cap.packets.is_empty() {
                return Err(format!("{}: nothing to replay", p.display()).into());
            }
            (vec![cap.packets; cli.workers], Vec::new())
        }
        None => {
            let tc = TrafficConfig {
                packets: usize::try_from(cli.packets)?,
                concurrency: cli.flows,
                seed: cli.seed,
                ..TrafficConfig::default()
            };
            let ts: Vec<_> = (0..cli.workers).map(|w| generate(&tc, w)).collect();
            let truth: Vec<_> = ts.iter().flat_map(|t| t.flows.clone()).collect();
            (ts.into_iter().map(|t| t.frames).collect(), truth)
        }
    };
    let share = same_flow_share(&traffic[0], 100, |f| FlowKey::of_frame(f).map(|k| k.hash()));
    let traffic = Arc::new(traffic);
    let cfg = RunConfig {
        packets_per_worker: cli.packets,
        rate_pps: cli.rate,
        profile: cli.profile,
        ..RunConfig::default()
    };
    let t = traffic.clone();
    let r = run(&nf, move |w| t[w].clone(), &cfg)?;
    print!("{r}");
    let secs = r.report.seconds.max(1e-9);
    let tcp = (r.counter("tcp packets"), r.counter("tcp bytes"));
    println!("classes ({} workers, --sync {}):", cli.workers, cli.sync);
    let mut decided = (0, 0);
    for c in [Class::Http, Class::NotHttp] {
        let n = c.name();
        let (p, b) = (
            r.counter(&format!("{n} packets")),
            r.counter(&format!("{n} bytes")),
        );
        decided = (decided.0 + p, decided.1 + b);
        println!(
            "  {n:<9} flows {:>8}  packets {p:>10}  bytes {b:>13}  rate {:>12.0} pps",
            r.counter(&format!("flows {n}")),
            p as f64 / secs
        );
    }
    let (p, b) = (tcp.0 - decided.0.min(tcp.0), tcp.1 - decided.1.min(tcp.1));
    println!(
        "  undecided flows {:>8}  packets {p:>10}  bytes {b:>13}  rate {:>12.0} pps",
        r.counter("flows")
            .saturating_sub(r.counter("flows http") + r.counter("flows not-http")),
        p as f64 / secs
    );
    println!("same-flow share within 100 packets (worker 0's traffic): {share:.3}");
    if !truth.is_empty() {
        // each completely sent flow's class against the one it was made with (flows
        // already expired are not found)
        let (mut right, mut wrong, mut gone) = (0, 0, 0);
        let mut fastest: Option<(f64, FlowKey, Class)> = None;
        for g in truth.iter().filter(|g| g.complete) {
            match nf.flow(&g.key) {
                Some(i) if i.class == g.expected => {
                    right += 1;
                    if fastest.map_or(true, |(r, _, _)| i.rate_pps > r) {
                        fastest = Some((i.rate_pps, g.key, i.class));
                    }
                }
                Some(_) => wrong += 1,
                None => gone += 1,
            }
        }
        println!("ground truth: {right} flows right, {wrong} wrong, {gone} expired");
        if let Some((rate, k, c)) = fastest {
            println!(
                "busiest flow: {}:{} - {}:{} ({c}), {rate:.0} pps at its last packet",
                std::net::Ipv4Addr::from(k.lo_addr),
                k.lo_port,
                std::net::Ipv4Addr::from(k.hi_addr),
                k.hi_port
            );
        }
    }
    Ok(())
}
