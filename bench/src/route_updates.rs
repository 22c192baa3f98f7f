//! `route-updates`: a BGP update stream replayed into l3fwd's FIBs while workers forward.
//!
//! The FIBs are one `Arc<Lpm4>` and one `Arc<SharedLpm6>` all workers' lookup nodes read;
//! this thread (the control plane) applies the stream's IPv4 and IPv6 announcements and
//! withdrawals, in the stream's proportions, at a fixed pace while they forward (IPv4 one
//! by one, `Lpm4::add`/`delete`; IPv6 in batches of the pacing step, `SharedLpm6::apply`).
//! Every route carries its own next-hop id: the base table's routes 0..n, a default route,
//! and each announcement of the stream the next id, so a node spliced between each lookup
//! and its rewrite (`fib-check`, `fib-check6`) can check every packet's answer: the id must
//! have been installed already, and for a prefix that covers the packet's destination (else
//! it is dropped as "next hop never installed for its prefix"); then it maps the id to the
//! adjacency. Half of each family's traffic goes to prefixes the stream changes, half to
//! the base table's; the frames are half IPv4, half IPv6.
//!
//! Each round runs a quiet phase, a replay of the stream's IPv4 updates alone and a replay of
//! the whole stream; the headline is the forwarding rate during each replay over the rate
//! without (target ≥ 95%), with no packet lost (every packet sent or counted) and no wrong
//! answer. The control thread's update cost
//! (the whole stream applied as fast as it goes, with no workers) is set next to `rte_lpm`'s
//! add and delete costs from `lpm_perf_autotest` (`dpdk-test`), whose table and routes are
//! its own.
//!
//! ```text
//! cargo run --release -p pktvec-bench -- route-updates
//! ```

use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use pktvec::graph::builtin::NullSink;
use pktvec::graph::{
    clock, next_nodes, node_errors, Context, Frame, Graph, GraphBuilder, Node, Verdict,
};
use pktvec::io::generator::{Generator, GeneratorNext, GeneratorSource};
use pktvec::io::profile::TrafficProfile;
use pktvec::lookup::ipv4::{Lpm4, Lpm4Config};
use pktvec::lookup::ipv6::{Lpm6, Lpm6Op, SharedLpm6};
use pktvec::lookup::routes::{self, Route4, Route6, SplitMix64};
use pktvec::lookup::updates::{self, Update, UpdateStream};
use pktvec::packet::Packet;

type Update4 = Update<Ipv4Addr>;
type Update6 = Update<Ipv6Addr>;
use pktvec::nodes::apps::l3fwd::{
    L3fwd, L3fwdConfig, IP4_LOOKUP, IP4_REWRITE, IP6_LOOKUP, IP6_REWRITE,
};
use pktvec::nodes::lookup::{Ip4LookupNext, Ip6LookupNext};
use pktvec::packet::{BufferPool, PoolConfig};
use pktvec_workers::runtime::{Workers, WorkersConfig, WorkersReport};
use serde_json::json;

use crate::c_harness;
use crate::forwarders::graphs::{self, median, BUFFERS};
use crate::sitting::{Common, Headline, Sitting};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// Options of `route-updates`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    common: Common,
    /// Directory of the route tables and update streams: $PKTVEC_SHARED_DATA/routes when
    /// that is set, else shared/data/routes next to this checkout; without the three files
    /// below nothing is measured (a note says so, no data file is written)
    #[arg(long, default_value_os_t = c_harness::default_routes_dir())]
    routes_dir: PathBuf,
    /// The base table (a file in --routes-dir)
    #[arg(long, default_value = "tier1-fulltable-ipv4.txt.xz")]
    table: String,
    /// The IPv6 base table (a file in --routes-dir)
    #[arg(long, default_value = "tier1-fulltable-ipv6.txt.xz")]
    table6: String,
    /// The update stream (`bgpdump -m` text, a file in --routes-dir)
    #[arg(long, default_value = "ripe-ris-updates-20160811.1600.bgpdump.txt.xz")]
    updates: String,
    /// Updates applied per second while the workers forward
    #[arg(long, default_value_t = 20_000.0)]
    rate: f64,
    /// Workers forwarding
    #[arg(long, default_value_t = 2)]
    workers: usize,
    /// Rounds of (quiet, IPv4 replay, whole replay), the order reversed every other round;
    /// the ratios are the medians of the rounds' own [default: 7; --quick: 1]
    #[arg(long)]
    rounds: Option<usize>,
    /// Updates replayed per phase, both families [default: the whole stream; --quick: 3000]
    #[arg(long)]
    max_updates: Option<usize>,
    /// Measure pktvec only, without dpdk-test's lpm_perf_autotest (also left out with
    /// --quick: it takes minutes)
    #[arg(long)]
    no_dpdk: bool,
}

