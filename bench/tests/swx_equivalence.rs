//! The packets pktvec's generated pipelines emit are byte-identical to those of their twin
//! programs on DPDK's SWX P4 pipeline, for every benchmark of the Whippersnapper suite (two
//! points of each knob's sweep, tables of at most 2^14 entries): runs `pktvec-bench
//! whippersnapper --equivalence --quick`.
//!
//! Runs when DPDK is installed (`pkg-config libdpdk`) and the two pipeline headers DPDK's
//! generated C needs can be had (from the same release's source package; see
//! benches/dpdk/README.md); otherwise it says why and passes without checking.

mod common;

use std::process::Command;

#[test]
fn generated_pipelines_match_their_swx_twins() {
    if !common::dpdk_installed() {
        return;
    }
    let out = Command::new(env!("CARGO_BIN_EXE_pktvec-bench"))
        .args([
            "whippersnapper",
            "--equivalence",
            "--quick",
            "--no-save",
            "--lock",
            "",
        ])
        .output()
        .expect("pktvec-bench runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success()
        && (stderr.contains("rte_swx_pipeline_internal.h") || stderr.contains("deb-src"))
        && !stdout.contains("DIFFERENT")
    {
        eprintln!("skipped: the SWX pipeline headers cannot be had here:\n{stderr}");
        return;
    }
    println!("{stdout}");
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("pktvec's output is byte-identical to SWX's"),
        "{stdout}"
    );
    assert!(!stdout.contains("DIFFERENT"), "{stdout}");
}
