//! A programmable header parser: a protocol graph of header types, each with its length
//! (fixed or read from a field), its fields (offset and width) and the field that selects
//! the next header. Ethernet, 802.1Q/QinQ, ARP, IPv4, IPv6, UDP, TCP, ICMP and ICMPv6 are
//! built in ([`ProtocolGraph::builtin`]); other protocols are added by configuration
//! (serde, TOML).
//!
//! ```
//! use pktvec_batcher::parser::{ProtocolGraph, Parsed};
//! let g = ProtocolGraph::builtin();
//! let mut frame = vec![0u8; 70];
//! frame[12..14].copy_from_slice(&[0x86, 0xdd]); // IPv6
//! frame[14] = 0x60;
//! frame[20] = 17; // next header: UDP
//! let mut p = Parsed::default();
//! g.parse(&frame, &mut p);
//! assert!(p.has(g.header("ipv6").unwrap()) && p.has(g.header("udp").unwrap()));
//! assert_eq!(p.field(g.field("ipv6.next_header").unwrap()), Some(17));
//! assert_eq!(p.l3_offset, 14);
//! ```

use serde::{Deserialize, Serialize};

/// Most headers one packet is parsed into.
pub const MAX_DEPTH: usize = 8;
/// Most fields a protocol graph may define (all headers together).
pub const MAX_FIELDS: usize = 64;
/// Most header types.
pub const MAX_HEADERS: usize = 32;

/// How long a header is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Length {
    /// Always this many bytes.
    Fixed(u16),
    /// `((byte[offset] >> shift) & mask) * multiply`, e.g. IPv4's IHL: offset 0, shift 0,
    /// mask 0x0f, multiply 4.
    FromField {
        /// Byte holding the length.
        offset: u16,
        /// Right shift applied to it.
        #[serde(default)]
        shift: u8,
        /// Mask applied after the shift.
        mask: u8,
        /// Unit of the length.
        multiply: u16,
    },
}

/// One field of a header: `bytes` big-endian bytes at `offset` (1..=8 bytes).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldDef {
    /// Name, unique within its header (used as `header.field`).
    pub name: String,
    /// Offset from the header start.
    pub offset: u16,
    /// Width in bytes, 1..=8.
    pub bytes: u8,
}

/// Which header follows, selected by a field's value.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NextDef {
    /// The selecting field (a field of this header).
    pub field: String,
    /// `[value, header name]` pairs; values not listed end the parse.
    pub map: Vec<(u64, String)>,
}

/// One header type.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeaderDef {
    /// Name (`ethernet`, `ipv4`, ...).
    pub name: String,
    /// Length.
    pub length: Length,
    /// Fields to extract.
    #[serde(default)]
    pub fields: Vec<FieldDef>,
    /// The next header, if any.
    #[serde(default)]
    pub next: Option<NextDef>,
    /// Network layer (its offset is recorded as the L3 offset) or transport layer (L4).
    #[serde(default)]
    pub layer: Option<Layer>,
}

/// The layer a header type marks in the buffer metadata.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Layer {
    /// Network (IPv4, IPv6, ARP): `l3_offset`.
    L3,
    /// Transport (UDP, TCP, ICMP): `l4_offset`.
    L4,
}

/// A protocol graph as configured.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProtocolGraphConfig {
    /// The outermost header.
    pub first: String,
    /// Header types.
    pub headers: Vec<HeaderDef>,
}

/// Configuration errors.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ParserError {
    /// A name is used but not defined, or defined twice.
    #[error("protocol graph: {0}")]
    Bad(String),
    /// TOML syntax or type error.
    #[error("protocol graph TOML: {0}")]
    Toml(String),
}

/// How the next header is chosen: (field offset, field bytes, value → header index).
type NextSel = (u16, u8, Vec<(u64, u8)>);

#[derive(Clone, Debug)]
struct Header {
    name: String,
    /// Fixed length, or 0: length from a field (`len_*`).
    len_fixed: u16,
    len_off: u16,
    len_shift: u8,
    len_mask: u8,
    len_mul: u16,
    /// (global field index, offset, bytes)
    fields: Vec<(u8, u16, u8)>,
    /// Bits of `fields`' global indices: skip the loop when none is needed.
    field_mask: u64,
    next: Option<NextSel>,
    layer: Option<Layer>,
}

/// A compiled protocol graph.
#[derive(Clone, Debug)]
pub struct ProtocolGraph {
    first: u8,
    headers: Vec<Header>,
    /// Per header: the headers reachable after it (transitively).
    reach: Vec<u32>,
    /// Per field: the header it belongs to.
    field_header: Vec<u8>,
    field_names: Vec<String>,
    config: ProtocolGraphConfig,
}

