//! IPv4 longest-prefix match: a DIR-24-8 master table that updates edit, and a compressed
//! copy of its first level that lookups read, updatable while other threads look up.
//!
//! # Structure
//!
//! * **Master (DIR-24-8, written by updates).** A 2^24-entry first level indexed by the top
//!   24 bits of the address, and 256-entry second-level groups for the /24s that hold
//!   longer prefixes. Every entry is one `AtomicU32`:
//!
//!   | bits 31..26 (`code`) | bits 25..0 (`payload`) | meaning |
//!   |---|---|---|
//!   | 0 | 0 | no route |
//!   | `depth + 1` (1..=33) | next hop | a route of length `depth` |
//!   | 63 | group index | (first level only) look in second-level group `payload` |
//!
//!   so next-hop ids go up to [`MAX_NEXT_HOP`] = 2^26 − 1 (rte_lpm: 2^24 − 1) and the
//!   prefix depth needed by add/delete lives in the entry itself, as in rte_lpm.
//! * **Read path (what lookups read).** The master's first level cut into 2^18 quarters
//!   of 64 /24 slots. Each quarter has a 4-byte directory entry (1 MiB in all): the value
//!   itself when the quarter is one run of equal slots, else the offset of a *record*: a
//!   64-bit bitmap of where runs start followed by the runs' values (3 bytes each when
//!   they are next hops below 2^24 − 1, else 4), packed so that a record of up to 64 bytes
//!   sits in one cache line. A lookup reads the directory entry,
//!   ranks the slot with one `popcnt` and reads the value next to the bitmap (usually the
//!   same line); a /24 with longer prefixes points to its master group. The read path of a
//!   1M-prefix BGP table is 5–10 MiB instead of the master's 64 MiB, and a random lookup
//!   makes one far access plus one into the 1 MiB directory: see
//!   `docs/results/lookup-tables.md`. The vector lookups stage a sub-batch (read every
//!   directory entry and prefetch its record, rank every key and prefetch every value,
//!   read the values), 16 keys an instruction with AVX-512 and 8 with AVX2 where the CPU
//!   has them.
//! * **Lines (a second copy of the quarters).** One 64-byte line per quarter at a fixed
//!   place (16 MiB): the run bitmap and up to 18 run values of 3 bytes; a run it cannot
//!   hold (a group pointer, a wide next hop, the tail of a quarter of more runs) sends its
//!   keys to the master. A lookup reads one line whose address depends on the key alone,
//!   so the vector loop prefetches 64 keys ahead with nothing to wait for: for tables
//!   that put a record in nearly every quarter (uniformly placed), where the compressed
//!   path reads two lines a key, one after the other.
//! * **Which one a vector reads** ([`ReadPath`]). Where the compressed path's lines do
//!   not stay cached (a uniformly placed table on a host whose core gets a few MiB of
//!   L3), one line a key (the lines, or the master's far line) beats its two. By default
//!   each thread times them on its own traffic and reads the cheapest
//!   ([`ReadPath::Auto`]); [`Lpm4::set_read_path`] forces one. Single lookups read the
//!   lines where at least half the quarters hold a record, else the compressed path.
//!
//! # Memory
//!
//! * master first level: 2^24 × 4 B = 64 MiB, read by [`ReadPath::Dir24`] vectors (and
//!   by every lookup while an update rewrites the compressed path), advised to use
//!   transparent huge pages like the read path;
//! * master groups: 1 KiB each, allocated lazily in segments of [`GROUPS_PER_SEGMENT`]
//!   groups (1 MiB), up to [`Lpm4Config::max_groups`] (default 65,536 groups); a real
//!   900k-prefix BGP table uses about 450–1,100 groups; the worst case (every prefix a
//!   /25../32 in its own /24) needs one group per prefix: raise `max_groups` (up to 2^24);
//! * read path: 1 MiB of directory entries plus 8 B per multi-run quarter and 3 or 4 B per
//!   run, and the padding that keeps short records within a line (address space for 2^26
//!   words is reserved, committed as used; tables of several million prefixes fit), advised
//!   to use transparent huge pages ([`Lpm4Config::huge_pages`]);
//! * lines: 2^18 × 64 B = 16 MiB, zero (one run of "no route") until written, committed
//!   as their pages are written;
//! * the control-plane rule set (what `delete` needs to find the replacement route):
//!   one hash map per prefix length, about 16 B per prefix.
//!
//! [`Lpm4::memory_bytes`] reports the total and [`Lpm4::read_path_bytes`] what lookups read.
//!
//! # Concurrency
//!
//! Lookups take `&self` and never block or allocate; [`Lpm4::add`] and [`Lpm4::delete`] also
//! take `&self` and serialize on an internal mutex (one writer at a time), so an
//! `Arc<Lpm4>` can be shared by reader threads and a control thread. Readers never see a
//! half-written entry:
//!
//! * **master:** every entry is written with a single atomic store, so a reader sees the
//!   old or the new value of each entry, both of which were the correct answer at some time
//!   during the update; a new group is fully written before the first-level entry pointing
//!   to it is published (`Release`/`Acquire`); a reader that followed a first-level entry
//!   into a group re-reads the first-level entry afterwards and starts over if it changed
//!   (freed groups are also reused only after [`REUSE_QUARANTINE`] later frees);
//! * **read path:** a record is written before the directory entry pointing to it, but a
//!   freed record can be reused while a reader still reads it, so the writer changes the
//!   read path only inside a *write window* of a sequence counter (odd while open), after
//!   the master is updated. A lookup (or a whole vector) notes the
//!   counter before and checks it after; if a window was open or overlapped, it answers from
//!   the master instead. Readers never wait for the writer.
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

