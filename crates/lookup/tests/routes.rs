//! Route loading, generators and writers.

use pktvec_lookup::routes::*;
use proptest::prelude::*;
use std::collections::HashSet;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::Path;

const DATA: &str = "/work/shared/data/routes";

fn err_kind(text: &str) -> (usize, RouteErrorKind) {
    let e = parse_ipv4(text).unwrap_err();
    (e.line, e.kind)
}

#[test]
fn format_and_comments() {
    let text =
        "# header\n\n  10.0.0.0/8   7  # trailing comment\r\n\t192.168.0.0/16\t9\textra fields\n";
    let r = parse_ipv4(text).unwrap();
    assert_eq!(
        r,
        vec![
            Route4 {
                addr: Ipv4Addr::new(10, 0, 0, 0),
                len: 8,
                next_hop: 7
            },
            Route4 {
                addr: Ipv4Addr::new(192, 168, 0, 0),
                len: 16,
                next_hop: 9
            },
        ]
    );
    assert!(parse_ipv4("").unwrap().is_empty());
    assert!(parse_ipv4("# only\n   \n").unwrap().is_empty());
    // default route and /32
    let r = parse_ipv4("0.0.0.0/0 1\n1.2.3.4/32 2\n1.2.3.5 3").unwrap();
    assert_eq!(r.iter().map(|r| r.len).collect::<Vec<_>>(), vec![0, 32, 32]);
}

#[test]
fn error_messages_and_line_numbers() {
    let e = parse_ipv4("1.0.0.0/8 1\n# c\n\n1.2.3.0/24 2\n1.2.3.0/33 5\n").unwrap_err();
    assert_eq!(
        e.to_string(),
        r#"line 5: "1.2.3.0/33 5": prefix length 33 > 32"#
    );
    assert_eq!(e.text, "1.2.3.0/33 5");
    assert!(matches!(
        err_kind("1.2.3.0/256 1"),
        (1, RouteErrorKind::LengthTooLong { len: 256, max: 32 })
    ));
    assert!(matches!(
        err_kind("1.2.3.0/99999999999 1"),
        (1, RouteErrorKind::BadLength(_))
    ));
    assert!(matches!(
        err_kind("1.2.3.0/-1 1"),
        (1, RouteErrorKind::BadLength(_))
    ));
    assert!(matches!(
        err_kind("1.2.3.0/ 1"),
        (1, RouteErrorKind::BadLength(_))
    ));
    assert!(matches!(
        err_kind("1.2.3.0/+8 1"),
        (1, RouteErrorKind::BadLength(_))
    ));
    assert!(matches!(
        err_kind("1.2.3/24 1"),
        (1, RouteErrorKind::BadAddress(_))
    ));
    assert!(matches!(
        err_kind("::/0 1"),
        (1, RouteErrorKind::BadAddress(_))
    ));
    assert!(matches!(
        err_kind("x\n"),
        (1, RouteErrorKind::BadAddress(_))
    ));
    assert!(matches!(
        err_kind("\n1.2.3.0/24 -3"),
        (2, RouteErrorKind::BadNextHop(_))
    ));
    assert!(matches!(
        err_kind("1.2.3.0/24 4294967296"),
        (1, RouteErrorKind::BadNextHop(_))
    ));
    assert!(matches!(
        err_kind("1.2.3.0/24 hop"),
        (1, RouteErrorKind::BadNextHop(_))
    ));
    assert!(parse_ipv6("2001:db8::/129 1").is_err());
    assert!(parse_ipv6("1.2.3.0/24 1").is_err());
}

#[test]
fn host_bits_are_an_error_and_masked_fixes_them() {
    let e = parse_ipv4("10.1.0.0/8 1").unwrap_err();
    assert_eq!(
        e.kind,
        RouteErrorKind::HostBitsSet {
            len: 8,
            network: "10.0.0.0".into()
        }
    );
    assert!(e.to_string().contains("host bits set"));
    let e = parse_ipv6("2001:db8::1/64 1").unwrap_err();
    assert!(matches!(
        e.kind,
        RouteErrorKind::HostBitsSet { len: 64, .. }
    ));
    let r = Route4 {
        addr: Ipv4Addr::new(10, 1, 2, 3),
        len: 8,
        next_hop: 1,
    };
    assert_eq!(r.masked().addr, Ipv4Addr::new(10, 0, 0, 0));
    let r = Route4 {
        addr: Ipv4Addr::new(10, 1, 2, 3),
        len: 200,
        next_hop: 1,
    };
    assert_eq!(r.masked().len, 32);
}

