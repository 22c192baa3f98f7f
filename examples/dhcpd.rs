//! `dhcpd`: the DHCPv4 server network function (`pktvec::nf::dhcpd`, udhcpd's design:
//! a lease array, a ping before every offer, periodic expiry) on N workers over shared
//! state, under a synchronisation chosen at run time, fed by the generated traffic of a
//! network of hosts.
//!
//! ```text
//! cargo run --release --example dhcpd
//! cargo run --release --example dhcpd -- --workers 2 --sync affinity -n 2000000
//! cargo run --release --example dhcpd -- --sync fine --rate 1000000 --pcap-out out.pcap
//! ```

use clap::Parser;
use pktvec::nf::dhcpd::{flow_of, traffic, DhcpConfig, Dhcpd, TrafficConfig};
use pktvec::nf::runtime::{run, same_flow_share, RunConfig};
use pktvec::state::{Domain, Strategy, SyncConfig};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

/// Lock stripes (lease `i` lies in stripe `i % STRIPES`).
const STRIPES: usize = 1024;

#[derive(Parser, Debug)]
#[command(about = "udhcpd-style DHCP server over shared state, any synchronisation")]
struct Cli {
    /// Workers.
    #[arg(long, default_value_t = 1)]
    workers: usize,
    /// Synchronisation: coarse, fine, affinity, rtm, rtm-coarse.
    #[arg(long, default_value = "fine")]
    sync: Strategy,
    /// Packets per worker.
    #[arg(short = 'n', long, default_value_t = 1_000_000)]
    packets: u64,
    /// Hosts on the network (also the pool size; every tenth host has a static address).
    #[arg(long, default_value_t = 20_000)]
    hosts: usize,
    /// Offered rate per worker, packets a second (default: as fast as it goes).
    #[arg(long)]
    rate: Option<f64>,
    /// Write worker 0's replies (pings, offers, acks, naks) here.
    #[arg(long)]
    pcap_out: Option<PathBuf>,
    /// Lease time, milliseconds (offers go stale after a fifth of it, declined addresses
    /// return after half of it).
    #[arg(long, default_value_t = 500)]
    lease_ms: u64,
    /// Traffic seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Record each packet's read and write sets and print how often packets conflict
    /// (the conflict profiler; slower)
    #[arg(long)]
    profile: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match go(&cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("dhcpd: {e}");
            ExitCode::FAILURE
        }
    }
}

fn go(cli: &Cli) -> Result<(), Box<dyn std::error::Error>> {
    let domain = Domain::new(SyncConfig {
        strategy: cli.sync,
        workers: cli.workers,
        stripes: STRIPES,
        ..SyncConfig::default()
    })?;
    let ms = pktvec::graph::clock::tsc_hz() / 1000.0;
    let lease = cli.lease_ms.max(1);
    let cfg = DhcpConfig {
        pool: cli.hosts,
        clients: (cli.hosts * 2).max(1024),
        lease_secs: lease.div_ceil(1000) as u32,
        lease_ticks: (lease as f64 * ms) as u64,
        offer_ticks: (lease as f64 * ms / 5.0) as u64,
        decline_ticks: (lease as f64 * ms / 2.0) as u64,
        ..DhcpConfig::default()
    };
    let nf = Arc::new(Dhcpd::new(&domain, cfg.clone()));
    // the trace each worker replays (round robin, so longer runs see it again)
    let t = TrafficConfig {
        hosts: cli.hosts,
        packets: cli.packets.clamp(1, 1 << 18) as usize,
        seed: cli.seed,
        ..TrafficConfig::default()
    };
    let workers = cli.workers;
    let share = same_flow_share(&traffic(&t, &cfg, STRIPES, 0, workers), 100, flow_of);
    let rc = RunConfig {
        packets_per_worker: cli.packets,
        rate_pps: cli.rate,
        profile: cli.profile,
        pcap_out: cli.pcap_out.clone(),
        ..RunConfig::default()
    };
    let r = run(&nf, move |w| traffic(&t, &cfg, STRIPES, w, workers), &rc)?;
    print!("{r}");
    println!(
        "leases: offered {}, acked {}, naked {}, released {}, declined {}, expired {} (stale offers {}); pings {}, answered {}",
        r.counter("offered"),
        r.counter("acked"),
        r.counter("naked"),
        r.counter("released"),
        r.counter("declined"),
        r.counter("expired"),
        r.counter("stale offers"),
        r.counter("pings"),
        r.counter("ping answered"),
    );
    let c = nf.lease_counts();
    println!(
        "pool of {}: {} free, {} pinging, {} offered, {} bound, {} declined, {} in use",
        c.total(),
        c.free,
        c.pinging,
        c.offered,
        c.bound,
        c.declined,
        c.in_use
    );
    println!(
        "same-client packets within the previous 100: {:.1}%",
        100.0 * share
    );
    Ok(())
}
