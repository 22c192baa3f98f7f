//! Enables the AVX-512 index passes of the DPDK mempool layout (`cfg(pktvec_avx512)`) when
//! the compiler has the AVX-512 intrinsics (stable since Rust 1.89); older compilers, down
//! to the workspace's MSRV, build the AVX2 and scalar passes only. The passes themselves
//! are chosen at run time from the CPU's features. (`pktvec-lookup`'s build script makes
//! the same test for its AVX-512 lookup loop.)

fn main() {
    println!("cargo:rustc-check-cfg=cfg(pktvec_avx512)");
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
    if minor.is_some_and(|m| m >= 89) {
        println!("cargo:rustc-cfg=pktvec_avx512");
    }
}
