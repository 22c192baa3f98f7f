//! Handoff: packets go to the worker that owns their flow, as in VPP's `worker-handoff`.
//!
//! All workers' pools lie over one [`SharedArena`], so a buffer one worker received can be
//! processed and freed by another. A [`Handoff`] owns one [`ring`](crate::ring) per ordered
//! pair of workers and gives each worker three nodes ([`Handoff::add_to`]):
//!
//! ```text
//!   input ─→ worker-handoff ─┬─ (this worker owns the flow) ──────────→ continuation ─→ …
//!                            └─ (another worker does) ─→ handoff-tx ⇒ ring to the owner
//!   rings from the others ⇒ handoff-input ─────────────────────────→ continuation ─→ …
//! ```
//!
//! * `worker-handoff` hashes each packet's addresses and ports with the Toeplitz hash and
//!   looks the owner up in the redirection table ([`Distribution`]; the hash is kept in the
//!   metadata as the flow hash). Frames without an IPv4/IPv6 header stay on this worker.
//! * `handoff-tx` (a sink: packets handed off leave this worker's graph as its output)
//!   sorts its vector by owner and moves each owner's chunk at once: as many as the ring has
//!   room for are released from this worker's pool ([`SharedArena::hand_off`]) and
//!   enqueued; the rest are dropped under the reason `congestion drop`, never waited for.
//! * `handoff-input` (an input node) polls the rings into this worker, round robin, up to a
//!   vector, takes the buffers into its pool ([`SharedArena::take_over`]) and sends them to
//!   the continuation (not to `worker-handoff` again).
//!
//! With the workers runtime ([`WorkersConfig::handoff`](crate::runtime::WorkersConfig)),
//! finite inputs end when every worker is idle and every ring is empty, and the report
//! counts a handed-off packet once: [`WorkersReport::conservation`](crate::runtime::WorkersReport::conservation) takes the rings'
//! traffic out of the graphs' inputs and outputs and counts what is still in a ring as in
//! flight. Indices still in rings when the workers stop go back to the arena
//! ([`Handoff::reclaim`]).
//!
//! ```
//! use pktvec_graph::builtin::{NullSink, PacketSource, SourceNext};
//! use pktvec_graph::{GraphBuilder, GraphConfig};
//! use pktvec_packet::{arena::SharedArena, builder::PacketBuilder, PoolConfig};
//! use pktvec_workers::handoff::{Distribution, Handoff};
//! use pktvec_workers::runtime::{Workers, WorkersConfig};
//! use std::net::Ipv4Addr;
//!
//! let arena = SharedArena::new(PoolConfig { buffers: 8192, ..PoolConfig::default() })?;
//! let handoff = Handoff::new(arena, Distribution::new(2), 1024)?;
//! let h = handoff.clone();
//! let report = Workers::run(WorkersConfig::new(2).with_handoff(handoff.clone()), move |w| {
//!     // each worker receives 64 flows; about half of them belong to the other worker
//!     let frames = (0..64u8)
//!         .map(|i| {
//!             PacketBuilder::ethernet([2, 0, 0, 0, 0, 1].into(), [2, 0, 0, 0, 0, 2].into())
//!                 .ipv4(Ipv4Addr::new(10, w.id as u8, 0, i), Ipv4Addr::new(10, 9, 9, 9))
//!                 .udp(1000 + u16::from(i), 53)
//!                 .build()
//!         })
//!         .collect();
//!     let mut b = GraphBuilder::new(GraphConfig::default());
//!     b.add("input", PacketSource::new(frames).with_limit(10_000));
//!     let entry = h.add_to(&mut b, w.id, "tx")?;
//!     b.set_next("input", SourceNext::Out, entry);
//!     b.add("tx", NullSink);
//!     Ok(b.build(h.pool())?)
//! })?;
//! let c = report.conservation();
//! assert!(c.is_balanced());
//! // every packet left once: sent, or dropped (a full ring drops under "congestion drop")
//! assert_eq!(c.input, 20_000);
//! assert_eq!(c.output + c.dropped, 20_000);
//! let h = report.handoff.as_ref().unwrap();
//! assert!(h.handed_off + h.congestion_drops > 5_000, "about half changed worker");
//! assert_eq!(report.errors().count("handoff-tx", "congestion drop"), h.congestion_drops);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex, MutexGuard};

