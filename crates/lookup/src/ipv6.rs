//! IPv6 longest-prefix match: a 16-bit direct first level followed by a level- and
//! path-compressed multibit trie ([`Lpm6`]).
//!
//! This is a compressed trie ("merge a child with its parent when it is the only child",
//! after the seed paper on batching), pushed further:
//!
//! * **First level**: a direct table of 2^16 entries (256 KiB, so it stays in L2). Prefixes of
//!   length ≤ 16 are expanded into it, as DIR-24-8 does.
//! * **Multibit nodes**: below the first level each node indexes `k` bits (4 ≤ `k` ≤ 16) with a
//!   flat array of 2^k entries, 64-byte aligned. The stride is chosen per node from how many of
//!   the 2^k slots its prefixes fill (level compression), so dense regions of a real BGP table
//!   are crossed in one step and sparse ones cost one cache line; a node is then widened
//!   where the slots it adds save enough accesses below it (a node over an ISP's /32 that
//!   reaches its /48s ends a level early for every key under them). On the real tier-1
//!   table a lookup then reads 1.94 lines after the first level instead of 2.57, for 36 MiB
//!   instead of 10 (`rte_lpm6`: 113 MiB).
//! * **Leaves** (path compression): a subtree that holds a single prefix is one 32-byte record
//!   holding the whole prefix, its next hop and the answer to give if the key does not match
//!   it. A chain of single-child trie nodes of any length costs one memory access.
//! * **Skip records** (path compression inside the trie): where all prefixes of a subtree share
//!   more bits, a record checks those bits at once and jumps to the node that separates them,
//!   unless one node wide enough to reach past those bits costs less (counted as above).
//!
//! With 200,000 random /48–/64 prefixes a lookup reads the first level (L2-resident) and then
//! usually one or two cache lines, where DPDK's `rte_lpm6` reads its 64 MiB `tbl24` and then
//! 3–5 `tbl8` groups. Every entry is 4 bytes: bit 31 clear means "final answer" (a next hop,
//! or none), set means "pointer" (to a node, a leaf or a skip record).
//!
//! Updates keep a control-plane copy of the routes (a `BTreeMap`) and rebuild the smallest
//! subtree holding the changed prefix: the walk follows multibit nodes while the prefix lies
//! under one child, and where it ends inside a node the slots it spans are refilled in one
//! pass over the routes below it; a prefix of length ≤ 16 rebuilds the 2^(16-len)
//! first-level slots it covers. The route-updates benchmark times the changes of a real
//! update stream (`docs/results/live-updates.md`); a change that grows the node array
//! copies it (milliseconds, once per doubling). [`Lpm6::extend`] loads many routes and
//! rebuilds each touched first-level slot once (tens of milliseconds for a full table). No input
//! panics: invalid lengths, oversized next hops and mismatched slice lengths are
//! [`Lpm6Error`]s.
//!
//! # Concurrency
//!
//! An [`Lpm6`]'s lookups take `&self` and its updates `&mut self`: on its own it is not
//! changed while other threads look it up. For a FIB that worker threads look up while a
//! control thread adds and deletes routes, use [`SharedLpm6`] ([`shared`]): two copies of
//! the table under left-right publication, where readers never block or retry and see every
//! change whole, at the cost of twice the memory and every change applied twice.
//!
//! ```
//! use pktvec_lookup::ipv6::Lpm6;
//! use std::net::Ipv6Addr;
//!
//! let mut t = Lpm6::new();
//! t.add("2001:db8::".parse::<Ipv6Addr>().unwrap(), 32, 1).unwrap();
//! t.add("2001:db8:1::".parse::<Ipv6Addr>().unwrap(), 48, 2).unwrap();
//! assert_eq!(t.lookup("2001:db8:1::5".parse::<Ipv6Addr>().unwrap()), Some(2));
//! assert_eq!(t.lookup("2001:db8:2::5".parse::<Ipv6Addr>().unwrap()), Some(1));
//! assert_eq!(t.lookup("2001:db9::".parse::<Ipv6Addr>().unwrap()), None);
//!
//! // A vector of keys, looked up with every key's next node prefetched per round.
//! let keys: Vec<u128> = vec![0x2001_0db8_0001_u128 << 80, 0x2001_0db8_0002_u128 << 80];
//! let mut out = vec![None; keys.len()];
//! t.lookup_vector(&keys, &mut out).unwrap();
//! assert_eq!(out, vec![Some(2), Some(1)]);
//! ```

use pktvec_packet::prefetch::prefetch_index;
use std::collections::BTreeMap;
use std::fmt;

pub mod shared;

pub use shared::{Lpm6Copy, Lpm6Op, Lpm6Reader, SharedLpm6};

/// Bits resolved by the direct first level.
pub const ROOT_BITS: u32 = 16;
/// Largest next-hop id the table stores (ids are 31-bit; `0x7fff_ffff` is reserved).
pub const MAX_NEXT_HOP: u32 = 0x7fff_fffe;
/// Largest number of keys [`Lpm6::lookup_vector`] keeps in flight at once; longer slices
/// are processed in chunks of this size.
pub const VECTOR_MAX: usize = 256;

const MIN_STRIDE: u32 = 4;
const MAX_STRIDE: u32 = 16;
/// A node of stride `k` is used when its prefixes fill at least 1/FILL_DEN of its slots...
const FILL_DEN: usize = 4;
/// ...or when it has at most BUDGET slots per prefix below it (so shallow nodes over many
/// prefixes take wide strides: fewer levels for a real table at a bounded memory cost).
const BUDGET: usize = 8;
/// A node is then widened past that stride where its extra slots buy fewer accesses below
/// it: one more line of slots (16) is worth [`GAIN_LINES`] fewer prefix-accesses (see
/// `Lpm6::below_cost`)...
const GAIN_LINES: u64 = 32;
/// ...up to WIDE_BUDGET slots per prefix below it.
const WIDE_BUDGET: usize = 256;
/// Shortest run of shared bits worth a skip record.
const MIN_SKIP: u32 = 4;

// Entry encoding (u32).
const NONE: u32 = 0x7fff_ffff;
const PTR: u32 = 1 << 31;
const REC: u32 = 1 << 30; // with PTR: a record (leaf or skip), else a node
const SKIP: u32 = 1 << 29; // with PTR|REC: a skip record, else a leaf
const REC_IDX: u32 = SKIP - 1;
const NODE_K_SHIFT: u32 = 26;
const NODE_IDX: u32 = (1 << NODE_K_SHIFT) - 1;

/// Errors of [`Lpm6`] operations.
///
/// ```
/// use pktvec_lookup::ipv6::{Lpm6, Lpm6Error};
/// let mut t = Lpm6::new();
/// assert_eq!(t.add(0u128, 129, 1), Err(Lpm6Error::BadLength(129)));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lpm6Error {
    /// A prefix length above 128.
    BadLength(u8),
    /// A next hop above [`MAX_NEXT_HOP`].
    NextHopTooLarge(u32),
    /// Output slice length differs from the key slice length.
    LengthMismatch {
        /// Number of keys.
        keys: usize,
        /// Number of output slots.
        out: usize,
    },
    /// The trie ran out of index space (more than 2^26 node lines or 2^29 records).
    Full,
}

