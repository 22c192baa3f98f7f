//! The parameter record: which benchmark, the value of its swept parameter, and the few
//! knobs that shape its program and traffic. One record generates three things that must
//! agree byte for byte: the pktvec graph ([`crate::pipeline`]), the traffic
//! ([`crate::traffic`]) and the SWX twin ([`crate::swx`]).
//!
//! ```
//! use pktvec_synth::record::{Bench, Record};
//! let r: Record = toml::from_str("bench = \"parse-headers\"\nparam = 4\nvariant = \"chain\"")?;
//! assert_eq!(r.bench, Bench::ParseHeaders);
//! assert_eq!(r.name(), "parse-headers/chain/4");
//! r.validate()?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use serde::{Deserialize, Serialize};

/// The benchmarks, one feature each (the seed's Table 1 and its three CPU benchmarks).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "kebab-case")]
pub enum Bench {
    /// `param` generic headers of `fields` 16-bit fields after Ethernet + PTP, each
    /// selecting the next; the packet carries all of them.
    ParseHeaders,
    /// One generic header of `param` 16-bit fields.
    ParseFields,
    /// A parse tree of depth `param` and fan-out `fanout`; the packet walks every level.
    ParseBranches,
    /// `param` exact-match tables keyed on the destination MAC, each hit.
    TablesIndependent,
    /// `param` exact-match tables, each keyed on the key the previous one wrote.
    TablesDependent,
    /// One exact-match table of `2^param` entries; the traffic hits entries at random.
    TableSize,
    /// IPv4 TTL decrement with the header checksum `param` = 0 off, 1 incremental, 2 full.
    Checksum,
    /// `param` register reads (of one register or of `param` different ones).
    StateRead,
    /// `param` register writes (to one register or to `param` different ones).
    StateWrite,
    /// Adds `param` generic headers of `fields` fields.
    HeaderAdd,
    /// Removes the `param` generic headers the packet carries.
    HeaderRemove,
    /// `param` writes to the fields of a 16-field header (`writes`: chained, independent,
    /// arithmetic, boolean).
    FieldWrites,
    /// A table of 2^`flow_table_log2` entries (2^20 by default); `param` % of the packets
    /// belong to flows not seen recently (the rest to 1,024 hot flows): a changing flow
    /// working set.
    FlowChurn,
    /// A table of 2^`flow_table_log2` entries (2^20 by default); each flow sends `param`
    /// packets back to back.
    FlowSize,
    /// One counter per packet in a register shared by `param` workers (`share`: one atomic
    /// register or a shard per worker).
    SharedRegister,
}

impl Bench {
    /// Every benchmark, in the order the results page lists them.
    pub const ALL: [Bench; 15] = [
        Bench::ParseHeaders,
        Bench::ParseFields,
        Bench::ParseBranches,
        Bench::TablesIndependent,
        Bench::TablesDependent,
        Bench::TableSize,
        Bench::Checksum,
        Bench::StateRead,
        Bench::StateWrite,
        Bench::HeaderAdd,
        Bench::HeaderRemove,
        Bench::FieldWrites,
        Bench::FlowChurn,
        Bench::FlowSize,
        Bench::SharedRegister,
    ];

