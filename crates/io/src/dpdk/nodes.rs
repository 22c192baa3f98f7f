//! The rx (input) and tx (sink) nodes of a DPDK port queue.

use super::mempool::Layout;
use super::Port;
use pktvec_dpdk_sys as sys;
use pktvec_graph::{next_nodes, node_errors, Context, Frame, Node, NodeKind};
use pktvec_packet::{BufferPool, Packet};
use std::sync::Arc;

/// Most mbuf pointers one rx or tx burst call handles (DPDK takes a `u16` count).
const BURST_MAX: usize = 1024;

/// Packets asked of the driver per `rte_eth_rx_burst` call by default (DPDK's and
/// testpmd's usual burst); [`DpdkRx`] repeats the call until its vector is full or the
/// queue runs dry, as VPP's `dpdk-input` does.
pub const DEFAULT_RX_BURST: usize = 32;

/// Transmit retries before the unsent packets of a vector are dropped.
pub const DEFAULT_TX_RETRIES: u32 = 8;

next_nodes! {
    /// The one arc of [`DpdkRx`].
    pub enum DpdkRxNext {
        /// Every received packet (by default to `ethernet-input`).
        Out = "ethernet-input",
    }
}

node_errors! {
    /// Why [`DpdkRx`] drops.
    pub enum DpdkRxError {
        /// A chained (multi-segment) mbuf: its first segment entered the graph, the rest
        /// was freed, and the packet is dropped (pktvec buffers are single-segment).
        MultiSegment = "multi-segment packet",
    }
}

node_errors! {
    /// Why [`DpdkTx`] drops.
    pub enum DpdkTxError {
        /// The tx queue stayed full through all retries.
        QueueFull = "tx queue full",
        /// The packet's `tx_if` names no port of this node.
        NoPort = "no tx port for the interface",
    }
}

/// Input node polling one rx queue. Each call fills one vector: it asks the driver for
/// bursts of [`DEFAULT_RX_BURST`] packets (see [`DpdkRx::with_burst`]) until the vector is
/// full or a burst comes back short (the queue is empty), so the graph's per-vector costs
/// are paid once per vector, not once per driver burst. Each mbuf enters the graph as its
/// buffer index, with no copy; its data offset and length go into the buffer metadata.
///
/// ```no_run
/// # use pktvec_io::dpdk::{DpdkRx, Eal, Mempool, Port, PortConfig};
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let eal = Eal::init("--no-huge -m 512 --no-pci -l 0 --vdev=net_null0")?;
/// let pool = Mempool::new(&eal, 8192, 2048)?;
/// let port = Port::start(&eal, eal.ports()[0], &pool, &PortConfig::default())?;
/// // Bursts of 64 from queue 0, up to the graph's vector size per call.
/// let rx = DpdkRx::new(&port, 0).with_burst(64);
/// # let _ = rx; Ok(()) }
/// ```
pub struct DpdkRx {
    port: Arc<Port>,
    queue: u16,
    rx_if: u16,
    layout: Layout,
    burst: Box<[usize]>,
    /// The indices entering the graph, moved into the frame in one copy.
    ready: Box<[u32]>,
    rx_burst: usize,
    multiseg: Vec<u32>,
    limit: Option<u64>,
    received: u64,
    foreign: u64,
    refused: u64,
    multiseg_dropped: u64,
}

impl DpdkRx {
    /// Polls queue `queue` of `port`; packets record the port id as their rx interface.
    pub fn new(port: &Arc<Port>, queue: u16) -> Self {
        DpdkRx {
            port: port.clone(),
            queue,
            rx_if: port.id(),
            layout: port.mempool.inner.layout,
            burst: vec![0usize; BURST_MAX].into_boxed_slice(),
            ready: vec![0u32; BURST_MAX].into_boxed_slice(),
            rx_burst: DEFAULT_RX_BURST,
            multiseg: Vec::with_capacity(BURST_MAX),
            limit: None,
            received: 0,
            foreign: 0,
            refused: 0,
            multiseg_dropped: 0,
        }
    }

    /// Records `rx_if` instead of the port id as the packets' rx interface.
    pub fn with_rx_interface(mut self, rx_if: u16) -> Self {
        self.rx_if = rx_if;
        self
    }

