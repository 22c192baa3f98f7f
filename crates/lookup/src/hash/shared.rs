//! Tables that reader threads look up while writer threads change them: **left-right**
//! publication (the [`left_right`] crate) with one lock among the writers.
//!
//! A [`Shared<T, O>`] keeps two copies of a table `T`. Readers look up the *published*
//! copy; a writer applies a batch of changes (operations `O`) to the other copy, publishes
//! it with one atomic pointer swap, and replays the same batch on the old copy at its next
//! publish, once every reader has left it. [`SharedTable`] is this for a [`HashTable`]:
//! insert, remove and clear, alone or in batches, with their results.
//!
//! # Concurrency
//!
//! * **Readers never block and never retry.** Each reader thread has its own [`Reader`]
//!   (a per-reader epoch counter on its own cache line): [`Reader::enter`] increments the
//!   counter, a `SeqCst` fence, loads the published copy's pointer; dropping the guard
//!   increments the counter again. That is three atomic operations per guard, whatever
//!   the guard is used for — a node takes one per vector and does every lookup of the
//!   vector through it, so the bulk lookups run on a plain `&HashTable` (hash + prefetch,
//!   then search), with no atomic, lock or extra dependent load per key.
//! * **No half-written entry.** Writers never touch the published copy: a reader sees the
//!   whole table as of one publish (every change of earlier batches, none of later ones),
//!   including the intermediate states of cuckoo displacements, which happen only in the
//!   unpublished copy. A key present during a whole interval is found by every lookup in
//!   that interval.
//! * **Writers serialise** on a mutex (several data-path threads may learn at once; the
//!   control plane adds and removes). A publish first waits until the readers that were
//!   inside the old copy when it was last published have dropped their guards — one
//!   vector's lookups —, replays the previous batch there, applies the new one, and swaps.
//!   Readers never wait for writers; writers wait for readers only as long as a reader
//!   holds a guard, so **a guard must not be held while the same thread writes** (a second
//!   publish would wait for it forever) — the same rule as a read lock.
//! * **Reclamation** is the two copies' alternation itself: a copy is written only after
//!   every reader that could see it has left (the epoch counters are the grace period), and
//!   both copies are freed when the last [`Shared`] or [`Reader`] of them is dropped. No
//!   entry is ever freed while a reader might read it, and nothing is allocated or freed
//!   per change.
//! * **Cost:** twice the table's memory, every change applied twice, and a publish per
//!   batch; meant for tables read on every packet and changed far less often.
//!
//! Written over the `left-right` crate rather than a per-bucket sequence lock in the table
//! itself: a reader of a seqlocked bucket must retry when a writer overlaps it (unbounded
//! under a busy writer, or a fallback answer that is not the table's), and a cuckoo move
//! between two buckets needs a table-wide counter to be seen atomically; with two copies a
//! reader's only work is the epoch counter, once per guard.
//!
//! ```
//! use pktvec_lookup::hash::shared::{SharedTable, TableOp};
//! use pktvec_lookup::hash::MacTable;
//! use pktvec_packet::wire::MacAddr;
//!
//! let fib = SharedTable::new(MacTable::<u32>::new(1024)?);
//! let a = MacAddr::new([2, 0, 0, 0, 0, 1]);
//! let b = MacAddr::new([2, 0, 0, 0, 0, 2]);
//! assert_eq!(fib.insert(a, 1)?, None);
//!
//! // A reader thread: one guard per vector, then two-phase lookups on the table.
//! let reader = fib.reader();
//! let t = std::thread::spawn(move || {
//!     let table = reader.enter();
//!     let mut out = [None; 2];
//!     table.lookup_bulk(&[a, b], &mut out);
//!     out
//! });
//! let seen = t.join().unwrap();
//! assert_eq!(seen[0], Some(1));
//!
//! // A batch: readers see all of it or none of it.
//! let done = fib.apply([TableOp::Insert(b, 2), TableOp::Insert(a, 3)]);
//! assert_eq!((done.inserted, done.replaced), (1, 1));
//! assert_eq!(fib.remove(&a), Some(3));
//! assert_eq!(fib.read().lookup(&b), Some(2));
//! # Ok::<(), pktvec_lookup::hash::HashError>(())
//! ```

use std::ops::Deref;
use std::sync::{Arc, Mutex, MutexGuard};

