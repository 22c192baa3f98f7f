//! A record's pktvec graph: the generated nodes of [`crate::nodes`], added to a caller's
//! [`GraphBuilder`] between the caller's input node and transmit node, and the table
//! contents both this graph and the SWX twin load.
//!
//! Every program is `parse → [the feature's nodes] → forward_table → tx` (a packet that
//! is not PTP goes from `parse` straight to `forward_table`); the parse and table
//! benchmarks come as a node-per-stage chain or one fused node ([`Variant`]).
//!
//! ```
//! use pktvec_graph::{GraphBuilder, GraphConfig};
//! use pktvec_io::capture::{Capture, CountingSink, PcapSource, PcapSourceNext};
//! use pktvec_packet::{BufferPool, PoolConfig};
//! use pktvec_synth::{pipeline, record::{Bench, Record, Variant}, traffic};
//! let r = Record::new(Bench::ParseHeaders, 4).with_variant(Variant::Chain);
//! let cap = Capture { packets: traffic::frames(&r), ..Default::default() };
//! let mut b = GraphBuilder::new(GraphConfig::default());
//! b.add("input", PcapSource::new(cap).looping(true).with_limit(1000).with_timestamps(false))
//!     .add("tx", CountingSink::new(4));
//! let built = pipeline::add_to(&r, &mut b, "tx")?;
//! b.set_next("input", PcapSourceNext::Out, &built.entry);
//! let mut g = b.build(BufferPool::new(PoolConfig::default())?)?;
//! assert_eq!(g.run_until_idle(), 1000);
//! assert_eq!(g.node::<CountingSink>("tx").unwrap().packets[2], 1000);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::layout::*;
use crate::nodes::*;
use crate::record::{Bench, Record, RecordError, Share, Variant};
use pktvec_graph::GraphBuilder;
use pktvec_lookup::hash::HashTable;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

/// How a table is keyed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyKind {
    /// The destination MAC (48 bits); the value is the port.
    Mac,
    /// The destination MAC; the value is the next table's key (first dependent table).
    MacDependent,
    /// The key the previous table wrote (32 bits); the value is the next key.
    Chained,
    /// The key/value header's key (32 bits); the value goes into the header.
    Kv,
}

/// One table's contents: `(key, value)` rows (a MAC key in the low 48 bits).
#[derive(Clone, Debug)]
pub struct TableContents {
    /// The table's name (in the SWX twin too).
    pub name: String,
    /// How it is keyed.
    pub kind: KeyKind,
    /// Its rows.
    pub rows: Vec<(u64, u32)>,
}

fn mac_u64(m: [u8; 6]) -> u64 {
    m.iter().fold(0u64, |a, &b| (a << 8) | u64::from(b))
}

fn u64_mac(k: u64) -> [u8; 6] {
    let b = k.to_be_bytes();
    [b[2], b[3], b[4], b[5], b[6], b[7]]
}

/// The tables of a record (not `forward_table`, which is always the same two entries),
/// in the order the packets visit them.
pub fn table_contents(r: &Record) -> Vec<TableContents> {
    let mut rng = Rng(r.seed ^ 0x007A_B1E5);
    let fill = r.table_entries.saturating_sub(2) as usize;
    let filler_mac = |rng: &mut Rng| 0x0200_0000_0000 | (rng.next_u64() & 0xFF_FFFF_FFFF);
    match r.bench {
        Bench::TablesIndependent => (0..r.param)
            .map(|i| {
                let mut rows = vec![(mac_u64(MAC_PORT1), 1), (mac_u64(MAC_PORT2), 2)];
                rows.extend((0..fill).map(|_| (filler_mac(&mut rng), 1)));
                TableContents {
                    name: format!("table_{i}"),
                    kind: KeyKind::Mac,
                    rows,
                }
            })
            .collect(),
        Bench::TablesDependent => (0..r.param)
            .map(|i| {
                let (kind, mut rows) = if i == 0 {
                    (
                        KeyKind::MacDependent,
                        vec![
                            (mac_u64(MAC_PORT1), dep_key(1, 1)),
                            (mac_u64(MAC_PORT2), dep_key(1, 2)),
                        ],
                    )
                } else {
                    (
                        KeyKind::Chained,
                        (1..=2)
                            .map(|a| (u64::from(dep_key(i, a)), dep_key(i + 1, a)))
                            .collect(),
                    )
                };
                for _ in 0..fill {
                    let k = if i == 0 {
                        filler_mac(&mut rng)
                    } else {
                        0x4000_0000 | (rng.next_u64() & 0x3FFF_FFFF)
                    };
                    rows.push((k, rng.next_u64() as u32 | 0x8000_0000));
                }
                TableContents {
                    name: format!("table_{i}"),
                    kind,
                    rows,
                }
            })
            .collect(),
        Bench::TableSize | Bench::FlowChurn | Bench::FlowSize => {
            let n = 1u32 << r.kv_table_log2();
            vec![TableContents {
                name: "kv_table".into(),
                kind: KeyKind::Kv,
                rows: (0..n)
                    .map(|j| (u64::from(kv_key(j, r.seed)), kv_value(j)))
                    .collect(),
            }]
        }
        _ => Vec::new(),
    }
}

