//! Letting the overhead model tune a graph: calibrate it on your graph, predict cycles per
//! packet for every vector size V and sub-batch b, take the tuner's choice, and keep a
//! tuner attached to the running graph that re-decides when the traffic changes.
//!
//! The model ([`pktvec_model::batching`]) says a node's cost per packet is
//! `Δshared/V + Δnecessary + stall(b) + Δsub·(b − 1)`: the per-call work spread over the
//! vector, the per-packet work, the part of a table miss that a sub-batch of `b` packets
//! cannot hide behind the other lookups in flight, and the sub-batch's own bookkeeping.
//! A few runs at chosen (V, b) settings fix these terms per node
//! ([`Calibration`]); the rest of the grid is predicted. The tuner
//! ([`pktvec_model::tuner::Tuner`]) takes the setting with the lowest prediction, capping
//! b on tables that fit the private L2 (nothing to hide there), and online explores a
//! bounded set of neighbours when the traffic profile (each node's share of packets and
//! cycles) or the cycles per packet drift from what it decided on.
//!
//! V and b are runtime settings of a [`Graph`] ([`Graph::set_vector_size`],
//! [`Graph::set_sub_batch`]): build your graph once; calibration and tuning change them
//! on the live graph. A node follows b when it uses
//! [`Context::process_sub_batches`](pktvec_graph::Context::process_sub_batches).
//!
//! ```
//! use pktvec::prelude::*;
//! use pktvec::tune::{AutoTuner, Calibrator, TunerConfig};
//!
//! next_nodes! { pub enum LookupNext { Tx = "tx" } }
//!
//! /// A user node: looks each packet's last byte up in a table, sub-batch by sub-batch.
//! struct Lookup { table: Vec<u64> }
//! impl Node for Lookup {
//!     type Next = LookupNext;
//!     type Error = NoError;
//!     fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
//!         let table = &self.table;
//!         cx.process_sub_batches(
//!             frame,
//!             |p| p.data()[p.data().len() - 1] as usize % table.len(),
//!             |p, k| { p.meta_mut().tx_if = (table[k] & 3) as u16; Verdict::Next(LookupNext::Tx) },
//!         );
//!     }
//! }
//!
//! let mut b = GraphBuilder::new(GraphConfig::default());
//! b.add("source", PacketSource::new((0..64u8).map(|i| vec![i; 64]).collect()))
//!     .add("lookup", Lookup { table: (0..4096).collect() })
//!     .add("tx", NullSink)
//!     .set_next("source", SourceNext::Out, "lookup");
//! let mut graph = b.build(BufferPool::new(PoolConfig::default())?)?;
//!
//! // 1. Calibrate: a few (V, b) runs, the model fitted per node.
//! let calib = Calibrator::new().packets(2_000).reps(1).calibrate(&mut graph)?;
//! // 2. Predict the grid and take the tuner's choice.
//! let cfg = TunerConfig::default();
//! let grid = pktvec::tune::predict(&calib, &pktvec::tune::grid(&cfg));
//! let choice = pktvec::tune::choose(&calib, &cfg);
//! assert!(grid.iter().any(|p| p.setting == choice));
//! // 3. Attach the online tuner: each step runs one window and re-decides.
//! let mut tuner = AutoTuner::new(calib, cfg).window_vectors(8).attach(&mut graph)?;
//! for _ in 0..10 {
//!     let step = tuner.step(&mut graph)?;
//!     assert!(step.window.packets > 0);
//! }
//! assert_eq!(graph.config().vector_size, tuner.setting().vector);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! A graph behind the path batcher ([`pktvec_batcher::Batcher`]) has a third knob, the
//! batcher off or its batch size: [`BatcherCalibrator`] fits the path-batching model and
//! [`BatcherTuner`] drives [`pktvec_batcher::Batcher::set_batching`] on the live graph.

use pktvec_graph::{clock, Graph, GraphError, NodeKind, RuntimeTable};
use pktvec_model::tuner::Tuner;
use pktvec_workers::runtime::{Turn, TurnFactory};
use std::sync::Arc;
use std::time::Instant;

mod batcher;

pub use batcher::{
    paths_by_name, set_batching, BatcherCalibrator, BatcherStep, BatcherTuner, Traffic,
};
pub use pktvec_model::calibrate::{Calibration, Sample};
pub use pktvec_model::ppb::{BatchedGraph, Batching};
pub use pktvec_model::tuner::{BatchTunerConfig, CacheFit, Setting, TunerConfig};

