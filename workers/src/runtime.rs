//! Workers: one graph per worker thread, each built by the same function (so each has its
//! own node state and buffer pool), pinned to its own core, started together once all
//! graphs are built, run until its inputs are exhausted or it is told to stop (each runs
//! at least one turn of its main loop), and reported on: per-worker runtime and error tables,
//! their totals (like VPP's `show runtime` per thread and summed), conservation summed
//! over workers, and the load imbalance. A worker that fails to build or panics is an
//! error for the caller, never a hang: the others are stopped and joined.
//!
//! ```
//! use pktvec_graph::builtin::{NullSink, PacketSource, SourceNext};
//! use pktvec_graph::{GraphBuilder, GraphConfig};
//! use pktvec_packet::{BufferPool, PoolConfig};
//! use pktvec_workers::runtime::{Workers, WorkersConfig};
//!
//! // Two workers, each replaying 10,000 frames through its own graph.
//! let report = Workers::run(WorkersConfig::new(2), |w| {
//!     let mut b = GraphBuilder::new(GraphConfig::default());
//!     b.add("source", PacketSource::new(vec![vec![w.id as u8; 64]]).with_limit(10_000));
//!     b.add("tx", NullSink);
//!     b.set_next("source", SourceNext::Out, "tx");
//!     Ok(b.build(BufferPool::new(PoolConfig::default())?)?)
//! })?;
//! assert_eq!(report.workers.len(), 2);
//! assert_eq!(report.conservation().input, 20_000);
//! assert!(report.conservation().is_balanced());
//! println!("{}", report.runtime()); // the totals; report.workers[i].runtime per worker
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::any::Any;
use std::fmt;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use crossbeam_channel::{Receiver, Sender};
use crossbeam_utils::CachePadded;
use pktvec_graph::stats::{ErrorRow, RuntimeRow};
use pktvec_graph::{Conservation, ErrorTable, Graph, RuntimeTable};
use serde::Serialize;

use crate::handoff::{Handoff, HandoffStats};

/// How many workers and where they run.
#[derive(Clone)]
pub struct WorkersConfig {
    /// Number of workers (threads, one graph each), at least 1.
    pub workers: usize,
    /// Pin worker `i` to core `(first_core + i) mod cores` (`core_affinity`).
    pub pin: bool,
    /// The core of worker 0 when pinning.
    pub first_core: usize,
    /// The handoff the workers' graphs use, if any: finite inputs then end only when every
    /// worker is idle and every ring empty, and the report counts the rings' traffic.
    pub handoff: Option<Arc<Handoff>>,
    /// Makes each worker's [`Turn`] once its graph is built (the online tuner, in
    /// `pktvec::tune::worker_tuner`); `None`: each turn is one [`Graph::run_once`].
    pub turn: Option<TurnFactory>,
}

/// What a worker does in each turn of its loop instead of one [`Graph::run_once`]: the
/// online tuner runs a window of turns and retunes the graph from what it measured. Control
/// messages and the stop flag are read between two turns.
///
/// ```
/// use pktvec_graph::Graph;
/// use pktvec_workers::runtime::Turn;
/// /// Counts its turns.
/// struct Counting(u64);
/// impl Turn for Counting {
///     fn turn(&mut self, graph: &mut Graph) -> u64 {
///         self.0 += 1;
///         graph.run_once()
///     }
///     fn summary(&self) -> String {
///         format!("{} turns", self.0)
///     }
/// }
/// ```
pub trait Turn: Send {
    /// Runs the graph for a while; returns the packets its input nodes produced (0: idle).
    fn turn(&mut self, graph: &mut Graph) -> u64;
    /// One line for the worker's report (the tuner's setting and decisions).
    fn summary(&self) -> String {
        String::new()
    }
}

/// Makes a worker's [`Turn`] from its info and built graph (see [`WorkersConfig::turn`]).
pub type TurnFactory =
    Arc<dyn Fn(WorkerInfo, &mut Graph) -> Result<Box<dyn Turn>, BuildError> + Send + Sync>;

