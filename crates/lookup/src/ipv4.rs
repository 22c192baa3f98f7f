//! IPv4 longest-prefix match: a DIR-24-8 table (a 2^24-entry first level indexed by the top
//! 24 bits of the address, and 256-entry second-level groups for the /24s that hold longer
//! prefixes), updatable while other threads look up.
//!
//! # Layout and memory
//!
//! Every entry is one `AtomicU32`:
//!
//! | bits 31..26 (`code`) | bits 25..0 (`payload`) | meaning |
//! |---|---|---|
//! | 0 | 0 | no route |
//! | `depth + 1` (1..=33) | next hop | a route of length `depth` |
//! | 63 | group index | (first level only) look in second-level group `payload` |
//!
//! so next-hop ids go up to [`MAX_NEXT_HOP`] = 2^26 − 1 (rte_lpm: 2^24 − 1) and the prefix
//! depth needed by add/delete lives in the entry itself, as in rte_lpm. Memory:
//!
//! * first level: 2^24 × 4 B = 64 MiB, always; by default advised to use transparent huge
//!   pages ([`Lpm4Config::huge_pages`]), which shortens the page walk of the TLB miss that
//!   a random lookup takes on almost every key with 4 KiB pages;
//! * second level: 1 KiB per group, allocated lazily in segments of [`GROUPS_PER_SEGMENT`]
//!   groups (1 MiB), up to [`Lpm4Config::max_groups`] (default 65,536 groups, so at most
//!   64 MiB); a real 900k-prefix BGP table uses about 900 groups and a generated 2M-prefix
//!   table about 2,300, so 2M prefixes fit with the default; the worst case (every prefix a
//!   /25../32 in its own /24) needs one group per prefix: raise `max_groups` (up to 2^24);
//! * the control-plane rule set (what `delete` needs to find the replacement route):
//!   one hash map per prefix length, about 16 B per prefix.
//!
//! [`Lpm4::memory_bytes`] reports the total.
//!
//! # Concurrency
//!
//! Lookups take `&self` and never block or allocate; [`Lpm4::add`] and [`Lpm4::delete`] also
//! take `&self` and serialize on an internal mutex (one writer at a time), so an
//! `Arc<Lpm4>` can be shared by reader threads and a control thread. Readers never see a
//! half-written entry:
//!
//! * every entry is written with a single atomic store, so a reader sees the old or the new
//!   value of each entry, both of which were the correct answer at some time during the update;
//! * a new second-level group is fully written before the first-level entry pointing to it is
//!   published with a `Release` store; readers load first-level entries `Relaxed` (a plain
//!   `mov` on x86) and issue an `Acquire` fence only when the entry points to a group (a
//!   compiler-only barrier on x86), which pairs with that store;
//! * **freed groups.** When the last route longer than /24 inside a /24 is deleted, the group
//!   is folded back into its first-level entry and the group is put on a FIFO free list. It is
//!   reused only once at least [`REUSE_QUARANTINE`] other groups have been freed after it
//!   (fresh groups are taken first), and a reader that followed a first-level entry into a
//!   group *re-reads the first-level entry after reading the group* and starts over if it
//!   changed (a sequence check; stores into reused groups are `Release`, loads from groups
//!   `Acquire`, so a value written into a reused group is never accepted against the stale
//!   first-level entry). The residual case is an ABA: the same group freed, reused
//!   elsewhere, freed and given back to the *same* /24 while one reader is stalled between its
//!   two loads, which needs that reader to sleep through `REUSE_QUARANTINE` complete cycles of
//!   the free list.
//!
//! ```
//! use pktvec_lookup::ipv4::{Lpm4, Lpm4Config};
//! use std::net::Ipv4Addr;
//!
//! let lpm = Lpm4::new(Lpm4Config::default());
//! lpm.add(Ipv4Addr::new(10, 0, 0, 0), 8, 1)?;
//! lpm.add(Ipv4Addr::new(10, 1, 2, 128), 25, 2)?;
//! assert_eq!(lpm.lookup(Ipv4Addr::new(10, 1, 2, 200)), Some(2));
//! assert_eq!(lpm.lookup(Ipv4Addr::new(10, 1, 2, 3)), Some(1));
//! assert_eq!(lpm.lookup(0x0b00_0000u32), None);
//!
//! let keys = [0x0a01_02c8u32, 0x0a00_0001, 0x0b00_0000];
//! let mut out = [None; 3];
//! lpm.lookup_vector(&keys, &mut out);
//! assert_eq!(out, [Some(2), Some(1), None]);
//!
//! lpm.delete(Ipv4Addr::new(10, 1, 2, 128), 25)?;
//! assert_eq!(lpm.lookup(Ipv4Addr::new(10, 1, 2, 200)), Some(1));
//! # Ok::<(), pktvec_lookup::ipv4::LpmError>(())
//! ```

