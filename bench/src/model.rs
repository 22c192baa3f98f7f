//! `model`: the overhead model's prediction error and the tuner's quality on four
//! forwarder cases (l2fwd and l3fwd, a cache-resident and a beyond-the-caches table).
//!
//! Per case one graph is built; every (V, b) setting of the grid (V 16…256, b 1…64, b ≤ V)
//! is measured `reps` times in shuffled rounds (`pktvec::tune::measure_shuffled`: each run
//! timed in chunks, the median chunk kept; per setting the median run). The calibration
//! (`pktvec::tune::Calibrator`'s settings: every V at b = min(64, V), every b at V = 256)
//! is fitted from those runs' calibration settings; the model then predicts the whole
//! grid, compared with the medians (node cycles per input packet). The tuner's choice
//! (cache rules from the table's size against the sysfs L2/LLC sizes) and the grid's best
//! measured setting (end-to-end Mpps) are measured again interleaved, `recheck` rounds,
//! medians: the grid's best is a minimum over noisy medians, biased in its favour.

use crate::plot;
use crate::sitting::{Common, Headline, Sitting};
use pktvec::graph::builtin::NullSink;
use pktvec::graph::{Graph, GraphBuilder, GraphConfig};
use pktvec::io::generator::{Generator, GeneratorNext, GeneratorSource};
use pktvec::io::profile::TrafficProfile;
use pktvec::model::probe::caches;
use pktvec::model::tuner::Tuner;
use pktvec::nodes::apps::l2fwd::{L2fwd, L2fwdConfig};
use pktvec::nodes::apps::l3fwd::{L3fwd, L3fwdConfig};
use pktvec::packet::{BufferPool, PoolConfig};
use pktvec::tune::{self, CacheFit, Calibrator, Setting, TunerConfig, Window};
use serde_json::{json, Value};

/// Options of this subcommand.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    common: Common,
    /// Input packets per measured run (default: 500,000; --quick 100,000).
    #[arg(long)]
    packets: Option<u64>,
    /// Runs of each grid setting (default 9; --quick 3).
    #[arg(long)]
    reps: Option<usize>,
    /// Interleaved rounds re-measuring the tuner's choice and the grid's best (default 11;
    /// --quick 5).
    #[arg(long)]
    recheck: Option<usize>,
}

type BoxResult<T> = Result<T, Box<dyn std::error::Error>>;

/// The four cases: (name, forwarder, table entries).
const CASES: [(&str, bool, usize); 4] = [
    ("l2fwd, 4,096 stations", true, 4096),
    ("l2fwd, 4M stations", true, 4 << 20),
    ("l3fwd, 10,000 routes", false, 10_000),
    ("l3fwd, 500,000 routes", false, 500_000),
];