use pktvec_graph::{
    next_nodes, node_errors, Context, Frame, GraphBuilder, Next, NoError, NoNext, Node, NodeKind,
};
use pktvec_packet::arena::SharedArena;
use pktvec_packet::{BufferPool, MetaFlags};
use serde::Serialize;

use crate::ring::{Consumer, Mesh, MeshWatch, PairStats, Producer, WorkerRings};
use crate::rss::{tuple_from_frame, Reta, Toeplitz, Tuple};

/// Name of the node that picks each packet's owner.
pub const WORKER_HANDOFF: &str = "worker-handoff";
/// Name of the sink that moves packets into the rings.
pub const HANDOFF_TX: &str = "handoff-tx";
/// Name of the input node that polls the rings.
pub const HANDOFF_INPUT: &str = "handoff-input";
/// Entries of the redirection table [`Distribution::new`] makes (as many NICs have).
pub const DEFAULT_RETA_SIZE: usize = 128;

/// How flows map to workers: a Toeplitz hash over each packet's addresses and ports, and a
/// redirection table from the hash's low bits to the owner.
///
/// ```
/// use pktvec_workers::handoff::Distribution;
/// use pktvec_packet::{builder::PacketBuilder, wire::TcpFlags};
/// use std::net::Ipv4Addr;
/// let d = Distribution::symmetric(4);
/// let frame = |a, b, pa, pb| PacketBuilder::ethernet([2; 6].into(), [4; 6].into())
///     .ipv4(a, b).tcp(pa, pb, TcpFlags::ACK).build();
/// let (x, y) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(192, 0, 2, 7));
/// // the symmetric key sends both directions of a connection to one worker
/// assert_eq!(d.owner(&frame(x, y, 1234, 80)), d.owner(&frame(y, x, 80, 1234)));
/// assert_eq!(d.owner(&[0u8; 20]), None); // not IP: the receiving worker keeps it
/// ```
#[derive(Clone, Debug)]
pub struct Distribution {
    toeplitz: Toeplitz,
    reta: Reta,
}

impl Distribution {
    /// The default Toeplitz key (NICs' and DPDK's `6d5a…`) over `workers` workers,
    /// [`DEFAULT_RETA_SIZE`] entries filled round robin.
    pub fn new(workers: usize) -> Distribution {
        Distribution::with(Toeplitz::new(&crate::rss::DEFAULT_KEY), workers)
    }

    /// As [`new`](Self::new) with the symmetric key (both directions of a flow on one
    /// worker).
    pub fn symmetric(workers: usize) -> Distribution {
        Distribution::with(Toeplitz::symmetric(), workers)
    }

    /// This hash over `workers` workers.
    pub fn with(toeplitz: Toeplitz, workers: usize) -> Distribution {
        Distribution {
            toeplitz,
            reta: Reta::new(workers.clamp(1, 1 << 16), DEFAULT_RETA_SIZE),
        }
    }

    /// This hash and this redirection table.
    pub fn with_reta(toeplitz: Toeplitz, reta: Reta) -> Distribution {
        Distribution { toeplitz, reta }
    }

    /// Number of workers.
    pub fn workers(&self) -> usize {
        self.reta.workers()
    }

    /// The redirection table.
    pub fn reta(&self) -> &Reta {
        &self.reta
    }

