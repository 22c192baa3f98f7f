//! # pktvec
//!
//! Vector packet processing in the style of FD.io VPP: a graph of nodes processes vectors
//! of buffer indices with prefetching loops.
//!
//! This crate is the facade: it re-exports the member crates and adds what a program
//! built on them needs.
//!
//! | module | crate | holds |
//! |---|---|---|
//! | [`packet`] | `pktvec-packet` | buffer pool, per-buffer metadata, zero-copy header views, packet builder |
//! | [`graph`] | `pktvec-graph` | nodes, frames, graph builder, dispatcher, loop helpers, runtime stats, trace, capture |
//! | [`io`] | `pktvec-io` | pcap/pcapng replay and capture, traffic generator and profiles, counting sink, DPDK ports (feature `dpdk`) |
//! | [`nodes`] | `pktvec-nodes` | protocol nodes (ethernet-input, ip4/ip6 input and rewrite, arp-input, interface-output, ...) and the forwarders of [`nodes::apps`] |
//! | [`lookup`] | `pktvec-lookup` | IPv4/IPv6 LPM, prefetchable exact-match hash, route tables |
//! | [`batcher`] | `pktvec-batcher` | path-based packet batcher: programmable parser, per-path queues, the `Batcher` input node |
//! | [`model`] | `pktvec-model` | machine probe, the batching and PPB overhead models, calibration, prediction, tuner |
//! | [`app`] | (this crate) | running a forwarder: inputs (generator, capture, DPDK), outputs, the run and its report |
//! | [`perf`] | (this crate) | measurement graphs shared by the benches |
//! | [`tune`] | (this crate) | tuning a graph's settings with the overhead model |
//! | [`prelude`] | (this crate) | the names most programs need |
//!
//! Guides: [`guide`] (writing a node, putting it into a forwarder, running it on a capture)
//! and [`architecture`] (the crates, the buffer model, the dispatcher).
//!
//! ```
//! use pktvec::prelude::*;
//!
//! let mut b = GraphBuilder::new(GraphConfig::default());
//! b.add("source", PacketSource::new(vec![vec![0u8; 64]]).with_limit(512));
//! b.add("tx", NullSink);
//! b.set_next("source", SourceNext::Out, "tx");
//! let mut graph = b.build(BufferPool::new(PoolConfig::default())?)?;
//! graph.run_until_idle();
//! assert_eq!(graph.runtime().row("tx").unwrap().packets, 512);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![warn(missing_docs)]

pub mod app;
pub mod perf;
pub mod tune;

pub use pktvec_batcher as batcher;
pub use pktvec_graph as graph;
pub use pktvec_io as io;
pub use pktvec_lookup as lookup;
pub use pktvec_model as model;
pub use pktvec_nf as nf;
pub use pktvec_nodes as nodes;
pub use pktvec_packet as packet;
pub use pktvec_state as state;
pub use pktvec_workers as workers;

/// The names most programs need.
pub mod prelude {
    pub use pktvec_graph::builtin::{DropNode, NullSink, PacketSource, SourceNext};
    pub use pktvec_graph::{
        next_nodes, node_errors, Context, ErrorReason, Frame, Graph, GraphBuilder, GraphConfig,
        InputDrain, Next, NoError, NoNext, Node, NodeKind, Verdict,
    };
    pub use pktvec_packet::builder::PacketBuilder;
    pub use pktvec_packet::{BufferMeta, BufferPool, Packet, PacketMut, PoolConfig};
}

/// The README's example, compiled and run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

/// Writing a node: declare its arcs and drop reasons, process a vector, put it in a graph
/// and into a forwarder, run it on a capture, look at it. (`docs/writing-a-node.md`; its
/// examples run as doc tests.)
pub mod guide {
    #![doc = include_str!("../docs/writing-a-node.md")]
}

/// How pktvec is built: the crates, buffers and metadata, the graph and its dispatcher,
/// conservation, captures. (`docs/architecture.md`.)
pub mod architecture {
    #![doc = include_str!("../docs/architecture.md")]
}
