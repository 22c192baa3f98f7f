//! `hash`: the L2 switch's MAC table lookups on pktvec's exact-match hash (`MacTable`) and,
//! in the same sitting, on DPDK's rte_hash (`benches/dpdk/hash_bench.c`) with the same keys
//! and the same lookup sequence.
//!
//! The workload (seed `000_*` §3, L2 forwarding): vectors of 256 packets, two lookups per
//! packet in one MAC table (as VPP's l2fib): the 256 source MACs of a vector, then its 256
//! destination MACs. Keys are distinct pseudo-random MACs; lookups pick keys uniformly from
//! the table. Per size, pktvec's variants run interleaved, `--reps` passes (median); then the
//! harness builds rte_hash with the same keys and times `rte_hash_lookup_bulk_data` in
//! bursts of `--burst` over each half-vector and `rte_hash_lookup_data` per key, `--reps`
//! passes each (median). The headline comes after: `--pairs` pairs of single passes,
//! pktvec's `lookup_bulk` and `rte_hash_lookup_bulk_data` back to back (the harness serves
//! one pass at a time), each side's median and the median of the pairs' ratios. Unit: TSC
//! cycles of the pass / lookups.

use std::hint::black_box;
use std::io::Write;
use std::path::Path;
use std::time::Instant;

use pktvec::graph::clock;
use pktvec::lookup::hash::{HashTable, MacTable};
use pktvec::packet::wire::MacAddr;
use serde_json::json;

use crate::c_harness::{self, median, Error, Scratch, Served};
use crate::pairs::{served_pass, Paired};
use crate::sitting::{Common, Sitting};

/// Sub-batches of `lookup_bulk_sub` measured besides `lookup_bulk` (b = 256).
const SUB_BATCHES: [usize; 6] = [4, 8, 16, 32, 64, 128];

/// Options of `pktvec-bench hash`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    common: Common,
    /// Table sizes, comma-separated (K = 2^10, M = 2^20 entries); 96M (1.33 GiB ours,
    /// 3 GiB rte_hash, beyond any L3) is opt-in [default: 1K,64K,1M,16M; --quick: 1K,64K,1M]
    #[arg(long, value_delimiter = ',', value_parser = parse_size)]
    sizes: Vec<usize>,
    /// Lookups per pass, a multiple of 512 [default: 4194304; --quick: 262144]
    #[arg(long)]
    lookups: Option<usize>,
    /// Passes per variant (the figure is their median) [default: 5; --quick: 3]
    #[arg(long)]
    reps: Option<usize>,
    /// Share of lookups for keys not in the table, percent
    #[arg(long, default_value_t = 0.0)]
    miss_pct: f64,
    /// rte_hash_lookup_bulk_data burst, 1..=64
    #[arg(long, default_value_t = 64)]
    burst: usize,
    /// Pairs of single passes per size (each after an untimed one), pktvec's `lookup_bulk`
    /// and rte_hash_lookup_bulk_data back to back, which of the two goes first alternating:
    /// the headline ratio is the median of the pairs' ratios [default: 15; --quick: 3]
    #[arg(long)]
    pairs: Option<usize>,
    /// Skip DPDK: time pktvec only (no ratio rows)
    #[arg(long)]
    no_dpdk: bool,
    /// Time nothing: per size, fill the table, then run `lookup_bulk` over the lookup
    /// sequence PASSES times and print the hits, for `valgrind --tool=cachegrind` (the
    /// difference of two pass counts, divided by the lookups, is the instructions a lookup)
    #[arg(long, value_name = "PASSES")]
    count: Option<usize>,
}

