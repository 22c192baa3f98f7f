//! The flow table: fixed capacity, bucketised, the same memory layout under every
//! strategy; records preallocated and handed out from per-worker free stacks.

use crate::domain::{Section, WorkerSync};
use std::cell::UnsafeCell;
use std::mem::size_of;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

/// Slots per bucket: a bucket is one 64-byte line of 8 signatures and 8 record indices.
pub const BUCKET_SLOTS: usize = 8;

/// A record's index in its table (stable while the record is live).
pub type RecordId = u32;

#[repr(C, align(64))]
#[derive(Clone, Copy, Default)]
struct Bucket {
    /// The key's hash with bit 0 set (0: empty slot).
    sig: [u32; BUCKET_SLOTS],
    rec: [u32; BUCKET_SLOTS],
}

/// A record: key, value, when it was last touched. Where it is filed is kept apart
/// ([`FlowTable`]'s `homes`), so that it can be read without touching the record.
#[repr(C)]
struct Record<K, V> {
    key: K,
    value: V,
    last: u64,
}

/// A `homes` entry: the bucket of a live record, or free.
const LIVE: u32 = 1 << 31;

/// A table's size.
#[derive(Clone, Copy, Debug)]
pub struct TableConfig {
    /// Records (flows) the table holds at most.
    pub capacity: usize,
    /// Buckets per record slot needed, as a load: buckets = capacity × `overprovision` / 8
    /// rounded up to a power of two (at least the domain's stripes × 2).
    pub overprovision: f64,
}

impl Default for TableConfig {
    fn default() -> Self {
        TableConfig {
            capacity: 1 << 16,
            overprovision: 2.0,
        }
    }
}

/// Why an insert failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InsertError {
    /// This worker has no free record left.
    #[error("no free record")]
    NoRecord,
    /// Both candidate buckets are full.
    #[error("buckets full")]
    BucketsFull,
}

/// A fixed-capacity hash table of flow records shared by the workers of a
/// [`Domain`](crate::Domain).
///
/// A key hashes (the caller's 64-bit hash) to a primary bucket and an alternate one in the
/// same stripe; each bucket is a 64-byte line of 8 signatures and record indices. Every
/// access goes through a [`Section`], which checks that it holds the bucket's stripe, and
/// is recorded by the conflict profiler when it runs. Nothing allocates after
/// [`new`](Self::new): each worker takes records from its own [`TableWorker`] stack.
///
/// ```
/// use pktvec_state::{Domain, FlowTable, Strategy, SyncConfig, TableConfig};
/// let d = Domain::new(SyncConfig { strategy: Strategy::Fine, workers: 1, stripes: 16, ..SyncConfig::default() })?;
/// let t = FlowTable::<u64, u32>::new(&d, "flows", TableConfig { capacity: 1024, ..TableConfig::default() });
/// let mut w = d.worker(0);
/// let mut tw = t.worker(0);
/// let (key, hash, now) = (42u64, 0x1234_5678_9abc_def0u64, 100);
/// w.section(t.stripe(hash), |sec| {
///     let (_, v, new) = t.entry(sec, &mut tw, key, hash, now).unwrap();
///     assert!(new);
///     *v += 1;
/// });
/// let v = w.section(t.stripe(hash), |sec| t.find(sec, &key, hash).map(|(_, v)| *v));
/// assert_eq!(v, Some(1));
/// // idle for 50 at time 200: expired by the worker's sweep
/// let gone = t.expire(&mut w, &mut tw, 200, 50, usize::MAX, |_, _, _| {});
/// assert_eq!(gone, 1);
/// assert_eq!(tw.free(), tw.capacity());
/// # Ok::<(), pktvec_state::SyncError>(())
/// ```
pub struct FlowTable<K, V> {
    tag: u16,
    bucket_mask: usize,
    stripe_bits: u32,
    stripe_mask: usize,
    workers: usize,
    buckets: Box<[UnsafeCell<Bucket>]>,
    records: Box<[UnsafeCell<Record<K, V>>]>,
    /// Per record: `bucket | LIVE` while it is live, 0 when free; written under the
    /// bucket's stripe, read by [`get`](Self::get) to learn which stripe to check.
    homes: Box<[AtomicU32]>,
}