use std::collections::{HashMap, VecDeque};
use std::net::Ipv4Addr;
use std::sync::atomic::{fence, AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock};

use pktvec_packet::mem::advise_hugepages;
use pktvec_packet::prefetch::prefetch_read;

/// What the `*_raw` lookups return for an address no prefix covers.
pub const MISS: u32 = u32::MAX;
/// Largest next-hop id a route can carry (2^26 − 1).
pub const MAX_NEXT_HOP: u32 = (1 << 26) - 1;
/// Second-level groups are allocated in segments of this many groups (1 MiB).
pub const GROUPS_PER_SEGMENT: u32 = 1024;
/// A freed second-level group is reused only after this many later frees (see the
/// [module docs](self)).
pub const REUSE_QUARANTINE: usize = 64;
/// Largest accepted [`Lpm4Config::max_groups`] (2^24 groups, 16 GiB).
pub const MAX_GROUPS_LIMIT: u32 = 1 << 24;
/// Sub-batch size [`Lpm4::lookup_vector_batched`] callers start from.
pub const DEFAULT_SUB_BATCH: usize = 64;
/// Prefetch distance (keys ahead) of [`Lpm4::lookup_vector`].
pub const DEFAULT_PREFETCH_DISTANCE: usize = 16;

const TBL24_LEN: usize = 1 << 24;
const SEG_ENTRIES: usize = GROUPS_PER_SEGMENT as usize * 256;
const PAYLOAD: u32 = (1 << 26) - 1;
const CODE_SHIFT: u32 = 26;
const CODE_EXT: u32 = 63;
const EXT: u32 = CODE_EXT << CODE_SHIFT;

#[inline(always)]
fn plain(next_hop: u32, depth: u8) -> u32 {
    ((u32::from(depth) + 1) << CODE_SHIFT) | next_hop
}

#[inline(always)]
fn code(e: u32) -> u32 {
    e >> CODE_SHIFT
}

/// Depth of a plain entry, `None` if the entry is empty (or a group pointer).
#[inline(always)]
fn depth_of(e: u32) -> Option<u8> {
    match code(e) {
        c @ 1..=33 => Some((c - 1) as u8),
        _ => None,
    }
}

#[inline(always)]
fn mask(len: u8) -> u32 {
    u32::MAX.checked_shl(32 - u32::from(len)).unwrap_or(0)
}

/// Configuration of an [`Lpm4`].
///
/// ```
/// use pktvec_lookup::ipv4::Lpm4Config;
/// let cfg = Lpm4Config { max_groups: 4096, ..Default::default() };
/// assert_eq!(Lpm4Config::default().max_groups, 65_536);
/// assert!(Lpm4Config::default().huge_pages);
/// # let _ = cfg;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Lpm4Config {
    /// Maximum number of second-level (256-entry, 1 KiB) groups, i.e. of distinct /24s that
    /// contain prefixes longer than /24. Allocated lazily in 1 MiB segments; clamped to
    /// `1..=`[`MAX_GROUPS_LIMIT`] and rounded up to a multiple of [`GROUPS_PER_SEGMENT`].
    pub max_groups: u32,
    /// Ask the kernel to back the 64 MiB first level with transparent huge pages
    /// ([`pktvec_packet::mem::advise_hugepages`], before its first touch). Random lookups
    /// miss the TLB on almost every key with 4 KiB pages; with 2 MiB pages the whole first
    /// level needs 32 TLB entries. Advice only: where THP is unavailable (or set to
    /// `never`) the table works the same on 4 KiB pages; see
    /// [`Lpm4::huge_pages_advised`]. Default `true`.
    #[serde(default = "default_true")]
    pub huge_pages: bool,
}

fn default_true() -> bool {
    true
}

impl Default for Lpm4Config {
    fn default() -> Self {
        Lpm4Config {
            max_groups: 65_536,
            huge_pages: true,
        }
    }
}

/// Why an update was refused. The table is unchanged when an update fails.
///
/// ```
/// use pktvec_lookup::ipv4::{Lpm4, LpmError};
/// let lpm = Lpm4::new(Default::default());
/// assert_eq!(lpm.add([1, 0, 0, 0].into(), 33, 1), Err(LpmError::InvalidLength(33)));
/// assert_eq!(lpm.delete([1, 0, 0, 0].into(), 8), Err(LpmError::NotFound));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum LpmError {
    /// Prefix length above 32.
    #[error("prefix length {0} > 32")]
    InvalidLength(u8),
    /// Next hop above [`MAX_NEXT_HOP`].
    #[error("next hop {0} > {max}", max = MAX_NEXT_HOP)]
    NextHopTooLarge(u32),
    /// No such prefix to delete.
    #[error("prefix not found")]
    NotFound,
    /// All second-level groups are in use (raise [`Lpm4Config::max_groups`]).
    #[error("second-level groups exhausted")]
    TableFull,
}

