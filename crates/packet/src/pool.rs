//! The buffer pool: fixed-size packet buffers addressed by `u32` index.
//!
//! All memory is allocated once, when the pool is created: an array of 64-byte lines, one
//! per buffer, each its [`BufferMeta`] and the pool's own mark of whether it holds the
//! buffer (which no `&mut BufferMeta` reaches, so no node can forge it), and a
//! 64-byte-aligned arena of `headroom + data_room` bytes per buffer (rounded up to whole
//! cache lines). Allocation and free move indices on a LIFO free list (recently freed
//! buffers are likely still in cache), in bulk, without locks or system calls. Only held
//! buffers show their bytes: a stale index reaches an empty packet.
//!
//! ```
//! use pktvec_packet::{BufferPool, PoolConfig};
//! let mut pool = BufferPool::new(PoolConfig { buffers: 4, ..PoolConfig::default() }).unwrap();
//! let mut idx = [0u32; 8];
//! // An exhausted pool hands out fewer buffers; it never panics or blocks.
//! assert_eq!(pool.alloc_bulk(&mut idx), 4);
//! pool.packet_mut(idx[0]).append(3).unwrap().copy_from_slice(b"abc");
//! assert_eq!(pool.packet(idx[0]).data(), b"abc");
//! assert_eq!(pool.free_bulk(&idx[..4]), 4);
//! assert_eq!(pool.free_count(), 4);
//! ```

use crate::meta::{BufferMeta, MetaFlags, NO_INTERFACE};
use crate::packet::{window, Packet, PacketMut};
use crate::prefetch;
use bytemuck::{Pod, Zeroable};
use serde::{Deserialize, Serialize};

/// Cache line size assumed for layout and prefetch.
pub const CACHE_LINE: usize = 64;

/// Default headroom in front of the packet data (room to prepend headers).
pub const DEFAULT_HEADROOM: u16 = 128;
/// Default data room (bytes after the headroom).
pub const DEFAULT_DATA_ROOM: u16 = 2048;

/// Buffer pool size and buffer layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct PoolConfig {
    /// Number of buffers (at least 1).
    pub buffers: u32,
    /// Bytes reserved in front of the packet for prepending headers.
    pub headroom: u16,
    /// Bytes available for packet data after the headroom.
    pub data_room: u16,
}

impl Default for PoolConfig {
    fn default() -> Self {
        PoolConfig {
            buffers: 16 * 1024,
            headroom: DEFAULT_HEADROOM,
            data_room: DEFAULT_DATA_ROOM,
        }
    }
}

impl PoolConfig {
    /// Checks the configuration and returns the buffer size (`headroom + data_room`) and
    /// the stride in cache lines (the buffer size rounded up).
    ///
    /// ```
    /// use pktvec_packet::PoolConfig;
    /// let cfg = PoolConfig { buffers: 8, headroom: 64, data_room: 100 };
    /// assert_eq!(cfg.layout(), Ok((164, 3)));
    /// assert!(PoolConfig { buffers: 0, ..cfg }.layout().is_err());
    /// ```
    pub fn layout(&self) -> Result<(u16, usize), PoolError> {
        if self.buffers == 0 {
            return Err(PoolError::BadConfig("buffers must be at least 1"));
        }
        if self.buffers == u32::MAX {
            return Err(PoolError::BadConfig("buffers must be below u32::MAX"));
        }
        if self.data_room == 0 {
            return Err(PoolError::BadConfig("data_room must be at least 1"));
        }
        let buf_size = self
            .headroom
            .checked_add(self.data_room)
            .ok_or(PoolError::BadConfig("headroom + data_room must be < 65536"))?;
        Ok((buf_size, (buf_size as usize).div_ceil(CACHE_LINE)))
    }
}

/// Errors of the buffer pool and of packet editing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PoolError {
    /// The configuration cannot be built.
    #[error("invalid pool configuration: {0}")]
    BadConfig(&'static str),
    /// Not enough free buffers for an all-or-nothing allocation.
    #[error("buffer pool exhausted: {wanted} wanted, {free} free")]
    Exhausted {
        /// Buffers asked for.
        wanted: usize,
        /// Buffers that were free.
        free: usize,
    },
    /// The data does not fit in one buffer's data room.
    #[error("packet of {len} bytes does not fit in a data room of {room} bytes")]
    TooLong {
        /// Packet length.
        len: usize,
        /// Data room.
        room: usize,
    },
}

#[repr(C, align(64))]
#[derive(Clone, Copy, Pod, Zeroable)]
struct Line([u8; CACHE_LINE]);

/// A pool of fixed-size packet buffers, addressed by `u32` index.
///
/// One pool per worker: it is `Send` but is used by one thread at a time.
pub struct BufferPool {
    /// One line per buffer: its metadata and the pool's "held" mark.
    slots: Vec<Slot>,
    /// The buffers' memory when the pool allocated it (`None` over external memory): only
    /// kept alive here, every access goes through `region`.
    _owned: Option<Vec<Line>>,
    /// Where the buffers are, for both arenas (`region.count == slots.len()`): the fast path
    /// reaches a buffer with one multiply-add, whichever arena holds it.
    region: ExternalRegion,
    stride: usize,
    headroom: u16,
    buf_size: u16,
    /// Free buffers: all of them for an owned arena; a local cache in front of the
    /// backend for external memory.
    free: Vec<u32>,
    in_use: usize,
    backend: Option<Box<dyn BufferBackend>>,
    double_frees: u64,
    alloc_failures: u64,
    bad_adopts: u64,
    /// Addresses for [`prefetch`](Self::prefetch), computed once (the metadata and the
    /// arena never move or change size).
    hints: PrefetchHints,
    /// The CPU has AVX2 (detected once, when the pool is made): the bulk adoption writes
    /// each metadata line with two 32-byte stores.
    avx2: bool,
}

/// One buffer's cache line in the pool: the [`BufferMeta`] nodes read and write, and the
/// pool's own mark of whether it holds the buffer. The mark is outside `BufferMeta`, so no
/// `&mut BufferMeta` (and no node) can change it: over a DPDK mempool it is what lets the
/// transmit path hand an mbuf to the driver only once, the receive path take one in only
/// when the pool does not hold it already, and the accessors reach only held buffers.
#[repr(C, align(64))]
#[derive(Clone, Copy, Pod, Zeroable)]
struct Slot {
    meta: BufferMeta,
    /// The mark, as the number of the buffer's bytes its accessors may reach: the buffer
    /// size while the pool holds it (allocated or adopted, not yet freed or released),
    /// [`NOT_HELD`] (none) while it is on the free list, in the backend or with a driver.
    /// Being the length itself, it costs an accessor nothing: the slice length is loaded
    /// from the line the accessor reads anyway instead of from the pool.
    span: u32,
}

/// [`Slot::span`] of a buffer the pool does not hold.
const NOT_HELD: u32 = 0;

const _: () = assert!(std::mem::size_of::<Slot>() == CACHE_LINE);

impl Slot {
    /// A buffer the pool does not hold, with default metadata.
    const FREE: Slot = Slot {
        meta: BufferMeta::DEFAULT,
        span: NOT_HELD,
    };

    /// A held buffer (of `buf_size` bytes) with metadata `meta`.
    #[inline(always)]
    fn held(meta: BufferMeta, buf_size: u16) -> Slot {
        Slot {
            meta,
            span: buf_size as u32,
        }
    }

    #[inline(always)]
    fn is_held(&self) -> bool {
        self.span != NOT_HELD
    }

    /// Marks the buffer not held; returns whether it was.
    #[inline(always)]
    fn take(&mut self) -> bool {
        let held = self.is_held();
        self.span = NOT_HELD;
        held
    }

    /// How many bytes of the buffer its accessors may reach: all of them while the pool
    /// holds it, none otherwise. A buffer the pool does not hold may be a driver's (a NIC
    /// writing a received packet into it, or reading one to send) or back in a mempool
    /// that another user draws from, so a stale index must not reach its bytes: its packet
    /// looks empty and every header view refuses it.
    #[inline(always)]
    fn span(&self) -> usize {
        self.span as usize
    }
}

/// Where a buffer's metadata line and first data line are, as plain addresses, so that a
/// prefetch is two multiply-adds (no bounds test, no slice): the loops prefetch every
/// packet in every node.
#[derive(Clone, Copy, Debug)]
struct PrefetchHints {
    /// Address of `meta[0]`.
    meta: usize,
    /// Address of buffer 0's byte at the default headroom.
    data: usize,
}

impl PrefetchHints {
    fn new(slots: &[Slot], region: &ExternalRegion) -> Self {
        PrefetchHints {
            meta: slots.as_ptr() as usize,
            data: region.base.as_ptr() as usize + region.headroom as usize,
        }
    }
}

/// Buffers in memory the pool does not own, laid out at a fixed stride: buffer `i` is the
/// `buf_size` bytes at `base + i * stride`. A DPDK mempool populated in one chunk has this
/// shape (each object is header, `rte_mbuf`, private area, buffer), so its buffers can be
/// a [`BufferPool`] and a received mbuf enters the graph as an index, with no copy.
///
/// Neither `Clone` nor `Copy`: one region, one pool (two pools over one region could each
/// hand out the same buffer).
///
/// ```compile_fail
/// fn copies<T: Copy>() {}
/// copies::<pktvec_packet::pool::ExternalRegion>();
/// ```
#[derive(Debug)]
pub struct ExternalRegion {
    base: std::ptr::NonNull<u8>,
    stride: usize,
    count: u32,
    buf_size: u16,
    headroom: u16,
}

// SAFETY: the region is plain memory; `ExternalRegion::new`'s contract makes the pool that
// holds it the only user of an allocated buffer's bytes, and the pool is used by one thread
// at a time (`&mut self` for every write).
unsafe impl Send for ExternalRegion {}

impl ExternalRegion {
    /// Describes `count` buffers of `buf_size` bytes, `stride` bytes apart from `base`, whose
    /// freshly allocated packets start `headroom` bytes in.
    ///
    /// # Safety
    /// For as long as the [`BufferBackend`] given with it to [`BufferPool::with_external`]
    /// lives: the memory `base .. base + (count - 1) * stride + buf_size` stays valid,
    /// the `count` buffers do not overlap, and nothing else reads or writes a buffer's
    /// bytes while the pool holds it (between its allocation or adoption and its free or
    /// release). The pool checks the sizes it is given but cannot check these.
    // SAFETY: an `unsafe fn` because the memory's validity and exclusivity (above) are the
    // caller's to prove; the tests at the end of this file build regions over leaked memory.
    pub unsafe fn new(
        base: std::ptr::NonNull<u8>,
        stride: usize,
        count: u32,
        buf_size: u16,
        headroom: u16,
    ) -> Result<Self, PoolError> {
        if count == 0 || count == u32::MAX {
            return Err(PoolError::BadConfig("external region: count out of range"));
        }
        if stride < buf_size as usize || headroom >= buf_size {
            return Err(PoolError::BadConfig(
                "external region: stride below buffer size, or no data room",
            ));
        }
        if stride.checked_mul(count as usize).is_none() {
            return Err(PoolError::BadConfig("external region: size overflows"));
        }
        Ok(ExternalRegion {
            base,
            stride,
            count,
            buf_size,
            headroom,
        })
    }

    /// The same region, for a view that borrows its pool ([`PacketsMut`]); private, so that
    /// no second pool can be built over it.
    #[inline(always)]
    fn dup(&self) -> ExternalRegion {
        ExternalRegion {
            base: self.base,
            stride: self.stride,
            count: self.count,
            buf_size: self.buf_size,
            headroom: self.headroom,
        }
    }

