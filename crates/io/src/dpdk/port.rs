//! Ethdev port setup, counters and shutdown.

use super::{strerror, DpdkError, Eal, Mempool};
use pktvec_dpdk_sys as sys;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Queues and modes of a port.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct PortConfig {
    /// Receive queues (RSS spreads flows across them when more than one).
    pub rx_queues: u16,
    /// Transmit queues.
    pub tx_queues: u16,
    /// Descriptors per receive queue (adjusted to the device's limits).
    pub rx_desc: u16,
    /// Descriptors per transmit queue (adjusted to the device's limits).
    pub tx_desc: u16,
    /// Enable promiscuous mode (devices that cannot are not an error).
    pub promiscuous: bool,
}

impl Default for PortConfig {
    fn default() -> Self {
        PortConfig {
            rx_queues: 1,
            tx_queues: 1,
            rx_desc: 1024,
            tx_desc: 1024,
            promiscuous: true,
        }
    }
}

/// A port's counters (`rte_eth_stats`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PortStats {
    /// Packets received.
    pub ipackets: u64,
    /// Packets transmitted.
    pub opackets: u64,
    /// Bytes received.
    pub ibytes: u64,
    /// Bytes transmitted.
    pub obytes: u64,
    /// Packets the device dropped because no rx descriptor was free.
    pub imissed: u64,
    /// Erroneous received packets.
    pub ierrors: u64,
    /// Failed transmissions.
    pub oerrors: u64,
    /// Receive mbuf allocation failures.
    pub rx_nombuf: u64,
}

/// A started ethdev port. Stopped and closed when the last handle is dropped (the
/// mempool its queues use stays alive until then).
#[derive(Debug)]
pub struct Port {
    id: u16,
    name: String,
    rx_queues: u16,
    tx_queues: u16,
    pub(crate) mempool: Mempool,
}

fn check(port: u16, call: &'static str, rc: i32) -> Result<(), DpdkError> {
    if rc < 0 {
        Err(DpdkError::Port {
            port,
            call,
            text: strerror(rc),
        })
    } else {
        Ok(())
    }
}

impl Port {
    /// Configures port `id` with `cfg` (queues on `mempool`), enables promiscuous mode if
    /// asked, and starts it.
    pub fn start(
        eal: &Eal,
        id: u16,
        mempool: &Mempool,
        cfg: &PortConfig,
    ) -> Result<Arc<Port>, DpdkError> {
        let name = eal.port_name(id)?;
        // SAFETY: the struct is plain data, zero is its documented default; DPDK fills it.
        let mut info: sys::rte_eth_dev_info = unsafe { std::mem::zeroed() };
        // SAFETY: valid port id (checked by port_name) and out-pointer.
        check(id, "rte_eth_dev_info_get", unsafe {
            sys::rte_eth_dev_info_get(id, &mut info)
        })?;
        if cfg.rx_queues == 0 || cfg.rx_queues > info.max_rx_queues {
            return Err(DpdkError::Port {
                port: id,
                call: "configure",
                text: format!(
                    "{} rx queues asked, device allows 1..={}",
                    cfg.rx_queues, info.max_rx_queues
                ),
            });
        }
        if cfg.tx_queues == 0 || cfg.tx_queues > info.max_tx_queues {
            return Err(DpdkError::Port {
                port: id,
                call: "configure",
                text: format!(
                    "{} tx queues asked, device allows 1..={}",
                    cfg.tx_queues, info.max_tx_queues
                ),
            });
        }
        // SAFETY: rte_eth_conf is plain C data (integers, pointers, unions of them); all
        // zeroes is DPDK's documented default configuration.
        let mut conf: sys::rte_eth_conf = unsafe { std::mem::zeroed() };
        if cfg.rx_queues > 1 && info.flow_type_rss_offloads != 0 {
            conf.rxmode.mq_mode = sys::RTE_ETH_MQ_RX_RSS;
            conf.rx_adv_conf.rss_conf.rss_hf = info.flow_type_rss_offloads;
        }
        // SAFETY: valid port and configuration struct.
        check(id, "rte_eth_dev_configure", unsafe {
            sys::rte_eth_dev_configure(id, cfg.rx_queues, cfg.tx_queues, &conf)
        })?;
        let (mut nrx, mut ntx) = (cfg.rx_desc, cfg.tx_desc);
        // SAFETY: valid port and out-pointers.
        check(id, "rte_eth_dev_adjust_nb_rx_tx_desc", unsafe {
            sys::rte_eth_dev_adjust_nb_rx_tx_desc(id, &mut nrx, &mut ntx)
        })?;
        // SAFETY: valid port id.
        let socket = unsafe { sys::rte_eth_dev_socket_id(id) }.max(0) as u32;
        for q in 0..cfg.rx_queues {
            // SAFETY: configured port, queue in range, default rx conf (NULL), live mempool
            // (kept alive by `Port::mempool` for as long as the queue exists).
            check(id, "rte_eth_rx_queue_setup", unsafe {
                sys::rte_eth_rx_queue_setup(
                    id,
                    q,
                    nrx,
                    socket,
                    std::ptr::null(),
                    mempool.inner.mp.as_ptr(),
                )
            })?;
        }
        for q in 0..cfg.tx_queues {
            // SAFETY: configured port, queue in range, default tx conf.
            check(id, "rte_eth_tx_queue_setup", unsafe {
                sys::rte_eth_tx_queue_setup(id, q, ntx, socket, std::ptr::null())
            })?;
        }
        if cfg.promiscuous {
            // SAFETY: valid port. Virtual devices may not support it: not an error.
            let _ = unsafe { sys::rte_eth_promiscuous_enable(id) };
        }
        // SAFETY: configured port with all queues set up.
        check(id, "rte_eth_dev_start", unsafe {
            sys::rte_eth_dev_start(id)
        })?;
        // SAFETY: valid port.
        let _ = unsafe { sys::rte_eth_stats_reset(id) };
        Ok(Arc::new(Port {
            id,
            name,
            rx_queues: cfg.rx_queues,
            tx_queues: cfg.tx_queues,
            mempool: mempool.clone(),
        }))
    }

    /// The port id.
    pub fn id(&self) -> u16 {
        self.id
    }

    /// The device name (`net_pcap0`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Number of rx queues.
    pub fn rx_queues(&self) -> u16 {
        self.rx_queues
    }

    /// Number of tx queues.
    pub fn tx_queues(&self) -> u16 {
        self.tx_queues
    }

    /// The port's counters now.
    pub fn stats(&self) -> PortStats {
        // SAFETY: rte_eth_stats is plain integers; DPDK overwrites it.
        let mut s: sys::rte_eth_stats = unsafe { std::mem::zeroed() };
        // SAFETY: valid started port and out-pointer.
        if unsafe { sys::rte_eth_stats_get(self.id, &mut s) } != 0 {
            return PortStats::default();
        }
        PortStats {
            ipackets: s.ipackets,
            opackets: s.opackets,
            ibytes: s.ibytes,
            obytes: s.obytes,
            imissed: s.imissed,
            ierrors: s.ierrors,
            oerrors: s.oerrors,
            rx_nombuf: s.rx_nombuf,
        }
    }
}

impl Drop for Port {
    /// Stops and closes the port: its rx rings' mbufs go back to the mempool, a pcap
    /// device flushes its output file.
    fn drop(&mut self) {
        // SAFETY: the last handle is gone, so no node polls or transmits on this port.
        unsafe {
            sys::rte_eth_dev_stop(self.id);
            sys::rte_eth_dev_close(self.id);
        }
    }
}
