//! Software prefetch hints.
//!
//! A prefetch is only a hint: it never faults, whatever the address, and never changes
//! what a program computes. These helpers take references or slices, so the address is
//! that of a live object ([`prefetch_index`] may also point past its slice, harmlessly);
//! on targets without a prefetch instruction they do nothing.
//!
//! ```
//! let table = vec![0u64; 1024];
//! pktvec_packet::prefetch::prefetch_read(&table[512]);
//! ```

/// Hints the CPU to bring the cache line holding `*value` into all cache levels.
#[inline(always)]
pub fn prefetch_read<T>(value: &T) {
    prefetch_ptr((value as *const T).cast::<u8>());
}

/// Hints the CPU to bring the cache line holding `*value` into the second-level cache
/// (and the levels beyond it), but not into L1: `PREFETCHT1` on x86.
///
/// For lookups that fetch many far lines ahead of their use: measured on Zen 4 (see
/// `docs/results/lookup-tables.md`), the staged IPv4 lookup of 256 keys on a table where
/// nearly every key reads its own record line runs 1.5–1.7× faster with this hint than
/// with [`prefetch_read`]; the later read then hits L2. For a few lines needed soon,
/// [`prefetch_read`] is the better hint.
///
/// ```
/// let table = vec![0u64; 1 << 20];
/// pktvec_packet::prefetch::prefetch_read_l2(&table[123_456]);
/// ```
#[inline(always)]
pub fn prefetch_read_l2<T>(value: &T) {
    let p = (value as *const T).cast::<i8>();
    #[cfg(any(target_arch = "x86_64", target_arch = "x86"))]
    {
        #[cfg(target_arch = "x86")]
        use std::arch::x86::{_mm_prefetch, _MM_HINT_T1};
        #[cfg(target_arch = "x86_64")]
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T1};
        // SAFETY: PREFETCHT1 is part of SSE, which every x86_64 CPU has; a prefetch never
        // dereferences its operand architecturally and cannot fault; `p` is the address of
        // a live reference anyway.
        unsafe { _mm_prefetch::<_MM_HINT_T1>(p) };
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "x86")))]
    {
        let _ = p;
    }
}

/// Hints the CPU to bring the cache line of `items[i]` into all cache levels, with no
/// bounds check: for a lookup's hot loop, where the index comes from the table itself and
/// a checked `prefetch_read(&items[i])` would add a compare and a branch per key. An `i`
/// beyond the slice prefetches some other address, which is harmless (a prefetch never
/// faults and is never read back).
///
/// ```
/// let table = vec![0u32; 1 << 20];
/// pktvec_packet::prefetch::prefetch_index(&table, 123_456);
/// pktvec_packet::prefetch::prefetch_index(&table, usize::MAX); // out of bounds: a no-op hint
/// ```
#[inline(always)]
pub fn prefetch_index<T>(items: &[T], i: usize) {
    prefetch_ptr(items.as_ptr().wrapping_add(i).cast::<u8>());
}

/// Hints the CPU to bring the first cache line of `bytes` into all cache levels.
/// Does nothing for an empty slice.
#[inline(always)]
pub fn prefetch_bytes(bytes: &[u8]) {
    if !bytes.is_empty() {
        prefetch_ptr(bytes.as_ptr());
    }
}

/// Hints the CPU to bring the cache line at `p` into all cache levels (crate-internal:
/// the buffer pool's per-packet prefetches compute addresses instead of slicing).
#[inline(always)]
pub(crate) fn prefetch_ptr(p: *const u8) {
    #[cfg(any(target_arch = "x86_64", target_arch = "x86"))]
    {
        #[cfg(target_arch = "x86")]
        use std::arch::x86::{_mm_prefetch, _MM_HINT_T0};
        #[cfg(target_arch = "x86_64")]
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: PREFETCHT0 is part of SSE, which every x86_64 CPU has; a prefetch never
        // dereferences its operand architecturally and cannot fault, whatever `p` is (the
        // buffer pool passes addresses computed from an index without checking the index:
        // an index outside the pool only makes the hint useless).
        unsafe { _mm_prefetch::<_MM_HINT_T0>(p.cast::<i8>()) };
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "x86")))]
    {
        let _ = p;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefetch_is_harmless() {
        let v: Vec<u32> = (0..4096).collect();
        for x in v.iter().step_by(16) {
            prefetch_read(x);
        }
        let bytes = [1u8; 3];
        prefetch_bytes(&bytes);
        prefetch_bytes(&[]);
        for x in v.iter().step_by(16) {
            prefetch_read_l2(x);
        }
        // Unchecked indices, in and far out of bounds: hints only, never a fault.
        for i in [0, 4095, 4096, 1 << 40, usize::MAX] {
            prefetch_index(&v, i);
        }
        prefetch_index::<u32>(&[], 7);
        // Values are unchanged by prefetching.
        assert_eq!(v.iter().map(|&x| x as u64).sum::<u64>(), 4095 * 4096 / 2);
        assert_eq!(bytes, [1, 1, 1]);
    }
}
