//! Software RSS: the Microsoft verification vectors, the table path against the bit-by-bit
//! reference, the symmetric key, the RETA and tuple extraction on good and bad packets.

use std::net::{Ipv4Addr, Ipv6Addr};

use pktvec_packet::builder::PacketBuilder;
use pktvec_packet::wire::{MacAddr, TcpFlags};
use pktvec_workers::rss::{
    toeplitz_scalar, tuple_from_frame, tuple_from_ipv4, tuple_from_ipv6, Reta, Toeplitz, Tuple,
    DEFAULT_KEY, KEY_LEN, MAX_INPUT, SYMMETRIC_KEY,
};
use proptest::prelude::*;

/// Every path's hash of `input` under `key`, after checking they agree.
fn hash_all(key: &[u8; KEY_LEN], input: &[u8]) -> u32 {
    let reference = toeplitz_scalar(key, input);
    let t = Toeplitz::new(key);
    assert_eq!(t.hash(input), reference, "table path, input {input:02x?}");
    match input.len() {
        8 => assert_eq!(t.hash_fixed::<8>(input.try_into().unwrap()), reference),
        12 => assert_eq!(t.hash_fixed::<12>(input.try_into().unwrap()), reference),
        32 => assert_eq!(t.hash_fixed::<32>(input.try_into().unwrap()), reference),
        36 => assert_eq!(t.hash_fixed::<36>(input.try_into().unwrap()), reference),
        _ => {}
    }
    reference
}

/// The Microsoft RSS verification suite, IPv4: (source, source port, destination,
/// destination port, hash of the addresses, hash with the ports).
const V4: [(&str, u16, &str, u16, u32, u32); 5] = [
    (
        "66.9.149.187",
        2794,
        "161.142.100.80",
        1766,
        0x323e_8fc2,
        0x51cc_c178,
    ),
    (
        "199.92.111.2",
        14230,
        "65.69.140.83",
        4739,
        0xd718_262a,
        0xc626_b0ea,
    ),
    (
        "24.19.198.95",
        12898,
        "12.22.207.184",
        38024,
        0xd2d0_a5de,
        0x5c2b_394a,
    ),
    (
        "38.27.205.30",
        48228,
        "209.142.163.6",
        2217,
        0x8298_9176,
        0xafc7_327f,
    ),
    (
        "153.39.163.191",
        44251,
        "202.188.127.2",
        1303,
        0x5d18_09c5,
        0x10e8_28a2,
    ),
];

/// The same suite, IPv6.
const V6: [(&str, u16, &str, u16, u32, u32); 3] = [
    (
        "3ffe:2501:200:1fff::7",
        2794,
        "3ffe:2501:200:3::1",
        1766,
        0x2cc1_8cd5,
        0x4020_7d3d,
    ),
    (
        "3ffe:501:8::260:97ff:fe40:efab",
        14230,
        "ff02::1",
        4739,
        0x0f0c_461c,
        0xdde5_1bbf,
    ),
    (
        "3ffe:1900:4545:3:200:f8ff:fe21:67cf",
        44251,
        "fe80::200:f8ff:fe21:67cf",
        38024,
        0x4b61_e985,
        0x02d1_feef,
    ),
];

#[test]
fn microsoft_ipv4_vectors() {
    for (s, sp, d, dp, h2, h4) in V4 {
        let (s, d): (Ipv4Addr, Ipv4Addr) = (s.parse().unwrap(), d.parse().unwrap());
        let t2 = Tuple::v4(s, d, None);
        let t4 = Tuple::v4(s, d, Some((sp, dp)));
        assert_eq!(hash_all(&DEFAULT_KEY, t2.as_bytes()), h2, "{s} -> {d}");
        assert_eq!(
            hash_all(&DEFAULT_KEY, t4.as_bytes()),
            h4,
            "{s}:{sp} -> {d}:{dp}"
        );
    }
}

#[test]
fn microsoft_ipv6_vectors() {
    for (s, sp, d, dp, h2, h4) in V6 {
        let (s, d): (Ipv6Addr, Ipv6Addr) = (s.parse().unwrap(), d.parse().unwrap());
        let t2 = Tuple::v6(s, d, None);
        let t4 = Tuple::v6(s, d, Some((sp, dp)));
        assert_eq!(hash_all(&DEFAULT_KEY, t2.as_bytes()), h2, "{s} -> {d}");
        assert_eq!(
            hash_all(&DEFAULT_KEY, t4.as_bytes()),
            h4,
            "{s}.{sp} -> {d}.{dp}"
        );
    }
}