struct Writer {
    /// rules[len]: network (masked) → next hop.
    rules: Vec<HashMap<u32, u32>>,
    n_rules: usize,
    /// Groups handed out so far from fresh memory.
    fresh: u32,
    /// Freed groups, oldest first.
    free: VecDeque<u32>,
    groups_in_use: u32,
}

/// The IPv4 LPM table (see the [module docs](self)).
///
/// ```
/// use pktvec_lookup::ipv4::Lpm4;
/// use std::sync::Arc;
///
/// let lpm = Arc::new(Lpm4::new(Default::default()));
/// lpm.add([192, 168, 0, 0].into(), 16, 7)?;
/// let reader = { let lpm = lpm.clone(); std::thread::spawn(move || lpm.lookup(0xc0a8_0101u32)) };
/// assert_eq!(reader.join().unwrap(), Some(7));
/// # Ok::<(), pktvec_lookup::ipv4::LpmError>(())
/// ```
pub struct Lpm4 {
    tbl24: Box<[AtomicU32; TBL24_LEN]>,
    huge_advised: bool,
    segments: Box<[OnceLock<Box<[AtomicU32; SEG_ENTRIES]>>]>,
    max_groups: u32,
    writer: Mutex<Writer>,
}

impl std::fmt::Debug for Lpm4 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lpm4")
            .field("routes", &self.len())
            .field("groups_in_use", &self.groups_in_use())
            .field("max_groups", &self.max_groups)
            .finish()
    }
}

/// `N` zeroed entries; with `huge`, the allocation is advised to use transparent huge pages
/// before it is first written (so the zeroing faults in huge pages directly). Returns the
/// entries and whether the advice was accepted.
fn zeroed<const N: usize>(huge: bool) -> (Box<[AtomicU32; N]>, bool) {
    let mut v: Vec<AtomicU32> = Vec::with_capacity(N);
    let advised = huge && advise_hugepages(v.spare_capacity_mut());
    v.resize_with(N, || AtomicU32::new(0));
    match v.into_boxed_slice().try_into() {
        Ok(b) => (b, advised),
        Err(_) => unreachable!("length is N by construction"),
    }
}

impl Lpm4 {
    /// An empty table (allocates the 64 MiB first level).
    ///
    /// ```
    /// let lpm = pktvec_lookup::ipv4::Lpm4::new(Default::default());
    /// assert!(lpm.is_empty());
    /// ```
    pub fn new(config: Lpm4Config) -> Self {
        let max_groups = config
            .max_groups
            .clamp(1, MAX_GROUPS_LIMIT)
            .div_ceil(GROUPS_PER_SEGMENT)
            * GROUPS_PER_SEGMENT;
        let n_seg = (max_groups / GROUPS_PER_SEGMENT) as usize;
        let (tbl24, huge_advised) = zeroed::<TBL24_LEN>(config.huge_pages);
        Lpm4 {
            tbl24,
            huge_advised,
            segments: (0..n_seg).map(|_| OnceLock::new()).collect(),
            max_groups,
            writer: Mutex::new(Writer {
                rules: (0..=32).map(|_| HashMap::new()).collect(),
                n_rules: 0,
                fresh: 0,
                free: VecDeque::new(),
                groups_in_use: 0,
            }),
        }
    }

    /// A table holding `routes` (later duplicates replace earlier ones).
    ///
    /// ```
    /// use pktvec_lookup::{ipv4::Lpm4, routes::generate_ipv4};
    /// let routes = generate_ipv4(1000, 1);
    /// let lpm = Lpm4::from_routes(Default::default(), &routes)?;
    /// assert_eq!(lpm.len(), 1000);
    /// # Ok::<(), pktvec_lookup::ipv4::LpmError>(())
    /// ```
    pub fn from_routes(
        config: Lpm4Config,
        routes: &[crate::routes::Route4],
    ) -> Result<Self, LpmError> {
        let lpm = Lpm4::new(config);
        for r in routes {
            lpm.add(r.addr, r.len, r.next_hop)?;
        }
        Ok(lpm)
    }

