//! What the DPDK test binaries share: each initialises its own EAL (DPDK allows one per
//! process) under a file prefix of its own, so the binaries may run side by side, and runs
//! its tests one at a time.
#![cfg(feature = "dpdk")]

use pktvec_io::dpdk::Eal;
use std::sync::{Mutex, MutexGuard};

/// One test at a time per binary: the tests share the EAL and its memory.
static SERIAL: Mutex<()> = Mutex::new(());

/// Takes the binary's test lock (also after a test that failed holding it).
pub fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// The process's EAL: `mem_mb` MiB without hugepages, no PCI, lcore 0, file prefix
/// `pktvec-<tag>-<pid>`.
pub fn eal(tag: &str, mem_mb: u32) -> Eal {
    let args = format!(
        "--no-huge -m {mem_mb} --no-pci --no-shconf --file-prefix=pktvec-{tag}-{} -l 0 \
         --log-level=lib.eal:error",
        std::process::id()
    );
    Eal::init(&args).expect("EAL init with virtual devices only")
}
