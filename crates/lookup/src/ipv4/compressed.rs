//! The read path of [`Lpm4`](super::Lpm4): the DIR-24-8 first level (2^24 /24 slots,
//! 64 MiB) compressed into 64-slot run bitmaps, so that a 1M-prefix table is read from
//! about 4–10 MiB instead of 64.
//!
//! # Layout
//!
//! The 2^24 /24 slots are cut into 2^18 *quarters* of 64 slots (one per /18). Equal
//! neighbouring slots form *runs*. A quarter is one 16-byte entry (four per cache line,
//! 4 MiB in all):
//!
//! * `bits`: a 64-bit bitmap with bit `s` set where a run starts (bit 0 always set);
//! * `base`: where the quarter's run values start in the values pool, one `u32` per run.
//!
//! The value for key `k` is `values[base + popcount(bits << (63 − s)) − 1]` with
//! `s = (k >> 8) & 63`: one 16-byte entry, one `popcnt`, one value. A value is a next hop,
//! [`NO_ROUTE`], or `GROUP | g`, a pointer to the DIR-24-8 master's second-level group `g`
//! (for a /24 holding longer prefixes), read with `k & 255`.
//!
//! # Updates: a sequence counter, with the master as the fallback
//!
//! A quarter's two fields cannot be stored in one atomic instruction, so the writer (under
//! [`Lpm4`](super::Lpm4)'s mutex) makes every change to this structure inside a *write
//! window*: it makes the sequence counter odd, writes the run values and entries, and makes
//! it even again. A reader notes the counter before a lookup (or a whole vector) and checks
//! it after (`Acquire` fences, seqlock style); if a window was open or overlapped, it
//! answers from the DIR-24-8 master instead, whose entries are each one atomic store of a
//! valid answer. So readers never wait for the writer and never use a half-written quarter.
//! The master is updated before the window opens, so either path gives the old or the new
//! answer.
//!
//! # Capacity
//!
//! The values pool is reserved up front (2^24 entries, 64 MiB of address space) but
//! zero-filled lazily by the OS: only what is used is committed. Freed regions are kept on
//! exact-size free lists and reused first. Every prefix adds at most two runs, so a table of
//! up to 8M prefixes always fits; [`Compressed::room_for`] refuses an update that might
//! not.

use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};

use pktvec_packet::mem::advise_hugepages;
use pktvec_packet::prefetch::prefetch_read;

/// Value bit marking a pointer to a DIR-24-8 second-level group.
pub(super) const GROUP: u32 = 1 << 31;
/// Value meaning "no route" (above every next hop, below [`GROUP`]).
pub(super) const NO_ROUTE: u32 = GROUP - 1;
/// What the staged lookup answers for "no route" (`ipv4::MISS`).
const MISS_OUT: u32 = u32::MAX;

/// Number of 64-slot quarters (one per /18).
pub(super) const QUARTERS: usize = 1 << 18;
/// Values-pool entries that can be handed out.
const MAX_VALUES: u32 = 1 << 24;
/// Length of the values array: a power of two above every index a lookup can form
/// (base < 2^24, rank ≤ 64), so masking proves bounds.
const VALS_LEN: usize = 1 << 25;

/// One quarter: run-start bitmap and the base of its run values.
#[derive(bytemuck::Zeroable)]
#[repr(C, align(16))]
struct Quarter {
    bits: AtomicU64,
    base: AtomicU32,
    /// The value itself when the quarter is one run (`bits == 1`): no second access.
    inline: AtomicU32,
}

/// Why a quarter could not be rebuilt: the values pool is exhausted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct PoolFull;

/// Writer-side allocation state of the values pool.
#[derive(Debug)]
pub(super) struct Alloc {
    /// (base, runs) of each quarter's region; runs 0 = single run, value inline.
    placement: Vec<(u32, u8)>,
    fresh: u32,
    /// free[n]: freed regions of `n` values.
    free: Vec<Vec<u32>>,
    live_values: u64,
}

