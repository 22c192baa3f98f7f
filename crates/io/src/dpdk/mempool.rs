//! A DPDK mbuf pool that is also the graph's buffer pool.

use super::{last_error, DpdkError, Eal};
use pktvec_dpdk_sys as sys;
use pktvec_packet::pool::{BufferBackend, BufferPool, ExternalRegion};
use std::ffi::CString;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

/// Where mbuf `i` of a pool is: all objects at one fixed stride, so index ↔ mbuf is
/// arithmetic (the index of an mbuf is an exact division, done with a multiply by the
/// inverse of the stride's odd factor).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Layout {
    /// Address of mbuf 0 (the `rte_mbuf` header).
    mbuf0: usize,
    stride: usize,
    count: u32,
    /// `buf_addr - mbuf`: where the buffer starts behind each header.
    buf_off: usize,
    buf_len: u16,
    /// stride = odd << shift; inv = odd^-1 mod 2^64.
    shift: u32,
    inv: u64,
    /// `count * stride < 2^32`: a burst's indices can be computed in 32-bit lanes.
    fits32: bool,
    /// The widest vector unit of the CPU (detected once): the 32-bit lanes are sixteen
    /// wide with AVX-512, eight with AVX2.
    lanes: Lanes,
}

/// Which vector code maps mbufs to indices and back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
enum Lanes {
    Scalar,
    Avx2,
    /// Only with a compiler that has the AVX-512 intrinsics (`build.rs`).
    #[cfg_attr(not(pktvec_avx512), allow(dead_code))]
    Avx512,
}

impl Layout {
    /// Whether `pool` is the graph pool over these mbufs ([`Mempool::buffer_pool`]): the
    /// same first buffer and count. Rx and tx map indices to mbufs by this layout, so a
    /// graph built over another pool would hand the driver mbufs it does not own.
    pub(crate) fn is_pool_of(&self, pool: &BufferPool) -> bool {
        pool.external_base() == Some(self.mbuf0 + self.buf_off)
            && pool.capacity() == self.count as usize
    }

    fn new(mbuf0: usize, stride: usize, count: u32, buf_off: usize, buf_len: u16) -> Self {
        let shift = stride.trailing_zeros();
        let odd = (stride >> shift) as u64;
        // Newton's iteration for the inverse of an odd number mod 2^64.
        let mut inv = odd;
        for _ in 0..6 {
            inv = inv.wrapping_mul(2u64.wrapping_sub(odd.wrapping_mul(inv)));
        }
        debug_assert_eq!(odd.wrapping_mul(inv), 1);
        Layout {
            mbuf0,
            stride,
            count,
            buf_off,
            buf_len,
            shift,
            inv,
            fits32: (count as u64).saturating_mul(stride as u64) < 1 << 32,
            lanes: best_lanes(),
        }
    }

    /// The buffer index of mbuf `m`, or `None` if it is not an mbuf of this pool.
    #[inline(always)]
    pub(crate) fn index(&self, m: *const sys::rte_mbuf) -> Option<u32> {
        let q = self.raw_index(m as usize);
        (q < self.count as u64).then_some(q as u32)
    }

    /// Branch-free index of the mbuf at address `m`: its buffer index if `m` is an mbuf of
    /// this pool, and a value `>= count` for any other address. Exact division by
    /// `stride = odd << shift` as one subtract, multiply and rotate: for `off` a multiple of
    /// the stride, `off * inv` is `(off / stride) << shift` and the rotation gives the
    /// quotient; for any other `off` the result exceeds `(2^64 - 1) / stride`, hence the
    /// count (Hacker's Delight, 10-17; checked by the unit test). A receive burst takes the
    /// maximum of these and checks it once.
    #[inline(always)]
    pub(crate) fn raw_index(&self, m: usize) -> u64 {
        (m.wrapping_sub(self.mbuf0) as u64)
            .wrapping_mul(self.inv)
            .rotate_right(self.shift)
    }

    /// The buffer indices of a receive burst: `out[i]` is the index of mbuf `mbufs[i]`.
    /// Returns true if every one is an mbuf of this pool (otherwise `out` is meaningless
    /// and the caller checks them one by one). No branch per packet: the indices are
    /// computed as in [`raw_index`](Self::raw_index), and their maximum is checked once.
    /// When the pool spans less than 4 GiB the same is done modulo 2^32 (the theorem
    /// holds for any word size), in 32-bit lanes: sixteen packets an instruction with
    /// AVX-512, eight with AVX2, where the CPU has them (detected once, when the layout is
    /// made), one at a time otherwise, with one more check that every offset from mbuf 0
    /// fits in 32 bits.
    #[inline(always)]
    pub(crate) fn index_burst(&self, mbufs: &[usize], out: &mut [u32]) -> bool {
        let (base, s) = (self.mbuf0, self.shift);
        if !self.fits32 {
            let mut top = 0u64;
            for (o, &m) in out.iter_mut().zip(mbufs) {
                let q = self.raw_index(m);
                top = top.max(q);
                *o = q as u32;
            }
            return top < self.count as u64;
        }
        let inv = self.inv as u32; // odd^-1 mod 2^32
        let n = mbufs.len().min(out.len());
        #[cfg(target_arch = "x86_64")]
        let (mut hi, mut top, done) = match self.lanes {
            // SAFETY: `lanes` is `Avx512` only if the CPU has AVX-512F (`best_lanes`).
            #[cfg(pktvec_avx512)]
            Lanes::Avx512 => unsafe {
                avx512::index_burst(base, inv, s, &mbufs[..n], &mut out[..n])
            },
            #[cfg(not(pktvec_avx512))]
            Lanes::Avx512 => unreachable!("AVX-512 passes not built"),
            // SAFETY: `lanes` is `Avx2` only if the CPU has AVX2 (`best_lanes`).
            Lanes::Avx2 => unsafe { avx2::index_burst(base, inv, s, &mbufs[..n], &mut out[..n]) },
            Lanes::Scalar => (0u64, 0u32, 0usize),
        };
        #[cfg(not(target_arch = "x86_64"))]
        let (mut hi, mut top, done) = (0u64, 0u32, 0usize);
        for (o, &m) in out[done..n].iter_mut().zip(&mbufs[done..n]) {
            let off = m.wrapping_sub(base) as u64;
            hi |= off >> 32;
            let q = (off as u32).wrapping_mul(inv).rotate_right(s);
            top = top.max(q);
            *o = q;
        }
        hi == 0 && top < self.count
    }

