//! The buffer pool: fixed-size packet buffers addressed by `u32` index.
//!
//! All memory is allocated once, when the pool is created: an array of
//! [`BufferMeta`] (one cache line each) and a 64-byte-aligned arena of
//! `headroom + data_room` bytes per buffer (rounded up to whole cache lines).
//! Allocation and free move indices on a LIFO free list (recently freed buffers are
//! likely still in cache), in bulk, without locks or system calls.
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

use crate::meta::{BufferMeta, MetaFlags};
use crate::packet::{Packet, PacketMut};
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
    meta: Vec<BufferMeta>,
    arena: Vec<Line>,
    stride: usize,
    headroom: u16,
    buf_size: u16,
    free: Vec<u32>,
    double_frees: u64,
    alloc_failures: u64,
}

impl std::fmt::Debug for BufferPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BufferPool")
            .field("buffers", &self.meta.len())
            .field("free", &self.free.len())
            .field("headroom", &self.headroom)
            .field("buf_size", &self.buf_size)
            .finish()
    }
}

impl BufferPool {
    /// Allocates all buffers of the pool; they start free.
    pub fn new(cfg: PoolConfig) -> Result<Self, PoolError> {
        if cfg.buffers == 0 {
            return Err(PoolError::BadConfig("buffers must be at least 1"));
        }
        if cfg.buffers == u32::MAX {
            return Err(PoolError::BadConfig("buffers must be below u32::MAX"));
        }
        if cfg.data_room == 0 {
            return Err(PoolError::BadConfig("data_room must be at least 1"));
        }
        let buf_size = cfg
            .headroom
            .checked_add(cfg.data_room)
            .ok_or(PoolError::BadConfig("headroom + data_room must be < 65536"))?;
        let stride_lines = (buf_size as usize).div_ceil(CACHE_LINE);
        let n = cfg.buffers as usize;
        let meta = vec![
            BufferMeta {
                flags: MetaFlags::FREE,
                ..BufferMeta::default()
            };
            n
        ];
        let arena = vec![Line([0; CACHE_LINE]); n * stride_lines];
        // LIFO free list: index 0 is handed out first.
        let free: Vec<u32> = (0..cfg.buffers).rev().collect();
        Ok(BufferPool {
            meta,
            arena,
            stride: stride_lines * CACHE_LINE,
            headroom: cfg.headroom,
            buf_size,
            free,
            double_frees: 0,
            alloc_failures: 0,
        })
    }

    /// Total number of buffers.
    #[inline]
    pub fn capacity(&self) -> usize {
        self.meta.len()
    }
    /// Number of free buffers.
    #[inline]
    pub fn free_count(&self) -> usize {
        self.free.len()
    }
    /// Number of buffers handed out and not yet freed.
    #[inline]
    pub fn in_use(&self) -> usize {
        self.meta.len() - self.free.len()
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
        self.meta.len() * std::mem::size_of::<BufferMeta>() + self.arena.len() * CACHE_LINE
    }

    #[inline]
    fn reset(&mut self, bi: u32) {
        self.meta[bi as usize] = BufferMeta {
            data_offset: self.headroom,
            ..BufferMeta::default()
        };
    }

    /// Allocates one buffer, or `None` if the pool is empty.
    #[inline]
    pub fn alloc(&mut self) -> Option<u32> {
        match self.free.pop() {
            Some(bi) => {
                self.reset(bi);
                Some(bi)
            }
            None => {
                self.alloc_failures += 1;
                None
            }
        }
    }

    /// Allocates up to `out.len()` buffers into `out` and returns how many it got
    /// (fewer when the pool runs low, never a panic).
    #[inline]
    pub fn alloc_bulk(&mut self, out: &mut [u32]) -> usize {
        let n = out.len().min(self.free.len());
        if n < out.len() {
            self.alloc_failures += 1;
        }
        let start = self.free.len() - n;
        for (slot, i) in out[..n].iter_mut().zip(start..) {
            *slot = self.free[i];
        }
        self.free.truncate(start);
        for &bi in &out[..n] {
            self.reset(bi);
        }
        n
    }