    /// Asks the driver for at most `n` packets per `rte_eth_rx_burst` call (clamped to
    /// 1..=1024); a call of the node repeats bursts until its vector is full or a burst
    /// returns fewer than asked. `with_burst(vector size)` gives one driver call per node
    /// call.
    pub fn with_burst(mut self, n: usize) -> Self {
        self.rx_burst = n.clamp(1, BURST_MAX);
        self
    }

    /// Stops polling after `n` packets.
    pub fn with_limit(mut self, n: u64) -> Self {
        self.limit = Some(n);
        self
    }

    /// Packets to ask for now: at most `room`, a burst array, and what the limit leaves.
    fn want(&self, room: usize) -> usize {
        let mut want = room.min(BURST_MAX);
        if let Some(limit) = self.limit {
            want = want.min(limit.saturating_sub(self.received) as usize);
        }
        want
    }

    /// Polls the queue for up to `want` (≤ [`BURST_MAX`]) packets: the adopted indices
    /// are `ready[..k]` (k returned), chained mbufs (their tail freed) in `multiseg`.
    fn receive(&mut self, pool: &mut BufferPool, want: usize) -> usize {
        let mut n = 0;
        while n < want {
            let ask = self.rx_burst.min(want - n);
            // SAFETY: the port is started and `queue` is one of its rx queues (polled by
            // this node only); `burst[n..]` has room for `ask` <= want - n pointers, and
            // want <= BURST_MAX.
            let got = unsafe {
                sys::pktvec_rte_eth_rx_burst(
                    self.port.id(),
                    self.queue,
                    self.burst[n..].as_mut_ptr().cast(),
                    ask as u16,
                )
            } as usize;
            n += got;
            if got < ask {
                break;
            }
        }
        self.multiseg.clear();
        // Pass 1: mbuf -> buffer index, in place, and prefetch the metadata lines (a separate
        // array, not in cache like the mbuf headers the driver just wrote).
        for slot in &mut self.burst[..n] {
            let m = *slot as *mut sys::rte_mbuf;
            match self.layout.index(m) {
                Some(bi) => {
                    pool.prefetch_meta(bi);
                    *slot = bi as usize;
                }
                None => {
                    self.foreign += 1;
                    let mut one = m;
                    // SAFETY: the driver handed us this mbuf; freeing it (and its chain)
                    // gives it back to whichever mempool it came from.
                    unsafe { sys::rte_pktmbuf_free_bulk(&mut one, 1) };
                    *slot = usize::MAX;
                }
            }
        }
        // Pass 2: adopt each buffer with the driver's offset and length; the indices go
        // to `ready` and then into the frame in one copy.
        let mut k = 0;
        for &slot in &self.burst[..n] {
            if slot == usize::MAX {
                continue;
            }
            let bi = slot as u32;
            let m = self.layout.mbuf(bi);
            // SAFETY: `m` is an mbuf of our mempool (its index came from the layout) that the
            // driver just filled and handed over; nobody else touches it now. `next` (second
            // cache line) is only read when nb_segs says there is a chain.
            let (off, len, chained) = unsafe {
                let mb = &mut *sys::header(m);
                let chained = mb.nb_segs != 1;
                if chained {
                    let mut rest = mb.next;
                    if !rest.is_null() {
                        sys::rte_pktmbuf_free_bulk(&mut rest, 1);
                    }
                    mb.next = std::ptr::null_mut();
                    mb.nb_segs = 1;
                    mb.pkt_len = mb.data_len as u32;
                }
                (mb.data_off, mb.data_len, chained)
            };
            if !pool.adopt_as(bi, off, len, self.rx_if) {
                self.refused += 1;
                continue;
            }
            if chained {
                self.multiseg.push(bi);
            } else if let Some(r) = self.ready.get_mut(k) {
                *r = bi;
                k += 1;
            }
        }
        self.received += n as u64;
        k
    }

