//! Running an NF: one graph per worker, `input → [worker-handoff under flow affinity] → nf →
//! tx`, with the state's synchronisation chosen at run time.
//!
//! An NF is written once as an [`Nf`] (what every worker shares: its [`Domain`] and
//! tables, and which worker owns a frame's state under flow affinity) and an [`NfWorker`]
//! (one worker's handles and its per-packet code). [`NfNode`] runs the per-packet code over
//! each vector; [`run`] builds the workers, the input ([`OfferedSource`]: the traffic in
//! order, optionally paced at an offered rate into a bounded receive ring, as a NIC
//! drops what its ring cannot hold) and, under [`Strategy::Affinity`], the handoff to the
//! owner, then sums what the workers did.
//!
//! A whole NF in a few lines: per-source-MAC packet counts in one shared table, run on two
//! workers under flow affinity (each MAC's stripe has one owner, and packets are handed
//! to it first):
//!
//! ```
//! use pktvec_graph::node_errors;
//! use pktvec_nf::runtime::{run, Nf, NfWorker, RunConfig};
//! use pktvec_packet::PacketMut;
//! use pktvec_state::{Domain, FlowTable, Strategy, SyncConfig, TableConfig, TableWorker, WorkerSync};
//! use std::sync::Arc;
//!
//! node_errors! {
//!     /// Why `macs` drops packets.
//!     pub enum MacsError { Short = "shorter than an Ethernet header", Full = "table full" }
//! }
//!
//! /// Shared: the domain and the table.
//! struct Macs { domain: Arc<Domain>, table: Arc<FlowTable<[u8; 6], u64>> }
//! /// One worker's side.
//! struct MacsWorker { sync: WorkerSync, tw: TableWorker, table: Arc<FlowTable<[u8; 6], u64>> }
//!
//! fn hash(mac: &[u8; 6]) -> u64 {
//!     mac.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
//! }
//!
//! impl Nf for Macs {
//!     type Worker = MacsWorker;
//!     const NAME: &'static str = "macs";
//!     fn domain(&self) -> &Arc<Domain> { &self.domain }
//!     fn worker(&self, id: usize) -> MacsWorker {
//!         MacsWorker { sync: self.domain.worker(id), tw: self.table.worker(id), table: self.table.clone() }
//!     }
//!     fn owner(&self, frame: &[u8]) -> Option<usize> {
//!         let mac: [u8; 6] = frame.get(6..12)?.try_into().ok()?;
//!         Some(self.domain.owner(self.table.stripe(hash(&mac))))
//!     }
//! }
//!
//! impl NfWorker for MacsWorker {
//!     type Error = MacsError;
//!     fn packet(&mut self, pkt: &mut PacketMut<'_>, now: u64) -> Result<(), MacsError> {
//!         let Some(mac) = pkt.data().get(6..12).and_then(|m| <[u8; 6]>::try_from(m).ok()) else {
//!             return Err(MacsError::Short);
//!         };
//!         let (t, tw, h) = (&self.table, &mut self.tw, hash(&mac));
//!         // one critical section; under RTM it may run more than once: no I/O inside
//!         self.sync.section(t.stripe(h), |sec| match t.entry(sec, tw, mac, h, now) {
//!             Ok((_, count, _)) => { *count += 1; Ok(()) }
//!             Err(_) => Err(MacsError::Full),
//!         })
//!     }
//!     fn sync(&mut self) -> &mut WorkerSync { &mut self.sync }
//! }
//!
//! let domain = Domain::new(SyncConfig { strategy: Strategy::Affinity, workers: 2, stripes: 64, ..SyncConfig::default() })?;
//! let table = Arc::new(FlowTable::new(&domain, "macs", TableConfig { capacity: 1024, ..TableConfig::default() }));
//! let nf = Arc::new(Macs { domain, table });
//! // each worker receives frames from 8 source MACs, 60 bytes each
//! let frames = |w: usize| -> Vec<Vec<u8>> {
//!     (0..8u8).map(|i| { let mut f = vec![0u8; 60]; f[6..12].copy_from_slice(&[2, 0, 0, 0, w as u8, i]); f }).collect()
//! };
//! let cfg = RunConfig { packets_per_worker: 8_000, pin: false, handoff_ring: 8192, ..RunConfig::default() };
//! let r = run(&nf, frames, &cfg)?;
//! assert!(r.report.conservation().is_balanced());
//! assert_eq!(r.report.conservation().output, 16_000);
//! assert_eq!(r.sync.lock_acquisitions, 0); // flow affinity: no lock taken
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use pktvec_graph::builtin::{fill_frame, NullSink};
use pktvec_graph::{
    clock, next_nodes, node_errors, Context, ErrorReason, Frame, GraphBuilder, GraphConfig, Node,
    NodeKind,
};
use pktvec_io::capture::PcapSink;
use pktvec_packet::arena::SharedArena;
use pktvec_packet::{BufferPool, PacketMut, PoolConfig};
use pktvec_state::profile::{ConflictRow, Profiler};
use pktvec_state::{Domain, Strategy, SyncStats, WorkerSync};
use pktvec_workers::handoff::{Distribution, Handoff, HandoffStats};
use pktvec_workers::runtime::{Workers, WorkersConfig, WorkersReport};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// What every worker of an NF shares.
pub trait Nf: Send + Sync + 'static {
    /// One worker's side.
    type Worker: NfWorker;
    /// The NF's node name (`nat`, `classifier`, …).
    const NAME: &'static str;
    /// The synchronisation domain its state lives in.
    fn domain(&self) -> &Arc<Domain>;
    /// Worker `id`'s side (its [`WorkerSync`], table handles, record and port stacks).
    fn worker(&self, id: usize) -> Self::Worker;
    /// Under flow affinity, the worker whose stripes this frame's state lies in (`None`:
    /// any worker may process it, e.g. a malformed frame that touches no state).
    fn owner(&self, frame: &[u8]) -> Option<usize>;
}