impl fmt::Debug for WorkersConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WorkersConfig")
            .field("workers", &self.workers)
            .field("pin", &self.pin)
            .field("first_core", &self.first_core)
            .field("handoff", &self.handoff.is_some())
            .field("turn", &self.turn.is_some())
            .finish()
    }
}

impl WorkersConfig {
    /// `workers` workers, pinned from core 0.
    ///
    /// ```
    /// let cfg = pktvec_workers::runtime::WorkersConfig::new(4);
    /// assert!(cfg.pin && cfg.first_core == 0);
    /// ```
    pub fn new(workers: usize) -> Self {
        WorkersConfig {
            workers,
            pin: true,
            first_core: 0,
            handoff: None,
            turn: None,
        }
    }

    /// The same workers, each driving its graph with the [`Turn`] `factory` makes for it.
    pub fn with_turn(mut self, factory: TurnFactory) -> Self {
        self.turn = Some(factory);
        self
    }

    /// The same workers, with their graphs handing packets to each other through
    /// `handoff` (see [`crate::handoff`]).
    pub fn with_handoff(mut self, handoff: Arc<Handoff>) -> Self {
        self.handoff = Some(handoff);
        self
    }
}

/// What a worker's build function learns about the worker it builds for.
#[derive(Clone, Copy, Debug)]
pub struct WorkerInfo {
    /// Index of the worker, 0..workers.
    pub id: usize,
    /// Number of workers.
    pub workers: usize,
    /// The core it is pinned to, if pinned.
    pub core: Option<usize>,
}

/// Why a run of workers failed.
#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    /// `workers` was 0.
    #[error("at least one worker is needed")]
    NoWorkers,
    /// The build function returned an error for a worker.
    #[error("worker {worker}: building its graph failed: {message}")]
    Build {
        /// The worker.
        worker: usize,
        /// The build function's error, as text.
        message: String,
    },
    /// A worker panicked (while building or forwarding).
    #[error("worker {worker} panicked: {message}")]
    Panicked {
        /// The worker.
        worker: usize,
        /// The panic's message.
        message: String,
    },
    /// The thread could not be started.
    #[error("worker {worker}: spawning its thread failed: {message}")]
    Spawn {
        /// The worker.
        worker: usize,
        /// The OS error, as text.
        message: String,
    },
}

/// A message to a running worker, applied between two turns of its main loop: runtime
/// settings and anything else a closure does to the worker's graph (a table update through
/// [`Graph::node_mut`], reading its trace). Sent with [`Running::send`] or
/// [`Running::broadcast`].
pub enum Control {
    /// [`Graph::set_vector_size`].
    VectorSize(usize),
    /// [`Graph::set_sub_batch`].
    SubBatch(usize),
    /// [`Graph::set_prefetch_distance`].
    PrefetchDistance(usize),
    /// [`Graph::trace_add`]: trace the next `n` packets.
    TraceAdd(usize),
    /// [`Graph::capture_start`] on a node, into a pcap file.
    CaptureStart {
        /// The node whose output is captured.
        node: String,
        /// The pcap file.
        path: std::path::PathBuf,
        /// Stop after this many packets.
        max_packets: Option<u64>,
    },
    /// [`Graph::capture_stop`].
    CaptureStop(String),
    /// Any change to the worker's graph, run on the worker's thread.
    Apply(Box<dyn FnOnce(&mut Graph) + Send>),
}

impl fmt::Debug for Control {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Control::VectorSize(v) => write!(f, "VectorSize({v})"),
            Control::SubBatch(b) => write!(f, "SubBatch({b})"),
            Control::PrefetchDistance(d) => write!(f, "PrefetchDistance({d})"),
            Control::TraceAdd(n) => write!(f, "TraceAdd({n})"),
            Control::CaptureStart { node, path, .. } => {
                write!(f, "CaptureStart({node}, {})", path.display())
            }
            Control::CaptureStop(n) => write!(f, "CaptureStop({n})"),
            Control::Apply(_) => write!(f, "Apply(..)"),
        }
    }
}

