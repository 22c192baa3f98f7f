//! `l2fwd`, an L2 switch: `l2-learn` (source MAC) → `l2-forward` (destination
//! MAC) → `interface-output` → tx, both lookups two-phase in one shared MAC table.
//!
//! [`L2fwd::new`] fills the table with `table_size` stations: station `i` is
//! [`station_mac`]`(i)` on interface `i % ports`, which is what the `l2fwd` example's
//! traffic is drawn from (so both lookups hit).
//!
//! ```
//! use pktvec_graph::builtin::{NullSink, PacketSource, SourceNext};
//! use pktvec_graph::{GraphBuilder, GraphConfig};
//! use pktvec_nodes::apps::l2fwd::{station_mac, L2fwd, L2fwdConfig};
//! use pktvec_packet::{builder::PacketBuilder, BufferPool};
//! use std::net::Ipv4Addr;
//!
//! let cfg: L2fwdConfig = serde_json::from_str(r#"{ "table_size": 64, "ports": 4 }"#)?;
//! let app = L2fwd::new(cfg)?;
//! assert_eq!(app.fib().port(station_mac(6)), Some(2));
//! // Station 1 (port 1) to station 6 (port 2).
//! let frame = PacketBuilder::ethernet(station_mac(1), station_mac(6))
//!     .ipv4(Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 6))
//!     .udp(1, 2)
//!     .build();
//! let mut b = GraphBuilder::new(GraphConfig::default());
//! b.add("input", PacketSource::new(vec![frame]).with_limit(100))
//!     .set_next("input", SourceNext::Out, app.entry());
//! let nodes = app.add_to(&mut b);
//! b.add(nodes.output_to_tx.to.as_str(), NullSink);
//! let mut g = b.build(BufferPool::new(Default::default())?)?;
//! g.run_until_idle();
//! let out = g.node::<pktvec_nodes::output::InterfaceOutput>("interface-output").unwrap();
//! assert_eq!(out.counters()[2].packets, 100);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use super::{default_tx, AppError, Edge};
use crate::l2::{L2Fib, L2Forward, L2ForwardNext, L2Learn, L2LearnNext, UnknownUnicast};
use crate::output::{InterfaceOutput, OutputNext};
use pktvec_graph::GraphBuilder;
use pktvec_lookup::hash::MacTable;
use pktvec_packet::wire::MacAddr;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Name of the `l2-learn` node (the entry).
pub const L2_LEARN: &str = "l2-learn";
/// Name of the `l2-forward` node.
pub const L2_FORWARD: &str = "l2-forward";
/// Name of the `interface-output` node.
pub const INTERFACE_OUTPUT: &str = "interface-output";

/// Settings of the L2 switch.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct L2fwdConfig {
    /// Interfaces (at least 2 are used).
    pub ports: u16,
    /// Stations put in the MAC table up front (the table holds at least 2).
    pub table_size: usize,
    /// What `l2-forward` does with unknown unicast.
    pub unknown_unicast: UnknownUnicast,
    /// Name of the transmit node (added by the caller).
    pub tx: String,
}

impl Default for L2fwdConfig {
    fn default() -> Self {
        L2fwdConfig {
            ports: 4,
            table_size: 65_536,
            unknown_unicast: UnknownUnicast::Flood,
            tx: default_tx(),
        }
    }
}

/// MAC address of station `i`: `02:00` followed by `i` big-endian.
///
/// ```
/// let m = pktvec_nodes::apps::l2fwd::station_mac(0x0102_0304);
/// assert_eq!(m.to_string(), "02:00:01:02:03:04");
/// ```
pub fn station_mac(i: u32) -> MacAddr {
    let b = i.to_be_bytes();
    MacAddr([0x02, 0x00, b[0], b[1], b[2], b[3]])
}

