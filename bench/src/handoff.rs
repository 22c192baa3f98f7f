//! `handoff`: the cost of moving buffer indices from one core to another through
//! `pktvec_workers::ring` (single producer, single consumer), against DPDK's `rte_ring` in
//! the same sitting: `echo ring_perf_autotest | dpdk-test --no-huge -m 512 --no-pci -l 0-1`,
//! its "two physical cores" SP/SC bulk 32 figure.
//!
//! Two threads pinned to two different cores move indices through one ring of 4,096 slots
//! (dpdk-test's ring size) with DPDK's bulk semantics, as dpdk-test does: the producer
//! enqueues whole chunks of 32 (or 256, a whole vector) from a fixed array of indices
//! (`Producer::enqueue_bulk`: all or nothing), the consumer dequeues whole chunks
//! (`Consumer::dequeue_bulk`) and checks that the stream arrives in order. Either side
//! pauses (`spin_loop`) after a try that found no room or not enough indices.
//! Each thread times its own loop with the TSC. The unit is DPDK's: the producer's cycles
//! per index plus the consumer's cycles per index (dpdk-test prints the sum of the enqueuing
//! and the dequeuing core's cycles per element); the wall-clock cycles per index (about half
//! of it, as the two run at once) are in the details. Figures are medians over rounds; the
//! ratio is the median of the rounds' own ratios (each round runs pktvec, then dpdk-test,
//! back to back), which the machine's swings between rounds do not skew.

use std::sync::{Arc, Barrier};

use pktvec::graph::clock;
use pktvec_workers::ring::{ring, RingStats};
use serde::Serialize;

use crate::forwarders::graphs::median;
use crate::sitting::{Common, Headline, Sitting};

/// Options of `handoff`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    common: Common,
    /// Rounds (pktvec's chunk sizes, then dpdk-test, each round); default 3, 1 with --quick
    #[arg(long)]
    rounds: Option<usize>,
    /// Indices moved per chunk size and round; default 300,000,000, 20,000,000 with --quick
    #[arg(long)]
    indices: Option<u64>,
    /// Ring capacity in slots (a power of two; dpdk-test's ring has 4,096)
    #[arg(long, default_value_t = 4096)]
    capacity: usize,
    /// Measure pktvec only, without dpdk-test (no headline rows then)
    #[arg(long)]
    no_dpdk: bool,
}

/// The anchor's name in the headline rows.
const ANCHOR: &str = "rte_ring SP/SC bulk 32 (dpdk-test)";

/// Chunk sizes measured: DPDK's largest bulk size, and a whole vector.
const CHUNKS: [usize; 2] = [32, 256];

/// One chunk size's figures of one round.
#[derive(Serialize, Clone, Debug)]
struct Pair {
    /// The producer's loop, TSC cycles per index.
    producer: f64,
    /// The consumer's loop, TSC cycles per index.
    consumer: f64,
    /// producer + consumer (dpdk-test's unit).
    sum: f64,
    /// From the first thread's start to the last one's end, cycles per index.
    wall: f64,
    /// Tries of the producer that found no room for a whole chunk (it paused and tried again).
    full_tries: u64,
    /// The ring's counters (the high-water mark as the producer saw it; nothing is dropped:
    /// a chunk that does not fit is tried again).
    stats: RingStats,
}