/// One worker's side of an NF.
pub trait NfWorker: Send + 'static {
    /// Why it drops packets (declare with [`node_errors!`]).
    type Error: ErrorReason;
    /// Processes one packet at TSC time `now`: `Ok` sends it on (to `tx`), `Err` drops it
    /// under that reason. May rewrite the packet in place, or change its length.
    fn packet(&mut self, pkt: &mut PacketMut<'_>, now: u64) -> Result<(), Self::Error>;
    /// After a vector, at most every [`AFTER_VECTOR_EVERY_US`] (expiry sweeps, timers).
    fn after_vector(&mut self, _now: u64) {}
    /// The worker's synchronisation handle (its stats, its profiler).
    fn sync(&mut self) -> &mut WorkerSync;
    /// NF counters to report, summed over workers by name (translations, detections, …).
    fn counters(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }
}

next_nodes! {
    /// Where an NF node sends packets.
    pub enum NfNext {
        /// Processed packets.
        Tx = "tx",
    }
}

/// What a worker's NF node hands back when its graph is dropped.
#[derive(Debug, Default)]
pub struct WorkerOutcome {
    /// The worker.
    pub worker: usize,
    /// Its sections.
    pub sync: SyncStats,
    /// Its NF counters.
    pub counters: Vec<(&'static str, u64)>,
    /// Its profile, if profiling.
    pub profile: Option<Profiler>,
}

/// Where NF nodes leave their [`WorkerOutcome`]s.
pub type Outcomes = Arc<Mutex<Vec<WorkerOutcome>>>;

/// The graph node running an [`NfWorker`] over each vector (named [`Nf::NAME`]).
pub struct NfNode<W: NfWorker> {
    w: W,
    profiling: bool,
    outcomes: Option<Outcomes>,
    /// When [`NfWorker::after_vector`] last ran, and the least TSC ticks between two runs.
    last_after: u64,
    after_every: u64,
}

/// The least time between two [`NfWorker::after_vector`] calls of a node: small vectors (a
/// lightly loaded worker) do not make the expiry sweeps more frequent than full ones would.
pub const AFTER_VECTOR_EVERY_US: f64 = 20.0;

impl<W: NfWorker> NfNode<W> {
    /// A node over `w`; with `outcomes`, it leaves its stats there when dropped.
    pub fn new(mut w: W, profile: bool, outcomes: Option<Outcomes>) -> Self {
        if profile {
            w.sync().enable_profile();
        }
        NfNode {
            w,
            profiling: profile,
            outcomes,
            last_after: 0,
            after_every: (clock::tsc_hz() * AFTER_VECTOR_EVERY_US / 1e6) as u64,
        }
    }

