//! pktvec's l3fwd and DPDK's rte_graph l3fwd (`benches/dpdk/graph_l3fwd.c`) forward the same
//! stream the same way: runs `pktvec-bench l3fwd-graph --quick`, which stops unless both send
//! the same packets out of every port, drop the same, send byte-identical first frames and
//! give every mbuf back.
//!
//! Runs when DPDK is installed (`pkg-config libdpdk`); otherwise it says so and passes
//! without checking.

mod common;

use std::process::Command;

#[test]
fn pktvec_and_rte_graph_forward_the_stream_alike() {
    if !common::dpdk_installed() {
        return;
    }
    let out = Command::new(env!("CARGO_BIN_EXE_pktvec-bench"))
        .args([
            "l3fwd-graph",
            "--quick",
            "--chunk-secs",
            "0.02",
            "--no-save",
            "--lock",
            "",
        ])
        .output()
        .expect("pktvec-bench runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}");
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("same packets out of every port, same drops"),
        "{stdout}"
    );
    assert!(stdout.contains("rte_graph l3fwd (librte_node)"), "{stdout}");
}