impl Control {
    /// Applies the message to a graph; an invalid setting is an error (the worker counts it
    /// in [`WorkerReport::control_errors`] and goes on).
    fn apply(self, graph: &mut Graph) -> Result<(), String> {
        match self {
            Control::VectorSize(v) => graph.set_vector_size(v).map_err(|e| e.to_string()),
            Control::SubBatch(b) => {
                graph.set_sub_batch(b);
                Ok(())
            }
            Control::PrefetchDistance(d) => {
                graph.set_prefetch_distance(d);
                Ok(())
            }
            Control::TraceAdd(n) => {
                graph.trace_add(n);
                Ok(())
            }
            Control::CaptureStart {
                node,
                path,
                max_packets,
            } => graph
                .capture_start(&node, path, max_packets)
                .map_err(|e| e.to_string()),
            Control::CaptureStop(node) => graph
                .capture_stop(&node)
                .map(|_| ())
                .map_err(|e| e.to_string()),
            Control::Apply(f) => {
                f(graph);
                Ok(())
            }
        }
    }
}

/// The error type a build function returns.
pub type BuildError = Box<dyn std::error::Error + Send + Sync>;

/// One worker's end state.
#[derive(Clone, Debug, Serialize)]
pub struct WorkerReport {
    /// Index of the worker.
    pub worker: usize,
    /// The core it was pinned to, if pinned.
    pub core: Option<usize>,
    /// Its runtime table.
    pub runtime: RuntimeTable,
    /// Its drop counters.
    pub errors: ErrorTable,
    /// Packets its nodes made.
    pub created: ErrorTable,
    /// Its conservation.
    pub conservation: Conservation,
    /// Seconds it ran (build excluded).
    pub seconds: f64,
    /// Control messages it applied.
    pub control_applied: u64,
    /// Control messages that failed, with why (an invalid vector size, an unknown node).
    pub control_errors: Vec<String>,
    /// Packets it took from other workers' handoff rings (part of its graph's input).
    pub handed_in: u64,
    /// Packets it put into handoff rings (part of its graph's output).
    pub handed_out: u64,
    /// Its [`Turn`]'s summary (empty without one).
    pub turn: String,
    /// Its pool's allocation requests that got fewer buffers than asked (exhaustion of its
    /// pool, or of the shared arena behind it).
    pub alloc_failures: u64,
    /// Its pool's refused frees (a buffer freed twice, or an index out of range).
    pub double_frees: u64,
    /// Latency per sink, if its graph measured it ([`Graph::latency_enable`]).
    pub latency: pktvec_graph::LatencyTable,
}

impl WorkerReport {
    /// Packets its own inputs received (its graph's input less what other workers handed
    /// it): what it contributes to the workers' packet rate.
    pub fn received(&self) -> u64 {
        self.conservation.input.saturating_sub(self.handed_in)
    }
}

/// The end state of all workers.
#[derive(Clone, Debug, Serialize)]
pub struct WorkersReport {
    /// Per worker, in worker order.
    pub workers: Vec<WorkerReport>,
    /// Wall-clock seconds from the first worker's start to the last one's end.
    pub seconds: f64,
    /// The handoff rings' counters, when the workers hand packets to each other (read
    /// after all stopped, before what was left in the rings went back to the arena).
    pub handoff: Option<HandoffStats>,
    /// Buffers left in handoff rings when the workers stopped, returned to the arena.
    pub reclaimed: u64,
}

/// Load imbalance between workers: max over mean (1.0 = perfectly even).
#[derive(Clone, Copy, Debug, Serialize, PartialEq)]
pub struct Imbalance {
    /// Of the packets their inputs produced.
    pub packets: f64,
    /// Of the cycles their nodes were busy.
    pub busy_cycles: f64,
}

