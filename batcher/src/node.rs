//! The batcher as the graph's input node: it reads bursts from a [`BurstSource`], parses
//! and classifies each packet, queues it by path, and hands the graph one vector of one
//! queue per call. Nothing downstream changes: the same graph runs with the batcher on or
//! off ([`BatcherConfig::enabled`]).

use crate::parser::{Parsed, ProtocolGraph};
use crate::path_table::{FastL3, FastPath, PathTable, SharedPathTable, ET_IP4, ET_IP6};
use crate::queues::{BatcherConfig, BatcherStats, FullPolicy, Queues, MAX_PATHS};
use pktvec_graph::builtin::copy_into_buffers;
use pktvec_graph::{clock, next_nodes, node_errors, Context, Frame, Next, Node, NodeKind};
use pktvec_packet::wire::{parse_l2, EtherType};
use pktvec_packet::{BufferMeta, BufferPool, MetaFlags, PacketsMut};

/// Distinct classes (path and arc) of one burst that are queued class by class; a burst
/// with more goes packet by packet.
const BURST_CLASSES: usize = 8;

/// Classes (path id | arc << 8: 256 paths, 3 arcs) a burst's class counts are indexed by.
const CLASSES: usize = 1024;

/// Where the batcher's packets come from: anything that fills fresh pool buffers in bursts.
pub trait BurstSource: Send + 'static {
    /// Appends up to `max` new buffers holding received packets to `out`; returns how many
    /// (0: nothing now).
    fn rx_burst(&mut self, pool: &mut BufferPool, out: &mut Vec<u32>, max: usize) -> usize;

    /// Packets the source received but could not put into a buffer (the pool was empty)
    /// since the last call: the batcher counts them as dropped for "no buffer". Sources
    /// that never lose packets that way keep the default, 0.
    fn take_no_buffer(&mut self) -> u64 {
        0
    }
}

/// A DPDK rx queue as the batcher's source (feature `dpdk`): bursts of received mbufs,
/// zero copy, as [`DpdkRx::rx_into`](pktvec_io::dpdk::DpdkRx::rx_into) gives them
/// (multi-segment packets are freed there and counted by the `DpdkRx`).
#[cfg(feature = "dpdk")]
impl BurstSource for pktvec_io::dpdk::DpdkRx {
    fn rx_burst(&mut self, pool: &mut BufferPool, out: &mut Vec<u32>, max: usize) -> usize {
        self.rx_into(pool, out, max)
    }
}

/// A [`BurstSource`] replaying packets (a capture's, or generated ones), optionally up to a
/// limit, copying each into a fresh buffer as a NIC would.
#[derive(Clone, Debug)]
pub struct ReplaySource {
    packets: Vec<Vec<u8>>,
    pos: usize,
    looping: bool,
    limit: Option<u64>,
    produced: u64,
    no_buffer: u64,
    no_buffer_taken: u64,
    rx_if: u16,
}

impl ReplaySource {
    /// Replays `packets` once.
    pub fn new(packets: Vec<Vec<u8>>) -> Self {
        ReplaySource {
            packets,
            pos: 0,
            looping: false,
            limit: None,
            produced: 0,
            no_buffer: 0,
            no_buffer_taken: 0,
            rx_if: 0,
        }
    }
    /// Starts again at the first packet after the last.
    pub fn looping(mut self, on: bool) -> Self {
        self.looping = on;
        self
    }
    /// Stops after `n` packets.
    pub fn with_limit(mut self, n: u64) -> Self {
        self.limit = Some(n);
        self
    }
    /// Receive interface recorded in the metadata.
    pub fn with_rx_interface(mut self, rx_if: u16) -> Self {
        self.rx_if = rx_if;
        self
    }
    /// Packets produced.
    pub fn produced(&self) -> u64 {
        self.produced
    }
    /// Packets dropped because the pool had no buffer for them (they count towards the
    /// limit, as a NIC's receive drops what finds no buffer).
    pub fn no_buffer(&self) -> u64 {
        self.no_buffer
    }
}

impl BurstSource for ReplaySource {
    fn rx_burst(&mut self, pool: &mut BufferPool, out: &mut Vec<u32>, max: usize) -> usize {
        if self.packets.is_empty() {
            return 0;
        }
        let mut want = max;
        if let Some(l) = self.limit {
            want = want.min(l.saturating_sub(self.produced + self.no_buffer) as usize);
        }
        if !self.looping {
            want = want.min(self.packets.len() - self.pos);
        }
        let start = out.len();
        out.resize(start + want, 0);
        let got = pool.alloc_bulk(&mut out[start..]);
        out.truncate(start + got);
        let (packets, pos, looping) = (&self.packets, &mut self.pos, self.looping);
        copy_into_buffers(pool, &out[start..], self.rx_if, || {
            let data = &packets[*pos];
            *pos += 1;
            if *pos == packets.len() && looping {
                *pos = 0;
            }
            data
        });
        if got < want {
            // The packets that found no buffer are lost, as on a NIC: skip them (`want`
            // stayed within the capture when not looping).
            let missing = want - got;
            self.no_buffer += missing as u64;
            self.pos += missing;
            if self.looping {
                self.pos %= self.packets.len();
            }
        }
        self.produced += got as u64;
        got
    }

    fn take_no_buffer(&mut self) -> u64 {
        let n = self.no_buffer - self.no_buffer_taken;
        self.no_buffer_taken = self.no_buffer;
        n
    }
}