/// `64K` as 65,536 (K = 2^10, M = 2^20, G = 2^30).
fn parse_size(s: &str) -> Result<usize, String> {
    let s = s.trim();
    let (num, mul) = match s.chars().last() {
        Some('K' | 'k') => (&s[..s.len() - 1], 1 << 10),
        Some('M' | 'm') => (&s[..s.len() - 1], 1 << 20),
        Some('G' | 'g') => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.parse::<usize>()
        .map(|n| n * mul)
        .map_err(|e| format!("bad size {s}: {e}"))
}

/// 65,536 as `64K`.
fn human(n: usize) -> String {
    if n >= 1 << 20 && n.is_multiple_of(1 << 20) {
        format!("{}M", n >> 20)
    } else if n >= 1 << 10 && n.is_multiple_of(1 << 10) {
        format!("{}K", n >> 10)
    } else {
        n.to_string()
    }
}

/// A bijection of 48-bit integers: distinct indices give distinct, random-looking MACs.
fn mac(i: u64) -> MacAddr {
    const M: u64 = (1 << 48) - 1;
    let mut x = i.wrapping_add(0x1234_5678_9abc) & M;
    x = x.wrapping_mul(0x9e37_79b9_7f4b) & M;
    x ^= x >> 23;
    x = x.wrapping_mul(0xc2b2_ae3d_27d5) & M;
    x ^= x >> 19;
    let b = x.to_be_bytes();
    MacAddr::new([b[2], b[3], b[4], b[5], b[6], b[7]])
}

/// xorshift64.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        ((self.next() as u128 * n as u128) >> 64) as usize
    }
}

/// The lookup sequence for a table of `n` entries (`mac(0..n)`): `lookups` keys drawn
/// uniformly from the table, every (100 / `miss_pct`)-th one a key not in it.
fn lookup_sequence(n: usize, lookups: usize, miss_pct: f64) -> Vec<MacAddr> {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d ^ n as u64);
    let miss_every = if miss_pct > 0.0 {
        (100.0 / miss_pct).round().max(1.0) as usize
    } else {
        usize::MAX
    };
    (0..lookups)
        .map(|i| {
            if i % miss_every == miss_every - 1 {
                mac((n + rng.below(1 << 30)) as u64)
            } else {
                mac(rng.below(n) as u64)
            }
        })
        .collect()
}

/// `--count PASSES`: fills a table of `n` entries and runs `lookup_bulk` over `seq`
/// `passes` times, half-vector by half-vector as the timed passes do, timing nothing.
fn count_passes(n: usize, seq: &[MacAddr], passes: usize) -> Result<(), Error> {
    let mut t: MacTable = HashTable::new(n)?;
    for i in 0..n {
        t.insert(mac(i as u64), i as u32)?;
    }
    let mut out = vec![None; 256];
    let mut hits = 0;
    for _ in 0..passes {
        for half in seq.chunks(256) {
            hits += t.lookup_bulk(half, &mut out[..half.len()]);
            black_box(out[0]);
        }
    }
    println!(
        "{} entries, {} lookups x {passes} passes: hits {hits}, in secondary buckets {}",
        human(n),
        seq.len(),
        t.stats().in_secondary
    );
    Ok(())
}

fn write_macs(path: &Path, macs: impl Iterator<Item = MacAddr>) -> std::io::Result<()> {
    let mut w = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
    for m in macs {
        w.write_all(&m.0)?;
    }
    w.flush()
}

/// One timed pass over the sequence, half-vector by half-vector: (cycles per lookup, hits).
fn pass(
    seq: &[MacAddr],
    out: &mut [Option<u32>],
    mut f: impl FnMut(&[MacAddr], &mut [Option<u32>]) -> usize,
) -> (f64, usize) {
    let mut hits = 0;
    let t0 = clock::now();
    for half in seq.chunks_exact(256) {
        hits += f(half, out);
        black_box(out[0]);
    }
    let c = clock::now() - t0;
    (c as f64 / seq.len() as f64, hits)
}

/// pktvec's figures for one size.
struct Ours {
    no_prefetch: f64,
    bulk: f64,
    sub_batch: Vec<(usize, f64)>,
    hits: usize,
    table_bytes: usize,
    bytes_per_entry: f64,
    in_secondary_pct: f64,
    build_ns_per_insert: f64,
}