/// A destination address as `fib-check` compares it with a prefix.
trait Addr: Copy + Eq + Default + Send + Sync + 'static {
    /// The destination of a packet that starts at its IP header.
    fn dst(p: &Packet<'_>) -> Option<Self>;
    /// The address with the bits beyond `len` cleared.
    fn masked(self, len: u8) -> Self;
}

impl Addr for u32 {
    fn dst(p: &Packet<'_>) -> Option<u32> {
        p.bytes_at::<4>(16).map(|d| u32::from_be_bytes(*d))
    }
    fn masked(self, len: u8) -> u32 {
        self & u32::MAX.checked_shl(32 - u32::from(len)).unwrap_or(0)
    }
}

impl Addr for u128 {
    fn dst(p: &Packet<'_>) -> Option<u128> {
        p.bytes_at::<16>(24).map(|d| u128::from_be_bytes(*d))
    }
    fn masked(self, len: u8) -> u128 {
        self & u128::MAX.checked_shl(128 - u32::from(len)).unwrap_or(0)
    }
}

/// Next-hop ids and what they were installed for, for addresses `A` (`u32` IPv4, `u128`
/// IPv6).
struct Ids<A> {
    /// `prefix[id]`: (network, length) the id's route is for.
    prefix: Vec<(A, u8)>,
    /// Ids `< issued` have been handed to the FIB (set before the change is made).
    issued: AtomicU32,
}

impl<A: Addr> Ids<A> {
    /// Ids for `prefix` of which the first `issued` are installed.
    fn new(prefix: Vec<(A, u8)>, issued: u32) -> Self {
        Ids {
            prefix,
            issued: AtomicU32::new(issued),
        }
    }

    /// Whether `id` was installed, for a prefix covering `dst`.
    #[inline]
    fn valid(&self, id: u32, dst: A, issued: u32) -> bool {
        id < issued
            && self
                .prefix
                .get(id as usize)
                .is_some_and(|&(net, len)| dst.masked(len) == net)
    }

    /// Issues the next id (before the route carrying it is installed, so that a lookup that
    /// answers it finds it issued).
    fn issue(&self, next_id: &mut u32) -> u32 {
        self.issued.fetch_max(*next_id + 1, Ordering::Release);
        *next_id += 1;
        *next_id - 1
    }
}

next_nodes! {
    /// The arc of `fib-check` (set to the family's rewrite node).
    pub enum FibCheckNext {
        /// Answers that check out, their id mapped to the adjacency.
        Rewrite = "ip4-rewrite",
    }
}

node_errors! {
    /// Why `fib-check` drops.
    pub enum FibCheckError {
        /// The answer is an id not installed yet, or installed for a prefix that does not
        /// cover the destination.
        Wrong = "next hop never installed for its prefix",
        /// No destination to check.
        Truncated = "truncated ip header",
    }
}

/// Checks the lookup's answer for every packet (see the module docs).
struct FibCheck<A> {
    ids: Arc<Ids<A>>,
    ports: u32,
}

impl<A: Addr> Node for FibCheck<A> {
    type Next = FibCheckNext;
    type Error = FibCheckError;

    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        // read once per vector, after the lookups: every id answered was issued by now
        let issued = self.ids.issued.load(Ordering::Acquire);
        let (ids, ports) = (&*self.ids, self.ports);
        cx.process_packets(frame, |p| {
            let Some(dst) = A::dst(&p.as_packet()) else {
                return Verdict::Drop(FibCheckError::Truncated);
            };
            let m = p.meta_mut();
            if ids.valid(m.opaque, dst, issued) {
                m.opaque %= ports;
                Verdict::Next(FibCheckNext::Rewrite)
            } else {
                Verdict::Drop(FibCheckError::Wrong)
            }
        });
    }
}

/// Half IPv4, half IPv6, 78-byte frames (the IPv6 minimum with UDP), 98% inside a prefix.
const PROFILE: &str =
    "[mix]\nipv4 = 0.5\nipv6 = 0.5\n[flows]\ncount = 65536\n[sizes]\nfixed = 78\n\
                       [destinations]\nipv4_hit_rate = 0.98\nipv6_hit_rate = 0.98\n";