/// `ethernet-input`'s work on an IPv4 or IPv6 frame, for the batcher to start its vector
/// at `ip4-input`/`ip6-input`: the same metadata edit `ethernet-input` makes (L2 and L3
/// offsets, `L2_VALID | L3_VALID`, the Ethernet header and up to two VLAN tags stripped),
/// and the arc to take. Any other frame (ARP, NDN, unknown EtherType, more than two tags,
/// truncated) is left untouched and `None` returned: it goes through `ethernet-input`.
/// `fast`: the class the fast path found, if it did (untagged, no need to parse again).
/// A test checks this against `pktvec_nodes::ethernet::ethernet_input_one` on any bytes.
#[inline(always)]
pub fn strip_to_l3(pool: &mut BufferPool, bi: u32, fast: Option<FastL3>) -> Option<BatcherNext> {
    let next = match fast {
        Some(FastL3::Ip4) => BatcherNext::Ip4,
        Some(FastL3::Ip6) => BatcherNext::Ip6,
        Some(_) => return None,
        None => return strip_general(pool, bi),
    };
    strip_untagged(pool.meta_mut(bi), 0);
    Some(next)
}

/// `ethernet_input_one`'s edit of an untagged frame of at least 34 bytes (the fast path
/// checked), without recomputing the window; `flags`: more [`MetaFlags`] bits to set in
/// the same update.
#[inline(always)]
fn strip_untagged(m: &mut BufferMeta, flags: u16) {
    let off = m.data_offset;
    m.l2_offset = off;
    m.l3_offset = off.wrapping_add(14);
    m.data_offset = off.wrapping_add(14);
    m.len -= 14;
    m.flags.insert(MetaFlags(
        MetaFlags::L2_VALID.0 | MetaFlags::L3_VALID.0 | flags,
    ));
}

/// Tagged or unusual frames: `parse_l2` and the edit of `ethernet-input`'s general path.
#[cold]
#[inline(never)]
fn strip_general(pool: &mut BufferPool, bi: u32) -> Option<BatcherNext> {
    let l2 = parse_l2(pool.data(bi)).ok()?;
    let next = match l2.ethertype {
        EtherType::IPV4 => BatcherNext::Ip4,
        EtherType::IPV6 => BatcherNext::Ip6,
        _ => return None,
    };
    let mut p = pool.packet_mut(bi);
    let m = p.meta_mut();
    m.l2_offset = m.data_offset;
    m.l3_offset = m.data_offset + l2.l3_offset;
    m.flags
        .insert(MetaFlags(MetaFlags::L2_VALID.0 | MetaFlags::L3_VALID.0));
    // `parse_l2` guarantees l3_offset <= len.
    p.advance(l2.l3_offset as usize).ok()?;
    Some(next)
}

/// The class the first pass of a burst ([`classify_ip_pass`]) gives a frame it leaves to
/// the second: not an untagged IPv4 frame with a 20-byte header or IPv6 frame whose
/// window lies inside its buffer.
const UNCLASSIFIED: u16 = u16::MAX;

/// One frame of the first pass: for an untagged IPv4 frame (IHL 5, at least 34 bytes) or
/// IPv6 frame (at least 54 bytes) whose window lies inside its buffer, the path id from the fast path's table by protocol / next header,
/// the metadata the fast path writes (path id, `PATH_VALID`, L2/L3 offsets; with `DIRECT`
/// also `ethernet-input`'s edit: Ethernet header stripped, `L2_VALID | L3_VALID`) and its
/// class (path id | arc << 8). Any other frame is left untouched: [`UNCLASSIFIED`]. A
/// proptest checks it against [`classify_fast_one`] on any bytes and any window.
#[inline(always)]
fn classify_ip<const DIRECT: bool>(paths: &[u16; 512], pk: &mut PacketsMut<'_>, bi: u32) -> u16 {
    let mut p = pk.packet_mut(bi);
    let (m, buf) = p.meta_and_buffer_mut();
    let (off, len) = (m.data_offset as usize, m.len as usize);
    // The window `buf[off..off + len]` inside the buffer: then it is the packet's data.
    let Some(h) = buf.get(off..off + len).and_then(|w| w.first_chunk::<34>()) else {
        return UNCLASSIFIED;
    };
    let et = u16::from_be_bytes([h[12], h[13]]);
    let ip6 = et == ET_IP6;
    if !(et == ET_IP4 && h[14] & 0x0f == 5 || ip6 && len >= 54) {
        return UNCLASSIFIED;
    }
    // One table for both (IPv6 in the upper half), so the two classes share one path
    // through the loop without a branch.
    let proto = if ip6 { h[20] } else { h[23] };
    let path = paths[(ip6 as usize) << 8 | proto as usize];
    m.path_id = path;
    if DIRECT {
        strip_untagged(m, MetaFlags::PATH_VALID.0);
        path | (BatcherNext::Ip4.index() + ip6 as u16) << 8
    } else {
        m.flags.insert(MetaFlags::PATH_VALID);
        m.l2_offset = off as u16;
        m.l3_offset = off as u16 + 14;
        path
    }
}

/// The first pass over a burst: [`classify_ip`] for every packet into `cls`, prefetching
/// the metadata and first data line of the packet `distance` ahead (0: none). Out of line: its loop gets registers of its
/// own instead of the batcher's `process`'s leftovers.
#[inline(never)]
fn classify_ip_pass<const DIRECT: bool>(
    paths: &[u16; 512],
    pk: &mut PacketsMut<'_>,
    bufs: &[u32],
    cls: &mut [u16],
    distance: usize,
) {
    let mut done = 0;
    if distance > 0 {
        let d = distance.min(bufs.len());
        for &bi in &bufs[..d] {
            pk.prefetch(bi);
        }
        for ((&bi, &ahead), c) in bufs.iter().zip(&bufs[d..]).zip(cls.iter_mut()) {
            pk.prefetch(ahead);
            *c = classify_ip::<DIRECT>(paths, pk, bi);
        }
        done = bufs.len() - d;
    }
    for (&bi, c) in bufs[done..].iter().zip(&mut cls[done..]) {
        *c = classify_ip::<DIRECT>(paths, pk, bi);
    }
}

