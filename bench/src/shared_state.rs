//! `shared-state`: stateful NFs on many workers under each synchronisation (seed `004_*`),
//! and pktvec's flow table against DPDK's `rte_hash` under concurrent writers and readers.
//!
//! * **Table vs rte_hash**: `hash_multiwriter_autotest` (each of 2 cores inserts 2,359,296
//!   keys into one table; cycles per insertion, with and without transactional memory) and
//!   `hash_readwrite_lf_perf_autotest` (1 writer adding keys while 1 reader looks up keys
//!   present; cycles per lookup, lock-free) from `dpdk-test`, against a `FlowTable` under
//!   each strategy doing the same operations (4-byte keys, the same key counts).
//! * **Seed Fig. 1**: each NF on one worker with the conflict profiler: the share of packet
//!   pairs within windows of 2..16 consecutive packets whose read/write sets conflict, per
//!   object and per 64-byte line, and the share of packets conflicting with any other of
//!   their window.
//! * **Seed Fig. 7**: each NF on 2 workers under each strategy, paced at an offered rate
//!   into a 1,024-descriptor receive ring per worker after 20,000 unpaced warm-up packets:
//!   the highest rate at which at least 9 of 10 short runs drop nothing (bisection),
//!   normalised to fine-grained locks; RTM commit rate and aborts by cause where RTM
//!   exists.
//!
//! ```text
//! cargo run --release -p pktvec-bench -- shared-state
//! ```

use std::collections::HashSet;
use std::sync::Arc;

use pktvec::graph::clock;
use pktvec::nf::runtime::{self, Nf, RunConfig};
use pktvec::state::profile::ConflictRow;
use pktvec::state::rtm::Rtm;
use pktvec::state::{Domain, FlowTable, Strategy, SyncConfig, SyncStats, TableConfig};
use serde_json::{json, Value};

use crate::sitting::{Common, Headline, Sitting};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// Options of `shared-state`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    common: Common,
    /// NFs to measure (comma-separated: nat, classifier, intruder, dhcpd)
    #[arg(long, value_delimiter = ',', default_values_t = ["nat".to_string(), "classifier".into(), "intruder".into(), "dhcpd".into()])]
    nfs: Vec<String>,
    /// Workers for the offered-rate search
    #[arg(long, default_value_t = 2)]
    workers: usize,
    /// Runs per offered rate (drop-free in all but one of them passes)
    #[arg(long, default_value_t = 10)]
    runs: usize,
    /// Length of each run in milliseconds of offered traffic
    #[arg(long, default_value_t = 25)]
    run_ms: u64,
    /// Bisection steps per NF and strategy
    #[arg(long, default_value_t = 7)]
    steps: usize,
    /// Rounds of the offered-rate search (each searches every strategy; the median is kept)
    #[arg(long, default_value_t = 5)]
    rounds: usize,
    /// Print the drops of every offered run that lost packets
    #[arg(long)]
    verbose: bool,
    /// Do not measure the flow table against rte_hash (the NFs only)
    #[arg(long)]
    no_table: bool,
    /// Do not run dpdk-test (the table rows then have no anchor)
    #[arg(long)]
    no_dpdk: bool,
}