/// Applies a (V, b) setting to a live graph.
///
/// ```
/// # use pktvec::prelude::*;
/// # let mut b = GraphBuilder::new(GraphConfig::default());
/// # b.add("source", PacketSource::new(vec![vec![0u8; 64]])).add("tx", NullSink)
/// #     .set_next("source", SourceNext::Out, "tx");
/// # let mut graph = b.build(BufferPool::new(PoolConfig::default())?)?;
/// use pktvec::tune::{apply, Setting};
/// apply(&mut graph, Setting { vector: 64, sub_batch: 8 })?;
/// assert_eq!((graph.config().vector_size, graph.config().sub_batch), (64, 8));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn apply(graph: &mut Graph, s: Setting) -> Result<(), GraphError> {
    graph.set_vector_size(s.vector)?;
    graph.set_sub_batch(s.sub_batch);
    Ok(())
}

/// The setting a graph runs now.
///
/// ```
/// # use pktvec::prelude::*;
/// # let mut b = GraphBuilder::new(GraphConfig::default());
/// # b.add("source", PacketSource::new(vec![vec![0u8; 64]])).add("tx", NullSink)
/// #     .set_next("source", SourceNext::Out, "tx");
/// # let graph = b.build(BufferPool::new(PoolConfig::default())?)?;
/// let s = pktvec::tune::current(&graph);
/// assert_eq!((s.vector, s.sub_batch), (256, 16));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn current(graph: &Graph) -> Setting {
    Setting {
        vector: graph.config().vector_size,
        sub_batch: graph.config().sub_batch,
    }
}

/// One node's load in a [`Window`], per packet the graph's input nodes produced.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeLoad {
    /// Node name.
    pub name: String,
    /// Calls with packets (vectors) per input packet.
    pub calls: f64,
    /// Packets per input packet.
    pub packets: f64,
    /// Cycles per input packet.
    pub cycles: f64,
}

/// What one measured stretch of a running graph showed: the live runtime stats the model
/// and the tuners read.
///
/// ```
/// # use pktvec::prelude::*;
/// # let mut b = GraphBuilder::new(GraphConfig::default());
/// # b.add("source", PacketSource::new(vec![vec![0u8; 64]])).add("tx", NullSink)
/// #     .set_next("source", SourceNext::Out, "tx");
/// # let mut graph = b.build(BufferPool::new(PoolConfig::default())?)?;
/// let w = pktvec::tune::Window::measure(&mut graph, 4);
/// assert_eq!(w.packets, 4 * 256);
/// assert!(w.node_cycles > 0.0 && w.mpps > 0.0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Window {
    /// Cycles of all nodes per input packet (what the model is calibrated on).
    pub node_cycles: f64,
    /// End-to-end cycles of the TSC per input packet (dispatch included).
    pub cycles: f64,
    /// Million input packets per second, wall clock.
    pub mpps: f64,
    /// Input packets.
    pub packets: u64,
    /// Input vectors.
    pub vectors: u64,
    /// Each node's share of the input packets, then of the cycles: the traffic profile
    /// the online tuner watches.
    pub profile: Vec<f64>,
    /// Per node, in node order.
    pub nodes: Vec<NodeLoad>,
}

impl Window {
    /// Runs `turns` turns of the graph ([`Graph::run_once`]) at its current setting and
    /// reads the runtime stats (they are reset first).
    pub fn measure(graph: &mut Graph, turns: u64) -> Window {
        Self::run(graph, turns, 0)
    }

    /// Runs until the input nodes produced at least `packets` packets (at most
    /// `16 * packets` turns, so an idle graph returns).
    pub fn measure_packets(graph: &mut Graph, packets: u64) -> Window {
        Self::run(graph, 0, packets)
    }

    fn run(graph: &mut Graph, turns: u64, packets: u64) -> Window {
        graph.reset_stats();
        let (t0, c0) = (Instant::now(), clock::now());
        let (mut done, mut calls) = (0u64, 0u64);
        while (turns > 0 && calls < turns)
            || (turns == 0 && done < packets && calls < packets.saturating_mul(16).max(1))
        {
            done += graph.run_once();
            calls += 1;
        }
        let (c1, secs) = (clock::now(), t0.elapsed().as_secs_f64());
        Self::from_runtime(&graph.runtime(), c1.saturating_sub(c0), secs)
    }