/// The fast path's classification of one frame ([`FastPath::classify`], all its classes,
/// any window) with the batcher's metadata edit (path id, `PATH_VALID`, L2/L3 offsets;
/// for IPv4/IPv6 going `direct`, `ethernet-input`'s edit), and its class (path id | arc
/// << 8); `None` (nothing written) if the generic parser must decide.
fn classify_fast_one(fast: &FastPath, pool: &mut BufferPool, bi: u32, direct: bool) -> Option<u16> {
    let c = fast.classify(pool.data(bi))?;
    let path = (c.path as usize).min(MAX_PATHS - 1);
    let arc = match c.l3 {
        FastL3::Ip4 if direct => BatcherNext::Ip4,
        FastL3::Ip6 if direct => BatcherNext::Ip6,
        _ => BatcherNext::Out,
    };
    let m = pool.meta_mut(bi);
    m.path_id = path as u16;
    if arc != BatcherNext::Out {
        // One flags update for PATH_VALID, L2_VALID and L3_VALID.
        strip_untagged(m, MetaFlags::PATH_VALID.0);
    } else {
        m.flags.insert(MetaFlags::PATH_VALID);
        m.l2_offset = m.data_offset;
        if c.l3_offset != 0 {
            m.l3_offset = m.data_offset + c.l3_offset;
        }
    }
    Some(path as u16 | arc.index() << 8)
}

/// All of `cls` one class (a burst of one path and one arc).
fn uniform(cls: &[u16]) -> bool {
    let first = cls.first().copied().unwrap_or(0);
    cls.iter().fold(0, |a, &x| a | (x ^ first)) == 0
}

/// What the batcher needs to classify a packet the fast path does not cover.
struct Slow<'a> {
    graph: &'a ProtocolGraph,
    table: &'a PathTable,
    parsed: &'a mut Parsed,
    /// Bits of the IPv4 and IPv6 header types in the protocol graph.
    ip_headers: u32,
    direct: bool,
}

impl Slow<'_> {
    /// The generic parser and the rule table: writes the path id and offsets into the
    /// packet's metadata (and `ethernet-input`'s edit if it goes direct) and returns its
    /// class (path id | arc << 8). Out of line, so the fast path's loop stays small.
    #[inline(never)]
    fn classify(&mut self, pool: &mut BufferPool, bi: u32) -> u16 {
        let t = self.table;
        self.graph.parse_fields(
            pool.data(bi),
            self.parsed,
            t.fields_used(),
            t.headers_used(),
        );
        let path = (t.classify(self.parsed) as usize).min(MAX_PATHS - 1);
        let p = &*self.parsed;
        let m = pool.meta_mut(bi);
        m.path_id = path as u16;
        m.flags.insert(MetaFlags::PATH_VALID);
        m.l2_offset = m.data_offset;
        if p.l3_offset != 0 {
            m.l3_offset = m.data_offset + p.l3_offset;
        }
        if p.l4_offset != 0 {
            m.l4_offset = m.data_offset + p.l4_offset;
        }
        // Tagged IP frames go direct too (their path's vectors stay whole); truncated or
        // non-IP ones (mice, sharing a queue) keep to `Out`, so their queue's vectors do
        // not split between arcs.
        let ip = !p.truncated && p.headers & self.ip_headers != 0;
        let arc = if self.direct && ip {
            strip_general(pool, bi).unwrap_or(BatcherNext::Out)
        } else {
            BatcherNext::Out
        };
        path as u16 | arc.index() << 8
    }
}

next_nodes! {
    /// The arcs of [`Batcher`]. `Ip4` and `Ip6` lead to `ethernet-input` by default, like
    /// `Out`; point them at the IPv4/IPv6 input nodes (`ip4-input`, `ip6-input`) and the
    /// batcher does `ethernet-input`'s work itself for the untagged IPv4/IPv6 frames its
    /// fast path classifies (records the L2/L3 offsets, strips the Ethernet header, as
    /// `ethernet-input` does) and starts their whole-path vectors at those nodes.
    pub enum BatcherNext {
        /// Every vector not sent on `Ip4`/`Ip6` (by default to `ethernet-input`).
        Out = "ethernet-input",
        /// Vectors of IPv4 frames, already stripped to L3, when both `Ip4` and `Ip6` are
        /// wired elsewhere than `Out`'s node.
        Ip4 = "ethernet-input",
        /// Vectors of IPv6 frames, already stripped to L3 (as `Ip4`).
        Ip6 = "ethernet-input",
    }
}

node_errors! {
    /// Why [`Batcher`] drops.
    pub enum BatcherError {
        /// The packet's queue was full ([`FullPolicy::Drop`]).
        QueueFull = "batcher queue full",
        /// The source had no buffer for a received packet ([`BurstSource::take_no_buffer`]).
        NoBuffer = "no buffer",
    }
}

