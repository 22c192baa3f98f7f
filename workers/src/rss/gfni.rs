//! The GFNI path of the Toeplitz hash: `GF2P8AFFINEQB` multiplies every byte of a 512-bit
//! register by an 8×8 bit matrix (one matrix per 64-bit lane), which is the whole Toeplitz
//! hash once the input bytes are placed in the right lanes.
//!
//! # The arithmetic
//!
//! Number the input bits `n = 8i + c` (byte `i`, bit `c` from the most significant) and the
//! hash bits `j = 8k + b` (hash byte `k`, from the most significant, bit `b` within it). Hash
//! bit `j` is the XOR over set input bits `n` of key bit `n + j`, i.e. key bit
//! `8(i + k) + b + c`. So what input byte `i` adds to hash byte `k` is a linear map of that
//! byte that depends on `m = i + k` alone: the 15 key bits from bit `8m` on, in key bytes
//! `m` and `m + 1`. With `W = key[m] << 8 | key[m + 1]`, row `b` of that map (the byte that
//! decides output bit `b`) has bit `7 - c` = key bit `8m + b + c` = bit `15 - b - c` of `W`:
//! row `b` is `(W >> (8 - b)) as u8`. `GF2P8AFFINEQB` takes the row for output bit `7 - b`
//! (counted from the least significant) from matrix byte `b`, so the matrix for `m` is the
//! eight rows in byte order. A 36-byte input and a 4-byte hash give `m` in `0..39`: 39
//! matrices, padded to 40 (five registers), computed once per key ([`Matrices::new`]).
//!
//! # The lanes
//!
//! Lane `m` (vector `m / 8`, lane `m % 8`) holds input bytes `m - 3`, `m - 2`, `m - 1` and
//! `m` in its bytes 0 to 3 (zero where the index is outside the input): byte `j` then comes
//! out as hash byte `3 - j`, so the lane's low 32 bits, read little-endian, are that lane's
//! share of the hash as a `u32`. Bytes 4 to 7 hold a second input the same way. The hash is
//! the XOR of all the lanes' shares: `ceil((len + 3) / 8)` permutes (`VPERMI2B`, from a
//! masked load of each input), as many affine transforms and XORs, then a fold of the eight
//! lanes. [`hash_tuples`] hashes sixteen tuples per step and folds eight registers at once
//! (lane `p` of the result = all lanes of register `p`), so that one 64-byte store writes
//! sixteen hashes.

// The AVX-512 and GFNI intrinsics are stable from Rust 1.89; the build script enables this
// module only from there (the workspace's MSRV builds the table path alone).
#![allow(clippy::incompatible_msrv)]

use std::arch::x86_64::*;

use super::{Tuple, KEY_LEN, MAX_INPUT};

/// Matrices per key, one per lane: the 39 that a [`MAX_INPUT`]-byte input needs, and a
/// zero one to fill the fifth register.
const LANES: usize = 40;
/// Registers of matrices (and of permute indices).
const VECTORS: usize = LANES / 8;
/// A byte of every loaded input register that is always zero: inputs are at most
/// [`MAX_INPUT`] bytes and the load clears the rest.
const ZERO_BYTE: usize = 63;

/// The GF2P8AFFINEQB matrices of one key (see the module's text).
#[derive(Clone)]
pub(super) struct Matrices([u64; LANES]);

impl Matrices {
    /// The matrices for `key`.
    pub(super) fn new(key: &[u8; KEY_LEN]) -> Matrices {
        Matrices(std::array::from_fn(|m| {
            let hi = key.get(m).copied().unwrap_or(0);
            let lo = key.get(m + 1).copied().unwrap_or(0);
            let w = u16::from_be_bytes([hi, lo]);
            (0..8).fold(0u64, |acc, b| {
                acc | u64::from((w >> (8 - b)) as u8) << (8 * b)
            })
        }))
    }
}

/// `VPERMI2B` indices per register: byte `8l + j` of register `v` is input byte
/// `8v + l - 3 + j % 4` of the first input (`j < 4`) or the second (`j ≥ 4`, index bit 6),
/// or [`ZERO_BYTE`] before the input's start. Indices past the input land on the zeros the
/// masked load left there (at most byte 39 < 64).
static PERMUTE: [[u8; 64]; VECTORS] = {
    let mut idx = [[0u8; 64]; VECTORS];
    let mut v = 0;
    while v < VECTORS {
        let mut p = 0;
        while p < 64 {
            let m = 8 * v + p / 8;
            let j = p % 8;
            let pos = m + j % 4; // input byte + 3
            let byte = if pos < 3 { ZERO_BYTE } else { pos - 3 };
            idx[v][p] = ((j / 4) * 64 + byte) as u8;
            p += 1;
        }
        v += 1;
    }
    idx
};