    /// The flow hash and owner of an Ethernet frame, `None` if it has no IPv4/IPv6 header.
    #[inline]
    pub fn owner(&self, frame: &[u8]) -> Option<(u32, usize)> {
        let t = tuple_from_frame(frame)?;
        let h = self.toeplitz.hash(t.as_bytes());
        Some((h, self.reta.owner(h)))
    }
}

/// Why a handoff cannot be set up.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum HandoffError {
    /// A worker index outside `0..workers`.
    #[error("worker {0} of {1}")]
    NoSuchWorker(usize, usize),
    /// A worker's rings were already given to a graph (one graph per worker and handoff).
    #[error("worker {0}'s handoff rings are already in a graph")]
    Taken(usize),
}

/// Counters of a handoff, for reports (serde).
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct HandoffStats {
    /// Every ring's counters (enqueued, dropped for congestion, dequeued, high-water mark).
    pub rings: Vec<PairStats>,
    /// Packets put into rings.
    pub handed_off: u64,
    /// Packets dropped because the owner's ring was full.
    pub congestion_drops: u64,
    /// Packets taken out of rings.
    pub received: u64,
    /// Packets in rings when the counters were read.
    pub in_rings: u64,
}

impl HandoffStats {
    /// Packets worker `w` took out of its rings.
    pub fn received_by(&self, w: usize) -> u64 {
        self.rings
            .iter()
            .filter(|r| r.to == w)
            .map(|r| r.stats.dequeued)
            .sum()
    }

    /// Packets worker `w` put into rings.
    pub fn sent_by(&self, w: usize) -> u64 {
        self.rings
            .iter()
            .filter(|r| r.from == w)
            .map(|r| r.stats.enqueued)
            .sum()
    }
}

/// The rings between workers over one arena (see the [module docs](self)).
pub struct Handoff {
    arena: Arc<SharedArena>,
    dist: Arc<Distribution>,
    /// Per worker, its ends until a graph takes them.
    ends: Mutex<Vec<Option<WorkerRings>>>,
    /// Consumers of graphs that are gone: what is left in them is reclaimed.
    returned: Mutex<Vec<Consumer>>,
    watch: MeshWatch,
}

impl std::fmt::Debug for Handoff {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handoff")
            .field("workers", &self.workers())
            .field("stats", &self.stats())
            .finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Handoff {
    /// Rings of `ring_capacity` indices (rounded up to a power of two) between the
    /// `dist.workers()` workers, over `arena`.
    pub fn new(
        arena: Arc<SharedArena>,
        dist: Distribution,
        ring_capacity: usize,
    ) -> Result<Arc<Handoff>, HandoffError> {
        let n = dist.workers();
        let mesh = Mesh::new(n, ring_capacity);
        let watch = mesh.watch();
        let ends = mesh.workers.into_iter().map(Some).collect();
        Ok(Arc::new(Handoff {
            arena,
            dist: Arc::new(dist),
            ends: Mutex::new(ends),
            returned: Mutex::new(Vec::new()),
            watch,
        }))
    }

    /// Number of workers.
    pub fn workers(&self) -> usize {
        self.dist.workers()
    }

    /// The arena every worker's pool must lie over.
    pub fn arena(&self) -> &Arc<SharedArena> {
        &self.arena
    }

    /// A worker's pool over the arena (one per worker graph).
    pub fn pool(&self) -> BufferPool {
        self.arena.pool()
    }

    /// The flow distribution.
    pub fn distribution(&self) -> &Distribution {
        &self.dist
    }

    /// The three nodes of worker `worker`, holding its ends of the rings (once per worker).
    pub fn nodes(self: &Arc<Self>, worker: usize) -> Result<HandoffNodes, HandoffError> {
        let n = self.workers();
        let mut ends = lock(&self.ends);
        let slot = ends
            .get_mut(worker)
            .ok_or(HandoffError::NoSuchWorker(worker, n))?;
        let WorkerRings { to, from, .. } = slot.take().ok_or(HandoffError::Taken(worker))?;
        Ok(HandoffNodes {
            handoff: WorkerHandoff::new(worker, self.dist.clone()),
            tx: HandoffTx {
                worker,
                arena: self.arena.clone(),
                dist: self.dist.clone(),
                staged: (0..n).map(|_| Vec::new()).collect(),
                to,
            },
            input: HandoffInput {
                shared: self.clone(),
                from,
                next_src: 0,
                buf: Vec::new(),
            },
        })
    }

    /// Adds worker `worker`'s handoff nodes to a graph: `worker-handoff` (returned: the
    /// node the input sends to) and `handoff-input` both lead to `continuation`;
    /// `handoff-tx` takes the packets of other workers' flows.
    pub fn add_to(
        self: &Arc<Self>,
        b: &mut GraphBuilder,
        worker: usize,
        continuation: &str,
    ) -> Result<&'static str, HandoffError> {
        let nodes = self.nodes(worker)?;
        b.add(WORKER_HANDOFF, nodes.handoff)
            .add(HANDOFF_TX, nodes.tx)
            .add(HANDOFF_INPUT, nodes.input)
            .set_next(WORKER_HANDOFF, HandoffNext::Local, continuation)
            .set_next(HANDOFF_INPUT, HandoffInputNext::Out, continuation);
        Ok(WORKER_HANDOFF)
    }