// SAFETY: buckets and records are only read or written through a `Section` that holds the
// stripe they belong to (checked by every accessor): under the lock strategies the
// stripe's lock (or the coarse lock) serialises those accesses, under flow affinity only
// the stripe's owner worker touches it, and under RTM the access is either inside a
// hardware transaction whose read set holds the lock word (the hardware aborts it on any
// conflicting access) or under the lock itself. So no two threads access one record or
// bucket at once outside a transaction; K and V move between threads, hence `Send`.
unsafe impl<K: Send, V: Send> Sync for FlowTable<K, V> {}
// SAFETY: the table owns its keys and values; sending it sends them.
unsafe impl<K: Send, V: Send> Send for FlowTable<K, V> {}

/// One worker's side of a table: its free records and counters. Not shared.
#[derive(Debug)]
pub struct TableWorker {
    free: Vec<u32>,
    capacity: usize,
    sweep: usize,
    /// Records inserted.
    pub inserted: u64,
    /// Records removed by the NF.
    pub removed: u64,
    /// Records expired.
    pub expired: u64,
    /// Inserts refused (no record, buckets full).
    pub refused: u64,
}

impl TableWorker {
    /// Free records on this worker's stack.
    pub fn free(&self) -> usize {
        self.free.len()
    }

    /// Records the table holds in all (the most this stack could hold).
    pub fn capacity(&self) -> usize {
        self.capacity
    }
}

impl<K: Copy + Eq + Default, V: Default> FlowTable<K, V> {
    /// A table in `domain`, registered as `name` for the profiler.
    pub fn new(domain: &Arc<crate::Domain>, name: &'static str, cfg: TableConfig) -> Self {
        let capacity = cfg.capacity.max(1);
        let want =
            ((capacity as f64 * cfg.overprovision.max(1.0)) / BUCKET_SLOTS as f64).ceil() as usize;
        let nb = want.max(domain.stripes() * 2).next_power_of_two();
        FlowTable {
            tag: domain.register(name),
            bucket_mask: nb - 1,
            stripe_bits: domain.stripes().trailing_zeros(),
            stripe_mask: domain.stripes() - 1,
            workers: domain.workers(),
            buckets: (0..nb)
                .map(|_| UnsafeCell::new(Bucket::default()))
                .collect(),
            records: (0..capacity)
                .map(|_| {
                    UnsafeCell::new(Record {
                        key: K::default(),
                        value: V::default(),
                        last: 0,
                    })
                })
                .collect(),
            homes: (0..capacity).map(|_| AtomicU32::new(0)).collect(),
        }
    }

    /// Worker `w`'s side: its share of the records (a contiguous block), on a stack sized
    /// for the whole table so frees never allocate.
    pub fn worker(&self, w: usize) -> TableWorker {
        let n = self.records.len();
        let (lo, hi) = (n * w / self.workers, n * (w + 1) / self.workers);
        let mut free = Vec::with_capacity(n);
        free.extend((lo as u32..hi as u32).rev());
        TableWorker {
            free,
            capacity: n,
            sweep: 0,
            inserted: 0,
            removed: 0,
            expired: 0,
            refused: 0,
        }
    }

    /// Records the table holds at most.
    pub fn capacity(&self) -> usize {
        self.records.len()
    }

    /// Buckets.
    pub fn buckets(&self) -> usize {
        self.bucket_mask + 1
    }

    /// The profiler tag.
    pub fn tag(&self) -> u16 {
        self.tag
    }

    /// The stripe a hash's records live in (take it in the section).
    #[inline]
    pub fn stripe(&self, hash: u64) -> usize {
        hash as usize & self.stripe_mask
    }

    #[inline]
    fn home(&self, hash: u64) -> (usize, usize) {
        let b1 = hash as usize & self.bucket_mask;
        let mut b2 = b1 ^ (((hash >> 40) as usize) << self.stripe_bits & self.bucket_mask);
        if b2 == b1 {
            b2 = b1 ^ ((1usize << self.stripe_bits) & self.bucket_mask);
        }
        (b1, b2)
    }

