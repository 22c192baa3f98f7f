//! `multicore`: l2fwd and l3fwd on 1..N workers (`pktvec_workers::runtime`), one graph per
//! worker pinned to its own core, each worker with its own input (pre-generated traffic,
//! a different seed per worker: the flows a NIC's RSS would give each queue) and its own
//! buffer pool and tables. A third case runs l3fwd behind `worker-handoff` over one shared
//! arena: every worker's input carries every worker's flows, and a packet whose flow
//! another worker owns crosses to it through a handoff ring. Aggregate packets per second
//! for each worker count, interleaved over rounds; a round's speedup is its N-worker rate
//! over its one-worker rate (the two back to back), and the headline is the median of the
//! rounds' speedups ÷ workers (the scaling efficiency).
//!
//! ```text
//! cargo run --release -p pktvec-bench -- multicore                     # 1 and 2 workers
//! cargo run --release -p pktvec-bench -- multicore --workers 1,2,4,8,16  # a bigger machine
//! ```

use std::sync::Arc;
use std::time::Duration;

use pktvec::graph::Graph;
use pktvec::nodes::apps::l3fwd::{L3fwd, L3fwdConfig};
use pktvec::packet::{PoolConfig, SharedArena};
use pktvec_workers::handoff::{Distribution, Handoff, HANDOFF_INPUT, HANDOFF_TX, WORKER_HANDOFF};
use pktvec_workers::runtime::{BuildError, WorkerInfo, Workers, WorkersConfig};
use serde_json::json;

use crate::forwarders::graphs::{self, median, BUFFERS};
use crate::sitting::{Common, Headline, Sitting};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// Options of `multicore`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    common: Common,
    /// Worker counts to measure (comma-separated; the first is the baseline, normally 1)
    #[arg(long, value_delimiter = ',', default_value = "1,2")]
    workers: Vec<usize>,
    /// Seconds each run forwards [default: 1; --quick: 0.3]
    #[arg(long)]
    secs: Option<f64>,
    /// Rounds over the worker counts (the speedup is the median of the rounds' own)
    /// [default: 11; --quick: 1]
    #[arg(long)]
    rounds: Option<usize>,
    /// Routes in each worker's l3fwd table [default: 100000; --quick: 10000]
    #[arg(long)]
    routes: Option<usize>,
    /// Stations in each worker's l2fwd table
    #[arg(long, default_value_t = 65536)]
    stations: usize,
    /// Do not pin workers to cores
    #[arg(long)]
    no_pin: bool,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum App {
    L2fwd,
    L3fwd,
    /// l3fwd behind `worker-handoff`: each worker's input carries every worker's flows,
    /// and the packets of flows another worker owns cross to it through a handoff ring.
    L3fwdHandoff,
}

impl App {
    fn name(self) -> &'static str {
        match self {
            App::L2fwd => "l2fwd",
            App::L3fwd => "l3fwd",
            App::L3fwdHandoff => "l3fwd + handoff",
        }
    }
}

