//! Runtime statistics: per-node calls, vectors, packets and cycles (VPP's `show runtime`),
//! drop counters by reason (`show errors`) and the conservation check.
//!
//! ```
//! # use pktvec_graph::*;
//! # let mut b = GraphBuilder::new(GraphConfig::default());
//! # b.add("source", builtin::PacketSource::new(vec![vec![0u8; 60]]).with_limit(1000));
//! # b.add("out", builtin::NullSink);
//! # b.set_next("source", builtin::SourceNext::Out, "out");
//! # let mut graph = b.build(pktvec_packet::BufferPool::new(Default::default()).unwrap()).unwrap();
//! graph.run_until_idle();
//! let table = graph.runtime();
//! println!("{table}");
//! let out = table.rows.iter().find(|r| r.name == "out").unwrap();
//! assert_eq!(out.packets, 1000);
//! let c = graph.conservation();
//! assert!(c.is_balanced(), "{c}");
//! let json = serde_json::to_string(&table).unwrap();
//! assert!(json.contains("\"cycles_per_packet\""));
//! ```

use crate::node::NodeKind;
use serde::Serialize;
use std::fmt;

/// Counters of one node, updated by the dispatcher after every call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct NodeStats {
    /// Times the node was called (input nodes: polled).
    pub calls: u64,
    /// Calls that had at least one packet.
    pub vectors: u64,
    /// Packets processed (input nodes: packets produced).
    pub packets: u64,
    /// Cycle-counter ticks charged to the node (one counter read per call, chained).
    pub cycles: u64,
}

/// One row of the runtime table.
#[derive(Clone, Debug, Serialize)]
pub struct RuntimeRow {
    /// Node name.
    pub name: String,
    /// Node kind.
    pub kind: NodeKind,
    /// Calls.
    pub calls: u64,
    /// Calls with packets.
    pub vectors: u64,
    /// Packets.
    pub packets: u64,
    /// Packets the node made ([`Node::CREATED`](crate::Node::CREATED)): flood copies,
    /// replicas, fragments; those it could not make for want of a buffer included.
    pub created: u64,
    /// Cycles.
    pub cycles: u64,
    /// vectors / calls.
    pub vectors_per_call: f64,
    /// packets / vectors: the mean vector size.
    pub packets_per_vector: f64,
    /// cycles / packets.
    pub cycles_per_packet: f64,
    /// cycles / calls.
    pub cycles_per_call: f64,
}

/// The runtime table of a graph, like VPP's `show runtime`.
#[derive(Clone, Debug, Serialize)]
pub struct RuntimeTable {
    /// Rows of the nodes that were called, in node order.
    pub rows: Vec<RuntimeRow>,
    /// Cycle counter rate used for the time columns.
    pub tsc_hz: f64,
    /// Vector size in force.
    pub vector_size: usize,
}

impl RuntimeTable {
    pub(crate) fn new(
        names: &[String],
        kinds: &[NodeKind],
        stats: &[NodeStats],
        created: &[u64],
        vector_size: usize,
    ) -> Self {
        let div = |a: u64, b: u64| if b == 0 { 0.0 } else { a as f64 / b as f64 };
        let rows = names
            .iter()
            .zip(kinds)
            .zip(stats)
            .zip(created)
            .filter(|((_, s), _)| s.calls > 0)
            .map(|(((name, &kind), s), &created)| RuntimeRow {
                name: name.clone(),
                kind,
                calls: s.calls,
                vectors: s.vectors,
                packets: s.packets,
                created,
                cycles: s.cycles,
                vectors_per_call: div(s.vectors, s.calls),
                packets_per_vector: div(s.packets, s.vectors),
                cycles_per_packet: div(s.cycles, s.packets),
                cycles_per_call: div(s.cycles, s.calls),
            })
            .collect();
        RuntimeTable {
            rows,
            tsc_hz: crate::clock::tsc_hz(),
            vector_size,
        }
    }

    /// The row of a node, if it was called.
    pub fn row(&self, name: &str) -> Option<&RuntimeRow> {
        self.rows.iter().find(|r| r.name == name)
    }

    /// Total cycles of all nodes.
    pub fn total_cycles(&self) -> u64 {
        self.rows.iter().map(|r| r.cycles).sum()
    }
}

