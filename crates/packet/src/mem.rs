//! Memory hints for large lookup tables.
//!
//! [`advise_hugepages`] asks the kernel to back a large slice with transparent huge pages
//! (2 MiB on x86_64), which cuts the TLB misses of random lookups into a table of tens of
//! MiB. It is advice only: contents never change, and on systems without transparent huge
//! pages (or outside Linux) it does nothing. Call it on memory that is not yet touched
//! (e.g. a fresh `Vec::with_capacity`'s spare capacity) so the first write faults in huge
//! pages directly. A `Vec` below 32 MiB may get pages the allocator already faulted in,
//! though, and populated memory is only collapsed later, if ever, by `khugepaged`:
//! [`collapse_hugepages`] collapses a written table at once.
//!
//! ```
//! let mut v: Vec<u32> = Vec::with_capacity(4 << 20); // 16 MiB, untouched
//! let advised = pktvec_packet::mem::advise_hugepages(v.spare_capacity_mut());
//! v.resize(4 << 20, 0); // first touch: huge pages where the kernel could give them
//! # let _ = advised;
//! ```

/// The huge-page size [`advise_hugepages`] aligns to (2 MiB, x86_64 and aarch64 with 4 KiB
/// base pages).
pub const HUGE_PAGE: usize = 2 << 20;

/// Advises the kernel (`madvise(MADV_HUGEPAGE)`) to back the 2 MiB-aligned interior of `s`
/// with transparent huge pages. Returns `true` if that advice was accepted, `false` if the
/// slice holds no whole aligned 2 MiB range, the kernel refused (e.g. THP compiled out), or
/// the target is not Linux. The bytes at the unaligned ends stay on normal pages. Never
/// changes the contents of `s`.
///
/// ```
/// // A small slice holds no aligned 2 MiB range: nothing to advise.
/// assert!(!pktvec_packet::mem::advise_hugepages(&[0u8; 64]));
/// ```
pub fn advise_hugepages<T>(s: &[T]) -> bool {
    aligned_interior(s).is_some_and(|(lo, len)| madvise_hugepage(lo, len))
}

/// The 2 MiB-aligned part of `s`'s bytes as (start address, length), if it has one.
fn aligned_interior<T>(s: &[T]) -> Option<(usize, usize)> {
    let start = s.as_ptr() as usize;
    let end = start.saturating_add(std::mem::size_of_val(s));
    let lo = start.next_multiple_of(HUGE_PAGE);
    let hi = end - end % HUGE_PAGE;
    (hi > lo).then(|| (lo, hi - lo))
}

/// Backs the 2 MiB-aligned interior of `s` with transparent huge pages now, also where it
/// has already been written: [`advise_hugepages`], then `madvise(MADV_COLLAPSE)` (Linux
/// 6.1 and later), which copies the range into huge pages before it returns (milliseconds
/// for tens of MiB). For tables built in memory the allocator may have reused: a large
/// `Vec` can get pages that are already faulted in as 4 KiB pages (glibc raises its mmap
/// threshold up to 32 MiB after freeing mapped chunks), which `MADV_HUGEPAGE` alone
/// leaves as they are. Returns `true` if the kernel collapsed the range; `false` if the
/// slice holds no aligned 2 MiB range, the kernel has no `MADV_COLLAPSE` or could not
/// find huge pages, or the target is not Linux. Never changes the contents of `s`.
///
/// ```
/// let v = vec![7u32; 8 << 20]; // 32 MiB, written
/// let huge = pktvec_packet::mem::collapse_hugepages(&v);
/// assert!(v.iter().all(|&x| x == 7));
/// # let _ = huge;
/// ```
pub fn collapse_hugepages<T>(s: &[T]) -> bool {
    aligned_interior(s)
        .is_some_and(|(lo, len)| madvise_hugepage(lo, len) && madvise_collapse(lo, len))
}

/// `MADV_COLLAPSE` (Linux 6.1, `include/uapi/asm-generic/mman-common.h`), spelled out
/// because not every libc target of the `libc` crate defines it.
#[cfg(target_os = "linux")]
const MADV_COLLAPSE: libc::c_int = 25;

#[cfg(target_os = "linux")]
fn madvise_collapse(addr: usize, len: usize) -> bool {
    // SAFETY: as in `madvise_hugepage`: `addr..addr + len` is the 2 MiB-aligned interior of
    // the caller's live slice; MADV_COLLAPSE moves the range's contents into huge pages
    // without changing them (the kernel copies each 2 MiB block and remaps it while the
    // caller holds a shared borrow, so nothing writes it meanwhile); it fails cleanly
    // (EINVAL on older kernels, EAGAIN/ENOMEM without free huge pages).
    let rc = unsafe { libc::madvise(addr as *mut libc::c_void, len, MADV_COLLAPSE) };
    rc == 0
}