/// Whether this CPU runs the GFNI path: GFNI, AVX-512F and AVX-512BW (`VPERMI2B` is
/// AVX-512VBMI, which every GFNI CPU with AVX-512 has; it is checked too).
pub(super) fn available() -> bool {
    std::arch::is_x86_feature_detected!("gfni")
        && std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512bw")
        && std::arch::is_x86_feature_detected!("avx512vbmi")
}

/// The masked load of `len` (≤ [`MAX_INPUT`]) bytes at `ptr`; the rest of the register is
/// zero.
///
/// # Safety
/// `ptr..ptr + len` is readable; the CPU has the features of [`available`].
// SAFETY: unsafe to call because the readable range and the CPU features (# Safety above)
// are the caller's to prove; `load_tuple`, `hash` and the bulk path call it with a tuple's
// or an input's own bytes, and the tests compare every result with the reference hash.
#[inline]
#[target_feature(enable = "gfni,avx512f,avx512bw,avx512vbmi")]
unsafe fn load(ptr: *const u8, len: usize) -> __m512i {
    let mask = (1u64 << len.min(MAX_INPUT)) - 1;
    // SAFETY: the mask selects bytes 0..len, which the caller vouches for; masked-off bytes
    // are not accessed (AVX-512 masked loads suppress their faults).
    unsafe { _mm512_maskz_loadu_epi8(mask, ptr.cast()) }
}

/// The masked load of a tuple's bytes.
#[inline]
#[target_feature(enable = "gfni,avx512f,avx512bw,avx512vbmi")]
fn load_tuple(t: &Tuple) -> __m512i {
    // SAFETY: `t.bytes` holds MAX_INPUT bytes, and `load` reads at most that many; this
    // function's target features are the ones `load` needs.
    unsafe { load(t.bytes.as_ptr(), usize::from(t.len)) }
}

/// The lanes of two inputs `a` and `b` (each zero past its end), XORed over the first `NV`
/// registers: every lane's bytes 0..4 are its share of `a`'s hash, bytes 4..8 of `b`'s.
#[inline]
#[target_feature(enable = "gfni,avx512f,avx512bw,avx512vbmi")]
fn lanes<const NV: usize>(mats: &Matrices, a: __m512i, b: __m512i) -> __m512i {
    let mut acc = _mm512_setzero_si512();
    for (idx, mat) in PERMUTE.iter().zip(mats.0.chunks_exact(8)).take(NV) {
        // SAFETY: both pointers address 64 readable bytes (a [u8; 64], 8 u64); unaligned
        // loads.
        let (idx, mat) = unsafe {
            (
                _mm512_loadu_si512(idx.as_ptr().cast()),
                _mm512_loadu_si512(mat.as_ptr().cast()),
            )
        };
        let bytes = _mm512_permutex2var_epi8(a, idx, b);
        acc = _mm512_xor_si512(acc, _mm512_gf2p8affine_epi64_epi8::<0>(bytes, mat));
    }
    acc
}

/// [`lanes`] with the register count for inputs of up to `len` bytes: `len + 3` lanes.
#[inline]
#[target_feature(enable = "gfni,avx512f,avx512bw,avx512vbmi")]
fn lanes_for(len: usize, mats: &Matrices, a: __m512i, b: __m512i) -> __m512i {
    match (len + 3).div_ceil(8) {
        0 | 1 => lanes::<1>(mats, a, b),
        2 => lanes::<2>(mats, a, b),
        3 => lanes::<3>(mats, a, b),
        4 => lanes::<4>(mats, a, b),
        _ => lanes::<VECTORS>(mats, a, b),
    }
}

/// The XOR of a register's eight 64-bit lanes.
#[inline]
#[target_feature(enable = "gfni,avx512f,avx512bw,avx512vbmi")]
fn fold(z: __m512i) -> u64 {
    let y = _mm256_xor_si256(_mm512_castsi512_si256(z), _mm512_extracti64x4_epi64::<1>(z));
    let x = _mm_xor_si128(_mm256_castsi256_si128(y), _mm256_extracti128_si256::<1>(y));
    _mm_cvtsi128_si64(_mm_xor_si128(x, _mm_unpackhi_epi64(x, x))) as u64
}

/// The hash of `input` (its first [`MAX_INPUT`] bytes) under the key of `mats`.
///
/// # Safety
/// The CPU has the features of [`available`].
// SAFETY: unsafe to call only because the CPU features are the caller's to prove
// (`Toeplitz` calls it only on `Path::Gfni`, chosen after `available()`); the body reads
// within `input`.
#[inline]
#[target_feature(enable = "gfni,avx512f,avx512bw,avx512vbmi")]
pub(super) unsafe fn hash(mats: &Matrices, input: &[u8]) -> u32 {
    let len = input.len().min(MAX_INPUT);
    // SAFETY: `input` has `len` readable bytes; the features are the caller's promise.
    let a = unsafe { load(input.as_ptr(), len) };
    fold(lanes_for(len, mats, a, _mm512_setzero_si512())) as u32
}