impl WorkersReport {
    /// Conservation summed over workers (each worker's must balance for the sum to). A
    /// packet handed from one worker to another counts once: the rings' traffic is taken out
    /// of the graphs' inputs and outputs, and what is still in a ring is in flight.
    pub fn conservation(&self) -> Conservation {
        let mut c = Conservation {
            input: 0,
            created: 0,
            output: 0,
            dropped: 0,
            dropped_without_buffer: 0,
            dropped_by_reason: 0,
            in_flight: 0,
            buffers_in_use: 0,
        };
        for w in &self.workers {
            let x = &w.conservation;
            c.input += x.input;
            c.created += x.created;
            c.output += x.output;
            c.dropped += x.dropped;
            c.dropped_without_buffer += x.dropped_without_buffer;
            c.dropped_by_reason += x.dropped_by_reason;
            c.in_flight += x.in_flight;
            c.buffers_in_use += x.buffers_in_use;
        }
        if let Some(h) = &self.handoff {
            c.input -= h.received.min(c.input);
            c.output -= h.handed_off.min(c.output);
            c.in_flight += h.in_rings;
        }
        c
    }

    /// The runtime table summed over workers, node by node (rows in first-seen order).
    pub fn runtime(&self) -> RuntimeTable {
        let mut rows: Vec<RuntimeRow> = Vec::new();
        for w in &self.workers {
            for r in &w.runtime.rows {
                match rows.iter_mut().find(|t| t.name == r.name) {
                    Some(t) => {
                        t.calls += r.calls;
                        t.vectors += r.vectors;
                        t.packets += r.packets;
                        t.created += r.created;
                        t.cycles += r.cycles;
                    }
                    None => rows.push(r.clone()),
                }
            }
        }
        let div = |a: u64, b: u64| if b == 0 { 0.0 } else { a as f64 / b as f64 };
        for t in &mut rows {
            t.vectors_per_call = div(t.vectors, t.calls);
            t.packets_per_vector = div(t.packets, t.vectors);
            t.cycles_per_packet = div(t.cycles, t.packets);
            t.cycles_per_call = div(t.cycles, t.calls);
        }
        let first = self.workers.first().map(|w| &w.runtime);
        RuntimeTable {
            rows,
            tsc_hz: first.map_or(0.0, |r| r.tsc_hz),
            vector_size: first.map_or(0, |r| r.vector_size),
        }
    }

    /// The drop counters summed over workers, by (node, reason).
    pub fn errors(&self) -> ErrorTable {
        sum_tables(self.workers.iter().map(|w| &w.errors))
    }

    /// The packets nodes made, summed over workers, by (node, reason).
    pub fn created(&self) -> ErrorTable {
        sum_tables(self.workers.iter().map(|w| &w.created))
    }

    /// Packets all workers' inputs produced (each packet once, however many workers it
    /// crossed).
    pub fn input_packets(&self) -> u64 {
        self.conservation().input
    }

    /// Packets per second: each worker's received packets over its own forwarding time,
    /// summed.
    pub fn packets_per_second(&self) -> f64 {
        self.workers
            .iter()
            .map(|w| w.received() as f64 / w.seconds.max(1e-9))
            .sum()
    }

    /// Latency per sink, the workers' histograms merged (empty unless their graphs
    /// measured it).
    pub fn latency(&self) -> pktvec_graph::LatencyTable {
        pktvec_graph::LatencyTable::merged(self.workers.iter().map(|w| &w.latency))
    }

    /// Max over mean of the workers' input packets and busy cycles.
    pub fn imbalance(&self) -> Imbalance {
        let ratio = |xs: Vec<f64>| {
            let mean = xs.iter().sum::<f64>() / xs.len().max(1) as f64;
            let max = xs.iter().cloned().fold(0.0, f64::max);
            if mean > 0.0 {
                max / mean
            } else {
                1.0
            }
        };
        Imbalance {
            packets: ratio(
                self.workers
                    .iter()
                    .map(|w| w.conservation.input as f64)
                    .collect(),
            ),
            // (with handoff, a worker's graph input includes what others handed it: the
            // packets it processed)
            busy_cycles: ratio(
                self.workers
                    .iter()
                    .map(|w| w.runtime.total_cycles() as f64)
                    .collect(),
            ),
        }
    }
}

fn sum_tables<'a>(tables: impl Iterator<Item = &'a ErrorTable>) -> ErrorTable {
    let mut rows: Vec<ErrorRow> = Vec::new();
    for t in tables {
        for r in &t.rows {
            match rows
                .iter_mut()
                .find(|x| x.node == r.node && x.reason == r.reason)
            {
                Some(x) => x.count += r.count,
                None => rows.push(r.clone()),
            }
        }
    }
    ErrorTable { rows }
}

