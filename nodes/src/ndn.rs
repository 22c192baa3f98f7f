//! `ndn-lookup`: longest name-prefix match of NDN Interests.
//!
//! FIB keys are encoded name prefixes (the component TLVs of the first k components, up to
//! 64 bytes) in a [`NameTable`]. The FIB remembers which component counts its names have;
//! only prefixes of those lengths are tried, longest first, and the first hit wins.
//!
//! Two phases per sub-batch of `b` packets (hash and prefetch, then search):
//! 1. each packet's TLVs are walked once (outer TLV, Name, every component: anything
//!    malformed is a counted drop); the hashes of all candidate prefixes come from one
//!    [`PrefixHasher`](pktvec_lookup::hash::PrefixHasher) pass over the name bytes, and the
//!    buckets of the longest few are prefetched;
//! 2. the candidates are searched longest first by the packet's own bytes
//!    ([`NameTable::lookup_bytes_hashed`]: no key copy; a stored key is read only when its
//!    16-bit tag matches). A name with more candidate lengths than phase 1 keeps
//!    ([`CANDIDATES`]) that misses on all of them has its shorter prefixes looked up then,
//!    so the answer is always the longest match.
//!
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
use pktvec_packet::wire::ndn::{
    encode_name, read_tlv, NdnInterest, TLV_DATA, TLV_INTEREST, TLV_NAME,
};
use pktvec_packet::Packet;
use std::fmt::Write as _;
use std::sync::Arc;

/// A name FIB: encoded name prefix → output interface.
pub struct NdnFib {
    table: NameTable<u32>,
    /// Bit k set if some FIB name has k components: only those prefix lengths are tried.
    /// A key holds at most 64 bytes and a component takes at least 2, so k ≤ 32.
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

/// Most candidate prefix lengths one name can have: a candidate is at most
/// [`Name::MAX_LEN`] bytes and a component TLV takes at least 2.
const MAX_LENGTHS: usize = Name::MAX_LEN / 2;

/// The end of the component TLV at `pos` of `name`, inside `name`. One-byte type and
/// length (every component of a usual name) take the fast path.
#[inline(always)]
fn component_end(name: &[u8], pos: usize) -> Option<usize> {
    match name.get(pos..pos.saturating_add(2)) {
        Some(&[t, l]) if t < 253 && l < 253 => {
            let end = pos + 2 + usize::from(l);
            (end <= name.len()).then_some(end)
        }
        _ => tlv_end_slow(name, pos),
    }
}

/// [`read_tlv`]'s value end, for multi-byte types and lengths (and errors).
#[cold]
#[inline(never)]
fn tlv_end_slow(buf: &[u8], pos: usize) -> Option<usize> {
    read_tlv(buf, pos).ok().map(|(_, _, end)| end)
}

/// Walks the component TLVs of `name` (a Name TLV's value) and calls `candidate(end)` for
/// each prefix whose component count is in `lengths` and whose encoding fits a key
/// ([`Name::MAX_LEN`] bytes), shortest first. `None` if a component TLV is malformed:
/// every component is checked, also those past the last candidate.
#[inline(always)]
fn walk_components(name: &[u8], lengths: u64, mut candidate: impl FnMut(usize)) -> Option<()> {
    let mut pos = 0;
    let mut k = 0u32;
    while pos < name.len() {
        let end = component_end(name, pos)?;
        k += 1;
        // end ≤ 64 implies k ≤ 32: a component takes at least 2 bytes.
        if end <= Name::MAX_LEN && (lengths >> (k & 63)) & 1 != 0 {
            candidate(end);
        }
        pos = end;
    }
    Some(())
}

/// The Name TLV's value bounds `(start, end)` in an Interest or Data packet, checking the
/// outer TLV and the Name TLV header (not the components).
#[inline(always)]
fn name_bounds(data: &[u8]) -> Option<(usize, usize)> {
    // Fast path: one-byte types and lengths (packets under 253 bytes).
    if let [t, l, nt, nl, ..] = *data {
        if (u64::from(t) == TLV_INTEREST || u64::from(t) == TLV_DATA)
            && l < 253
            && u64::from(nt) == TLV_NAME
            && nl < 253
        {
            let (end, ne) = (2 + usize::from(l), 4 + usize::from(nl));
            return (end <= data.len() && ne <= end).then_some((4, ne));
        }
    }
    name_bounds_slow(data)
}

#[cold]
#[inline(never)]
fn name_bounds_slow(data: &[u8]) -> Option<(usize, usize)> {
    let (t, v, end) = read_tlv(data, 0).ok()?;
    if t != TLV_INTEREST && t != TLV_DATA {
        return None;
    }
    let (nt, ns, ne) = read_tlv(data.get(..end)?, v).ok()?;
    (nt == TLV_NAME).then_some((ns, ne))
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
            let key = Name::new(&enc).map_err(|_| NdnFibError::TooLong(name.to_string()))?;
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
        self.lookup_encoded(&enc)
    }

