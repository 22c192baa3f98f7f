//! Seed-paper Figures 4–6 for pktvec: runs the forwarder examples (`l2fwd`, `l3fwd`,
//! `ndnfwd`, `cryptofwd`) as child processes with `--json`, sweeping the vector (batch)
//! size B with sub-batch b = 1 and b = B, and the sub-batch b at a fixed B (L2), for several
//! table sizes per application.
//!
//! Repeatability on a noisy machine: the b = 1 and b = B runs of the same B are interleaved
//! (one of each per repetition, the order alternating between repetitions), the points of
//! the b sweep likewise (round robin, reversed every other repetition), and every point
//! reports the median and the min–max spread of its `--reps` runs. Gains are computed from
//! medians; the sub-batch gain also as the spread of the per-repetition ratios of the
//! interleaved pairs.
//!
//! `cryptofwd` is the compute-bound contrast. Its only graph node with real work, `crypto`,
//! has no sub-batched lookup (b has no effect on it), so it gets a B sweep only; b = B is run
//! at `--paper-b` and `--fixed-b` as an A/A control that shows how far two identical
//! configurations measured in interleaved pairs differ on this machine.
//!
//! Prints the points and a table of gains next to the paper's (seed `000_*` §3.2), and
//! optionally writes all points and gains as JSON (`--json FILE`) and SVG plots
//! (`--svg-prefix P` → `P-l2-B.svg`, `P-l2-b.svg`, `P-ipv4-B.svg`, `P-ipv6-B.svg`,
//! `P-ndn-B.svg`, `P-crypto-B.svg`; medians with min–max bars).
//!
//! Build the forwarders first (`cargo build --release --examples`), then e.g.
//! `flock /tmp/pktvec-bench.lock target/release/examples/seed_sweep --json out.json`.

use clap::Parser;
use plotters::prelude::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

#[derive(Parser, Debug)]
#[command(about = "Sweep B and b over the forwarder examples (seed paper Figs. 4-6)")]
struct Cli {
    /// Directory of the forwarder binaries.
    #[arg(long, default_value = "target/release/examples")]
    bin_dir: PathBuf,
    /// Packets per run.
    #[arg(long, short = 'n', default_value_t = 2_000_000)]
    packets: u64,
    /// Runs per point (median and min–max reported; an even count gives both orders of
    /// every interleaved pair equally often).
    #[arg(long, default_value_t = 4)]
    reps: usize,
    /// Applications to sweep: l2, ipv4, ipv6, ndn, crypto.
    #[arg(long, value_delimiter = ',', default_values_t = ["l2".to_string(), "ipv4".into(), "ipv6".into(), "ndn".into(), "crypto".into()])]
    apps: Vec<String>,
    /// L2 table sizes (stations).
    #[arg(long, value_delimiter = ',', default_values_t = [256usize, 1 << 16, 1 << 20, 1 << 24])]
    l2_sizes: Vec<usize>,
    /// Batch sizes B (and sub-batch sizes b of the b sweep).
    #[arg(long, value_delimiter = ',', default_values_t = [1usize, 2, 4, 8, 16, 32, 64, 128, 256])]
    batches: Vec<usize>,
    /// Reduced B/b list for L2 tables of at least `--big-table` entries (slow to fill).
    #[arg(long, value_delimiter = ',', default_values_t = [1usize, 4, 16, 32, 64, 256])]
    big_batches: Vec<usize>,
    /// Tables at least this large use `--big-batches` (L2 stations, IPv4/IPv6 routes, names).
    #[arg(long, default_value_t = 1 << 24)]
    big_table: usize,
    /// Fixed B of the L2 b sweep, and the B of the reported sub-batch gain.
    #[arg(long, default_value_t = 256)]
    fixed_b: usize,
    /// The paper's B (Fig. 4 uses B = b = 32): gains are also reported at this B.
    #[arg(long, default_value_t = 32)]
    paper_b: usize,
    /// Pregenerated packets of l2fwd (distinct destinations in the replayed traffic).
    #[arg(long, default_value_t = 1 << 20)]
    l2_pregen: usize,
    /// IPv4 route counts of l3fwd.
    #[arg(long, value_delimiter = ',', default_values_t = [10_000usize, 500_000, 2_000_000])]
    routes: Vec<usize>,
    /// IPv6 route counts of l3fwd.
    #[arg(long, value_delimiter = ',', default_values_t = [20_000usize, 200_000, 1_000_000])]
    routes6: Vec<usize>,
    /// Name counts of ndnfwd.
    #[arg(long, value_delimiter = ',', default_values_t = [10_000usize, 100_000, 1_000_000])]
    names: Vec<usize>,
    /// Also run b = 1 and b = B with `--prefetch 0` at these B (empty: none).
    #[arg(long, value_delimiter = ',')]
    prefetch_off_at: Vec<usize>,
    /// Only the L2 b sweep (at `--fixed-b`): no B sweep, no prefetch-off points.
    #[arg(long)]
    only_b_sweep: bool,
    /// Load the points of an earlier `--json` file instead of measuring them (re-plot /
    /// re-print; points missing from it are measured).
    #[arg(long)]
    from_json: Option<PathBuf>,
    /// Write all points and gains as JSON here.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Write SVG plots with this path prefix.
    #[arg(long)]
    svg_prefix: Option<String>,
}