use std::cell::Cell;
use std::collections::{HashMap, VecDeque};
use std::net::Ipv4Addr;
use std::sync::atomic::{fence, AtomicU32, AtomicU8, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

use thread_local::ThreadLocal;

use pktvec_packet::mem::advise_hugepages;
use pktvec_packet::prefetch::prefetch_read;

mod compressed;
use compressed::{Compressed, GROUP, NO_ROUTE};

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
pub const DEFAULT_SUB_BATCH: usize = 128;
/// Prefetch distance (keys ahead) [`Lpm4::lookup_vector_pipelined`] callers start from.
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

/// Where the staged vector lookups ([`Lpm4::lookup_vector_raw`] and the forms built on
/// it) prefetch each key's record and value: a hint that never changes an answer.
///
/// With `Auto` (the default) a sub-batch expected to fetch at least 12 record lines
/// (its size times the share of /18 quarters that hold a record) prefetches into L2 only
/// (`PREFETCHT1`), smaller ones into L1. On Zen 4, L2 prefetches are 1.5–1.7× faster on a
/// uniformly placed 1M table at every sub-batch and 8–20% faster on real tables at
/// b = 256, while L1 is 5–12% faster on real tables at b ≤ 32 (see
/// `docs/results/lookup-tables.md`). `L1` and `L2` force one level, to compare or for CPUs
/// that behave otherwise.
///
/// ```
/// use pktvec_lookup::ipv4::{Lpm4, PrefetchLevel, MISS};
/// let lpm = Lpm4::new(Default::default());
/// lpm.add([10, 0, 0, 0].into(), 8, 1).unwrap();
/// lpm.set_prefetch_level(PrefetchLevel::L1);
/// let mut out = [0; 2];
/// lpm.lookup_vector_raw(&[0x0a00_0001, 0x0b00_0001], &mut out, 256);
/// assert_eq!(out, [1, MISS]);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum PrefetchLevel {
    /// L2 only for sub-batches expected to fetch at least 12 record lines, else L1.
    #[default]
    Auto = 0,
    /// Always into L1 (and the levels beyond).
    L1 = 1,
    /// Always into L2 (and beyond) but not L1.
    L2 = 2,
}

/// Which structure [`Lpm4::lookup_vector_raw`] (and the vector forms built on it) reads:
/// a choice of speed only, never of answers (each holds every route).
///
/// * `Compressed`: the compressed copy of the first level (a 1 MiB directory plus
///   run-bitmap records, 5–10 MiB for a full table): fastest where those lines stay in
///   the caches and most quarters are one run (real BGP tables: one directory read for
///   most keys).
/// * `Lines`: the same quarters again, one 64-byte line each at a fixed place (16 MiB):
///   one line a key, whose address depends on the key only, read with a prefetch 64 keys
///   ahead. Fastest on tables that put a record in nearly every quarter (a uniformly
///   placed table), where the compressed path reads two lines a key, one after the other.
/// * `Dir24`: the DIR-24-8 master (64 MiB first level, on transparent huge pages where
///   [`Lpm4Config::huge_pages`] asks for them), one far line a key with a prefetch 32 keys
///   ahead: for hosts where neither of the others stays cached.
/// * `Auto` (the default): each thread times the paths on its own traffic and reads the
///   cheapest. A period of 2,048 vectors (of up to 256 keys) starts with a probe of one
///   path not in use (the two take turns, period by period; the lines only while at least
///   half the quarters hold a record, else the master takes their turn): 32 vectors of
///   the master, or 256 of the compressed path or the lines (so that they are cached
///   again), of
///   which the last 16 are timed; 16 vectors of the path in use are timed at the period's
///   end. The cheapest vector of each side (an interrupted one does not count) decides:
///   to the master when it costs less than 85% of the path in use a key, to the others as
///   soon as they cost less. While the path in use stays the cheapest, each period is
///   twice as long as the one before (up to 16,384 vectors, about 4M keys), so the probes
///   cost less and less: a probe of the master also evicts compressed lines, and with
///   probes every 2,048 vectors `Auto` read a real table 3–6% slower than the compressed
///   path alone. Vectors of fewer than 64 keys are not timed. Timing uses `Instant`,
///   about 0.1 ns a key.
///
/// ```
/// use pktvec_lookup::ipv4::{Lpm4, ReadPath, MISS};
/// let lpm = Lpm4::new(Default::default());
/// lpm.add([10, 0, 0, 0].into(), 8, 1).unwrap();
/// let mut out = [0; 2];
/// for path in [ReadPath::Compressed, ReadPath::Lines, ReadPath::Dir24, ReadPath::Auto] {
///     lpm.set_read_path(path);
///     lpm.lookup_vector_raw(&[0x0a00_0001, 0x0b00_0001], &mut out, 256);
///     assert_eq!(out, [1, MISS]);
/// }
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum ReadPath {
    /// Measure the others on the traffic and read the cheapest, per thread.
    #[default]
    Auto = 0,
    /// Always the compressed read path.
    Compressed = 1,
    /// Always the DIR-24-8 master.
    Dir24 = 2,
    /// Always the line-per-quarter copy.
    Lines = 3,
}

/// Vectors in one period of [`ReadPath::Auto`]'s measurements.
const AUTO_PERIOD: u32 = 2048;
/// Vectors of a probe of the master (the first half warms up, the second is timed).
const AUTO_PROBE_DIR24: u32 = 32;
/// Vectors of a probe of the compressed path or the lines (the first half warms up, the
/// second is timed).
const AUTO_PROBE_COMPRESSED: u32 = 256;
/// The master's prefetch distance on [`ReadPath::Dir24`] and `Auto`'s choice of it.
const DIR24_DISTANCE: usize = 32;
/// The lines' prefetch distance: with 1M uniform keys on the uniform 1M table (AMD Zen 3,
/// 32 MiB L3) 64 keys ahead read 27.8 cycles a key, 32 ahead 29.6, 16 ahead 41.0, and
/// prefetching a whole 256-key vector before reading it 88.
const LINES_DISTANCE: usize = 64;

/// A structure [`ReadPath::Auto`] can read (the paths other than `Auto`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Compressed,
    Lines,
    Dir24,
}