/// The compressed read structure (see the [module docs](self)).
pub(super) struct Compressed {
    quarters: Box<[Quarter; QUARTERS]>,
    vals: Box<[AtomicU32; VALS_LEN]>,
    seq: AtomicU64,
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

/// Index of the key's quarter.
#[inline(always)]
fn quarter_of(key: u32) -> usize {
    (key >> 14) as usize
}

/// Values-pool index of the key's run: base + (runs started at slots 0..=s) − 1; for a
/// single-run quarter (base 0) that is entry 0, which every lookup keeps in L1.
#[inline(always)]
fn value_index(bits: u64, base: u32, key: u32) -> usize {
    let shift = !(key >> 8) & 63; // 63 − s
    let rank = (bits << shift).count_ones();
    (base.wrapping_add(rank).wrapping_sub(1)) as usize & (VALS_LEN - 1)
}

/// The answer given a quarter's `bits`, its inline value and the loaded pool value
/// (branch-free select).
#[inline(always)]
fn select(bits: u64, inline: u32, pooled: u32) -> u32 {
    if bits == 1 {
        inline
    } else {
        pooled
    }
}

impl Compressed {
    /// Every quarter a single run of "no route" (all sharing value 0); also returns whether
    /// the arrays were advised to use transparent huge pages.
    pub(super) fn new(huge_pages: bool) -> (Self, Alloc, bool) {
        let (quarters, a1) = zeroed_array::<Quarter, QUARTERS>(huge_pages);
        let (vals, a2) = zeroed_array(huge_pages);
        let c = Compressed {
            quarters,
            vals,
            seq: AtomicU64::new(0),
        };
        c.vals[0].store(NO_ROUTE, Ordering::Relaxed);
        for q in c.quarters.iter() {
            q.bits.store(1, Ordering::Relaxed);
            q.inline.store(NO_ROUTE, Ordering::Relaxed);
        }
        let alloc = Alloc {
            placement: vec![(0, 0); QUARTERS],
            fresh: 1,
            free: (0..=64).map(|_| Vec::new()).collect(),
            live_values: 1,
        };
        (c, alloc, a1 || a2)
    }

    /// Bytes the lookups can read: the quarter entries and the run values in use.
    pub(super) fn memory_bytes(alloc: &Alloc) -> usize {
        QUARTERS * 16 + alloc.live_values as usize * 4
    }

    /// Committed bytes: the quarter entries and the values pool's high-water mark.
    pub(super) fn committed_bytes(alloc: &Alloc) -> usize {
        QUARTERS * 16 + alloc.fresh as usize * 4
    }

