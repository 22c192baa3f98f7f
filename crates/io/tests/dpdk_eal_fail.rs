//! EAL initialisation failure: its own test binary, because DPDK allows one EAL init
//! attempt per process. `cargo test -p pktvec-io --features dpdk --test dpdk_eal_fail`.
#![cfg(feature = "dpdk")]

use pktvec_io::dpdk::{DpdkError, Eal};

#[test]
fn bad_eal_arguments_are_an_error_every_time() {
    let e = Eal::init("--no-huge --no-pci --this-option-does-not-exist").unwrap_err();
    assert!(matches!(e, DpdkError::EalInit(_)), "{e}");
    // The failure is remembered: later calls say so instead of crashing DPDK.
    let e = Eal::init("--no-huge -m 64 --no-pci").unwrap_err();
    assert!(e.to_string().contains("earlier attempt failed"), "{e}");
    // Unbalanced quotes never reach DPDK.
    assert!(matches!(
        Eal::init("--vdev='net_null0"),
        Err(DpdkError::BadArguments(_)) | Err(DpdkError::EalInit(_))
    ));
}