    /// The worker side.
    pub fn worker(&mut self) -> &mut W {
        &mut self.w
    }
}

impl<W: NfWorker> Drop for NfNode<W> {
    fn drop(&mut self) {
        if let Some(o) = self.outcomes.take() {
            let profile = self.w.sync().take_profile();
            let out = WorkerOutcome {
                worker: self.w.sync().id(),
                sync: *self.w.sync().stats(),
                counters: self.w.counters(),
                profile,
            };
            o.lock().unwrap_or_else(|e| e.into_inner()).push(out);
        }
    }
}

impl<W: NfWorker> Node for NfNode<W> {
    type Next = NfNext;
    type Error = W::Error;

    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        let now = clock::now();
        let w = &mut self.w;
        if self.profiling {
            cx.process_packets(frame, |p| {
                if let Some(pr) = w.sync().profile_mut() {
                    pr.begin_packet();
                }
                let v = w.packet(p, now);
                if let Some(pr) = w.sync().profile_mut() {
                    pr.end_packet();
                }
                match v {
                    Ok(()) => pktvec_graph::Verdict::Next(NfNext::Tx),
                    Err(e) => pktvec_graph::Verdict::Drop(e),
                }
            });
        } else {
            cx.process_packets(frame, |p| match w.packet(p, now) {
                Ok(()) => pktvec_graph::Verdict::Next(NfNext::Tx),
                Err(e) => pktvec_graph::Verdict::Drop(e),
            });
        }
        if now.wrapping_sub(self.last_after) >= self.after_every {
            self.last_after = now;
            self.w.after_vector(now);
        }
    }
}

node_errors! {
    /// Why the offered-load source drops packets.
    pub enum OfferedError {
        /// More packets arrived than the receive ring holds while the worker was busy.
        RxOverflow = "rx ring overflow",
        /// The pool had no buffer.
        NoBuffer = "no buffer",
    }
}

next_nodes! {
    /// The arc of [`OfferedSource`].
    pub enum OfferedNext {
        /// Every packet received.
        Out = "nf",
    }
}

/// An input node replaying frames in order, round robin, up to a limit; unpaced it fills
/// every vector, paced at `rate` packets a second it models a NIC's receive ring of
/// `ring` descriptors: what arrived beyond the ring since the last poll is dropped
/// ("rx ring overflow") and skipped, and a poll before the next arrival waits for it (at
/// most one inter-arrival time), so a finite run ends only when every packet arrived.
///
/// ```
/// use pktvec_graph::{builtin::NullSink, GraphBuilder, GraphConfig};
/// use pktvec_nf::runtime::{OfferedNext, OfferedSource};
/// use pktvec_packet::{BufferPool, PoolConfig};
/// use std::sync::Arc;
/// // 2,000 packets offered at 1 Mpps: about 2 ms, nothing lost by a graph this light
/// let src = OfferedSource::new(Arc::new(vec![vec![0u8; 64]]), 2000).paced(1e6, 1024);
/// let mut b = GraphBuilder::new(GraphConfig::default());
/// b.add("input", src).add("tx", NullSink).set_next("input", OfferedNext::Out, "tx");
/// let mut g = b.build(BufferPool::new(PoolConfig::default())?)?;
/// g.run_until_idle();
/// let c = g.conservation();
/// assert_eq!(c.input, 2000);
/// assert!(c.is_balanced());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct OfferedSource {
    frames: Arc<Vec<Vec<u8>>>,
    next: usize,
    limit: u64,
    taken: u64,
    rate: Option<(f64, usize)>,
    start: u64,
    ticks_per_packet: f64,
    warmup: u64,
}

