//! The Rust view of DPDK's structures matches the C compiler's (bindgen's layout tests are
//! off to keep the bindings small; these check the structures pktvec touches per packet).

use pktvec_dpdk_sys as sys;

#[test]
fn rte_mbuf_layout_matches_c() {
    // SAFETY: the shim function takes no arguments and returns a constant.
    let c_size = unsafe { sys::pktvec_rte_mbuf_size() } as usize;
    assert_eq!(std::mem::size_of::<sys::rte_mbuf>(), c_size);
    assert_eq!(c_size, 128, "two cache lines in DPDK 22.11");
    assert_eq!(std::mem::offset_of!(sys::rte_mbuf, data_off), 16);
    assert_eq!(std::mem::offset_of!(sys::rte_mbuf, nb_segs), 20);
    assert_eq!(std::mem::offset_of!(sys::rte_mbuf, pkt_len), 36);
    assert_eq!(std::mem::offset_of!(sys::rte_mbuf, data_len), 40);
    assert_eq!(std::mem::offset_of!(sys::rte_mbuf, next), 64);
    assert_eq!(sys::RTE_PKTMBUF_HEADROOM, 128);
}