/// One measured configuration.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Key {
    app: String,
    table: usize,
    batch: usize,
    sub: usize,
    prefetch: Option<usize>,
}

/// Median, min and max of a point's runs.
#[derive(Clone, Copy, Debug)]
struct Stat {
    median: f64,
    min: f64,
    max: f64,
}

impl Stat {
    fn of(v: &[f64]) -> Option<Stat> {
        if v.is_empty() {
            return None;
        }
        let mut s = v.to_vec();
        s.sort_by(|a, b| a.total_cmp(b));
        let n = s.len();
        let median = if n % 2 == 1 {
            s[n / 2]
        } else {
            (s[n / 2 - 1] + s[n / 2]) / 2.0
        };
        Some(Stat {
            median,
            min: s[0],
            max: s[n - 1],
        })
    }
}

/// The paper's reported gains for an application (seed `000_*` §3.2 and §3.6, Fig. 4 at
/// B = 32): batching alone (b = 1), the additional gain of sub-batching (b = B), and the
/// combined gain (B = b = 32 against no batching). L2 and NDN combined: 1.20 × 1.23 and
/// 1.20 × 1.21, which the paper's §3.6 reports as +48% and +46% over vanilla P4C.
struct Paper {
    batching: Option<f64>,
    subbatch: Option<f64>,
    combined: Option<f64>,
    text: &'static str,
}

fn paper(app: &str) -> Paper {
    match app {
        "l2" => Paper {
            batching: Some(20.0),
            subbatch: Some(23.0),
            combined: Some(48.0),
            text: "batching +20%, sub-batching another +23% (B = 32, 16M entries)",
        },
        "ipv4" => Paper {
            batching: None,
            subbatch: None,
            combined: Some(55.0),
            text: "+55% (B = b = 32, 527,961 routes)",
        },
        "ipv6" => Paper {
            batching: None,
            subbatch: None,
            combined: Some(57.0),
            text: "+57% (B = b = 32, 200,000 routes)",
        },
        "ndn" => Paper {
            batching: Some(20.0),
            subbatch: Some(21.0),
            combined: Some(46.0),
            text: "batching +20%, sub-batching another +21% (B = 32)",
        },
        _ => Paper {
            batching: None,
            subbatch: None,
            combined: None,
            text: "\"much smaller\" (compute-bound; no figure given)",
        },
    }
}

struct Runner {
    cli: Cli,
    results: BTreeMap<Key, Vec<f64>>,
    ipv6_profile: PathBuf,
    started: Instant,
    runs_done: usize,
}

