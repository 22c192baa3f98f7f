//! The tuner's third dimension: the path batcher off or its batch size, for a graph behind
//! [`Batcher`]. The path-batching model ([`BatchedGraph`]) says what each node's per-call
//! cost costs per packet when a vector splits into its paths (batcher off) or runs one
//! path (on); calibrated from six runs, it predicts cycles per packet off and at each batch
//! size for any path mix, and [`BatchTuner`] re-decides when the mix changes.

use super::{median, Window};
use pktvec_batcher::{Batcher, BatcherConfig, BurstSource};
use pktvec_graph::{Graph, NodeLookupError};
use pktvec_model::ppb::{BatchedGraph, BatchedPath, Batching, CallSample};
use pktvec_model::tuner::{BatchTuner, BatchTunerConfig};

/// The traffic a [`BatcherCalibrator`] asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Traffic {
    /// One path only (e.g. IPv4 only): nothing splits.
    SinglePath,
    /// Paths mixed packet by packet (e.g. alternating IPv4/IPv6): every vector splits.
    Mixed,
}

/// Sets the batcher node `name` of a live graph (whose burst source is `S`) off or to a
/// batch size.
///
/// ```
/// use pktvec::batcher::{Batcher, BatcherConfig, ReplaySource};
/// use pktvec::prelude::*;
/// use pktvec::tune::{set_batching, Batching};
/// let mut b = GraphBuilder::new(GraphConfig::default());
/// b.add("batcher", Batcher::new(ReplaySource::new(vec![vec![0u8; 64]]), BatcherConfig::default()))
///     .add("ethernet-input", NullSink);
/// let mut graph = b.build(BufferPool::new(PoolConfig::default())?)?;
/// set_batching::<ReplaySource>(&mut graph, "batcher", Batching::Batch(64))?;
/// set_batching::<ReplaySource>(&mut graph, "batcher", Batching::Off)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn set_batching<S: BurstSource>(
    graph: &mut Graph,
    name: &str,
    s: Batching,
) -> Result<(), NodeLookupError> {
    let v = graph.config().vector_size;
    let bt = graph.node_mut::<Batcher<S>>(name)?;
    match s {
        // Off: the batch size is not used; the vector size keeps the rings' clamp out of it.
        Batching::Off => bt.set_batching(false, v),
        Batching::Batch(b) => bt.set_batching(true, b),
    };
    Ok(())
}

/// The IPv4 and IPv6 paths of a forwarder behind the batcher, by node name: a node with
/// "ip4" in its name is on the IPv4 path, "ip6" the IPv6 one, every other node on both;
/// `ethernet-input` only with the batcher off (on, the batcher hands IP vectors straight
/// to `ip4-input`/`ip6-input`).
///
/// ```
/// let names: Vec<String> = ["batcher", "ethernet-input", "ip4-input", "ip6-input", "tx"]
///     .iter().map(|s| s.to_string()).collect();
/// let p = pktvec::tune::paths_by_name(&names);
/// assert_eq!(p[0].off, vec![0, 1, 2, 4]);
/// assert_eq!(p[1].on, vec![0, 3, 4]);
/// ```
pub fn paths_by_name(names: &[String]) -> Vec<BatchedPath> {
    let path = |name: &str, other: &str| {
        let off: Vec<usize> = names
            .iter()
            .enumerate()
            .filter(|(_, n)| !n.contains(other))
            .map(|(i, _)| i)
            .collect();
        BatchedPath {
            name: name.into(),
            on: off
                .iter()
                .copied()
                .filter(|&i| names[i] != "ethernet-input")
                .collect(),
            off,
        }
    };
    vec![path("ipv4", "ip6"), path("ipv6", "ip4")]
}

/// Path shares of a window, in the model's node order.
fn shares(model: &BatchedGraph, w: &Window) -> Vec<f64> {
    let per_node: Vec<f64> = model
        .nodes
        .iter()
        .map(|n| {
            w.nodes
                .iter()
                .find(|x| x.name == n.name)
                .map_or(0.0, |x| x.packets)
        })
        .collect();
    model.shares_from_node_packets(&per_node)
}

