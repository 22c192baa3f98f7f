//! Property tests of `pktvec_lookup::ipv6::Lpm6` against a simple reference (one map per
//! prefix length, longest match by scanning 128 down to 0), over random tables with adds,
//! deletes and replaces, and against the real tier1 IPv6 table when it is present.

use pktvec_lookup::ipv6::{Lpm6, Lpm6Error, MAX_NEXT_HOP};
use pktvec_lookup::routes::{generate_ipv6, load_ipv6_file, random_keys_in, SplitMix64};
use proptest::prelude::*;
use std::collections::HashMap;
use std::net::Ipv6Addr;

fn mask(len: u8) -> u128 {
    if len == 0 {
        0
    } else {
        !0u128 << (128 - u32::from(len))
    }
}

/// The reference: one map per prefix length.
struct Reference {
    by_len: Vec<HashMap<u128, u32>>,
}

impl Reference {
    fn new() -> Self {
        Reference {
            by_len: vec![HashMap::new(); 129],
        }
    }
    fn add(&mut self, a: u128, l: u8, nh: u32) -> Option<u32> {
        self.by_len[l as usize].insert(a & mask(l), nh)
    }
    fn delete(&mut self, a: u128, l: u8) -> Option<u32> {
        self.by_len[l as usize].remove(&(a & mask(l)))
    }
    fn lookup(&self, key: u128) -> Option<u32> {
        (0..=128u8)
            .rev()
            .find_map(|l| self.by_len[l as usize].get(&(key & mask(l))).copied())
    }
    fn len(&self) -> usize {
        self.by_len.iter().map(HashMap::len).sum()
    }
}

/// Checks every lookup flavour against the reference for `keys`.
fn check_all(t: &Lpm6, r: &Reference, keys: &[u128]) -> Result<(), TestCaseError> {
    let want: Vec<Option<u32>> = keys.iter().map(|&k| r.lookup(k)).collect();
    for (k, w) in keys.iter().zip(&want) {
        prop_assert_eq!(t.lookup(*k), *w, "single lookup of {:x}", k);
    }
    let mut out = vec![Some(u32::MAX); keys.len()];
    t.lookup_bulk(keys, &mut out).unwrap();
    prop_assert_eq!(&out, &want, "bulk");
    for pf in [false, true] {
        let mut out = vec![Some(u32::MAX); keys.len()];
        t.lookup_vector_with(keys, &mut out, pf).unwrap();
        prop_assert_eq!(&out, &want, "vector, prefetch {}", pf);
    }
    // Ipv6Addr keys give the same answers.
    let addrs: Vec<Ipv6Addr> = keys.iter().map(|&k| Ipv6Addr::from(k)).collect();
    let mut out = vec![None; keys.len()];
    t.lookup_vector(&addrs, &mut out).unwrap();
    prop_assert_eq!(&out, &want, "vector of Ipv6Addr");
    prop_assert_eq!(t.len(), r.len());
    Ok(())
}

/// Keys that exercise a table: inside each prefix (random host bits), at its first and last
/// address, just outside it (the bit after the prefix flipped), and uniformly random.
fn keys_for(prefixes: &[(u128, u8)], rng: &mut SplitMix64, random: usize) -> Vec<u128> {
    let mut rnd = || (u128::from(rng.next_u64()) << 64) | u128::from(rng.next_u64());
    let mut keys = Vec::new();
    for &(a, l) in prefixes {
        let m = mask(l);
        keys.push((a & m) | (rnd() & !m));
        keys.push(a & m);
        keys.push((a & m) | !m);
        if l > 0 {
            keys.push((a & m) ^ (1u128 << (128 - u32::from(l))));
        }
        if l < 128 {
            keys.push((a & m) ^ (1u128 << (127 - u32::from(l))));
        }
    }
    for _ in 0..random {
        keys.push(rnd());
    }
    keys
}

#[derive(Debug, Clone)]
enum Op {
    Add(u128, u8, u32),
    Delete(u128, u8),
    /// Delete or replace the i-th (mod count) prefix added so far.
    DeleteExisting(usize),
    ReplaceExisting(usize, u32),
}

/// Addresses clustered around a few bases so prefixes nest, share long runs of bits (skip
/// records) and collide in the first level.
fn addr_strategy() -> impl Strategy<Value = u128> {
    let bases = prop_oneof![
        Just(0x2001_0db8u128 << 96),
        Just(0x2a02_1234_5600u128 << 80),
        Just(0u128),
        Just(u128::MAX),
        any::<u128>(),
    ];
    (bases, any::<u128>(), 0u32..=128).prop_map(|(b, r, keep)| {
        // Keep the top `keep` bits of the base, random below.
        let m = if keep == 0 { 0 } else { !0u128 << (128 - keep) };
        (b & m) | (r & !m)
    })
}