impl Runner {
    fn args(&self, k: &Key) -> (String, Vec<String>) {
        let mut a: Vec<String> = vec![
            "--json".into(),
            "-n".into(),
            self.cli.packets.to_string(),
            "--vector-size".into(),
            k.batch.to_string(),
            "--sub-batch".into(),
            k.sub.to_string(),
        ];
        if let Some(p) = k.prefetch {
            a.push("--prefetch".into());
            a.push(p.to_string());
        }
        let t = k.table.to_string();
        let bin = match k.app.as_str() {
            "l2" => {
                a.extend([
                    "--table-size".into(),
                    t,
                    "--pregen".into(),
                    self.cli.l2_pregen.to_string(),
                ]);
                "l2fwd"
            }
            // The other family's table is kept small: its traffic share is 0, and building
            // 200k IPv6 (or 500k IPv4) unused routes would only lengthen every run's setup.
            "ipv4" => {
                a.extend([
                    "--route-count".into(),
                    t,
                    "--route6-count".into(),
                    "1000".into(),
                ]);
                "l3fwd"
            }
            "ipv6" => {
                a.extend([
                    "--route6-count".into(),
                    t,
                    "--route-count".into(),
                    "1000".into(),
                    "--profile".into(),
                    self.ipv6_profile.display().to_string(),
                ]);
                "l3fwd"
            }
            "ndn" => {
                a.extend(["--name-count".into(), t]);
                "ndnfwd"
            }
            _ => "cryptofwd",
        };
        (bin.to_string(), a)
    }

    /// One run of `k`: its Mpps.
    fn run_once(&mut self, k: &Key) -> Result<f64, Box<dyn std::error::Error>> {
        let (bin, args) = self.args(k);
        let path = self.cli.bin_dir.join(&bin);
        let out = Command::new(&path).args(&args).output().map_err(|e| {
            format!(
                "{}: {e} (build with cargo build --release --examples)",
                path.display()
            )
        })?;
        if !out.status.success() {
            return Err(format!(
                "{bin} {}: {}\n{}",
                args.join(" "),
                out.status,
                String::from_utf8_lossy(&out.stderr)
            )
            .into());
        }
        let v: serde_json::Value = serde_json::from_slice(&out.stdout)?;
        self.runs_done += 1;
        Ok(v["mpps"]
            .as_f64()
            .ok_or_else(|| format!("{bin}: no \"mpps\" in the JSON output"))?)
    }

    /// Measures the points of `keys` not measured yet, interleaved: each repetition runs
    /// every point once, in the given order on even repetitions and reversed on odd ones.
    fn measure_group(&mut self, keys: &[Key]) -> Result<(), Box<dyn std::error::Error>> {
        let mut todo: Vec<Key> = Vec::new();
        for k in keys {
            if !self.results.contains_key(k) && !todo.contains(k) {
                todo.push(k.clone());
            }
        }
        if todo.is_empty() {
            return Ok(());
        }
        let mut runs: Vec<Vec<f64>> = vec![Vec::new(); todo.len()];
        for rep in 0..self.cli.reps {
            let order: Vec<usize> = if rep % 2 == 0 {
                (0..todo.len()).collect()
            } else {
                (0..todo.len()).rev().collect()
            };
            for i in order {
                let m = self.run_once(&todo[i])?;
                runs[i].push(m);
            }
        }
        for (k, r) in todo.into_iter().zip(runs) {
            let s = Stat::of(&r).expect("reps > 0");
            eprintln!(
                "[{:6.1} s] {:6} table={:<8} B={:<4} b={:<4} prefetch={:<7} median {:7.3} Mpps [{:.3}–{:.3}]  runs {:?}",
                self.started.elapsed().as_secs_f64(),
                k.app,
                k.table,
                k.batch,
                k.sub,
                k.prefetch.map_or("default".to_string(), |p| p.to_string()),
                s.median,
                s.min,
                s.max,
                r.iter().map(|x| (x * 1000.0).round() / 1000.0).collect::<Vec<_>>()
            );
            self.results.insert(k, r);
        }
        Ok(())
    }

    fn stat(&self, k: &Key) -> Option<Stat> {
        self.results.get(k).and_then(|v| Stat::of(v))
    }
}

fn key(app: &str, table: usize, batch: usize, sub: usize, prefetch: Option<usize>) -> Key {
    Key {
        app: app.to_string(),
        table,
        batch,
        sub: sub.min(batch),
        prefetch,
    }
}

/// One plotted line: label and (x, median, min, max) points.
type Line = (String, Vec<(usize, Stat)>);

