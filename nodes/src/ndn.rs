//! `ndn-lookup`: longest name-prefix match of NDN Interests (seed 000's NDN application).
//!
//! FIB keys are encoded name prefixes (the component TLVs of the first k components, up to
//! 64 bytes). For each packet the node hashes the longest prefix that fits and prefetches its
//! bucket (two-phase over `b` packets); on a miss it tries shorter prefixes one by one.
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
        for (name, port) in routes {
            enc.clear();
            encode_name(name, &mut enc);
            let key = key_of(&enc).ok_or_else(|| NdnFibError::TooLong(name.to_string()))?;
            table.insert(key, port)?;
        }
        Ok(Arc::new(NdnFib { table }))
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
            .rev()
            .filter_map(|&e| key_of(&enc[..e]))
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

/// Number of components of the longest prefix whose encoding fits a key, and the key.
fn longest_key(i: &NdnInterest<&[u8]>) -> Option<(usize, Name)> {
    (1..=i.component_count())
        .rev()
        .find_map(|k| key_of(i.prefix(k)).map(|n| (k, n)))
}

impl Node for NdnLookup {
    type Next = NdnNext;
    type Error = NdnError;

    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        let table = &self.fib.table;
        cx.process_sub_batches(
            frame,
            |p| {
                let Ok(i) = NdnInterest::new_checked(p.data()) else {
                    return (Name::default(), 0u64, 0usize);
                };
                match longest_key(&i) {
                    Some((k, name)) => {
                        let h = table.hash(&name);
                        table.prefetch(h);
                        (name, h.0, k)
                    }
                    None => (Name::default(), 0, 0),
                }
            },
            |p, (name, h, k)| {
                if k == 0 {
                    return match NdnInterest::new_checked(p.data()) {
                        Ok(_) => Verdict::Drop(NdnError::NoRoute),
                        Err(_) => Verdict::Drop(NdnError::Malformed),
                    };
                }
                let mut hit = table.lookup_hashed(&name, Hashed(h));
                if hit.is_none() {
                    if let Ok(i) = NdnInterest::new_checked(p.data()) {
                        hit = (1..k)
                            .rev()
                            .filter_map(|j| key_of(i.prefix(j)))
                            .find_map(|key| table.lookup(&key));
                    }
                }
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
