//! `prefetch`: the gain of the prefetching loop. Cycles per packet of the graph
//! `source → ip4-ttl → sink` (`pktvec::perf::prefetch_graph`: `ip4-ttl` reads the IPv4
//! header and rewrites TTL and checksum, one metadata line and one data line a packet),
//! packets visited in a random permutation of the whole pool, at prefetch distance 0, 2,
//! 4, 8 and 16, over a pool that fits in L2 and pools larger than the last-level cache
//! (sized from sysfs: 4x and 16x the LLC).

use pktvec::graph::clock;
use pktvec::perf::{prefetch_graph, BYTES_PER_BUFFER};
use serde::Serialize;

use crate::sitting::{Common, Headline, Sitting};

/// Options of `prefetch`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    common: Common,
    /// Timed passes over the pool per distance (median); default 7, 3 with --quick
    #[arg(long)]
    passes: Option<usize>,
}

/// The prefetch distances measured (packets ahead).
const DISTANCES: [usize; 5] = [0, 2, 4, 8, 16];
/// `GraphConfig::prefetch_distance`'s default: the headline's distance.
const DEFAULT_DISTANCE: usize = 4;

/// The largest pool measured (2^20 buffers, 2.2 GiB).
const MAX_BUFFERS: u32 = 1 << 20;
/// Where [`DEFAULT_DISTANCE`] is in [`DISTANCES`].
const DEFAULT_INDEX: usize = 2;

/// The largest power of two at most `n`, and at least 256 (one vector).
fn prev_power_of_two(n: usize) -> u32 {
    let n = n.max(256) as u32;
    1 << (31 - n.leading_zeros())
}

/// One pool: cycles per packet at each distance.
#[derive(Serialize, Debug)]
struct Pool {
    label: String,
    /// The headline row's case.
    case: String,
    buffers: u32,
    mib: f64,
    cycles_per_packet: Vec<f64>,
    best_distance: usize,
    gain_default: f64,
    gain_best: f64,
}

/// Runs the measurement.
pub fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let quick = args.common.quick;
    let passes = args.passes.unwrap_or(if quick { 3 } else { 7 }).max(1);
    let sitting = Sitting::begin(
        "prefetch",
        "Prefetching loop: gain over no prefetch",
        "dispatch.md",
        &args.common,
    )?;
    let (_, _, _, l2, llc) = pktvec::model::probe::caches();
    let l2 = if l2 == 0 { 1 << 20 } else { l2 };
    let llc_known = llc != 0;
    let llc = if llc_known { llc } else { 32 << 20 };
    println!(
        "caches (sysfs, cpu0): L2 {} KiB, last level {} MiB{}",
        l2 >> 10,
        llc >> 20,
        if llc_known {
            ""
        } else {
            " (not reported: 32 MiB assumed)"
        }
    );
    // In L2: three quarters of it, rounded down. Beyond the LLC: 4x and 16x it (the second only in the full run),
    // in powers of two buffers.
    let buffers_for =
        |bytes: usize| -> u32 { ((bytes / BYTES_PER_BUFFER).max(256) as u32).next_power_of_two() };
    let mut pools = vec![
        (prev_power_of_two(l2 * 3 / 4 / BYTES_PER_BUFFER), "in L2"),
        (buffers_for(4 * llc), "4x LLC"),
    ];
    if !quick {
        pools.push((buffers_for(16 * llc), "16x LLC"));
    }
    // A machine with a very large last-level cache: at most 2^20 buffers (2.2 GiB) a pool.
    for (b, _) in pools.iter_mut() {
        if *b > MAX_BUFFERS {
            println!("pool of {} buffers capped at {MAX_BUFFERS}", *b);
            *b = MAX_BUFFERS;
        }
    }
    println!(
        "cycles per packet, whole graph (source + ip4-ttl + sink), median of {passes} passes over the pool"
    );
    println!(
        "{:<34} {}",
        "pool",
        DISTANCES
            .iter()
            .map(|d| format!("{:>9}", format!("d={d}")))
            .collect::<String>()
    );
    let mut results = Vec::new();
    for (buffers, where_) in pools {
        let mib = buffers as f64 * BYTES_PER_BUFFER as f64 / (1 << 20) as f64;
        let size = if mib < 10.0 {
            format!("{mib:.1} MiB")
        } else {
            format!("{mib:.0} MiB")
        };
        let label = format!("{buffers} buffers, {size} ({where_})");
        let case = format!("{size} pool ({where_}), d={DEFAULT_DISTANCE}");
        let mut g = prefetch_graph(buffers)?;
        let turns = (buffers as usize / 256).max(64);
        let mut row = Vec::new();
        for &d in &DISTANCES {
            g.set_prefetch_distance(d);
            // One pass to warm up, then the median of `passes` timed passes.
            for _ in 0..turns {
                g.run_once();
            }
            let mut reps = Vec::new();
            for _ in 0..passes {
                let t0 = clock::now();
                for _ in 0..turns {
                    g.run_once();
                }
                reps.push(clock::now().wrapping_sub(t0) as f64 / (turns * 256) as f64);
            }
            reps.sort_by(f64::total_cmp);
            row.push(reps[reps.len() / 2]);
        }
        println!(
            "{label:<34} {}",
            row.iter().map(|c| format!("{c:>9.1}")).collect::<String>()
        );
        let (best_i, best) = row
            .iter()
            .copied()
            .enumerate()
            .skip(1)
            .fold((0, f64::MAX), |a, (i, c)| if c < a.1 { (i, c) } else { a });
        let at_default = row[DEFAULT_INDEX];
        results.push(Pool {
            label,
            case,
            buffers,
            mib,
            best_distance: DISTANCES[best_i],
            gain_default: row[0] / at_default,
            gain_best: row[0] / best,
            cycles_per_packet: row,
        });
    }
    println!();
    for p in &results {
        println!(
            "{}: gain at d={DEFAULT_DISTANCE} (the default) {:.2}x, best d={} {:.2}x",
            p.label, p.gain_default, p.best_distance, p.gain_best
        );
    }
    if let Some(path) = sitting.plot_path("distance") {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        let series: Vec<(String, Vec<(f64, f64)>)> = results
            .iter()
            .map(|p| {
                // The x axis is log2: distance 0 (no prefetch) is drawn at 1.
                let pts = DISTANCES
                    .iter()
                    .zip(&p.cycles_per_packet)
                    .map(|(&d, &c)| ((d.max(1)) as f64, c))
                    .collect();
                (p.label.clone(), pts)
            })
            .collect();
        crate::plot::lines(
            &path,
            "ip4-ttl, random buffer order: cycles per packet vs prefetch distance",
            "prefetch distance (packets; no prefetch drawn at 1)",
            "TSC cycles per packet",
            &series,
        )?;
    }
    let headline = results
        .iter()
        .map(|p| {
            let at_default = p.cycles_per_packet[DEFAULT_INDEX];
            Headline::cost(
                &p.case,
                "cycles/packet",
                at_default,
                "no prefetch (distance 0)",
                p.cycles_per_packet[0],
            )
        })
        .collect();
    let detail = serde_json::json!({
        "distances": DISTANCES,
        "default_distance": DEFAULT_DISTANCE,
        "passes": passes,
        "l2_bytes": l2,
        "llc_bytes": llc,
        "llc_from_sysfs": llc_known,
        "bytes_per_buffer": BYTES_PER_BUFFER,
        "pools": results,
    });
    sitting.finish(headline, detail)?;
    Ok(())
}