/// The path-based packet batcher as an input node over a [`BurstSource`].
///
/// ```
/// use pktvec_batcher::{Batcher, BatcherConfig, ReplaySource};
/// use pktvec_graph::{builtin::NullSink, GraphBuilder, GraphConfig};
/// use pktvec_packet::{builder::PacketBuilder, BufferPool, PoolConfig};
/// use std::net::{Ipv4Addr, Ipv6Addr};
/// let (a, b) = ([2, 0, 0, 0, 0, 1].into(), [2, 0, 0, 0, 0, 2].into());
/// let v4 = PacketBuilder::ethernet(a, b).ipv4(Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2)).udp(1, 2).build();
/// let v6 = PacketBuilder::ethernet(a, b).ipv6(Ipv6Addr::LOCALHOST, Ipv6Addr::LOCALHOST).udp(1, 2).build();
/// // Strictly alternating IPv4/IPv6: the batcher hands the graph vectors of one path.
/// let src = ReplaySource::new((0..1024).map(|i| if i % 2 == 0 { v4.clone() } else { v6.clone() }).collect());
/// let mut g = GraphBuilder::new(GraphConfig::default());
/// g.add("batcher", Batcher::new(src, BatcherConfig { batch_size: 128, ..Default::default() }))
///     .add("ethernet-input", NullSink);
/// let mut g = g.build(BufferPool::new(PoolConfig::default())?)?;
/// g.run_until_idle();
/// let st = g.node::<Batcher<ReplaySource>>("batcher").unwrap().stats();
/// assert_eq!(st.path_packets, vec![(1, 512), (2, 512)]); // IPv4 = path 1, IPv6 = path 2
/// assert_eq!(g.runtime().row("ethernet-input").unwrap().vectors, 8); // 8 whole vectors of 128
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Batcher<S: BurstSource> {
    src: S,
    graph: ProtocolGraph,
    table: SharedPathTable,
    cfg: BatcherConfig,
    queues: Queues,
    scratch: Vec<u32>,
    /// Per packet of the burst: path id | arc << 8.
    cls: Vec<u16>,
    /// The burst in `cls` is of one class.
    uniform: bool,
    /// The last call handed a uniform burst over as its vector.
    streak: bool,
    /// Packets per class of the burst being queued (zero between bursts).
    class_counts: Box<[u32; CLASSES]>,
    drops: Vec<u32>,
    parsed: Box<Parsed>,
    /// Bits of the IPv4 and IPv6 header types in the protocol graph.
    ip_headers: u32,
    deadline_cycles: u64,
    tsc_hz: f64,
}

impl<S: BurstSource> Batcher<S> {
    /// A batcher over `src` with the built-in protocol graph and the IPv4/IPv6/ARP/other
    /// path table ([`PathTable::by_network_protocol`]).
    pub fn new(src: S, cfg: BatcherConfig) -> Self {
        let graph = ProtocolGraph::builtin();
        let table = SharedPathTable::new(PathTable::by_network_protocol(&graph));
        Self::with_table(src, cfg, graph, table)
    }

    /// A batcher with a protocol graph and a (shared, replaceable) path table of yours.
    pub fn with_table(
        src: S,
        cfg: BatcherConfig,
        graph: ProtocolGraph,
        table: SharedPathTable,
    ) -> Self {
        let tsc_hz = clock::tsc_hz();
        let ip_headers = ["ipv4", "ipv6"]
            .iter()
            .filter_map(|h| graph.header(h))
            .fold(0, |a, h| a | 1 << h);
        let mut b = Batcher {
            src,
            graph,
            table,
            queues: Queues::new(&cfg),
            scratch: Vec::with_capacity(4096),
            cls: Vec::with_capacity(4096),
            uniform: false,
            streak: false,
            class_counts: Box::new([0; CLASSES]),
            drops: Vec::with_capacity(4096),
            parsed: Box::default(),
            ip_headers,
            deadline_cycles: (cfg.flush_deadline_us * 1e-6 * tsc_hz) as u64,
            tsc_hz,
            cfg,
        };
        b.set_weights();
        b
    }

    /// Turns batching on or off and sets the batch size, while running (the tuner's knob;
    /// the graph is not rebuilt). Returns the batch size applied: it is clamped to
    /// 1..=the largest the queues were sized for at construction. Switching off takes
    /// effect once the packets already queued have been sent (in order, as partial
    /// vectors, receiving nothing meanwhile), so no flow overtakes itself.
    ///
    /// ```
    /// use pktvec_batcher::{Batcher, BatcherConfig, ReplaySource};
    /// let mut b = Batcher::new(ReplaySource::new(vec![vec![0u8; 60]]), BatcherConfig::default());
    /// assert_eq!(b.set_batching(true, 64), 64);
    /// assert_eq!(b.set_batching(false, 64), 64);
    /// assert_eq!(b.config().batch_size, 64);
    /// ```
    pub fn set_batching(&mut self, enabled: bool, batch_size: usize) -> usize {
        // A queue's ring holds max(capacity, batch) + one burst (≤ batch).
        let ring = self.queues.ring_size();
        let qc = self.cfg.queue_capacity;
        let max_b = if ring >= 2 * qc {
            ring / 2
        } else {
            ring.saturating_sub(qc)
        };
        let b = batch_size.clamp(1, max_b.max(1));
        self.cfg.enabled = enabled;
        self.cfg.batch_size = b;
        b
    }

    /// Switches [`BatcherConfig::uniform_vectors`] while running (takes effect at the next
    /// call; nothing held changes).
    ///
    /// ```
    /// use pktvec_batcher::{Batcher, BatcherConfig, ReplaySource};
    /// let mut b = Batcher::new(ReplaySource::new(vec![vec![0u8; 60]]), BatcherConfig::default());
    /// b.set_uniform_vectors(false);
    /// assert!(!b.config().uniform_vectors);
    /// ```
    pub fn set_uniform_vectors(&mut self, on: bool) {
        self.cfg.uniform_vectors = on;
    }

