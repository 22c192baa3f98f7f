//! Enables the AVX-512 IPv4 lookup loop (`cfg(pktvec_avx512)`) when the compiler has the
//! AVX-512 intrinsics (stable since Rust 1.89); older compilers, down to the workspace's
//! MSRV, build the portable loop only. The loop itself is still chosen at run time.
//! Also enables `cfg(pktvec_select_unpredictable)` from Rust 1.88.

use std::process::Command;

fn main() {
    println!("cargo:rustc-check-cfg=cfg(pktvec_avx512)");
    println!("cargo:rustc-check-cfg=cfg(pktvec_select_unpredictable)");
    println!("cargo:rerun-if-changed=build.rs");
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let minor = Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|v| {
            v.split_whitespace()
                .nth(1)?
                .split('.')
                .nth(1)?
                .parse::<u32>()
                .ok()
        });
    if minor.is_some_and(|m| m >= 89) {
        println!("cargo:rustc-cfg=pktvec_avx512");
    }
    // `std::hint::select_unpredictable` (Rust 1.88): keeps data-dependent selects in the
    // IPv4 read path as `cmov` (LLVM otherwise turns some into branches that mispredict).
    if minor.is_some_and(|m| m >= 88) {
        println!("cargo:rustc-cfg=pktvec_select_unpredictable");
    }
}
