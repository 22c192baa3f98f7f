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
//! # Concurrency
//!
//! The FIB ([`NdnFib`]) is shared as `Arc<NdnFib>` by the `ndn-lookup` nodes of every
//! graph (one graph per worker thread) and by the control plane, which adds and removes
//! name prefixes while they forward. It is a [`Shared`] [`NdnTable`]: two copies of the
//! name table and of its set of component counts under **left-right** publication (see
//! [`pktvec_lookup::hash::shared`] for the mechanism).
//!
//! * **Readers:** each `ndn-lookup` node has its own [`NdnReader`] (a per-reader epoch
//!   counter), entered once per vector — three atomic operations per vector, none per
//!   packet. Both phases then run on a plain `&NdnTable`: the same hashes, prefetches and
//!   searches as an unshared table. Readers never block, never retry, and see the names
//!   and the set of component counts of one publish together (a name is never tried at a
//!   length the snapshot does not have, nor missed because its length is not there yet).
//! * **Writers** ([`add`](NdnFib::add), [`remove`](NdnFib::remove), [`apply`](NdnFib::apply)
//!   for a batch published at once) serialise on a mutex, apply their changes to the copy
//!   no reader is in, and publish it with a pointer swap; the other copy takes them at the
//!   next publish, after its last reader has left. Nothing is freed or overwritten under a
//!   reader; a prefix present during a whole interval is found by every lookup in it.
//! * **Cost:** twice the table's memory (100 000 names: 2 × 8.9 MiB) and every change
//!   applied twice; a publish waits for the readers still in the other copy to finish
//!   their vector, so never write while holding a guard on the same thread.
//!
//! ```
//! use pktvec_nodes::ndn::NdnFib;
//! let fib = NdnFib::from_names([("/com/example", 1), ("/com", 2)], 16)?;
//! assert_eq!(fib.lookup_name("/com/example/video/1"), Some(1));
//! assert_eq!(fib.lookup_name("/com/other"), Some(2));
//! assert_eq!(fib.lookup_name("/org"), None);
//!
//! // Live changes while readers (other threads' nodes) look names up.
//! let reader = fib.reader();
//! fib.add("/org/wiki", 3)?;
//! assert_eq!(reader.enter().lookup_name("/org/wiki/page"), Some(3));
//! assert_eq!(fib.remove("/com/example"), Some(1));
//! assert_eq!(reader.enter().lookup_name("/com/example/video/1"), Some(2));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use pktvec_graph::{next_nodes, node_errors, Context, Frame, Node, Verdict};
use pktvec_lookup::hash::shared::{
    Absorb, ReadGuard, Reader, Shared, TableCopy, TableOp, TableOutcome,
};
use pktvec_lookup::hash::{HashError, Hashed, Name, NameTable};
use pktvec_packet::wire::ndn::{
    encode_name, read_tlv, NdnInterest, TLV_DATA, TLV_INTEREST, TLV_NAME,
};
use pktvec_packet::Packet;
use std::fmt::Write as _;
use std::sync::Arc;

/// A name FIB: encoded name prefix → output interface, shared by the `ndn-lookup` nodes of
/// any number of graphs and the control plane (see the [module docs](self)).
pub struct NdnFib {
    shared: Shared<NdnTable, NdnOp>,
}

/// The names of an [`NdnFib`] as one publish left them: what a reader looks up.
#[derive(Clone)]
pub struct NdnTable {
    names: TableCopy<Name, u32, 4>,
    /// Names per component count (a key holds at most 64 bytes and a component takes at
    /// least 2, so a count is at most 32).
    per_len: [u32; MAX_LENGTHS + 1],
    /// Bit k set if some FIB name has k components: only those prefix lengths are tried.
    lengths: u64,
}

/// One reader of an [`NdnFib`], for one thread: [`Reader::enter`] gives the published
/// [`NdnTable`].
pub type NdnReader = Reader<NdnTable, NdnOp>;