    fn writer(&self) -> std::sync::MutexGuard<'_, Writer> {
        // A panic while holding the lock cannot leave an entry half-written (each is one
        // store), so a poisoned lock is still usable.
        self.writer.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Number of routes in the table.
    ///
    /// ```
    /// let lpm = pktvec_lookup::ipv4::Lpm4::new(Default::default());
    /// lpm.add([1, 0, 0, 0].into(), 8, 1).unwrap();
    /// assert_eq!(lpm.len(), 1);
    /// ```
    pub fn len(&self) -> usize {
        self.writer().n_rules
    }

    /// Whether the table holds no route.
    ///
    /// ```
    /// assert!(pktvec_lookup::ipv4::Lpm4::new(Default::default()).is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Second-level groups currently in use (excluding freed ones).
    ///
    /// ```
    /// let lpm = pktvec_lookup::ipv4::Lpm4::new(Default::default());
    /// lpm.add([1, 2, 3, 4].into(), 32, 1).unwrap();
    /// assert_eq!(lpm.groups_in_use(), 1);
    /// ```
    pub fn groups_in_use(&self) -> u32 {
        self.writer().groups_in_use
    }

    /// Whether the first level was advised to use transparent huge pages and the kernel
    /// accepted the advice ([`Lpm4Config::huge_pages`]; the kernel may still fall back to
    /// 4 KiB pages for parts of it when it has no free 2 MiB pages).
    ///
    /// ```
    /// use pktvec_lookup::ipv4::{Lpm4, Lpm4Config};
    /// let lpm = Lpm4::new(Lpm4Config { huge_pages: false, ..Default::default() });
    /// assert!(!lpm.huge_pages_advised());
    /// ```
    pub fn huge_pages_advised(&self) -> bool {
        self.huge_advised
    }

    /// Bytes of memory held: first level, allocated group segments, and an estimate of the
    /// rule set (hash maps: key, value and control byte at their allocated capacity).
    ///
    /// ```
    /// let lpm = pktvec_lookup::ipv4::Lpm4::new(Default::default());
    /// assert!(lpm.memory_bytes() >= 64 << 20);
    /// ```
    pub fn memory_bytes(&self) -> usize {
        let w = self.writer();
        let segs = self.segments.iter().filter(|s| s.get().is_some()).count();
        let rules: usize = w.rules.iter().map(|m| m.capacity() * 9).sum();
        TBL24_LEN * 4
            + segs * SEG_ENTRIES * 4
            + rules
            + self.segments.len() * std::mem::size_of::<OnceLock<Box<[AtomicU32; SEG_ENTRIES]>>>()
    }

    // ---------------------------------------------------------------- lookups

    #[inline(always)]
    fn group_slot(&self, group: u32, low: u32) -> Option<&AtomicU32> {
        let seg = self
            .segments
            .get((group / GROUPS_PER_SEGMENT) as usize)?
            .get()?;
        let off = (((group % GROUPS_PER_SEGMENT) << 8) | (low & 0xff)) as usize;
        Some(&seg[off % SEG_ENTRIES])
    }

    /// Resolves a first-level entry `e` that points to a group, with the sequence check
    /// described in the module docs.
    #[cold]
    #[inline(never)]
    fn resolve_ext(&self, key: u32, mut e: u32) -> Option<u32> {
        let slot24 = &self.tbl24[(key >> 8) as usize];
        loop {
            if code(e) != CODE_EXT {
                return finish(e);
            }
            fence(Ordering::Acquire);
            let v = match self.group_slot(e & PAYLOAD, key) {
                Some(s) => s.load(Ordering::Acquire),
                None => 0,
            };
            let again = slot24.load(Ordering::Relaxed);
            if again == e {
                return finish(v);
            }
            e = again;
        }
    }

    /// Longest-prefix match for one address (an [`Ipv4Addr`] or its `u32` value, host
    /// order): the next hop, or `None` if no prefix covers it.
    ///
    /// ```
    /// let lpm = pktvec_lookup::ipv4::Lpm4::new(Default::default());
    /// lpm.add([0, 0, 0, 0].into(), 0, 9).unwrap();
    /// assert_eq!(lpm.lookup(std::net::Ipv4Addr::new(8, 8, 8, 8)), Some(9));
    /// assert_eq!(lpm.lookup(0x0808_0808u32), Some(9));
    /// ```
    #[inline(always)]
    pub fn lookup<K: Into<u32>>(&self, key: K) -> Option<u32> {
        let key = key.into();
        let e = self.tbl24[(key >> 8) as usize].load(Ordering::Relaxed);
        if code(e) == CODE_EXT {
            return self.resolve_ext(key, e);
        }
        finish(e)
    }

