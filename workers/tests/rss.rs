//! Software RSS: the Microsoft verification vectors, every hashing path (table, GFNI where
//! the CPU has it) against the bit-by-bit reference, one tuple at a time and in bulk, the
//! symmetric key, the RETA and tuple extraction on good and bad packets.

use std::io::Write;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::Mutex;

use pktvec_packet::builder::PacketBuilder;
use pktvec_packet::wire::{MacAddr, TcpFlags};
use pktvec_workers::rss::{
    toeplitz_scalar, tuple_from_frame, tuple_from_ipv4, tuple_from_ipv6, Path, PathUnavailable,
    Reta, Toeplitz, Tuple, DEFAULT_KEY, KEY_LEN, MAX_INPUT, SYMMETRIC_KEY,
};
use proptest::prelude::*;

/// Says on stderr, past libtest's capture (so that it shows in every run), that the GFNI
/// checks of `test` were skipped; once per test.
fn skip_note(test: &str, why: PathUnavailable) {
    static NOTED: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let mut noted = NOTED.lock().unwrap_or_else(|e| e.into_inner());
    if !noted.iter().any(|t| t == test) {
        noted.push(test.to_string());
        let _ = writeln!(
            std::io::stderr(),
            "note: {test}: GFNI path not checked ({why})"
        );
    }
}

/// The hasher for `key` on every path this CPU runs: the table path, and the GFNI path
/// where available (else a note names `test`).
fn hashers(test: &str, key: &[u8; KEY_LEN]) -> Vec<Toeplitz> {
    let t = Toeplitz::new(key);
    let mut v = vec![t.clone().with_path(Path::Table).unwrap()];
    match t.with_path(Path::Gfni) {
        Ok(g) => v.push(g),
        Err(e) => skip_note(test, e),
    }
    v
}

/// `t.hash_fixed::<N>(input)` for the `N` that is `input.len()`, among the listed lengths.
macro_rules! hash_fixed {
    ($t:expr, $input:expr; $($n:literal)*) => {
        match $input.len() {
            $($n => Some($t.hash_fixed::<$n>($input.try_into().unwrap())),)*
            _ => None,
        }
    };
}

/// Every path's hash of `input` under `key` (single input, fixed length, bulk when it is a
/// tuple's length), after checking they agree with the reference.
fn hash_all(test: &str, key: &[u8; KEY_LEN], input: &[u8]) -> u32 {
    let reference = toeplitz_scalar(key, input);
    for t in hashers(test, key) {
        let path = t.path();
        assert_eq!(t.hash(input), reference, "{path} path, input {input:02x?}");
        assert_eq!(t.hash_table(input), reference, "table, input {input:02x?}");
        let fixed = hash_fixed!(t, input; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20
            21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36);
        if let Some(h) = fixed {
            assert_eq!(h, reference, "{path} path, hash_fixed, input {input:02x?}");
        }
    }
    reference
}