impl Side {
    /// The side after `self` in the probes' turn, skipping `on`.
    fn next_probe(self, on: Side) -> Side {
        let next = |s| match s {
            Side::Compressed => Side::Lines,
            Side::Lines => Side::Dir24,
            Side::Dir24 => Side::Compressed,
        };
        let n = next(self);
        if n == on {
            next(n)
        } else {
            n
        }
    }

    fn path(self) -> ReadPath {
        match self {
            Side::Compressed => ReadPath::Compressed,
            Side::Lines => ReadPath::Lines,
            Side::Dir24 => ReadPath::Dir24,
        }
    }
}

/// One thread's state of [`ReadPath::Auto`]: where it is in its period and how long that
/// is, the cheapest timed vector of the path in use and of the probed one in this period
/// (nanoseconds a key; `f64::MAX` = none yet), the path it reads and the one it probes.
struct AutoPath {
    vectors: Cell<u32>,
    period: Cell<u32>,
    current: Cell<f64>,
    other: Cell<f64>,
    on: Cell<Side>,
    probe: Cell<Side>,
}

impl Default for AutoPath {
    fn default() -> Self {
        AutoPath {
            vectors: Cell::new(0),
            period: Cell::new(AUTO_PERIOD),
            current: Cell::new(f64::MAX),
            other: Cell::new(f64::MAX),
            on: Cell::new(Side::Compressed),
            probe: Cell::new(Side::Lines),
        }
    }
}

/// What [`AutoPath::next`] decides for one vector.
#[derive(Clone, Copy)]
struct AutoStep {
    /// The path to read.
    side: Side,
    /// Time this vector (into the probe if `side` is not the path in use).
    timed: bool,
}

impl AutoPath {
    /// The path for the next vector, and whether to time it: the probe's last 16
    /// vectors, and every eighth vector of the current path among the period's last 128
    /// (16 samples on each side, so that their minima compare alike). At the end of a
    /// period, chooses the path for the next one. A period whose turn it is to probe the
    /// lines probes the next path instead unless `lines_ok` (the table is dense enough
    /// for them to pay, see [`Lpm4::lookup_vector_raw`]).
    fn next(&self, lines_ok: bool) -> AutoStep {
        let mut phase = self.vectors.get();
        if phase >= self.period.get() {
            self.choose();
            phase = 0;
        }
        if phase == 0 && !lines_ok && self.probe.get() == Side::Lines {
            self.probe.set(Side::Lines.next_probe(self.on.get()));
        }
        self.vectors.set(phase + 1);
        let probe = self.probe.get();
        let probe_len = if probe == Side::Dir24 {
            AUTO_PROBE_DIR24
        } else {
            AUTO_PROBE_COMPRESSED
        };
        if phase < probe_len {
            AutoStep {
                side: probe,
                timed: phase + 16 >= probe_len,
            }
        } else {
            AutoStep {
                side: self.on.get(),
                timed: phase + 128 >= self.period.get() && phase % 8 == 0,
            }
        }
    }

    /// Keeps the cheapest timed vector of each side.
    fn record(&self, step: AutoStep, ns_per_key: f64) {
        let side = if step.side == self.on.get() {
            &self.current
        } else {
            &self.other
        };
        side.set(side.get().min(ns_per_key));
    }

