//! `handoff`: the cost of moving buffer indices from one core to another through
//! `pktvec_workers::ring` (single producer, single consumer), against DPDK's `rte_ring`
//! on the same two cores, interleaved.
//!
//! Two threads pinned to two different cores move indices through one ring of 4,096 slots
//! (dpdk-test's ring size) with DPDK's bulk semantics: the producer enqueues whole chunks
//! of 32 (or 256, a whole vector) from a fixed array of indices (`Producer::enqueue_bulk`:
//! all or nothing), the consumer dequeues whole chunks (`Consumer::dequeue_bulk`) and checks
//! that the stream arrives in order. Either side pauses (`spin_loop`) after a try that found
//! no room or not enough indices. Each thread times its own loop with the TSC. The unit is
//! DPDK's: the producer's cycles per index plus the consumer's (dpdk-test prints the sum of
//! the enqueuing and the dequeuing core's cycles per element); the wall-clock cycles per
//! index (about half of it, as the two run at once) are in the details.
//!
//! The anchor is `benches/dpdk/ring_bench.c`: dpdk-test's `ring_perf_autotest` "two
//! physical cores" SP/SC bulk 32 test on demand (an `rte_ring` of 4,096 pointer slots, the
//! EAL's main lcore producing, a worker lcore consuming, on the same two cores). A guest's
//! cross-core cost moves several-fold within seconds (its vCPUs move between physical
//! cores), so the two sides run in pairs of short slices, back to back, the order
//! alternating; each pair gives a ratio, and the headline is the median of the pairs'
//! ratios. dpdk-test's own figure is taken once at the end of the sitting, as a check that
//! the harness measures what dpdk-test does.

use std::sync::{Arc, Barrier};

use pktvec::graph::clock;
use pktvec_workers::ring::{ring, RingStats};
use serde::Serialize;

use crate::c_harness;
use crate::forwarders::graphs::median;
use crate::pairs::quartiles;
use crate::sitting::{Common, Headline, Sitting};

/// Options of `handoff`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    common: Common,
    /// Pairs (pktvec's chunk sizes and rte_ring, back to back, the order alternating);
    /// default 21, 3 with --quick
    #[arg(long)]
    pairs: Option<usize>,
    /// Indices moved per slice (each side, each chunk size, each pair); default 10,000,000,
    /// 2,000,000 with --quick (a multiple of 256)
    #[arg(long)]
    indices: Option<u64>,
    /// Ring capacity in slots (a power of two; dpdk-test's ring has 4,096)
    #[arg(long, default_value_t = 4096)]
    capacity: usize,
    /// Measure pktvec only, without rte_ring or dpdk-test (no headline rows then)
    #[arg(long)]
    no_dpdk: bool,
}

/// The anchor's name in the headline rows.
const ANCHOR: &str = "rte_ring SP/SC bulk 32 (interleaved)";

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

/// The C harness in serve mode over the same two cores: `ring_bench` on lcores 0-1.
fn start_rte_ring(
    pc: core_affinity::CoreId,
    cc: core_affinity::CoreId,
    capacity: usize,
    indices: u64,
) -> Result<c_harness::Served, Box<dyn std::error::Error>> {
    let bin = c_harness::build("ring_bench")?;
    let mut eal = c_harness::eal_args("handoff", 256);
    // two lcores, the producer's core first (the main lcore produces)
    if let Some(l) = eal.iter().position(|a| a == "-l") {
        eal[l + 1] = format!("{},{}", pc.id, cc.id);
    }
    eal.extend([capacity.to_string(), "32".into(), indices.to_string()]);
    c_harness::Served::start(&bin, &eal)
}

/// One run of the C harness: (producer, consumer) cycles per element.
fn rte_ring_slice(h: &mut c_harness::Served) -> Result<(f64, f64), Box<dyn std::error::Error>> {
    let lines = h.round()?;
    lines
        .iter()
        .find(|f| f.first().map(String::as_str) == Some("result"))
        .and_then(|f| Some((f.get(1)?.parse().ok()?, f.get(2)?.parse().ok()?)))
        .ok_or_else(|| format!("ring_bench gave no result: {lines:?}").into())
}

