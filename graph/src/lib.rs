//! # pktvec-graph
//!
//! The vector engine of pktvec, after FD.io VPP and DPDK's `rte_graph`: a graph of
//! [`Node`]s, each called once per [`Frame`] (a vector of up to `V` buffer indices);
//! typed next arcs resolved by name when the graph is built; a dispatcher that polls input
//! nodes and runs pending vectors to completion, handing whole vectors over without copying
//! when it can; prefetching loops and a two-phase sub-batch loop; per-node
//! runtime counters in cycles; drop counters by reason; a packet trace; pcap capture taps.
//!
//! A node in safe Rust:
//!
//! ```
//! use pktvec_graph::{builtin, next_nodes, node_errors, Context, Frame, GraphBuilder, GraphConfig, Node, Verdict};
//! use pktvec_packet::{builder::PacketBuilder, wire::Ipv4Packet, BufferPool, PoolConfig};
//! use std::net::Ipv4Addr;
//!
//! next_nodes! {
//!     /// Arcs of `ttl-dec`.
//!     pub enum TtlNext { Out = "tx" }
//! }
//! node_errors! {
//!     /// Drop reasons of `ttl-dec`.
//!     pub enum TtlError { NotIp4 = "not an IPv4 packet", Expired = "ttl expired" }
//! }
//!
//! /// Decrements the TTL of IPv4 packets (Ethernet framing), drops the rest.
//! struct TtlDec;
//!
//! impl Node for TtlDec {
//!     type Next = TtlNext;
//!     type Error = TtlError;
//!     fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
//!         cx.process_packets(frame, |pkt| {
//!             let Some(l3) = pkt.data_mut().get_mut(14..) else {
//!                 return Verdict::Drop(TtlError::NotIp4);
//!             };
//!             let Ok(mut ip) = Ipv4Packet::new_checked(l3) else {
//!                 return Verdict::Drop(TtlError::NotIp4);
//!             };
//!             if ip.ttl() <= 1 {
//!                 return Verdict::Drop(TtlError::Expired);
//!             }
//!             ip.decrement_ttl_update_checksum();
//!             Verdict::Next(TtlNext::Out)
//!         });
//!     }
//! }
//!
//! let pkt = |ttl| {
//!     PacketBuilder::ethernet([2, 0, 0, 0, 0, 1].into(), [2, 0, 0, 0, 0, 2].into())
//!         .ipv4(Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2))
//!         .ttl(ttl)
//!         .udp(1, 2)
//!         .payload(&[0; 18])
//!         .build()
//! };
//! let mut b = GraphBuilder::new(GraphConfig::default());
//! b.add("source", builtin::PacketSource::new(vec![pkt(64), pkt(1)]).with_limit(1000));
//! b.add("ttl-dec", TtlDec);
//! b.add("tx", builtin::NullSink);
//! b.set_next("source", builtin::SourceNext::Out, "ttl-dec");
//! let mut graph = b.build(BufferPool::new(PoolConfig::default())?)?;
//!
//! graph.trace_add(2);
//! graph.run_until_idle();
//! println!("{}", graph.runtime());
//! println!("{}", graph.errors());
//! println!("{}", graph.trace());
//! assert_eq!(graph.runtime().row("tx").unwrap().packets, 500);
//! assert_eq!(graph.errors().count("ttl-dec", "ttl expired"), 500);
//! assert!(graph.conservation().is_balanced());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![warn(missing_docs)]

pub mod builder;
pub mod builtin;
pub mod capture;
pub mod clock;
pub mod context;
pub mod frame;
pub mod graph;
pub mod latency;
pub mod loops;
pub mod node;
mod runtime;
pub mod stats;
pub mod trace;

pub use builder::{GraphBuilder, GraphError};
pub use capture::CaptureError;
pub use context::{Context, VerdictMap, MAX_SUB_BATCH};
pub use frame::Frame;
pub use graph::{Graph, NodeLookupError};
pub use latency::LatencyTable;
pub use node::{ErrorReason, Next, NoError, NoNext, Node, NodeKind, Verdict};
pub use stats::{Conservation, ErrorTable, NodeStats, RuntimeTable};
pub use trace::Trace;

use serde::{Deserialize, Serialize};

/// Largest vector size `V`.
pub const MAX_VECTOR_SIZE: usize = 4096;

