//! The Toeplitz hash against DPDK's own `rte_softrss` (through pktvec-dpdk-sys's C shim):
//! random keys and tuples of every length, and the Microsoft vector.
#![cfg(feature = "dpdk")]

use pktvec_workers::rss::dpdk::{softrss, words};
use pktvec_workers::rss::{toeplitz_scalar, Toeplitz, Tuple, DEFAULT_KEY, KEY_LEN};
use proptest::prelude::*;

#[test]
fn microsoft_vector_through_rte_softrss() {
    let t = Tuple::v4(
        [66, 9, 149, 187].into(),
        [161, 142, 100, 80].into(),
        Some((2794, 1766)),
    );
    assert_eq!(softrss(&words(t.as_bytes()), &DEFAULT_KEY), 0x51cc_c178);
}

proptest! {
    #[test]
    fn equals_rte_softrss(key in any::<[u8; KEY_LEN]>(),
                          words_in in proptest::collection::vec(any::<u32>(), 0..=9)) {
        let bytes: Vec<u8> = words_in.iter().flat_map(|w| w.to_be_bytes()).collect();
        let dpdk = softrss(&words_in, &key);
        prop_assert_eq!(toeplitz_scalar(&key, &bytes), dpdk);
        prop_assert_eq!(Toeplitz::new(&key).hash(&bytes), dpdk);
    }
}
