//! Property tests of `pktvec_lookup::hash` against `hashbrown::HashMap`: random operation
//! sequences on all key types, bulk and single lookups agreeing, full tables, keys whose
//! hashes collide on purpose, and name lookups by bytes (`lookup_bytes*`, `PrefixHasher`,
//! `lookup_hashed_by`) against the same reference.

use hashbrown::HashMap;
use pktvec_lookup::hash::{
    hash_bytes, hash_u64, HashError, HashKey, HashTable, Ipv4FiveTuple, Ipv6FiveTuple, MacTable,
    Name, NameTable, PrefixHasher, MAX_SUB_BATCH,
};
use pktvec_packet::wire::MacAddr;
use proptest::prelude::*;
use std::net::{Ipv4Addr, Ipv6Addr};

/// One step of a random operation sequence; keys are indices into a small key universe so
/// that sequences hit present keys often.
#[derive(Clone, Debug)]
enum Op {
    Insert(usize, u32),
    Update(usize, u32),
    Remove(usize),
    Lookup(usize),
    Bulk(Vec<usize>, usize),
}

fn op(universe: usize) -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..universe, any::<u32>()).prop_map(|(k, v)| Op::Insert(k, v)),
        1 => (0..universe, any::<u32>()).prop_map(|(k, v)| Op::Update(k, v)),
        2 => (0..universe).prop_map(Op::Remove),
        2 => (0..universe).prop_map(Op::Lookup),
        1 => (prop::collection::vec(0..universe, 0..300), 1..300usize)
            .prop_map(|(ks, b)| Op::Bulk(ks, b)),
    ]
}

/// Runs `ops` on a table of `capacity` and on a hashbrown reference, comparing every
/// answer, and the table's invariants at the end.
fn run<K: HashKey + std::hash::Hash + std::fmt::Debug, const N: usize>(
    keys: &[K],
    capacity: usize,
    seed: u64,
    ops: &[Op],
) -> Result<(), TestCaseError> {
    let mut t: HashTable<K, u32, N> = HashTable::with_seed(capacity, seed).unwrap();
    let mut r: HashMap<K, u32> = HashMap::new();
    for o in ops {
        match o {
            Op::Insert(k, v) => {
                let k = keys[*k];
                let res = t.insert(k, *v);
                match res {
                    Ok(old) => prop_assert_eq!(old, r.insert(k, *v)),
                    Err(HashError::Full { capacity: c }) => {
                        prop_assert_eq!(c, capacity);
                        prop_assert!(!r.contains_key(&k) && r.len() == capacity);
                    }
                    Err(HashError::NoSlot) => prop_assert!(!r.contains_key(&k)),
                    Err(e) => prop_assert!(false, "unexpected {e}"),
                }
            }
            Op::Update(k, v) => {
                let k = keys[*k];
                let want = r.get_mut(&k).map(|x| std::mem::replace(x, *v));
                prop_assert_eq!(t.update(&k, *v), want);
            }
            Op::Remove(k) => prop_assert_eq!(t.remove(&keys[*k]), r.remove(&keys[*k])),
            Op::Lookup(k) => {
                let k = keys[*k];
                prop_assert_eq!(t.lookup(&k), r.get(&k).copied());
                let h = t.hash(&k);
                t.prefetch(h);
                prop_assert_eq!(t.lookup_hashed(&k, h), r.get(&k).copied());
            }
            Op::Bulk(ks, b) => {
                let ks: Vec<K> = ks.iter().map(|&i| keys[i]).collect();
                let want: Vec<Option<u32>> = ks.iter().map(|k| r.get(k).copied()).collect();
                let hits = want.iter().filter(|v| v.is_some()).count();
                let mut out = vec![Some(0xdead); ks.len()];
                prop_assert_eq!(t.lookup_bulk_sub(&ks, &mut out, *b), hits);
                prop_assert_eq!(&out, &want);
                out.fill(Some(0xdead));
                prop_assert_eq!(t.lookup_bulk(&ks, &mut out), hits);
                prop_assert_eq!(&out, &want);
                out.fill(Some(0xdead));
                prop_assert_eq!(t.lookup_bulk_no_prefetch(&ks, &mut out), hits);
                prop_assert_eq!(&out, &want);
            }
        }
        prop_assert_eq!(t.len(), r.len());
    }
    t.check_invariants().map_err(TestCaseError::fail)?;
    let mut all: Vec<(K, u32)> = t.iter().collect();
    prop_assert_eq!(all.len(), r.len());
    all.retain(|(k, v)| r.get(k) != Some(v));
    prop_assert!(all.is_empty(), "iter disagrees: {:?}", all);
    Ok(())
}