    /// A window from a runtime table read after `tsc_cycles` cycles and `secs` seconds.
    pub fn from_runtime(rt: &RuntimeTable, tsc_cycles: u64, secs: f64) -> Window {
        let (packets, vectors) = rt
            .rows
            .iter()
            .filter(|r| r.kind == NodeKind::Input)
            .fold((0, 0), |a, r| (a.0 + r.packets, a.1 + r.vectors));
        let per = |x: u64| x as f64 / packets.max(1) as f64;
        let node: u64 = rt.rows.iter().map(|r| r.cycles).sum();
        let mut profile: Vec<f64> = rt.rows.iter().map(|r| per(r.packets)).collect();
        profile.extend(rt.rows.iter().map(|r| r.cycles as f64 / node.max(1) as f64));
        Window {
            node_cycles: per(node),
            cycles: per(tsc_cycles),
            mpps: packets as f64 / secs.max(1e-12) / 1e6,
            packets,
            vectors,
            profile,
            nodes: rt
                .rows
                .iter()
                .map(|r| NodeLoad {
                    name: r.name.clone(),
                    calls: per(r.vectors),
                    packets: per(r.packets),
                    cycles: per(r.cycles),
                })
                .collect(),
        }
    }
}

/// Measures `packets` input packets at setting `s` (after a warm-up of a tenth), timed in
/// `chunks` chunks; the chunk with the median node cycles stands for the run, so a
/// scheduler slice taken by another process lands in one chunk instead of the figure.
///
/// ```
/// # use pktvec::prelude::*;
/// # let mut b = GraphBuilder::new(GraphConfig::default());
/// # b.add("source", PacketSource::new(vec![vec![0u8; 64]])).add("tx", NullSink)
/// #     .set_next("source", SourceNext::Out, "tx");
/// # let mut graph = b.build(BufferPool::new(PoolConfig::default())?)?;
/// use pktvec::tune::{measure, Setting};
/// let w = measure(&mut graph, Setting { vector: 32, sub_batch: 4 }, 4096, 4)?;
/// assert_eq!(w.nodes.len(), 2);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn measure(
    graph: &mut Graph,
    s: Setting,
    packets: u64,
    chunks: u64,
) -> Result<Window, GraphError> {
    apply(graph, s)?;
    Window::measure_packets(graph, packets / 10 + 1);
    let chunks = chunks.max(1);
    let mut xs: Vec<Window> = (0..chunks)
        .map(|_| Window::measure_packets(graph, packets.div_ceil(chunks)))
        .collect();
    xs.sort_by(|a, b| a.node_cycles.total_cmp(&b.node_cycles));
    Ok(xs.swap_remove(xs.len() / 2))
}

/// The median of `xs` (the upper one of an even count); NaN when empty.
fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs.get(xs.len() / 2).copied().unwrap_or(f64::NAN)
}

/// Calibrates the overhead model on a graph: runs every vector size at the largest
/// sub-batch and every sub-batch at the largest vector size, each `reps` times in a
/// shuffled order (the machine's speed drifts; the median per node is kept), and fits
/// [`Calibration`] per node. The graph's setting is restored afterwards.
///
/// ```
/// # use pktvec::prelude::*;
/// # let mut b = GraphBuilder::new(GraphConfig::default());
/// # b.add("source", PacketSource::new(vec![vec![0u8; 64]])).add("tx", NullSink)
/// #     .set_next("source", SourceNext::Out, "tx");
/// # let mut graph = b.build(BufferPool::new(PoolConfig::default())?)?;
/// use pktvec::tune::Calibrator;
/// let cal = Calibrator::new().packets(2_000).reps(1);
/// let calib = cal.calibrate(&mut graph)?;
/// assert_eq!(calib.nodes.len(), 2);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Calibrator {
    /// Vector sizes run at the largest sub-batch (`min(64, V)`).
    pub vectors: Vec<usize>,
    /// Sub-batches run at the largest vector size.
    pub sub_batches: Vec<usize>,
    /// Input packets per run.
    pub packets: u64,
    /// Runs of each setting (the median is kept).
    pub reps: usize,
    /// Chunks per run ([`measure`]).
    pub chunks: u64,
}

