//! Probe, calibrate, predict and tune: the overhead model of `pktvec-model` on a real
//! forwarder. Calibrates the batching model per node from a few (vector size, sub-batch)
//! runs, predicts cycles per packet over the whole grid, measures the grid, and compares;
//! then checks the tuner's choice against the best measured setting.
//!
//! ```sh
//! cargo run --release --example tune -- --app l3fwd --table large
//! cargo run --release --example tune -- --app l2fwd --table small --json
//! cargo run --release --example tune -- --batcher --window 64 --reps 30  # batcher off/batch
//! cargo run --release --example tune -- --online --app ppb                # ... live
//! ```

use clap::{Parser, ValueEnum};
use pktvec::graph::builtin::NullSink;
use pktvec::graph::{Graph, GraphBuilder, GraphConfig, NodeKind, RuntimeTable};
use pktvec::io::generator::{Generator, GeneratorNext, GeneratorSource};
use pktvec::io::profile::TrafficProfile;
use pktvec::model::calibrate::{Calibration, Sample, SpanRule};
use pktvec::model::probe::{Machine, ProbeConfig};
use pktvec::model::tuner::{CacheFit, Setting, Tuner, TunerConfig};
use pktvec::nodes::apps::l2fwd::{L2fwd, L2fwdConfig};
use pktvec::nodes::apps::l3fwd::{L3fwd, L3fwdConfig};
use pktvec::packet::{BufferPool, PoolConfig};