/// Calibrates the path-batching model on a live graph behind a [`Batcher`]: on mixed
/// traffic off at vectors of 32 and 256 and on at batches of 32 and 256; on single-path
/// traffic off and at batch 256 (one path: nothing splits, which separates the cost of a
/// split). Each run is `window` turns, `reps` interleaved rounds, medians; per node the
/// costs per call, per packet and per split packet are fitted by least squares.
///
/// ```
/// # use pktvec::batcher::{Batcher, BatcherConfig, BatcherNext, BurstSource};
/// # use pktvec::graph::{builtin::{copy_into_buffers, NullSink}, Graph, GraphBuilder, GraphConfig};
/// # use pktvec::nodes::apps::l3fwd::{L3fwd, L3fwdConfig};
/// # use pktvec::packet::{builder::PacketBuilder, BufferPool, PoolConfig};
/// # use std::sync::{atomic::{AtomicUsize, Ordering::Relaxed}, Arc};
/// # /// Replays traffic `0` (IPv4 only) or `1` (alternating IPv4/IPv6), as its phase says.
/// # struct Phased(Vec<Vec<Vec<u8>>>, usize, Arc<AtomicUsize>);
/// # impl BurstSource for Phased {
/// #     fn rx_burst(&mut self, pool: &mut BufferPool, out: &mut Vec<u32>, max: usize) -> usize {
/// #         let (start, pkts) = (out.len(), &self.0[self.2.load(Relaxed)]);
/// #         out.resize(start + max, 0);
/// #         let got = pool.alloc_bulk(&mut out[start..]);
/// #         out.truncate(start + got);
/// #         let pos = &mut self.1;
/// #         copy_into_buffers(pool, &out[start..], 0, || { *pos = (*pos + 1) % pkts.len(); &pkts[*pos] });
/// #         got
/// #     }
/// # }
/// # /// l3fwd behind a `Batcher<Phased>` named "batcher"; the returned phase picks the traffic.
/// # fn l3fwd_behind_batcher() -> Result<(Graph, Arc<AtomicUsize>), Box<dyn std::error::Error>> {
/// #     let app = L3fwd::new(L3fwdConfig { route_count: 1000, route6_count: 100, ..Default::default() })?;
/// #     let (a, b) = ([2, 0, 0, 0, 0, 1].into(), [2, 0, 0, 0, 0, 2].into());
/// #     let v4 = PacketBuilder::ethernet(a, b).ipv4([10, 0, 0, 1].into(), app.routes4()[0].addr.into()).udp(1, 2).build();
/// #     let v6 = PacketBuilder::ethernet(a, b).ipv6(std::net::Ipv6Addr::LOCALHOST, app.routes6()[0].addr.into()).udp(1, 2).build();
/// #     let mixed = (0..512).map(|i| if i % 2 == 0 { v4.clone() } else { v6.clone() }).collect();
/// #     let phase = Arc::new(AtomicUsize::new(1));
/// #     let mut g = GraphBuilder::new(GraphConfig::default());
/// #     g.add("batcher", Batcher::new(Phased(vec![vec![v4.clone(); 512], mixed], 0, phase.clone()), BatcherConfig::default()));
/// #     let nodes = app.add_to(&mut g);
/// #     g.set_next("batcher", BatcherNext::Ip4, &nodes.ethernet_to_ip4.to)
/// #         .set_next("batcher", BatcherNext::Ip6, &nodes.ethernet_to_ip6.to);
/// #     g.add(&nodes.output_to_tx.to, NullSink);
/// #     Ok((g.build(BufferPool::new(PoolConfig::default())?)?, phase))
/// # }
/// use pktvec::tune::{BatcherCalibrator, Traffic};
/// // l3fwd behind a `Batcher<Phased>` named "batcher"; `phase` switches its source's traffic
/// let (mut graph, phase) = l3fwd_behind_batcher()?;
/// let model = BatcherCalibrator::new().window(4).reps(1).calibrate::<Phased>(
///     &mut graph,
///     "batcher",
///     |_g: &mut Graph, t: Traffic| phase.store(matches!(t, Traffic::Mixed) as usize, Relaxed),
/// )?;
/// # let _ = model;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct BatcherCalibrator {
    /// Turns per run.
    pub window: u64,
    /// Interleaved rounds.
    pub reps: usize,
    /// Node paths from node names ([`paths_by_name`] by default).
    pub paths: fn(&[String]) -> Vec<BatchedPath>,
}