    /// Address of buffer `bi`'s first byte (`bi` < count is the caller's to check).
    #[inline(always)]
    fn buffer_ptr(&self, bi: u32) -> *mut u8 {
        self.base.as_ptr().wrapping_add(bi as usize * self.stride)
    }
}

/// The free list behind a [`BufferPool`] over external memory: a DPDK mempool, for one.
/// The pool keeps a local cache of free indices in front of it and calls it once per bulk
/// refill or spill, never per packet.
pub trait BufferBackend: Send {
    /// Takes up to `out.len()` free buffers, writes their indices to `out` and returns how
    /// many it took.
    fn alloc_bulk(&mut self, out: &mut [u32]) -> usize;
    /// Gives buffers back.
    fn free_bulk(&mut self, bis: &[u32]);
    /// Buffers free in the backend (not counting the pool's local cache).
    fn available(&self) -> usize;
}

/// One packet for [`BufferPool::alloc_bulk_blocks`]: its bytes padded to one 64-byte
/// block, its length (at most 64) and two metadata fields.
#[derive(Clone, Copy, Debug)]
pub struct Block64<'a> {
    /// The packet's first `len` bytes, then anything (copied whole).
    pub bytes: &'a [u8; 64],
    /// Packet length (cut to 64).
    pub len: u16,
    /// [`BufferMeta::rx_if`].
    pub rx_if: u16,
    /// [`BufferMeta::opaque`].
    pub opaque: u32,
}

/// Local cache size of a pool over a [`BufferBackend`]: refills take half of it, spills
/// happen above it.
pub const EXTERNAL_CACHE: usize = 512;

/// A fresh line (the template `BufferMeta { rx_if, ..default() }`, marked held) as four
/// 16-byte words; its first four bytes (the place) are zero and get replaced per packet.
#[cfg(target_arch = "x86_64")]
type Line4 = [std::arch::x86_64::__m128i; 4];
#[cfg(not(target_arch = "x86_64"))]
type Line4 = [u128; 4];

/// Writes line `m` whole (metadata and mark): the template `line` with the packet's data offset and
/// length in its first four bytes. On x86-64 the two fields go into the first word with
/// two `pinsrw` (SSE2) and the line is four 16-byte stores.
#[inline(always)]
fn write_line(m: &mut Slot, line: Line4, data_offset: u16, len: u16) {
    let w: &mut Line4 = bytemuck::cast_mut(m);
    #[cfg(target_arch = "x86_64")]
    let head = {
        use std::arch::x86_64::_mm_insert_epi16;
        // SAFETY: `pinsrw` needs SSE2, which every x86-64 CPU has (the architecture's
        // baseline); it only moves register lanes. The bulk adopt tests compare the
        // written lines with `BufferMeta` values field by field.
        unsafe {
            _mm_insert_epi16::<1>(
                _mm_insert_epi16::<0>(line[0], data_offset as i32),
                len as i32,
            )
        }
    };
    #[cfg(not(target_arch = "x86_64"))]
    let head = line[0] >> 32 << 32 | (data_offset as u32 | (len as u32) << 16) as u128;
    *w = [head, line[1], line[2], line[3]];
}

/// Whether the CPU runs AVX2 code (x86-64 only; false elsewhere).
fn has_avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    return std::arch::is_x86_feature_detected!("avx2");
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// The fast loop of [`BufferPool::adopt_bulk_as`]: adopts `bis[i]` with the place `place`
/// gives for `descs[i]`, writing its line with `write`, until the end or the first buffer
/// the pool holds already; returns how many were adopted. Every index of `bis` must be
/// below `slots.len()` (the caller checks the burst's maximum).
#[inline(always)]
fn adopt_run<T>(
    slots: &mut [Slot],
    bis: &[u32],
    descs: &[T],
    place: &mut impl FnMut(&T) -> (u16, u16),
    write: impl Fn(&mut Slot, u16, u16),
) -> usize {
    let mut i = 0;
    // One step: adopts `bi` with the place of `d`, or says it is not free.
    let mut adopt = |bi: u32, d: &T| {
        debug_assert!((bi as usize) < slots.len());
        // SAFETY: every index of `bis` is below `slots.len()` (this function's contract,
        // checked by the caller on the burst's maximum).
        let m = unsafe { slots.get_unchecked_mut(bi as usize) };
        let free = !m.is_held();
        if free {
            let (data_offset, len) = place(d);
            write(m, data_offset, len);
        }
        free
    };
    // Four buffers a loop step (chunks: no index checks), then the rest.
    for (b4, d4) in bis.chunks_exact(4).zip(descs.chunks_exact(4)) {
        for j in 0..4 {
            if !adopt(b4[j], &d4[j]) {
                return i + j;
            }
        }
        i += 4;
    }
    for (&bi, d) in bis[i..].iter().zip(&descs[i..]) {
        if !adopt(bi, d) {
            return i;
        }
        i += 1;
    }
    i
}

/// [`adopt_run`] compiled for AVX2, each line written as two 32-byte stores (the place
/// inserted into the template's first half with two `vpinsrw` and one `vpblendd`): two
/// instructions a buffer fewer than the SSE2 line.
///
/// # Safety
/// The CPU has AVX2; every index of `bis` is below `slots.len()`.
// SAFETY: an `unsafe fn` because it may only run where the CPU has AVX2 (its caller
// checks `BufferPool::avx2`) and relies on `adopt_run`'s range contract; the bulk adopt
// tests compare the lines it writes with `BufferMeta` values field by field.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn adopt_run_avx2<T>(
    slots: &mut [Slot],
    bis: &[u32],
    descs: &[T],
    line: Line4,
    place: &mut impl FnMut(&T) -> (u16, u16),
) -> usize {
    use std::arch::x86_64::*;
    let lo = _mm256_set_m128i(line[1], line[0]);
    let hi = _mm256_set_m128i(line[3], line[2]);
    let write = |m: &mut Slot, data_offset: u16, len: u16| {
        let head = _mm_insert_epi16::<1>(
            _mm_insert_epi16::<0>(line[0], data_offset as i32),
            len as i32,
        );
        let first = _mm256_blend_epi32::<0b0000_1111>(lo, _mm256_castsi128_si256(head));
        let p = (m as *mut Slot).cast::<__m256i>();
        // SAFETY: `m` is one 64-byte-aligned `Slot` (plain bytes, `Pod`): two aligned
        // 32-byte stores cover it exactly.
        unsafe {
            _mm256_store_si256(p, first);
            _mm256_store_si256(p.add(1), hi);
        }
    };
    adopt_run(slots, bis, descs, place, write)
}

/// The largest index of `bis` (0 if empty): one comparison per burst instead of one per
/// buffer. Written as a plain fold over chunks of 8 so that the compiler keeps it in
/// vector registers (`pmaxud`, four indices an instruction).
#[inline(always)]
fn max_index(bis: &[u32]) -> u32 {
    let mut top = [0u32; 8];
    let mut chunks = bis.chunks_exact(8);
    for c in &mut chunks {
        for (t, &b) in top.iter_mut().zip(c) {
            *t = (*t).max(b);
        }
    }
    let rest = chunks.remainder().iter().copied().max().unwrap_or(0);
    top.into_iter().max().unwrap_or(0).max(rest)
}

impl std::fmt::Debug for BufferPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BufferPool")
            .field("buffers", &self.slots.len())
            .field("free", &self.free.len())
            .field("headroom", &self.headroom)
            .field("buf_size", &self.buf_size)
            .finish()
    }
}

impl BufferPool {
    /// Allocates all buffers of the pool; they start free.
    pub fn new(cfg: PoolConfig) -> Result<Self, PoolError> {
        let (buf_size, stride_lines) = cfg.layout()?;
        let n = cfg.buffers as usize;
        let slots = vec![Slot::FREE; n];
        let mut lines = vec![Line([0; CACHE_LINE]); n * stride_lines];
        let base = std::ptr::NonNull::new(lines.as_mut_ptr().cast::<u8>())
            .ok_or(PoolError::BadConfig("empty arena"))?;
        // SAFETY: `lines` holds `n * stride_lines` lines, i.e. `n` buffers of `buf_size`
        // bytes at a stride of `stride_lines` lines, without overlap. It moves into
        // the pool's `_owned` below (moving a `Vec` does not move its heap memory), lives as long
        // as the pool, and is never accessed or resized again except through this region.
        let region = unsafe {
            ExternalRegion::new(
                base,
                stride_lines * CACHE_LINE,
                cfg.buffers,
                buf_size,
                cfg.headroom,
            )
        }?;
        // LIFO free list: index 0 is handed out first.
        let free: Vec<u32> = (0..cfg.buffers).rev().collect();
        let hints = PrefetchHints::new(&slots, &region);
        Ok(BufferPool {
            slots,
            hints,
            _owned: Some(lines),
            region,
            stride: stride_lines * CACHE_LINE,
            headroom: cfg.headroom,
            buf_size,
            free,
            in_use: 0,
            backend: None,
            double_frees: 0,
            alloc_failures: 0,
            bad_adopts: 0,
            avx2: has_avx2(),
        })
    }

    /// A pool over buffers owned by `backend` (a DPDK mempool, in `pktvec-io`'s `dpdk`
    /// feature), laid out as `region` says. Allocation takes from a local cache of
    /// [`EXTERNAL_CACHE`] indices refilled from the backend in bulk; frees go back to the
    /// cache and spill to the backend in bulk. Buffers a driver allocated enter with
    /// [`adopt`](Self::adopt); buffers handed to a driver leave with
    /// [`release`](Self::release).
    ///
    /// ```
    /// use pktvec_packet::pool::{BufferBackend, BufferPool, ExternalRegion};
    /// use std::ptr::NonNull;
    /// /// Eight 256-byte buffers in a leaked array, free list in a Vec.
    /// struct Simple(Vec<u32>);
    /// impl BufferBackend for Simple {
    ///     fn alloc_bulk(&mut self, out: &mut [u32]) -> usize {
    ///         let n = out.len().min(self.0.len());
    ///         for o in &mut out[..n] { *o = self.0.pop().unwrap(); }
    ///         n
    ///     }
    ///     fn free_bulk(&mut self, bis: &[u32]) { self.0.extend_from_slice(bis) }
    ///     fn available(&self) -> usize { self.0.len() }
    /// }
    /// let mem: &'static mut [u8] = Box::leak(vec![0u8; 8 * 256].into_boxed_slice());
    /// // SAFETY: the leaked memory lives forever and only the pool uses it.
    /// let region = unsafe { ExternalRegion::new(NonNull::new(mem.as_mut_ptr()).unwrap(), 256, 8, 256, 64) }?;
    /// let mut pool = BufferPool::with_external(region, Box::new(Simple((0..8).collect())))?;
    /// let bi = pool.alloc_with(b"hello")?;
    /// assert_eq!(pool.data(bi), b"hello");
    /// assert_eq!(pool.in_use(), 1);
    /// pool.free(bi);
    /// assert_eq!(pool.free_count(), 8);
    /// # Ok::<(), pktvec_packet::PoolError>(())
    /// ```
    pub fn with_external(
        region: ExternalRegion,
        backend: Box<dyn BufferBackend>,
    ) -> Result<Self, PoolError> {
        let n = region.count as usize;
        let slots = vec![Slot::FREE; n];
        let hints = PrefetchHints::new(&slots, &region);
        Ok(BufferPool {
            slots,
            hints,
            stride: region.stride,
            headroom: region.headroom,
            buf_size: region.buf_size,
            region,
            _owned: None,
            free: Vec::with_capacity(n),
            in_use: 0,
            backend: Some(backend),
            double_frees: 0,
            alloc_failures: 0,
            bad_adopts: 0,
            avx2: has_avx2(),
        })
    }

