//! `dispatch`: pktvec's dispatch cost on the topologies of DPDK's `graph_perf_autotest`
//! (`pktvec::perf` rebuilds them), against DPDK's own test run in the same sitting:
//! `echo graph_perf_autotest | dpdk-test --no-huge -m 2048 --no-pci -l 0-1`.
//!
//! Units: cycles per walk = TSC cycles of one turn of the main loop (every node called
//! once); cycles per node call = cycles per walk / node calls per walk; cycles per packet
//! per node = cycles per walk / node visits (packets over all node calls) per walk. For
//! dpdk-test, walks = the source's `objs/sec` / burst over its one-timer-second window.
//! Each round measures pktvec, then runs dpdk-test; the figures are medians over rounds.
//! pktvec is also timed with its per-call clock read off, and the cost of one read of the
//! clock on this host is measured, so the table shows what timing the nodes costs.

use pktvec::graph::clock;
use pktvec::perf::{build_with_clock, topologies};
use serde::Serialize;

use crate::forwarders::graphs::median;
use crate::sitting::{Common, Headline, Sitting};

/// Options of `dispatch`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    common: Common,
    /// Rounds (pktvec, then dpdk-test, each round); default 5, 1 with --quick. dpdk-test's
    /// autotest takes about 10 s a round whatever is asked of it
    #[arg(long)]
    rounds: Option<usize>,
    /// Walks (turns of the main loop) per timed repetition; default 200,000, 50,000 with --quick
    #[arg(long)]
    walks: Option<u64>,
    /// Measure pktvec only, without dpdk-test (no headline rows then)
    #[arg(long)]
    no_dpdk: bool,
}

/// The anchor's name in the headline rows.
const ANCHOR: &str = "rte_graph (dpdk-test)";

/// One topology's figures of one round.
#[derive(Serialize, Clone, Debug)]
struct Round {
    pktvec_cycles_per_walk: f64,
    /// The same graph with the dispatcher's clock read off (`node_cycles: false`).
    pktvec_no_clock_cycles_per_walk: f64,
    pktvec_in_node_cycles_per_call: f64,
    dpdk_cycles_per_walk: Option<f64>,
    dpdk_in_node_cycles_per_call: Option<f64>,
}

/// One topology: medians over the rounds, in every unit.
#[derive(Serialize, Clone, Debug)]
struct Row {
    topology: String,
    nodes_per_walk: usize,
    node_visits_per_walk: usize,
    pktvec_cycles_per_walk: f64,
    pktvec_no_clock_cycles_per_walk: f64,
    pktvec_cycles_per_node_call: f64,
    pktvec_cycles_per_packet_per_node: f64,
    pktvec_in_node_cycles_per_call: f64,
    dpdk_cycles_per_walk: Option<f64>,
    dpdk_cycles_per_node_call: Option<f64>,
    dpdk_cycles_per_packet_per_node: Option<f64>,
    dpdk_in_node_cycles_per_call: Option<f64>,
    rounds: Vec<Round>,
}

