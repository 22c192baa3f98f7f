//! The AVX2 staged loop of the compressed read path, for x86-64 CPUs without AVX-512 (AMD
//! Zen 1–3, Intel client cores): eight keys a register. The directory entries, run bitmaps
//! and values are read with scalar loads into vector lanes ([`gather32`], [`gather64`]:
//! on Zen 3 `vpgatherdd` takes about 16 cycles for eight lanes, the scalar loads about 9);
//! the keys are ranked with `vpsllvq` and a nibble-table popcount (`vpshufb`, `vpsadbw`),
//! and the answers decoded eight at a time. The record and value prefetches stay scalar.
//! It follows the AVX-512 loop stage for stage; its answers equal the portable loop's (a
//! property test compares them).
//!
//! Selected at run time where the CPU has AVX2. Intrinsics with `#[target_feature]` need
//! unsafe functions at the workspace's MSRV, hence the functions below are unsafe with the
//! CPU feature as their contract.

use std::arch::x86_64::*;
use std::sync::atomic::Ordering;

use super::{Compressed, AHEAD_MIN, GROUP, NARROW, NARROW_NONE, NO_ROUTE, REC_MASK};

/// Four 4-byte loads into the lanes of one register (`vmovd`, `vpinsrd` from memory), in
/// one `asm!` block.
///
/// The tables are words a writer may store concurrently (inside a write window, after
/// which the reader's sequence check throws the values away), as for the portable loop's
/// [`RacyWord`](super::RacyWord) loads: an `asm!` read is opaque to the compiler (no
/// assumption that the bytes are unchanging, no tearing into several loads), and it keeps
/// the loads as memory operands of the inserts, one instruction a lane.
///
/// # Safety
/// The CPU has AVX; every pointer is valid for a 4-byte read.
// SAFETY: marked unsafe because the pointers' validity is the caller's to prove (each
// caller masks its offsets into the table); the block only reads those bytes (`readonly`,
// no stack, flags kept). The property test compares the loop's answers with the portable
// loop's.
#[inline(always)]
unsafe fn load4x32(p: [*const u8; 4]) -> __m128i {
    let v: __m128i;
    // SAFETY: the contract above.
    unsafe {
        std::arch::asm!(
            "vmovd {v}, dword ptr [{a}]",
            "vpinsrd {v}, {v}, dword ptr [{b}], 1",
            "vpinsrd {v}, {v}, dword ptr [{c}], 2",
            "vpinsrd {v}, {v}, dword ptr [{d}], 3",
            v = out(xmm_reg) v,
            a = in(reg) p[0],
            b = in(reg) p[1],
            c = in(reg) p[2],
            d = in(reg) p[3],
            options(nostack, preserves_flags, readonly),
        );
    }
    v
}

/// Two 8-byte loads into the lanes of one register (`vmovq`, `vpinsrq` from memory), as
/// [`load4x32`].
///
/// # Safety
/// The CPU has AVX; both pointers are valid for an 8-byte read.
// SAFETY: as for `load4x32`.
#[inline(always)]
unsafe fn load2x64(p: [*const u8; 2]) -> __m128i {
    let v: __m128i;
    // SAFETY: the contract above.
    unsafe {
        std::arch::asm!(
            "vmovq {v}, qword ptr [{a}]",
            "vpinsrq {v}, {v}, qword ptr [{b}], 1",
            v = out(xmm_reg) v,
            a = in(reg) p[0],
            b = in(reg) p[1],
            options(nostack, preserves_flags, readonly),
        );
    }
    v
}

/// Eight 4-byte loads at `base + SCALE·lane` (bytes) into one register: the lanes taken
/// out with `vpextrd`, loaded with [`load4x32`]; about twice the rate of `vpgatherdd` on
/// Zen 3.
///
/// # Safety
/// The CPU has AVX2; every `base + SCALE·lane` is valid for a 4-byte read.
// SAFETY: marked unsafe for `#[target_feature]` and the addresses' contract, which its
// callers state at each call.
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn gather32<const SCALE: isize>(base: *const i32, idx: __m256i) -> __m256i {
    let at = |x: i32| base.cast::<u8>().wrapping_offset(SCALE * x as isize);
    let lo = _mm256_castsi256_si128(idx);
    let hi = _mm256_extracti128_si256::<1>(idx);
    // SAFETY: the contract: each address is valid for a 4-byte read.
    let (a, b) = unsafe {
        (
            load4x32([
                at(_mm_cvtsi128_si32(lo)),
                at(_mm_extract_epi32::<1>(lo)),
                at(_mm_extract_epi32::<2>(lo)),
                at(_mm_extract_epi32::<3>(lo)),
            ]),
            load4x32([
                at(_mm_cvtsi128_si32(hi)),
                at(_mm_extract_epi32::<1>(hi)),
                at(_mm_extract_epi32::<2>(hi)),
                at(_mm_extract_epi32::<3>(hi)),
            ]),
        )
    };
    _mm256_inserti128_si256::<1>(_mm256_castsi128_si256(a), b)
}

