//! A buffer arena shared by several workers, in VPP's model: one set of buffers, a global
//! free list, and per-worker [`BufferPool`]s whose local caches are refilled from it and
//! spilled back to it in bulk, so that any worker may free any buffer.
//!
//! * **Memory.** The arena allocates the packet bytes of all its buffers once (64-byte
//!   aligned, `headroom + data_room` bytes each, rounded up to whole lines). Each worker's
//!   pool ([`SharedArena::pool`]) lays its own metadata lines over them
//!   ([`BufferPool::with_external`]): a buffer's bytes are shared, its metadata line is the
//!   holding worker's.
//! * **Free list.** The arena's free list is a vector behind a mutex, touched only by a
//!   pool's refill (half its [`EXTERNAL_CACHE`](crate::pool::EXTERNAL_CACHE) local cache at a time) and spill (above
//!   it): one lock per hundreds of buffers, never one per packet. Each pool counts its own
//!   exhaustion ([`BufferPool::alloc_failures`]).
//! * **Moving a packet between workers.** [`SharedArena::hand_off`] releases a buffer from
//!   the sending worker's pool and posts its metadata in the arena's mailbox line for that
//!   buffer; the index then travels to the receiving worker (a handoff ring), whose
//!   [`SharedArena::take_over`] adopts it into its own pool with that metadata. A buffer is
//!   held by at most one pool at a time: it leaves the arena's free list for one pool's
//!   cache, and a pool hands it to another only after releasing it.
//!
//! ```
//! use pktvec_packet::arena::SharedArena;
//! use pktvec_packet::PoolConfig;
//!
//! let arena = SharedArena::new(PoolConfig { buffers: 4096, ..PoolConfig::default() })?;
//! let (mut a, mut b) = (arena.pool(), arena.pool());
//! let bi = a.alloc_with(b"hello")?;
//! assert!(arena.hand_off(&mut a, bi)); // worker A lets the packet go ...
//! // ... the index crosses to worker B (through a handoff ring in pktvec-workers) ...
//! // SAFETY: `bi` was handed off just above and is taken over once.
//! assert!(unsafe { arena.take_over(&mut b, bi) });
//! assert_eq!(b.data(bi), b"hello");
//! b.free(bi); // B frees a buffer A allocated
//! drop((a, b)); // each pool returns its local cache
//! assert_eq!(arena.available(), 4096);
//! # Ok::<(), pktvec_packet::PoolError>(())
//! ```

use std::cell::UnsafeCell;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::meta::BufferMeta;
use crate::pool::{BufferBackend, BufferPool, ExternalRegion, PoolConfig, PoolError, CACHE_LINE};

#[repr(C, align(64))]
#[derive(Clone, Copy)]
struct Line([u8; CACHE_LINE]);

/// One buffer's mailbox: the metadata a worker posts when it hands the buffer off, on its
/// own cache line.
#[repr(C, align(64))]
struct Mailbox(UnsafeCell<BufferMeta>);

/// Buffers shared by several workers' pools (see the [module docs](self)).
pub struct SharedArena {
    /// The packet bytes of every buffer; only reached through the pools' regions.
    lines: Box<[UnsafeCell<Line>]>,
    stride: usize,
    buffers: u32,
    headroom: u16,
    buf_size: u16,
    /// One per buffer: written by the worker that hands the buffer off, read by the one
    /// that takes it over.
    mailbox: Box<[Mailbox]>,
    free: Mutex<Vec<u32>>,
    /// `free.len()`, readable without the lock.
    available: AtomicUsize,
}

// SAFETY: the arena's cells are reached only under the ownership protocol of the module
// docs: a buffer's bytes by the one pool that holds it (the `ExternalRegion` contract), a
// buffer's mailbox by the one worker handing it off (which held it until just before) and
// then by the one taking it over (after the index's transfer, a Release/Acquire edge). The
// free list is behind its mutex and `available` is atomic.
unsafe impl Sync for SharedArena {}
// SAFETY: as for `Sync`; the arena owns plain memory.
unsafe impl Send for SharedArena {}

