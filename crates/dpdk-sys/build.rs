//! Finds DPDK with pkg-config, compiles the C shim and generates the bindings with bindgen
//! (falling back to the committed DPDK 22.11 bindings when libclang is missing).

use std::env;
use std::path::PathBuf;
use std::process::Command;

const MISSING_DPDK: &str = "\
pktvec-dpdk-sys: DPDK was not found by pkg-config (libdpdk.pc, DPDK >= 22.11).
Install it, e.g. on Debian/Ubuntu:   apt-get install libdpdk-dev pkg-config
or point PKG_CONFIG_PATH at the directory holding libdpdk.pc.
(pktvec only needs DPDK for the `dpdk` feature of pktvec-io; build without it otherwise.)";

fn main() {
    println!("cargo:rerun-if-changed=wrapper.h");
    println!("cargo:rerun-if-changed=shim/shim.c");
    println!("cargo:rerun-if-changed=shim/shim.h");
    println!("cargo:rerun-if-changed=src/bindings_22_11.rs");
    println!("cargo:rerun-if-env-changed=PKTVEC_DPDK_SYS_PREGENERATED");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");

    let lib = match pkg_config::Config::new()
        .atleast_version("22.11")
        .probe("libdpdk")
    {
        Ok(lib) => lib,
        Err(e) => panic!("{MISSING_DPDK}\n(pkg-config said: {e})"),
    };
    // The shim's ring port calls `rte_eth_from_rings` of the net_ring driver, a plugin that
    // the libdpdk.pc link line leaves out (Debian's librte_net_ring.so points at the very
    // file EAL loads as a plugin, so it is one copy either way).
    println!("cargo:rustc-link-lib=rte_net_ring");
    let version = lib.version.clone();
    println!("cargo:version={version}");

    // The raw compiler flags (`-include rte_config.h`, `-march=...`, include paths): the
    // pkg-config crate keeps only paths and defines, DPDK's headers need the rest too.
    let cflags: Vec<String> = Command::new("pkg-config")
        .args(["--cflags", "libdpdk"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .split_whitespace()
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    // `-include rte_config.h` is two words: keep them together.
    let mut args: Vec<String> = Vec::new();
    let mut it = cflags.iter();
    while let Some(f) = it.next() {
        if f == "-include" {
            if let Some(h) = it.next() {
                args.push(format!("-include{h}"));
            }
        } else {
            args.push(f.clone());
        }
    }

    let mut cc = cc::Build::new();
    cc.file("shim/shim.c").opt_level(3).warnings(true);
    for a in &args {
        cc.flag(a);
    }
    cc.compile("pktvec_dpdk_shim");

    let out = PathBuf::from(env::var("OUT_DIR").expect("OUT_DIR")).join("bindings.rs");
    let forced = env::var_os("PKTVEC_DPDK_SYS_PREGENERATED").is_some();
    let generated = if forced {
        false
    } else {
        let args = args.clone();
        match std::panic::catch_unwind(move || generate(&args)) {
            Ok(Ok(b)) => {
                b.write_to_file(&out).expect("write bindings");
                true
            }
            Ok(Err(e)) => {
                println!("cargo:warning=pktvec-dpdk-sys: bindgen failed ({e}); using the committed DPDK 22.11 bindings");
                false
            }
            Err(_) => {
                println!("cargo:warning=pktvec-dpdk-sys: bindgen could not run (libclang missing? apt-get install libclang-dev); using the committed DPDK 22.11 bindings");
                false
            }
        }
    };
    if !generated {
        if !version.starts_with("22.11") {
            panic!(
                "pktvec-dpdk-sys: the committed bindings are for DPDK 22.11 but the system has {version}; \
                 install libclang (apt-get install libclang-dev clang) so bindgen can generate bindings for it"
            );
        }
        std::fs::copy("src/bindings_22_11.rs", &out).expect("copy the committed bindings");
    }
}

fn generate(args: &[String]) -> Result<bindgen::Bindings, bindgen::BindgenError> {
    bindgen::Builder::default()
        .header("wrapper.h")
        .clang_args(args.iter().filter(|a| !a.starts_with("-march")))
        // Only what pktvec calls (and a few companions of it): a wider surface brings in
        // callback typedefs and structures nobody here uses.
        .allowlist_function("rte_eal_(init|cleanup|iova_mode|has_hugepages)")
        .allowlist_function("rte_eth_dev_(is_valid_port|count_avail|get_port_by_name|get_name_by_port|info_get|configure|adjust_nb_rx_tx_desc|socket_id|start|stop|close)")
        .allowlist_function("rte_eth_(rx_queue_setup|tx_queue_setup|promiscuous_enable|stats_get|stats_reset)")
        .allowlist_function("rte_dev_(probe|remove)")
        .allowlist_function("rte_pktmbuf_(pool_create|pool_init|free_bulk)")
        .allowlist_function("rte_mempool_(free|avail_count|in_use_count|create_empty|populate_default|set_ops_byname)")
        .allowlist_function("rte_strerror|rte_socket_id|rte_lcore_count")
        .allowlist_function("pktvec_.*")
        .allowlist_type("rte_mbuf|rte_mempool|rte_eth_conf|rte_eth_stats|rte_eth_dev_info|rte_pktmbuf_pool_private")
        .allowlist_var("RTE_PKTMBUF_HEADROOM|RTE_MBUF_DEFAULT_.*|RTE_MAX_ETHPORTS|RTE_ETH_.*|RTE_ETHER_.*|RTE_MEMPOOL_.*|SOCKET_ID_ANY")
        .default_enum_style(bindgen::EnumVariation::Consts)
        // Our MSRV: plain `extern "C"` blocks; no generated `Default` impls (they are
        // `unsafe` zeroing): callers zero the few structs they need themselves.
        .rust_target(bindgen::RustTarget::stable(80, 0).expect("a known Rust version"))
        .derive_default(false)
        // Structures with C bitfields pktvec never reads: opaque bytes of the right size and
        // alignment, instead of generated `unsafe` bitfield accessors.
        .opaque_type("rte_eth_link|rte_eth_txmode|rte_eth_hairpin_.*|rte_eth_udp_tunnel|rte_eth_intr_conf|rte_eth_switch_info|rte_eth_rxseg_capa|rte_eth_vmdq_rx_conf|rte_mbuf|rte_mempool")
        // rte_mbuf is opaque (pktvec reads it through `MbufHeader`), so its anonymous unions
        // of bitfields are not needed.
        .blocklist_type("rte_mbuf__bindgen_ty_.*")
        .layout_tests(false)
        .generate_comments(false)
        .prepend_enum_name(false)
        .generate()
}