fn plot(
    path: &Path,
    title: &str,
    xlabel: &str,
    lines: &[Line],
) -> Result<(), Box<dyn std::error::Error>> {
    let xs: Vec<usize> = lines.iter().flat_map(|l| l.1.iter().map(|p| p.0)).collect();
    let xmax = xs.iter().cloned().max().unwrap_or(2).max(2) as f64;
    let ymax = lines
        .iter()
        .flat_map(|l| l.1.iter().map(|p| p.1.max))
        .fold(0.0, f64::max)
        * 1.1;
    let root = SVGBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(55)
        .build_cartesian_2d(-0.2f64..xmax.log2() + 0.2, 0f64..ymax.max(1.0))?;
    chart
        .configure_mesh()
        .x_desc(xlabel)
        .y_desc("Mpps (median of runs, bars: min–max)")
        .x_labels(xmax.log2() as usize + 1)
        .x_label_formatter(&|x| format!("{}", 2f64.powf(x.round()) as u64))
        .draw()?;
    // The b = 1 and b = B lines of one configuration share a colour.
    let mut configs: Vec<&str> = Vec::new();
    for (i, (label, pts)) in lines.iter().enumerate() {
        let config = label.rsplit_once(' ').map_or(label.as_str(), |x| x.0);
        let ci = configs
            .iter()
            .position(|&c| c == config)
            .unwrap_or_else(|| {
                configs.push(config);
                configs.len() - 1
            });
        let color = Palette99::pick(ci).to_rgba();
        let dashed = label.contains("b=1");
        // Offset the lines a little sideways so that their bars do not overlap.
        let dx = (i as f64 - (lines.len() as f64 - 1.0) / 2.0) * 0.02;
        let data: Vec<(f64, f64)> = pts
            .iter()
            .map(|&(x, s)| ((x as f64).log2() + dx, s.median))
            .collect();
        let style = color.stroke_width(2);
        if dashed {
            chart
                .draw_series(DashedLineSeries::new(data.clone(), 6, 4, style))?
                .label(label.as_str())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
        } else {
            chart
                .draw_series(LineSeries::new(data.clone(), style))?
                .label(label.as_str())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
        }
        chart.draw_series(data.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
        chart.draw_series(pts.iter().map(|&(x, s)| {
            ErrorBar::new_vertical(
                (x as f64).log2() + dx,
                s.min,
                s.median,
                s.max,
                color.stroke_width(1),
                6,
            )
        }))?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}

fn size_label(n: usize) -> String {
    if n >= 1 << 20 && n % (1 << 20) == 0 {
        format!("{}Mi", n >> 20)
    } else if n >= 1_000_000 && n % 1_000_000 == 0 {
        format!("{}M", n / 1_000_000)
    } else if n >= 1 << 10 && n % (1 << 10) == 0 {
        format!("{}Ki", n >> 10)
    } else if n >= 1000 && n % 1000 == 0 {
        format!("{}k", n / 1000)
    } else {
        n.to_string()
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let cli = Cli::parse();
    for a in &cli.apps {
        if !["l2", "ipv4", "ipv6", "ndn", "crypto"].contains(&a.as_str()) {
            return Err(format!("unknown app {a:?} (l2, ipv4, ipv6, ndn, crypto)").into());
        }
    }
    if cli.reps == 0 {
        return Err("--reps must be at least 1".into());
    }
    let ipv6_profile =
        std::env::temp_dir().join(format!("seed_sweep_ipv6_{}.toml", std::process::id()));
    std::fs::write(
        &ipv6_profile,
        "[mix]\nipv4 = 0.0\nipv6 = 1.0\n[flows]\ncount = 65536\n[sizes]\nfixed = 78\n\
         [destinations]\nipv4_hit_rate = 0.98\nipv6_hit_rate = 0.98\n",
    )?;
    let mut results = BTreeMap::new();
    if let Some(path) = &cli.from_json {
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path)?)?;
        for p in v["points"].as_array().ok_or("no \"points\" array")? {
            let n = |f: &str| p[f].as_u64().unwrap_or(0) as usize;
            let k = Key {
                app: p["app"].as_str().unwrap_or("").to_string(),
                table: n("table"),
                batch: n("B"),
                sub: n("b"),
                prefetch: p["prefetch"].as_str().and_then(|s| s.parse().ok()),
            };
            let runs: Vec<f64> = p["runs"]
                .as_array()
                .map(|a| a.iter().filter_map(|x| x.as_f64()).collect())
                .unwrap_or_default();
            if !runs.is_empty() {
                results.insert(k, runs);
            }
        }
    }
    let mut r = Runner {
        cli,
        results,
        ipv6_profile: ipv6_profile.clone(),
        started: Instant::now(),
        runs_done: 0,
    };
    let res = sweep(&mut r);
    let _ = std::fs::remove_file(&ipv6_profile);
    res
}

/// One application at one table size and the B values it is swept over.
struct Config {
    app: String,
    table: usize,
    batches: Vec<usize>,
}

impl Config {
    /// The b = B line is swept over all B (false: crypto, whose b has no effect, runs b = B
    /// only at the paper's B and at the fixed B, as a control).
    fn sub_sweep(&self) -> bool {
        self.app != "crypto"
    }
}

fn pct(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some((a / b - 1.0) * 100.0),
        _ => None,
    }
}