impl OfferedSource {
    /// Replays `frames` (in order, round robin) until `limit` packets arrived.
    pub fn new(frames: Arc<Vec<Vec<u8>>>, limit: u64) -> Self {
        OfferedSource {
            frames,
            next: 0,
            limit,
            taken: 0,
            rate: None,
            start: 0,
            ticks_per_packet: 0.0,
            warmup: 0,
        }
    }

    /// The first `n` of the packets arrive unpaced, as fast as the worker takes them
    /// (state and caches warm up), and pacing starts after them.
    pub fn with_warmup(mut self, n: u64) -> Self {
        self.warmup = n.min(self.limit);
        self
    }

    /// Paced at `pps` packets a second into a ring of `ring` descriptors.
    pub fn paced(mut self, pps: f64, ring: usize) -> Self {
        self.rate = Some((pps, ring.max(1)));
        self.ticks_per_packet = clock::tsc_hz() / pps.max(1.0);
        self
    }
}

impl Node for OfferedSource {
    type Next = OfferedNext;
    type Error = OfferedError;
    const KIND: NodeKind = NodeKind::Input;

    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        if self.frames.is_empty() || self.taken >= self.limit {
            return;
        }
        let mut want = (cx.vector_size() as u64).min(self.limit - self.taken);
        if self.taken < self.warmup {
            want = want.min(self.warmup - self.taken);
        }
        if let Some((_, ring)) = self.rate.filter(|_| self.taken >= self.warmup) {
            let mut now = clock::now();
            if self.start == 0 {
                self.start = now;
            }
            let (start, tpp, limit) = (self.start, self.ticks_per_packet, self.limit);
            // the warm-up's packets arrived before pacing started
            let base = self.warmup;
            let arrived_by = |now: u64| (base + ((now - start) as f64 / tpp) as u64).min(limit);
            // a poll before the next arrival waits for it, as a NIC's poll loop spins: a
            // poll that returned nothing would end a finite run
            while arrived_by(now) <= self.taken {
                std::hint::spin_loop();
                now = clock::now();
            }
            let arrived = arrived_by(now);
            let backlog = arrived.saturating_sub(self.taken);
            if backlog > ring as u64 {
                let lost = backlog - ring as u64;
                self.taken += lost;
                self.next = ((self.next as u64 + lost) % self.frames.len() as u64) as usize;
                cx.drop_unreceived(OfferedError::RxOverflow, lost);
            }
            want = want.min(arrived.saturating_sub(self.taken));
        }
        if want == 0 {
            return;
        }
        let frames = &self.frames;
        let next = &mut self.next;
        let (got, _) = fill_frame(cx, frame, want as usize, 0, || {
            let f = &frames[*next];
            *next = (*next + 1) % frames.len();
            f
        });
        let missing = want as usize - got;
        if missing > 0 {
            self.next = (self.next + missing) % self.frames.len();
            cx.drop_unreceived(OfferedError::NoBuffer, missing as u64);
        }
        self.taken += want;
        cx.enqueue_all(frame, OfferedNext::Out);
    }
}

/// How to run an NF.
#[derive(Clone, Debug)]
pub struct RunConfig {
    /// Packets each worker receives.
    pub packets_per_worker: u64,
    /// Offered rate per worker (packets a second) into a receive ring; `None`: as fast as
    /// the worker takes them.
    pub rate_pps: Option<f64>,
    /// Receive ring descriptors when paced.
    pub rx_ring: usize,
    /// Packets per worker (of `packets_per_worker`) that arrive unpaced before pacing
    /// starts.
    pub warmup: u64,
    /// Handoff ring slots (flow affinity).
    pub handoff_ring: usize,
    /// Buffers per worker.
    pub buffers: usize,
    /// Pin workers to cores.
    pub pin: bool,
    /// The graphs' settings (vector size).
    pub graph: GraphConfig,
    /// Record every packet's read and write sets.
    pub profile: bool,
    /// Measure each packet's latency from the input to `tx` (or a drop); the report
    /// shows it per sink.
    pub latency: bool,
    /// Write worker 0's output here (pcap).
    pub pcap_out: Option<PathBuf>,
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            packets_per_worker: 100_000,
            rate_pps: None,
            rx_ring: 1024,
            warmup: 0,
            handoff_ring: 1024,
            buffers: 8192,
            pin: true,
            graph: GraphConfig::default(),
            profile: false,
            latency: false,
            pcap_out: None,
        }
    }
}