/// Runs the measurement.
pub fn run(args: Args) -> Res<()> {
    if args.workers == 0 || args.rate <= 0.0 {
        return Err("--workers and --rate must be positive".into());
    }
    let sitting = Sitting::begin(
        "route-updates",
        "Route updates under load: a BGP stream replayed into l3fwd's FIB while workers forward",
        "live-updates.md",
        &args.common,
    )?;
    let quick = sitting.quick();
    let rounds = args.rounds.unwrap_or(if quick { 1 } else { 7 });
    let table_path = args.routes_dir.join(&args.table);
    let upd_path = args.routes_dir.join(&args.updates);
    let table6_path = args.routes_dir.join(&args.table6);
    // Every case replays the real stream into the real tables: without them (a clone
    // without the shared data) there is nothing to measure, and the data file is left as
    // it is.
    let lost = c_harness::missing(&[table_path.clone(), upd_path.clone(), table6_path.clone()]);
    if !lost.is_empty() {
        c_harness::skip_note(
            "real route tables",
            &lost,
            "route-updates skipped (every case replays the real update stream into the real \
             tables); no data file written",
        );
        return Ok(());
    }
    let base = routes::load_ipv4_file(&table_path)
        .map_err(|e| format!("{}: {e} (see --routes-dir)", table_path.display()))?;
    let stream = updates::load_file(&upd_path)
        .map_err(|e| format!("{}: {e} (see --routes-dir)", upd_path.display()))?;
    let base6 = routes::load_ipv6_file(&table6_path)
        .map_err(|e| format!("{}: {e} (see --routes-dir)", table6_path.display()))?;
    let total = stream.ipv4.len() + stream.ipv6.len();
    let n_replay = args
        .max_updates
        .unwrap_or(if quick { 3000 } else { usize::MAX })
        .min(total);
    println!(
        "base tables {} ({} routes) and {} ({} routes); stream {}: {} messages, {} IPv4 updates \
         ({} announcements), {} IPv6 updates ({} announcements), {} other skipped; \
         {n_replay} replayed per phase at {} updates/s",
        args.table,
        base.len(),
        args.table6,
        base6.len(),
        args.updates,
        stream.messages,
        stream.ipv4.len(),
        stream.announcements4(),
        stream.ipv6.len(),
        stream.announcements6(),
        stream.skipped_other,
        args.rate
    );

    let (ids, first_announcement) = ids_for(
        base.iter().map(|r| (u32::from(r.addr), r.len)),
        &stream.ipv4,
        u32::from,
    );
    let ids = Arc::new(ids);
    let mut fib_routes: Vec<Route4> = base
        .iter()
        .enumerate()
        .map(|(i, r)| Route4 {
            addr: r.addr,
            len: r.len,
            next_hop: i as u32,
        })
        .collect();
    fib_routes.push(Route4 {
        addr: Ipv4Addr::UNSPECIFIED,
        len: 0,
        next_hop: first_announcement - 1,
    });
    let fib = Arc::new(Lpm4::from_routes(Lpm4Config::default(), &fib_routes)?);
    // traffic: half to prefixes the stream changes, half to the base table's
    let mut changed: Vec<(Ipv4Addr, u8)> = stream.ipv4.iter().map(Update4::prefix).collect();
    changed.sort_unstable();
    changed.dedup();
    let mut rng = SplitMix64::new(0x6b9);
    let mut targets: Vec<Route4> = changed
        .iter()
        .map(|&(addr, len)| Route4 {
            addr,
            len,
            next_hop: 0,
        })
        .collect();
    targets.extend((0..changed.len()).map(|_| base[rng.below(base.len() as u64) as usize]));
    // the same for IPv6
    let (ids6, first6) = ids_for(
        base6.iter().map(|r| (u128::from(r.addr), r.len)),
        &stream.ipv6,
        u128::from,
    );
    let ids6 = Arc::new(ids6);
    let routes6 = base6
        .iter()
        .enumerate()
        .map(|(i, r)| (u128::from(r.addr), r.len, i as u32))
        .chain([(0u128, 0u8, first6 - 1)]);
    let fib6 = Arc::new(SharedLpm6::new(Lpm6::from_routes(routes6)?));
    let mut changed6: Vec<(Ipv6Addr, u8)> = stream.ipv6.iter().map(Update6::prefix).collect();
    changed6.sort_unstable();
    changed6.dedup();
    let mut targets6: Vec<Route6> = changed6
        .iter()
        .map(|&(addr, len)| Route6 {
            addr,
            len,
            next_hop: 0,
        })
        .collect();
    targets6.extend((0..changed6.len()).map(|_| base6[rng.below(base6.len() as u64) as usize]));
    let cfg = L3fwdConfig::default();
    let app = Arc::new(L3fwd::with_fibs(
        cfg,
        (fib.clone(), targets),
        (fib6.clone(), targets6),
    ));
    let ids = (ids, ids6);
    println!(
        "{} IPv4 and {} IPv6 prefixes changed by the stream; traffic to them and as many base \
         prefixes",
        changed.len(),
        changed6.len()
    );

    let phase = n_replay as f64 / args.rate;
    let mut quiet = Vec::new();
    let mut during = Vec::new();
    let mut during4 = Vec::new();
    let mut runs = Vec::new();
    let mut wrong = 0u64;
    let mut lost = 0u64;
    let mut applied = 0u64;
    // each round: quiet, the IPv4 part of the stream alone, the whole stream; every other
    // round in the reverse order, so that neither replay always runs next to the quiet run
    for round in 0..rounds {
        let mut order = [Phase::Quiet, Phase::Ipv4, Phase::Both];
        if round % 2 == 1 {
            order.reverse();
        }
        for phase_kind in order {
            let replay = phase_kind != Phase::Quiet;
            let (report, n) = forward(
                &args,
                &app,
                &ids,
                phase,
                replay.then_some((&stream, n_replay, phase_kind == Phase::Both)),
            )?;
            let c = report.conservation();
            let errors = report.errors();
            let w = errors.count("fib-check", "next hop never installed for its prefix")
                + errors.count("fib-check6", "next hop never installed for its prefix");
            let balanced = c.is_balanced() && c.buffers_in_use == 0;
            lost += c.dropped + u64::from(!balanced);
            wrong += w;
            applied += n as u64;
            let mpps = report.packets_per_second() / 1e6;
            println!(
                "round {round} {:<7} {mpps:>7.2} Mpps, {} packets, {} dropped, {w} wrong answers, \
                 {n} updates applied, {}",
                phase_kind.name(),
                c.input,
                c.dropped,
                if balanced { "balanced" } else { "NOT BALANCED" }
            );
            if c.dropped > 0 {
                println!("{}", report.errors());
            }
            match phase_kind {
                Phase::Quiet => quiet.push(mpps),
                Phase::Ipv4 => during4.push(mpps),
                Phase::Both => during.push(mpps),
            }
            runs.push(json!({
                "round": round, "phase": phase_kind.name(), "mpps": mpps, "packets": c.input,
                "dropped": c.dropped, "wrong": w, "updates": n, "balanced": balanced,
            }));
        }
    }
    let (q, d, d4) = (median(&quiet), median(&during), median(&during4));
    // each round's own ratios (its three runs back to back), then their medians: the
    // guest's speed moves between rounds for all three alike
    let own = |v: &[f64]| -> Vec<f64> { v.iter().zip(&quiet).map(|(x, q)| x / q).collect() };
    let (ratios, ratios4) = (own(&during), own(&during4));
    let (r, r4) = (median(&ratios), median(&ratios4));
    println!(
        "rate during the whole stream {d:.2} Mpps, during its IPv4 part {d4:.2}, against {q:.2} \
         without; the rounds' own ratios {:.1}% and {:.1}% (medians of {ratios:.3?} and \
         {ratios4:.3?}); {lost} lost, {wrong} wrong",
        100.0 * r,
        100.0 * r4
    );

    // the control plane alone: the whole stream as fast as it goes
    let free = Ids::new(Vec::new(), 0); // ids issued where no packet reads them
    let mut next_id = first_announcement;
    let cost4 = time_updates(&stream.ipv4, |u| apply(&fib, &free, u, &mut next_id));
    let (add_cycles, del_cycles, per_sec) = (cost4.announce, cost4.withdraw, cost4.per_sec);
    println!(
        "IPv4 updates alone: announce {add_cycles:.0} cycles, withdraw {del_cycles:.0} cycles, \
         {per_sec:.0} updates/s"
    );
    let (free6, mut next6, mut one) = (Ids::new(Vec::new(), 0), first6, Vec::with_capacity(1));
    let cost6 = time_updates(&stream.ipv6, |u| {
        // each change published on its own
        one.push(op6(&free6, u, &mut next6));
        publish6(&fib6, &mut one);
    });
    let (add6, del6, per_sec6) = (cost6.announce, cost6.withdraw, cost6.per_sec);
    let (p50, p99) = (cost6.p50, cost6.p99);
    println!(
        "IPv6 updates alone (each published on its own, applied to both copies): announce \
         {add6:.0} cycles, withdraw {del6:.0} cycles (one change: median {p50:.0}, 99th \
         percentile {p99:.0}), {per_sec6:.0} updates/s"
    );
    let mut whole = Headline::rate(
        &format!(
            "{} workers forwarding during IPv4 + IPv6 updates",
            args.workers
        ),
        "Mpps",
        d,
        "the same workers without updates",
        q,
    )
    .target(0.95);
    whole.ratio = r;
    let mut ipv4 = Headline::rate(
        &format!(
            "{} workers forwarding during the IPv4 updates",
            args.workers
        ),
        "Mpps",
        d4,
        "the same workers without updates",
        q,
    )
    .target(0.95);
    ipv4.ratio = r4;
    let mut headline = vec![whole, ipv4];
    // lpm_perf_autotest takes minutes (rte_lpm's rule search is linear in its 1M routes)
    let dpdk = if args.no_dpdk || quick {
        println!("(rte_lpm add/delete from lpm_perf_autotest: not with --quick or --no-dpdk)");
        None
    } else {
        Some(lpm_perf()?)
    };
    if let Some((add, del)) = dpdk {
        println!("rte_lpm (lpm_perf_autotest): add {add:.0} cycles, delete {del:.0} cycles");
        headline.push(Headline::cost(
            "announce (add or replace a route)",
            "cycles",
            add_cycles,
            "rte_lpm add (lpm_perf_autotest)",
            add,
        ));
        headline.push(Headline::cost(
            "withdraw (delete a route)",
            "cycles",
            del_cycles,
            "rte_lpm delete (lpm_perf_autotest)",
            del,
        ));
    }
    sitting.finish(
        headline,
        json!({
            "table": args.table, "base_routes": base.len(), "updates_file": args.updates,
            "messages": stream.messages, "ipv4_updates": stream.ipv4.len(),
            "skipped_other": stream.skipped_other,
            "replayed_per_phase": n_replay, "rate": args.rate, "phase_secs": phase,
            "workers": args.workers, "rounds": rounds,
            "quiet_mpps": quiet, "during_mpps": during, "ratio": r, "round_ratios": ratios,
            "during_ipv4_only_mpps": during4, "ratio_ipv4_only": r4,
            "round_ratios_ipv4_only": ratios4,
            "lost": lost, "wrong": wrong, "updates_applied": applied,
            "announce_cycles": add_cycles, "withdraw_cycles": del_cycles,
            "ipv6_announce_cycles": add6, "ipv6_withdraw_cycles": del6,
            "ipv6_change_cycles_p50": p50, "ipv6_change_cycles_p99": p99,
            "ipv6_updates_per_sec_alone": per_sec6, "table6": args.table6,
            "base6_routes": base6.len(), "ipv6_updates": stream.ipv6.len(),
            "updates_per_sec_alone": per_sec,
            "rte_lpm_add_cycles": dpdk.map(|x| x.0), "rte_lpm_delete_cycles": dpdk.map(|x| x.1),
            "runs": runs,
        }),
    )?;
    if lost > 0 || wrong > 0 {
        return Err(format!("{lost} packets lost, {wrong} wrong answers").into());
    }
    Ok(())
}