use left_right::{ReadHandle, ReadHandleFactory, WriteHandle};
use thread_local::ThreadLocal;

use super::{HashError, HashKey, HashTable};

pub use left_right::{Absorb, ReadGuard};

type Writers<T, O> = Arc<Mutex<WriteHandle<T, O>>>;

/// Locks the writer, recovering a poisoned lock: the copies are changed only inside
/// `Absorb` calls, which do not panic, so a panic elsewhere while the lock was held
/// breaks no invariant.
fn lock<T: Absorb<O>, O>(w: &Mutex<WriteHandle<T, O>>) -> MutexGuard<'_, WriteHandle<T, O>> {
    w.lock().unwrap_or_else(|e| e.into_inner())
}

/// A table `T` shared by reader threads and writers, changed by operations `O` (see the
/// [module docs](self) for the guarantees).
///
/// `T` implements [`Absorb<O>`]: applying the same operations in the same order to two
/// equal copies must leave them equal (the table's operations are deterministic).
///
/// ```
/// use pktvec_lookup::hash::shared::{Absorb, Shared};
///
/// /// A counter; the operation is an addition.
/// #[derive(Clone, Default)]
/// struct Sum(u64);
/// impl Absorb<u64> for Sum {
///     fn absorb_first(&mut self, op: &mut u64, _: &Self) {
///         self.0 += *op;
///     }
///     fn sync_with(&mut self, first: &Self) {
///         self.0 = first.0;
///     }
/// }
///
/// let s = Shared::new(Sum(0));
/// let r = s.reader();
/// let mut w = s.write();
/// w.extend([1, 2, 3]);
/// assert_eq!(r.enter().0, 0); // not published yet
/// w.publish();
/// assert_eq!(w.published().0, 6);
/// drop(w);
/// assert_eq!(r.enter().0, 6);
/// assert_eq!(s.read().0, 6);
/// ```
pub struct Shared<T: Absorb<O> + Sync, O> {
    writer: Writers<T, O>,
    factory: ReadHandleFactory<T>,
    /// One reader per thread for [`read`](Self::read) (control-plane reads).
    control: ThreadLocal<ReadHandle<T>>,
}

impl<T: Absorb<O> + Clone + Sync, O> Shared<T, O> {
    /// Shares `value`: two copies of it (one clone), both published to readers in turn
    /// before this returns, so no later publish copies the whole table.
    pub fn new(value: T) -> Self {
        let (mut w, r) = left_right::new_from_empty(value);
        // The first publish only swaps; the second syncs the other copy (a whole copy,
        // here rather than on some writer's first change).
        w.publish();
        w.publish();
        Shared {
            writer: Arc::new(Mutex::new(w)),
            factory: r.factory(),
            control: ThreadLocal::new(),
        }
    }
}

impl<T: Absorb<O> + Sync, O> Shared<T, O> {
    /// A reader for one thread (a node of one graph): its own epoch counter, registered
    /// under the lock a writer holds while it waits for readers (make readers at setup,
    /// not per packet). It keeps the copies alive.
    pub fn reader(&self) -> Reader<T, O> {
        Reader {
            handle: self.factory.handle(),
            _writer: Arc::clone(&self.writer),
        }
    }

    /// The published copy, through this thread's own reader (made on the thread's first
    /// call): for the control plane and for tests. Do not write on this thread while the
    /// guard lives (see the [module docs](self)).
    ///
    /// Making a reader (here on a thread's first call, or [`reader`](Self::reader)) takes
    /// the lock a writer holds while it waits for readers, so it may wait for a publish.
    pub fn read(&self) -> ReadGuard<'_, T> {
        let h = self.control.get_or(|| self.factory.handle());
        match h.enter() {
            Some(g) => g,
            // `enter` is `None` only once the write handle is dropped; `self` holds it.
            None => unreachable!("the write handle lives as long as the Shared"),
        }
    }

    /// Exclusive write access (other writers wait; readers do not). Operations appended
    /// are published by [`Writer::publish`], or when the writer is dropped.
    pub fn write(&self) -> Writer<'_, T, O> {
        Writer {
            w: lock(&self.writer),
        }
    }
}