fn mix(k: u64) -> u64 {
    let mut x = k.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

// ---- the flow table against rte_hash -------------------------------------------------

/// How far ahead the table loops prefetch a key's bucket.
const PREFETCH: usize = 8;

/// `hash_multiwriter_autotest`'s keys per core.
const MW_KEYS_PER_CORE: u64 = 2_359_296;

/// Cycles per insertion when `workers` threads insert disjoint key ranges at once (as
/// `hash_multiwriter_autotest`: each thread's cycles over its insertions, averaged).
fn table_multiwriter(
    strategy: Strategy,
    workers: usize,
    keys_per_worker: u64,
) -> Res<(f64, SyncStats)> {
    let d = Domain::new(SyncConfig {
        strategy,
        workers,
        stripes: 1024,
        ..SyncConfig::default()
    })?;
    let cap = (keys_per_worker as usize * workers) * 5 / 4;
    let t = Arc::new(FlowTable::<u32, u32>::new(
        &d,
        "multiwriter",
        TableConfig {
            capacity: cap,
            overprovision: 1.6,
        },
    ));
    // under flow affinity each worker inserts the keys of its own stripes
    let keys: Vec<Vec<u32>> = (0..workers)
        .map(|w| {
            let mut v = Vec::with_capacity(keys_per_worker as usize);
            let mut k = 0u32;
            while (v.len() as u64) < keys_per_worker {
                k += 1;
                let h = mix(u64::from(k));
                let mine = match strategy {
                    Strategy::Affinity => d.owner(t.stripe(h)) == w,
                    _ => k as usize % workers == w,
                };
                if mine {
                    v.push(k);
                }
            }
            v
        })
        .collect();
    let barrier = Arc::new(std::sync::Barrier::new(workers));
    let out: Vec<(u64, u64, SyncStats)> = std::thread::scope(|s| {
        let hs: Vec<_> = keys
            .iter()
            .enumerate()
            .map(|(w, ks)| {
                let (d, t, barrier) = (d.clone(), t.clone(), barrier.clone());
                s.spawn(move || {
                    let _ = core_affinity::set_for_current(core_affinity::CoreId { id: w });
                    let (mut sync, mut tw) = (d.worker(w), t.worker(w));
                    barrier.wait();
                    let t0 = clock::now();
                    let mut ok = 0u64;
                    for (i, &k) in ks.iter().enumerate() {
                        // the bucket of the key 8 ahead is on its way (rte_hash's bulk
                        // paths prefetch too)
                        if let Some(&a) = ks.get(i + PREFETCH) {
                            t.prefetch(mix(u64::from(a)));
                        }
                        let h = mix(u64::from(k));
                        ok += u64::from(sync.section(t.stripe(h), |sec| {
                            t.entry(sec, &mut tw, k, h, 0)
                                .map(|(_, v, _)| *v = k)
                                .is_ok()
                        }));
                    }
                    (clock::now() - t0, ok, *sync.stats())
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().expect("writer")).collect()
    });
    let cycles: u64 = out.iter().map(|o| o.0).sum();
    let inserted: u64 = out.iter().map(|o| o.1).sum();
    if inserted != keys_per_worker * workers as u64 {
        return Err(format!(
            "{strategy}: inserted {inserted} of {}",
            keys_per_worker * workers as u64
        )
        .into());
    }
    let mut st = SyncStats::default();
    out.iter().for_each(|o| st.add(&o.2));
    Ok((cycles as f64 / inserted as f64, st))
}

/// Cycles per lookup of one reader looking up present keys while one writer inserts new
/// ones (as `hash_readwrite_lf_perf_autotest`'s "no key-shifts, lookup - hit").
fn table_read_while_write(strategy: Strategy, keys: u64) -> Res<(f64, SyncStats)> {
    let d = Domain::new(SyncConfig {
        strategy,
        workers: 2,
        stripes: 1024,
        ..SyncConfig::default()
    })?;
    let t = Arc::new(FlowTable::<u32, u32>::new(
        &d,
        "readwrite",
        TableConfig {
            capacity: keys as usize * 2,
            overprovision: 1.6,
        },
    ));
    // present keys, inserted before; the writer adds as many others meanwhile. Under flow
    // affinity the reader (worker 0) and the writer (worker 1) each keep to their stripes.
    let pick = |w: usize, base: u32| -> Vec<u32> {
        let mut v = Vec::with_capacity(keys as usize);
        let mut k = base;
        while (v.len() as u64) < keys {
            k += 1;
            let ok = strategy != Strategy::Affinity || d.owner(t.stripe(mix(u64::from(k)))) == w;
            if ok {
                v.push(k);
            }
        }
        v
    };
    let present = pick(0, 0);
    let added = pick(1, 1 << 30);
    {
        let (mut sync, mut tw) = (d.worker(0), t.worker(0));
        for &k in &present {
            let h = mix(u64::from(k));
            sync.section(t.stripe(h), |sec| {
                t.entry(sec, &mut tw, k, h, 0).map(|_| ())
            })
            .map_err(|e| format!("{strategy}: prefill: {e}"))?;
        }
    }
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let r = std::thread::scope(|s| {
        let (d1, t1, stop1) = (d.clone(), t.clone(), stop.clone());
        let writer = s.spawn(move || {
            let _ = core_affinity::set_for_current(core_affinity::CoreId { id: 1 });
            let (mut sync, mut tw) = (d1.worker(1), t1.worker(1));
            for &k in &added {
                if stop1.load(std::sync::atomic::Ordering::Relaxed) {
                    break;
                }
                let h = mix(u64::from(k));
                sync.section(t1.stripe(h), |sec| {
                    let _ = t1.entry(sec, &mut tw, k, h, 0);
                });
            }
        });
        // the reader runs in its own thread pinned to core 0 (this thread's own affinity
        // stays as it was: the NF workers later pin from the cores it may use)
        let (d0, t0_, present0) = (d.clone(), t.clone(), &present);
        let reader = s.spawn(move || {
            let _ = core_affinity::set_for_current(core_affinity::CoreId { id: 0 });
            let (d, t, present) = (d0, t0_, present0);
            let mut sync = d.worker(0);
            let t0 = clock::now();
            let mut hits = 0u64;
            let mut n = 0u64;
            // as long as the writer writes (at most 4 passes)
            for _ in 0..4 {
                for (i, &k) in present.iter().enumerate() {
                    if let Some(&a) = present.get(i + PREFETCH) {
                        t.prefetch(mix(u64::from(a)));
                    }
                    let h = mix(u64::from(k));
                    hits +=
                        u64::from(sync.section(t.stripe(h), |sec| t.find(sec, &k, h).is_some()));
                }
                n += present.len() as u64;
                if writer.is_finished() {
                    break;
                }
            }
            let cycles = clock::now() - t0;
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            let _ = writer.join();
            (cycles as f64 / n as f64, hits == n, *sync.stats())
        });
        reader.join().expect("reader")
    });
    if !r.1 {
        return Err(format!("{strategy}: a present key was missed").into());
    }
    Ok((r.0, r.2))
}

/// `hash_multiwriter_autotest`: cycles per insertion without and with TM (None where the
/// autotest skipped it).
fn dpdk_multiwriter() -> Res<(Option<f64>, Option<f64>, String)> {
    let out = crate::dpdk_test::run("hash_multiwriter_autotest", 1024, "0-1")?;
    let mut without = None;
    let mut with = None;
    let mut tm = false;
    for l in out.lines() {
        if l.contains("with Hardware transactional memory") && !l.contains("without") {
            tm = true;
        }
        if l.contains("without Hardware transactional memory") {
            tm = false;
        }
        if let Some(v) = l.split("cycles per insertion:").nth(1) {
            let v: f64 = v.trim().parse()?;
            if tm {
                with = Some(v)
            } else {
                without = Some(v)
            }
        }
    }
    if without.is_none() && with.is_none() {
        return Err(format!("hash_multiwriter_autotest printed no figure:\n{out}").into());
    }
    Ok((without, with, out))
}

/// `hash_readwrite_lf_perf_autotest`: cycles per lookup, 1 writer and 1 reader, lock-free,
/// "Hash add - no key-shifts, lookup - hit".
fn dpdk_readwrite_lf() -> Res<(f64, String)> {
    let out = crate::dpdk_test::run("hash_readwrite_lf_perf_autotest", 2048, "0-1")?;
    let v = out
        .lines()
        .skip_while(|l| !l.contains("Results summary"))
        .find(|l| l.contains("no key-shifts, lookup - hit"))
        .and_then(|l| l.split_whitespace().last())
        .and_then(|v| v.parse::<f64>().ok())
        .ok_or_else(|| format!("hash_readwrite_lf_perf_autotest: no figure:\n{out}"))?;
    Ok((v, out))
}

// ---- the NFs -------------------------------------------------------------------------

/// Worker w's frames, shared between runs.
pub type Frames = Vec<Arc<Vec<Vec<u8>>>>;

/// The offered-rate search of one NF: `(strategy, workers, how)`.
pub type Fig7Fn = dyn Fn(Strategy, usize, &Search) -> Res<Fig7Row>;

/// The conflict profile of one NF over `packets` packets, and its same-flow share.
pub type Fig1Fn = dyn Fn(u64) -> Res<(Vec<ConflictRow>, f64)>;

/// One NF as the bench drives it.
pub struct Case {
    /// `nat`, `classifier`, …
    pub name: &'static str,
    /// The seed's throughput gain of transactions over locks (Fig. 7).
    pub seed_tm_gain: f64,
    /// The seed's commit rate at saturation (§6.2).
    pub seed_commit: f64,
    /// Offered-rate search on `workers` workers under `strategy`.
    pub fig7: Box<Fig7Fn>,
    /// Conflict profile over `packets` packets on one worker, and the same-flow share
    /// within 100 packets of its traffic.
    pub fig1: Box<Fig1Fn>,
}

/// How the offered-rate search runs.
pub struct Search {
    /// Runs per rate.
    pub runs: usize,
    /// Milliseconds of traffic per run.
    pub run_ms: u64,
    /// Bisection steps.
    pub steps: usize,
    /// Print why each failing run failed.
    pub verbose: bool,
}

/// One NF under one strategy.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Fig7Row {
    /// Strategy.
    pub strategy: String,
    /// Unpaced rate, all workers, Mpps.
    pub unpaced_mpps: f64,
    /// Highest offered rate (all workers) with at least 9 of 10 runs drop-free, Mpps.
    pub max_mpps: f64,
    /// Transactions committed at the unpaced run.
    pub commits: u64,
    /// Aborts by cause at the unpaced run: conflict, capacity, lock busy, other.
    pub aborts: [u64; 4],
    /// Sections that fell back to the lock.
    pub fallbacks: u64,
    /// Commit rate.
    pub commit_rate: f64,
    /// Lock acquisitions that waited, per section, at the unpaced run.
    pub lock_waits: f64,
    /// Each round's drop-free rate (the row is the median round's).
    pub rounds: Vec<f64>,
}

/// Packets per worker each offered run delivers unpaced before pacing starts (the
/// tables, the caches and the worker threads warm).
const WARMUP: u64 = 20_000;

/// Handoff ring slots under flow affinity: deeper than a worker's unpaced warm-up, so
/// only the paced phase can overflow it.
const HANDOFF_RING: usize = 1 << 15;

/// The drops that mean the NF could not keep up (not the traffic's malformed packets).
fn overload_drops(r: &runtime::NfRun) -> u64 {
    r.rx_overflow() + r.drops_of("congestion drop") + r.drops_of("no buffer")
}

/// Makes an NF (fresh state) and each worker's frames for `(strategy, workers)`.
pub type Setup<N> = dyn Fn(Strategy, usize) -> Res<(Arc<N>, Frames)>;

/// The offered-rate search for one NF under one strategy: each run a fresh NF from
/// `setup`, paced per worker into a 1,024-descriptor ring; bisection on the rate.
pub fn search<N: Nf>(
    setup: &Setup<N>,
    strategy: Strategy,
    workers: usize,
    s: &Search,
) -> Res<Fig7Row> {
    let run = |nf: &Arc<N>, frames: &Frames, cfg: &RunConfig| {
        let f = frames.clone();
        runtime::run(nf, move |w| f[w].clone(), cfg)
    };
    // unpaced: what the workers can take (the handoff ring as deep as the offered runs'
    // backlog can get)
    let (nf, frames) = setup(strategy, workers)?;
    let unpaced_cfg = RunConfig {
        packets_per_worker: 200_000,
        handoff_ring: HANDOFF_RING,
        ..RunConfig::default()
    };
    let r = run(&nf, &frames, &unpaced_cfg)?;
    let c = r.report.conservation();
    if !c.is_balanced() {
        return Err(format!("{}: {strategy}: conservation {c:?}", N::NAME).into());
    }
    let unpaced = r.report.packets_per_second();
    let st = r.sync;
    drop(nf);
    // bisection on the per-worker offered rate
    let (mut lo, mut hi) = (0.0f64, unpaced / workers as f64 * 1.3);
    let mut best = 0.0;
    for _ in 0..s.steps {
        let rate = (lo + hi) / 2.0;
        let mut fails = 0;
        for _ in 0..s.runs {
            let (nf, frames) = setup(strategy, workers)?;
            let paced = ((rate * s.run_ms as f64 / 1000.0) as u64).max(1000);
            let cfg = RunConfig {
                packets_per_worker: WARMUP + paced,
                rate_pps: Some(rate),
                warmup: WARMUP,
                handoff_ring: HANDOFF_RING,
                ..RunConfig::default()
            };
            let r = run(&nf, &frames, &cfg)?;
            if overload_drops(&r) > 0 {
                if s.verbose {
                    eprintln!(
                        "{} {strategy} at {rate:.0}/s: overflow {} congestion {} no buffer {}",
                        N::NAME,
                        r.rx_overflow(),
                        r.drops_of("congestion drop"),
                        r.drops_of("no buffer")
                    );
                }
                fails += 1;
                if fails > s.runs / 10 {
                    break;
                }
            }
        }
        if fails <= s.runs / 10 {
            best = rate;
            lo = rate;
        } else {
            hi = rate;
        }
    }
    Ok(Fig7Row {
        strategy: strategy.to_string(),
        unpaced_mpps: unpaced / 1e6,
        max_mpps: best * workers as f64 / 1e6,
        commits: st.commits,
        aborts: [
            st.abort_conflict,
            st.abort_capacity,
            st.abort_explicit,
            st.abort_other,
        ],
        fallbacks: st.fallbacks,
        commit_rate: st.commit_rate(),
        lock_waits: st.lock_contended as f64 / st.sections.max(1) as f64,
        rounds: Vec::new(),
    })
}

/// The conflict profile of one NF: one worker, coarse lock, `packets` packets of worker
/// 0's frames; and the share of its frames with a same-flow frame among the 100 before.
pub fn profile<N: Nf>(
    setup: &Setup<N>,
    flow: impl Fn(&[u8]) -> Option<u64>,
    packets: u64,
) -> Res<(Vec<ConflictRow>, f64)> {
    let (nf, frames) = setup(Strategy::Coarse, 1)?;
    let share = runtime::same_flow_share(&frames[0], 100, flow);
    let cfg = RunConfig {
        packets_per_worker: packets,
        profile: true,
        pin: false,
        ..RunConfig::default()
    };
    let f = frames[0].clone();
    let r = runtime::run(&nf, move |_| f.clone(), &cfg)?;
    let p = r
        .workers
        .into_iter()
        .find_map(|w| w.profile)
        .ok_or("no profile came back")?;
    Ok((p.conflicts(2..=16), share))
}

/// The NFs this tool knows.
fn cases(names: &[String]) -> Res<Vec<Case>> {
    let known: HashSet<&str> = ["nat", "classifier", "intruder", "dhcpd"].into();
    for n in names {
        if !known.contains(n.as_str()) {
            return Err(format!("unknown NF {n:?} (nat, classifier, intruder, dhcpd)").into());
        }
    }
    let mut v = Vec::new();
    for n in names {
        v.push(crate::shared_state_cases::case(n)?);
    }
    Ok(v)
}

/// Runs the area.
pub fn run(args: Args) -> Res<()> {
    let sitting = Sitting::begin(
        "shared-state",
        "stateful NFs under locks, flow affinity and hardware transactions",
        "shared-state.md",
        &args.common,
    )?;
    let quick = sitting.quick();
    let strategies = Strategy::available();
    let rtm = Rtm::detect();
    println!(
        "strategies: {} ({})",
        strategies
            .iter()
            .map(|s| s.name())
            .collect::<Vec<_>>()
            .join(", "),
        match &rtm {
            Ok(_) => "RTM commits here".to_string(),
            Err(e) => format!("no RTM: {e}"),
        }
    );
    let mut headline = Vec::new();

    // -- the table against rte_hash
    let mw_keys = if quick {
        MW_KEYS_PER_CORE / 16
    } else {
        MW_KEYS_PER_CORE
    };
    let rw_keys = if quick { 1 << 17 } else { 1 << 21 };
    let (dpdk_mw, dpdk_rw) = if args.no_dpdk || args.no_table {
        (None, None)
    } else {
        let mw = dpdk_multiwriter()?;
        let rw = dpdk_readwrite_lf()?;
        println!(
            "dpdk-test: hash_multiwriter_autotest {:?} cycles/insert (with TM {:?}); hash_readwrite_lf_perf_autotest {} cycles/lookup",
            mw.0, mw.1, rw.0
        );
        (Some(mw), Some(rw))
    };
    let mut table_rows = Vec::new();
    for &s in strategies.iter().filter(|_| !args.no_table) {
        let (ins, ist) = table_multiwriter(s, 2, mw_keys)?;
        let (look, lst) = table_read_while_write(s, rw_keys)?;
        println!(
            "flow table, {s:>10}: {ins:7.1} cycles/insert (2 writers), {look:7.1} cycles/lookup (1 reader, 1 writer); commit rate {:.3}/{:.3}",
            ist.commit_rate(),
            lst.commit_rate()
        );
        table_rows.push(json!({
            "strategy": s.name(), "insert_cycles": ins, "lookup_cycles": look,
            "insert_sync": format!("{ist:?}"), "lookup_sync": format!("{lst:?}"),
        }));
        if s == Strategy::Fine || s == Strategy::Rtm {
            if let Some((Some(without), with, _)) = &dpdk_mw {
                let anchor = match (s, with) {
                    (Strategy::Rtm, Some(w)) => ("rte_hash multiwriter, TM (dpdk-test)", *w),
                    _ => ("rte_hash multiwriter (dpdk-test)", *without),
                };
                headline.push(Headline::cost(
                    &format!("flow table insert, 2 writers, {s}"),
                    "cycles",
                    ins,
                    anchor.0,
                    anchor.1,
                ));
            }
            if let Some((rw, _)) = &dpdk_rw {
                headline.push(Headline::cost(
                    &format!("flow table lookup while 1 writer inserts, {s}"),
                    "cycles",
                    look,
                    "rte_hash lock-free lookup (dpdk-test)",
                    *rw,
                ));
            }
        }
    }

    // -- the NFs
    let search_cfg = Search {
        runs: if quick { 3 } else { args.runs },
        run_ms: if quick { 10 } else { args.run_ms },
        steps: if quick { 3 } else { args.steps },
        verbose: args.verbose,
    };
    let rounds = if quick { 1 } else { args.rounds.max(1) };
    let mut nf_detail = Vec::new();
    for case in cases(&args.nfs)? {
        let (conf, share) = (case.fig1)(if quick { 5_000 } else { 50_000 })?;
        println!(
            "\n{}: same-flow share within 100 packets {:.1}%",
            case.name,
            100.0 * share
        );
        print!("{}", ConflictRow::table(&conf));
        // each round searches every strategy once, so that drift in the machine's speed
        // reaches all of them; the figure is the median round
        let mut per: Vec<Vec<Fig7Row>> = vec![Vec::new(); strategies.len()];
        for round in 0..rounds {
            for (i, &s) in strategies.iter().enumerate() {
                let row = (case.fig7)(s, args.workers, &search_cfg)?;
                println!(
                    "  round {}: {s:>10}: unpaced {:6.2} Mpps, drop-free (9 of {} runs) {:6.2} Mpps; commit rate {:.1}%, aborts conflict/capacity/lock/other {:?}, fallbacks {}",
                    round + 1, row.unpaced_mpps, search_cfg.runs, row.max_mpps, 100.0 * row.commit_rate, row.aborts, row.fallbacks
                );
                per[i].push(row);
            }
        }
        let rows: Vec<Fig7Row> = per
            .into_iter()
            .map(|mut v| {
                let rates: Vec<f64> = v.iter().map(|r| r.max_mpps).collect();
                v.sort_by(|a, b| a.max_mpps.total_cmp(&b.max_mpps));
                let mut m = v[v.len() / 2].clone();
                m.rounds = rates;
                m
            })
            .collect();
        for r in &rows {
            println!(
                "  {:>10}: median drop-free {:6.2} Mpps (rounds {:?})",
                r.strategy, r.max_mpps, r.rounds
            );
        }
        let fine = rows
            .iter()
            .find(|r| r.strategy == "fine")
            .map_or(f64::NAN, |r| r.max_mpps);
        for r in &rows {
            if r.strategy == "affinity" || r.strategy == "rtm" {
                headline.push(Headline::rate(
                    &format!(
                        "{} on {} workers, {} vs fine locks (drop-free rate)",
                        case.name, args.workers, r.strategy
                    ),
                    "Mpps",
                    r.max_mpps,
                    "fine locks",
                    fine,
                ));
            }
        }
        nf_detail.push(json!({
            "nf": case.name,
            "same_flow_share": share,
            "conflicts": conf.iter().map(|r| json!({
                "window": r.window, "pairs_by_object": r.pairs_by_object, "pairs_by_line": r.pairs_by_line,
                "packets_by_object": r.packets_by_object, "packets_by_line": r.packets_by_line,
            })).collect::<Vec<Value>>(),
            "fig7": rows,
            "seed_tm_gain": case.seed_tm_gain,
            "seed_commit_rate": case.seed_commit,
        }));
    }
    if let Some(svg) = sitting.plot_path("conflicts") {
        let series: Vec<(String, Vec<(f64, f64)>)> = nf_detail
            .iter()
            .flat_map(|n| {
                let name = n["nf"].as_str().unwrap_or("?").to_string();
                let pts = |key: &str| -> Vec<(f64, f64)> {
                    n["conflicts"]
                        .as_array()
                        .map(|rows| {
                            rows.iter()
                                .map(|r| {
                                    (
                                        r["window"].as_f64().unwrap_or(0.0),
                                        100.0 * r[key].as_f64().unwrap_or(0.0),
                                    )
                                })
                                .collect()
                        })
                        .unwrap_or_default()
                };
                [
                    (format!("{name}, objects"), pts("pairs_by_object")),
                    (format!("{name}, 64-byte lines"), pts("pairs_by_line")),
                ]
            })
            .collect();
        crate::plot::lines(
            &svg,
            "conflicting packet pairs within a window (seed Fig. 1)",
            "window (consecutive packets)",
            "% of pairs",
            &series,
        )?;
    }
    let detail = json!({
        "rtm": rtm.as_ref().err().map(|e| e.to_string()),
        "strategies": strategies.iter().map(|s| s.name()).collect::<Vec<_>>(),
        "table": table_rows,
        "dpdk_multiwriter": dpdk_mw.as_ref().map(|m| json!({"without_tm": m.0, "with_tm": m.1})),
        "dpdk_readwrite_lf": dpdk_rw.as_ref().map(|r| r.0),
        "multiwriter_keys_per_core": mw_keys,
        "readwrite_keys": rw_keys,
        "search": {"rounds": rounds, "runs": search_cfg.runs, "run_ms": search_cfg.run_ms, "steps": search_cfg.steps, "workers": args.workers, "rx_ring": 1024},
        "nfs": nf_detail,
    });
    sitting.finish(headline, detail)?;
    Ok(())
}