    /// The node's work without a graph around it, for a [`BufferPool`] user that polls
    /// the queue itself (e.g. `pktvec-batcher`'s `BurstSource`): appends up to `max`
    /// received buffers to `out` and returns how many. Multi-segment packets are freed
    /// here and counted in [`multi_segment_dropped`](Self::multi_segment_dropped).
    ///
    /// ```no_run
    /// # use pktvec_io::dpdk::{DpdkRx, Eal, Mempool, Port, PortConfig};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let eal = Eal::init("--no-huge -m 512 --no-pci -l 0 --vdev=net_null0")?;
    /// let mempool = Mempool::new(&eal, 8192, 2048)?;
    /// let port = Port::start(&eal, eal.ports()[0], &mempool, &PortConfig::default())?;
    /// let mut pool = mempool.buffer_pool()?;
    /// let mut rx = DpdkRx::new(&port, 0);
    /// let mut got = Vec::new();
    /// let n = rx.rx_into(&mut pool, &mut got, 64);
    /// assert_eq!(n, got.len());
    /// pool.free_bulk(&got);
    /// # Ok(()) }
    /// ```
    pub fn rx_into(&mut self, pool: &mut BufferPool, out: &mut Vec<u32>, max: usize) -> usize {
        let want = self.want(max);
        if want == 0 {
            return 0;
        }
        let k = self.receive(pool, want);
        out.extend_from_slice(&self.ready[..k]);
        for &bi in &self.multiseg {
            pool.free(bi);
        }
        self.multiseg_dropped += self.multiseg.len() as u64;
        k
    }

    /// Multi-segment packets [`rx_into`](Self::rx_into) freed (as a node, they go to the
    /// drop node with [`DpdkRxError::MultiSegment`] instead).
    pub fn multi_segment_dropped(&self) -> u64 {
        self.multiseg_dropped
    }

    /// Packets received (entered the graph or dropped as multi-segment).
    pub fn received(&self) -> u64 {
        self.received
    }

    /// Mbufs that did not belong to the graph's mempool (freed at once, never in the
    /// graph): a port whose rx queue uses another mempool.
    pub fn foreign(&self) -> u64 {
        self.foreign
    }

    /// Mbufs of our mempool that the buffer pool already held (a bug; left alone).
    pub fn refused(&self) -> u64 {
        self.refused
    }

    /// The port polled.
    pub fn port(&self) -> &Arc<Port> {
        &self.port
    }
}

impl Node for DpdkRx {
    type Next = DpdkRxNext;
    type Error = DpdkRxError;
    const KIND: NodeKind = NodeKind::Input;

    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        let want = self.want(cx.vector_size().min(frame.room()));
        if want == 0 {
            return;
        }
        let k = self.receive(cx.pool_mut(), want);
        // `want <= frame.room()`, so all of them fit.
        frame.extend_from_slice(&self.ready[..k]);
        for i in 0..self.multiseg.len() {
            let bi = self.multiseg[i];
            cx.drop_buffer(bi, DpdkRxError::MultiSegment);
        }
        cx.enqueue_all(frame, DpdkRxNext::Out);
    }

    fn format_trace(&self, pkt: Packet<'_>, out: &mut String) {
        use std::fmt::Write;
        let _ = write!(
            out,
            "{} rx queue {}: len {}",
            self.port.name(),
            self.queue,
            pkt.data().len()
        );
    }
}

/// One tx queue of [`DpdkTx`] with its burst being filled.
struct TxQueue {
    port: Arc<Port>,
    queue: u16,
    burst: Box<[usize]>,
    len: usize,
}

/// Sink node transmitting on tx queues: writes each buffer's offset and length into its
/// mbuf, hands bursts to `rte_eth_tx_burst`, retries what a queue did not take up to
/// [`DEFAULT_TX_RETRIES`] times, then drops the rest with [`DpdkTxError::QueueFull`].
/// With one port every packet goes to it; with several ([`DpdkTx::by_interface`]) a
/// packet goes to the port at index `tx_if` (set by `interface-output`), and one without
/// such a port is dropped with [`DpdkTxError::NoPort`].
pub struct DpdkTx {
    queues: Vec<TxQueue>,
    layout: Layout,
    retries: u32,
    sent: u64,
    full: u64,
}

impl DpdkTx {
    /// Transmits on queue `queue` of `port` (whose mbufs must come from the graph's
    /// mempool, as [`Port::start`] with the same [`super::Mempool`] ensures).
    pub fn new(port: &Arc<Port>, queue: u16) -> Self {
        Self::by_interface(&[(port.clone(), queue)])
    }