    /// True if the buffers live in external memory (see [`with_external`](Self::with_external)).
    pub fn is_external(&self) -> bool {
        self.backend.is_some()
    }

    /// The address of buffer 0 over external memory (`None` when the pool owns its
    /// buffers): with [`capacity`](Self::capacity) it identifies the region, so that a node
    /// that maps buffer indices to a driver's objects (DPDK's rx and tx nodes) can check
    /// that the graph's pool is the one over those objects.
    ///
    /// ```
    /// use pktvec_packet::{BufferPool, PoolConfig};
    /// let pool = BufferPool::new(PoolConfig::default())?;
    /// assert_eq!(pool.external_base(), None);
    /// # Ok::<(), pktvec_packet::PoolError>(())
    /// ```
    pub fn external_base(&self) -> Option<usize> {
        self.is_external()
            .then_some(self.region.base.as_ptr() as usize)
    }

    /// Takes buffer `bi`, allocated outside the pool (by a NIC driver from the backend),
    /// into use: its metadata is reset (packet at the default headroom, empty) for the
    /// caller to fill in. Returns false, counting it in [`bad_adopts`](Self::bad_adopts),
    /// if `bi` is not a buffer of this pool or is already in use.
    ///
    /// # Safety
    /// `bi` must have been taken out of the backend by someone else (a driver's receive,
    /// or a transmit it refused) and be handed over now: not in the backend's free list,
    /// not in this pool's local cache, and used by no one else from now on. The pool
    /// cannot tell such a buffer from one that is still free (an adopted free buffer could
    /// be allocated again, or written by a NIC, while the graph holds it).
    // SAFETY: whether the backend's owner really handed `bi` over is the caller's to prove
    // (# Safety above); the body itself only writes the pool's own line, after checking
    // the index and the mark.
    #[inline]
    pub unsafe fn adopt(&mut self, bi: u32) -> bool {
        // SAFETY: the caller's contract is `adopt_as`'s.
        unsafe { self.adopt_as(bi, self.headroom, 0, NO_INTERFACE) }
    }

    /// [`adopt`](Self::adopt) with the packet's place and receive interface filled in, in
    /// one write of the metadata line (a receive node's per-packet step).
    ///
    /// # Safety
    /// As for [`adopt`](Self::adopt).
    // SAFETY: the same contract as `adopt`; the body checks the index and the mark before
    // writing the line.
    #[inline]
    pub unsafe fn adopt_as(&mut self, bi: u32, data_offset: u16, len: u16, rx_if: u16) -> bool {
        match self.slots.get_mut(bi as usize) {
            Some(m) if !m.is_held() => {
                *m = Slot::held(
                    BufferMeta {
                        data_offset,
                        len,
                        rx_if,
                        ..BufferMeta::default()
                    },
                    self.buf_size,
                );
                self.in_use += 1;
                true
            }
            _ => {
                self.bad_adopts += 1;
                false
            }
        }
    }

    /// [`release`](Self::release) that also returns the packet's data offset and length
    /// (a transmit node's per-packet step), or `None` if `bi` was not in use or is not a
    /// buffer of this pool (counted as a double free).
    #[inline]
    pub fn release_data(&mut self, bi: u32) -> Option<(u16, u16)> {
        let Some(m) = self.slots.get_mut(bi as usize).filter(|m| m.is_held()) else {
            self.double_frees += 1;
            return None;
        };
        m.span = NOT_HELD;
        self.in_use -= 1;
        Some((m.meta.data_offset, m.meta.len))
    }

    /// [`release`](Self::release) that returns the buffer's whole metadata: how a packet
    /// leaves one worker's pool for another's over a shared arena
    /// ([`SharedArena::hand_off`](crate::arena::SharedArena::hand_off)). `None` (counted
    /// as a double free) if the pool does not hold `bi`.
    ///
    /// ```
    /// use pktvec_packet::{BufferPool, PoolConfig};
    /// let mut pool = BufferPool::new(PoolConfig { buffers: 4, ..PoolConfig::default() })?;
    /// let bi = pool.alloc_with(b"abc")?;
    /// assert_eq!(pool.release_meta(bi).map(|m| m.len), Some(3));
    /// assert_eq!(pool.release_meta(bi), None);
    /// # Ok::<(), pktvec_packet::PoolError>(())
    /// ```
    #[inline]
    pub fn release_meta(&mut self, bi: u32) -> Option<BufferMeta> {
        let Some(m) = self.slots.get_mut(bi as usize).filter(|m| m.is_held()) else {
            self.double_frees += 1;
            return None;
        };
        m.span = NOT_HELD;
        self.in_use -= 1;
        Some(m.meta)
    }

    /// [`adopt`](Self::adopt) with the buffer's whole metadata given (a packet another
    /// worker's pool released with [`release_meta`](Self::release_meta)); the `TRACED`
    /// flag is cleared (the trace index was the other graph's). Returns false, counted in
    /// [`bad_adopts`](Self::bad_adopts), if `bi` is not a buffer of this pool, is already
    /// held, or `meta` places the packet outside the buffer.
    ///
    /// # Safety
    /// As for [`adopt`](Self::adopt): `bi` is handed over now and used by no one else.
    // SAFETY: the same contract as `adopt`; the body checks the index, the mark and the
    // packet's place before writing the line.
    #[inline]
    pub unsafe fn adopt_meta(&mut self, bi: u32, meta: &BufferMeta) -> bool {
        let fits = meta.data_offset as usize + meta.len as usize <= self.buf_size as usize;
        match self.slots.get_mut(bi as usize) {
            Some(m) if !m.is_held() && fits => {
                let mut meta = *meta;
                meta.flags.remove(MetaFlags::TRACED);
                *m = Slot::held(meta, self.buf_size);
                self.in_use += 1;
                true
            }
            _ => {
                self.bad_adopts += 1;
                false
            }
        }
    }

    /// Gives buffer `bi` up without freeing it: a driver now owns it and will return it to
    /// the backend itself (transmit). Returns false (counted as a double free) if it was not
    /// in use.
    #[inline]
    pub fn release(&mut self, bi: u32) -> bool {
        self.release_data(bi).is_some()
    }

    /// [`adopt_as`](Self::adopt_as) for a whole receive burst: adopts each buffer of `bis`
    /// with receive interface `rx_if` and the data offset and length `place(&descs[i])`
    /// returns for `bis[i]` (`descs` describes the burst, e.g. the driver's descriptors or
    /// mbuf pointers; `place` is called once per adoptable buffer, in order). Buffers that
    /// cannot be adopted (out of range or already in use: counted in
    /// [`bad_adopts`](Self::bad_adopts), `place` not called) are removed from `bis`, which
    /// keeps its order; returns how many were adopted, now `bis[..k]`. The in-use count is
    /// updated once per call (before the lines: if `place` panics, it counts the buffers
    /// not reached as held, a leak the conservation check shows, rather than too few).
    ///
    /// # Panics
    /// If `descs` and `bis` differ in length.
    ///
    /// # Safety
    /// Each buffer of `bis` that is not refused must be one the caller may hand over, as
    /// for [`adopt`](Self::adopt).
    ///
    /// ```
    /// use pktvec_packet::{BufferPool, PoolConfig};
    /// let mut pool = BufferPool::new(PoolConfig { buffers: 8, ..PoolConfig::default() }).unwrap();
    /// let mut taken = [0u32; 2];
    /// pool.alloc_bulk(&mut taken); // 0 and 1 are now in use
    /// let mut burst = [5, 1, 6, 99];
    /// let lens = [60u16, 61, 62, 63];
    /// // SAFETY: an owned pool has no driver, so this breaks the contract for 5 and 6 (they
    /// // are still on its free list); nothing allocates afterwards, so no buffer gets a
    /// // second holder. A DPDK rx node adopts what `rte_eth_rx_burst` handed it.
    /// let k = unsafe { pool.adopt_bulk_as(&mut burst, &lens, 3, |&len| (128, len)) };
    /// assert_eq!(&burst[..k], &[5, 6]); // 1 was in use, 99 is no buffer
    /// assert_eq!((pool.meta(6).data_offset, pool.meta(6).len, pool.meta(6).rx_if), (128, 62, 3));
    /// assert_eq!(pool.bad_adopts(), 2);
    /// ```
    // SAFETY: the same contract as `adopt`, per buffer; the body checks the burst's range
    // once and each buffer's mark before writing its line.
    #[inline]
    pub unsafe fn adopt_bulk_as<T>(
        &mut self,
        bis: &mut [u32],
        descs: &[T],
        rx_if: u16,
        place: impl FnMut(&T) -> (u16, u16),
    ) -> usize {
        let in_range = (max_index(bis) as usize) < self.slots.len();
        // SAFETY: the caller's contract; `in_range` is the burst's range, checked.
        unsafe { self.adopt_bulk_inner(bis, descs, rx_if, in_range, place) }
    }

    /// [`adopt_bulk_as`](Self::adopt_bulk_as) for a burst whose indices the caller has
    /// checked already, all below [`capacity`](Self::capacity) (e.g. a DPDK rx node, whose
    /// pass from mbuf to index checks the burst's largest index against the mempool's
    /// size, which is the pool's): the same work without its own range pass. Each buffer's
    /// "held" mark is still checked, and refused buffers are counted and removed as there.
    ///
    /// # Panics
    /// If `descs` and `bis` differ in length.
    ///
    /// # Safety
    /// As for [`adopt_bulk_as`](Self::adopt_bulk_as), and every index of `bis` is below
    /// [`capacity`](Self::capacity) (checked in debug builds only).
    // SAFETY: the range is the caller's to prove (one maximum per burst); the rest is
    // `adopt_bulk_as`'s contract.
    #[inline]
    pub unsafe fn adopt_bulk_in_range_as<T>(
        &mut self,
        bis: &mut [u32],
        descs: &[T],
        rx_if: u16,
        place: impl FnMut(&T) -> (u16, u16),
    ) -> usize {
        debug_assert!((max_index(bis) as usize) < self.slots.len() || bis.is_empty());
        // SAFETY: the caller's contract, the range included.
        unsafe { self.adopt_bulk_inner(bis, descs, rx_if, true, place) }
    }

    /// The body of the bulk adoptions: `in_range` says every index of `bis` is below
    /// `slots.len()` (then the fast loop runs without per-buffer range checks).
    ///
    /// # Safety
    /// As for [`adopt_bulk_as`](Self::adopt_bulk_as); `in_range` true only if it holds.
    // SAFETY: `in_range` is what lets the fast loop index the lines unchecked; the
    // callers compute it or have it from their contract.
    #[inline(always)]
    unsafe fn adopt_bulk_inner<T>(
        &mut self,
        bis: &mut [u32],
        descs: &[T],
        rx_if: u16,
        in_range: bool,
        mut place: impl FnMut(&T) -> (u16, u16),
    ) -> usize {
        assert_eq!(bis.len(), descs.len(), "one descriptor per buffer");
        // The line as four 16-byte words: the first holds the place and the interfaces,
        // the other three are the template's (zero by default), stored whole.
        let line: Line4 = bytemuck::cast(Slot::held(
            BufferMeta {
                rx_if,
                ..BufferMeta::default()
            },
            self.buf_size,
        ));
        let n = bis.len();
        let mut i = 0;
        // Counted before the lines are marked, so that a `place` that panics half way
        // leaves the in-use count too high (a visible leak), never below the buffers held
        // (a later free would underflow it); the refused ones are taken off at the end.
        self.in_use += n;
        // Fast path: one range check for the whole burst (a maximum the compiler
        // vectorises, or the caller's), then per buffer only the "free" test, with no
        // branch to a per-packet refusal: the first buffer that is not free ends it, and
        // the checked loop below takes over from there.
        if in_range {
            #[cfg(target_arch = "x86_64")]
            if self.avx2 {
                // SAFETY: `avx2` is true only if the CPU has AVX2 (`has_avx2`); every
                // index is below `slots.len()` (`in_range`).
                i = unsafe { adopt_run_avx2(&mut self.slots, bis, descs, line, &mut place) };
            } else {
                i = adopt_run(&mut self.slots, bis, descs, &mut place, |m, o, l| {
                    write_line(m, line, o, l)
                });
            }
            #[cfg(not(target_arch = "x86_64"))]
            {
                i = adopt_run(&mut self.slots, bis, descs, &mut place, |m, o, l| {
                    write_line(m, line, o, l)
                });
            }
            if i == n {
                return n;
            }
        }
        let k = self.adopt_bulk_slow(bis, descs, i, line, place);
        self.in_use -= n - k;
        k
    }