fn measure_pktvec(
    keys: &[MacAddr],
    seq: &[MacAddr],
    reps: usize,
) -> Result<(Ours, MacTable), Error> {
    let n = keys.len();
    let mut t: MacTable = HashTable::new(n)?;
    let t0 = Instant::now();
    for (i, k) in keys.iter().enumerate() {
        t.insert(*k, i as u32)?;
    }
    let build_ns_per_insert = t0.elapsed().as_secs_f64() * 1e9 / n as f64;
    let st = t.stats();
    let mut out = vec![None; 256];
    // Warm-up pass (fills caches and TLB for the small tables as a running switch would).
    pass(seq, &mut out, |k, o| t.lookup_bulk(k, o));
    let mut nop = Vec::new();
    let mut bulk = Vec::new();
    let mut sub: Vec<Vec<f64>> = vec![Vec::new(); SUB_BATCHES.len()];
    let mut hits = 0;
    for _ in 0..reps {
        let (c, h0) = pass(seq, &mut out, |k, o| t.lookup_bulk_no_prefetch(k, o));
        nop.push(c);
        let (c, h1) = pass(seq, &mut out, |k, o| t.lookup_bulk(k, o));
        bulk.push(c);
        if h0 != h1 {
            return Err(format!("lookup_bulk found {h1} keys, lookup {h0}").into());
        }
        for (j, &b) in SUB_BATCHES.iter().enumerate() {
            let (c, h) = pass(seq, &mut out, |k, o| t.lookup_bulk_sub(k, o, b));
            if h != h1 {
                return Err(
                    format!("lookup_bulk_sub b={b} found {h} keys, lookup_bulk {h1}").into(),
                );
            }
            sub[j].push(c);
        }
        hits = h1;
    }
    let ours = Ours {
        no_prefetch: median(nop),
        bulk: median(bulk),
        sub_batch: SUB_BATCHES
            .iter()
            .copied()
            .zip(sub.into_iter().map(median))
            .collect(),
        hits,
        table_bytes: t.memory_bytes(),
        bytes_per_entry: t.bytes_per_entry(),
        in_secondary_pct: 100.0 * st.in_secondary as f64 / n as f64,
        build_ns_per_insert,
    };
    Ok((ours, t))
}

/// `n` pairs ([`Paired`]): pktvec's `lookup_bulk` and rte_hash_lookup_bulk_data in the
/// served harness. Fails if rte_hash finds more keys than pktvec (it may miss the few it
/// failed to add, never more).
fn paired(t: &MacTable, seq: &[MacAddr], n: usize, s: &mut Served) -> Result<Paired, Error> {
    let mut out = vec![None; 256];
    let ours = || {
        pass(seq, &mut out, |k, o| t.lookup_bulk(k, o));
        let (c, hits) = pass(seq, &mut out, |k, o| t.lookup_bulk(k, o));
        Ok((c, hits as u64))
    };
    let theirs = || {
        let (c, hits) = served_pass(s, "bulk")?;
        Ok((c, hits.parse()?))
    };
    Paired::run(n, ours, theirs, |o, t| {
        if t > o {
            Err(format!("rte_hash found {t} keys a pass, pktvec {o}").into())
        } else {
            Ok(())
        }
    })
}

/// Starts the rte_hash harness in `serve` mode on the files of one size (it builds its
/// table and waits).
fn serve_dpdk(
    bin: &Path,
    keys: &Path,
    seq: &Path,
    n: usize,
    burst: usize,
    reps: usize,
) -> Result<Served, Error> {
    // rte_hash: buckets for the next power of two, 16-byte key slots, a free-slot ring.
    let mib = (n.next_power_of_two() * 16 + n * 24) / (1 << 20) + 256;
    let mut a = c_harness::eal_args("hash", mib);
    a.extend([
        keys.display().to_string(),
        seq.display().to_string(),
        n.to_string(),
        burst.to_string(),
        reps.to_string(),
        "serve".into(),
    ]);
    Served::start(bin, &a)
}

/// rte_hash's measurement (`run`): its `RESULT key=value ...` line as pairs.
fn run_dpdk(s: &mut Served) -> Result<Vec<(String, f64)>, Error> {
    let lines = s.command("run")?;
    let line = lines
        .iter()
        .find(|f| f.first().map(String::as_str) == Some("RESULT"))
        .ok_or("no RESULT line from the rte_hash harness")?;
    Ok(line
        .iter()
        .skip(1)
        .filter_map(|kv| kv.split_once('='))
        .filter_map(|(k, v)| Some((k.to_string(), v.parse().ok()?)))
        .collect())
}

