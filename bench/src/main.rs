//! `pktvec-bench`: every pktvec measurement against its anchor (DPDK on the same machine in
//! the same sitting, or the seed papers' figures), and the scoreboard that runs them all.
//!
//! ```text
//! cargo run --release -p pktvec-bench -- --help
//! cargo run --release -p pktvec-bench -- lpm4 --quick          # one area, under a minute
//! cargo run --release -p pktvec-bench -- scoreboard             # the whole sitting, under one lock
//! ```
//!
//! Each subcommand prints the CPU model and TSC rate it ran on, writes its results to
//! `docs/results/data/<area>.json` (`--data-dir` elsewhere, `--no-save` nowhere; a `--quick`
//! run to `$TMPDIR/pktvec-quick/data`) and its plot next to its page; `scoreboard`
//! regenerates `docs/results/README.md` and every page's headline table from those files.
//! The real route tables, update stream and captures are read from `shared/data` next to
//! this checkout, or from `$PKTVEC_SHARED_DATA`; without them the rows that need them are
//! left out, each area saying so in one line.

use clap::{Parser, Subcommand};

mod batcher;
mod c_harness;
mod dispatch;
mod dpdk_io;
mod dpdk_test;
mod forwarders;
mod handoff;
mod hash;
mod host;
mod l3fwd_graph;
mod lpm4;
mod lpm6;
mod model;
mod multicore;
mod pairs;
mod plot;
mod prefetch;
mod route_updates;
mod rss;
mod scoreboard;
mod seed_figures;
mod shared_state;
mod shared_state_cases;
mod sitting;
mod swx;
mod whippersnapper;

/// What `--help` says about the real data (top level and `scoreboard`).
const DATA_HELP: &str = "\
Real data: the route tables, BGP update stream and captures are read from shared/data next \
to this checkout (../shared/data from the repository root), or from DIR when \
PKTVEC_SHARED_DATA=DIR is set (DIR/routes, DIR/pcap). Without them lpm4, lpm6 and \
forwarders leave out their real-table rows and route-updates measures nothing, each saying \
so in one line; the generated-table rows are measured as usual.";

/// pktvec's benchmarks, each against its anchor, in one tool.
#[derive(Parser)]
#[command(name = "pktvec-bench", version, about, long_about = None, after_help = DATA_HELP)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Graph dispatch overhead vs DPDK rte_graph (dpdk-test graph_perf_autotest)
    Dispatch(dispatch::Args),
    /// IPv4 LPM vs DPDK rte_lpm on real and generated route tables
    Lpm4(lpm4::Args),
    /// IPv6 LPM vs DPDK rte_lpm6
    Lpm6(lpm6::Args),
    /// Exact-match MAC hash vs DPDK rte_hash
    Hash(hash::Args),
    /// Gain of the prefetching loop over pools in and beyond the caches
    Prefetch(prefetch::Args),
    /// The four forwarders (l2fwd, l3fwd, ndnfwd, cryptofwd): Mpps and cycles per packet
    Forwarders(forwarders::Args),
    /// l3fwd vs DPDK's own forwarding graph (rte_graph + librte_node's ip4 nodes), same routes and frames
    L3fwdGraph(l3fwd_graph::Args),
    /// Seed paper Figures 4-6: throughput against vector size B and sub-batch b
    SeedFigures(seed_figures::Args),
    /// DPDK ports: io forwarding through a graph vs testpmd's io loop, same process
    DpdkIo(dpdk_io::Args),
    /// Path-based batcher in front of l3fwd: off vs on, by traffic
    Batcher(batcher::Args),
    /// Overhead model: calibrate, predict, tune; prediction error and tuner quality
    Model(model::Args),
    /// Software RSS (Toeplitz hash) vs DPDK rte_softrss (dpdk-test thash_perf_autotest)
    Rss(rss::Args),
    /// Handoff between two cores through SPSC rings vs DPDK rte_ring (ring_perf_autotest)
    Handoff(handoff::Args),
    /// Forwarders on 1..N workers: the scaling curve
    Multicore(multicore::Args),
    /// A BGP update stream replayed into l3fwd's FIB while workers forward
    RouteUpdates(route_updates::Args),
    /// Stateful NFs (NAT, classifier, intruder, DHCP) under locks, flow affinity and RTM;
    /// the flow table vs rte_hash under concurrent writers
    SharedState(shared_state::Args),
    /// Whippersnapper suite (seed 003): one feature at a time on pktvec and on DPDK's SWX P4 pipeline, same sitting
    Whippersnapper(whippersnapper::Args),
    /// This host's memory: load latency by working set, one load at a time and 16 in
    /// flight (where its caches really end), and streaming reads; no anchor, for reading
    /// the other areas' figures
    Host(host::Args),
    /// Run every area in one sitting under one lock, then regenerate the scoreboard
    #[command(after_help = DATA_HELP)]
    Scoreboard(scoreboard::Args),
}

fn main() {
    let cli = Cli::parse();
    let result = match cli.cmd {
        Cmd::Dispatch(a) => dispatch::run(a),
        Cmd::Lpm4(a) => lpm4::run(a),
        Cmd::Lpm6(a) => lpm6::run(a),
        Cmd::Hash(a) => hash::run(a),
        Cmd::Prefetch(a) => prefetch::run(a),
        Cmd::Host(a) => host::run(a),
        Cmd::Forwarders(a) => forwarders::run(a),
        Cmd::L3fwdGraph(a) => l3fwd_graph::run(a),
        Cmd::SeedFigures(a) => seed_figures::run(a),
        Cmd::DpdkIo(a) => dpdk_io::run(a),
        Cmd::Batcher(a) => batcher::run(a),
        Cmd::Model(a) => model::run(a),
        Cmd::Rss(a) => rss::run(a),
        Cmd::Handoff(a) => handoff::run(a),
        Cmd::Multicore(a) => multicore::run(a),
        Cmd::RouteUpdates(a) => route_updates::run(a),
        Cmd::SharedState(a) => shared_state::run(a),
        Cmd::Whippersnapper(a) => whippersnapper::run(a),
        Cmd::Scoreboard(a) => scoreboard::run(a),
    };
    if let Err(e) = result {
        eprintln!("pktvec-bench: {e}");
        std::process::exit(1);
    }
}