    /// As [`add_to`](Self::add_to), but the owner of each packet is `owner(frame)` (the
    /// worker whose shard of an NF's state the packet touches; `None`: this worker keeps
    /// it) rather than the flow hash's: the node added as `worker-handoff` is an
    /// [`OwnerHandoff`].
    ///
    /// ```
    /// use pktvec_graph::builtin::{NullSink, PacketSource, SourceNext};
    /// use pktvec_graph::{GraphBuilder, GraphConfig};
    /// use pktvec_packet::{arena::SharedArena, PoolConfig};
    /// use pktvec_workers::handoff::{Distribution, Handoff};
    /// use pktvec_workers::runtime::{Workers, WorkersConfig};
    ///
    /// let arena = SharedArena::new(PoolConfig { buffers: 4096, ..PoolConfig::default() })?;
    /// let handoff = Handoff::new(arena, Distribution::new(2), 512)?;
    /// let h = handoff.clone();
    /// let report = Workers::run(WorkersConfig::new(2).with_handoff(handoff.clone()), move |w| {
    ///     // the first byte names the owner
    ///     let frames = (0..16u8).map(|i| vec![i % 2; 60]).collect();
    ///     let mut b = GraphBuilder::new(GraphConfig::default());
    ///     b.add("input", PacketSource::new(frames).with_limit(1000));
    ///     let entry = h.add_to_by(&mut b, w.id, "tx", |f: &[u8]| f.first().map(|&o| usize::from(o)))?;
    ///     b.set_next("input", SourceNext::Out, entry);
    ///     b.add("tx", NullSink);
    ///     Ok(b.build(h.pool())?)
    /// })?;
    /// assert!(report.conservation().is_balanced());
    /// assert_eq!(handoff.stats().handed_off, 1000); // half of each worker's 1,000
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn add_to_by<F>(
        self: &Arc<Self>,
        b: &mut GraphBuilder,
        worker: usize,
        continuation: &str,
        owner: F,
    ) -> Result<&'static str, HandoffError>
    where
        F: Fn(&[u8]) -> Option<usize> + Send + 'static,
    {
        let nodes = self.nodes(worker)?;
        let by = OwnerHandoff {
            worker,
            workers: self.workers(),
            owner,
            local: 0,
            remote: 0,
        };
        b.add(WORKER_HANDOFF, by)
            .add(HANDOFF_TX, nodes.tx)
            .add(HANDOFF_INPUT, nodes.input)
            .set_next(WORKER_HANDOFF, HandoffNext::Local, continuation)
            .set_next(HANDOFF_INPUT, HandoffInputNext::Out, continuation);
        Ok(WORKER_HANDOFF)
    }