    /// This layout with the vector code `lanes`, or the best the CPU has below it: the
    /// tests run every path the CPU can.
    #[cfg(test)]
    fn with_lanes(mut self, lanes: Lanes) -> Self {
        self.lanes = lanes.min_with(best_lanes());
        self
    }

    /// Bytes of an mbuf's data buffer (`buf_len`, headroom included): a buffer's size in
    /// the pool over this mempool.
    #[inline(always)]
    pub(crate) fn buf_len(&self) -> u16 {
        self.buf_len
    }

    /// Number of mbufs (indices are below it).
    #[inline(always)]
    pub(crate) fn count(&self) -> u32 {
        self.count
    }

    /// The mbuf of buffer index `bi` (`bi < count` is the caller's to check).
    #[inline(always)]
    pub(crate) fn mbuf(&self, bi: u32) -> *mut sys::rte_mbuf {
        (self.mbuf0 + bi as usize * self.stride) as *mut sys::rte_mbuf
    }

    /// The mbuf addresses of `bis` into `out` (as many as both hold); returns how many. No
    /// index is checked (a raw hand-over's indices are the rx node's own). With
    /// `count * stride < 2^32` the offsets are computed in 32-bit lanes, which the
    /// compiler vectorises.
    #[inline]
    pub(crate) fn mbuf_burst(&self, bis: &[u32], out: &mut [usize]) -> usize {
        let n = bis.len().min(out.len());
        let (out, bis) = (&mut out[..n], &bis[..n]);
        if self.fits32 {
            let stride = self.stride as u32;
            #[cfg(target_arch = "x86_64")]
            let done = match self.lanes {
                // SAFETY: `lanes` is `Avx512` only if the CPU has AVX-512F (`best_lanes`).
                #[cfg(pktvec_avx512)]
                Lanes::Avx512 => unsafe { avx512::mbuf_burst(self.mbuf0, stride, bis, out) },
                #[cfg(not(pktvec_avx512))]
                Lanes::Avx512 => unreachable!("AVX-512 passes not built"),
                // SAFETY: `lanes` is `Avx2` only if the CPU has AVX2 (`best_lanes`).
                Lanes::Avx2 => unsafe { avx2::mbuf_burst(self.mbuf0, stride, bis, out) },
                Lanes::Scalar => 0,
            };
            #[cfg(not(target_arch = "x86_64"))]
            let done = 0;
            for (o, &bi) in out[done..].iter_mut().zip(&bis[done..]) {
                *o = self.mbuf0 + bi.wrapping_mul(stride) as usize;
            }
        } else {
            for (o, &bi) in out.iter_mut().zip(bis) {
                *o = self.mbuf(bi) as usize;
            }
        }
        n
    }
}

/// The widest vector code the CPU runs (x86-64 only; valgrind hides AVX-512, so under it
/// the AVX2 code runs; the AVX-512 code needs Rust 1.89 to build, see `build.rs`).
fn best_lanes() -> Lanes {
    #[cfg(target_arch = "x86_64")]
    {
        #[cfg(pktvec_avx512)]
        if std::arch::is_x86_feature_detected!("avx512f") {
            return Lanes::Avx512;
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            return Lanes::Avx2;
        }
    }
    Lanes::Scalar
}

impl Lanes {
    /// The narrower of `self` and `other`.
    #[cfg(test)]
    fn min_with(self, other: Lanes) -> Lanes {
        if (self as u8) <= (other as u8) {
            self
        } else {
            other
        }
    }
}

/// [`Layout::index_burst`] and [`Layout::mbuf_burst`] with AVX-512F, sixteen mbufs per
/// step: the AVX2 code's work in about half the instructions (one 16-wide multiply, a
/// variable rotate instead of two shifts and an OR, the high halves checked on the OR of
/// the 64-bit offsets). Built where the compiler has the AVX-512 intrinsics (Rust 1.89,
/// see `build.rs`), hence the MSRV lint is allowed here.
#[cfg(all(target_arch = "x86_64", pktvec_avx512))]
#[allow(clippy::incompatible_msrv)]
mod avx512 {
    use std::arch::x86_64::*;