    /// The kebab-case name (as in TOML).
    pub fn name(self) -> &'static str {
        match self {
            Bench::ParseHeaders => "parse-headers",
            Bench::ParseFields => "parse-fields",
            Bench::ParseBranches => "parse-branches",
            Bench::TablesIndependent => "tables-independent",
            Bench::TablesDependent => "tables-dependent",
            Bench::TableSize => "table-size",
            Bench::Checksum => "checksum",
            Bench::StateRead => "state-read",
            Bench::StateWrite => "state-write",
            Bench::HeaderAdd => "header-add",
            Bench::HeaderRemove => "header-remove",
            Bench::FieldWrites => "field-writes",
            Bench::FlowChurn => "flow-churn",
            Bench::FlowSize => "flow-size",
            Bench::SharedRegister => "shared-register",
        }
    }

    /// What one step of the parameter adds (for the slope's unit).
    pub fn unit(self) -> &'static str {
        match self {
            Bench::ParseHeaders | Bench::HeaderAdd | Bench::HeaderRemove => "header",
            Bench::ParseFields => "field",
            Bench::ParseBranches => "level",
            Bench::TablesIndependent | Bench::TablesDependent => "table",
            Bench::TableSize => "doubling of entries",
            Bench::Checksum => "mode step",
            Bench::StateRead => "read",
            Bench::StateWrite | Bench::FieldWrites => "write",
            Bench::FlowChurn => "% new flows",
            Bench::FlowSize => "doubling of packets per flow",
            Bench::SharedRegister => "worker",
        }
    }

    /// Whether the record's knobs (chain or fused, prefetch or not) change only pktvec's
    /// graph: the SWX twin is then one program for all of them.
    pub fn twin_ignores_knobs(self) -> bool {
        matches!(
            self,
            Bench::ParseHeaders
                | Bench::ParseFields
                | Bench::ParseBranches
                | Bench::TablesIndependent
                | Bench::TablesDependent
                | Bench::TableSize
                | Bench::FlowChurn
                | Bench::FlowSize
        )
    }

    /// Whether the slope is taken against log2(param) (sizes that double) rather than param.
    pub fn log_scale(self) -> bool {
        matches!(self, Bench::FlowSize)
    }

    /// The default sweep of `param`.
    pub fn sweep(self) -> Vec<u32> {
        match self {
            Bench::ParseHeaders => vec![1, 2, 4, 8, 16],
            Bench::ParseFields => vec![1, 4, 8, 16, 32],
            Bench::ParseBranches => vec![1, 2, 3, 4, 5],
            Bench::TablesIndependent | Bench::TablesDependent => vec![1, 2, 4, 8],
            Bench::TableSize => vec![10, 14, 18, 22],
            Bench::Checksum => vec![0, 1, 2],
            Bench::StateRead | Bench::StateWrite => vec![1, 2, 4, 8],
            Bench::HeaderAdd | Bench::HeaderRemove => vec![1, 2, 4, 8],
            Bench::FieldWrites => vec![1, 2, 4, 8, 16],
            Bench::FlowChurn => vec![0, 10, 50, 100],
            Bench::FlowSize => vec![1, 4, 16, 64],
            Bench::SharedRegister => vec![1, 2],
        }
    }
}

/// Node-per-stage chain or one fused node (parse and table benchmarks; the others have
/// one node whatever this says).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Variant {
    /// One node per header level or per table.
    Chain,
    /// One node for all stages.
    #[default]
    Fused,
}

/// Which registers the state benchmarks touch.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Registers {
    /// Every operation on register 0.
    #[default]
    Same,
    /// Operation `i` on register `i`.
    Different,
}

/// What the field writes compute; write `i` targets field `(i + 1) % 16`.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Writes {
    /// `f[i+1] = f[i]`: each write reads the previous one's result.
    Chained,
    /// `f[i+1] = 0x100 + i`.
    #[default]
    Independent,
    /// `f[i+1] += f[i]` (16-bit).
    Arithmetic,
    /// `f[i+1] ^= f[i]`.
    Boolean,
}

/// How the shared register is kept.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Share {
    /// One register updated with atomic adds by every worker.
    #[default]
    Atomic,
    /// One cache-line padded shard per worker, summed when read.
    Sharded,
}

fn default_packet_size() -> usize {
    256
}
fn default_fields() -> u32 {
    1
}
fn default_fanout() -> u32 {
    2
}
fn default_entries() -> u32 {
    16
}
fn default_true() -> bool {
    true
}
fn default_flow_table_log2() -> u32 {
    FLOW_TABLE_LOG2
}
fn default_packets() -> u32 {
    1 << 16
}

/// One benchmark point. Unknown fields are refused.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Record {
    /// The benchmark.
    pub bench: Bench,
    /// Its swept parameter (see [`Bench`]).
    pub param: u32,
    /// Chain or fused (parse and table benchmarks).
    #[serde(default)]
    pub variant: Variant,
    /// Frame size before any header is added (the seed's 256 bytes).
    #[serde(default = "default_packet_size")]
    pub packet_size: usize,
    /// 16-bit fields per generic header (parse-headers, parse-branches: 1; header-add and
    /// header-remove use 4 whatever this says).
    #[serde(default = "default_fields")]
    pub fields: u32,
    /// Branches per parse state (parse-branches).
    #[serde(default = "default_fanout")]
    pub fanout: u32,
    /// Entries per table in tables-independent and tables-dependent.
    #[serde(default = "default_entries")]
    pub table_entries: u32,
    /// Whether table nodes prefetch their buckets a sub-batch ahead (pktvec only).
    #[serde(default = "default_true")]
    pub prefetch: bool,
    /// Same or different registers (state-read, state-write).
    #[serde(default)]
    pub registers: Registers,
    /// The field writes' kind (field-writes).
    #[serde(default)]
    pub writes: Writes,
    /// The shared register's kind (shared-register).
    #[serde(default)]
    pub share: Share,
    /// Distinct packets in the traffic of the table benchmarks (others: one packet).
    #[serde(default = "default_packets")]
    pub packets: u32,
    /// log2 of the flow table's entries (flow-churn, flow-size).
    #[serde(default = "default_flow_table_log2")]
    pub flow_table_log2: u32,
    /// Seed of the traffic and table contents.
    #[serde(default)]
    pub seed: u64,
}

