//! An L2 switch as two nodes sharing one MAC table:
//!
//! * `l2-learn` looks up every source MAC (two-phase: hash + bucket prefetch for `b`
//!   packets, then search) and learns new or moved stations (MAC → receive interface);
//! * `l2-forward` looks up every destination MAC the same way and sets the transmit
//!   interface; broadcast, multicast and unknown unicast are flooded to every other
//!   interface (copies from the pool) or dropped, by policy; a packet whose destination is
//!   on its own receive interface is filtered.
//!
//! The table is an [`L2Fib`], shared as `Arc<L2Fib>` by the nodes of every graph (one
//! graph per worker thread) and by the control plane, which learns, moves and forgets
//! stations while the graphs forward.
//!
//! # Concurrency
//!
//! [`L2Fib`] is a [`SharedTable`]: two copies of the [`MacTable`] under **left-right**
//! publication (see [`pktvec_lookup::hash::shared`] for the mechanism).
//!
//! * **Readers** (`l2-learn`'s and `l2-forward`'s lookups): each node has its own
//!   [`L2Reader`] (a per-reader epoch counter), entered once per vector — three atomic
//!   operations per vector, none per packet — and the vector's two-phase lookups run on a
//!   plain `&MacTable`, as fast as on an unshared one. They never block, never retry and
//!   never see a change half made: a reader sees the table as of one publish.
//! * **Writers** (the control plane's [`learn`](L2Fib::learn), [`forget`](L2Fib::forget),
//!   [`apply`](L2Fib::apply), and `l2-learn` on every worker) serialise on a mutex. A
//!   change is applied to the copy no reader is in and published with a pointer swap; the
//!   old copy takes it at the next publish, after its last reader has left (the epoch
//!   counters are the grace period, so nothing is freed or overwritten under a reader).
//!   `l2-learn` publishes once per vector in which it learned something, all of that
//!   vector's stations in one batch, after dropping its own guard.
//! * A station present during a whole interval is found by every lookup in it; a station
//!   learned, moved or forgotten is seen by a reader from its next vector on.
//! * **Cost:** twice the table's memory (64 Ki stations: 2 × 0.9 MiB) and every change
//!   applied twice. A writer's publish waits for the readers still in the other copy to
//!   finish their vector; never take a write while holding a guard on the same thread.
//!
//! ```
//! use pktvec_nodes::l2::L2Fib;
//! use pktvec_packet::wire::MacAddr;
//!
//! let fib = L2Fib::with_capacity(1024)?;
//! let a = MacAddr::new([2, 0, 0, 0, 0, 1]);
//! assert_eq!(fib.learn(a, 3)?, None);
//! assert_eq!(fib.port(a), Some(3));
//!
//! // A worker thread's reader: one guard per vector, then bulk lookups.
//! let reader = fib.reader();
//! let fib2 = fib.clone();
//! let worker = std::thread::spawn(move || {
//!     let table = reader.enter();
//!     let mut out = [None; 2];
//!     table.lookup_bulk(&[a, MacAddr::BROADCAST], &mut out);
//!     out
//! });
//! assert_eq!(worker.join().unwrap(), [Some(3), None]);
//! assert_eq!(fib2.learn(a, 5)?, Some(3)); // moved
//! assert_eq!(fib.forget(a), Some(5));
//! assert_eq!(fib.port(a), None);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use pktvec_graph::{next_nodes, node_errors, Context, ErrorReason, Frame, Node, Verdict};
use pktvec_lookup::hash::shared::{
    ReadGuard, SharedTable, TableCopy, TableOp, TableOutcome, TableReader, TableWriter,
};
use pktvec_lookup::hash::{HashError, Hashed, MacTable};
use pktvec_packet::wire::MacAddr;
use pktvec_packet::Packet;
use std::fmt::Write as _;
use std::sync::Arc;

/// One reader of an [`L2Fib`], for one thread: [`enter`](pktvec_lookup::hash::shared::Reader::enter)
/// gives the published table (it derefs to the [`MacTable`]).
pub type L2Reader = TableReader<MacAddr, u32, 5>;

/// A change of an [`L2Fib`] (see [`L2Fib::apply`]): `Insert(mac, port)` learns or moves a
/// station, `Remove(mac)` forgets it, `Clear` forgets every station.
pub type L2Change = TableOp<MacAddr, u32>;

/// A MAC table shared by `l2-learn` and `l2-forward` of any number of graphs and by the
/// control plane; see the [module docs](self) for the guarantees.
pub struct L2Fib {
    table: SharedTable<MacAddr, u32, 5>,
}