/// Runs the measurement.
pub fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let quick = args.common.quick;
    let rounds = args.rounds.unwrap_or(if quick { 1 } else { 5 }).max(1);
    let walks = args
        .walks
        .unwrap_or(if quick { 50_000 } else { 200_000 })
        .max(1);
    let sitting = Sitting::begin(
        "dispatch",
        "Graph dispatch vs rte_graph",
        "dispatch.md",
        &args.common,
    )?;
    let hz = clock::tsc_hz();
    let reps = 7;
    println!(
        "{rounds} round(s): pktvec {walks} walks x {reps} repetitions per topology (median), {}",
        if args.no_dpdk {
            "no dpdk-test (--no-dpdk)".to_string()
        } else {
            "then echo graph_perf_autotest | dpdk-test --no-huge -m 2048 --no-pci -l 0-1".into()
        }
    );
    let specs = topologies();
    // rounds[r][t]
    let mut all: Vec<Vec<Round>> = Vec::new();
    let mut clock_reads = Vec::new();
    for round in 0..rounds {
        println!("round {}/{rounds}", round + 1);
        let c = clock_read_cycles();
        println!("  one clock read (rdtsc, back to back): {c:.1} cycles");
        clock_reads.push(c);
        let mut rs = measure_pktvec(walks, reps)?;
        if !args.no_dpdk {
            for case in run_dpdk_test()? {
                let Some(t) = specs.iter().position(|s| s.name == case.name) else {
                    continue;
                };
                let burst = if case.name.ends_with("brst_one") {
                    1.0
                } else {
                    256.0
                };
                // DPDK's window is one timer second = `hz` TSC cycles.
                let walks_in_window = case.source_mobjs * 1e6 / burst;
                rs[t].dpdk_cycles_per_walk = Some(hz / walks_in_window);
                rs[t].dpdk_in_node_cycles_per_call = Some(case.cycles_per_call);
            }
        }
        all.push(rs);
    }
    let rows: Vec<Row> = specs
        .iter()
        .enumerate()
        .map(|(t, spec)| {
            let per: Vec<Round> = all.iter().map(|r| r[t].clone()).collect();
            let med = |f: &dyn Fn(&Round) -> Option<f64>| {
                let v: Vec<f64> = per.iter().filter_map(f).collect();
                (!v.is_empty()).then(|| median(&v))
            };
            let p = med(&|r| Some(r.pktvec_cycles_per_walk)).unwrap_or(f64::NAN);
            let d = med(&|r| r.dpdk_cycles_per_walk);
            let (calls, visits) = (spec.nodes_per_walk as f64, spec.node_visits_per_walk as f64);
            Row {
                topology: spec.name.to_string(),
                nodes_per_walk: spec.nodes_per_walk,
                node_visits_per_walk: spec.node_visits_per_walk,
                pktvec_cycles_per_walk: p,
                pktvec_no_clock_cycles_per_walk: med(&|r| Some(r.pktvec_no_clock_cycles_per_walk))
                    .unwrap_or(f64::NAN),
                pktvec_cycles_per_node_call: p / calls,
                pktvec_cycles_per_packet_per_node: p / visits,
                pktvec_in_node_cycles_per_call: med(&|r| Some(r.pktvec_in_node_cycles_per_call))
                    .unwrap_or(f64::NAN),
                dpdk_cycles_per_walk: d,
                dpdk_cycles_per_node_call: d.map(|d| d / calls),
                dpdk_cycles_per_packet_per_node: d.map(|d| d / visits),
                dpdk_in_node_cycles_per_call: med(&|r| r.dpdk_in_node_cycles_per_call),
                rounds: per,
            }
        })
        .collect();
    let clock_read = median(&clock_reads);
    print_table(&rows, rounds, clock_read);
    let headline: Vec<Headline> = rows
        .iter()
        .filter_map(|r| {
            let d = r.dpdk_cycles_per_walk?;
            Some(
                Headline::cost(
                    &r.topology,
                    "cycles/walk",
                    r.pktvec_cycles_per_walk,
                    ANCHOR,
                    d,
                )
                .target(1.0),
            )
        })
        .collect();
    let detail = serde_json::json!({
        "rounds": rounds,
        "walks": walks,
        "repetitions": reps,
        "dpdk_test": !args.no_dpdk,
        "clock_read_cycles": clock_read,
        "topologies": rows,
    });
    sitting.finish(headline, detail)?;
    Ok(())
}

/// Cycles of one read of the dispatcher's clock, back to back (the median of 7 runs of
/// 100,000 reads): what the per-call clock read costs at least on this host.
fn clock_read_cycles() -> f64 {
    let n = 100_000u64;
    let mut per = Vec::new();
    for _ in 0..7 {
        let t0 = clock::now();
        let mut x = 0u64;
        for _ in 0..n {
            x = x.wrapping_add(std::hint::black_box(clock::now()));
        }
        std::hint::black_box(x);
        per.push(clock::now().wrapping_sub(t0) as f64 / n as f64);
    }
    median(&per)
}

