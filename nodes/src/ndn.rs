//! `ndn-lookup`: longest name-prefix match of NDN Interests (seed 000's NDN application).
//!
//! FIB keys are encoded name prefixes (the component TLVs of the first k components, up to
//! 64 bytes). The FIB remembers which component counts its names have. In the first phase
//! (over `b` packets) the node parses each name once, hashes the prefixes of those lengths
//! (at most six, longest first) and prefetches all their buckets; the second phase walks them
//! from the longest until one is in the FIB.
//! The packet must start at the NDN TLV (as `ethernet-input` leaves it).
//!
//! ```
//! use pktvec_nodes::ndn::NdnFib;
//! let fib = NdnFib::from_names([("/com/example", 1), ("/com", 2)], 16)?;
//! assert_eq!(fib.lookup_name("/com/example/video/1"), Some(1));
//! assert_eq!(fib.lookup_name("/com/other"), Some(2));
//! assert_eq!(fib.lookup_name("/org"), None);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use pktvec_graph::{next_nodes, node_errors, Context, Frame, Node, Verdict};
use pktvec_lookup::hash::{Hashed, Name, NameTable};
use pktvec_packet::wire::ndn::{encode_name, read_tlv, NdnInterest};
use pktvec_packet::Packet;
use std::fmt::Write as _;
use std::sync::Arc;

/// A name FIB: encoded name prefix → output interface.
pub struct NdnFib {
    table: NameTable<u32>,
    /// Bit k set if some FIB name has k components: only those prefix lengths are tried.
    lengths: u64,
}

/// Why a FIB could not be built.
#[derive(Debug, thiserror::Error)]
pub enum NdnFibError {
    /// The encoded name is longer than a key can hold.
    #[error("name {0:?} is longer than 64 bytes encoded")]
    TooLong(String),
    /// The table refused an insert.
    #[error("name table: {0}")]
    Table(#[from] pktvec_lookup::hash::HashError),
}

fn key_of(encoded: &[u8]) -> Option<Name> {
    Name::new(encoded).ok()
}

impl NdnFib {
    /// A FIB of these (name, interface) routes, with room for `capacity` names.
    pub fn from_names<'a>(
        routes: impl IntoIterator<Item = (&'a str, u32)>,
        capacity: usize,
    ) -> Result<Arc<Self>, NdnFibError> {
        let mut table = NameTable::new(capacity)?;
        let mut enc = Vec::new();
        let mut lengths = 0u64;
        for (name, port) in routes {
            enc.clear();
            encode_name(name, &mut enc);
            let key = key_of(&enc).ok_or_else(|| NdnFibError::TooLong(name.to_string()))?;
            table.insert(key, port)?;
            let k = name.split('/').filter(|c| !c.is_empty()).count();
            lengths |= 1u64 << k.min(63);
        }
        Ok(Arc::new(NdnFib { table, lengths }))
    }

    /// Number of names.
    pub fn len(&self) -> usize {
        self.table.len()
    }

    /// True if empty.
    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    /// Longest-prefix match of a name given as `/a/b/c` (control plane and tests).
    pub fn lookup_name(&self, name: &str) -> Option<u32> {
        let mut enc = Vec::new();
        encode_name(name, &mut enc);
        let mut ends = Vec::new();
        let mut pos = 0;
        while let Ok((_, _, end)) = read_tlv(&enc, pos) {
            ends.push(end);
            pos = end;
            if pos >= enc.len() {
                break;
            }
        }
        ends.iter()
            .enumerate()
            .rev()
            .filter(|(k, _)| self.lengths & (1u64 << (k + 1).min(63)) != 0)
            .filter_map(|(_, &e)| key_of(&enc[..e]))
            .find_map(|k| self.table.lookup(&k))
    }
}

next_nodes! {
    /// Arcs of `ndn-lookup`.
    pub enum NdnNext {
        /// Interests with a route.
        Output = "interface-output",
    }
}

node_errors! {
    /// Drop reasons of `ndn-lookup`.
    pub enum NdnError {
        /// Not a well-formed Interest or Data packet.
        Malformed = "malformed ndn packet",
        /// No prefix of the name is in the FIB.
        NoRoute = "no route for name",
    }
}

/// The `ndn-lookup` node.
pub struct NdnLookup {
    fib: Arc<NdnFib>,
}

impl NdnLookup {
    /// A lookup node over a shared FIB.
    pub fn new(fib: Arc<NdnFib>) -> Self {
        NdnLookup { fib }
    }
}

/// Most name components considered (longer names match on their first 16).
const MAX_COMPONENTS: usize = 16;
/// Most prefixes tried per packet, longest first.
const MAX_CANDIDATES: usize = 6;

/// Phase-one result for one packet: the candidate prefixes and their hashes.
#[derive(Clone, Copy, Default)]
struct Candidates {
    malformed: bool,
    n: u8,
    name_offset: u16,
    ends: [u16; MAX_CANDIDATES],
    hashes: [u64; MAX_CANDIDATES],
}

impl Node for NdnLookup {
    type Next = NdnNext;
    type Error = NdnError;

    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        let table = &self.fib.table;
        let lengths = self.fib.lengths;
        cx.process_sub_batches(
            frame,
            |p| {
                // One parse; hash every candidate prefix whose length some FIB name has
                // (longest first) and prefetch all their buckets, so the longest-prefix walk
                // in phase two hits the cache.
                let mut c = Candidates::default();
                let Ok(i) = NdnInterest::new_checked(p.data()) else {
                    c.malformed = true;
                    return c;
                };
                let mut ends = [0u16; MAX_COMPONENTS];
                let n = i.component_ends(&mut ends);
                let name = i.name_bytes();
                c.name_offset = i.name_offset() as u16;
                for k in (0..n).rev() {
                    if lengths & (1u64 << (k + 1)) == 0 {
                        continue;
                    }
                    let end = ends[k] as usize;
                    let Some(key) = key_of(&name[..end]) else {
                        continue;
                    };
                    let h = table.hash(&key);
                    table.prefetch(h);
                    c.ends[c.n as usize] = end as u16;
                    c.hashes[c.n as usize] = h.0;
                    c.n += 1;
                    if c.n as usize == MAX_CANDIDATES {
                        break;
                    }
                }
                c
            },
            |p, c| {
                if c.malformed {
                    return Verdict::Drop(NdnError::Malformed);
                }
                let data = p.data();
                let start = c.name_offset as usize;
                let hit = (0..c.n as usize).find_map(|j| {
                    let key = key_of(data.get(start..start + c.ends[j] as usize)?)?;
                    table.lookup_hashed(&key, Hashed(c.hashes[j]))
                });
                match hit {
                    Some(port) => {
                        p.meta_mut().tx_if = port as u16;
                        Verdict::Next(NdnNext::Output)
                    }
                    None => Verdict::Drop(NdnError::NoRoute),
                }
            },
        );
    }

    fn format_trace(&self, pkt: Packet<'_>, out: &mut String) {
        match NdnInterest::new_checked(pkt.data()) {
            Ok(i) => {
                out.push_str("NDN name ");
                for c in i.components() {
                    let _ = write!(out, "/{}", String::from_utf8_lossy(c));
                }
            }
            Err(e) => {
                let _ = write!(out, "NDN: malformed ({e})");
            }
        }
    }
}