    /// The configuration in force (after [`set_batching`](Self::set_batching)).
    pub fn config(&self) -> &BatcherConfig {
        &self.cfg
    }

    /// The shared path table (store a new one to change the paths while running).
    pub fn path_table(&self) -> &SharedPathTable {
        &self.table
    }

    /// The source.
    pub fn source(&self) -> &S {
        &self.src
    }

    /// Packets held in the queues now.
    pub fn held(&self) -> usize {
        self.queues.held
    }

    /// Statistics so far.
    pub fn stats(&self) -> BatcherStats {
        let q = &self.queues;
        let ns = |c: u64| c as f64 * 1e9 / self.tsc_hz;
        BatcherStats {
            queues: q
                .q
                .iter()
                .enumerate()
                .map(|(i, qu)| {
                    let mut s = qu.stats.clone();
                    s.paths = (0..MAX_PATHS)
                        .filter(|&p| q.map[p] as usize == i && q.total_counts[p] > 0)
                        .map(|p| p as u16)
                        .collect();
                    s.held = qu.bufs.len();
                    s.mean_fill = if s.vectors > 0 {
                        s.packets as f64 / s.vectors as f64 / self.cfg.batch_size as f64
                    } else {
                        0.0
                    };
                    s
                })
                .collect(),
            path_packets: (0..MAX_PATHS)
                .filter(|&p| q.total_counts[p] > 0)
                .map(|p| (p as u16, q.total_counts[p]))
                .collect(),
            dropped_full: q.dropped_full,
            latency_p50_ns: ns(q.hist.quantile(0.5)),
            latency_p99_ns: ns(q.hist.quantile(0.99)),
            latency_max_ns: ns(q.hist.quantile(1.0)),
            remaps: q.remaps,
        }
    }

    fn set_weights(&mut self) {
        for qu in self.queues.q.iter_mut() {
            qu.weight = 1;
        }
        for &(p, w) in &self.cfg.weights {
            let qi = self.queues.map[(p as usize).min(MAX_PATHS - 1)] as usize;
            let qu = &mut self.queues.q[qi];
            qu.weight = qu.weight.max(w.max(1));
        }
    }

    /// Reads one burst into `scratch` and classifies it: each packet's metadata gets its
    /// path id and offsets (and `ethernet-input`'s edit when it enters at
    /// `ip4-input`/`ip6-input`), `cls` its path id and arc. `direct`: IPv4/IPv6 frames
    /// enter the graph after `ethernet-input` (arcs `Ip4`/`Ip6`, see [`strip_to_l3`]).
    /// A quad loop that prefetches the metadata and first data line of the packets
    /// `distance` ahead, as `ethernet-input` does. Returns the packets read.
    fn rx_classify(
        &mut self,
        pool: &mut BufferPool,
        max: usize,
        direct: bool,
        distance: usize,
    ) -> usize {
        self.scratch.clear();
        let n = self.src.rx_burst(pool, &mut self.scratch, max);
        if n == 0 {
            return 0;
        }
        let table = self.table.load();
        let table: &PathTable = &table;
        let mut slow = Slow {
            graph: &self.graph,
            table,
            parsed: &mut self.parsed,
            ip_headers: self.ip_headers,
            direct,
        };
        self.cls.clear();
        self.cls.resize(n, 0);
        let cls = &mut self.cls[..n];
        let Some(fast) = table.fast_path() else {
            for (c, &bi) in cls.iter_mut().zip(&self.scratch) {
                *c = slow.classify(pool, bi);
            }
            self.uniform = uniform(cls);
            return n;
        };
        // First pass: untagged IPv4 (IHL 5) and IPv6 frames, classified and edited in
        // place by a loop without calls, over the pool's `PacketsMut` view (its addresses
        // stay in registers); the metadata and first data line of the packet `distance`
        // ahead are prefetched. Every other frame is marked `UNCLASSIFIED`.
        let bufs = &self.scratch[..n];
        let mut pk = pool.packets_mut();
        match fast.ip_paths() {
            Some(paths) if direct => classify_ip_pass::<true>(paths, &mut pk, bufs, cls, distance),
            Some(paths) => classify_ip_pass::<false>(paths, &mut pk, bufs, cls, distance),
            None => cls.fill(UNCLASSIFIED),
        }
        // Second pass, only over bursts with a marked frame: the fast path's other classes
        // (ARP, other EtherTypes, windows past the buffer), then the generic parser (out
        // of line) for what is left (VLAN tags, IPv4 options, short frames).
        let first = cls[0];
        let mixed = cls.iter().fold(0, |a, &x| a | (x ^ first)) != 0;
        if first != UNCLASSIFIED && !mixed {
            self.uniform = true;
            return n;
        }
        // Mixed but all classified (alternating IPv4/IPv6): no second pass (less code
        // run per burst, fewer I1 misses).
        if !cls.iter().fold(false, |a, &x| a | (x == UNCLASSIFIED)) {
            self.uniform = false;
            return n;
        }
        for (&bi, cl) in bufs.iter().zip(cls.iter_mut()) {
            if *cl != UNCLASSIFIED {
                continue;
            }
            *cl = match classify_fast_one(fast, pool, bi, direct) {
                Some(c) => c,
                None => slow.classify(pool, bi),
            };
        }
        self.uniform = uniform(cls);
        n
    }