/// What the control thread does during a phase.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Phase {
    /// Nothing.
    Quiet,
    /// The stream's IPv4 updates.
    Ipv4,
    /// The whole stream.
    Both,
}

impl Phase {
    fn name(self) -> &'static str {
        match self {
            Phase::Quiet => "quiet",
            Phase::Ipv4 => "ipv4",
            Phase::Both => "ipv4+6",
        }
    }
}

/// One phase: the workers forward for `secs`, or while `replay` is applied at `--rate`
/// (the first `count` updates, of both families merged in their proportions if the flag
/// says so, else of IPv4 only). Returns the report and the updates applied.
fn forward(
    args: &Args,
    app: &Arc<L3fwd>,
    ids: &(Arc<Ids<u32>>, Arc<Ids<u128>>),
    secs: f64,
    replay: Option<(&UpdateStream, usize, bool)>,
) -> Res<(WorkersReport, usize)> {
    let (app2, ids2) = (app.clone(), ids.clone());
    let running = Workers::spawn(WorkersConfig::new(args.workers), move |w| {
        build(&app2, &ids2, w.id).map_err(|e| e.to_string().into())
    })?;
    running.wait_started();
    let mut n = 0;
    match replay {
        None => std::thread::sleep(Duration::from_secs_f64(secs)),
        Some((stream, count, with6)) => {
            let (fib, fib6) = (app.fib4(), app.fib6());
            let start = Instant::now();
            let mut next_id = first_id(&ids.0, stream.announcements4());
            let mut next6 = first_id(&ids.1, stream.announcements6());
            let (n4, n6) = (stream.ipv4.len(), if with6 { stream.ipv6.len() } else { 0 });
            let total = n4 + n6;
            let (mut i4, mut i6) = (0, 0);
            let mut batch6 = Vec::with_capacity(64);
            for k in 0..count.min(total) {
                // IPv6 takes its share of the steps (Bresenham), IPv4 the others
                if i6 < n6 && ((k + 1) * n6 / total > i6 || i4 >= n4) {
                    batch6.push(op6(&ids.1, &stream.ipv6[i6], &mut next6));
                    i6 += 1;
                } else {
                    apply(fib, &ids.0, &stream.ipv4[i4], &mut next_id);
                    i4 += 1;
                }
                n += 1;
                if k % 32 == 31 {
                    publish6(fib6, &mut batch6);
                    let due = Duration::from_secs_f64((k + 1) as f64 / args.rate);
                    if let Some(wait) = due.checked_sub(start.elapsed()) {
                        std::thread::sleep(wait);
                    }
                }
            }
            publish6(fib6, &mut batch6);
        }
    }
    running.stop();
    Ok((running.join()?, n))
}

