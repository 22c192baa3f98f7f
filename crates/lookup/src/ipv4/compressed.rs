//! The read path of [`Lpm4`](super::Lpm4): the DIR-24-8 first level (2^24 /24 slots,
//! 64 MiB) compressed into 64-slot run bitmaps kept next to their run values, so that a
//! random lookup makes one far memory access (plus one into a 1 MiB directory) instead
//! of the two far accesses of a bitmap array and a separate values pool.
//!
//! # Layout
//!
//! The 2^24 /24 slots are cut into 2^18 *quarters* of 64 slots (one per /18). Equal
//! neighbouring slots form *runs*. Each quarter has a 4-byte *directory* entry (1 MiB in
//! all, which mostly stays in L2/L3 and within the TLB's reach):
//!
//! * bit 31 clear: the quarter is one run and the entry is its value (no second access);
//! * bit 31 set ([`REC`]): bits 0..25 are the word offset of the quarter's *record* in a
//!   pool of `u32` words: the 64-bit run-start bitmap (bit `s` set where a run starts, two
//!   words) followed by one value per run. Bit 30 ([`NARROW`]) says the values are 3 bytes
//!   each (a record whose values are all next hops below 2^24 − 1 or "no route", stored
//!   as [`NARROW_NONE`]: nearly every record of a table with 24-bit next hops, as
//!   rte_lpm's), else 4 bytes. A record of up to 64 bytes (18 runs of 3-byte values, 14 of
//!   4-byte ones) never straddles a cache line, so the bitmap and the value are usually one
//!   line.
//!
//! The value for key `k` in a record at `r` with rank `n = popcount(bits << (63 − s))`,
//! `s = (k >> 8) & 63`, is the word `pool[r + 1 + n]` (4-byte values) or the top 3 bytes of
//! the 4 bytes at pool byte `4r + 4 + 3n` (3-byte values; the read starts one byte early so
//! it never leaves the record): one `popcnt`, and usually no second cache miss. A value is a
//! next hop, [`NO_ROUTE`], or `GROUP | g`, a pointer to the DIR-24-8 master's second-level
//! group `g` (for a /24 holding longer prefixes), read with `k & 255`.
//!
//! 3-byte values and the placement below shrink the read path of a uniformly placed 1M
//! table (`routes::generate_ipv4`) from 11.5 to 9.3 MiB besides its second-level groups,
//! and of the clustered and real tables by 17–18%: see `docs/results/lookup-tables.md`.
//!
//! # Updates: a sequence counter, with the master as the fallback
//!
//! A record is fully written before the directory entry pointing to it is stored (one
//! atomic store), but a freed record can be reused for another quarter while a reader
//! still reads it, so the writer (under [`Lpm4`](super::Lpm4)'s mutex) makes every change
//! to this structure inside a *write window*: it makes the sequence counter odd, writes the
//! records and directory entries, and makes it even again. A reader notes the counter
//! before a lookup (or a whole vector) and checks it after (`Acquire` fences, seqlock
//! style); if a window was open or overlapped, it answers from the DIR-24-8 master instead,
//! whose entries are each one atomic store of a valid answer. So readers never wait for the
//! writer and never use a half-written or reused record. The master is updated before the
//! window opens, so either path gives the old or the new answer.
//!
//! # Capacity
//!
//! The pool is reserved up front (2^26 words, 256 MiB of address space) but zero-filled
//! lazily by the OS: only what is used is committed. Freed records are kept on exact-size
//! free lists and reused first; a record of at most a line goes into the smallest hole
//! left at the end of a line that fits it, and a batch build (`Lpm4::from_routes`) places
//! the records largest first (best-fit decreasing), so that small records fill the line
//! ends that large ones leave. Every prefix adds at most two runs, so a table of several
//! million prefixes fits; [`Compressed::room_for`] refuses an update that might not.

use std::sync::atomic::{fence, AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};

use super::PrefetchLevel;
use pktvec_packet::mem::advise_hugepages;
use pktvec_packet::prefetch::{prefetch_read, prefetch_read_l2};

/// Value bit marking a pointer to a DIR-24-8 second-level group.
pub(super) const GROUP: u32 = 1 << 30;
/// Value meaning "no route" (above every next hop, below [`GROUP`]).
pub(super) const NO_ROUTE: u32 = GROUP - 1;
/// Directory-entry bit: the rest is a record offset, not a value.
const REC: u32 = 1 << 31;
/// Directory-entry bit (with [`REC`]): the record's values are 3 bytes each (next hops
/// below [`NARROW_NONE`], and [`NARROW_NONE`] for "no route"), else 4 bytes.
const NARROW: u32 = 1 << 30;
/// A narrow record's "no route".
const NARROW_NONE: u32 = 0xff_ffff;
/// What the staged lookup answers for "no route" (`ipv4::MISS`).
const MISS_OUT: u32 = u32::MAX;

#[cfg(target_arch = "x86_64")]
mod avx2;
mod lines;

use lines::Lines;
pub(super) use lines::ESCAPED;

/// Elsewhere than x86-64: the portable loop only.
#[cfg(not(target_arch = "x86_64"))]
mod avx2 {
    use super::Compressed;

    pub(super) fn available() -> bool {
        false
    }

    #[inline(always)]
    pub(super) fn values_staged(c: &Compressed, keys: &[u32], out: &mut [u32]) -> bool {
        c.values_staged_portable(keys, out, 256)
    }
}

/// Number of 64-slot quarters (one per /18).
pub(super) const QUARTERS: usize = 1 << 18;
/// Length of the pool in words: a power of two, so masking an index proves bounds.
const POOL_LEN: usize = 1 << 26;
/// Largest record: 64 runs of 4-byte values after the two bitmap words.
const MAX_RECORD_WORDS: usize = 66;
/// Pool words that can be handed out: records start below [`REC_MASK`], so a record's
/// bitmap and values (`r + 1 + 64`) are in bounds for any masked offset.
const MAX_WORDS: u32 = (POOL_LEN / 2) as u32;
/// Mask of a record offset in a directory entry.
const REC_MASK: u32 = MAX_WORDS - 1;
/// Words per cache line.
const LINE: u32 = 16;

/// Why a quarter could not be rebuilt: the pool is exhausted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct PoolFull;

/// Writer-side allocation state of the pool.
#[derive(Debug)]
pub(super) struct Alloc {
    /// (record offset, words) of each quarter; words 0 = single run, value in the
    /// directory.
    placement: Vec<(u32, u8)>,
    fresh: u32,
    /// free[n]: freed records of `n` words.
    free: Vec<Vec<u32>>,
    /// Words in live records.
    live_words: u64,
    /// Words skipped so that short records do not straddle a cache line, and not yet
    /// reused.
    pad_words: u64,
    /// holes[n]: unused runs of `n` words at the end of a line (`n < LINE`).
    holes: Vec<Vec<u32>>,
    /// Live records, and those longer than a line (whose later values lie in another
    /// line than the bitmap).
    records: u64,
    long_records: u64,
}

/// The compressed read structure (see the [module docs](self)).
pub(super) struct Compressed {
    dir: Box<[AtomicU32; QUARTERS]>,
    /// The pool's words, [`LINE`] more than it holds: it starts `base` words in, on a
    /// cache line (see [`pool`](Self::pool)).
    pool_raw: Box<[AtomicU32; POOL_LEN + LINE as usize]>,
    /// Words from the start of `pool_raw` to the first cache-line boundary (< [`LINE`]).
    base: usize,
    /// Whether the SIMD loops prefetch each key's value after ranking it: set while at
    /// least a tenth of the records are longer than a line (see [`Compressed::publish`]).
    /// Otherwise nearly every value lies in the line just read for the bitmap, and the
    /// prefetches only cost issue slots (the uniform 1M table: 0.2% of the records are
    /// long; the real and clustered tables: 32–44%, with 4–5% of the keys' values in a
    /// record's second line).
    prefetch_values: AtomicBool,
    /// The smallest sub-batch from which the staged loops prefetch records and values into
    /// L2 only ([`prefetch_read_l2`]) rather than into L1: kept by
    /// [`publish`](Compressed::publish) from the share of quarters with a record (see
    /// [`l2_prefetch_from`]).
    l2_from: AtomicU32,
    /// Whether at least half the quarters hold a record (kept by
    /// [`publish`](Compressed::publish)): only then does `ReadPath::Auto` probe the lines,
    /// which read a line a key where the compressed path reads the directory alone for a
    /// single-run quarter (the uniform 1M table: 98% of the quarters have a record; the
    /// real and clustered tables 25–28%, where the lines read 2–4× slower).
    dense: AtomicBool,
    /// [`PrefetchLevel`] as set by the user (`Auto` = follow `l2_from`).
    level: AtomicU8,
    seq: AtomicU64,
    /// Whether the AVX-512 staged loop can run on this CPU (checked once).
    avx512: bool,
    /// Whether the AVX2 staged loop can run on this CPU (checked once; used where AVX-512
    /// is not).
    avx2: bool,
    /// The same quarters again, one line each at a fixed place ([`lines`]).
    lines: Lines,
}