impl fmt::Display for RuntimeTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let w = self
            .rows
            .iter()
            .map(|r| r.name.len())
            .max()
            .unwrap_or(4)
            .max(4);
        writeln!(
            f,
            "{:<w$} {:>8} {:>12} {:>12} {:>14} {:>10} {:>12} {:>11} {:>11} {:>12}",
            "Name",
            "Kind",
            "Calls",
            "Vectors",
            "Packets",
            "Created",
            "Vectors/Call",
            "Pkts/Vector",
            "Clocks/Pkt",
            "Clocks/Call",
        )?;
        for r in &self.rows {
            let kind = match r.kind {
                NodeKind::Input => "input",
                NodeKind::Internal => "internal",
                NodeKind::Sink => "sink",
            };
            writeln!(
                f,
                "{:<w$} {:>8} {:>12} {:>12} {:>14} {:>10} {:>12.2} {:>11.2} {:>11.2} {:>12.1}",
                r.name,
                kind,
                r.calls,
                r.vectors,
                r.packets,
                r.created,
                r.vectors_per_call,
                r.packets_per_vector,
                r.cycles_per_packet,
                r.cycles_per_call,
            )?;
        }
        let total = self.total_cycles();
        write!(
            f,
            "vector size {}, {} cycles in nodes ({:.3} ms at {:.2} GHz)",
            self.vector_size,
            total,
            total as f64 / self.tsc_hz * 1.0e3,
            self.tsc_hz / 1.0e9
        )
    }
}

/// One row of the error counters.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ErrorRow {
    /// Packets dropped for this reason.
    pub count: u64,
    /// The node that dropped them.
    pub node: String,
    /// Why.
    pub reason: String,
}

/// Counters by node and reason, like VPP's `show errors` (non-zero rows only): the drop
/// counters ([`Graph::errors`](crate::Graph::errors)) and the packets nodes made
/// ([`Graph::created`](crate::Graph::created)).
#[derive(Clone, Debug, Default, Serialize)]
pub struct ErrorTable {
    /// Non-zero counters, in error index order.
    pub rows: Vec<ErrorRow>,
}

impl ErrorTable {
    /// The non-zero counters, each with its (node, reason) by index.
    pub(crate) fn from_counts(counts: &[u64], names: &[(String, String)]) -> Self {
        ErrorTable {
            rows: counts
                .iter()
                .zip(names)
                .filter(|(&c, _)| c > 0)
                .map(|(&count, (node, reason))| ErrorRow {
                    count,
                    node: node.clone(),
                    reason: reason.clone(),
                })
                .collect(),
        }
    }

    /// Count for a node and reason (0 if none).
    pub fn count(&self, node: &str, reason: &str) -> u64 {
        self.rows
            .iter()
            .filter(|r| r.node == node && r.reason == reason)
            .map(|r| r.count)
            .sum()
    }

    /// Total dropped packets.
    pub fn total(&self) -> u64 {
        self.rows.iter().map(|r| r.count).sum()
    }
}

impl fmt::Display for ErrorTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let w = self
            .rows
            .iter()
            .map(|r| r.node.len())
            .max()
            .unwrap_or(4)
            .max(4);
        writeln!(f, "{:>12} {:<w$} Reason", "Count", "Node")?;
        for r in &self.rows {
            writeln!(f, "{:>12} {:<w$} {}", r.count, r.node, r.reason)?;
        }
        Ok(())
    }
}

/// Packet conservation: what entered the graph against what left it.
#[derive(Clone, Debug, Serialize)]
pub struct Conservation {
    /// Packets produced by input nodes or injected, and packets input nodes received but
    /// had no buffer for.
    pub input: u64,
    /// Packets nodes made ([`Node::CREATED`](crate::Node::CREATED)): flood copies and
    /// other replicas, including those dropped at once for want of a buffer.
    pub created: u64,
    /// Packets consumed by sink nodes other than the drop node.
    pub output: u64,
    /// Packets dropped: those that reached the drop node, and those dropped without a
    /// buffer (`dropped_without_buffer`).
    pub dropped: u64,
    /// Packets counted as dropped that never had a buffer: received when the pool was
    /// empty, or copies that could not be made.
    pub dropped_without_buffer: u64,
    /// Sum of the per-reason drop counters.
    pub dropped_by_reason: u64,
    /// Packets still pending in the graph.
    pub in_flight: u64,
    /// Buffers allocated from the pool (packets alive anywhere, in or out of the graph).
    pub buffers_in_use: u64,
}

impl Conservation {
    /// input + created = output + dropped + in flight, and the drop counters add up to
    /// the drops.
    pub fn is_balanced(&self) -> bool {
        self.input + self.created == self.output + self.dropped + self.in_flight
            && self.dropped == self.dropped_by_reason
    }
}

impl fmt::Display for Conservation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "in {} + created {} = out {} + dropped {} (by reason {}) + in flight {}: {}; buffers in use {}",
            self.input,
            self.created,
            self.output,
            self.dropped,
            self.dropped_by_reason,
            self.in_flight,
            if self.is_balanced() {
                "balanced"
            } else {
                "NOT BALANCED"
            },
            self.buffers_in_use
        )
    }
}