/// The ids of a family: the base table's routes `0..n`, the default route `n`, then one
/// per announcement of `updates`; and the first announcement's id.
fn ids_for<A: Addr, T: Copy>(
    base: impl Iterator<Item = (A, u8)>,
    updates: &[Update<T>],
    addr: impl Fn(T) -> A,
) -> (Ids<A>, u32) {
    let mut prefix: Vec<(A, u8)> = base.map(|(a, len)| (a.masked(len), len)).collect();
    prefix.push((A::default(), 0)); // the default route
    let first = prefix.len() as u32;
    prefix.extend(updates.iter().filter_map(|u| match *u {
        Update::Announce { addr: a, len } => Some((addr(a), len)),
        Update::Withdraw { .. } => None,
    }));
    (Ids::new(prefix, first), first)
}

/// The id of the stream's first announcement of a family whose ids are `ids`.
fn first_id<A: Addr>(ids: &Ids<A>, announcements: usize) -> u32 {
    (ids.prefix.len() - announcements) as u32
}

/// One IPv6 update as a FIB change; an announcement takes the next id, issued now (before
/// the batch is published).
fn op6(ids: &Ids<u128>, u: &Update6, next_id: &mut u32) -> Lpm6Op {
    match *u {
        Update6::Announce { addr, len } => Lpm6Op::Add {
            addr: u128::from(addr),
            len,
            next_hop: ids.issue(next_id),
        },
        Update6::Withdraw { addr, len } => Lpm6Op::Delete {
            addr: u128::from(addr),
            len,
        },
    }
}