/// Runs the measurement.
pub fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let quick = args.common.quick;
    let pairs = args.pairs.unwrap_or(if quick { 3 } else { 21 }).max(1);
    let indices = args
        .indices
        .unwrap_or(if quick { 2_000_000 } else { 10_000_000 })
        .max(256)
        / 256
        * 256;
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
         u32 indices; {indices} indices per slice, {pairs} pair(s), {}",
        pc.id,
        cc.id,
        cores.len(),
        if args.no_dpdk {
            "no rte_ring (--no-dpdk)".to_string()
        } else {
            "each with benches/dpdk/ring_bench.c (rte_ring of 4096 8-byte pointers, bulk 32) \
             on the same cores; then echo ring_perf_autotest | dpdk-test once"
                .into()
        }
    );
    let mut harness = if args.no_dpdk {
        None
    } else {
        Some(start_rte_ring(pc, cc, capacity, indices)?)
    };
    // per[pair][chunk]; rte[pair] = (producer, consumer)
    let mut per: Vec<Vec<Pair>> = Vec::new();
    let mut rte: Vec<(f64, f64)> = Vec::new();
    for pair in 0..pairs {
        // the first slot of a pair alternates, so that neither side always goes first
        let rte_first = pair % 2 == 1;
        let mut d = None;
        if let (true, Some(h)) = (rte_first, harness.as_mut()) {
            d = Some(rte_ring_slice(h)?);
        }
        let mut row = Vec::new();
        for &chunk in &CHUNKS {
            row.push(measure(chunk, indices, capacity, pc, cc)?);
        }
        if let (false, Some(h)) = (rte_first, harness.as_mut()) {
            d = Some(rte_ring_slice(h)?);
        }
        print!(
            "pair {:>2}/{pairs}: pktvec bulk 32 {:>6.2}, bulk 256 {:>6.2}",
            pair + 1,
            row[0].sum,
            row[1].sum
        );
        if let Some((p, c)) = d {
            print!(
                "; rte_ring bulk 32 {:>6.2} (producer {p:.2} + consumer {c:.2}): {:.2}×",
                p + c,
                (p + c) / row[0].sum
            );
            rte.push((p, c));
        }
        println!();
        per.push(row);
    }
    drop(harness.take());
    c_harness::remove_eal_dir("handoff");
    let dpdk_test = if args.no_dpdk || quick {
        None
    } else {
        let d = run_dpdk_test()?;
        println!("dpdk-test ring_perf_autotest, two physical cores, SP/SC bulk 32: {d:.2} cycles/element");
        Some(d)
    };
    let sums: Vec<f64> = rte.iter().map(|(p, c)| p + c).collect();
    let anchor = (!sums.is_empty()).then(|| median(&sums));
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
                "pairs": per.iter().map(|r| r[i].clone()).collect::<Vec<_>>(),
            })
        })
        .collect();
    println!();
    println!(
        "median of {pairs} pair(s); cycles/index = producer's + consumer's (dpdk-test's unit)"
    );
    let mut headline = Vec::new();
    let mut ratios = Vec::new();
    for (i, &chunk) in CHUNKS.iter().enumerate() {
        let ours = rows[i]["cycles_per_index"].as_f64().unwrap_or(f64::NAN);
        print!("  bulk {chunk:>3}: pktvec {ours:.2}");
        if let Some(a) = anchor {
            // each pair's own ratio (both sides back to back), then their median: the
            // guest's cross-core cost moves for both alike within a pair
            let paired: Vec<f64> = per.iter().zip(&sums).map(|(r, d)| d / r[i].sum).collect();
            let (q1, q3) = quartiles(&paired);
            let ratio = median(&paired);
            println!(
                ", rte_ring bulk 32 {a:.2}; ratio {ratio:.2} (quartiles {q1:.2}–{q3:.2}; aim 2.0)"
            );
            let mut h = Headline::cost(
                &format!("SPSC bulk {chunk} across two cores"),
                "cycles/index",
                ours,
                ANCHOR,
                a,
            )
            .target(1.0);
            h.ratio = ratio;
            headline.push(h);
            ratios.push(serde_json::json!({
                "chunk": chunk,
                "pair_ratios": paired,
                "median": ratio,
                "quartiles": [q1, q3],
            }));
        } else {
            println!();
        }
    }
    let detail = serde_json::json!({
        "pairs": pairs,
        "indices_per_slice": indices,
        "capacity": capacity,
        "producer_core": pc.id,
        "consumer_core": cc.id,
        "cores_online": cores.len(),
        "unit": "producer's TSC cycles per index + consumer's TSC cycles per index",
        "aim": 2.0,
        "chunks": rows,
        "rte_ring": !args.no_dpdk,
        "rte_ring_bulk32": rte.iter().map(|(p, c)| serde_json::json!({"producer": p, "consumer": c, "sum": p + c})).collect::<Vec<_>>(),
        "rte_ring_bulk32_median": anchor,
        "ratios": ratios,
        "dpdk_test_spsc_bulk32": dpdk_test,
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