    /// The mbuf addresses `mbuf0 + bi * stride` of `bis[..16k]` into `out` (k as many
    /// whole steps of sixteen as fit); returns 16k. The products must fit 32 bits.
    ///
    /// # Safety
    /// The CPU has AVX-512F.
    // SAFETY: unsafe to call because it may only run where the CPU has AVX-512F (its
    // caller checks `Layout::lanes`); the unit test runs it against the scalar path.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn mbuf_burst(
        mbuf0: usize,
        stride: u32,
        bis: &[u32],
        out: &mut [usize],
    ) -> usize {
        let steps = bis.len().min(out.len()) / 16;
        let base = _mm512_set1_epi64(mbuf0 as i64);
        let s = _mm512_set1_epi32(stride as i32);
        let (b, o) = (bis.as_ptr(), out.as_mut_ptr());
        for k in (0..steps * 16).step_by(16) {
            // SAFETY: `k + 16 <= steps * 16 <= min(bis.len(), out.len())`: sixteen `u32`
            // read at `b + k` (one unaligned 64-byte load), sixteen `usize` written at
            // `o + k` (two unaligned 64-byte stores).
            let i = unsafe { _mm512_loadu_si512(b.add(k).cast()) };
            let off = _mm512_mullo_epi32(i, s);
            let lo = _mm512_add_epi64(_mm512_cvtepu32_epi64(_mm512_castsi512_si256(off)), base);
            let hi = _mm512_add_epi64(
                _mm512_cvtepu32_epi64(_mm512_extracti64x4_epi64::<1>(off)),
                base,
            );
            // SAFETY: see above.
            unsafe {
                _mm512_storeu_si512(o.add(k).cast(), lo);
                _mm512_storeu_si512(o.add(k + 8).cast(), hi);
            }
        }
        steps * 16
    }

    /// Indices of `mbufs[..16k]` (k as many whole steps as fit) into `out`; returns the
    /// OR of the offsets' high halves, the largest index and 16k.
    ///
    /// # Safety
    /// The CPU has AVX-512F.
    // SAFETY: an `unsafe fn` because it may only run where the CPU has AVX-512F (its
    // caller checks `Layout::lanes`); the unit test runs it against the scalar path.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn index_burst(
        base: usize,
        inv: u32,
        shift: u32,
        mbufs: &[usize],
        out: &mut [u32],
    ) -> (u64, u32, usize) {
        let steps = mbufs.len().min(out.len()) / 16;
        let base = _mm512_set1_epi64(base as i64);
        let inv = _mm512_set1_epi32(inv as i32);
        let shift = _mm512_set1_epi32(shift as i32);
        let (mut all, mut top) = (_mm512_setzero_si512(), _mm512_setzero_si512());
        let (m, o) = (mbufs.as_ptr(), out.as_mut_ptr());
        for k in (0..steps * 16).step_by(16) {
            // SAFETY: `k + 16 <= steps * 16 <= min(mbufs.len(), out.len())`: sixteen
            // `usize` read at `m + k` (two unaligned 64-byte loads), sixteen `u32` written
            // at `o + k` (one unaligned 64-byte store).
            let (a, b) = unsafe {
                (
                    _mm512_loadu_si512(m.add(k).cast()),
                    _mm512_loadu_si512(m.add(k + 8).cast()),
                )
            };
            let (a, b) = (_mm512_sub_epi64(a, base), _mm512_sub_epi64(b, base));
            // The high halves are checked at the end, on the OR of every offset.
            all = _mm512_or_si512(all, _mm512_or_si512(a, b));
            let lo = _mm512_inserti64x4::<1>(
                _mm512_castsi256_si512(_mm512_cvtepi64_epi32(a)),
                _mm512_cvtepi64_epi32(b),
            );
            let q = _mm512_rorv_epi32(_mm512_mullo_epi32(lo, inv), shift);
            top = _mm512_max_epu32(top, q);
            // SAFETY: see above.
            unsafe { _mm512_storeu_si512(o.add(k).cast(), q) };
        }
        (
            (_mm512_reduce_or_epi64(all) as u64) >> 32,
            _mm512_reduce_max_epu32(top),
            steps * 16,
        )
    }
}

