//! [`IoForward`]: testpmd's io forwarding loop, the baseline the graph's rx and tx nodes
//! are measured against in the same process.
//!
//! `dpdk-testpmd --forward-mode=io` does, per stream and per turn, one
//! `rte_eth_rx_burst`, one `rte_eth_tx_burst` of what came, and frees what the tx queue
//! refused (without `--enable-drop-en`/`--retry`, its defaults). `IoForward` is that loop
//! and nothing else: no graph, no buffer pool, no per-packet work. Running it in the same
//! process as a graph, on ports of the same mempool, in slices that alternate with the
//! graph's, gives a ratio of the two in one run whose slices are a fraction of a second
//! apart (`pktvec-bench dpdk-io`), where two processes run seconds apart on this
//! machine drift by ±20%.

use super::port::Port;
use pktvec_dpdk_sys as sys;
use pktvec_graph::clock;
use std::sync::Arc;

/// testpmd's io forwarding from one port's rx queue to another port's tx queue.
///
/// Like [`DpdkRx`](super::DpdkRx) and [`DpdkTx`](super::DpdkTx), it must be the only user
/// of its two queues while it runs (DPDK's queues are not thread-safe).
///
/// ```no_run
/// # use pktvec_io::dpdk::{Eal, IoForward, Mempool, Port, PortConfig};
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let eal = Eal::init("--no-huge -m 512 --no-pci -l 0 --vdev=net_null0 --vdev=net_null1")?;
/// let mempool = Mempool::new(&eal, 8192, 2048)?;
/// let a = Port::start(&eal, eal.ports()[0], &mempool, &PortConfig::default())?;
/// let b = Port::start(&eal, eal.ports()[1], &mempool, &PortConfig::default())?;
/// let mut fwd = IoForward::new(&a, &b, 32);
/// while fwd.forwarded() + fwd.dropped() < 1_000_000 {
///     fwd.run_once();
/// }
/// assert_eq!(mempool.available(), mempool.capacity());
/// # Ok(()) }
/// ```
pub struct IoForward {
    from: Arc<Port>,
    to: Arc<Port>,
    /// Mbuf pointers as addresses (as in `DpdkRx`): only `run_once` holds mbufs in it.
    burst: Box<[usize]>,
    forwarded: u64,
    dropped: u64,
    record_cycles: bool,
    cycles: u64,
}

impl IoForward {
    /// Forwards from rx queue 0 of `from` to tx queue 0 of `to`, `burst` (1..=1024)
    /// mbufs a driver call (testpmd's `--burst`, default 32).
    pub fn new(from: &Arc<Port>, to: &Arc<Port>, burst: usize) -> Self {
        IoForward {
            from: from.clone(),
            to: to.clone(),
            burst: vec![0usize; burst.clamp(1, 1024)].into_boxed_slice(),
            forwarded: 0,
            dropped: 0,
            record_cycles: false,
            cycles: 0,
        }
    }

    /// Reads the cycle counter before the rx burst and after the tx burst of every burst
    /// that received packets, as testpmd's `--record-core-cycles` does (two `rdtsc` a
    /// burst); [`cycles`](Self::cycles) sums them.
    pub fn with_cycle_recording(mut self, on: bool) -> Self {
        self.record_cycles = on;
        self
    }

    /// One burst: receives up to `burst` mbufs, transmits them, frees what the tx queue
    /// refused. Returns the packets received.
    #[inline]
    pub fn run_once(&mut self) -> usize {
        let n = self.burst.len() as u16;
        let b: *mut *mut sys::rte_mbuf = self.burst.as_mut_ptr().cast();
        let t0 = if self.record_cycles { clock::now() } else { 0 };
        // SAFETY: both ports are started (a `Port` is) and queue 0 exists on each; `b` has
        // room for `n` pointers; the mbufs received are ours until the driver takes them.
        let got = unsafe { sys::pktvec_rte_eth_rx_burst(self.from.id(), 0, b, n) };
        if got == 0 {
            return 0;
        }
        // SAFETY: `b[..got]` are the mbufs just received; the tx queue takes ownership of
        // the first `sent`.
        let sent = unsafe { sys::pktvec_rte_eth_tx_burst(self.to.id(), 0, b, got) };
        if sent < got {
            // SAFETY: `b[sent..got]` were refused, so still ours: freed whole (chains too).
            unsafe { sys::rte_pktmbuf_free_bulk(b.add(sent as usize), (got - sent) as u32) };
            self.dropped += (got - sent) as u64;
        }
        self.forwarded += sent as u64;
        if self.record_cycles {
            self.cycles += clock::now().wrapping_sub(t0);
        }
        got as usize
    }

    /// Cycles recorded (see [`with_cycle_recording`](Self::with_cycle_recording)).
    pub fn cycles(&self) -> u64 {
        self.cycles
    }

    /// Packets transmitted.
    pub fn forwarded(&self) -> u64 {
        self.forwarded
    }

    /// Packets the tx queue refused (freed).
    pub fn dropped(&self) -> u64 {
        self.dropped
    }
}