    #[inline]
    fn sig(hash: u64) -> u32 {
        (hash >> 16) as u32 | 1
    }

    /// Prefetches a hash's primary bucket (before the section that looks it up).
    #[inline]
    pub fn prefetch(&self, hash: u64) {
        let b = hash as usize & self.bucket_mask;
        let p = self.buckets[b].get() as *const i8;
        #[cfg(target_arch = "x86_64")]
        // SAFETY: a prefetch is a hint: it never faults and changes no memory, and the
        // address lies inside the bucket array anyway.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p);
        }
    }

    // A `&mut` from `&self`: the cell is the section's to write (its stripe is held), and
    // the borrow of the section keeps two of them from living at once.
    #[allow(clippy::mut_from_ref)]
    #[inline]
    fn bucket<'s>(&'s self, sec: &mut Section<'_>, b: usize, write: bool) -> &'s mut Bucket {
        sec.check(b & self.stripe_mask);
        let p = self.buckets[b].get();
        if write {
            sec.note_write(self.tag, b as u64 | 1 << 40, p as *const u8, 64);
        } else {
            sec.note_read(self.tag, b as u64 | 1 << 40, p as *const u8, 64);
        }
        // SAFETY: the section holds the bucket's stripe (checked above), which no other
        // thread touches outside a transaction meanwhile (see the `Sync` impl); the
        // reference lives no longer than the borrow of the section.
        unsafe { &mut *p }
    }

    #[allow(clippy::mut_from_ref)] // as `bucket`
    #[inline]
    fn record<'s>(&'s self, sec: &mut Section<'_>, r: u32, write: bool) -> &'s mut Record<K, V> {
        let p = self.records[r as usize].get();
        // SAFETY: only `bucket` (the record's bucket, stripe checked) leads here, or
        // `get` after checking the stripe of the record's bucket (`homes`, written only
        // under that same stripe, read again after the check); see the `Sync` impl.
        let rec = unsafe { &mut *p };
        let size = size_of::<Record<K, V>>();
        if write {
            sec.note_write(self.tag, u64::from(r), p as *const u8, size);
        } else {
            sec.note_read(self.tag, u64::from(r), p as *const u8, size);
        }
        rec
    }

    #[inline]
    fn lookup(&self, sec: &mut Section<'_>, key: &K, hash: u64) -> Option<(usize, usize, u32)> {
        let sig = Self::sig(hash);
        let (b1, b2) = self.home(hash);
        for b in [b1, b2] {
            let bk = *self.bucket(sec, b, false);
            for s in 0..BUCKET_SLOTS {
                if bk.sig[s] == sig {
                    let r = bk.rec[s];
                    if self.record(sec, r, false).key == *key {
                        return Some((b, s, r));
                    }
                }
            }
        }
        None
    }

    /// The record of `key`, read only.
    #[inline]
    pub fn find<'s>(
        &'s self,
        sec: &mut Section<'_>,
        key: &K,
        hash: u64,
    ) -> Option<(RecordId, &'s V)> {
        let (_, _, r) = self.lookup(sec, key, hash)?;
        let rec = self.record(sec, r, false);
        Some((r, &rec.value))
    }

    /// The record of `key`, to update; `now` becomes its last-seen time.
    #[inline]
    pub fn find_mut<'s>(
        &'s self,
        sec: &'s mut Section<'_>,
        key: &K,
        hash: u64,
        now: u64,
    ) -> Option<(RecordId, &'s mut V)> {
        let (_, _, r) = self.lookup(sec, key, hash)?;
        let rec = self.record(sec, r, true);
        rec.last = now;
        Some((r, &mut rec.value))
    }

    /// The record of `key`, inserted (its value `V::default()`) if absent: `(id, value,
    /// inserted)`. `now` becomes its last-seen time.
    #[inline]
    pub fn entry<'s>(
        &'s self,
        sec: &'s mut Section<'_>,
        tw: &mut TableWorker,
        key: K,
        hash: u64,
        now: u64,
    ) -> Result<(RecordId, &'s mut V, bool), InsertError> {
        if let Some((_, _, r)) = self.lookup(sec, &key, hash) {
            let rec = self.record(sec, r, true);
            rec.last = now;
            return Ok((r, &mut rec.value, false));
        }
        // the less loaded of the two buckets (two choices keep the fullest bucket near
        // the mean)
        let (b1, b2) = self.home(hash);
        let free = |bk: &Bucket| bk.sig.iter().filter(|&&x| x == 0).count();
        let (f1, f2) = (
            free(self.bucket(sec, b1, false)),
            free(self.bucket(sec, b2, false)),
        );
        let b = if f2 > f1 { b2 } else { b1 };
        let slot = self
            .bucket(sec, b, false)
            .sig
            .iter()
            .position(|&x| x == 0)
            .map(|s| (b, s));
        let Some((b, s)) = slot else {
            tw.refused += 1;
            return Err(InsertError::BucketsFull);
        };
        let Some(r) = tw.free.pop() else {
            tw.refused += 1;
            return Err(InsertError::NoRecord);
        };
        let bk = self.bucket(sec, b, true);
        bk.sig[s] = Self::sig(hash);
        bk.rec[s] = r;
        let rec = self.record(sec, r, true);
        rec.key = key;
        rec.value = V::default();
        rec.last = now;
        self.homes[r as usize].store(b as u32 | LIVE, Ordering::Relaxed);
        tw.inserted += 1;
        Ok((r, &mut rec.value, true))
    }

    /// A live record by id, if the section holds its stripe (`None` if it is free).
    ///
    /// # Panics
    /// If the record lives in a stripe the section does not hold.
    #[inline]
    pub fn get<'s>(&'s self, sec: &'s mut Section<'_>, id: RecordId) -> Option<(&'s K, &'s mut V)> {
        if id as usize >= self.records.len() {
            return None;
        }
        // A record's bucket (and so its stripe) is fixed while it is live; which stripe to
        // check is read first, then read again once the check passed: under the stripe,
        // it cannot change any more.
        let home = &self.homes[id as usize];
        let h = home.load(Ordering::Relaxed);
        if h & LIVE == 0 {
            return None;
        }
        sec.check((h & !LIVE) as usize & self.stripe_mask);
        if home.load(Ordering::Relaxed) != h {
            return None;
        }
        let rec = self.record(sec, id, true);
        Some((&rec.key, &mut rec.value))
    }

    /// Removes `key`'s record, returning it to this worker's stack.
    pub fn remove(&self, sec: &mut Section<'_>, tw: &mut TableWorker, key: &K, hash: u64) -> bool {
        let Some((b, s, r)) = self.lookup(sec, key, hash) else {
            return false;
        };
        self.bucket(sec, b, true).sig[s] = 0;
        self.homes[r as usize].store(0, Ordering::Relaxed);
        tw.free.push(r);
        tw.removed += 1;
        true
    }

    /// Expires records idle for at least `idle` at time `now`, sweeping up to `max_buckets`
    /// of the buckets this worker sweeps (those whose stripe it owns under flow affinity:
    /// `stripe % workers == worker`, under every strategy, so each bucket has one sweeper),
    /// one section per bucket, from where its last sweep stopped. `on_expire` runs in the
    /// bucket's section before the record is freed (to release what it points to).
    /// Returns the records expired.
    pub fn expire(
        &self,
        sync: &mut WorkerSync,
        tw: &mut TableWorker,
        now: u64,
        idle: u64,
        max_buckets: usize,
        mut on_expire: impl FnMut(&mut Section<'_>, &K, &mut V),
    ) -> usize {
        let me = sync.id();
        let nb = self.buckets.len();
        // the buckets of the stripes s with s % workers == me: nb / stripes of each
        let stripes = self.stripe_mask + 1;
        let my_stripes = (stripes + self.workers - 1 - me.min(stripes)) / self.workers;
        let mine = nb / stripes * my_stripes;
        let todo = max_buckets.min(mine);
        let mut done = 0;
        let mut gone = 0;
        let mut b = tw.sweep % nb;
        let mut scanned = 0;
        while done < todo && scanned < nb {
            if (b & self.stripe_mask) % self.workers == me {
                gone += sync.section(b & self.stripe_mask, |sec| {
                    let mut n = 0;
                    let bk = *self.bucket(sec, b, false);
                    for s in 0..BUCKET_SLOTS {
                        if bk.sig[s] == 0 {
                            continue;
                        }
                        let r = bk.rec[s];
                        let rec = self.record(sec, r, false);
                        if now.saturating_sub(rec.last) < idle {
                            continue;
                        }
                        let rec = self.record(sec, r, true);
                        on_expire(sec, &rec.key, &mut rec.value);
                        self.homes[r as usize].store(0, Ordering::Relaxed);
                        self.bucket(sec, b, true).sig[s] = 0;
                        tw.free.push(r);
                        n += 1;
                    }
                    n
                });
                done += 1;
            }
            b = (b + 1) % nb;
            scanned += 1;
        }
        tw.sweep = b;
        tw.expired += gone as u64;
        gone
    }
}