    /// Counters of every ring, and their totals.
    pub fn stats(&self) -> HandoffStats {
        let rings = self.watch.stats();
        let sum = |f: fn(&PairStats) -> u64| rings.iter().map(f).sum::<u64>();
        HandoffStats {
            handed_off: sum(|r| r.stats.enqueued),
            congestion_drops: sum(|r| r.stats.dropped),
            received: sum(|r| r.stats.dequeued),
            in_rings: sum(|r| r.stats.in_ring()),
            rings,
        }
    }

    /// Packets in rings now.
    pub fn in_rings(&self) -> u64 {
        self.watch.stats().iter().map(|r| r.stats.in_ring()).sum()
    }

    /// Returns to the arena what is left in the rings of graphs that are gone (their
    /// `handoff-input` nodes dropped); returns how many buffers. Call after the workers
    /// stopped.
    pub fn reclaim(&self) -> u64 {
        let mut buf = vec![0u32; 1024];
        let mut n = 0;
        for c in lock(&self.returned).iter_mut() {
            loop {
                let got = c.dequeue(&mut buf);
                if got == 0 {
                    break;
                }
                // SAFETY: only `handoff-tx` enqueues into these rings, and only buffers it
                // handed off; the consumer is out of its graph, so none of them is taken
                // over any more.
                unsafe { self.arena.reclaim(&buf[..got]) };
                n += got as u64;
            }
        }
        n
    }
}

/// One worker's handoff nodes ([`Handoff::nodes`]).
pub struct HandoffNodes {
    /// `worker-handoff`.
    pub handoff: WorkerHandoff,
    /// `handoff-tx`.
    pub tx: HandoffTx,
    /// `handoff-input`.
    pub input: HandoffInput,
}

next_nodes! {
    /// Arcs of `worker-handoff`.
    pub enum HandoffNext {
        /// Flows this worker owns, and frames that are not IP (set it to the continuation).
        Local = "ethernet-input",
        /// Flows of other workers.
        Remote = "handoff-tx",
    }
}

/// Packets `worker-handoff` parses and hashes per step (the GFNI path hashes 16 tuples an
/// instruction sequence; the tuples of a step stay in L1).
const HASH_CHUNK: usize = 256;

/// The node that picks each packet's owner worker (`worker-handoff`).
pub struct WorkerHandoff {
    worker: usize,
    dist: Arc<Distribution>,
    local: u64,
    remote: u64,
    /// Per step: each packet's tuple (zeros when it has none), whether it has one, its hash.
    tuples: Box<[Tuple]>,
    has: Box<[bool]>,
    hashes: Box<[u32]>,
}

impl WorkerHandoff {
    fn new(worker: usize, dist: Arc<Distribution>) -> Self {
        let none = Tuple::v4(Ipv4Addr::UNSPECIFIED, Ipv4Addr::UNSPECIFIED, None);
        WorkerHandoff {
            worker,
            dist,
            local: 0,
            remote: 0,
            tuples: vec![none; HASH_CHUNK].into_boxed_slice(),
            has: vec![false; HASH_CHUNK].into_boxed_slice(),
            hashes: vec![0; HASH_CHUNK].into_boxed_slice(),
        }
    }

    /// Packets kept on this worker, packets sent to another.
    pub fn counters(&self) -> (u64, u64) {
        (self.local, self.remote)
    }
}