/// A change of an [`NdnFib`] in a batch ([`NdnFib::apply`]); names as `/a/b/c`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NdnChange<'a> {
    /// Add a prefix routed to an interface, or move it there.
    Add(&'a str, u32),
    /// Remove a prefix.
    Remove(&'a str),
    /// Remove every prefix.
    Clear,
}

/// An operation on an [`NdnTable`], made by [`NdnFib`] from an [`NdnChange`] (the key
/// encoded, its component count counted once).
#[derive(Clone, Copy, Debug)]
pub struct NdnOp(Op);

#[derive(Clone, Copy, Debug)]
enum Op {
    Add { key: Name, k: u8, port: u32 },
    Remove { key: Name, k: u8 },
    Clear,
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

impl NdnTable {
    fn new(capacity: usize) -> Result<Self, HashError> {
        Ok(NdnTable {
            names: TableCopy::new(NameTable::new(capacity)?),
            per_len: [0; MAX_LENGTHS + 1],
            lengths: 0,
        })
    }

    /// Applies one operation: the name table's result (the previous interface of an added
    /// name, the interface of a removed one).
    fn apply(&mut self, op: &NdnOp) -> Result<Option<u32>, HashError> {
        match op.0 {
            Op::Add { key, k, port } => {
                let r = self.names.apply(&TableOp::Insert(key, port));
                if r == Ok(None) {
                    self.count(k, true);
                }
                r
            }
            Op::Remove { key, k } => {
                let r = self.names.apply(&TableOp::Remove(key));
                if let Ok(Some(_)) = r {
                    self.count(k, false);
                }
                r
            }
            Op::Clear => {
                self.per_len = [0; MAX_LENGTHS + 1];
                self.lengths = 0;
                self.names.apply(&TableOp::Clear)
            }
        }
    }

    /// One name more (`add`) or fewer with `k` components.
    fn count(&mut self, k: u8, add: bool) {
        let k = usize::from(k).min(MAX_LENGTHS);
        let n = &mut self.per_len[k];
        *n = if add {
            n.saturating_add(1)
        } else {
            n.saturating_sub(1)
        };
        if *n == 0 {
            self.lengths &= !(1u64 << k);
        } else {
            self.lengths |= 1u64 << k;
        }
    }

    /// Number of names.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// True if empty.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// Most names the table holds.
    pub fn capacity(&self) -> usize {
        self.names.capacity()
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
    /// let table = fib.read();
    /// assert_eq!(table.lookup_encoded(&enc), Some(1));
    /// assert_eq!(table.lookup_encoded(&enc[..enc.len() - 1]), None); // truncated TLV
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
            .find_map(|&e| self.names.lookup_bytes(name.get(..usize::from(e))?))
    }
}

impl Absorb<NdnOp> for NdnTable {
    fn absorb_first(&mut self, op: &mut NdnOp, _: &Self) {
        // The result is kept by the name table (`TableCopy::last`).
        let _ = self.apply(op);
    }

    fn absorb_second(&mut self, op: NdnOp, _: &Self) {
        let _ = self.apply(&op);
    }

    fn sync_with(&mut self, first: &Self) {
        self.names.sync_with(&first.names);
        self.per_len = first.per_len;
        self.lengths = first.lengths;
    }
}

/// The operation for `change`, its name encoded (too long: an error naming it).
fn op_of(change: NdnChange<'_>) -> Result<NdnOp, NdnFibError> {
    let (name, port) = match change {
        NdnChange::Add(name, port) => (name, Some(port)),
        NdnChange::Remove(name) => (name, None),
        NdnChange::Clear => return Ok(NdnOp(Op::Clear)),
    };
    let mut enc = Vec::new();
    encode_name(name, &mut enc);
    let key = Name::new(&enc).map_err(|_| NdnFibError::TooLong(name.to_string()))?;
    // Encoded in at most 64 bytes, 2 or more per component: at most 32 components.
    let k = name
        .split('/')
        .filter(|c| !c.is_empty())
        .count()
        .min(MAX_LENGTHS) as u8;
    Ok(NdnOp(match port {
        Some(port) => Op::Add { key, k, port },
        None => Op::Remove { key, k },
    }))
}

impl NdnFib {
    /// An empty FIB with room for `capacity` names.
    pub fn with_capacity(capacity: usize) -> Result<Arc<Self>, NdnFibError> {
        Self::from_names([], capacity)
    }

    /// A FIB of these (name, interface) routes, with room for `capacity` names.
    pub fn from_names<'a>(
        routes: impl IntoIterator<Item = (&'a str, u32)>,
        capacity: usize,
    ) -> Result<Arc<Self>, NdnFibError> {
        let mut table = NdnTable::new(capacity)?;
        for (name, port) in routes {
            table.apply(&op_of(NdnChange::Add(name, port))?)?;
        }
        Ok(Arc::new(NdnFib {
            shared: Shared::new(table),
        }))
    }

    /// A reader for one thread (an `ndn-lookup` node makes its own when it is created).
    pub fn reader(&self) -> NdnReader {
        self.shared.reader()
    }

    /// The published table, through this thread's own reader (control plane and tests).
    /// Do not write to the FIB on this thread while the guard lives.
    pub fn read(&self) -> ReadGuard<'_, NdnTable> {
        self.shared.read()
    }

    /// Adds a prefix (or moves it to `port`) and publishes it: its previous interface, if
    /// it had one.
    ///
    /// ```
    /// use pktvec_nodes::ndn::NdnFib;
    /// let fib = NdnFib::with_capacity(4)?;
    /// assert_eq!(fib.add("/a/b", 1)?, None);
    /// assert_eq!(fib.add("/a/b", 2)?, Some(1));
    /// assert_eq!(fib.lookup_name("/a/b/c"), Some(2));
    /// assert!(fib.add(&"/x".repeat(40), 1).is_err()); // longer than 64 bytes encoded
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`NdnFibError::TooLong`], or [`NdnFibError::Table`] for a new name the table has no
    /// room for; the FIB is unchanged.
    pub fn add(&self, name: &str, port: u32) -> Result<Option<u32>, NdnFibError> {
        let op = op_of(NdnChange::Add(name, port))?;
        let mut w = self.shared.write();
        w.append(op);
        w.publish();
        let r = w.published().names.last();
        Ok(r?)
    }

    /// Removes a prefix and publishes that: its interface, if it was there.
    pub fn remove(&self, name: &str) -> Option<u32> {
        // A name too long for a key was never added.
        let op = op_of(NdnChange::Remove(name)).ok()?;
        let mut w = self.shared.write();
        w.append(op);
        w.publish();
        let r = w.published().names.last();
        r.ok().flatten()
    }

    /// Applies a batch of changes in order and publishes them at once: a reader sees the
    /// FIB before the batch or after it. Returns what the batch did.
    ///
    /// ```
    /// use pktvec_nodes::ndn::{NdnChange, NdnFib};
    /// let fib = NdnFib::from_names([("/com", 1)], 8)?;
    /// let done = fib.apply([
    ///     NdnChange::Add("/com/example", 2),
    ///     NdnChange::Add("/org", 3),
    ///     NdnChange::Remove("/com"),
    /// ])?;
    /// assert_eq!((done.inserted, done.removed), (2, 1));
    /// assert_eq!(fib.lookup_name("/com/example/a"), Some(2));
    /// assert_eq!(fib.lookup_name("/com/other"), None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`NdnFibError::TooLong`] for a name of the batch longer than a key: nothing is
    /// published. Inserts the table refuses are counted in
    /// [`failed`](TableOutcome::failed) (the rest of the batch is applied).
    pub fn apply<'a>(
        &self,
        changes: impl IntoIterator<Item = NdnChange<'a>>,
    ) -> Result<TableOutcome, NdnFibError> {
        let ops = changes
            .into_iter()
            .map(op_of)
            .collect::<Result<Vec<_>, _>>()?;
        let mut w = self.shared.write();
        let before = w.published().names.totals();
        w.extend(ops);
        w.publish();
        let after = w.published().names.totals();
        Ok(after.since(&before))
    }

    /// Number of names.
    pub fn len(&self) -> usize {
        self.read().len()
    }

    /// True if empty.
    pub fn is_empty(&self) -> bool {
        self.read().is_empty()
    }

    /// Longest-prefix match of a name given as `/a/b/c` (control plane and tests).
    pub fn lookup_name(&self, name: &str) -> Option<u32> {
        self.read().lookup_name(name)
    }

    /// Longest-prefix match of an encoded name; see [`NdnTable::lookup_encoded`].
    pub fn lookup_encoded(&self, name: &[u8]) -> Option<u32> {
        self.read().lookup_encoded(name)
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
    reader: NdnReader,
}