/// Runs the measurement.
pub fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let quick = args.common.quick;
    let rounds = args.rounds.unwrap_or(if quick { 1 } else { 3 }).max(1);
    let indices = args
        .indices
        .unwrap_or(if quick { 20_000_000 } else { 300_000_000 })
        .max(1);
    let capacity = args.capacity.max(1).next_power_of_two();
    let sitting = Sitting::begin(
        "handoff",
        "Handoff between cores vs rte_ring",
        "multicore.md",
        &args.common,
    )?;
    let cores = core_affinity::get_core_ids().unwrap_or_default();
    if cores.len() < 2 {
        return Err(format!(
            "handoff needs two cores to pin to; core_affinity sees {}",
            cores.len()
        )
        .into());
    }
    let (pc, cc) = (cores[0], cores[1]);
    println!(
        "producer pinned to core {}, consumer to core {} ({} cores online); ring of {capacity} \
         u32 indices; {indices} indices per chunk size, {rounds} round(s), {}",
        pc.id,
        cc.id,
        cores.len(),
        if args.no_dpdk {
            "no dpdk-test (--no-dpdk)".to_string()
        } else {
            "then echo ring_perf_autotest | dpdk-test --no-huge -m 512 --no-pci -l 0-1 \
             (its ring: 4096 slots of 8-byte pointers)"
                .into()
        }
    );
    // per[round][chunk]
    let mut per: Vec<Vec<Pair>> = Vec::new();
    let mut dpdk: Vec<f64> = Vec::new();
    for round in 0..rounds {
        println!("round {}/{rounds}", round + 1);
        let mut row = Vec::new();
        for &chunk in &CHUNKS {
            let p = measure(chunk, indices, capacity, pc, cc)?;
            println!(
                "  pktvec bulk {chunk:>3}: {:>6.2} cycles/index (producer {:.2} + consumer {:.2}), \
                 wall {:.2}; full-ring retries {}, high water {}",
                p.sum, p.producer, p.consumer, p.wall, p.full_tries, p.stats.high_water
            );
            row.push(p);
        }
        per.push(row);
        if !args.no_dpdk {
            let d = run_dpdk_test()?;
            println!("  dpdk-test SP/SC bulk 32, two physical cores: {d:.2} cycles/element");
            dpdk.push(d);
        }
    }
    let anchor = (!dpdk.is_empty()).then(|| median(&dpdk));
    let rows: Vec<serde_json::Value> = CHUNKS
        .iter()
        .enumerate()
        .map(|(i, &chunk)| {
            let m = |f: fn(&Pair) -> f64| median(&per.iter().map(|r| f(&r[i])).collect::<Vec<_>>());
            serde_json::json!({
                "chunk": chunk,
                "cycles_per_index": m(|p| p.sum),
                "producer_cycles_per_index": m(|p| p.producer),
                "consumer_cycles_per_index": m(|p| p.consumer),
                "wall_cycles_per_index": m(|p| p.wall),
                "rounds": per.iter().map(|r| r[i].clone()).collect::<Vec<_>>(),
            })
        })
        .collect();
    println!();
    println!(
        "median of {rounds} round(s); cycles/index = producer's + consumer's (dpdk-test's unit)"
    );
    let mut headline = Vec::new();
    for (i, &chunk) in CHUNKS.iter().enumerate() {
        let ours = rows[i]["cycles_per_index"].as_f64().unwrap_or(f64::NAN);
        println!(
            "  bulk {chunk:>3}: pktvec {ours:.2}{}",
            anchor.map_or(String::new(), |a| format!(
                ", rte_ring bulk 32 {a:.2}, ratio {:.2} (aim 2.0)",
                a / ours
            ))
        );
        if let Some(a) = anchor {
            // the ratio of each round (both sides measured back to back), then their median:
            // the machine's cross-core cost moves between rounds for both alike
            let paired: Vec<f64> = per.iter().zip(&dpdk).map(|(r, d)| d / r[i].sum).collect();
            println!("    per-round ratios {paired:.2?}");
            let mut h = Headline::cost(
                &format!("SPSC bulk {chunk} across two cores"),
                "cycles/index",
                ours,
                ANCHOR,
                a,
            )
            .target(1.0);
            h.ratio = median(&paired);
            headline.push(h);
        }
    }
    let detail = serde_json::json!({
        "rounds": rounds,
        "indices": indices,
        "capacity": capacity,
        "producer_core": pc.id,
        "consumer_core": cc.id,
        "cores_online": cores.len(),
        "unit": "producer's TSC cycles per index + consumer's TSC cycles per index",
        "aim": 2.0,
        "chunks": rows,
        "dpdk_test": !args.no_dpdk,
        "dpdk_spsc_bulk32_cycles_per_element": dpdk,
        "dpdk_spsc_bulk32_median": anchor,
    });
    sitting.finish(headline, detail)?;
    Ok(())
}