    /// [`adopt_bulk_as`](Self::adopt_bulk_as) from `bis[from..]` on, where the fast path
    /// stopped (`bis[..from]` are adopted): each buffer checked on its own, the refused
    /// ones removed.
    #[cold]
    #[inline(never)]
    fn adopt_bulk_slow<T>(
        &mut self,
        bis: &mut [u32],
        descs: &[T],
        from: usize,
        line: Line4,
        mut place: impl FnMut(&T) -> (u16, u16),
    ) -> usize {
        let mut bad = 0usize;
        for (slot, d) in bis[from..].iter_mut().zip(&descs[from..]) {
            match self.slots.get_mut(*slot as usize) {
                Some(m) if !m.is_held() => {
                    let (data_offset, len) = place(d);
                    write_line(m, line, data_offset, len);
                }
                _ => {
                    // u32::MAX is never a buffer index (pools hold fewer).
                    *slot = u32::MAX;
                    bad += 1;
                }
            }
        }
        let mut k = bis.len();
        if bad > 0 {
            k = from;
            for i in from..bis.len() {
                if bis[i] != u32::MAX {
                    bis[k] = bis[i];
                    k += 1;
                }
            }
            self.bad_adopts += bad as u64;
        }
        k
    }

    /// [`release_data`](Self::release_data) for a whole transmit burst: gives up each
    /// buffer `bis[i]` and sets `out[i] = send(bi, meta)`, with its metadata as it was
    /// (e.g. to write the driver's descriptor); a buffer not in use (a double transmit) or
    /// out of range is counted in [`double_frees`](Self::double_frees), not given to
    /// `send`, and gets `out[i] = hole`. Returns how many were released (all of them when
    /// it equals `bis.len()`); the in-use count is updated once per call (after the lines:
    /// if `send` panics, it stays too high, never too low).
    ///
    /// # Panics
    /// If `out` is shorter than `bis`.
    ///
    /// ```
    /// use pktvec_packet::{BufferPool, PoolConfig};
    /// let mut pool = BufferPool::new(PoolConfig { buffers: 8, ..PoolConfig::default() }).unwrap();
    /// let a = pool.alloc_with(b"abc").unwrap();
    /// let b = pool.alloc_with(b"hello").unwrap();
    /// let mut lens = [0u16; 3];
    /// let n = pool.release_bulk_map(&[a, b, a], &mut lens, u16::MAX, |_, m| m.len);
    /// assert_eq!((n, lens), (2, [3, 5, u16::MAX]));
    /// assert_eq!((pool.in_use(), pool.double_frees()), (0, 1));
    /// ```
    #[inline]
    pub fn release_bulk_map<T: Copy>(
        &mut self,
        bis: &[u32],
        out: &mut [T],
        hole: T,
        mut send: impl FnMut(u32, &BufferMeta) -> T,
    ) -> usize {
        assert!(out.len() >= bis.len(), "one output slot per buffer");
        let n = bis.len();
        let mut i = 0;
        // Fast path as in `adopt_bulk_as`: one range check per burst, then only the "in
        // use" test per buffer; the first buffer not in use hands over to the checked loop.
        if (max_index(bis) as usize) < self.slots.len() {
            let slots = &mut self.slots;
            // One step: releases `bi` into `o`, or says it is not in use.
            let mut release = |bi: u32, o: &mut T| {
                // SAFETY: `bi <= max_index(bis) < slots.len()`, checked above.
                let m = unsafe { slots.get_unchecked_mut(bi as usize) };
                let used = m.is_held();
                if used {
                    *o = send(bi, &m.meta);
                    m.span = NOT_HELD;
                }
                used
            };
            // Four buffers a loop step (chunks: no index checks), then the rest.
            'fast: {
                for (b4, o4) in bis.chunks_exact(4).zip(out.chunks_exact_mut(4)) {
                    for j in 0..4 {
                        if !release(b4[j], &mut o4[j]) {
                            i += j;
                            break 'fast;
                        }
                    }
                    i += 4;
                }
                for (&bi, o) in bis[i..].iter().zip(out[i..].iter_mut()) {
                    if !release(bi, o) {
                        break 'fast;
                    }
                    i += 1;
                }
            }
            if i == n {
                self.in_use -= n;
                return n;
            }
        }
        self.release_bulk_slow(bis, out, i, hole, send)
    }

    /// [`release_bulk_map`](Self::release_bulk_map) from `bis[from..]` on, where the fast
    /// path stopped (`bis[..from]` are released): each buffer checked on its own.
    #[cold]
    #[inline(never)]
    fn release_bulk_slow<T: Copy>(
        &mut self,
        bis: &[u32],
        out: &mut [T],
        from: usize,
        hole: T,
        mut send: impl FnMut(u32, &BufferMeta) -> T,
    ) -> usize {
        let mut bad = 0usize;
        for (&bi, o) in bis[from..].iter().zip(out[from..].iter_mut()) {
            match self.slots.get_mut(bi as usize) {
                Some(m) if m.is_held() => {
                    *o = send(bi, &m.meta);
                    m.span = NOT_HELD;
                }
                _ => {
                    *o = hole;
                    bad += 1;
                }
            }
        }
        self.double_frees += bad as u64;
        self.in_use -= bis.len() - bad;
        bis.len() - bad
    }

    /// Adoptions refused (index out of range or buffer already in use).
    pub fn bad_adopts(&self) -> u64 {
        self.bad_adopts
    }

    /// Returns every buffer of the local cache to the backend (no-op for an owned arena).
    pub fn flush_cache(&mut self) {
        if let Some(b) = self.backend.as_mut() {
            b.free_bulk(&self.free);
            self.free.clear();
        }
    }

    /// Refills the local cache from the backend so that at least `want` buffers are free
    /// in it, if the backend has them.
    #[cold]
    fn refill(&mut self, want: usize) {
        if let Some(b) = self.backend.as_mut() {
            let old = self.free.len();
            let target = want.max(EXTERNAL_CACHE / 2).min(self.free.capacity());
            if target > old {
                self.free.resize(target, 0);
                let got = b.alloc_bulk(&mut self.free[old..]);
                self.free.truncate(old + got);
            }
        }
    }

    /// Spills the local cache down to half its size when it grew beyond it.
    #[inline]
    fn spill(&mut self) {
        if self.free.len() > EXTERNAL_CACHE {
            if let Some(b) = self.backend.as_mut() {
                let keep = EXTERNAL_CACHE / 2;
                b.free_bulk(&self.free[keep..]);
                self.free.truncate(keep);
            }
        }
    }

    /// Total number of buffers.
    #[inline]
    pub fn capacity(&self) -> usize {
        self.slots.len()
    }
    /// Number of free buffers.
    #[inline]
    pub fn free_count(&self) -> usize {
        self.free.len() + self.backend.as_ref().map_or(0, |b| b.available())
    }
    /// Number of buffers handed out and not yet freed.
    #[inline]
    pub fn in_use(&self) -> usize {
        self.in_use
    }
    /// Headroom of a freshly allocated buffer.
    #[inline]
    pub fn headroom(&self) -> u16 {
        self.headroom
    }
    /// Data room after the headroom.
    #[inline]
    pub fn data_room(&self) -> u16 {
        self.buf_size - self.headroom
    }
    /// Frees refused because the buffer was already free (a bug in a node).
    pub fn double_frees(&self) -> u64 {
        self.double_frees
    }
    /// Allocation requests that could not be served in full.
    pub fn alloc_failures(&self) -> u64 {
        self.alloc_failures
    }
    /// Bytes of memory held by the pool (metadata and arena).
    pub fn memory_bytes(&self) -> usize {
        self.slots.len() * (std::mem::size_of::<Slot>() + self.stride)
    }

    #[inline]
    fn reset(&mut self, bi: u32) {
        self.slots[bi as usize] = Slot::held(
            BufferMeta {
                data_offset: self.headroom,
                ..BufferMeta::default()
            },
            self.buf_size,
        );
    }

    /// Allocates one buffer, or `None` if the pool is empty.
    #[inline]
    pub fn alloc(&mut self) -> Option<u32> {
        if self.free.is_empty() && self.backend.is_some() {
            self.refill(1);
        }
        match self.free.pop() {
            Some(bi) => {
                self.reset(bi);
                self.in_use += 1;
                Some(bi)
            }
            None => {
                self.alloc_failures += 1;
                None
            }
        }
    }

    /// The free-list tail a bulk allocation of `want` buffers takes: `(start, n)`, the
    /// last `n` entries from `start` (refilled from the backend first when short; a
    /// shortfall counts one allocation failure). The caller takes them and truncates.
    #[inline(always)]
    fn free_tail(&mut self, want: usize) -> (usize, usize) {
        if self.free.len() < want && self.backend.is_some() {
            self.refill(want);
        }
        let n = want.min(self.free.len());
        if n < want {
            self.alloc_failures += 1;
        }
        (self.free.len() - n, n)
    }

    /// Allocates up to `out.len()` buffers into `out` and returns how many it got
    /// (fewer when the pool runs low, never a panic).
    #[inline]
    pub fn alloc_bulk(&mut self, out: &mut [u32]) -> usize {
        let (start, n) = self.free_tail(out.len());
        for (slot, i) in out[..n].iter_mut().zip(start..) {
            *slot = self.free[i];
        }
        self.free.truncate(start);
        for &bi in &out[..n] {
            self.reset(bi);
        }
        self.in_use += n;
        n
    }

    /// Allocates up to `out.len()` buffers, as [`alloc_bulk`](Self::alloc_bulk), and fills
    /// each one at once, as a receive ring fills its buffers: buffer `out[k]` gets the 64
    /// bytes of `packet(k).bytes` at the default headroom, a packet length of
    /// `packet(k).len` (at most 64), and fresh metadata with `rx_if` and `opaque` from
    /// `packet(k)`. Each metadata line is written once, whole, instead of a reset at
    /// allocation and edits afterwards. `packet` is called once per allocated buffer, in
    /// order. Allocates nothing (and returns 0) if the data room is under 64 bytes.
    ///
    /// ```
    /// use pktvec_packet::{pool::Block64, BufferPool, PoolConfig};
    /// let mut pool = BufferPool::new(PoolConfig { buffers: 2, ..PoolConfig::default() })?;
    /// let mut block = [0u8; 64];
    /// block[..5].copy_from_slice(b"hello");
    /// let mut out = [0u32; 3];
    /// let got = pool.alloc_bulk_blocks(&mut out, |k| Block64 {
    ///     bytes: &block,
    ///     len: 5 - k as u16,
    ///     rx_if: 7,
    ///     opaque: k as u32,
    /// });
    /// assert_eq!(got, 2); // the pool had two buffers
    /// assert_eq!(pool.data(out[1]), b"hell");
    /// assert_eq!((pool.meta(out[1]).rx_if, pool.meta(out[1]).opaque), (7, 1));
    /// # Ok::<(), pktvec_packet::PoolError>(())
    /// ```
    #[inline]
    pub fn alloc_bulk_blocks<'b>(
        &mut self,
        out: &mut [u32],
        mut packet: impl FnMut(usize) -> Block64<'b>,
    ) -> usize {
        if self.data_room() < 64 {
            return 0;
        }
        let (start, n) = self.free_tail(out.len());
        let (headroom, buf_size) = (self.headroom, self.buf_size);
        // The lines as a slice and the region by value: the stores below could alias the
        // pool as far as the compiler knows, so what is reached through `self` would be
        // reloaded for every packet.
        let (free, slots, r) = (&self.free[start..], &mut self.slots[..], self.region.dup());
        for (k, (slot, &bi)) in out[..n].iter_mut().zip(free).enumerate() {
            *slot = bi;
            let b = packet(k);
            let line = &mut slots[bi as usize];
            *line = Slot::held(
                BufferMeta {
                    data_offset: headroom,
                    len: b.len.min(64),
                    rx_if: b.rx_if,
                    opaque: b.opaque,
                    ..BufferMeta::default()
                },
                buf_size,
            );
            // SAFETY: `bi` indexed `slots` above, so `bi < slots.len() == count`; the
            // buffer came off the free list, so the pool holds it now and no one else
            // reaches its bytes (the region's contract); `headroom + 64 <= buf_size`
            // (data room checked above), so the 64 bytes are inside the buffer, and they
            // cannot overlap `b.bytes`, which the caller borrows from elsewhere.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    b.bytes.as_ptr(),
                    r.buffer_ptr(bi).add(headroom as usize),
                    64,
                );
            }
        }
        self.free.truncate(start);
        self.in_use += n;
        n
    }

    /// Allocates exactly `out.len()` buffers, or none and an error (like
    /// `rte_pktmbuf_alloc_bulk`).
    pub fn alloc_bulk_exact(&mut self, out: &mut [u32]) -> Result<(), PoolError> {
        if self.free.len() < out.len() && self.backend.is_some() {
            self.refill(out.len());
        }
        if out.len() > self.free.len() {
            self.alloc_failures += 1;
            return Err(PoolError::Exhausted {
                wanted: out.len(),
                free: self.free.len(),
            });
        }
        let got = self.alloc_bulk(out);
        debug_assert_eq!(got, out.len());
        Ok(())
    }

    /// Allocates a buffer and copies `bytes` into it at the default headroom.
    pub fn alloc_with(&mut self, bytes: &[u8]) -> Result<u32, PoolError> {
        if bytes.len() > self.data_room() as usize {
            return Err(PoolError::TooLong {
                len: bytes.len(),
                room: self.data_room() as usize,
            });
        }
        let bi = self
            .alloc()
            .ok_or(PoolError::Exhausted { wanted: 1, free: 0 })?;
        let mut p = self.packet_mut(bi);
        let dst = p
            .append(bytes.len())
            .expect("length checked against the data room above");
        dst.copy_from_slice(bytes);
        Ok(bi)
    }

    /// Allocates a new buffer holding a copy of packet `bi` (bytes at the same offset, and
    /// the metadata, except the `TRACED` flag). `None` if the pool is empty or does
    /// not hold `bi` (a stale index: its bytes may be a driver's). For replication
    /// (flooding, mirroring).
    ///
    /// # Panics
    /// If `bi` is not an index of this pool (a bug, not a packet error).
    pub fn clone_packet(&mut self, bi: u32) -> Option<u32> {
        let src = self.slots[bi as usize];
        if !src.is_held() {
            return None;
        }
        let new = self.alloc()?;
        if new == bi {
            // Only if the free list was corrupted; never copy a buffer onto itself.
            return None;
        }
        let r = &self.region;
        // SAFETY: `bi` indexed `slots` above and `new` is a pool buffer, so both are
        // < count; both are held (`bi` checked, `new` just allocated) and differ (checked),
        // so by the region contract both ranges are valid for `buf_size` bytes, disjoint,
        // and touched by no one else; `&mut self` keeps every other reference to the
        // pool's buffers away.
        unsafe { std::ptr::copy_nonoverlapping(r.buffer_ptr(bi), r.buffer_ptr(new), src.span()) };
        let mut flags = src.meta.flags;
        flags.remove(MetaFlags::TRACED);
        self.slots[new as usize].meta = BufferMeta { flags, ..src.meta };
        Some(new)
    }

    /// Returns one buffer to the pool. Returns false (and counts a double free) if it was
    /// already free.
    #[inline]
    pub fn free(&mut self, bi: u32) -> bool {
        self.free_bulk(std::slice::from_ref(&bi)) == 1
    }

    /// Returns buffers to the pool; returns how many were freed (already-free buffers and
    /// indices out of range are refused and counted in
    /// [`double_frees`](Self::double_frees)).
    #[inline]
    pub fn free_bulk(&mut self, bis: &[u32]) -> usize {
        // The in-use count and the spill to the backend are updated once per call, and the
        // loop has no branch: every index is written to the next free-list slot, which
        // only advances when the buffer was in use (the free list never grows past the
        // pool's size unless `bis` holds double frees, so the resize does not reallocate).
        // An index out of range counts as a double free (refused, like a free buffer), so
        // no index reaches the free list unchecked and nothing panics half way. One range
        // check per call (a vectorised maximum) lets the usual loop skip it per buffer.
        let base = self.free.len();
        self.free.resize(base + bis.len(), 0);
        let free = &mut self.free[base..];
        debug_assert_eq!(free.len(), bis.len());
        let pool = &mut self.slots;
        let in_range = (max_index(bis) as usize) < pool.len();
        let mut n = 0;
        for &bi in bis {
            let held = if in_range {
                // SAFETY: `bi <= max_index(bis) < pool.len()`, checked above.
                unsafe { pool.get_unchecked_mut(bi as usize) }.take()
            } else {
                pool.get_mut(bi as usize).is_some_and(Slot::take)
            };
            // SAFETY: `n` is at most the number of indices seen before this one, so
            // `n < bis.len() == free.len()` (`free` was resized to `bis.len()` entries).
            *unsafe { free.get_unchecked_mut(n) } = bi;
            n += usize::from(held);
        }
        self.free.truncate(base + n);
        self.double_frees += (bis.len() - n) as u64;
        self.in_use -= n;
        if self.backend.is_some() {
            self.spill();
        }
        n
    }

    /// True if `bi` is a buffer of this pool that is currently allocated.
    #[inline]
    pub fn is_allocated(&self, bi: u32) -> bool {
        self.slots.get(bi as usize).is_some_and(Slot::is_held)
    }

    /// The whole buffer `bi` (headroom and data room), empty if the pool does not hold it.
    /// Panics if `bi` is out of range.
    #[inline]
    fn bytes(&self, bi: u32) -> &[u8] {
        let r = &self.region;
        let n = self.slots[bi as usize].span();
        // SAFETY: `bi < slots.len() == count` (the index above would have panicked), so the
        // range is inside the region; it is empty unless the pool holds the buffer, and a
        // held buffer's bytes are valid and touched by no one else (the contract of
        // `ExternalRegion::new`, kept by `new` for the owned arena); `&self` keeps writers
        // of this pool away.
        unsafe { std::slice::from_raw_parts(r.buffer_ptr(bi), n) }
    }

    /// The whole buffer `bi`, writable; empty if the pool does not hold it. Panics if `bi`
    /// is out of range.
    #[inline]
    fn bytes_mut(&mut self, bi: u32) -> &mut [u8] {
        let r = &self.region;
        let n = self.slots[bi as usize].span();
        // SAFETY: as in `bytes` (the range is empty unless the pool holds the buffer);
        // `&mut self` makes this the only reference into the pool's buffers, and distinct
        // indices never overlap.
        unsafe { std::slice::from_raw_parts_mut(r.buffer_ptr(bi), n) }
    }

    /// Metadata of buffer `bi`.
    ///
    /// # Panics
    /// If `bi` is not an index of this pool (a bug, not a packet error).
    #[inline]
    pub fn meta(&self, bi: u32) -> &BufferMeta {
        &self.slots[bi as usize].meta
    }

    /// Mutable metadata of buffer `bi`.
    #[inline]
    pub fn meta_mut(&mut self, bi: u32) -> &mut BufferMeta {
        &mut self.slots[bi as usize].meta
    }

    /// Read access to packet `bi` (metadata and data). A buffer the pool does not hold (a
    /// stale index: freed, or handed to a driver) has no bytes: its packet is empty.
    #[inline]
    pub fn packet(&self, bi: u32) -> Packet<'_> {
        Packet::new(&self.slots[bi as usize].meta, self.bytes(bi))
    }

    /// Write access to packet `bi` (metadata and data); no bytes, as in
    /// [`packet`](Self::packet), for a buffer the pool does not hold.
    ///
    /// # Panics
    /// If `bi` is not an index of this pool (a bug, not a packet error).
    #[inline]
    pub fn packet_mut(&mut self, bi: u32) -> PacketMut<'_> {
        let r = &self.region;
        // One bounds check serves both: `slots.len() == region.count`.
        let slot = &mut self.slots[bi as usize];
        debug_assert!(bi < r.count);
        let n = slot.span();
        // SAFETY: `bi < slots.len() == count` (the index above would have panicked), and `n`
        // is 0 unless the pool holds the buffer, so as in `bytes_mut`; the metadata is a
        // separate allocation.
        let bytes = unsafe { std::slice::from_raw_parts_mut(r.buffer_ptr(bi), n) };
        PacketMut::new(&mut slot.meta, bytes)
    }

    /// The packet bytes of buffer `bi` (same as `packet(bi).data()`: the metadata's place
    /// cut to the buffer; empty for a buffer the pool does not hold).
    #[inline]
    pub fn data(&self, bi: u32) -> &[u8] {
        let bytes = self.bytes(bi);
        let (s, e) = window(&self.slots[bi as usize].meta, bytes.len());
        &bytes[s..e]
    }

    /// Mutable packet bytes of buffer `bi` (empty for a buffer the pool does not hold).
    #[inline]
    pub fn data_mut(&mut self, bi: u32) -> &mut [u8] {
        let m = self.slots[bi as usize].meta;
        let bytes = self.bytes_mut(bi);
        let (s, e) = window(&m, bytes.len());
        &mut bytes[s..e]
    }

    /// Prefetches the metadata line of buffer `bi`.
    #[inline(always)]
    pub fn prefetch_meta(&self, bi: u32) {
        let h = &self.hints;
        prefetch::prefetch_ptr(h.meta.wrapping_add(bi as usize * size_of::<Slot>()) as *const u8);
    }

    /// Prefetches the first data line of buffer `bi` at the default headroom, where the
    /// outer header of a received packet starts.
    #[inline(always)]
    pub fn prefetch_data(&self, bi: u32) {
        let h = &self.hints;
        prefetch::prefetch_ptr(h.data.wrapping_add(bi as usize * self.stride) as *const u8);
    }

    /// Prefetches metadata and first data line of buffer `bi`.
    #[inline(always)]
    pub fn prefetch(&self, bi: u32) {
        // No bounds test: a prefetch of an index outside the pool is useless but harmless
        // (it never faults), and this runs for every packet in every node.
        let (h, i) = (&self.hints, bi as usize);
        prefetch::prefetch_ptr(h.meta.wrapping_add(i * size_of::<Slot>()) as *const u8);
        prefetch::prefetch_ptr(h.data.wrapping_add(i * self.stride) as *const u8);
    }
}