#[path = "tune/batching.rs"]
mod batching;
#[path = "tune/cache.rs"]
mod cache;
#[path = "tune/online.rs"]
mod online;
#[path = "tune/replay.rs"]
mod replay;

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
enum App {
    L2fwd,
    L3fwd,
    /// l3fwd (IPv4 + IPv6) behind the path batcher (online: the batcher's setting is
    /// tuned; offline use `--batcher`).
    Ppb,
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
enum Table {
    /// Cache resident (L2 4,096 stations; IPv4 10,000 routes).
    Small,
    /// Beyond the caches for L2 (4M stations, 400+ MiB); IPv4 500,000 routes.
    Large,
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
enum Trigger {
    /// Node shares of packets and cycles (insensitive to the machine's speed).
    Profile,
    /// Cycles per packet against the model's prediction.
    Cycles,
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
enum Stat {
    Median,
    Min,
}

#[derive(Parser, Debug)]
#[command(about = "calibrate the batching model on a forwarder, predict, measure and tune")]
struct Cli {
    #[arg(long, value_enum, default_value_t = App::L3fwd)]
    app: App,
    #[arg(long, value_enum, default_value_t = Table::Large)]
    table: Table,
    /// Packets per measured setting.
    #[arg(short = 'n', long, default_value_t = 1_000_000)]
    packets: u64,
    /// Measurements of each setting (the median is used).
    #[arg(long, default_value_t = 3)]
    reps: usize,
    /// Write the calibration (JSON) here.
    #[arg(long)]
    calib_out: Option<std::path::PathBuf>,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
    /// Instead of the cycles grid: the PPB model's I1/D1 misses per packet against this
    /// cachegrind sweep (`docs/results/batcher.json` from `scripts/ppb_sweep.py`).
    #[arg(long)]
    cache: Option<std::path::PathBuf>,
    /// The binary the sweep ran (node code sizes from `nm -S`), or an earlier `--cache`
    /// output (`.json`) whose stored code sizes are used; default: `ppb` next to this
    /// example.
    #[arg(long)]
    binary: Option<std::path::PathBuf>,
    /// Batch sizes whose cachegrind points calibrate the miss parameters (the rest are
    /// predicted).
    #[arg(long, value_delimiter = ',', default_values_t = [1usize, 4, 64])]
    cal_batches: Vec<usize>,
    /// With `--cache`: the I1 capacity term (one miss ratio, narrow ratio and capacity share
    /// for both L1i sizes: code that fits the L1i does not miss); false (default): a miss
    /// ratio and narrow ratio fitted per L1i size, which predicts the 8 KiB L1i better
    /// (model.md).
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set)]
    i1_capacity: bool,
    /// With `--cache`: the code lines measured by `scripts/model_footprints.py` (callgrind
    /// on the calibration settings of the same binary): I1 from those lines on an 8-way
    /// LRU L1i (`pktvec_model::icache`), with each run's node calls (`lru`) and with the
    /// path model's (`lru_path`), next to the footprint × ratio model (`ratio`).
    #[arg(long)]
    footprints: Option<std::path::PathBuf>,
    /// With `--footprints`: touches of different nodes' lines spread at random (Poisson)
    /// for the realistic mix (paths drawn per packet), evenly for alternating traffic;
    /// default: evenly for both (an upper bound on conflicts).
    #[arg(long)]
    i1_spread_by_order: bool,
    /// With `--footprints`: the trace replay's rule for which lines the b = 64 calibration
    /// run ran on every call run per packet instead (`integral`: decided from the b = 1 run,
    /// and for lines it never ran, whether they ran a whole number of times per call).
    #[arg(long, value_enum, default_value_t = cache::LineRule::Integral)]
    i1_replay_rule: cache::LineRule,
    /// With `--footprints`: the order in which the trace replay touches a call's lines
    /// (`measured`: the order the footprints' lackey runs recorded, lines run at the start
    /// and end of a call touched twice; `address`: address order, once each, sessions 7
    /// and before).
    #[arg(long, value_enum, default_value_t = cache::CallOrder::Measured)]
    i1_replay_order: cache::CallOrder,
    /// With `--footprints`: the trace replay's chunked-loop rule (`true`, default): a line
    /// the b = 1 run never ran, run a whole number (≥ 2) of times per call at b = 64 and
    /// as often per packet at b = 256, is a loop over chunks of 1/ρ packets and does not
    /// run in shorter calls; `false`: it runs on every call.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    i1_chunked_loops: bool,
    /// With `--footprints`: which calibration family's lines a call of n packets runs in the
    /// trace replay (`pktvec_model::icache::SizeRule`): `tail` (default: calls of 4–15 the
    /// b = 7 family, other calls not a multiple of 16 plus its tail lines), `small` (calls
    /// of 4–15 the b = 7 family as measured), `session8` (no b = 7 family).
    #[arg(long, value_enum, default_value_t = cache::SizeRuleArg::Tail)]
    i1_size_rule: cache::SizeRuleArg,
    /// With `--cache --footprints`: the batcher's flush deadline in packets of the
    /// cachegrind runs, for the path model's node calls (`lru_path`). 0 (default): the
    /// deadline never expires and queues always fill to a batch, as in the standard sweep
    /// (`scripts/ppb_sweep.py` runs cachegrind without a deadline). For a sweep run with
    /// `--cg-deadline-us 100`: `ppb`'s 100 µs at valgrind's ≈ 20 µs per packet ≈ 5
    /// packets, shorter than a receive round from b = 4 on, so every queue is flushed
    /// once per round.
    #[arg(long, default_value_t = 0.0)]
    flush_deadline_packets: f64,
    /// L1d bytes of the cachegrind runs (the host's, from CPUID).
    #[arg(long, default_value_t = 32768)]
    l1d: usize,
    /// Also write the JSON document here.
    #[arg(long)]
    out: Option<std::path::PathBuf>,
    /// Instead of the cycles grid: the tuner on a live graph whose traffic changes
    /// (l3fwd: single path ↔ alternating IPv4/IPv6; l2fwd: 4K ↔ 1M active stations).
    #[arg(long)]
    online: bool,
    /// Instead of timing: re-fit the calibrations stored in a sittings file
    /// (`scripts/model_pool.py` output, e.g. `docs/results/model-sitting7.json`) with each
    /// span rule and print the grid's prediction errors (`--out`: JSON).
    #[arg(long)]
    replay: Option<std::path::PathBuf>,
    /// With `--replay`: more grid settings (`V/b`, comma-separated) taken as calibration
    /// runs.
    #[arg(long, value_delimiter = ',')]
    replay_extra: Vec<String>,
    /// With `--replay`: re-normalise each stored run with this reference window (see
    /// `--reference-window`) before fitting; only runs that stored `runs_raw` (session 9 on).
    #[arg(long)]
    replay_window: Option<usize>,
    /// The calibration's rule for the stall's shape (`Stall::hide_span`).
    #[arg(long, value_enum, default_value_t = SpanRuleArg::PreferSeeds)]
    span_rule: SpanRuleArg,
    /// Online (and `--batcher`): input vectors per window.
    #[arg(long, default_value_t = 512)]
    window: u64,
    /// Online: what starts an exploration: a change of the traffic profile (each node's
    /// share of packets and cycles) or a drift of the absolute cycles per packet.
    #[arg(long, value_enum, default_value_t = Trigger::Profile)]
    trigger: Trigger,
    /// Online: rounds of the live schedule (the tuner and the fixed settings interleaved).
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Online: windows per traffic phase.
    #[arg(long, default_value_t = 60)]
    phase_windows: usize,
    /// Online: windows per setting in each phase's fixed-setting sweep (medians).
    #[arg(long, default_value_t = 3)]
    sweep_windows: usize,
    /// Smallest sub-batch the tuner may choose on a table beyond the L2
    /// (`TunerConfig::beyond_min_sub_batch`; 1: none). With `--replay`, the same for the
    /// replayed choices.
    #[arg(long, default_value_t = TunerConfig::default().beyond_min_sub_batch)]
    beyond_min_sub_batch: usize,
    /// Confirm the model's choice by measurement: the choice and its k − 1 nearest allowed
    /// sub-batches at the same vector size (`Tuner::sub_batch_neighbours`) measured afresh,
    /// `reps` interleaved rounds normalised like the grid, the best kept (0: trust the
    /// model's single best). Until session 10 this measured the top-k predicted settings,
    /// raw, and chased noise (model.md).
    #[arg(long, default_value_t = 3)]
    confirm: usize,
    /// Statistic over the `reps` measurements of a setting: the median, or the minimum
    /// (other tenants' interference only adds cycles, so the minimum is the run least
    /// disturbed).
    #[arg(long, value_enum, default_value_t = Stat::Median)]
    stat: Stat,
    /// Pair every measured run of the grid with a short run of a fixed reference setting
    /// (V 256, b 64; a quarter of the packets) right after it, and divide the run by the
    /// reference's speed factor (its cycles / the sitting's median reference): on this
    /// shared 2-vCPU VM the whole machine slows by up to 2–3× for seconds at a time, which
    /// a run's chunks cannot filter out; the reference, measured in the same seconds, sees
    /// the same slowdown. The calibration uses the normalised runs; the JSON keeps the raw
    /// medians and their errors too. `--reference false`: raw runs only (as before).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    reference: bool,
    /// With `--reference`: the speed factor of a run is the median of the factors of the
    /// `W` reference runs centred on it (its own and (W − 1)/2 before and after, fewer at
    /// the ends). `1` (default): its own paired reference only. Session 9 ran 24 sittings
    /// with W = 5 (a reference run is short, ≈ 5 ms, so its own noise enters every
    /// normalised run) and replayed them with W = 1, 3, 5, 7 (`tune --replay
    /// --replay-window`): the worst error met 30% in 96, 96, 94 and 94 of 96 cases, so
    /// the wider window is not the default (docs/results/model.md).
    #[arg(long, default_value_t = 1)]
    reference_window: usize,
    /// Instead of the (B, b) grid: the batcher dimension on l3fwd behind the path batcher:
    /// the PPB model calibrated, off and each batch size predicted and measured on single-
    /// path and alternating traffic (one sitting, interleaved), the tuner's choice.
    #[arg(long)]
    batcher: bool,
    /// With `--batcher` or `--app ppb`: the graph's vector size (32..=256).
    #[arg(long, default_value_t = 256)]
    vector: usize,
    /// With `--batcher` or `--app ppb`: IPv4 routes.
    #[arg(long, default_value_t = 100_000)]
    route_count: usize,
    /// With `--batcher` or `--app ppb`: IPv6 routes.
    #[arg(long, default_value_t = 20_000)]
    route6_count: usize,
    /// The fair check of the tuner against the sweep: the tuner's choice and the grid's
    /// best measured again, interleaved (A B A B ...), this many times each, medians (the
    /// grid's best is a minimum over noisy medians, biased low). With `--reference` each
    /// of these runs is paired with a reference run and normalised as the grid's are
    /// (session 9; the JSON's `recheck.raw` keeps the raw medians). 0: skip.
    #[arg(long, default_value_t = 7)]
    recheck: usize,
    /// The judge's own noise: also re-measure the grid's best against itself, as the fair
    /// recheck does (`--recheck` rounds, normalised likewise); the JSON's `recheck_self`
    /// holds the ratio, which a noiseless machine would read as 1.
    #[arg(long)]
    recheck_self: bool,
    /// Online: relative drift of measured vs predicted cycles that starts an exploration.
    #[arg(long, default_value_t = 0.25)]
    drift: f64,
}

/// `--span-rule`.
#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
enum SpanRuleArg {
    /// Least squares, keeping the seeds' (b − 1)/b unless a span is 5% better.
    PreferSeeds,
    /// Least leave-one-out error over the sub-batch samples.
    LeaveOneOut,
}

impl From<SpanRuleArg> for SpanRule {
    fn from(a: SpanRuleArg) -> Self {
        match a {
            SpanRuleArg::PreferSeeds => SpanRule::PreferSeeds,
            SpanRuleArg::LeaveOneOut => SpanRule::LeaveOneOut,
        }
    }
}

/// The fair check's re-measurement (`--recheck`): the tuner's choice and the grid's best,
/// each (median tuner, median best, median of paired best / tuner ratios), raw and, with
/// `--reference`, speed-normalised.
struct Recheck {
    raw: (f64, f64, f64),
    norm: Option<(f64, f64, f64)>,
}

/// One measured run: (vector size, sub-batch) and per-node cycles per packet.
type Run = ((usize, usize), Vec<(String, f64)>);

const VECTORS: [usize; 5] = [16, 32, 64, 128, 256];
/// Sub-batch sizes of the calibration runs at the largest vector (besides b = 64).
const CAL_SUB_BATCHES: [usize; 6] = [1, 2, 4, 8, 16, 32];
const SUB_BATCHES: [usize; 7] = [1, 2, 4, 8, 16, 32, 64];

/// The median of `xs` (the upper one of an even count); NaN when empty. Every mode's
/// statistic over repeated runs.
fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    if xs.is_empty() {
        return f64::NAN;
    }
    xs[xs.len() / 2]
}