    /// Prefetches the first-level entry of `key` (the first phase of a two-phase lookup:
    /// call it for a sub-batch of keys, then [`lookup`](Self::lookup) each).
    ///
    /// ```
    /// let lpm = pktvec_lookup::ipv4::Lpm4::new(Default::default());
    /// lpm.prefetch(0x0a00_0001);
    /// assert_eq!(lpm.lookup(0x0a00_0001u32), None);
    /// ```
    #[inline(always)]
    pub fn prefetch(&self, key: u32) {
        prefetch_read(&self.tbl24[(key >> 8) as usize]);
    }

    /// Looks up each key in turn, without prefetching (the baseline, like
    /// `rte_lpm_lookup_bulk`). Processes `min(keys.len(), out.len())` keys.
    ///
    /// ```
    /// let lpm = pktvec_lookup::ipv4::Lpm4::new(Default::default());
    /// lpm.add([10, 0, 0, 0].into(), 8, 1).unwrap();
    /// let mut out = [None; 2];
    /// lpm.lookup_bulk(&[0x0a00_0001, 0x0b00_0001], &mut out);
    /// assert_eq!(out, [Some(1), None]);
    /// ```
    pub fn lookup_bulk(&self, keys: &[u32], out: &mut [Option<u32>]) {
        for (k, o) in keys.iter().zip(out.iter_mut()) {
            *o = self.lookup(*k);
        }
    }

    /// Vector lookup with a software-pipelined prefetch [`DEFAULT_PREFETCH_DISTANCE`] keys
    /// ahead (the fastest loop measured, see `docs/results/lookup-ipv4.md`); see
    /// [`lookup_vector_pipelined`](Self::lookup_vector_pipelined). `None` for no route.
    /// Processes `min(keys.len(), out.len())` keys.
    ///
    /// ```
    /// use pktvec_lookup::{ipv4::Lpm4, routes::{generate_ipv4, random_ipv4_keys}};
    /// let lpm = Lpm4::from_routes(Default::default(), &generate_ipv4(10_000, 1))?;
    /// let keys: Vec<u32> = random_ipv4_keys(256, 2).into_iter().map(u32::from).collect();
    /// let mut a = vec![None; 256];
    /// let mut b = vec![None; 256];
    /// lpm.lookup_vector(&keys, &mut a);
    /// lpm.lookup_bulk(&keys, &mut b);
    /// assert_eq!(a, b);
    /// # Ok::<(), pktvec_lookup::ipv4::LpmError>(())
    /// ```
    pub fn lookup_vector(&self, keys: &[u32], out: &mut [Option<u32>]) {
        let mut raw = [0u32; 256];
        for (kc, oc) in keys.chunks(256).zip(out.chunks_mut(256)) {
            let n = kc.len().min(oc.len());
            self.lookup_vector_pipelined(&kc[..n], &mut raw[..n], DEFAULT_PREFETCH_DISTANCE);
            for (o, &r) in oc.iter_mut().zip(&raw[..n]) {
                *o = (r != MISS).then_some(r);
            }
        }
    }

    /// Two-phase vector lookup in sub-batches of `b` keys (`b` is clamped to `1..=256`):
    /// for each sub-batch, (1) prefetch the first-level entry of every key; (2) read the
    /// entries, answering keys whose /24 has no group and prefetching the second-level line
    /// of the others; (3) answer the others. Processes `min(keys.len(), out.len())` keys.
    ///
    /// ```
    /// let lpm = pktvec_lookup::ipv4::Lpm4::new(Default::default());
    /// lpm.add([10, 0, 0, 0].into(), 8, 1).unwrap();
    /// lpm.add([10, 0, 0, 7].into(), 32, 2).unwrap();
    /// let mut out = [None; 3];
    /// lpm.lookup_vector_batched(&[0x0a00_0007, 0x0a00_0008, 1], &mut out, 2);
    /// assert_eq!(out, [Some(2), Some(1), None]);
    /// ```
    pub fn lookup_vector_batched(&self, keys: &[u32], out: &mut [Option<u32>], b: usize) {
        let b = b.clamp(1, 256);
        let n = keys.len().min(out.len());
        let (keys, out) = (&keys[..n], &mut out[..n]);
        let mut pending = [0u8; 256];
        for (kc, oc) in keys.chunks(b).zip(out.chunks_mut(b)) {
            for &k in kc {
                prefetch_read(&self.tbl24[(k >> 8) as usize]);
            }
            let mut np = 0usize;
            for (i, (&k, o)) in kc.iter().zip(oc.iter_mut()).enumerate() {
                let e = self.tbl24[(k >> 8) as usize].load(Ordering::Relaxed);
                *o = finish(e);
                if code(e) == CODE_EXT {
                    if let Some(s) = self.group_slot(e & PAYLOAD, k) {
                        prefetch_read(s);
                    }
                    pending[np % 256] = i as u8;
                    np += 1;
                }
            }
            for &i in &pending[..np.min(256)] {
                let i = usize::from(i);
                if let (Some(&k), Some(o)) = (kc.get(i), oc.get_mut(i)) {
                    *o = self.lookup(k);
                }
            }
        }
    }