fn build_table(c: &TableContents) -> Result<Table, String> {
    let cap = (c.rows.len() + c.rows.len() / 8).max(16);
    let err = |e: pktvec_lookup::hash::HashError| format!("{}: {e}", c.name);
    Ok(match c.kind {
        KeyKind::Mac | KeyKind::MacDependent => {
            let mut t = HashTable::new(cap).map_err(err)?;
            for &(k, v) in &c.rows {
                t.insert(u64_mac(k), v).map_err(err)?;
            }
            Table::Mac {
                table: t,
                dependent: c.kind == KeyKind::MacDependent,
            }
        }
        KeyKind::Chained | KeyKind::Kv => {
            let mut t = HashTable::new(cap).map_err(err)?;
            for &(k, v) in &c.rows {
                t.insert(k as u32, v).map_err(err)?;
            }
            if c.kind == KeyKind::Kv {
                Table::Kv(t)
            } else {
                Table::Chained(t)
            }
        }
    })
}

/// What [`add_to`] added.
#[derive(Debug)]
pub struct Built {
    /// The node the input must feed.
    pub entry: String,
    /// The generated nodes in order (the last is `forward_table`).
    pub nodes: Vec<String>,
    /// Bytes of table memory (the record's tables, not `forward_table`).
    pub table_bytes: usize,
    /// Entries in those tables.
    pub table_entries: usize,
    /// The shared register (shared-register with [`Share::Atomic`]).
    pub shared: Option<Arc<[AtomicU64]>>,
}

/// Why a pipeline could not be built.
#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    /// The record is out of range.
    #[error(transparent)]
    Record(#[from] RecordError),
    /// A table could not hold its entries.
    #[error("table: {0}")]
    Table(String),
}

/// Adds the record's nodes to `b`, ending in `forward_table` whose output goes to `tx`
/// (a node the caller adds). `shared` is the register the shared-register benchmark counts
/// into under [`Share::Atomic`] (one per worker set; `None` makes a new one).
pub fn add_to(r: &Record, b: &mut GraphBuilder, tx: &str) -> Result<Built, PipelineError> {
    add_to_shared(r, b, tx, None)
}