/// [`Layout::index_burst`]'s 32-bit lanes with AVX2, eight mbufs per step (one 8-wide
/// multiply, rotate and maximum; the scalar loop serves CPUs without AVX2).
#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    /// [`Layout::mbuf_burst`](super::Layout::mbuf_burst) in 32-bit lanes: the mbuf
    /// addresses `mbuf0 + bi * stride` of `bis[..8k]` into `out` (k as many whole steps of
    /// eight as fit); returns 8k. The products must fit 32 bits (`Layout::fits32`).
    ///
    /// # Safety
    /// The CPU has AVX2.
    // SAFETY: unsafe to call because it may only run where the CPU has AVX2 (its caller
    // checks `Layout::lanes`); the unit test runs it against the scalar path.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn mbuf_burst(
        mbuf0: usize,
        stride: u32,
        bis: &[u32],
        out: &mut [usize],
    ) -> usize {
        let steps = bis.len().min(out.len()) / 8;
        let base = _mm256_set1_epi64x(mbuf0 as i64);
        let s = _mm256_set1_epi32(stride as i32);
        let (b, o) = (bis.as_ptr(), out.as_mut_ptr());
        for k in (0..steps * 8).step_by(8) {
            // SAFETY: `k + 8 <= steps * 8 <= min(bis.len(), out.len())`: eight `u32` read
            // at `b + k` (one unaligned 32-byte load), eight `usize` written at `o + k` (two
            // unaligned 32-byte stores).
            let i = unsafe { _mm256_loadu_si256(b.add(k).cast()) };
            let off = _mm256_mullo_epi32(i, s);
            let lo = _mm256_add_epi64(_mm256_cvtepu32_epi64(_mm256_castsi256_si128(off)), base);
            let hi = _mm256_add_epi64(
                _mm256_cvtepu32_epi64(_mm256_extracti128_si256::<1>(off)),
                base,
            );
            // SAFETY: see above.
            unsafe {
                _mm256_storeu_si256(o.add(k).cast(), lo);
                _mm256_storeu_si256(o.add(k + 4).cast(), hi);
            }
        }
        steps * 8
    }

    /// Indices of `mbufs[..8k]` (k as many whole steps as fit) into `out`; returns the OR
    /// of the offsets' high halves, the largest index and 8k.
    ///
    /// # Safety
    /// The CPU has AVX2.
    // SAFETY: an `unsafe fn` because it may only run where the CPU has AVX2 (its caller
    // checks `Layout::lanes`); the unit test runs it against the scalar path.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn index_burst(
        base: usize,
        inv: u32,
        shift: u32,
        mbufs: &[usize],
        out: &mut [u32],
    ) -> (u64, u32, usize) {
        let steps = mbufs.len().min(out.len()) / 8;
        let base = _mm256_set1_epi64x(base as i64);
        let inv = _mm256_set1_epi32(inv as i32);
        let right = _mm_cvtsi32_si128(shift as i32);
        // A rotation by 0 shifts left by 32, which gives 0: still correct.
        let left = _mm_cvtsi32_si128(32 - shift as i32);
        let (mut hi, mut top) = (_mm256_setzero_si256(), _mm256_setzero_si256());
        let (m, o) = (mbufs.as_ptr(), out.as_mut_ptr());
        for k in (0..steps * 8).step_by(8) {
            // SAFETY: `k + 8 <= steps * 8 <= min(mbufs.len(), out.len())`: eight `usize`
            // read at `m + k` (two unaligned 32-byte loads), eight `u32` written at `o + k`
            // (one unaligned 32-byte store).
            let (a, b) = unsafe {
                (
                    _mm256_loadu_si256(m.add(k).cast()),
                    _mm256_loadu_si256(m.add(k + 4).cast()),
                )
            };
            let (a, b) = (_mm256_sub_epi64(a, base), _mm256_sub_epi64(b, base));
            let (fa, fb) = (_mm256_castsi256_ps(a), _mm256_castsi256_ps(b));
            // Low halves of a0 a1 b0 b1 | a2 a3 b2 b3; the 64-bit permute puts them in order.
            let lo = _mm256_castps_si256(_mm256_shuffle_ps::<0b10_00_10_00>(fa, fb));
            let lo = _mm256_permute4x64_epi64::<0b11_01_10_00>(lo);
            let h = _mm256_castps_si256(_mm256_shuffle_ps::<0b11_01_11_01>(fa, fb));
            hi = _mm256_or_si256(hi, h);
            let q = _mm256_mullo_epi32(lo, inv);
            let q = _mm256_or_si256(_mm256_srl_epi32(q, right), _mm256_sll_epi32(q, left));
            top = _mm256_max_epu32(top, q);
            // SAFETY: see above.
            unsafe { _mm256_storeu_si256(o.add(k).cast(), q) };
        }
        // Horizontal maximum and OR in registers.
        let t = _mm_max_epu32(
            _mm256_castsi256_si128(top),
            _mm256_extracti128_si256::<1>(top),
        );
        let t = _mm_max_epu32(t, _mm_shuffle_epi32::<0b01_00_11_10>(t));
        let t = _mm_max_epu32(t, _mm_shuffle_epi32::<0b10_11_00_01>(t));
        let h = _mm_or_si128(
            _mm256_castsi256_si128(hi),
            _mm256_extracti128_si256::<1>(hi),
        );
        let h = _mm_or_si128(h, _mm_unpackhi_epi64(h, h));
        (
            _mm_cvtsi128_si64(h) as u64,
            _mm_cvtsi128_si32(t) as u32,
            steps * 8,
        )
    }
}

pub(crate) struct MempoolInner {
    pub(crate) mp: NonNull<sys::rte_mempool>,
    pub(crate) layout: Layout,
    name: String,
    /// The [`BufferPool`]s over these mbufs that exist: [`SOLE`] for the one of
    /// [`Mempool::buffer_pool`], else how many of [`Mempool::worker_pool`]'s.
    pools: AtomicU32,
}

/// [`MempoolInner::pools`] while the pool of [`Mempool::buffer_pool`] exists.
const SOLE: u32 = u32::MAX;

// SAFETY: a DPDK mempool created with the default "ring_mp_mc" ops is safe to use from
// several threads (multi-producer/multi-consumer ring); the layout is immutable.
unsafe impl Send for MempoolInner {}
// SAFETY: as above; shared references only read the immutable layout or call thread-safe
// mempool functions.
unsafe impl Sync for MempoolInner {}

impl Drop for MempoolInner {
    /// Frees the mempool if every mbuf is back in it. Otherwise some are still out, e.g.
    /// in a ring that a port made by [`Eal::ring_port`] filled and that outlives the port:
    /// whoever dequeues them later would hold mbufs of freed memory, so the mempool is
    /// kept (its memory leaks, until the process exits) instead.
    fn drop(&mut self) {
        // SAFETY: valid pool pointer: it is freed below, at the earliest.
        let back = unsafe { sys::rte_mempool_avail_count(self.mp.as_ptr()) };
        if back < self.layout.count {
            return;
        }
        // SAFETY: the last reference is gone: no port (they hold an Arc) and no buffer pool
        // (its backend holds an Arc) uses the mempool any more, and every mbuf is in it.
        unsafe { sys::rte_mempool_free(self.mp.as_ptr()) };
    }
}

/// A DPDK mbuf pool (`rte_pktmbuf_pool_create`) whose mbufs are also the buffers of a
/// [`BufferPool`]: buffer index `i` is the `i`-th mbuf in memory. Cheap to clone (shared).
/// Freed when the last clone, port and buffer pool using it are gone, if every mbuf is back
/// (mbufs still in a ring would otherwise point into freed memory; then it is kept).
#[derive(Clone)]
pub struct Mempool {
    pub(crate) inner: Arc<MempoolInner>,
}

impl std::fmt::Debug for Mempool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mempool")
            .field("name", &self.inner.name)
            .field("mbufs", &self.inner.layout.count)
            .field("available", &self.available())
            .finish()
    }
}