impl fmt::Display for WorkersReport {
    /// Each worker's runtime table, then the totals, the imbalance and conservation.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for w in &self.workers {
            match w.core {
                Some(c) => writeln!(f, "worker {} (core {c}):", w.worker)?,
                None => writeln!(f, "worker {}:", w.worker)?,
            }
            writeln!(f, "{}", w.runtime)?;
            if !w.turn.is_empty() {
                writeln!(f, "{}", w.turn)?;
            }
            if w.alloc_failures + w.double_frees > 0 {
                writeln!(
                    f,
                    "buffers: {} allocations short, {} refused frees",
                    w.alloc_failures, w.double_frees
                )?;
            }
        }
        if self.workers.len() > 1 {
            writeln!(f, "all workers:\n{}", self.runtime())?;
        }
        let latency = self.latency();
        if !latency.rows.is_empty() {
            writeln!(f, "{latency}")?;
        }
        let errors = self.errors();
        if !errors.rows.is_empty() {
            writeln!(f, "{errors}")?;
        }
        if let Some(h) = &self.handoff {
            writeln!(
                f,
                "handoff: {} handed off, {} congestion drops, {} in rings at the end",
                h.handed_off, h.congestion_drops, h.in_rings
            )?;
            for r in h
                .rings
                .iter()
                .filter(|r| r.stats.enqueued + r.stats.dropped > 0)
            {
                writeln!(
                    f,
                    "  ring {} -> {}: enqueued {}, dropped {}, high-water {}",
                    r.from, r.to, r.stats.enqueued, r.stats.dropped, r.stats.high_water
                )?;
            }
        }
        let i = self.imbalance();
        writeln!(
            f,
            "imbalance (max / mean): packets {:.3}, busy cycles {:.3}",
            i.packets, i.busy_cycles
        )?;
        write!(f, "conservation: {}", self.conservation())
    }
}

/// Workers running: stop them, or wait for them.
pub struct Running {
    control: Vec<Sender<Control>>,
    stop: Arc<AtomicBool>,
    ready: Arc<AtomicUsize>,
    workers: usize,
    handles: Vec<JoinHandle<Result<WorkerReport, WorkerError>>>,
    start: Instant,
    handoff: Option<Arc<Handoff>>,
}

/// What workers share to end together when they hand packets to each other.
struct Quiesce {
    handoff: Arc<Handoff>,
    /// Per worker: idle after its last turn.
    idle: Vec<CachePadded<AtomicBool>>,
}

impl Quiesce {
    /// Every worker idle and every ring empty: nothing can arrive any more (packets taken
    /// from a ring go to the continuation, never to a handoff again).
    fn done(&self) -> bool {
        self.idle.iter().all(|i| i.load(Ordering::SeqCst)) && self.handoff.in_rings() == 0
    }
}

impl Workers {
    /// Runs the workers until every graph is idle (its inputs exhausted, nothing pending)
    /// and returns their report; the first worker error stops the others.
    pub fn run<F>(cfg: WorkersConfig, build: F) -> Result<WorkersReport, WorkerError>
    where
        F: Fn(WorkerInfo) -> Result<Graph, BuildError> + Send + Sync + 'static,
    {
        Self::start(cfg, true, build)?.join()
    }

    /// Starts the workers forwarding until [`Running::stop`] (for endless inputs).
    pub fn spawn<F>(cfg: WorkersConfig, build: F) -> Result<Running, WorkerError>
    where
        F: Fn(WorkerInfo) -> Result<Graph, BuildError> + Send + Sync + 'static,
    {
        Self::start(cfg, false, build)
    }