impl std::fmt::Debug for SharedArena {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedArena")
            .field("buffers", &self.buffers)
            .field("available", &self.available())
            .finish()
    }
}

impl SharedArena {
    /// An arena of `cfg.buffers` buffers, all free.
    pub fn new(cfg: PoolConfig) -> Result<Arc<SharedArena>, PoolError> {
        let (buf_size, stride_lines) = cfg.layout()?;
        let n = cfg.buffers as usize;
        let lines = (0..n * stride_lines)
            .map(|_| UnsafeCell::new(Line([0; CACHE_LINE])))
            .collect();
        let mailbox = (0..n)
            .map(|_| Mailbox(UnsafeCell::new(BufferMeta::DEFAULT)))
            .collect();
        Ok(Arc::new(SharedArena {
            lines,
            stride: stride_lines * CACHE_LINE,
            buffers: cfg.buffers,
            headroom: cfg.headroom,
            buf_size,
            mailbox,
            // LIFO: buffer 0 is handed out first
            free: Mutex::new((0..cfg.buffers).rev().collect()),
            available: AtomicUsize::new(n),
        }))
    }

    /// A worker's pool over the arena: its own metadata lines, a local cache of
    /// [`EXTERNAL_CACHE`](crate::pool::EXTERNAL_CACHE) buffers in front of the arena's free list. Make one per worker.
    pub fn pool(self: &Arc<Self>) -> BufferPool {
        let base = NonNull::new(UnsafeCell::raw_get(self.lines.as_ptr()).cast::<u8>())
            .expect("a boxed slice's pointer is never null");
        // SAFETY: `lines` holds `buffers * stride` bytes, i.e. `buffers` buffers of
        // `buf_size` bytes at `stride`, without overlap; the memory lives as long as the
        // arena, which the backend below keeps alive as long as the pool. Several pools
        // lie over it, but a buffer's bytes are reached only by the pool holding it: a
        // buffer enters a pool from the arena's free list (which gives it to one pool) or
        // through `take_over` (after the sending pool released it in `hand_off`).
        let region = unsafe {
            ExternalRegion::new(
                base,
                self.stride,
                self.buffers,
                self.buf_size,
                self.headroom,
            )
        }
        .expect("the arena's layout was checked when it was made");
        BufferPool::with_external(region, Box::new(ArenaBackend(self.clone())))
            .expect("a pool over a valid region")
    }

