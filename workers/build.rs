//! Enables the GFNI Toeplitz path of `rss` (`cfg(pktvec_gfni)`) on x86-64 when the
//! compiler has the GFNI and AVX-512 intrinsics and target features (stable since Rust
//! 1.89); older compilers, down to the workspace's MSRV, and other architectures build the
//! table path only. The path itself is still chosen at run time from the CPU's features. (`pktvec-lookup` and `pktvec-io` make
//! the same test for their AVX-512 loops.)

fn main() {
    println!("cargo:rustc-check-cfg=cfg(pktvec_gfni)");
    println!("cargo:rerun-if-changed=build.rs");
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let version = std::process::Command::new(rustc)
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    // "rustc 1.95.0 (...)": the minor version.
    let minor = version
        .split([' ', '.'])
        .nth(2)
        .and_then(|m| m.parse::<u32>().ok());
    let x86_64 = std::env::var("CARGO_CFG_TARGET_ARCH").is_ok_and(|a| a == "x86_64");
    if x86_64 && minor.is_some_and(|m| m >= 89) {
        println!("cargo:rustc-cfg=pktvec_gfni");
    }
}