/// `N` zeroed entries from `alloc_zeroed` (the OS hands out zero pages lazily, so only
/// what is touched is committed), advised to use huge pages if `huge`; and whether the
/// advice was taken.
fn zeroed_array<T: bytemuck::Zeroable, const N: usize>(huge: bool) -> (Box<[T; N]>, bool) {
    let b: Box<[T]> = bytemuck::zeroed_slice_box(N);
    let advised = huge && advise_hugepages(&b);
    match b.try_into() {
        Ok(a) => (a, advised),
        Err(_) => unreachable!("length is N by construction"),
    }
}

/// Keys the staged loops' first stage (directory read, record prefetch) runs ahead of the
/// ranking stage, at least (one sub-batch where that is more). With sub-batches of 16 (the
/// graph's default) a look-ahead of one sub-batch kept only 16–32 record fetches in flight,
/// too few to cover a far miss (b = 16 cost 1.5–2× b = 256 on the 1M tables); the first
/// stage is a gather and a prefetch per key, so it runs over the whole vector first and
/// the sub-batch `b` sets the grain of the ranking and value stages.
pub(super) const AHEAD_MIN: usize = 256;

/// How many keys the portable staged loop's value stage stays behind its ranking stage.
const VALUES_BEHIND: usize = 64;

/// Record lines a sub-batch may fetch before its prefetches go to L2 only: the threshold
/// that separates the cases measured in `docs/results/lookup-tables.md` (L2 prefetches
/// faster above it, slower or equal below).
const L2_PREFETCH_RECORDS: u64 = 12;

/// The smallest sub-batch `b` from which the staged loops prefetch into L2 only, for a
/// table with `records` multi-run quarters: where a sub-batch is expected to fetch at
/// least [`L2_PREFETCH_RECORDS`] record lines (`b · records / QUARTERS`; keys in
/// single-run quarters fetch no record). Never for a table without records.
///
/// Measured on Zen 4 (`docs/results/lookup-tables.md`, one sitting, both levels forced):
/// on the uniform 1M table (98% of the quarters have records: L2 from `b = 13`) L2 is
/// 1.5–1.7× faster at every `b` from 16 to 256; on the real and clustered tables (25–28%:
/// L2 from `b = 44`–`48`) L1 is 5–12% faster at `b <= 32`, the two are even at `b = 64`,
/// and L2 is 8–20% faster at `b = 256`.
fn l2_prefetch_from(records: u64) -> u32 {
    let q = QUARTERS as u64;
    match records.min(q) {
        0 => u32::MAX,
        r => (L2_PREFETCH_RECORDS * q).div_ceil(r) as u32,
    }
}

/// Index of the key's quarter.
#[inline(always)]
fn quarter_of(key: u32) -> usize {
    (key >> 14) as usize
}

/// The record offset of directory entry `e`, 0 (a dummy record: bitmap 1, always in L1)
/// for a single-run quarter; branch-free.
#[inline(always)]
fn record_of(e: u32) -> usize {
    let is_rec = ((e as i32) >> 31) as u32; // all ones if REC is set
    (e & REC_MASK & is_rec) as usize
}

/// Byte offset in the pool of the 4 bytes that hold the key's run value, in the record
/// at word `r` with run bitmap `bits`, for values of `width` bytes (4, or 3 for a narrow
/// record). With rank = runs started at slots 0..=s (at least 1):
/// * 4-byte values: value `rank − 1` is the word `r + 2 + rank − 1`, i.e. bytes
///   `4r + 4 + 4·rank ..+ 4`;
/// * 3-byte values: value `rank − 1` is bytes `4r + 8 + 3(rank − 1) ..+ 3`; the 4 bytes
///   read start one byte before it (`4r + 4 + 3·rank`, never before the record, never past
///   its end) and the value is their top 3 bytes.
///
/// At most `4·REC_MASK + 4 + 4·64 < 4·POOL_LEN − 4` for a masked `r`.
#[inline(always)]
fn value_offset(bits: u64, r: usize, key: u32, width: usize) -> usize {
    let shift = !(key >> 8) & 63; // 63 − s
    let rank = (bits << shift).count_ones() as usize;
    4 * r + 4 + width * rank
}

/// The value width (bytes) of the record of directory entry `e` (a record entry).
#[inline(always)]
fn width_of(e: u32) -> usize {
    4 - (e >> 30 & 1) as usize
}

/// A 4- or 8-byte word read from `arr` (the pool or the lines array) at byte offset
/// `off` (clamped so the read stays in `arr`; callers pass offsets that are in bounds by
/// construction), in one unaligned `mov`.
///
/// The writer may store words concurrently (inside a write window); the readers use
/// what they read only if the sequence check finds no window overlapped, as for the
/// atomic loads of the other architectures and the AVX-512 gathers. The load is an
/// `asm!` block rather than a Rust read so that the compiler treats it as an opaque read
/// of memory it does not own (no assumption that the bytes are unchanging, no tearing
/// into several loads); on x86-64 an unaligned `mov` is one access per cache line.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn racy_load<T: RacyWord, const N: usize>(arr: &[AtomicU32; N], off: usize) -> T {
    let off = off.min(4 * N - std::mem::size_of::<T>());
    let p = arr.as_ptr().cast::<u8>().wrapping_add(off);
    // SAFETY: `p` points into `arr` with at least `size_of::<T>()` bytes after it (the
    // clamp above); the `asm!` only reads those bytes (`readonly`, no stack, flags kept),
    // and any value is a valid `u32`/`u64`.
    unsafe { T::load(p) }
}

/// The 8 bytes at byte offset `off` of `arr` (little-endian; `off` a multiple of 4): one
/// unaligned load on x86-64, see [`racy_load`].
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(super) fn load_u64_at<const N: usize>(arr: &[AtomicU32; N], off: usize) -> u64 {
    racy_load::<u64, N>(arr, off)
}

/// The 8 bytes at byte offset `off` of `arr` (little-endian; `off` a multiple of 4), as
/// two word loads (indices clamped into `arr`).
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
pub(super) fn load_u64_at<const N: usize>(arr: &[AtomicU32; N], off: usize) -> u64 {
    let w = off >> 2;
    let lo = arr[w.min(N - 1)].load(Ordering::Relaxed);
    let hi = arr[(w + 1).min(N - 1)].load(Ordering::Relaxed);
    u64::from(lo) | u64::from(hi) << 32
}

/// The 4 bytes at byte offset `off` of `arr` (little-endian; `off` need not be aligned):
/// one unaligned load on x86-64, see [`racy_load`].
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(super) fn load_u32_at<const N: usize>(arr: &[AtomicU32; N], off: usize) -> u32 {
    racy_load::<u32, N>(arr, off)
}

/// The 4 bytes at byte offset `off` of `arr` (little-endian), from the word holding the
/// first and the word holding the last (the same word if `off` is aligned; indices
/// clamped into `arr`).
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
pub(super) fn load_u32_at<const N: usize>(arr: &[AtomicU32; N], off: usize) -> u32 {
    let w = off >> 2;
    let sh = (off & 3) * 8;
    let lo = arr[w.min(N - 1)].load(Ordering::Relaxed);
    let hi = arr[(w + usize::from(sh != 0)).min(N - 1)].load(Ordering::Relaxed);
    ((u64::from(lo) | u64::from(hi) << 32) >> sh) as u32
}