impl fmt::Display for Lpm6Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Lpm6Error::BadLength(l) => write!(f, "prefix length {l} is above 128"),
            Lpm6Error::NextHopTooLarge(n) => {
                write!(f, "next hop {n} is above the maximum {MAX_NEXT_HOP}")
            }
            Lpm6Error::LengthMismatch { keys, out } => {
                write!(f, "{keys} keys but {out} output slots")
            }
            Lpm6Error::Full => write!(f, "IPv6 LPM index space exhausted"),
        }
    }
}

impl std::error::Error for Lpm6Error {}

/// One cache line of node entries.
#[derive(Clone, Copy, bytemuck::Zeroable, bytemuck::Pod)]
#[repr(C, align(64))]
struct Line([u32; 16]);

/// A leaf (`len`, `a` = next hop, `b` = answer on mismatch) or a skip record (`len` = bit
/// position of the next node, `a` = entry of that node, `b` = answer on mismatch). `addr`
/// holds the prefix bits, zero beyond `len`.
#[derive(Clone, Copy, Default)]
#[repr(C, align(32))]
struct Rec {
    addr: u128,
    a: u32,
    b: u32,
    len: u8,
}

/// Size and shape of an [`Lpm6`], from [`Lpm6::stats`].
///
/// ```
/// let mut t = pktvec_lookup::ipv6::Lpm6::new();
/// t.add(0x2001_0db8u128 << 96, 32, 7).unwrap();
/// let s = t.stats();
/// assert_eq!(s.routes, 1);
/// assert!(s.lookup_bytes >= 256 * 1024);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Lpm6Stats {
    /// Routes stored.
    pub routes: usize,
    /// Multibit nodes in use.
    pub nodes: usize,
    /// Cache lines (64 B) of node entries in use.
    pub node_lines: usize,
    /// Leaf records in use.
    pub leaves: usize,
    /// Skip records in use.
    pub skips: usize,
    /// Bytes allocated for the lookup structure (first level, nodes, records), including
    /// free-listed space.
    pub lookup_bytes: usize,
    /// Estimated bytes of the control-plane route map (a `BTreeMap` entry is counted as
    /// 40 bytes: 17 B key, 4 B value, node overhead).
    pub control_bytes: usize,
}

impl Lpm6Stats {
    /// Lookup-structure bytes per stored route (0 for an empty table).
    ///
    /// ```
    /// let t = pktvec_lookup::ipv6::Lpm6::new();
    /// assert_eq!(t.stats().bytes_per_route(), 0.0);
    /// ```
    pub fn bytes_per_route(&self) -> f64 {
        if self.routes == 0 {
            0.0
        } else {
            self.lookup_bytes as f64 / self.routes as f64
        }
    }
}

/// Where an entry lives: a first-level slot or a flat node-slot index.
#[derive(Clone, Copy)]
enum Loc {
    Root(usize),
    Slot(usize),
    /// The entry a skip record jumps to (its `a`).
    Skip(u32),
}

/// Where a key stands in the vector walk: the entry to act on and the bits consumed.
#[derive(Clone, Copy)]
enum Step {
    Done(Option<u32>),
    Next(u32, u32),
}

/// IPv6 longest-prefix-match table: next-hop ids (`u32` up to [`MAX_NEXT_HOP`]) per prefix.
/// See the [module documentation](self) for the structure.
///
/// ```
/// use pktvec_lookup::ipv6::Lpm6;
/// let mut t = Lpm6::new();
/// t.add(0u128, 0, 9).unwrap(); // default route
/// t.add(0xfe80u128 << 112, 10, 3).unwrap();
/// assert_eq!(t.lookup(0xfe80u128 << 112 | 1), Some(3));
/// assert_eq!(t.lookup(1u128), Some(9));
/// assert_eq!(t.delete(0u128, 0).unwrap(), Some(9));
/// assert_eq!(t.lookup(1u128), None);
/// ```
#[derive(Clone)]
pub struct Lpm6 {
    routes: BTreeMap<(u128, u8), u32>,
    /// Routes per prefix length (to skip empty lengths when computing slot defaults).
    per_len: [u32; 129],
    root: Vec<u32>,
    lines: Vec<Line>,
    /// Free line runs per stride `k` (index `k`), by first line.
    free_lines: Vec<Vec<u32>>,
    recs: Vec<Rec>,
    free_recs: Vec<u32>,
    nodes_in_use: usize,
    lines_in_use: usize,
    leaves_in_use: usize,
    skips_in_use: usize,
}

impl Default for Lpm6 {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for Lpm6 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lpm6")
            .field("stats", &self.stats())
            .finish()
    }
}

#[inline(always)]
fn mask(len: u32) -> u128 {
    if len == 0 {
        0
    } else {
        !0u128 << (128 - len.min(128))
    }
}

#[inline(always)]
fn chunk(key: u128, pos: u32, k: u32) -> usize {
    // pos + k <= 128 and k >= 1 by construction.
    ((key << pos) >> (128 - k)) as usize
}

/// Cache lines of slots in a node of stride `k`.
fn node_lines(k: u32) -> u64 {
    ((1u64 << k) / 16).max(1)
}

/// Whether a node at bit `pos` may have stride `k`: it may not stop 1–3 bits short of bit
/// 128, so every node below can again index at least [`MIN_STRIDE`] bits.
fn stride_fits(pos: u32, k: u32) -> bool {
    pos + k <= 128 - MIN_STRIDE || pos + k == 128
}

#[inline(always)]
fn decode_final(e: u32) -> Option<u32> {
    if e == NONE {
        None
    } else {
        Some(e)
    }
}

/// A prefix being placed by the builder.
#[derive(Clone, Copy, Debug)]
struct P {
    addr: u128,
    len: u32,
    nh: u32,
}

impl Lpm6 {
    /// An empty table (the first level, 256 KiB, is allocated at once).
    ///
    /// ```
    /// let t = pktvec_lookup::ipv6::Lpm6::new();
    /// assert!(t.is_empty());
    /// assert_eq!(t.lookup(42u128), None);
    /// ```
    pub fn new() -> Self {
        Lpm6 {
            routes: BTreeMap::new(),
            per_len: [0; 129],
            root: vec![NONE; 1 << ROOT_BITS],
            lines: Vec::new(),
            free_lines: vec![Vec::new(); MAX_STRIDE as usize + 1],
            recs: Vec::new(),
            free_recs: Vec::new(),
            nodes_in_use: 0,
            lines_in_use: 0,
            leaves_in_use: 0,
            skips_in_use: 0,
        }
    }

    /// Builds a table from `(address, length, next hop)` triples (later duplicates replace
    /// earlier ones); each touched first-level slot is built once.
    ///
    /// ```
    /// use pktvec_lookup::ipv6::Lpm6;
    /// let t = Lpm6::from_routes([(1u128 << 127, 1, 5), (0u128, 1, 6)]).unwrap();
    /// assert_eq!(t.lookup(u128::MAX), Some(5));
    /// assert_eq!(t.lookup(0u128), Some(6));
    /// ```
    pub fn from_routes<A, I>(routes: I) -> Result<Self, Lpm6Error>
    where
        A: Into<u128>,
        I: IntoIterator<Item = (A, u8, u32)>,
    {
        let mut t = Lpm6::new();
        t.extend(routes)?;
        Ok(t)
    }