/// One reader's handle on a [`Shared`] table: `Send`, not `Sync` — one per thread.
///
/// ```
/// use pktvec_lookup::hash::shared::SharedTable;
/// use pktvec_lookup::hash::MacTable;
/// use pktvec_packet::wire::MacAddr;
///
/// let fib = SharedTable::new(MacTable::<u32>::new(64)?);
/// let m = MacAddr::new([2, 0, 0, 0, 0, 7]);
/// let reader = fib.reader();
/// fib.insert(m, 4)?;
/// let t = reader.enter();
/// let h = t.hash(&m);
/// t.prefetch(h);
/// assert_eq!(t.lookup_hashed(&m, h), Some(4));
/// # Ok::<(), pktvec_lookup::hash::HashError>(())
/// ```
pub struct Reader<T: Absorb<O>, O> {
    handle: ReadHandle<T>,
    /// Keeps the write handle, and so both copies, alive while this reader exists.
    _writer: Writers<T, O>,
}

impl<T: Absorb<O>, O> Reader<T, O> {
    /// The published copy, until the guard is dropped: a writer's next publish but one
    /// waits for that, so hold it for one vector, not longer. Three atomic operations in
    /// all (enter and leave); never blocks.
    #[inline]
    pub fn enter(&self) -> ReadGuard<'_, T> {
        match self.handle.enter() {
            Some(g) => g,
            // `enter` is `None` only once the write handle is dropped; `_writer` holds it.
            None => unreachable!("the write handle lives as long as its readers"),
        }
    }
}

impl<T: Absorb<O>, O> Clone for Reader<T, O> {
    /// Another reader (its own epoch counter), for another thread.
    fn clone(&self) -> Self {
        Reader {
            handle: self.handle.clone(),
            _writer: Arc::clone(&self._writer),
        }
    }
}

/// Exclusive write access to a [`Shared`] table, from [`Shared::write`].
pub struct Writer<'a, T: Absorb<O>, O> {
    w: MutexGuard<'a, WriteHandle<T, O>>,
}

impl<T: Absorb<O>, O> Writer<'_, T, O> {
    /// Queues one operation for the next publish.
    pub fn append(&mut self, op: O) {
        self.w.append(op);
    }

    /// Queues operations for the next publish (their order is kept).
    pub fn extend(&mut self, ops: impl IntoIterator<Item = O>) {
        self.w.extend(ops);
    }

    /// Makes every queued operation visible to readers at once: waits for the readers of
    /// the unpublished copy to leave it, applies the operations there and swaps.
    pub fn publish(&mut self) {
        self.w.publish();
    }

    /// The published copy (what readers see now).
    pub fn published(&self) -> ReadGuard<'_, T> {
        match self.w.enter() {
            Some(g) => g,
            // `enter` is `None` only once the write handle is dropped; `self` holds it.
            None => unreachable!("the write handle is held"),
        }
    }
}

impl<T: Absorb<O>, O> Drop for Writer<'_, T, O> {
    fn drop(&mut self) {
        self.w.flush();
    }
}

/// A change of a [`SharedTable`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TableOp<K, V> {
    /// Insert the key or replace its value ([`HashTable::insert`]).
    Insert(K, V),
    /// Remove the key ([`HashTable::remove`]).
    Remove(K),
    /// Remove every key ([`HashTable::clear`]).
    Clear,
}

/// What a batch of [`TableOp`]s did (or, from [`TableCopy::totals`], every batch so
/// far).
///
/// ```
/// use pktvec_lookup::hash::shared::TableOutcome;
/// let a = TableOutcome { inserted: 5, failed: 1, ..TableOutcome::default() };
/// let b = TableOutcome { inserted: 7, failed: 1, removed: 2, ..TableOutcome::default() };
/// assert_eq!(b.since(&a), TableOutcome { inserted: 2, removed: 2, ..TableOutcome::default() });
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct TableOutcome {
    /// New keys inserted.
    pub inserted: u64,
    /// Inserts of present keys (value replaced, possibly by the same value).
    pub replaced: u64,
    /// Inserts refused ([`HashError::Full`] or [`HashError::NoSlot`]).
    pub failed: u64,
    /// Keys removed (by [`TableOp::Remove`] or [`TableOp::Clear`]).
    pub removed: u64,
}

impl TableOutcome {
    /// The counts of `self` less those of an earlier `before`.
    pub fn since(&self, before: &TableOutcome) -> TableOutcome {
        TableOutcome {
            inserted: self.inserted.wrapping_sub(before.inserted),
            replaced: self.replaced.wrapping_sub(before.replaced),
            failed: self.failed.wrapping_sub(before.failed),
            removed: self.removed.wrapping_sub(before.removed),
        }
    }
}