    /// The end of a period: to the master only when it is clearly cheaper; to the
    /// compressed path or the lines (whose probes start cold) as soon as they are
    /// cheaper. While the path in use stays the cheapest, each period is twice as long as
    /// the one before (up to 8 times [`AUTO_PERIOD`]), so the probes cost less and less;
    /// a move starts short periods again. The next period probes the next path in turn.
    fn choose(&self) {
        let (cur, other) = (self.current.get(), self.other.get());
        let probe = self.probe.get();
        if cur < f64::MAX && other < f64::MAX {
            let margin = if probe == Side::Dir24 { 0.85 } else { 1.0 };
            if other < margin * cur {
                self.on.set(probe);
                self.period.set(AUTO_PERIOD);
            } else {
                self.period
                    .set((self.period.get() * 2).min(8 * AUTO_PERIOD));
            }
        }
        self.probe.set(probe.next_probe(self.on.get()));
        self.vectors.set(0);
        self.current.set(f64::MAX);
        self.other.set(f64::MAX);
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
    /// Allocation state of the compressed read path.
    alloc: compressed::Alloc,
    /// Batch mode (`from_routes`): chunks to rebuild at the end instead of after each update.
    deferred: Option<Vec<bool>>,
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
    /// The compressed read path (what lookups read).
    fast: Compressed,
    /// The DIR-24-8 master copy (what updates edit; its groups are read by lookups too).
    tbl24: Box<[AtomicU32; TBL24_LEN]>,
    huge_advised: bool,
    segments: Box<[OnceLock<Box<[AtomicU32; SEG_ENTRIES]>>]>,
    max_groups: u32,
    writer: Mutex<Writer>,
    /// [`ReadPath`] as its `u8`.
    read_path: AtomicU8,
    /// Each thread's measurements for [`ReadPath::Auto`].
    auto: ThreadLocal<AutoPath>,
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
        // The master is a read path too (`ReadPath::Dir24`): huge pages as asked.
        let (tbl24, master_huge) = zeroed::<TBL24_LEN>(config.huge_pages);
        let (fast, alloc, fast_huge) = Compressed::new(config.huge_pages);
        let huge_advised = master_huge || fast_huge;
        Lpm4 {
            fast,
            tbl24,
            huge_advised,
            segments: (0..n_seg).map(|_| OnceLock::new()).collect(),
            max_groups,
            read_path: AtomicU8::new(ReadPath::Auto as u8),
            auto: ThreadLocal::new(),
            writer: Mutex::new(Writer {
                rules: (0..=32).map(|_| HashMap::new()).collect(),
                n_rules: 0,
                fresh: 0,
                free: VecDeque::new(),
                groups_in_use: 0,
                alloc,
                deferred: None,
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
        lpm.writer().deferred = Some(vec![false; compressed::QUARTERS]);
        let added: Result<(), LpmError> = routes
            .iter()
            .try_for_each(|r| lpm.add(r.addr, r.len, r.next_hop));
        let mut w = lpm.writer();
        let dirty = w.deferred.take().unwrap_or_default();
        added?;
        // Largest records first, so that small ones fill the line ends the large ones
        // leave (best-fit decreasing; the allocator takes the smallest hole that fits).
        let mut order: Vec<(u32, usize)> = (0..dirty.len())
            .filter(|&q| dirty[q])
            .map(|q| (Compressed::record_size(&lpm.quarter_slots(q)), q))
            .collect();
        order.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        lpm.rebuild_quarters(&mut w, order.into_iter().map(|(_, q)| q))?;
        drop(w);
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

    /// Bytes of memory held: the DIR-24-8 master's first level, the read path's committed
    /// pools ([`read_path_bytes`](Self::read_path_bytes) plus free-listed regions),
    /// allocated group segments, and an estimate of the rule set (hash maps: key, value and
    /// control byte at their allocated capacity).
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
            + Compressed::committed_bytes(&w.alloc)
            + segs * SEG_ENTRIES * 4
            + rules
            + self.segments.len() * std::mem::size_of::<OnceLock<Box<[AtomicU32; SEG_ENTRIES]>>>()
    }

    /// Bytes the compressed read path's lookups read: directory, records and their line
    /// padding, plus the second-level groups (see the [module docs](self)). The lines,
    /// where a thread reads them ([`ReadPath::Lines`]), are 16 MiB of their own.
    ///
    /// ```
    /// use pktvec_lookup::{ipv4::Lpm4, routes::generate_ipv4};
    /// let lpm = Lpm4::from_routes(Default::default(), &generate_ipv4(10_000, 1))?;
    /// assert!(lpm.read_path_bytes() < 2 << 20); // 1 MiB of directory + records
    /// # Ok::<(), pktvec_lookup::ipv4::LpmError>(())
    /// ```
    pub fn read_path_bytes(&self) -> usize {
        let w = self.writer();
        Compressed::memory_bytes(&w.alloc) + w.groups_in_use as usize * 1024
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

    /// The answer for `key` from a group pointer `v` (`GROUP | g`) of the read path.
    #[cold]
    #[inline(never)]
    fn resolve_group(&self, key: u32, v: u32) -> u32 {
        match self.group_slot(v & !GROUP, key) {
            Some(s) => finish_raw(s.load(Ordering::Acquire)),
            None => MISS,
        }
    }

    /// Turns a read-path value into the raw answer ([`MISS`] for no route).
    #[inline(always)]
    fn decode(&self, key: u32, v: u32) -> u32 {
        if v < GROUP {
            if v == NO_ROUTE {
                MISS
            } else {
                v
            }
        } else {
            self.resolve_group(key, v)
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
        let r = self.lookup_raw(key.into());
        (r != MISS).then_some(r)
    }

    /// Like [`lookup`](Self::lookup) but returns [`MISS`] instead of `None`.
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
        if let Some(g) = self.fast.begin() {
            // One line a key where most quarters hold a record (the directory and then
            // the record otherwise); the lines' escapes read the master.
            let r = if self.fast.dense() {
                match self.fast.lines().value(key) {
                    compressed::ESCAPED => self.master_raw(key),
                    v => v,
                }
            } else {
                self.decode(key, self.fast.value(key))
            };
            if self.fast.valid(g) {
                return r;
            }
        }
        self.master_raw(key)
    }

    /// The answer from the DIR-24-8 master (the fallback while an update is in progress,
    /// and for keys whose run the lines do not hold).
    #[cold]
    #[inline(never)]
    fn master_raw(&self, key: u32) -> u32 {
        let e = self.tbl24[(key >> 8) as usize].load(Ordering::Relaxed);
        if code(e) == CODE_EXT {
            return self.resolve_ext(key, e).unwrap_or(MISS);
        }
        finish_raw(e)
    }

    /// Answers `keys` from the DIR-24-8 master (the fallback for a vector that overlapped
    /// an update).
    #[cold]
    #[inline(never)]
    fn master_vector(&self, keys: &[u32], out: &mut [u32]) {
        self.lookup_vector_dir24(keys, out, 16);
    }

    /// The first phase of a two-phase lookup: prefetches what [`lookup`](Self::lookup)
    /// reads first for the key (its line where most quarters hold a record, else its
    /// directory entry, a 1 MiB array). Call it for a sub-batch of keys, then
    /// [`lookup`](Self::lookup) each.
    ///
    /// ```
    /// let lpm = pktvec_lookup::ipv4::Lpm4::new(Default::default());
    /// lpm.prefetch(0x0a00_0001);
    /// assert_eq!(lpm.lookup(0x0a00_0001u32), None);
    /// ```
    #[inline(always)]
    pub fn prefetch(&self, key: u32) {
        self.fast.prefetch(key);
    }

    /// Sets where the staged vector lookups prefetch (see [`PrefetchLevel`]); takes effect
    /// from the next vector, also in other threads' lookups.
    ///
    /// ```
    /// use pktvec_lookup::ipv4::{Lpm4, PrefetchLevel};
    /// let lpm = Lpm4::new(Default::default());
    /// lpm.set_prefetch_level(PrefetchLevel::L2);
    /// assert_eq!(lpm.prefetch_level(), PrefetchLevel::L2);
    /// ```
    pub fn set_prefetch_level(&self, level: PrefetchLevel) {
        self.fast.set_prefetch_level(level);
    }

    /// The level set by [`set_prefetch_level`](Self::set_prefetch_level) (`Auto` unless
    /// changed).
    pub fn prefetch_level(&self) -> PrefetchLevel {
        self.fast.prefetch_level()
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
        let n = keys.len().min(out.len());
        let (keys, out) = (&keys[..n], &mut out[..n]);
        if let Some(g) = self.fast.begin() {
            for (k, o) in keys.iter().zip(out.iter_mut()) {
                *o = self.decode(*k, self.fast.value(*k));
            }
            if self.fast.valid(g) {
                return;
            }
        }
        self.master_vector(keys, out);
    }

    /// The vector lookup to use: [`lookup_vector_raw`](Self::lookup_vector_raw) with
    /// sub-batches of [`DEFAULT_SUB_BATCH`] keys (the fastest loop measured, see
    /// `docs/results/lookup-tables.md`), `None` for no route. Processes
    /// `min(keys.len(), out.len())` keys.
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
        self.lookup_vector_batched(keys, out, DEFAULT_SUB_BATCH);
    }

    /// [`lookup_vector_raw`](Self::lookup_vector_raw) with `None` for no route.
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
        let mut raw = [0u32; 256];
        for (kc, oc) in keys.chunks(256).zip(out.chunks_mut(256)) {
            let n = kc.len().min(oc.len());
            self.lookup_vector_raw(&kc[..n], &mut raw[..n], b);
            for (o, &r) in oc.iter_mut().zip(&raw[..n]) {
                *o = (r != MISS).then_some(r);
            }
        }
    }

    /// Vector lookup, [`MISS`] for no route, over the structure [`ReadPath`] picks (the
    /// table's setting, [`ReadPath::Auto`] by default: per thread, the cheaper of the
    /// compressed path and the DIR-24-8 master). On the compressed path it is a staged
    /// lookup in sub-batches of `b` keys (clamped to `1..=256`; the master ignores `b`):
    /// for each sub-batch, (1) read every key's directory entry and prefetch its
    /// record (run bitmap and values), (2) rank every key and prefetch its value, (3) read
    /// the values (the rare keys whose /24 holds longer prefixes read one more entry);
    /// stage (1) runs up to 256 keys ahead of the others (the whole vector), so that a
    /// small sub-batch's record fetches are in flight well before it is ranked. With SIMD
    /// (detected at run time) the stages take 16 keys per instruction on CPUs with AVX-512
    /// (`avx512f` and `avx512vpopcntdq`: gathers, `vpopcntq`) and 8 on CPUs with AVX2, over
    /// the whole slice (`b` does not change them); stage (3) runs inside stage (2) where
    /// values lie in the record's line, else 64 keys behind it (after the value
    /// prefetches). The answers are those of
    /// [`lookup_vector_raw_portable`](Self::lookup_vector_raw_portable). Processes
    /// `min(keys.len(), out.len())` keys.
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
        let n = keys.len().min(out.len());
        let (keys, out) = (&keys[..n], &mut out[..n]);
        match self.read_path() {
            ReadPath::Compressed => self.staged(keys, out, b, true),
            ReadPath::Lines => self.lines_from(keys, 0, out, true),
            ReadPath::Dir24 => self.dir24_from(keys, 0, out, DIR24_DISTANCE, true),
            ReadPath::Auto => {
                let auto = self.auto.get_or(AutoPath::default);
                let lines_ok = self.fast.dense();
                let mut last = Side::Compressed;
                for (i, (kc, oc)) in keys.chunks(256).zip(out.chunks_mut(256)).enumerate() {
                    let step = auto.next(lines_ok);
                    let t0 = (step.timed && kc.len() >= 64).then(Instant::now);
                    // The master and the lines prefetch into the next vector; a vector
                    // after one read otherwise prefetches its own first keys.
                    let head = step.side != last;
                    match step.side {
                        Side::Dir24 => self.dir24_from(keys, i * 256, oc, DIR24_DISTANCE, head),
                        Side::Lines => self.lines_from(keys, i * 256, oc, head),
                        Side::Compressed => self.staged(kc, oc, b, true),
                    }
                    last = step.side;
                    if let Some(t0) = t0 {
                        let ns = t0.elapsed().as_nanos() as f64;
                        auto.record(step, ns / kc.len() as f64);
                    }
                }
            }
        }
    }

    /// Sets which structure the vector lookups read (see [`ReadPath`]); takes effect from
    /// the next vector, also in other threads' lookups.
    ///
    /// ```
    /// use pktvec_lookup::ipv4::{Lpm4, ReadPath};
    /// let lpm = Lpm4::new(Default::default());
    /// assert_eq!(lpm.read_path(), ReadPath::Auto);
    /// lpm.set_read_path(ReadPath::Compressed);
    /// assert_eq!(lpm.read_path(), ReadPath::Compressed);
    /// ```
    pub fn set_read_path(&self, path: ReadPath) {
        self.read_path.store(path as u8, Ordering::Relaxed);
    }

    /// The read path set by [`set_read_path`](Self::set_read_path) (`Auto` unless changed).
    pub fn read_path(&self) -> ReadPath {
        match self.read_path.load(Ordering::Relaxed) {
            1 => ReadPath::Compressed,
            2 => ReadPath::Dir24,
            3 => ReadPath::Lines,
            _ => ReadPath::Auto,
        }
    }

    /// Which path [`ReadPath::Auto`] has this thread reading now: `Some(true)` for the
    /// master, `Some(false)` for the compressed path, `None` before this thread's first
    /// vector lookup. For tests and benchmarks that report the choice.
    ///
    /// ```
    /// use pktvec_lookup::ipv4::Lpm4;
    /// let lpm = Lpm4::new(Default::default());
    /// assert_eq!(lpm.auto_reads_master(), None);
    /// lpm.lookup_vector_raw(&[1], &mut [0], 256);
    /// assert_eq!(lpm.auto_reads_master(), Some(false));
    /// ```
    pub fn auto_reads_master(&self) -> Option<bool> {
        self.auto_read_path().map(|p| p == ReadPath::Dir24)
    }

    /// Which structure [`ReadPath::Auto`] has this thread reading now (`Compressed`,
    /// `Lines` or `Dir24`), `None` before this thread's first vector lookup.
    ///
    /// ```
    /// use pktvec_lookup::ipv4::{Lpm4, ReadPath};
    /// let lpm = Lpm4::new(Default::default());
    /// assert_eq!(lpm.auto_read_path(), None);
    /// lpm.lookup_vector_raw(&[1], &mut [0], 256);
    /// assert_eq!(lpm.auto_read_path(), Some(ReadPath::Compressed));
    /// ```
    pub fn auto_read_path(&self) -> Option<ReadPath> {
        self.auto.get().map(|a| a.on.get().path())
    }

    /// [`lookup_vector_raw`](Self::lookup_vector_raw) without SIMD on any CPU (the
    /// loop that CPUs without AVX2 run; kept public to compare against).
    ///
    /// ```
    /// use pktvec_lookup::{ipv4::Lpm4, routes::{generate_ipv4, random_ipv4_keys}};
    /// let lpm = Lpm4::from_routes(Default::default(), &generate_ipv4(10_000, 1))?;
    /// let keys: Vec<u32> = random_ipv4_keys(256, 2).into_iter().map(u32::from).collect();
    /// let (mut a, mut b) = (vec![0; 256], vec![0; 256]);
    /// lpm.lookup_vector_raw(&keys, &mut a, 64);
    /// lpm.lookup_vector_raw_portable(&keys, &mut b, 64);
    /// assert_eq!(a, b);
    /// # Ok::<(), pktvec_lookup::ipv4::LpmError>(())
    /// ```
    pub fn lookup_vector_raw_portable(&self, keys: &[u32], out: &mut [u32], b: usize) {
        self.staged(keys, out, b, false);
    }

    #[inline(always)]
    fn staged(&self, keys: &[u32], out: &mut [u32], b: usize, simd: bool) {
        let b = b.clamp(1, 256);
        let n = keys.len().min(out.len());
        let (keys, out) = (&keys[..n], &mut out[..n]);
        if let Some(g) = self.fast.begin() {
            for (kc, oc) in keys.chunks(256).zip(out.chunks_mut(256)) {
                let any_group = if simd {
                    self.fast.values_staged(kc, oc, b)
                } else {
                    self.fast.values_staged_portable(kc, oc, b)
                };
                if any_group {
                    for (k, o) in kc.iter().zip(oc.iter_mut()) {
                        if *o != MISS && *o >= GROUP {
                            *o = self.resolve_group(*k, *o);
                        }
                    }
                }
            }
            if self.fast.valid(g) {
                return;
            }
        }
        self.master_vector(keys, out);
    }

    /// Software-pipelined vector lookup, [`MISS`] for no route: at step `i` it reads the
    /// directory entry of key `i + 2d` and prefetches its record, ranks key `i + d` and
    /// prefetches its value, and answers key `i` (`d` clamped to `1..=32`). Processes
    /// `min(keys.len(), out.len())` keys.
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
        let n = keys.len().min(out.len());
        let (keys, out) = (&keys[..n], &mut out[..n]);
        if let Some(g) = self.fast.begin() {
            self.fast.values_pipelined(keys, out, d);
            for (k, o) in keys.iter().zip(out.iter_mut()) {
                *o = self.decode(*k, *o);
            }
            if self.fast.valid(g) {
                return;
            }
        }
        self.master_vector(keys, out);
    }

