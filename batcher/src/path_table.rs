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
use crate::queues::MAX_PATHS;
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
    fast: Option<FastPath>,
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
        let mut t = PathTable {
            rules,
            headers_used,
            default_path: cfg.default_path,
            config: cfg,
            fast: None,
        };
        t.fast = FastPath::compile(graph, &t);
        Ok(t)
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

    /// The compiled fast path for common frames, if this table allows one
    /// ([`FastPath::compile`]).
    #[inline]
    pub fn fast_path(&self) -> Option<&FastPath> {
        self.fast.as_ref()
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

/// What the compiled fast path ([`FastPath`]) found in one packet: the same path id and
/// offsets the generic parser and [`PathTable::classify`] give it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FastClass {
    /// Path id (as [`PathTable::classify`] returns it).
    pub path: u16,
    /// L3 offset the generic parser records (0: none).
    pub l3_offset: u16,
    /// What the frame carries: untagged IPv4 with a 20-byte header, IPv6, ARP, or another
    /// EtherType.
    pub l3: FastL3,
}

/// The frame classes the fast path handles, all untagged Ethernet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum FastL3 {
    /// An EtherType the built-in graph does not follow.
    Other = 0,
    /// IPv4 (0x0800), IHL 5, at least 34 bytes.
    Ip4 = 1,
    /// IPv6 (0x86dd), at least 54 bytes.
    Ip6 = 2,
    /// ARP (0x0806), at least 42 bytes.
    Arp = 3,
}

/// A classifier compiled from a path table for the common case: when the table looks only
/// at the Ethernet/VLAN headers, the presence of IPv4/IPv6/ARP, truncation, and the IP
/// protocol / next-header fields (the by-network-protocol table, or tables splitting IP
/// traffic by protocol), an untagged frame is classified with a few loads from fixed
/// offsets and one lookup in a 256-entry table per network protocol. Anything else
/// (VLAN tags, IPv4 options, short frames, tables using other fields or headers, protocol
/// graphs other than the built-in one) returns `None`: the generic parser decides.
///
/// The tables are filled by running the generic parser and [`PathTable::classify`] over
/// one canonical frame per (class, protocol), so the two agree by construction on every
/// frame the fast path accepts: under the conditions above, the generic parse of such a
/// frame differs from the canonical one only in fields the table never reads (a proptest
/// checks it on arbitrary bytes and on built packets).
#[derive(Clone, Debug)]
pub struct FastPath {
    ip4: Box<[u16; 256]>,
    ip6: Box<[u16; 256]>,
    /// `ip4` then `ip6`, with the path ids limited to the batcher's [`MAX_PATHS`], for
    /// [`ip_tables`](Self::ip_tables).
    ip_paths: Box<[u16; 512]>,
    arp: u16,
    /// `None`: the table reads `ethernet.ethertype`, so other EtherTypes need the parser.
    other: Option<u16>,
    l3_ip4: u16,
    l3_ip6: u16,
    l3_arp: u16,
}

pub(crate) const ET_IP4: u16 = 0x0800;
pub(crate) const ET_IP6: u16 = 0x86dd;
const ET_ARP: u16 = 0x0806;

