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