#[test]
fn vectors_through_frames() {
    let mac = MacAddr([2, 0, 0, 0, 0, 1]);
    let rss = Toeplitz::default();
    for (s, sp, d, dp, h2, h4) in V4 {
        let (s, d): (Ipv4Addr, Ipv4Addr) = (s.parse().unwrap(), d.parse().unwrap());
        let tcp = PacketBuilder::ethernet(mac, mac)
            .vlan(7)
            .ipv4(s, d)
            .tcp(sp, dp, TcpFlags::SYN)
            .payload(b"x")
            .build();
        assert_eq!(rss.hash(tuple_from_frame(&tcp).unwrap().as_bytes()), h4);
        let icmp = PacketBuilder::ethernet(mac, mac)
            .ipv4(s, d)
            .icmp_echo(1, 1)
            .payload(b"ping")
            .build();
        assert_eq!(rss.hash(tuple_from_frame(&icmp).unwrap().as_bytes()), h2);
    }
    for (s, sp, d, dp, _, h4) in V6 {
        let (s, d): (Ipv6Addr, Ipv6Addr) = (s.parse().unwrap(), d.parse().unwrap());
        let udp = PacketBuilder::ethernet(mac, mac)
            .ipv6(s, d)
            .udp(sp, dp)
            .payload(b"hello")
            .build();
        assert_eq!(rss.hash(tuple_from_frame(&udp).unwrap().as_bytes()), h4);
    }
}

#[test]
fn fragments_and_truncation_use_the_address_pair() {
    let (s, d) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2));
    let mac = MacAddr([2, 0, 0, 0, 0, 1]);
    let frame = PacketBuilder::ethernet(mac, mac)
        .ipv4(s, d)
        .udp(1000, 2000)
        .payload(b"data")
        .build();
    let l3 = &frame[14..];
    assert_eq!(
        tuple_from_ipv4(l3),
        Some(Tuple::v4(s, d, Some((1000, 2000))))
    );
    // first fragment (MF set) and a later one (offset != 0): both the 2-tuple
    for (flags_frag, what) in [(0x20u8, 0x00u8), (0x00, 0x10)] {
        let mut p = l3.to_vec();
        p[6] = flags_frag;
        p[7] = what;
        assert_eq!(tuple_from_ipv4(&p), Some(Tuple::v4(s, d, None)));
    }
    // transport header cut off after 2 bytes: 2-tuple; IPv4 header cut off: none
    assert_eq!(tuple_from_ipv4(&l3[..22]), Some(Tuple::v4(s, d, None)));
    assert_eq!(tuple_from_ipv4(&l3[..19]), None);
    // IPv6 fragment header (44) before UDP: 2-tuple
    let (s6, d6): (Ipv6Addr, Ipv6Addr) = (
        "2001:db8::1".parse().unwrap(),
        "2001:db8::2".parse().unwrap(),
    );
    let mut p = vec![0u8; 40 + 8 + 8];
    p[0] = 0x60;
    p[4..6].copy_from_slice(&16u16.to_be_bytes());
    p[6] = 44;
    p[8..24].copy_from_slice(&s6.octets());
    p[24..40].copy_from_slice(&d6.octets());
    p[40] = 17;
    p[48..50].copy_from_slice(&53u16.to_be_bytes());
    p[50..52].copy_from_slice(&54u16.to_be_bytes());
    assert_eq!(tuple_from_ipv6(&p), Some(Tuple::v6(s6, d6, None)));
    // a destination options header (60, 8 bytes) before UDP: the ports behind it
    p[6] = 60;
    assert_eq!(tuple_from_ipv6(&p), Some(Tuple::v6(s6, d6, Some((53, 54)))));
    // ... cut off in the middle of the ports
    assert_eq!(tuple_from_ipv6(&p[..50]), Some(Tuple::v6(s6, d6, None)));
    assert_eq!(tuple_from_ipv6(&p[..39]), None);
}