static POOLS: AtomicU32 = AtomicU32::new(0);

/// How [`Mempool::with_object_layout`] lays out the mbufs in memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ObjectLayout {
    /// [`Packed`](Self::Packed) when the EAL runs IOVA-as-VA, else
    /// [`Standard`](Self::Standard); the other one if the first splits the pool.
    #[default]
    Auto,
    /// `rte_pktmbuf_pool_create`: objects do not cross page boundaries (without
    /// hugepages, one object per 4 KiB page, so all mbuf headers share one L1 set).
    Standard,
    /// Objects back to back, allowed to cross pages (`RTE_MEMPOOL_F_NO_IOVA_CONTIG`): what
    /// the standard layout gives with hugepages. For virtual devices and IOVA-as-VA; a NIC
    /// with physical addressing needs hugepages.
    Packed,
}

/// A way to create the pool: name, mbufs, per-lcore cache size, buffer room.
type CreateFn = fn(&CString, u32, u32, u16) -> *mut sys::rte_mempool;

/// Creates a pool the standard way (`rte_pktmbuf_pool_create`).
fn create_standard(name: &CString, mbufs: u32, cache: u32, room: u16) -> *mut sys::rte_mempool {
    // SAFETY: valid name; sizes checked by the caller; DPDK returns a pool or NULL.
    unsafe {
        sys::rte_pktmbuf_pool_create(name.as_ptr(), mbufs, cache, 0, room, sys::SOCKET_ID_ANY)
    }
}

/// Creates a pool whose objects may cross page boundaries (`RTE_MEMPOOL_F_NO_IOVA_CONTIG`),
/// so that DPDK lays it out in one memory chunk even where it would otherwise start a new
/// chunk at every 4 KiB page (`--no-huge` with fragmented EAL memory). Fine for virtual
/// devices and IOVA-as-VA; a NIC with physical addressing needs hugepages instead.
fn create_unsplit(name: &CString, mbufs: u32, cache: u32, room: u16) -> *mut sys::rte_mempool {
    let elt = std::mem::size_of::<sys::rte_mbuf>() as u32 + room as u32;
    let priv_size = std::mem::size_of::<sys::rte_pktmbuf_pool_private>() as u32;
    // SAFETY: valid name and sizes; every step checks its result and frees the pool on
    // failure; `private` lives across the call that copies it into the pool.
    unsafe {
        let mp = sys::rte_mempool_create_empty(
            name.as_ptr(),
            mbufs,
            elt,
            cache,
            priv_size,
            sys::SOCKET_ID_ANY,
            sys::RTE_MEMPOOL_F_NO_IOVA_CONTIG,
        );
        if mp.is_null() {
            return mp;
        }
        let ops = CString::new("ring_mp_mc").expect("no NUL");
        let mut private = sys::rte_pktmbuf_pool_private {
            mbuf_data_room_size: room,
            mbuf_priv_size: 0,
            flags: 0,
        };
        if sys::rte_mempool_set_ops_byname(mp, ops.as_ptr(), std::ptr::null_mut()) != 0 {
            sys::rte_mempool_free(mp);
            return std::ptr::null_mut();
        }
        sys::rte_pktmbuf_pool_init(
            mp,
            (&mut private as *mut sys::rte_pktmbuf_pool_private).cast(),
        );
        if sys::rte_mempool_populate_default(mp) < 0 {
            sys::rte_mempool_free(mp);
            return std::ptr::null_mut();
        }
        sys::pktvec_rte_pktmbuf_init_all(mp);
        mp
    }
}

/// The index layout of a created pool: every object at one stride, buffers at one offset.
fn layout_of(mp: NonNull<sys::rte_mempool>, mbufs: u32) -> Result<Layout, DpdkError> {
    let mut objs: Vec<usize> = vec![0; mbufs as usize];
    // SAFETY: `mp` is a populated pool; the shim writes at most `objs.len()` addresses.
    let n = unsafe {
        sys::pktvec_rte_mempool_obj_addrs(mp.as_ptr(), objs.as_mut_ptr(), objs.len() as u32)
    } as usize;
    if n != objs.len() || n < 2 {
        return Err(DpdkError::MempoolLayout(format!(
            "{n} objects for {mbufs} mbufs"
        )));
    }
    objs.sort_unstable();
    let stride = objs[1] - objs[0];
    if objs.windows(2).any(|w| w[1] - w[0] != stride) {
        return Err(DpdkError::MempoolLayout(
            "objects are in several memory chunks (give the EAL more memory, -m)".into(),
        ));
    }
    // SAFETY: objs[0] is an mbuf initialised by rte_pktmbuf_init during creation.
    let (buf_off, buf_len) = unsafe {
        let m = &*sys::header(objs[0] as *mut sys::rte_mbuf);
        (m.buf_addr as usize - objs[0], m.buf_len)
    };
    for &o in &objs {
        // SAFETY: as above, every object is an initialised mbuf.
        let m = unsafe { &*sys::header(o as *mut sys::rte_mbuf) };
        if m.buf_addr as usize != o + buf_off || m.buf_len != buf_len {
            return Err(DpdkError::MempoolLayout(
                "mbuf buffers are not at one offset".into(),
            ));
        }
    }
    Ok(Layout::new(objs[0], stride, mbufs, buf_off, buf_len))
}

impl Mempool {
    /// Creates a pool of `mbufs` mbufs with `data_room` bytes of packet room each (behind
    /// DPDK's 128-byte headroom) and checks that its objects sit at one stride in one
    /// memory chunk, which buffer indices need. With [`ObjectLayout::Auto`]: objects packed
    /// back to back first when the EAL runs IOVA-as-VA (see [`ObjectLayout::Packed`]), the
    /// standard creation first otherwise; if the first attempt splits the pool, the other
    /// one is tried.
    pub fn new(eal: &Eal, mbufs: u32, data_room: u16) -> Result<Mempool, DpdkError> {
        Self::with_object_layout(eal, mbufs, data_room, ObjectLayout::Auto)
    }

