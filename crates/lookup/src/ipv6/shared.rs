//! An IPv6 FIB that reader threads look up while a control thread changes it
//! ([`SharedLpm6`]): two copies of an [`Lpm6`] under **left-right** publication (the
//! [`Shared`] wrapper of [`crate::hash::shared`], which describes the mechanism).
//!
//! # Concurrency
//!
//! * **Readers never block and never retry.** Each reader thread (a graph's `ip6-lookup`
//!   node) has its own [`Lpm6Reader`] (a per-reader epoch counter). [`Reader::enter`] costs
//!   three atomic operations, whatever the guard is used for: a node enters once per
//!   vector, and every lookup of the vector ([`Lpm6::prefetch`], [`Lpm6::lookup`],
//!   [`Lpm6::lookup_vector`]) runs on a plain `&Lpm6` with no atomic per key.
//! * **No half-made change.** A change rebuilds subtrees, frees and reuses trie lines and
//!   records, and may grow the trie's arrays; all of that happens in the copy no reader is
//!   in. A reader sees the routes of one publish, whole: a prefix present during a whole
//!   interval is matched by every lookup in it, and an answer is always the longest match
//!   among the routes of some publish.
//! * **Writers** ([`add`](SharedLpm6::add), [`delete`](SharedLpm6::delete),
//!   [`apply`](SharedLpm6::apply) for a batch published at once) serialise on a mutex,
//!   apply the change to the unpublished copy and publish it with one pointer swap. A
//!   publish first waits for the readers still in the other copy to leave it (one vector's
//!   lookups), so **never change the FIB on a thread that holds a guard**.
//! * **Reclamation:** a copy is changed only once every reader that could see it has left
//!   (the epoch counters are the grace period); nothing a reader may still read is freed or
//!   overwritten. Both copies are freed with the last [`SharedLpm6`] or [`Lpm6Reader`].
//! * **Cost:** twice the memory of one [`Lpm6`] (twice its
//!   [`lookup_bytes`](super::Lpm6Stats::lookup_bytes) +
//!   [`control_bytes`](super::Lpm6Stats::control_bytes); the first level alone is 2 × 256 KiB), and every change
//!   is applied twice: to the unpublished copy when it is published, and replayed on the
//!   other copy at the next publish, each time with the single table's update cost
//!   ([`Lpm6::add`]). Loading a whole table is cheaper before sharing it:
//!   `SharedLpm6::new(Lpm6::from_routes(..)?)` builds once and copies once.
//!
//! ```
//! use pktvec_lookup::ipv6::{Lpm6, Lpm6Op, SharedLpm6};
//! use std::sync::Arc;
//!
//! let fib = Arc::new(SharedLpm6::new(Lpm6::from_routes([(0x2001_0db8u128 << 96, 32u8, 1)])?));
//! // A worker thread's reader: one guard per vector, then vector lookups on the Lpm6.
//! let reader = fib.reader();
//! let worker = std::thread::spawn(move || {
//!     let keys = [0x2001_0db8_0001u128 << 80, 0x2001_0db9u128 << 96];
//!     let mut out = [None; 2];
//!     reader.enter().lookup_vector(&keys, &mut out)?;
//!     Ok::<_, pktvec_lookup::ipv6::Lpm6Error>(out)
//! });
//! // Meanwhile the control thread changes routes (the worker sees each one whole).
//! fib.add(0x2001_0db8_0001u128 << 80, 48, 2)?;
//! let out = worker.join().unwrap()?;
//! assert!(out[0] == Some(1) || out[0] == Some(2));
//! assert_eq!(out[1], None);
//!
//! // A batch: readers see the FIB before it or after it.
//! let done = fib.apply([
//!     Lpm6Op::Delete { addr: 0x2001_0db8u128 << 96, len: 32 },
//!     Lpm6Op::Add { addr: 0x2001_0db9u128 << 96, len: 32, next_hop: 3 },
//! ])?;
//! assert_eq!((done.inserted, done.removed), (1, 1));
//! assert_eq!(fib.lookup(0x2001_0db9u128 << 96 | 1), Some(3));
//! assert_eq!(fib.len(), 2);
//! # Ok::<(), pktvec_lookup::ipv6::Lpm6Error>(())
//! ```
//!
//! [`Reader::enter`]: crate::hash::shared::Reader::enter

use std::ops::Deref;