/// The forwarder's graph behind a pregenerated traffic source, and its table's bytes.
fn build(l2: bool, entries: usize) -> BoxResult<(Graph, usize)> {
    let mut b = GraphBuilder::new(GraphConfig::default());
    let (gen, entry, tx, bytes) = if l2 {
        let app = L2fwd::new(L2fwdConfig {
            table_size: entries,
            ..L2fwdConfig::default()
        })?;
        let gen = Generator::builder(TrafficProfile::from_toml(&format!(
            "[mix]\nipv4 = 1.0\n[flows]\ncount = {}\n[sizes]\nfixed = 64\n[l2]\nhosts = {entries}\nports = 4\n",
            entries.min(1 << 20)
        ))?)
        .build()?;
        let tx = app.add_to(&mut b).output_to_tx.to;
        let bytes = app.fib().read().memory_bytes();
        (gen, app.entry(), tx, bytes)
    } else {
        let app = L3fwd::new(L3fwdConfig {
            route_count: entries,
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
        (gen, app.entry(), tx, app.fib4().read_path_bytes())
    };
    b.add("input", GeneratorSource::new(gen).pregenerate(65536))
        .set_next("input", GeneratorNext::Out, entry);
    b.add(&tx, NullSink);
    Ok((b.build(BufferPool::new(PoolConfig::default())?)?, bytes))
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs.get(xs.len() / 2).copied().unwrap_or(f64::NAN)
}

/// Median of a statistic over the runs of one setting.
fn stat(runs: &[(Setting, Window)], s: Setting, f: impl Fn(&Window) -> f64) -> f64 {
    median(runs.iter().filter(|r| r.0 == s).map(|r| f(&r.1)).collect())
}

/// One case measured: its detail JSON, the tuner's and the best setting's rechecked Mpps,
/// and the absolute relative prediction errors over its grid.
struct Case {
    detail: Value,
    tuner_mpps: f64,
    best_mpps: f64,
    choice: Setting,
    best: Setting,
    errors: Vec<f64>,
    /// (b, predicted, measured) node cycles per packet at V = 256.
    curve: Vec<(f64, f64, f64)>,
}

fn run_case(
    l2: bool,
    entries: usize,
    packets: u64,
    reps: usize,
    recheck: usize,
) -> BoxResult<Case> {
    let (mut g, table_bytes) = build(l2, entries)?;
    Window::measure_packets(&mut g, 4 * packets); // warm the tables and the pool
    let cfg = TunerConfig {
        vectors: vec![16, 32, 64, 128, 256],
        sub_batches: vec![1, 2, 4, 8, 16, 32, 64],
        ..TunerConfig::default()
    };
    let grid = tune::grid(&cfg);
    let runs = tune::measure_shuffled(&mut g, &grid, reps, packets, 8)?;
    let cal = Calibrator::new().runs();
    let calib_runs: Vec<(Setting, Window)> = runs
        .iter()
        .filter(|r| cal.contains(&r.0))
        .cloned()
        .collect();
    let calib = Calibrator::fit(&calib_runs);
    let preds = tune::predict(&calib, &grid);
    let (_, _, _, l2c, llc) = caches();
    let table_fit = CacheFit::of(table_bytes, l2c, llc);
    let tuner = Tuner::new(
        TunerConfig {
            table_fit: Some(table_fit),
            ..cfg.clone()
        },
        calib.clone(),
    );
    let choice = tuner.setting();
    let tsc = pktvec::graph::clock::tsc_hz();
    let mpps_of = |w: &Window| tsc / w.cycles.max(1e-9) / 1e6;
    let rows: Vec<Value> = preds
        .iter()
        .map(|p| {
            let s = p.setting;
            json!({"vector": s.vector, "sub_batch": s.sub_batch, "calibration": cal.contains(&s),
                "predicted": p.cycles_per_packet, "measured": stat(&runs, s, |w| w.node_cycles),
                "end_to_end": stat(&runs, s, |w| w.cycles), "mpps": stat(&runs, s, mpps_of)})
        })
        .collect();
    let errors: Vec<f64> = preds
        .iter()
        .map(|p| {
            let m = stat(&runs, p.setting, |w| w.node_cycles);
            ((p.cycles_per_packet - m) / m).abs()
        })
        .collect();
    let predicted_only: Vec<f64> = preds
        .iter()
        .zip(&errors)
        .filter(|(p, _)| !cal.contains(&p.setting))
        .map(|(_, e)| *e)
        .collect();
    let best = *grid
        .iter()
        .max_by(|a, b| stat(&runs, **a, mpps_of).total_cmp(&stat(&runs, **b, mpps_of)))
        .expect("a grid");
    let (tuner_mpps, best_mpps) = if choice == best {
        let m = stat(&runs, best, mpps_of);
        (m, m)
    } else {
        let re = tune::measure_shuffled(&mut g, &[choice, best], recheck, packets, 8)?;
        (stat(&re, choice, mpps_of), stat(&re, best, mpps_of))
    };
    let curve = preds
        .iter()
        .filter(|p| p.setting.vector == 256)
        .map(|p| {
            let s = p.setting;
            (
                s.sub_batch as f64,
                p.cycles_per_packet,
                stat(&runs, s, |w| w.node_cycles),
            )
        })
        .collect();
    let worst = errors.iter().copied().fold(0.0, f64::max);
    let detail = json!({
        "table_bytes": table_bytes, "table_fit": table_fit, "l2": l2c, "llc": llc,
        "calibration": calib, "grid": rows,
        "median_error": median(errors.clone()), "worst_error": worst,
        "predicted_only_median_error": median(predicted_only.clone()),
        "predicted_only_worst_error": predicted_only.iter().copied().fold(0.0, f64::max),
        "choice": choice, "best": best, "cache_resident": tuner.cache_resident(),
        "recheck_rounds": if choice == best { 0 } else { recheck },
        "tuner_mpps": tuner_mpps, "best_mpps": best_mpps, "quality": tuner_mpps / best_mpps,
    });
    Ok(Case {
        detail,
        tuner_mpps,
        best_mpps,
        choice,
        best,
        errors,
        curve,
    })
}

/// Runs the measurement.
pub fn run(args: Args) -> BoxResult<()> {
    let sitting = Sitting::begin(
        "model",
        "Overhead model: prediction error over the (V, b) grid, tuner's choice vs best",
        "model.md",
        &args.common,
    )?;
    let quick = sitting.quick();
    let packets = args
        .packets
        .unwrap_or(if quick { 100_000 } else { 500_000 });
    let reps = args.reps.unwrap_or(if quick { 3 } else { 9 });
    let recheck = args.recheck.unwrap_or(if quick { 5 } else { 11 });
    let mut rows = Vec::new();
    let mut detail = serde_json::Map::new();
    let mut all_errors = Vec::new();
    let mut series = Vec::new();
    for (name, l2, entries) in CASES {
        let c = run_case(l2, entries, packets, reps, recheck)?;
        println!(
            "{name}: prediction error median {:.1}%, worst {:.1}%; tuner V {} b {} {:.2} Mpps, best measured V {} b {} {:.2} Mpps",
            100.0 * median(c.errors.clone()),
            100.0 * c.errors.iter().copied().fold(0.0, f64::max),
            c.choice.vector,
            c.choice.sub_batch,
            c.tuner_mpps,
            c.best.vector,
            c.best.sub_batch,
            c.best_mpps
        );
        rows.push(
            Headline::rate(
                &format!("{name}: tuner's choice"),
                "Mpps",
                c.tuner_mpps,
                "best measured (V, b)",
                c.best_mpps,
            )
            .target(0.95),
        );
        all_errors.extend(c.errors.iter().copied());
        series.push((
            format!("{name}, predicted"),
            c.curve.iter().map(|p| (p.0, p.1)).collect(),
        ));
        series.push((
            format!("{name}, measured"),
            c.curve.iter().map(|p| (p.0, p.2)).collect(),
        ));
        detail.insert(name.to_string(), c.detail);
    }
    let med = 100.0 * median(all_errors.clone());
    rows.push(
        Headline::cost(
            "prediction error, median over the four grids",
            "%",
            med,
            "bound",
            15.0,
        )
        .target(1.0),
    );
    if let Some(p) = sitting.plot_path("grid") {
        plot::lines(
            &p,
            "node cycles per packet at V = 256: predicted and measured",
            "sub-batch b",
            "cycles per input packet",
            &series,
        )?;
    }
    let detail = json!({
        "packets": packets, "reps": reps, "recheck": recheck, "cases": detail,
        "median_error": med / 100.0,
        "worst_error": all_errors.iter().copied().fold(0.0, f64::max),
    });
    sitting.finish(rows, detail)?;
    Ok(())
}