    /// Like [`lookup`](Self::lookup) but returns [`MISS`] instead of `None` (no `Option`
    /// to build: the form the vector loops below use, branch-free for first-level hits).
    ///
    /// ```
    /// use pktvec_lookup::ipv4::{Lpm4, MISS};
    /// let lpm = Lpm4::new(Default::default());
    /// lpm.add([10, 0, 0, 0].into(), 8, 4).unwrap();
    /// assert_eq!(lpm.lookup_raw(0x0a00_0001), 4);
    /// assert_eq!(lpm.lookup_raw(0x0b00_0001), MISS);
    /// ```
    #[inline(always)]
    pub fn lookup_raw(&self, key: u32) -> u32 {
        let e = self.tbl24[(key >> 8) as usize].load(Ordering::Relaxed);
        if code(e) == CODE_EXT {
            return self.resolve_ext(key, e).unwrap_or(MISS);
        }
        finish_raw(e)
    }

    /// [`lookup_bulk`](Self::lookup_bulk) with [`MISS`] for no route (the form of
    /// `rte_lpm_lookup_bulk`): no prefetch. Processes `min(keys.len(), out.len())` keys.
    ///
    /// ```
    /// use pktvec_lookup::ipv4::{Lpm4, MISS};
    /// let lpm = Lpm4::new(Default::default());
    /// lpm.add([10, 0, 0, 0].into(), 8, 1).unwrap();
    /// let mut out = [0; 2];
    /// lpm.lookup_bulk_raw(&[0x0a00_0001, 0x0b00_0001], &mut out);
    /// assert_eq!(out, [1, MISS]);
    /// ```
    pub fn lookup_bulk_raw(&self, keys: &[u32], out: &mut [u32]) {
        for (k, o) in keys.iter().zip(out.iter_mut()) {
            *o = self.lookup_raw(*k);
        }
    }

    /// [`lookup_vector_batched`](Self::lookup_vector_batched) with [`MISS`] for no route:
    /// per sub-batch of `b` keys (clamped to `1..=256`), prefetch every first-level line,
    /// then resolve (first-level answers are branch-free; the rare keys whose /24 has a
    /// second-level group get their group line prefetched and are answered last).
    ///
    /// ```
    /// use pktvec_lookup::ipv4::{Lpm4, MISS};
    /// let lpm = Lpm4::new(Default::default());
    /// lpm.add([10, 0, 0, 0].into(), 8, 1).unwrap();
    /// lpm.add([10, 0, 0, 7].into(), 32, 2).unwrap();
    /// let mut out = [0; 3];
    /// lpm.lookup_vector_raw(&[0x0a00_0007, 0x0a00_0008, 1], &mut out, 64);
    /// assert_eq!(out, [2, 1, MISS]);
    /// ```
    pub fn lookup_vector_raw(&self, keys: &[u32], out: &mut [u32], b: usize) {
        let b = b.clamp(1, 256);
        let n = keys.len().min(out.len());
        let (keys, out) = (&keys[..n], &mut out[..n]);
        let mut pending = [0u8; 256];
        for (kc, oc) in keys.chunks(b).zip(out.chunks_mut(b)) {
            for &k in kc {
                prefetch_read(&self.tbl24[(k >> 8) as usize]);
            }
            let mut np = 0usize;
            for (i, (&k, o)) in kc.iter().zip(oc.iter_mut()).enumerate() {
                let e = self.tbl24[(k >> 8) as usize].load(Ordering::Relaxed);
                *o = finish_raw(e);
                pending[np % 256] = i as u8;
                np += usize::from(code(e) == CODE_EXT);
            }
            for &i in &pending[..np.min(256)] {
                let i = usize::from(i);
                if let Some(&k) = kc.get(i) {
                    let e = self.tbl24[(k >> 8) as usize].load(Ordering::Relaxed);
                    if code(e) == CODE_EXT {
                        if let Some(s) = self.group_slot(e & PAYLOAD, k) {
                            prefetch_read(s);
                        }
                    }
                }
            }
            for &i in &pending[..np.min(256)] {
                let i = usize::from(i);
                if let (Some(&k), Some(o)) = (kc.get(i), oc.get_mut(i)) {
                    *o = self.lookup_raw(k);
                }
            }
        }
    }

