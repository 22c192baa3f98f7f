//! EAL initialisation, once per process.

use super::{last_error, DpdkError};
use pktvec_dpdk_sys as sys;
use std::ffi::{CStr, CString};
use std::sync::Mutex;

/// Proof that the EAL is initialised; the entry point to ports and mempools.
///
/// DPDK initialises once per process and cannot be re-initialised after
/// `rte_eal_cleanup`, so [`Eal::init`] records its arguments: a second call with the same
/// arguments returns the same handle, one with other arguments is an error. The EAL lives
/// until the process exits.
#[derive(Debug, Clone)]
pub struct Eal {
    args: String,
}

static INIT: Mutex<Option<Result<String, String>>> = Mutex::new(None);

impl Eal {
    /// Initialises the EAL from an argument string split like a shell would
    /// (`"--no-huge -m 1024 --no-pci --vdev=net_pcap0,rx_pcap=in.pcap"`).
    ///
    /// ```no_run
    /// let eal = pktvec_io::dpdk::Eal::init("--no-huge -m 256 --no-pci --in-memory")?;
    /// assert!(pktvec_io::dpdk::Eal::init("--no-huge -m 512").is_err(), "other arguments");
    /// # let _ = eal;
    /// # Ok::<(), pktvec_io::dpdk::DpdkError>(())
    /// ```
    pub fn init(args: &str) -> Result<Eal, DpdkError> {
        let mut guard = INIT.lock().unwrap_or_else(|e| e.into_inner());
        match &*guard {
            Some(Ok(existing)) if existing == args => {
                return Ok(Eal {
                    args: args.to_owned(),
                })
            }
            Some(Ok(existing)) => {
                return Err(DpdkError::EalAlreadyInitialised {
                    existing: existing.clone(),
                    wanted: args.to_owned(),
                })
            }
            Some(Err(e)) => return Err(DpdkError::EalInit(format!("earlier attempt failed: {e}"))),
            None => {}
        }
        let words = shlex::split(args).ok_or_else(|| DpdkError::BadArguments(args.to_owned()))?;
        let mut owned: Vec<CString> = vec![CString::new("pktvec").expect("no NUL")];
        for w in words {
            owned.push(CString::new(w).map_err(|_| DpdkError::BadArguments(args.to_owned()))?);
        }
        // EAL keeps pointers into argv (e.g. device arguments) for the life of the process:
        // the strings are leaked on purpose, once per process.
        let mut argv: Vec<*mut std::os::raw::c_char> =
            owned.into_iter().map(CString::into_raw).collect();
        let argc = argv.len() as i32;
        // SAFETY: argv holds argc valid NUL-terminated strings that live forever; EAL may
        // permute the array, which is ours and leaked below.
        let rc = unsafe { sys::rte_eal_init(argc, argv.as_mut_ptr()) };
        std::mem::forget(argv);
        if rc < 0 {
            let e = last_error();
            *guard = Some(Err(e.clone()));
            return Err(DpdkError::EalInit(format!("{e} (arguments {args:?})")));
        }
        *guard = Some(Ok(args.to_owned()));
        Ok(Eal {
            args: args.to_owned(),
        })
    }

    /// The arguments the EAL was initialised with.
    pub fn args(&self) -> &str {
        &self.args
    }

    /// Ids of the ethdev ports that exist (from `--vdev`, PCI probing or
    /// [`attach`](Self::attach)).
    pub fn ports(&self) -> Vec<u16> {
        (0..sys::RTE_MAX_ETHPORTS as u16)
            // SAFETY: plain query by id, valid for any value.
            .filter(|&p| unsafe { sys::rte_eth_dev_is_valid_port(p) } == 1)
            .collect()
    }

    /// Creates a virtual device after initialisation, e.g.
    /// `"net_pcap1,rx_pcap=in.pcap,tx_pcap=out.pcap"`, and returns its port id.
    pub fn attach(&self, devargs: &str) -> Result<u16, DpdkError> {
        let c = CString::new(devargs).map_err(|_| DpdkError::BadArguments(devargs.to_owned()))?;
        // SAFETY: `c` is a valid NUL-terminated string for the duration of the call.
        let rc = unsafe { sys::rte_dev_probe(c.as_ptr()) };
        if rc < 0 {
            return Err(DpdkError::Port {
                port: u16::MAX,
                call: "rte_dev_probe",
                text: format!("{} ({devargs})", super::strerror(rc)),
            });
        }
        let name = devargs.split(',').next().unwrap_or(devargs);
        self.port_by_name(name)
    }