impl Default for BatcherCalibrator {
    fn default() -> Self {
        BatcherCalibrator {
            window: 64,
            reps: 3,
            paths: paths_by_name,
        }
    }
}

impl BatcherCalibrator {
    /// Runs of 64 turns, 3 rounds, IPv4/IPv6 paths by node name.
    pub fn new() -> Self {
        Self::default()
    }

    /// Turns per run.
    pub fn window(mut self, n: u64) -> Self {
        self.window = n.max(1);
        self
    }

    /// Interleaved rounds.
    pub fn reps(mut self, n: usize) -> Self {
        self.reps = n.max(1);
        self
    }

    /// Calibrates on `graph`, whose batcher node is `name`; `traffic` switches the
    /// graph's input to the traffic asked for. The graph's vector size is restored; the
    /// batcher is left off.
    pub fn calibrate<S: BurstSource>(
        &self,
        graph: &mut Graph,
        name: &str,
        mut traffic: impl FnMut(&mut Graph, Traffic),
    ) -> Result<BatchedGraph, Box<dyn std::error::Error>> {
        let v0 = graph.config().vector_size;
        let runs: [(Traffic, usize, Batching); 6] = [
            (Traffic::Mixed, 32, Batching::Off),
            (Traffic::Mixed, 256, Batching::Off),
            (Traffic::Mixed, 32, Batching::Batch(32)),
            (Traffic::Mixed, 256, Batching::Batch(256)),
            (Traffic::SinglePath, 256, Batching::Off),
            (Traffic::SinglePath, 256, Batching::Batch(256)),
        ];
        let mut m: Vec<Vec<Window>> = vec![Vec::new(); runs.len()];
        for _ in 0..self.reps.max(1) {
            for (k, &(t, v, s)) in runs.iter().enumerate() {
                traffic(graph, t);
                graph.set_vector_size(v)?;
                set_batching::<S>(graph, name, s)?;
                Window::measure(graph, self.window / 8 + 1);
                m[k].push(Window::measure(graph, self.window));
            }
        }
        graph.set_vector_size(v0)?;
        set_batching::<S>(graph, name, Batching::Off)?;
        let mut names: Vec<String> = Vec::new();
        for w in m.iter().flatten() {
            for n in &w.nodes {
                if !names.contains(&n.name) {
                    names.push(n.name.clone());
                }
            }
        }
        let elephant = BatcherConfig::default().elephant_share;
        // The structure alone (costs 0) gives each run's next-hop mixedness per node.
        let structure = BatchedGraph::fit(
            &names,
            (self.paths)(&names),
            elephant,
            &vec![Vec::new(); names.len()],
        );
        let loads: Vec<_> = runs
            .iter()
            .zip(&m)
            .map(|(&(_, v, s), ws)| structure.node_load(&shares(&structure, &ws[0]), v, s))
            .collect();
        let samples: Vec<Vec<CallSample>> = names
            .iter()
            .enumerate()
            .map(|(i, name)| {
                runs.iter()
                    .zip(&m)
                    .zip(&loads)
                    .map(|((&(_, _, s), ws), load)| {
                        let get = |f: &dyn Fn(&super::NodeLoad) -> f64| {
                            median(
                                ws.iter()
                                    .map(|w| {
                                        w.nodes.iter().find(|n| &n.name == name).map_or(0.0, f)
                                    })
                                    .collect(),
                            )
                        };
                        CallSample {
                            on: s != Batching::Off,
                            calls: get(&|n| n.calls),
                            packets: get(&|n| n.packets),
                            cycles: get(&|n| n.cycles),
                            mixed: load[i].mixed,
                        }
                    })
                    .collect()
            })
            .collect();
        Ok(BatchedGraph::fit(
            &names,
            structure.paths.clone(),
            elephant,
            &samples,
        ))
    }
}