    /// The arc a just-classified burst of `n` packets can be handed to the graph on as the
    /// vector itself, if it can: its packets all take one path and one arc, it is a whole
    /// batch (`take`), its path's queue holds nothing (so nothing of that path is older)
    /// and no queue reassignment is pending. Counts it as its queue's sent vector (held
    /// time 0), as the queued route would. `joining`: the class of the vector this burst would join (see
    /// [`BatcherConfig::uniform_vectors`]); then it must be of that class, and the vector
    /// is not counted again.
    fn hand_over(&mut self, n: usize, take: usize, joining: Option<u16>) -> Option<BatcherNext> {
        let first = self.cls[0];
        if n < take || !self.uniform || joining.is_some_and(|c| c != first) {
            return None;
        }
        let q = &mut self.queues;
        let path = (first & 0xff) as usize;
        let qu = &mut q.q[q.map[path] as usize];
        if !qu.bufs.is_empty() || q.pending_map.is_some() {
            return None;
        }
        qu.stats.packets += n as u64;
        if joining.is_none() {
            qu.stats.vectors += 1;
            qu.stats.passed_through += 1;
        }
        q.hist.add(0, n as u64);
        q.epoch_counts[path] += n as u64;
        q.total_counts[path] += n as u64;
        Some(match first >> 8 {
            1 => BatcherNext::Ip4,
            2 => BatcherNext::Ip6,
            _ => BatcherNext::Out,
        })
    }

    /// Queues the burst `rx_classify` left in `scratch`/`cls`, by class (path and arc):
    /// the burst's distinct classes are counted first (up to [`BURST_CLASSES`]); a class
    /// alone in its queue, with room, is counted once and appended with one branch-free
    /// pass (one bulk copy when it is the whole burst) and one arrival run. Queues shared
    /// by several classes of the burst (mice), full queues and bursts of more classes take
    /// the per-packet route. Either way each queue receives its packets in burst order.
    fn enqueue_burst(&mut self, n: usize, now: u64) {
        let cap = self.cfg.queue_capacity.max(self.cfg.batch_size);
        // Counted in a table indexed by class (only the burst's classes are touched and
        // zeroed again), so the pass has no data-dependent branch but "first of its class".
        let counts = &mut self.class_counts;
        let mut cl = [(0u16, 0u32); BURST_CLASSES];
        let mut k = 0;
        let mut overflow = false;
        for &x in &self.cls {
            let c = &mut counts[(x as usize) & (CLASSES - 1)];
            if *c == 0 {
                if k < BURST_CLASSES {
                    cl[k].0 = x;
                    k += 1;
                } else {
                    overflow = true;
                }
            }
            *c += 1;
        }
        for e in &mut cl[..k] {
            e.1 = std::mem::take(&mut counts[(e.0 as usize) & (CLASSES - 1)]);
        }
        if overflow {
            for &x in &self.cls {
                counts[(x as usize) & (CLASSES - 1)] = 0;
            }
            self.enqueue_each(None, now, cap);
            return;
        }
        for j in 0..k {
            let (c, cnt) = cl[j];
            let path = (c & 0xff) as usize;
            let q = &mut self.queues;
            let qi = q.map[path];
            let mut shared = false;
            let mut first_of_queue = true;
            for (o, e) in cl[..k].iter().enumerate() {
                if o != j && q.map[(e.0 & 0xff) as usize] == qi {
                    shared = true;
                    first_of_queue &= o > j;
                }
            }
            let qu = &mut q.q[qi as usize];
            let cnt_u = cnt as usize;
            let fits = (self.cfg.on_full == FullPolicy::Flush || qu.bufs.len() + cnt_u <= cap)
                && qu.bufs.room() > cnt_u;
            if shared || !fits {
                // Once per queue, in burst order over all its classes.
                if first_of_queue {
                    self.enqueue_each(Some(qi), now, cap);
                }
                continue;
            }
            q.epoch_counts[path] += cnt as u64;
            q.total_counts[path] += cnt as u64;
            if cnt_u == n {
                qu.bufs.extend(&self.scratch);
            } else {
                qu.bufs.extend_matching(&self.scratch, &self.cls, c);
            }
            qu.note(now, cnt, c >> 8);
            q.held += cnt_u;
        }
    }

    /// The per-packet route of [`enqueue_burst`](Self::enqueue_burst): the burst's
    /// packets for queue `only` (all queues: `None`), one at a time, dropping (counted)
    /// what does not fit.
    fn enqueue_each(&mut self, only: Option<u8>, now: u64, cap: usize) {
        let q = &mut self.queues;
        for (&bi, &c) in self.scratch.iter().zip(&self.cls) {
            let path = (c & 0xff) as usize;
            let qi = q.map[path];
            if only.is_some_and(|o| o != qi) {
                continue;
            }
            q.epoch_counts[path] += 1;
            q.total_counts[path] += 1;
            let qu = &mut q.q[qi as usize];
            if (qu.bufs.len() >= cap && self.cfg.on_full == FullPolicy::Drop) || qu.bufs.room() == 0
            {
                q.dropped_full += 1;
                self.drops.push(bi);
                continue;
            }
            qu.bufs.push(bi);
            qu.note(now, 1, c >> 8);
            q.held += 1;
        }
    }

    /// Counts a received burst into the epoch and decides the queue assignment at its end.
    fn end_burst(&mut self, n: usize) {
        let q = &mut self.queues;
        q.epoch_seen += n as u64;
        if q.pending_map.is_none() && q.epoch_seen >= self.cfg.epoch_packets {
            q.pending_map = q.decide(&self.cfg);
        }
    }