    /// Longest-prefix match of an encoded name (the value of a Name TLV: its component
    /// TLVs, as in a packet): the interface of the longest prefix in the FIB, `None` if
    /// there is none or a component TLV is malformed. No allocation; one lookup per
    /// candidate length, longest first, without prefetching (the node's slow path).
    ///
    /// ```
    /// use pktvec_nodes::ndn::NdnFib;
    /// use pktvec_packet::wire::ndn::encode_name;
    /// let fib = NdnFib::from_names([("/com/example", 1)], 4)?;
    /// let mut enc = Vec::new();
    /// encode_name("/com/example/a", &mut enc);
    /// assert_eq!(fib.lookup_encoded(&enc), Some(1));
    /// assert_eq!(fib.lookup_encoded(&enc[..enc.len() - 1]), None); // truncated TLV
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn lookup_encoded(&self, name: &[u8]) -> Option<u32> {
        self.lookup_shorter(name, usize::MAX)
    }

    /// [`lookup_encoded`](Self::lookup_encoded) over the candidate prefixes shorter than
    /// `below` bytes.
    fn lookup_shorter(&self, name: &[u8], below: usize) -> Option<u32> {
        let mut ends = [0u8; MAX_LENGTHS];
        let mut n = 0;
        walk_components(name, self.lengths, |end| {
            if end < below && n < MAX_LENGTHS {
                ends[n] = end as u8;
                n += 1;
            }
        })?;
        ends[..n]
            .iter()
            .rev()
            .find_map(|&e| self.table.lookup_bytes(name.get(..usize::from(e))?))
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

/// Candidate prefixes phase 1 hashes and prefetches per packet (the longest ones); a
/// packet that misses on all of them and has shorter candidates looks those up in phase 2.
pub const CANDIDATES: usize = 4;

/// Phase-one result for one packet: where its name starts and its longest candidate
/// prefixes with their hashes, in a ring of [`CANDIDATES`] slots (the longest at slot
/// `(found - 1) % CANDIDATES`).
#[derive(Clone, Copy, Default)]
struct Candidates {
    hashes: [u64; CANDIDATES],
    /// Prefix ends, relative to `name_start`.
    ends: [u8; CANDIDATES],
    name_start: u16,
    /// Candidates found (all of them; the ring keeps the last [`CANDIDATES`]).
    found: u8,
    malformed: bool,
}

impl Candidates {
    const MALFORMED: Candidates = Candidates {
        hashes: [0; CANDIDATES],
        ends: [0; CANDIDATES],
        name_start: 0,
        found: 0,
        malformed: true,
    };

    /// Walks the packet's TLVs once (every component checked), hashes the candidate
    /// prefixes in the same pass and prefetches their buckets.
    #[inline(always)]
    fn new(data: &[u8], fib: &NdnFib) -> Self {
        let Some((ns, ne)) = name_bounds(data) else {
            return Self::MALFORMED;
        };
        let Ok(name_start) = u16::try_from(ns) else {
            return Self::MALFORMED;
        };
        // The hasher may read past the name (it masks): give it the rest of the packet.
        let rest = data.get(ns..).unwrap_or_default();
        let name = data.get(ns..ne).unwrap_or_default();
        let mut hasher = fib.table.prefix_hasher(rest);
        let mut c = Candidates {
            name_start,
            ..Candidates::default()
        };
        let table = &fib.table;
        let ok = walk_components(name, fib.lengths, |end| {
            let h = Hashed(hasher.prefix(end));
            // What a hit reads: the primary bucket's tag/value line and key lines, and the
            // secondary's first line (where a fifth of the keys of a full table live).
            table.prefetch_bucket_lines(h);
            table.prefetch_secondary(h);
            let slot = usize::from(c.found) % CANDIDATES;
            c.hashes[slot] = h.0;
            c.ends[slot] = end as u8;
            c.found += 1;
        });
        if ok.is_none() {
            return Self::MALFORMED;
        }
        c
    }

    /// The interface of the longest candidate in the FIB (phase 2).
    #[inline(always)]
    fn lookup(&self, data: &[u8], fib: &NdnFib) -> Option<u32> {
        let name = data.get(usize::from(self.name_start)..)?;
        let found = usize::from(self.found);
        let kept = found.min(CANDIDATES);
        for j in 1..=kept {
            let slot = (found - j) % CANDIDATES;
            let key = name.get(..usize::from(self.ends[slot]))?;
            if let Some(port) = fib
                .table
                .lookup_bytes_hashed(key, Hashed(self.hashes[slot]))
            {
                return Some(port);
            }
        }
        if found > kept {
            return Self::lookup_rest(data, fib, self.ends[(found - kept) % CANDIDATES]);
        }
        None
    }

    /// Slow path of a name with more candidates than phase 1 keeps, all of them missed:
    /// the shorter candidates, found by walking the name again.
    #[cold]
    #[inline(never)]
    fn lookup_rest(data: &[u8], fib: &NdnFib, shortest_tried: u8) -> Option<u32> {
        let (ns, ne) = name_bounds(data)?;
        fib.lookup_shorter(data.get(ns..ne)?, usize::from(shortest_tried))
    }
}

impl Node for NdnLookup {
    type Next = NdnNext;
    type Error = NdnError;

    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        let fib = &*self.fib;
        cx.process_sub_batches(
            frame,
            |p| Candidates::new(p.data(), fib),
            |p, c| {
                if c.malformed {
                    return Verdict::Drop(NdnError::Malformed);
                }
                match c.lookup(p.data(), fib) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use pktvec_packet::wire::ndn::{push_tlv, TLV_GENERIC_COMPONENT};
    use proptest::prelude::*;
    use std::collections::HashMap;

    /// An Interest whose name has these component values (any lengths: long ones get
    /// multi-byte TLV lengths), then a nonce.
    fn interest_of(components: &[Vec<u8>]) -> Vec<u8> {
        let mut name = Vec::new();
        for c in components {
            push_tlv(&mut name, TLV_GENERIC_COMPONENT, c);
        }
        let mut inner = Vec::new();
        push_tlv(&mut inner, TLV_NAME, &name);
        push_tlv(&mut inner, 0x0a, &[1, 2, 3, 4]);
        let mut out = Vec::new();
        push_tlv(&mut out, TLV_INTEREST, &inner);
        out
    }

    fn uri(components: &[Vec<u8>]) -> String {
        components
            .iter()
            .map(|c| format!("/{}", String::from_utf8_lossy(c)))
            .collect()
    }

    /// The node's two phases on one packet.
    fn node_lookup(fib: &NdnFib, pkt: &[u8]) -> Result<Option<u32>, ()> {
        let c = Candidates::new(pkt, fib);
        if c.malformed {
            return Err(());
        }
        Ok(c.lookup(pkt, fib))
    }

    /// Longest match by the book: every prefix, longest first, in a HashMap of the FIB's
    /// encoded names.
    fn reference(fib: &HashMap<Vec<u8>, u32>, components: &[Vec<u8>]) -> Option<u32> {
        (1..=components.len()).rev().find_map(|k| {
            let mut enc = Vec::new();
            for c in &components[..k] {
                push_tlv(&mut enc, TLV_GENERIC_COMPONENT, c);
            }
            fib.get(&enc).copied()
        })
    }

    fn component() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            8 => prop::sample::select(vec![b"a".to_vec(), b"bc".to_vec(), b"com".to_vec(), b"x".to_vec()]),
            1 => prop::collection::vec(b'a'..=b'c', 0..12),
            1 => prop::collection::vec(any::<u8>(), 250..300),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        /// Longest match over FIBs with up to ten prefix lengths (more candidates than
        /// phase 1 keeps), long components, names past 64 bytes: the node, `lookup_name`
        /// and `lookup_encoded` agree with the reference.
        #[test]
        fn node_matches_reference(
            routes in prop::collection::vec(prop::collection::vec(component(), 1..10), 0..40),
            names in prop::collection::vec(prop::collection::vec(component(), 0..14), 1..40),
        ) {
            let mut fib_ref = HashMap::new();
            let mut list = Vec::new();
            for (i, r) in routes.iter().enumerate() {
                // Routes the FIB can hold: printable components, ≤ 64 bytes encoded.
                if r.iter().any(|c| c.is_empty() || !c.iter().all(u8::is_ascii_lowercase)) {
                    continue;
                }
                let u = uri(r);
                let mut enc = Vec::new();
                encode_name(&u, &mut enc);
                if enc.len() > Name::MAX_LEN {
                    continue;
                }
                fib_ref.insert(enc, i as u32);
                list.push((u, i as u32));
            }
            let fib = NdnFib::from_names(list.iter().map(|(u, p)| (u.as_str(), *p)), 64).unwrap();
            // Probe with the routes themselves, extended, and with the random names.
            let probes = routes
                .iter()
                .zip(names.iter().cycle())
                .map(|(r, n)| r.iter().chain(n).cloned().collect::<Vec<_>>())
                .chain(names.iter().cloned());
            for comps in probes {
                let want = reference(&fib_ref, &comps);
                let pkt = interest_of(&comps);
                prop_assert_eq!(node_lookup(&fib, &pkt), Ok(want), "{:?}", comps);
                let mut enc = Vec::new();
                for c in &comps {
                    push_tlv(&mut enc, TLV_GENERIC_COMPONENT, c);
                }
                prop_assert_eq!(fib.lookup_encoded(&enc), want);
                if comps.iter().all(|c| !c.is_empty() && c.iter().all(u8::is_ascii_lowercase)) {
                    prop_assert_eq!(fib.lookup_name(&uri(&comps)), want);
                }
            }
        }

        /// Any bytes: never a panic, and malformed exactly when the wire parser says so.
        #[test]
        fn garbage_is_malformed_or_looked_up(
            bytes in prop::collection::vec(any::<u8>(), 0..80),
            mutate in prop::collection::vec((0usize..40, any::<u8>()), 0..4),
        ) {
            let fib = NdnFib::from_names([("/a", 1), ("/a/bc", 2), ("/com/x/a", 3)], 8).unwrap();
            prop_assert_eq!(
                node_lookup(&fib, &bytes).is_err(),
                NdnInterest::new_checked(&bytes[..]).is_err()
            );
            // Valid packets with a byte or two changed.
            let mut pkt = interest_of(&[b"com".to_vec(), b"x".to_vec(), b"a".to_vec(), b"q".to_vec()]);
            for (i, b) in mutate {
                if let Some(x) = pkt.get_mut(i) {
                    *x = b;
                }
            }
            let got = node_lookup(&fib, &pkt);
            prop_assert_eq!(got.is_err(), NdnInterest::new_checked(&pkt[..]).is_err());
            for n in 0..pkt.len() {
                let _ = node_lookup(&fib, &pkt[..n]);
            }
        }
    }

    #[test]
    fn longest_match_with_many_lengths_uses_the_slow_path() {
        let names = ["/a", "/a/a/a/a/a/a/a/b"];
        let fib = NdnFib::from_names(names.iter().map(|n| (*n, 7)), 8).unwrap();
        // Five candidate lengths present? Only 1 and 8: add more to exceed CANDIDATES.
        let more = ["/z/z", "/z/z/z", "/z/z/z/z", "/z/z/z/z/z", "/z/z/z/z/z/z"];
        let fib2 = NdnFib::from_names(names.iter().chain(&more).map(|n| (*n, 7)), 16).unwrap();
        let comps: Vec<Vec<u8>> = (0..10).map(|_| b"a".to_vec()).collect();
        let pkt = interest_of(&comps);
        assert_eq!(node_lookup(&fib, &pkt), Ok(Some(7)));
        assert_eq!(node_lookup(&fib2, &pkt), Ok(Some(7)));
        assert_eq!(fib2.lookup_name("/a/a/a/a/a/a/a/a/a"), Some(7));
        assert_eq!(fib2.lookup_name("/b"), None);
    }
}