/// Runs the measurement.
pub fn run(args: Args) -> Res<()> {
    if args.workers.is_empty() || args.workers.contains(&0) {
        return Err("--workers needs counts of at least 1".into());
    }
    let sitting = Sitting::begin(
        "multicore",
        "Workers: scaling of l2fwd and l3fwd over cores",
        "multicore.md",
        &args.common,
    )?;
    let quick = sitting.quick();
    let secs = args.secs.unwrap_or(if quick { 0.3 } else { 1.0 });
    let rounds = args.rounds.unwrap_or(if quick { 1 } else { 11 });
    let routes = args.routes.unwrap_or(if quick { 10_000 } else { 100_000 });
    let cores = core_count();
    println!(
        "{cores} cores; one graph, pool ({BUFFERS} buffers) and table per worker; \
         {secs} s a run, median of {rounds} round(s); l2fwd {} stations, l3fwd {routes} routes",
        args.stations
    );
    if args.workers.iter().any(|&n| n > cores) {
        println!("note: more workers than cores: workers share cores");
    }
    let mut headline = Vec::new();
    let mut detail = Vec::new();
    for app in [App::L2fwd, App::L3fwd, App::L3fwdHandoff] {
        let mut mpps: Vec<Vec<f64>> = vec![Vec::new(); args.workers.len()];
        let mut imbalance = vec![Vec::new(); args.workers.len()];
        let mut handoff_nodes: Vec<Vec<HandoffCycles>> = vec![Vec::new(); args.workers.len()];
        for round in 0..rounds {
            // alternate the order between rounds
            let order: Vec<usize> = if round % 2 == 0 {
                (0..args.workers.len()).collect()
            } else {
                (0..args.workers.len()).rev().collect()
            };
            for k in order {
                let n = args.workers[k];
                let (rate, imb, nodes) =
                    measure(app, n, secs, !args.no_pin, args.stations, routes)?;
                mpps[k].push(rate);
                imbalance[k].push(imb);
                handoff_nodes[k].push(nodes);
            }
        }
        let med: Vec<f64> = mpps.iter().map(|v| median(v)).collect();
        let base_n = args.workers[0] as f64;
        for (k, &n) in args.workers.iter().enumerate() {
            // each round's own speedup (its runs back to back), then their median: the
            // guest's speed moves between rounds for both worker counts alike
            let paired: Vec<f64> = mpps[k]
                .iter()
                .zip(&mpps[0])
                .map(|(r, b)| r / (b / base_n))
                .collect();
            let speedup = median(&paired);
            println!(
                "{:<6} {:>2} workers: {:>7.2} Mpps (rounds {:?}), speedup {:.2} (rounds {:?}) over {} worker(s) per worker, imbalance {:.3}",
                app.name(),
                n,
                med[k],
                mpps[k].iter().map(|x| (x * 100.0).round() / 100.0).collect::<Vec<_>>(),
                speedup,
                paired.iter().map(|x| (x * 100.0).round() / 100.0).collect::<Vec<_>>(),
                args.workers[0],
                median(&imbalance[k])
            );
            if k > 0 {
                let row = Headline::rate(
                    &format!("{}, {n} workers: speedup over 1", app.name()),
                    "×",
                    speedup,
                    "linear (N workers = N×)",
                    n as f64,
                );
                // the target is for flows spread by RSS; handoff's rows show its cost
                headline.push(if app == App::L3fwdHandoff {
                    row
                } else {
                    row.target(0.95)
                });
            }
            let nodes = HandoffCycles::median(&handoff_nodes[k]);
            if app == App::L3fwdHandoff {
                println!(
                    "       handoff nodes, cycles a packet: worker-handoff {:.1}, handoff-tx {:.1}, \
                     handoff-input {:.1}; {:.1}% of the packets changed worker",
                    nodes.worker_handoff, nodes.handoff_tx, nodes.handoff_input, 100.0 * nodes.moved
                );
            }
            detail.push(json!({
                "app": app.name(), "workers": n, "mpps_median": med[k], "mpps_rounds": mpps[k],
                "speedup": speedup, "speedup_rounds": paired, "imbalance_packets": median(&imbalance[k]),
                "handoff_nodes_cycles_per_packet": (app == App::L3fwdHandoff).then_some(json!({
                    "worker_handoff": nodes.worker_handoff, "handoff_tx": nodes.handoff_tx,
                    "handoff_input": nodes.handoff_input, "share_moved": nodes.moved,
                })),
            }));
        }
    }
    sitting.finish(
        headline,
        json!({
            "cores": cores, "secs": secs, "rounds": rounds, "routes": routes,
            "stations": args.stations, "pinned": !args.no_pin, "buffers_per_worker": BUFFERS,
            "runs": detail,
        }),
    )?;
    Ok(())
}

fn core_count() -> usize {
    core_affinity::get_core_ids().map_or(1, |c| c.len())
}

/// The handoff nodes' cycles per packet in one run, and the share of packets that changed
/// worker.
#[derive(Clone, Copy, Debug, Default)]
struct HandoffCycles {
    worker_handoff: f64,
    handoff_tx: f64,
    handoff_input: f64,
    moved: f64,
}

impl HandoffCycles {
    fn median(runs: &[HandoffCycles]) -> HandoffCycles {
        let m = |f: fn(&HandoffCycles) -> f64| median(&runs.iter().map(f).collect::<Vec<_>>());
        HandoffCycles {
            worker_handoff: m(|r| r.worker_handoff),
            handoff_tx: m(|r| r.handoff_tx),
            handoff_input: m(|r| r.handoff_input),
            moved: m(|r| r.moved),
        }
    }
}