impl L2Fib {
    /// An empty table for up to `capacity` stations.
    pub fn with_capacity(capacity: usize) -> Result<Arc<Self>, HashError> {
        Ok(Self::from_table(MacTable::new(capacity)?))
    }

    /// Shares a table filled beforehand (a second copy of it is made).
    ///
    /// ```
    /// use pktvec_lookup::hash::MacTable;
    /// use pktvec_nodes::l2::L2Fib;
    /// let mut t = MacTable::<u32>::new(16)?;
    /// t.insert([2, 0, 0, 0, 0, 1].into(), 1)?;
    /// let fib = L2Fib::from_table(t);
    /// assert_eq!(fib.port([2, 0, 0, 0, 0, 1].into()), Some(1));
    /// # Ok::<(), pktvec_lookup::hash::HashError>(())
    /// ```
    pub fn from_table(table: MacTable<u32>) -> Arc<Self> {
        Arc::new(L2Fib {
            table: SharedTable::new(table),
        })
    }

    /// A reader for one thread (a node makes its own when it is created).
    pub fn reader(&self) -> L2Reader {
        self.table.reader()
    }

    /// The published table, through this thread's own reader (control plane and tests):
    /// it derefs to the [`MacTable`]. Do not write to the FIB on this thread while the
    /// guard lives.
    pub fn read(&self) -> ReadGuard<'_, TableCopy<MacAddr, u32, 5>> {
        self.table.read()
    }

    /// Exclusive write access for several changes no other writer comes between (each is
    /// published as it is made, with its result).
    ///
    /// ```
    /// use pktvec_nodes::l2::L2Fib;
    /// let fib = L2Fib::with_capacity(8)?;
    /// let mut w = fib.write();
    /// w.clear();
    /// w.insert([2, 0, 0, 0, 0, 1].into(), 1)?;
    /// drop(w);
    /// assert_eq!(fib.len(), 1);
    /// # Ok::<(), pktvec_lookup::hash::HashError>(())
    /// ```
    pub fn write(&self) -> TableWriter<'_, MacAddr, u32, 5> {
        self.table.write()
    }

    /// Adds or moves a station and publishes it: its previous port, if it had one.
    ///
    /// # Errors
    /// [`HashError::Full`] or [`HashError::NoSlot`] for a new station the table has no
    /// room for (the table is unchanged).
    pub fn learn(&self, mac: MacAddr, port: u32) -> Result<Option<u32>, HashError> {
        self.table.insert(mac, port)
    }

    /// Removes a station and publishes that: its port, if it was known.
    pub fn forget(&self, mac: MacAddr) -> Option<u32> {
        self.table.remove(&mac)
    }

    /// Applies a batch of changes in order and publishes them at once (a reader sees all
    /// of them or none). Returns what the batch did.
    ///
    /// ```
    /// use pktvec_nodes::l2::{L2Change, L2Fib};
    /// let fib = L2Fib::with_capacity(8)?;
    /// let (a, b) = ([2, 0, 0, 0, 0, 1].into(), [2, 0, 0, 0, 0, 2].into());
    /// let done = fib.apply([L2Change::Insert(a, 1), L2Change::Insert(b, 2), L2Change::Remove(a)]);
    /// assert_eq!((done.inserted, done.removed), (2, 1));
    /// assert_eq!((fib.port(a), fib.port(b)), (None, Some(2)));
    /// # Ok::<(), pktvec_lookup::hash::HashError>(())
    /// ```
    pub fn apply(&self, changes: impl IntoIterator<Item = L2Change>) -> TableOutcome {
        self.table.apply(changes)
    }

    /// The port of a station (control plane; a node looks up through its own reader).
    pub fn port(&self, mac: MacAddr) -> Option<u32> {
        self.read().lookup(&mac)
    }

    /// Stations known.
    pub fn len(&self) -> usize {
        self.read().len()
    }

    /// Whether no station is known.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Most stations the table holds.
    pub fn capacity(&self) -> usize {
        self.read().capacity()
    }
}

#[inline(always)]
fn mac_at(p: &Packet<'_>, off: usize) -> Option<MacAddr> {
    let b: [u8; 6] = p.data().get(off..off + 6)?.try_into().ok()?;
    Some(MacAddr(b))
}

next_nodes! {
    /// Arcs of `l2-learn`.
    pub enum L2LearnNext {
        /// Every good frame.
        Forward = "l2-forward",
    }
}