    /// [`new`](Self::new) with the objects laid out as `layout` says.
    ///
    /// ```no_run
    /// # use pktvec_io::dpdk::{Eal, Mempool, ObjectLayout};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let eal = Eal::init("--no-huge -m 512 --no-pci -l 0 --vdev=net_null0")?;
    /// let pool = Mempool::with_object_layout(&eal, 8192, 2048, ObjectLayout::Packed)?;
    /// assert_ne!(pool.object_stride() % 4096, 0);
    /// # Ok(()) }
    /// ```
    pub fn with_object_layout(
        _eal: &Eal,
        mbufs: u32,
        data_room: u16,
        layout: ObjectLayout,
    ) -> Result<Mempool, DpdkError> {
        let room = data_room
            .checked_add(sys::RTE_PKTMBUF_HEADROOM as u16)
            .ok_or_else(|| DpdkError::Mempool(format!("data room {data_room} too large")))?;
        if mbufs < 64 {
            return Err(DpdkError::Mempool(format!(
                "{mbufs} mbufs: at least 64 needed"
            )));
        }
        // The largest per-lcore cache DPDK allows: a burst larger than the cache bypasses it.
        let cache = 512.min(mbufs / 2);
        // Packed objects first where DPDK addresses memory by virtual address: the standard
        // creation places each 2,368-byte object at the start of its own 4 KiB page when
        // there are no hugepages (`--no-huge`), so every mbuf header falls into the same L1
        // set (8 ways) and the same 32 of the L2's 2,048 sets, and a vector of 256 packets
        // in flight thrashes both (docs/results/dpdk-io.md). Packed back to back
        // (a stride of 37 cache lines) they spread over every set, as with hugepages.
        // SAFETY: the EAL is initialised (`_eal`); a plain query.
        let iova_va = unsafe { sys::rte_eal_iova_mode() } == sys::RTE_IOVA_VA;
        let packed_first = match layout {
            ObjectLayout::Auto => iova_va,
            ObjectLayout::Standard => false,
            ObjectLayout::Packed => true,
        };
        let order: &[CreateFn] = match (layout, packed_first) {
            (ObjectLayout::Standard, _) => &[create_standard],
            (ObjectLayout::Packed, _) => &[create_unsplit],
            (_, true) => &[create_unsplit, create_standard],
            (_, false) => &[create_standard, create_unsplit],
        };
        let mut last = None;
        for &create in order {
            let name = format!("pktvec{}", POOLS.fetch_add(1, Ordering::Relaxed));
            let cname = CString::new(name.clone()).expect("no NUL");
            let Some(mp) = NonNull::new(create(&cname, mbufs, cache, room)) else {
                return Err(DpdkError::Mempool(format!(
                    "{mbufs} mbufs of {room} bytes: {} (is the EAL's -m large enough?)",
                    last_error()
                )));
            };
            match layout_of(mp, mbufs) {
                Ok(layout) => {
                    return Ok(Mempool {
                        inner: Arc::new(MempoolInner {
                            mp,
                            layout,
                            name,
                            pools: AtomicU32::new(0),
                        }),
                    })
                }
                Err(e) => {
                    // SAFETY: nothing else has seen this pool.
                    unsafe { sys::rte_mempool_free(mp.as_ptr()) };
                    last = Some(e);
                }
            }
        }
        Err(last.expect("at least one attempt"))
    }

    /// The graph's buffer pool over these mbufs (build the graph with it). Its buffers are
    /// the mbufs' data buffers (headroom included); allocation and free go to the mempool in
    /// bulk through a local cache.
    ///
    /// The only pool at a time: while it exists, another call, or a
    /// [`worker_pool`](Self::worker_pool), is an error ([`DpdkError::PoolTaken`]); dropping
    /// it (with its graph) allows the next. So every mbuf out of the mempool is this pool's
    /// or a driver's. Workers, one graph each, take a [`worker_pool`](Self::worker_pool)
    /// each instead.
    ///
    /// ```no_run
    /// # use pktvec_io::dpdk::{DpdkError, Eal, Mempool};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let eal = Eal::init("--no-huge -m 512 --no-pci -l 0")?;
    /// let mempool = Mempool::new(&eal, 8192, 2048)?;
    /// let pool = mempool.buffer_pool()?;
    /// assert!(matches!(mempool.buffer_pool(), Err(DpdkError::PoolTaken(_))));
    /// drop(pool);
    /// let pool = mempool.buffer_pool()?;
    /// # let _ = pool; Ok(()) }
    /// ```
    pub fn buffer_pool(&self) -> Result<BufferPool, DpdkError> {
        if self
            .inner
            .pools
            .compare_exchange(0, SOLE, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return Err(DpdkError::PoolTaken(self.inner.name.clone()));
        }
        self.pool_over_mbufs(true)
    }