/// One run: `n` workers forwarding `app` for `secs`; aggregate Mpps (each worker's packets
/// over its own forwarding time, summed) and the packet imbalance (max / mean).
fn measure(
    app: App,
    n: usize,
    secs: f64,
    pin: bool,
    stations: usize,
    routes: usize,
) -> Res<(f64, f64, HandoffCycles)> {
    let mut cfg = WorkersConfig {
        pin,
        ..WorkersConfig::new(n)
    };
    let running = if app == App::L3fwdHandoff {
        // one arena for all workers (as many buffers as their own pools would have), one
        // router (its FIB shared), rings of 1024 slots
        let arena = SharedArena::new(PoolConfig {
            buffers: BUFFERS * n as u32,
            ..PoolConfig::default()
        })?;
        let handoff = Handoff::new(arena, Distribution::new(n), 1024)?;
        cfg = cfg.with_handoff(handoff.clone());
        let l3 = Arc::new(l3_app(routes)?);
        Workers::spawn(cfg, move |w| {
            handoff_graph(&l3, &handoff, w).map_err(|e| e.to_string().into())
        })?
    } else {
        Workers::spawn(cfg, move |w| build(app, w, stations, routes))?
    };
    running.wait_started();
    std::thread::sleep(Duration::from_secs_f64(secs));
    running.stop();
    let report = running.join()?;
    let c = report.conservation();
    if !c.is_balanced() || c.buffers_in_use != 0 {
        return Err(format!("{} on {n} workers: {c}", app.name()).into());
    }
    // packets forwarded (sent to tx) per second: with handoff, a worker's input can outrun
    // what its rings take, and what they drop is no throughput
    let secs = report.workers.iter().map(|w| w.seconds).fold(0.0, f64::max);
    let rate = if report.handoff.is_some() {
        c.output as f64 / secs
    } else {
        report.packets_per_second()
    };
    let rt = report.runtime();
    let cpp = |name: &str| rt.row(name).map_or(0.0, |r| r.cycles_per_packet);
    let nodes = HandoffCycles {
        worker_handoff: cpp(WORKER_HANDOFF),
        handoff_tx: cpp(HANDOFF_TX),
        handoff_input: cpp(HANDOFF_INPUT),
        moved: report
            .handoff
            .as_ref()
            .map_or(0.0, |h| h.handed_off as f64 / c.input.max(1) as f64),
    };
    Ok((rate / 1e6, report.imbalance().packets, nodes))
}

fn l3_app(routes: usize) -> Res<L3fwd> {
    Ok(L3fwd::new(L3fwdConfig {
        route_count: routes,
        route6_count: 1000,
        ..L3fwdConfig::default()
    })?)
}

/// One worker's graph with handoff: `input → worker-handoff → l3fwd`, `handoff-input →
/// l3fwd`, its pool over the shared arena.
fn handoff_graph(l3: &L3fwd, handoff: &Arc<Handoff>, w: WorkerInfo) -> Res<Graph> {
    let seed = Some(0x5eed + w.id as u64);
    graphs::l3fwd_with(
        l3,
        graphs::L3_IPV4,
        4096,
        seed,
        handoff.pool(),
        |b, entry| Ok(handoff.add_to(b, w.id, entry)?),
    )
}

/// One worker's graph: `input → <forwarder> → tx`, its own generator seed, pool and table.
fn build(app: App, w: WorkerInfo, stations: usize, routes: usize) -> Result<Graph, BuildError> {
    let seed = Some(0x5eed + w.id as u64);
    let graph = match app {
        App::L2fwd => graphs::l2_app(stations).and_then(|l2| graphs::l2fwd_seeded(&l2, 4096, seed)),
        App::L3fwd | App::L3fwdHandoff => {
            l3_app(routes).and_then(|l3| graphs::l3fwd_seeded(&l3, graphs::L3_IPV4, 4096, seed))
        }
    };
    // the build error crosses threads as text
    graph.map_err(|e| e.to_string().into())
}