impl FastPath {
    /// Compiles the fast path of `table` over `graph`, if the table and graph allow one.
    pub fn compile(graph: &ProtocolGraph, table: &PathTable) -> Option<Self> {
        if graph.config() != &ProtocolGraph::builtin_config() {
            return None;
        }
        let hdrs = ["ethernet", "vlan", "ipv4", "ipv6", "arp"]
            .iter()
            .try_fold(0u32, |a, n| Some(a | 1 << graph.header(n)?))?;
        if table.headers_used() & !hdrs != 0 {
            return None;
        }
        let allowed = [
            "ethernet.ethertype",
            "vlan.tci",
            "vlan.ethertype",
            "ipv4.protocol",
            "ipv6.next_header",
        ]
        .iter()
        .try_fold(0u64, |a, n| Some(a | 1 << graph.field(n)?))?;
        let used = table.fields_used();
        if used & !allowed != 0 {
            return None;
        }
        let needed = used;
        let headers = table.headers_used();
        let mut p = Parsed::default();
        let mut run = |frame: &[u8]| {
            graph.parse_fields(frame, &mut p, needed, headers);
            (table.classify(&p), p.l3_offset, p.l4_offset, p.truncated)
        };
        let frame = |et: u16, l3_len: usize, proto_at: Option<usize>, proto: u8| {
            let mut f = vec![0u8; 14 + l3_len];
            f[12..14].copy_from_slice(&et.to_be_bytes());
            if et == ET_IP4 {
                f[14] = 0x45;
            } else if et == ET_IP6 {
                f[14] = 0x60;
            }
            if let Some(at) = proto_at {
                f[14 + at] = proto;
            }
            f
        };
        let mut ip4 = Box::new([0u16; 256]);
        let mut ip6 = Box::new([0u16; 256]);
        let (mut l3_ip4, mut l3_ip6) = (0, 0);
        for proto in 0..=255u8 {
            let (path, l3, l4, t) = run(&frame(ET_IP4, 20, Some(9), proto));
            if l4 != 0 || t {
                return None;
            }
            ip4[proto as usize] = path;
            l3_ip4 = l3;
            let (path, l3, l4, t) = run(&frame(ET_IP6, 40, Some(6), proto));
            if l4 != 0 || t {
                return None;
            }
            ip6[proto as usize] = path;
            l3_ip6 = l3;
        }
        let (arp, l3_arp, l4, t) = run(&frame(ET_ARP, 28, None, 0));
        if l4 != 0 || t {
            return None;
        }
        let ethertype = graph.field("ethernet.ethertype")?;
        let other = if used & (1 << ethertype) != 0 {
            None
        } else {
            let (path, l3, l4, t) = run(&frame(0, 0, None, 0));
            if l3 != 0 || l4 != 0 || t {
                return None;
            }
            Some(path)
        };
        let mut ip_paths = Box::new([0u16; 512]);
        for (o, &p) in ip_paths.iter_mut().zip(ip4.iter().chain(ip6.iter())) {
            *o = p.min(MAX_PATHS as u16 - 1);
        }
        Some(FastPath {
            ip_paths,
            ip4,
            ip6,
            arp,
            other,
            l3_ip4,
            l3_ip6,
            l3_arp,
        })
    }

    /// The path ids of untagged IPv4 frames with a 20-byte header by protocol
    /// (`[proto]`) and of IPv6 frames by next header (`[256 + next_header]`), limited to
    /// the batcher's [`MAX_PATHS`], for the batcher's burst loop, which classifies those
    /// frames in place and leaves the rest to [`classify`](Self::classify) and the generic
    /// parser. `None` unless the generic parser records their L3 header at offset 14 (the
    /// loop writes that).
    #[inline]
    pub(crate) fn ip_paths(&self) -> Option<&[u16; 512]> {
        (self.l3_ip4 == 14 && self.l3_ip6 == 14).then_some(&*self.ip_paths)
    }

    /// Classifies an Ethernet frame, or `None` if the generic parser must.
    #[inline(always)]
    pub fn classify(&self, frame: &[u8]) -> Option<FastClass> {
        let h = frame.first_chunk::<54>();
        let et = u16::from_be_bytes([*frame.get(12)?, *frame.get(13)?]);
        match et {
            ET_IP4 => {
                let h = frame.first_chunk::<34>()?;
                if h[14] & 0x0f != 5 {
                    return None;
                }
                Some(FastClass {
                    path: self.ip4[h[23] as usize],
                    l3_offset: self.l3_ip4,
                    l3: FastL3::Ip4,
                })
            }
            ET_IP6 => Some(FastClass {
                path: self.ip6[h?[20] as usize],
                l3_offset: self.l3_ip6,
                l3: FastL3::Ip6,
            }),
            ET_ARP if frame.len() >= 42 => Some(FastClass {
                path: self.arp,
                l3_offset: self.l3_arp,
                l3: FastL3::Arp,
            }),
            ET_ARP | 0x8100 | 0x88a8 => None,
            _ => Some(FastClass {
                path: self.other?,
                l3_offset: 0,
                l3: FastL3::Other,
            }),
        }
    }
}
