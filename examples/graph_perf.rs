//! Dispatch overhead of pktvec on the topologies of DPDK's `graph_perf_autotest`, and, in
//! the same sitting, DPDK's own test on the same machine; prints both and their ratio.
//!
//! ```text
//! cargo run --release --example graph_perf                 # pktvec only
//! cargo run --release --example graph_perf -- --dpdk       # and dpdk-test (Debian: dpdk-dev)
//! cargo run --release --example graph_perf -- --dpdk --rounds 5 --json docs/results/graph-overhead.json --svg docs/results/graph-overhead.svg
//! cargo run --release --example graph_perf -- --from-json docs/results/graph-overhead.json   # re-print a saved run
//! ```
//!
//! Units (see docs/results/graph-overhead.md): cycles per walk = TSC cycles of one turn of
//! the main loop (all nodes once); cycles per node call = cycles per walk / node calls per
//! walk; cycles per packet per node = cycles per walk / node visits per walk. For
//! dpdk-test the walk count comes from its source node's objs/sec over its 1 s window.

mod perf_report;

use perf_report::{median, Series};
use pktvec::graph::clock;
use pktvec::perf::{build, topologies};
use serde::Serialize;
use std::process::{Command, Stdio};

#[derive(Serialize, serde::Deserialize, Clone, Debug)]
struct Row {
    topology: String,
    nodes_per_walk: usize,
    node_visits_per_walk: usize,
    pktvec_cycles_per_walk: f64,
    pktvec_cycles_per_node_call: f64,
    pktvec_cycles_per_packet_per_node: f64,
    pktvec_in_node_cycles_per_call: f64,
    dpdk_cycles_per_walk: Option<f64>,
    dpdk_cycles_per_node_call: Option<f64>,
    dpdk_cycles_per_packet_per_node: Option<f64>,
    dpdk_in_node_cycles_per_call: Option<f64>,
    ratio_node_call: Option<f64>,
}