impl Node for WorkerHandoff {
    type Next = HandoffNext;
    type Error = NoError;

    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        let (me, dist) = (self.worker, &*self.dist);
        let (local, remote) = (HandoffNext::Local.index(), HandoffNext::Remote.index());
        let d = cx.prefetch_distance();
        let (bufs, nexts) = frame.split_mut();
        let n = bufs.len();
        let mut pk = cx.pool_mut().packets_mut();
        let mut sent = 0u64;
        let none = Tuple::v4(Ipv4Addr::UNSPECIFIED, Ipv4Addr::UNSPECIFIED, None);
        for start in (0..n).step_by(HASH_CHUNK) {
            let end = (start + HASH_CHUNK).min(n);
            let k = end - start;
            // every packet's tuple (headers prefetched `d` packets ahead) ...
            for i in start..end {
                if let Some(&ahead) = bufs.get(i + d) {
                    pk.prefetch(ahead);
                }
                let t = &mut self.tuples[i - start];
                let has = t.set_from_frame(pk.packet(bufs[i]).data());
                if !has {
                    *t = none;
                }
                self.has[i - start] = has;
            }
            // ... all hashed at once ...
            dist.toeplitz
                .hash_tuples(&self.tuples[..k], &mut self.hashes[..k]);
            // ... then each packet's owner
            for i in start..end {
                let j = i - start;
                if !self.has[j] {
                    nexts[i] = local;
                    continue;
                }
                let h = self.hashes[j];
                let m = pk.meta_mut(bufs[i]);
                m.flow_hash = h;
                m.flags.insert(MetaFlags::FLOW_HASH_VALID);
                let mine = dist.reta.owner(h) == me;
                sent += u64::from(!mine);
                nexts[i] = if mine { local } else { remote };
            }
        }
        self.remote += sent;
        self.local += n as u64 - sent;
        cx.enqueue_frame(frame);
    }
}

node_errors! {
    /// Why `handoff-tx` drops.
    pub enum HandoffTxError {
        /// The owner's ring was full (the same text as [`crate::ring::CONGESTION_DROP`]).
        Congestion = "congestion drop",
        /// The packet's owner is this worker (a graph wired to hand off its own flows).
        OwnFlow = "owned by this worker",
    }
}

/// `worker-handoff` with the owner chosen by a function of the frame
/// ([`Handoff::add_to_by`]): the packets of other workers go to `handoff-tx` with their
/// owner in the metadata ([`MetaFlags::OWNER_VALID`]).
pub struct OwnerHandoff<F> {
    worker: usize,
    workers: usize,
    owner: F,
    local: u64,
    remote: u64,
}

impl<F> OwnerHandoff<F> {
    /// Packets kept on this worker, packets sent to another.
    pub fn counters(&self) -> (u64, u64) {
        (self.local, self.remote)
    }
}

impl<F: Fn(&[u8]) -> Option<usize> + Send + 'static> Node for OwnerHandoff<F> {
    type Next = HandoffNext;
    type Error = NoError;

    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        let (me, workers) = (self.worker, self.workers);
        let (local, remote) = (HandoffNext::Local.index(), HandoffNext::Remote.index());
        let d = cx.prefetch_distance();
        let (bufs, nexts) = frame.split_mut();
        let mut pk = cx.pool_mut().packets_mut();
        let mut sent = 0u64;
        for i in 0..bufs.len() {
            if let Some(&ahead) = bufs.get(i + d) {
                pk.prefetch(ahead);
            }
            let o = (self.owner)(pk.packet(bufs[i]).data()).filter(|&o| o < workers);
            match o {
                Some(o) if o != me => {
                    let m = pk.meta_mut(bufs[i]);
                    m.opaque = o as u32;
                    m.flags.insert(MetaFlags::OWNER_VALID);
                    nexts[i] = remote;
                    sent += 1;
                }
                _ => nexts[i] = local,
            }
        }
        self.remote += sent;
        self.local += bufs.len() as u64 - sent;
        cx.enqueue_frame(frame);
    }
}

/// The sink that moves packets into the owners' rings (`handoff-tx`).
pub struct HandoffTx {
    worker: usize,
    arena: Arc<SharedArena>,
    dist: Arc<Distribution>,
    /// Per destination worker: this vector's packets for it.
    staged: Vec<Vec<u32>>,
    to: Vec<Option<Producer>>,
}