/// Two registers' lanes pairwise folded to half as many: `x`'s and `y`'s 128-bit chunks
/// (0, 1) XOR (2, 3), placed as `x`'s then `y`'s.
#[inline]
#[target_feature(enable = "gfni,avx512f,avx512bw,avx512vbmi")]
fn fold_halves(x: __m512i, y: __m512i) -> __m512i {
    let lo = _mm512_shuffle_i64x2::<0b01_00_01_00>(x, y);
    let hi = _mm512_shuffle_i64x2::<0b11_10_11_10>(x, y);
    _mm512_xor_si512(lo, hi)
}

/// The next fold: 128-bit chunks (0, 2) XOR (1, 3) of `x` and of `y`.
#[inline]
#[target_feature(enable = "gfni,avx512f,avx512bw,avx512vbmi")]
fn fold_quarters(x: __m512i, y: __m512i) -> __m512i {
    let lo = _mm512_shuffle_i64x2::<0b10_00_10_00>(x, y);
    let hi = _mm512_shuffle_i64x2::<0b11_01_11_01>(x, y);
    _mm512_xor_si512(lo, hi)
}

/// The last fold: even lanes XOR odd lanes, `x`'s then `y`'s.
#[inline]
#[target_feature(enable = "gfni,avx512f,avx512bw,avx512vbmi")]
fn fold_pairs(x: __m512i, y: __m512i) -> __m512i {
    let even = _mm512_set_epi64(14, 12, 10, 8, 6, 4, 2, 0);
    let odd = _mm512_set_epi64(15, 13, 11, 9, 7, 5, 3, 1);
    _mm512_xor_si512(
        _mm512_permutex2var_epi64(x, even, y),
        _mm512_permutex2var_epi64(x, odd, y),
    )
}

/// Sixteen tuples' hashes into `out`, with `NV` registers of lanes (enough for the longest).
#[inline]
#[target_feature(enable = "gfni,avx512f,avx512bw,avx512vbmi")]
fn block<const NV: usize>(mats: &Matrices, t: &[Tuple; 16], out: &mut [u32; 16]) {
    let mut z = [_mm512_setzero_si512(); 8];
    for (p, zp) in z.iter_mut().enumerate() {
        *zp = lanes::<NV>(mats, load_tuple(&t[2 * p]), load_tuple(&t[2 * p + 1]));
    }
    // lane p of r: all of z[p]'s lanes, i.e. the hashes of tuples 2p and 2p + 1
    let r = fold_pairs(
        fold_quarters(fold_halves(z[0], z[1]), fold_halves(z[2], z[3])),
        fold_quarters(fold_halves(z[4], z[5]), fold_halves(z[6], z[7])),
    );
    // SAFETY: `out` is 64 writable bytes; unaligned store.
    unsafe { _mm512_storeu_si512(out.as_mut_ptr().cast(), r) }
}

/// [`block`] with the register count for the longest of the sixteen tuples.
#[inline]
#[target_feature(enable = "gfni,avx512f,avx512bw,avx512vbmi")]
fn block_any(mats: &Matrices, t: &[Tuple; 16], out: &mut [u32; 16]) {
    let longest = t.iter().map(|t| usize::from(t.len)).max().unwrap_or(0);
    match (longest + 3).div_ceil(8) {
        0..=2 => block::<2>(mats, t, out),
        3 => block::<3>(mats, t, out),
        4 => block::<4>(mats, t, out),
        _ => block::<VECTORS>(mats, t, out),
    }
}

/// The hashes of `tuples` into `out` (`out[i]` for `tuples[i]`; stops at the shorter):
/// sixteen at a time, the last fewer than sixteen through a zero-padded block.
///
/// # Safety
/// The CPU has the features of [`available`].
// SAFETY: unsafe to call only because the CPU features are the caller's to prove
// (`Toeplitz::hash_tuples` calls it only on `Path::Gfni`); the body reads whole tuples and
// writes within `out`.
#[target_feature(enable = "gfni,avx512f,avx512bw,avx512vbmi")]
pub(super) unsafe fn hash_tuples(mats: &Matrices, tuples: &[Tuple], out: &mut [u32]) {
    let n = tuples.len().min(out.len());
    let mut ts = tuples[..n].chunks_exact(16);
    let mut os = out[..n].chunks_exact_mut(16);
    for (t, o) in (&mut ts).zip(&mut os) {
        if let (Ok(t), Ok(o)) = (t.try_into(), o.try_into()) {
            block_any(mats, t, o);
        }
    }
    let rest = ts.remainder();
    if !rest.is_empty() {
        let mut t = [Tuple::EMPTY; 16];
        t[..rest.len()].copy_from_slice(rest);
        let mut h = [0u32; 16];
        block_any(mats, &t, &mut h);
        os.into_remainder().copy_from_slice(&h[..rest.len()]);
    }
}
