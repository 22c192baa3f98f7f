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

use super::{Error, Input, Output};
use pktvec_graph::Graph;
use pktvec_io::dpdk::{DpdkRx, DpdkTx, Eal, Mempool, Port, PortConfig, PortStats};
use pktvec_packet::BufferPool;
use std::fmt;
use std::sync::Arc;

/// The EAL, the mempool and every port the EAL found, started.
pub struct DpdkPorts {
    _eal: Eal,
    mempool: Mempool,
    ports: Vec<Arc<Port>>,
}

impl DpdkPorts {
    /// Starts the EAL with `eal_args` (e.g. `"--no-huge -m 1024 --no-pci
    /// --vdev=net_pcap0,rx_pcap=in.pcap,tx_pcap=out.pcap"`), a mempool of `mbufs` mbufs (at
    /// least 1024) and every port, each with `rx_queues` receive queues (RSS spreads flows
    /// over them where the device hashes). Fails if the EAL finds no port.
    pub fn open(eal_args: &str, mbufs: u32, rx_queues: u16) -> Result<DpdkPorts, Error> {
        let eal = Eal::init(eal_args)?;
        let ids = eal.ports();
        if ids.is_empty() {
            return Err("DPDK: the EAL found no port (add --vdev=... or a NIC)".into());
        }
        let mempool = Mempool::new(&eal, mbufs.max(1024), 2048)?;
        let cfg = PortConfig {
            rx_queues,
            ..PortConfig::default()
        };
        let ports = ids
            .iter()
            .map(|&id| Port::start(&eal, id, &mempool, &cfg))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(DpdkPorts {
            _eal: eal,
            mempool,
            ports,
        })
    }

    /// The ports, by index (the packets' rx and tx interface).
    pub fn ports(&self) -> &[Arc<Port>] {
        &self.ports
    }

    /// The graph's buffer pool over the mempool's mbufs.
    pub fn pool(&self) -> Result<BufferPool, Error> {
        Ok(self.mempool.buffer_pool()?)
    }

    /// One rx node per port and queue, packets marked with their port's index as rx
    /// interface; `packets` is split over them, each stopping at its share.
    pub fn input(&self, packets: u64) -> Input {
        let queues: u64 = self.ports.iter().map(|p| p.rx_queues() as u64).sum();
        let per_queue = packets.div_ceil(queues.max(1));
        Input::Dpdk(
            self.ports
                .iter()
                .enumerate()
                .flat_map(|(i, p)| {
                    (0..p.rx_queues()).map(move |q| {
                        DpdkRx::new(p, q)
                            .with_rx_interface(i as u16)
                            .with_limit(per_queue)
                    })
                })
                .collect(),
        )
    }

    /// A tx node sending each packet on the port whose index is its tx interface (all on
    /// the one port if there is one), by tx queue 0.
    pub fn output(&self) -> Output {
        let queues: Vec<_> = self.ports.iter().map(|p| (p.clone(), 0)).collect();
        Output::Dpdk(Box::new(DpdkTx::by_interface(&queues)))
    }

    /// Each port's counters and what its rx nodes in `graph` did not pass on.
    pub fn report(&self, graph: &Graph) -> Vec<PortReport> {
        let rx: Vec<(&str, &DpdkRx)> = (0..graph.node_count() as u32)
            .filter_map(|id| {
                let name = graph.node_name(id)?;
                Some((name, graph.node::<DpdkRx>(name).ok()?))
            })
            .collect();
        self.ports
            .iter()
            .map(|p| PortReport {
                id: p.id(),
                name: p.name().to_string(),
                stats: p.stats(),
                rx_nodes: rx
                    .iter()
                    .filter(|(_, n)| n.port().id() == p.id())
                    .map(|(name, n)| RxNodeReport {
                        node: name.to_string(),
                        received: n.received(),
                        foreign: n.foreign(),
                        refused: n.refused(),
                    })
                    .collect(),
            })
            .collect()
    }
}

/// One port after a run. `Display`: `port 0 (net_pcap0): rx 100 tx 100 imissed 0 ierrors
/// 0 oerrors 0 rx_nombuf 0 | input: foreign 0 refused 0`.
#[derive(Clone, Debug)]
pub struct PortReport {
    /// Port id.
    pub id: u16,
    /// Device name.
    pub name: String,
    /// `rte_eth_stats`.
    pub stats: PortStats,
    /// The rx nodes polling it.
    pub rx_nodes: Vec<RxNodeReport>,
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
    /// `{"port", "name", "stats", "rx_nodes": [{"node", "received", "foreign", "refused"}]}`.
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
                           "rx_nodes": nodes})
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
