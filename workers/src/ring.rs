//! Handoff rings: bounded single-producer/single-consumer rings of `u32` buffer indices that
//! carry packets from the worker that received them to the worker that owns their flow.
//!
//! A ring ([`ring`]) splits into a [`Producer`] and a [`Consumer`], each `Send`, one thread
//! each. Indices move in chunks: [`Producer::enqueue`] copies as much of a slice as fits and
//! returns how many went in (burst semantics: it never waits); the caller drops the rest with
//! the counted reason [`CONGESTION_DROP`]. [`Consumer::dequeue`] copies up to a slice's length
//! out. Every ring keeps [`RingStats`] (enqueued, dropped, dequeued, high-water mark), which
//! either half or a [`RingWatch`] reads at any time. A [`Mesh`] makes one ring per ordered pair
//! of N workers and hands each worker its producers and consumers.
//!
//! ## Layout and ordering
//!
//! The capacity is a power of two; `head` (the producer's next slot) and `tail` (the
//! consumer's next slot) are free-running `usize` counters, each on its own cache line
//! (`CachePadded`), reduced by a mask only to address a slot. Each half keeps its own index
//! privately and a cached copy of the other's, and reads the other's shared line only when the
//! cached copy makes the ring look full (producer) or empty (consumer); so in steady state a
//! chunk costs one line transfer for the data and one for the index. A chunk is copied with
//! `copy_from_slice` in at most two pieces around the wrap, then published with a `Release`
//! store of the index; the other side observes it with an `Acquire` load, which makes the
//! copied slots visible before it touches them.
//!
//! ## Why a ring of our own rather than `rtrb`
//!
//! `rtrb` 0.4 (a well-tested SPSC ring with `write_chunk_uninit`/`read_chunk`) was the other
//! candidate. In a scratch harness on this project's 2-vCPU AMD EPYC (two threads pinned
//! to the two cores, chunks of 32, capacity 1024, 50M indices; rough figures on a busy
//! machine, not published) this ring moved an index in about 1.5–3.5 ns against rtrb's
//! 4.5–6 ns: rtrb asks for the free count, then for a chunk of exactly that size, and fills
//! it element by element from an iterator, where this ring takes what fits in one call and
//! copies with `copy_from_slice`. This ring is also small (two `unsafe` blocks, each with
//! its `SAFETY` argument, covered by the tests), keeps its counters on their own cache lines
//! beside the indices, and adds no dependency.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use crossbeam_utils::CachePadded;
use serde::{Deserialize, Serialize};

/// The drop reason under which a caller counts the indices that [`Producer::enqueue`] did not
/// take (the ring was full: the destination worker is congested).
pub const CONGESTION_DROP: &str = "congestion drop";

/// A ring's counters at one moment.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RingStats {
    /// Indices the producer put in.
    pub enqueued: u64,
    /// Indices offered to [`Producer::enqueue`] that did not fit (the caller dropped them).
    pub dropped: u64,
    /// Indices the consumer took out.
    pub dequeued: u64,
    /// The largest occupancy the producer saw right after an enqueue.
    pub high_water: u64,
}

impl RingStats {
    /// Indices in the ring at the moment the counters were read (enqueued − dequeued).
    pub fn in_ring(&self) -> u64 {
        self.enqueued.saturating_sub(self.dequeued)
    }
}

/// What both halves share.
struct Shared {
    /// The producer's next slot (free-running); written by the producer only.
    head: CachePadded<AtomicUsize>,
    /// The consumer's next slot (free-running); written by the consumer only.
    tail: CachePadded<AtomicUsize>,
    /// Producer-side counters (enqueued, dropped, high-water): one writer, their own line.
    prod_stats: CachePadded<[AtomicU64; 3]>,
    /// Consumer-side counter (dequeued): one writer, its own line.
    deq_stat: CachePadded<AtomicU64>,
    /// The slots; `slots.len()` is a power of two.
    slots: Box<[UnsafeCell<u32>]>,
}

// SAFETY: the slots are the only non-`Sync` part. A slot is written only by the one
// `Producer`, and only while it lies in the free region [head, tail + capacity), which the
// consumer does not read; it is read only by the one `Consumer`, and only while it lies in the
// filled region [tail, head), which the producer does not write. The regions are handed over
// by Release stores of `head`/`tail` that the other side observes with Acquire loads, so no
// slot is ever accessed by both threads without a happens-before edge in between.
unsafe impl Sync for Shared {}

