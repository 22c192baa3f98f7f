//! `nat`: the NAPT44 network function of `pktvec::nf::nat` on N workers over shared
//! session state, under a synchronisation chosen at run time.
//!
//! Two runs: the inside hosts' traffic alone (sessions made), then the same traffic mixed
//! with the outside's replies to the sessions the first run made (both directions). Each
//! prints the run's report (runtime, drops by reason, conservation, sections, handoff,
//! NAT counters).
//!
//! ```text
//! cargo run --release --example nat -- --workers 2 --sync fine -n 1000000
//! cargo run --release --example nat -- --workers 4 --sync affinity --flows 20000 --rate 2000000
//! cargo run --release --example nat -- --sync coarse -n 100000 --pcap-out nat.pcap
//! ```

use clap::Parser;
use pktvec::nf::nat::{flow_id, Nat, NatConfig, NatTraffic};
use pktvec::nf::runtime::{run, same_flow_share, Nf, RunConfig};
use pktvec::state::{Domain, Strategy, SyncConfig};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

/// NAPT44 on N workers over shared state.
#[derive(Parser, Debug)]
struct Cli {
    /// Workers.
    #[arg(long, default_value_t = 2)]
    workers: usize,
    /// Synchronisation: coarse, fine, affinity, rtm, rtm-coarse.
    #[arg(long, default_value = "fine")]
    sync: Strategy,
    /// Packets each worker receives, per run.
    #[arg(long, short = 'n', default_value_t = 1_000_000)]
    packets: u64,
    /// Inside flows per worker.
    #[arg(long, default_value_t = 10_000)]
    flows: usize,
    /// Offered rate per worker, packets a second (paced into a receive ring); as fast as
    /// possible if absent.
    #[arg(long)]
    rate: Option<f64>,
    /// Write worker 0's output of the mixed run to this pcap file.
    #[arg(long)]
    pcap_out: Option<PathBuf>,
    /// Traffic seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Record each packet's read and write sets and print how often packets conflict
    /// (the conflict profiler; slower)
    #[arg(long)]
    profile: bool,
    /// Lock stripes (a power of two, at most 1024).
    #[arg(long, default_value_t = 256)]
    stripes: usize,
}

fn main() -> ExitCode {
    match go(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("nat: {e}");
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
    let cfg = NatConfig {
        capacity: (cli.flows * cli.workers * 2).max(1 << 16),
        ..NatConfig::default()
    };
    let nat = Arc::new(Nat::new(domain, cfg)?);
    // the traffic a worker replays (round robin) up to -n packets
    let per_worker = cli.packets.clamp(1, 200_000) as usize;
    let traffic = NatTraffic::new(cli.flows, cli.seed);
    let frames: Arc<Vec<Vec<Vec<u8>>>> = Arc::new(
        (0..cli.workers)
            .map(|w| traffic.frames(w, per_worker))
            .collect(),
    );
    println!(
        "nat: {} workers, --sync {}, {} flows a worker, same-flow share within 100 packets: {:.1}%",
        cli.workers,
        cli.sync,
        cli.flows,
        100.0 * same_flow_share(&frames[0], 100, flow_id)
    );
    let mut rc = RunConfig {
        packets_per_worker: cli.packets,
        rate_pps: cli.rate,
        profile: cli.profile,
        ..RunConfig::default()
    };

    let f = frames.clone();
    let r = run(&nat, move |w| f[w].clone(), &rc)?;
    println!("== inside to outside\n{r}");

    // replies to the sessions made, mixed one for one with the inside traffic
    let sessions: Vec<_> = (0..cli.workers)
        .flat_map(|w| nat.worker(w).sessions())
        .collect();
    let replies = NatTraffic::replies(&sessions, 1);
    let workers = cli.workers;
    let mixed = move |w: usize| -> Vec<Vec<u8>> {
        let back: Vec<&Vec<u8>> = replies.iter().skip(w).step_by(workers).collect();
        let mut v = Vec::with_capacity(frames[w].len() * 2);
        for (i, f) in frames[w].iter().enumerate() {
            v.push(f.clone());
            if !back.is_empty() {
                v.push(back[i % back.len()].clone());
            }
        }
        v
    };
    rc.pcap_out = cli.pcap_out;
    let r = run(&nat, mixed, &rc)?;
    println!(
        "== both directions ({} sessions' replies)\n{r}",
        sessions.len()
    );
    Ok(())
}