impl Default for Calibrator {
    fn default() -> Self {
        Calibrator {
            vectors: vec![16, 32, 64, 128, 256],
            sub_batches: vec![1, 2, 4, 8, 16, 32],
            packets: 100_000,
            reps: 3,
            chunks: 8,
        }
    }
}

impl Calibrator {
    /// The default calibration: V ∈ {16, …, 256} at b = min(64, V), b ∈ {1, 2, 4, …, 32}
    /// at V = 256; 100,000 packets a run, 3 runs a setting.
    pub fn new() -> Self {
        Self::default()
    }

    /// Input packets per run.
    pub fn packets(mut self, n: u64) -> Self {
        self.packets = n;
        self
    }

    /// Runs of each setting.
    pub fn reps(mut self, n: usize) -> Self {
        self.reps = n;
        self
    }

    /// The settings the calibration runs.
    pub fn runs(&self) -> Vec<Setting> {
        let vmax = self.vectors.iter().copied().max().unwrap_or(256);
        let mut out: Vec<Setting> = self
            .vectors
            .iter()
            .map(|&v| Setting {
                vector: v,
                sub_batch: 64.min(v),
            })
            .collect();
        for &b in self.sub_batches.iter().filter(|&&b| b <= vmax) {
            let s = Setting {
                vector: vmax,
                sub_batch: b,
            };
            if !out.contains(&s) {
                out.push(s);
            }
        }
        out
    }

    /// Runs the calibration settings and returns each run's measurement, in run order
    /// (every setting `reps` times, shuffled per round).
    pub fn measure_runs(&self, graph: &mut Graph) -> Result<Vec<(Setting, Window)>, GraphError> {
        let before = current(graph);
        let out = measure_shuffled(graph, &self.runs(), self.reps, self.packets, self.chunks);
        apply(graph, before)?;
        out
    }

    /// Fits the calibration from runs (as [`measure_runs`](Self::measure_runs) returns):
    /// per node and setting the median cycles per input packet.
    pub fn fit(runs: &[(Setting, Window)]) -> Calibration {
        let mut names: Vec<String> = Vec::new();
        let mut settings: Vec<Setting> = Vec::new();
        for (s, w) in runs {
            if !settings.contains(s) {
                settings.push(*s);
            }
            for n in &w.nodes {
                if !names.contains(&n.name) {
                    names.push(n.name.clone());
                }
            }
        }
        let mut samples = Vec::new();
        for s in &settings {
            for n in &names {
                let xs = runs
                    .iter()
                    .filter(|r| r.0 == *s)
                    .map(|r| {
                        r.1.nodes
                            .iter()
                            .find(|x| &x.name == n)
                            .map_or(0.0, |x| x.cycles)
                    })
                    .collect();
                samples.push((
                    n.clone(),
                    Sample {
                        vector: s.vector,
                        sub_batch: s.sub_batch,
                        cycles_per_packet: median(xs),
                    },
                ));
            }
        }
        Calibration::fit(&samples)
    }

    /// Runs the calibration on `graph` and fits the model.
    pub fn calibrate(&self, graph: &mut Graph) -> Result<Calibration, GraphError> {
        Ok(Self::fit(&self.measure_runs(graph)?))
    }
}

/// Measures every setting `reps` times, each round in a fresh shuffled order; returns the
/// runs in measurement order.
///
/// ```
/// # use pktvec::prelude::*;
/// # let mut b = GraphBuilder::new(GraphConfig::default());
/// # b.add("source", PacketSource::new(vec![vec![0u8; 64]])).add("tx", NullSink)
/// #     .set_next("source", SourceNext::Out, "tx");
/// # let mut graph = b.build(BufferPool::new(PoolConfig::default())?)?;
/// use pktvec::tune::{measure_shuffled, Setting};
/// let s = [Setting { vector: 32, sub_batch: 1 }, Setting { vector: 64, sub_batch: 8 }];
/// let runs = measure_shuffled(&mut graph, &s, 2, 1000, 2)?;
/// assert_eq!(runs.len(), 4);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn measure_shuffled(
    graph: &mut Graph,
    settings: &[Setting],
    reps: usize,
    packets: u64,
    chunks: u64,
) -> Result<Vec<(Setting, Window)>, GraphError> {
    let mut order = settings.to_vec();
    let mut out = Vec::with_capacity(order.len() * reps);
    let mut x = 0x2545_f491_4f6c_dd1du64;
    for _ in 0..reps.max(1) {
        for i in (1..order.len()).rev() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            order.swap(i, (x % (i as u64 + 1)) as usize);
        }
        for &s in &order {
            out.push((s, measure(graph, s, packets, chunks)?));
        }
    }
    Ok(out)
}

