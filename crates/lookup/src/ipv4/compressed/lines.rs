//! The line-per-quarter read path of [`Lpm4`](crate::ipv4::Lpm4) ([`ReadPath::Lines`](
//! crate::ipv4::ReadPath::Lines)): each of the 2^18 quarters (64 /24 slots) has one 64-byte
//! line at a fixed place, `lines[key >> 14]`, holding its run bitmap and up to
//! [`LINE_RUNS`] run values of 3 bytes. A lookup is one line, with no directory read before
//! it: the address of the line depends on the key only, so a vector lookup can prefetch
//! any number of keys ahead with nothing to wait for.
//!
//! It is meant for tables that put a record in nearly every quarter (a uniformly placed
//! table: 98% of the quarters of `routes::generate_ipv4(1_000_000, _)` have one, 99.8% of
//! them 18 runs or fewer). There the compressed path reads two lines a key (directory,
//! then record) and the master one line of a 64 MiB array; the lines array is 16 MiB.
//!
//! # Layout
//!
//! * bytes 0..8: the run-start bitmap (bit `s` set where a run starts; bit 0 is read as
//!   set whatever is stored, so that a zero line is one run);
//! * bytes 8..62: run value `i` at bytes `8 + 3i ..+ 3`, stored XOR [`NARROW_NONE`] so that a
//!   zero line is one run of "no route" (a new table's lines need no writing, and the OS
//!   commits only the pages written);
//! * a run whose value is not a next hop below [`ESCAPE_VALUE`] nor "no route" (a group
//!   pointer: a /24 that holds longer prefixes; or a wide next hop) holds [`ESCAPE_VALUE`],
//!   and so does the last of a quarter of more than [`LINE_RUNS`] runs, made to run to the
//!   quarter's end (the first `LINE_RUNS − 1` runs stay in the line): the lookup answers
//!   [`ESCAPED`] and the caller reads the master for that key.
//!
//! The lines are written by [`Compressed::publish`](super::Compressed::publish) inside the
//! same write windows as the directory and records, so readers use the same sequence check.

use std::sync::atomic::{AtomicU32, Ordering};

use pktvec_packet::prefetch::prefetch_read;

use super::{
    load_u32_at, load_u64_at, quarter_of, runs_of, select, zeroed_array, NARROW_NONE, NO_ROUTE,
    QUARTERS,
};

/// Words (`u32`) per line.
const LINE_WORDS: usize = 16;
/// Words in the lines array (2^22: 16 MiB).
const LINES_LEN: usize = QUARTERS * LINE_WORDS;
/// Words readable past the last line: a value read is at most `4 + 3 · 64 + 4` bytes into
/// a line (rank 64, which only a half-written line can give), so with three lines of
/// slack no read can leave the array and the loads need no clamp.
const SLACK: usize = 3 * LINE_WORDS;
/// Most runs a line holds: 18 values of 3 bytes after the 8-byte bitmap.
const LINE_RUNS: u32 = 18;
/// Prefetches a range read with `head` starts with (see [`Lines::values`]).
const HEAD: usize = 16;
/// The run value that sends a key elsewhere (the largest next hop a narrow record holds,
/// `NARROW_NONE − 1`, is read from the master instead).
const ESCAPE_VALUE: u32 = NARROW_NONE - 1;
/// What [`Lines::value`] answers for a key whose run escapes: `ESCAPE_VALUE` with the top
/// byte set, as `MISS_OUT` is `NARROW_NONE` with it (never a next hop, which is below
/// 2^24).
pub(in crate::ipv4) const ESCAPED: u32 = ESCAPE_VALUE | 0xff00_0000;

/// The lines array (see the [module docs](self)).
pub(in crate::ipv4) struct Lines {
    /// The array's words, [`SLACK`] and a line more than it holds: it starts `base` words
    /// in, on a cache line (see [`words`](Self::words)).
    raw: Box<[AtomicU32; LINES_LEN + SLACK + LINE_WORDS]>,
    /// Words from the start of `raw` to the first cache-line boundary (< [`LINE_WORDS`]).
    base: usize,
}

impl Lines {
    /// Every quarter one run of "no route" (all zero); also returns whether the array was
    /// advised to use transparent huge pages.
    pub(super) fn new(huge_pages: bool) -> (Self, bool) {
        let (raw, advised) =
            zeroed_array::<AtomicU32, { LINES_LEN + SLACK + LINE_WORDS }>(huge_pages);
        // A large `calloc` is 16-byte aligned only: a line that straddled two cache lines
        // would make a lookup fetch two (the second unprefetched: 1.3–1.5× the cycles a
        // key on the uniform table before this).
        let base = (raw.as_ptr() as usize).wrapping_neg() % 64 / 4;
        (Lines { raw, base }, advised)
    }

    /// The lines: [`LINES_LEN`] words starting on a cache line, and [`SLACK`] words after
    /// them (bounds provable at compile time: `base` is masked below [`LINE_WORDS`]).
    #[inline(always)]
    pub(super) fn words(&self) -> &[AtomicU32; LINES_LEN + SLACK] {
        let b = self.base & (LINE_WORDS - 1);
        match self.raw[b..b + LINES_LEN + SLACK].try_into() {
            Ok(w) => w,
            Err(_) => unreachable!("the slice has LINES_LEN + SLACK words"),
        }
    }