    /// The DIR-24-8 master's own read path (64 MiB first level), software-pipelined with a
    /// prefetch `d` keys ahead (`d` clamped to `1..=64`), [`MISS`] for no route: what
    /// [`lookup_vector_raw`](Self::lookup_vector_raw) reads on [`ReadPath::Dir24`] (with
    /// `d` = 32), and where `Auto` finds it cheaper. Reads only atomic master entries, so
    /// it needs no retry while an update runs. Processes `min(keys.len(), out.len())` keys.
    ///
    /// ```
    /// use pktvec_lookup::ipv4::{Lpm4, MISS};
    /// let lpm = Lpm4::new(Default::default());
    /// lpm.add([10, 0, 0, 0].into(), 8, 1).unwrap();
    /// lpm.add([10, 0, 0, 7].into(), 32, 2).unwrap();
    /// let mut out = [0; 3];
    /// lpm.lookup_vector_dir24(&[0x0a00_0007, 0x0a00_0008, 1], &mut out, 16);
    /// assert_eq!(out, [2, 1, MISS]);
    /// ```
    pub fn lookup_vector_dir24(&self, keys: &[u32], out: &mut [u32], d: usize) {
        let n = keys.len().min(out.len());
        self.dir24_from(&keys[..n], 0, &mut out[..n], d, true);
    }