/// Calibrates with the default [`Calibrator`].
///
/// ```no_run
/// # use pktvec::prelude::*;
/// # let mut b = GraphBuilder::new(GraphConfig::default());
/// # b.add("source", PacketSource::new(vec![vec![0u8; 64]])).add("tx", NullSink)
/// #     .set_next("source", SourceNext::Out, "tx");
/// # let mut graph = b.build(BufferPool::new(PoolConfig::default())?)?;
/// let calib = pktvec::tune::calibrate(&mut graph)?;
/// println!("{}", calib.to_json());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn calibrate(graph: &mut Graph) -> Result<Calibration, GraphError> {
    Calibrator::default().calibrate(graph)
}

/// The (V, b) grid of a tuner configuration: every allowed vector size with every allowed
/// sub-batch up to it.
///
/// ```
/// use pktvec::tune::{grid, Setting, TunerConfig};
/// let cfg = TunerConfig { vectors: vec![4, 8], sub_batches: vec![1, 8], ..TunerConfig::default() };
/// assert_eq!(grid(&cfg), vec![Setting { vector: 4, sub_batch: 1 },
///     Setting { vector: 8, sub_batch: 1 }, Setting { vector: 8, sub_batch: 8 }]);
/// ```
pub fn grid(cfg: &TunerConfig) -> Vec<Setting> {
    let mut out = Vec::new();
    for &v in &cfg.vectors {
        for &b in cfg.sub_batches.iter().filter(|&&b| b <= v) {
            out.push(Setting {
                vector: v,
                sub_batch: b,
            });
        }
    }
    out
}

/// One predicted setting.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Prediction {
    /// The setting.
    pub setting: Setting,
    /// Predicted cycles of all nodes per input packet.
    pub cycles_per_packet: f64,
}

/// The model's cycles per packet for each setting.
///
/// ```
/// use pktvec::model::batching::{Compute, Node, Stall};
/// use pktvec::tune::{predict, Calibration, Setting};
/// let lookup = Node { compute: Compute { delta_shared: 2000.0, delta_necessary: 20.0, delta_cache: 0.0 },
///                     stall: Stall { delta_fetch: 60.0, delta_hide: 50.0, delta_sub: 0.0, hide_span: 0.0 } };
/// let calib = Calibration { nodes: vec![("lookup".into(), lookup)] };
/// let p = predict(&calib, &[Setting { vector: 32, sub_batch: 1 }, Setting { vector: 256, sub_batch: 32 }]);
/// // Larger vectors spread the per-call cost; larger sub-batches hide the misses.
/// assert!(p[1].cycles_per_packet < p[0].cycles_per_packet);
/// ```
pub fn predict(calib: &Calibration, settings: &[Setting]) -> Vec<Prediction> {
    settings
        .iter()
        .map(|&s| Prediction {
            setting: s,
            cycles_per_packet: calib.predict(s.vector, s.sub_batch, |_| 1.0),
        })
        .collect()
}

/// The tuner's choice for a calibration (its cache rules included, see
/// [`TunerConfig`]).
///
/// ```
/// use pktvec::model::batching::{Compute, Node, Stall};
/// use pktvec::tune::{choose, Calibration, TunerConfig};
/// let lookup = Node { compute: Compute { delta_shared: 2000.0, delta_necessary: 20.0, delta_cache: 0.0 },
///                     stall: Stall { delta_fetch: 100.0, delta_hide: 90.0, delta_sub: 0.0, hide_span: 0.0 } };
/// let s = choose(&Calibration { nodes: vec![("lookup".into(), lookup)] }, &TunerConfig::default());
/// assert_eq!(s.vector, 256);
/// assert!(s.sub_batch >= 32); // misses to hide: large sub-batches
/// ```
pub fn choose(calib: &Calibration, cfg: &TunerConfig) -> Setting {
    Tuner::new(cfg.clone(), calib.clone()).setting()
}

/// What one [`AutoTuner::step`] did.
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    /// The measured window.
    pub window: Window,
    /// The setting the window ran at.
    pub ran: Setting,
    /// The setting applied for the next window.
    pub next: Setting,
    /// Whether the window was part of an exploration.
    pub exploring: bool,
    /// Whether this window started an exploration.
    pub started: bool,
}