impl BufferPool {
    /// Borrows the pool's packets for one pass over a vector: [`PacketsMut`] holds the
    /// addresses the fast path needs by value, so a loop over it keeps them in registers
    /// instead of reloading them from the pool for every packet.
    ///
    /// ```
    /// use pktvec_packet::{BufferPool, PoolConfig};
    /// let mut pool = BufferPool::new(PoolConfig::default())?;
    /// let bis = [pool.alloc_with(b"ab")?, pool.alloc_with(b"cd")?];
    /// let mut pk = pool.packets_mut();
    /// for &bi in &bis {
    ///     pk.prefetch(bi);
    ///     pk.packet_mut(bi).data_mut()[0] ^= 0x20;
    /// }
    /// assert_eq!(pool.data(bis[1]), b"Cd");
    /// # Ok::<(), pktvec_packet::PoolError>(())
    /// ```
    #[inline(always)]
    pub fn packets_mut(&mut self) -> PacketsMut<'_> {
        PacketsMut {
            slots: &mut self.slots,
            region: self.region.dup(),
            hints: self.hints,
            _bytes: std::marker::PhantomData,
        }
    }
}

/// The packets of a [`BufferPool`], mutably borrowed (see [`BufferPool::packets_mut`]):
/// the same accessors as the pool's, for the nodes' per-packet loops.
pub struct PacketsMut<'a> {
    slots: &'a mut [Slot],
    region: ExternalRegion,
    hints: PrefetchHints,
    _bytes: std::marker::PhantomData<&'a mut [u8]>,
}