/// Four 8-byte loads at pool words `lane` into one register (as [`gather32`]).
///
/// # Safety
/// The CPU has AVX2; every `base + 4·lane` is valid for an 8-byte read.
// SAFETY: as for `gather32`.
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn gather64(base: *const i32, idx: __m128i) -> __m256i {
    let at = |x: i32| base.wrapping_offset(x as isize).cast::<u8>();
    // SAFETY: the contract: words `x, x + 1` are valid for reading.
    let (a, b) = unsafe {
        (
            load2x64([at(_mm_cvtsi128_si32(idx)), at(_mm_extract_epi32::<1>(idx))]),
            load2x64([
                at(_mm_extract_epi32::<2>(idx)),
                at(_mm_extract_epi32::<3>(idx)),
            ]),
        )
    };
    _mm256_inserti128_si256::<1>(_mm256_castsi128_si256(a), b)
}

/// Keys a register.
const LANES: usize = 8;
/// When values are prefetched, how many keys stage (3) stays behind stage (2), as in the
/// AVX-512 loop: a value is read after its prefetch has had time to land.
const LAG: usize = 64;

/// Whether this CPU runs [`values_staged`].
pub(super) fn available() -> bool {
    std::arch::is_x86_feature_detected!("avx2")
}

/// [`Compressed::values_staged`] with AVX2; only called where [`available`] is true.
///
/// ```text
/// (1) directory entries of every key, records prefetched   (whole slice first)
/// (2) ranks: bitmap << (63 - slot), popcount -> value offsets
/// (3) values: fused into (2) when values lie in the bitmap's line, else LAG keys behind
/// ```
#[inline(always)]
pub(super) fn values_staged(c: &Compressed, keys: &[u32], out: &mut [u32]) -> bool {
    if !c.avx2 {
        return c.values_staged_portable(keys, out, 256);
    }
    // SAFETY: `c.avx2` is set only where `available()` found AVX2 on this CPU, which is
    // all `staged` enables.
    unsafe { staged(c, keys, out) }
}

/// The popcount of each 64-bit lane: a 4-bit lookup table (`vpshufb`) on both nibbles of
/// every byte, the byte counts summed per lane (`vpsadbw`).
///
/// # Safety
/// The CPU has AVX2.
// SAFETY: marked unsafe only because of `#[target_feature]` at the MSRV; it reads no
// memory. `popcount_matches_scalar` below compares it with `u64::count_ones`.
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn popcnt64(x: __m256i) -> __m256i {
    let lut = _mm256_setr_epi8(
        0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4, 0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3,
        3, 4,
    );
    let nib = _mm256_set1_epi8(0x0f);
    let lo = _mm256_and_si256(x, nib);
    let hi = _mm256_and_si256(_mm256_srli_epi16::<4>(x), nib);
    let bytes = _mm256_add_epi8(_mm256_shuffle_epi8(lut, lo), _mm256_shuffle_epi8(lut, hi));
    _mm256_sad_epu8(bytes, _mm256_setzero_si256())
}