/// The online tuner attached to a running graph: each [`step`](Self::step) runs one window,
/// feeds its live runtime stats to the tuner and applies the tuner's (V, b) to the graph.
/// A change of the traffic profile (default) or of the cycles per packet against the
/// prediction starts a bounded exploration of neighbouring settings; the best measured is
/// kept and the model is rescaled to the new level.
///
/// ```
/// # use pktvec::prelude::*;
/// # let mut b = GraphBuilder::new(GraphConfig::default());
/// # b.add("source", PacketSource::new(vec![vec![0u8; 64]])).add("tx", NullSink)
/// #     .set_next("source", SourceNext::Out, "tx");
/// # let mut graph = b.build(BufferPool::new(PoolConfig::default())?)?;
/// use pktvec::tune::{AutoTuner, Calibrator, TunerConfig};
/// let calib = Calibrator::new().packets(2_000).reps(1).calibrate(&mut graph)?;
/// let mut t = AutoTuner::new(calib, TunerConfig::default()).window_vectors(4).attach(&mut graph)?;
/// let step = t.step(&mut graph)?;
/// assert_eq!(step.ran, t.setting()); // steady traffic: no exploration yet
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct AutoTuner {
    tuner: Tuner,
    window: u64,
    profile: bool,
    applied: Option<Setting>,
}

impl AutoTuner {
    /// A tuner for `calib` with the settings of `cfg`, starting at its predicted choice;
    /// windows of 64 turns, exploring on a change of the traffic profile.
    pub fn new(calib: Calibration, cfg: TunerConfig) -> Self {
        AutoTuner {
            tuner: Tuner::new(cfg, calib),
            window: 64,
            profile: true,
            applied: None,
        }
    }

    /// Turns of the graph ([`Graph::run_once`]) per window.
    pub fn window_vectors(mut self, n: u64) -> Self {
        self.window = n.max(1);
        self
    }

    /// Explore on a drift of cycles per packet against the prediction
    /// ([`TunerConfig::drift`]) instead of a change of the traffic profile. The profile is
    /// insensitive to the machine's own speed swings; the cycles are not.
    pub fn on_cycles(mut self) -> Self {
        self.profile = false;
        self
    }

    /// Applies the tuner's setting to the graph.
    pub fn attach(mut self, graph: &mut Graph) -> Result<Self, GraphError> {
        let s = self.tuner.setting();
        apply(graph, s)?;
        self.applied = Some(s);
        Ok(self)
    }

    /// Runs one window on the graph (after a short settling run of an eighth of a window
    /// when the setting just changed), feeds it to the tuner and applies its next setting.
    pub fn step(&mut self, graph: &mut Graph) -> Result<Step, GraphError> {
        let s = self.tuner.setting();
        if self.applied != Some(s) {
            apply(graph, s)?;
            self.applied = Some(s);
            Window::measure(graph, self.window / 8 + 1);
        }
        let w = Window::measure(graph, self.window);
        self.observe(graph, w)
    }

    /// Feeds a window the caller measured at [`setting`](Self::setting) and applies the
    /// next setting.
    pub fn observe(&mut self, graph: &mut Graph, window: Window) -> Result<Step, GraphError> {
        let ran = self.tuner.setting();
        let was = self.tuner.exploring();
        let next = if self.profile {
            self.tuner
                .observe_profile(window.node_cycles, &window.profile)
        } else {
            self.tuner.observe(window.node_cycles)
        };
        if self.applied != Some(next) {
            apply(graph, next)?;
            self.applied = Some(next);
        }
        Ok(Step {
            window,
            ran,
            next,
            exploring: was,
            started: !was && self.tuner.exploring(),
        })
    }

    /// The setting in force.
    pub fn setting(&self) -> Setting {
        self.tuner.setting()
    }

    /// Whether an exploration is running.
    pub fn exploring(&self) -> bool {
        self.tuner.exploring()
    }

    /// Re-decisions finished (explorations that ended).
    pub fn decisions(&self) -> u64 {
        self.tuner.decisions()
    }

    /// The model tuner underneath.
    pub fn tuner(&self) -> &Tuner {
        &self.tuner
    }
}