/// The L2 switch: its config and its shared MAC table. [`new`](Self::new) fills the table,
/// [`add_to`](Self::add_to) adds the nodes to your builder and returns their arcs
/// ([`L2fwdNodes`]), to redirect or splice a node of yours into.
///
/// ```
/// use pktvec_graph::builtin::{NullSink, PacketSource, SourceNext};
/// use pktvec_graph::{GraphBuilder, GraphConfig};
/// use pktvec_nodes::apps::l2fwd::{station_mac, L2fwd, L2fwdConfig};
/// use pktvec_nodes::l2::UnknownUnicast;
/// use pktvec_packet::{builder::PacketBuilder, BufferPool};
/// use std::net::Ipv4Addr;
///
/// let app = L2fwd::new(L2fwdConfig {
///     ports: 2,
///     table_size: 16,
///     unknown_unicast: UnknownUnicast::Drop,
///     ..L2fwdConfig::default()
/// })?;
/// let to = |dst| {
///     PacketBuilder::ethernet(station_mac(3), dst)
///         .ipv4(Ipv4Addr::new(10, 0, 0, 3), Ipv4Addr::new(10, 0, 0, 9))
///         .udp(1, 2)
///         .build()
/// };
/// // To station 5 (interface 1), and to a MAC the table does not know (dropped).
/// let traffic = vec![to(station_mac(5)), to([2, 9, 9, 9, 9, 9].into())];
/// let mut b = GraphBuilder::new(GraphConfig::default());
/// b.add("input", PacketSource::new(traffic).with_limit(10))
///     .set_next("input", SourceNext::Out, app.entry());
/// let nodes = app.add_to(&mut b);
/// b.add(nodes.output_to_tx.to.as_str(), NullSink);
/// let mut g = b.build(BufferPool::new(Default::default())?)?;
/// g.run_until_idle();
/// let c = g.conservation();
/// assert_eq!((c.output, c.dropped), (5, 5));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct L2fwd {
    cfg: L2fwdConfig,
    fib: Arc<L2Fib>,
}

/// The nodes [`L2fwd::add_to`] added and its arcs.
#[derive(Clone, Debug)]
pub struct L2fwdNodes {
    /// Node the input sends to (`l2-learn`).
    pub entry: &'static str,
    /// Every node added, in path order.
    pub nodes: Vec<&'static str>,
    /// `l2-learn → l2-forward`.
    pub learn_to_forward: Edge<L2LearnNext>,
    /// `l2-forward → interface-output`.
    pub forward_to_output: Edge<L2ForwardNext>,
    /// `interface-output → tx`.
    pub output_to_tx: Edge<OutputNext>,
}

impl L2fwd {
    /// Creates the MAC table and fills it with `table_size` stations (before sharing it:
    /// no publish per station).
    pub fn new(cfg: L2fwdConfig) -> Result<Self, AppError> {
        let mut table = MacTable::new(cfg.table_size.max(2))?;
        let ports = cfg.ports.max(2) as u32;
        for i in 0..cfg.table_size as u32 {
            table.insert(station_mac(i), i % ports)?;
        }
        Ok(L2fwd {
            cfg,
            fib: L2Fib::from_table(table),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &L2fwdConfig {
        &self.cfg
    }

    /// Interfaces used (`ports`, at least 2).
    pub fn ports(&self) -> u16 {
        self.cfg.ports.max(2)
    }

    /// The shared MAC table: the control plane learns, moves and forgets stations while
    /// the graphs forward ([`L2Fib::learn`], [`L2Fib::forget`], [`L2Fib::apply`]). Every
    /// graph [`add_to`](Self::add_to) builds shares it: one `L2fwd` serves several workers,
    /// each node with its own reader.
    pub fn fib(&self) -> &Arc<L2Fib> {
        &self.fib
    }

    /// The node the caller's input must send to.
    pub fn entry(&self) -> &'static str {
        L2_LEARN
    }

    /// Adds `l2-learn`, `l2-forward` and `interface-output` (whose transmit arc leads to
    /// `tx`, which the caller adds).
    pub fn add_to(&self, b: &mut GraphBuilder) -> L2fwdNodes {
        let ports = self.ports();
        b.add(L2_LEARN, L2Learn::new(self.fib.clone()))
            .add(
                L2_FORWARD,
                L2Forward::new(self.fib.clone(), ports, self.cfg.unknown_unicast),
            )
            .add(INTERFACE_OUTPUT, InterfaceOutput::new(ports as usize))
            .set_next(L2_LEARN, L2LearnNext::Forward, L2_FORWARD)
            .set_next(L2_FORWARD, L2ForwardNext::Output, INTERFACE_OUTPUT)
            .set_next(INTERFACE_OUTPUT, OutputNext::Tx, &self.cfg.tx);
        L2fwdNodes {
            entry: L2_LEARN,
            nodes: vec![L2_LEARN, L2_FORWARD, INTERFACE_OUTPUT],
            learn_to_forward: Edge::new(L2_LEARN, L2LearnNext::Forward, L2_FORWARD),
            forward_to_output: Edge::new(L2_FORWARD, L2ForwardNext::Output, INTERFACE_OUTPUT),
            output_to_tx: Edge::new(INTERFACE_OUTPUT, OutputNext::Tx, self.cfg.tx.clone()),
        }
    }
}