    /// Allocates exactly `out.len()` buffers, or none and an error (like
    /// `rte_pktmbuf_alloc_bulk`).
    pub fn alloc_bulk_exact(&mut self, out: &mut [u32]) -> Result<(), PoolError> {
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
    /// the metadata, except for flags the pool owns). `None` if the pool is empty. For
    /// replication (flooding, mirroring).
    pub fn clone_packet(&mut self, bi: u32) -> Option<u32> {
        let new = self.alloc()?;
        let m = self.meta[bi as usize];
        let src = bi as usize * self.stride;
        let dst = new as usize * self.stride;
        let size = self.buf_size as usize;
        bytemuck::cast_slice_mut::<Line, u8>(&mut self.arena).copy_within(src..src + size, dst);
        let mut flags = m.flags;
        flags.remove(MetaFlags::FREE);
        flags.remove(MetaFlags::TRACED);
        self.meta[new as usize] = BufferMeta { flags, ..m };
        Some(new)
    }

    /// Returns one buffer to the pool. Returns false (and counts a double free) if it was
    /// already free.
    #[inline]
    pub fn free(&mut self, bi: u32) -> bool {
        let m = &mut self.meta[bi as usize];
        if m.flags.contains(MetaFlags::FREE) {
            self.double_frees += 1;
            return false;
        }
        m.flags = MetaFlags::FREE;
        self.free.push(bi);
        true
    }

    /// Returns buffers to the pool; returns how many were freed (already-free buffers are
    /// refused and counted in [`double_frees`](Self::double_frees)).
    #[inline]
    pub fn free_bulk(&mut self, bis: &[u32]) -> usize {
        let mut n = 0;
        for &bi in bis {
            n += self.free(bi) as usize;
        }
        n
    }

    /// True if `bi` is a buffer of this pool that is currently allocated.
    #[inline]
    pub fn is_allocated(&self, bi: u32) -> bool {
        self.meta
            .get(bi as usize)
            .is_some_and(|m| !m.flags.contains(MetaFlags::FREE))
    }

    #[inline]
    fn bytes(&self, bi: u32) -> &[u8] {
        let start = bi as usize * self.stride;
        &bytemuck::cast_slice::<Line, u8>(&self.arena)[start..start + self.buf_size as usize]
    }

    #[inline]
    fn bytes_mut(&mut self, bi: u32) -> &mut [u8] {
        let start = bi as usize * self.stride;
        let size = self.buf_size as usize;
        &mut bytemuck::cast_slice_mut::<Line, u8>(&mut self.arena)[start..start + size]
    }

    /// Metadata of buffer `bi`.
    ///
    /// # Panics
    /// If `bi` is not an index of this pool (a bug, not a packet error).
    #[inline]
    pub fn meta(&self, bi: u32) -> &BufferMeta {
        &self.meta[bi as usize]
    }

    /// Mutable metadata of buffer `bi`.
    #[inline]
    pub fn meta_mut(&mut self, bi: u32) -> &mut BufferMeta {
        &mut self.meta[bi as usize]
    }

    /// Read access to packet `bi` (metadata and data).
    #[inline]
    pub fn packet(&self, bi: u32) -> Packet<'_> {
        Packet::new(&self.meta[bi as usize], self.bytes(bi))
    }

    /// Write access to packet `bi` (metadata and data).
    #[inline]
    pub fn packet_mut(&mut self, bi: u32) -> PacketMut<'_> {
        let start = bi as usize * self.stride;
        let size = self.buf_size as usize;
        let bytes = &mut bytemuck::cast_slice_mut::<Line, u8>(&mut self.arena)[start..start + size];
        PacketMut::new(&mut self.meta[bi as usize], bytes)
    }

    /// The packet bytes of buffer `bi` (same as `packet(bi).data()`).
    #[inline]
    pub fn data(&self, bi: u32) -> &[u8] {
        let m = &self.meta[bi as usize];
        let start = m.data_offset as usize;
        self.bytes(bi)
            .get(start..start + m.len as usize)
            .unwrap_or_default()
    }

    /// Mutable packet bytes of buffer `bi`.
    #[inline]
    pub fn data_mut(&mut self, bi: u32) -> &mut [u8] {
        let m = self.meta[bi as usize];
        let start = m.data_offset as usize;
        self.bytes_mut(bi)
            .get_mut(start..start + m.len as usize)
            .unwrap_or_default()
    }

    /// Prefetches the metadata line of buffer `bi`.
    #[inline(always)]
    pub fn prefetch_meta(&self, bi: u32) {
        if let Some(m) = self.meta.get(bi as usize) {
            prefetch::prefetch_read(m);
        }
    }

    /// Prefetches the first data line of buffer `bi` at the default headroom, where the
    /// outer header of a received packet starts.
    #[inline(always)]
    pub fn prefetch_data(&self, bi: u32) {
        let line = (bi as usize * self.stride + self.headroom as usize) / CACHE_LINE;
        if let Some(l) = self.arena.get(line) {
            prefetch::prefetch_read(l);
        }
    }

    /// Prefetches metadata and first data line of buffer `bi`.
    #[inline(always)]
    pub fn prefetch(&self, bi: u32) {
        self.prefetch_meta(bi);
        self.prefetch_data(bi);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small(n: u32) -> BufferPool {
        BufferPool::new(PoolConfig {
            buffers: n,
            ..PoolConfig::default()
        })
        .unwrap()
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
}
