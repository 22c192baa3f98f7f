//! The path table (matcher): rules on parsed headers and field values → path id, by
//! priority, with a default. Configured from serde (TOML) and replaceable while the
//! batcher runs ([`SharedPathTable`]: readers load an `Arc` per burst, writers swap).
//!
//! ```
//! use pktvec_batcher::parser::{Parsed, ProtocolGraph};
//! use pktvec_batcher::path_table::PathTable;
//! let g = ProtocolGraph::builtin();
//! let t = PathTable::from_toml(&g, r#"
//!     default_path = 9
//!     [[rules]]
//!     path = 1
//!     headers = ["ipv4"]
//!     [[rules]]
//!     path = 2
//!     priority = 10
//!     headers = ["ipv4", "udp"]
//!     fields = [ { field = "udp.dport", value = 53 } ]
//! "#).unwrap();
//! let mut p = Parsed::default();
//! g.parse(&[0u8; 60], &mut p); // EtherType 0: Ethernet only
//! assert_eq!(t.classify(&p), 9);
//! ```

use crate::parser::{Parsed, ProtocolGraph};
use arc_swap::ArcSwap;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// A condition on one field: `(value_of(field) & mask) == value & mask`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldMatch {
    /// `header.field`.
    pub field: String,
    /// Value to compare with.
    pub value: u64,
    /// Mask (all ones: exact match).
    #[serde(default = "all_ones")]
    pub mask: u64,
}

fn all_ones() -> u64 {
    u64::MAX
}

/// One rule.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rule {
    /// Path id given to matching packets.
    pub path: u16,
    /// Higher wins; equal priorities: first listed wins.
    #[serde(default)]
    pub priority: i32,
    /// Header types that must all be present.
    #[serde(default)]
    pub headers: Vec<String>,
    /// Field conditions that must all hold.
    #[serde(default)]
    pub fields: Vec<FieldMatch>,
    /// Match only packets the parser found truncated (true) or only complete ones (false).
    #[serde(default)]
    pub truncated: Option<bool>,
}

/// A path table as configured.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathTableConfig {
    /// Path of packets no rule matches.
    #[serde(default)]
    pub default_path: u16,
    /// Rules.
    #[serde(default)]
    pub rules: Vec<Rule>,
}

/// Errors building a table.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PathTableError {
    /// A header or field name the protocol graph does not define.
    #[error("path table rule {rule}: unknown {what} {name:?}")]
    Unknown {
        /// Rule index.
        rule: usize,
        /// "header" or "field".
        what: &'static str,
        /// The name.
        name: String,
    },
    /// TOML syntax or type error.
    #[error("path table TOML: {0}")]
    Toml(String),
}

#[derive(Clone, Debug)]
struct Compiled {
    path: u16,
    headers: u32,
    valid: u64,
    conds: Vec<(u8, u64, u64)>,
    truncated: Option<bool>,
}

/// A compiled path table.
#[derive(Clone, Debug)]
pub struct PathTable {
    rules: Vec<Compiled>,
    headers_used: u32,
    default_path: u16,
    config: PathTableConfig,
}

impl PathTable {
    /// Compiles `cfg` against the protocol graph's names.
    pub fn new(graph: &ProtocolGraph, cfg: PathTableConfig) -> Result<Self, PathTableError> {
        let mut order: Vec<(usize, &Rule)> = cfg.rules.iter().enumerate().collect();
        order.sort_by_key(|&(i, r)| (std::cmp::Reverse(r.priority), i));
        let mut rules = Vec::with_capacity(order.len());
        for (i, r) in order {
            let mut headers = 0u32;
            for h in &r.headers {
                let idx = graph.header(h).ok_or_else(|| PathTableError::Unknown {
                    rule: i,
                    what: "header",
                    name: h.clone(),
                })?;
                headers |= 1 << idx;
            }
            let mut valid = 0u64;
            let mut conds = Vec::new();
            for f in &r.fields {
                let idx = graph
                    .field(&f.field)
                    .ok_or_else(|| PathTableError::Unknown {
                        rule: i,
                        what: "field",
                        name: f.field.clone(),
                    })?;
                valid |= 1 << idx;
                conds.push((idx, f.value & f.mask, f.mask));
            }
            rules.push(Compiled {
                path: r.path,
                headers,
                valid,
                conds,
                truncated: r.truncated,
            });
        }
        let headers_used = rules.iter().fold(0u32, |a, r| {
            let owners = (0..64u8)
                .filter(|f| r.valid & (1 << f) != 0)
                .fold(0u32, |b, f| b | graph.field_header(f).map_or(0, |h| 1 << h));
            a | r.headers | owners
        });
        Ok(PathTable {
            rules,
            headers_used,
            default_path: cfg.default_path,
            config: cfg,
        })
    }

    /// Compiles a table from TOML.
    pub fn from_toml(graph: &ProtocolGraph, text: &str) -> Result<Self, PathTableError> {
        let cfg = toml::from_str(text).map_err(|e| PathTableError::Toml(e.to_string()))?;
        Self::new(graph, cfg)
    }

    /// One path per header stack that matters to the forwarders: IPv4 (1), IPv6 (2),
    /// ARP (3), the rest (0). VLAN-tagged packets take the path of what they carry.
    pub fn by_network_protocol(graph: &ProtocolGraph) -> Self {
        Self::from_toml(
            graph,
            "default_path = 0\n\
             [[rules]]\npath = 1\nheaders = [\"ipv4\"]\ntruncated = false\n\
             [[rules]]\npath = 2\nheaders = [\"ipv6\"]\ntruncated = false\n\
             [[rules]]\npath = 3\nheaders = [\"arp\"]\ntruncated = false\n",
        )
        .expect("valid built-in rules")
    }

    /// Bit `f` set: some rule reads field `f` (what the parser must extract).
    pub fn fields_used(&self) -> u64 {
        self.rules.iter().fold(0, |a, r| a | r.valid)
    }

    /// Bit `h` set: some rule needs header type `h` (directly or through a field): the
    /// parser walks no further than these.
    pub fn headers_used(&self) -> u32 {
        self.headers_used
    }

    /// The configuration.
    pub fn config(&self) -> &PathTableConfig {
        &self.config
    }

    /// The path of a parsed packet: the first rule (by priority) that holds, else the
    /// default path.
    #[inline]
    pub fn classify(&self, p: &Parsed) -> u16 {
        'rules: for r in &self.rules {
            if p.headers & r.headers != r.headers || p.valid & r.valid != r.valid {
                continue;
            }
            if let Some(t) = r.truncated {
                if t != p.truncated {
                    continue;
                }
            }
            for &(f, v, m) in &r.conds {
                if p.fields[f as usize] & m != v {
                    continue 'rules;
                }
            }
            return r.path;
        }
        self.default_path
    }
}

/// A path table that can be replaced while the batcher runs: the batcher loads it once
/// per burst (no lock), a control thread [`store`](Self::store)s a new one.
#[derive(Clone, Debug)]
pub struct SharedPathTable(Arc<ArcSwap<PathTable>>);

impl SharedPathTable {
    /// Shares `t`.
    pub fn new(t: PathTable) -> Self {
        SharedPathTable(Arc::new(ArcSwap::from_pointee(t)))
    }
    /// The current table.
    #[inline]
    pub fn load(&self) -> arc_swap::Guard<Arc<PathTable>> {
        self.0.load()
    }
    /// Replaces the table; bursts already classifying finish with the old one.
    pub fn store(&self, t: PathTable) {
        self.0.store(Arc::new(t));
    }
}