/// What [`ProtocolGraph::parse`] found in one packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Parsed {
    /// Bit `h` set: header type `h` present.
    pub headers: u32,
    /// Header types in packet order.
    pub stack: [u8; MAX_DEPTH],
    /// Number of entries in `stack`.
    pub depth: u8,
    /// Bit `f` set: field `f` extracted.
    pub valid: u64,
    /// Field values (meaningful where `valid` says so).
    pub fields: [u64; MAX_FIELDS],
    /// Offset of the network header from the packet start (0 if none).
    pub l3_offset: u16,
    /// Offset of the transport header (0 if none).
    pub l4_offset: u16,
    /// The packet ended inside a header (or a header's length was impossible).
    pub truncated: bool,
}

impl Default for Parsed {
    fn default() -> Self {
        Parsed {
            headers: 0,
            stack: [0; MAX_DEPTH],
            depth: 0,
            valid: 0,
            fields: [0; MAX_FIELDS],
            l3_offset: 0,
            l4_offset: 0,
            truncated: false,
        }
    }
}

impl Parsed {
    /// True if header type `h` was found.
    #[inline]
    pub fn has(&self, h: u8) -> bool {
        self.headers & (1 << h) != 0
    }
    /// The value of field `f`, if it was extracted.
    #[inline]
    pub fn field(&self, f: u8) -> Option<u64> {
        (self.valid & (1 << f) != 0).then(|| self.fields[f as usize])
    }
}

/// The built-in protocol graph, as configuration (also an example of the format).
pub const BUILTIN_TOML: &str = r#"
first = "ethernet"

[[headers]]
name = "ethernet"
length = 14
fields = [ { name = "dst", offset = 0, bytes = 6 }, { name = "src", offset = 6, bytes = 6 },
           { name = "ethertype", offset = 12, bytes = 2 } ]
next = { field = "ethertype", map = [ [0x8100, "vlan"], [0x88a8, "vlan"], [0x0800, "ipv4"],
                                      [0x86dd, "ipv6"], [0x0806, "arp"] ] }

[[headers]]
name = "vlan"
length = 4
fields = [ { name = "tci", offset = 0, bytes = 2 }, { name = "ethertype", offset = 2, bytes = 2 } ]
next = { field = "ethertype", map = [ [0x8100, "vlan"], [0x0800, "ipv4"], [0x86dd, "ipv6"],
                                      [0x0806, "arp"] ] }

[[headers]]
name = "arp"
length = 28
layer = "l3"
fields = [ { name = "oper", offset = 6, bytes = 2 } ]

[[headers]]
name = "ipv4"
length = { offset = 0, mask = 0x0f, multiply = 4 }
layer = "l3"
fields = [ { name = "version_ihl", offset = 0, bytes = 1 }, { name = "frag", offset = 6, bytes = 2 },
           { name = "ttl", offset = 8, bytes = 1 }, { name = "protocol", offset = 9, bytes = 1 },
           { name = "src", offset = 12, bytes = 4 }, { name = "dst", offset = 16, bytes = 4 } ]
next = { field = "protocol", map = [ [6, "tcp"], [17, "udp"], [1, "icmp"] ] }

[[headers]]
name = "ipv6"
length = 40
layer = "l3"
fields = [ { name = "next_header", offset = 6, bytes = 1 }, { name = "hop_limit", offset = 7, bytes = 1 },
           { name = "src_hi", offset = 8, bytes = 8 }, { name = "dst_hi", offset = 24, bytes = 8 } ]
next = { field = "next_header", map = [ [6, "tcp"], [17, "udp"], [58, "icmp6"] ] }

[[headers]]
name = "udp"
length = 8
layer = "l4"
fields = [ { name = "sport", offset = 0, bytes = 2 }, { name = "dport", offset = 2, bytes = 2 } ]

[[headers]]
name = "tcp"
length = { offset = 12, shift = 4, mask = 0x0f, multiply = 4 }
layer = "l4"
fields = [ { name = "sport", offset = 0, bytes = 2 }, { name = "dport", offset = 2, bytes = 2 },
           { name = "flags", offset = 13, bytes = 1 } ]

[[headers]]
name = "icmp"
length = 4
layer = "l4"
fields = [ { name = "type", offset = 0, bytes = 1 } ]

[[headers]]
name = "icmp6"
length = 4
layer = "l4"
fields = [ { name = "type", offset = 0, bytes = 1 } ]
"#;