/// Moves `total` indices through a fresh ring of `capacity` slots in chunks of `chunk`, the
/// producer pinned to `pc`, the consumer to `cc`.
fn measure(
    chunk: usize,
    total: u64,
    capacity: usize,
    pc: core_affinity::CoreId,
    cc: core_affinity::CoreId,
) -> Result<Pair, Box<dyn std::error::Error>> {
    // the source: a fixed array of sequential indices, enqueued from a rotating offset, so
    // that the producer copies data without computing it
    const SRC: usize = 1 << 16;
    let (mut p, mut c) = ring(capacity);
    let watch = p.watch();
    let start = Arc::new(Barrier::new(2));
    let sb = Arc::clone(&start);
    let producer = std::thread::spawn(move || {
        let pinned = core_affinity::set_for_current(pc);
        let src: Vec<u32> = (0..(SRC + chunk) as u32).map(|i| i % SRC as u32).collect();
        let mut off = 0usize;
        let mut sent = 0u64;
        let mut full_tries = 0u64;
        sb.wait();
        let t0 = clock::now();
        while sent < total {
            let want = (chunk as u64).min(total - sent) as usize;
            // all or nothing, as rte_ring's bulk calls; when the chunk does not fit, pause
            // before trying again, as dpdk-test does
            if p.enqueue_bulk(&src[off..off + want]) {
                sent += want as u64;
                off = (off + want) % SRC;
            } else {
                full_tries += 1;
                std::hint::spin_loop();
            }
        }
        (pinned, t0, clock::now(), full_tries)
    });
    let consumer = std::thread::spawn(move || {
        let pinned = core_affinity::set_for_current(cc);
        let mut buf = vec![0u32; chunk];
        let mut got = 0u64;
        let mut ok = true;
        start.wait();
        let t0 = clock::now();
        while got < total {
            let want = (chunk as u64).min(total - got) as usize;
            let n = if c.dequeue_bulk(&mut buf[..want]) {
                want
            } else {
                0
            };
            if n > 0 {
                // first and last of the chunk: a lost or repeated index shifts both
                let want = (got % SRC as u64) as u32;
                ok &= buf[0] == want && buf[n - 1] == (want + n as u32 - 1) % SRC as u32;
                got += n as u64;
            } else {
                std::hint::spin_loop();
            }
        }
        (pinned, t0, clock::now(), ok)
    });
    let (ppin, p0, p1, full_tries) = producer.join().map_err(|_| "producer thread panicked")?;
    let (cpin, c0, c1, ok) = consumer.join().map_err(|_| "consumer thread panicked")?;
    if !(ppin && cpin) {
        return Err(format!("could not pin to cores {} and {}", pc.id, cc.id).into());
    }
    if !ok {
        return Err("the consumer saw indices out of order".into());
    }
    let n = total as f64;
    let (producer, consumer) = ((p1 - p0) as f64 / n, (c1 - c0) as f64 / n);
    Ok(Pair {
        producer,
        consumer,
        sum: producer + consumer,
        wall: (p1.max(c1) - p0.min(c0)) as f64 / n,
        full_tries,
        stats: watch.stats(),
    })
}

/// Runs dpdk-test's `ring_perf_autotest` once; returns its two-core SP/SC bulk 32 figure.
fn run_dpdk_test() -> Result<f64, Box<dyn std::error::Error>> {
    let text = crate::dpdk_test::run("ring_perf_autotest", 512, "0-1")?;
    parse_dpdk(&text).ok_or_else(|| {
        let tail: Vec<&str> = text.lines().rev().take(20).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        format!(
            "could not find the two-core SP/SC bulk 32 figure in dpdk-test's output; its end:\n{}",
            tail.join("\n")
        )
        .into()
    })
}

/// The SP/SC bulk 32 figure of the first "two physical cores" section (the pointer-sized
/// legacy ring; later sections repeat the test with 16-byte elements).
fn parse_dpdk(text: &str) -> Option<f64> {
    let mut in_section = false;
    for line in text.lines() {
        if line.starts_with("###") {
            if in_section {
                return None;
            }
            in_section = line.contains("two physical cores");
            continue;
        }
        if in_section
            && line.contains("SP/SC")
            && line.contains("bulk")
            && line.contains("size: 32")
        {
            return line.rsplit(':').next()?.trim().parse().ok();
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_two_core_bulk_32() {
        let text = "\
### Testing bulk enq/deq ###
legacy APIs: SP/SC: bulk (size: 32): 61.87

### Testing using two physical cores ###
legacy APIs: SP/SC: bulk (size: 8): 14.55
legacy APIs: MP/MC: bulk (size: 8): 50.54
legacy APIs: SP/SC: bulk (size: 32): 6.66
legacy APIs: MP/MC: bulk (size: 32): 12.24

### Testing using two physical cores ###
elem APIs: element size 16B: SP/SC: bulk (size: 32): 11.36
";
        assert_eq!(parse_dpdk(text), Some(6.66));
        assert_eq!(parse_dpdk("### Testing bulk enq/deq ###\n"), None);
    }

    #[test]
    fn moves_and_checks_a_short_stream() {
        let cores = core_affinity::get_core_ids().unwrap_or_default();
        if cores.len() < 2 {
            return;
        }
        let p = measure(32, 100_000, 64, cores[0], cores[1]).unwrap();
        assert_eq!(p.stats.enqueued, 100_000);
        assert_eq!(p.stats.dequeued, 100_000);
        assert!(p.sum > 0.0 && p.stats.high_water <= 64);
    }
}
