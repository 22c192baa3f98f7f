//! Ethdev port setup, counters and shutdown.

use super::rss::{self, RssConfig, RssStatus};
use super::{strerror, DpdkError, Eal, Mempool};
use pktvec_dpdk_sys as sys;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Queues and modes of a port.
///
/// ```
/// use pktvec_io::dpdk::{PortConfig, RssConfig};
/// // Two workers: rx queue w and tx queue w for worker w, flows spread by the symmetric
/// // key (both directions of a flow to one queue) where the device hashes.
/// let cfg = PortConfig { rx_queues: 2, tx_queues: 2, rss: RssConfig::symmetric(), ..PortConfig::default() };
/// assert!(cfg.rss.is_symmetric());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct PortConfig {
    /// Receive queues (RSS spreads flows across them when more than one and the device
    /// hashes; see [`rss`](Self::rss)).
    pub rx_queues: u16,
    /// Transmit queues.
    pub tx_queues: u16,
    /// Descriptors per receive queue (adjusted to the device's limits).
    pub rx_desc: u16,
    /// Descriptors per transmit queue (adjusted to the device's limits).
    pub tx_desc: u16,
    /// Enable promiscuous mode (devices that cannot are not an error).
    pub promiscuous: bool,
    /// Receive-side scaling over the rx queues (used with more than one): key, hash fields,
    /// redirection table. What the port ends up doing is [`Port::rss`].
    pub rss: RssConfig,
}

impl Default for PortConfig {
    fn default() -> Self {
        PortConfig {
            rx_queues: 1,
            tx_queues: 1,
            rx_desc: 1024,
            tx_desc: 1024,
            promiscuous: true,
            rss: RssConfig::default(),
        }
    }
}