fn op_strategy() -> impl Strategy<Value = Op> {
    let nh = 0u32..1000;
    prop_oneof![
        6 => (addr_strategy(), 0u8..=128, nh.clone()).prop_map(|(a, l, n)| Op::Add(a, l, n)),
        2 => (addr_strategy(), 40u8..=72, nh.clone()).prop_map(|(a, l, n)| Op::Add(a, l, n)),
        1 => (addr_strategy(), 0u8..=128).prop_map(|(a, l)| Op::Delete(a, l)),
        2 => any::<usize>().prop_map(Op::DeleteExisting),
        2 => (any::<usize>(), nh).prop_map(|(i, n)| Op::ReplaceExisting(i, n)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// Random lengths 0..=128, clustered addresses, adds/deletes/replaces; every lookup
    /// flavour agrees with the reference after each batch of operations.
    #[test]
    fn matches_reference_under_updates(
        ops in prop::collection::vec(op_strategy(), 1..120),
        seed in any::<u64>(),
    ) {
        let mut t = Lpm6::new();
        let mut r = Reference::new();
        let mut added: Vec<(u128, u8)> = Vec::new();
        let mut rng = SplitMix64::new(seed);
        for (i, op) in ops.iter().enumerate() {
            match *op {
                Op::Add(a, l, n) => {
                    prop_assert_eq!(t.add(a, l, n).unwrap(), r.add(a, l, n));
                    added.push((a & mask(l), l));
                }
                Op::Delete(a, l) => {
                    prop_assert_eq!(t.delete(a, l).unwrap(), r.delete(a, l));
                }
                Op::DeleteExisting(j) if !added.is_empty() => {
                    let (a, l) = added[j % added.len()];
                    prop_assert_eq!(t.delete(a, l).unwrap(), r.delete(a, l));
                }
                Op::ReplaceExisting(j, n) if !added.is_empty() => {
                    let (a, l) = added[j % added.len()];
                    prop_assert_eq!(t.add(a, l, n).unwrap(), r.add(a, l, n));
                }
                _ => {}
            }
            if i % 16 == 15 || i + 1 == ops.len() {
                let keys = keys_for(&added, &mut rng, 64);
                check_all(&t, &r, &keys)?;
            }
        }
        // Deleting everything leaves an empty table with no nodes.
        for (a, l) in added {
            t.delete(a, l).unwrap();
        }
        let s = t.stats();
        prop_assert_eq!((s.routes, s.nodes, s.leaves, s.skips), (0, 0, 0, 0));
    }

    /// The seed's shape: /48–/64 prefixes from `routes::generate_ipv6`, bulk-loaded, then
    /// some deleted and some replaced one by one.
    #[test]
    fn generated_48_64_tables(n in 1usize..3000, seed in any::<u64>()) {
        let routes = generate_ipv6(n, seed);
        let t0 = Lpm6::from_routes(routes.iter().map(|r| (r.addr, r.len, r.next_hop))).unwrap();
        let mut t = t0.clone();
        let mut r = Reference::new();
        for rt in &routes {
            r.add(rt.addr.into(), rt.len, rt.next_hop);
        }
        let mut rng = SplitMix64::new(seed ^ 1);
        let prefixes: Vec<(u128, u8)> = routes.iter().map(|x| (x.addr.into(), x.len)).collect();
        let keys = keys_for(&prefixes, &mut rng, 256);
        check_all(&t, &r, &keys)?;
        for (i, rt) in routes.iter().enumerate().take(200) {
            if i % 2 == 0 {
                prop_assert_eq!(t.delete(rt.addr, rt.len).unwrap(), r.delete(rt.addr.into(), rt.len));
            } else {
                prop_assert_eq!(
                    t.add(rt.addr, rt.len, i as u32).unwrap(),
                    r.add(rt.addr.into(), rt.len, i as u32)
                );
            }
        }
        check_all(&t, &r, &keys)?;
        // Incremental adds build the same answers as a bulk load.
        let mut inc = Lpm6::new();
        for rt in &routes {
            inc.add(rt.addr, rt.len, rt.next_hop).unwrap();
        }
        for &k in keys.iter().take(2000) {
            prop_assert_eq!(inc.lookup(k), t0.lookup(k));
        }
    }
}

#[test]
fn bad_inputs_are_errors_not_panics() {
    let mut t = Lpm6::new();
    assert_eq!(t.add(0u128, 129, 1), Err(Lpm6Error::BadLength(129)));
    assert_eq!(t.add(0u128, 255, 1), Err(Lpm6Error::BadLength(255)));
    assert_eq!(t.delete(0u128, 200), Err(Lpm6Error::BadLength(200)));
    assert_eq!(t.get(0u128, 129), Err(Lpm6Error::BadLength(129)));
    assert_eq!(
        t.add(0u128, 8, MAX_NEXT_HOP + 1),
        Err(Lpm6Error::NextHopTooLarge(MAX_NEXT_HOP + 1))
    );
    assert_eq!(t.add(0u128, 8, MAX_NEXT_HOP), Ok(None));
    assert_eq!(t.lookup(1u128), Some(MAX_NEXT_HOP));
    let mut out = [None; 3];
    let e = Lpm6Error::LengthMismatch { keys: 2, out: 3 };
    assert_eq!(t.lookup_bulk(&[0u128, 1], &mut out), Err(e.clone()));
    assert_eq!(t.lookup_vector(&[0u128, 1], &mut out), Err(e.clone()));
    assert_eq!(t.lookup_vector_with(&[0u128, 1], &mut out, false), Err(e));
    // A failed batch stores nothing.
    assert!(t.extend([(0u128, 16u8, 1u32), (0u128, 130, 1)]).is_err());
    assert_eq!(t.len(), 1);
    // Empty slices are fine.
    t.lookup_vector::<u128>(&[], &mut []).unwrap();
    assert!(!format!("{e2}", e2 = Lpm6Error::BadLength(200)).is_empty());
}

#[test]
fn extremes_default_route_host_routes_and_deep_chains() {
    let mut t = Lpm6::new();
    let mut r = Reference::new();
    let mut prefixes = vec![(0u128, 0u8), (u128::MAX, 128), (0, 128), (1, 128), (2, 127)];
    // A chain of nested prefixes down one path: every length 1..=128.
    let path = 0x2001_0db8_dead_beef_0123_4567_89ab_cdefu128;
    for l in 1..=128u8 {
        prefixes.push((path & mask(l), l));
    }
    for (i, &(a, l)) in prefixes.iter().enumerate() {
        t.add(a, l, i as u32).unwrap();
        r.add(a, l, i as u32);
    }
    let mut rng = SplitMix64::new(5);
    let keys = keys_for(&prefixes, &mut rng, 100);
    check_all(&t, &r, &keys).unwrap();
    // Remove every other length of the chain.
    for l in (2..=128u8).step_by(2) {
        assert!(t.delete(path, l).unwrap().is_some());
        r.delete(path, l);
    }
    check_all(&t, &r, &keys).unwrap();
    assert_eq!(t.delete(0u128, 0).unwrap(), Some(0));
    r.delete(0, 0);
    check_all(&t, &r, &keys).unwrap();
}

/// Prefetch helper + lookup (the graph's two-phase sub-batch pattern) agrees with lookup.
#[test]
fn prefetch_then_lookup() {
    let routes = generate_ipv6(5000, 11);
    let t = Lpm6::from_routes(routes.iter().map(|r| (r.addr, r.len, r.next_hop))).unwrap();
    let keys = random_keys_in(&routes, 4096, 3);
    let mut hits = 0;
    for sub in keys.chunks(32) {
        for k in sub {
            t.prefetch(*k);
        }
        for k in sub {
            let v = t.lookup(*k);
            hits += usize::from(v.is_some());
        }
    }
    assert_eq!(hits, keys.len(), "keys inside prefixes must all match");
    let s = t.stats();
    assert!(
        s.bytes_per_route() > 0.0 && s.bytes_per_route() < 2000.0,
        "{s:?}"
    );
}

const TIER1: &str = "/work/shared/data/routes/tier1-fulltable-ipv6.txt.xz";

/// The real table (160,147 prefixes) against the reference with sampled keys; then part of
/// it deleted and replaced.
#[test]
fn tier1_full_table() {
    if !std::path::Path::new(TIER1).exists() {
        println!("note: {TIER1} not present; skipping the real-table test");
        return;
    }
    let routes = match load_ipv6_file(TIER1) {
        Ok(r) => r,
        Err(e) => {
            println!("note: cannot read {TIER1} ({e}); skipping the real-table test");
            return;
        }
    };
    assert_eq!(routes.len(), 160_147);
    let mut t = Lpm6::from_routes(routes.iter().map(|r| (r.addr, r.len, r.next_hop))).unwrap();
    let mut r = Reference::new();
    for rt in &routes {
        r.add(rt.addr.into(), rt.len, rt.next_hop);
    }
    let mut rng = SplitMix64::new(77);
    // Every 8th prefix's keys plus keys inside random prefixes and random ones.
    let sample: Vec<(u128, u8)> = routes
        .iter()
        .step_by(8)
        .map(|x| (x.addr.into(), x.len))
        .collect();
    let mut keys = keys_for(&sample, &mut rng, 5000);
    keys.extend(
        random_keys_in(&routes, 20_000, 9)
            .into_iter()
            .map(u128::from),
    );
    check_all(&t, &r, &keys).unwrap();
    let hits = keys.iter().filter(|&&k| t.lookup(k).is_some()).count();
    assert!(hits > keys.len() / 2, "{hits} of {}", keys.len());
    // Delete and replace a spread sample one by one (each rebuilds its /16).
    for (i, rt) in routes.iter().enumerate().step_by(401) {
        if i % 2 == 0 {
            assert_eq!(
                t.delete(rt.addr, rt.len).unwrap(),
                r.delete(rt.addr.into(), rt.len)
            );
        } else {
            assert_eq!(
                t.add(rt.addr, rt.len, 7).unwrap(),
                r.add(rt.addr.into(), rt.len, 7)
            );
        }
    }
    check_all(&t, &r, &keys).unwrap();
}
