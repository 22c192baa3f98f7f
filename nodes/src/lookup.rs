//! `ip4-lookup` and `ip6-lookup`: longest-prefix match of the destination address in a
//! shared FIB. The route's next-hop id is the adjacency index the rewrite node uses
//! (`BufferMeta::opaque`).
//!
//! `ip4-lookup` gathers the frame's destinations into an array, runs the FIB's staged
//! vector lookup over them in sub-batches of `b` ([`Lpm4::lookup_vector_raw`]: prefetch
//! every table line of the sub-batch, then the next level, then answer) and hands each
//! packet on. `ip6-lookup` is two-phase per packet (extract the address and prefetch the
//! table lines for `b` packets, then look them up).
//!
//! The IPv4 FIB is shared as `Arc<Lpm4>`: routes can be added and deleted from another
//! thread while workers look up. The IPv6 FIB is shared as `Arc<`[`SharedLpm6`]`>` (two
//! copies under left-right publication, see [`pktvec_lookup::ipv6::shared`]): each
//! `ip6-lookup` node has its own reader and enters it once per frame (three atomic
//! operations per frame, none per packet), then prefetches and looks up on a plain
//! `&Lpm6`; the control plane adds and deletes routes meanwhile, and a frame sees the FIB of
//! one publish, whole.
//!
//! ```
//! use pktvec_lookup::ipv4::{Lpm4, Lpm4Config};
//! use pktvec_nodes::lookup::Ip4Lookup;
//! use std::{net::Ipv4Addr, sync::Arc};
//! let fib = Arc::new(Lpm4::new(Lpm4Config::default()));
//! fib.add(Ipv4Addr::new(10, 0, 0, 0), 8, 3)?;
//! let node = Ip4Lookup::new(fib.clone());
//! assert_eq!(node.fib().lookup(u32::from(Ipv4Addr::new(10, 1, 2, 3))), Some(3));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use pktvec_graph::{next_nodes, node_errors, Context, Frame, Next, Node, Verdict};
use pktvec_lookup::ipv4::{Lpm4, MISS};
use pktvec_lookup::ipv6::{Lpm6, Lpm6Reader, SharedLpm6};
use pktvec_packet::pool::PacketsMut;
use pktvec_packet::Packet;
use std::fmt::Write as _;
use std::sync::Arc;

next_nodes! {
    /// Arcs of `ip4-lookup`.
    pub enum Ip4LookupNext {
        /// Routed packets.
        Rewrite = "ip4-rewrite",
    }
}

node_errors! {
    /// Drop reasons of `ip4-lookup`.
    pub enum Ip4LookupError {
        /// No route matches the destination.
        NoRoute = "no route",
        /// Shorter than an IPv4 header (a node upstream is wrong).
        Truncated = "truncated ipv4 header",
    }
}

/// The `ip4-lookup` node.
pub struct Ip4Lookup {
    fib: Arc<Lpm4>,
    /// Own sub-batch size, or `None` for the graph's ([`Context::sub_batch`]).
    sub_batch: Option<usize>,
    /// Per-frame scratch (allocated once): destinations, then answers.
    keys: Box<[u32; MAX_FRAME]>,
    answers: Box<[u32; MAX_FRAME]>,
}

/// Largest frame a node sees (the graph's maximum vector size).
const MAX_FRAME: usize = 4096;

impl Ip4Lookup {
    /// A lookup node over a shared FIB.
    pub fn new(fib: Arc<Lpm4>) -> Self {
        Ip4Lookup {
            fib,
            sub_batch: None,
            keys: Box::new([0; MAX_FRAME]),
            answers: Box::new([0; MAX_FRAME]),
        }
    }
    /// Uses its own sub-batch size `b` for the staged LPM lookup instead of the graph's
    /// (`None`: the graph's). The compressed IPv4 LPM's staged lookup wants `b >= 64` (each
    /// stage's loads overlap only across a long enough sub-batch), while the graph default
    /// (16) suits the L2 hash; this lets a router keep both.
    pub fn with_sub_batch(mut self, b: Option<usize>) -> Self {
        self.sub_batch = b;
        self
    }
    /// The sub-batch size the node uses (`None`: the graph's).
    pub fn sub_batch(&self) -> Option<usize> {
        self.sub_batch
    }
    /// The FIB.
    pub fn fib(&self) -> &Lpm4 {
        &self.fib
    }
}

#[inline(always)]
fn dst4(p: &Packet<'_>) -> Option<u32> {
    p.bytes_at::<4>(16).map(|d| u32::from_be_bytes(*d))
}

/// The destination address from the 20-byte window at the start of packet `bi` (the
/// header's start), if the packet has one (see `PacketMut::head_mut`); only reads it.
///
/// # Safety
/// `bi` must be a buffer index of the pool (e.g. the whole vector checked with
/// `PacketsMut::all_in_range`).
// SAFETY: an `unsafe fn` because it reads the packet through the pool's unchecked
// accessor; the range of `bi` is the caller's to prove (ip4-lookup checks the whole vector).
#[inline(always)]
unsafe fn dst4_fast(pool: &mut PacketsMut<'_>, bi: u32) -> Option<u32> {
    // SAFETY: `bi` is in the pool (the caller's promise).
    let mut p = unsafe { pool.packet_mut_unchecked(bi) };
    p.head_mut::<20>()
        .map(|(_, h)| u32::from_be_bytes([h[16], h[17], h[18], h[19]]))
}