    /// Software-pipelined vector lookup with [`MISS`] for no route: while answering key
    /// `i` it prefetches the first-level entry of key `i + d` (`d` clamped to `1..=64`), so
    /// a steady `d` first-level misses stay in flight (the batched loops above let that
    /// number drain to zero at the end of every sub-batch). First-level answers are one
    /// load and a mask; the rare keys whose /24 has a second-level group take the
    /// sequence-checked path. Processes `min(keys.len(), out.len())` keys.
    ///
    /// ```
    /// use pktvec_lookup::ipv4::{Lpm4, MISS};
    /// let lpm = Lpm4::new(Default::default());
    /// lpm.add([10, 0, 0, 0].into(), 8, 1).unwrap();
    /// lpm.add([10, 0, 0, 7].into(), 32, 2).unwrap();
    /// let mut out = [0; 3];
    /// lpm.lookup_vector_pipelined(&[0x0a00_0007, 0x0a00_0008, 1], &mut out, 16);
    /// assert_eq!(out, [2, 1, MISS]);
    /// ```
    pub fn lookup_vector_pipelined(&self, keys: &[u32], out: &mut [u32], d: usize) {
        let d = d.clamp(1, 64);
        let n = keys.len().min(out.len());
        let (keys, out) = (&keys[..n], &mut out[..n]);
        let tbl24: &[AtomicU32; TBL24_LEN] = &self.tbl24;
        for &k in keys.iter().take(d) {
            prefetch_read(&tbl24[(k >> 8) as usize]);
        }
        for (i, (&k, o)) in keys.iter().zip(out.iter_mut()).enumerate() {
            if let Some(&ahead) = keys.get(i + d) {
                prefetch_read(&tbl24[(ahead >> 8) as usize]);
            }
            let e = tbl24[(k >> 8) as usize].load(Ordering::Relaxed);
            *o = if code(e) == CODE_EXT {
                self.resolve_ext(k, e).unwrap_or(MISS)
            } else {
                finish_raw(e)
            };
        }
    }

    // ---------------------------------------------------------------- updates

    /// Adds the route `addr/len → next_hop`, replacing the next hop if the prefix is already
    /// present. Host bits of `addr` beyond `len` are ignored (masked), as rte_lpm does.
    ///
    /// Errors: `len > 32`, `next_hop >` [`MAX_NEXT_HOP`], or no free second-level group; the
    /// table is unchanged on error.
    ///
    /// ```
    /// let lpm = pktvec_lookup::ipv4::Lpm4::new(Default::default());
    /// lpm.add([10, 0, 0, 0].into(), 8, 1)?;
    /// lpm.add([10, 0, 0, 0].into(), 8, 2)?; // replace
    /// assert_eq!(lpm.lookup(0x0a01_0101u32), Some(2));
    /// assert_eq!(lpm.len(), 1);
    /// # Ok::<(), pktvec_lookup::ipv4::LpmError>(())
    /// ```
    pub fn add(&self, addr: Ipv4Addr, len: u8, next_hop: u32) -> Result<(), LpmError> {
        if len > 32 {
            return Err(LpmError::InvalidLength(len));
        }
        if next_hop > MAX_NEXT_HOP {
            return Err(LpmError::NextHopTooLarge(next_hop));
        }
        let net = u32::from(addr) & mask(len);
        let mut w = self.writer();
        let value = plain(next_hop, len);
        if len <= 24 {
            let first = (net >> 8) as usize;
            let count = 1usize << (24 - len);
            for slot in &self.tbl24[first..first + count] {
                let e = slot.load(Ordering::Relaxed);
                if code(e) == CODE_EXT {
                    self.fill_group(e & PAYLOAD, 0, 256, |d| d.map_or(true, |d| d <= len), value);
                } else if depth_of(e).map_or(true, |d| d <= len) {
                    slot.store(value, Ordering::Release);
                }
            }
        } else {
            let slot = &self.tbl24[(net >> 8) as usize];
            let e = slot.load(Ordering::Relaxed);
            let group = if code(e) == CODE_EXT {
                e & PAYLOAD
            } else {
                let g = self.alloc_group(&mut w)?;
                // Copy the /24's current answer into the whole group before publishing it.
                self.fill_group(g, 0, 256, |_| true, e);
                g
            };
            let low = net & 0xff;
            let count = 1u32 << (32 - len);
            self.fill_group(group, low, count, |d| d.map_or(true, |d| d <= len), value);
            if code(e) != CODE_EXT {
                slot.store(EXT | group, Ordering::Release);
            }
        }
        if w.rules[usize::from(len)].insert(net, next_hop).is_none() {
            w.n_rules += 1;
        }
        Ok(())
    }