    fn start<F>(cfg: WorkersConfig, until_idle: bool, build: F) -> Result<Running, WorkerError>
    where
        F: Fn(WorkerInfo) -> Result<Graph, BuildError> + Send + Sync + 'static,
    {
        if cfg.workers == 0 {
            return Err(WorkerError::NoWorkers);
        }
        let cores = if cfg.pin {
            core_affinity::get_core_ids().unwrap_or_default()
        } else {
            Vec::new()
        };
        let build = Arc::new(build);
        let quiesce = cfg.handoff.clone().map(|handoff| {
            Arc::new(Quiesce {
                handoff,
                idle: (0..cfg.workers)
                    .map(|_| CachePadded::new(AtomicBool::new(false)))
                    .collect(),
            })
        });
        let stop = Arc::new(AtomicBool::new(false));
        let ready = Arc::new(AtomicUsize::new(0));
        let mut running = Running {
            control: Vec::with_capacity(cfg.workers),
            stop: stop.clone(),
            ready: ready.clone(),
            workers: cfg.workers,
            handles: Vec::with_capacity(cfg.workers),
            start: Instant::now(),
            handoff: cfg.handoff.clone(),
        };
        for id in 0..cfg.workers {
            let core = (!cores.is_empty()).then(|| cores[(cfg.first_core + id) % cores.len()]);
            let info = WorkerInfo {
                id,
                workers: cfg.workers,
                core: core.map(|c| c.id),
            };
            let (build, stop, ready) = (build.clone(), stop.clone(), ready.clone());
            let quiesce = quiesce.clone();
            let turn = cfg.turn.clone();
            let (tx, rx) = crossbeam_channel::unbounded();
            running.control.push(tx);
            let spawned = std::thread::Builder::new()
                .name(format!("pktvec-worker-{id}"))
                .spawn(move || {
                    if let Some(c) = core {
                        core_affinity::set_for_current(c);
                    }
                    let result = std::panic::catch_unwind(AssertUnwindSafe(|| {
                        let end = End {
                            stop: &stop,
                            until_idle,
                            quiesce: quiesce.as_deref(),
                            turn: turn.as_ref(),
                        };
                        worker(info, &*build, &ready, &rx, end)
                    }))
                    .unwrap_or_else(|panic| {
                        Err(WorkerError::Panicked {
                            worker: id,
                            message: panic_message(panic.as_ref()),
                        })
                    });
                    if result.is_err() {
                        // a failed worker stops the others: the caller gets the error, not a hang
                        stop.store(true, Ordering::Relaxed);
                    }
                    result
                });
            match spawned {
                Ok(h) => running.handles.push(h),
                Err(e) => {
                    running.stop();
                    let _ = running.join();
                    return Err(WorkerError::Spawn {
                        worker: id,
                        message: e.to_string(),
                    });
                }
            }
        }
        Ok(running)
    }
}

/// The worker runtime (see the module docs).
pub struct Workers;

/// When a worker's loop ends.
struct End<'a> {
    stop: &'a AtomicBool,
    until_idle: bool,
    quiesce: Option<&'a Quiesce>,
    turn: Option<&'a TurnFactory>,
}