use super::{Lpm6, Lpm6Error};
use crate::hash::shared::{Absorb, ReadGuard, Reader, Shared, TableOutcome};

/// A change of a [`SharedLpm6`] (host bits of `addr` are ignored, as by [`Lpm6::add`]).
///
/// ```
/// use pktvec_lookup::ipv6::{Lpm6Op, SharedLpm6};
/// let fib = SharedLpm6::default();
/// let move_route = [
///     Lpm6Op::Delete { addr: 0x2001u128 << 112, len: 16 },
///     Lpm6Op::Add { addr: 0x2002u128 << 112, len: 16, next_hop: 1 },
/// ];
/// assert_eq!(fib.apply(move_route)?.inserted, 1);
/// # Ok::<(), pktvec_lookup::ipv6::Lpm6Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lpm6Op {
    /// Add `addr/len → next_hop`, or replace the prefix's next hop ([`Lpm6::add`]).
    Add {
        /// The prefix's address.
        addr: u128,
        /// Its length (0 to 128).
        len: u8,
        /// Its next hop (at most [`MAX_NEXT_HOP`](super::MAX_NEXT_HOP)).
        next_hop: u32,
    },
    /// Remove `addr/len` ([`Lpm6::delete`]).
    Delete {
        /// The prefix's address.
        addr: u128,
        /// Its length (0 to 128).
        len: u8,
    },
}

impl Lpm6Op {
    /// The error [`Lpm6::add`] or [`Lpm6::delete`] would give for these arguments whatever
    /// the table holds (a length above 128, a next hop above the maximum).
    fn check(&self) -> Result<(), Lpm6Error> {
        match *self {
            Lpm6Op::Add {
                addr,
                len,
                next_hop,
            } => Lpm6::check(addr, len, next_hop).map(|_| ()),
            Lpm6Op::Delete { len, .. } if len > 128 => Err(Lpm6Error::BadLength(len)),
            Lpm6Op::Delete { .. } => Ok(()),
        }
    }
}

/// One of the two copies of a [`SharedLpm6`]: the [`Lpm6`] (it derefs to it) and the
/// counts of the changes applied to it. A reader's guard derefs to this.
#[derive(Clone, Debug)]
pub struct Lpm6Copy {
    lpm: Lpm6,
    totals: TableOutcome,
    last: Result<Option<u32>, Lpm6Error>,
}

impl Deref for Lpm6Copy {
    type Target = Lpm6;
    #[inline(always)]
    fn deref(&self) -> &Lpm6 {
        &self.lpm
    }
}

impl Lpm6Copy {
    /// A copy holding `lpm`.
    ///
    /// ```
    /// use pktvec_lookup::ipv6::{Lpm6, Lpm6Copy, Lpm6Op};
    /// let mut c = Lpm6Copy::new(Lpm6::new());
    /// assert_eq!(c.apply(&Lpm6Op::Add { addr: 1u128 << 127, len: 1, next_hop: 4 }), Ok(None));
    /// assert_eq!(c.lookup(u128::MAX), Some(4));
    /// assert_eq!(c.apply(&Lpm6Op::Delete { addr: 1u128 << 127, len: 1 }), Ok(Some(4)));
    /// assert_eq!((c.totals().inserted, c.totals().removed), (1, 1));
    /// ```
    pub fn new(lpm: Lpm6) -> Self {
        Lpm6Copy {
            lpm,
            totals: TableOutcome::default(),
            last: Ok(None),
        }
    }

    /// Applies one change and counts it: [`Lpm6::add`]'s or [`Lpm6::delete`]'s result.
    /// Counted as new prefixes ([`inserted`](TableOutcome::inserted)), next hops replaced
    /// ([`replaced`](TableOutcome::replaced), possibly by the same one), prefixes removed
    /// ([`removed`](TableOutcome::removed)) and refused changes
    /// ([`failed`](TableOutcome::failed)).
    pub fn apply(&mut self, op: &Lpm6Op) -> Result<Option<u32>, Lpm6Error> {
        let r = match *op {
            Lpm6Op::Add {
                addr,
                len,
                next_hop,
            } => {
                let r = self.lpm.add(addr, len, next_hop);
                match r {
                    Ok(None) => self.totals.inserted += 1,
                    Ok(Some(_)) => self.totals.replaced += 1,
                    Err(_) => self.totals.failed += 1,
                }
                r
            }
            Lpm6Op::Delete { addr, len } => {
                let r = self.lpm.delete(addr, len);
                match r {
                    Ok(Some(_)) => self.totals.removed += 1,
                    Ok(None) => {}
                    Err(_) => self.totals.failed += 1,
                }
                r
            }
        };
        self.last = r.clone();
        r
    }