/// [`add_to`] with the shared register given (every worker's graph gets the same one).
pub fn add_to_shared(
    r: &Record,
    b: &mut GraphBuilder,
    tx: &str,
    shared: Option<Arc<[AtomicU64]>>,
) -> Result<Built, PipelineError> {
    r.validate()?;
    let mut stages: Vec<String> = Vec::new();
    let mut table_bytes = 0;
    let mut table_entries = 0;
    let mut shared_out = None;
    let spec = ParseSpec {
        headers: r.generic_headers(),
        fields: r.fields_per_header(),
        fanout: r.branches(),
        kv: r.has_kv(),
    };
    let parse_bench = matches!(
        r.bench,
        Bench::ParseHeaders | Bench::ParseFields | Bench::ParseBranches
    );
    // Parse stages: "parse" and, in the chain variant, one "parse-<level>" per header (the
    // checksum program parses Ethernet + IPv4 in its own node).
    let mut done_targets: Vec<String> = Vec::new();
    if r.bench == Bench::Checksum {
    } else if parse_bench && r.variant == Variant::Chain {
        b.add("parse", Parse::stage(spec));
        stages.push("parse".into());
        done_targets.push("parse".into());
        for l in 0..spec.headers {
            let name = format!("parse-{l}");
            b.add(name.clone(), ParseLevel::new(spec, l));
            stages.push(name.clone());
            done_targets.push(name);
        }
    } else {
        b.add("parse", Parse::new(spec));
        stages.push("parse".into());
        done_targets.push("parse".into());
    }
    let parse_count = stages.len();
    match r.bench {
        Bench::TablesIndependent
        | Bench::TablesDependent
        | Bench::TableSize
        | Bench::FlowChurn
        | Bench::FlowSize => {
            let contents = table_contents(r);
            let dependent = r.bench == Bench::TablesDependent;
            let mut tables = Vec::new();
            for c in &contents {
                table_entries += c.rows.len();
                let t = build_table(c).map_err(PipelineError::Table)?;
                table_bytes += t.memory_bytes();
                tables.push(t);
            }
            if r.variant == Variant::Chain && tables.len() > 1 {
                let n = tables.len();
                for (i, t) in tables.into_iter().enumerate() {
                    let name = format!("table-{i}");
                    b.add(
                        name.clone(),
                        Tables::new(vec![t], r.prefetch, dependent && i + 1 == n),
                    );
                    stages.push(name);
                }
            } else {
                b.add("tables", Tables::new(tables, r.prefetch, dependent));
                stages.push("tables".into());
            }
        }
        Bench::Checksum => {
            let mode = match r.param {
                0 => ChecksumMode::Off,
                1 => ChecksumMode::Incremental,
                _ => ChecksumMode::Full,
            };
            b.add("ip4-ttl", Ttl::new(mode));
            stages.push("ip4-ttl".into());
        }
        Bench::StateRead | Bench::StateWrite => {
            b.add(
                "registers",
                RegisterOps::new(r.param, r.registers, r.bench == Bench::StateWrite),
            );
            stages.push("registers".into());
        }
        Bench::HeaderAdd => {
            b.add("header-add", HeaderAdd::new(r.param));
            stages.push("header-add".into());
        }
        Bench::HeaderRemove => {
            b.add("header-remove", HeaderRemove);
            stages.push("header-remove".into());
        }
        Bench::FieldWrites => {
            b.add("field-writes", FieldWrites::new(r.param, r.writes));
            stages.push("field-writes".into());
        }
        Bench::SharedRegister => {
            let s = match r.share {
                Share::Atomic => Some(shared.unwrap_or_else(SharedRegister::shared_array)),
                Share::Sharded => None,
            };
            shared_out = s.clone();
            b.add("shared-register", SharedRegister::new(s));
            stages.push("shared-register".into());
        }
        Bench::ParseHeaders | Bench::ParseFields | Bench::ParseBranches => {}
    }
    b.add("forward_table", Forward::new());
    stages.push("forward_table".into());
    for w in stages.windows(2) {
        b.set_next(&w[0], StageNext::Next, &w[1]);
    }
    // A parse stage that ends parsing skips to what follows the parse stages.
    let after_parse = stages[parse_count.min(stages.len() - 1)].clone();
    for s in &stages {
        let target = if done_targets.contains(s) {
            &after_parse
        } else {
            &stages[stages.len() - 1]
        };
        b.set_next(s, StageNext::Done, target);
    }
    // A packet that is not PTP skips the program, as in the twin.
    if r.bench != Bench::Checksum {
        b.set_next("parse", StageNext::Unparsed, "forward_table");
    }
    b.set_next("forward_table", StageNext::Next, tx);
    b.set_next("forward_table", StageNext::Done, tx);
    Ok(Built {
        entry: stages[0].clone(),
        nodes: stages,
        table_bytes,
        table_entries,
        shared: shared_out,
    })
}