fn worker<F>(
    info: WorkerInfo,
    build: &F,
    ready: &AtomicUsize,
    control: &Receiver<Control>,
    end: End<'_>,
) -> Result<WorkerReport, WorkerError>
where
    F: Fn(WorkerInfo) -> Result<Graph, BuildError>,
{
    let build_error = |e: BuildError| WorkerError::Build {
        worker: info.id,
        message: e.to_string(),
    };
    let mut graph = build(info).map_err(build_error)?;
    let mut driver = match end.turn {
        Some(f) => Some(f(info, &mut graph).map_err(build_error)?),
        None => None,
    };
    // every worker starts forwarding once all have built their graphs (or one failed)
    ready.fetch_add(1, Ordering::AcqRel);
    let stop = end.stop;
    while ready.load(Ordering::Acquire) < info.workers && !stop.load(Ordering::Relaxed) {
        std::thread::yield_now();
    }
    let start = Instant::now();
    let (mut control_applied, mut control_errors) = (0, Vec::new());
    // at least one turn, then until told to stop (or idle, for finite inputs)
    loop {
        // control messages between turns: an empty channel costs one atomic load
        while let Ok(msg) = control.try_recv() {
            control_applied += 1;
            if let Err(e) = msg.apply(&mut graph) {
                control_errors.push(e);
            }
        }
        match end.quiesce {
            None => {
                let done = match driver.as_mut() {
                    Some(d) => d.turn(&mut graph),
                    None => graph.run_once(),
                };
                if done == 0 && end.until_idle && graph.run_until_idle() == 0 {
                    break;
                }
            }
            Some(q) => {
                // busy while in a turn, so that no other worker ends while this one may
                // still hand it packets
                let me = &q.idle[info.id];
                me.store(false, Ordering::SeqCst);
                let done = match driver.as_mut() {
                    Some(d) => d.turn(&mut graph),
                    None => graph.run_once(),
                };
                if done == 0 && graph.run_until_idle() == 0 {
                    me.store(true, Ordering::SeqCst);
                    if end.until_idle && q.done() {
                        break;
                    }
                    // nothing to do: let a worker sharing this core run
                    std::thread::yield_now();
                }
            }
        }
        if stop.load(Ordering::Relaxed) {
            break;
        }
    }
    // leave nothing pending: what is in flight finishes its walk
    graph.dispatch_pending();
    Ok(WorkerReport {
        worker: info.id,
        core: info.core,
        seconds: start.elapsed().as_secs_f64(),
        runtime: graph.runtime(),
        errors: graph.errors(),
        created: graph.created(),
        conservation: graph.conservation(),
        control_applied,
        control_errors,
        handed_in: 0,
        handed_out: 0,
        turn: driver.map_or_else(String::new, |d| d.summary()),
        alloc_failures: graph.pool().alloc_failures(),
        double_frees: graph.pool().double_frees(),
        latency: graph.latency(),
    })
}

impl Running {
    /// Waits until every worker has built its graph and started forwarding (or one failed:
    /// then [`join`](Self::join) returns its error).
    pub fn wait_started(&self) {
        while self.ready.load(Ordering::Acquire) < self.workers
            && !self.stop.load(Ordering::Relaxed)
        {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    /// Sends a control message to one worker (applied between two of its turns); false if
    /// there is no such worker or it has ended.
    pub fn send(&self, worker: usize, msg: Control) -> bool {
        self.control
            .get(worker)
            .is_some_and(|tx| tx.send(msg).is_ok())
    }

    /// Sends `msg(worker)` to every worker; returns how many took it.
    pub fn broadcast(&self, msg: impl Fn(usize) -> Control) -> usize {
        (0..self.control.len())
            .filter(|&w| self.send(w, msg(w)))
            .count()
    }

    /// Number of workers.
    pub fn workers(&self) -> usize {
        self.workers
    }

    /// Tells every worker to stop after its current turn.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    /// Waits for every worker; the first error (a build error or a panic) is returned
    /// after all have been joined.
    pub fn join(self) -> Result<WorkersReport, WorkerError> {
        let mut workers = Vec::with_capacity(self.handles.len());
        let mut first_error = None;
        for (id, h) in self.handles.into_iter().enumerate() {
            match h.join() {
                Ok(Ok(r)) => workers.push(r),
                Ok(Err(e)) => {
                    self.stop.store(true, Ordering::Relaxed);
                    first_error.get_or_insert(e);
                }
                Err(panic) => {
                    self.stop.store(true, Ordering::Relaxed);
                    first_error.get_or_insert(WorkerError::Panicked {
                        worker: id,
                        message: panic_message(panic.as_ref()),
                    });
                }
            }
        }
        let seconds = self.start.elapsed().as_secs_f64();
        // the rings' counters once every worker stopped, then what is left in them goes
        // back to the arena (their graphs are gone)
        let handoff = self.handoff.as_ref().map(|h| h.stats());
        let reclaimed = self.handoff.as_ref().map_or(0, |h| h.reclaim());
        if let Some(h) = &handoff {
            for w in &mut workers {
                w.handed_in = h.received_by(w.worker);
                w.handed_out = h.sent_by(w.worker);
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(WorkersReport {
                workers,
                seconds,
                handoff,
                reclaimed,
            }),
        }
    }
}

fn panic_message(panic: &(dyn Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".into())
}