/// Checks `hash_tuples` on every path against the reference for `tuples`.
fn check_bulk(test: &str, key: &[u8; KEY_LEN], tuples: &[Tuple]) {
    let reference: Vec<u32> = tuples
        .iter()
        .map(|t| toeplitz_scalar(key, t.as_bytes()))
        .collect();
    for t in hashers(test, key) {
        let mut out = vec![0u32; tuples.len()];
        t.hash_tuples(tuples, &mut out);
        assert_eq!(out, reference, "{} path, {} tuples", t.path(), tuples.len());
    }
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
        assert_eq!(
            hash_all("microsoft_ipv4_vectors", &DEFAULT_KEY, t2.as_bytes()),
            h2,
            "{s} -> {d}"
        );
        assert_eq!(
            hash_all("microsoft_ipv4_vectors", &DEFAULT_KEY, t4.as_bytes()),
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
        assert_eq!(
            hash_all("microsoft_ipv6_vectors", &DEFAULT_KEY, t2.as_bytes()),
            h2,
            "{s} -> {d}"
        );
        assert_eq!(
            hash_all("microsoft_ipv6_vectors", &DEFAULT_KEY, t4.as_bytes()),
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

#[test]
fn new_takes_the_best_path_and_with_path_forces_one() {
    let t = Toeplitz::default();
    assert_eq!(t.path(), Path::best());
    assert!(Path::Table.available());
    let table = t.clone().with_path(Path::Table).unwrap();
    assert_eq!(table.path(), Path::Table);
    match t.with_path(Path::Gfni) {
        Ok(g) => {
            assert_eq!(g.path(), Path::Gfni);
            assert_eq!(Path::best(), Path::Gfni);
            // and back
            assert_eq!(g.with_path(Path::Table).unwrap().path(), Path::Table);
        }
        Err(e) => {
            assert_eq!(e, PathUnavailable(Path::Gfni));
            assert!(!Path::Gfni.available());
            assert_eq!(Path::best(), Path::Table);
            skip_note("new_takes_the_best_path_and_with_path_forces_one", e);
        }
    }
}

#[test]
fn gfni_path_on_the_microsoft_vectors() {
    let g = match Toeplitz::default().with_path(Path::Gfni) {
        Ok(g) => g,
        Err(e) => return skip_note("gfni_path_on_the_microsoft_vectors", e),
    };
    let mut tuples = Vec::new();
    let mut hashes = Vec::new();
    for (s, sp, d, dp, h2, h4) in V4 {
        let (s, d): (Ipv4Addr, Ipv4Addr) = (s.parse().unwrap(), d.parse().unwrap());
        tuples.extend([Tuple::v4(s, d, None), Tuple::v4(s, d, Some((sp, dp)))]);
        hashes.extend([h2, h4]);
    }
    for (s, sp, d, dp, h2, h4) in V6 {
        let (s, d): (Ipv6Addr, Ipv6Addr) = (s.parse().unwrap(), d.parse().unwrap());
        tuples.extend([Tuple::v6(s, d, None), Tuple::v6(s, d, Some((sp, dp)))]);
        hashes.extend([h2, h4]);
    }
    for (t, &h) in tuples.iter().zip(&hashes) {
        assert_eq!(g.hash(t.as_bytes()), h, "{t:?}");
    }
    // in bulk: 16 tuples in one step (IPv6 among them), the rest in the padded step
    let mut out = vec![0u32; tuples.len()];
    g.hash_tuples(&tuples, &mut out);
    assert_eq!(out, hashes);
    // only IPv4 (the two-register steps), 3 whole steps and 3 more
    let v4: Vec<Tuple> = tuples
        .iter()
        .copied()
        .filter(|t| t.as_bytes().len() <= 12)
        .collect();
    let v4: Vec<Tuple> = v4.iter().copied().cycle().take(51).collect();
    check_bulk("gfni_path_on_the_microsoft_vectors", &DEFAULT_KEY, &v4);
}

#[test]
fn bulk_stops_at_the_shorter_slice() {
    let key = SYMMETRIC_KEY;
    let tuples: Vec<Tuple> = (0..40u8)
        .map(|i| Tuple::v4([10, 0, 0, i].into(), [10, 0, 1, 1].into(), Some((1000, 80))))
        .collect();
    for t in hashers("bulk_stops_at_the_shorter_slice", &key) {
        for (n_tuples, n_out) in [(40, 50), (40, 17), (3, 16), (0, 5), (17, 0)] {
            let mut out = vec![7u32; n_out];
            t.hash_tuples(&tuples[..n_tuples], &mut out);
            let n = n_tuples.min(n_out);
            for (i, &h) in out.iter().enumerate() {
                let want = if i < n {
                    toeplitz_scalar(&key, tuples[i].as_bytes())
                } else {
                    7
                };
                assert_eq!(h, want, "{} path, {n_tuples} tuples into {n_out}", t.path());
            }
        }
    }
}

#[test]
fn one_input_bit_hashes_to_the_key_bits_from_there() {
    // input bit n alone (n = 0: the first byte's top bit) hashes to key bits n..n + 32
    for key in [DEFAULT_KEY, SYMMETRIC_KEY] {
        let key_bit = |p: usize| u32::from(key[p / 8] >> (7 - p % 8) & 1);
        for n in 0..8 * MAX_INPUT {
            let want = (0..32).fold(0u32, |h, j| h << 1 | key_bit(n + j));
            let mut input = [0u8; MAX_INPUT];
            input[n / 8] = 0x80 >> (n % 8);
            for len in [n / 8 + 1, MAX_INPUT] {
                assert_eq!(
                    hash_all(
                        "one_input_bit_hashes_to_the_key_bits_from_there",
                        &key,
                        &input[..len]
                    ),
                    want,
                    "bit {n}, {len} bytes"
                );
            }
        }
    }
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
    /// Every length from 0 to past MAX_INPUT (the GFNI path's lane count changes every 8).
    #[test]
    fn every_path_equals_scalar(key in any::<[u8; KEY_LEN]>(),
                                input in proptest::collection::vec(any::<u8>(), 0..=MAX_INPUT + 4)) {
        hash_all("every_path_equals_scalar", &key, &input);
    }

    #[test]
    fn every_path_equals_scalar_on_tuples(key in any::<[u8; KEY_LEN]>(),
                                          t in prop_oneof![v4_tuple(), v6_tuple()]) {
        hash_all("every_path_equals_scalar_on_tuples", &key, t.as_bytes());
    }

    /// Vectors of mixed IPv4 and IPv6 tuples, 0 to 70 long: whole steps of sixteen, the
    /// padded last step, steps with and without an IPv6 tuple.
    #[test]
    fn bulk_equals_scalar(key in any::<[u8; KEY_LEN]>(),
                          tuples in proptest::collection::vec(
                              prop_oneof![3 => v4_tuple(), 1 => v6_tuple()], 0..=70)) {
        check_bulk("bulk_equals_scalar", &key, &tuples);
    }

    #[test]
    fn symmetric_key_hashes_both_directions_alike(t in prop_oneof![v4_tuple(), v6_tuple()]) {
        for sym in hashers("symmetric_key_hashes_both_directions_alike", &SYMMETRIC_KEY) {
            prop_assert_eq!(sym.hash(t.as_bytes()), sym.hash(t.reversed().as_bytes()));
            let (mut fwd, mut rev) = ([0u32; 1], [0u32; 1]);
            sym.hash_tuples(&[t], &mut fwd);
            sym.hash_tuples(&[t.reversed()], &mut rev);
            prop_assert_eq!(fwd, rev, "{} path, bulk", sym.path());
        }
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

proptest! {
    /// `tuple_from_frame`'s byte-test fast path (untagged IPv4 TCP/UDP) answers what the
    /// full parse answers, on frames with any header bytes changed and any length.
    #[test]
    fn frame_fast_path_equals_the_full_parse(
        flips in prop::collection::vec((0usize..60, any::<u8>()), 0..6),
        cut in 0usize..80,
        tcp in any::<bool>(),
    ) {
        let b = PacketBuilder::ethernet(MacAddr([2; 6]), MacAddr([4; 6]))
            .ipv4(Ipv4Addr::new(10, 1, 2, 3), Ipv4Addr::new(192, 0, 2, 9));
        let mut f = if tcp { b.tcp(1234, 80, TcpFlags::ACK).build() } else { b.udp(53, 4000).build() };
        for (at, v) in flips {
            if let Some(x) = f.get_mut(at) {
                *x = v;
            }
        }
        f.truncate(cut.max(1));
        let full = if f.len() >= 14 && f[12..14] == [0x08, 0x00] {
            tuple_from_ipv4(&f[14..])
        } else {
            None
        };
        if f.len() >= 14 && f[12..14] == [0x08, 0x00] {
            prop_assert_eq!(tuple_from_frame(&f), full);
        }
    }
}