/// The words [`racy_load`] reads: `u32` and `u64`.
#[cfg(target_arch = "x86_64")]
trait RacyWord: Sized {
    /// One unaligned load of `Self` at `p`.
    ///
    /// # Safety
    /// `p` must be valid for reading `size_of::<Self>()` bytes.
    // SAFETY: an `unsafe fn` because the pointer's validity is the caller's to prove
    // (`racy_load` checks the range against the array first).
    unsafe fn load(p: *const u8) -> Self;
}

#[cfg(target_arch = "x86_64")]
impl RacyWord for u32 {
    // SAFETY: the trait's contract (4 readable bytes at `p`) is the caller's.
    #[inline(always)]
    unsafe fn load(p: *const u8) -> u32 {
        let v: u32;
        // SAFETY: the caller guarantees 4 readable bytes at `p`.
        unsafe {
            std::arch::asm!("mov {v:e}, dword ptr [{p}]", p = in(reg) p, v = out(reg) v,
                options(nostack, preserves_flags, readonly));
        }
        v
    }
}

#[cfg(target_arch = "x86_64")]
impl RacyWord for u64 {
    // SAFETY: the trait's contract (8 readable bytes at `p`) is the caller's.
    #[inline(always)]
    unsafe fn load(p: *const u8) -> u64 {
        let v: u64;
        // SAFETY: the caller guarantees 8 readable bytes at `p`.
        unsafe {
            std::arch::asm!("mov {v}, qword ptr [{p}]", p = in(reg) p, v = out(reg) v,
                options(nostack, preserves_flags, readonly));
        }
        v
    }
}

/// `v` read from a narrow record (`narrow`): [`NO_ROUTE`] for [`NARROW_NONE`]; else `v`.
/// Branch-free: a branch here mispredicts on tables where many keys have no route.
#[inline(always)]
fn narrow_none_to_no_route(v: u32, narrow: bool) -> u32 {
    select(narrow & (v == NARROW_NONE), NO_ROUTE, v)
}

/// `if c { a } else { b }` as a `cmov` (`std::hint::select_unpredictable` where the
/// compiler has it): the read path's selects depend on loaded data, and LLVM turns some of
/// them into branches that mispredict.
#[inline(always)]
#[allow(clippy::incompatible_msrv)]
fn select(c: bool, a: u32, b: u32) -> u32 {
    #[cfg(pktvec_select_unpredictable)]
    {
        std::hint::select_unpredictable(c, a, b)
    }
    #[cfg(not(pktvec_select_unpredictable))]
    {
        if c {
            a
        } else {
            b
        }
    }
}

/// Words of a record of `runs` runs (bitmap + values) with 3- or 4-byte values.
fn record_words(runs: u32, narrow: bool) -> u32 {
    if narrow {
        2 + (3 * runs).div_ceil(4)
    } else {
        2 + runs
    }
}

/// Whether a record's values all fit in 3 bytes: next hops below [`NARROW_NONE`], or
/// [`NO_ROUTE`] (stored as [`NARROW_NONE`]); not group pointers.
fn fits_narrow(values: impl IntoIterator<Item = u32>) -> bool {
    values.into_iter().all(|v| v < NARROW_NONE || v == NO_ROUTE)
}

/// The run-start bitmap and run count of 64 slot values.
fn runs_of(slots: &[u32]) -> (u64, u32) {
    let mut bits = 0u64;
    let mut runs = 0u32;
    for s in 0..slots.len().min(64) {
        if s == 0 || slots[s] != slots[s - 1] {
            bits |= 1 << s;
            runs += 1;
        }
    }
    (bits, runs)
}

impl Compressed {
    /// Every quarter a single run of "no route"; also returns whether the arrays were
    /// advised to use transparent huge pages.
    pub(super) fn new(huge_pages: bool) -> (Self, Alloc, bool) {
        let (dir, a1) = zeroed_array::<AtomicU32, QUARTERS>(huge_pages);
        let (pool_raw, a2) = zeroed_array::<AtomicU32, { POOL_LEN + LINE as usize }>(huge_pages);
        // The allocator aligns the pool to 16 bytes only (a large `calloc` is an `mmap`
        // plus a 16-byte header); the placement keeps records within cache lines of the
        // pool, so the pool must start on one.
        let base = (pool_raw.as_ptr() as usize).wrapping_neg() % 64 / 4;
        let (lines, a3) = Lines::new(huge_pages);
        let c = Compressed {
            dir,
            pool_raw,
            base,
            prefetch_values: AtomicBool::new(false),
            l2_from: AtomicU32::new(l2_prefetch_from(0)),
            dense: AtomicBool::new(false),
            level: AtomicU8::new(PrefetchLevel::Auto as u8),
            seq: AtomicU64::new(0),
            avx512: avx512::available(),
            avx2: avx2::available(),
            lines,
        };
        // The dummy record at 0 that single-run quarters rank in: bitmap 1.
        c.pool()[0].store(1, Ordering::Relaxed);
        c.pool()[2].store(NO_ROUTE, Ordering::Relaxed);
        for d in c.dir.iter() {
            d.store(NO_ROUTE, Ordering::Relaxed);
        }
        let alloc = Alloc {
            placement: vec![(0, 0); QUARTERS],
            fresh: LINE,
            free: (0..=MAX_RECORD_WORDS).map(|_| Vec::new()).collect(),
            live_words: 0,
            pad_words: 0,
            holes: (0..=LINE).map(|_| Vec::new()).collect(),
            records: 0,
            long_records: 0,
        };
        (c, alloc, a1 || a2 || a3)
    }

    /// Bytes the lookups can read: the directory, the live records and the padding that
    /// keeps short records within a cache line.
    pub(super) fn memory_bytes(alloc: &Alloc) -> usize {
        QUARTERS * 4 + (LINE as usize + (alloc.live_words + alloc.pad_words) as usize) * 4
    }

    /// Committed bytes, at most: the directory, the pool's high-water mark and the lines
    /// array (whose pages are committed as they are written).
    pub(super) fn committed_bytes(alloc: &Alloc) -> usize {
        QUARTERS * 4 + alloc.fresh as usize * 4 + Lines::BYTES
    }

    /// Whether rebuilding quarters `first..=last` after one update surely finds room in the
    /// pool. One update paints a range of slots except those held by longer prefixes, i.e.
    /// at most `runs + 1` segments, so a quarter ends with at most `3 · runs + 2` runs (and
    /// never more than 64), plus its bitmap and at most a line of padding.
    pub(super) fn room_for(alloc: &Alloc, first: usize, last: usize) -> bool {
        let need: u64 = alloc.placement[first..=last]
            .iter()
            .map(|&(_, n)| (3 * u64::from(n.max(1)) + 2).min(64) + 3 + u64::from(LINE))
            .sum();
        u64::from(MAX_WORDS - alloc.fresh) >= need
    }

    /// The pool: [`POOL_LEN`] words starting on a cache line (bounds provable at compile
    /// time: `base` is masked below [`LINE`]).
    #[inline(always)]
    fn pool(&self) -> &[AtomicU32; POOL_LEN] {
        let b = self.base & (LINE as usize - 1);
        match self.pool_raw[b..b + POOL_LEN].try_into() {
            Ok(p) => p,
            Err(_) => unreachable!("the slice has POOL_LEN words"),
        }
    }

    /// Opens a write window (the sequence counter becomes odd).
    pub(super) fn begin_write(&self) {
        self.seq.fetch_add(1, Ordering::Relaxed);
        fence(Ordering::Release);
    }

    /// Closes the write window (the counter becomes even).
    pub(super) fn end_write(&self) {
        self.seq.fetch_add(1, Ordering::Release);
    }

