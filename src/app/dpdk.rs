//! DPDK ports as a forwarder's input and output (feature `dpdk`): one EAL, one mempool
//! whose mbufs are the graph's buffers, every port polled on each of its rx queues, and a
//! packet sent on the port whose index is its tx interface.
//!
//! ```no_run
//! use pktvec::app::dpdk::DpdkPorts;
//! use pktvec::app::Run;
//! use pktvec::prelude::*;
//!
//! let eal = "--no-huge -m 1024 --no-pci --vdev=net_pcap0,rx_pcap=in.pcap,tx_pcap=out.pcap";
//! let ports = DpdkPorts::open(eal, 16384, 1)?;
//! let mut b = GraphBuilder::new(GraphConfig::default());
//! ports.input(100_000).add_to(&mut b, "input", "tx");
//! ports.output().add_to(&mut b, "tx");
//! let mut graph = b.build(ports.pool()?)?;
//! let mut report = Run::new("io").run(&mut graph);
//! report.ports = ports.report(&graph);
//! println!("{report}"); // ... port 0 (net_pcap0): rx ... tx ... | input: foreign 0 refused 0
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Several workers, one graph each ([`DpdkPorts::for_workers`]): every port gets one rx and
//! one tx queue per worker, RSS spreading flows over the rx queues where the device hashes;
//! [`DpdkPorts::worker`] is what worker `w` sees: rx queue `w` and tx queue `w` of every
//! port and a buffer pool of its own over the one mempool
//! ([`Mempool::worker_pool`](pktvec_io::dpdk::Mempool::worker_pool)).
//!
//! ```no_run
//! use pktvec::app::dpdk::DpdkPorts;
//! use pktvec::io::dpdk::RssConfig;
//! use pktvec::prelude::*;
//! use pktvec::workers::runtime::{Workers, WorkersConfig};
//!
//! let eal = "--no-huge -m 1024 --no-pci -l 0 --vdev=net_null0 --vdev=net_null1";
//! let ports = DpdkPorts::for_workers(eal, 16384, 2, RssConfig::symmetric())?;
//! let shared = ports.clone();
//! let report = Workers::run(WorkersConfig::new(2), move |w| {
//!     let mine = shared.worker(w.id).map_err(|e| e.to_string())?;
//!     let mut b = GraphBuilder::new(GraphConfig::default());
//!     mine.input(100_000).add_to(&mut b, "input", "tx");
//!     mine.output().add_to(&mut b, "tx");
//!     Ok(b.build(mine.pool().map_err(|e| e.to_string())?)?)
//! })?;
//! assert!(report.workers.iter().all(|w| w.conservation.is_balanced()));
//! for p in ports.port_reports() {
//!     println!("{p}"); // port 0 (net_null0): rx 100000 ... | rx queues 50000 50000, ...
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use super::{Error, Input, Output};
use pktvec_graph::Graph;
use pktvec_io::dpdk::{
    DpdkRx, DpdkTx, Eal, Mempool, Port, PortConfig, PortStats, QueueStats, RssConfig,
};
use pktvec_packet::BufferPool;
use std::fmt;
use std::sync::Arc;

/// The EAL, the mempool and every port the EAL found, started; as a whole (one graph
/// polls every rx queue) or as one worker sees them ([`worker`](Self::worker)). Cheap to
/// clone (shared); the ports stop when the last clone is gone.
#[derive(Clone)]
pub struct DpdkPorts {
    shared: Arc<Shared>,
    /// The worker whose queues and pool these are (`None`: the whole).
    worker: Option<u16>,
}

struct Shared {
    _eal: Eal,
    mempool: Mempool,
    ports: Vec<Arc<Port>>,
}

impl fmt::Debug for DpdkPorts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DpdkPorts")
            .field("ports", &self.shared.ports)
            .field("mempool", &self.shared.mempool)
            .field("worker", &self.worker)
            .finish()
    }
}

impl DpdkPorts {
    /// Starts the EAL with `eal_args` (e.g. `"--no-huge -m 1024 --no-pci
    /// --vdev=net_pcap0,rx_pcap=in.pcap,tx_pcap=out.pcap"`), a mempool of `mbufs` mbufs (at
    /// least 1024) and every port, each with `rx_queues` receive queues (RSS spreads flows
    /// over them where the device hashes) and one transmit queue. Fails if the EAL finds no
    /// port.
    pub fn open(eal_args: &str, mbufs: u32, rx_queues: u16) -> Result<DpdkPorts, Error> {
        let cfg = PortConfig {
            rx_queues,
            ..PortConfig::default()
        };
        Self::open_with(eal_args, mbufs, &cfg)
    }

    /// [`open`](Self::open) with every port configured as `cfg` says.
    pub fn open_with(eal_args: &str, mbufs: u32, cfg: &PortConfig) -> Result<DpdkPorts, Error> {
        Self::start(Eal::init(eal_args)?, mbufs, cfg)
    }