/// A fixed array of shared objects, element `i` in stripe `i % stripes` (NAT port maps,
/// DHCP leases): read and written only inside a section holding that stripe.
///
/// ```
/// use pktvec_state::{Domain, StripedArray, Strategy, SyncConfig};
/// let d = Domain::new(SyncConfig { strategy: Strategy::Coarse, workers: 1, stripes: 8, ..SyncConfig::default() })?;
/// let a = StripedArray::<u32>::new(&d, "ports", 100);
/// let mut w = d.worker(0);
/// w.section(a.stripe(7), |sec| *a.get_mut(sec, 7) = 5);
/// assert_eq!(w.section(a.stripe(7), |sec| *a.get(sec, 7)), 5);
/// # Ok::<(), pktvec_state::SyncError>(())
/// ```
pub struct StripedArray<T> {
    tag: u16,
    stripe_mask: usize,
    items: Box<[UnsafeCell<T>]>,
}

// SAFETY: as for `FlowTable`: element i is touched only in sections holding stripe
// `i & stripe_mask`, checked by every accessor.
unsafe impl<T: Send> Sync for StripedArray<T> {}
// SAFETY: the array owns its elements.
unsafe impl<T: Send> Send for StripedArray<T> {}

impl<T: Default> StripedArray<T> {
    /// `len` default elements in `domain`, registered as `name`.
    pub fn new(domain: &Arc<crate::Domain>, name: &'static str, len: usize) -> Self {
        StripedArray {
            tag: domain.register(name),
            stripe_mask: domain.stripes() - 1,
            items: (0..len).map(|_| UnsafeCell::new(T::default())).collect(),
        }
    }
}