/// The speed factor of each run from its reference runs (`--reference-window`): the median,
/// over the `window` references centred on the run, of reference / the sitting's median
/// reference. `window` 1 is the run's own reference; an even window is widened by one.
fn speed_factors(refs: &[f64], window: usize) -> Vec<f64> {
    if refs.is_empty() {
        return Vec::new();
    }
    let mut sorted = refs.to_vec();
    sorted.sort_by(f64::total_cmp);
    let typical = sorted[sorted.len() / 2];
    let half = window / 2;
    (0..refs.len())
        .map(|i| {
            let lo = i.saturating_sub(half);
            let hi = (i + half + 1).min(refs.len());
            let mut w = refs[lo..hi].to_vec();
            w.sort_by(f64::total_cmp);
            w[w.len() / 2] / typical
        })
        .collect()
}

/// The reference setting of `--reference` (V, b).
const REFERENCE: (usize, usize) = (256, 64);

/// Chunks a measured run is split into ([`measure`]).
const CHUNKS: u64 = 8;

/// Runs `n` packets at (v, b); returns per-node (name, cycles per packet of all input).
/// The run is timed in [`CHUNKS`] chunks, each with its own runtime stats, and the chunk
/// with the median total stands for it: on this shared VM another process takes the CPU
/// for whole scheduler slices (≈ 4 ms), which then land in one or two chunks instead of
/// the whole run's figure.
fn measure(g: &mut Graph, v: usize, b: usize, n: u64) -> Vec<(String, f64)> {
    g.set_vector_size(v).expect("vector size in range");
    g.set_sub_batch(b);
    // Warm up, then measure.
    let mut done = 0;
    while done < n / 10 {
        done += g.run_once();
    }
    let mut chunks: Vec<(f64, Vec<(String, f64)>)> = (0..CHUNKS)
        .map(|_| {
            g.reset_stats();
            let mut done = 0;
            while done < n.div_ceil(CHUNKS) {
                done += g.run_once();
            }
            let rows = node_cycles_per_input(&g.runtime());
            (rows.iter().map(|r| r.1).sum(), rows)
        })
        .collect();
    chunks.sort_by(|a, b| a.0.total_cmp(&b.0));
    chunks.swap_remove(chunks.len() / 2).1
}