    /// A buffer pool over these mbufs for one of several workers (threads), each with its
    /// own graph: any number may exist at once, but not beside a
    /// [`buffer_pool`](Self::buffer_pool) ([`DpdkError::PoolTaken`] then).
    ///
    /// Each covers every mbuf's index, and no two ever hold the same mbuf, so the workers
    /// share one mempool, as DPDK applications share one per socket:
    ///
    /// * a pool holds only mbufs it took from the mempool (whose multi-producer,
    ///   multi-consumer ring hands each free mbuf to one taker), mbufs a driver handed to
    ///   an rx node of its graph (a received mbuf comes out of one queue, polled by one
    ///   worker), and mbufs its tx node gave a driver that refused them;
    /// * it reaches the bytes of only the mbufs it holds: the accessors of any other index
    ///   show an empty packet (the pool's held mark), and its free and release (tx) refuse
    ///   an index it does not hold;
    /// * an mbuf it sends or frees leaves it before anyone else can take it: the driver,
    ///   once done, puts it back in the mempool, from where any worker's pool or rx queue
    ///   may take it next;
    /// * the mempool is used from the workers' threads, which are not EAL lcores: they
    ///   take and return mbufs on its ring directly, without a per-lcore cache.
    ///
    /// So each worker's conservation holds for its own graph, and once every worker's
    /// pool and every port are gone, every mbuf is back in the mempool. (A mempool per
    /// worker would give the same guarantees for as many mbufs again per worker, and a
    /// mempool per rx queue at [`Port::start`](super::Port::start).)
    ///
    /// ```no_run
    /// # use pktvec_io::dpdk::{DpdkError, Eal, Mempool};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let eal = Eal::init("--no-huge -m 512 --no-pci -l 0")?;
    /// let mempool = Mempool::new(&eal, 8192, 2048)?;
    /// let pools = [mempool.worker_pool()?, mempool.worker_pool()?];
    /// assert!(matches!(mempool.buffer_pool(), Err(DpdkError::PoolTaken(_))));
    /// drop(pools);
    /// assert_eq!(mempool.available(), mempool.capacity());
    /// # Ok(()) }
    /// ```
    pub fn worker_pool(&self) -> Result<BufferPool, DpdkError> {
        self.inner
            .pools
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| match n {
                SOLE => None,
                n => n.checked_add(1).filter(|&m| m != SOLE),
            })
            .map_err(|_| DpdkError::PoolTaken(self.inner.name.clone()))?;
        self.pool_over_mbufs(false)
    }

    /// The pool over the mbufs, counted in [`MempoolInner::pools`] already (as the sole
    /// pool or as a worker's).
    fn pool_over_mbufs(&self, sole: bool) -> Result<BufferPool, DpdkError> {
        // The backend uncounts the pool when it drops, also if building the pool fails.
        let backend = Box::new(MempoolBackend {
            inner: self.inner.clone(),
            sole,
        });
        let l = self.inner.layout;
        let base = NonNull::new((l.mbuf0 + l.buf_off) as *mut u8)
            .ok_or_else(|| DpdkError::MempoolLayout("null buffer".into()))?;
        // SAFETY: the region describes the mbufs' data buffers, checked at creation to be at
        // one stride; the backend keeps the mempool alive as long as the pool; a buffer is
        // used by DPDK only while it is in the mempool or a driver queue, i.e. not held by
        // the pool (rx adopts, tx releases).
        let region = unsafe {
            ExternalRegion::new(
                base,
                l.stride,
                l.count,
                l.buf_len,
                sys::RTE_PKTMBUF_HEADROOM as u16,
            )
        }?;
        Ok(BufferPool::with_external(region, backend)?)
    }

    /// Mbufs free in the mempool (`rte_mempool_avail_count`, per-lcore caches included).
    pub fn available(&self) -> usize {
        // SAFETY: valid pool pointer for the life of `inner`.
        unsafe { sys::rte_mempool_avail_count(self.inner.mp.as_ptr()) as usize }
    }

    /// Bytes from one mbuf to the next (DPDK's object header, the mbuf, its buffer, and
    /// padding): 4,096 for the standard layout without hugepages, 2,368 packed (2,048-byte
    /// data room).
    pub fn object_stride(&self) -> usize {
        self.inner.layout.stride
    }

    /// Number of mbufs in the pool.
    pub fn capacity(&self) -> usize {
        self.inner.layout.count as usize
    }

    /// The DPDK name of the pool.
    pub fn name(&self) -> &str {
        &self.inner.name
    }
}

/// The free list of a [`BufferPool`] over a DPDK mempool.
struct MempoolBackend {
    inner: Arc<MempoolInner>,
    /// Whether its pool is [`Mempool::buffer_pool`]'s (else a [`Mempool::worker_pool`]).
    sole: bool,
}

impl Drop for MempoolBackend {
    /// The pool over the mempool is gone (its local cache already handed back): uncounted,
    /// so that once none is left a [`Mempool::buffer_pool`] may be built.
    fn drop(&mut self) {
        match self.sole {
            true => self.inner.pools.store(0, Ordering::Release),
            false => {
                self.inner.pools.fetch_sub(1, Ordering::AcqRel);
            }
        }
    }
}

const CHUNK: usize = 64;

impl BufferBackend for MempoolBackend {
    fn alloc_bulk(&mut self, out: &mut [u32]) -> usize {
        let l = self.inner.layout;
        let mut done = 0;
        let mut ptrs = [std::ptr::null_mut::<sys::rte_mbuf>(); CHUNK];
        while done < out.len() {
            let mut k = (out.len() - done).min(CHUNK);
            // SAFETY: `ptrs` has room for k <= CHUNK pointers; the pool is valid.
            let mut rc = unsafe {
                sys::pktvec_rte_pktmbuf_alloc_bulk(
                    self.inner.mp.as_ptr(),
                    ptrs.as_mut_ptr(),
                    k as u32,
                )
            };
            if rc != 0 {
                // All or nothing: take what is left, if anything.
                // SAFETY: as above.
                k = k.min(unsafe { sys::rte_mempool_avail_count(self.inner.mp.as_ptr()) } as usize);
                if k == 0 {
                    break;
                }
                // SAFETY: as above.
                rc = unsafe {
                    sys::pktvec_rte_pktmbuf_alloc_bulk(
                        self.inner.mp.as_ptr(),
                        ptrs.as_mut_ptr(),
                        k as u32,
                    )
                };
                if rc != 0 {
                    break;
                }
            }
            for (o, &m) in out[done..done + k].iter_mut().zip(&ptrs[..k]) {
                *o = l.index(m).expect("the mempool hands out its own mbufs");
            }
            done += k;
        }
        done
    }