    /// Opens the mempool and every port the EAL found.
    fn start(eal: Eal, mbufs: u32, cfg: &PortConfig) -> Result<DpdkPorts, Error> {
        let ids = eal.ports();
        if ids.is_empty() {
            return Err("DPDK: the EAL found no port (add --vdev=... or a NIC)".into());
        }
        let mempool = Mempool::new(&eal, mbufs.max(1024), 2048)?;
        let ports = ids
            .iter()
            .map(|&id| Port::start(&eal, id, &mempool, cfg))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(DpdkPorts {
            shared: Arc::new(Shared {
                _eal: eal,
                mempool,
                ports,
            }),
            worker: None,
        })
    }

    /// [`open`](Self::open) for `workers` workers: every port with `workers` rx and
    /// `workers` tx queues, RSS over the rx queues as `rss` says (where the device hashes:
    /// see each port's [`Port::rss`]). Hand worker `w` its [`worker`](Self::worker) view.
    /// The mempool serves every worker: besides what is in flight in each graph and each
    /// worker pool's local cache (512 mbufs), each rx queue of a NIC keeps up to its
    /// descriptors' worth (1024), so `mbufs` should cover `ports * workers * 1024` and
    /// more.
    ///
    /// The EAL pins the thread that initialises it to its main lcore (`-l`), and the
    /// workers runtime pins each worker to a core of the calling thread's affinity, so here
    /// the EAL is initialised on a thread of its own, which ends at once: the caller keeps
    /// its cores for the workers (and no thread is an lcore, whose mempool cache only that
    /// lcore may use).
    pub fn for_workers(
        eal_args: &str,
        mbufs: u32,
        workers: u16,
        rss: RssConfig,
    ) -> Result<DpdkPorts, Error> {
        let cfg = PortConfig {
            rx_queues: workers,
            tx_queues: workers,
            rss,
            ..PortConfig::default()
        };
        let eal = std::thread::scope(|s| s.spawn(|| Eal::init(eal_args)).join())
            .map_err(|_| "DPDK: the EAL's initialisation panicked")??;
        Self::start(eal, mbufs, &cfg)
    }

    /// Worker `w`'s view: [`input`](Self::input) polls rx queue `w` of every port,
    /// [`output`](Self::output) sends on tx queue `w`, [`pool`](Self::pool) is a buffer
    /// pool of the worker's own. An error unless every port has a queue `w` of each kind.
    pub fn worker(&self, w: usize) -> Result<DpdkPorts, Error> {
        let workers = self.workers();
        if w >= workers as usize {
            return Err(format!(
                "DPDK: no queues for worker {w}: the ports have {workers} rx and tx queues each \
                 (DpdkPorts::for_workers opens one of each per worker)"
            )
            .into());
        }
        Ok(DpdkPorts {
            shared: self.shared.clone(),
            worker: Some(w as u16),
        })
    }

    /// How many workers the ports serve: the fewest rx or tx queues of any port.
    pub fn workers(&self) -> u16 {
        self.shared
            .ports
            .iter()
            .map(|p| p.rx_queues().min(p.tx_queues()))
            .min()
            .unwrap_or(0)
    }

    /// The worker of this view (`None` for the whole).
    pub fn worker_id(&self) -> Option<usize> {
        self.worker.map(usize::from)
    }

    /// The ports, by index (the packets' rx and tx interface).
    pub fn ports(&self) -> &[Arc<Port>] {
        &self.shared.ports
    }

    /// The mempool whose mbufs are the graphs' buffers.
    pub fn mempool(&self) -> &Mempool {
        &self.shared.mempool
    }

    /// The graph's buffer pool over the mempool's mbufs: the sole one
    /// ([`Mempool::buffer_pool`]) for the whole, one of the workers'
    /// ([`Mempool::worker_pool`]) for a worker's view.
    pub fn pool(&self) -> Result<BufferPool, Error> {
        let m = &self.shared.mempool;
        Ok(match self.worker {
            None => m.buffer_pool()?,
            Some(_) => m.worker_pool()?,
        })
    }

    /// One rx node per port and queue polled (every rx queue for the whole, queue `w` for
    /// worker `w`), packets marked with their port's index as rx interface; `packets` is
    /// split over the nodes, each stopping at its share.
    pub fn input(&self, packets: u64) -> Input {
        let rxs: Vec<(u16, &Arc<Port>, u16)> = self
            .shared
            .ports
            .iter()
            .enumerate()
            .flat_map(|(i, p)| {
                let queues = match self.worker {
                    Some(w) => w..w + 1,
                    None => 0..p.rx_queues(),
                };
                queues.map(move |q| (i as u16, p, q))
            })
            .collect();
        let per_queue = packets.div_ceil(rxs.len().max(1) as u64);
        Input::Dpdk(
            rxs.into_iter()
                .map(|(i, p, q)| DpdkRx::new(p, q).with_rx_interface(i).with_limit(per_queue))
                .collect(),
        )
    }