    /// Whether rebuilding quarters `first..=last` after one update surely finds room in the
    /// values pool. One update paints a range of slots except those held by longer
    /// prefixes, i.e. at most `runs + 1` segments, so a quarter ends with at most
    /// `3 · runs + 2` runs (and never more than 64).
    pub(super) fn room_for(alloc: &Alloc, first: usize, last: usize) -> bool {
        let need: u64 = alloc.placement[first..=last]
            .iter()
            .map(|&(_, n)| (3 * u64::from(n.max(1)) + 2).min(64))
            .sum();
        u64::from(MAX_VALUES - alloc.fresh) >= need
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

    fn take_region(&self, a: &mut Alloc, n: u32) -> Result<u32, PoolFull> {
        if let Some(r) = a.free[n as usize].pop() {
            return Ok(r);
        }
        if a.fresh + n > MAX_VALUES {
            return Err(PoolFull);
        }
        a.fresh += n;
        Ok(a.fresh - n)
    }

    /// Rebuilds quarter `q` from its 64 slot values (each a next hop, [`NO_ROUTE`] or
    /// `GROUP | g`). Call inside a write window. On error the quarter is unchanged.
    pub(super) fn publish(&self, a: &mut Alloc, q: usize, slots: &[u32]) -> Result<(), PoolFull> {
        let mut bits = 0u64;
        let mut runs = 0u32;
        for s in 0..slots.len().min(64) {
            if s == 0 || slots[s] != slots[s - 1] {
                bits |= 1 << s;
                runs += 1;
            }
        }
        let (base, n) = if runs == 1 {
            (0, 0)
        } else {
            (self.take_region(a, runs)?, runs)
        };
        if n > 0 {
            let mut v = base as usize;
            for (s, &x) in slots.iter().enumerate().take(64) {
                if bits >> s & 1 == 1 {
                    self.vals[v].store(x, Ordering::Relaxed);
                    v += 1;
                }
            }
        }
        let quarter = &self.quarters[q];
        quarter.bits.store(bits, Ordering::Relaxed);
        quarter.base.store(base, Ordering::Relaxed);
        quarter.inline.store(slots[0], Ordering::Relaxed);
        let (old_base, old_n) = std::mem::replace(&mut a.placement[q], (base, n as u8));
        if old_n > 0 {
            a.free[old_n as usize].push(old_base);
        }
        a.live_values = a.live_values + u64::from(n) - u64::from(old_n);
        Ok(())
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

    /// The stored value for `key` (next hop, [`NO_ROUTE`] or `GROUP | g`).
    #[inline(always)]
    pub(super) fn value(&self, key: u32) -> u32 {
        let q = &self.quarters[quarter_of(key)];
        let (bits, base) = (
            q.bits.load(Ordering::Relaxed),
            q.base.load(Ordering::Relaxed),
        );
        let pooled = self.vals[value_index(bits, base, key)].load(Ordering::Relaxed);
        select(bits, q.inline.load(Ordering::Relaxed), pooled)
    }

    /// Prefetches the quarter entry of `key`.
    #[inline(always)]
    pub(super) fn prefetch(&self, key: u32) {
        prefetch_read(&self.quarters[quarter_of(key)]);
    }

    /// The second stage of a vector lookup for `key`: reads its quarter entry, ranks the
    /// slot and prefetches the run value. Returns (pool index, inline value), the index
    /// being `u32::MAX` for a single-run quarter (whose answer is the inline value).
    #[inline(always)]
    fn rank(&self, key: u32) -> (u32, u32) {
        let q = &self.quarters[quarter_of(key)];
        let bits = q.bits.load(Ordering::Relaxed);
        let i = value_index(bits, q.base.load(Ordering::Relaxed), key);
        prefetch_read(&self.vals[i]);
        let idx = if bits == 1 { u32::MAX } else { i as u32 };
        (idx, q.inline.load(Ordering::Relaxed))
    }

    /// Staged lookup of `keys` (at most 256) into `out`: (1) prefetch every quarter entry,
    /// (2) rank every key and prefetch its value, (3) read the values. Answers are next
    /// hops, [`MISS_OUT`] for no route, or `GROUP | g` still to be resolved; returns
    /// whether any of the latter is present.
    #[inline(always)]
    pub(super) fn values_staged(&self, keys: &[u32], out: &mut [u32]) -> bool {
        let n = keys.len().min(out.len()).min(256);
        let (keys, out) = (&keys[..n], &mut out[..n]);
        for k in keys {
            prefetch_read(&self.quarters[quarter_of(*k)]);
        }
        // Per key: the pool index, or for a single-run quarter !0 and its value in `inl`.
        let mut inl = [0u32; 256];
        for ((k, o), v) in keys.iter().zip(out.iter_mut()).zip(inl.iter_mut()) {
            (*o, *v) = self.rank(*k);
        }
        let mut groups = 0;
        for (o, v) in out.iter_mut().zip(inl.iter()) {
            let pooled = self.vals[*o as usize & (VALS_LEN - 1)].load(Ordering::Relaxed);
            let x = if *o == u32::MAX { *v } else { pooled };
            groups |= x;
            *o = if x == NO_ROUTE { MISS_OUT } else { x };
        }
        groups & GROUP != 0
    }

    /// Software-pipelined lookup of raw values: at step `i` it prefetches the quarter
    /// entry of key `i + 2d`, ranks key `i + d` and prefetches its value, and reads the
    /// value of key `i` (`d` clamped to `1..=32`).
    #[inline(always)]
    pub(super) fn values_pipelined(&self, keys: &[u32], out: &mut [u32], d: usize) {
        const R: usize = 64;
        let d = d.clamp(1, 32);
        let n = keys.len().min(out.len());
        let (keys, out) = (&keys[..n], &mut out[..n]);
        let mut idx = [0u32; R];
        let mut inl = [0u32; R];
        let rank = |j: usize, idx: &mut [u32; R], inl: &mut [u32; R]| {
            if let Some(&k) = keys.get(j) {
                (idx[j % R], inl[j % R]) = self.rank(k);
            }
        };
        for k in keys.iter().take(2 * d) {
            prefetch_read(&self.quarters[quarter_of(*k)]);
        }
        for j in 0..d {
            rank(j, &mut idx, &mut inl);
        }
        for (i, o) in out.iter_mut().enumerate() {
            if let Some(&k) = keys.get(i + 2 * d) {
                prefetch_read(&self.quarters[quarter_of(k)]);
            }
            rank(i + d, &mut idx, &mut inl);
            let x = idx[i % R];
            let pooled = self.vals[x as usize & (VALS_LEN - 1)].load(Ordering::Relaxed);
            *o = if x == u32::MAX { inl[i % R] } else { pooled };
        }
    }
}