    fn free_bulk(&mut self, bis: &[u32]) {
        let l = self.inner.layout;
        let mut ptrs = [std::ptr::null_mut::<sys::rte_mbuf>(); CHUNK];
        for chunk in bis.chunks(CHUNK) {
            for (p, &bi) in ptrs.iter_mut().zip(chunk) {
                debug_assert!(bi < l.count);
                *p = l.mbuf(bi);
            }
            // SAFETY: each pointer is an mbuf of this pool (indices come from the pool),
            // single-segment, with refcnt 1, not referenced by anyone after this call.
            unsafe { sys::rte_pktmbuf_free_bulk(ptrs.as_mut_ptr(), chunk.len() as u32) };
        }
    }

    fn available(&self) -> usize {
        // SAFETY: valid pool pointer.
        unsafe { sys::rte_mempool_avail_count(self.inner.mp.as_ptr()) as usize }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_index_is_exact_division() {
        for stride in [2368usize, 2432, 4096, 2176, 192, 3 * 64 * 7] {
            let l = Layout::new(1 << 20, stride, 1000, 128, 2176);
            for i in 0..1000u32 {
                assert_eq!(l.index(l.mbuf(i)), Some(i));
                for d in [1usize, 8, 64, stride / 2] {
                    let p = (l.mbuf(i) as usize + d) as *const sys::rte_mbuf;
                    assert_eq!(l.index(p), None, "stride {stride}, i {i}, +{d}");
                }
            }
            assert_eq!(l.index(l.mbuf(1000)), None);
            assert_eq!(l.index((l.mbuf0 - stride) as *const _), None);
            assert_eq!(l.index(std::ptr::null()), None);
            assert_eq!(l.index(usize::MAX as *const _), None);
            // Every byte offset inside a few mbufs, and pseudo-random addresses anywhere:
            // only exact mbuf addresses map below the count.
            for i in [0u32, 1, 499, 999] {
                for d in 1..stride {
                    assert!(l.raw_index(l.mbuf(i) as usize + d) >= 1000);
                }
            }
            // Bursts: all valid, then one foreign address at each place; both word sizes
            // (a layout over 4 GiB takes the 64-bit path).
            let big = Layout::new(
                1 << 20,
                stride,
                (5u64 << 32).div_ceil(stride as u64) as u32,
                128,
                2176,
            );
            assert!(l.fits32 && !big.fits32);
            let lanes = [Lanes::Scalar, Lanes::Avx2, Lanes::Avx512].map(|x| l.with_lanes(x));
            assert_eq!(
                lanes[2].lanes == Lanes::Avx512,
                std::arch::is_x86_feature_detected!("avx512f") && cfg!(pktvec_avx512)
            );
            for lay in lanes.into_iter().chain([big]) {
                let mbufs: Vec<usize> = (0..64u32)
                    .map(|i| lay.mbuf(i * 13 % 1000) as usize)
                    .collect();
                let mut out = vec![0u32; 64];
                for len in [0usize, 1, 3, 4, 5, 15, 16, 17, 31, 32, 33, 63, 64] {
                    out.fill(u32::MAX);
                    assert!(lay.index_burst(&mbufs[..len], &mut out[..len]));
                    assert!(out[..len]
                        .iter()
                        .zip(&mbufs)
                        .all(|(&q, &m)| lay.index(m as *const _) == Some(q)));
                }
                for bad in [1usize, 64, stride / 2, usize::MAX / 2] {
                    for at in [0, 7, 8, 15, 17, 31, 61, 62, 63] {
                        let mut b = mbufs.clone();
                        b[at] = b[at].wrapping_add(bad);
                        assert!(!lay.index_burst(&b, &mut out), "+{bad} at {at}");
                    }
                }
                let mut b = mbufs.clone();
                b[5] = lay.mbuf0 - stride;
                assert!(!lay.index_burst(&b, &mut out));
                b[5] = lay.mbuf0 + (1 << 32) * stride; // a multiple of the stride, far away
                assert!(!lay.index_burst(&b, &mut out));
                // And back: indices to mbuf addresses, every length around the 8-wide steps.
                let idx: Vec<u32> = (0..64u32).map(|i| i * 13 % 1000).collect();
                let mut back = vec![0usize; 64];
                for len in [0usize, 1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64] {
                    back.fill(0);
                    assert_eq!(lay.mbuf_burst(&idx[..len], &mut back), len);
                    assert_eq!(&back[..len], &mbufs[..len], "len {len}");
                    assert!(back[len..].iter().all(|&m| m == 0));
                }
            }
            let mut x = 0x9E37_79B9_7F4A_7C15u64;
            for _ in 0..100_000 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let a = x as usize;
                let exact =
                    a >= l.mbuf0 && (a - l.mbuf0) % stride == 0 && (a - l.mbuf0) / stride < 1000;
                assert_eq!(l.raw_index(a) < 1000, exact);
                // Near the pool too.
                let b = l.mbuf0 + (x % (1000 * stride as u64 + 7)) as usize;
                let (q, off) = (l.raw_index(b), b - l.mbuf0);
                let exact = off % stride == 0 && off / stride < 1000;
                assert_eq!(q < 1000, exact);
                if exact {
                    assert_eq!(q, (off / stride) as u64);
                }
            }
        }
    }
}