/// The online tuner on every worker: each worker calibrates the model on its own graph
/// (before the workers start together), then runs windows of `window` turns and lets its own
/// [`AutoTuner`] retune its (V, b) from what it measured, as one graph on one core does.
/// The windows are read as differences of the runtime table, so the worker's report keeps
/// the whole run's counters. Give it to
/// [`WorkersConfig::with_turn`](pktvec_workers::runtime::WorkersConfig::with_turn).
///
/// ```
/// # use pktvec::prelude::*;
/// use pktvec::tune::{worker_tuner, Calibrator, TunerConfig};
/// use pktvec::workers::runtime::{Workers, WorkersConfig};
///
/// let tuner = worker_tuner(Calibrator::new().packets(2_000).reps(1), TunerConfig::default(), 8);
/// let report = Workers::run(WorkersConfig::new(2).with_turn(tuner), |_| {
///     let mut b = GraphBuilder::new(GraphConfig::default());
///     b.add("source", PacketSource::new(vec![vec![0u8; 64]]).with_limit(200_000))
///         .add("tx", NullSink)
///         .set_next("source", SourceNext::Out, "tx");
///     Ok(b.build(BufferPool::new(PoolConfig::default())?)?)
/// })?;
/// assert!(report.workers.iter().all(|w| w.turn.starts_with("online tuner")));
/// assert!(report.conservation().is_balanced());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn worker_tuner(calibrator: Calibrator, cfg: TunerConfig, window: u64) -> TurnFactory {
    Arc::new(move |_, graph: &mut Graph| {
        let calib = calibrator.calibrate(graph)?;
        // forward from a clean state: calibration's packets finished and not counted
        graph.dispatch_pending();
        graph.reset_stats();
        let tuner = AutoTuner::new(calib, cfg.clone())
            .window_vectors(window)
            .attach(graph)?;
        Ok(Box::new(WorkerTuner {
            last: graph.runtime(),
            tuner,
            windows: 0,
            explorations: 0,
            errors: 0,
        }) as Box<dyn Turn>)
    })
}

/// One worker's online tuner ([`worker_tuner`]).
struct WorkerTuner {
    tuner: AutoTuner,
    /// The runtime table at the end of the last window.
    last: RuntimeTable,
    windows: u64,
    explorations: u64,
    errors: u64,
}

impl Turn for WorkerTuner {
    fn turn(&mut self, graph: &mut Graph) -> u64 {
        let (t0, c0) = (Instant::now(), clock::now());
        let mut done = 0;
        for _ in 0..self.tuner.window {
            done += graph.run_once();
        }
        let (c1, secs) = (clock::now(), t0.elapsed().as_secs_f64());
        let now = graph.runtime();
        let window = Window::from_runtime(&runtime_delta(&now, &self.last), c1 - c0, secs);
        self.last = now;
        if window.packets > 0 {
            match self.tuner.observe(graph, window) {
                Ok(step) => {
                    self.windows += 1;
                    self.explorations += u64::from(step.started);
                }
                Err(_) => self.errors += 1,
            }
        }
        done
    }

    fn summary(&self) -> String {
        let s = self.tuner.setting();
        format!(
            "online tuner: V {} b {}, {} windows, {} explorations, {} decisions, {} errors",
            s.vector,
            s.sub_batch,
            self.windows,
            self.explorations,
            self.tuner.decisions(),
            self.errors
        )
    }
}

/// `now − before`, node by node (by name), with the derived columns recomputed.
fn runtime_delta(now: &RuntimeTable, before: &RuntimeTable) -> RuntimeTable {
    let div = |a: u64, b: u64| if b == 0 { 0.0 } else { a as f64 / b as f64 };
    let rows = now
        .rows
        .iter()
        .map(|r| {
            let mut d = r.clone();
            if let Some(b) = before.rows.iter().find(|b| b.name == r.name) {
                d.calls -= b.calls.min(d.calls);
                d.vectors -= b.vectors.min(d.vectors);
                d.packets -= b.packets.min(d.packets);
                d.created -= b.created.min(d.created);
                d.cycles -= b.cycles.min(d.cycles);
            }
            d.vectors_per_call = div(d.vectors, d.calls);
            d.packets_per_vector = div(d.packets, d.vectors);
            d.cycles_per_packet = div(d.cycles, d.packets);
            d.cycles_per_call = div(d.cycles, d.calls);
            d
        })
        .collect();
    RuntimeTable {
        rows,
        tsc_hz: now.tsc_hz,
        vector_size: now.vector_size,
    }
}