impl Node for Ip4Lookup {
    type Next = Ip4LookupNext;
    type Error = Ip4LookupError;

    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        let b = self.sub_batch.unwrap_or_else(|| cx.sub_batch());
        let map = cx.verdict_map();
        let (bufs, nexts) = frame.split_mut();
        let n = bufs.len().min(MAX_FRAME);
        let (bufs, nexts) = (&bufs[..n], &mut nexts[..n]);
        let (keys, answers) = (&mut self.keys[..n], &mut self.answers[..n]);
        // The headers are in cache: ip4-input has just read them.
        let mut truncated = false;
        let mut pool = cx.pool_mut().packets_mut();
        // One index test per vector (a bad index is a bug upstream: the checked accessors
        // panic on it too).
        assert!(
            pool.all_in_range(bufs),
            "ip4-lookup: a buffer index outside the pool"
        );
        // The destination from a 20-byte window at the header's start (no further bounds
        // test); a packet without one is left for the checked read after the loop, so
        // that the loop makes no call (which would push its values out of registers).
        let mut checked = false;
        for (k, &bi) in keys.iter_mut().zip(bufs) {
            // SAFETY: every index of the frame is in the pool (asserted above).
            *k = match unsafe { dst4_fast(&mut pool, bi) } {
                Some(d) => d,
                None => {
                    checked = true;
                    0
                }
            };
        }
        if checked {
            for (k, &bi) in keys.iter_mut().zip(bufs) {
                // SAFETY: as above.
                if unsafe { dst4_fast(&mut pool, bi) }.is_none() {
                    let d = dst4(&pool.packet(bi));
                    truncated |= d.is_none();
                    *k = d.unwrap_or(0);
                }
            }
        }
        self.fib.lookup_vector_raw(keys, answers, b);
        let rewrite = Ip4LookupNext::Rewrite.index();
        for ((slot, &bi), &a) in nexts.iter_mut().zip(bufs).zip(answers.iter()) {
            // SAFETY: as above.
            let mut p = unsafe { pool.packet_mut_unchecked(bi) };
            let m = p.meta_mut();
            *slot = if a == MISS {
                map.slot(Verdict::Drop(Ip4LookupError::NoRoute), m)
            } else {
                m.opaque = a;
                rewrite
            };
        }
        if truncated {
            for (slot, &bi) in nexts.iter_mut().zip(bufs) {
                if dst4(&pool.packet(bi)).is_none() {
                    *slot = map.slot(Verdict::Drop(Ip4LookupError::Truncated), pool.meta_mut(bi));
                }
            }
        }
        cx.enqueue_frame(frame);
    }

    fn format_trace(&self, pkt: Packet<'_>, out: &mut String) {
        match dst4(&pkt) {
            Some(d) => {
                let _ = write!(
                    out,
                    "fib lookup {}: {:?}",
                    std::net::Ipv4Addr::from(d),
                    self.fib.lookup(d)
                );
            }
            None => out.push_str("truncated"),
        }
    }
}

next_nodes! {
    /// Arcs of `ip6-lookup`.
    pub enum Ip6LookupNext {
        /// Routed packets.
        Rewrite = "ip6-rewrite",
    }
}

node_errors! {
    /// Drop reasons of `ip6-lookup`.
    pub enum Ip6LookupError {
        /// No route matches the destination.
        NoRoute = "no route",
        /// Shorter than an IPv6 header.
        Truncated = "truncated ipv6 header",
    }
}

/// The `ip6-lookup` node.
///
/// ```
/// use pktvec_lookup::ipv6::{Lpm6, SharedLpm6};
/// use pktvec_nodes::lookup::Ip6Lookup;
/// use std::sync::Arc;
/// let fib = Arc::new(SharedLpm6::new(Lpm6::new()));
/// let node = Ip6Lookup::new(fib.clone()); // its own reader
/// fib.add(0x2001_0db8u128 << 96, 32, 1)?; // seen from the node's next frame on
/// assert_eq!(node.reader().enter().lookup(0x2001_0db8u128 << 96 | 7), Some(1));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Ip6Lookup {
    reader: Lpm6Reader,
}

impl Ip6Lookup {
    /// A lookup node over a shared FIB, with its own reader (made here; making a reader
    /// may wait for a publish in progress, so create nodes at setup).
    pub fn new(fib: Arc<SharedLpm6>) -> Self {
        Ip6Lookup {
            reader: fib.reader(),
        }
    }
    /// The node's reader of the FIB.
    pub fn reader(&self) -> &Lpm6Reader {
        &self.reader
    }
}

#[inline(always)]
fn dst6(p: &Packet<'_>) -> Option<u128> {
    let d: [u8; 16] = p.data().get(24..40)?.try_into().ok()?;
    Some(u128::from_be_bytes(d))
}

impl Node for Ip6Lookup {
    type Next = Ip6LookupNext;
    type Error = Ip6LookupError;

    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        // One guard for the frame: every prefetch and lookup below reads the same copy.
        let guard = self.reader.enter();
        let fib: &Lpm6 = &guard;
        cx.process_sub_batches(
            frame,
            |p| {
                let d = dst6(&p);
                if let Some(d) = d {
                    fib.prefetch(d);
                }
                d
            },
            |p, d| match d {
                None => Verdict::Drop(Ip6LookupError::Truncated),
                Some(d) => match fib.lookup(d) {
                    Some(nh) => {
                        p.meta_mut().opaque = nh;
                        Verdict::Next(Ip6LookupNext::Rewrite)
                    }
                    None => Verdict::Drop(Ip6LookupError::NoRoute),
                },
            },
        );
    }

    fn format_trace(&self, pkt: Packet<'_>, out: &mut String) {
        match dst6(&pkt) {
            Some(d) => {
                let _ = write!(
                    out,
                    "fib lookup {}: {:?}",
                    std::net::Ipv6Addr::from(d),
                    self.reader.enter().lookup(d)
                );
            }
            None => out.push_str("truncated"),
        }
    }
}