#[cfg(not(target_os = "linux"))]
fn madvise_collapse(_addr: usize, _len: usize) -> bool {
    false
}

#[cfg(target_os = "linux")]
fn madvise_hugepage(addr: usize, len: usize) -> bool {
    // SAFETY: `addr..addr + len` lies inside the live allocation behind the caller's slice
    // (it is its 2 MiB-aligned interior, so page-aligned as madvise requires), which we only
    // borrow; MADV_HUGEPAGE is advisory: it changes how the kernel backs the pages, never
    // their contents, validity or ownership, so no Rust invariant can be broken by it.
    let rc = unsafe { libc::madvise(addr as *mut libc::c_void, len, libc::MADV_HUGEPAGE) };
    rc == 0
}

#[cfg(not(target_os = "linux"))]
fn madvise_hugepage(_addr: usize, _len: usize) -> bool {
    false
}

/// `AnonHugePages` of this process in KiB (from `/proc/self/smaps_rollup`), `None` where
/// that file is unavailable (not Linux, or an old kernel). For checking that
/// [`advise_hugepages`] took effect.
///
/// ```
/// if let Some(kib) = pktvec_packet::mem::anon_huge_pages_kib() {
///     println!("{kib} KiB in transparent huge pages");
/// }
/// ```
pub fn anon_huge_pages_kib() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/smaps_rollup").ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix("AnonHugePages:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_and_empty_slices_are_not_advised() {
        assert!(!advise_hugepages::<u64>(&[]));
        assert!(!advise_hugepages(&[0u8; 4096]));
        // 3 MiB holds at most one aligned 2 MiB range; whether it does depends on where
        // the allocator put it, but the contents never change.
        let v = vec![7u8; 3 << 20];
        let _ = advise_hugepages(&v);
        assert!(v.iter().all(|&b| b == 7));
    }

    #[test]
    fn untouched_memory_gets_huge_pages_when_thp_is_available() {
        const LEN: usize = 32 << 20; // 32 MiB: at least 15 aligned huge pages inside
        let mut v: Vec<u64> = Vec::with_capacity(LEN / 8);
        let before = anon_huge_pages_kib();
        let advised = advise_hugepages(v.spare_capacity_mut());
        v.resize(LEN / 8, 1);
        assert!(v.iter().all(|&x| x == 1));
        let thp = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
            .unwrap_or_default();
        if cfg!(target_os = "linux") && (thp.contains("[madvise]") || thp.contains("[always]")) {
            assert!(advised, "madvise(MADV_HUGEPAGE) refused");
            let (Some(before), Some(after)) = (before, anon_huge_pages_kib()) else {
                return;
            };
            // Other tests run concurrently and may free huge pages; 8 MiB of growth is a
            // conservative sign that ours were backed by huge pages.
            assert!(
                after >= before + 8 * 1024,
                "AnonHugePages {before} -> {after} KiB"
            );
        }
    }

    /// `AnonHugePages` (KiB) of the mapping that holds `addr`, from `/proc/self/smaps`.
    fn huge_kib_of_mapping(addr: usize) -> Option<u64> {
        let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
        let mut inside = false;
        for line in smaps.lines() {
            let range = line.split_whitespace().next().unwrap_or("");
            if let Some((a, b)) = range.split_once('-') {
                if let (Ok(a), Ok(b)) = (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16))
                {
                    inside = (a..b).contains(&addr);
                    continue;
                }
            }
            if inside {
                if let Some(v) = line.strip_prefix("AnonHugePages:") {
                    return v.trim().trim_end_matches("kB").trim().parse().ok();
                }
            }
        }
        None
    }

    #[test]
    fn written_memory_is_collapsed_and_keeps_its_contents() {
        assert!(!collapse_hugepages::<u64>(&[]));
        assert!(!collapse_hugepages(&[0u8; 4096]));
        const LEN: usize = 16 << 20; // 16 MiB: at least 7 aligned huge pages inside
        let v: Vec<u64> = (0..LEN as u64 / 8)
            .map(|i| i.wrapping_mul(0x9e37_79b9))
            .collect();
        let collapsed = collapse_hugepages(&v);
        assert!(v
            .iter()
            .enumerate()
            .all(|(i, &x)| x == (i as u64).wrapping_mul(0x9e37_79b9)));
        if collapsed {
            // The mapping holding `v` now has its aligned interior on huge pages (other
            // tests' allocations may add more, never less while `v` lives).
            let (lo, len) = aligned_interior(&v).expect("16 MiB has an aligned interior");
            if let Some(kib) = huge_kib_of_mapping(lo) {
                assert!(kib >= (len / 1024) as u64, "{kib} KiB huge in the mapping");
            }
        }
    }
}