/// Why a record cannot be generated.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum RecordError {
    /// A field is out of range.
    #[error("{bench}: {field} = {value} is out of range ({allowed})")]
    OutOfRange {
        /// The benchmark.
        bench: &'static str,
        /// The field.
        field: &'static str,
        /// Its value.
        value: u64,
        /// What is allowed.
        allowed: &'static str,
    },
}

/// Fields of a header that header-add adds and header-remove removes.
pub const MOD_FIELDS: u32 = 4;
/// Fields of the field-writes header.
pub const WRITE_FIELDS: u32 = 16;
/// log2 of the flow table's entries in flow-churn and flow-size, by default.
pub const FLOW_TABLE_LOG2: u32 = 20;

impl Record {
    /// A record with every knob at its default.
    ///
    /// ```
    /// use pktvec_synth::record::{Bench, Record};
    /// let r = Record::new(Bench::TableSize, 14);
    /// assert_eq!(r.packet_size, 256);
    /// ```
    pub fn new(bench: Bench, param: u32) -> Record {
        Record {
            bench,
            param,
            variant: Variant::default(),
            packet_size: default_packet_size(),
            fields: default_fields(),
            fanout: default_fanout(),
            table_entries: default_entries(),
            prefetch: true,
            registers: Registers::default(),
            writes: Writes::default(),
            share: Share::default(),
            packets: default_packets(),
            flow_table_log2: FLOW_TABLE_LOG2,
            seed: 0,
        }
    }

    /// This record with another variant.
    pub fn with_variant(mut self, v: Variant) -> Record {
        self.variant = v;
        self
    }

    /// A short unique name: bench, the knob that matters, param.
    pub fn name(&self) -> String {
        let knob = match self.bench {
            Bench::ParseHeaders
            | Bench::ParseFields
            | Bench::ParseBranches
            | Bench::TablesIndependent
            | Bench::TablesDependent => match self.variant {
                Variant::Chain => "chain",
                Variant::Fused => "fused",
            }
            .to_string(),
            Bench::TableSize | Bench::FlowChurn | Bench::FlowSize => if self.prefetch {
                "prefetch"
            } else {
                "no-prefetch"
            }
            .to_string(),
            Bench::StateRead | Bench::StateWrite => match self.registers {
                Registers::Same => "same",
                Registers::Different => "different",
            }
            .to_string(),
            Bench::FieldWrites => match self.writes {
                Writes::Chained => "chained",
                Writes::Independent => "independent",
                Writes::Arithmetic => "arithmetic",
                Writes::Boolean => "boolean",
            }
            .to_string(),
            Bench::SharedRegister => match self.share {
                Share::Atomic => "atomic",
                Share::Sharded => "sharded",
            }
            .to_string(),
            Bench::Checksum | Bench::HeaderAdd | Bench::HeaderRemove => "-".to_string(),
        };
        format!("{}/{}/{}", self.bench.name(), knob, self.param)
    }

    /// Generic headers the program declares (the parse benchmarks' chain length).
    pub fn generic_headers(&self) -> u32 {
        match self.bench {
            Bench::ParseHeaders | Bench::ParseBranches | Bench::HeaderRemove => self.param,
            Bench::ParseFields | Bench::FieldWrites => 1,
            _ => 0,
        }
    }

    /// 16-bit fields per generic header.
    pub fn fields_per_header(&self) -> u32 {
        match self.bench {
            Bench::ParseFields => self.param,
            Bench::HeaderAdd | Bench::HeaderRemove => MOD_FIELDS,
            Bench::FieldWrites => WRITE_FIELDS,
            _ => self.fields,
        }
    }

    /// Branches per parse state.
    pub fn branches(&self) -> u32 {
        match self.bench {
            Bench::ParseBranches => self.fanout,
            _ => 1,
        }
    }

    /// Whether the program parses the 8-byte key/value header after PTP (table-size, flow
    /// benchmarks, state and shared register).
    pub fn has_kv(&self) -> bool {
        matches!(
            self.bench,
            Bench::TableSize
                | Bench::FlowChurn
                | Bench::FlowSize
                | Bench::StateRead
                | Bench::StateWrite
                | Bench::SharedRegister
        )
    }

    /// log2 of the key/value table's entries (table-size, flow benchmarks).
    pub fn kv_table_log2(&self) -> u32 {
        match self.bench {
            Bench::TableSize => self.param,
            _ => self.flow_table_log2,
        }
    }