impl Shared {
    fn stats(&self) -> RingStats {
        RingStats {
            enqueued: self.prod_stats[0].load(Ordering::Relaxed),
            dropped: self.prod_stats[1].load(Ordering::Relaxed),
            dequeued: self.deq_stat.load(Ordering::Relaxed),
            high_water: self.prod_stats[2].load(Ordering::Relaxed),
        }
    }
}

/// Creates a ring of at least `capacity` slots (rounded up to a power of two, at least 1) and
/// returns its two halves.
pub fn ring(capacity: usize) -> (Producer, Consumer) {
    let cap = capacity.max(1).next_power_of_two();
    let shared = Arc::new(Shared {
        head: CachePadded::new(AtomicUsize::new(0)),
        tail: CachePadded::new(AtomicUsize::new(0)),
        prod_stats: CachePadded::new([AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)]),
        deq_stat: CachePadded::new(AtomicU64::new(0)),
        slots: (0..cap).map(|_| UnsafeCell::new(0)).collect(),
    });
    let producer = Producer {
        shared: Arc::clone(&shared),
        head: 0,
        cached_tail: 0,
        mask: cap - 1,
        enqueued: 0,
        dropped: 0,
        high_water: 0,
    };
    let consumer = Consumer {
        shared,
        tail: 0,
        cached_head: 0,
        mask: cap - 1,
        dequeued: 0,
    };
    (producer, consumer)
}

/// The writing half of a ring; one thread owns it.
pub struct Producer {
    shared: Arc<Shared>,
    /// Private copy of `shared.head` (only this half writes it).
    head: usize,
    /// Last `shared.tail` seen.
    cached_tail: usize,
    mask: usize,
    enqueued: u64,
    dropped: u64,
    high_water: u64,
}

impl Producer {
    /// Slots in the ring.
    pub fn capacity(&self) -> usize {
        self.mask + 1
    }

    /// Copies as many of `src` as fit (from the front) into the ring and returns how many;
    /// the rest (`src.len()` − the result) is counted as dropped, and the caller drops those
    /// packets with the reason [`CONGESTION_DROP`]. Never waits.
    #[inline]
    pub fn enqueue(&mut self, src: &[u32]) -> usize {
        let cap = self.mask + 1;
        let mut free = cap - self.head.wrapping_sub(self.cached_tail);
        if free < src.len() {
            self.cached_tail = self.shared.tail.load(Ordering::Acquire);
            free = cap - self.head.wrapping_sub(self.cached_tail);
        }
        let n = src.len().min(free);
        if n > 0 {
            let start = self.head & self.mask;
            let first = n.min(cap - start);
            self.write(start, &src[..first]);
            self.write(0, &src[first..n]);
            self.head = self.head.wrapping_add(n);
            self.shared.head.store(self.head, Ordering::Release);
            self.enqueued += n as u64;
            self.shared.prod_stats[0].store(self.enqueued, Ordering::Relaxed);
            let occupancy = self.head.wrapping_sub(self.cached_tail) as u64;
            if occupancy > self.high_water {
                self.high_water = occupancy;
                self.shared.prod_stats[2].store(occupancy, Ordering::Relaxed);
            }
        }
        if n < src.len() {
            self.dropped += (src.len() - n) as u64;
            self.shared.prod_stats[1].store(self.dropped, Ordering::Relaxed);
        }
        n
    }

    /// Copies all of `src` into the ring and returns true, or nothing and false if it does not
    /// fit (DPDK's bulk semantics, `rte_ring_sp_enqueue_bulk`: the caller keeps the indices
    /// and tries again; nothing is counted as dropped). Never waits.
    ///
    /// ```
    /// let (mut p, _c) = pktvec_workers::ring::ring(4);
    /// assert!(p.enqueue_bulk(&[1, 2, 3]));
    /// assert!(!p.enqueue_bulk(&[4, 5])); // one slot left: all or nothing
    /// assert_eq!(p.stats().dropped, 0);
    /// ```
    #[inline]
    pub fn enqueue_bulk(&mut self, src: &[u32]) -> bool {
        let cap = self.mask + 1;
        if cap - self.head.wrapping_sub(self.cached_tail) < src.len() {
            self.cached_tail = self.shared.tail.load(Ordering::Acquire);
            if cap - self.head.wrapping_sub(self.cached_tail) < src.len() {
                return false;
            }
        }
        self.enqueue(src) == src.len()
    }