/// Runs the measurement.
pub fn run(args: Args) -> Result<(), Error> {
    let quick = args.common.quick;
    let sizes = if args.sizes.is_empty() {
        if quick {
            vec![1 << 10, 1 << 16, 1 << 20]
        } else {
            vec![1 << 10, 1 << 16, 1 << 20, 1 << 24]
        }
    } else {
        args.sizes.clone()
    };
    let lookups = args
        .lookups
        .unwrap_or(if quick { 1 << 18 } else { 1 << 22 });
    let lookups = (lookups / 512).max(1) * 512;
    let reps = args.reps.unwrap_or(if quick { 3 } else { 5 }).clamp(1, 64);
    let n_pairs = args.pairs.unwrap_or(if quick { 3 } else { 15 }).max(1);
    if !(1..=64).contains(&args.burst) {
        return Err("--burst must be 1..=64".into());
    }
    if let Some(passes) = args.count {
        for &n in &sizes {
            count_passes(n, &lookup_sequence(n, lookups, args.miss_pct), passes)?;
        }
        return Ok(());
    }
    let sitting = Sitting::begin(
        "hash",
        "MAC hash vs rte_hash",
        "lookup-tables.md",
        &args.common,
    )?;
    let bin = if args.no_dpdk {
        None
    } else {
        Some(c_harness::build("hash_bench")?)
    };
    println!(
        "{lookups} lookups per pass ({} vectors of 256 packets x 2 MACs), median of {reps} passes; {}% misses{}",
        lookups / 512,
        args.miss_pct,
        if bin.is_some() { "; rte_hash on --no-huge (4 KiB pages)" } else { "; DPDK skipped" }
    );
    let scratch = Scratch::new("hash")?;
    let mut headline = Vec::new();
    let mut rows = Vec::new();
    let mut curves = Vec::new();
    for &n in &sizes {
        eprintln!("== {} entries", human(n));
        let keys: Vec<MacAddr> = (0..n as u64).map(mac).collect();
        let seq = lookup_sequence(n, lookups, args.miss_pct);
        let (kp, sp) = (scratch.path("keys.bin"), scratch.path("lookups.bin"));
        if bin.is_some() {
            write_macs(&kp, keys.iter().copied())?;
            write_macs(&sp, seq.iter().copied())?;
        }
        let (ours, table) = measure_pktvec(&keys, &seq, reps)?;
        drop(keys);
        let (best_b, best) = ours
            .sub_batch
            .iter()
            .copied()
            .chain([(256, ours.bulk)])
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .unwrap_or((256, ours.bulk));
        // rte_hash's own measurement, then the pairs with pktvec's (the headline).
        let (theirs, pairs) = match &bin {
            Some(bin) => {
                let mut s = serve_dpdk(bin, &kp, &sp, n, args.burst, reps)?;
                let theirs = run_dpdk(&mut s)?;
                let p = paired(&table, &seq, n_pairs, &mut s)?;
                drop(s);
                c_harness::remove_eal_dir("hash");
                eprintln!("{:>4} entries: {}", human(n), p.summary("rte_hash"));
                (Some(theirs), Some(p))
            }
            None => (None, None),
        };
        drop((table, seq));
        let get = |k: &str| {
            theirs
                .as_ref()
                .and_then(|t| t.iter().find(|(a, _)| a == k).map(|(_, v)| *v))
        };
        let rte_bulk = get("bulk_cycles_per_lookup");
        let rte_single = get("single_cycles_per_lookup");
        // rte_hash may fail a few adds at full slot load (power-of-two sizes): then its
        // lookups of those keys miss, and only an upper bound holds.
        if let Some(h) = get("hits_bulk") {
            let failed = get("add_fail").unwrap_or(0.0) > 0.0;
            if h > ours.hits as f64 || (!failed && h != ours.hits as f64) {
                return Err(format!(
                    "{} entries: rte_hash found {h} keys per pass ({:?} adds failed), pktvec {}",
                    human(n),
                    get("add_fail"),
                    ours.hits
                )
                .into());
            }
        }
        println!(
            "{:>4} entries: pktvec no-prefetch {:.1}, lookup_bulk {:.1}, best b={best_b} {best:.1}{} cycles/lookup; {:.2} B/entry{}",
            human(n),
            ours.no_prefetch,
            ours.bulk,
            match (rte_bulk, rte_single) {
                (Some(b), Some(s)) => format!("; rte_hash bulk {b:.1}, single {s:.1}"),
                _ => String::new(),
            },
            ours.bytes_per_entry,
            get("mem_bytes").map_or(String::new(), |m| format!(" (rte_hash {:.1})", m / n as f64)),
        );
        if let Some(p) = &pairs {
            headline.push(p.headline(
                &format!("{} entries, 2 lookups/packet", human(n)),
                "rte_hash_lookup_bulk_data",
                2.0,
            ));
        }
        let mut curve: Vec<(f64, f64)> =
            ours.sub_batch.iter().map(|&(b, c)| (b as f64, c)).collect();
        curve.push((256.0, ours.bulk));
        curves.push((format!("pktvec {} entries", human(n)), curve));
        rows.push(json!({
            "entries": n,
            "lookups": lookups,
            "miss_pct": args.miss_pct,
            "table_mib": ours.table_bytes as f64 / (1 << 20) as f64,
            "bytes_per_entry": ours.bytes_per_entry,
            "keys_in_secondary_pct": ours.in_secondary_pct,
            "build_ns_per_insert": ours.build_ns_per_insert,
            "no_prefetch": ours.no_prefetch,
            "bulk": ours.bulk,
            "sub_batch": ours.sub_batch,
            "best_b": best_b,
            "best": best,
            "prefetch_gain_pct": 100.0 * (ours.no_prefetch / ours.bulk - 1.0),
            "dpdk_burst": bin.as_ref().map(|_| args.burst),
            "dpdk_bulk": rte_bulk,
            "dpdk_single": rte_single,
            "dpdk_bytes_per_entry": get("mem_bytes").map(|m| m / n as f64),
            "dpdk_add_fail": get("add_fail"),
            "dpdk_hits_per_pass": get("hits_bulk"),
            "pktvec_hits_per_pass": ours.hits,
            "dpdk_build_ns_per_insert": get("build_cycles").map(|c| c / get("tsc_hz").unwrap_or(clock::tsc_hz()) * 1e9 / n as f64),
            "pairs": pairs.as_ref().map(|p| p.json("rte_hash_lookup_bulk_data")),
        }));
    }
    if let Some(p) = sitting.plot_path("subbatch") {
        crate::plot::lines(
            &p,
            "MAC table, 2 lookups/packet: lookup_bulk_sub by sub-batch b (256 = lookup_bulk)",
            "sub-batch b",
            "TSC cycles per lookup (median)",
            &curves,
        )?;
    }
    let detail = json!({
        "lookups": lookups,
        "reps": reps,
        "burst": args.burst,
        "dpdk": bin.is_some(),
        "pairs": n_pairs,
        "note": "cycles per lookup, median of reps; no_prefetch = lookup per key, bulk = lookup_bulk (hash + prefetch a half-vector, then search), sub_batch = lookup_bulk_sub; prefetch_gain_pct = no_prefetch / bulk - 1. pairs (the headline): single passes of lookup_bulk and rte_hash_lookup_bulk_data back to back, each after an untimed one, the first of a pair alternating; medians of each side and of the pairs' ratios",
        "sizes": rows,
    });
    sitting.finish(headline, detail)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_and_print() {
        assert_eq!(parse_size("64K"), Ok(65_536));
        assert_eq!(parse_size("16M"), Ok(1 << 24));
        assert_eq!(human(1 << 20), "1M");
        assert_eq!(human(1000), "1000");
    }

    #[test]
    fn macs_are_distinct() {
        let mut v: Vec<[u8; 6]> = (0..10_000).map(|i| mac(i).0).collect();
        v.sort();
        v.dedup();
        assert_eq!(v.len(), 10_000);
    }
}