impl<T> StripedArray<T> {
    /// Elements.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether it has no elements.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Element `i`'s stripe.
    #[inline]
    pub fn stripe(&self, i: usize) -> usize {
        i & self.stripe_mask
    }

    /// Reads element `i`.
    ///
    /// # Panics
    /// If `i` is out of range or the section does not hold its stripe.
    #[inline]
    pub fn get<'s>(&'s self, sec: &'s mut Section<'_>, i: usize) -> &'s T {
        sec.check(i & self.stripe_mask);
        let p = self.items[i].get();
        sec.note_read(self.tag, i as u64, p as *const u8, size_of::<T>());
        // SAFETY: the section holds element i's stripe (checked); see the `Sync` impl.
        unsafe { &*p }
    }

    /// Element `i`, to write.
    ///
    /// # Panics
    /// As [`get`](Self::get).
    #[inline]
    pub fn get_mut<'s>(&'s self, sec: &'s mut Section<'_>, i: usize) -> &'s mut T {
        sec.check(i & self.stripe_mask);
        let p = self.items[i].get();
        sec.note_write(self.tag, i as u64, p as *const u8, size_of::<T>());
        // SAFETY: as in `get`; the returned reference borrows the section mutably, so no
        // other reference from this section outlives it.
        unsafe { &mut *p }
    }
}