    fn free_list(&self) -> MutexGuard<'_, Vec<u32>> {
        // a poisoned lock is recovered: a Vec push/pop leaves no broken invariant
        self.free.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Buffers on the arena's free list (not counting the pools' local caches).
    pub fn available(&self) -> usize {
        self.available.load(Ordering::Relaxed)
    }

    /// Indices that appear more than once on the free list (a buffer freed twice into the
    /// arena): always 0 unless the ownership protocol was broken. Sorts a copy of the list
    /// under the lock: for tests and audits, not the packet path.
    ///
    /// ```
    /// let arena = pktvec_packet::SharedArena::new(Default::default())?;
    /// assert_eq!(arena.free_duplicates(), 0);
    /// # Ok::<(), pktvec_packet::PoolError>(())
    /// ```
    pub fn free_duplicates(&self) -> usize {
        let mut v = self.free_list().clone();
        v.sort_unstable();
        let n = v.len();
        v.dedup();
        n - v.len()
    }

    /// Buffers in the arena.
    pub fn capacity(&self) -> usize {
        self.buffers as usize
    }

    /// Whether `pool` lies over this arena.
    fn is_mine(&self, pool: &BufferPool) -> bool {
        pool.external_base() == Some(UnsafeCell::raw_get(self.lines.as_ptr()) as usize)
            && pool.capacity() == self.buffers as usize
    }

    /// Lets buffer `bi` go from `pool` (a worker's pool over this arena) to another worker:
    /// releases it and posts its metadata for [`take_over`](Self::take_over). Returns
    /// false, and changes nothing, if `pool` is not over this arena or does not hold `bi`
    /// (counted in the pool's double frees).
    #[inline]
    pub fn hand_off(&self, pool: &mut BufferPool, bi: u32) -> bool {
        self.is_mine(pool) && self.post(pool, bi)
    }

    /// [`hand_off`](Self::hand_off) for a pool known to lie over this arena.
    #[inline(always)]
    fn post(&self, pool: &mut BufferPool, bi: u32) -> bool {
        let Some(meta) = pool.release_meta(bi) else {
            return false;
        };
        // SAFETY: `bi < buffers` (the pool over this arena held it). The pool held `bi`
        // until the line above, so no other pool holds it, and a mailbox is written only
        // here, by the holder letting go, and read only in `take_over`, by the worker the
        // index is given to next; that worker cannot have it yet (the caller passes the
        // index on only after this returns, with Release/Acquire ordering, as the handoff
        // rings do).
        unsafe { *self.mailbox[bi as usize].0.get() = meta };
        true
    }

    /// Prefetches buffer `bi`'s mailbox line (the receiving worker reads it in
    /// [`take_over`](Self::take_over); it was last written on another core). An index out
    /// of range is ignored.
    #[inline]
    pub fn prefetch_mailbox(&self, bi: u32) {
        if let Some(m) = self.mailbox.get(bi as usize) {
            crate::prefetch::prefetch_ptr(m.0.get() as *const u8);
        }
    }

    /// Hands off every buffer of `bis` that `pool` holds, keeping them in `bis` in order
    /// and returning how many; the others (not held) are left out and counted as double
    /// frees.
    #[inline]
    pub fn hand_off_bulk(&self, pool: &mut BufferPool, bis: &mut [u32]) -> usize {
        if !self.is_mine(pool) {
            return 0;
        }
        let mut n = 0;
        for i in 0..bis.len() {
            let bi = bis[i];
            if self.post(pool, bi) {
                bis[n] = bi;
                n += 1;
            }
        }
        n
    }

    /// Takes buffer `bi`, handed off by another worker, into `pool` with the metadata the
    /// sender posted. Returns false if `pool` is not over this arena or the adoption is
    /// refused (counted in the pool's [`bad_adopts`](BufferPool::bad_adopts)).
    ///
    /// # Safety
    /// `bi` was handed off with [`hand_off`](Self::hand_off), the index reached this thread
    /// with acquire ordering after that call returned (a handoff ring's dequeue), and it is
    /// taken over only once: otherwise two pools could hold one buffer.
    // SAFETY: unsafe to call because the hand-over (above) is the caller's to prove; the
    // body reads the mailbox and adopts under that contract.
    #[inline]
    pub unsafe fn take_over(&self, pool: &mut BufferPool, bi: u32) -> bool {
        if !self.is_mine(pool) || bi >= self.buffers {
            return false;
        }
        // SAFETY: `bi < buffers`; by the caller's contract the sender's write of the
        // mailbox happened before this read and no one else touches it now.
        let meta = unsafe { *self.mailbox[bi as usize].0.get() };
        // SAFETY: by the caller's contract the buffer was released by its last holder and
        // is handed to this pool alone.
        unsafe { pool.adopt_meta(bi, &meta) }
    }

    /// [`take_over`](Self::take_over) for every buffer of `bis`, keeping those taken in
    /// `bis` in order and returning how many. The mailbox lines (written on other cores) and
    /// the pool's lines of the buffers are prefetched ahead.
    ///
    /// # Safety
    /// As for [`take_over`](Self::take_over), for each of `bis`.
    // SAFETY: the caller's contract is `take_over`'s for every index; the body checks the
    // pool once and the indices each.
    #[inline]
    pub unsafe fn take_over_bulk(&self, pool: &mut BufferPool, bis: &mut [u32]) -> usize {
        const AHEAD: usize = 16;
        if !self.is_mine(pool) {
            return 0;
        }
        for &bi in bis.iter().take(AHEAD) {
            self.prefetch_mailbox(bi);
        }
        let mut n = 0;
        for i in 0..bis.len() {
            if let Some(&ahead) = bis.get(i + AHEAD) {
                self.prefetch_mailbox(ahead);
            }
            let bi = bis[i];
            let Some(m) = self.mailbox.get(bi as usize) else {
                continue;
            };
            // SAFETY: by the caller's contract the sender's write of the mailbox happened
            // before this read and no one else touches it now.
            let meta = unsafe { *m.0.get() };
            // SAFETY: by the caller's contract the buffer was released by its last holder
            // and is handed to this pool alone.
            if unsafe { pool.adopt_meta(bi, &meta) } {
                bis[n] = bi;
                n += 1;
            }
        }
        n
    }

    /// Returns buffers that no pool holds (handed off and never taken over: the contents
    /// of handoff rings at shutdown) to the free list.
    ///
    /// # Safety
    /// Each of `bis` was handed off, is not taken over, and will not be.
    // SAFETY: the caller proves the buffers are nobody's; the body only pushes indices.
    pub unsafe fn reclaim(&self, bis: &[u32]) {
        let good: Vec<u32> = bis.iter().copied().filter(|&b| b < self.buffers).collect();
        let mut free = self.free_list();
        free.extend_from_slice(&good);
        self.available.store(free.len(), Ordering::Relaxed);
    }
}