/// Settings measured again, interleaved: `rounds` rounds, each measuring every setting
/// once, the order rotated by one each round (A B C, B C A, ...); with `reference` each run
/// is followed by a reference run ([`REFERENCE`], a quarter of the packets). Returns per
/// setting its total cycles per packet of each round, raw and normalised by
/// [`speed_factors`] over this sequence's own references (`window`); the normalised are
/// `None` without references. Used by `--confirm` and by the fair recheck.
fn remeasure(
    g: &mut Graph,
    settings: &[(usize, usize)],
    rounds: usize,
    packets: u64,
    reference: bool,
    window: usize,
) -> (Vec<Vec<f64>>, Option<Vec<Vec<f64>>>) {
    let total = |r: Vec<(String, f64)>| r.iter().map(|x| x.1).sum::<f64>();
    let k = settings.len();
    let mut seq: Vec<(usize, f64)> = Vec::new();
    let mut refs: Vec<f64> = Vec::new();
    for round in 0..rounds {
        for j in 0..k {
            let i = (j + round) % k;
            let (v, b) = settings[i];
            seq.push((i, total(measure(g, v, b, packets))));
            if reference {
                refs.push(total(measure(g, REFERENCE.0, REFERENCE.1, packets / 4)));
            }
        }
    }
    let split = |f: &[f64]| -> Vec<Vec<f64>> {
        let mut out = vec![Vec::new(); k];
        for ((i, c), f) in seq.iter().zip(f) {
            out[*i].push(c / f);
        }
        out
    };
    let raw = split(&vec![1.0; seq.len()]);
    let norm = reference.then(|| split(&speed_factors(&refs, window)));
    (raw, norm)
}

/// Packets and vectors the graph's input nodes produced, from a runtime table: every
/// per-packet figure of the scenarios is per input packet.
fn input_totals(rt: &RuntimeTable) -> (u64, u64) {
    rt.rows
        .iter()
        .filter(|r| r.kind == NodeKind::Input)
        .fold((0, 0), |a, r| (a.0 + r.packets, a.1 + r.vectors))
}

/// Each node's (name, cycles per input packet): what the batching model is calibrated on.
fn node_cycles_per_input(rt: &RuntimeTable) -> Vec<(String, f64)> {
    let (input, _) = input_totals(rt);
    rt.rows
        .iter()
        .map(|r| (r.name.clone(), r.cycles as f64 / input.max(1) as f64))
        .collect()
}