impl ProtocolGraph {
    /// Ethernet, VLAN/QinQ, ARP, IPv4, IPv6, UDP, TCP, ICMP, ICMPv6 ([`BUILTIN_TOML`]).
    pub fn builtin() -> Self {
        Self::from_toml(BUILTIN_TOML).expect("the built-in protocol graph is valid")
    }

    /// The built-in graph's configuration, to extend with new headers.
    pub fn builtin_config() -> ProtocolGraphConfig {
        toml::from_str(BUILTIN_TOML).expect("the built-in protocol graph is valid")
    }

    /// Compiles a graph from TOML (the format of [`BUILTIN_TOML`]).
    pub fn from_toml(text: &str) -> Result<Self, ParserError> {
        let cfg: ProtocolGraphConfig =
            toml::from_str(text).map_err(|e| ParserError::Toml(e.to_string()))?;
        Self::new(cfg)
    }

    /// Compiles a graph, checking every name.
    pub fn new(cfg: ProtocolGraphConfig) -> Result<Self, ParserError> {
        let bad = |s: String| Err(ParserError::Bad(s));
        if cfg.headers.len() > MAX_HEADERS {
            return bad(format!(
                "{} headers, at most {MAX_HEADERS}",
                cfg.headers.len()
            ));
        }
        let index = |name: &str| cfg.headers.iter().position(|h| h.name == name);
        for (i, h) in cfg.headers.iter().enumerate() {
            if index(&h.name) != Some(i) {
                return bad(format!("header {:?} defined twice", h.name));
            }
        }
        let mut field_names = Vec::new();
        let mut headers = Vec::new();
        for h in &cfg.headers {
            let mut fields = Vec::new();
            for f in &h.fields {
                if !(1..=8).contains(&f.bytes) {
                    return bad(format!("field {}.{}: bytes must be 1..=8", h.name, f.name));
                }
                let full = format!("{}.{}", h.name, f.name);
                if field_names.contains(&full) {
                    return bad(format!("field {full} defined twice"));
                }
                if field_names.len() == MAX_FIELDS {
                    return bad(format!("more than {MAX_FIELDS} fields"));
                }
                fields.push((field_names.len() as u8, f.offset, f.bytes));
                field_names.push(full);
            }
            let next = match &h.next {
                None => None,
                Some(n) => {
                    let Some(f) = h.fields.iter().find(|f| f.name == n.field) else {
                        return bad(format!(
                            "header {}: next field {:?} is not one of its fields",
                            h.name, n.field
                        ));
                    };
                    let mut map = Vec::new();
                    for (v, target) in &n.map {
                        let Some(t) = index(target) else {
                            return bad(format!(
                                "header {}: next header {target:?} is not defined",
                                h.name
                            ));
                        };
                        map.push((*v, t as u8));
                    }
                    Some((f.offset, f.bytes, map))
                }
            };
            let (len_fixed, len_off, len_shift, len_mask, len_mul) = match h.length {
                Length::Fixed(0) => return bad(format!("header {}: length 0", h.name)),
                Length::Fixed(n) => (n, 0, 0, 0, 0),
                Length::FromField { multiply: 0, .. } => {
                    return bad(format!("header {}: length multiply 0", h.name))
                }
                Length::FromField {
                    offset,
                    shift,
                    mask,
                    multiply,
                } => (0, offset, shift.min(7), mask, multiply),
            };
            headers.push(Header {
                name: h.name.clone(),
                len_fixed,
                len_off,
                len_shift,
                len_mask,
                len_mul,
                field_mask: fields.iter().fold(0, |a, f| a | 1u64 << f.0),
                fields,
                next,
                layer: h.layer,
            });
        }
        let Some(first) = index(&cfg.first) else {
            return bad(format!("first header {:?} is not defined", cfg.first));
        };
        // Reachability: iterate to a fixed point (at most MAX_HEADERS rounds).
        let direct: Vec<u32> = headers
            .iter()
            .map(|h| {
                h.next
                    .as_ref()
                    .map_or(0, |(_, _, m)| m.iter().fold(0, |a, &(_, t)| a | 1u32 << t))
            })
            .collect();
        let mut reach = direct.clone();
        loop {
            let next: Vec<u32> = reach
                .iter()
                .map(|&r| {
                    (0..headers.len())
                        .filter(|&t| r & (1 << t) != 0)
                        .fold(r, |a, t| a | direct[t])
                })
                .collect();
            if next == reach {
                break;
            }
            reach = next;
        }
        let field_header = headers
            .iter()
            .enumerate()
            .flat_map(|(h, hd)| hd.fields.iter().map(move |_| h as u8))
            .collect();
        Ok(ProtocolGraph {
            first: first as u8,
            reach,
            field_header,
            headers,
            field_names,
            config: cfg,
        })
    }

