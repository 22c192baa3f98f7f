//! IPv4 LPM against a simple reference: property tests over random tables with
//! adds/deletes/replaces, the real tables in `shared/data/routes/` when present, error
//! cases, group reuse, and concurrent readers during updates.

use pktvec_lookup::ipv4::{
    Lpm4, Lpm4Config, LpmError, ReadPath, MAX_NEXT_HOP, MISS, REUSE_QUARANTINE,
};
use pktvec_lookup::routes::{
    generate_ipv4, load_ipv4_file, random_ipv4_keys, random_keys_in, Route4, SplitMix64,
};
use proptest::prelude::*;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::Ipv4Addr;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

const DATA: &str = "/work/shared/data/routes";

fn mask(len: u8) -> u32 {
    if len == 0 {
        0
    } else {
        u32::MAX << (32 - len)
    }
}

/// The reference: a map per prefix length; longest match by scanning lengths 32 down to 0.
#[derive(Default, Clone)]
struct Reference {
    by_len: Vec<BTreeMap<u32, u32>>,
}

impl Reference {
    fn new() -> Self {
        Reference {
            by_len: vec![BTreeMap::new(); 33],
        }
    }
    fn add(&mut self, addr: u32, len: u8, nh: u32) {
        self.by_len[len as usize].insert(addr & mask(len), nh);
    }
    fn delete(&mut self, addr: u32, len: u8) -> Option<u32> {
        self.by_len[len as usize].remove(&(addr & mask(len)))
    }
    fn lookup(&self, key: u32) -> Option<u32> {
        (0..=32u8)
            .rev()
            .find_map(|l| self.by_len[l as usize].get(&(key & mask(l))).copied())
    }
    fn lookup_with_len(&self, key: u32) -> Option<(u8, u32)> {
        (0..=32u8).rev().find_map(|l| {
            self.by_len[l as usize]
                .get(&(key & mask(l)))
                .map(|&nh| (l, nh))
        })
    }
    fn len(&self) -> usize {
        self.by_len.iter().map(|m| m.len()).sum()
    }
}

/// Checks every lookup flavour of `lpm` against `reference` on `keys`.
fn check_all(lpm: &Lpm4, reference: &Reference, keys: &[u32]) -> Result<(), String> {
    let expect: Vec<Option<u32>> = keys.iter().map(|&k| reference.lookup(k)).collect();
    for (&k, &e) in keys.iter().zip(&expect) {
        let got = lpm.lookup(k);
        if got != e {
            return Err(format!(
                "lookup({}) = {got:?}, reference {e:?}",
                Ipv4Addr::from(k)
            ));
        }
        lpm.prefetch(k);
        if lpm.lookup(Ipv4Addr::from(k)) != e {
            return Err("lookup(Ipv4Addr) differs".into());
        }
    }
    let mut out = vec![Some(u32::MAX); keys.len()];
    lpm.lookup_bulk(keys, &mut out);
    if out != expect {
        return Err("lookup_bulk differs".into());
    }
    for b in [1usize, 3, 4, 64, 256, 1000] {
        let mut out = vec![Some(u32::MAX); keys.len()];
        lpm.lookup_vector_batched(keys, &mut out, b);
        if out != expect {
            return Err(format!("lookup_vector_batched(b={b}) differs"));
        }
    }
    let mut out = vec![Some(u32::MAX); keys.len()];
    lpm.lookup_vector(keys, &mut out);
    if out != expect {
        return Err("lookup_vector differs".into());
    }
    let expect_raw: Vec<u32> = expect.iter().map(|e| e.unwrap_or(MISS)).collect();
    let single_raw: Vec<u32> = keys.iter().map(|&k| lpm.lookup_raw(k)).collect();
    if single_raw != expect_raw {
        return Err("lookup_raw differs".into());
    }
    let mut raw = vec![7u32; keys.len()];
    lpm.lookup_bulk_raw(keys, &mut raw);
    if raw != expect_raw {
        return Err("lookup_bulk_raw differs".into());
    }
    for path in [
        ReadPath::Compressed,
        ReadPath::Lines,
        ReadPath::Dir24,
        ReadPath::Auto,
    ] {
        lpm.set_read_path(path);
        for b in [1usize, 5, 16, 20, 32, 64, 256, 999] {
            let mut raw = vec![7u32; keys.len()];
            lpm.lookup_vector_raw(keys, &mut raw, b);
            if raw != expect_raw {
                return Err(format!("lookup_vector_raw(b={b}) on {path:?} differs"));
            }
        }
    }
    for d in [0usize, 1, 3, 16, 64, 1000] {
        let mut raw = vec![7u32; keys.len()];
        lpm.lookup_vector_pipelined(keys, &mut raw, d);
        if raw != expect_raw {
            return Err(format!("lookup_vector_pipelined(d={d}) differs"));
        }
    }
    for d in [0usize, 1, 16, 1000] {
        let mut raw = vec![7u32; keys.len()];
        lpm.lookup_vector_dir24(keys, &mut raw, d);
        if raw != expect_raw {
            return Err(format!("lookup_vector_dir24(d={d}) differs"));
        }
    }
    Ok(())
}