    /// Bytes of the array (committed as its pages are written).
    pub(super) const BYTES: usize = LINES_LEN * 4;

    /// Writes quarter `q`'s line from its 64 slot values (each a next hop, [`NO_ROUTE`] or a
    /// group pointer). Call inside a write window. Words that do not change are not
    /// stored, so that lines of empty address space stay on the OS's zero page.
    pub(super) fn write(&self, q: usize, slots: &[u32]) {
        let slots = &slots[..slots.len().min(64)];
        let (bits, runs) = runs_of(slots);
        let mut bytes = [0u8; 4 * LINE_WORDS];
        let mut put = |i: usize, v: u32| {
            bytes[8 + 3 * i..11 + 3 * i].copy_from_slice(&(v ^ NARROW_NONE).to_le_bytes()[..3]);
        };
        // A quarter of more runs keeps its first LINE_RUNS − 1 and escapes the rest: its
        // last run is made to reach slot 63.
        let mut bits = bits;
        if runs > LINE_RUNS {
            for _ in 0..runs - LINE_RUNS {
                bits &= !(1u64 << (63 - bits.leading_zeros()));
            }
        }
        let starts = (0..slots.len()).filter(|&s| bits >> s & 1 == 1);
        for (i, s) in starts.enumerate() {
            put(
                i,
                match slots[s] {
                    _ if runs > LINE_RUNS && i as u32 == LINE_RUNS - 1 => ESCAPE_VALUE,
                    NO_ROUTE => NARROW_NONE,
                    v if v < ESCAPE_VALUE => v,
                    _ => ESCAPE_VALUE,
                },
            );
        }
        bytes[..8].copy_from_slice(&bits.to_le_bytes());
        let line = &self.words()[(q % QUARTERS) * LINE_WORDS..][..LINE_WORDS];
        for (w, word) in bytes.chunks_exact(4).zip(line) {
            let w = u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
            if word.load(Ordering::Relaxed) != w {
                word.store(w, Ordering::Relaxed);
            }
        }
    }

    /// The answer for `key` from its line: a next hop, `MISS_OUT` for no route, or
    /// [`ESCAPED`]; branch-free, two loads from one line.
    #[inline(always)]
    pub(in crate::ipv4) fn value(&self, key: u32) -> u32 {
        let base = quarter_of(key) * 4 * LINE_WORDS;
        let words = self.words();
        let bits = load_u64_at(words, base) | 1;
        // 63 − s for slot s; the rank is the runs started at slots 0..=s: at most
        // LINE_RUNS in a line, so the 4 bytes read (from one byte before the value) stay
        // in the line.
        let shift = !(key >> 8) & 63;
        let rank = (bits << shift).count_ones() as usize;
        let v = (load_u32_at(words, base + 4 + 3 * rank) >> 8) ^ NARROW_NONE;
        // NARROW_NONE and ESCAPE_VALUE become MISS_OUT and ESCAPED.
        select(v >= ESCAPE_VALUE, v | 0xff00_0000, v)
    }

    /// Prefetches `key`'s line.
    #[inline(always)]
    pub(super) fn prefetch(&self, key: u32) {
        prefetch_read(&self.words()[(quarter_of(key) * LINE_WORDS) % LINES_LEN]);
    }

    /// Answers `keys[start..start + out.len()]` into `out` (see [`value`](Self::value)),
    /// prefetching lines up to `d` keys ahead, also beyond the range (the rest of `keys`
    /// is the caller's next range). With `head` (a range that does not follow one read
    /// this way) it starts with [`HEAD`] prefetches and then issues two a key until it is
    /// `d` ahead: a burst of `d` prefetches at once costs more than it hides (Zen 3, 256-key
    /// vectors of the uniform table: 16 then two a key read 1.05–1.4× faster than 64
    /// at once, four runs). Returns whether any answer is [`ESCAPED`].
    #[inline(always)]
    pub(in crate::ipv4) fn values(
        &self,
        keys: &[u32],
        start: usize,
        out: &mut [u32],
        d: usize,
        head: bool,
    ) -> bool {
        let n = out.len();
        let mine = &keys[start..start + n];
        // Keys before `ahead` have had their line prefetched.
        let mut ahead = if head {
            let first = (start + HEAD.min(d)).min(keys.len());
            for &k in &keys[start..first] {
                self.prefetch(k);
            }
            first
        } else {
            (start + d).min(keys.len())
        };
        let mut escaped = false;
        // Two prefetches a key while catching up to `d` ahead (after a head), then one.
        let mut i = 0;
        while i < n && ahead < (start + i + d).min(keys.len()) {
            for _ in 0..2 {
                if ahead < (start + i + d).min(keys.len()) {
                    self.prefetch(keys[ahead]);
                    ahead += 1;
                }
            }
            let v = self.value(mine[i]);
            escaped |= v == ESCAPED;
            out[i] = v;
            i += 1;
        }
        for (j, (&k, o)) in mine[i..].iter().zip(out[i..].iter_mut()).enumerate() {
            if let Some(&a) = keys.get(start + i + j + d) {
                self.prefetch(a);
            }
            let v = self.value(k);
            escaped |= v == ESCAPED;
            *o = v;
        }
        escaped
    }
}