/// Publishes the pending IPv6 changes at once.
fn publish6(fib6: &SharedLpm6, batch: &mut Vec<Lpm6Op>) {
    if !batch.is_empty() {
        // a withdrawal of a prefix not in the table is no error; nothing else can fail here
        let _ = fib6.apply(batch.drain(..));
    }
}

/// Applies one update; announcements take the next id (issued before the route is
/// added, so a lookup that answers it finds it issued).
#[inline]
fn apply(fib: &Lpm4, ids: &Ids<u32>, u: &Update4, next_id: &mut u32) {
    match *u {
        Update4::Announce { addr, len } => {
            // a full group table would be an error of the setup, not of a packet
            let _ = fib.add(addr, len, ids.issue(next_id));
        }
        Update4::Withdraw { addr, len } => {
            let _ = fib.delete(addr, len);
        }
    }
}

/// The updates applied once more with no workers, each by `apply`: TSC cycles per
/// announcement and per withdrawal, updates per second, and the median and 99th percentile
/// of one update's cycles.
fn time_updates<T: Copy>(updates: &[Update<T>], mut apply: impl FnMut(&Update<T>)) -> UpdateCost {
    let (mut add, mut del, mut n_add, mut n_del) = (0u64, 0u64, 0u64, 0u64);
    let mut each = Vec::with_capacity(updates.len());
    let start = Instant::now();
    for u in updates {
        let t = clock::now();
        apply(u);
        let c = clock::now().wrapping_sub(t);
        each.push(c);
        if u.is_announce() {
            (add, n_add) = (add + c, n_add + 1);
        } else {
            (del, n_del) = (del + c, n_del + 1);
        }
    }
    let secs = start.elapsed().as_secs_f64();
    let [p50, p99] = percentiles(&mut each);
    UpdateCost {
        announce: add as f64 / n_add.max(1) as f64,
        withdraw: del as f64 / n_del.max(1) as f64,
        per_sec: updates.len() as f64 / secs.max(1e-9),
        p50,
        p99,
    }
}