    /// Copies `src` into the slots from `start` on (`start + src.len() <= capacity`, and the
    /// slots lie in the free region).
    #[inline]
    fn write(&mut self, start: usize, src: &[u32]) {
        if src.is_empty() {
            return;
        }
        let slots = &self.shared.slots[start..start + src.len()];
        // SAFETY: `UnsafeCell<u32>` has the layout of `u32`, so the slot range is a valid
        // `[u32]` of `src.len()` elements. The caller passes only slots of the free region
        // [head, cached_tail + capacity): the consumer has released them (the Acquire load of
        // `tail` that produced `cached_tail` orders its reads before this write) and reads
        // none of them until the Release store of `head` that follows. `&mut self` makes this
        // the only producer-side access, so the mutable slice is unaliased.
        let dst = unsafe {
            std::slice::from_raw_parts_mut(UnsafeCell::raw_get(slots.as_ptr()), src.len())
        };
        dst.copy_from_slice(src);
    }

    /// Indices in the ring as far as this half knows (an upper bound: the consumer may have
    /// taken some since).
    pub fn len_hint(&self) -> usize {
        self.head.wrapping_sub(self.cached_tail)
    }

    /// Slots free now (the consumer's index is read afresh): an [`enqueue`](Self::enqueue)
    /// of up to this many indices takes them all, since only this half fills the ring.
    ///
    /// ```
    /// let (mut p, _c) = pktvec_workers::ring::ring(8);
    /// assert_eq!(p.enqueue(&[1, 2, 3]), 3);
    /// assert_eq!(p.free_space(), 5);
    /// ```
    #[inline]
    pub fn free_space(&mut self) -> usize {
        self.cached_tail = self.shared.tail.load(Ordering::Acquire);
        self.mask + 1 - self.head.wrapping_sub(self.cached_tail)
    }

    /// Counts `n` indices as dropped without offering them (the caller saw with
    /// [`free_space`](Self::free_space) that they would not fit, and dropped them).
    ///
    /// ```
    /// let (mut p, _c) = pktvec_workers::ring::ring(8);
    /// p.note_dropped(3);
    /// assert_eq!(p.stats().dropped, 3);
    /// ```
    #[inline]
    pub fn note_dropped(&mut self, n: usize) {
        if n > 0 {
            self.dropped += n as u64;
            self.shared.prod_stats[1].store(self.dropped, Ordering::Relaxed);
        }
    }

    /// The ring's counters now.
    pub fn stats(&self) -> RingStats {
        self.shared.stats()
    }

    /// A handle that reads this ring's counters from any thread.
    pub fn watch(&self) -> RingWatch {
        RingWatch(Arc::clone(&self.shared))
    }
}

/// The reading half of a ring; one thread owns it.
pub struct Consumer {
    shared: Arc<Shared>,
    /// Private copy of `shared.tail` (only this half writes it).
    tail: usize,
    /// Last `shared.head` seen.
    cached_head: usize,
    mask: usize,
    dequeued: u64,
}

impl Consumer {
    /// Slots in the ring.
    pub fn capacity(&self) -> usize {
        self.mask + 1
    }

    /// Copies up to `dst.len()` indices out of the ring into the front of `dst`, oldest first,
    /// and returns how many. Never waits (0 when the ring is empty).
    #[inline]
    pub fn dequeue(&mut self, dst: &mut [u32]) -> usize {
        let mut avail = self.cached_head.wrapping_sub(self.tail);
        if avail < dst.len() {
            self.cached_head = self.shared.head.load(Ordering::Acquire);
            avail = self.cached_head.wrapping_sub(self.tail);
        }
        let n = dst.len().min(avail);
        if n > 0 {
            let cap = self.mask + 1;
            let start = self.tail & self.mask;
            let first = n.min(cap - start);
            let (a, b) = dst[..n].split_at_mut(first);
            self.read(start, a);
            self.read(0, b);
            self.tail = self.tail.wrapping_add(n);
            self.shared.tail.store(self.tail, Ordering::Release);
            self.dequeued += n as u64;
            self.shared.deq_stat.store(self.dequeued, Ordering::Relaxed);
        }
        n
    }

