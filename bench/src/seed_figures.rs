//! `seed-figures`: seed paper `000_*` Figures 4–6 on pktvec's forwarders: throughput
//! against the vector (batch) size B with sub-batch b = 1 and b = B, and against b at
//! B = 256 (L2), with the paper's reported gains as the anchors.
//!
//! Each application's graph is built once per table (`forwarders::graphs`) and B and b are
//! switched between timed chunks on it. For each B the b = 1 and b = B chunks are
//! interleaved (the order reversed every other round), the points of the b sweep likewise;
//! a point is the median Mpps of its chunks, and gains are ratios of medians (the paired
//! per-round ratios' range is kept in the data file).
//!
//! The paper's gains (Fig. 4, B = b = 32): L2 +20% from batching and another +23% from
//! sub-batching; IPv4 +55% and IPv6 +57% from both together; NDN +21% from sub-batching.
//! A headline row sets pktvec's speedup factor (1 + gain) against the paper's at one table
//! beyond the caches per application.

use std::collections::BTreeMap;

use pktvec::graph::Graph;
use pktvec::nodes::apps::l3fwd::{L3fwd, L3fwdConfig};
use serde_json::json;

use crate::forwarders::graphs::{self, interleave, median, plot_lines, spread, Chunk, Setting};
use crate::sitting::{Common, Headline, Sitting};

/// Options of `seed-figures`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    common: Common,
    /// The whole sweep (every B and b from 1 to 256, three or four tables per application,
    /// L2 up to 16Mi stations): about 10 minutes
    #[arg(long)]
    full: bool,
    /// Timed chunks per point; default 4, 2 with --quick
    #[arg(long)]
    reps: Option<usize>,
    /// Seconds per chunk; default 0.4 (0.5 with --full, 0.1 with --quick)
    #[arg(long)]
    chunk_secs: Option<f64>,
}

/// The B (and b) the paper's Fig. 4 gains are stated at.
const PAPER_B: usize = 32;
/// The B of the b sweep (Fig. 6).
const FIXED_B: usize = 256;

/// One application's tables: (label, size) and the representative one for the headline.
struct Plan {
    app: &'static str,
    tables: Vec<usize>,
    headline_table: usize,
}

/// Builds the graph of `app` at table size `n`.
fn build(app: &str, n: usize, l2_pregen: usize) -> Result<Graph, Box<dyn std::error::Error>> {
    let pregen = 65_536;
    match app {
        "l2" => graphs::l2fwd(&graphs::l2_app(n)?, l2_pregen.min(n.max(pregen))),
        // The other family's table is kept small: its traffic share is 0.
        "ipv4" | "ipv6" => {
            let (v4, v6, profile) = if app == "ipv4" {
                (n, 1000, graphs::L3_IPV4)
            } else {
                (1000, n, graphs::L3_IPV6)
            };
            let l3 = L3fwd::new(L3fwdConfig {
                route_count: v4,
                route6_count: v6,
                // The graph's b for every lookup, as the sweep sets it.
                ip4_lookup_sub_batch: None,
                ..L3fwdConfig::default()
            })?;
            graphs::l3fwd(&l3, profile, pregen)
        }
        "ndn" => graphs::ndnfwd(&graphs::ndn_app(n)?, pregen),
        _ => graphs::cryptofwd(pregen),
    }
}

/// The paper's figure for an application's headline: (what, seed factor).
fn paper(app: &str) -> Option<(&'static str, f64)> {
    match app {
        "l2" => Some(("sub-batching b = 32 vs 1 at B = 32", 1.23)),
        "ipv4" => Some(("B = b = 32 vs B = b = 1", 1.55)),
        "ipv6" => Some(("B = b = 32 vs B = b = 1", 1.57)),
        "ndn" => Some(("sub-batching b = 32 vs 1 at B = 32", 1.21)),
        _ => None,
    }
}

fn size_label(n: usize) -> String {
    if n >= 1 << 20 && n.is_multiple_of(1 << 20) {
        format!("{}Mi", n >> 20)
    } else if n >= 1_000_000 && n.is_multiple_of(1_000_000) {
        format!("{}M", n / 1_000_000)
    } else if n >= 1 << 10 && n.is_multiple_of(1 << 10) {
        format!("{}Ki", n >> 10)
    } else if n >= 1000 && n.is_multiple_of(1000) {
        format!("{}k", n / 1000)
    } else {
        n.to_string()
    }
}

fn table_label(app: &str, n: usize) -> String {
    match app {
        "l2" => format!("{} stations", size_label(n)),
        "ipv4" | "ipv6" => format!("{} routes", size_label(n)),
        "ndn" => format!("{} names", size_label(n)),
        _ => "AES-128-GCM".into(),
    }
}