/// One of the two copies of a [`SharedTable`]: the [`HashTable`] (it derefs to it) and the
/// counts of the operations applied to it.
#[derive(Clone)]
pub struct TableCopy<K, V, const N: usize> {
    table: HashTable<K, V, N>,
    totals: TableOutcome,
    last: Result<Option<V>, HashError>,
}

impl<K, V, const N: usize> Deref for TableCopy<K, V, N> {
    type Target = HashTable<K, V, N>;
    #[inline(always)]
    fn deref(&self) -> &HashTable<K, V, N> {
        &self.table
    }
}

impl<K: HashKey, V: Copy + Default, const N: usize> TableCopy<K, V, N> {
    /// A copy holding `table`.
    ///
    /// ```
    /// use pktvec_lookup::hash::shared::{TableCopy, TableOp};
    /// use pktvec_lookup::hash::MacTable;
    /// use pktvec_packet::wire::MacAddr;
    /// let mut c = TableCopy::new(MacTable::<u32>::new(4)?);
    /// let m = MacAddr::new([2, 0, 0, 0, 0, 1]);
    /// assert_eq!(c.apply(&TableOp::Insert(m, 9)), Ok(None));
    /// assert_eq!(c.apply(&TableOp::Remove(m)), Ok(Some(9)));
    /// assert_eq!((c.totals().inserted, c.totals().removed), (1, 1));
    /// # Ok::<(), pktvec_lookup::hash::HashError>(())
    /// ```
    pub fn new(table: HashTable<K, V, N>) -> Self {
        TableCopy {
            table,
            totals: TableOutcome::default(),
            last: Ok(None),
        }
    }

    /// Applies one operation and counts it. Returns what [`HashTable::insert`] returns
    /// for an insert, the removed value for a remove, `Ok(None)` for a clear.
    pub fn apply(&mut self, op: &TableOp<K, V>) -> Result<Option<V>, HashError> {
        let r = match *op {
            TableOp::Insert(k, v) => {
                let r = self.table.insert(k, v);
                match r {
                    Ok(None) => self.totals.inserted += 1,
                    Ok(Some(_)) => self.totals.replaced += 1,
                    Err(_) => self.totals.failed += 1,
                }
                r
            }
            TableOp::Remove(ref k) => {
                let r = self.table.remove(k);
                self.totals.removed += u64::from(r.is_some());
                Ok(r)
            }
            TableOp::Clear => {
                self.totals.removed += self.table.len() as u64;
                self.table.clear();
                Ok(None)
            }
        };
        self.last = r;
        r
    }

    /// The counts of every operation applied to this copy.
    pub fn totals(&self) -> TableOutcome {
        self.totals
    }

    /// The result of the last operation applied (see [`apply`](Self::apply)).
    pub fn last(&self) -> Result<Option<V>, HashError> {
        self.last
    }

    /// The table.
    pub fn table(&self) -> &HashTable<K, V, N> {
        &self.table
    }
}

impl<K: HashKey, V: Copy + Default, const N: usize> Absorb<TableOp<K, V>> for TableCopy<K, V, N> {
    fn absorb_first(&mut self, op: &mut TableOp<K, V>, _: &Self) {
        // The result is kept in `last` and counted in `totals`.
        let _ = self.apply(op);
    }

    fn absorb_second(&mut self, op: TableOp<K, V>, _: &Self) {
        let _ = self.apply(&op);
    }

    fn sync_with(&mut self, first: &Self) {
        // The bucket vectors have the same length: a copy in place, no allocation.
        self.table.buckets.clone_from(&first.table.buckets);
        self.table.len = first.table.len;
        self.table.capacity = first.table.capacity;
        self.table.seed = first.table.seed;
        self.totals = first.totals;
        self.last = first.last;
    }
}

/// A [`HashTable`] shared by reader threads and writers (see the [module docs](self)):
/// each thread that looks keys up takes a [`TableReader`]; changes are published one by
/// one ([`insert`](Self::insert), [`remove`](Self::remove)) or in batches
/// ([`apply`](Self::apply)).
pub struct SharedTable<K: HashKey + Send + Sync, V: Copy + Default + Send + Sync, const N: usize> {
    shared: Shared<TableCopy<K, V, N>, TableOp<K, V>>,
}