    /// The queue to send next, if any: a full one first (flush policy), then round robin
    /// over queues with a whole batch, an expired deadline, or anything when flushing.
    fn pick(&mut self, now: u64, flush_all: bool) -> Option<usize> {
        let cap = self.cfg.queue_capacity.max(self.cfg.batch_size);
        let q = &mut self.queues;
        if let Some(i) = q.q.iter().position(|qu| qu.bufs.len() >= cap) {
            q.q[i].stats.full_flushes += 1;
            return Some(i);
        }
        let n = q.q.len();
        let batch = self.cfg.batch_size;
        let deadline = self.deadline_cycles;
        for k in 0..n {
            let i = (q.rr + k) % n;
            let qu = &q.q[i];
            let Some(t0) = qu.runs.front().map(|r| r.t) else {
                continue;
            };
            let expired = now.saturating_sub(t0) >= deadline;
            if qu.bufs.len() >= batch || expired || flush_all {
                if qu.bufs.len() < batch && expired && !flush_all {
                    q.q[i].stats.deadline_flushes += 1;
                }
                if i != q.rr || q.burst_left == 0 {
                    q.rr = i;
                    q.burst_left = q.q[i].weight;
                }
                q.burst_left -= 1;
                if q.burst_left == 0 {
                    q.rr = (i + 1) % n;
                }
                return Some(i);
            }
        }
        None
    }
}

impl<S: BurstSource> Node for Batcher<S> {
    type Next = BatcherNext;
    type Error = BatcherError;
    const KIND: NodeKind = NodeKind::Input;

    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        self.receive_and_send(cx, frame);
        let lost = self.src.take_no_buffer();
        if lost > 0 {
            cx.drop_unreceived(BatcherError::NoBuffer, lost);
        }
    }
}