/// What [`time_updates`] measured.
struct UpdateCost {
    announce: f64,
    withdraw: f64,
    per_sec: f64,
    p50: f64,
    p99: f64,
}

/// The median and the 99th percentile of `v` (sorted in place).
fn percentiles(v: &mut [u64]) -> [f64; 2] {
    v.sort_unstable();
    let at = |q: f64| v.get(((v.len() as f64 * q) as usize).min(v.len().saturating_sub(1)));
    [
        at(0.5).map_or(f64::NAN, |&c| c as f64),
        at(0.99).map_or(f64::NAN, |&c| c as f64),
    ]
}

/// `lpm_perf_autotest`'s average add and delete cycles.
fn lpm_perf() -> Res<(f64, f64)> {
    let out = crate::dpdk_test::run("lpm_perf_autotest", 512, "0")?;
    let grab = |key: &str| -> Option<f64> {
        out.lines()
            .find(|l| l.contains(key))?
            .split(':')
            .nth(1)?
            .split_whitespace()
            .next()?
            .parse()
            .ok()
    };
    match (grab("Average LPM Add"), grab("Average LPM Delete")) {
        (Some(a), Some(d)) => Ok((a, d)),
        _ => Err(format!("lpm_perf_autotest: no add/delete figures in its output:\n{out}").into()),
    }
}

/// One worker's graph: generated traffic → l3fwd with `fib-check` between lookup and
/// rewrite → null sink.
fn build(app: &L3fwd, ids: &(Arc<Ids<u32>>, Arc<Ids<u128>>), worker: usize) -> Res<Graph> {
    let mut profile = TrafficProfile::from_toml(PROFILE)?;
    profile.seed = 0x5eed + worker as u64;
    let gen = Generator::builder(profile)
        .ipv4_prefixes(app.routes4().iter().map(|r| (r.addr, r.len)).collect())
        .ipv6_prefixes(app.routes6().iter().map(|r| (r.addr, r.len)).collect())
        .build()?;
    let mut b = GraphBuilder::new(graphs::config());
    b.add("input", GeneratorSource::new(gen).pregenerate(4096))
        .set_next("input", GeneratorNext::Out, app.entry());
    let nodes = app.add_to(&mut b);
    b.add(nodes.output_to_tx.to.as_str(), NullSink);
    let ports = u32::from(app.ports());
    b.add(
        "fib-check",
        FibCheck {
            ids: ids.0.clone(),
            ports,
        },
    )
    .set_next(IP4_LOOKUP, Ip4LookupNext::Rewrite, "fib-check")
    .set_next("fib-check", FibCheckNext::Rewrite, IP4_REWRITE)
    .add(
        "fib-check6",
        FibCheck {
            ids: ids.1.clone(),
            ports,
        },
    )
    .set_next(IP6_LOOKUP, Ip6LookupNext::Rewrite, "fib-check6")
    .set_next("fib-check6", FibCheckNext::Rewrite, IP6_REWRITE);
    Ok(b.build(BufferPool::new(PoolConfig {
        buffers: BUFFERS,
        ..PoolConfig::default()
    })?)?)
}