    /// Checks every field against what the generators can build.
    pub fn validate(&self) -> Result<(), RecordError> {
        let bench = self.bench.name();
        let range = |field, value: u64, lo: u64, hi: u64, allowed| {
            if value < lo || value > hi {
                Err(RecordError::OutOfRange {
                    bench,
                    field,
                    value,
                    allowed,
                })
            } else {
                Ok(())
            }
        };
        let p = u64::from(self.param);
        match self.bench {
            Bench::ParseHeaders => range("param", p, 1, 32, "1..=32")?,
            Bench::ParseFields => range("param", p, 1, 64, "1..=64")?,
            Bench::ParseBranches => range("param", p, 1, 6, "1..=6")?,
            Bench::TablesIndependent | Bench::TablesDependent => {
                range("param", p, 1, 32, "1..=32")?;
                range(
                    "table_entries",
                    u64::from(self.table_entries),
                    2,
                    1 << 20,
                    "2..=2^20",
                )?;
            }
            Bench::TableSize => range("param", p, 4, 24, "4..=24 (log2 of the entries)")?,
            Bench::Checksum => range("param", p, 0, 2, "0 off, 1 incremental, 2 full")?,
            Bench::StateRead | Bench::StateWrite => range("param", p, 1, 32, "1..=32")?,
            Bench::HeaderAdd => range("param", p, 1, 16, "1..=16 (the headroom holds 128 bytes)")?,
            Bench::HeaderRemove => range("param", p, 1, 16, "1..=16")?,
            Bench::FieldWrites => range("param", p, 1, 64, "1..=64")?,
            Bench::FlowChurn => range("param", p, 0, 100, "0..=100 (%)")?,
            Bench::FlowSize => range("param", p, 1, 1 << 16, "1..=65536")?,
            Bench::SharedRegister => range("param", p, 1, 64, "1..=64 workers")?,
        }
        range("fields", u64::from(self.fields), 1, 64, "1..=64")?;
        range("fanout", u64::from(self.fanout), 1, 8, "1..=8")?;
        range("packets", u64::from(self.packets), 1, 1 << 20, "1..=2^20")?;
        range(
            "flow_table_log2",
            u64::from(self.flow_table_log2),
            11,
            24,
            "11..=24",
        )?;
        let min = crate::layout::GENERIC
            + (self.generic_headers() * self.fields_per_header() * 2) as usize
            + if self.has_kv() {
                crate::layout::KV_LEN
            } else {
                0
            };
        let min = min.max(crate::layout::IPV4_FRAME_MIN);
        if self.packet_size < min || self.packet_size > 2048 {
            return Err(RecordError::OutOfRange {
                bench,
                field: "packet_size",
                value: self.packet_size as u64,
                allowed: "the headers' length..=2048",
            });
        }
        Ok(())
    }

    /// The records of a benchmark's default sweep, in every variant the page compares.
    ///
    /// ```
    /// use pktvec_synth::record::{Bench, Record};
    /// let v = Record::sweep(Bench::ParseHeaders);
    /// assert_eq!(v.len(), 10); // 5 points, chain and fused
    /// ```
    pub fn sweep(bench: Bench) -> Vec<Record> {
        let mut out = Vec::new();
        for p in bench.sweep() {
            let base = Record::new(bench, p);
            match bench {
                Bench::ParseHeaders
                | Bench::ParseFields
                | Bench::ParseBranches
                | Bench::TablesIndependent
                | Bench::TablesDependent => {
                    out.push(base.clone().with_variant(Variant::Chain));
                    out.push(base.with_variant(Variant::Fused));
                }
                Bench::TableSize | Bench::FlowChurn | Bench::FlowSize => {
                    out.push(base.clone());
                    out.push(Record {
                        prefetch: false,
                        ..base
                    });
                }
                Bench::StateRead | Bench::StateWrite => {
                    out.push(base.clone());
                    out.push(Record {
                        registers: Registers::Different,
                        ..base
                    });
                }
                Bench::FieldWrites => {
                    for w in [
                        Writes::Chained,
                        Writes::Independent,
                        Writes::Arithmetic,
                        Writes::Boolean,
                    ] {
                        out.push(Record {
                            writes: w,
                            ..base.clone()
                        });
                    }
                }
                Bench::SharedRegister => {
                    out.push(base.clone());
                    out.push(Record {
                        share: Share::Sharded,
                        ..base
                    });
                }
                Bench::Checksum | Bench::HeaderAdd | Bench::HeaderRemove => out.push(base),
            }
        }
        out
    }
}
