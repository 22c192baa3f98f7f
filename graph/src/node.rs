//! The [`Node`] trait, typed next arcs ([`Next`]) and drop reasons ([`ErrorReason`]).
//!
//! A node is called once per vector. Its next arcs are a small enum whose variants name the
//! node each arc leads to by default; its drop reasons are another enum. Both are declared
//! with the [`next_nodes!`](crate::next_nodes) and [`node_errors!`](crate::node_errors)
//! macros and resolved to node ids when the graph is built.
//!
//! ```
//! use pktvec_graph::{next_nodes, node_errors, Context, Frame, Node, Verdict};
//!
//! next_nodes! {
//!     /// Where `short-filter` sends packets.
//!     pub enum FilterNext { Out = "out" }
//! }
//! node_errors! {
//!     /// Why `short-filter` drops packets.
//!     pub enum FilterError { TooShort = "packet shorter than 60 bytes" }
//! }
//!
//! /// Drops packets shorter than a minimum Ethernet frame.
//! struct ShortFilter;
//!
//! impl Node for ShortFilter {
//!     type Next = FilterNext;
//!     type Error = FilterError;
//!     fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
//!         cx.process_packets(frame, |pkt| {
//!             if pkt.len() < 60 {
//!                 Verdict::Drop(FilterError::TooShort)
//!             } else {
//!                 Verdict::Next(FilterNext::Out)
//!             }
//!         });
//!     }
//! }
//! ```

use crate::context::Context;
use crate::frame::Frame;
use pktvec_packet::Packet;
use std::fmt::Write as _;

/// What role a node plays in the graph.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NodeKind {
    /// Polled once per [`Graph::run_once`](crate::Graph::run_once) with an empty frame to
    /// fill (an rx queue, a file, a generator).
    Input,
    /// Called when packets are pending for it; must send each packet on.
    Internal,
    /// Consumes packets (transmits or frees them); needs no next arc.
    Sink,
}

/// The next arcs of a node: a fieldless enum, one variant per arc.
///
/// Implement it with [`next_nodes!`](crate::next_nodes).
pub trait Next: Copy + Eq + Send + 'static {
    /// Default target node name of each arc, in arc index order.
    const TARGETS: &'static [&'static str];
    /// Variant names, in arc index order (for messages).
    const NAMES: &'static [&'static str];
    /// Arc index of this variant.
    fn index(self) -> u16;
}

/// The drop reasons of a node: a fieldless enum, one variant per reason.
///
/// Implement it with [`node_errors!`](crate::node_errors).
pub trait ErrorReason: Copy + Eq + Send + 'static {
    /// Human-readable reason of each variant, in index order (shown by `show errors`).
    const REASONS: &'static [&'static str];
    /// Index of this variant.
    fn index(self) -> u16;
}

/// Next arcs of a node that has none (a [`NodeKind::Sink`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoNext {}

impl Next for NoNext {
    const TARGETS: &'static [&'static str] = &[];
    const NAMES: &'static [&'static str] = &[];
    fn index(self) -> u16 {
        match self {}
    }
}

/// Drop reasons of a node that never drops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoError {}

impl ErrorReason for NoError {
    const REASONS: &'static [&'static str] = &[];
    fn index(self) -> u16 {
        match self {}
    }
}

/// What a per-packet function decides for one packet: the arc it leaves on, or the reason
/// it is dropped for. [`Context::process_packets`] sends each packet where its verdict says
/// and counts the drops by reason.
///
/// ```
/// use pktvec_graph::{next_nodes, node_errors, Verdict};
/// next_nodes! { pub enum CheckNext { Out = "tx" } }
/// node_errors! { pub enum CheckError { Short = "shorter than an ethernet header" } }
///
/// fn check(data: &[u8]) -> Verdict<CheckNext, CheckError> {
///     if data.len() < 14 {
///         return Verdict::Drop(CheckError::Short);
///     }
///     Verdict::Next(CheckNext::Out)
/// }
/// assert_eq!(check(&[0; 10]), Verdict::Drop(CheckError::Short));
/// assert_eq!(check(&[0; 60]), Verdict::Next(CheckNext::Out));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict<N, E> {
    /// Send the packet on this arc.
    Next(N),
    /// Drop the packet, counting this reason.
    Drop(E),
}