    /// Creates an ethdev port over two named rings and returns its id: the port receives
    /// what is enqueued on `rx_ring` and transmits into `tx_ring`. A ring that does not
    /// exist yet is created with `size` slots (a power of two; it holds `size - 1` mbufs),
    /// multi-producer and multi-consumer, so ports can share rings: two ports with swapped
    /// names are a back-to-back pair, several ports transmitting into one ring merge their
    /// traffic. Ring names (at most 21 bytes) live in a namespace of their own, so a ring
    /// port never reaches a ring it did not create (a mempool's, say). The port's device
    /// name is `net_ring_<name>` (`name` at most 19 bytes). This is net_ring's `rte_eth_from_rings`; unlike a
    /// `--vdev=net_ring0` port, which only loops back to itself, it lets ports with
    /// different mempools exchange mbufs within one process. Rings live until the process
    /// exits (closing the port leaves them).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let eal = pktvec_io::dpdk::Eal::init("--no-huge -m 256 --no-pci --in-memory")?;
    /// // What "left" transmits, "right" receives, and the other way round.
    /// let left = eal.ring_port("left", "to-left", "to-right", 1024)?;
    /// let right = eal.ring_port("right", "to-right", "to-left", 1024)?;
    /// assert_eq!(eal.port_by_name("net_ring_right")?, right);
    /// assert_eq!(eal.port_name(left)?, "net_ring_left");
    /// # Ok(()) }
    /// ```
    pub fn ring_port(
        &self,
        name: &str,
        rx_ring: &str,
        tx_ring: &str,
        size: u32,
    ) -> Result<u16, DpdkError> {
        let what = || format!("ring port {name:?} (rx ring {rx_ring:?}, tx ring {tx_ring:?})");
        let c = |s: &str| CString::new(s).map_err(|_| DpdkError::BadArguments(what()));
        let (n, rx, tx) = (c(name)?, c(rx_ring)?, c(tx_ring)?);
        // SAFETY: the three names are valid NUL-terminated strings for the duration of the
        // call; the shim only reads them.
        let rc = unsafe { sys::pktvec_ring_port(n.as_ptr(), rx.as_ptr(), tx.as_ptr(), size) };
        if rc < 0 {
            return Err(DpdkError::Port {
                port: u16::MAX,
                call: "rte_eth_from_rings",
                text: format!("{} ({}, {size} slots)", super::strerror(rc), what()),
            });
        }
        Ok(rc as u16)
    }

    /// The port id of a device name (`"net_pcap0"`).
    pub fn port_by_name(&self, name: &str) -> Result<u16, DpdkError> {
        let c = CString::new(name).map_err(|_| DpdkError::NoSuchPort(name.to_owned()))?;
        let mut id = 0u16;
        // SAFETY: valid string and out-pointer for the duration of the call.
        let rc = unsafe { sys::rte_eth_dev_get_port_by_name(c.as_ptr(), &mut id) };
        if rc != 0 {
            return Err(DpdkError::NoSuchPort(name.to_owned()));
        }
        Ok(id)
    }

    /// The device name of a port.
    pub fn port_name(&self, port: u16) -> Result<String, DpdkError> {
        let mut buf = [0 as std::os::raw::c_char; sys::RTE_ETH_NAME_MAX_LEN as usize];
        // SAFETY: the buffer has RTE_ETH_NAME_MAX_LEN bytes, as the function requires.
        let rc = unsafe { sys::rte_eth_dev_get_name_by_port(port, buf.as_mut_ptr()) };
        if rc != 0 {
            return Err(DpdkError::NoSuchPort(port.to_string()));
        }
        // SAFETY: DPDK wrote a NUL-terminated name into the buffer.
        Ok(unsafe { CStr::from_ptr(buf.as_ptr()) }
            .to_string_lossy()
            .into_owned())
    }
}