#[test]
fn reta_maps_low_bits_round_robin() {
    let mut r = Reta::new(3, 128);
    assert_eq!((r.len(), r.workers()), (128, 3));
    for h in [0u32, 1, 2, 3, 127, 128, 0xffff_ffff] {
        assert_eq!(r.owner(h), (h as usize & 127) % 3);
    }
    r.set(5, 0);
    assert_eq!(r.owner(5 + 128 * 7), 0);
    assert_eq!(r.get(5), 0);
}

#[test]
#[should_panic]
fn reta_size_must_be_a_power_of_two() {
    let _ = Reta::new(2, 100);
}

#[test]
#[should_panic]
fn reta_rejects_an_unknown_worker() {
    Reta::new(2, 64).set(0, 2);
}

fn v4_tuple() -> impl Strategy<Value = Tuple> {
    (
        any::<[u8; 4]>(),
        any::<[u8; 4]>(),
        any::<Option<(u16, u16)>>(),
    )
        .prop_map(|(s, d, p)| Tuple::v4(s.into(), d.into(), p))
}

fn v6_tuple() -> impl Strategy<Value = Tuple> {
    (
        any::<[u8; 16]>(),
        any::<[u8; 16]>(),
        any::<Option<(u16, u16)>>(),
    )
        .prop_map(|(s, d, p)| Tuple::v6(s.into(), d.into(), p))
}

proptest! {
    #[test]
    fn table_equals_scalar(key in any::<[u8; KEY_LEN]>(),
                           input in proptest::collection::vec(any::<u8>(), 0..=MAX_INPUT + 4)) {
        hash_all(&key, &input);
    }

    #[test]
    fn table_equals_scalar_on_tuples(key in any::<[u8; KEY_LEN]>(),
                                     t in prop_oneof![v4_tuple(), v6_tuple()]) {
        hash_all(&key, t.as_bytes());
    }

    #[test]
    fn symmetric_key_hashes_both_directions_alike(t in prop_oneof![v4_tuple(), v6_tuple()]) {
        let sym = Toeplitz::symmetric();
        prop_assert_eq!(sym.hash(t.as_bytes()), sym.hash(t.reversed().as_bytes()));
        prop_assert_eq!(
            toeplitz_scalar(&SYMMETRIC_KEY, t.as_bytes()),
            toeplitz_scalar(&SYMMETRIC_KEY, t.reversed().as_bytes())
        );
    }

    #[test]
    fn extraction_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let _ = tuple_from_frame(&bytes);
        let _ = tuple_from_ipv4(&bytes);
        let _ = tuple_from_ipv6(&bytes);
    }

    #[test]
    fn extraction_of_truncated_packets_never_panics(
        cut in 0usize..120, v6 in any::<bool>(), tcp in any::<bool>(),
        frag in any::<u8>(), ext in any::<u8>(), junk in any::<u8>(),
    ) {
        let mac = MacAddr([2, 0, 0, 0, 0, 1]);
        let b = PacketBuilder::ethernet(mac, mac);
        let mut frame = match (v6, tcp) {
            (false, true) => b.ipv4([1, 2, 3, 4].into(), [5, 6, 7, 8].into()).tcp(1, 2, TcpFlags::ACK).payload(&[junk; 20]).build(),
            (false, false) => b.ipv4([1, 2, 3, 4].into(), [5, 6, 7, 8].into()).udp(1, 2).payload(&[junk; 20]).build(),
            (true, true) => b.ipv6(Ipv6Addr::LOCALHOST, Ipv6Addr::UNSPECIFIED).tcp(1, 2, TcpFlags::ACK).payload(&[junk; 20]).build(),
            (true, false) => b.ipv6(Ipv6Addr::LOCALHOST, Ipv6Addr::UNSPECIFIED).udp(1, 2).payload(&[junk; 20]).build(),
        };
        // scribble on the fragment field (IPv4) or the next header and its successor (IPv6)
        if v6 { frame[14 + 6] = ext; frame[14 + 41] = ext.wrapping_add(junk); } else { frame[14 + 6] = frag; }
        let cut = cut.min(frame.len());
        let t = tuple_from_frame(&frame[..cut]);
        if cut < 14 + 20 { prop_assert!(t.is_none()); }
    }
}
