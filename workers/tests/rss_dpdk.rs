//! The Toeplitz hash against DPDK's own `rte_softrss` (through pktvec-dpdk-sys's C shim):
//! random keys and tuples of every length on every path (the reference, the table path, the
//! GFNI path where the CPU has it, one input and in bulk), and the Microsoft vector.
#![cfg(feature = "dpdk")]

use std::io::Write;
use std::sync::Once;

use pktvec_workers::rss::dpdk::{softrss, words};
use pktvec_workers::rss::{toeplitz_scalar, Path, Toeplitz, Tuple, DEFAULT_KEY, KEY_LEN};
use proptest::prelude::*;

/// The hasher for `key` on every path this CPU runs; where the GFNI path is not available,
/// says so once on stderr, past libtest's capture.
fn hashers(key: &[u8; KEY_LEN]) -> Vec<Toeplitz> {
    static NOTE: Once = Once::new();
    let t = Toeplitz::new(key);
    let mut v = vec![t.clone().with_path(Path::Table).unwrap()];
    match t.with_path(Path::Gfni) {
        Ok(g) => v.push(g),
        Err(e) => NOTE.call_once(|| {
            let _ = writeln!(
                std::io::stderr(),
                "note: GFNI path not checked against rte_softrss ({e})"
            );
        }),
    }
    v
}

#[test]
fn microsoft_vector_through_rte_softrss() {
    let t = Tuple::v4(
        [66, 9, 149, 187].into(),
        [161, 142, 100, 80].into(),
        Some((2794, 1766)),
    );
    assert_eq!(softrss(&words(t.as_bytes()), &DEFAULT_KEY), 0x51cc_c178);
    for rss in hashers(&DEFAULT_KEY) {
        assert_eq!(rss.hash(t.as_bytes()), 0x51cc_c178, "{} path", rss.path());
    }
}

proptest! {
    #[test]
    fn equals_rte_softrss(key in any::<[u8; KEY_LEN]>(),
                          words_in in proptest::collection::vec(any::<u32>(), 0..=9)) {
        let bytes: Vec<u8> = words_in.iter().flat_map(|w| w.to_be_bytes()).collect();
        let dpdk = softrss(&words_in, &key);
        prop_assert_eq!(toeplitz_scalar(&key, &bytes), dpdk);
        for rss in hashers(&key) {
            prop_assert_eq!(rss.hash(&bytes), dpdk, "{} path", rss.path());
        }
    }

    /// A vector of IPv4 and IPv6 5-tuples in bulk (0 to 40: whole steps of sixteen and a
    /// padded one on the GFNI path), each against rte_softrss.
    #[test]
    fn bulk_equals_rte_softrss(key in any::<[u8; KEY_LEN]>(),
                               flows in proptest::collection::vec(
                                   (any::<bool>(), any::<[u8; 16]>(), any::<[u8; 16]>(),
                                    any::<Option<(u16, u16)>>()), 0..=40)) {
        let tuples: Vec<Tuple> = flows
            .iter()
            .map(|&(v6, s, d, p)| if v6 {
                Tuple::v6(s.into(), d.into(), p)
            } else {
                Tuple::v4(
                    [s[0], s[1], s[2], s[3]].into(),
                    [d[0], d[1], d[2], d[3]].into(),
                    p,
                )
            })
            .collect();
        let dpdk: Vec<u32> = tuples.iter().map(|t| softrss(&words(t.as_bytes()), &key)).collect();
        for rss in hashers(&key) {
            let mut out = vec![0u32; tuples.len()];
            rss.hash_tuples(&tuples, &mut out);
            prop_assert_eq!(&out, &dpdk, "{} path", rss.path());
        }
    }
}