/// A reader of a [`SharedTable`] (one per thread): [`Reader::enter`] gives the published
/// copy, which derefs to the [`HashTable`].
pub type TableReader<K, V, const N: usize> = Reader<TableCopy<K, V, N>, TableOp<K, V>>;

impl<K: HashKey + Send + Sync, V: Copy + Default + Send + Sync, const N: usize>
    SharedTable<K, V, N>
{
    /// Shares `table` (filled or empty; a second copy is made).
    pub fn new(table: HashTable<K, V, N>) -> Self {
        SharedTable {
            shared: Shared::new(TableCopy::new(table)),
        }
    }

    /// A reader for one thread.
    pub fn reader(&self) -> TableReader<K, V, N> {
        self.shared.reader()
    }

    /// The published table, through this thread's own reader (control plane, tests).
    pub fn read(&self) -> ReadGuard<'_, TableCopy<K, V, N>> {
        self.shared.read()
    }

    /// Inserts or replaces `key → value` and publishes it; the result is
    /// [`HashTable::insert`]'s (on an error the table is unchanged).
    pub fn insert(&self, key: K, value: V) -> Result<Option<V>, HashError> {
        self.write().insert(key, value)
    }

    /// Removes `key` and publishes that; returns its value if it was present.
    pub fn remove(&self, key: &K) -> Option<V> {
        self.write().remove(key)
    }

    /// Removes every key and publishes that.
    pub fn clear(&self) {
        self.write().clear();
    }

    /// Applies `ops` in order and publishes them at once: a reader sees the table before
    /// the batch or after it, never part of it. Returns what the batch did.
    pub fn apply(&self, ops: impl IntoIterator<Item = TableOp<K, V>>) -> TableOutcome {
        self.write().apply(ops)
    }

    /// Exclusive write access for several changes that no other writer may come between
    /// (each still published as it is made).
    ///
    /// ```
    /// use pktvec_lookup::hash::shared::SharedTable;
    /// use pktvec_lookup::hash::MacTable;
    /// use pktvec_packet::wire::MacAddr;
    /// let fib = SharedTable::new(MacTable::<u32>::new(8)?);
    /// let mut w = fib.write();
    /// w.clear();
    /// for i in 0..4u8 {
    ///     w.insert(MacAddr::new([2, 0, 0, 0, 0, i]), u32::from(i))?;
    /// }
    /// drop(w);
    /// assert_eq!(fib.read().len(), 4);
    /// # Ok::<(), pktvec_lookup::hash::HashError>(())
    /// ```
    pub fn write(&self) -> TableWriter<'_, K, V, N> {
        TableWriter {
            w: self.shared.write(),
        }
    }
}

/// Exclusive write access to a [`SharedTable`], from [`SharedTable::write`]: every change
/// is published before its call returns, with its result.
pub struct TableWriter<
    'a,
    K: HashKey + Send + Sync,
    V: Copy + Default + Send + Sync,
    const N: usize,
> {
    w: Writer<'a, TableCopy<K, V, N>, TableOp<K, V>>,
}