/// A pool's view of the arena's free list.
struct ArenaBackend(Arc<SharedArena>);

impl BufferBackend for ArenaBackend {
    fn alloc_bulk(&mut self, out: &mut [u32]) -> usize {
        let mut free = self.0.free_list();
        let n = out.len().min(free.len());
        let start = free.len() - n;
        out[..n].copy_from_slice(&free[start..]);
        free.truncate(start);
        self.0.available.store(free.len(), Ordering::Relaxed);
        n
    }

    fn free_bulk(&mut self, bis: &[u32]) {
        let mut free = self.0.free_list();
        free.extend_from_slice(bis);
        self.0.available.store(free.len(), Ordering::Relaxed);
    }

    fn available(&self) -> usize {
        self.0.available()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arena(n: u32) -> Arc<SharedArena> {
        SharedArena::new(PoolConfig {
            buffers: n,
            headroom: 64,
            data_room: 256,
        })
        .unwrap()
    }

    #[test]
    fn pools_share_the_buffers() {
        let a = arena(2048);
        let (mut p, mut q) = (a.pool(), a.pool());
        let mut x = vec![0u32; 1500];
        assert_eq!(p.alloc_bulk(&mut x), 1500);
        let mut y = vec![0u32; 1000];
        // only 548 left for the second pool: exhaustion is counted in its pool
        assert_eq!(q.alloc_bulk(&mut y), 548);
        assert_eq!(q.alloc_failures(), 1);
        assert_eq!(p.alloc_failures(), 0);
        let mut all: Vec<u32> = x.iter().chain(&y[..548]).copied().collect();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), 2048, "no buffer given to two pools");
        p.free_bulk(&x);
        q.free_bulk(&y[..548]);
        drop((p, q));
        assert_eq!(a.available(), 2048);
    }

    #[test]
    fn hand_off_moves_bytes_and_metadata() {
        let a = arena(64);
        let (mut p, mut q) = (a.pool(), a.pool());
        let bi = p.alloc_with(b"payload").unwrap();
        p.meta_mut(bi).opaque = 77;
        p.meta_mut(bi).flags.insert(crate::MetaFlags::TRACED);
        assert!(a.hand_off(&mut p, bi));
        assert!(!p.is_allocated(bi));
        assert!(!a.hand_off(&mut p, bi), "a second hand-off is refused");
        assert_eq!(p.double_frees(), 1);
        // SAFETY: handed off once above, taken over once.
        assert!(unsafe { a.take_over(&mut q, bi) });
        assert_eq!(q.data(bi), b"payload");
        assert_eq!(q.meta(bi).opaque, 77);
        assert!(!q.meta(bi).flags.contains(crate::MetaFlags::TRACED));
        assert_eq!((p.in_use(), q.in_use()), (0, 1));
        assert!(q.free(bi));
    }

    #[test]
    fn bulk_hand_off_and_take_over() {
        let a = arena(256);
        let (mut p, mut q) = (a.pool(), a.pool());
        let mut v: Vec<u32> = (0..40u8).map(|i| p.alloc_with(&[i; 9]).unwrap()).collect();
        v.push(v[3]); // a second hand-off of one buffer is left out
        assert_eq!(a.hand_off_bulk(&mut p, &mut v), 40);
        v.truncate(40);
        // SAFETY: the 40 buffers were handed off once above and are taken over once.
        assert_eq!(unsafe { a.take_over_bulk(&mut q, &mut v) }, 40);
        for (i, &bi) in v.iter().enumerate() {
            assert_eq!(q.data(bi), &[i as u8; 9]);
        }
        assert_eq!((p.in_use(), q.in_use(), p.double_frees()), (0, 40, 1));
        assert_eq!(q.free_bulk(&v), 40);
    }

    #[test]
    fn foreign_pools_are_refused() {
        let (a, b) = (arena(8), arena(8));
        let mut other = b.pool();
        let bi = other.alloc().unwrap();
        assert!(!a.hand_off(&mut other, bi));
        assert!(other.is_allocated(bi));
        let mut own = BufferPool::new(PoolConfig::default()).unwrap();
        let bj = own.alloc().unwrap();
        assert!(!a.hand_off(&mut own, bj));
        // SAFETY: refused before anything is read: the pool is not over `a`.
        assert!(!unsafe { a.take_over(&mut own, bj) });
    }

    #[test]
    fn reclaim_returns_stranded_buffers() {
        let a = arena(16);
        let mut p = a.pool();
        let mut x = [0u32; 4];
        assert_eq!(p.alloc_bulk(&mut x), 4);
        for &bi in &x {
            assert!(a.hand_off(&mut p, bi));
        }
        drop(p);
        assert_eq!(a.available(), 12);
        // SAFETY: handed off above and never taken over.
        unsafe { a.reclaim(&x) };
        assert_eq!(a.available(), 16);
    }

    #[test]
    fn threads_free_each_others_buffers() {
        let a = arena(4096);
        let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<u32>>(4);
        let a2 = a.clone();
        let sender = std::thread::spawn(move || {
            let mut p = a2.pool();
            for round in 0..200u32 {
                let mut v = vec![0u32; 64];
                let n = p.alloc_bulk(&mut v);
                v.truncate(n);
                for &bi in &v {
                    p.meta_mut(bi).opaque = round;
                }
                let n = a2.hand_off_bulk(&mut p, &mut v);
                v.truncate(n);
                tx.send(v).unwrap();
            }
        });
        let mut q = a.pool();
        let mut got = 0;
        for (round, v) in rx.iter().enumerate() {
            for &bi in &v {
                // SAFETY: each index was handed off once and crossed the channel
                // (Release/Acquire) before this take-over.
                assert!(unsafe { a.take_over(&mut q, bi) });
                assert_eq!(q.meta(bi).opaque, round as u32);
            }
            got += v.len();
            q.free_bulk(&v);
        }
        sender.join().unwrap();
        assert_eq!(got, 200 * 64);
        drop(q);
        assert_eq!(a.available(), 4096);
    }
}