    /// [`lookup_vector_dir24`](Self::lookup_vector_dir24) of `keys[start..start +
    /// out.len()]` into `out`, prefetching `d` keys ahead into the rest of `keys` (so that
    /// a run of chunks keeps its prefetches in flight across chunk boundaries); `head`:
    /// also prefetch its own first `d` (no chunk before it did). `start + out.len() <=
    /// keys.len()`.
    #[inline]
    fn dir24_from(&self, keys: &[u32], start: usize, out: &mut [u32], d: usize, head: bool) {
        let d = d.clamp(1, 64);
        let tbl24: &[AtomicU32; TBL24_LEN] = &self.tbl24;
        let mine = &keys[start..start + out.len()];
        if head {
            for &k in mine.iter().take(d) {
                prefetch_read(&tbl24[(k >> 8) as usize]);
            }
        }
        for (i, (&k, o)) in mine.iter().zip(out.iter_mut()).enumerate() {
            if let Some(&ahead) = keys.get(start + i + d) {
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

    /// The lines' read path (see [`ReadPath::Lines`]) for `keys[start..start + out.len()]`,
    /// prefetching [`LINES_DISTANCE`] keys ahead, also into the rest of `keys`; with
    /// `head`, first prefetches the range's own first keys. Keys whose run is not in its
    /// line (a /24 holding longer prefixes, a quarter of more than 18 runs) are answered
    /// from the master after each 256 keys, while those keys are in L1: their first-level
    /// entries prefetched together, then read (a pass over the whole range afterwards
    /// cost 5–12 cycles a key on 1M keys, fetching keys and answers again). Under the same
    /// sequence check as the staged loop, with the master as the fallback.
    fn lines_from(&self, keys: &[u32], start: usize, out: &mut [u32], head: bool) {
        let mine = &keys[start..start + out.len()];
        if let Some(g) = self.fast.begin() {
            for (c, oc) in out.chunks_mut(256).enumerate() {
                let at = start + c * 256;
                let escaped =
                    self.fast
                        .lines()
                        .values(keys, at, oc, LINES_DISTANCE, head && c == 0);
                if escaped {
                    let kc = &keys[at..at + oc.len()];
                    for (&k, o) in kc.iter().zip(oc.iter()) {
                        if *o == compressed::ESCAPED {
                            prefetch_read(&self.tbl24[(k >> 8) as usize]);
                        }
                    }
                    for (&k, o) in kc.iter().zip(oc.iter_mut()) {
                        if *o == compressed::ESCAPED {
                            *o = self.master_raw(k);
                        }
                    }
                }
            }
            if self.fast.valid(g) {
                return;
            }
        }
        self.master_vector(mine, out);
    }

    /// Resolves a DIR-24-8 first-level entry `e` that points to a group, re-reading the
    /// first-level entry after the group (a sequence check against group reuse).
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

    // ---------------------------------------------------------------- read path upkeep

    /// The read-path value of DIR-24-8 first-level entry `e`.
    fn slot_value(e: u32) -> u32 {
        if code(e) == CODE_EXT {
            GROUP | (e & PAYLOAD)
        } else if depth_of(e).is_some() {
            e & PAYLOAD
        } else {
            NO_ROUTE
        }
    }

    /// Rebuilds the read path of the quarters holding first-level slots `first..=last`
    /// from the master, in one write window (or marks them for the end of a batch).
    fn refresh(&self, w: &mut Writer, first: usize, last: usize) -> Result<(), LpmError> {
        let (qa, qb) = (first >> 6, last >> 6);
        if let Some(d) = w.deferred.as_mut() {
            d[qa..=qb].iter_mut().for_each(|x| *x = true);
            return Ok(());
        }
        self.rebuild_quarters(w, qa..=qb)
    }

    /// Rebuilds `quarters` of the read path from the master in one write window.
    fn rebuild_quarters(
        &self,
        w: &mut Writer,
        quarters: impl IntoIterator<Item = usize>,
    ) -> Result<(), LpmError> {
        self.fast.begin_write();
        let r = quarters
            .into_iter()
            .try_for_each(|q| self.rebuild_quarter(w, q));
        self.fast.end_write();
        r
    }

    /// The read-path values of quarter `q`'s 64 first-level slots.
    fn quarter_slots(&self, q: usize) -> [u32; 64] {
        let mut slots = [0u32; 64];
        for (s, e) in slots.iter_mut().zip(&self.tbl24[q << 6..(q + 1) << 6]) {
            *s = Self::slot_value(e.load(Ordering::Relaxed));
        }
        slots
    }

    fn rebuild_quarter(&self, w: &mut Writer, q: usize) -> Result<(), LpmError> {
        let slots = self.quarter_slots(q);
        self.fast
            .publish(&mut w.alloc, q, &slots)
            .map_err(|_| LpmError::TableFull)
    }

    /// Whether the read path surely has room to rebuild slots `first..=last`.
    fn check_room(&self, w: &Writer, first: usize, last: usize) -> Result<(), LpmError> {
        if w.deferred.is_some() || Compressed::room_for(&w.alloc, first >> 6, last >> 6) {
            Ok(())
        } else {
            Err(LpmError::TableFull)
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
        let mut created_group = false;
        let (first, count) = slot_range(net, len);
        let chunks = (first, first + count - 1);
        self.check_room(&w, chunks.0, chunks.1)?;
        if len <= 24 {
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
                created_group = true;
            }
        }
        if w.rules[usize::from(len)].insert(net, next_hop).is_none() {
            w.n_rules += 1;
        }
        if len <= 24 || created_group {
            self.refresh(&mut w, chunks.0, chunks.1)?;
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
        let (first, count) = slot_range(net, len);
        let chunks = (first, first + count - 1);
        if !w.rules[usize::from(len)].contains_key(&net) {
            return Err(LpmError::NotFound);
        }
        self.check_room(&w, chunks.0, chunks.1)?;
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
                    self.refresh(&mut w, chunks.0, chunks.1)?;
                }
            }
            return Ok(old);
        }
        self.refresh(&mut w, chunks.0, chunks.1)?;
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
            // A reader holding an old read-path pointer to this group sees the write
            // window of the refresh that unlinked it, and falls back to the master.
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

/// The first-level slots `first..first + count` a prefix covers.
fn slot_range(net: u32, len: u8) -> (usize, usize) {
    let first = (net >> 8) as usize;
    (first, if len <= 24 { 1usize << (24 - len) } else { 1 })
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `periods` periods of the chooser where a vector costs `cost(side)` ns a key;
    /// returns the share of vectors read from each side (compressed, lines, master) and
    /// the path in use at the end.
    fn run(auto: &AutoPath, periods: u32, cost: [f64; 3]) -> ([f64; 3], Side) {
        run_with(auto, periods, cost, true)
    }

    /// [`run`], the lines probed only if `lines_ok`.
    fn run_with(auto: &AutoPath, periods: u32, cost: [f64; 3], lines_ok: bool) -> ([f64; 3], Side) {
        let mut on = [0u64; 3];
        let mut total = 0u64;
        let mut done = 0;
        while done < periods {
            if auto.vectors.get() >= auto.period.get() {
                done += 1;
            }
            let step = auto.next(lines_ok);
            total += 1;
            let i = step.side as usize;
            on[i] += 1;
            if step.timed {
                auto.record(step, cost[i]);
            }
        }
        (on.map(|n| n as f64 / total as f64), auto.on.get())
    }

    #[test]
    fn auto_reads_the_cheapest_path_and_probes_the_others_less_over_time() {
        let auto = AutoPath::default();
        // Compressed cheapest: stays there; the lines and the master take turns at the
        // probes (256 and 32 vectors), in periods of 2,048, 4,096, 8,192 and 16,384.
        let (share, on) = run(&auto, 4, [27.0, 33.0, 39.0]);
        assert_eq!(on, Side::Compressed);
        assert_eq!(auto.period.get(), 8 * AUTO_PERIOD);
        let expected = (2.0 * 256.0 + 2.0 * 32.0) / (15 * AUTO_PERIOD) as f64;
        assert!(
            (share[1] + share[2] - expected).abs() < 1e-4,
            "{share:?} against {expected}"
        );
        // Slightly cheaper master (within 15%): not worth a move; the periods stay long.
        assert_eq!(run(&auto, 4, [40.0, 45.0, 36.0]).1, Side::Compressed);
        assert_eq!(auto.period.get(), 8 * AUTO_PERIOD);
        // Master clearly cheaper: moves after its next probe...
        assert_eq!(run(&auto, 2, [64.0, 70.0, 39.0]).1, Side::Dir24);
        assert_eq!(auto.period.get(), AUTO_PERIOD);
        // ...and the other probes thin out as the periods double (up to 8×).
        let (share, on) = run(&auto, 6, [64.0, 70.0, 39.0]);
        assert_eq!(on, Side::Dir24);
        assert_eq!(auto.period.get(), 8 * AUTO_PERIOD);
        assert!(share[2] > 0.9, "{share:?}");
        // Lines cheaper: there after at most two periods (one probe of each), short
        // periods again.
        assert_eq!(run(&auto, 2, [64.0, 25.0, 39.0]).1, Side::Lines);
        assert_eq!(auto.period.get(), AUTO_PERIOD);
        // Compressed cheaper again: back within two periods.
        assert_eq!(run(&auto, 2, [20.0, 25.0, 39.0]).1, Side::Compressed);
    }

    #[test]
    fn auto_probes_the_lines_only_on_dense_tables() {
        // Sparse table: the lines are never read, even where they would time cheaper;
        // the master takes every probe.
        let auto = AutoPath::default();
        let (share, on) = run_with(&auto, 4, [27.0, 10.0, 39.0], false);
        assert_eq!(on, Side::Compressed);
        assert_eq!(share[1], 0.0);
        let expected = 4.0 * 32.0 / (15 * AUTO_PERIOD) as f64;
        assert!((share[2] - expected).abs() < 1e-4, "{share:?}");
        // Dense again: the next probe of the lines moves there.
        assert_eq!(run(&auto, 2, [27.0, 10.0, 39.0]).1, Side::Lines);
    }

    #[test]
    fn auto_is_not_moved_by_one_slow_vector() {
        // The minimum of 16 timed vectors a side: one interrupted vector does not count.
        let auto = AutoPath::default();
        let mut slow_once = true;
        for _ in 0..3 * AUTO_PERIOD {
            let step = auto.next(true);
            if step.timed {
                let mut c = match step.side {
                    Side::Compressed => 27.0,
                    Side::Lines => 33.0,
                    Side::Dir24 => 39.0,
                };
                if step.side == Side::Compressed && slow_once {
                    c = 1000.0;
                    slow_once = false;
                }
                auto.record(step, c);
            }
        }
        assert_eq!(auto.on.get(), Side::Compressed);
    }

    /// On a table where most quarters hold a record (uniformly placed, 400k prefixes),
    /// single lookups and their prefetch read the lines (escapes to the master), and
    /// answer as the master does, with and without groups.
    #[test]
    fn single_lookups_on_a_dense_table_read_the_lines_and_answer_alike() {
        let routes = crate::routes::generate_ipv4(400_000, 9);
        let lpm = Lpm4::from_routes(Lpm4Config::default(), &routes).unwrap();
        assert!(lpm.fast.dense());
        let keys: Vec<u32> = crate::routes::random_ipv4_keys(50_000, 10)
            .into_iter()
            .map(u32::from)
            .chain(routes.iter().take(20_000).map(|r| u32::from(r.addr) | 0x7f))
            .collect();
        let mut master = vec![0; keys.len()];
        lpm.lookup_vector_dir24(&keys, &mut master, 16);
        let mut escaped = 0;
        for (&k, &m) in keys.iter().zip(&master) {
            lpm.prefetch(k);
            assert_eq!(lpm.lookup_raw(k), m, "{k:#x}");
            escaped += usize::from(lpm.fast.lines().value(k) == compressed::ESCAPED);
        }
        // Some keys fall in /24s holding longer prefixes (or a long quarter's tail).
        assert!(escaped > 0);
    }

    #[test]
    fn every_read_path_answers_alike_across_chunks() {
        let lpm = Lpm4::new(Lpm4Config {
            max_groups: 1024,
            huge_pages: false,
        });
        lpm.add([10, 0, 0, 0].into(), 8, 1).unwrap();
        lpm.add([10, 1, 2, 128].into(), 25, 2).unwrap();
        lpm.add([192, 168, 0, 0].into(), 16, 3).unwrap();
        let keys: Vec<u32> = (0..5000u32)
            .map(|i| i.wrapping_mul(0x9e37_79b9) ^ if i % 3 == 0 { 0x0a01_0280 } else { 0 })
            .collect();
        let expect: Vec<u32> = keys.iter().map(|&k| lpm.lookup_raw(k)).collect();
        for path in [
            ReadPath::Compressed,
            ReadPath::Lines,
            ReadPath::Dir24,
            ReadPath::Auto,
        ] {
            lpm.set_read_path(path);
            // Enough calls for Auto to cross periods (and so switch paths mid-slice).
            for _ in 0..200 {
                let mut out = vec![0; keys.len()];
                lpm.lookup_vector_raw(&keys, &mut out, 64);
                assert_eq!(out, expect, "{path:?}");
            }
        }
        assert!(lpm.auto_reads_master().is_some());
    }
}