fn mac(i: u64) -> MacAddr {
    MacAddr::new(hash_u64(i, 0x77).to_le_bytes()[..6].try_into().unwrap())
}

fn macs(n: usize) -> Vec<MacAddr> {
    (0..n as u64).map(mac).collect()
}

fn flows4(n: usize) -> Vec<Ipv4FiveTuple> {
    (0..n as u32)
        .map(|i| {
            Ipv4FiveTuple::new(
                Ipv4Addr::from(0x0a00_0000 | (i >> 3)),
                Ipv4Addr::new(192, 168, 1, (i & 7) as u8),
                1024 + (i % 5) as u16,
                80,
                if i % 2 == 0 { 6 } else { 17 },
            )
        })
        .collect()
}

fn flows6(n: usize) -> Vec<Ipv6FiveTuple> {
    (0..n as u128)
        .map(|i| {
            Ipv6FiveTuple::new(
                Ipv6Addr::from(0x2001_0db8_u128 << 96 | i),
                Ipv6Addr::LOCALHOST,
                (i % 7) as u16,
                443,
                6,
            )
        })
        .collect()
}

fn names(n: usize) -> Vec<Name> {
    (0..n)
        .map(|i| {
            // Lengths 0..=64, sharing long prefixes as NDN names do.
            let s = format!("/ndn/edu/ucla/cs/{i}/{}", "x".repeat(i % 48));
            let b = s.as_bytes();
            Name::new(&b[..b.len().min(Name::MAX_LEN)]).unwrap()
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn mac_ops_match_reference(ops in prop::collection::vec(op(120), 1..400),
                               cap in 1usize..100, seed in any::<u64>()) {
        run::<MacAddr, 5>(&macs(120), cap, seed, &ops)?;
    }

    #[test]
    fn mac_with_two_slots_matches_reference(ops in prop::collection::vec(op(120), 1..400),
                                            cap in 1usize..100, seed in any::<u64>()) {
        run::<[u8; 6], 2>(&macs(120).iter().map(|m| m.0).collect::<Vec<_>>(), cap, seed, &ops)?;
    }

    #[test]
    fn flow4_ops_match_reference(ops in prop::collection::vec(op(120), 1..400),
                                 cap in 1usize..100, seed in any::<u64>()) {
        run::<Ipv4FiveTuple, 3>(&flows4(120), cap, seed, &ops)?;
    }

    #[test]
    fn flow6_ops_match_reference(ops in prop::collection::vec(op(120), 1..400),
                                 cap in 1usize..100, seed in any::<u64>()) {
        run::<Ipv6FiveTuple, 4>(&flows6(120), cap, seed, &ops)?;
    }

    #[test]
    fn name_ops_match_reference(ops in prop::collection::vec(op(120), 1..400),
                                cap in 1usize..100, seed in any::<u64>()) {
        run::<Name, 4>(&names(120), cap, seed, &ops)?;
    }

    /// Names looked up by their bytes (whole-name hash, or prefix hashes from one
    /// `PrefixHasher` pass over a longer buffer) answer like the reference after random
    /// inserts and removals; so does `lookup_hashed_by`; byte strings that are no stored
    /// name (prefixes, extensions, longer than 64 bytes) are misses.
    #[test]
    fn name_bytes_lookups_match_reference(ops in prop::collection::vec(op(120), 1..300),
                                          cap in 1usize..100, seed in any::<u64>(),
                                          tail in prop::collection::vec(any::<u8>(), 0..80)) {
        let keys = names(120);
        let mut t: NameTable = HashTable::with_seed(cap, seed).unwrap();
        let mut r: HashMap<Vec<u8>, u32> = HashMap::new();
        for o in &ops {
            match o {
                Op::Insert(k, v) | Op::Update(k, v) => {
                    if t.insert(keys[*k], *v).is_ok() {
                        r.insert(keys[*k].as_bytes().to_vec(), *v);
                    }
                }
                Op::Remove(k) => {
                    t.remove(&keys[*k]);
                    r.remove(keys[*k].as_bytes());
                }
                Op::Lookup(_) | Op::Bulk(..) => {}
            }
        }
        for k in &keys {
            let b = k.as_bytes();
            let want = r.get(b).copied();
            prop_assert_eq!(t.lookup_bytes(b), want);
            let h = t.hash_name_bytes(b);
            prop_assert_eq!(h, t.hash(k));
            t.prefetch_bucket_lines(h);
            t.prefetch_secondary(h);
            prop_assert_eq!(t.lookup_bytes_hashed(b, h), want);
            prop_assert_eq!(t.lookup_hashed_by(h, |x| x == k), want);
            // The key inside a longer buffer: every prefix by one hasher pass.
            let mut buf = b.to_vec();
            buf.extend_from_slice(&tail);
            let mut ph = t.prefix_hasher(&buf);
            for end in 0..=buf.len() {
                let h = ph.prefix(end);
                prop_assert_eq!(h, hash_bytes(&buf[..end], seed));
                prop_assert_eq!(
                    t.lookup_bytes_hashed(&buf[..end], pktvec_lookup::hash::Hashed(h)),
                    r.get(&buf[..end]).copied()
                );
            }
        }
        let long = [b'x'; 65];
        prop_assert_eq!(t.lookup_bytes(&long), None);
    }

    /// `PrefixHasher` equals `hash_bytes` for any order of ends (growing, shrinking,
    /// past the end).
    #[test]
    fn prefix_hasher_equals_hash_bytes(bytes in prop::collection::vec(any::<u8>(), 0..100),
                                       ends in prop::collection::vec(0usize..120, 0..20),
                                       seed in any::<u64>()) {
        let mut ph = PrefixHasher::new(&bytes, seed);
        for &e in &ends {
            prop_assert_eq!(ph.prefix(e), hash_bytes(&bytes[..e.min(bytes.len())], seed));
        }
    }

    #[test]
    fn one_slot_buckets_match_reference(ops in prop::collection::vec(op(60), 1..300),
                                        cap in 1usize..50, seed in any::<u64>()) {
        run::<u64, 1>(&(0..60u64).collect::<Vec<_>>(), cap, seed, &ops)?;
    }

    #[test]
    fn bulk_agrees_with_single_on_loaded_tables(n in 1usize..3000, b in 1usize..400,
                                                 seed in any::<u64>()) {
        let keys = macs(2 * n);
        let mut t: MacTable = HashTable::with_seed(n, seed).unwrap();
        for (i, k) in keys[..n].iter().enumerate() {
            t.insert(*k, i as u32).unwrap();
        }
        // Half hits, half misses, shuffled by a multiplicative step.
        let probe: Vec<MacAddr> = (0..2 * n).map(|i| keys[(i * 7919) % (2 * n)]).collect();
        let mut bulk = vec![None; probe.len()];
        let hits = t.lookup_bulk_sub(&probe, &mut bulk, b);
        let single: Vec<Option<u32>> = probe.iter().map(|k| t.lookup(k)).collect();
        prop_assert_eq!(&bulk, &single);
        prop_assert_eq!(hits, n);
    }
}

/// Fills tables of many sizes exactly to capacity: every insert succeeds, the next new key
/// fails with `Full`, updates of present keys still work, and every answer stays right.
#[test]
fn fill_to_capacity_then_full() {
    for cap in (1..=300).chain([1000, 4097, 100_000]) {
        let keys = macs(cap + 10);
        let mut t: MacTable = HashTable::new(cap).unwrap();
        for (i, k) in keys[..cap].iter().enumerate() {
            assert_eq!(t.insert(*k, i as u32), Ok(None), "cap {cap} key {i}");
        }
        for k in &keys[cap..] {
            assert_eq!(t.insert(*k, 0), Err(HashError::Full { capacity: cap }));
        }
        assert_eq!(t.len(), cap);
        assert_eq!(t.insert(keys[0], 77), Ok(Some(0)));
        let mut out = vec![None; keys.len()];
        assert_eq!(t.lookup_bulk(&keys, &mut out), cap);
        for (i, o) in out.iter().enumerate() {
            let want = match i {
                0 => Some(77),
                i if i < cap => Some(i as u32),
                _ => None,
            };
            assert_eq!(*o, want, "cap {cap} key {i}");
        }
        t.check_invariants().unwrap();
        // Room again after a removal.
        assert_eq!(
            t.remove(&keys[cap / 2]),
            Some(if cap / 2 == 0 { 77 } else { (cap / 2) as u32 })
        );
        assert_eq!(t.insert(keys[cap], 5), Ok(None));
        assert_eq!(t.lookup(&keys[cap]), Some(5));
        t.check_invariants().unwrap();
    }
}

/// Fills tables of each key type to capacity, with small bucket sizes too.
#[test]
fn all_key_types_fill_to_capacity() {
    fn fill<K: HashKey + std::fmt::Debug, const N: usize>(keys: &[K]) {
        let cap = keys.len() - 1;
        let mut t: HashTable<K, u32, N> = HashTable::with_seed(cap, 3).unwrap();
        for (i, k) in keys[..cap].iter().enumerate() {
            t.insert(*k, i as u32).unwrap();
        }
        assert!(matches!(
            t.insert(keys[cap], 0),
            Err(HashError::Full { .. })
        ));
        let mut out = vec![None; keys.len()];
        assert_eq!(t.lookup_bulk(keys, &mut out), cap);
        assert_eq!(out[cap], None);
        t.check_invariants().unwrap();
    }
    fill::<Ipv4FiveTuple, 3>(&flows4(20_001));
    fill::<Ipv6FiveTuple, 4>(&flows6(20_001));
    fill::<Name, 4>(&names(20_001));
    fill::<MacAddr, 2>(&macs(20_001));
    fill::<u64, 1>(&(0..20_001u64).collect::<Vec<_>>());
}

/// A key whose hash is whatever the test says: the adversary's best case.
#[derive(Clone, Copy, PartialEq, Eq, Default, Debug, Hash)]
struct Evil {
    id: u32,
    hash: u64,
}

impl HashKey for Evil {
    fn hash_with(&self, _seed: u64) -> u64 {
        self.hash
    }
}

/// Every key has the same hash (same tag, same two buckets): the table holds exactly two
/// buckets' worth, then inserts fail with `NoSlot` — promptly, leaving it unchanged.
#[test]
fn identical_hashes_fill_two_buckets_then_no_slot() {
    let mut t: HashTable<Evil, u32, 4> = HashTable::new(1000).unwrap();
    let keys: Vec<Evil> = (0..100)
        .map(|id| Evil {
            id,
            hash: 0x1234_5678_9abc_def0,
        })
        .collect();
    for (i, k) in keys.iter().enumerate() {
        let r = t.insert(*k, i as u32);
        if i < 8 {
            assert_eq!(r, Ok(None));
        } else {
            assert_eq!(r, Err(HashError::NoSlot));
        }
    }
    assert_eq!(t.len(), 8);
    t.check_invariants().unwrap();
    let mut out = vec![None; keys.len()];
    assert_eq!(t.lookup_bulk_sub(&keys, &mut out, 7), 8);
    for (i, o) in out.iter().enumerate() {
        assert_eq!(*o, (i < 8).then_some(i as u32));
        assert_eq!(t.lookup(&keys[i]), *o);
    }
    // Removing one frees one slot for exactly one more.
    assert_eq!(t.remove(&keys[3]), Some(3));
    assert_eq!(t.insert(keys[50], 50), Ok(None));
    assert_eq!(t.insert(keys[51], 51), Err(HashError::NoSlot));
    t.check_invariants().unwrap();
}

/// All keys share one tag (their low 16 hash bits) but spread over buckets: every search
/// must fall back on comparing keys, and the answers stay right at full load.
#[test]
fn colliding_tags_still_answer_right() {
    let n = 20_000;
    let keys: Vec<Evil> = (0..n as u32)
        .map(|id| Evil {
            id,
            hash: (hash_u64(u64::from(id), 9) & !0xffff) | 0x00ab,
        })
        .collect();
    let mut t: HashTable<Evil, u32, 4> = HashTable::new(n).unwrap();
    let mut r = HashMap::new();
    for (i, k) in keys.iter().enumerate() {
        t.insert(*k, i as u32).unwrap();
        r.insert(*k, i as u32);
    }
    // Tag-colliding misses: same tags, unknown ids.
    let probe: Vec<Evil> = keys
        .iter()
        .map(|k| Evil {
            id: k.id + n as u32,
            ..*k
        })
        .chain(keys.iter().copied())
        .collect();
    let mut out = vec![None; probe.len()];
    assert_eq!(t.lookup_bulk(&probe, &mut out), n);
    for (k, o) in probe.iter().zip(&out) {
        assert_eq!(*o, r.get(k).copied());
    }
    for k in keys.iter().step_by(3) {
        assert_eq!(t.remove(k), r.remove(k));
    }
    for k in &probe {
        assert_eq!(t.lookup(k), r.get(k).copied());
    }
    t.check_invariants().unwrap();
}

/// Only 16 distinct hashes among many keys: inserts beyond what their 32 buckets hold fail
/// with `NoSlot` (bounded search, no endless loop), the rest stay findable.
#[test]
fn few_distinct_hashes_bounded_failure() {
    let keys: Vec<Evil> = (0..2000u32)
        .map(|id| Evil {
            id,
            hash: hash_u64(u64::from(id % 16), 1),
        })
        .collect();
    let mut t: HashTable<Evil, u32, 4> = HashTable::new(2000).unwrap();
    let mut r = HashMap::new();
    let mut no_slot = 0;
    for (i, k) in keys.iter().enumerate() {
        match t.insert(*k, i as u32) {
            Ok(None) => {
                r.insert(*k, i as u32);
            }
            Err(HashError::NoSlot) => no_slot += 1,
            other => panic!("{other:?}"),
        }
    }
    assert!(
        t.len() <= 16 * 8 && no_slot >= 2000 - 128,
        "len {}",
        t.len()
    );
    for k in &keys {
        assert_eq!(t.lookup(k), r.get(k).copied());
    }
    t.check_invariants().unwrap();
}

/// Two tables with different seeds place the same keys differently but answer alike.
#[test]
fn seeds_change_placement_not_answers() {
    let keys = macs(5000);
    let mut a: MacTable = HashTable::with_seed(5000, 1).unwrap();
    let mut b: MacTable = HashTable::with_seed(5000, 2).unwrap();
    for (i, k) in keys.iter().enumerate() {
        a.insert(*k, i as u32).unwrap();
        b.insert(*k, i as u32).unwrap();
    }
    assert_ne!(a.hash(&keys[0]), b.hash(&keys[0]));
    let ia: Vec<_> = a.iter().map(|(k, _)| k).collect();
    let ib: Vec<_> = b.iter().map(|(k, _)| k).collect();
    assert_ne!(ia, ib);
    for k in &keys {
        assert_eq!(a.lookup(k), b.lookup(k));
    }
}

/// The largest sub-batch and larger requests give the same answers.
#[test]
fn sub_batch_sizes_are_clamped() {
    let keys = macs(1000);
    let mut t: MacTable = HashTable::new(600).unwrap();
    for (i, k) in keys[..600].iter().enumerate() {
        t.insert(*k, i as u32).unwrap();
    }
    let mut want = vec![None; 1000];
    t.lookup_bulk_no_prefetch(&keys, &mut want);
    for b in [0, 1, 2, 31, MAX_SUB_BATCH, MAX_SUB_BATCH + 1, usize::MAX] {
        let mut out = vec![None; 1000];
        assert_eq!(t.lookup_bulk_sub(&keys, &mut out, b), 600);
        assert_eq!(out, want, "b {b}");
    }
}

/// Churn at full load: delete and re-insert many times; invariants hold throughout.
#[test]
fn churn_at_full_load() {
    let n = 20_000;
    let keys = macs(2 * n);
    let mut t: MacTable = HashTable::new(n).unwrap();
    let mut r = HashMap::new();
    for (i, k) in keys[..n].iter().enumerate() {
        t.insert(*k, i as u32).unwrap();
        r.insert(*k, i as u32);
    }
    let mut next = n;
    for round in 0..5 {
        for i in (round..n).step_by(5) {
            let victim = keys[(i * 31 + round) % (2 * n)];
            assert_eq!(t.remove(&victim), r.remove(&victim));
            let k = keys[next % (2 * n)];
            next += 1;
            if r.len() < n || r.contains_key(&k) {
                assert_eq!(t.insert(k, next as u32), Ok(r.insert(k, next as u32)));
            }
        }
        t.check_invariants().unwrap();
    }
    let mut out = vec![None; keys.len()];
    t.lookup_bulk(&keys, &mut out);
    for (k, o) in keys.iter().zip(&out) {
        assert_eq!(*o, r.get(k).copied());
    }
}

/// Inserts `Evil` keys whose hashes come from `pool` distinct values into a table with
/// `N` slots per bucket (failed inserts skipped), then looks up the inserted keys and as
/// many absent ones with every search path: bulk (sub-batch `b`), single, by `eq`; all
/// must agree with the reference map.
fn colliding_tags_agree<const N: usize>(seed: u64, n: usize, pool: u64, b: usize) {
    let mut t: HashTable<Evil, u32, N> = HashTable::with_seed(n, seed).unwrap();
    let mut reference = HashMap::new();
    // Few distinct hashes: many keys share a tag (and both buckets), so a search meets
    // tag matches whose key differs, and many keys live in their secondary bucket.
    let key = |id: u32| Evil {
        id,
        hash: hash_u64(u64::from(id) % pool, seed),
    };
    for id in 0..n as u32 {
        if t.insert(key(id), id).is_ok() {
            reference.insert(key(id), id);
        }
    }
    t.check_invariants().unwrap();
    let probe: Vec<Evil> = (0..2 * n as u32)
        .map(|i| key((i * 7919) % (2 * n as u32)))
        .collect();
    let want: Vec<Option<u32>> = probe.iter().map(|k| reference.get(k).copied()).collect();
    let mut out = vec![None; probe.len()];
    let hits = t.lookup_bulk_sub(&probe, &mut out, b);
    assert_eq!(out, want);
    assert_eq!(hits, want.iter().flatten().count());
    for (k, w) in probe.iter().zip(&want) {
        assert_eq!(t.lookup(k), *w);
        assert_eq!(t.lookup_hashed_by(t.hash(k), |x| x == k), *w);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// The bucket search (vector tag compare for up to eight slots, one compare per slot
    /// beyond) gives the reference's answers for every bucket width, with many shared
    /// tags, misses and displaced keys.
    #[test]
    fn colliding_tags_agree_for_every_bucket_width(seed in any::<u64>(), n in 1usize..400,
                                                   pool in 1u64..64, b in 1usize..300) {
        colliding_tags_agree::<1>(seed, n, pool, b);
        colliding_tags_agree::<2>(seed, n, pool, b);
        colliding_tags_agree::<3>(seed, n, pool, b);
        colliding_tags_agree::<4>(seed, n, pool, b);
        colliding_tags_agree::<5>(seed, n, pool, b);
        colliding_tags_agree::<7>(seed, n, pool, b);
        colliding_tags_agree::<8>(seed, n, pool, b);
        colliding_tags_agree::<9>(seed, n, pool, b);
        colliding_tags_agree::<16>(seed, n, pool, b);
    }
}
