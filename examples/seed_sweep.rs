//! Seed-paper Figures 4–6 for pktvec: runs the forwarder examples (`l2fwd`, `l3fwd`,
//! `ndnfwd`) as child processes with `--json`, sweeping the vector (batch) size B with
//! sub-batch b = 1 and b = B, and the sub-batch b at a fixed B, for several table sizes.
//! Each point is the best of `--reps` runs. Prints a table, optionally writes all points as
//! JSON (`--json FILE`) and SVG line plots (`--svg-prefix P` → `P-l2-B.svg`, `P-l2-b.svg`,
//! `P-apps-B.svg`).
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
    /// Runs per point (the best is kept).
    #[arg(long, default_value_t = 3)]
    reps: usize,
    /// L2 table sizes.
    #[arg(long, value_delimiter = ',', default_values_t = [256usize, 1 << 20, 1 << 24])]
    l2_sizes: Vec<usize>,
    /// Batch sizes B (and sub-batch sizes b of the b sweep).
    #[arg(long, value_delimiter = ',', default_values_t = [1usize, 2, 4, 8, 16, 32, 64, 128, 256])]
    batches: Vec<usize>,
    /// Reduced B/b list for L2 tables of at least `--big-table` entries (slow to fill).
    #[arg(long, value_delimiter = ',', default_values_t = [1usize, 4, 16, 32, 64, 256])]
    big_batches: Vec<usize>,
    /// Tables at least this large use `--big-batches`.
    #[arg(long, default_value_t = 1 << 24)]
    big_table: usize,
    /// Fixed B of the b sweep.
    #[arg(long, default_value_t = 256)]
    fixed_b: usize,
    /// Pregenerated packets of l2fwd (distinct destinations in the replayed traffic).
    #[arg(long, default_value_t = 1 << 20)]
    l2_pregen: usize,
    /// IPv4 routes of l3fwd.
    #[arg(long, default_value_t = 500_000)]
    routes: usize,
    /// IPv6 routes of l3fwd.
    #[arg(long, default_value_t = 200_000)]
    routes6: usize,
    /// Names of ndnfwd.
    #[arg(long, default_value_t = 100_000)]
    names: usize,
    /// Skip the l3fwd/ndnfwd sweeps.
    #[arg(long)]
    no_apps: bool,
    /// Also run b = 1 and b = B with `--prefetch 0` at these B (empty: none).
    #[arg(long, value_delimiter = ',', default_values_t = [32usize, 256])]
    prefetch_off_at: Vec<usize>,
    /// Only the L2 b sweep (at `--fixed-b`): no B sweep, no prefetch-off points.
    #[arg(long)]
    only_b_sweep: bool,
    /// Load the points of an earlier `--json` file instead of measuring them (re-plot /
    /// re-print; points missing from it are measured).
    #[arg(long)]
    from_json: Option<PathBuf>,
    /// Write all points as JSON here.
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

struct Runner {
    cli: Cli,
    results: BTreeMap<Key, Vec<f64>>,
    ipv6_profile: PathBuf,
    started: Instant,
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
        let bin = match k.app.as_str() {
            "l2" => {
                a.extend([
                    "--table-size".into(),
                    k.table.to_string(),
                    "--pregen".into(),
                    self.cli.l2_pregen.to_string(),
                ]);
                "l2fwd"
            }
            "ipv4" => {
                a.extend(["--route-count".into(), k.table.to_string()]);
                "l3fwd"
            }
            "ipv6" => {
                a.extend([
                    "--route6-count".into(),
                    k.table.to_string(),
                    "--profile".into(),
                    self.ipv6_profile.display().to_string(),
                ]);
                "l3fwd"
            }
            _ => {
                a.extend(["--name-count".into(), k.table.to_string()]);
                "ndnfwd"
            }
        };
        (bin.to_string(), a)
    }

    /// Best Mpps of the point, measuring it if not done yet.
    fn measure(&mut self, k: &Key) -> Result<f64, Box<dyn std::error::Error>> {
        if let Some(v) = self.results.get(k) {
            return Ok(best(v));
        }
        let (bin, args) = self.args(k);
        let path = self.cli.bin_dir.join(&bin);
        let mut runs = Vec::new();
        for _ in 0..self.cli.reps {
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
            let mpps = v["mpps"]
                .as_f64()
                .ok_or_else(|| format!("{bin}: no \"mpps\" in the JSON output"))?;
            runs.push(mpps);
        }
        eprintln!(
            "[{:6.1} s] {:4} table={:<9} B={:<4} b={:<4} prefetch={:<7} best {:7.3} Mpps  runs {:?}",
            self.started.elapsed().as_secs_f64(),
            k.app,
            k.table,
            k.batch,
            k.sub,
            k.prefetch.map_or("default".to_string(), |p| p.to_string()),
            best(&runs),
            runs.iter().map(|x| (x * 1000.0).round() / 1000.0).collect::<Vec<_>>()
        );
        let b = best(&runs);
        self.results.insert(k.clone(), runs);
        Ok(b)
    }
}