/// pktvec on every topology: median cycles per walk of `reps` timed runs of `walks` walks,
/// with the dispatcher's clock read on (the headline) and off.
fn measure_pktvec(walks: u64, reps: usize) -> Result<Vec<Round>, Box<dyn std::error::Error>> {
    let mut out = Vec::new();
    for spec in topologies() {
        // One graph per setting; the median cycles per walk of `reps` timed runs each.
        let time = |g: &mut pktvec::graph::Graph| {
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
                per_walk.push(clock::now().wrapping_sub(t0) as f64 / walks as f64);
            }
            median(&per_walk)
        };
        let mut g = build_with_clock(&spec, true)?;
        let cpw = time(&mut g);
        let no_clock = time(&mut build_with_clock(&spec, false)?);
        let rt = g.runtime();
        let calls: u64 = rt.rows.iter().map(|r| r.calls).sum();
        println!(
            "  pktvec {:<32} {cpw:>9.1} cycles/walk ({no_clock:.1} without the clock reads)",
            spec.name
        );
        out.push(Round {
            pktvec_cycles_per_walk: cpw,
            pktvec_no_clock_cycles_per_walk: no_clock,
            pktvec_in_node_cycles_per_call: rt.total_cycles() as f64 / calls.max(1) as f64,
            dpdk_cycles_per_walk: None,
            dpdk_in_node_cycles_per_call: None,
        });
    }
    Ok(out)
}

/// One test case of dpdk-test's `graph_perf_autotest`.
#[derive(Debug, PartialEq)]
struct Autotest {
    /// The topology (the test case's name without `graph_`).
    name: String,
    /// The source's objs/sec, millions.
    source_mobjs: f64,
    /// The mean of the cycles/call column (cycles inside the nodes).
    cycles_per_call: f64,
}

/// Runs dpdk-test's `graph_perf_autotest` once.
fn run_dpdk_test() -> Result<Vec<Autotest>, Box<dyn std::error::Error>> {
    let text = crate::dpdk_test::run("graph_perf_autotest", 2048, "0-1")?;
    let parsed = parse_dpdk(&text);
    if parsed.is_empty() {
        let tail: String = text
            .lines()
            .rev()
            .take(20)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect::<Vec<_>>()
            .join("\n");
        return Err(format!("could not parse dpdk-test's output; its end:\n{tail}").into());
    }
    for t in &parsed {
        println!(
            "  dpdk-test {:<29} {:>9.1} M objs/s at the source, {:.0} cycles/call in nodes",
            t.name, t.source_mobjs, t.cycles_per_call
        );
    }
    Ok(parsed)
}

/// Parses graph_perf_autotest's tables, one [`Autotest`] per test case.
fn parse_dpdk(text: &str) -> Vec<Autotest> {
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
                    out.push(Autotest {
                        name,
                        source_mobjs: s,
                        cycles_per_call: mean,
                    });
                }
                cyc.clear();
            }
        }
    }
    out
}

fn print_table(rows: &[Row], rounds: usize, clock_read: f64) {
    println!();
    println!("median of {rounds} round(s); ratio = rte_graph cycles per walk / pktvec's (> 1: pktvec cheaper)");
    println!(
        "one clock read: {clock_read:.1} cycles (pktvec reads it once a node call, rte_graph with stats twice)"
    );
    println!(
        "{:<32} {:>5} {:>13} {:>13} {:>13} {:>14} {:>11} {:>11} {:>12} {:>6}",
        "topology",
        "nodes",
        "pktvec c/walk",
        "no clock",
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
            "{:<32} {:>5} {:>13.1} {:>13.1} {:>13.1} {:>14.3} {:>11} {:>11} {:>12} {:>6}",
            r.topology,
            r.nodes_per_walk,
            r.pktvec_cycles_per_walk,
            r.pktvec_no_clock_cycles_per_walk,
            r.pktvec_cycles_per_node_call,
            r.pktvec_cycles_per_packet_per_node,
            opt(r.dpdk_cycles_per_walk, 1),
            opt(r.dpdk_cycles_per_node_call, 1),
            opt(r.dpdk_cycles_per_packet_per_node, 3),
            opt(
                r.dpdk_cycles_per_walk.map(|d| d / r.pktvec_cycles_per_walk),
                2
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_autotest_tables() {
        let text = "\
|test_graph_perf_worker-0-0     |2796174        |715820544      |1              |256.000        |548.454656     |71.0000    |
|test_graph_perf_source-0       |2796381        |715873536      |2              |256.000        |548.507648     |123.0000   |
|test_graph_perf_sink-0         |2796387        |715875072      |1              |256.000        |548.509440     |56.0000    |
 + TestCase [ 0] : graph_hr_4s_1n_1src_1snk succeeded
";
        let p = parse_dpdk(text);
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].name, "hr_4s_1n_1src_1snk");
        assert!((p[0].source_mobjs - 548.507648).abs() < 1e-9);
        assert!((p[0].cycles_per_call - 250.0 / 3.0).abs() < 1e-9);
    }
}