    /// Deletes the route `addr/len` (host bits masked); addresses it covered fall back to the
    /// next shorter covering route. Returns the deleted route's next hop.
    ///
    /// ```
    /// use pktvec_lookup::ipv4::{Lpm4, LpmError};
    /// let lpm = Lpm4::new(Default::default());
    /// lpm.add([10, 0, 0, 0].into(), 8, 1)?;
    /// lpm.add([10, 1, 0, 0].into(), 16, 2)?;
    /// assert_eq!(lpm.delete([10, 1, 0, 0].into(), 16), Ok(2));
    /// assert_eq!(lpm.lookup(0x0a01_0000u32), Some(1));
    /// assert_eq!(lpm.delete([10, 1, 0, 0].into(), 16), Err(LpmError::NotFound));
    /// # Ok::<(), LpmError>(())
    /// ```
    pub fn delete(&self, addr: Ipv4Addr, len: u8) -> Result<u32, LpmError> {
        if len > 32 {
            return Err(LpmError::InvalidLength(len));
        }
        let net = u32::from(addr) & mask(len);
        let mut w = self.writer();
        let old = w.rules[usize::from(len)]
            .remove(&net)
            .ok_or(LpmError::NotFound)?;
        w.n_rules -= 1;
        // The replacement: the longest remaining rule shorter than `len` covering `net`.
        let repl = (0..len)
            .rev()
            .find_map(|l| {
                w.rules[usize::from(l)]
                    .get(&(net & mask(l)))
                    .map(|&nh| plain(nh, l))
            })
            .unwrap_or(0);
        let is_mine = |d: Option<u8>| d == Some(len);
        if len <= 24 {
            let first = (net >> 8) as usize;
            let count = 1usize << (24 - len);
            for slot in &self.tbl24[first..first + count] {
                let e = slot.load(Ordering::Relaxed);
                if code(e) == CODE_EXT {
                    self.fill_group(e & PAYLOAD, 0, 256, is_mine, repl);
                } else if is_mine(depth_of(e)) {
                    slot.store(repl, Ordering::Release);
                }
            }
        } else {
            let slot = &self.tbl24[(net >> 8) as usize];
            let e = slot.load(Ordering::Relaxed);
            if code(e) == CODE_EXT {
                let group = e & PAYLOAD;
                self.fill_group(group, net & 0xff, 1 << (32 - len), is_mine, repl);
                // Fold the group back if no route longer than /24 is left in it: then every
                // entry holds the /24's answer (the same value), which goes to the first level.
                let first = self
                    .group_slot(group, 0)
                    .map_or(0, |s| s.load(Ordering::Relaxed));
                let foldable = (0..256).all(|j| {
                    self.group_slot(group, j)
                        .map_or(0, |s| s.load(Ordering::Relaxed))
                        .eq(&first)
                }) && depth_of(first).map_or(true, |d| d <= 24);
                if foldable {
                    slot.store(first, Ordering::Release);
                    w.free.push_back(group);
                    w.groups_in_use -= 1;
                }
            }
        }
        Ok(old)
    }

    /// Stores `value` into entries `low..low + count` of `group` whose depth satisfies `pred`.
    fn fill_group(
        &self,
        group: u32,
        low: u32,
        count: u32,
        pred: impl Fn(Option<u8>) -> bool,
        value: u32,
    ) {
        for j in low..(low + count).min(256) {
            if let Some(s) = self.group_slot(group, j) {
                if pred(depth_of(s.load(Ordering::Relaxed))) {
                    s.store(value, Ordering::Release);
                }
            }
        }
    }

    fn alloc_group(&self, w: &mut Writer) -> Result<u32, LpmError> {
        let g = if w.free.len() > REUSE_QUARANTINE || (w.fresh >= self.max_groups) {
            w.free.pop_front().ok_or(LpmError::TableFull)?
        } else {
            let g = w.fresh;
            let seg = &self.segments[(g / GROUPS_PER_SEGMENT) as usize];
            seg.get_or_init(|| zeroed::<SEG_ENTRIES>(false).0);
            w.fresh += 1;
            g
        };
        w.groups_in_use += 1;
        Ok(g)
    }
}

#[inline(always)]
fn finish_raw(e: u32) -> u32 {
    if code(e).wrapping_sub(1) < 33 {
        e & PAYLOAD
    } else {
        MISS
    }
}

#[inline(always)]
fn finish(e: u32) -> Option<u32> {
    if code(e).wrapping_sub(1) < 33 {
        Some(e & PAYLOAD)
    } else {
        None
    }
}