    /// Fills all of `dst` from the ring and returns true, or takes nothing and returns false
    /// if fewer indices are in it (DPDK's bulk semantics, `rte_ring_sc_dequeue_bulk`).
    /// Never waits.
    ///
    /// ```
    /// let (mut p, mut c) = pktvec_workers::ring::ring(8);
    /// p.enqueue(&[1, 2, 3]);
    /// let mut out = [0u32; 4];
    /// assert!(!c.dequeue_bulk(&mut out));
    /// assert!(c.dequeue_bulk(&mut out[..3]));
    /// assert_eq!(out[..3], [1, 2, 3]);
    /// ```
    #[inline]
    pub fn dequeue_bulk(&mut self, dst: &mut [u32]) -> bool {
        if self.cached_head.wrapping_sub(self.tail) < dst.len() {
            self.cached_head = self.shared.head.load(Ordering::Acquire);
            if self.cached_head.wrapping_sub(self.tail) < dst.len() {
                return false;
            }
        }
        self.dequeue(dst) == dst.len()
    }

    /// Copies the slots from `start` on into `dst` (`start + dst.len() <= capacity`, and the
    /// slots lie in the filled region).
    #[inline]
    fn read(&mut self, start: usize, dst: &mut [u32]) {
        if dst.is_empty() {
            return;
        }
        let slots = &self.shared.slots[start..start + dst.len()];
        // SAFETY: `UnsafeCell<u32>` has the layout of `u32`, so the slot range is a valid
        // `[u32]` of `dst.len()` elements. The caller passes only slots of the filled region
        // [tail, cached_head): the producer wrote them before its Release store of `head`,
        // which the Acquire load that produced `cached_head` observed, and it writes none of
        // them again until this half's Release store of `tail` that follows.
        let src = unsafe {
            std::slice::from_raw_parts(UnsafeCell::raw_get(slots.as_ptr()).cast_const(), dst.len())
        };
        dst.copy_from_slice(src);
    }

    /// Indices in the ring as far as this half knows (a lower bound: the producer may have
    /// added some since).
    pub fn len_hint(&self) -> usize {
        self.cached_head.wrapping_sub(self.tail)
    }

    /// The ring's counters now.
    pub fn stats(&self) -> RingStats {
        self.shared.stats()
    }

    /// A handle that reads this ring's counters from any thread.
    pub fn watch(&self) -> RingWatch {
        RingWatch(Arc::clone(&self.shared))
    }
}

/// Reads one ring's counters from any thread (a monitor's handle; it moves no indices).
#[derive(Clone)]
pub struct RingWatch(Arc<Shared>);

impl RingWatch {
    /// The ring's counters now.
    pub fn stats(&self) -> RingStats {
        self.0.stats()
    }
}

/// One worker's ends of a [`Mesh`]: a producer to every other worker and a consumer from
/// every other worker, indexed by the other worker (`None` at the worker's own index).
pub struct WorkerRings {
    /// This worker's index.
    pub worker: usize,
    /// `to[d]`: the ring into worker `d`.
    pub to: Vec<Option<Producer>>,
    /// `from[s]`: the ring out of worker `s`.
    pub from: Vec<Option<Consumer>>,
}

/// One ring of a mesh and its counters, for reports.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub struct PairStats {
    /// The producing worker.
    pub from: usize,
    /// The consuming worker.
    pub to: usize,
    /// The ring's counters.
    pub stats: RingStats,
}

/// One handoff ring per ordered pair of distinct workers.
pub struct Mesh {
    /// Each worker's ends, in worker order; take them out to move them to the threads.
    pub workers: Vec<WorkerRings>,
    watches: Vec<(usize, usize, RingWatch)>,
}