/// Packets per queue (`q_ipackets` and `q_opackets` of `rte_eth_stats`), for the port's
/// first 16 queues of each kind (`RTE_ETHDEV_QUEUE_STAT_CNTRS`); a driver that does not count
/// per queue shows zeros.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueStats {
    /// Packets received, by rx queue.
    pub rx: Vec<u64>,
    /// Packets transmitted, by tx queue.
    pub tx: Vec<u64>,
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
    rss: RssStatus,
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
    ///
    /// With more than one rx queue, RSS is configured as `cfg.rss` says, masked by what
    /// the device hashes (`rte_eth_dev_info.flow_type_rss_offloads`): the key (also set
    /// with `rte_eth_dev_rss_hash_update` once started, for drivers that take it only
    /// there), the hash fields, and the redirection table, its entries going round the rx
    /// queues (`rte_eth_dev_rss_reta_update`, skipped where the device has no table or does
    /// not let it be set). A device that hashes none of the fields (net_ring, say) gets
    /// its queues without RSS, which [`rss`](Self::rss) reports. A key the device cannot
    /// take is an error (see [`RssConfig::key`]).
    ///
    /// ```no_run
    /// use pktvec_io::dpdk::{Eal, Mempool, Port, PortConfig, RssConfig};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let eal = Eal::init("--no-huge -m 512 --no-pci -l 0 --vdev=net_null0 --vdev=net_ring0")?;
    /// let mempool = Mempool::new(&eal, 8192, 2048)?;
    /// let cfg = PortConfig { rx_queues: 2, tx_queues: 2, rss: RssConfig::symmetric(), ..PortConfig::default() };
    /// let null = Port::start(&eal, eal.port_by_name("net_null0")?, &mempool, &cfg)?;
    /// let ring = Port::start(&eal, eal.port_by_name("net_ring0")?, &mempool, &cfg)?;
    /// assert!(null.rss_active() && null.rss_hash_conf()?.0 == RssConfig::symmetric().key);
    /// assert_eq!(null.reta()?[..4], [0, 1, 0, 1]);
    /// assert!(!ring.rss_active(), "{}", ring.rss()); // "RSS off: the device has no RSS"
    /// # Ok(()) }
    /// ```
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
        let mut rss = RssStatus::plan(&cfg.rss, cfg.rx_queues, info.flow_type_rss_offloads);
        // SAFETY: rte_eth_conf is plain C data (integers, pointers, unions of them); all
        // zeroes is DPDK's documented default configuration.
        let mut conf: sys::rte_eth_conf = unsafe { std::mem::zeroed() };
        if rss.is_active() {
            rss.key = rss::device_key(&cfg.rss.key, info.hash_key_size).map_err(|text| {
                DpdkError::Port {
                    port: id,
                    call: "configure",
                    text,
                }
            })?;
            conf.rxmode.mq_mode = sys::RTE_ETH_MQ_RX_RSS;
            // DPDK keeps this pointer in the port's configuration and drivers read it when
            // the port starts: it points into `rss.key`, whose buffer the `Port` keeps
            // (never resized) until the port is closed.
            conf.rx_adv_conf.rss_conf = rss_conf(&mut rss.key, rss.hash_fields);
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
        // Closed again (by its drop) if the RSS steps below fail.
        let mut port = Port {
            id,
            name,
            rx_queues: cfg.rx_queues,
            tx_queues: cfg.tx_queues,
            rss,
            mempool: mempool.clone(),
        };
        if port.rss.is_active() {
            let hash_fields = port.rss.hash_fields;
            let mut c = rss_conf(&mut port.rss.key, hash_fields);
            // SAFETY: started port; `c` points at the port's key (or is NULL), alive for
            // the call, which copies it.
            let rc = unsafe { rss::ffi::rte_eth_dev_rss_hash_update(id, &mut c) };
            if !rss::unsupported(rc) {
                check(id, "rte_eth_dev_rss_hash_update", rc)?;
            }
        }
        if port.rss.is_active() && cfg.rss.reta && info.reta_size > 0 {
            let mut table = rss::reta_round_robin(info.reta_size, cfg.rx_queues);
            // SAFETY: started port with RSS; `table` holds `reta_size` entries (in groups
            // of 64), each a configured rx queue.
            let rc = unsafe {
                rss::ffi::rte_eth_dev_rss_reta_update(id, table.as_mut_ptr(), info.reta_size)
            };
            if !rss::unsupported(rc) {
                check(id, "rte_eth_dev_rss_reta_update", rc)?;
                port.rss.reta_size = info.reta_size;
            }
        }
        // SAFETY: valid port.
        let _ = unsafe { sys::rte_eth_stats_reset(id) };
        Ok(Arc::new(port))
    }

    /// What RSS the port does: the hash fields (none: RSS off, and why), the key given to
    /// the device, the redirection table's entries programmed.
    pub fn rss(&self) -> &RssStatus {
        &self.rss
    }

    /// Whether the device spreads received flows over the rx queues by hash (more than
    /// one rx queue and a device that hashes some of [`RssConfig::hash_fields`]).
    pub fn rss_active(&self) -> bool {
        self.rss.is_active()
    }

    /// The key and hash fields the device reports now (`rte_eth_dev_rss_hash_conf_get`);
    /// an error where the device has no RSS.
    pub fn rss_hash_conf(&self) -> Result<(Vec<u8>, u64), DpdkError> {
        // rss_key_len is a u8: no device key is longer than 255 bytes.
        let mut key = vec![0u8; 256];
        // SAFETY: rte_eth_dev_info is plain data, zero its default; DPDK fills it.
        let mut info: sys::rte_eth_dev_info = unsafe { std::mem::zeroed() };
        // SAFETY: valid port and out-pointer.
        check(self.id, "rte_eth_dev_info_get", unsafe {
            sys::rte_eth_dev_info_get(self.id, &mut info)
        })?;
        let len = match info.hash_key_size {
            0 => pktvec_workers::rss::KEY_LEN as u8,
            n => n,
        };
        let mut c = sys::rte_eth_rss_conf {
            rss_key: key.as_mut_ptr(),
            rss_key_len: len,
            rss_hf: 0,
        };
        // SAFETY: valid port; `key` has room for any key length a u8 can state.
        check(self.id, "rte_eth_dev_rss_hash_conf_get", unsafe {
            rss::ffi::rte_eth_dev_rss_hash_conf_get(self.id, &mut c)
        })?;
        key.truncate(len as usize);
        Ok((key, c.rss_hf))
    }

    /// The device's redirection table now (`rte_eth_dev_rss_reta_query`): entry `i` is the
    /// rx queue of hashes whose low bits are `i`. An error where the device has none.
    pub fn reta(&self) -> Result<Vec<u16>, DpdkError> {
        // SAFETY: plain data, zero its default; DPDK fills it.
        let mut info: sys::rte_eth_dev_info = unsafe { std::mem::zeroed() };
        // SAFETY: valid port and out-pointer.
        check(self.id, "rte_eth_dev_info_get", unsafe {
            sys::rte_eth_dev_info_get(self.id, &mut info)
        })?;
        if info.reta_size == 0 {
            return Err(DpdkError::Port {
                port: self.id,
                call: "rte_eth_dev_rss_reta_query",
                text: "the device has no redirection table".into(),
            });
        }
        let mut table = rss::reta_round_robin(info.reta_size, 1);
        // SAFETY: started port; `table` holds `reta_size` entries in groups of 64, every
        // mask bit of an entry below `reta_size` set.
        check(self.id, "rte_eth_dev_rss_reta_query", unsafe {
            rss::ffi::rte_eth_dev_rss_reta_query(self.id, table.as_mut_ptr(), info.reta_size)
        })?;
        Ok(rss::reta_entries(&table, info.reta_size))
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

    /// Packets by queue now (see [`QueueStats`]).
    pub fn queue_stats(&self) -> QueueStats {
        // SAFETY: rte_eth_stats is plain integers; DPDK overwrites it.
        let mut s: sys::rte_eth_stats = unsafe { std::mem::zeroed() };
        // SAFETY: valid started port and out-pointer.
        if unsafe { sys::rte_eth_stats_get(self.id, &mut s) } != 0 {
            return QueueStats::default();
        }
        let rx = (self.rx_queues as usize).min(s.q_ipackets.len());
        let tx = (self.tx_queues as usize).min(s.q_opackets.len());
        QueueStats {
            rx: s.q_ipackets[..rx].to_vec(),
            tx: s.q_opackets[..tx].to_vec(),
        }
    }
}

/// DPDK's RSS configuration pointing at `key` (the device's own key if `None`).
fn rss_conf(key: &mut Option<Vec<u8>>, hash_fields: u64) -> sys::rte_eth_rss_conf {
    let (ptr, len) = match key {
        Some(k) => (k.as_mut_ptr(), k.len() as u8),
        None => (std::ptr::null_mut(), 0),
    };
    sys::rte_eth_rss_conf {
        rss_key: ptr,
        rss_key_len: len,
        rss_hf: hash_fields,
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