fn best(v: &[f64]) -> f64 {
    v.iter().cloned().fold(0.0, f64::max)
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

/// One plotted line: label and (x, Mpps) points.
type Line = (String, Vec<(usize, f64)>);

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
        .flat_map(|l| l.1.iter().map(|p| p.1))
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
        .y_desc("Mpps (best of runs)")
        .x_labels(xmax.log2() as usize + 1)
        .x_label_formatter(&|x| format!("{}", 2f64.powf(x.round()) as u64))
        .draw()?;
    for (i, (label, pts)) in lines.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let dashed = label.contains("b=1");
        let data: Vec<(f64, f64)> = pts.iter().map(|&(x, y)| ((x as f64).log2(), y)).collect();
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
        format!("{}M", n >> 20)
    } else if n >= 1000 && n % 1000 == 0 {
        format!("{}k", n / 1000)
    } else {
        n.to_string()
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let cli = Cli::parse();
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
            results.insert(k, runs);
        }
    }
    let mut r = Runner {
        cli,
        results,
        ipv6_profile: ipv6_profile.clone(),
        started: Instant::now(),
    };
    let res = sweep(&mut r);
    let _ = std::fs::remove_file(&ipv6_profile);
    res
}

fn sweep(r: &mut Runner) -> Result<(), Box<dyn std::error::Error>> {
    let mut l2_b_lines: Vec<Line> = Vec::new();
    let mut l2_sub_lines: Vec<Line> = Vec::new();
    let mut app_lines: Vec<Line> = Vec::new();
    let mut rows: Vec<serde_json::Value> = Vec::new();
    let fixed = r.cli.fixed_b;

    // The configurations: (app, table, B list).
    let mut configs: Vec<(String, usize, Vec<usize>)> = Vec::new();
    for &s in &r.cli.l2_sizes.clone() {
        let bs = if s >= r.cli.big_table {
            r.cli.big_batches.clone()
        } else {
            r.cli.batches.clone()
        };
        configs.push(("l2".into(), s, bs));
    }
    if !r.cli.no_apps {
        let bs = r.cli.batches.clone();
        configs.push(("ipv4".into(), r.cli.routes, bs.clone()));
        configs.push(("ipv6".into(), r.cli.routes6, bs.clone()));
        configs.push(("ndn".into(), r.cli.names, bs));
    }

    for (app, table, bs) in &configs {
        let name = format!("{app} {}", size_label(*table));
        // Figure 5: B sweep, b = 1 and b = B.
        let policies: &[(&str, bool)] = if r.cli.only_b_sweep {
            &[]
        } else {
            &[("b=1", true), ("b=B", false)]
        };
        for &(policy, one) in policies {
            let mut pts = Vec::new();
            for &b in bs {
                let k = key(app, *table, b, if one { 1 } else { b }, None);
                let m = r.measure(&k)?;
                pts.push((b, m));
                rows.push(row(&k, "B-sweep", policy, m, &r.results[&k]));
            }
            let line = (format!("{name} {policy}"), pts);
            if app == "l2" {
                l2_b_lines.push(line);
            } else {
                app_lines.push(line);
            }
        }
        // Figure 6: b sweep at fixed B (L2 only, as in the paper).
        if app == "l2" {
            let mut pts = Vec::new();
            for &b in bs.iter().filter(|&&b| b <= fixed) {
                let k = key(app, *table, fixed, b, None);
                let m = r.measure(&k)?;
                pts.push((b, m));
                rows.push(row(&k, "b-sweep", "b", m, &r.results[&k]));
            }
            l2_sub_lines.push((format!("{name} B={fixed}"), pts));
        }
        // Prefetch off.
        let off = if r.cli.only_b_sweep {
            Vec::new()
        } else {
            r.cli.prefetch_off_at.clone()
        };
        for &b in &off {
            for sub in [1, b] {
                let k = key(app, *table, b, sub, Some(0));
                let m = r.measure(&k)?;
                let policy = if sub == 1 { "b=1" } else { "b=B" };
                rows.push(row(&k, "prefetch0", policy, m, &r.results[&k]));
            }
        }
    }

    // Table.
    println!(
        "\n{:<5} {:>9} {:<10} {:<6} {:>5} {:>5} {:>8} {:>9}  runs",
        "app", "table", "sweep", "policy", "B", "b", "prefetch", "best Mpps"
    );
    for v in &rows {
        println!(
            "{:<5} {:>9} {:<10} {:<6} {:>5} {:>5} {:>8} {:>9.3}  {}",
            v["app"].as_str().unwrap_or(""),
            v["table"],
            v["sweep"].as_str().unwrap_or(""),
            v["policy"].as_str().unwrap_or(""),
            v["B"],
            v["b"],
            v["prefetch"].as_str().unwrap_or(""),
            v["mpps"].as_f64().unwrap_or(0.0),
            v["runs"]
        );
    }

    // Gains.
    println!("\nGains (best B vs B=1 at b=1; b=B vs b=1 at B={fixed}; b=B vs b=1 at B=32):");
    let mut gains = Vec::new();
    for (app, table, bs) in &configs {
        let get = |b: usize, s: usize| {
            r.results
                .get(&key(app, *table, b, s, None))
                .map(|v| best(v))
        };
        let base = get(1, 1).unwrap_or(f64::NAN);
        let (best_b, best_b1) = bs
            .iter()
            .map(|&b| (b, get(b, 1).unwrap_or(0.0)))
            .fold((1, 0.0), |a, x| if x.1 > a.1 { x } else { a });
        let (best_bb, best_bbm) = bs
            .iter()
            .map(|&b| (b, get(b, b).unwrap_or(0.0)))
            .fold((1, 0.0), |a, x| if x.1 > a.1 { x } else { a });
        let pct = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) => Some((a / b - 1.0) * 100.0),
            _ => None,
        };
        let sub_fixed = pct(get(fixed, fixed), get(fixed, 1));
        let sub_32 = pct(get(32, 32), get(32, 1));
        let overall = (best_bbm / base - 1.0) * 100.0;
        let batching = (best_b1 / base - 1.0) * 100.0;
        println!(
            "  {app:<4} {:>9}: B=1 {base:.2} Mpps; batching (b=1) best B={best_b} {best_b1:.2} Mpps {batching:+.1}%; \
             b=B vs b=1 at B={fixed} {}; at B=32 {}; best b=B is B={best_bb} {best_bbm:.2} Mpps, {overall:+.1}% vs B=1",
            size_label(*table),
            sub_fixed.map_or("n/a".into(), |p| format!("{p:+.1}%")),
            sub_32.map_or("n/a".into(), |p| format!("{p:+.1}%")),
        );
        gains.push(serde_json::json!({
            "app": app, "table": table, "mpps_b1_B1": base,
            "batching_best_B": best_b, "batching_best_mpps": best_b1, "batching_gain_pct": batching,
            "subbatch_gain_pct_at_fixed_B": sub_fixed, "fixed_B": fixed,
            "subbatch_gain_pct_at_B32": sub_32,
            "best_bB_B": best_bb, "best_bB_mpps": best_bbm, "overall_gain_pct": overall,
        }));
    }

    if let Some(path) = &r.cli.json {
        let v = serde_json::json!({
            "packets": r.cli.packets, "reps": r.cli.reps, "l2_pregen": r.cli.l2_pregen,
            "points": rows, "gains": gains,
        });
        std::fs::write(path, serde_json::to_string_pretty(&v)?)?;
        eprintln!("wrote {}", path.display());
    }
    if let Some(prefix) = &r.cli.svg_prefix {
        let p = |s: &str| PathBuf::from(format!("{prefix}-{s}.svg"));
        if !l2_b_lines.is_empty() {
            plot(
                &p("l2-B"),
                "L2 switch: throughput vs batch size B (solid b=B, dashed b=1)",
                "vector size B",
                &l2_b_lines,
            )?;
        }
        plot(
            &p("l2-b"),
            &format!("L2 switch: throughput vs sub-batch b at B={fixed}"),
            "sub-batch b",
            &l2_sub_lines,
        )?;
        if !app_lines.is_empty() {
            plot(
                &p("apps-B"),
                "IPv4 / IPv6 / NDN: throughput vs B (solid b=B, dashed b=1)",
                "vector size B",
                &app_lines,
            )?;
        }
        eprintln!("wrote {prefix}-*.svg");
    }
    Ok(())
}

fn row(k: &Key, sweep: &str, policy: &str, mpps: f64, runs: &[f64]) -> serde_json::Value {
    serde_json::json!({
        "app": k.app, "table": k.table, "sweep": sweep, "policy": policy,
        "B": k.batch, "b": k.sub,
        "prefetch": k.prefetch.map_or("default".to_string(), |p| p.to_string()),
        "mpps": mpps, "runs": runs,
    })
}
