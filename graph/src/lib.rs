//! # pktvec-graph
//!
//! The vector engine of pktvec, after FD.io VPP and DPDK's `rte_graph`: a graph of
//! [`Node`]s, each called once per [`Frame`] (a vector of up to `V` buffer indices);
//! typed next arcs resolved by name when the graph is built; a dispatcher that polls input
//! nodes and runs pending vectors to completion, handing whole vectors over without copying
//! when it can; 4/2/1-wide prefetching loops and a two-phase sub-batch loop; per-node
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
pub mod loops;
pub mod node;
mod runtime;
pub mod stats;
pub mod trace;

pub use builder::{GraphBuilder, GraphError};
pub use capture::CaptureError;
pub use context::{Context, VerdictMap, MAX_SUB_BATCH};
pub use frame::Frame;
pub use graph::Graph;
pub use node::{ErrorReason, Next, NoError, NoNext, Node, NodeKind, Verdict};
pub use stats::{Conservation, ErrorTable, NodeStats, RuntimeTable};
pub use trace::Trace;

use serde::{Deserialize, Serialize};

/// Largest vector size `V`.
pub const MAX_VECTOR_SIZE: usize = 4096;

/// Run-time settings of a graph.
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
    /// `rdtsc` a turn plus one a node call (≈ 25 cycles each on this VM's Zen 4): what
    /// rte_graph does without its stats feature and testpmd without
    /// `--record-core-cycles`.
    pub node_cycles: bool,
}

impl Default for GraphConfig {
    fn default() -> Self {
        GraphConfig {
            vector_size: 256,
            prefetch_distance: 4,
            sub_batch: 16,
            max_calls_per_run: 1 << 20,
            node_cycles: true,
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
