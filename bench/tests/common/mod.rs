//! What the DPDK comparison tests share.

use std::process::Command;

/// Whether DPDK is installed (`pkg-config --exists libdpdk`); if not, says the test is
/// skipped.
pub fn dpdk_installed() -> bool {
    let ok = Command::new("pkg-config")
        .args(["--exists", "libdpdk"])
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("skipped: DPDK is not installed (pkg-config libdpdk)");
    }
    ok
}