node_errors! {
    /// Drop reasons of `l2-learn`.
    pub enum L2LearnError {
        /// Shorter than an Ethernet header.
        Truncated = "truncated frame",
    }
}

/// Most stations learned in one vector (the rest are learned from later packets).
pub const LEARN_BATCH: usize = 256;

/// The `l2-learn` node.
pub struct L2Learn {
    fib: Arc<L2Fib>,
    reader: L2Reader,
    pending: Vec<L2Change>,
    learned: u64,
    moved: u64,
    failed: u64,
}

impl L2Learn {
    /// A learning node on a shared table (with its own reader).
    pub fn new(fib: Arc<L2Fib>) -> Self {
        L2Learn {
            reader: fib.reader(),
            fib,
            pending: Vec::with_capacity(LEARN_BATCH),
            learned: 0,
            moved: 0,
            failed: 0,
        }
    }
    /// Stations learned, stations that moved, inserts refused (table full).
    pub fn counters(&self) -> (u64, u64, u64) {
        (self.learned, self.moved, self.failed)
    }
}

impl Node for L2Learn {
    type Next = L2LearnNext;
    type Error = L2LearnError;

    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        {
            // One guard for the vector; dropped before this node writes.
            let guard = self.reader.enter();
            let table: &MacTable<u32> = &guard;
            let pending = &mut self.pending;
            let moved = &mut self.moved;
            cx.process_sub_batches(
                frame,
                |p| {
                    // A frame shorter than an Ethernet header is dropped as truncated.
                    let mac = if p.len() >= 14 { mac_at(&p, 6) } else { None };
                    let h = mac.map(|m| {
                        let h = table.hash(&m);
                        table.prefetch(h);
                        h
                    });
                    (mac.unwrap_or_default(), h.map_or(0, |h| h.0), mac.is_some())
                },
                |p, (mac, h, ok)| {
                    if !ok {
                        return Verdict::Drop(L2LearnError::Truncated);
                    }
                    let rx = p.meta().rx_if as u32;
                    match table.lookup_hashed(&mac, Hashed(h)) {
                        Some(port) if port == rx => {}
                        other => {
                            if mac.is_unicast() && pending.len() < LEARN_BATCH {
                                *moved += other.is_some() as u64;
                                pending.push(L2Change::Insert(mac, rx));
                            }
                        }
                    }
                    Verdict::Next(L2LearnNext::Forward)
                },
            );
        }
        if !self.pending.is_empty() {
            // One batch, one publish for the vector's stations.
            let done = self.fib.apply(self.pending.drain(..));
            self.learned += done.inserted;
            self.failed += done.failed;
        }
    }
}

/// What `l2-forward` does with broadcast, multicast and unknown unicast frames (serde:
/// `"flood"`, `"drop"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UnknownUnicast {
    /// Send a copy out of every interface but the receiving one.
    Flood,
    /// Drop (unknown unicast counted; broadcast and multicast still flooded).
    Drop,
}

next_nodes! {
    /// Arcs of `l2-forward`.
    pub enum L2ForwardNext {
        /// Switched frames.
        Output = "interface-output",
    }
}

node_errors! {
    /// Drop reasons of `l2-forward`.
    pub enum L2ForwardError {
        /// Shorter than an Ethernet header.
        Truncated = "truncated frame",
        /// Destination unknown and the policy is to drop.
        UnknownUnicast = "unknown unicast",
        /// Destination is on the receiving interface.
        Filtered = "destination on the receiving interface",
        /// Flooding to a single-interface switch: nowhere to send.
        NoFloodTarget = "no interface to flood to",
        /// A flood copy the pool had no buffer for.
        FloodNoBuffer = "flood copy: no buffer",
    }
}

node_errors! {
    /// Packets `l2-forward` makes.
    pub enum L2ForwardCreated {
        /// A copy of a flooded frame for each further interface.
        FloodCopy = "flood copy",
    }
}

/// Flood copies are sent on in chunks of this many.
const COPY_CHUNK: usize = 256;

/// The `l2-forward` node.
pub struct L2Forward {
    reader: L2Reader,
    ports: u16,
    policy: UnknownUnicast,
    flood: Vec<u32>,
    copies: Vec<u32>,
    flood_copies: u64,
    flood_no_buffer: u64,
}