/// What a run did.
#[derive(Debug)]
pub struct NfRun {
    /// The workers' report (runtime, errors, conservation).
    pub report: WorkersReport,
    /// Every worker's sections, summed.
    pub sync: SyncStats,
    /// Each worker's outcome, by worker.
    pub workers: Vec<WorkerOutcome>,
    /// NF counters summed over workers.
    pub counters: BTreeMap<&'static str, u64>,
    /// The handoff's rings (flow affinity).
    pub handoff: Option<HandoffStats>,
}

impl NfRun {
    /// Packets dropped because the receive ring overflowed (paced runs).
    pub fn rx_overflow(&self) -> u64 {
        self.drops_of("rx ring overflow")
    }

    /// Drops counted under `reason`, every node.
    pub fn drops_of(&self, reason: &str) -> u64 {
        self.report
            .errors()
            .rows
            .iter()
            .filter(|r| r.reason == reason)
            .map(|r| r.count)
            .sum()
    }

    /// An NF counter (0 if absent).
    pub fn counter(&self, name: &str) -> u64 {
        self.counters.get(name).copied().unwrap_or(0)
    }
}

/// Why a run failed.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The workers.
    #[error(transparent)]
    Workers(#[from] pktvec_workers::runtime::WorkerError),
    /// The buffer arena.
    #[error("buffers: {0}")]
    Pool(String),
}

/// Runs `nf` on its domain's workers: worker `w` receives `traffic(w)` (frames, or an
/// `Arc` of them to share one copy between runs) in order, round robin, `cfg.packets_per_worker` packets (paced if asked); under flow affinity each
/// packet is handed to [`Nf::owner`] first.
pub fn run<N: Nf, T: Into<Arc<Vec<Vec<u8>>>>>(
    nf: &Arc<N>,
    traffic: impl Fn(usize) -> T + Send + Sync + 'static,
    cfg: &RunConfig,
) -> Result<NfRun, RunError> {
    let domain = nf.domain().clone();
    let workers = domain.workers();
    let outcomes: Outcomes = Arc::new(Mutex::new(Vec::new()));
    let pool_cfg = PoolConfig {
        buffers: (cfg.buffers * workers) as u32,
        ..PoolConfig::default()
    };
    let handoff = match domain.strategy() {
        Strategy::Affinity if workers > 1 => {
            let arena = SharedArena::new(pool_cfg).map_err(|e| RunError::Pool(e.to_string()))?;
            Some(
                Handoff::new(arena, Distribution::new(workers), cfg.handoff_ring)
                    .map_err(|e| RunError::Pool(e.to_string()))?,
            )
        }
        _ => None,
    };
    let mut wc = WorkersConfig::new(workers);
    wc.pin = cfg.pin;
    if let Some(h) = &handoff {
        wc = wc.with_handoff(h.clone());
    }
    let (nf2, out2, cfg2, h2) = (nf.clone(), outcomes.clone(), cfg.clone(), handoff.clone());
    let report = Workers::run(wc, move |w| {
        let frames: Arc<Vec<Vec<u8>>> = traffic(w.id).into();
        let mut src = OfferedSource::new(frames, cfg2.packets_per_worker);
        if let Some(pps) = cfg2.rate_pps {
            src = src.paced(pps, cfg2.rx_ring).with_warmup(cfg2.warmup);
        }
        let mut b = GraphBuilder::new(cfg2.graph.clone());
        b.add("input", src);
        let node = NfNode::new(nf2.worker(w.id), cfg2.profile, Some(out2.clone()));
        b.add(N::NAME, node).set_next(N::NAME, NfNext::Tx, "tx");
        match (&cfg2.pcap_out, w.id) {
            (Some(p), 0) => {
                let sink = PcapSink::create(p)?;
                b.add("tx", sink);
            }
            _ => {
                b.add("tx", NullSink);
            }
        }
        let pool = match &h2 {
            Some(h) => {
                let nf3 = nf2.clone();
                let entry = h.add_to_by(&mut b, w.id, N::NAME, move |f| nf3.owner(f))?;
                b.set_next("input", OfferedNext::Out, entry);
                h.pool()
            }
            None => {
                b.set_next("input", OfferedNext::Out, N::NAME);
                BufferPool::new(PoolConfig {
                    buffers: cfg2.buffers as u32,
                    ..PoolConfig::default()
                })?
            }
        };
        let mut g = b.build(pool)?;
        g.latency_enable(cfg2.latency);
        Ok(g)
    })?;
    if let Some(h) = &handoff {
        h.reclaim();
    }
    let mut ws = std::mem::take(&mut *outcomes.lock().unwrap_or_else(|e| e.into_inner()));
    ws.sort_by_key(|o| o.worker);
    let mut sync = SyncStats::default();
    let mut counters = BTreeMap::new();
    for o in &ws {
        sync.add(&o.sync);
        for &(k, v) in &o.counters {
            *counters.entry(k).or_insert(0) += v;
        }
    }
    Ok(NfRun {
        report,
        sync,
        workers: ws,
        counters,
        handoff: handoff.map(|h| h.stats()),
    })
}