#[derive(Debug, Clone)]
enum Op {
    Add(u32, u8, u32),
    Delete(u32, u8),
}

/// Prefixes drawn from a few clustered regions so that adds nest, overlap, replace and
/// delete each other, with lengths weighted to the interesting ranges (/8 and shorter are
/// rarer because each costs up to 2^24 entry writes in a debug build).
fn prefix() -> impl Strategy<Value = (u32, u8)> {
    let base = prop_oneof![
        Just(0x0a00_0000u32),
        Just(0x0a01_0200),
        Just(0xc0a8_0000),
        any::<u32>()
    ];
    let len = prop_oneof![
        1 => 0u8..=8,
        6 => 9u8..=24,
        8 => 25u8..=32,
    ];
    (base, any::<u32>(), len).prop_map(|(b, r, l)| {
        // Keep the top bits of the base, randomize some of the rest.
        let addr = (b & 0xffff_0000) | (r & 0x0000_ffff) | ((r >> 16) & b & 0x00ff_0000);
        (addr & mask(l), l)
    })
}

/// Next hops: mostly small, some around 2^24 − 1 (the largest that a record of 3-byte
/// values holds is 2^24 − 2), some anywhere up to [`MAX_NEXT_HOP`], so that quarters are
/// rebuilt between 3- and 4-byte records.
fn next_hop() -> impl Strategy<Value = u32> {
    prop_oneof![
        4 => 0u32..1000,
        1 => 0xff_fffdu32..=0x100_0001,
        1 => 0..=MAX_NEXT_HOP,
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => (prefix(), next_hop()).prop_map(|((a, l), nh)| Op::Add(a, l, nh)),
        3 => prefix().prop_map(|(a, l)| Op::Delete(a, l)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    #[test]
    fn matches_reference_through_adds_deletes_replaces(
        ops in prop::collection::vec(op(), 1..80),
        seed in any::<u64>(),
    ) {
        let lpm = Lpm4::new(Lpm4Config::default());
        let mut reference = Reference::new();
        let mut added: Vec<(u32, u8)> = Vec::new();
        let mut rng = SplitMix64::new(seed);
        for op in &ops {
            match *op {
                Op::Add(a, l, nh) => {
                    prop_assert_eq!(lpm.add(a.into(), l, nh), Ok(()));
                    reference.add(a, l, nh);
                    added.push((a, l));
                }
                Op::Delete(a, l) => {
                    // Half the deletes target a prefix that was added (if any).
                    let (a, l) = if !added.is_empty() && rng.below(2) == 0 {
                        added[rng.below(added.len() as u64) as usize]
                    } else {
                        (a, l)
                    };
                    let want = reference.delete(a, l).ok_or(LpmError::NotFound);
                    prop_assert_eq!(lpm.delete(a.into(), l), want);
                }
            }
            prop_assert_eq!(lpm.len(), reference.len());
            // Keys: inside every added prefix (first, last, random) and random.
            let mut keys: Vec<u32> = Vec::new();
            for &(a, l) in added.iter().rev().take(16) {
                keys.push(a);
                keys.push(a | !mask(l));
                keys.push(a | (rng.next_u64() as u32 & !mask(l)));
            }
            keys.extend((0..8).map(|_| rng.next_u64() as u32));
            if let Err(e) = check_all(&lpm, &reference, &keys) {
                return Err(TestCaseError::fail(format!("after {op:?}: {e}")));
            }
        }
        // Delete everything: the table must be empty again, groups folded back.
        for (len, m) in reference.by_len.iter().enumerate() {
            for &net in m.keys() {
                prop_assert!(lpm.delete(net.into(), len as u8).is_ok());
            }
        }
        prop_assert_eq!(lpm.len(), 0);
        prop_assert_eq!(lpm.groups_in_use(), 0);
        for &(a, _) in &added {
            prop_assert_eq!(lpm.lookup(a), None);
        }
    }

    #[test]
    fn host_bits_are_masked(addr in any::<u32>(), len in 0u8..=32, nh in 0..=MAX_NEXT_HOP) {
        let lpm = Lpm4::new(Lpm4Config { max_groups: 1, ..Default::default() });
        lpm.add(addr.into(), len, nh).unwrap();
        prop_assert_eq!(lpm.lookup(addr), Some(nh));
        prop_assert_eq!(lpm.lookup(addr & mask(len)), Some(nh));
        prop_assert_eq!(lpm.delete((addr & mask(len)).into(), len), Ok(nh));
        prop_assert_eq!(lpm.lookup(addr), None);
    }
}

#[test]
fn errors_leave_the_table_unchanged() {
    let lpm = Lpm4::new(Lpm4Config {
        max_groups: 1,
        ..Default::default()
    });
    assert_eq!(
        lpm.add([1, 0, 0, 0].into(), 33, 1),
        Err(LpmError::InvalidLength(33))
    );
    assert_eq!(
        lpm.add([1, 0, 0, 0].into(), 255, 1),
        Err(LpmError::InvalidLength(255))
    );
    assert_eq!(
        lpm.delete([1, 0, 0, 0].into(), 40),
        Err(LpmError::InvalidLength(40))
    );
    assert_eq!(
        lpm.add([1, 0, 0, 0].into(), 8, MAX_NEXT_HOP + 1),
        Err(LpmError::NextHopTooLarge(MAX_NEXT_HOP + 1))
    );
    lpm.add([1, 0, 0, 0].into(), 8, MAX_NEXT_HOP).unwrap();
    assert_eq!(lpm.lookup(0x0100_0001u32), Some(MAX_NEXT_HOP));
    // max_groups rounds up to one segment (1024 groups): fill them all.
    for i in 0..1024u32 {
        lpm.add(Ipv4Addr::from(0x0200_0000 | (i << 8) | 1), 32, i)
            .unwrap();
    }
    assert_eq!(lpm.groups_in_use(), 1024);
    assert_eq!(
        lpm.add([3, 0, 0, 1].into(), 32, 5),
        Err(LpmError::TableFull)
    );
    assert_eq!(lpm.lookup(0x0300_0001u32), None);
    assert_eq!(lpm.len(), 1025);
    // A /25 inside an existing group needs no new group.
    lpm.add([2, 0, 0, 128].into(), 25, 77).unwrap();
    assert_eq!(lpm.lookup(0x0200_0081u32), Some(77));
    assert_eq!(lpm.lookup(0x0200_0001u32), Some(0));
    assert_eq!(lpm.delete([9, 0, 0, 0].into(), 8), Err(LpmError::NotFound));
    assert_eq!(lpm.delete([1, 0, 0, 0].into(), 9), Err(LpmError::NotFound));
    assert!(format!("{lpm:?}").contains("routes: 1026"));
}

#[test]
fn freed_groups_are_quarantined_then_reused() {
    let lpm = Lpm4::new(Lpm4Config {
        max_groups: 1024,
        ..Default::default()
    });
    // 10 rounds of 500 /32s in distinct /24s, then delete them: 5,000 group allocations
    // from a pool of 1,024 must succeed through reuse.
    for round in 0..10u32 {
        for i in 0..500u32 {
            let a = 0x0a00_0000 | ((i + round * 7) << 8) | 9;
            lpm.add(a.into(), 32, round * 1000 + i).unwrap();
        }
        assert_eq!(lpm.groups_in_use(), 500);
        for i in 0..500u32 {
            let a = 0x0a00_0000 | ((i + round * 7) << 8) | 9;
            assert_eq!(lpm.lookup(a), Some(round * 1000 + i));
            assert_eq!(lpm.delete(a.into(), 32), Ok(round * 1000 + i));
            assert_eq!(lpm.lookup(a), None);
        }
        assert_eq!(lpm.groups_in_use(), 0);
    }
    // Fresh groups are only taken while the quarantine is short.
    let mem = lpm.memory_bytes();
    // 64 MiB master + 16 MiB lines (committed as written, counted whole) + 4 MiB read-path
    // quarters + at most 2 group segments and small change.
    assert!(
        mem < (64 << 20) + (16 << 20) + (4 << 20) + (3 << 20),
        "memory {mem}"
    );
    const { assert!(REUSE_QUARANTINE >= 16) };
}

#[test]
fn default_route_and_full_coverage() {
    let lpm = Lpm4::new(Lpm4Config::default());
    lpm.add([0, 0, 0, 0].into(), 0, 1).unwrap();
    lpm.add([128, 0, 0, 0].into(), 1, 2).unwrap();
    lpm.add([255, 255, 255, 255].into(), 32, 3).unwrap();
    assert_eq!(lpm.lookup(0u32), Some(1));
    assert_eq!(lpm.lookup(0x8000_0000u32), Some(2));
    assert_eq!(lpm.lookup(0xffff_fffeu32), Some(2));
    assert_eq!(lpm.lookup(u32::MAX), Some(3));
    lpm.delete([128, 0, 0, 0].into(), 1).unwrap();
    assert_eq!(lpm.lookup(0xffff_fffeu32), Some(1));
    assert_eq!(lpm.lookup(u32::MAX), Some(3));
    lpm.delete([0, 0, 0, 0].into(), 0).unwrap();
    assert_eq!(lpm.lookup(0xffff_fffeu32), None);
    assert_eq!(lpm.lookup(u32::MAX), Some(3));
    // mismatched slice lengths: the shorter wins, no panic
    let mut out = [Some(9); 1];
    lpm.lookup_vector(&[u32::MAX, 0], &mut out);
    assert_eq!(out, [Some(3)]);
    let mut out = [Some(9); 3];
    lpm.lookup_vector_batched(&[0], &mut out, 0);
    assert_eq!(out, [None, Some(9), Some(9)]);
    lpm.lookup_bulk(&[], &mut out);
}

/// Loads a real table into both structures and compares on random and hitting keys; then
/// deletes every other route and compares again.
fn real_table(file: &str, n_keys: usize) {
    let path = Path::new(DATA).join(file);
    if !path.exists() {
        eprintln!("note: {} not present, skipping", path.display());
        return;
    }
    let routes = load_ipv4_file(&path).unwrap();
    let lpm = Lpm4::from_routes(Lpm4Config::default(), &routes).unwrap();
    let mut reference = Reference::new();
    for r in &routes {
        reference.add(r.addr.into(), r.len, r.next_hop);
    }
    assert_eq!(lpm.len(), reference.len());
    let mut keys: Vec<u32> = random_ipv4_keys(n_keys, 1)
        .into_iter()
        .map(u32::from)
        .collect();
    keys.extend(
        random_keys_in(&routes, n_keys, 2)
            .into_iter()
            .map(u32::from),
    );
    check_all(&lpm, &reference, &keys).unwrap();
    let hits = keys
        .iter()
        .filter(|&&k| reference.lookup(k).is_some())
        .count();
    assert!(hits > n_keys, "hitting keys must hit ({hits})");
    for r in routes.iter().step_by(2) {
        assert_eq!(lpm.delete(r.addr, r.len), Ok(r.next_hop));
        reference.delete(r.addr.into(), r.len);
    }
    check_all(&lpm, &reference, &keys).unwrap();
    eprintln!(
        "{file}: {} routes, {} groups in use, {} keys checked",
        routes.len(),
        lpm.groups_in_use(),
        keys.len()
    );
}

#[test]
fn real_tier1_table() {
    real_table("tier1-fulltable-ipv4.txt.xz", 10_000);
}

#[test]
fn real_ripe_fib() {
    real_table(
        "ripe-ris-bview-20100701.0759.peer-as4777.fib.tsv.xz",
        20_000,
    );
}

#[test]
fn generated_table_matches_reference() {
    let routes: Vec<Route4> = generate_ipv4(100_000, 3);
    let lpm = Lpm4::from_routes(Lpm4Config::default(), &routes).unwrap();
    let mut reference = Reference::new();
    for r in &routes {
        reference.add(r.addr.into(), r.len, r.next_hop);
    }
    let keys: Vec<u32> = random_ipv4_keys(20_000, 4)
        .into_iter()
        .chain(random_keys_in(&routes, 20_000, 5))
        .map(u32::from)
        .collect();
    check_all(&lpm, &reference, &keys).unwrap();
}

/// Readers look up continuously while a writer adds, replaces and deletes routes (including
/// ones that create, fold and reuse second-level groups). A base table never changes; each
/// churn route has two possible next hops; every next hop in the test is unique to its
/// route. So the only correct answers for a key at any moment are the base table's answer
/// or a churn route covering the key that is longer than the base match — anything else
/// (a zero, an empty entry that should not be, a next hop of another prefix from a reused
/// group) is a torn or stale read.
#[test]
fn concurrent_readers_see_only_valid_answers() {
    let mut rng = SplitMix64::new(99);
    let mut base: Vec<Route4> = Vec::new();
    let mut churn: Vec<Route4> = Vec::new();
    let mut seen = HashSet::new();
    let mut next_nh = 1u32;
    // Cluster everything in 10.0.0.0/14 so that routes nest and groups get churned.
    while base.len() + churn.len() < 3000 {
        let len = match rng.below(10) {
            0 => 12 + rng.below(6) as u8,
            1..=4 => 18 + rng.below(7) as u8,
            _ => 25 + rng.below(8) as u8,
        };
        let addr = (0x0a00_0000 | (rng.next_u64() as u32 & 0x0003_ffff)) & mask(len);
        if !seen.insert((addr, len)) {
            continue;
        }
        let r = Route4 {
            addr: addr.into(),
            len,
            next_hop: next_nh,
        };
        next_nh += 2;
        if rng.below(3) == 0 {
            base.push(r);
        } else {
            churn.push(r);
        }
    }
    let mut base_ref = Reference::new();
    for r in &base {
        base_ref.add(r.addr.into(), r.len, r.next_hop);
    }
    let keys: Vec<u32> = random_keys_in(&churn, 2000, 7)
        .into_iter()
        .chain(random_keys_in(&base, 500, 8))
        .map(u32::from)
        .chain((0..500).map(|_| 0x0a00_0000 | (rng.next_u64() as u32 & 0x0003_ffff)))
        .collect();
    let allowed: Vec<HashSet<Option<u32>>> = keys
        .iter()
        .map(|&k| {
            let b = base_ref.lookup_with_len(k);
            let mut set = HashSet::new();
            set.insert(b.map(|x| x.1));
            for c in &churn {
                if c.len > b.map_or(0, |x| x.0) || (b.is_none()) {
                    let m = mask(c.len);
                    if k & m == u32::from(c.addr) {
                        set.insert(Some(c.next_hop));
                        set.insert(Some(c.next_hop + 1));
                    }
                }
            }
            set
        })
        .collect();
    let lpm = Arc::new(Lpm4::new(Lpm4Config {
        max_groups: 1024,
        ..Default::default()
    }));
    for r in &base {
        lpm.add(r.addr, r.len, r.next_hop).unwrap();
    }
    let keys = Arc::new(keys);
    let allowed = Arc::new(allowed);
    let stop = Arc::new(AtomicBool::new(false));
    let checked = Arc::new(AtomicU64::new(0));
    let readers: Vec<_> = (0..2)
        .map(|t| {
            let (lpm, keys, allowed, stop, checked) = (
                lpm.clone(),
                keys.clone(),
                allowed.clone(),
                stop.clone(),
                checked.clone(),
            );
            std::thread::spawn(move || -> Result<(), String> {
                let mut out = vec![None; keys.len()];
                let mut round = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    match (round + t) % 6 {
                        0 => {
                            for (i, o) in out.iter_mut().enumerate() {
                                *o = lpm.lookup(keys[i]);
                            }
                        }
                        1 => lpm.lookup_bulk(&keys, &mut out),
                        3 => {
                            // every read path, while updates run (the setting is the
                            // table's, so other readers switch too)
                            lpm.set_read_path(match round / 6 % 4 {
                                0 => ReadPath::Compressed,
                                1 => ReadPath::Dir24,
                                2 => ReadPath::Lines,
                                _ => ReadPath::Auto,
                            });
                            let mut raw = vec![0u32; keys.len()];
                            lpm.lookup_vector_raw(&keys, &mut raw, 16);
                            for (o, r) in out.iter_mut().zip(raw) {
                                *o = (r != MISS).then_some(r);
                            }
                        }
                        4 => lpm.lookup_vector(&keys, &mut out),
                        5 => {
                            let mut raw = vec![0u32; keys.len()];
                            lpm.lookup_vector_pipelined(&keys, &mut raw, 8);
                            for (o, r) in out.iter_mut().zip(raw) {
                                *o = (r != MISS).then_some(r);
                            }
                        }
                        _ => lpm.lookup_vector_batched(&keys, &mut out, 32),
                    }
                    for (i, o) in out.iter().enumerate() {
                        if !allowed[i].contains(o) {
                            return Err(format!(
                                "key {} got {o:?}, allowed {:?}",
                                Ipv4Addr::from(keys[i]),
                                allowed[i]
                            ));
                        }
                    }
                    checked.fetch_add(out.len() as u64, Ordering::Relaxed);
                    round += 1;
                }
                Ok(())
            })
        })
        .collect();
    // Writer: several passes of add all / replace some / delete all, in shuffled order.
    let mut order: Vec<usize> = (0..churn.len()).collect();
    let mut installed: HashMap<usize, u32> = HashMap::new();
    for pass in 0..6 {
        for i in (1..order.len()).rev() {
            order.swap(i, rng.below(i as u64 + 1) as usize);
        }
        for &i in &order {
            let c = &churn[i];
            let nh = c.next_hop + (pass & 1);
            lpm.add(c.addr, c.len, nh).unwrap();
            installed.insert(i, nh);
        }
        for &i in order.iter().step_by(3) {
            let c = &churn[i];
            let nh = c.next_hop + 1 - (pass & 1);
            lpm.add(c.addr, c.len, nh).unwrap();
            installed.insert(i, nh);
        }
        for &i in order.iter().rev() {
            let c = &churn[i];
            assert_eq!(lpm.delete(c.addr, c.len), Ok(installed[&i]));
        }
        installed.clear();
    }
    stop.store(true, Ordering::Relaxed);
    for r in readers {
        r.join().unwrap().unwrap();
    }
    // After the churn only the base table remains.
    for &k in keys.iter() {
        assert_eq!(lpm.lookup(k), base_ref.lookup(k));
    }
    assert!(checked.load(Ordering::Relaxed) > 0);
    eprintln!(
        "concurrent: {} lookups checked during {} churn updates",
        checked.load(Ordering::Relaxed),
        6 * (churn.len() * 2 + churn.len() / 3)
    );
}

/// With `huge_pages: false` the table answers the same as with the default (huge pages
/// advised), and the advice is only reported as taken when it was asked for.
#[test]
fn huge_pages_on_and_off_answer_alike() {
    let routes = generate_ipv4(20_000, 5);
    let on = Lpm4::from_routes(Lpm4Config::default(), &routes).unwrap();
    let off = Lpm4::from_routes(
        Lpm4Config {
            huge_pages: false,
            ..Default::default()
        },
        &routes,
    )
    .unwrap();
    assert!(!off.huge_pages_advised());
    let keys: Vec<u32> = random_ipv4_keys(20_000, 6)
        .into_iter()
        .map(u32::from)
        .collect();
    let mut a = vec![0u32; keys.len()];
    let mut b = vec![1u32; keys.len()];
    on.lookup_vector_pipelined(&keys, &mut a, 16);
    off.lookup_vector_pipelined(&keys, &mut b, 16);
    assert_eq!(a, b);
    let thp =
        std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").unwrap_or_default();
    if thp.contains("[madvise]") || thp.contains("[always]") {
        assert!(on.huge_pages_advised());
    }
}