impl PacketsMut<'_> {
    /// Write access to packet `bi`, as [`BufferPool::packet_mut`].
    ///
    /// # Panics
    /// If `bi` is not an index of the pool.
    #[inline(always)]
    pub fn packet_mut(&mut self, bi: u32) -> PacketMut<'_> {
        let r = &self.region;
        let slot = &mut self.slots[bi as usize];
        let n = slot.span();
        // SAFETY: `bi < slots.len() == count` (the index above would have panicked), so the
        // range is inside one buffer of the region, and empty unless the pool holds it (a
        // held buffer is valid and not overlapping another, per the region's contract,
        // which `BufferPool::new` keeps for its own arena); `self` mutably borrows the
        // whole pool for its lifetime and this `&mut self` makes the returned packet the
        // only reference into the buffers; the metadata is a separate allocation.
        let bytes = unsafe { std::slice::from_raw_parts_mut(r.buffer_ptr(bi), n) };
        PacketMut::new(&mut slot.meta, bytes)
    }

    /// True if every index of `bis` is a buffer index of the pool: one vectorised maximum
    /// per vector, after which a loop may reach each packet with
    /// [`packet_mut_unchecked`](Self::packet_mut_unchecked) instead of a test per packet.
    ///
    /// ```
    /// use pktvec_packet::{BufferPool, PoolConfig};
    /// let mut pool = BufferPool::new(PoolConfig { buffers: 4, ..PoolConfig::default() })?;
    /// let pk = pool.packets_mut();
    /// assert!(pk.all_in_range(&[0, 3, 1]));
    /// assert!(!pk.all_in_range(&[0, 4]));
    /// # Ok::<(), pktvec_packet::PoolError>(())
    /// ```
    #[inline(always)]
    pub fn all_in_range(&self, bis: &[u32]) -> bool {
        bis.is_empty() || (max_index(bis) as usize) < self.slots.len()
    }

    /// Write access to packet `bi`, as [`packet_mut`](Self::packet_mut), without the index
    /// test.
    ///
    /// # Safety
    /// `bi` must be a buffer index of the pool (e.g. checked for a whole vector with
    /// [`all_in_range`](Self::all_in_range)).
    ///
    /// ```
    /// use pktvec_packet::{BufferPool, PoolConfig};
    /// let mut pool = BufferPool::new(PoolConfig::default())?;
    /// let bi = pool.alloc_with(b"ab")?;
    /// let mut pk = pool.packets_mut();
    /// assert!(pk.all_in_range(&[bi]));
    /// // SAFETY: checked just above.
    /// let p = unsafe { pk.packet_mut_unchecked(bi) };
    /// assert_eq!(p.data(), b"ab");
    /// # Ok::<(), pktvec_packet::PoolError>(())
    /// ```
    // SAFETY: the index range is the caller's to prove (`all_in_range`, once a vector);
    // the rest is `packet_mut`'s argument, unchanged.
    #[inline(always)]
    pub unsafe fn packet_mut_unchecked(&mut self, bi: u32) -> PacketMut<'_> {
        debug_assert!((bi as usize) < self.slots.len());
        let r = &self.region;
        // SAFETY: the caller guarantees `bi < slots.len()`.
        let slot = unsafe { self.slots.get_unchecked_mut(bi as usize) };
        let n = slot.span();
        // SAFETY: as in `packet_mut`: `bi < slots.len() == count` (the caller's promise),
        // so the range is inside one buffer of the region, empty unless the pool holds it;
        // `&mut self` makes the returned packet the only reference into the buffers.
        let bytes = unsafe { std::slice::from_raw_parts_mut(r.buffer_ptr(bi), n) };
        PacketMut::new(&mut slot.meta, bytes)
    }

    /// Read access to packet `bi`, as [`BufferPool::packet`].
    ///
    /// # Panics
    /// If `bi` is not an index of the pool.
    #[inline(always)]
    pub fn packet(&self, bi: u32) -> Packet<'_> {
        let r = &self.region;
        let slot = &self.slots[bi as usize];
        let n = slot.span();
        // SAFETY: as in `packet_mut` (an empty range unless the pool holds the buffer);
        // `&self` keeps writers away while the packet lives.
        let bytes = unsafe { std::slice::from_raw_parts(r.buffer_ptr(bi), n) };
        Packet::new(&slot.meta, bytes)
    }

    /// Metadata of buffer `bi`, as [`BufferPool::meta`].
    #[inline(always)]
    pub fn meta(&self, bi: u32) -> &BufferMeta {
        &self.slots[bi as usize].meta
    }

    /// Metadata of buffer `bi`, as [`meta`](Self::meta), without the index test.
    ///
    /// # Safety
    /// `bi` must be a buffer index of the pool (e.g. checked for a whole vector with
    /// [`all_in_range`](Self::all_in_range)).
    ///
    /// ```
    /// use pktvec_packet::BufferPool;
    /// let mut pool = BufferPool::new(Default::default())?;
    /// let bi = pool.alloc_with(b"abc")?;
    /// let pk = pool.packets_mut();
    /// assert!(pk.all_in_range(&[bi]));
    /// // SAFETY: checked just above.
    /// assert_eq!(unsafe { pk.meta_unchecked(bi) }.len, 3);
    /// # Ok::<(), pktvec_packet::PoolError>(())
    /// ```
    // SAFETY: the index range is the caller's to prove (`all_in_range`, once a vector);
    // a shared borrow of a slot's metadata, as `meta` gives.
    #[inline(always)]
    pub unsafe fn meta_unchecked(&self, bi: u32) -> &BufferMeta {
        debug_assert!((bi as usize) < self.slots.len());
        // SAFETY: the caller guarantees `bi < slots.len()`.
        &unsafe { self.slots.get_unchecked(bi as usize) }.meta
    }

    /// Mutable metadata of buffer `bi`, as [`BufferPool::meta_mut`].
    #[inline(always)]
    pub fn meta_mut(&mut self, bi: u32) -> &mut BufferMeta {
        &mut self.slots[bi as usize].meta
    }

    /// Prefetches metadata and first data line of buffer `bi`, as [`BufferPool::prefetch`].
    #[inline(always)]
    pub fn prefetch(&self, bi: u32) {
        let (h, i) = (&self.hints, bi as usize);
        // The line's address from the slice the packet accessors index too, so that a loop
        // keeps one base register for both (`hints.meta` is the same address).
        prefetch::prefetch_ptr(self.slots.as_ptr().wrapping_add(i) as *const u8);
        prefetch::prefetch_ptr(h.data.wrapping_add(i * self.region.stride) as *const u8);
    }
}