#[test]
fn next_hops_interned_and_defaulted() {
    let r = parse_ipv4("1.0.0.0/8 10.0.0.1\n2.0.0.0/8 10.0.0.2\n3.0.0.0/8 10.0.0.1\n4.0.0.0/8 fe80::1\n5.0.0.0/8\n").unwrap();
    let nh: Vec<u32> = r.iter().map(|r| r.next_hop).collect();
    assert_eq!(nh, vec![0, 1, 0, 2, 5]);
    // missing next hop: line number mod 2^20
    let text: String = "1.0.0.0/8\n".repeat(3);
    let r = parse_ipv4(&text).unwrap();
    assert_eq!(
        r.iter().map(|r| r.next_hop).collect::<Vec<_>>(),
        vec![1, 2, 3]
    );
}

/// A generated IPv4 table: distinct, masked prefixes with 24-bit next hops and, for each
/// length with more than 1,000 expected prefixes, within 5% of tier1's length histogram.
fn assert_realistic_ipv4(a: &[Route<Ipv4Addr>]) {
    let set: HashSet<(Ipv4Addr, u8)> = a.iter().map(|r| (r.addr, r.len)).collect();
    assert_eq!(set.len(), a.len(), "prefixes must be distinct");
    assert!(a.iter().all(|r| r.masked() == *r && r.next_hop < (1 << 24)));
    let total: u32 = IPV4_BGP_LENGTH_HISTOGRAM.iter().map(|h| h.1).sum();
    assert_eq!(total, 901_899);
    for &(len, c) in IPV4_BGP_LENGTH_HISTOGRAM {
        let expect = c as f64 / total as f64 * a.len() as f64;
        let got = a.iter().filter(|r| r.len == len).count() as f64;
        if expect > 1000.0 {
            assert!(
                (got - expect).abs() < expect * 0.05,
                "/{len}: got {got}, expected ~{expect}"
            );
        }
    }
}

#[test]
fn generators_are_deterministic_distinct_and_realistic() {
    let a = generate_ipv4(200_000, 11);
    assert_eq!(a.len(), 200_000);
    assert_eq!(a, generate_ipv4(200_000, 11));
    assert_ne!(a[..100], generate_ipv4(100, 12)[..]);
    assert_realistic_ipv4(&a);
    let b = generate_ipv6(200_000, 5);
    assert_eq!(b.len(), 200_000);
    let set: HashSet<(Ipv6Addr, u8)> = b.iter().map(|r| (r.addr, r.len)).collect();
    assert_eq!(set.len(), b.len());
    assert!(b
        .iter()
        .all(|r| (48..=64).contains(&r.len) && r.masked() == *r));
    assert!(b.iter().filter(|r| r.len == 48).count() > 199_000);
    // more than the space a tiny histogram can fill: bounded, no endless loop
    let small = generate_ipv4(0, 1);
    assert!(small.is_empty());
}

#[test]
fn keys() {
    let k = random_ipv4_keys(1000, 3);
    assert_eq!(k.len(), 1000);
    let distinct: HashSet<_> = k.iter().collect();
    assert!(distinct.len() > 990);
    let routes = generate_ipv4(1000, 3);
    let hits = random_keys_in(&routes, 1000, 4);
    assert!(hits.iter().all(|k| routes.iter().any(|r| r.contains(*k))));
    assert!(random_keys_in::<Ipv4Addr>(&[], 10, 1).is_empty());
    let k6 = random_ipv6_keys(100, 3);
    assert!(k6.iter().all(|a| a.segments()[0] >> 13 == 1));
}