/// Stage (2) for the eight keys at `keys[i..i + 8]`, with their record words (offset and
/// NARROW bit) at `rec[i..i + 8]`: the byte offset in the pool of each key's 4 value bytes
/// (`value_offset`).
///
/// # Safety
/// The CPU has AVX2; `i + 8 <= keys.len()` and `i + 8 <= 256`; `pool_base` is the pool's
/// first word.
// SAFETY: marked unsafe for `#[target_feature]` and the range contract above, which its
// only caller keeps (`i` steps by 8 below the slice's length rounded down to 8).
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn rank8(pool_base: *const i32, keys: &[u32], rec: &[u32; 256], i: usize) -> __m256i {
    debug_assert!(i + LANES <= keys.len().min(256));
    // SAFETY: `i + 8 <= keys.len()` and `i + 8 <= 256` (the contract): both 32-byte
    // unaligned loads are inside their slices.
    let (k, rn) = unsafe {
        (
            _mm256_loadu_si256(keys.as_ptr().add(i).cast()),
            _mm256_loadu_si256(rec.as_ptr().add(i).cast()),
        )
    };
    let r = _mm256_and_si256(rn, _mm256_set1_epi32(REC_MASK as i32));
    // All ones in the lanes of narrow (3-byte) records.
    let narrow = _mm256_srai_epi32::<31>(_mm256_slli_epi32::<1>(rn));
    // 63 − slot, slot = (key >> 8) & 63.
    let sh = _mm256_andnot_si256(_mm256_srli_epi32::<8>(k), _mm256_set1_epi32(63));
    // SAFETY: a record offset is masked to `REC_MASK < POOL_LEN / 2`, so the 8 bytes at
    // words `r, r + 1` are in the pool. The writer may store them concurrently; what is
    // read is used only if the reader's sequence check finds no write window (module
    // docs of `compressed`), as for the portable loop's atomic loads.
    let (b_lo, b_hi) = unsafe {
        (
            gather64(pool_base, _mm256_castsi256_si128(r)),
            gather64(pool_base, _mm256_extracti128_si256::<1>(r)),
        )
    };
    let s_lo = _mm256_cvtepu32_epi64(_mm256_castsi256_si128(sh));
    let s_hi = _mm256_cvtepu32_epi64(_mm256_extracti128_si256::<1>(sh));
    // SAFETY: AVX2 is this function's contract.
    let (c_lo, c_hi) = unsafe {
        (
            popcnt64(_mm256_sllv_epi64(b_lo, s_lo)),
            popcnt64(_mm256_sllv_epi64(b_hi, s_hi)),
        )
    };
    // The eight ranks (each below 65) back in key order: interleave the two halves'
    // 64-bit lanes as 32-bit lanes (keys 0, 4, 1, 5, ...), then permute.
    let mixed = _mm256_blend_epi32::<0b1010_1010>(c_lo, _mm256_slli_epi64::<32>(c_hi));
    let rank = _mm256_permutevar8x32_epi32(mixed, _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7));
    // 4(r + 1 + rank), less `rank` for a narrow record: below 4·POOL_LEN − 4.
    _mm256_sub_epi32(
        _mm256_slli_epi32::<2>(_mm256_add_epi32(
            _mm256_add_epi32(rank, r),
            _mm256_set1_epi32(1),
        )),
        _mm256_and_si256(rank, narrow),
    )
}

/// Stage (3) for eight keys: the answers from their value byte offsets `off` (stage 2)
/// and directory entries `e`: the pool value for records, the entry otherwise; `MISS_OUT`
/// (all ones) for no route. ORs the raw values into `acc`.
///
/// # Safety
/// The CPU has AVX2; every lane of `off` is a byte offset from [`rank8`] (or the scalar
/// stage 2), inside the pool `pool_base` starts.
// SAFETY: marked unsafe for `#[target_feature]` and the offsets' contract, which its
// callers keep (they pass what `rank8` returned).
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn resolve8(pool_base: *const i32, off: __m256i, e: __m256i, acc: &mut __m256i) -> __m256i {
    // SAFETY: every lane is a byte offset below `4·POOL_LEN − 4` (the contract), so the 4
    // bytes read are in the pool; concurrent stores are handled by the sequence check as
    // in `rank8`.
    let pooled = unsafe { gather32::<1>(pool_base, off) };
    let is_rec = _mm256_srai_epi32::<31>(e);
    // Narrow records: the value is the top 3 bytes; NARROW_NONE is no route.
    let sh = _mm256_and_si256(_mm256_srli_epi32::<27>(e), _mm256_set1_epi32(8));
    let pooled = _mm256_srlv_epi32(pooled, sh);
    let narrow_bit = _mm256_set1_epi32(NARROW as i32);
    let narrow = _mm256_and_si256(
        is_rec,
        _mm256_cmpeq_epi32(_mm256_and_si256(e, narrow_bit), narrow_bit),
    );
    let none = _mm256_and_si256(
        narrow,
        _mm256_cmpeq_epi32(pooled, _mm256_set1_epi32(NARROW_NONE as i32)),
    );
    let pooled = _mm256_blendv_epi8(pooled, _mm256_set1_epi32(NO_ROUTE as i32), none);
    let x = _mm256_blendv_epi8(e, pooled, is_rec);
    *acc = _mm256_or_si256(*acc, x);
    // MISS_OUT is all ones: OR in the "no route" mask.
    _mm256_or_si256(x, _mm256_cmpeq_epi32(x, _mm256_set1_epi32(NO_ROUTE as i32)))
}