impl Mesh {
    /// Rings of `capacity` slots (rounded up to a power of two) between `n` workers:
    /// `n·(n−1)` rings.
    pub fn new(n: usize, capacity: usize) -> Mesh {
        let mut workers: Vec<WorkerRings> = (0..n)
            .map(|w| WorkerRings {
                worker: w,
                to: (0..n).map(|_| None).collect(),
                from: (0..n).map(|_| None).collect(),
            })
            .collect();
        let mut watches = Vec::with_capacity(n * n.saturating_sub(1));
        for s in 0..n {
            for d in (0..n).filter(|&d| d != s) {
                let (p, c) = ring(capacity);
                watches.push((s, d, p.watch()));
                workers[s].to[d] = Some(p);
                workers[d].from[s] = Some(c);
            }
        }
        Mesh { workers, watches }
    }

    /// Every ring's counters now, ordered by (from, to).
    pub fn stats(&self) -> Vec<PairStats> {
        self.watches
            .iter()
            .map(|(from, to, w)| PairStats {
                from: *from,
                to: *to,
                stats: w.stats(),
            })
            .collect()
    }

    /// The handle that reads every ring's counters, for after the workers are taken out.
    pub fn watch(&self) -> MeshWatch {
        MeshWatch(self.watches.clone())
    }
}

/// Reads every ring of a [`Mesh`] from any thread.
#[derive(Clone)]
pub struct MeshWatch(Vec<(usize, usize, RingWatch)>);

impl MeshWatch {
    /// Every ring's counters now, ordered by (from, to).
    pub fn stats(&self) -> Vec<PairStats> {
        self.0
            .iter()
            .map(|(from, to, w)| PairStats {
                from: *from,
                to: *to,
                stats: w.stats(),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capacity_rounds_up() {
        assert_eq!(ring(0).0.capacity(), 1);
        assert_eq!(ring(5).0.capacity(), 8);
        assert_eq!(ring(8).1.capacity(), 8);
    }

    #[test]
    fn empty_full_and_partial() {
        let (mut p, mut c) = ring(8);
        let mut out = [0u32; 16];
        assert_eq!(c.dequeue(&mut out), 0);
        assert_eq!(p.enqueue(&[1, 2, 3]), 3);
        assert_eq!(p.enqueue(&[4, 5, 6, 7, 8, 9, 10]), 5);
        assert_eq!(p.enqueue(&[11]), 0);
        assert_eq!(c.dequeue(&mut out[..2]), 2);
        assert_eq!(&out[..2], &[1, 2]);
        assert_eq!(c.dequeue(&mut out), 6);
        assert_eq!(&out[..6], &[3, 4, 5, 6, 7, 8]);
        assert_eq!(c.dequeue(&mut out), 0);
        let s = p.stats();
        assert_eq!(
            s,
            RingStats {
                enqueued: 8,
                dropped: 3,
                dequeued: 8,
                high_water: 8
            }
        );
        assert_eq!(s.in_ring(), 0);
    }

    #[test]
    fn wraps_around() {
        let (mut p, mut c) = ring(8);
        let mut out = [0u32; 8];
        let mut next = 0u32;
        let mut want = 0u32;
        for round in 0..50 {
            let k = 1 + round % 7;
            let chunk: Vec<u32> = (next..next + k as u32).collect();
            assert_eq!(p.enqueue(&chunk), k);
            next += k as u32;
            let got = c.dequeue(&mut out);
            assert_eq!(got, k);
            for &v in &out[..got] {
                assert_eq!(v, want);
                want += 1;
            }
        }
        assert!(p.stats().high_water <= 8);
    }

    #[test]
    fn mesh_pairs() {
        let mesh = Mesh::new(3, 4);
        assert_eq!(mesh.stats().len(), 6);
        let mut ws = mesh.workers;
        let watch = MeshWatch(mesh.watches);
        for w in &ws {
            assert!(w.to[w.worker].is_none() && w.from[w.worker].is_none());
        }
        let p = ws[0].to[2].as_mut().unwrap();
        assert_eq!(p.enqueue(&[7, 8]), 2);
        let mut out = [0u32; 4];
        let c = ws[2].from[0].as_mut().unwrap();
        assert_eq!(c.dequeue(&mut out), 2);
        assert_eq!(&out[..2], &[7, 8]);
        let s = watch.stats();
        let r = s.iter().find(|r| r.from == 0 && r.to == 2).unwrap();
        assert_eq!((r.stats.enqueued, r.stats.dequeued), (2, 2));
        assert!(s
            .iter()
            .filter(|r| !(r.from == 0 && r.to == 2))
            .all(|r| r.stats == RingStats::default()));
    }
}