impl Drop for BufferPool {
    /// Hands the local cache and every buffer still held (in a frame of the graph being
    /// dropped, or kept by a node) back to the backend (external memory): nothing can
    /// reach them after the pool is gone, so they would be lost to the backend otherwise.
    /// The backend's own drop then releases the memory.
    fn drop(&mut self) {
        if self.backend.is_some() {
            let held = (0..self.slots.len() as u32).filter(|&bi| self.slots[bi as usize].is_held());
            self.free.extend(held);
        }
        self.flush_cache();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The adoption tests play the driver themselves: a buffer they adopt is still on the
    // pool's free list or in its test backend, which `adopt`'s contract forbids because a
    // later allocation could hand it out a second time.
    fn adopt(p: &mut BufferPool, bi: u32) -> bool {
        // SAFETY: no test allocates a buffer it adopted before freeing it, and only the
        // test's thread touches the memory, so no buffer gets two holders.
        unsafe { p.adopt(bi) }
    }
    fn adopt_as(p: &mut BufferPool, bi: u32, off: u16, len: u16, rx_if: u16) -> bool {
        // SAFETY: as in `adopt` above.
        unsafe { p.adopt_as(bi, off, len, rx_if) }
    }
    fn adopt_bulk<T>(
        p: &mut BufferPool,
        bis: &mut [u32],
        descs: &[T],
        rx_if: u16,
        place: impl FnMut(&T) -> (u16, u16),
    ) -> usize {
        // SAFETY: as in `adopt` above.
        unsafe { p.adopt_bulk_as(bis, descs, rx_if, place) }
    }

    fn small(n: u32) -> BufferPool {
        BufferPool::new(PoolConfig {
            buffers: n,
            ..PoolConfig::default()
        })
        .unwrap()
    }

    /// The prefetch addresses are those of each buffer's metadata and of its first byte at
    /// the default headroom (a wrong address would not fail anything else, only be slow).
    #[test]
    fn prefetch_hints_are_the_buffers_addresses() {
        let mut p = small(37);
        let mut bis = Vec::new();
        while let Some(bi) = p.alloc() {
            bis.push(bi);
        }
        for &bi in &bis {
            let h = p.hints;
            let meta = p.meta(bi) as *const BufferMeta as usize;
            assert_eq!(h.meta + bi as usize * size_of::<Slot>(), meta);
            let data = p.bytes(bi).as_ptr() as usize + p.headroom as usize;
            assert_eq!(h.data + bi as usize * p.stride, data);
            assert_eq!(p.packet(bi).data().as_ptr() as usize, data);
            p.prefetch(bi);
        }
        // Out of range: no effect, no panic.
        p.prefetch(37);
        p.prefetch_meta(u32::MAX);
        p.prefetch_data(u32::MAX);
        assert_eq!(p.in_use(), 37);
    }

    #[test]
    fn bad_configs_are_errors() {
        for cfg in [
            PoolConfig {
                buffers: 0,
                ..PoolConfig::default()
            },
            PoolConfig {
                data_room: 0,
                ..PoolConfig::default()
            },
            PoolConfig {
                headroom: 60000,
                data_room: 10000,
                ..PoolConfig::default()
            },
        ] {
            assert!(matches!(BufferPool::new(cfg), Err(PoolError::BadConfig(_))));
        }
    }

    #[test]
    fn exhaustion_returns_fewer_and_counts() {
        let mut p = small(10);
        let mut a = [0u32; 7];
        assert_eq!(p.alloc_bulk(&mut a), 7);
        let mut b = [0u32; 7];
        assert_eq!(p.alloc_bulk(&mut b), 3);
        assert_eq!(p.alloc(), None);
        assert!(p.alloc_bulk_exact(&mut [0u32; 1]).is_err());
        assert_eq!(p.alloc_failures(), 3);
        let mut all: Vec<u32> = a.iter().chain(&b[..3]).copied().collect();
        all.sort_unstable();
        assert_eq!(
            all,
            (0..10).collect::<Vec<_>>(),
            "each buffer handed out once"
        );
        assert_eq!(p.free_bulk(&a), 7);
        assert_eq!(p.free_bulk(&b[..3]), 3);
        assert_eq!(p.free_count(), 10);
    }

    #[test]
    fn double_free_is_refused() {
        let mut p = small(4);
        let bi = p.alloc().unwrap();
        assert!(p.free(bi));
        assert!(!p.free(bi));
        assert_eq!(p.double_frees(), 1);
        assert_eq!(p.free_count(), 4);
        assert!(!p.is_allocated(bi));
        assert!(!p.is_allocated(99));
        // In bulk: a buffer twice in one call, and one already free.
        let x = p.alloc().unwrap();
        let y = p.alloc().unwrap();
        assert_eq!(p.free_bulk(&[x, y, x, bi]), 2);
        assert_eq!(p.double_frees(), 3);
        assert_eq!((p.in_use(), p.free_count()), (0, 4));
    }

    #[test]
    fn buffers_are_disjoint_and_aligned() {
        let mut p = small(8);
        let mut idx = [0u32; 8];
        p.alloc_bulk_exact(&mut idx).unwrap();
        for (k, &bi) in idx.iter().enumerate() {
            p.packet_mut(bi).append(2048).unwrap().fill(k as u8);
        }
        for (k, &bi) in idx.iter().enumerate() {
            assert!(p.data(bi).iter().all(|&x| x == k as u8));
            assert_eq!(
                p.data(bi).as_ptr() as usize % 64,
                0,
                "data start is line aligned"
            );
            assert_eq!(p.meta(bi).data_offset, DEFAULT_HEADROOM);
        }
        assert_eq!(p.memory_bytes(), 8 * 64 + 8 * (128 + 2048));
    }

    #[test]
    fn alloc_resets_metadata() {
        let mut p = small(1);
        let bi = p.alloc_with(b"hello").unwrap();
        p.meta_mut(bi).error = 7;
        p.meta_mut(bi).user[0] = 9;
        p.free(bi);
        let bi2 = p.alloc().unwrap();
        assert_eq!(bi, bi2);
        assert_eq!(p.meta(bi2).error, 0);
        assert_eq!(p.meta(bi2).user[0], 0);
        assert_eq!(p.meta(bi2).len, 0);
        assert!(matches!(
            p.alloc_with(&[0; 4000]),
            Err(PoolError::TooLong { .. })
        ));
    }

    #[test]
    fn clone_packet_copies_bytes_and_metadata() {
        let mut p = small(3);
        let a = p.alloc_with(b"abcdef").unwrap();
        p.packet_mut(a).advance(2).unwrap();
        p.meta_mut(a).rx_if = 4;
        let b = p.clone_packet(a).unwrap();
        assert_ne!(a, b);
        assert_eq!(p.data(b), b"cdef");
        assert_eq!(p.meta(b).rx_if, 4);
        p.data_mut(b)[0] = b'X';
        assert_eq!(p.data(a), b"cdef", "the copy is independent");
        let _c = p.alloc().unwrap();
        assert_eq!(p.clone_packet(a), None, "empty pool");
    }

    #[test]
    fn corrupt_meta_never_panics_on_data() {
        let mut p = small(2);
        let bi = p.alloc().unwrap();
        p.meta_mut(bi).data_offset = 60000;
        p.meta_mut(bi).len = 9000;
        assert!(p.data(bi).is_empty());
        assert!(p.data_mut(bi).is_empty());
        p.prefetch(bi);
        p.prefetch(1_000_000);
    }

    /// Runs `f` on an owned pool of 8 buffers and on one over external memory (8 of 256
    /// bytes), telling it which.
    fn on_both_arenas(mut f: impl FnMut(&mut BufferPool, bool)) {
        f(&mut small(8), false);
        let mut mem = vec![Line([0; CACHE_LINE]); 8 * 4];
        f(&mut external(&mut mem, 8, 256), true);
    }

    /// An index out of range in a free or a release is refused and counted like a double
    /// free: no panic half way, nothing added to the free list, every buffer still handed
    /// out once.
    #[test]
    fn free_of_an_index_out_of_range_is_refused_whole() {
        on_both_arenas(|p, over_external| {
            let a = p.alloc().unwrap();
            assert_eq!(p.free_bulk(&[a, 99, u32::MAX, a]), 1);
            assert_eq!((p.double_frees(), p.in_use()), (3, 0));
            let mut all = [0u32; 9];
            assert_eq!(p.alloc_bulk(&mut all), 8, "external {over_external}");
            let mut seen = all[..8].to_vec();
            seen.sort_unstable();
            assert_eq!(seen, (0..8).collect::<Vec<u32>>(), "each buffer once");
            assert_eq!(p.free_bulk(&all[..8]), 8);
            assert!(!p.release(99) && p.release_data(u32::MAX).is_none());
            assert_eq!(p.double_frees(), 5);
        });
    }

    /// A `place` closure that panics half way through a bulk adoption leaves the in-use
    /// count too high (the buffers it did not reach), never too low: freeing what was
    /// adopted cannot underflow it.
    #[test]
    fn a_panicking_place_leaves_the_in_use_count_high_not_low() {
        let mut p = small(8);
        let mut bis = [2u32, 3, 4, 5];
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            adopt_bulk(&mut p, &mut bis, &[0u16, 1, 2, 3], 0, |&k| {
                assert!(k < 2, "a user's closure fails");
                (64, 10)
            })
        }));
        assert!(r.is_err());
        assert!(p.is_allocated(2) && p.is_allocated(3) && !p.is_allocated(4));
        assert_eq!(p.in_use(), 4);
        assert_eq!(p.free_bulk(&[2, 3]), 2);
        assert_eq!(
            p.in_use(),
            2,
            "the two never reached stay counted: a visible leak"
        );
    }

    /// Dropping an external pool gives the backend every buffer back, held ones included
    /// (a graph dropped with packets in its frames, a node that kept buffers).
    #[test]
    fn dropping_an_external_pool_returns_held_buffers() {
        struct Shared(std::sync::Arc<std::sync::Mutex<Vec<u32>>>);
        impl BufferBackend for Shared {
            fn alloc_bulk(&mut self, out: &mut [u32]) -> usize {
                let mut f = self.0.lock().unwrap();
                let n = out.len().min(f.len());
                for o in &mut out[..n] {
                    *o = f.pop().unwrap();
                }
                n
            }
            fn free_bulk(&mut self, bis: &[u32]) {
                self.0.lock().unwrap().extend_from_slice(bis)
            }
            fn available(&self) -> usize {
                self.0.lock().unwrap().len()
            }
        }
        let mut mem = vec![Line([0; CACHE_LINE]); 16 * 4];
        let free = std::sync::Arc::new(std::sync::Mutex::new((0..16).collect::<Vec<u32>>()));
        let base =
            std::ptr::NonNull::new(bytemuck::cast_slice_mut::<Line, u8>(&mut mem).as_mut_ptr());
        // SAFETY: `mem` outlives the pool and only the pool touches it.
        let region = unsafe { ExternalRegion::new(base.unwrap(), 256, 16, 192, 64) }.unwrap();
        let mut p = BufferPool::with_external(region, Box::new(Shared(free.clone()))).unwrap();
        let mut held = [0u32; 5];
        assert_eq!(p.alloc_bulk(&mut held), 5);
        drop(p);
        let mut back = free.lock().unwrap().clone();
        back.sort_unstable();
        assert_eq!(back, (0..16).collect::<Vec<u32>>());
    }

    /// A backend over a Vec free list, counting its calls.
    struct VecBackend {
        free: Vec<u32>,
        calls: usize,
    }
    impl BufferBackend for VecBackend {
        fn alloc_bulk(&mut self, out: &mut [u32]) -> usize {
            self.calls += 1;
            let n = out.len().min(self.free.len());
            for o in &mut out[..n] {
                *o = self.free.pop().unwrap();
            }
            n
        }
        fn free_bulk(&mut self, bis: &[u32]) {
            self.calls += 1;
            self.free.extend_from_slice(bis);
        }
        fn available(&self) -> usize {
            self.free.len()
        }
    }

    fn external(mem: &mut [Line], count: u32, stride: usize) -> BufferPool {
        let base =
            std::ptr::NonNull::new(bytemuck::cast_slice_mut::<Line, u8>(mem).as_mut_ptr()).unwrap();
        // SAFETY: `mem` outlives the pool in every test below and only the pool touches it.
        let region = unsafe { ExternalRegion::new(base, stride, count, 192, 64) }.unwrap();
        let backend = VecBackend {
            free: (0..count).rev().collect(),
            calls: 0,
        };
        BufferPool::with_external(region, Box::new(backend)).unwrap()
    }

    /// `packets_mut` reaches the same bytes and metadata as the pool's own accessors, for
    /// both arenas, and refuses an index outside the pool.
    #[test]
    fn packets_mut_is_the_pools_view() {
        let mut mem = vec![Line([0; 64]); 4 * 8];
        let mut pools = [small(8), external(&mut mem, 8, 256)];
        for pool in &mut pools {
            let bis: Vec<u32> = (0..8)
                .map(|i| pool.alloc_with(&[i as u8; 9]).unwrap())
                .collect();
            let mut pk = pool.packets_mut();
            for &bi in &bis {
                pk.prefetch(bi);
                pk.packet_mut(bi).data_mut()[0] = 0xee;
                pk.meta_mut(bi).opaque = bi + 100;
                assert_eq!(pk.packet(bi).len(), 9);
                assert_eq!(pk.meta(bi).opaque, bi + 100);
            }
            pk.prefetch(u32::MAX); // out of range: a useless hint, no fault
            for (i, &bi) in bis.iter().enumerate() {
                let mut want = [i as u8; 9];
                want[0] = 0xee;
                assert_eq!(pool.data(bi), want);
                assert_eq!(pool.meta(bi).opaque, bi + 100);
            }
            let mut pk = pool.packets_mut();
            let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                pk.packet_mut(8);
            }));
            assert!(out.is_err());
        }
    }

    #[test]
    fn external_region_checks_its_shape() {
        let mut mem = vec![Line([0; 64]); 4];
        let base = std::ptr::NonNull::new(mem.as_mut_ptr().cast::<u8>()).unwrap();
        // SAFETY: only the shape checks run; no pool is built.
        unsafe {
            assert!(ExternalRegion::new(base, 64, 0, 64, 0).is_err());
            assert!(ExternalRegion::new(base, 32, 2, 64, 0).is_err());
            assert!(ExternalRegion::new(base, 64, 2, 64, 64).is_err());
            assert!(ExternalRegion::new(base, usize::MAX / 2, 4, 64, 0).is_err());
            assert!(ExternalRegion::new(base, 64, 4, 64, 16).is_ok());
        }
    }

    #[test]
    fn external_pool_allocates_through_its_cache_and_backend() {
        // 2000 buffers of 192 bytes (64 headroom), 256 bytes apart: the gap stands for the
        // rte_mbuf header between DPDK buffers and must never be written.
        let count = 2000u32;
        let mut mem = vec![Line([0xEE; 64]); count as usize * 4];
        {
            let mut p = external(&mut mem, count, 256);
            assert!(p.is_external());
            assert_eq!(p.free_count(), 2000);
            let mut idx = vec![0u32; 1500];
            assert_eq!(p.alloc_bulk(&mut idx), 1500);
            assert_eq!(p.in_use(), 1500);
            for (k, &bi) in idx.iter().enumerate() {
                p.packet_mut(bi).append(128).unwrap().fill(k as u8);
                assert_eq!(p.meta(bi).data_offset, 64);
            }
            for (k, &bi) in idx.iter().enumerate() {
                assert!(p.data(bi).iter().all(|&x| x == k as u8));
            }
            let c = p.clone_packet(idx[7]).unwrap();
            assert_eq!(p.data(c), p.data(idx[7]));
            assert_eq!(p.free_bulk(&idx), 1500);
            assert!(p.free(c));
            assert!(!p.free(c), "double free refused");
            assert_eq!(p.double_frees(), 1);
            assert_eq!(p.in_use(), 0);
            assert_eq!(p.free_count(), 2000);
            assert!(
                p.free.len() <= EXTERNAL_CACHE,
                "the cache spills to the backend"
            );
            // Exhaustion: fewer buffers, counted, no panic.
            let mut all = vec![0u32; 2100];
            assert_eq!(p.alloc_bulk(&mut all), 2000);
            assert_eq!(p.alloc(), None);
            assert_eq!(p.free_bulk(&all[..2000]), 2000);
        }
        // The gaps between buffers were never written.
        for b in 0..count as usize {
            assert!(
                mem[b * 4 + 3].0.iter().all(|&x| x == 0xEE),
                "gap of buffer {b}"
            );
        }
    }

    #[test]
    fn external_pool_adopts_and_releases_driver_buffers() {
        let mut mem = vec![Line([0; 64]); 16 * 4];
        let mut p = external(&mut mem, 16, 256);
        // A "driver" takes buffers 3 and 9 from the backend and fills them.
        assert!(adopt(&mut p, 3));
        assert!(adopt(&mut p, 9));
        assert!(!adopt(&mut p, 9), "already in use");
        assert!(!adopt(&mut p, 16), "out of range");
        assert_eq!(p.bad_adopts(), 2);
        p.packet_mut(3).append(4).unwrap().copy_from_slice(b"abcd");
        assert_eq!(p.in_use(), 2);
        // 3 leaves for transmission, 9 is dropped.
        assert!(p.release(3));
        assert!(!p.release(3));
        assert!(adopt_as(&mut p, 5, 100, 60, 2));
        assert_eq!(
            (p.meta(5).data_offset, p.meta(5).len, p.meta(5).rx_if),
            (100, 60, 2)
        );
        assert!(!adopt_as(&mut p, 5, 0, 0, 0));
        assert_eq!(p.release_data(5), Some((100, 60)));
        assert_eq!(p.release_data(5), None);
        assert!(p.free(9));
        assert_eq!(p.in_use(), 0);
    }

    /// The bulk fast paths (one range check per burst, unchecked metadata access) hand
    /// over to the checked loop at the first buffer they cannot take, wherever it is in
    /// the burst, and the result is what one-by-one adoption or release would give.
    #[test]
    fn bulk_fast_paths_hand_over_mid_burst() {
        // Both line writers: SSE2 and, where the CPU has it, AVX2.
        for avx2 in [false, has_avx2()] {
            bulk_fast_paths_hand_over_mid_burst_on(avx2);
        }
    }

    fn bulk_fast_paths_hand_over_mid_burst_on(avx2: bool) {
        let mut mem = vec![Line([0; 64]); 64 * 4];
        let mut p = external(&mut mem, 64, 256);
        p.avx2 = avx2;
        for at in 0..9usize {
            // A burst of 9 buffers, all in range; the one at `at` is already in use.
            let mut bis: Vec<u32> = (10..19).collect();
            assert!(adopt(&mut p, bis[at]));
            let descs: Vec<(u16, u16)> = (0..9).map(|i| (100 + i, 60 + i)).collect();
            let k = adopt_bulk(&mut p, &mut bis, &descs, 2, |&d| d);
            let want: Vec<u32> = (10..19).filter(|&b| b != 10 + at as u32).collect();
            assert_eq!(&bis[..k], &want[..], "in use at {at}");
            for (i, bi) in (10..19u32).enumerate().filter(|&(i, _)| i != at) {
                let m = p.meta(bi);
                assert_eq!(
                    (m.data_offset, m.len, m.rx_if),
                    (descs[i].0, descs[i].1, 2),
                    "buffer {bi}"
                );
                assert_eq!(m.flags, MetaFlags::default());
            }
            assert_eq!(p.in_use(), 9);
            // Release them with the one at `at` twice (its second copy at the end, and
            // one more copy right after the first): the later copies become holes.
            let mut rel: Vec<u32> = (10..19).collect();
            rel.insert(at + 1, 10 + at as u32);
            rel.push(10 + at as u32);
            let mut out = vec![0u32; rel.len()];
            let n = p.release_bulk_map(&rel, &mut out, u32::MAX, |bi, m| bi * 1000 + m.len as u32);
            assert_eq!(n, 9);
            for (i, (&bi, &o)) in rel.iter().zip(&out).enumerate() {
                let hole = bi == 10 + at as u32 && i > at;
                assert_eq!(o == u32::MAX, hole, "slot {i} of {rel:?}");
            }
            assert_eq!(p.in_use(), 0);
        }
        assert_eq!((p.bad_adopts(), p.double_frees()), (9, 18));
        // A duplicate inside one burst, all in range, is caught by the fast path's test.
        let mut bis = [3u32, 4, 3, 5];
        let k = adopt_bulk(&mut p, &mut bis, &[(1u16, 2u16); 4], 0, |&d| d);
        assert_eq!(&bis[..k], &[3, 4, 5]);
        assert_eq!(p.bad_adopts(), 10);
        assert_eq!(p.free_bulk(&bis[..k]), 3);
    }

    /// The in-range variant (the caller checked the range) refuses and counts what the
    /// checked one does among in-range buffers, and writes the same lines.
    #[test]
    fn bulk_adopt_in_range_matches_the_checked_one() {
        let mut mem = vec![Line([0; 64]); 32 * 4];
        let mut p = external(&mut mem, 32, 256);
        assert!(adopt(&mut p, 6));
        let mut bis = [5u32, 6, 7, 31, 0, 6];
        let descs: Vec<(u16, u16)> = (0..6).map(|i| (100 + i, 60 + i)).collect();
        // SAFETY: the test's pool over leaked memory has no driver; every index is below
        // its capacity (32).
        let k = unsafe { p.adopt_bulk_in_range_as(&mut bis, &descs, 4, |&d| d) };
        assert_eq!(&bis[..k], &[5, 7, 31, 0]);
        assert_eq!((p.bad_adopts(), p.in_use()), (2, 5));
        for (bi, i) in [(5u32, 0u16), (7, 2), (31, 3), (0, 4)] {
            let want = BufferMeta {
                data_offset: 100 + i,
                len: 60 + i,
                rx_if: 4,
                ..BufferMeta::default()
            };
            assert_eq!(*p.meta(bi), want, "buffer {bi}");
        }
    }

    #[test]
    fn bulk_adopt_resets_the_whole_line_and_bulk_release_marks_free() {
        // Both line writers: SSE2 and, where the CPU has it, AVX2.
        for avx2 in [false, has_avx2()] {
            bulk_adopt_resets_the_whole_line_and_bulk_release_marks_free_on(avx2);
        }
    }

    fn bulk_adopt_resets_the_whole_line_and_bulk_release_marks_free_on(avx2: bool) {
        let mut mem = vec![Line([0; 64]); 16 * 4];
        let mut p = external(&mut mem, 16, 256);
        p.avx2 = avx2;
        // Dirty a line through a full adopt/edit/release cycle first.
        assert!(adopt_as(&mut p, 4, 100, 10, 1));
        {
            let m = p.meta_mut(4);
            m.flags.insert(MetaFlags::L3_VALID);
            m.tx_if = 7;
            m.opaque = 99;
            m.user = [0xAA; crate::meta::META_USER_BYTES];
        }
        assert!(p.release(4));
        let mut bis = [4u32, 7, 4, 40];
        let descs = [(128u16, 60u16), (130, 61), (132, 62), (134, 63)];
        let k = adopt_bulk(&mut p, &mut bis, &descs, 3, |&(o, l)| (o, l));
        assert_eq!(&bis[..k], &[4, 7]);
        assert_eq!(p.bad_adopts(), 2); // 4 again (in use by then) and 40 (no buffer)
        for (bi, (o, l)) in [(4u32, (128u16, 60u16)), (7, (130, 61))] {
            let want = BufferMeta {
                data_offset: o,
                len: l,
                rx_if: 3,
                ..BufferMeta::default()
            };
            assert_eq!(*p.meta(bi), want, "buffer {bi}");
        }
        assert_eq!(p.in_use(), 2);
        let mut out = [0u64; 3];
        let n = p.release_bulk_map(&[7, 4, 7], &mut out, 0, |bi, m| {
            bi as u64 * 1000 + m.len as u64
        });
        assert_eq!((n, out), (2, [7061, 4060, 0]));
        assert!(!p.is_allocated(4));
        assert_eq!((p.in_use(), p.double_frees()), (0, 1));
    }

    /// Whatever a node writes into a buffer's metadata, the pool's own mark says whether
    /// it holds the buffer: a freed buffer whose metadata was overwritten (with a copy of a
    /// held buffer's, flags and all) shows no bytes and is still refused by free and
    /// release; a held one is refused by adopt and taken back once.
    #[test]
    fn the_held_mark_is_out_of_reach_of_metadata_writes() {
        on_both_arenas(|p, over_external| {
            let a = p.alloc_with(b"held").unwrap();
            let b = p.alloc_with(b"freed").unwrap();
            assert!(p.free(b));
            // A buggy node keeps `b` and makes its metadata look like a live packet's.
            *p.meta_mut(b) = *p.meta(a);
            p.meta_mut(b).flags = MetaFlags(u16::MAX);
            assert!(!p.is_allocated(b));
            // Its bytes are out of reach whatever its metadata says (over external memory
            // they may be a driver's by now): every view is empty, nothing can be added.
            assert!(p.data(b).is_empty() && p.data_mut(b).is_empty());
            assert!(p.packet(b).data().is_empty() && p.packet(b).headroom() == 0);
            assert!(p.packet_mut(b).append(1).is_err() && p.packet_mut(b).prepend(1).is_err());
            assert!(p.packets_mut().packet_mut(b).data_mut().is_empty());
            assert!(p.packets_mut().packet(b).data().is_empty());
            assert_eq!(
                p.clone_packet(b),
                None,
                "no copy of a buffer the pool gave back"
            );
            assert_eq!(p.data(a), b"held");
            assert!(!p.free(b) && !p.release(b) && p.release_data(b).is_none());
            let mut out = [0u32; 2];
            assert_eq!(
                p.release_bulk_map(&[b, a], &mut out, u32::MAX, |bi, _| bi),
                1
            );
            assert_eq!(out, [u32::MAX, a], "external {over_external}");
            assert_eq!((p.double_frees(), p.in_use()), (4, 0));
            // Adopting is the other way round: a held buffer is refused, a free one taken.
            assert!(adopt(p, a));
            *p.meta_mut(a) = BufferMeta::default();
            assert!(!adopt(p, a) && p.is_allocated(a));
            assert!(p.free(a));
        });
    }
}