    fn take_region(&self, a: &mut Alloc, size: u32) -> Result<u32, PoolFull> {
        if let Some(r) = a.free[size as usize].pop() {
            return Ok(r);
        }
        if size <= LINE {
            // A hole left at the end of a line, the smallest that fits.
            if let Some(h) = (size..=LINE).find(|&h| !a.holes[h as usize].is_empty()) {
                let r = a.holes[h as usize].pop().unwrap_or_default();
                a.pad_words -= u64::from(size);
                if h - size >= record_words(2, true) {
                    a.holes[(h - size) as usize].push(r + size);
                }
                return Ok(r);
            }
        }
        let in_line = a.fresh % LINE;
        // Short records never straddle a line; long ones start one (bitmap and the first
        // values together). The words skipped become a hole for a later short record.
        let pad = if (size <= LINE && in_line + size > LINE) || (size > LINE && in_line != 0) {
            LINE - in_line
        } else {
            0
        };
        if a.fresh + pad + size > MAX_WORDS {
            return Err(PoolFull);
        }
        if pad > 0 {
            a.pad_words += u64::from(pad);
            a.holes[pad as usize].push(a.fresh);
        }
        a.fresh += pad + size;
        Ok(a.fresh - size)
    }

    /// Rebuilds quarter `q` from its 64 slot values (each a next hop, [`NO_ROUTE`] or
    /// `GROUP | g`). Call inside a write window. On error the quarter is unchanged.
    pub(super) fn publish(&self, a: &mut Alloc, q: usize, slots: &[u32]) -> Result<(), PoolFull> {
        let slots = &slots[..slots.len().min(64)];
        let (bits, runs) = runs_of(slots);
        let (r, n) = if runs == 1 {
            self.dir[q].store(slots[0], Ordering::Release);
            (0, 0)
        } else {
            let starts = || (0..slots.len()).filter(|&s| bits >> s & 1 == 1);
            let narrow = fits_narrow(starts().map(|s| slots[s]));
            let size = record_words(runs, narrow);
            let r = self.take_region(a, size)?;
            // The record as bytes: bitmap, then the run values (3 or 4 bytes each).
            let mut bytes = [0u8; 4 * MAX_RECORD_WORDS];
            bytes[..8].copy_from_slice(&bits.to_le_bytes());
            let mut at = 8;
            for s in starts() {
                let v = slots[s];
                if narrow {
                    let v = if v == NO_ROUTE { NARROW_NONE } else { v };
                    bytes[at..at + 3].copy_from_slice(&v.to_le_bytes()[..3]);
                    at += 3;
                } else {
                    bytes[at..at + 4].copy_from_slice(&v.to_le_bytes());
                    at += 4;
                }
            }
            for (i, w) in bytes.chunks_exact(4).take(size as usize).enumerate() {
                let w = u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
                self.pool()[r as usize + i].store(w, Ordering::Relaxed);
            }
            let flag = if narrow { NARROW } else { 0 };
            self.dir[q].store(REC | flag | r, Ordering::Release);
            (r, size)
        };
        self.lines.write(q, slots);
        let (old_r, old_n) = std::mem::replace(&mut a.placement[q], (r, n as u8));
        if old_n > 0 {
            a.free[old_n as usize].push(old_r);
            a.live_words -= u64::from(old_n);
            a.records -= 1;
            a.long_records -= u64::from(u32::from(old_n) > LINE);
        }
        if n > 0 {
            a.records += 1;
            a.long_records += u64::from(n > LINE);
        }
        a.live_words += u64::from(n);
        // A hint only (any value gives the same answers): stored relaxed.
        self.prefetch_values
            .store(10 * a.long_records >= a.records.max(1), Ordering::Relaxed);
        self.l2_from
            .store(l2_prefetch_from(a.records), Ordering::Relaxed);
        self.dense
            .store(2 * a.records >= QUARTERS as u64, Ordering::Relaxed);
        Ok(())
    }

    /// Words of the record that [`publish`](Self::publish) would write for these slots (0
    /// for a single run); the batch build places records largest first, so that the line
    /// ends left by large records are filled by small ones.
    pub(super) fn record_size(slots: &[u32]) -> u32 {
        let slots = &slots[..slots.len().min(64)];
        let (bits, runs) = runs_of(slots);
        if runs == 1 {
            return 0;
        }
        let starts = (0..slots.len()).filter(|&s| bits >> s & 1 == 1);
        record_words(runs, fits_narrow(starts.map(|s| slots[s])))
    }

    /// The sequence counter, read before a lookup: `None` while a write window is open.
    #[inline(always)]
    pub(super) fn begin(&self) -> Option<u64> {
        let g = self.seq.load(Ordering::Acquire);
        (g & 1 == 0).then_some(g)
    }

    /// Whether no write window overlapped the reads since [`begin`](Self::begin) gave `g`.
    #[inline(always)]
    pub(super) fn valid(&self, g: u64) -> bool {
        fence(Ordering::Acquire);
        self.seq.load(Ordering::Relaxed) == g
    }

    /// The run bitmap of the record at `r` (see [`load_u64_at`]).
    #[inline(always)]
    fn bits(&self, r: usize) -> u64 {
        load_u64_at(self.pool(), 4 * r)
    }

    /// The 4 bytes at pool byte offset `off` (see [`load_u32_at`]; a value read never
    /// leaves its record).
    #[inline(always)]
    fn load_at(&self, off: usize) -> u32 {
        load_u32_at(self.pool(), off)
    }

    /// The run value of a record entry `e` held in the 4 bytes at `off`; branch-free.
    #[inline(always)]
    fn record_value(&self, e: u32, off: usize) -> u32 {
        let v = self.load_at(off) >> ((e >> 27) & 8); // NARROW (bit 30): the top 3 bytes
        narrow_none_to_no_route(v, e & NARROW != 0)
    }

    /// The stored value for `key` (next hop, [`NO_ROUTE`] or `GROUP | g`).
    #[inline(always)]
    pub(super) fn value(&self, key: u32) -> u32 {
        let e = self.dir[quarter_of(key)].load(Ordering::Relaxed);
        if e & REC == 0 {
            return e;
        }
        let r = record_of(e);
        let bits = self.bits(r);
        if e & NARROW == 0 {
            return self.pool()[(value_offset(bits, r, key, 4) >> 2) & (POOL_LEN - 1)]
                .load(Ordering::Relaxed);
        }
        narrow_none_to_no_route(self.load_at(value_offset(bits, r, key, 3)) >> 8, true)
    }

    /// Prefetches what a single lookup of `key` reads first: its line if the table is
    /// [`dense`](Self::dense), else its directory entry.
    #[inline(always)]
    pub(super) fn prefetch(&self, key: u32) {
        if self.dense() {
            self.lines.prefetch(key);
        } else {
            prefetch_read(&self.dir[quarter_of(key)]);
        }
    }

    /// Prefetches pool word `w` (masked into the pool) into L2 only if `l2`, else into L1.
    #[inline(always)]
    fn prefetch_word(&self, w: usize, l2: bool) {
        let x = &self.pool()[w & (POOL_LEN - 1)];
        if l2 {
            prefetch_read_l2(x);
        } else {
            prefetch_read(x);
        }
    }

    /// Whether a staged lookup in sub-batches of `b` prefetches into L2 only (see
    /// [`l2_prefetch_from`]).
    #[inline(always)]
    fn l2_prefetch(&self, b: usize) -> bool {
        match self.prefetch_level() {
            PrefetchLevel::L1 => false,
            PrefetchLevel::L2 => true,
            PrefetchLevel::Auto => b >= self.l2_from.load(Ordering::Relaxed) as usize,
        }
    }

    /// Sets where the staged loops prefetch (a hint: answers never change).
    pub(super) fn set_prefetch_level(&self, level: PrefetchLevel) {
        self.level.store(level as u8, Ordering::Relaxed);
    }

    /// The level last set (`Auto` unless changed).
    pub(super) fn prefetch_level(&self) -> PrefetchLevel {
        match self.level.load(Ordering::Relaxed) {
            x if x == PrefetchLevel::L1 as u8 => PrefetchLevel::L1,
            x if x == PrefetchLevel::L2 as u8 => PrefetchLevel::L2,
            _ => PrefetchLevel::Auto,
        }
    }

    /// The first stage of a vector lookup for `key`: reads its directory entry and
    /// prefetches its record (the dummy record for a single-run quarter).
    #[inline(always)]
    fn stage_dir(&self, key: u32, l2: bool) -> u32 {
        let e = self.dir[quarter_of(key)].load(Ordering::Relaxed);
        self.prefetch_word(record_of(e), l2);
        e
    }