    /// The counts of every change applied to this copy.
    pub fn totals(&self) -> TableOutcome {
        self.totals
    }

    /// The result of the last change applied (see [`apply`](Self::apply)).
    pub fn last(&self) -> Result<Option<u32>, Lpm6Error> {
        self.last.clone()
    }

    /// The table.
    pub fn lpm(&self) -> &Lpm6 {
        &self.lpm
    }
}

impl Absorb<Lpm6Op> for Lpm6Copy {
    fn absorb_first(&mut self, op: &mut Lpm6Op, _: &Self) {
        // The result is kept in `last` and counted in `totals`. `Lpm6`'s updates are
        // deterministic, so the replay on the other copy makes the same trie.
        let _ = self.apply(op);
    }

    fn absorb_second(&mut self, op: Lpm6Op, _: &Self) {
        let _ = self.apply(&op);
    }

    fn sync_with(&mut self, first: &Self) {
        // Once, when the FIB is shared (`Vec::clone_from` reuses the allocations).
        self.lpm.clone_from(&first.lpm);
        self.totals = first.totals;
        self.last = first.last.clone();
    }
}

/// One reader of a [`SharedLpm6`], for one thread: [`Reader::enter`] gives the published
/// copy, which derefs to the [`Lpm6`]. Cloning a reader makes another (for another thread).
///
/// ```
/// use pktvec_lookup::ipv6::{Lpm6Reader, SharedLpm6};
/// let fib = SharedLpm6::default();
/// fib.add(0u128, 0, 2)?;
/// let reader: Lpm6Reader = fib.reader();
/// let mut out = [None; 3];
/// reader.enter().lookup_vector(&[1u128, 2, 3], &mut out)?;
/// assert_eq!(out, [Some(2); 3]);
/// # Ok::<(), pktvec_lookup::ipv6::Lpm6Error>(())
/// ```
pub type Lpm6Reader = Reader<Lpm6Copy, Lpm6Op>;

/// An IPv6 LPM table shared by reader threads and a control plane that changes it; see the
/// [module docs](self) for the guarantees and the cost.
///
/// ```
/// use pktvec_lookup::ipv6::{Lpm6, SharedLpm6};
/// let fib = SharedLpm6::new(Lpm6::new());
/// let r = fib.reader();
/// assert_eq!(fib.add(0xfe80u128 << 112, 10, 7), Ok(None));
/// let t = r.enter(); // one guard per vector
/// t.prefetch(0xfe80u128 << 112 | 1);
/// assert_eq!(t.lookup(0xfe80u128 << 112 | 1), Some(7));
/// ```
pub struct SharedLpm6 {
    shared: Shared<Lpm6Copy, Lpm6Op>,
}

impl Default for SharedLpm6 {
    fn default() -> Self {
        SharedLpm6::new(Lpm6::new())
    }
}

impl std::fmt::Debug for SharedLpm6 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedLpm6")
            .field("published", &*self.read())
            .finish()
    }
}

/// Keeps only the last change of each prefix in `ops`, in the order of those last
/// changes: a batch is published at once, so readers see its end state and never an
/// intermediate one, and each prefix's subtree is rebuilt once per copy instead of once per
/// change (a route that flaps within a batch costs one rebuild).
fn coalesce(ops: Vec<Lpm6Op>) -> Vec<Lpm6Op> {
    let key = |op: &Lpm6Op| {
        let (addr, len) = match *op {
            Lpm6Op::Add { addr, len, .. } | Lpm6Op::Delete { addr, len } => (addr, len),
        };
        let mask = u128::MAX.checked_shl(128 - u32::from(len)).unwrap_or(0);
        (addr & mask, len)
    };
    if ops.len() < 2 {
        return ops;
    }
    let mut seen = std::collections::HashSet::with_capacity(ops.len());
    let mut kept: Vec<Lpm6Op> = ops
        .into_iter()
        .rev()
        .filter(|op| seen.insert(key(op)))
        .collect();
    kept.reverse();
    kept
}