impl L2Forward {
    /// A forwarding node for a switch with `ports` interfaces (with its own reader of
    /// `fib`).
    pub fn new(fib: Arc<L2Fib>, ports: u16, policy: UnknownUnicast) -> Self {
        L2Forward {
            reader: fib.reader(),
            ports,
            policy,
            flood: Vec::with_capacity(pktvec_graph::MAX_VECTOR_SIZE),
            copies: Vec::with_capacity(COPY_CHUNK),
            flood_copies: 0,
            flood_no_buffer: 0,
        }
    }
    /// Flood copies sent, and copies not sent because the pool was empty.
    pub fn flood_counters(&self) -> (u64, u64) {
        (self.flood_copies, self.flood_no_buffer)
    }
}

impl Node for L2Forward {
    type Next = L2ForwardNext;
    type Error = L2ForwardError;
    const CREATED: &'static [&'static str] = L2ForwardCreated::REASONS;

    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        let (ports, policy) = (self.ports, self.policy);
        let map = cx.verdict_map();
        let b = cx.sub_batch();
        self.flood.clear();
        {
            // One guard for the vector.
            let guard = self.reader.enter();
            let table: &MacTable<u32> = &guard;
            let flood = &mut self.flood;
            let (bufs, nexts) = frame.split_mut();
            pktvec_graph::loops::two_phase(
                cx.pool_mut(),
                bufs,
                b,
                |pool, _, bi| {
                    let mac = mac_at(&pool.packet(bi), 0);
                    let h = mac.map(|m| {
                        let h = table.hash(&m);
                        if m.is_unicast() {
                            table.prefetch(h);
                        }
                        h
                    });
                    (mac.unwrap_or_default(), h.map_or(0, |h| h.0), mac.is_some())
                },
                |pool, bi| pool.prefetch(bi),
                |pool, i, bi, (mac, h, ok)| {
                    let mut p = pool.packet_mut(bi);
                    let rx = p.meta().rx_if;
                    let v = if !ok {
                        Verdict::Drop(L2ForwardError::Truncated)
                    } else {
                        let port = if mac.is_unicast() {
                            table.lookup_hashed(&mac, Hashed(h))
                        } else {
                            None
                        };
                        match port {
                            Some(port) if port == rx as u32 => {
                                Verdict::Drop(L2ForwardError::Filtered)
                            }
                            Some(port) => {
                                p.meta_mut().tx_if = port as u16;
                                Verdict::Next(L2ForwardNext::Output)
                            }
                            None if mac.is_unicast() && policy == UnknownUnicast::Drop => {
                                Verdict::Drop(L2ForwardError::UnknownUnicast)
                            }
                            None => match (0..ports).find(|&q| q != rx) {
                                Some(q) => {
                                    p.meta_mut().tx_if = q;
                                    flood.push(bi);
                                    Verdict::Next(L2ForwardNext::Output)
                                }
                                None => Verdict::Drop(L2ForwardError::NoFloodTarget),
                            },
                        }
                    };
                    nexts[i] = map.slot(v, p.meta_mut());
                },
            );
        }
        // One copy per further interface for every flooded frame, sent on in chunks; each
        // copy is a created packet, and one the pool has no buffer for a counted drop.
        let (mut made, mut missed) = (0u64, 0u64);
        self.copies.clear();
        for i in 0..self.flood.len() {
            let bi = self.flood[i];
            let (rx, first) = {
                let m = cx.pool().meta(bi);
                (m.rx_if, m.tx_if)
            };
            for q in (0..ports).filter(|&q| q != rx && q != first) {
                match cx.pool_mut().clone_packet(bi) {
                    Some(c) => {
                        cx.pool_mut().meta_mut(c).tx_if = q;
                        self.copies.push(c);
                        made += 1;
                        if self.copies.len() == COPY_CHUNK {
                            cx.enqueue_slice(&self.copies, L2ForwardNext::Output);
                            self.copies.clear();
                        }
                    }
                    None => missed += 1,
                }
            }
        }
        cx.enqueue_slice(&self.copies, L2ForwardNext::Output);
        self.copies.clear();
        if made > 0 {
            cx.count_created(L2ForwardCreated::FloodCopy, made);
        }
        if missed > 0 {
            cx.drop_uncreated(
                L2ForwardCreated::FloodCopy,
                L2ForwardError::FloodNoBuffer,
                missed,
            );
        }
        self.flood_copies += made;
        self.flood_no_buffer += missed;
        cx.enqueue_frame(frame);
    }

    fn format_trace(&self, pkt: Packet<'_>, out: &mut String) {
        let dst = mac_at(&pkt, 0);
        let _ = write!(
            out,
            "l2 dst {} port {:?}",
            dst.map_or("?".into(), |m| m.to_string()),
            dst.and_then(|m| self.reader.enter().lookup(&m))
        );
    }
}