impl<S: BurstSource> Batcher<S> {
    /// One poll: receive, classify, queue, and send what is due (see the type's docs).
    fn receive_and_send(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        let v = cx.vector_size().min(frame.room());
        if !self.cfg.enabled && self.queues.held == 0 {
            self.scratch.clear();
            self.src.rx_burst(cx.pool_mut(), &mut self.scratch, v);
            frame.extend_from_slice(&self.scratch);
            cx.enqueue_all(frame, BatcherNext::Out);
            return;
        }
        let now = clock::now();
        let cap = self.cfg.queue_capacity.max(self.cfg.batch_size);
        let distance = cx.prefetch_distance();
        // Frames of a fast-path class go straight to the node after `ethernet-input` when
        // that arc is wired elsewhere than `Out`'s node.
        let out = cx.next_node_id(BatcherNext::Out);
        let direct =
            cx.next_node_id(BatcherNext::Ip4) != out && cx.next_node_id(BatcherNext::Ip6) != out;
        // Bursts of one batch: the packets held (and their cache lines) stay near one
        // batch per path instead of a whole vector. But after a call that handed over a
        // uniform vector, with nothing held, the first burst is a whole vector
        // (`uniform_vectors`): uniform traffic then takes one receive and one
        // classification pass per vector; if it is mixed after all, it is queued as usual
        // (the queues are empty and a ring holds at least `cap`).
        let batch = v.min(self.cfg.batch_size);
        let mut burst =
            if self.cfg.uniform_vectors && self.streak && self.queues.held == 0 && v <= cap {
                v
            } else {
                batch
            };
        // Receive until a queue can send (a whole batch, a deadline, a full queue) or the
        // source runs dry; only while no queue is over capacity and no reassignment is
        // draining the queues (per-flow order), so a queue never holds more than capacity
        // plus one burst. A burst that is a whole batch of one path whose queue is empty
        // leaves at once as this call's vector, without entering the queue.
        // Switched off with packets still queued: send them, receive nothing.
        let mut idle = !self.cfg.enabled;
        let mut picked = None;
        let mut handed = None;
        loop {
            let draining = self.queues.pending_map.is_some();
            if self.queues.held > 0 {
                picked = picked.or_else(|| self.pick(now, idle || draining));
            }
            let room = self.queues.held < cap || self.queues.q.iter().all(|qu| qu.bufs.len() < cap);
            if picked.is_some() || idle || draining || !room {
                break;
            }
            let n = self.rx_classify(cx.pool_mut(), burst, direct, distance);
            burst = batch;
            if n == 0 {
                idle = true;
                continue;
            }
            handed = self.hand_over(n, batch, None);
            if handed.is_none() {
                self.enqueue_burst(n, now);
            }
            self.end_burst(n);
            if handed.is_some() {
                break;
            }
        }
        let mut next = BatcherNext::Out;
        if let Some(i) = picked {
            let take = self.cfg.batch_size.min(v);
            let q = &mut self.queues;
            let qu = &mut q.q[i];
            // One vector goes to one node: take runs for the first run's arc, up to a batch.
            let arc = qu.runs.front().map_or(0, |r| r.arc);
            let mut k = 0;
            while k < take {
                let Some(r) = qu.runs.front_mut() else {
                    break;
                };
                if r.arc != arc {
                    break;
                }
                let t = (r.n as usize).min(take - k);
                q.hist.add(now.saturating_sub(r.t), t as u64);
                k += t;
                if t == r.n as usize {
                    qu.runs.pop_front();
                } else {
                    r.n -= t as u32;
                }
            }
            let (a, b) = qu.bufs.front(k);
            frame.extend_from_slice(a);
            frame.extend_from_slice(b);
            qu.bufs.pop(k);
            q.held -= k;
            qu.stats.packets += k as u64;
            qu.stats.vectors += 1;
            next = match arc {
                1 => BatcherNext::Ip4,
                2 => BatcherNext::Ip6,
                _ => BatcherNext::Out,
            };
        } else if let Some(arc) = handed {
            // The burst is the vector: one copy of its indices, none through a ring.
            frame.extend_from_slice(&self.scratch);
            next = arc;
            // Uniform traffic, nothing held: further whole bursts of the same class join
            // it, up to the graph's vector size. The first burst that does not (another
            // class, mixed, short) is queued as usual and ends the call.
            let class = self.cls[0];
            while self.cfg.uniform_vectors
                && self.queues.held == 0
                && self.queues.pending_map.is_none()
                && frame.len() + batch <= v
            {
                let n = self.rx_classify(cx.pool_mut(), batch, direct, distance);
                if n == 0 {
                    break;
                }
                let joined = self.hand_over(n, batch, Some(class)).is_some();
                if joined {
                    frame.extend_from_slice(&self.scratch);
                } else {
                    self.enqueue_burst(n, now);
                }
                self.end_burst(n);
                if !joined {
                    break;
                }
            }
        }
        for i in 0..self.drops.len() {
            let bi = self.drops[i];
            cx.drop_buffer(bi, BatcherError::QueueFull);
        }
        self.drops.clear();
        if self.queues.held == 0 {
            if let Some(m) = self.queues.pending_map.take() {
                self.queues.map = m;
                self.queues.remaps += 1;
                self.set_weights();
            }
        }
        self.streak = handed.is_some();
        cx.enqueue_all(frame, next);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pktvec_packet::PoolConfig;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]
        /// The burst loop's frame classification (`classify_ip`) is the fast path's
        /// (`classify_fast_one`) wherever it answers: same class, same metadata, same
        /// bytes; where it does not, it leaves the packet untouched. Any bytes (mostly
        /// IPv4/IPv6 EtherTypes), any window (also past the buffer), both tables' modes.
        #[test]
        fn burst_loop_is_the_fast_path(
            mut bytes in proptest::collection::vec(any::<u8>(), 0..80),
            et in prop_oneof![Just(0x0800u16), Just(0x86dd), Just(0x0806), any::<u16>()],
            vihl in prop_oneof![Just(0x45u8), any::<u8>()],
            off in prop_oneof![Just(None), (0u16..4200).prop_map(Some)],
            len in prop_oneof![Just(None), (0u16..4200).prop_map(Some)],
            direct in any::<bool>(),
            table in 0usize..2,
        ) {
            if bytes.len() >= 15 {
                bytes[12..14].copy_from_slice(&et.to_be_bytes());
                bytes[14] = vihl;
            }
            let g = ProtocolGraph::builtin();
            let t = match table {
                0 => PathTable::by_network_protocol(&g),
                _ => PathTable::from_toml(&g, "default_path = 7\n[[rules]]\npath = 300\nheaders = [\"ipv4\"]\nfields = [ { field = \"ipv4.protocol\", value = 17 } ]\n[[rules]]\npath = 5\nfields = [ { field = \"ipv6.next_header\", value = 6 } ]\n").unwrap(),
            };
            let fast = t.fast_path().unwrap();
            let paths = fast.ip_paths().unwrap();
            let mut pools = [0, 1].map(|_| BufferPool::new(PoolConfig { buffers: 4, ..PoolConfig::default() }).unwrap());
            let mut bis = [0u32; 2];
            for (p, b) in pools.iter_mut().zip(bis.iter_mut()) {
                *b = p.alloc_with(&bytes).unwrap();
                let m = p.meta_mut(*b);
                if let Some(o) = off {
                    m.data_offset = o;
                }
                if let Some(l) = len {
                    m.len = l;
                }
            }
            let before = *pools[0].meta(bis[0]);
            let [a, b] = &mut pools;
            let got = if direct {
                classify_ip::<true>(paths, &mut a.packets_mut(), bis[0])
            } else {
                classify_ip::<false>(paths, &mut a.packets_mut(), bis[0])
            };
            if got == UNCLASSIFIED {
                prop_assert_eq!(*a.meta(bis[0]), before);
            } else {
                let want = classify_fast_one(fast, b, bis[1], direct);
                prop_assert_eq!(Some(got), want);
                prop_assert_eq!(a.meta(bis[0]), b.meta(bis[1]));
                prop_assert_eq!(a.data(bis[0]), b.data(bis[1]));
            }
        }
    }

    /// Built IPv4 and IPv6 frames (what the proptest above rarely makes whole) take the
    /// burst loop, not the second pass.
    #[test]
    fn built_ip_frames_take_the_burst_loop() {
        use pktvec_packet::builder::PacketBuilder;
        use std::net::{Ipv4Addr, Ipv6Addr};
        let (a, b) = ([2, 0, 0, 0, 0, 1].into(), [2, 0, 0, 0, 0, 2].into());
        let v4 = PacketBuilder::ethernet(a, b)
            .ipv4(Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2))
            .udp(1, 2)
            .build();
        let v6 = PacketBuilder::ethernet(a, b)
            .ipv6(Ipv6Addr::LOCALHOST, Ipv6Addr::LOCALHOST)
            .udp(1, 2)
            .build();
        let g = ProtocolGraph::builtin();
        let t = PathTable::by_network_protocol(&g);
        let fast = t.fast_path().unwrap();
        let mut pool = BufferPool::new(PoolConfig::default()).unwrap();
        for (f, want) in [(&v4, 1 | 1 << 8), (&v6, 2 | 2 << 8)] {
            let (x, y) = (pool.alloc_with(f).unwrap(), pool.alloc_with(f).unwrap());
            let got = classify_ip::<true>(fast.ip_paths().unwrap(), &mut pool.packets_mut(), x);
            assert_eq!(got, want);
            assert_eq!(classify_fast_one(fast, &mut pool, y, true), Some(want));
            assert_eq!(pool.meta(x), pool.meta(y));
            assert_eq!(pool.data(x), &f[14..]);
        }
    }
}
