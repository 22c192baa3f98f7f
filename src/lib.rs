//! # pktvec
//!
//! Vector packet processing in the style of FD.io VPP: a graph of nodes processes vectors
//! of buffer indices with 4/2/1-wide prefetching loops.
//!
//! This crate is the facade: it re-exports the member crates.
//!
//! | module | crate | holds |
//! |---|---|---|
//! | [`packet`] | `pktvec-packet` | buffer pool, per-buffer metadata, zero-copy header views, packet builder |
//! | [`graph`] | `pktvec-graph` | nodes, frames, graph builder, dispatcher, loop helpers, runtime stats, trace, capture |
//! | [`io`] | `pktvec-io` | pcap/pcapng replay and capture, traffic generator and profiles, counting sink |
//! | [`nodes`] | `pktvec-nodes` | protocol nodes: ethernet-input, ip4/ip6 input and rewrite, arp-input, interface-output |
//! | [`lookup`] | `pktvec-lookup` | IPv4/IPv6 LPM, prefetchable exact-match hash, route tables |
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
pub use pktvec_nodes as nodes;
pub use pktvec_packet as packet;

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

/// The node-writing guide's examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../docs/writing-a-node.md")]
struct WritingANodeDoctests;