/// Parses dpdk-test's graph_perf_autotest tables: per test case, the source's objs/sec
/// (millions) and the mean of the cycles/call column.
fn parse_dpdk(text: &str) -> Vec<(String, f64, f64)> {
    let mut out = Vec::new();
    let mut src_objs: Option<f64> = None;
    let mut cyc = Vec::new();
    for line in text.lines() {
        let cols: Vec<&str> = line.split('|').map(str::trim).collect();
        if cols.len() >= 8 && cols[1].starts_with("test_graph_perf_") {
            let objs_sec: f64 = cols[6].parse().unwrap_or(0.0);
            let cpc: f64 = cols[7].parse().unwrap_or(0.0);
            if cols[1].contains("source") && src_objs.is_none() {
                src_objs = Some(objs_sec);
            }
            cyc.push(cpc);
        }
        if let Some(rest) = line.split("TestCase [").nth(1) {
            if let Some(name) = rest.split(" : graph_").nth(1) {
                let name = name.split_whitespace().next().unwrap_or("").to_string();
                if let Some(s) = src_objs.take() {
                    let mean = cyc.iter().sum::<f64>() / cyc.len().max(1) as f64;
                    out.push((name, s, mean));
                }
                cyc.clear();
            }
        }
    }
    out
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flag = |f: &str| args.iter().any(|a| a == f);
    let value = |f: &str| {
        args.iter()
            .position(|a| a == f)
            .and_then(|i| args.get(i + 1).cloned())
    };
    let walks: u64 = value("--walks").map_or(Ok(200_000), |s| s.parse())?;
    let rounds: usize = value("--rounds").map_or(Ok(1), |s| s.parse())?;
    let reps = 7;
    let hz = clock::tsc_hz();
    println!(
        "TSC {:.3} GHz; {walks} walks x {reps} repetitions per topology (median)",
        hz / 1e9
    );

    // Each round measures pktvec, then (with --dpdk) runs dpdk-test; the table shows the
    // median over rounds of each, so both sides see the same machine conditions.
    let mut all: Vec<Vec<Row>> = Vec::new();
    if let Some(path) = value("--from-json") {
        // Re-print and re-plot a saved run without measuring again.
        all = serde_json::from_str(&std::fs::read_to_string(&path)?)?;
    }
    let rounds = if all.is_empty() { rounds } else { 0 };
    for round in 0..rounds {
        eprintln!("round {}/{rounds}", round + 1);
        let mut rows = measure_pktvec(walks, reps)?;
        if flag("--dpdk") {
            add_dpdk(&mut rows, hz)?;
        }
        all.push(rows);
    }
    let mut rows = all[0].clone();
    for (i, r) in rows.iter_mut().enumerate() {
        let med = |f: &dyn Fn(&Row) -> Option<f64>| -> Option<f64> {
            let v: Vec<f64> = all.iter().filter_map(|rs| f(&rs[i])).collect();
            (!v.is_empty()).then(|| median(v))
        };
        r.pktvec_cycles_per_walk = med(&|x| Some(x.pktvec_cycles_per_walk)).unwrap_or(0.0);
        r.pktvec_in_node_cycles_per_call =
            med(&|x| Some(x.pktvec_in_node_cycles_per_call)).unwrap_or(0.0);
        r.pktvec_cycles_per_node_call = r.pktvec_cycles_per_walk / r.nodes_per_walk as f64;
        r.pktvec_cycles_per_packet_per_node =
            r.pktvec_cycles_per_walk / r.node_visits_per_walk as f64;
        r.dpdk_cycles_per_walk = med(&|x| x.dpdk_cycles_per_walk);
        r.dpdk_in_node_cycles_per_call = med(&|x| x.dpdk_in_node_cycles_per_call);
        r.dpdk_cycles_per_node_call = r.dpdk_cycles_per_walk.map(|c| c / r.nodes_per_walk as f64);
        r.dpdk_cycles_per_packet_per_node = r
            .dpdk_cycles_per_walk
            .map(|c| c / r.node_visits_per_walk as f64);
        r.ratio_node_call = r.dpdk_cycles_per_walk.map(|d| r.pktvec_cycles_per_walk / d);
    }
    print_table(&rows, all.len());

    if let Some(path) = value("--json").filter(|_| rounds > 0) {
        std::fs::write(&path, serde_json::to_string_pretty(&all)?)?;
        eprintln!("wrote {path} (every round)");
    }
    if let Some(path) = value("--svg") {
        plot(&rows, &path)?;
        eprintln!("wrote {path}");
    }
    Ok(())
}

fn measure_pktvec(walks: u64, reps: usize) -> Result<Vec<Row>, Box<dyn std::error::Error>> {
    let mut rows = Vec::new();
    for spec in topologies() {
        let mut g = build(&spec)?;
        for _ in 0..walks / 10 {
            g.run_once();
        }
        let mut per_walk = Vec::new();
        for _ in 0..reps {
            g.reset_stats();
            let t0 = clock::now();
            for _ in 0..walks {
                g.run_once();
            }
            per_walk.push((clock::now() - t0) as f64 / walks as f64);
        }
        let rt = g.runtime();
        let in_node =
            rt.total_cycles() as f64 / rt.rows.iter().map(|r| r.calls).sum::<u64>() as f64;
        let cpw = median(per_walk);
        rows.push(Row {
            topology: spec.name.to_string(),
            nodes_per_walk: spec.nodes_per_walk,
            node_visits_per_walk: spec.node_visits_per_walk,
            pktvec_cycles_per_walk: cpw,
            pktvec_cycles_per_node_call: cpw / spec.nodes_per_walk as f64,
            pktvec_cycles_per_packet_per_node: cpw / spec.node_visits_per_walk as f64,
            pktvec_in_node_cycles_per_call: in_node,
            dpdk_cycles_per_walk: None,
            dpdk_cycles_per_node_call: None,
            dpdk_cycles_per_packet_per_node: None,
            dpdk_in_node_cycles_per_call: None,
            ratio_node_call: None,
        });
        eprintln!("  {:<32} {:>8.1} cycles/walk", spec.name, cpw);
    }
    Ok(rows)
}