/// Prints `doc` (with `--json`) and writes it to `--out` if given: the end of every mode
/// that produces one JSON document.
fn emit(cli: &Cli, doc: &serde_json::Value) -> Result<(), Box<dyn std::error::Error>> {
    if cli.json {
        println!("{doc}");
    }
    if let Some(o) = &cli.out {
        std::fs::write(o, serde_json::to_string_pretty(doc)?)?;
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let cli = Cli::parse();
    if let Some(data) = &cli.cache {
        let bin = match &cli.binary {
            Some(b) => b.clone(),
            None => std::env::current_exe()?.with_file_name("ppb"),
        };
        let doc = cache::run(
            data,
            &bin,
            &cache::Options {
                cal_batches: &cli.cal_batches,
                l1d: cli.l1d,
                capacity: cli.i1_capacity,
                lines_file: cli.footprints.as_deref(),
                deadline: (cli.flush_deadline_packets > 0.0).then_some(cli.flush_deadline_packets),
                json: cli.json,
                spread_by_order: cli.i1_spread_by_order,
                line_rule: cli.i1_replay_rule,
                call_order: cli.i1_replay_order,
                chunked_loops: cli.i1_chunked_loops,
                size_rule: cli.i1_size_rule,
            },
        )?;
        return emit(&cli, &doc);
    }
    if let Some(path) = &cli.replay {
        let extra: Vec<(u64, u64)> = cli
            .replay_extra
            .iter()
            .filter_map(|s| s.split_once('/'))
            .filter_map(|(v, b)| Some((v.parse().ok()?, b.parse().ok()?)))
            .collect();
        let doc = replay::run(
            path,
            &[SpanRule::PreferSeeds, SpanRule::LeaveOneOut],
            &extra,
            cli.replay_window,
            cli.beyond_min_sub_batch,
            cli.json,
        )?;
        return emit(&cli, &doc);
    }
    if cli.batcher || (cli.online && cli.app == App::Ppb) {
        let o = batching::Options {
            route_count: cli.route_count,
            route6_count: cli.route6_count,
            reps: cli.reps,
            window: cli.window,
            phase_windows: cli.phase_windows,
            rounds: cli.rounds,
            vector: cli.vector,
        };
        let doc = if cli.online {
            batching::online(&o, cli.json)?
        } else {
            batching::offline(&o, cli.json)?
        };
        return emit(&cli, &doc);
    }
    if cli.app == App::Ppb {
        return Err("--app ppb: use --batcher (offline) or --online".into());
    }
    if cli.online {
        let doc = online::run(
            &online::Options {
                l2: cli.app == App::L2fwd,
                window: cli.window,
                phase_windows: cli.phase_windows,
                sweep_windows: cli.sweep_windows,
                vectors: VECTORS.to_vec(),
                sub_batches: SUB_BATCHES.to_vec(),
                drift: cli.drift,
                calib_windows: cli.reps,
                rounds: cli.rounds,
                profile: cli.trigger == Trigger::Profile,
            },
            cli.json,
        )?;
        return emit(&cli, &doc);
    }
    let machine = Machine::probe(ProbeConfig::default(), pktvec::graph::clock::tsc_hz());
    if !cli.json {
        eprintln!("machine: {machine:?}");
    }
    // The graph, built once; settings change between runs.
    let mut b = GraphBuilder::new(GraphConfig::default());
    // Bytes of the lookup table the packets read (l3fwd: the IPv4 FIB's read path; l2fwd:
    // the MAC table's buckets), for the tuner's cache-resident rule (within the probed L2:
    // resident; beyond the LLC: not; in between the calibration decides).
    let table_bytes;
    let (src, entry, tx) = match cli.app {
        App::L3fwd => {
            let app = L3fwd::new(L3fwdConfig {
                route_count: if cli.table == Table::Small {
                    10_000
                } else {
                    500_000
                },
                route6_count: 1000,
                ip4_lookup_sub_batch: None, // follow the graph's b
                ..L3fwdConfig::default()
            })?;
            let gen = Generator::builder(TrafficProfile::from_toml(
                "[mix]\nipv4 = 1.0\n[flows]\ncount = 65536\n[sizes]\nfixed = 64\n[destinations]\nipv4_hit_rate = 0.98",
            )?)
            .ipv4_prefixes(app.routes4().iter().map(|r| (r.addr, r.len)).collect())
            .build()?;
            let tx = app.add_to(&mut b).output_to_tx.to;
            table_bytes = app.fib4().read_path_bytes();
            (
                GeneratorSource::new(gen).pregenerate(65536),
                app.entry(),
                tx,
            )
        }
        App::Ppb => unreachable!("returned above"),
        App::L2fwd => {
            let size = if cli.table == Table::Small {
                4096
            } else {
                4 << 20
            };
            let app = L2fwd::new(L2fwdConfig {
                table_size: size,
                ..L2fwdConfig::default()
            })?;
            let gen = Generator::builder(TrafficProfile::from_toml(&format!(
                "[mix]\nipv4 = 1.0\n[flows]\ncount = {}\n[sizes]\nfixed = 64\n[l2]\nhosts = {size}\nports = 4\n",
                size.min(1 << 20)
            ))?)
            .build()?;
            let tx = app.add_to(&mut b).output_to_tx.to;
            table_bytes = app.fib().read().memory_bytes();
            (
                GeneratorSource::new(gen).pregenerate(65536),
                app.entry(),
                tx,
            )
        }
    };
    let table_fit = CacheFit::of(table_bytes, machine.l2, machine.llc);
    if !cli.json {
        eprintln!(
            "table: {table_bytes} bytes (L2 {}, LLC {} bytes): fits {table_fit:?}",
            machine.l2, machine.llc
        );
    }
    b.add("input", src)
        .set_next("input", GeneratorNext::Out, entry);
    b.add(&tx, NullSink);
    let mut g = b.build(BufferPool::new(PoolConfig::default())?)?;

    // Calibration runs: every vector size of the grid at the largest b (V = 16 included:
    // the grid's smallest vectors are then interpolated, not extrapolated from 1/32 to
    // 1/16 through Δshared/B), sub-batches at the largest vector: b = 1, 2, 4, 8, 16, 32
    // (and 64 from the vector sizes) since session 7 — with b = 1, 4, 16, 32 only, the
    // stall's shape between b = 1 and 16 was pinned by b = 4 alone (l2fwd's 57 MiB table:
    // b = 2 or b = 8 off by 27–30% in two of six sittings, `tune --replay`).
    let mut calib_runs = Vec::new();
    for &v in &VECTORS {
        calib_runs.push((v, 64.min(v)));
    }
    for &bb in &CAL_SUB_BATCHES {
        calib_runs.push((256, bb));
    }
    // Every setting (calibration and grid) is measured `reps` times in a shuffled order and
    // the median kept: this VM's speed drifts by tens of percent over seconds, so one run
    // per setting in a fixed order would put the drift into the model.
    let mut grid: Vec<(usize, usize)> = Vec::new();
    for &v in &VECTORS {
        for &bb in SUB_BATCHES.iter().filter(|&&x| x <= v) {
            grid.push((v, bb));
        }
    }
    let mut order: Vec<(usize, usize)> = grid.clone();
    for c in &calib_runs {
        if !order.contains(c) {
            order.push(*c);
        }
    }
    let mut runs: Vec<Run> = Vec::new();
    // With `--reference`: each run's reference total (cycles per packet at V 256, b 64).
    let mut refs: Vec<f64> = Vec::new();
    let mut x = 0x2545_f491_4f6c_dd1du64;
    for _ in 0..cli.reps {
        for i in (1..order.len()).rev() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            order.swap(i, (x % (i as u64 + 1)) as usize);
        }
        for &(v, bb) in &order {
            runs.push(((v, bb), measure(&mut g, v, bb, cli.packets)));
            if cli.reference {
                let r = measure(&mut g, REFERENCE.0, REFERENCE.1, cli.packets / 4);
                refs.push(r.iter().map(|c| c.1).sum());
            }
        }
    }
    // The raw runs, kept for the JSON; `runs` becomes the normalised ones.
    let raw_runs = runs.clone();
    let speed: Vec<f64> = if cli.reference {
        speed_factors(&refs, cli.reference_window)
    } else {
        vec![1.0; runs.len()]
    };
    for (r, f) in runs.iter_mut().zip(&speed) {
        for c in r.1.iter_mut() {
            c.1 /= f;
        }
    }
    let stat_of = |runs: &[Run], set: (usize, usize), node: Option<&str>| -> f64 {
        let mut xs: Vec<f64> = runs
            .iter()
            .filter(|r| r.0 == set)
            .map(|r| {
                r.1.iter()
                    .filter(|(n, _)| node.map_or(true, |m| m == n))
                    .map(|(_, c)| c)
                    .sum::<f64>()
            })
            .collect();
        xs.sort_by(f64::total_cmp);
        match cli.stat {
            Stat::Median => xs[xs.len() / 2],
            Stat::Min => xs[0],
        }
    };
    let median_of = |set: (usize, usize), node: Option<&str>| stat_of(&runs, set, node);
    let names: Vec<String> = runs[0].1.iter().map(|(n, _)| n.clone()).collect();
    let mut samples = Vec::new();
    for &(v, bb) in &calib_runs {
        for n in &names {
            samples.push((
                n.clone(),
                Sample {
                    vector: v,
                    sub_batch: bb,
                    cycles_per_packet: median_of((v, bb), Some(n)),
                },
            ));
        }
    }
    let calib = Calibration::fit_with(&samples, cli.span_rule.into());
    if let Some(p) = &cli.calib_out {
        std::fs::write(p, calib.to_json())?;
    }

    // The grid: predicted vs measured (total cycles per packet, medians).
    let rows: Vec<(usize, usize, f64, f64)> = grid
        .iter()
        .map(|&(v, bb)| {
            (
                v,
                bb,
                calib.predict(v, bb, |_| 1.0),
                median_of((v, bb), None),
            )
        })
        .collect();
    // Median and worst absolute error of the predictions against `measured` per setting.
    let errors_of = |measured: &dyn Fn(usize, usize) -> f64, out_only: bool| -> (f64, f64) {
        let mut errs: Vec<f64> = rows
            .iter()
            .filter(|r| !out_only || !calib_runs.contains(&(r.0, r.1)))
            .map(|r| ((r.2 - measured(r.0, r.1)) / measured(r.0, r.1)).abs())
            .collect();
        errs.sort_by(f64::total_cmp);
        (errs[errs.len() / 2], *errs.last().unwrap_or(&0.0))
    };
    let errors = |measured: &dyn Fn(usize, usize) -> f64| errors_of(measured, false);
    let measured_of = |v: usize, b: usize| median_of((v, b), None);
    let (median, worst) = errors(&measured_of);
    // The settings the calibration did not use (the predictions proper).
    let (out_median, out_worst) = errors_of(&measured_of, true);
    let raw_of = |set: (usize, usize)| stat_of(&raw_runs, set, None);
    let (raw_median, raw_worst) = errors(&|v, b| raw_of((v, b)));
    let ref_range = refs
        .iter()
        .fold((f64::INFINITY, 0.0f64), |a, &r| (a.0.min(r), a.1.max(r)));
    let mut tuner = Tuner::new(
        TunerConfig {
            vectors: VECTORS.to_vec(),
            sub_batches: SUB_BATCHES.to_vec(),
            table_fit: Some(table_fit),
            beyond_min_sub_batch: cli.beyond_min_sub_batch,
            ..TunerConfig::default()
        },
        calib.clone(),
    );
    let model_choice = tuner.setting();
    // The model's unrestricted choice (no cache-resident cap): what Δsub alone picks.
    let free_choice = Tuner::new(
        TunerConfig {
            vectors: VECTORS.to_vec(),
            sub_batches: SUB_BATCHES.to_vec(),
            resident_max_sub_batch: usize::MAX,
            resident_stall_share: 0.0,
            beyond_min_sub_batch: 1,
            ..TunerConfig::default()
        },
        calib.clone(),
    )
    .setting();
    // Confirmation: the choice and its sub-batch neighbours measured afresh (`reps` interleaved
    // rounds, each run paired with a reference run and normalised as the grid's are),
    // medians, the best measured kept. These runs are separate from the grid's, which
    // judges the choice below.
    let mut confirmed = Vec::new();
    if cli.confirm > 0 {
        let top = tuner.sub_batch_neighbours(cli.confirm);
        let sets: Vec<(usize, usize)> = top.iter().map(|s| (s.vector, s.sub_batch)).collect();
        let (raw, norm) = remeasure(
            &mut g,
            &sets,
            cli.reps,
            cli.packets,
            cli.reference,
            cli.reference_window,
        );
        for (s, xs) in top.into_iter().zip(norm.unwrap_or(raw)) {
            let x = match cli.stat {
                Stat::Median => crate::median(xs),
                Stat::Min => xs.into_iter().fold(f64::INFINITY, f64::min),
            };
            confirmed.push((s, x));
        }
        tuner.confirm(&confirmed);
    }
    let Setting {
        vector: tv,
        sub_batch: tb,
    } = tuner.setting();
    let best = rows
        .iter()
        .min_by(|a, b| a.3.total_cmp(&b.3))
        .expect("grid");
    let chosen = rows
        .iter()
        .find(|r| r.0 == tv && r.1 == tb)
        .expect("the tuner picks from the grid");
    let quality = best.3 / chosen.3;
    let model_row = rows
        .iter()
        .find(|r| r.0 == model_choice.vector && r.1 == model_choice.sub_batch)
        .expect("the tuner picks from the grid");
    let model_quality = best.3 / model_row.3;
    let free_row = rows
        .iter()
        .find(|r| r.0 == free_choice.vector && r.1 == free_choice.sub_batch)
        .expect("the tuner picks from the grid");
    // The fair check: the tuner's choice and the grid's best, measured again interleaved
    // (the order alternating each round), medians and the median of paired ratios.
    // With `--reference`, each re-measured run is paired with a reference run and
    // normalised as the grid's runs are (`--reference-window` over the recheck's own
    // sequence; the sitting's typical speed cancels in the ratio); the raw medians are kept.
    let mut recheck: Option<Recheck> = None;
    if cli.recheck > 0 && (tv, tb) != (best.0, best.1) {
        let (raw, norm) = remeasure(
            &mut g,
            &[(tv, tb), (best.0, best.1)],
            cli.recheck,
            cli.packets,
            cli.reference,
            cli.reference_window,
        );
        // (median tuner, median best, median of the paired best / tuner ratios).
        let summary = |x: Vec<Vec<f64>>| -> (f64, f64, f64) {
            let paired = crate::median(x[1].iter().zip(&x[0]).map(|(b, a)| b / a).collect());
            (
                crate::median(x[0].clone()),
                crate::median(x[1].clone()),
                paired,
            )
        };
        let raw = summary(raw);
        let norm = norm.map(summary);
        recheck = Some(Recheck { raw, norm });
    }
    // The same re-measurement of the grid's best against itself (`--recheck-self`).
    let recheck_self = (cli.recheck_self && cli.recheck > 0).then(|| {
        let (raw, norm) = remeasure(
            &mut g,
            &[(best.0, best.1), (best.0, best.1)],
            cli.recheck,
            cli.packets,
            cli.reference,
            cli.reference_window,
        );
        let x = norm.unwrap_or(raw);
        crate::median(x[1].clone()) / crate::median(x[0].clone())
    });
    // Fair quality: 1 when the tuner chose the grid's best; else the re-measured ratio.
    let fair_quality = match &recheck {
        Some(r) => {
            let (a, b, _) = r.norm.unwrap_or(r.raw);
            b / a
        }
        None if (tv, tb) == (best.0, best.1) => 1.0,
        None => quality,
    };
    if cli.json {
        println!(
            "{}",
            serde_json::json!({
                "app": format!("{:?}", cli.app).to_lowercase(),
                "table": format!("{:?}", cli.table).to_lowercase(),
                "stat": format!("{:?}", cli.stat).to_lowercase(), "reps": cli.reps, "packets": cli.packets,
                "machine": machine, "calibration": calib,
                "grid": rows.iter().map(|r| serde_json::json!({"vector": r.0, "sub_batch": r.1, "predicted": r.2, "measured": r.3, "measured_raw": raw_of((r.0, r.1)),
                    "reps_raw": raw_runs.iter().filter(|x| x.0 == (r.0, r.1)).map(|x| x.1.iter().map(|c| c.1).sum::<f64>()).collect::<Vec<_>>(),
                    "nodes": calib.nodes.iter().map(|(n, m)| serde_json::json!({"node": n, "predicted": m.cycles_per_packet(r.0, r.1), "measured": median_of((r.0, r.1), Some(n))})).collect::<Vec<_>>()})).collect::<Vec<_>>(),
                "median_abs_error": median, "worst_abs_error": worst,
                "predicted_median_abs_error": out_median, "predicted_worst_abs_error": out_worst,
                "span_rule": format!("{:?}", cli.span_rule),
                "reference": cli.reference.then(|| serde_json::json!({"vector": REFERENCE.0, "sub_batch": REFERENCE.1, "runs": refs.len(), "min": ref_range.0, "max": ref_range.1, "window": cli.reference_window})),
                // Every run in measurement order (setting, its reference, each node's raw
                // cycles per packet in `names`' order): `tune --replay` re-normalises them.
                "runs_raw": {"nodes": names, "runs": raw_runs.iter().enumerate().map(|(i, r)| serde_json::json!([r.0.0, r.0.1, refs.get(i).map(|x| (x * 1000.0).round() / 1000.0), r.1.iter().map(|c| (c.1 * 1000.0).round() / 1000.0).collect::<Vec<_>>()])).collect::<Vec<_>>()},
                "raw_median_abs_error": raw_median, "raw_worst_abs_error": raw_worst,
                "calibration_runs": calib_runs,
                "tuner": {"vector": tv, "sub_batch": tb, "measured": chosen.3},
                "best": {"vector": best.0, "sub_batch": best.1, "measured": best.3},
                "tuner_quality": quality,
                "model_choice": {"vector": model_choice.vector, "sub_batch": model_choice.sub_batch, "measured": model_row.3, "quality": model_quality},
                "table_bytes": table_bytes, "table_fit": table_fit,
                "stall_share": tuner.stall_share(), "cache_resident": tuner.cache_resident(),
                "model_unrestricted": {"vector": free_choice.vector, "sub_batch": free_choice.sub_batch, "measured": free_row.3, "quality": best.3 / free_row.3},
                "recheck": recheck.as_ref().map(|r| {
                    let (a, b, p) = r.norm.unwrap_or(r.raw);
                    serde_json::json!({"reps": cli.recheck, "tuner": a, "best": b, "paired_ratio": p,
                        "normalised": r.norm.is_some(), "raw": {"tuner": r.raw.0, "best": r.raw.1, "paired_ratio": r.raw.2, "quality": r.raw.1 / r.raw.0}})
                }),
                "fair_quality": fair_quality,
                "recheck_self": recheck_self,
                "confirmed": confirmed.iter().map(|(s, c)| serde_json::json!({"vector": s.vector, "sub_batch": s.sub_batch, "measured": c})).collect::<Vec<_>>(),
            })
        );
    } else {
        println!(
            "{:>6} {:>4} {:>10} {:>10} {:>7}",
            "V", "b", "predicted", "measured", "error"
        );
        for r in &rows {
            println!(
                "{:>6} {:>4} {:>10.1} {:>10.1} {:>+6.1}%",
                r.0,
                r.1,
                r.2,
                r.3,
                100.0 * (r.2 - r.3) / r.3
            );
        }
        println!(
            "predicted settings only (not calibration runs): median {:.1}%, worst {:.1}%",
            100.0 * out_median,
            100.0 * out_worst
        );
        println!(
            "prediction error: median {:.1}%, worst {:.1}% over {} settings{}",
            100.0 * median,
            100.0 * worst,
            rows.len(),
            if cli.reference {
                format!(
                    " (speed-normalised; raw runs: median {:.1}%, worst {:.1}%; reference {:.1}–{:.1} cycles/packet)",
                    100.0 * raw_median,
                    100.0 * raw_worst,
                    ref_range.0,
                    ref_range.1
                )
            } else {
                String::new()
            }
        );
        println!(
            "tuner: V {tv}, b {tb}: {:.1} cycles/packet; best measured V {}, b {}: {:.1}; quality {:.1}%",
            chosen.3,
            best.0,
            best.1,
            best.3,
            100.0 * quality
        );
        match recheck.as_ref().map(|r| r.norm.unwrap_or(r.raw)) {
            Some((a, b, p)) => println!(
                "re-measured interleaved ({} each, medians): tuner V {tv}, b {tb}: {a:.1}; grid's best V {}, b {}: {b:.1}; fair quality {:.1}% (paired ratios: {:.1}%)",
                cli.recheck,
                best.0,
                best.1,
                100.0 * fair_quality,
                100.0 * p
            ),
            None => println!("fair quality {:.1}%", 100.0 * fair_quality),
        }
        println!(
            "cache resident: {} (table fits {table_fit:?}, hideable stall share {:.1}%); model without the cap: V {}, b {}: {:.1}, quality {:.1}%",
            tuner.cache_resident(),
            100.0 * tuner.stall_share(),
            free_choice.vector,
            free_choice.sub_batch,
            free_row.3,
            100.0 * best.3 / free_row.3
        );
        if !confirmed.is_empty() {
            println!(
                "model alone: V {}, b {}: {:.1} cycles/packet, quality {:.1}%; confirmed by measuring {} settings (the choice and its sub-batch neighbours): {:?}",
                model_choice.vector,
                model_choice.sub_batch,
                model_row.3,
                100.0 * model_quality,
                confirmed.len(),
                confirmed
                    .iter()
                    .map(|(s, c)| format!("V {} b {}: {:.1}", s.vector, s.sub_batch, c))
                    .collect::<Vec<_>>()
            );
        }
    }
    Ok(())
}