    /// The second stage: ranks `key` in the record of directory entry `e` and prefetches
    /// the run value; returns the pool byte offset of its 4 bytes.
    #[inline(always)]
    fn stage_rank(&self, key: u32, e: u32, l2: bool) -> u32 {
        let r = record_of(e);
        // The dummy record (single-run quarters) is read as a 4-byte one.
        let width = width_of(e & ((e as i32) >> 31) as u32);
        let off = value_offset(self.bits(r), r, key, width);
        self.prefetch_word(off >> 2, l2);
        off as u32
    }

    /// The last stage: the answer given directory entry `e` and the value's byte offset;
    /// branch-free.
    #[inline(always)]
    fn stage_value(&self, e: u32, off: u32) -> u32 {
        select(e & REC != 0, self.record_value(e, off as usize), e)
    }

    /// Staged lookup of `keys` (at most 256) into `out`, in sub-batches of `b` keys: (1)
    /// read every directory entry and prefetch the record, (2) rank every key and prefetch
    /// its value, (3) read the values; stage (1) runs at least [`AHEAD_MIN`] keys ahead of
    /// (2) and (3). Answers are next hops, [`MISS_OUT`] for no route, or `GROUP | g` still
    /// to be resolved; returns whether any of the latter is present. Runs the AVX-512 loop
    /// where the CPU has it, else the AVX2 loop ([`avx2`]) where it has that, else the
    /// portable one (all give the same answers; the SIMD loops take the whole slice as one
    /// sub-batch).
    #[inline(always)]
    pub(super) fn values_staged(&self, keys: &[u32], out: &mut [u32], b: usize) -> bool {
        if self.avx512 {
            avx512::values_staged(self, keys, out, b)
        } else if self.avx2 {
            avx2::values_staged(self, keys, out)
        } else {
            self.values_staged_portable(keys, out, b)
        }
    }

    /// [`values_staged`](Self::values_staged) without SIMD.
    #[inline(always)]
    pub(super) fn values_staged_portable(&self, keys: &[u32], out: &mut [u32], b: usize) -> bool {
        let n = keys.len().min(out.len()).min(256);
        let b = b.clamp(1, 256);
        let (keys, out) = (&keys[..n], &mut out[..n]);
        let mut dir = [0u32; 256];
        let mut groups = 0;
        let ahead_by = b.max(AHEAD_MIN);
        let l2 = self.l2_prefetch(ahead_by);
        // Stage 1 runs `ahead_by` keys ahead, so that later sub-batches' record fetches
        // are in flight while this one is ranked and resolved. Stage 3 runs at least
        // VALUES_BEHIND keys behind stage 2 (as in the AVX-512 loop): a value read right
        // after its key's rank would wait on the rank's record load, and with small
        // sub-batches those waits fall inside one out-of-order window.
        let mut ahead = 0;
        let mut start = 0;
        let mut resolved = 0;
        while start < n {
            let end = (start + b).min(n);
            let want = (end + ahead_by).min(n);
            for (k, e) in keys[ahead..want].iter().zip(dir[ahead..want].iter_mut()) {
                *e = self.stage_dir(*k, l2);
            }
            ahead = ahead.max(want);
            let (kc, oc, ec) = (&keys[start..end], &mut out[start..end], &dir[start..end]);
            for ((k, e), o) in kc.iter().zip(ec.iter()).zip(oc.iter_mut()) {
                *o = self.stage_rank(*k, *e, l2);
            }
            start = end;
            let upto = if start == n {
                n
            } else {
                start.saturating_sub(VALUES_BEHIND)
            };
            if upto > resolved {
                groups |= Self::stage_values(self, &mut out[resolved..upto], &dir[resolved..upto]);
                resolved = upto;
            }
        }
        groups & GROUP != 0
    }

    /// The last stage over a sub-batch: `out` holds pool indices on entry and answers on
    /// exit; returns the OR of the raw values.
    #[inline(always)]
    fn stage_values(&self, out: &mut [u32], dir: &[u32]) -> u32 {
        let mut groups = 0;
        for (o, e) in out.iter_mut().zip(dir.iter()) {
            let x = self.stage_value(*e, *o);
            groups |= x;
            // Branch-free: a branch here mispredicts on tables where many keys have no route.
            *o = select(x == NO_ROUTE, MISS_OUT, x);
        }
        groups
    }

    /// Whether at least half the quarters hold a record (a hint, see the field).
    #[inline(always)]
    pub(super) fn dense(&self) -> bool {
        self.dense.load(Ordering::Relaxed)
    }

    /// The line-per-quarter copy (see [`lines`]), written with the rest of this structure
    /// and read under the same sequence check.
    #[inline(always)]
    pub(super) fn lines(&self) -> &Lines {
        &self.lines
    }

    /// Software-pipelined lookup of raw values: at step `i` it reads the directory entry
    /// of key `i + 2d` and prefetches its record, ranks key `i + d` and prefetches its
    /// value, and reads the value of key `i` (`d` clamped to `1..=32`).
    #[inline(always)]
    pub(super) fn values_pipelined(&self, keys: &[u32], out: &mut [u32], d: usize) {
        const R: usize = 128;
        let d = d.clamp(1, 32);
        let n = keys.len().min(out.len());
        let (keys, out) = (&keys[..n], &mut out[..n]);
        let mut dir = [0u32; R];
        let mut idx = [0u32; R];
        for (j, k) in keys.iter().enumerate().take(2 * d) {
            dir[j % R] = self.stage_dir(*k, false);
        }
        for (j, k) in keys.iter().enumerate().take(d) {
            idx[j % R] = self.stage_rank(*k, dir[j % R], false);
        }
        for (i, o) in out.iter_mut().enumerate() {
            if let Some(&k) = keys.get(i + 2 * d) {
                dir[(i + 2 * d) % R] = self.stage_dir(k, false);
            }
            if let Some(&k) = keys.get(i + d) {
                idx[(i + d) % R] = self.stage_rank(k, dir[(i + d) % R], false);
            }
            *o = self.stage_value(dir[i % R], idx[i % R]);
        }
    }
}

/// The AVX-512 staged loop (16 keys per instruction: `vpgatherdd` of directory entries,
/// `vpgatherdq` of run bitmaps, `vpsllvq` + `vpopcntq` for the rank, `vpgatherdd` of the
/// values), selected at run time; its answers equal the portable loop's (a property test
/// compares them). Built where the compiler has the AVX-512 intrinsics (Rust 1.89, see
/// `build.rs`), hence the MSRV lint is allowed here.
#[cfg(all(target_arch = "x86_64", pktvec_avx512))]
#[allow(clippy::incompatible_msrv)]
mod avx512 {
    use super::{Compressed, GROUP, MISS_OUT, NARROW, NARROW_NONE, NO_ROUTE, REC_MASK};

    /// Whether this CPU runs [`values_staged`].
    pub(super) fn available() -> bool {
        std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512vpopcntdq")
    }

    /// [`Compressed::values_staged`] with AVX-512; only called when [`available`].
    #[inline(always)]
    pub(super) fn values_staged(c: &Compressed, keys: &[u32], out: &mut [u32], b: usize) -> bool {
        // SAFETY: `c.avx512` is set only when `available()` found avx512f and
        // avx512vpopcntdq on this CPU, which is all `staged` enables.
        unsafe { staged(c, keys, out, b) }
    }