impl<K: HashKey + Send + Sync, V: Copy + Default + Send + Sync, const N: usize>
    TableWriter<'_, K, V, N>
{
    /// Inserts or replaces `key → value`; see [`SharedTable::insert`].
    pub fn insert(&mut self, key: K, value: V) -> Result<Option<V>, HashError> {
        self.w.append(TableOp::Insert(key, value));
        self.w.publish();
        self.w.published().last()
    }

    /// Removes `key`; see [`SharedTable::remove`].
    pub fn remove(&mut self, key: &K) -> Option<V> {
        self.w.append(TableOp::Remove(*key));
        self.w.publish();
        self.w.published().last().ok().flatten()
    }

    /// Removes every key.
    pub fn clear(&mut self) {
        self.w.append(TableOp::Clear);
        self.w.publish();
    }

    /// Applies a batch; see [`SharedTable::apply`].
    pub fn apply(&mut self, ops: impl IntoIterator<Item = TableOp<K, V>>) -> TableOutcome {
        let before = self.w.published().totals();
        self.w.extend(ops);
        self.w.publish();
        let after = self.w.published().totals();
        after.since(&before)
    }

    /// The published table.
    pub fn published(&self) -> ReadGuard<'_, TableCopy<K, V, N>> {
        self.w.published()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::MacTable;
    use pktvec_packet::wire::MacAddr;

    fn mac(i: u32) -> MacAddr {
        let b = i.to_be_bytes();
        MacAddr::new([2, 0, b[0], b[1], b[2], b[3]])
    }

    #[test]
    fn both_copies_stay_equal_through_batches_and_failures() {
        // Near capacity, so inserts displace keys and some fail: the replayed copy must
        // make the same moves and refuse the same keys.
        let t = SharedTable::new(MacTable::<u32>::new(200).unwrap());
        let mut total = TableOutcome::default();
        for round in 0..20u32 {
            let ops = (0..60u32).map(|i| {
                let k = (i * 7 + round * 13) % 260;
                if (i + round) % 5 == 0 {
                    TableOp::Remove(mac(k))
                } else {
                    TableOp::Insert(mac(k), k * 100 + round)
                }
            });
            let o = t.apply(ops);
            total.inserted += o.inserted;
            total.removed += o.removed;
            total.failed += o.failed;
            // Publish twice more (empty batches): readers then see the other copy, which
            // took the batch by replay.
            for _ in 0..2 {
                t.apply([]);
                let r = t.read();
                r.check_invariants().unwrap();
                assert_eq!(r.totals().inserted, total.inserted);
                assert_eq!(
                    r.len() as u64,
                    total.inserted - total.removed,
                    "round {round}"
                );
            }
        }
        assert!(total.failed > 0, "the test should reach a full table");
    }

    #[test]
    fn single_changes_report_their_results() {
        let t = SharedTable::new(MacTable::<u32>::new(2).unwrap());
        assert_eq!(t.insert(mac(1), 1), Ok(None));
        assert_eq!(t.insert(mac(1), 2), Ok(Some(1)));
        assert_eq!(t.insert(mac(2), 2), Ok(None));
        assert_eq!(t.insert(mac(3), 3), Err(HashError::Full { capacity: 2 }));
        assert_eq!(t.remove(&mac(3)), None);
        assert_eq!(t.remove(&mac(1)), Some(2));
        t.clear();
        assert!(t.read().is_empty());
    }

    #[test]
    fn a_reader_keeps_the_table_alive() {
        let t = SharedTable::new(MacTable::<u32>::new(8).unwrap());
        t.insert(mac(5), 5).unwrap();
        let r = t.reader();
        drop(t);
        assert_eq!(r.enter().lookup(&mac(5)), Some(5));
        let r2 = r.clone();
        drop(r);
        assert_eq!(r2.enter().lookup(&mac(5)), Some(5));
    }

    #[test]
    fn readers_do_not_wait_for_a_waiting_writer() {
        use std::sync::mpsc;
        use std::time::Duration;
        let t = Arc::new(SharedTable::new(MacTable::<u32>::new(8).unwrap()));
        let (r1, r2) = (t.reader(), t.reader());
        let old = r1.enter();
        // The first publish swaps copies; the second must wait for `old` to leave its copy.
        t.insert(mac(1), 1).unwrap();
        let (tx, rx) = mpsc::channel();
        let t2 = Arc::clone(&t);
        let writer = std::thread::spawn(move || {
            t2.insert(mac(2), 2).unwrap();
            tx.send(()).unwrap();
        });
        assert!(rx.recv_timeout(Duration::from_millis(100)).is_err());
        // Meanwhile another reader enters at once and sees the first publish; the old
        // guard still sees the copy as it was.
        for _ in 0..1000 {
            assert_eq!(r2.enter().lookup(&mac(1)), Some(1));
        }
        assert_eq!(old.lookup(&mac(1)), None);
        drop(old);
        rx.recv().unwrap();
        writer.join().unwrap();
        assert_eq!(r2.enter().lookup(&mac(2)), Some(2));
        assert_eq!(r1.enter().len(), 2);
    }

    #[test]
    fn nested_guards_on_one_reader() {
        let t = SharedTable::new(MacTable::<u32>::new(8).unwrap());
        let r = t.reader();
        let a = r.enter();
        let b = r.enter();
        drop(a);
        assert!(b.is_empty());
        drop(b);
        // With every guard dropped, two publishes in a row do not wait.
        t.insert(mac(1), 1).unwrap();
        t.insert(mac(2), 2).unwrap();
        assert_eq!(r.enter().len(), 2);
    }
}