/// What one [`BatcherTuner::step`] did.
#[derive(Clone, Debug, PartialEq)]
pub struct BatcherStep {
    /// The measured window.
    pub window: Window,
    /// The batcher setting the window ran at.
    pub ran: Batching,
    /// The setting applied for the next window.
    pub next: Batching,
    /// The window's path shares.
    pub shares: Vec<f64>,
    /// Whether the window was part of an exploration.
    pub exploring: bool,
    /// Whether this window started an exploration.
    pub started: bool,
}

/// The batcher tuner attached to a running graph: each [`step`](Self::step) runs one
/// window, reads the path mix from the nodes' packets and drives
/// [`Batcher::set_batching`] at the graph's vector size. A change of the mix starts a
/// bounded exploration (the model's best few and "off"), the best measured is kept.
///
/// ```
/// # use pktvec::batcher::{Batcher, BatcherConfig, BatcherNext, BurstSource};
/// # use pktvec::graph::{builtin::{copy_into_buffers, NullSink}, Graph, GraphBuilder, GraphConfig};
/// # use pktvec::nodes::apps::l3fwd::{L3fwd, L3fwdConfig};
/// # use pktvec::packet::{builder::PacketBuilder, BufferPool, PoolConfig};
/// # use std::sync::{atomic::{AtomicUsize, Ordering::Relaxed}, Arc};
/// # /// Replays traffic `0` (IPv4 only) or `1` (alternating IPv4/IPv6), as its phase says.
/// # struct Phased(Vec<Vec<Vec<u8>>>, usize, Arc<AtomicUsize>);
/// # impl BurstSource for Phased {
/// #     fn rx_burst(&mut self, pool: &mut BufferPool, out: &mut Vec<u32>, max: usize) -> usize {
/// #         let (start, pkts) = (out.len(), &self.0[self.2.load(Relaxed)]);
/// #         out.resize(start + max, 0);
/// #         let got = pool.alloc_bulk(&mut out[start..]);
/// #         out.truncate(start + got);
/// #         let pos = &mut self.1;
/// #         copy_into_buffers(pool, &out[start..], 0, || { *pos = (*pos + 1) % pkts.len(); &pkts[*pos] });
/// #         got
/// #     }
/// # }
/// # /// l3fwd behind a `Batcher<Phased>` named "batcher"; the returned phase picks the traffic.
/// # fn l3fwd_behind_batcher() -> Result<(Graph, Arc<AtomicUsize>), Box<dyn std::error::Error>> {
/// #     let app = L3fwd::new(L3fwdConfig { route_count: 1000, route6_count: 100, ..Default::default() })?;
/// #     let (a, b) = ([2, 0, 0, 0, 0, 1].into(), [2, 0, 0, 0, 0, 2].into());
/// #     let v4 = PacketBuilder::ethernet(a, b).ipv4([10, 0, 0, 1].into(), app.routes4()[0].addr.into()).udp(1, 2).build();
/// #     let v6 = PacketBuilder::ethernet(a, b).ipv6(std::net::Ipv6Addr::LOCALHOST, app.routes6()[0].addr.into()).udp(1, 2).build();
/// #     let mixed = (0..512).map(|i| if i % 2 == 0 { v4.clone() } else { v6.clone() }).collect();
/// #     let phase = Arc::new(AtomicUsize::new(1));
/// #     let mut g = GraphBuilder::new(GraphConfig::default());
/// #     g.add("batcher", Batcher::new(Phased(vec![vec![v4.clone(); 512], mixed], 0, phase.clone()), BatcherConfig::default()));
/// #     let nodes = app.add_to(&mut g);
/// #     g.set_next("batcher", BatcherNext::Ip4, &nodes.ethernet_to_ip4.to)
/// #         .set_next("batcher", BatcherNext::Ip6, &nodes.ethernet_to_ip6.to);
/// #     g.add(&nodes.output_to_tx.to, NullSink);
/// #     Ok((g.build(BufferPool::new(PoolConfig::default())?)?, phase))
/// # }
/// # let (mut graph, phase) = l3fwd_behind_batcher()?;
/// # let model = pktvec::tune::BatcherCalibrator::new().window(4).reps(1).calibrate::<Phased>(
/// #     &mut graph, "batcher", |_g: &mut Graph, t: pktvec::tune::Traffic| {
/// #         phase.store(matches!(t, pktvec::tune::Traffic::Mixed) as usize, Relaxed)
/// #     })?;
/// use pktvec::tune::{BatchTunerConfig, BatcherTuner};
/// let mut t = BatcherTuner::<Phased>::attach(model, BatchTunerConfig::default(), &mut graph, "batcher", 8)?;
/// for _ in 0..10 {
///     let step = t.step(&mut graph)?;
///     println!("{:?} -> {:?}", step.ran, step.next);
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct BatcherTuner<S> {
    tuner: BatchTuner,
    name: String,
    window: u64,
    applied: Batching,
    _source: std::marker::PhantomData<fn() -> S>,
}