/// A graph node: called once per vector of packets.
///
/// `process` must dispose of every packet of `frame`: enqueue it to a next node (usually
/// all at once with [`Context::process_packets`] or [`Context::enqueue_frame`]), drop it
/// with a reason, or, for a [`NodeKind::Sink`], free or transmit it. Packets left in the
/// frame when `process` returns are lost to the graph (tests catch that as a conservation
/// failure).
///
/// A node declares its arcs ([`next_nodes!`](crate::next_nodes)) and drop reasons
/// ([`node_errors!`](crate::node_errors)), then decides per packet:
///
/// ```
/// use pktvec_graph::builtin::{NullSink, PacketSource, SourceNext};
/// use pktvec_graph::{next_nodes, node_errors, Context, Frame, GraphBuilder, GraphConfig, Node, Verdict};
/// use pktvec_packet::{BufferPool, PoolConfig};
///
/// next_nodes! { pub enum EvenNext { Tx = "tx" } }
/// node_errors! { pub enum EvenError { Odd = "odd length" } }
///
/// /// Passes packets of even length, drops the others.
/// struct Even;
///
/// impl Node for Even {
///     type Next = EvenNext;
///     type Error = EvenError;
///
///     fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
///         cx.process_packets(frame, |pkt| match pkt.len() % 2 {
///             0 => Verdict::Next(EvenNext::Tx),
///             _ => Verdict::Drop(EvenError::Odd),
///         });
///     }
/// }
///
/// let mut b = GraphBuilder::new(GraphConfig::default());
/// b.add("source", PacketSource::new(vec![vec![0u8; 60], vec![0u8; 61]]).with_limit(10))
///     .add("even", Even)
///     .add("tx", NullSink)
///     .set_next("source", SourceNext::Out, "even");
/// let mut g = b.build(BufferPool::new(PoolConfig::default())?)?;
/// g.run_until_idle();
/// assert_eq!(g.runtime().row("tx").unwrap().packets, 5);
/// assert_eq!(g.errors().count("even", "odd length"), 5);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait Node: Send + 'static {
    /// The node's next arcs.
    type Next: Next;
    /// The node's drop reasons.
    type Error: ErrorReason;
    /// The node's role; most nodes are [`NodeKind::Internal`].
    const KIND: NodeKind = NodeKind::Internal;

    /// Why this node makes new packets (flood copies, multicast replicas, fragments,
    /// encapsulation into new buffers), in index order: the reasons
    /// [`Context::count_created`] and [`Context::drop_uncreated`] count under, shown by
    /// [`Graph::created`](crate::Graph::created). Declare them with
    /// [`node_errors!`](crate::node_errors) and use its `REASONS`. Packets a node makes
    /// count as graph input in [`Conservation`](crate::Conservation). Empty by default: the
    /// node makes no packets.
    ///
    /// ```
    /// use pktvec_graph::{node_errors, ErrorReason};
    /// node_errors! {
    ///     /// Why `mirror` makes packets.
    ///     pub enum MirrorCreated { Copy = "mirror copy" }
    /// }
    /// const CREATED: &[&str] = MirrorCreated::REASONS; // in `impl Node for Mirror`
    /// assert_eq!(CREATED, &["mirror copy"]);
    /// ```
    const CREATED: &'static [&'static str] = &[];

    /// Processes one vector. For an input node the frame starts empty and the node fills it
    /// (up to [`Context::vector_size`]) before enqueueing it.
    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame);

    /// Whether this node takes *raw* buffers: ones an input node lends without handing
    /// them to the buffer pool ([`Context::enqueue_raw`]), the first [`Frame::raw_len`] of a
    /// frame. Such a node must, for each of them, either give it to the pool's backend as
    /// it is (a DPDK tx node: the mbuf leaves as the driver delivered it) or adopt it
    /// ([`BufferPool::adopt`](pktvec_packet::BufferPool::adopt)) before anything else;
    /// the pool shows a raw buffer as an empty packet, and one that is neither sent nor
    /// adopted is lost to the backend. Asked once, when the graph is built. The default is
    /// false: the node only ever sees buffers the pool holds.
    fn takes_raw(&self) -> bool {
        false
    }

    /// Writes this node's trace line for one traced packet, as it enters the node.
    /// The default prints the length and the first 32 bytes.
    fn format_trace(&self, pkt: Packet<'_>, out: &mut String) {
        let data = pkt.data();
        let _ = write!(out, "len {}:", data.len());
        for b in data.iter().take(32) {
            let _ = write!(out, " {b:02x}");
        }
        if data.len() > 32 {
            out.push_str(" ...");
        }
    }
}

/// Declares a node's next arcs: a `#[repr(u16)]` enum whose variants name the node each arc
/// leads to by default (change a target with
/// [`GraphBuilder::set_next`](crate::GraphBuilder::set_next)).
///
/// ```
/// pktvec_graph::next_nodes! {
///     /// Arcs of ip4-input.
///     pub enum Ip4InputNext {
///         /// Good packets.
///         Lookup = "ip4-lookup",
///         /// Packets for us.
///         Local = "ip4-local",
///     }
/// }
/// use pktvec_graph::Next;
/// assert_eq!(Ip4InputNext::Local.index(), 1);
/// assert_eq!(Ip4InputNext::TARGETS, &["ip4-lookup", "ip4-local"]);
/// ```
#[macro_export]
macro_rules! next_nodes {
    ($(#[$m:meta])* $vis:vis enum $name:ident { $($(#[$vm:meta])* $var:ident = $target:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[repr(u16)]
        $vis enum $name { $($(#[$vm])* $var),+ }
        impl $crate::Next for $name {
            const TARGETS: &'static [&'static str] = &[$($target),+];
            const NAMES: &'static [&'static str] = &[$(stringify!($var)),+];
            #[inline(always)]
            fn index(self) -> u16 { self as u16 }
        }
    };
}

/// Declares a node's drop reasons: a `#[repr(u16)]` enum whose variants carry the text
/// shown in the error counters.
///
/// ```
/// pktvec_graph::node_errors! {
///     /// Why ip4-input drops.
///     pub enum Ip4Error { BadChecksum = "bad header checksum", TtlExpired = "ttl expired" }
/// }
/// use pktvec_graph::ErrorReason;
/// assert_eq!(Ip4Error::TtlExpired.index(), 1);
/// ```
#[macro_export]
macro_rules! node_errors {
    ($(#[$m:meta])* $vis:vis enum $name:ident { $($(#[$vm:meta])* $var:ident = $reason:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[repr(u16)]
        $vis enum $name { $($(#[$vm])* $var),+ }
        impl $crate::ErrorReason for $name {
            const REASONS: &'static [&'static str] = &[$($reason),+];
            #[inline(always)]
            fn index(self) -> u16 { self as u16 }
        }
    };
}
