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
    raw: bool,
    lent: u64,
}

/// Stops with a clear message when a graph's buffer pool is not the pool over the port's
/// mempool: the nodes map buffer indices to mbufs by the mempool's layout, so any other
/// pool would hand the driver mbufs it does not own. A configuration error, found on the
/// node's first call, before any mbuf is touched.
#[cold]
#[inline(never)]
fn wrong_pool(node: &str, port: &Port) -> ! {
    panic!(
        "{node} on port {} ({}): the graph's buffer pool is not the pool over this port's \
         mempool; build the graph with `Mempool::buffer_pool()` of the mempool given to \
         `Port::start`",
        port.id(),
        port.name()
    )
}

impl DpdkRx {
    /// Polls queue `queue` of `port`; packets record the port id as their rx interface.
    ///
    /// # Panics
    /// If `queue` is not one of the port's rx queues.
    pub fn new(port: &Arc<Port>, queue: u16) -> Self {
        assert!(
            queue < port.rx_queues(),
            "DpdkRx: port {} ({}) has {} rx queues, no queue {queue}",
            port.id(),
            port.name(),
            port.rx_queues()
        );
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
            raw: true,
            lent: 0,
        }
    }

    /// Whether the node may hand its packets over *raw* (default: yes): when its next
    /// node takes raw buffers and nothing looks at the packets on the way (a [`DpdkTx`]
    /// of one queue, no trace, no capture; see [`Context::enqueue_raw`]), the received
    /// mbufs go to it as they are, without the per-packet hand-over to the buffer pool
    /// and back, as testpmd's io forwarding does. Such packets are forwarded whole,
    /// chained mbufs included. `false` always hands every packet to the pool first (the
    /// cost a graph with a node between rx and tx pays).
    pub fn with_raw_forwarding(mut self, on: bool) -> Self {
        self.raw = on;
        self
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
        let n = self.poll(want);
        let n = self.index_pass(n);
        self.adopt_pass(pool, n)
    }

    /// Calls `rte_eth_rx_burst` until `want` (≤ [`BURST_MAX`]) mbufs are in `burst` or
    /// the driver has fewer; returns how many.
    #[inline]
    fn poll(&mut self, want: usize) -> usize {
        let mut n = 0usize;
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
        n
    }

    /// Pass 1: mbuf -> buffer index of `burst[..n]` (branch-free, see
    /// `Layout::index_burst`) into `ready`, with one range check for the whole burst;
    /// foreign mbufs are freed and removed. Returns how many are left.
    #[inline]
    fn index_pass(&mut self, n: usize) -> usize {
        if self
            .layout
            .index_burst(&self.burst[..n], &mut self.ready[..n])
        {
            n
        } else {
            self.drop_foreign(n)
        }
    }

    /// Pass 2: adopts `ready[..n]` (mbufs `burst[..n]`) into the pool; the adopted indices
    /// are `ready[..k]` (k returned), chained mbufs (their tail freed) in `multiseg`.
    fn adopt_pass(&mut self, pool: &mut BufferPool, n: usize) -> usize {
        self.multiseg.clear();
        let l = self.layout;
        // Each buffer is adopted with the driver's offset and length (one metadata line
        // written whole per packet); chained mbufs are cut to their first segment. (No
        // metadata prefetch: there is no dependency from one packet to the next, so the
        // out-of-order core overlaps the packets' metadata loads by itself; a prefetch
        // pass cost 5 instructions a packet.)
        let multiseg = &mut self.multiseg;
        let descs = &self.burst[..n];
        let place = |&m: &usize| {
            // SAFETY: pass 1 checked that `m` is an mbuf of our mempool; the driver just
            // filled it and handed it over, and nobody else touches it now. Only header
            // fields are read (and, for a chain, written).
            unsafe {
                let mb = &mut *sys::header(m as *mut sys::rte_mbuf);
                if mb.nb_segs != 1 {
                    cut_chain(mb);
                    multiseg.push(l.raw_index(m) as u32);
                }
                (mb.data_off, mb.data_len)
            }
        };
        // SAFETY: each index is an mbuf of the pool's mempool (pass 1) that
        // `rte_eth_rx_burst` just handed over: out of the mempool, in no driver queue, and
        // ours alone, which is what adoption asks.
        // SAFETY (the range `adopt_bulk_in_range_as` trusts): pass 1 checked every index
        // against the mempool's count, which is the pool's capacity (`Layout::is_pool_of`,
        // checked by both callers, `process` and `rx_into`, before receiving).
        let k =
            unsafe { pool.adopt_bulk_in_range_as(&mut self.ready[..n], descs, self.rx_if, place) };
        self.refused += (n - k) as u64;
        // Received: what entered the pool (foreign and refused mbufs are not counted, nor
        // do they use up the limit).
        self.received += k as u64;
        if self.multiseg.is_empty() {
            return k;
        }
        // Rare: take the chained ones out of the vector (they go to the drop node).
        let mut j = 0;
        for i in 0..k {
            let bi = self.ready[i];
            if !self.multiseg.contains(&bi) {
                self.ready[j] = bi;
                j += 1;
            }
        }
        j
    }

    /// Frees the mbufs of `burst[..n]` that are not of our mempool and removes them from
    /// `burst` and `ready` (which pass 1 filled); returns how many are left.
    #[cold]
    #[inline(never)]
    fn drop_foreign(&mut self, n: usize) -> usize {
        let l = self.layout;
        let mut k = 0;
        for i in 0..n {
            let m = self.burst[i];
            let q = l.raw_index(m);
            if q < l.count() as u64 {
                self.burst[k] = m;
                self.ready[k] = q as u32;
                k += 1;
            } else {
                self.foreign += 1;
                let mut one = m as *mut sys::rte_mbuf;
                // SAFETY: the driver handed us this mbuf; freeing it (and its chain)
                // gives it back to whichever mempool it came from.
                unsafe { sys::rte_pktmbuf_free_bulk(&mut one, 1) };
            }
        }
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
        if !self.layout.is_pool_of(pool) {
            wrong_pool("DpdkRx", &self.port);
        }
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

    /// Packets handed over raw (part of [`received`](Self::received); see
    /// [`with_raw_forwarding`](Self::with_raw_forwarding)).
    pub fn lent(&self) -> u64 {
        self.lent
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
        if !self.layout.is_pool_of(cx.pool()) {
            wrong_pool("DpdkRx", &self.port);
        }
        let want = self.want(cx.vector_size().min(frame.room()));
        if want == 0 {
            return;
        }
        // Decided before receiving: lent buffers must not be adopted first.
        let lend = self.raw && cx.can_enqueue_raw(DpdkRxNext::Out);
        let n = self.poll(want);
        let n = self.index_pass(n);
        if lend {
            // `want <= frame.room()`, so all of them fit.
            frame.extend_from_slice(&self.ready[..n]);
            // SAFETY: `ready[..n]` are mbufs of the pool's mempool (`index_pass`) that
            // `rte_eth_rx_burst` just handed over: out of the mempool and in no queue, so
            // not held by the pool either (it holds only what it allocated or adopted and
            // has not given back, and every such mbuf is out of the driver's reach).
            if unsafe { cx.enqueue_raw(frame, DpdkRxNext::Out) } {
                self.received += n as u64;
                self.lent += n as u64;
                return;
            }
            // Not reached (`can_enqueue_raw` held): adopt them as below.
            frame.clear();
        }
        let k = self.adopt_pass(cx.pool_mut(), n);
        // `k <= want <= frame.room()`, so all of them fit.
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

/// Releases `bis` from the pool into `burst` (as their mbufs, with the data offset and
/// length written into each); a hole (0) for a buffer the pool did not hold. Returns how
/// many were released. Kept out of line so that its loop has the registers to itself.
#[inline(never)]
fn fill_tx_burst(pool: &mut BufferPool, l: Layout, bis: &[u32], burst: &mut [usize]) -> usize {
    pool.release_bulk_map(bis, burst, 0, move |bi, meta| {
        let m = l.mbuf(bi);
        // Nodes may set any place; the driver reads `data_len` bytes at `data_off`.
        let (mut off, mut len) = (meta.data_offset, meta.len);
        if off as u32 + len as u32 > l.buf_len() as u32 {
            (off, len) = clamp_place(off, len, l.buf_len());
        }
        // SAFETY: the pool held `bi` (release_bulk_map checked it), so `m` is its mbuf,
        // owned by us until the caller's burst hands it to the driver; only header fields
        // are written, and the place they give lies inside the mbuf's buffer (above).
        unsafe {
            let mb = &mut *sys::header(m);
            mb.data_off = off;
            mb.pkt_len = len as u32;
            mb.data_len = len;
        }
        m as usize
    })
}

/// The part of a place (`data_offset`, `len`) that lies inside a buffer of `buf_len` bytes:
/// what the packet accessors show of a packet whose metadata a node set beyond its buffer,
/// and so what is sent (the driver must never read past the mbuf's buffer).
#[cold]
#[inline(never)]
fn clamp_place(off: u16, len: u16, buf_len: u16) -> (u16, u16) {
    let off = off.min(buf_len);
    (off, len.min(buf_len - off))
}

/// Frees the segments after the first of a chained mbuf and makes it a one-segment mbuf
/// of its first segment's length (the packet is then dropped as multi-segment).
///
/// # Safety
/// `mb` is the header of an mbuf the caller owns, with a valid `next` chain.
// SAFETY: an `unsafe fn` because the mbuf's ownership and chain are the caller's to
// prove (its only caller holds an mbuf the driver just handed over).
#[cold]
#[inline(never)]
unsafe fn cut_chain(mb: &mut sys::MbufHeader) {
    let mut rest = mb.next;
    if !rest.is_null() {
        // SAFETY: the tail segments belong to the chain the caller owns.
        unsafe { sys::rte_pktmbuf_free_bulk(&mut rest, 1) };
    }
    mb.next = std::ptr::null_mut();
    mb.nb_segs = 1;
    mb.pkt_len = mb.data_len as u32;
}

/// One tx queue of [`DpdkTx`]: its burst array and, with several ports, the indices
/// bound for it in the current frame.
struct TxQueue {
    port: Arc<Port>,
    port_id: u16,
    queue: u16,
    burst: Box<[usize]>,
    pending: Vec<u32>,
}

/// Sink node transmitting on tx queues: writes each buffer's data offset and length into
/// its mbuf, hands bursts to `rte_eth_tx_burst`, retries what a queue did not take up to
/// [`DEFAULT_TX_RETRIES`] times, then drops the rest with [`DpdkTxError::QueueFull`].
/// With one port every packet goes to it; with several ([`DpdkTx::by_interface`]) a
/// packet goes to the port at index `tx_if` (set by `interface-output`), and one without
/// such a port is dropped with [`DpdkTxError::NoPort`].
///
/// Only `data_off`, `pkt_len` and `data_len` are written per packet, as testpmd's io mode
/// writes nothing: every mbuf in the graph already is one segment (`nb_segs` 1, `next`
/// NULL: the rx node cuts chains, the mempool hands out reset mbufs) and carries no tx
/// offload flag (pktvec sets none; rx flags are ignored on tx).
///
/// Raw buffers from a [`DpdkRx`] wired straight to this node (one port only; see
/// [`DpdkRx::with_raw_forwarding`]) are sent as the driver delivered them, nothing
/// written, chains included, which is exactly testpmd's io forwarding.
pub struct DpdkTx {
    queues: Vec<TxQueue>,
    layout: Layout,
    retries: u32,
    sent: u64,
    full: u64,
    sent_raw: u64,
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
    /// If `queues` is empty, names a queue its port does not have, or its ports were
    /// started over different mempools (one graph, one buffer pool: its mbufs are one
    /// mempool's).
    pub fn by_interface(queues: &[(Arc<Port>, u16)]) -> Self {
        assert!(!queues.is_empty(), "DpdkTx needs at least one port");
        for (p, q) in queues {
            assert!(
                *q < p.tx_queues(),
                "DpdkTx: port {} ({}) has {} tx queues, no queue {q}",
                p.id(),
                p.name(),
                p.tx_queues()
            );
        }
        let first = &queues[0].0.mempool;
        if let Some((p, _)) = queues
            .iter()
            .find(|(p, _)| !Arc::ptr_eq(&p.mempool.inner, &first.inner))
        {
            panic!(
                "DpdkTx: port {} uses mempool {}, port {} mempool {}: one graph sends from \
                 one mempool",
                queues[0].0.id(),
                first.name(),
                p.id(),
                p.mempool.name()
            );
        }
        DpdkTx {
            layout: queues[0].0.mempool.inner.layout,
            queues: queues
                .iter()
                .map(|(p, q)| TxQueue {
                    port: p.clone(),
                    port_id: p.id(),
                    queue: *q,
                    burst: vec![0usize; BURST_MAX].into_boxed_slice(),
                    pending: Vec::new(),
                })
                .collect(),
            retries: DEFAULT_TX_RETRIES,
            sent: 0,
            full: 0,
            sent_raw: 0,
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

    /// Packets that came raw from an rx node and were sent as they were received (part
    /// of [`sent`](Self::sent); see [`DpdkRx::with_raw_forwarding`]).
    pub fn sent_raw(&self) -> u64 {
        self.sent_raw
    }

    /// The ports transmitted on, by interface index.
    pub fn ports(&self) -> impl Iterator<Item = &Arc<Port>> {
        self.queues.iter().map(|q| &q.port)
    }

    /// Sends buffers `bis` on queue `qi` in bursts of at most [`BURST_MAX`]: each buffer
    /// is released to the driver with its place written into its mbuf. Inlined into
    /// `process` (one call level less a vector; the per-packet loop stays out of line).
    #[inline(always)]
    fn send(&mut self, cx: &mut Context<'_, Self>, qi: usize, bis: &[u32]) {
        let l = self.layout;
        for chunk in bis.chunks(BURST_MAX) {
            let sent = fill_tx_burst(cx.pool_mut(), l, chunk, &mut self.queues[qi].burst);
            let mut n = chunk.len();
            if sent < n {
                // Rare (a double transmit, counted by the pool): close the holes.
                let burst = &mut self.queues[qi].burst;
                let mut k = 0;
                for i in 0..n {
                    if burst[i] != 0 {
                        burst[k] = burst[i];
                        k += 1;
                    }
                }
                n = k;
                if n == 0 {
                    continue;
                }
            }
            self.flush(cx, qi, n);
        }
    }

    /// Sends raw buffers `bis` (lent by an rx node: mbufs as the driver delivered them,
    /// not held by the pool) on queue `qi` in bursts, without touching them.
    fn send_raw(&mut self, cx: &mut Context<'_, Self>, qi: usize, bis: &[u32]) {
        let l = self.layout;
        for chunk in bis.chunks(BURST_MAX) {
            let n = l.mbuf_burst(chunk, &mut self.queues[qi].burst);
            self.sent_raw += self.flush(cx, qi, n) as u64;
        }
    }

    /// Transmits `burst[..n]` (`n` > 0) of queue `qi`, retrying, and drops what is left;
    /// returns how many the driver took. One driver call when the queue takes the whole
    /// burst, as it nearly always does; the retries are out of line.
    #[inline]
    fn flush(&mut self, cx: &mut Context<'_, Self>, qi: usize, n: usize) -> usize {
        let q = &mut self.queues[qi];
        // SAFETY: started port, our tx queue, `n` valid mbuf pointers in `burst[..n]`
        // (n <= BURST_MAX); the driver takes ownership of the ones it accepts.
        let mut sent = unsafe {
            sys::pktvec_rte_eth_tx_burst(q.port_id, q.queue, q.burst.as_mut_ptr().cast(), n as u16)
        } as usize;
        if sent < n {
            sent = self.retry(cx, qi, sent, n);
        }
        self.sent += sent as u64;
        sent
    }

    /// The queue took only `burst[..sent]`: offers the rest up to `retries` more times,
    /// then drops what is still left. Returns how many were sent in all.
    #[cold]
    #[inline(never)]
    fn retry(&mut self, cx: &mut Context<'_, Self>, qi: usize, mut sent: usize, n: usize) -> usize {
        let q = &mut self.queues[qi];
        for _ in 0..self.retries {
            if sent == n {
                break;
            }
            // SAFETY: as in `flush`: `burst[sent..n]` are the mbufs the driver refused,
            // still ours.
            sent += unsafe {
                sys::pktvec_rte_eth_tx_burst(
                    q.port_id,
                    q.queue,
                    q.burst[sent..n].as_mut_ptr().cast(),
                    (n - sent) as u16,
                )
            } as usize;
        }
        if sent < n {
            self.drop_unsent(cx, qi, sent, n);
        }
        sent
    }

    /// Takes `burst[from..n]` of queue `qi` back into the graph and drops them.
    #[cold]
    #[inline(never)]
    fn drop_unsent(&mut self, cx: &mut Context<'_, Self>, qi: usize, from: usize, n: usize) {
        for i in from..n {
            let m = self.queues[qi].burst[i] as *const sys::rte_mbuf;
            let bi = self
                .layout
                .index(m)
                .expect("an mbuf of the graph's mempool");
            // SAFETY: the pool released `bi` into this burst, or an rx node lent it raw,
            // and the driver refused it, so it is ours alone again (in no queue, not in
            // the mempool, not held by the pool).
            unsafe { cx.pool_mut().adopt(bi) };
            self.full += 1;
            cx.drop_buffer(bi, DpdkTxError::QueueFull);
        }
    }
}

impl Node for DpdkTx {
    type Next = pktvec_graph::NoNext;
    type Error = DpdkTxError;
    const KIND: NodeKind = NodeKind::Sink;

    /// With one port, raw buffers from an rx node are sent as they were received (see
    /// [`DpdkRx::with_raw_forwarding`]); with several, the port is chosen from each
    /// packet's metadata, which raw buffers do not have.
    fn takes_raw(&self) -> bool {
        self.queues.len() == 1
    }

    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        if !self.layout.is_pool_of(cx.pool()) {
            wrong_pool("DpdkTx", &self.queues[0].port);
        }
        if self.queues.len() == 1 {
            let (r, bufs) = (frame.raw_len(), frame.buffers());
            if r > 0 {
                self.send_raw(cx, 0, &bufs[..r]);
            }
            if r < bufs.len() {
                self.send(cx, 0, &bufs[r..]);
            }
            frame.clear();
            return;
        }
        // (`takes_raw` is false with several ports: no raw buffer comes here.)
        // Several ports: sort the frame by tx interface first (order kept per port).
        for &bi in frame.buffers() {
            if !cx.pool().is_allocated(bi) {
                // Not a buffer the pool holds (a node's bug): refused and counted as a
                // double free, as the one-port path's release does; never sent.
                cx.pool_mut().free(bi);
                continue;
            }
            let qi = cx.pool().meta(bi).tx_if as usize;
            match self.queues.get_mut(qi) {
                Some(q) => q.pending.push(bi),
                None => cx.drop_buffer(bi, DpdkTxError::NoPort),
            }
        }
        for qi in 0..self.queues.len() {
            if !self.queues[qi].pending.is_empty() {
                let pending = std::mem::take(&mut self.queues[qi].pending);
                self.send(cx, qi, &pending);
                self.queues[qi].pending = pending;
                self.queues[qi].pending.clear();
            }
        }
        frame.clear();
    }
}