    /// Stage (3) for keys `start..end`: `out` holds their value offsets (stage 2) on
    /// entry and their answers on exit; returns the OR of the portable tail's raw values
    /// (the vector part ORs into `acc`).
    #[target_feature(enable = "avx512f")]
    fn resolve_range(
        c: &Compressed,
        pool_base: *const i32,
        out: &mut [u32],
        dir: &[u32; 256],
        start: usize,
        end: usize,
        acc: &mut std::arch::x86_64::__m512i,
    ) -> u32 {
        use std::arch::x86_64::*;
        let end = end.min(out.len());
        let vec_end = start + (end.saturating_sub(start)) / 16 * 16;
        let mut i = start;
        while i < vec_end {
            // SAFETY: `i + 16 <= vec_end <= out.len() <= 256`, inside `out` and `dir`.
            let (idx, e) = unsafe {
                (
                    _mm512_loadu_si512(out.as_ptr().add(i).cast()),
                    _mm512_loadu_si512(dir.as_ptr().add(i).cast()),
                )
            };
            let x = resolve16(pool_base, idx, e, acc);
            // SAFETY: as for the load above.
            unsafe { _mm512_storeu_si512(out.as_mut_ptr().add(i).cast(), x) };
            i += 16;
        }
        if vec_end < end {
            c.stage_values(&mut out[vec_end..end], &dir[vec_end..end])
        } else {
            0
        }
    }

    /// Stage (3) for 16 keys: the answers from their value byte offsets `idx` (stage 2)
    /// and directory entries `e`: the pool value for records, the entry otherwise;
    /// [`MISS_OUT`] for no route. ORs the raw values into `acc`.
    #[target_feature(enable = "avx512f")]
    fn resolve16(
        pool_base: *const i32,
        idx: std::arch::x86_64::__m512i,
        e: std::arch::x86_64::__m512i,
        acc: &mut std::arch::x86_64::__m512i,
    ) -> std::arch::x86_64::__m512i {
        use std::arch::x86_64::*;
        // SAFETY: every lane is a byte offset below `4·POOL_LEN − 4` (stage 2), so the 4
        // bytes read are in the pool `pool_base` starts; concurrent stores are handled by
        // the sequence check as in stage (1).
        let pooled = unsafe { _mm512_i32gather_epi32::<1>(idx, pool_base) };
        let is_rec = _mm512_cmplt_epi32_mask(e, _mm512_setzero_si512());
        // Narrow records: the value is the top 3 bytes; NARROW_NONE is no route.
        let sh = _mm512_and_si512(_mm512_srli_epi32::<27>(e), _mm512_set1_epi32(8));
        let pooled = _mm512_srlv_epi32(pooled, sh);
        let narrow = _mm512_mask_test_epi32_mask(is_rec, e, _mm512_set1_epi32(NARROW as i32));
        let none =
            _mm512_mask_cmpeq_epi32_mask(narrow, pooled, _mm512_set1_epi32(NARROW_NONE as i32));
        let pooled = _mm512_mask_mov_epi32(pooled, none, _mm512_set1_epi32(NO_ROUTE as i32));
        let x = _mm512_mask_blend_epi32(is_rec, e, pooled);
        *acc = _mm512_or_si512(*acc, x);
        let none = _mm512_cmpeq_epi32_mask(x, _mm512_set1_epi32(NO_ROUTE as i32));
        _mm512_mask_mov_epi32(x, none, _mm512_set1_epi32(MISS_OUT as i32))
    }

    /// Stages 1 and 2 for 16 keys at `keys[i..i + 16]` are vectorised; a sub-batch's
    /// last `len % 16` keys go through the portable stages.
    #[target_feature(enable = "avx512f,avx512vpopcntdq")]
    fn staged(c: &Compressed, keys: &[u32], out: &mut [u32], b: usize) -> bool {
        use std::arch::x86_64::*;
        let n = keys.len().min(out.len()).min(256);
        // The sub-batch is the whole slice here: the directory stage runs over all of it
        // first, the other stages take 16 keys per instruction and the value reads lag
        // their prefetches by 64 keys whatever `b` is, so smaller sub-batches would only
        // add each loop's entry and exit (b = 16 read 5-10% slower than 256 before this).
        let _ = b;
        let b = n.max(1);
        let (keys, out) = (&keys[..n], &mut out[..n]);
        let mut dir = [0u32; 256];
        let mut rec = [0u32; 256];
        let dir_base = c.dir.as_ptr().cast::<i32>();
        let pool = c.pool();
        let pool_base = pool.as_ptr().cast::<i32>();
        let mut groups = 0;
        let mut start = 0;
        let prefetch_values = c.prefetch_values.load(std::sync::atomic::Ordering::Relaxed);
        // Without value prefetches (nearly every value is in its bitmap's line) stage 3 runs
        // inside stage 2, on the 16 keys just ranked.
        let fused = !prefetch_values;
        let ahead_by = b.max(super::AHEAD_MIN);
        let l2 = c.l2_prefetch(ahead_by);
        // Stage (1) has run for keys `..ahead`.
        let mut ahead = 0;
        // The OR of every raw value of stage (3) (a group to resolve shows in it).
        let mut acc = _mm512_setzero_si512();
        // When not fused, stage (3) runs LAG keys behind stage (2): keys `..resolved` are
        // done.
        const LAG: usize = 64;
        let mut resolved = 0;
        while start < n {
            let end = (start + b).min(n);
            // (1) directory entries, record offsets; prefetch the records: for this
            // sub-batch (if not done yet) and the next one, so that the next sub-batch's
            // record fetches are in flight while this one is ranked and resolved.
            let want = (end + ahead_by).min(n);
            while ahead < want {
                let s_end = (ahead + b).min(n);
                let s_vec_end = ahead + (s_end - ahead) / 16 * 16;
                let mut i = ahead;
                while i < s_vec_end {
                    // SAFETY: `i + 16 <= s_vec_end <= n <= keys.len()`, so the unaligned
                    // 64-byte load reads 16 in-bounds keys.
                    let k = unsafe { _mm512_loadu_si512(keys.as_ptr().add(i).cast()) };
                    let q = _mm512_srli_epi32::<14>(k);
                    // SAFETY: every lane is `key >> 14 < 2^18 = QUARTERS`, an in-bounds
                    // index of the directory (4-byte elements, scale 4). The words are
                    // `AtomicU32`s that the writer may store concurrently: each aligned lane
                    // is read in one access, and any value read is only used if the reader's
                    // sequence check later finds no write window (as for the portable path's
                    // atomic loads).
                    let e = unsafe { _mm512_i32gather_epi32::<4>(q, dir_base) };
                    let is_rec = _mm512_srai_epi32::<31>(e);
                    // The record offset and its NARROW bit (0 for a single-run quarter).
                    let r = _mm512_and_si512(
                        _mm512_and_si512(e, is_rec),
                        _mm512_set1_epi32((REC_MASK | NARROW) as i32),
                    );
                    // SAFETY: `i + 16 <= 256`: both stores are in bounds of the local
                    // arrays.
                    unsafe {
                        _mm512_storeu_si512(dir.as_mut_ptr().add(i).cast(), e);
                        _mm512_storeu_si512(rec.as_mut_ptr().add(i).cast(), r);
                    }
                    // Into L2 only where the sub-batch fetches many records (see
                    // `l2_prefetch_from`).
                    for &r in &rec[i..i + 16] {
                        c.prefetch_word(r as usize, l2);
                    }
                    i += 16;
                }
                for j in s_vec_end..s_end {
                    dir[j] = c.stage_dir(keys[j], l2);
                }
                ahead = s_end;
            }
            let vec_end = start + (end - start) / 16 * 16;
            // (2) rank: bitmap << (63 - s), popcount; prefetch the values.
            let mut i = start;
            while i < vec_end {
                // SAFETY: in bounds as in stage (1).
                let k = unsafe { _mm512_loadu_si512(keys.as_ptr().add(i).cast()) };
                // SAFETY: `rec` is stage 1's local array of 256 record words and
                // `i + 16 <= vec_end <= 256`, so the 64-byte unaligned load is inside it.
                let rn = unsafe { _mm512_loadu_si512(rec.as_ptr().add(i).cast()) };
                let r = _mm512_and_si512(rn, _mm512_set1_epi32(REC_MASK as i32));
                // All ones in the lanes of narrow (3-byte) records.
                let narrow = _mm512_srai_epi32::<31>(_mm512_slli_epi32::<1>(rn));
                let sh = _mm512_andnot_si512(_mm512_srli_epi32::<8>(k), _mm512_set1_epi32(63));
                let r_lo = _mm512_castsi512_si256(r);
                let r_hi = _mm512_extracti64x4_epi64::<1>(r);
                // SAFETY: a record offset is masked to `REC_MASK < POOL_LEN / 2`, so the
                // 8-byte load at words `r, r + 1` is in the pool; concurrent stores are
                // handled by the sequence check as in stage (1).
                let (b_lo, b_hi) = unsafe {
                    (
                        _mm512_i32gather_epi64::<4>(r_lo, pool_base.cast::<i64>()),
                        _mm512_i32gather_epi64::<4>(r_hi, pool_base.cast::<i64>()),
                    )
                };
                let s_lo = _mm512_cvtepu32_epi64(_mm512_castsi512_si256(sh));
                let s_hi = _mm512_cvtepu32_epi64(_mm512_extracti64x4_epi64::<1>(sh));
                let rank_lo = _mm512_popcnt_epi64(_mm512_sllv_epi64(b_lo, s_lo));
                let rank_hi = _mm512_popcnt_epi64(_mm512_sllv_epi64(b_hi, s_hi));
                let idx = _mm512_inserti64x4::<1>(
                    _mm512_castsi256_si512(_mm512_cvtepi64_epi32(rank_lo)),
                    _mm512_cvtepi64_epi32(rank_hi),
                );
                // The value's byte offset (`value_offset`): 4(r + 1 + rank), less `rank`
                // for a narrow record; below 4·POOL_LEN − 4 since r <= REC_MASK and
                // rank <= 64.
                let off = _mm512_sub_epi32(
                    _mm512_slli_epi32::<2>(_mm512_add_epi32(
                        _mm512_add_epi32(idx, r),
                        _mm512_set1_epi32(1),
                    )),
                    _mm512_and_si512(idx, narrow),
                );
                if fused {
                    // The value is in the line just gathered: resolve it now.
                    // SAFETY: `i + 16 <= vec_end <= 256`: `dir` holds stage 1's entries.
                    let e = unsafe { _mm512_loadu_si512(dir.as_ptr().add(i).cast()) };
                    let x = resolve16(pool_base, off, e, &mut acc);
                    // SAFETY: `i + 16 <= vec_end <= out.len()`, which this call borrows
                    // mutably.
                    unsafe { _mm512_storeu_si512(out.as_mut_ptr().add(i).cast(), x) };
                    i += 16;
                    continue;
                }
                // SAFETY: `i + 16 <= vec_end <= out.len()`, so the 16 offsets are stored
                // inside `out`, which this call borrows mutably.
                unsafe { _mm512_storeu_si512(out.as_mut_ptr().add(i).cast(), off) };
                // Only where values often lie beyond the bitmap's line (see
                // `prefetch_values`): elsewhere the value is in the line just gathered.
                if prefetch_values {
                    for &x in &out[i..i + 16] {
                        c.prefetch_word(x as usize >> 2, l2);
                    }
                }
                i += 16;
            }
            for j in vec_end..end {
                out[j] = c.stage_rank(keys[j], dir[j], l2);
            }
            // (3) values: the pool value for records, the directory entry otherwise. Done
            // in stage 2 already when fused; else at least 64 keys behind stage 2, so that
            // the value prefetches of a small sub-batch land before they are read.
            if !fused {
                // Keys ranked at least LAG keys ago, in whole vectors of 16.
                let upto = end.saturating_sub(LAG) / 16 * 16;
                if upto > resolved {
                    groups |= resolve_range(c, pool_base, out, &dir, resolved, upto, &mut acc);
                    resolved = upto;
                }
            } else if vec_end < end {
                groups |= c.stage_values(&mut out[vec_end..end], &dir[vec_end..end]);
            }
            start = end;
        }
        if !fused && resolved < n {
            groups |= resolve_range(c, pool_base, out, &dir, resolved, n, &mut acc);
        }
        // One reduction for the whole vector (a sub-batch of 16 would pay it per 16 keys).
        groups |= _mm512_reduce_or_epi32(acc) as u32;
        groups & GROUP != 0
    }
}