    /// A tx node sending each packet on the port whose index is its tx interface (all on
    /// the one port if there is one), by tx queue 0 for the whole, tx queue `w` for worker
    /// `w`.
    pub fn output(&self) -> Output {
        let q = self.worker.unwrap_or(0);
        let queues: Vec<_> = self.shared.ports.iter().map(|p| (p.clone(), q)).collect();
        Output::Dpdk(Box::new(DpdkTx::by_interface(&queues)))
    }

    /// Each port's counters, without rx nodes: after workers, whose graphs are gone.
    pub fn port_reports(&self) -> Vec<PortReport> {
        self.shared
            .ports
            .iter()
            .map(|p| PortReport::of(p, Vec::new()))
            .collect()
    }

    /// Each port's counters and what its rx nodes in `graph` did not pass on.
    pub fn report(&self, graph: &Graph) -> Vec<PortReport> {
        let rx: Vec<(&str, &DpdkRx)> = (0..graph.node_count() as u32)
            .filter_map(|id| {
                let name = graph.node_name(id)?;
                Some((name, graph.node::<DpdkRx>(name).ok()?))
            })
            .collect();
        self.shared
            .ports
            .iter()
            .map(|p| {
                let nodes = rx
                    .iter()
                    .filter(|(_, n)| n.port().id() == p.id())
                    .map(|(name, n)| RxNodeReport {
                        node: name.to_string(),
                        received: n.received(),
                        foreign: n.foreign(),
                        refused: n.refused(),
                    })
                    .collect();
                PortReport::of(p, nodes)
            })
            .collect()
    }
}

/// One port after a run. `Display`: `port 0 (net_pcap0): rx 100 tx 100 imissed 0 ierrors
/// 0 oerrors 0 rx_nombuf 0 | input: foreign 0 refused 0`; with several queues, the packets
/// of each and what RSS did come before the rx nodes: `... rx_nombuf 0 | rx queues 50 50,
/// tx queues 50 50, RSS off: the device has no RSS | ...`.
#[derive(Clone, Debug)]
pub struct PortReport {
    /// Port id.
    pub id: u16,
    /// Device name.
    pub name: String,
    /// `rte_eth_stats`.
    pub stats: PortStats,
    /// Packets by queue.
    pub queues: QueueStats,
    /// What RSS does on the port ([`Port::rss`]'s text).
    pub rss: String,
    /// The rx nodes polling it.
    pub rx_nodes: Vec<RxNodeReport>,
}

impl PortReport {
    fn of(p: &Port, rx_nodes: Vec<RxNodeReport>) -> PortReport {
        PortReport {
            id: p.id(),
            name: p.name().to_string(),
            stats: p.stats(),
            queues: p.queue_stats(),
            rss: p.rss().to_string(),
            rx_nodes,
        }
    }
}

/// One rx node after a run.
#[derive(Clone, Debug)]
pub struct RxNodeReport {
    /// Node name.
    pub node: String,
    /// Packets passed to the graph.
    pub received: u64,
    /// Mbufs of another mempool (freed, not passed on); 0 unless something is wrong.
    pub foreign: u64,
    /// Mbufs the pool already held (left alone); 0 unless something is wrong.
    pub refused: u64,
}

impl PortReport {
    /// `{"port", "name", "stats", "queues": {"rx", "tx"}, "rss", "rx_nodes": [{"node",
    /// "received", "foreign", "refused"}]}`.
    pub fn to_json(&self) -> serde_json::Value {
        let nodes: Vec<_> = self
            .rx_nodes
            .iter()
            .map(|n| {
                serde_json::json!({"node": n.node, "received": n.received,
                                   "foreign": n.foreign, "refused": n.refused})
            })
            .collect();
        serde_json::json!({"port": self.id, "name": self.name, "stats": self.stats,
                           "queues": self.queues, "rss": self.rss, "rx_nodes": nodes})
    }
}

impl fmt::Display for PortReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = &self.stats;
        write!(
            f,
            "port {} ({}): rx {} tx {} imissed {} ierrors {} oerrors {} rx_nombuf {}",
            self.id,
            self.name,
            s.ipackets,
            s.opackets,
            s.imissed,
            s.ierrors,
            s.oerrors,
            s.rx_nombuf
        )?;
        let q = &self.queues;
        if q.rx.len() > 1 || q.tx.len() > 1 {
            let list = |v: &[u64]| v.iter().map(u64::to_string).collect::<Vec<_>>().join(" ");
            write!(
                f,
                " | rx queues {}, tx queues {}, {}",
                list(&q.rx),
                list(&q.tx),
                self.rss
            )?;
        }
        for n in &self.rx_nodes {
            write!(
                f,
                " | {}: foreign {} refused {}",
                n.node, n.foreign, n.refused
            )?;
        }
        Ok(())
    }
}
