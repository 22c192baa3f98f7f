//! Running one of DPDK's own autotests (`dpdk-test`, Debian's `dpdk-dev`), the anchor of
//! several areas, and returning what it printed.

use std::io::Write;
use std::process::{Command, Stdio};

/// Runs `echo <test> | dpdk-test --no-huge -m <memory_mb> --no-pci -l <cores>` and returns
/// its standard output.
pub fn run(test: &str, memory_mb: u32, cores: &str) -> Result<String, Box<dyn std::error::Error>> {
    let memory = memory_mb.to_string();
    let mut child = Command::new("dpdk-test")
        .args([
            "--no-huge",
            "-m",
            &memory,
            "--no-pci",
            "-l",
            cores,
            "--log-level=1",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("dpdk-test: {e} (Debian package dpdk-dev; or run with --no-dpdk)"))?;
    child
        .stdin
        .take()
        .ok_or("dpdk-test: no stdin")?
        .write_all(format!("{test}\nquit\n").as_bytes())?;
    let out = child.wait_with_output()?;
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}
