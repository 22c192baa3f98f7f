//! `intruder`: the intruder detector of `pktvec::nf::intruder` (STAMP's intruder as the
//! seed adapted it) on N workers under a synchronisation chosen at run time, over seeded
//! traffic with a known answer: about 256 flows at a time sending messages of at most 128
//! bytes, 10% of them attacks, cut into at most 4 fragments shuffled within a window of 16.
//! The traffic is dealt round robin to the workers, so without flow affinity the fragments
//! of one message meet in the shared reassembly table from different workers.
//!
//! Prints the run (runtime, drops, conservation, sections, counters), the detections
//! against the generator's ground truth, and the share of packets with a packet of the
//! same flow among the 100 before them.
//!
//! ```text
//! cargo run --release --example intruder
//! cargo run --release --example intruder -- --workers 2 --sync fine -n 1000000
//! cargo run --release --example intruder -- --workers 2 --sync affinity --attack-share 0.2 --seed 7
//! cargo run --release --example intruder -- --sync rtm   # where RTM is absent: the reason, exit 2
//! ```

use clap::Parser;
use pktvec::nf::intruder::{generate, Intruder, IntruderConfig, MessageKey, TrafficConfig};
use pktvec::nf::runtime::{run, RunConfig};
use pktvec::state::{Domain, Strategy, SyncConfig};
use std::collections::BTreeSet;
use std::process::ExitCode;
use std::sync::Arc;

/// The intruder detector over generated traffic.
#[derive(Parser, Debug)]
#[command(about = "Intruder detection (STAMP intruder) on shared flow state")]
struct Args {
    /// Workers.
    #[arg(long, default_value_t = 1)]
    workers: usize,
    /// Synchronisation: coarse, fine, affinity, rtm, rtm-coarse.
    #[arg(long, default_value = "fine")]
    sync: Strategy,
    /// Packets (fragments) per worker.
    #[arg(short = 'n', long, default_value_t = 200_000)]
    packets: usize,
    /// Flows sending at once.
    #[arg(long, default_value_t = 256)]
    flows: usize,
    /// Share of messages carrying an attack.
    #[arg(long, default_value_t = 0.1)]
    attack_share: f64,
    /// Offered rate per worker (packets a second); unpaced if absent.
    #[arg(long)]
    rate: Option<f64>,
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
    /// Handoff ring slots (flow affinity): an unpaced run drops what a full ring cannot
    /// take.
    #[arg(long, default_value_t = 1024)]
    handoff_ring: usize,
    /// Do not pin workers to cores.
    #[arg(long)]
    no_pin: bool,
}

fn main() -> ExitCode {
    let a = Args::parse();
    let domain = match Domain::new(SyncConfig {
        strategy: a.sync,
        workers: a.workers,
        stripes: a.stripes,
        ..SyncConfig::default()
    }) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("intruder: {e}");
            return ExitCode::from(2);
        }
    };
    if !(0.0..=1.0).contains(&a.attack_share) {
        eprintln!("intruder: --attack-share must lie in 0..=1");
        return ExitCode::from(2);
    }
    let total = a.packets.saturating_mul(a.workers);
    let traffic = generate(&TrafficConfig {
        packets: total,
        active_flows: a.flows.max(1),
        attack_share: a.attack_share,
        seed: a.seed,
        ..TrafficConfig::default()
    });
    let cfg = IntruderConfig {
        // room for a large share of the run's messages to be in flight at once (workers
        // drift apart: without affinity a message waits for its other workers' fragments)
        reassembly_capacity: (traffic.messages as usize).clamp(4096, 1 << 18),
        flow_capacity: (traffic.flows as usize).clamp(4096, 1 << 20) * 2,
        detection_log: traffic.attacks.len() + 1024,
        ..IntruderConfig::default()
    };
    let nf = match Intruder::new(&domain, cfg) {
        Ok(nf) => Arc::new(nf),
        Err(e) => {
            eprintln!("intruder: {e}");
            return ExitCode::from(2);
        }
    };
    let share = traffic.same_flow_share(100);
    let parts = Arc::new(traffic.split(a.workers));
    let run_cfg = RunConfig {
        packets_per_worker: a.packets as u64,
        rate_pps: a.rate,
        profile: a.profile,
        handoff_ring: a.handoff_ring,
        pin: !a.no_pin,
        ..RunConfig::default()
    };
    println!(
        "intruder: {} workers, --sync {}, {} packets ({} messages from {} flows, {} attacks, {} flows at a time)",
        a.workers,
        a.sync,
        total,
        traffic.messages,
        traffic.flows,
        traffic.attacks.len(),
        a.flows
    );
    let p2 = parts.clone();
    let r = match run(&nf, move |w| p2[w].clone(), &run_cfg) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("intruder: {e}");
            return ExitCode::FAILURE;
        }
    };
    print!("{r}");
    let want: BTreeSet<MessageKey> = traffic.attacks.iter().copied().collect();
    let got: BTreeSet<MessageKey> = nf.detected().into_iter().collect();
    let missed = want.difference(&got).count();
    let wrong = got.difference(&want).count();
    println!(
        "detections: {} of {} attacks (missed {missed}, false {wrong}){}; messages {} of {}",
        got.len(),
        want.len(),
        if missed == 0 && wrong == 0 {
            ": exactly the ground truth"
        } else {
            ""
        },
        r.counter("messages"),
        traffic.messages
    );
    println!("same-flow share within 100 packets: {:.1}%", 100.0 * share);
    ExitCode::SUCCESS
}