impl<S: BurstSource> BatcherTuner<S> {
    /// Measures one window with the batcher off to read the path mix, starts the tuner at
    /// the model's choice for it (at the graph's vector size) and applies it. Windows are
    /// `window` turns.
    pub fn attach(
        model: BatchedGraph,
        cfg: BatchTunerConfig,
        graph: &mut Graph,
        name: &str,
        window: u64,
    ) -> Result<Self, Box<dyn std::error::Error>> {
        set_batching::<S>(graph, name, Batching::Off)?;
        let w = Window::measure(graph, window.max(1));
        let sh = shares(&model, &w);
        let tuner = BatchTuner::new(cfg, model, graph.config().vector_size, &sh);
        let applied = tuner.setting();
        set_batching::<S>(graph, name, applied)?;
        Ok(BatcherTuner {
            tuner,
            name: name.into(),
            window: window.max(1),
            applied,
            _source: std::marker::PhantomData,
        })
    }

    /// Runs one window (after a settling run of an eighth of a window when the setting just
    /// changed), feeds it to the tuner, applies its next setting.
    pub fn step(&mut self, graph: &mut Graph) -> Result<BatcherStep, Box<dyn std::error::Error>> {
        let ran = self.tuner.setting();
        if ran != self.applied {
            set_batching::<S>(graph, &self.name, ran)?;
            self.applied = ran;
            Window::measure(graph, self.window / 8 + 1);
        }
        let window = Window::measure(graph, self.window);
        let sh = shares(self.tuner.model(), &window);
        let was = self.tuner.exploring();
        let next = self.tuner.observe(window.node_cycles, &sh);
        if next != self.applied {
            set_batching::<S>(graph, &self.name, next)?;
            self.applied = next;
        }
        Ok(BatcherStep {
            window,
            ran,
            next,
            shares: sh,
            exploring: was,
            started: !was && self.tuner.exploring(),
        })
    }

    /// The batcher setting in force.
    pub fn setting(&self) -> Batching {
        self.tuner.setting()
    }

    /// Whether an exploration is running.
    pub fn exploring(&self) -> bool {
        self.tuner.exploring()
    }

    /// Re-decisions finished.
    pub fn decisions(&self) -> u64 {
        self.tuner.decisions()
    }

    /// The model tuner underneath.
    pub fn tuner(&self) -> &BatchTuner {
        &self.tuner
    }
}