/// The loop behind [`values_staged`] (see there): stages (1) and (2) eight keys a step,
/// stage (3) fused into (2) unless the table wants its values prefetched
/// (`prefetch_values`), then `LAG` keys behind; the last `len % 8` keys go through the
/// scalar stages.
///
/// # Safety
/// The CPU has AVX2.
// SAFETY: marked unsafe for `#[target_feature]`; every memory access below states why it
// is in bounds.
#[target_feature(enable = "avx2")]
unsafe fn staged(c: &Compressed, keys: &[u32], out: &mut [u32]) -> bool {
    let n = keys.len().min(out.len()).min(256);
    let (keys, out) = (&keys[..n], &mut out[..n]);
    let vec_n = n / LANES * LANES;
    let mut dir = [0u32; 256];
    let mut rec = [0u32; 256];
    let dir_base = c.dir.as_ptr().cast::<i32>();
    let pool_base = c.pool().as_ptr().cast::<i32>();
    let l2 = c.l2_prefetch(AHEAD_MIN);
    // (1) every directory entry and record word; the records prefetched.
    let mut i = 0;
    while i < vec_n {
        // SAFETY: `i + 8 <= vec_n <= keys.len()`: the load reads 8 in-bounds keys.
        let k = unsafe { _mm256_loadu_si256(keys.as_ptr().add(i).cast()) };
        let q = _mm256_srli_epi32::<14>(k);
        // SAFETY: every lane is `key >> 14 < 2^18 = QUARTERS`, an index inside the
        // directory (4-byte entries, scale 4). The entries are `AtomicU32`s the writer may
        // store concurrently: each aligned lane is read in one access, and what is read is
        // used only if the sequence check finds no write window.
        let e = unsafe { gather32::<4>(dir_base, q) };
        let is_rec = _mm256_srai_epi32::<31>(e);
        // The record offset and its NARROW bit (0 for a single-run quarter).
        let r = _mm256_and_si256(
            _mm256_and_si256(e, is_rec),
            _mm256_set1_epi32((REC_MASK | NARROW) as i32),
        );
        // SAFETY: `i + 8 <= 256`: both stores are inside the local arrays.
        unsafe {
            _mm256_storeu_si256(dir.as_mut_ptr().add(i).cast(), e);
            _mm256_storeu_si256(rec.as_mut_ptr().add(i).cast(), r);
        }
        // SAFETY: AVX2 is this function's contract.
        unsafe { prefetch8(c, r, 0, l2) };
        i += LANES;
    }
    for j in vec_n..n {
        dir[j] = c.stage_dir(keys[j], l2);
    }
    // (2) ranks and (3) values.
    let fused = !c.prefetch_values.load(Ordering::Relaxed);
    let mut acc = _mm256_setzero_si256();
    // Keys `..resolved` have their answers (when not fused).
    let mut resolved = 0;
    let mut i = 0;
    while i < vec_n {
        // SAFETY: `i + 8 <= vec_n`, with `vec_n <= keys.len()` and `vec_n <= 256`.
        let off = unsafe { rank8(pool_base, keys, &rec, i) };
        if fused {
            // SAFETY: `i + 8 <= 256` for `dir`, `i + 8 <= out.len()` for the store;
            // `off` comes from `rank8`.
            unsafe {
                let e = _mm256_loadu_si256(dir.as_ptr().add(i).cast());
                let x = resolve8(pool_base, off, e, &mut acc);
                _mm256_storeu_si256(out.as_mut_ptr().add(i).cast(), x);
            }
        } else {
            // SAFETY: `i + 8 <= out.len()`: the offsets go into this key's slots.
            unsafe { _mm256_storeu_si256(out.as_mut_ptr().add(i).cast(), off) };
            // SAFETY: AVX2 is this function's contract.
            unsafe { prefetch8(c, off, 2, l2) };
            if i >= LAG {
                let j = i - LAG;
                // SAFETY: `j + 8 <= i <= 256`: `dir` and `out` hold the entries and the
                // offsets `rank8` stored for keys `j..j + 8`.
                unsafe { resolve_at(pool_base, out, &dir, j, &mut acc) };
                resolved = j + LANES;
            }
        }
        i += LANES;
    }
    if !fused {
        let mut j = resolved;
        while j < vec_n {
            // SAFETY: as in the loop: `j + 8 <= vec_n` and `out[j..j + 8]` holds offsets.
            unsafe { resolve_at(pool_base, out, &dir, j, &mut acc) };
            j += LANES;
        }
    }
    let mut groups = 0;
    for j in vec_n..n {
        out[j] = c.stage_rank(keys[j], dir[j], l2);
    }
    if vec_n < n {
        groups |= c.stage_values(&mut out[vec_n..n], &dir[vec_n..n]);
    }
    // One reduction for the whole slice.
    let a = _mm_or_si128(
        _mm256_castsi256_si128(acc),
        _mm256_extracti128_si256::<1>(acc),
    );
    let a = _mm_or_si128(a, _mm_shuffle_epi32::<0b01_00_11_10>(a));
    let a = _mm_or_si128(a, _mm_shuffle_epi32::<0b10_11_00_01>(a));
    groups |= _mm_cvtsi128_si32(a) as u32;
    groups & GROUP != 0
}