    /// Transmits a packet with `tx_if == i` on `queues[i]`.
    ///
    /// # Panics
    /// If `queues` is empty.
    pub fn by_interface(queues: &[(Arc<Port>, u16)]) -> Self {
        assert!(!queues.is_empty(), "DpdkTx needs at least one port");
        DpdkTx {
            layout: queues[0].0.mempool.inner.layout,
            queues: queues
                .iter()
                .map(|(p, q)| TxQueue {
                    port: p.clone(),
                    queue: *q,
                    burst: vec![0usize; BURST_MAX].into_boxed_slice(),
                    len: 0,
                })
                .collect(),
            retries: DEFAULT_TX_RETRIES,
            sent: 0,
            full: 0,
        }
    }

    /// Retries per burst before dropping (0: one attempt).
    pub fn with_retries(mut self, retries: u32) -> Self {
        self.retries = retries;
        self
    }

    /// Packets the drivers accepted.
    pub fn sent(&self) -> u64 {
        self.sent
    }

    /// Packets dropped because a queue stayed full.
    pub fn queue_full(&self) -> u64 {
        self.full
    }

    /// The ports transmitted on, by interface index.
    pub fn ports(&self) -> impl Iterator<Item = &Arc<Port>> {
        self.queues.iter().map(|q| &q.port)
    }

    /// Transmits the burst of queue `qi`, retrying, and drops what is left.
    fn flush(&mut self, cx: &mut Context<'_, Self>, qi: usize) {
        let q = &mut self.queues[qi];
        let (n, port, queue) = (q.len, q.port.id(), q.queue);
        q.len = 0;
        let mut sent = 0usize;
        let mut tries = 0;
        while sent < n {
            // SAFETY: started port, our tx queue, `n - sent` valid mbuf pointers in
            // `burst[sent..n]`; the driver takes ownership of the ones it accepts.
            sent += unsafe {
                sys::pktvec_rte_eth_tx_burst(
                    port,
                    queue,
                    q.burst[sent..].as_mut_ptr().cast(),
                    (n - sent) as u16,
                )
            } as usize;
            if tries >= self.retries {
                break;
            }
            tries += 1;
        }
        self.sent += sent as u64;
        for i in sent..n {
            let m = self.queues[qi].burst[i] as *const sys::rte_mbuf;
            let bi = self
                .layout
                .index(m)
                .expect("an mbuf of the graph's mempool");
            cx.pool_mut().adopt(bi);
            self.full += 1;
            cx.drop_buffer(bi, DpdkTxError::QueueFull);
        }
    }
}

impl Node for DpdkTx {
    type Next = pktvec_graph::NoNext;
    type Error = DpdkTxError;
    const KIND: NodeKind = NodeKind::Sink;

    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        let single = self.queues.len() == 1;
        for &bi in frame.buffers() {
            let qi = if single {
                0
            } else {
                cx.pool().meta(bi).tx_if as usize
            };
            if qi >= self.queues.len() {
                cx.drop_buffer(bi, DpdkTxError::NoPort);
                continue;
            }
            let Some((off, len)) = cx.pool_mut().release_data(bi) else {
                continue; // not ours to send (a double transmit): counted by the pool
            };
            let m = self.layout.mbuf(bi);
            let q = &mut self.queues[qi];
            // SAFETY: `bi` was a buffer the pool held (release_data indexed it), so `m` is its
            // mbuf; the driver gets it only in the burst below; only header fields are written.
            unsafe {
                let mb = &mut *sys::header(m);
                mb.data_off = off;
                mb.data_len = len;
                mb.pkt_len = len as u32;
                mb.nb_segs = 1;
                mb.ol_flags = 0;
                mb.port = q.port.id();
            }
            q.burst[q.len] = m as usize;
            q.len += 1;
            if q.len == BURST_MAX {
                self.flush(cx, qi);
            }
        }
        for qi in 0..self.queues.len() {
            if self.queues[qi].len > 0 {
                self.flush(cx, qi);
            }
        }
        frame.clear();
    }
}