    /// Number of routes stored.
    ///
    /// ```
    /// let mut t = pktvec_lookup::ipv6::Lpm6::new();
    /// t.add(0u128, 8, 1).unwrap();
    /// t.add(0u128, 8, 2).unwrap(); // replaces
    /// assert_eq!(t.len(), 1);
    /// ```
    pub fn len(&self) -> usize {
        self.routes.len()
    }

    /// True when no route is stored.
    ///
    /// ```
    /// assert!(pktvec_lookup::ipv6::Lpm6::new().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.routes.is_empty()
    }

    /// The next hop stored for exactly `addr/len` (host bits of `addr` are ignored).
    ///
    /// ```
    /// let mut t = pktvec_lookup::ipv6::Lpm6::new();
    /// t.add(0xabcdu128 << 112, 16, 4).unwrap();
    /// assert_eq!(t.get(0xabcdu128 << 112 | 5, 16), Ok(Some(4)));
    /// assert_eq!(t.get(0xabcdu128 << 112, 17), Ok(None));
    /// ```
    pub fn get(&self, addr: impl Into<u128>, len: u8) -> Result<Option<u32>, Lpm6Error> {
        if len > 128 {
            return Err(Lpm6Error::BadLength(len));
        }
        let a = addr.into() & mask(len as u32);
        Ok(self.routes.get(&(a, len)).copied())
    }

    /// Iterates over the stored routes as `(address, length, next hop)`, in address order.
    ///
    /// ```
    /// let t = pktvec_lookup::ipv6::Lpm6::from_routes([(7u128 << 120, 8, 1)]).unwrap();
    /// assert_eq!(t.routes().collect::<Vec<_>>(), vec![(7u128 << 120, 8, 1)]);
    /// ```
    pub fn routes(&self) -> impl Iterator<Item = (u128, u8, u32)> + '_ {
        self.routes.iter().map(|(&(a, l), &nh)| (a, l, nh))
    }

    /// Adds `addr/len → next_hop` (host bits of `addr` are ignored) and returns the next hop
    /// it replaced, if the prefix was already present.
    ///
    /// ```
    /// let mut t = pktvec_lookup::ipv6::Lpm6::new();
    /// assert_eq!(t.add(0x2001u128 << 112, 16, 1), Ok(None));
    /// assert_eq!(t.add(0x2001u128 << 112, 16, 2), Ok(Some(1)));
    /// assert!(t.add(0u128, 200, 1).is_err());
    /// assert!(t.add(0u128, 8, u32::MAX).is_err());
    /// ```
    pub fn add(
        &mut self,
        addr: impl Into<u128>,
        len: u8,
        next_hop: u32,
    ) -> Result<Option<u32>, Lpm6Error> {
        let key = Self::check(addr.into(), len, next_hop)?;
        let old = self.routes.insert(key, next_hop);
        if old.is_none() {
            self.per_len[len as usize] += 1;
        }
        if old != Some(next_hop) {
            self.rebuild_range(key.0, len)?;
        }
        Ok(old)
    }

    /// Removes `addr/len` and returns its next hop, or `Ok(None)` if it was not present.
    ///
    /// ```
    /// let mut t = pktvec_lookup::ipv6::Lpm6::new();
    /// t.add(0x2001u128 << 112, 16, 1).unwrap();
    /// assert_eq!(t.delete(0x2001u128 << 112, 16), Ok(Some(1)));
    /// assert_eq!(t.delete(0x2001u128 << 112, 16), Ok(None));
    /// assert_eq!(t.lookup(0x2001u128 << 112), None);
    /// ```
    pub fn delete(&mut self, addr: impl Into<u128>, len: u8) -> Result<Option<u32>, Lpm6Error> {
        if len > 128 {
            return Err(Lpm6Error::BadLength(len));
        }
        let a = addr.into() & mask(len as u32);
        let old = self.routes.remove(&(a, len));
        if old.is_some() {
            self.per_len[len as usize] -= 1;
            self.rebuild_range(a, len)?;
        }
        Ok(old)
    }

    /// Adds many routes (replacing existing ones), rebuilding each touched first-level slot
    /// once. On an error no route of the batch is stored.
    ///
    /// ```
    /// let mut t = pktvec_lookup::ipv6::Lpm6::new();
    /// t.extend((0..100u128).map(|i| (i << 80 | 0x2001u128 << 112, 48u8, i as u32))).unwrap();
    /// assert_eq!(t.len(), 100);
    /// assert_eq!(t.lookup(42u128 << 80 | 0x2001u128 << 112 | 1), Some(42));
    /// ```
    pub fn extend<A, I>(&mut self, routes: I) -> Result<(), Lpm6Error>
    where
        A: Into<u128>,
        I: IntoIterator<Item = (A, u8, u32)>,
    {
        let mut batch = Vec::new();
        for (a, len, nh) in routes {
            batch.push((Self::check(a.into(), len, nh)?, nh));
        }
        let mut dirty = vec![false; 1 << ROOT_BITS];
        for &((a, len), nh) in &batch {
            if self.routes.insert((a, len), nh).is_none() {
                self.per_len[len as usize] += 1;
            }
            let (lo, n) = Self::slot_range(a, len);
            dirty[lo..lo + n].iter_mut().for_each(|d| *d = true);
        }
        for (slot, d) in dirty.iter().enumerate() {
            if *d {
                self.rebuild_slot(slot)?;
            }
        }
        Ok(())
    }

    fn check(addr: u128, len: u8, nh: u32) -> Result<(u128, u8), Lpm6Error> {
        if len > 128 {
            return Err(Lpm6Error::BadLength(len));
        }
        if nh > MAX_NEXT_HOP {
            return Err(Lpm6Error::NextHopTooLarge(nh));
        }
        Ok((addr & mask(len as u32), len))
    }

    /// First slot and number of first-level slots covered by `addr/len`.
    fn slot_range(addr: u128, len: u8) -> (usize, usize) {
        let lo = (addr >> (128 - ROOT_BITS)) as usize;
        if (len as u32) >= ROOT_BITS {
            (lo, 1)
        } else {
            (lo, 1usize << (ROOT_BITS - len as u32))
        }
    }

    /// Rebuilds what a change of route `addr/len` affects: the first-level slots it covers
    /// (length ≤ 16), or else the smallest subtree holding it: the walk follows multibit
    /// nodes down the prefix's path while the prefix lies below one child, then rebuilds
    /// that child (or the children the prefix spans inside the last node's stride). Node
    /// shapes above the rebuilt subtree are kept as they are.
    fn rebuild_range(&mut self, addr: u128, len: u8) -> Result<(), Lpm6Error> {
        let len = len as u32;
        if len <= ROOT_BITS {
            let (lo, n) = Self::slot_range(addr, len as u8);
            for slot in lo..lo + n {
                self.rebuild_slot(slot)?;
            }
            return Ok(());
        }
        let mut loc = Loc::Root((addr >> (128 - ROOT_BITS)) as usize);
        let mut d = ROOT_BITS;
        // Nodes walked through: where their entry lives, their block and depth.
        let mut path: Vec<(Loc, u128, u32)> = Vec::new();
        loop {
            let e = self.entry_at(loc);
            if e & (PTR | REC | SKIP) == PTR | REC | SKIP {
                // A skip record whose bits the prefix extends: only the subtree it jumps to
                // can change (its answer on mismatch comes from shorter routes).
                let i = e & REC_IDX;
                let r = self.recs[i as usize];
                let skip = r.len as u32;
                if len > skip && addr & mask(skip) == r.addr {
                    path.push((loc, addr & mask(d), d));
                    loc = Loc::Skip(i);
                    d = skip;
                    continue;
                }
            }
            if e & PTR == 0 || e & REC != 0 {
                self.rebuild_at(loc, addr & mask(d), d)?;
                break;
            }
            path.push((loc, addr & mask(d), d));
            let k = ((e & !PTR) >> NODE_K_SHIFT) + MIN_STRIDE;
            let base = (e & NODE_IDX) as usize * 16;
            let c = chunk(addr, d, k);
            if len > d + k {
                loc = Loc::Slot(base + c);
                d += k;
                continue;
            }
            self.rebuild_span(base, addr & mask(len), len, d, k)?;
            break;
        }
        // A node left with fewer than two routes below it (the rest were deleted) is
        // rebuilt from its parent, so emptied subtrees collapse (into a leaf or an answer)
        // and their memory returns to the free lists. (A node may hold no pointers and
        // still be needed: a widened node holds its prefixes as expanded answers.) A skip
        // record left jumping to anything but a node (one route or none below it) is
        // rebuilt from its own place the same way.
        while let Some((nloc, block, nd)) = path.pop() {
            let e = self.entry_at(nloc);
            let keep = if e & REC != 0 {
                let child = self.recs[(e & REC_IDX) as usize].a;
                child & PTR != 0 && child & REC == 0
            } else {
                self.routes
                    .range((block, 0)..=(block | !mask(nd), 128))
                    .filter(|(&(_, l), _)| u32::from(l) > nd)
                    .take(2)
                    .count()
                    == 2
            };
            if keep {
                break;
            }
            self.rebuild_at(nloc, block, nd)?;
        }
        Ok(())
    }

    fn entry_at(&self, loc: Loc) -> u32 {
        match loc {
            Loc::Root(i) => self.root[i],
            Loc::Slot(i) => self.lines[i >> 4].0[i & 15],
            Loc::Skip(i) => self.recs[i as usize].a,
        }
    }

    /// Rebuilds first-level slot `slot` from the control-plane routes.
    fn rebuild_slot(&mut self, slot: usize) -> Result<(), Lpm6Error> {
        let base = (slot as u128) << (128 - ROOT_BITS);
        self.rebuild_at(Loc::Root(slot), base, ROOT_BITS)
    }

    /// The entry for "no route longer than `d` bits matches": the next hop of the longest
    /// route of length ≤ `d` covering `block`, or none.
    fn fallback(&self, block: u128, d: u32) -> u32 {
        for l in (0..=d).rev() {
            if self.per_len[l as usize] == 0 {
                continue;
            }
            if let Some(&nh) = self.routes.get(&(block & mask(l), l as u8)) {
                return nh;
            }
        }
        NONE
    }

    /// Rebuilds the slots of the node at line `base`/16 (stride `k`, at bit `d`) that route
    /// `addr/len` spans (`d` < `len` ≤ `d + k`): one pass over the routes inside it, as
    /// [`build_node`](Self::build_node) fills a whole node, so a short prefix in a wide node
    /// costs its slots, not one route-map search per slot.
    fn rebuild_span(
        &mut self,
        base: usize,
        addr: u128,
        len: u32,
        d: u32,
        k: u32,
    ) -> Result<(), Lpm6Error> {
        let c = chunk(addr, d, k);
        let span = 1usize << (d + k - len);
        for slot in base + c..base + c + span {
            let old = self.lines[slot >> 4].0[slot & 15];
            self.free_entry(old);
        }
        let fb = self.fallback(addr, len);
        let q: Vec<P> = self
            .routes
            .range((addr, 0)..=(addr | !mask(len), 128))
            .filter(|(&(_, l), _)| u32::from(l) > len)
            .map(|(&(addr, len), &nh)| P {
                addr,
                len: u32::from(len),
                nh,
            })
            .collect();
        // Routes ending inside the node are expanded over their slots, shorter first.
        let mut child_fb = vec![fb; span];
        let mut short: Vec<P> = q.iter().copied().filter(|p| p.len <= d + k).collect();
        short.sort_by_key(|p| p.len);
        for p in &short {
            let lo = chunk(p.addr, d, k) - c;
            let n = 1usize << (d + k - p.len);
            child_fb[lo..lo + n].iter_mut().for_each(|e| *e = p.nh);
        }
        // Longer routes, grouped by slot (they are in address order).
        let long: Vec<P> = q.into_iter().filter(|p| p.len > d + k).collect();
        let mut i = 0;
        for (j, &cfb) in child_fb.iter().enumerate() {
            let start = i;
            while i < long.len() && chunk(long[i].addr, d, k) == c + j {
                i += 1;
            }
            let e = if start == i {
                cfb
            } else {
                self.build(&long[start..i], d + k, cfb)?
            };
            let slot = base + c + j;
            self.lines[slot >> 4].0[slot & 15] = e;
        }
        Ok(())
    }

    /// Rebuilds the subtree at `loc`, which covers the `d`-bit block starting at `block`,
    /// from the control-plane routes.
    fn rebuild_at(&mut self, loc: Loc, block: u128, d: u32) -> Result<(), Lpm6Error> {
        let old = self.entry_at(loc);
        self.free_entry(old);
        let fallback = self.fallback(block, d);
        let top = block | !mask(d);
        let q: Vec<P> = self
            .routes
            .range((block, 0)..=(top, 128))
            .filter(|(&(_, l), _)| l as u32 > d)
            .map(|(&(addr, len), &nh)| P {
                addr,
                len: len as u32,
                nh,
            })
            .collect();
        let e = self.build(&q, d, fallback)?;
        match loc {
            Loc::Root(i) => self.root[i] = e,
            Loc::Slot(i) => self.lines[i >> 4].0[i & 15] = e,
            Loc::Skip(i) => self.recs[i as usize].a = e,
        }
        Ok(())
    }

    // ----- allocation -----

    fn alloc_node(&mut self, k: u32) -> Result<u32, Lpm6Error> {
        let nlines = 1usize << (k - MIN_STRIDE);
        let first = if let Some(f) = self.free_lines[k as usize].pop() {
            f
        } else {
            let f = self.lines.len();
            if f + nlines > NODE_IDX as usize + 1 {
                return Err(Lpm6Error::Full);
            }
            self.lines.resize(f + nlines, Line([NONE; 16]));
            f as u32
        };
        self.nodes_in_use += 1;
        self.lines_in_use += nlines;
        Ok(first)
    }

    fn alloc_rec(&mut self, r: Rec) -> Result<u32, Lpm6Error> {
        if let Some(i) = self.free_recs.pop() {
            self.recs[i as usize] = r;
            Ok(i)
        } else {
            let i = self.recs.len();
            if i > REC_IDX as usize {
                return Err(Lpm6Error::Full);
            }
            self.recs.push(r);
            Ok(i as u32)
        }
    }

    /// Returns every node and record reachable from `e` to the free lists.
    fn free_entry(&mut self, e: u32) {
        if e & PTR == 0 {
            return;
        }
        if e & REC != 0 {
            let i = e & REC_IDX;
            if e & SKIP != 0 {
                let child = self.recs[i as usize].a;
                self.skips_in_use -= 1;
                self.free_entry(child);
            } else {
                self.leaves_in_use -= 1;
            }
            self.free_recs.push(i);
        } else {
            let k = ((e & !PTR) >> NODE_K_SHIFT) + MIN_STRIDE;
            let first = e & NODE_IDX;
            let nlines = 1usize << (k - MIN_STRIDE);
            for li in first as usize..first as usize + nlines {
                for j in 0..16 {
                    let c = self.lines[li].0[j];
                    self.free_entry(c);
                }
            }
            self.free_lines[k as usize].push(first);
            self.nodes_in_use -= 1;
            self.lines_in_use -= nlines;
        }
    }

    // ----- build -----

    /// Builds the subtree for prefixes `q` (all longer than `d`, all sharing the key's first
    /// `d` bits, sorted by address then length) with answer `fb` where none of them matches.
    fn build(&mut self, q: &[P], d: u32, fb: u32) -> Result<u32, Lpm6Error> {
        match q {
            [] => return Ok(fb),
            [p] => {
                let i = self.alloc_rec(Rec {
                    addr: p.addr,
                    a: p.nh,
                    b: fb,
                    len: p.len as u8,
                })?;
                self.leaves_in_use += 1;
                return Ok(PTR | REC | i);
            }
            _ => {}
        }
        let min_len = q.iter().map(|p| p.len).min().unwrap_or(128);
        let first = q[0].addr;
        let last = q[q.len() - 1].addr;
        let lcp = (first ^ last).leading_zeros();
        let split = min_len.min(lcp).min(128 - MIN_STRIDE);
        if split >= d + MIN_SKIP {
            if let Some(k) = Self::direct_stride(q, d, split) {
                return self.build_node_with(q, d, fb, Some(k));
            }
            let child = self.build_node(q, split, fb)?;
            let i = self.alloc_rec(Rec {
                addr: first & mask(split),
                a: child,
                b: fb,
                len: split as u8,
            })?;
            self.skips_in_use += 1;
            Ok(PTR | REC | SKIP | i)
        } else {
            self.build_node(q, d, fb)
        }
    }

    /// Builds a multibit node indexing bits `pos..pos+k` for prefixes `q` (all of length
    /// ≥ `pos`... those of length ≤ `pos` cover the whole node and become its default).
    fn build_node(&mut self, q: &[P], pos: u32, fb: u32) -> Result<u32, Lpm6Error> {
        self.build_node_with(q, pos, fb, None)
    }

    /// A stride for a node at `d` over prefixes `q` that all share their bits up to
    /// `split` (> `d`), where such a node costs less than a skip record to `split` and
    /// the node there (in slot lines + [`GAIN_LINES`] × accesses, as
    /// [`choose_stride`](Self::choose_stride) counts them); `None` keeps the skip.
    fn direct_stride(q: &[P], d: u32, split: u32) -> Option<u32> {
        let rest: Vec<P> = q.iter().copied().filter(|p| p.len > split).collect();
        let k1 = Self::choose_stride(&rest, split);
        let skip =
            1 + node_lines(k1) + GAIN_LINES * (q.len() as u64 + Self::below_cost(&rest, split, k1));
        let kmax = MAX_STRIDE.min(128 - d);
        (split - d + 1..=kmax)
            .filter(|&k| stride_fits(d, k) && 1usize << k <= q.len().saturating_mul(WIDE_BUDGET))
            .map(|k| (node_lines(k) + GAIN_LINES * Self::below_cost(q, d, k), k))
            .filter(|&(c, _)| c < skip)
            .min()
            .map(|(_, k)| k)
    }

    /// [`build_node`](Self::build_node) with the stride given, or chosen when `None`.
    fn build_node_with(
        &mut self,
        q: &[P],
        pos: u32,
        fb: u32,
        stride: Option<u32>,
    ) -> Result<u32, Lpm6Error> {
        // Prefixes that end at or above `pos` cover the whole node: the longest is the default.
        let mut fb = fb;
        let mut best_len = 0;
        for p in q.iter().filter(|p| p.len <= pos) {
            if p.len >= best_len {
                best_len = p.len;
                fb = p.nh;
            }
        }
        let rest: Vec<P> = q.iter().copied().filter(|p| p.len > pos).collect();
        let k = stride.unwrap_or_else(|| Self::choose_stride(&rest, pos));
        let first = self.alloc_node(k)?;
        let n = 1usize << k;
        // Defaults per child from the prefixes ending inside this stride (shorter first).
        let mut short: Vec<P> = rest.iter().copied().filter(|p| p.len <= pos + k).collect();
        short.sort_by_key(|p| p.len);
        let mut child_fb = vec![fb; n];
        for p in &short {
            let lo = chunk(p.addr, pos, k);
            let span = 1usize << (pos + k - p.len);
            child_fb[lo..lo + span].iter_mut().for_each(|c| *c = p.nh);
        }
        // Longer prefixes, grouped by child (they are in address order).
        let long: Vec<P> = rest.into_iter().filter(|p| p.len > pos + k).collect();
        let mut entries = vec![0u32; n];
        let mut i = 0;
        for (c, slot) in entries.iter_mut().enumerate() {
            let start = i;
            while i < long.len() && chunk(long[i].addr, pos, k) == c {
                i += 1;
            }
            *slot = if start == i {
                child_fb[c]
            } else {
                self.build(&long[start..i], pos + k, child_fb[c])?
            };
        }
        for (c, e) in entries.into_iter().enumerate() {
            let idx = first as usize * 16 + c;
            self.lines[idx >> 4].0[idx & 15] = e;
        }
        Ok(PTR | ((k - MIN_STRIDE) << NODE_K_SHIFT) | first)
    }

    /// The largest stride whose slots the prefixes fill to at least 1/[`FILL_DEN`], or that
    /// spends at most [`BUDGET`] slots per prefix (at least the smallest allowed stride);
    /// then a wider one (up to [`WIDE_BUDGET`] slots per prefix) where it costs less as
    /// slot lines + [`GAIN_LINES`] × the accesses left below the node
    /// ([`below_cost`](Self::below_cost)). A stride may not stop 1–3 bits short of bit
    /// 128, so every node below can again index at least [`MIN_STRIDE`] bits (`pos` ≤ 124
    /// always holds).
    fn choose_stride(q: &[P], pos: u32) -> u32 {
        let kmax = MAX_STRIDE.min(128 - pos);
        let valid = |k: u32| stride_fits(pos, k);
        let mut best = (MIN_STRIDE..=kmax).find(|&k| valid(k)).unwrap_or(kmax);
        for k in MIN_STRIDE..=kmax {
            if !valid(k) {
                continue;
            }
            let mut distinct = 0usize;
            let mut prev = usize::MAX;
            for p in q {
                let c = chunk(p.addr, pos, k);
                if c != prev {
                    distinct += 1;
                    prev = c;
                }
            }
            if distinct * FILL_DEN >= 1usize << k || q.len() * BUDGET >= 1usize << k {
                best = k;
            }
        }
        // Widen where the lines it adds save enough accesses: in a real table's dense
        // regions a node that reaches the prefixes' own lengths (/32, /48) ends a level
        // early for every key below it.
        let cost = |k: u32| node_lines(k) + GAIN_LINES * Self::below_cost(q, pos, k);
        let mut best_cost = cost(best);
        for k in best + 1..=kmax {
            if !valid(k) || 1usize << k > q.len().saturating_mul(WIDE_BUDGET) {
                continue;
            }
            let c = cost(k);
            if c < best_cost {
                (best, best_cost) = (k, c);
            }
        }
        best
    }

    /// A rough count of the accesses that prefixes `q` (sorted by address, all longer than
    /// `pos`) leave below a node of stride `k` at `pos`: none for a prefix that ends in the
    /// node, one for a prefix alone in its child (a leaf), two for each prefix of a child
    /// that holds several (another node at least, then its own access).
    fn below_cost(q: &[P], pos: u32, k: u32) -> u64 {
        let mut cost = 0u64;
        let mut i = 0;
        while i < q.len() {
            if q[i].len <= pos + k {
                i += 1;
                continue;
            }
            let c = chunk(q[i].addr, pos, k);
            let mut n = 1u64;
            let mut j = i + 1;
            while j < q.len() && chunk(q[j].addr, pos, k) == c {
                n += u64::from(q[j].len > pos + k);
                j += 1;
            }
            cost += if n == 1 { 1 } else { 2 * n };
            i = j;
        }
        cost
    }

    // ----- lookup -----

    /// Longest-prefix match for one address (`Ipv6Addr` or `u128`).
    ///
    /// ```
    /// use std::net::Ipv6Addr;
    /// let mut t = pktvec_lookup::ipv6::Lpm6::new();
    /// t.add(Ipv6Addr::LOCALHOST, 128, 1).unwrap();
    /// assert_eq!(t.lookup(Ipv6Addr::LOCALHOST), Some(1));
    /// assert_eq!(t.lookup(2u128), None);
    /// ```
    #[inline]
    pub fn lookup(&self, addr: impl Into<u128>) -> Option<u32> {
        let key = addr.into();
        // Nodes whose chunk lies in the key's upper half, the path of nearly every real
        // prefix, in a tight loop over the flat node slots; records and deeper nodes after.
        let flat = self.flat();
        let hi = (key >> 64) as u64;
        let mut e = self.root[(hi >> (64 - ROOT_BITS)) as usize];
        let mut d = ROOT_BITS;
        while e & (PTR | REC) == PTR {
            let k = ((e >> NODE_K_SHIFT) & 0xf) + MIN_STRIDE;
            if d + k > 64 {
                break;
            }
            let c = (hi << d) >> (64 - k);
            e = flat[(e & NODE_IDX) as usize * 16 + c as usize];
            d += k;
        }
        let mut st = self.advance(key, e, d);
        loop {
            match st {
                Step::Done(r) => return r,
                Step::Next(p, d) => st = self.load(key, p, d),
            }
        }
    }

    /// The node slots as one array: pending load `p` (bit 31 clear) reads slot `p`.
    #[inline(always)]
    fn flat(&self) -> &[u32] {
        bytemuck::cast_slice(&self.lines)
    }

    /// Turns entry `e`, reached after `d` bits of `key`, into the next load: a final answer,
    /// or a pending load (`Step::Next(p, d')`) where `p` is either the flat index of a node
    /// slot (bit 31 clear) or a record entry (bit 31 set). No memory access.
    #[inline(always)]
    fn advance(&self, key: u128, e: u32, d: u32) -> Step {
        if e & PTR == 0 {
            Step::Done(decode_final(e))
        } else if e & REC == 0 {
            let k = ((e & !PTR) >> NODE_K_SHIFT) + MIN_STRIDE;
            // Real prefixes are nearly all within the first 64 bits: take the chunk from
            // the key's upper half there (two shifts instead of a 128-bit pair).
            let c = if d + k <= 64 {
                (((key >> 64) as u64) << d >> (64 - k)) as u32
            } else {
                chunk(key, d, k) as u32
            };
            Step::Next((e & NODE_IDX) * 16 + c, d + k)
        } else {
            Step::Next(e, d)
        }
    }

    /// Performs pending load `p` (one cache line) and advances past it.
    #[inline(always)]
    fn load(&self, key: u128, p: u32, d: u32) -> Step {
        if p & PTR == 0 {
            self.advance(key, self.flat()[p as usize], d)
        } else {
            self.load_rec(key, p)
        }
    }

    /// Reads the record of pending load `p` (bit 31 set) and advances past it.
    #[inline(always)]
    fn load_rec(&self, key: u128, p: u32) -> Step {
        let r = &self.recs[(p & REC_IDX) as usize];
        // A record's length is at least ROOT_BITS + 1, so the shift is below 128.
        let hit = (key ^ r.addr) >> ((128 - u32::from(r.len)) & 127) == 0;
        if p & SKIP == 0 {
            Step::Done(decode_final(if hit { r.a } else { r.b }))
        } else if hit {
            self.advance(key, r.a, r.len as u32)
        } else {
            Step::Done(decode_final(r.b))
        }
    }

    /// Prefetches the line of pending load `p`, given the node slots as one flat array
    /// (no bounds check: an index past the end is only a wasted hint).
    #[inline(always)]
    fn prefetch_at(&self, flat: &[u32], p: u32) {
        if p & PTR == 0 {
            prefetch_index(flat, p as usize);
        } else {
            prefetch_index(&self.recs, (p & REC_IDX) as usize);
        }
    }

    /// Prefetches what a lookup of `addr` reads after the first level (which is read here;
    /// it is 256 KiB and normally cached). Used by two-phase sub-batch loops: prefetch a
    /// sub-batch of keys, then look them up.
    ///
    /// ```
    /// let t = pktvec_lookup::ipv6::Lpm6::from_routes([(0x2001u128 << 112, 48u8, 1)]).unwrap();
    /// t.prefetch(0x2001u128 << 112);
    /// assert_eq!(t.lookup(0x2001u128 << 112), Some(1));
    /// ```
    #[inline]
    pub fn prefetch(&self, addr: impl Into<u128>) {
        let key = addr.into();
        let e = self.root[(key >> (128 - ROOT_BITS)) as usize];
        if let Step::Next(p, _) = self.advance(key, e, ROOT_BITS) {
            self.prefetch_at(self.flat(), p);
        }
    }

    /// Looks up each key in turn (no prefetch; the counterpart of
    /// `rte_lpm6_lookup_bulk_func`). `out` must be as long as `keys`.
    ///
    /// ```
    /// let t = pktvec_lookup::ipv6::Lpm6::from_routes([(0u128, 1u8, 1)]).unwrap();
    /// let mut out = [None; 2];
    /// t.lookup_bulk(&[0u128, u128::MAX], &mut out).unwrap();
    /// assert_eq!(out, [Some(1), None]);
    /// assert!(t.lookup_bulk(&[0u128], &mut out).is_err());
    /// ```
    pub fn lookup_bulk<K: Copy + Into<u128>>(
        &self,
        keys: &[K],
        out: &mut [Option<u32>],
    ) -> Result<(), Lpm6Error> {
        Self::check_lens(keys.len(), out.len())?;
        for (k, o) in keys.iter().zip(out.iter_mut()) {
            *o = self.lookup(*k);
        }
        Ok(())
    }

    /// Vector lookup with prefetch: keys advance one trie level per round, each prefetching
    /// its next line, so up to [`VECTOR_MAX`] memory accesses are in flight (a software
    /// pipeline; G-Opt/AMAC-style). `out` must be as long as `keys`.
    ///
    /// ```
    /// let t = pktvec_lookup::ipv6::Lpm6::from_routes([(0u128, 1u8, 1)]).unwrap();
    /// let keys: Vec<u128> = (0..300u128).map(|i| i << 120).collect();
    /// let mut out = vec![None; 300];
    /// t.lookup_vector(&keys, &mut out).unwrap();
    /// assert_eq!(out[0], Some(1));
    /// assert_eq!(out[200], None);
    /// ```
    pub fn lookup_vector<K: Copy + Into<u128>>(
        &self,
        keys: &[K],
        out: &mut [Option<u32>],
    ) -> Result<(), Lpm6Error> {
        self.lookup_vector_with(keys, out, true)
    }

    /// [`lookup_vector`](Self::lookup_vector) with the prefetches switched on or off (off:
    /// the same round-by-round walk, relying on out-of-order execution only).
    ///
    /// ```
    /// let t = pktvec_lookup::ipv6::Lpm6::from_routes([(0u128, 1u8, 1)]).unwrap();
    /// let mut a = [None; 2];
    /// let mut b = [None; 2];
    /// t.lookup_vector_with(&[0u128, u128::MAX], &mut a, false).unwrap();
    /// t.lookup_vector_with(&[0u128, u128::MAX], &mut b, true).unwrap();
    /// assert_eq!(a, b);
    /// ```
    pub fn lookup_vector_with<K: Copy + Into<u128>>(
        &self,
        keys: &[K],
        out: &mut [Option<u32>],
        prefetch: bool,
    ) -> Result<(), Lpm6Error> {
        Self::check_lens(keys.len(), out.len())?;
        for (kc, oc) in keys.chunks(VECTOR_MAX).zip(out.chunks_mut(VECTOR_MAX)) {
            if prefetch {
                self.vector_chunk::<K, true>(kc, oc);
            } else {
                self.vector_chunk::<K, false>(kc, oc);
            }
        }
        Ok(())
    }

    fn vector_chunk<K: Copy + Into<u128>, const PF: bool>(
        &self,
        keys: &[K],
        out: &mut [Option<u32>],
    ) {
        let flat = self.flat();
        let mut key = [0u128; VECTOR_MAX];
        // Each active key's pending load (low half) and the bits it has consumed (high).
        let mut st = [0u64; VECTOR_MAX];
        // Active keys by position (a `u8` indexes the arrays above without a check).
        let mut act = [0u8; VECTOR_MAX];
        let mut na = 0;
        for (i, (k, o)) in keys.iter().zip(out.iter_mut()).enumerate() {
            let kv: u128 = (*k).into();
            let e = self.root[(kv >> (128 - ROOT_BITS)) as usize];
            match self.advance(kv, e, ROOT_BITS) {
                Step::Done(r) => *o = r,
                Step::Next(p, d) => {
                    if PF {
                        self.prefetch_at(flat, p);
                    }
                    key[i] = kv;
                    st[i] = u64::from(p) | u64::from(d) << 32;
                    act[na & (VECTOR_MAX - 1)] = i as u8;
                    na += 1;
                }
            }
        }
        // One round = one cache line per active key; keys that finish leave the list.
        while na > 0 {
            let mut w = 0;
            for j in 0..na {
                let i = usize::from(act[j & (VECTOR_MAX - 1)]);
                let (p, d) = (st[i] as u32, (st[i] >> 32) as u32);
                // `load` spelled out: through the call the loop ran 148 instructions a
                // tier1 lookup instead of 142 (callgrind).
                let step = if p & PTR == 0 {
                    self.advance(key[i], flat[p as usize], d)
                } else {
                    self.load_rec(key[i], p)
                };
                match step {
                    Step::Done(r) => out[i] = r,
                    Step::Next(p, d) => {
                        if PF {
                            self.prefetch_at(flat, p);
                        }
                        st[i] = u64::from(p) | u64::from(d) << 32;
                        act[w & (VECTOR_MAX - 1)] = i as u8;
                        w += 1;
                    }
                }
            }
            na = w;
        }
    }

    fn check_lens(keys: usize, out: usize) -> Result<(), Lpm6Error> {
        if keys == out {
            Ok(())
        } else {
            Err(Lpm6Error::LengthMismatch { keys, out })
        }
    }

    /// Number of memory lines a lookup of `addr` reads after the first level (0 when the
    /// first level answers). For measuring the trie's shape.
    ///
    /// ```
    /// let t = pktvec_lookup::ipv6::Lpm6::from_routes([(0x2001u128 << 112, 48u8, 1)]).unwrap();
    /// assert_eq!(t.accesses(0x2001u128 << 112), 1); // the leaf
    /// assert_eq!(t.accesses(0u128), 0);
    /// ```
    pub fn accesses(&self, addr: impl Into<u128>) -> u32 {
        let key = addr.into();
        let mut st = self.advance(
            key,
            self.root[(key >> (128 - ROOT_BITS)) as usize],
            ROOT_BITS,
        );
        let mut n = 0;
        while let Step::Next(p, d) = st {
            n += 1;
            st = self.load(key, p, d);
        }
        n
    }

    /// Sizes of the structure; see [`Lpm6Stats`].
    ///
    /// ```
    /// let t = pktvec_lookup::ipv6::Lpm6::from_routes([(0x2001u128 << 112, 48u8, 1)]).unwrap();
    /// assert_eq!(t.stats().leaves, 1);
    /// ```
    pub fn stats(&self) -> Lpm6Stats {
        Lpm6Stats {
            routes: self.routes.len(),
            nodes: self.nodes_in_use,
            node_lines: self.lines_in_use,
            leaves: self.leaves_in_use,
            skips: self.skips_in_use,
            lookup_bytes: self.root.capacity() * 4
                + self.lines.capacity() * std::mem::size_of::<Line>()
                + self.recs.capacity() * std::mem::size_of::<Rec>(),
            control_bytes: self.routes.len() * 40,
        }
    }

    /// Releases unused capacity of the lookup structure's arrays (free-listed nodes stay),
    /// copying them onto transparent huge pages (advised before the copy, collapsed after
    /// it: [`pktvec_packet::mem::collapse_hugepages`]): random lookups into a table of tens
    /// of MiB then miss the TLB less (the generated 200k table: 7% faster with every key
    /// drawn, where the copy had stayed on 4 KiB pages).
    ///
    /// ```
    /// let mut t = pktvec_lookup::ipv6::Lpm6::from_routes([(0x2001u128 << 112, 48u8, 1)]).unwrap();
    /// t.shrink_to_fit();
    /// assert_eq!(t.lookup(0x2001u128 << 112), Some(1));
    /// ```
    pub fn shrink_to_fit(&mut self) {
        self.lines = huge_copy(&self.lines);
        self.recs = huge_copy(&self.recs);
        self.root = huge_copy(&self.root);
    }
}

