//! Packet trace: the first N packets that enter the graph, with a record from every node
//! they pass through, printable like VPP's `show trace`.
//!
//! Tracing costs one flag test per node call while it is off. While it is on, input nodes
//! mark up to N packets ([`MetaFlags::TRACED`](pktvec_packet::MetaFlags::TRACED)) and the
//! dispatcher asks each node to describe every traced packet as it arrives
//! ([`Node::format_trace`](crate::Node::format_trace)). Records are formatted when taken,
//! so tracing allocates; keep it off when measuring.
//!
//! ```
//! # use pktvec_graph::*;
//! # let mut b = GraphBuilder::new(GraphConfig::default());
//! # b.add("source", builtin::PacketSource::new(vec![vec![0u8; 60]]).with_limit(3));
//! # b.add("out", builtin::NullSink);
//! # b.set_next("source", builtin::SourceNext::Out, "out");
//! # let mut graph = b.build(pktvec_packet::BufferPool::new(Default::default()).unwrap()).unwrap();
//! graph.trace_add(2);
//! graph.run_until_idle();
//! assert_eq!(graph.trace().packets().len(), 2);
//! let text = graph.trace().to_string();
//! assert!(text.contains("Packet 1") && text.contains("source") && text.contains("out"));
//! let first = &graph.trace().packets()[0].records[0];
//! assert_eq!((first.node.as_str(), first.next.as_deref()), ("source", Some("out")));
//! ```
//!
//! A packet's records say what each node decided: every record but the last names the
//! node the packet went to next, and a dropped packet ends on the drop node's record,
//! whose text is the dropping node and its reason, e.g. `ip4-input: ttl expired`.

use serde::Serialize;
use std::fmt;

/// One node's record of one traced packet.
#[derive(Clone, Debug, Serialize)]
pub struct TraceRecord {
    /// Node name.
    pub node: String,
    /// Cycle counter when the packet entered the node, relative to the trace start.
    pub cycles: u64,
    /// The node's description of the packet; on the drop node's record, the node that
    /// dropped it and why (`ip4-input: ttl expired`, as VPP's error-drop trace).
    pub text: String,
    /// Where the node sent the packet: the next node's name (`drop` when it dropped it),
    /// or `None` if this is the packet's last record (a sink consumed it, or it is still
    /// pending).
    pub next: Option<String>,
}

/// The records of one traced packet, in the order the nodes saw it.
#[derive(Clone, Debug, Default, Serialize)]
pub struct TracedPacket {
    /// Buffer index the packet had.
    pub buffer: u32,
    /// Records, first node first.
    pub records: Vec<TraceRecord>,
}

/// The packet trace of a graph.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Trace {
    #[serde(skip)]
    pub(crate) budget: usize,
    #[serde(skip)]
    pub(crate) active: bool,
    #[serde(skip)]
    pub(crate) t0: u64,
    #[serde(skip)]
    pub(crate) tsc_hz: f64,
    packets: Vec<TracedPacket>,
    /// Packets marked by the current input node call, waiting for its record.
    #[serde(skip)]
    pub(crate) just_marked: Vec<u32>,
}

impl Trace {
    /// The traced packets.
    pub fn packets(&self) -> &[TracedPacket] {
        &self.packets
    }

    /// True while packets are marked or traced packets may still be in flight.
    pub fn is_active(&self) -> bool {
        self.active
    }

    pub(crate) fn add(&mut self, n: usize) {
        if n > 0 {
            if !self.active {
                self.tsc_hz = crate::clock::tsc_hz();
                self.t0 = crate::clock::now();
            }
            self.budget += n;
            self.active = true;
        }
    }

    pub(crate) fn clear(&mut self) {
        *self = Trace::default();
    }

    /// Starts a traced packet; returns its trace index.
    pub(crate) fn start_packet(&mut self, bi: u32) -> u16 {
        self.budget -= 1;
        let idx = self.packets.len();
        self.packets.push(TracedPacket {
            buffer: bi,
            records: Vec::new(),
        });
        self.just_marked.push(bi);
        idx.min(u16::MAX as usize) as u16
    }

    pub(crate) fn record(&mut self, index: u16, node: &str, text: String) {
        let cycles = crate::clock::now().saturating_sub(self.t0);
        if let Some(p) = self.packets.get_mut(index as usize) {
            if let Some(prev) = p.records.last_mut() {
                prev.next = Some(node.to_string());
            }
            p.records.push(TraceRecord {
                node: node.to_string(),
                cycles,
                text,
                next: None,
            });
        }
    }
}

impl fmt::Display for Trace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.packets.is_empty() {
            return writeln!(f, "No packets in trace buffer");
        }
        let hz = if self.tsc_hz > 0.0 {
            self.tsc_hz
        } else {
            1.0e9
        };
        for (i, p) in self.packets.iter().enumerate() {
            writeln!(
                f,
                "------------------- Packet {} (buffer {}) -------------------",
                i + 1,
                p.buffer
            )?;
            for r in &p.records {
                let us = r.cycles as f64 / hz * 1.0e6;
                let total_s = (us / 1.0e6) as u64;
                writeln!(
                    f,
                    "{:02}:{:02}:{:02}:{:06}: {}",
                    total_s / 3600,
                    (total_s / 60) % 60,
                    total_s % 60,
                    (us as u64) % 1_000_000,
                    r.node
                )?;
                for line in r.text.lines() {
                    writeln!(f, "  {line}")?;
                }
                if let Some(next) = &r.next {
                    writeln!(f, "  -> {next}")?;
                }
            }
            writeln!(f)?;
        }
        Ok(())
    }
}
