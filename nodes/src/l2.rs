//! An L2 switch as two nodes sharing one MAC table:
//!
//! * `l2-learn` looks up every source MAC (two-phase: hash + bucket prefetch for `b`
//!   packets, then search) and learns new or moved stations (MAC → receive interface);
//! * `l2-forward` looks up every destination MAC the same way and sets the transmit
//!   interface; broadcast, multicast and unknown unicast are flooded to every other
//!   interface (copies from the pool) or dropped, by policy; a packet whose destination is
//!   on its own receive interface is filtered.
//!
//! The table is shared as [`L2Fib`]: readers take a read lock once per vector (never per
//! packet); `l2-learn` takes the write lock once per vector, only when it has something to
//! learn.
//!
//! ```
//! use pktvec_nodes::l2::L2Fib;
//! let fib = L2Fib::with_capacity(1024)?;
//! fib.learn([2, 0, 0, 0, 0, 1].into(), 3)?;
//! assert_eq!(fib.port([2, 0, 0, 0, 0, 1].into()), Some(3));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use pktvec_graph::{next_nodes, node_errors, Context, ErrorReason, Frame, Node, Verdict};
use pktvec_lookup::hash::{HashError, Hashed, MacTable};
use pktvec_packet::wire::MacAddr;
use pktvec_packet::Packet;
use std::fmt::Write as _;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// A MAC table shared by `l2-learn` and `l2-forward` (and the control plane).
pub struct L2Fib {
    table: RwLock<MacTable<u32>>,
}

impl L2Fib {
    /// A table for up to `capacity` stations.
    pub fn with_capacity(capacity: usize) -> Result<Arc<Self>, HashError> {
        Ok(Arc::new(L2Fib {
            table: RwLock::new(MacTable::new(capacity)?),
        }))
    }

    /// Read access (a poisoned lock is recovered: the table has no broken invariant to
    /// protect between two operations).
    pub fn read(&self) -> RwLockReadGuard<'_, MacTable<u32>> {
        self.table.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Write access.
    pub fn write(&self) -> RwLockWriteGuard<'_, MacTable<u32>> {
        self.table.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds or moves a station (control plane).
    pub fn learn(&self, mac: MacAddr, port: u32) -> Result<(), HashError> {
        self.write().insert(mac, port).map(|_| ())
    }

    /// The port of a station.
    pub fn port(&self, mac: MacAddr) -> Option<u32> {
        self.read().lookup(&mac)
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
    pending: Vec<(MacAddr, u32)>,
    learned: u64,
    moved: u64,
    failed: u64,
}

impl L2Learn {
    /// A learning node on a shared table.
    pub fn new(fib: Arc<L2Fib>) -> Self {
        L2Learn {
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
        let fib = self.fib.clone();
        {
            let table = fib.read();
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
                                pending.push((mac, rx));
                            }
                        }
                    }
                    Verdict::Next(L2LearnNext::Forward)
                },
            );
        }
        if !self.pending.is_empty() {
            let mut table = fib.write();
            for (mac, port) in self.pending.drain(..) {
                match table.insert(mac, port) {
                    Ok(None) => self.learned += 1,
                    Ok(Some(_)) => {}
                    Err(_) => self.failed += 1,
                }
            }
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
    fib: Arc<L2Fib>,
    ports: u16,
    policy: UnknownUnicast,
    flood: Vec<u32>,
    copies: Vec<u32>,
    flood_copies: u64,
    flood_no_buffer: u64,
}

impl L2Forward {
    /// A forwarding node for a switch with `ports` interfaces.
    pub fn new(fib: Arc<L2Fib>, ports: u16, policy: UnknownUnicast) -> Self {
        L2Forward {
            fib,
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
        let fib = self.fib.clone();
        let (ports, policy) = (self.ports, self.policy);
        let map = cx.verdict_map();
        let b = cx.sub_batch();
        self.flood.clear();
        {
            let table = fib.read();
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
            dst.and_then(|m| self.fib.port(m))
        );
    }
}
