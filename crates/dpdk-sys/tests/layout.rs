//! The Rust view of DPDK's structures matches the C compiler's (bindgen's layout tests are
//! off to keep the bindings small; these check the structures pktvec touches per packet).

use pktvec_dpdk_sys as sys;

#[test]
fn rte_mbuf_layout_matches_c() {
    // SAFETY: the shim function takes no arguments and returns a constant.
    let c_size = unsafe { sys::pktvec_rte_mbuf_size() } as usize;
    assert_eq!(std::mem::size_of::<sys::rte_mbuf>(), c_size);
    assert_eq!(c_size, 128, "two cache lines in DPDK 22.11");
    let mut c = [0u32; 10];
    // SAFETY: the shim writes exactly 10 values into the array it is given.
    unsafe { sys::pktvec_rte_mbuf_offsets(c.as_mut_ptr()) };
    use std::mem::offset_of;
    use sys::MbufHeader as H;
    let rust = [
        offset_of!(H, buf_addr),
        offset_of!(H, data_off),
        offset_of!(H, nb_segs),
        offset_of!(H, port),
        offset_of!(H, ol_flags),
        offset_of!(H, pkt_len),
        offset_of!(H, data_len),
        offset_of!(H, buf_len),
        offset_of!(H, pool),
        offset_of!(H, next),
    ];
    assert_eq!(rust.map(|o| o as u32), c, "MbufHeader offsets = C offsetof");
    assert!(std::mem::size_of::<H>() <= c_size);
    assert_eq!(sys::RTE_PKTMBUF_HEADROOM, 128);
}