impl SharedLpm6 {
    /// Shares `lpm` (filled or empty; a second copy is made).
    ///
    /// ```
    /// use pktvec_lookup::ipv6::{Lpm6, SharedLpm6};
    /// let fib = SharedLpm6::new(Lpm6::from_routes([(0u128, 0u8, 1)])?);
    /// assert_eq!(fib.lookup(42u128), Some(1));
    /// # Ok::<(), pktvec_lookup::ipv6::Lpm6Error>(())
    /// ```
    pub fn new(lpm: Lpm6) -> Self {
        SharedLpm6 {
            shared: Shared::new(Lpm6Copy::new(lpm)),
        }
    }

    /// A reader for one thread (an `ip6-lookup` node makes its own when it is created).
    /// Make readers at setup: making one may wait for a publish.
    pub fn reader(&self) -> Lpm6Reader {
        self.shared.reader()
    }

    /// The published table, through this thread's own reader (control plane and tests):
    /// it derefs to the [`Lpm6`]. Do not change the FIB on this thread while the guard
    /// lives.
    ///
    /// ```
    /// use pktvec_lookup::ipv6::SharedLpm6;
    /// let fib = SharedLpm6::default();
    /// fib.add(0x2001u128 << 112, 16, 5)?;
    /// let t = fib.read();
    /// assert_eq!(t.routes().collect::<Vec<_>>(), vec![(0x2001u128 << 112, 16, 5)]);
    /// assert_eq!(t.stats().routes, 1);
    /// # Ok::<(), pktvec_lookup::ipv6::Lpm6Error>(())
    /// ```
    pub fn read(&self) -> ReadGuard<'_, Lpm6Copy> {
        self.shared.read()
    }

    /// Adds `addr/len → next_hop` (or replaces the prefix's next hop) and publishes it:
    /// [`Lpm6::add`]'s result. On an error nothing is published.
    ///
    /// ```
    /// use pktvec_lookup::ipv6::{Lpm6Error, SharedLpm6};
    /// let fib = SharedLpm6::default();
    /// assert_eq!(fib.add(0x2001u128 << 112, 16, 1), Ok(None));
    /// assert_eq!(fib.add(0x2001u128 << 112, 16, 2), Ok(Some(1)));
    /// assert_eq!(fib.add(0u128, 129, 1), Err(Lpm6Error::BadLength(129)));
    /// ```
    pub fn add(
        &self,
        addr: impl Into<u128>,
        len: u8,
        next_hop: u32,
    ) -> Result<Option<u32>, Lpm6Error> {
        self.change(Lpm6Op::Add {
            addr: addr.into(),
            len,
            next_hop,
        })
    }

    /// Removes `addr/len` and publishes that: its next hop, or `Ok(None)` if it was not
    /// present ([`Lpm6::delete`]'s result).
    ///
    /// ```
    /// use pktvec_lookup::ipv6::SharedLpm6;
    /// let fib = SharedLpm6::default();
    /// fib.add(0x2001u128 << 112, 16, 1)?;
    /// assert_eq!(fib.delete(0x2001u128 << 112, 16), Ok(Some(1)));
    /// assert_eq!(fib.delete(0x2001u128 << 112, 16), Ok(None));
    /// assert_eq!(fib.lookup(0x2001u128 << 112), None);
    /// # Ok::<(), pktvec_lookup::ipv6::Lpm6Error>(())
    /// ```
    pub fn delete(&self, addr: impl Into<u128>, len: u8) -> Result<Option<u32>, Lpm6Error> {
        self.change(Lpm6Op::Delete {
            addr: addr.into(),
            len,
        })
    }

    fn change(&self, op: Lpm6Op) -> Result<Option<u32>, Lpm6Error> {
        op.check()?;
        let mut w = self.shared.write();
        w.append(op);
        w.publish();
        let r = w.published().last();
        r
    }

    /// Applies a batch of changes in order and publishes them at once: a reader sees the
    /// FIB before the batch or after it, never part of it. Several changes of one prefix in
    /// a batch come down to the last one (the only one a reader could see), applied once.
    /// Returns what the applied changes did (see [`Lpm6Copy::apply`] for the counts).
    ///
    /// ```
    /// use pktvec_lookup::ipv6::{Lpm6Error, Lpm6Op, SharedLpm6};
    /// let fib = SharedLpm6::default();
    /// let done = fib.apply((0..4u128).map(|i| Lpm6Op::Add { addr: i << 120, len: 8, next_hop: 1 }))?;
    /// assert_eq!(done.inserted, 4);
    /// let bad = fib.apply([Lpm6Op::Delete { addr: 0, len: 8 }, Lpm6Op::Delete { addr: 0, len: 200 }]);
    /// assert_eq!(bad, Err(Lpm6Error::BadLength(200)));
    /// assert_eq!(fib.len(), 4); // nothing of the refused batch
    /// // a route that flaps within a batch: one change, its last
    /// let flap = [Lpm6Op::Delete { addr: 0, len: 8 }, Lpm6Op::Add { addr: 0, len: 8, next_hop: 9 }];
    /// assert_eq!(fib.apply(flap)?.replaced, 1);
    /// assert_eq!(fib.lookup(1u128), Some(9));
    /// # Ok::<(), Lpm6Error>(())
    /// ```
    ///
    /// # Errors
    /// A change with a length above 128 or a next hop above
    /// [`MAX_NEXT_HOP`](super::MAX_NEXT_HOP): nothing of the batch is published. A change
    /// the table refuses while applying it ([`Lpm6Error::Full`]) is counted in
    /// [`failed`](TableOutcome::failed) and the rest of the batch is applied.
    pub fn apply(&self, ops: impl IntoIterator<Item = Lpm6Op>) -> Result<TableOutcome, Lpm6Error> {
        let ops: Vec<Lpm6Op> = ops.into_iter().collect();
        ops.iter().try_for_each(Lpm6Op::check)?;
        let ops = coalesce(ops);
        let mut w = self.shared.write();
        let before = w.published().totals();
        w.extend(ops);
        w.publish();
        let after = w.published().totals();
        Ok(after.since(&before))
    }

    /// Number of routes (of the published copy).
    ///
    /// ```
    /// use pktvec_lookup::ipv6::SharedLpm6;
    /// let fib = SharedLpm6::default();
    /// assert!(fib.is_empty());
    /// fib.add(0u128, 8, 1)?;
    /// fib.add(0u128, 8, 2)?; // replaces
    /// assert_eq!(fib.len(), 1);
    /// # Ok::<(), pktvec_lookup::ipv6::Lpm6Error>(())
    /// ```
    pub fn len(&self) -> usize {
        self.read().len()
    }

    /// True when no route is published.
    pub fn is_empty(&self) -> bool {
        self.read().is_empty()
    }

    /// Longest-prefix match of one address in the published copy (control plane and
    /// tests; a node looks up through its own reader, once per vector).
    ///
    /// ```
    /// use pktvec_lookup::ipv6::SharedLpm6;
    /// let fib = SharedLpm6::default();
    /// fib.add(std::net::Ipv6Addr::LOCALHOST, 128, 1)?;
    /// assert_eq!(fib.lookup(std::net::Ipv6Addr::LOCALHOST), Some(1));
    /// assert_eq!(fib.lookup(2u128), None);
    /// # Ok::<(), pktvec_lookup::ipv6::Lpm6Error>(())
    /// ```
    pub fn lookup(&self, addr: impl Into<u128>) -> Option<u32> {
        self.read().lookup(addr)
    }

    /// The next hop published for exactly `addr/len`; see [`Lpm6::get`].
    ///
    /// ```
    /// use pktvec_lookup::ipv6::SharedLpm6;
    /// let fib = SharedLpm6::default();
    /// fib.add(0xabcdu128 << 112, 16, 4)?;
    /// assert_eq!(fib.get(0xabcdu128 << 112, 16), Ok(Some(4)));
    /// assert_eq!(fib.get(0xabcdu128 << 112, 17), Ok(None));
    /// # Ok::<(), pktvec_lookup::ipv6::Lpm6Error>(())
    /// ```
    pub fn get(&self, addr: impl Into<u128>, len: u8) -> Result<Option<u32>, Lpm6Error> {
        self.read().get(addr, len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ipv6::mask;
    use std::sync::Arc;

    fn pfx(i: u32) -> (u128, u8) {
        (0x2001_0db8u128 << 96 | u128::from(i) << 72, 56)
    }

    #[test]
    fn both_copies_stay_equal_through_batches() {
        let fib = SharedLpm6::default();
        let mut want = std::collections::BTreeMap::new();
        for round in 0..40u32 {
            let ops: Vec<Lpm6Op> = (0..30u32)
                .map(|i| {
                    let k = (i * 7 + round * 13) % 97;
                    let (addr, len) = pfx(k);
                    let len = len - (k % 3) as u8 * 8;
                    if (i + round) % 4 == 0 {
                        Lpm6Op::Delete { addr, len }
                    } else {
                        Lpm6Op::Add {
                            addr,
                            len,
                            next_hop: k * 100 + round,
                        }
                    }
                })
                .collect();
            for op in &ops {
                match *op {
                    Lpm6Op::Add {
                        addr,
                        len,
                        next_hop,
                    } => {
                        want.insert((addr & mask(u32::from(len)), len), next_hop);
                    }
                    Lpm6Op::Delete { addr, len } => {
                        want.remove(&(addr & mask(u32::from(len)), len));
                    }
                }
            }
            let model = Lpm6::from_routes(want.iter().map(|(&(a, l), &nh)| (a, l, nh))).unwrap();
            let o = fib.apply(ops).unwrap();
            assert_eq!(o.failed, 0);
            // Two more (empty) publishes: readers then see the other copy, which took the
            // batch by replay.
            let mut shapes = Vec::new();
            for _ in 0..2 {
                fib.apply([]).unwrap();
                let t = fib.read();
                assert_eq!(t.len(), want.len(), "round {round}");
                let got: Vec<_> = t.routes().collect();
                let exp: Vec<_> = want.iter().map(|(&(a, l), &nh)| (a, l, nh)).collect();
                assert_eq!(got, exp, "round {round}");
                for k in 0..100u32 {
                    let key = pfx(k).0 | 0x1234;
                    assert_eq!(t.lookup(key), model.lookup(key), "round {round} key {k}");
                }
                let st = t.stats();
                shapes.push((st.nodes, st.node_lines, st.leaves, st.skips));
            }
            // The replay made the same trie as the first application.
            assert_eq!(shapes[0], shapes[1], "round {round}");
        }
    }

    #[test]
    fn single_changes_report_their_results_and_refuse_bad_input() {
        let fib = SharedLpm6::default();
        assert_eq!(fib.add(1u128 << 127, 1, 1), Ok(None));
        assert_eq!(fib.add(1u128 << 127 | 5, 1, 2), Ok(Some(1)));
        assert_eq!(
            fib.add(0u128, 1, u32::MAX),
            Err(Lpm6Error::NextHopTooLarge(u32::MAX))
        );
        assert_eq!(fib.delete(0u128, 129), Err(Lpm6Error::BadLength(129)));
        assert_eq!(fib.delete(0u128, 1), Ok(None));
        assert_eq!(fib.read().totals().failed, 0, "refused before publishing");
        assert_eq!(fib.delete(1u128 << 127, 1), Ok(Some(2)));
        assert!(fib.is_empty());
    }

    #[test]
    fn a_reader_keeps_the_table_alive() {
        let fib = SharedLpm6::default();
        fib.add(7u128 << 120, 8, 3).unwrap();
        let r = fib.reader();
        drop(fib);
        assert_eq!(r.enter().lookup(7u128 << 120 | 9), Some(3));
        let r2 = r.clone();
        drop(r);
        assert_eq!(r2.enter().lookup(7u128 << 120), Some(3));
    }

    #[test]
    fn an_old_guard_keeps_its_snapshot_while_others_see_the_change() {
        use std::sync::mpsc;
        use std::time::Duration;
        let fib = Arc::new(SharedLpm6::default());
        let (r1, r2) = (fib.reader(), fib.reader());
        let old = r1.enter();
        // The first publish swaps copies; the second must wait for `old` to leave its copy.
        fib.add(1u128 << 127, 1, 1).unwrap();
        let (tx, rx) = mpsc::channel();
        let f2 = Arc::clone(&fib);
        let writer = std::thread::spawn(move || {
            f2.add(0u128, 1, 2).unwrap();
            tx.send(()).unwrap();
        });
        assert!(rx.recv_timeout(Duration::from_millis(100)).is_err());
        for _ in 0..100 {
            assert_eq!(r2.enter().lookup(u128::MAX), Some(1));
        }
        assert_eq!(old.lookup(u128::MAX), None);
        drop(old);
        rx.recv().unwrap();
        writer.join().unwrap();
        assert_eq!(r2.enter().lookup(0u128), Some(2));
        assert_eq!(r1.enter().len(), 2);
    }
}