/// The share of packets that have another packet of their flow among the `window`
/// packets before them (the seed's traces: 20–40% within 100), `flow` giving each frame's
/// flow (`None`: counted, never matching).
///
/// ```
/// use pktvec_nf::runtime::same_flow_share;
/// let frames: Vec<Vec<u8>> = [1u8, 2, 1, 3, 4, 4].iter().map(|&f| vec![f]).collect();
/// let s = same_flow_share(&frames, 100, |f| Some(u64::from(f[0])));
/// assert!((s - 2.0 / 6.0).abs() < 1e-9);
/// ```
pub fn same_flow_share(
    frames: &[Vec<u8>],
    window: usize,
    flow: impl Fn(&[u8]) -> Option<u64>,
) -> f64 {
    if frames.is_empty() {
        return 0.0;
    }
    let mut last: std::collections::HashMap<u64, usize> = std::collections::HashMap::new();
    let mut hits = 0usize;
    for (i, f) in frames.iter().enumerate() {
        if let Some(k) = flow(f) {
            if let Some(&j) = last.get(&k) {
                if i - j <= window {
                    hits += 1;
                }
            }
            last.insert(k, i);
        }
    }
    hits as f64 / frames.len() as f64
}

impl std::fmt::Display for NfRun {
    /// The workers' report (runtime, errors, conservation), then the sections' counters
    /// and the NF's.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let report = self.report.to_string();
        write!(f, "{report}")?;
        if !report.ends_with('\n') {
            writeln!(f)?;
        }
        let s = &self.sync;
        writeln!(
            f,
            "sections: {} (locks taken {}, waited {}); transactions: {} committed, aborted {} (conflict {}, capacity {}, lock busy {}, other {}), {} fell back to the lock; commit rate {:.1}%",
            s.sections,
            s.lock_acquisitions,
            s.lock_contended,
            s.commits,
            s.aborts(),
            s.abort_conflict,
            s.abort_capacity,
            s.abort_explicit,
            s.abort_other,
            s.fallbacks,
            100.0 * s.commit_rate()
        )?;
        if let Some(h) = &self.handoff {
            writeln!(
                f,
                "handoff: {} handed to their owner, {} congestion drops",
                h.handed_off, h.congestion_drops
            )?;
        }
        if let Some(p) = self.workers.iter().find_map(|w| w.profile.as_ref()) {
            writeln!(
                f,
                "conflicts among worker {}'s {} packets (pairs of a window whose sets conflict; packets conflicting with any other of it):",
                self.workers.iter().position(|w| w.profile.is_some()).unwrap_or(0),
                p.packets()
            )?;
            write!(f, "{}", ConflictRow::table(&p.conflicts(2..=16)))?;
        }
        let c: Vec<String> = self
            .counters
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        writeln!(f, "counters: {}", c.join(", "))
    }
}
