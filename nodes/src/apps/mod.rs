//! The forwarders as graph fragments a user's NF can extend: [`l2fwd`], [`l3fwd`]
//! (IPv4 + IPv6), [`ndnfwd`] and [`cryptofwd`].
//!
//! Each module has a serde config with defaults (the forwarder examples' defaults), a type
//! that builds the forwarder's tables from it, and `add_to`, which adds the forwarder's nodes
//! to a caller's [`GraphBuilder`]. The caller adds the input node(s), pointing them at the
//! forwarder's entry node, and the transmit node named by the config's `tx` (default
//! `"tx"`). `add_to` returns the node names and the main arcs as [`Edge`]s, so a user node
//! can be spliced into any of them with [`Edge::insert`] (or an arc re-pointed with
//! [`Edge::redirect`]): the builder applies `set_next` calls in order, so a splice made
//! after `add_to` wins.
//!
//! ```
//! use pktvec_graph::builtin::{NullSink, PacketSource, SourceNext};
//! use pktvec_graph::{next_nodes, Context, Frame, GraphBuilder, GraphConfig, NoError, Node};
//! use pktvec_nodes::apps::l3fwd::{L3fwd, L3fwdConfig};
//! use pktvec_packet::{builder::PacketBuilder, BufferPool};
//! use std::net::Ipv4Addr;
//!
//! next_nodes! {
//!     /// The user node's one arc; `Edge::insert` points it at the edge's old target.
//!     pub enum CountNext { Out = "ip4-lookup" }
//! }
//! /// A user node: counts IPv4 packets between ip4-input and ip4-lookup.
//! struct Count(u64);
//! impl Node for Count {
//!     type Next = CountNext;
//!     type Error = NoError;
//!     fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
//!         self.0 += frame.len() as u64;
//!         cx.enqueue_all(frame, CountNext::Out);
//!     }
//! }
//!
//! let cfg: L3fwdConfig = serde_json::from_str(r#"{ "route_count": 100, "route6_count": 10 }"#)?;
//! let app = L3fwd::new(cfg)?;
//! let dst = app.routes4()[0].addr; // inside a route
//! let frame = PacketBuilder::ethernet([2, 0, 0, 0, 0, 1].into(), [2, 0, 0, 0, 0, 2].into())
//!     .ipv4(Ipv4Addr::new(10, 0, 0, 1), dst)
//!     .udp(1, 2)
//!     .build();
//!
//! let mut b = GraphBuilder::new(GraphConfig::default());
//! b.add("input", PacketSource::new(vec![frame]).with_limit(1000))
//!     .set_next("input", SourceNext::Out, app.entry());
//! let nodes = app.add_to(&mut b);
//! nodes.ip4_input_to_lookup.insert(&mut b, "count", Count(0), CountNext::Out);
//! b.add("tx", NullSink);
//! let mut g = b.build(BufferPool::new(Default::default())?)?;
//! g.run_until_idle();
//! assert_eq!(g.node::<Count>("count").unwrap().0, 1000);
//! assert_eq!(g.runtime().row("tx").unwrap().packets, 1000);
//! assert!(g.conservation().is_balanced());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod cryptofwd;
pub mod l2fwd;
pub mod l3fwd;
pub mod ndnfwd;

use pktvec_graph::{GraphBuilder, Next, Node};

/// Default name of the transmit node the forwarders' `interface-output` hands packets to.
pub const TX: &str = "tx";

pub(crate) fn default_tx() -> String {
    TX.to_string()
}

/// One arc of a forwarder graph: arc `arc` of node `from` leads to node `to`.
///
/// ```
/// use pktvec_graph::builtin::{NullSink, PacketSource, SourceNext};
/// use pktvec_graph::{GraphBuilder, GraphConfig};
/// use pktvec_nodes::apps::l2fwd::{L2fwd, L2fwdConfig};
/// use pktvec_packet::BufferPool;
///
/// let app = L2fwd::new(L2fwdConfig { table_size: 16, ..Default::default() })?;
/// let mut b = GraphBuilder::new(GraphConfig::default());
/// b.add("input", PacketSource::new(vec![vec![0u8; 10]]).with_limit(5))
///     .set_next("input", SourceNext::Out, app.entry());
/// let nodes = app.add_to(&mut b);
/// assert_eq!((nodes.output_to_tx.from, nodes.output_to_tx.to.as_str()), ("interface-output", "tx"));
/// // Send what interface-output transmits to a sink of ours instead.
/// nodes.output_to_tx.redirect(&mut b, "my-tx");
/// b.add("my-tx", NullSink);
/// let mut g = b.build(BufferPool::new(Default::default())?)?;
/// g.run_until_idle();
/// assert_eq!(g.errors().count("l2-learn", "truncated frame"), 5);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Edge<A: Next> {
    /// The node the arc leaves.
    pub from: &'static str,
    /// The arc (a variant of `from`'s `Next` enum).
    pub arc: A,
    /// The node the arc leads to.
    pub to: String,
}

impl<A: Next> Edge<A> {
    pub(crate) fn new(from: &'static str, arc: A, to: impl Into<String>) -> Self {
        Edge {
            from,
            arc,
            to: to.into(),
        }
    }

    /// Points the arc at `target` instead (a node the caller adds).
    pub fn redirect<'b>(&self, b: &'b mut GraphBuilder, target: &str) -> &'b mut GraphBuilder {
        b.set_next(self.from, self.arc, target)
    }

    /// Splices `node` into the arc: adds it under `name`, points the arc at it and its arc
    /// `out` at the arc's old target (`from → name → to`).
    pub fn insert<'b, N: Node>(
        &self,
        b: &'b mut GraphBuilder,
        name: &str,
        node: N,
        out: N::Next,
    ) -> &'b mut GraphBuilder {
        b.add(name, node)
            .set_next(self.from, self.arc, name)
            .set_next(name, out, &self.to)
    }
}

/// Why a forwarder's tables could not be built.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// A routes or names file could not be read or parsed.
    #[error("{0}")]
    Routes(#[from] pktvec_lookup::routes::RouteError),
    /// The IPv4 FIB refused a route.
    #[error("ipv4 fib: {0}")]
    Lpm4(#[from] pktvec_lookup::ipv4::LpmError),
    /// The IPv6 FIB refused a route.
    #[error("ipv6 fib: {0}")]
    Lpm6(#[from] pktvec_lookup::ipv6::Lpm6Error),
    /// The MAC table could not be created or filled.
    #[error("mac table: {0}")]
    MacTable(#[from] pktvec_lookup::hash::HashError),
    /// The NDN FIB could not be built.
    #[error("ndn fib: {0}")]
    Ndn(#[from] crate::ndn::NdnFibError),
    /// The key does not fit the cipher.
    #[error("crypto: {0}")]
    Key(#[from] crate::crypto::KeyLengthError),
}