/// Runs the measurement.
pub fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let sitting = Sitting::begin(
        "seed-figures",
        "Batching and sub-batching gains vs the paper's (Figs. 4-6)",
        "forwarders.md",
        &args.common,
    )?;
    let quick = sitting.quick();
    let full = args.full && !quick;
    let reps = args.reps.unwrap_or(if quick { 2 } else { 4 }).max(1);
    let secs = args.chunk_secs.unwrap_or(if quick {
        0.1
    } else if full {
        0.5
    } else {
        0.4
    });
    let batches: Vec<usize> = if full {
        vec![1, 2, 4, 8, 16, 32, 64, 128, 256]
    } else if quick {
        vec![1, 32, 256]
    } else {
        vec![1, 4, 16, 32, 64, 256]
    };
    let plans = if full {
        vec![
            Plan {
                app: "l2",
                tables: vec![256, 1 << 16, 1 << 20, 1 << 24],
                headline_table: 1 << 20,
            },
            Plan {
                app: "ipv4",
                tables: vec![10_000, 500_000, 2_000_000],
                headline_table: 500_000,
            },
            Plan {
                app: "ipv6",
                tables: vec![20_000, 200_000, 1_000_000],
                headline_table: 200_000,
            },
            Plan {
                app: "ndn",
                tables: vec![10_000, 100_000, 1_000_000],
                headline_table: 1_000_000,
            },
            Plan {
                app: "crypto",
                tables: vec![0],
                headline_table: 0,
            },
        ]
    } else if quick {
        vec![
            Plan {
                app: "l2",
                tables: vec![1 << 18],
                headline_table: 1 << 18,
            },
            Plan {
                app: "ipv4",
                tables: vec![200_000],
                headline_table: 200_000,
            },
            Plan {
                app: "ipv6",
                tables: vec![100_000],
                headline_table: 100_000,
            },
            Plan {
                app: "ndn",
                tables: vec![200_000],
                headline_table: 200_000,
            },
            Plan {
                app: "crypto",
                tables: vec![0],
                headline_table: 0,
            },
        ]
    } else {
        vec![
            Plan {
                app: "l2",
                tables: vec![1 << 20],
                headline_table: 1 << 20,
            },
            Plan {
                app: "ipv4",
                tables: vec![500_000],
                headline_table: 500_000,
            },
            Plan {
                app: "ipv6",
                tables: vec![200_000],
                headline_table: 200_000,
            },
            Plan {
                app: "ndn",
                tables: vec![1_000_000],
                headline_table: 1_000_000,
            },
            Plan {
                app: "crypto",
                tables: vec![0],
                headline_table: 0,
            },
        ]
    };
    let l2_pregen = if quick { 1 << 16 } else { 1 << 20 };

    // (app, table, setting) → Mpps of each chunk, and of the b sweep separately.
    let mut pts: BTreeMap<(String, usize, Setting), Vec<f64>> = BTreeMap::new();
    let mut bsweep: BTreeMap<(usize, usize), Vec<f64>> = BTreeMap::new();
    let mut setups = Vec::new();
    for p in &plans {
        for &t in &p.tables {
            let t0 = std::time::Instant::now();
            let mut g = build(p.app, t, l2_pregen)?;
            let setup = t0.elapsed().as_secs_f64();
            setups.push(json!({"app": p.app, "table": t, "setup_seconds": setup}));
            let mpps = |c: &[Chunk]| c.iter().map(Chunk::mpps).collect::<Vec<f64>>();
            for &b in &batches {
                let mut group = vec![Setting::new(b, 1)];
                if p.app != "crypto" && b > 1 {
                    group.push(Setting::new(b, b));
                }
                let chunks = interleave(&mut g, &group, reps, secs)?;
                for (s, c) in group.iter().zip(&chunks) {
                    pts.insert((p.app.into(), t, *s), mpps(c));
                }
            }
            if p.app == "l2" {
                let group: Vec<Setting> =
                    batches.iter().map(|&b| Setting::new(FIXED_B, b)).collect();
                let chunks = interleave(&mut g, &group, reps, secs)?;
                for (s, c) in group.iter().zip(&chunks) {
                    bsweep.insert((t, s.sub), mpps(c));
                }
            }
            let row = |sub1: bool| {
                batches
                    .iter()
                    .map(|&b| {
                        let s = Setting::new(b, if sub1 { 1 } else { b });
                        pts.get(&(p.app.to_string(), t, s))
                            .map_or("     -".into(), |v| format!("{:6.2}", median(v)))
                    })
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            println!(
                "{:<6} {:>14} b=1 {}  (setup {setup:.1} s)",
                p.app,
                table_label(p.app, t),
                row(true)
            );
            if p.app != "crypto" {
                println!(
                    "{:<6} {:>14} b=B {}",
                    p.app,
                    table_label(p.app, t),
                    row(false)
                );
            }
        }
    }
    println!("B: {batches:?} (Mpps, median of {reps} chunks of {secs} s)");

    let med = |app: &str, t: usize, b: usize, sub: usize| {
        pts.get(&(app.to_string(), t, Setting::new(b, sub)))
            .map(|v| median(v))
    };
    // Per-round ratios of two interleaved points: [median, min, max].
    let paired = |app: &str, t: usize, x: Setting, y: Setting| {
        let (a, b) = (
            pts.get(&(app.to_string(), t, x))?,
            pts.get(&(app.to_string(), t, y))?,
        );
        let r: Vec<f64> = a.iter().zip(b).map(|(a, b)| a / b).collect();
        Some(spread(&r))
    };
    let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    };

    let mut rows = Vec::new();
    let mut gains = Vec::new();
    for p in &plans {
        for &t in &p.tables {
            let app = p.app;
            let base = med(app, t, 1, 1);
            let batching = ratio(med(app, t, PAPER_B, 1), base);
            let sub = ratio(med(app, t, PAPER_B, PAPER_B), med(app, t, PAPER_B, 1));
            let sub_fixed = ratio(med(app, t, FIXED_B, FIXED_B), med(app, t, FIXED_B, 1));
            let combined = ratio(med(app, t, PAPER_B, PAPER_B), base);
            let sb = |b| paired(app, t, Setting::new(b, b), Setting::new(b, 1));
            gains.push(json!({
                "app": app, "table": t, "mpps_B1": base,
                "batching_B32_b1": batching, "subbatch_B32": sub, "subbatch_B32_paired": sb(PAPER_B),
                "subbatch_B256": sub_fixed, "subbatch_B256_paired": sb(FIXED_B),
                "combined_B32": combined,
            }));
            if t != p.headline_table {
                continue;
            }
            let case = |what: &str| format!("{app} {}: {what}", table_label(app, t));
            if app == "l2" {
                if let Some(x) = batching {
                    rows.push(
                        Headline::rate(
                            &case("batching B = 32 vs 1 (b = 1)"),
                            "× speedup",
                            x,
                            "paper's Fig. 4: +20%",
                            1.20,
                        )
                        .target(1.0),
                    );
                }
            }
            if let Some((what, seed)) = paper(app) {
                let x = if what.starts_with("sub") {
                    sub
                } else {
                    combined
                };
                if let Some(x) = x {
                    let anchor = format!("paper's Fig. 4: +{:.0}%", (seed - 1.0) * 100.0);
                    rows.push(
                        Headline::rate(&case(what), "× speedup", x, &anchor, seed).target(1.0),
                    );
                }
            }
        }
    }

    // Curves: Mpps vs B (b = 1 and b = B) per application, Mpps vs b at B = 256 (L2).
    for p in &plans {
        let Some(path) = sitting.plot_path(&format!("{}-B", p.app)) else {
            continue;
        };
        let mut series = Vec::new();
        for &t in &p.tables {
            for (label, sub1) in [("b=1", true), ("b=B", false)] {
                let line: Vec<(f64, f64)> = batches
                    .iter()
                    .filter_map(|&b| {
                        med(p.app, t, b, if sub1 { 1 } else { b }).map(|m| (b as f64, m))
                    })
                    .collect();
                if p.app == "crypto" && !sub1 {
                    continue;
                }
                series.push((format!("{} {label}", table_label(p.app, t)), line));
            }
        }
        let title = format!("{}: Mpps vs vector size B (b = 1 and b = B)", p.app);
        plot_lines(&path, &title, "vector size B", "Mpps (median)", &series)?;
    }
    if let Some(path) = sitting.plot_path("l2-b") {
        let tables: Vec<usize> = plans
            .iter()
            .filter(|p| p.app == "l2")
            .flat_map(|p| p.tables.clone())
            .collect();
        let series: Vec<(String, Vec<(f64, f64)>)> = tables
            .iter()
            .map(|&t| {
                let line = batches
                    .iter()
                    .filter_map(|&b| bsweep.get(&(t, b)).map(|v| (b as f64, median(v))))
                    .collect();
                (table_label("l2", t), line)
            })
            .collect();
        let title = format!("l2: Mpps vs sub-batch b at B = {FIXED_B}");
        plot_lines(&path, &title, "sub-batch b", "Mpps (median)", &series)?;
    }

    let points: Vec<_> = pts
        .iter()
        .map(|((app, t, s), v)| json!({"app": app, "table": t, "B": s.vector, "b": s.sub, "mpps": spread(v), "runs": v}))
        .collect();
    let b_points: Vec<_> = bsweep
        .iter()
        .map(|((t, b), v)| json!({"app": "l2", "table": t, "B": FIXED_B, "b": b, "mpps": spread(v), "runs": v}))
        .collect();
    let detail = json!({
        "full": full, "reps": reps, "chunk_seconds": secs, "batches": batches, "l2_pregen": l2_pregen,
        "paper_B": PAPER_B, "fixed_B": FIXED_B,
        "statistic": "median Mpps (TSC) of timed chunks on one graph per table; b = 1 and b = B of one B interleaved",
        "setups": setups, "points": points, "b_sweep": b_points, "gains": gains,
        "paper": {"l2": "batching +20%, sub-batching another +23% (B = 32, 16M entries)",
                  "ipv4": "+55% (B = b = 32, 527,961 routes)", "ipv6": "+57% (B = b = 32, 200,000 routes)",
                  "ndn": "batching +20%, sub-batching another +21% (B = 32)",
                  "crypto": "\"much smaller\" (compute-bound; no figure)"},
    });
    sitting.finish(rows, detail)?;
    Ok(())
}