/// Prefetches the eight pool words `lane >> shift` (masked into the pool), taking the
/// lanes from the register: reading them back from the array just stored would wait on
/// store forwarding from a 32-byte store to 4-byte loads.
///
/// # Safety
/// The CPU has AVX2.
// SAFETY: marked unsafe only because of `#[target_feature]`; a prefetch reads nothing.
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn prefetch8(c: &Compressed, v: __m256i, shift: u32, l2: bool) {
    let lo = _mm256_castsi256_si128(v);
    let hi = _mm256_extracti128_si256::<1>(v);
    for w in [
        _mm_cvtsi128_si32(lo),
        _mm_extract_epi32::<1>(lo),
        _mm_extract_epi32::<2>(lo),
        _mm_extract_epi32::<3>(lo),
        _mm_cvtsi128_si32(hi),
        _mm_extract_epi32::<1>(hi),
        _mm_extract_epi32::<2>(hi),
        _mm_extract_epi32::<3>(hi),
    ] {
        c.prefetch_word((w as u32 >> shift) as usize, l2);
    }
}

/// Stage (3) in place for keys `j..j + 8`: `out` holds their value offsets on entry and
/// their answers on exit.
///
/// # Safety
/// The CPU has AVX2; `j + 8 <= out.len()` and `j + 8 <= 256`; `out[j..j + 8]` holds
/// offsets from [`rank8`].
// SAFETY: marked unsafe for `#[target_feature]` and the contract above, which `staged`
// keeps.
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn resolve_at(
    pool_base: *const i32,
    out: &mut [u32],
    dir: &[u32; 256],
    j: usize,
    acc: &mut __m256i,
) {
    debug_assert!(j + LANES <= out.len().min(256));
    // SAFETY: `j + 8 <= out.len()` and `j + 8 <= 256` (the contract).
    unsafe {
        let off = _mm256_loadu_si256(out.as_ptr().add(j).cast());
        let e = _mm256_loadu_si256(dir.as_ptr().add(j).cast());
        let x = resolve8(pool_base, off, e, acc);
        _mm256_storeu_si256(out.as_mut_ptr().add(j).cast(), x);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The nibble-table popcount equals `count_ones` on edge and random words.
    #[test]
    fn popcount_matches_scalar() {
        if !available() {
            return;
        }
        let mut s = 0x9e37_79b9_7f4a_7c15u64;
        let mut words = vec![0, 1, u64::MAX, 1 << 63, 0x5555_5555_5555_5555];
        for _ in 0..400 {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            words.push(s);
        }
        for w in words.chunks_exact(4) {
            let mut got = [0u64; 4];
            // SAFETY: AVX2 was checked above; the load and store move 32 bytes between
            // 4-word arrays.
            unsafe {
                let v = _mm256_loadu_si256(w.as_ptr().cast());
                _mm256_storeu_si256(got.as_mut_ptr().cast(), popcnt64(v));
            }
            for (g, x) in got.iter().zip(w) {
                assert_eq!(*g, u64::from(x.count_ones()), "{x:#x}");
            }
        }
    }
}