/// A copy of `v` with no spare capacity, on memory advised for transparent huge pages
/// before its first touch ([`pktvec_packet::mem::advise_hugepages`]).
fn huge_copy<T: Copy>(v: &[T]) -> Vec<T> {
    let mut n: Vec<T> = Vec::with_capacity(v.len());
    pktvec_packet::mem::advise_hugepages(n.spare_capacity_mut());
    n.extend_from_slice(v);
    // The allocator may hand out pages it already faulted in (as 4 KiB pages), which the
    // advice above leaves as they are: collapse them now.
    pktvec_packet::mem::collapse_hugepages(&n);
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(routes: &[(u128, u8, u32)], key: u128) -> Option<u32> {
        let mut best: Option<(u8, u32)> = None;
        for &(a, l, nh) in routes {
            if (key ^ a) & mask(l as u32) == 0 && best.is_none_or(|(bl, _)| l >= bl) {
                best = Some((l, nh));
            }
        }
        best.map(|b| b.1)
    }

    #[test]
    fn nested_chain_and_skip() {
        let routes = vec![
            (0x2001_0db8u128 << 96, 32u8, 1u32),
            (0x2001_0db8_0000_0001u128 << 64, 64, 2),
            (0x2001_0db8_0000_0002u128 << 64, 64, 3),
            (0x2001_0db8_0000_0002u128 << 64 | 1, 128, 4),
            (0x2001_0db8_0000_0002u128 << 64, 127, 5),
        ];
        let t = Lpm6::from_routes(routes.iter().copied()).unwrap();
        assert!(t.stats().skips >= 1, "{:?}", t.stats());
        for &(a, _, _) in &routes {
            for delta in [0u128, 1, 2, 3, 1 << 64, 1 << 70, 1 << 100] {
                let k = a ^ delta;
                assert_eq!(t.lookup(k), reference(&routes, k), "key {k:x}");
            }
        }
    }

    #[test]
    fn widens_a_node_that_reaches_its_prefixes() {
        // 1,100 /48s under one /32 (an ISP's assignments): the node under the skip record
        // is widened to end at /48, so every key inside them takes the skip record and one
        // node line; the fill/budget rule alone (stride 13) left a leaf below (3 lines).
        let mut rng = crate::routes::SplitMix64::new(5);
        let base = 0x2001_0db8u128 << 96;
        let mut routes = vec![(base, 32u8, 1u32)];
        let mut seen = std::collections::BTreeSet::new();
        while routes.len() < 1101 {
            let sub = rng.below(1 << 16) as u128;
            if seen.insert(sub) {
                routes.push((base | sub << 80, 48, 2 + routes.len() as u32));
            }
        }
        let t = Lpm6::from_routes(routes.iter().copied()).unwrap();
        for &(a, _, nh) in &routes[1..] {
            let k = a | 0x1234_5678;
            assert_eq!(t.lookup(k), Some(nh));
            assert_eq!(t.accesses(k), 2, "key {k:x}");
        }
        assert_eq!(
            t.lookup(base | 0xffff_ffff),
            reference(&routes, base | 0xffff_ffff)
        );
        let s = t.stats();
        assert_eq!((s.skips, s.leaves), (1, 0), "{s:?}");
    }

    #[test]
    fn changes_inside_a_widened_node_answer_as_a_fresh_build() {
        // Routes of /33../47 inside a node widened to /48 span many of its slots: each
        // change rebuilds those slots in one pass (`rebuild_span`); the answers must be
        // those of a table built from scratch, and deleting everything must free it all.
        let mut rng = crate::routes::SplitMix64::new(9);
        let base = 0x2001_0db8u128 << 96;
        let mut routes: BTreeMap<(u128, u8), u32> = BTreeMap::new();
        routes.insert((base, 32), 1);
        while routes.len() < 1101 {
            let sub = rng.below(1 << 16) as u128;
            routes.insert((base | sub << 80, 48), 2 + routes.len() as u32);
        }
        let list = |r: &BTreeMap<(u128, u8), u32>| -> Vec<(u128, u8, u32)> {
            r.iter().map(|(&(a, l), &nh)| (a, l, nh)).collect()
        };
        let mut t = Lpm6::from_routes(list(&routes)).unwrap();
        let keys: Vec<u128> = (0..2000)
            .map(|_| base | (rng.next_u64() as u128) << 32 | rng.below(1 << 20) as u128)
            .collect();
        for step in 0..300u32 {
            let len = 33 + rng.below(16) as u8;
            let addr = (base | (rng.next_u64() as u128) << 32) & mask(u32::from(len));
            let existing: Vec<(u128, u8)> = routes.keys().copied().collect();
            if step % 3 == 2 {
                let (a, l) = existing[rng.below(existing.len() as u64) as usize];
                assert_eq!(t.delete(a, l).unwrap(), routes.remove(&(a, l)));
            } else {
                t.add(addr, len, 5000 + step).unwrap();
                routes.insert((addr, len), 5000 + step);
            }
            if step % 25 == 0 || step == 299 {
                let fresh = Lpm6::from_routes(list(&routes)).unwrap();
                for &k in &keys {
                    assert_eq!(t.lookup(k), fresh.lookup(k), "step {step} key {k:x}");
                }
            }
        }
        for (a, l) in routes.keys().copied().collect::<Vec<_>>() {
            t.delete(a, l).unwrap();
        }
        let s = t.stats();
        assert_eq!(
            (s.routes, s.nodes, s.leaves, s.skips, s.node_lines),
            (0, 0, 0, 0, 0)
        );
    }

    #[test]
    fn frees_on_delete() {
        let mut t = Lpm6::new();
        for i in 0..50u128 {
            t.add(0x2001u128 << 112 | i << 70, 60, i as u32).unwrap();
        }
        assert!(t.stats().nodes > 0);
        for i in 0..50u128 {
            assert_eq!(
                t.delete(0x2001u128 << 112 | i << 70, 60),
                Ok(Some(i as u32))
            );
        }
        let s = t.stats();
        assert_eq!((s.nodes, s.leaves, s.skips, s.node_lines), (0, 0, 0, 0));
        assert!(t.root.iter().all(|&e| e == NONE));
    }
}