    /// The configuration this graph was compiled from.
    pub fn config(&self) -> &ProtocolGraphConfig {
        &self.config
    }

    /// Index of a header type by name.
    pub fn header(&self, name: &str) -> Option<u8> {
        self.headers
            .iter()
            .position(|h| h.name == name)
            .map(|i| i as u8)
    }

    /// Name of header type `h`.
    pub fn header_name(&self, h: u8) -> Option<&str> {
        self.headers.get(h as usize).map(|h| h.name.as_str())
    }

    /// The header field `f` belongs to.
    pub fn field_header(&self, f: u8) -> Option<u8> {
        self.field_header.get(f as usize).copied()
    }

    /// Index of a field by `header.field` name.
    pub fn field(&self, name: &str) -> Option<u8> {
        self.field_names
            .iter()
            .position(|f| f == name)
            .map(|i| i as u8)
    }

    /// Parses `pkt` into `out` (which is reset first), extracting every field. Never reads
    /// out of bounds: a header that does not fit ends the parse with `truncated` set.
    #[inline]
    pub fn parse(&self, pkt: &[u8], out: &mut Parsed) {
        self.parse_fields(pkt, out, u64::MAX, u32::MAX)
    }

    /// Like [`parse`](Self::parse), but extracts only the fields whose bit is set in
    /// `needed` (the path table's [`PathTable::fields_used`](crate::path_table::PathTable::fields_used)),
    /// and stops the walk after a header from which none of `headers` (bits of header
    /// types, [`PathTable::headers_used`](crate::path_table::PathTable::headers_used)) can
    /// follow: `truncated` then speaks of the headers walked.
    #[inline]
    pub fn parse_fields(&self, pkt: &[u8], out: &mut Parsed, needed: u64, headers: u32) {
        out.headers = 0;
        out.depth = 0;
        out.valid = 0;
        out.l3_offset = 0;
        out.l4_offset = 0;
        out.truncated = false;
        let mut h = self.first as usize;
        let mut off = 0usize;
        for depth in 0..MAX_DEPTH {
            let hd = &self.headers[h];
            let len = if hd.len_fixed != 0 {
                hd.len_fixed as usize
            } else {
                match pkt.get(off + hd.len_off as usize) {
                    Some(&b) => ((b >> hd.len_shift) & hd.len_mask) as usize * hd.len_mul as usize,
                    None => {
                        out.truncated = true;
                        return;
                    }
                }
            };
            let Some(hdr) = pkt.get(off..off + len).filter(|_| len != 0) else {
                out.truncated = true;
                return;
            };
            out.headers |= 1 << h;
            out.stack[depth] = h as u8;
            out.depth = depth as u8 + 1;
            match hd.layer {
                Some(Layer::L3) if out.l3_offset == 0 => out.l3_offset = off as u16,
                Some(Layer::L4) if out.l4_offset == 0 => out.l4_offset = off as u16,
                _ => {}
            }
            if needed & hd.field_mask != 0 {
                for &(fi, fo, fb) in &hd.fields {
                    if needed & (1 << fi) != 0 {
                        if let Some(v) = read_be(hdr, fo, fb) {
                            out.fields[fi as usize] = v;
                            out.valid |= 1 << fi;
                        }
                    }
                }
            }
            if self.reach[h] & headers == 0 {
                return;
            }
            let Some((no, nb, map)) = &hd.next else {
                return;
            };
            let Some(v) = read_be(hdr, *no, *nb) else {
                return;
            };
            let Some(&(_, next)) = map.iter().find(|(k, _)| *k == v) else {
                return;
            };
            off += len;
            h = next as usize;
        }
    }
}

/// `bytes` big-endian bytes at `offset` of `hdr`, if they fit.
#[inline(always)]
fn read_be(hdr: &[u8], offset: u16, bytes: u8) -> Option<u64> {
    let o = offset as usize;
    Some(match bytes {
        1 => *hdr.get(o)? as u64,
        2 => u16::from_be_bytes(hdr.get(o..o + 2)?.try_into().ok()?) as u64,
        4 => u32::from_be_bytes(hdr.get(o..o + 4)?.try_into().ok()?) as u64,
        _ => hdr
            .get(o..o + bytes as usize)?
            .iter()
            .fold(0u64, |a, &b| (a << 8) | b as u64),
    })
}