fn add_dpdk(rows: &mut [Row], hz: f64) -> Result<(), Box<dyn std::error::Error>> {
    {
        eprintln!(
            "running: echo graph_perf_autotest | dpdk-test --no-huge -m 2048 --no-pci -l 0-1"
        );
        let mut child = Command::new("dpdk-test")
            .args([
                "--no-huge",
                "-m",
                "2048",
                "--no-pci",
                "-l",
                "0-1",
                "--log-level=1",
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("dpdk-test: {e} (Debian package dpdk-dev)"))?;
        {
            use std::io::Write;
            let mut stdin = child.stdin.take().ok_or("no stdin")?;
            stdin.write_all(b"graph_perf_autotest\nquit\n")?;
        }
        let out = child.wait_with_output()?;
        let text = String::from_utf8_lossy(&out.stdout);
        let parsed = parse_dpdk(&text);
        if parsed.is_empty() {
            return Err(format!("could not parse dpdk-test output:\n{text}").into());
        }
        for (name, src_objs_m, in_node) in parsed {
            let Some(row) = rows.iter_mut().find(|r| r.topology == name) else {
                continue;
            };
            let burst = if name.ends_with("brst_one") {
                1.0
            } else {
                256.0
            };
            // DPDK's window is one timer second = `hz` TSC cycles.
            let walks_in_window = src_objs_m * 1e6 / burst;
            let cpw = hz / walks_in_window;
            row.dpdk_cycles_per_walk = Some(cpw);
            row.dpdk_cycles_per_node_call = Some(cpw / row.nodes_per_walk as f64);
            row.dpdk_cycles_per_packet_per_node = Some(cpw / row.node_visits_per_walk as f64);
            row.dpdk_in_node_cycles_per_call = Some(in_node);
            row.ratio_node_call = Some(row.pktvec_cycles_per_walk / cpw);
        }
    }
    Ok(())
}

fn print_table(rows: &[Row], rounds: usize) {
    println!();
    println!("median of {rounds} round(s)");
    println!(
        "{:<32} {:>6} {:>12} {:>12} {:>12} {:>12} {:>12} {:>12} {:>8}",
        "topology",
        "nodes",
        "pktvec c/walk",
        "pktvec c/call",
        "pktvec c/pkt/n",
        "dpdk c/walk",
        "dpdk c/call",
        "dpdk c/pkt/n",
        "ratio"
    );
    let opt = |x: Option<f64>, p: usize| x.map_or("-".to_string(), |v| format!("{v:.p$}"));
    for r in rows {
        println!(
            "{:<32} {:>6} {:>12.1} {:>12.1} {:>12.3} {:>12} {:>12} {:>12} {:>8}",
            r.topology,
            r.nodes_per_walk,
            r.pktvec_cycles_per_walk,
            r.pktvec_cycles_per_node_call,
            r.pktvec_cycles_per_packet_per_node,
            opt(r.dpdk_cycles_per_walk, 1),
            opt(r.dpdk_cycles_per_node_call, 1),
            opt(r.dpdk_cycles_per_packet_per_node, 3),
            opt(r.ratio_node_call, 2),
        );
    }
    println!("ratio = pktvec cycles per walk / dpdk cycles per walk (lower is better for pktvec)");
}

fn plot(rows: &[Row], path: &str) -> Result<(), Box<dyn std::error::Error>> {
    perf_report::BarChart {
        caption: "Cycles per node call (lower is better)".into(),
        y_desc: "TSC cycles".into(),
        size: (1100, 480),
        groups: rows
            .iter()
            .map(|r| r.topology.trim_end_matches("_1snk").replace("_1src", ""))
            .collect(),
        series: vec![
            Series::of("pktvec", (0, 0, 255), rows, |r| {
                Some(r.pktvec_cycles_per_node_call)
            }),
            Series::of(
                "DPDK rte_graph (dpdk-test, stats on)",
                (255, 0, 0),
                rows,
                |r| r.dpdk_cycles_per_node_call,
            ),
        ],
        log_from: None,
        value_labels: false,
        headroom: 1.15,
        legend_upper_right: false,
    }
    .write_svg(path)
}