#[test]
fn write_then_parse_round_trip_files() {
    let dir = std::env::temp_dir().join(format!("pktvec-routes-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let r4 = generate_ipv4(5000, 1);
    let r6 = generate_ipv6(5000, 1);
    write_routes_file(dir.join("r4.txt"), &r4).unwrap();
    write_routes_file(dir.join("r6.txt"), &r6).unwrap();
    assert_eq!(load_ipv4_file(dir.join("r4.txt")).unwrap(), r4);
    assert_eq!(load_ipv6_file(dir.join("r6.txt")).unwrap(), r6);
    let keys = random_ipv4_keys(100, 1);
    write_keys_file(dir.join("k.txt"), &keys).unwrap();
    let back: Vec<Ipv4Addr> = std::fs::read_to_string(dir.join("k.txt"))
        .unwrap()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    assert_eq!(back, keys);
    let e = load_ipv4_file(dir.join("missing.txt")).unwrap_err();
    assert!(matches!(e.kind, RouteErrorKind::Io(_)) && e.line == 0);
    let e = load_ipv4_file(dir.join("missing.txt.xz")).unwrap_err();
    assert!(matches!(e.kind, RouteErrorKind::Io(_)));
    std::fs::remove_dir_all(&dir).ok();
}

/// The IPv4 table `name` of `../shared/data/routes`, or `None` (with a note) when the data
/// set is not present: the tests on real tables are skipped then.
fn real_ipv4(name: &str) -> Option<Vec<Route<Ipv4Addr>>> {
    let p = Path::new(DATA).join(name);
    if !p.exists() {
        eprintln!("note: {} not present, skipping", p.display());
        return None;
    }
    Some(load_ipv4_file(&p).unwrap())
}

const TIER1_V4: &str = "tier1-fulltable-ipv4.txt.xz";
const RIPE_FIB_V4: &str = "ripe-ris-bview-20100701.0759.peer-as4777.fib.tsv.xz";

#[test]
fn real_tables_load() {
    let Some(r) = real_ipv4(TIER1_V4) else {
        return;
    };
    assert_eq!(r.len(), 901_899);
    let r6 = load_ipv6_file(Path::new(DATA).join("tier1-fulltable-ipv6.txt.xz")).unwrap();
    assert_eq!(r6.len(), 160_147);
    let fib = load_ipv4_file(Path::new(DATA).join(RIPE_FIB_V4)).unwrap();
    assert_eq!(fib.len(), 323_485);
    let nhs: HashSet<u32> = fib.iter().map(|r| r.next_hop).collect();
    assert_eq!(nhs.len(), 23, "23 distinct IXP next hops, interned");
    assert_eq!(fib[0].next_hop, 0);
}

proptest! {
    #[test]
    fn never_panics_on_arbitrary_text(s in "[0-9a-f:./# \t\n-]{0,80}") {
        let _ = parse_ipv4(&s);
        let _ = parse_ipv6(&s);
    }

    #[test]
    fn display_parse_round_trip(addr in any::<u32>(), len in 0u8..=32, nh in any::<u32>()) {
        let r = Route4 { addr: Ipv4Addr::from(addr), len, next_hop: nh }.masked();
        prop_assert_eq!(parse_ipv4(&r.to_string()).unwrap(), vec![r]);
    }
}

#[test]
fn clustered_generator_is_deterministic_distinct_and_realistic() {
    let a = generate_ipv4_clustered(200_000, 11);
    assert_eq!(a.len(), 200_000);
    assert_eq!(a, generate_ipv4_clustered(200_000, 11));
    assert_ne!(a[..1000], generate_ipv4_clustered(200_000, 12)[..1000]);
    assert_realistic_ipv4(&a);
    // nothing in /8s the real table leaves empty (0/8, 10/8, 127/8, 224/3)
    for r in &a {
        let o8 = r.addr.octets()[0] as usize;
        assert!(IPV4_BGP_PER_SLASH8[o8] > 0, "{r} in an empty /8");
    }
    // clustered: far more single-run /18 quarters than uniform placement
    let c = ipv4_quarter_stats(&a);
    let u = ipv4_quarter_stats(&generate_ipv4(200_000, 11));
    assert!(
        c.multi_run * 2 < u.multi_run,
        "clustered {c:?} vs uniform {u:?}"
    );
    assert!(generate_ipv4_clustered(0, 1).is_empty());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Any size and seed: exactly `n` distinct, canonical prefixes of the histogram's
    /// lengths, with 24-bit next hops, the same for the same seed.
    #[test]
    fn clustered_generator_exact_distinct_valid(n in 0usize..4000, seed in any::<u64>()) {
        let a = generate_ipv4_clustered(n, seed);
        prop_assert_eq!(a.len(), n);
        let set: HashSet<(Ipv4Addr, u8)> = a.iter().map(|r| (r.addr, r.len)).collect();
        prop_assert_eq!(set.len(), n);
        for r in &a {
            prop_assert_eq!(r.masked(), *r);
            prop_assert!(r.next_hop < (1 << 24));
            prop_assert!(IPV4_BGP_LENGTH_HISTOGRAM.iter().any(|h| h.0 == r.len));
        }
        prop_assert_eq!(&a, &generate_ipv4_clustered(n, seed));
    }

    /// The quarter statistics agree with a slot-by-slot longest-prefix match: only quarters
    /// holding a route longer than /18 can hold several runs; those are computed by brute
    /// force, every other quarter is one run.
    #[test]
    fn quarter_stats_match_reference(n in 0usize..300, seed in any::<u64>(), uniform in any::<bool>()) {
        let routes = if uniform { generate_ipv4(n, seed) } else { generate_ipv4_clustered(n, seed) };
        let s = ipv4_quarter_stats(&routes);
        let answer = |slot: u32| -> u64 {
            if routes.iter().any(|r| r.len > 24 && (u32::from(r.addr) >> 8) == slot) {
                return (1 << 40) | u64::from(slot);
            }
            let key = Ipv4Addr::from(slot << 8);
            // the longest covering route of length <= 24; the last duplicate wins
            routes
                .iter()
                .enumerate()
                .filter(|(_, r)| r.len <= 24 && r.contains(key))
                .max_by_key(|(i, r)| (r.len, *i))
                .map_or(0, |(_, r)| 1 + u64::from(r.next_hop & 0xff_ffff))
        };
        let mut split: Vec<u32> = routes
            .iter()
            .filter(|r| r.len > 18)
            .map(|r| u32::from(r.addr) >> 14)
            .collect();
        split.sort_unstable();
        split.dedup();
        let (mut multi, mut runs) = (0u32, u64::from(s.quarters) - split.len() as u64);
        for q in &split {
            let v: Vec<u64> = (0..64).map(|i| answer((q << 6) | i)).collect();
            let r = 1 + v.windows(2).filter(|w| w[0] != w[1]).count() as u64;
            runs += r;
            multi += u32::from(r > 1);
        }
        prop_assert_eq!(s.quarters, 1 << 18);
        prop_assert_eq!(s.multi_run, multi);
        prop_assert_eq!(s.single_run, s.quarters - multi);
        prop_assert_eq!(s.runs, runs);
    }
}

/// The clustered generator's constants are what the tier1 file gives (skipped without it).
#[test]
fn clustered_model_constants_match_tier1() {
    let Some(t) = real_ipv4(TIER1_V4) else {
        return;
    };
    let set: HashSet<(u32, u8)> = t.iter().map(|r| (u32::from(r.addr), r.len)).collect();
    let mask = |l: u8| if l == 0 { 0 } else { u32::MAX << (32 - l) };
    let mut per8 = [0u32; 256];
    let mut covered = std::collections::BTreeMap::<u8, u32>::new();
    let mut gaps = std::collections::BTreeMap::<u8, u32>::new();
    for r in &t {
        let a = u32::from(r.addr);
        per8[(a >> 24) as usize] += 1;
        let c = covered.entry(r.len).or_default();
        if let Some(pl) = (0..r.len)
            .rev()
            .find(|&pl| set.contains(&(a & mask(pl), pl)))
        {
            *c += 1;
            *gaps.entry(r.len - pl).or_default() += 1;
        }
    }
    assert_eq!(per8, IPV4_BGP_PER_SLASH8);
    assert_eq!(covered.into_iter().collect::<Vec<_>>(), IPV4_BGP_COVERED);
    assert_eq!(
        gaps.into_iter().collect::<Vec<_>>(),
        IPV4_BGP_COVER_GAP_HISTOGRAM
    );
    let mut sorted: Vec<(u32, u8)> = set.into_iter().collect();
    sorted.sort_unstable();
    let shared = |a: (u32, u8), b: (u32, u8)| ((a.0 ^ b.0).leading_zeros() as u8).min(a.1).min(b.1);
    let mut nb = std::collections::BTreeMap::<u8, u32>::new();
    for i in 0..sorted.len() {
        let prev = i.checked_sub(1).map(|j| shared(sorted[i], sorted[j]));
        let next = sorted.get(i + 1).map(|&b| shared(sorted[i], b));
        *nb.entry(prev.max(next).unwrap_or(0)).or_default() += 1;
    }
    assert_eq!(
        nb.into_iter().collect::<Vec<_>>(),
        IPV4_BGP_NEIGHBOUR_BITS_HISTOGRAM
    );
}

/// The union of the two real IPv4 tables and the quarter statistics of the real and the
/// generated tables (skipped without the files).
#[test]
fn union_of_real_tables_and_quarter_stats() {
    let (Some(a), Some(b)) = (real_ipv4(TIER1_V4), real_ipv4(RIPE_FIB_V4)) else {
        return;
    };
    let u = union_prefixes(&[&a, &b]);
    assert_eq!(u.len(), 1_069_869);
    assert!(u
        .windows(2)
        .all(|w| (w[0].addr, w[0].len) < (w[1].addr, w[1].len)));
    assert!(u.iter().enumerate().all(|(i, r)| r.next_hop == i as u32));
    let all: HashSet<(Ipv4Addr, u8)> = a.iter().chain(&b).map(|r| (r.addr, r.len)).collect();
    assert_eq!(all.len(), u.len());
    let s = ipv4_quarter_stats(&a);
    assert_eq!((s.single_run, s.multi_run), (197_155, 64_989));
}