impl Node for HandoffTx {
    type Next = NoNext;
    type Error = HandoffTxError;
    const KIND: NodeKind = NodeKind::Sink;

    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        let me = self.worker;
        for &bi in frame.buffers() {
            let m = cx.pool().meta(bi);
            let owner = if m.flags.contains(MetaFlags::OWNER_VALID) {
                m.opaque as usize
            } else if m.flags.contains(MetaFlags::FLOW_HASH_VALID) {
                self.dist.reta.owner(m.flow_hash)
            } else {
                self.dist.owner(cx.packet(bi).data()).map_or(me, |(_, o)| o)
            };
            match self.staged.get_mut(owner) {
                Some(s) if owner != me => s.push(bi),
                _ => cx.drop_buffer(bi, HandoffTxError::OwnFlow),
            }
        }
        frame.clear();
        for d in 0..self.staged.len() {
            if self.staged[d].is_empty() {
                continue;
            }
            let mut staged = std::mem::take(&mut self.staged[d]);
            let Some(ring) = self.to[d].as_mut() else {
                staged.clear();
                self.staged[d] = staged;
                continue;
            };
            // hand off only what the ring has room for: released buffers must go in
            let fits = staged.len().min(ring.free_space());
            let sent = self.arena.hand_off_bulk(cx.pool_mut(), &mut staged[..fits]);
            let put = ring.enqueue(&staged[..sent]);
            debug_assert_eq!(put, sent, "the ring had room");
            ring.note_dropped(staged.len() - fits);
            for &bi in &staged[fits..] {
                cx.drop_buffer(bi, HandoffTxError::Congestion);
            }
            staged.clear();
            self.staged[d] = staged;
        }
    }
}

next_nodes! {
    /// The arc of `handoff-input`.
    pub enum HandoffInputNext {
        /// Every packet taken from a ring (set it to the continuation).
        Out = "ethernet-input",
    }
}

node_errors! {
    /// Why `handoff-input` drops.
    pub enum HandoffInputError {
        /// The pool refused a buffer from a ring (never, unless memory was corrupted; the
        /// buffer is left out of every pool rather than risk two holders).
        Refused = "handoff buffer refused",
    }
}

/// The input node that polls this worker's rings (`handoff-input`).
pub struct HandoffInput {
    shared: Arc<Handoff>,
    from: Vec<Option<Consumer>>,
    next_src: usize,
    buf: Vec<u32>,
}

impl Node for HandoffInput {
    type Next = HandoffInputNext;
    type Error = HandoffInputError;
    const KIND: NodeKind = NodeKind::Input;

    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        let want = cx.vector_size().min(frame.room());
        if self.buf.len() < want {
            self.buf.resize(want, 0);
        }
        let n_src = self.from.len();
        let mut got = 0;
        for k in 0..n_src {
            let s = (self.next_src + k) % n_src;
            if let Some(c) = self.from[s].as_mut() {
                got += c.dequeue(&mut self.buf[got..want]);
                if got == want {
                    break;
                }
            }
        }
        self.next_src = (self.next_src + 1) % n_src.max(1);
        if got == 0 {
            return;
        }
        // SAFETY: only `handoff-tx` enqueues into these rings, each buffer once, after
        // `hand_off` returned; the dequeues above (Acquire) ordered that before this, and
        // this node is the rings' only consumer.
        let ok = unsafe {
            self.shared
                .arena
                .take_over_bulk(cx.pool_mut(), &mut self.buf[..got])
        };
        frame.extend_from_slice(&self.buf[..ok]);
        if ok < got {
            cx.drop_unreceived(HandoffInputError::Refused, (got - ok) as u64);
        }
        cx.enqueue_all(frame, HandoffInputNext::Out);
    }
}

impl Drop for HandoffInput {
    /// Gives the rings back to the [`Handoff`], for [`Handoff::reclaim`].
    fn drop(&mut self) {
        lock(&self.shared.returned).extend(self.from.drain(..).flatten());
    }
}