/// Run-time settings of a graph: the vector size, the prefetch distance and sub-batch size
/// of the loop helpers, and how a turn is run. Start from `GraphConfig::default()` and
/// change what you need.
///
/// ```
/// use pktvec_graph::builtin::{NullSink, PacketSource, SourceNext};
/// use pktvec_graph::{GraphBuilder, GraphConfig};
/// use pktvec_packet::{BufferPool, PoolConfig};
///
/// // Vectors of 64 packets instead of 256, no prefetching.
/// let cfg = GraphConfig { vector_size: 64, prefetch_distance: 0, ..GraphConfig::default() };
/// let mut b = GraphBuilder::new(cfg);
/// b.add("source", PacketSource::new(vec![vec![0u8; 60]]).with_limit(640))
///     .add("tx", NullSink)
///     .set_next("source", SourceNext::Out, "tx");
/// let mut g = b.build(BufferPool::new(PoolConfig::default())?)?;
/// g.run_until_idle();
/// let tx = g.runtime().row("tx").unwrap().clone();
/// assert_eq!((tx.packets, tx.vectors), (640, 10));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct GraphConfig {
    /// Vector size `V`: the most packets a node gets per call (1..=[`MAX_VECTOR_SIZE`],
    /// default 256).
    pub vector_size: usize,
    /// How many packets ahead the loop helpers prefetch (0 = none; default 4).
    pub prefetch_distance: usize,
    /// Sub-batch size `b` of the two-phase lookup loop (default 16).
    pub sub_batch: usize,
    /// Node calls after which one [`Graph::run_once`] returns even if packets are still
    /// pending (they stay pending; this bounds a turn when packets loop).
    pub max_calls_per_run: usize,
    /// Reads the cycle counter around every node call, for the runtime table's clocks
    /// (default `true`, as VPP always does). `false` leaves the clocks at 0 and saves one
    /// `rdtsc` a turn plus one a node call (≈ 25 cycles each on this VM): what
    /// rte_graph does without its stats feature and testpmd without
    /// `--record-core-cycles`.
    pub node_cycles: bool,
    /// When the packets an input node produced are run: after every input node has been
    /// polled (the default, VPP's and rte_graph's order), right after their own input
    /// node, or right after it only when it produced a whole vector.
    pub input_drain: InputDrain,
}

/// When [`Graph::run_once`] runs the nodes with pending packets: the choice between merging
/// the vectors several input nodes send to one node and keeping few packets in flight.
///
/// Polling every input node first lets partial vectors from several inputs (rx queues,
/// ports) merge into one call of the node they share, but holds every input's packets in
/// flight at once: with two DPDK ports at vectors of 256 that is 512 mbufs, whose header
/// lines (128 bytes each, touched by the driver on receive and on free) no longer fit a
/// 48 KiB L1. Running each input's packets before polling the next keeps one vector in
/// flight; a whole vector gains nothing from waiting for another input's packets. Measured
/// on io forwarding between two DPDK `net_null` ports at vectors of 256
/// (`docs/results/dpdk-io.md`): [`InputDrain::WhenFull`] takes the simulated L1D
/// misses from 3.6 to 1.1 a packet at the same instruction count, and the cycles a packet
/// from 1.18× testpmd's io loop to 1.10× (1.81× to 1.55× when every packet goes through
/// the buffer pool).
///
/// The order packets of different inputs reach a shared node differs between the
/// policies (the order within one input's packets never does), and with it what
/// order-dependent state sees: an L2 bridge learning a MAC address on one port and
/// looking it up for a packet of another. The default keeps VPP's order.
///
/// ```
/// use pktvec_graph::{builtin::{NullSink, PacketSource, SourceNext}, GraphBuilder, GraphConfig, InputDrain};
/// let cfg = GraphConfig { vector_size: 4, input_drain: InputDrain::AfterAll, ..GraphConfig::default() };
/// let mut b = GraphBuilder::new(cfg);
/// b.add("a", PacketSource::new(vec![vec![0; 60]]).with_limit(2))
///     .add("b", PacketSource::new(vec![vec![0; 60]]).with_limit(2))
///     .add("tx", NullSink)
///     .set_next("a", SourceNext::Out, "tx")
///     .set_next("b", SourceNext::Out, "tx");
/// let mut g = b.build(pktvec_packet::BufferPool::new(Default::default()).unwrap()).unwrap();
/// g.run_once();
/// // Both inputs' two packets went to `tx` in one call.
/// assert_eq!(g.runtime().row("tx").map(|r| (r.calls, r.packets)), Some((1, 4)));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum InputDrain {
    /// Every input node first, then the pending nodes (VPP's and rte_graph's order; the
    /// default).
    #[default]
    AfterAll,
    /// The pending nodes after each input node that produced packets.
    AfterEach,
    /// The pending nodes right after an input node that produced a whole vector (a busy
    /// queue: nothing to merge), after all input nodes otherwise (light load: partial
    /// vectors merge).
    WhenFull,
}

impl Default for GraphConfig {
    fn default() -> Self {
        GraphConfig {
            vector_size: 256,
            prefetch_distance: 4,
            sub_batch: 16,
            max_calls_per_run: 1 << 20,
            node_cycles: true,
            input_drain: InputDrain::AfterAll,
        }
    }
}

impl std::str::FromStr for InputDrain {
    type Err = GraphError;

    /// `after-all`, `after-each` or `when-full` (the serde names).
    fn from_str(s: &str) -> Result<Self, GraphError> {
        match s {
            "after-all" => Ok(InputDrain::AfterAll),
            "after-each" => Ok(InputDrain::AfterEach),
            "when-full" => Ok(InputDrain::WhenFull),
            _ => Err(GraphError::BadConfig(format!(
                "input drain {s:?}: after-all, after-each or when-full"
            ))),
        }
    }
}

impl GraphConfig {
    /// Checks the ranges.
    pub fn validate(&self) -> Result<(), GraphError> {
        if !(1..=MAX_VECTOR_SIZE).contains(&self.vector_size) {
            return Err(GraphError::BadConfig(format!(
                "vector_size {} is outside 1..={MAX_VECTOR_SIZE}",
                self.vector_size
            )));
        }
        if self.max_calls_per_run == 0 {
            return Err(GraphError::BadConfig(
                "max_calls_per_run must be at least 1".into(),
            ));
        }
        Ok(())
    }
}