impl NdnLookup {
    /// A lookup node over a shared FIB (with its own reader).
    pub fn new(fib: Arc<NdnFib>) -> Self {
        NdnLookup {
            reader: fib.reader(),
        }
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
    fn new(data: &[u8], fib: &NdnTable) -> Self {
        let Some((ns, ne)) = name_bounds(data) else {
            return Self::MALFORMED;
        };
        let Ok(name_start) = u16::try_from(ns) else {
            return Self::MALFORMED;
        };
        // The hasher may read past the name (it masks): give it the rest of the packet.
        let rest = data.get(ns..).unwrap_or_default();
        let name = data.get(ns..ne).unwrap_or_default();
        let table: &NameTable<u32> = &fib.names;
        let mut hasher = table.prefix_hasher(rest);
        let mut c = Candidates {
            name_start,
            ..Candidates::default()
        };
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
    fn lookup(&self, data: &[u8], fib: &NdnTable) -> Option<u32> {
        let name = data.get(usize::from(self.name_start)..)?;
        let found = usize::from(self.found);
        let kept = found.min(CANDIDATES);
        for j in 1..=kept {
            let slot = (found - j) % CANDIDATES;
            let key = name.get(..usize::from(self.ends[slot]))?;
            if let Some(port) = fib
                .names
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
    fn lookup_rest(data: &[u8], fib: &NdnTable, shortest_tried: u8) -> Option<u32> {
        let (ns, ne) = name_bounds(data)?;
        fib.lookup_shorter(data.get(ns..ne)?, usize::from(shortest_tried))
    }
}

impl Node for NdnLookup {
    type Next = NdnNext;
    type Error = NdnError;

    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        // One guard for the vector: both phases on one published table.
        let guard = self.reader.enter();
        let fib: &NdnTable = &guard;
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
        let table = fib.read();
        let c = Candidates::new(pkt, &table);
        if c.malformed {
            return Err(());
        }
        Ok(c.lookup(pkt, &table))
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