fn fmt_pct(p: Option<f64>) -> String {
    p.map_or("n/a".into(), |p| format!("{p:+.0}%"))
}

fn sweep(r: &mut Runner) -> Result<(), Box<dyn std::error::Error>> {
    let fixed = r.cli.fixed_b;
    let paper_b = r.cli.paper_b;
    let big = r.cli.big_table;

    let mut configs: Vec<Config> = Vec::new();
    let bs_for = |t: usize| {
        if t >= big {
            r.cli.big_batches.clone()
        } else {
            r.cli.batches.clone()
        }
    };
    for app in &r.cli.apps {
        let tables: Vec<usize> = match app.as_str() {
            "l2" => r.cli.l2_sizes.clone(),
            "ipv4" => r.cli.routes.clone(),
            "ipv6" => r.cli.routes6.clone(),
            "ndn" => r.cli.names.clone(),
            _ => vec![0],
        };
        for t in tables {
            configs.push(Config {
                app: app.clone(),
                table: t,
                batches: bs_for(t),
            });
        }
    }

    // Measure. Per B, the b = 1 and b = B runs are interleaved.
    for c in &configs {
        let (app, t) = (c.app.as_str(), c.table);
        if !r.cli.only_b_sweep {
            for &b in &c.batches {
                let mut group = vec![key(app, t, b, 1, None)];
                if c.sub_sweep() || b == fixed || b == paper_b {
                    group.push(key(app, t, b, b, None));
                }
                r.measure_group(&group)?;
            }
        }
        if app == "l2" {
            let group: Vec<Key> = c
                .batches
                .iter()
                .filter(|&&b| b <= fixed)
                .map(|&b| key(app, t, fixed, b, None))
                .collect();
            r.measure_group(&group)?;
        }
        if !r.cli.only_b_sweep {
            for &b in &r.cli.prefetch_off_at.clone() {
                r.measure_group(&[key(app, t, b, 1, Some(0)), key(app, t, b, b, Some(0))])?;
            }
        }
    }

    // Points.
    let mut rows: Vec<serde_json::Value> = Vec::new();
    let mut lines: BTreeMap<String, Vec<Line>> = BTreeMap::new();
    for c in &configs {
        let (app, t) = (c.app.as_str(), c.table);
        let name = if app == "crypto" {
            "crypto".to_string()
        } else {
            format!("{app} {}", size_label(t))
        };
        for (policy, one) in [("b=1", true), ("b=B", false)] {
            let mut pts = Vec::new();
            for &b in &c.batches {
                let k = key(app, t, b, if one { 1 } else { b }, None);
                if let Some(s) = r.stat(&k) {
                    pts.push((b, s));
                    rows.push(row(&k, "B-sweep", policy, s, &r.results[&k]));
                }
            }
            if !pts.is_empty() {
                lines
                    .entry(format!("{app}-B"))
                    .or_default()
                    .push((format!("{name} {policy}"), pts));
            }
        }
        if app == "l2" {
            let mut pts = Vec::new();
            for &b in c.batches.iter().filter(|&&b| b <= fixed) {
                let k = key(app, t, fixed, b, None);
                if let Some(s) = r.stat(&k) {
                    pts.push((b, s));
                    rows.push(row(&k, "b-sweep", "b", s, &r.results[&k]));
                }
            }
            if !pts.is_empty() {
                lines
                    .entry("l2-b".into())
                    .or_default()
                    .push((format!("{name} B={fixed}"), pts));
            }
        }
        for &b in &r.cli.prefetch_off_at {
            for (policy, sub) in [("b=1", 1), ("b=B", b)] {
                let k = key(app, t, b, sub, Some(0));
                if let Some(s) = r.stat(&k) {
                    rows.push(row(&k, "prefetch0", policy, s, &r.results[&k]));
                }
            }
        }
    }

    println!(
        "\n{:<6} {:>8} {:<9} {:<6} {:>5} {:>5} {:>8} {:>8} {:>8} {:>8}  runs",
        "app", "table", "sweep", "policy", "B", "b", "prefetch", "median", "min", "max"
    );
    for v in &rows {
        println!(
            "{:<6} {:>8} {:<9} {:<6} {:>5} {:>5} {:>8} {:>8.3} {:>8.3} {:>8.3}  {}",
            v["app"].as_str().unwrap_or(""),
            v["table"],
            v["sweep"].as_str().unwrap_or(""),
            v["policy"].as_str().unwrap_or(""),
            v["B"],
            v["b"],
            v["prefetch"].as_str().unwrap_or(""),
            v["mpps"].as_f64().unwrap_or(0.0),
            v["min"].as_f64().unwrap_or(0.0),
            v["max"].as_f64().unwrap_or(0.0),
            v["runs"]
        );
    }

    // Gains, from medians. The sub-batch gain also as the range of the per-repetition
    // ratios of the interleaved b = B / b = 1 pairs.
    let mut gains = Vec::new();
    println!(
        "\nGains from medians (paired: min..max of the per-repetition b=B/b=1 ratios of the interleaved runs).\n\
         batching = best B vs B=1, both b=1; sub-batch = b=B vs b=1 at the same B; combined = B=b={paper_b} vs B=b=1."
    );
    println!(
        "{:<6} {:>8} {:>7} {:>16} {:>10} {:>24} {:>24} {:>9}  paper",
        "app",
        "table",
        "B=1",
        "batching best B",
        format!("at B={paper_b}"),
        format!("sub-batch B={fixed}"),
        format!("sub-batch B={paper_b}"),
        "combined"
    );
    for c in &configs {
        let (app, t) = (c.app.as_str(), c.table);
        let med = |b: usize, s: usize| r.stat(&key(app, t, b, s, None)).map(|s| s.median);
        let paired = |b: usize| -> Option<(f64, f64)> {
            let x = r.results.get(&key(app, t, b, b, None))?;
            let y = r.results.get(&key(app, t, b, 1, None))?;
            let ratios: Vec<f64> = x
                .iter()
                .zip(y)
                .map(|(a, b)| (a / b - 1.0) * 100.0)
                .collect();
            let s = Stat::of(&ratios)?;
            Some((s.min, s.max))
        };
        let base = med(1, 1);
        let best_b1 = c
            .batches
            .iter()
            .filter_map(|&b| med(b, 1).map(|m| (b, m)))
            .fold(None, |a: Option<(usize, f64)>, x| match a {
                Some(a) if a.1 >= x.1 => Some(a),
                _ => Some(x),
            });
        let batching = pct(best_b1.map(|x| x.1), base);
        let batching_paper_b = pct(med(paper_b, 1), base);
        let sub_fixed = pct(med(fixed, fixed), med(fixed, 1));
        let sub_paper_b = pct(med(paper_b, paper_b), med(paper_b, 1));
        let combined = pct(med(paper_b, paper_b), base);
        let best_bb = c
            .batches
            .iter()
            .filter_map(|&b| med(b, b).map(|m| (b, m)))
            .fold(None, |a: Option<(usize, f64)>, x| match a {
                Some(a) if a.1 >= x.1 => Some(a),
                _ => Some(x),
            });
        let pf = paired(fixed);
        let pp = paired(paper_b);
        let fmt_pair = |p: Option<(f64, f64)>| {
            p.map_or(String::new(), |(a, b)| format!(" ({a:+.0}..{b:+.0})"))
        };
        let p = paper(app);
        println!(
            "{:<6} {:>8} {:>7} {:>16} {:>10} {:>24} {:>24} {:>9}  {}",
            app,
            if app == "crypto" {
                "-".to_string()
            } else {
                size_label(t)
            },
            base.map_or("n/a".into(), |x| format!("{x:.2}")),
            best_b1.map_or("n/a".into(), |(b, _)| format!(
                "B={b} {}",
                fmt_pct(batching)
            )),
            fmt_pct(batching_paper_b),
            format!("{}{}", fmt_pct(sub_fixed), fmt_pair(pf)),
            format!("{}{}", fmt_pct(sub_paper_b), fmt_pair(pp)),
            fmt_pct(combined),
            p.text
        );
        gains.push(serde_json::json!({
            "app": app, "table": t,
            "mpps_B1": base,
            "batching_best_B": best_b1.map(|x| x.0), "batching_best_mpps": best_b1.map(|x| x.1),
            "batching_gain_pct": batching,
            "batching_gain_pct_at_paper_B": batching_paper_b,
            "fixed_B": fixed, "paper_B": paper_b,
            "subbatch_gain_pct_at_fixed_B": sub_fixed,
            "subbatch_gain_pct_at_fixed_B_paired_min_max": pf.map(|(a, b)| [a, b]),
            "subbatch_gain_pct_at_paper_B": sub_paper_b,
            "subbatch_gain_pct_at_paper_B_paired_min_max": pp.map(|(a, b)| [a, b]),
            "combined_gain_pct_at_paper_B": combined,
            "best_bB_B": best_bb.map(|x| x.0), "best_bB_mpps": best_bb.map(|x| x.1),
            "subbatch_is_control": !c.sub_sweep(),
            "paper": {
                "batching_pct": p.batching, "subbatch_pct": p.subbatch,
                "combined_pct": p.combined, "text": p.text,
            },
        }));
    }
    let secs = r.started.elapsed().as_secs_f64();
    eprintln!("{} runs measured in {:.1} min", r.runs_done, secs / 60.0);

    if let Some(path) = &r.cli.json {
        let v = serde_json::json!({
            "command": std::env::args().collect::<Vec<_>>(),
            "packets": r.cli.packets, "reps": r.cli.reps, "l2_pregen": r.cli.l2_pregen,
            "statistic": "median of reps; min and max of reps; b=1 and b=B runs of one B interleaved, order alternating per rep",
            "runs_measured": r.runs_done, "seconds": secs,
            "points": rows, "gains": gains,
        });
        std::fs::write(path, serde_json::to_string_pretty(&v)? + "\n")?;
        eprintln!("wrote {}", path.display());
    }
    if let Some(prefix) = &r.cli.svg_prefix {
        let titles = [
            (
                "l2-B",
                "L2 switch: throughput vs batch size B (solid b=B, dashed b=1)",
                "vector size B",
            ),
            (
                "l2-b",
                &*format!("L2 switch: throughput vs sub-batch b at B={fixed}"),
                "sub-batch b",
            ),
            (
                "ipv4-B",
                "IPv4 forwarding: throughput vs B (solid b=B, dashed b=1)",
                "vector size B",
            ),
            (
                "ipv6-B",
                "IPv6 forwarding: throughput vs B (solid b=B, dashed b=1)",
                "vector size B",
            ),
            (
                "ndn-B",
                "NDN forwarding: throughput vs B (solid b=B, dashed b=1)",
                "vector size B",
            ),
            (
                "crypto-B",
                "L2 + AES-128-GCM (compute-bound): throughput vs B",
                "vector size B",
            ),
        ];
        for (name, title, xlabel) in titles {
            if let Some(l) = lines.get(name) {
                let path = PathBuf::from(format!("{prefix}-{name}.svg"));
                plot(&path, title, xlabel, l)?;
                eprintln!("wrote {}", path.display());
            }
        }
    }
    Ok(())
}

fn row(k: &Key, sweep: &str, policy: &str, s: Stat, runs: &[f64]) -> serde_json::Value {
    serde_json::json!({
        "app": k.app, "table": k.table, "sweep": sweep, "policy": policy,
        "B": k.batch, "b": k.sub,
        "prefetch": k.prefetch.map_or("default".to_string(), |p| p.to_string()),
        "mpps": s.median, "min": s.min, "max": s.max, "runs": runs,
    })
}