/// Without the AVX-512 intrinsics: the portable loop only.
#[cfg(not(all(target_arch = "x86_64", pktvec_avx512)))]
mod avx512 {
    use super::Compressed;

    pub(super) fn available() -> bool {
        false
    }

    #[inline(always)]
    pub(super) fn values_staged(c: &Compressed, keys: &[u32], out: &mut [u32], b: usize) -> bool {
        c.values_staged_portable(keys, out, b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A small splitmix64 stream.
    fn rng(mut s: u64) -> impl FnMut() -> u64 {
        move || {
            s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = s;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        }
    }

    /// A record is narrow (3-byte values) exactly when its values are next hops below
    /// 2^24 − 1 or "no route"; both kinds read back every slot's value, and the narrow
    /// record takes 3 bytes per run.
    #[test]
    fn narrow_records_hold_24_bit_values_only() {
        let (c, mut a, _) = Compressed::new(false);
        let cases: [(&[u32], bool); 5] = [
            (&[0, NARROW_NONE - 1, NO_ROUTE, 7], true),
            (&[1, NARROW_NONE, 2], false),
            (&[1, 1 << 24, 2], false),
            (&[NO_ROUTE, GROUP | 5], false),
            (&[(1 << 26) - 1, 0], false),
        ];
        c.begin_write();
        for (q, (values, narrow)) in cases.iter().enumerate() {
            // Runs of 64 / values.len() slots (the last run takes the rest).
            let mut slots = [0u32; 64];
            for (s, x) in slots.iter_mut().enumerate() {
                *x = values[(s * values.len() / 64).min(values.len() - 1)];
            }
            let before = a.live_words;
            c.publish(&mut a, q, &slots).expect("room");
            let e = c.dir[q].load(Ordering::Relaxed);
            assert_eq!(e & REC, REC);
            assert_eq!(e & NARROW != 0, *narrow, "{values:x?}");
            let runs = values.len() as u32;
            assert_eq!(
                a.live_words - before,
                u64::from(record_words(runs, *narrow))
            );
            assert_eq!(record_words(runs, true), 2 + (3 * runs).div_ceil(4));
            for (s, &want) in slots.iter().enumerate() {
                let key = ((q as u32) << 14) | ((s as u32) << 8) | 0x5a;
                assert_eq!(c.value(key), want, "quarter {q} slot {s}");
                let mut out = [0u32; 1];
                c.values_staged_portable(&[key], &mut out, 1);
                assert_eq!(out[0], if want == NO_ROUTE { MISS_OUT } else { want });
            }
        }
        c.end_write();
    }

    /// A quarter's line answers as its record does when it has at most 18 runs, except
    /// for runs whose value is not a next hop below 2^24 − 2 or "no route" (a group
    /// pointer, a wide next hop), which escape; a quarter of 19 runs or more keeps its
    /// first 17 and escapes the slots of the rest; a line never written is one run of "no route"; a rewrite replaces an escape.
    #[test]
    fn lines_hold_short_quarters_and_escape_the_rest() {
        let (c, mut a, _) = Compressed::new(false);
        let runs = |n: u32, f: &dyn Fn(u32) -> u32| -> [u32; 64] {
            std::array::from_fn(|s| f((s as u32 * n / 64).min(n - 1)))
        };
        // (slots, first slot of an overlong quarter's escaped tail, or 64)
        let cases: [([u32; 64], usize); 6] = [
            (runs(1, &|_| 9), 64),
            (runs(18, &|r| if r % 5 == 0 { NO_ROUTE } else { r }), 64),
            // Run 17 (0-based) of 19 starts at slot 17·64/19 → 58.
            (runs(19, &|r| r), 58),
            (
                runs(4, &|r| {
                    [1, NARROW_NONE, NARROW_NONE - 1, NARROW_NONE - 2][r as usize]
                }),
                64,
            ),
            (runs(2, &|r| if r == 1 { GROUP | 3 } else { 1 }), 64),
            (runs(64, &|r| r * 1000), 17),
        ];
        let answer = |v: u32| if v == NO_ROUTE { MISS_OUT } else { v };
        c.begin_write();
        for (q, (slots, tail)) in cases.iter().enumerate() {
            c.publish(&mut a, q, slots).expect("room");
            let mut any = false;
            for (s, &want) in slots.iter().enumerate() {
                let key = ((q as u32) << 14) | ((s as u32) << 8) | 0xa5;
                let got = c.lines.value(key);
                let escapes = s >= *tail || (want != NO_ROUTE && want >= NARROW_NONE - 1);
                any |= escapes;
                if escapes {
                    assert_eq!(got, ESCAPED, "quarter {q} slot {s}");
                } else {
                    assert_eq!(got, answer(want), "quarter {q} slot {s}");
                }
                // The vector form agrees, and says whether it escaped.
                let mut out = [0u32; 1];
                assert_eq!(c.lines.values(&[key], 0, &mut out, 4, true), escapes);
                assert_eq!(out[0], got);
            }
            assert_eq!(any, q >= 2, "quarter {q}");
        }
        // Never written: no route.
        assert_eq!(c.lines.value(0xffff_ffff), MISS_OUT);
        // An escaped quarter rewritten short is read from its line again.
        c.publish(&mut a, 2, &runs(2, &|r| r + 40)).expect("room");
        assert_eq!(c.lines.value(2 << 14), 40);
        assert_eq!(c.lines.value((2 << 14) | (63 << 8)), 41);
        c.end_write();
    }

    /// The pool and the lines start on a cache line, whatever the allocator returned
    /// (records of up to a line are placed so as not to straddle one; each quarter's line
    /// is one), with and without huge pages.
    #[test]
    fn pool_and_lines_start_on_a_cache_line() {
        for huge in [false, true] {
            let (c, _, _) = Compressed::new(huge);
            assert_eq!(c.pool().as_ptr() as usize % 64, 0);
            assert_eq!(c.lines.words().as_ptr() as usize % 64, 0);
            assert!(c.base < LINE as usize);
            // The dummy record is where the readers expect it.
            assert_eq!(c.bits(0), 1);
        }
    }

    /// The L2-prefetch threshold follows the share of quarters with a record, and a forced
    /// level overrides it.
    #[test]
    fn l2_prefetch_threshold_follows_records() {
        let q = QUARTERS as u64;
        // No records: no record lines to fetch, never L2.
        assert_eq!(l2_prefetch_from(0), u32::MAX);
        // Every quarter a record: 12 keys fetch 12 record lines.
        assert_eq!(l2_prefetch_from(q), 12);
        // The uniform 1M table (255,876 of 262,144) and the union table (72,150).
        assert_eq!(l2_prefetch_from(255_876), 13);
        assert_eq!(l2_prefetch_from(72_150), 44);
        let mut last = u32::MAX;
        for r in (0..=q).step_by(4096) {
            let b = l2_prefetch_from(r);
            assert!(b <= last && b >= 12, "{r}: {b}");
            last = b;
        }
        // The table keeps the threshold as records come and go.
        let (c, mut a, _) = Compressed::new(false);
        assert!(!c.l2_prefetch(256));
        let mut slots = [7u32; 64];
        slots[10] = 8;
        for quarter in 0..q as usize / 2 {
            c.publish(&mut a, quarter, &slots).unwrap();
        }
        assert_eq!(l2_prefetch_from(q / 2), 24);
        assert!(!c.l2_prefetch(23) && c.l2_prefetch(24));
        // A forced level overrides the threshold.
        c.set_prefetch_level(PrefetchLevel::L1);
        assert!(!c.l2_prefetch(256));
        c.set_prefetch_level(PrefetchLevel::L2);
        assert!(c.l2_prefetch(1));
        c.set_prefetch_level(PrefetchLevel::Auto);
        for quarter in 0..q as usize / 2 {
            c.publish(&mut a, quarter, &[7; 64]).unwrap();
        }
        assert!(!c.l2_prefetch(256));
    }

    /// The value-prefetch hint follows the share of records longer than a line, through
    /// rebuilds that lengthen, shorten and remove records.
    #[test]
    fn prefetch_values_follows_long_records() {
        let (c, mut a, _) = Compressed::new(false);
        let hint = || c.prefetch_values.load(Ordering::Relaxed);
        // `runs` runs of distinct next hops (narrow: 19 runs or more exceed a line).
        let quarter = |runs: u32| -> [u32; 64] {
            let mut slots = [0u32; 64];
            for (s, x) in slots.iter_mut().enumerate() {
                *x = (s as u32 * runs / 64) + 1;
            }
            slots
        };
        c.begin_write();
        assert!(!hint());
        for q in 0..20 {
            c.publish(&mut a, q, &quarter(4)).expect("room");
        }
        assert_eq!((a.records, a.long_records), (20, 0));
        assert!(!hint());
        c.publish(&mut a, 20, &quarter(30)).expect("room");
        assert!(!hint(), "1 long record of 21");
        c.publish(&mut a, 21, &quarter(19)).expect("room");
        c.publish(&mut a, 22, &quarter(40)).expect("room");
        assert_eq!((a.records, a.long_records), (23, 3));
        assert!(hint(), "3 long records of 23");
        // Shorten one, make another a single run: 1 long of 22.
        c.publish(&mut a, 21, &quarter(5)).expect("room");
        c.publish(&mut a, 22, &[7; 64]).expect("room");
        assert_eq!((a.records, a.long_records), (22, 1));
        assert!(!hint());
        c.end_write();
        for q in 0..23 {
            let key = (q as u32) << 14 | 0x3f00;
            let mut out = [0u32; 1];
            c.values_staged(&[key], &mut out, 1);
            assert_eq!(out[0], c.value(key));
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

        /// The SIMD staged loops (the one `values_staged` picks on this CPU, and the AVX2
        /// one where the CPU has AVX2) and the portable one give the same answers and
        /// group flag, over random quarters (1..64 runs of next hops, "no route" and group
        /// pointers, rebuilt several times so records are freed and reused), random keys
        /// and sub-batch sizes.
        #[test]
        fn simd_loops_match_portable(seed in any::<u64>(), n in 0usize..=256, b in 1usize..=256) {
            let (c, mut a, _) = Compressed::new(false);
            let mut next = rng(seed);
            let mut touched = Vec::new();
            c.begin_write();
            for _ in 0..600 {
                let q = (next() % 4096) as usize * 64 + (next() % 64) as usize;
                let mut slots = [0u32; 64];
                // Half the seeds build short records only (no value prefetch in the
                // SIMD loops, `prefetch_values`), the others records of any length.
                let breaks = if seed % 2 == 0 { next() % 8 } else { next() % 64 };
                // Half the quarters hold only 24-bit next hops and "no route" (narrow
                // records, unless 0xff_ffff is drawn); the others any value.
                let narrow = next() % 2 == 0;
                let mut v = 0;
                for (s, x) in slots.iter_mut().enumerate() {
                    if s == 0 || next() % 64 < breaks {
                        v = match (next() % 8, narrow) {
                            (0, _) => NO_ROUTE,
                            (1, false) => GROUP | (next() as u32 & 0xff_ffff),
                            (1, true) => NARROW_NONE - 1 - (next() % 2) as u32,
                            (2, true) if next() % 8 == 0 => NARROW_NONE,
                            (_, true) => next() as u32 & 0xff_ffff,
                            (_, false) => next() as u32 & ((1 << 26) - 1),
                        };
                    }
                    *x = v;
                }
                c.publish(&mut a, q, &slots).expect("room");
                touched.push(q);
            }
            c.end_write();
            let keys: Vec<u32> = (0..n)
                .map(|i| {
                    let r = next() as u32;
                    if i % 4 == 3 { r } else { ((touched[r as usize % touched.len()] as u32) << 14) | (r & 0x3fff) }
                })
                .collect();
            let (mut x, mut y) = (vec![0u32; n], vec![0u32; n]);
            let gx = c.values_staged(&keys, &mut x, b);
            let gy = c.values_staged_portable(&keys, &mut y, b);
            prop_assert_eq!(&x, &y);
            prop_assert_eq!(gx, gy);
            if avx2::available() {
                let mut z = vec![0u32; n];
                let gz = avx2::values_staged(&c, &keys, &mut z);
                prop_assert_eq!(&z, &y);
                prop_assert_eq!(gz, gy);
            }
            for (k, v) in keys.iter().zip(&y) {
                let want = c.value(*k);
                prop_assert_eq!(*v, if want == NO_ROUTE { MISS_OUT } else { want });
            }
        }
    }
}
