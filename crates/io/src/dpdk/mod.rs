//! DPDK ethdev ports as pktvec sources and sinks (cargo feature `dpdk`).
//!
//! * [`Eal`]: DPDK's Environment Abstraction Layer, initialised once per process from an
//!   argument string (`"--no-huge -m 1024 --no-pci --vdev=net_pcap0,rx_pcap=in.pcap"`).
//! * [`Mempool`]: a DPDK mbuf pool that is also the graph's [`BufferPool`]
//!   ([`Mempool::buffer_pool`]): buffer index `i` *is* mbuf `i` of the pool, so a
//!   received mbuf enters the graph as an index and leaves by tx without a copy. Workers,
//!   one graph each, take one [`Mempool::worker_pool`] each over the one mempool.
//! * [`Port`]: an ethdev port set up with rx/tx queues, RSS across several rx queues as
//!   [`RssConfig`] says (key, hash fields, redirection table; [`Port::rss`] reports what the
//!   device does), promiscuous mode, and its counters ([`PortStats`], from
//!   `rte_eth_stats_get`; [`QueueStats`] per queue). Worker `w` of several polls rx queue
//!   `w` and sends on tx queue `w` of every port.
//! * [`DpdkRx`] and [`DpdkTx`]: the input node polling an rx queue and the sink node
//!   transmitting to a tx queue, one burst per vector (tx retries, then drops with a
//!   counted reason).
//! * [`IoForward`]: testpmd's io forwarding loop, no graph, the baseline to measure the
//!   nodes against in the same process.
//!
//! Every received mbuf is handed to the buffer pool (its metadata line written from the
//! mbuf) and back on tx (the place written into the mbuf): about 15 instructions a packet
//! each way. When rx is wired straight to a tx of one port and nothing traces or captures
//! the packets, rx lends the mbufs *raw* instead
//! ([`Context::enqueue_raw`](pktvec_graph::Context::enqueue_raw)): tx sends them as they
//! came, testpmd's io forwarding inside a graph. [`DpdkRx::with_raw_forwarding`] turns
//! this off.
//!
//! ```no_run
//! use pktvec_graph::{GraphBuilder, GraphConfig};
//! use pktvec_io::dpdk::{DpdkRx, DpdkRxNext, DpdkTx, Eal, Mempool, Port, PortConfig};
//!
//! let eal = Eal::init("--no-huge -m 512 --no-pci --in-memory --vdev=net_null0 --vdev=net_null1")?;
//! let mempool = Mempool::new(&eal, 8192, 2048)?;
//! let rx = Port::start(&eal, eal.port_by_name("net_null0")?, &mempool, &PortConfig::default())?;
//! let tx = Port::start(&eal, eal.port_by_name("net_null1")?, &mempool, &PortConfig::default())?;
//! let mut b = GraphBuilder::new(GraphConfig::default());
//! b.add("rx", DpdkRx::new(&rx, 0).with_limit(1_000_000))
//!     .add("tx", DpdkTx::new(&tx, 0))
//!     .set_next("rx", DpdkRxNext::Out, "tx");
//! let mut g = b.build(mempool.buffer_pool()?)?;
//! g.run_until_idle();
//! println!("{}\n{:?}", g.runtime(), tx.stats());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod eal;
mod io_forward;
mod mempool;
mod nodes;
mod port;
mod rss;

pub use eal::Eal;
pub use io_forward::IoForward;
pub use mempool::{Mempool, ObjectLayout};
pub use nodes::{
    DpdkRx, DpdkRxError, DpdkRxNext, DpdkTx, DpdkTxError, DEFAULT_RX_BURST, DEFAULT_TX_RETRIES,
};
pub use port::{Port, PortConfig, PortStats, QueueStats};
pub use rss::{RssConfig, RssStatus, RSS_IP, RSS_TCP, RSS_UDP};

#[cfg(doc)]
use pktvec_packet::BufferPool;

/// Errors of the DPDK backend: each names the DPDK call and DPDK's own error text.
#[derive(Debug, thiserror::Error)]
pub enum DpdkError {
    /// `rte_eal_init` failed (bad arguments, no memory, another process's files...).
    #[error("EAL initialisation failed: {0}")]
    EalInit(String),
    /// The EAL was already initialised with other arguments (DPDK allows one init per
    /// process).
    #[error("EAL already initialised with {existing:?}; cannot re-initialise with {wanted:?}")]
    EalAlreadyInitialised {
        /// Arguments of the first initialisation.
        existing: String,
        /// Arguments of this call.
        wanted: String,
    },
    /// The argument string could not be split (unbalanced quotes).
    #[error("cannot parse EAL arguments {0:?}")]
    BadArguments(String),
    /// No port of that name or id.
    #[error("no DPDK port {0}")]
    NoSuchPort(String),
    /// Creating the mbuf pool failed (too little EAL memory, bad sizes).
    #[error("mempool creation failed: {0}")]
    Mempool(String),
    /// The mempool's objects are not at one fixed stride in one memory chunk, so mbufs
    /// cannot be addressed by index.
    #[error("mempool layout unsupported: {0}")]
    MempoolLayout(String),
    /// A port configuration call failed.
    #[error("port {port}: {call} failed: {text}")]
    Port {
        /// Port id.
        port: u16,
        /// The DPDK function that failed.
        call: &'static str,
        /// DPDK's error text.
        text: String,
    },
    /// [`Mempool::buffer_pool`] was called while a pool it built earlier, or a
    /// [`Mempool::worker_pool`], still exists, or `worker_pool` while the `buffer_pool`
    /// does: one sole buffer pool per mempool at a time, or any number of workers' pools.
    #[error("mempool {0}: its buffer pool already exists (one per mempool at a time, or one per worker with `worker_pool`; drop the graphs that hold them first)")]
    PoolTaken(String),
    /// An RSS key that is not 40 bytes of hex ([`RssConfig::with_key`],
    /// [`RssConfig::with_hex_key`]).
    #[error("RSS key: {0}")]
    RssKey(String),
    /// The buffer pool over the mempool could not be built.
    #[error(transparent)]
    Pool(#[from] pktvec_packet::PoolError),
}

/// DPDK's text for a (positive or negative) errno value.
pub(crate) fn strerror(code: i32) -> String {
    // SAFETY: rte_strerror accepts any value and returns a pointer to a static or
    // thread-local NUL-terminated string, copied out at once.
    unsafe {
        let p = pktvec_dpdk_sys::rte_strerror(code.abs());
        if p.is_null() {
            return format!("error {code}");
        }
        std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned()
    }
}

/// DPDK's text for the current `rte_errno`.
pub(crate) fn last_error() -> String {
    // SAFETY: reads the calling thread's rte_errno through the shim; no arguments.
    strerror(unsafe { pktvec_dpdk_sys::pktvec_rte_errno() })
}
