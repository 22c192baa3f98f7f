//! Every strategy keeps shared state exact under concurrent workers; sections that touch
//! stripes they do not hold are caught; RTM is a clear error where it is absent.

use pktvec_state::rtm::Rtm;
use pktvec_state::{Domain, FlowTable, Strategy, StripedArray, SyncConfig, SyncError, TableConfig};
use proptest::prelude::*;
use std::collections::HashMap;
use std::sync::Arc;

fn hash(k: u64) -> u64 {
    let mut x = k.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

fn domain(strategy: Strategy, workers: usize, stripes: usize) -> Arc<Domain> {
    Domain::new(SyncConfig {
        strategy,
        workers,
        stripes,
        ..SyncConfig::default()
    })
    .unwrap()
}

/// Two workers count packets of 500 flows in one table: every count is exact.
#[test]
fn concurrent_counts_are_exact_under_every_strategy() {
    for s in Strategy::available() {
        let workers = 2;
        let d = domain(s, workers, 64);
        let t = Arc::new(FlowTable::<u64, u64>::new(
            &d,
            "counts",
            TableConfig {
                capacity: 2048,
                ..TableConfig::default()
            },
        ));
        let flows = 500u64;
        let rounds = 200u64;
        std::thread::scope(|sc| {
            for w in 0..workers {
                let (d, t) = (d.clone(), t.clone());
                sc.spawn(move || {
                    let (mut sync, mut tw) = (d.worker(w), t.worker(w));
                    for r in 0..rounds {
                        for f in 0..flows {
                            let h = hash(f);
                            // flow affinity: each worker processes only the flows it owns,
                            // the others process every flow
                            if s == Strategy::Affinity && d.owner(t.stripe(h)) != w {
                                continue;
                            }
                            sync.section(t.stripe(h), |sec| {
                                let (_, v, _) = t.entry(sec, &mut tw, f, h, r).unwrap();
                                *v += 1;
                            });
                        }
                    }
                    assert_eq!(sync.stats().sections, sync.stats().sections);
                });
            }
        });
        let mut sync = d.worker(0);
        let mut total = 0;
        for f in 0..flows {
            let h = hash(f);
            let st = t.stripe(h);
            // read back on its owner under affinity
            let mut reader = d.worker(d.owner(st));
            let v = match s {
                Strategy::Affinity => reader.section(st, |sec| t.find(sec, &f, h).map(|(_, v)| *v)),
                _ => sync.section(st, |sec| t.find(sec, &f, h).map(|(_, v)| *v)),
            };
            let want = match s {
                Strategy::Affinity => rounds,
                _ => rounds * workers as u64,
            };
            assert_eq!(v, Some(want), "{s}: flow {f}");
            total += v.unwrap();
        }
        assert!(total > 0);
    }
}

/// Sections over two stripes keep a sum invariant (transfers between two records of
/// different stripes) under the strategies that can hold two stripes from any worker.
#[test]
fn two_stripe_sections_are_atomic() {
    for s in Strategy::available()
        .into_iter()
        .filter(|&s| s != Strategy::Affinity)
    {
        let d = domain(s, 2, 16);
        let a = Arc::new(StripedArray::<i64>::new(&d, "accounts", 16));
        std::thread::scope(|sc| {
            for w in 0..2 {
                let (d, a) = (d.clone(), a.clone());
                sc.spawn(move || {
                    let mut sync = d.worker(w);
                    for i in 0..20_000usize {
                        let (x, y) = ((i * 7 + w) % 16, (i * 11 + 3) % 16);
                        sync.section_multi(&[a.stripe(x), a.stripe(y)], |sec| {
                            *a.get_mut(sec, x) -= 5;
                            *a.get_mut(sec, y) += 5;
                        });
                    }
                });
            }
        });
        let mut sync = d.worker(0);
        let sum: i64 = (0..16)
            .map(|i| sync.section(a.stripe(i), |sec| *a.get(sec, i)))
            .sum();
        assert_eq!(sum, 0, "{s}");
    }
}

/// Fine locks: touching a stripe the section does not hold panics (it would race).
#[test]
fn fine_section_outside_its_stripe_panics() {
    let d = domain(Strategy::Fine, 1, 16);
    let a = StripedArray::<u32>::new(&d, "a", 16);
    let mut sync = d.worker(0);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        sync.section(a.stripe(1), |sec| *a.get(sec, 2))
    }));
    let msg = r.unwrap_err();
    let msg = msg.downcast_ref::<String>().unwrap();
    assert!(msg.contains("touched stripe 2"), "{msg}");
}

/// Flow affinity: a worker touching another worker's stripe is caught.
#[test]
fn affinity_catches_state_of_another_worker() {
    let d = domain(Strategy::Affinity, 2, 16);
    let mut w0 = d.worker(0);
    // stripe 1 belongs to worker 1
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| w0.section(1, |_| ())));
    assert!(r.is_err());
    // and inside a section of its own, an access to worker 1's stripe
    let a = StripedArray::<u32>::new(&d, "a", 16);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        w0.section(0, |sec| *a.get(sec, 3))
    }));
    assert!(r.is_err());
    assert_eq!(w0.section(2, |sec| *a.get(sec, 4)), 0); // stripes 2 and 4 are worker 0's
}

/// Asking for RTM where it is absent is an error naming the CPU; the other strategies run.
#[test]
fn rtm_is_detected_or_refused_clearly() {
    match Rtm::detect() {
        Ok(_) => {
            for s in [Strategy::Rtm, Strategy::RtmCoarse] {
                let d = domain(s, 1, 16);
                let mut w = d.worker(0);
                let mut x = 0;
                for _ in 0..1000 {
                    w.section(3, |_| x += 1);
                }
                assert_eq!(x, 1000);
                let st = w.stats();
                assert_eq!(st.commits + st.fallbacks, 1000);
            }
        }
        Err(why) => {
            for s in [Strategy::Rtm, Strategy::RtmCoarse] {
                let e = Domain::new(SyncConfig {
                    strategy: s,
                    ..SyncConfig::default()
                })
                .unwrap_err();
                assert!(matches!(e, SyncError::Rtm(..)));
                let msg = e.to_string();
                assert!(msg.starts_with(&format!("--sync {s}: ")), "{msg}");
                assert!(msg.contains("RTM"), "{msg}");
                assert_eq!(msg, format!("--sync {s}: {why}"));
            }
        }
    }
}

/// Expiry while two workers insert: no record is lost or counted twice.
#[test]
fn expiry_while_inserting_loses_no_record() {
    for s in Strategy::available() {
        let d = domain(s, 2, 32);
        let t = Arc::new(FlowTable::<u64, u32>::new(
            &d,
            "flows",
            TableConfig {
                capacity: 4096,
                ..TableConfig::default()
            },
        ));
        let done = Arc::new(std::sync::Barrier::new(2));
        let stacks: Vec<_> = std::thread::scope(|sc| {
            let hs: Vec<_> = (0..2)
                .map(|w| {
                    let (d, t, done) = (d.clone(), t.clone(), done.clone());
                    sc.spawn(move || {
                        let (mut sync, mut tw) = (d.worker(w), t.worker(w));
                        for now in 0..20_000u64 {
                            let f = now % 3000 + 1;
                            let h = hash(f);
                            if s == Strategy::Affinity && d.owner(t.stripe(h)) != w {
                                continue;
                            }
                            sync.section(t.stripe(h), |sec| {
                                let _ = t.entry(sec, &mut tw, f, h, now);
                            });
                            if now % 64 == 0 {
                                t.expire(&mut sync, &mut tw, now, 500, 16, |_, _, _| {});
                            }
                        }
                        // once both stopped inserting, everything is idle: sweep all of
                        // this worker's buckets
                        done.wait();
                        t.expire(&mut sync, &mut tw, u64::MAX, 1, usize::MAX, |_, _, _| {});
                        (tw.free(), tw.inserted, tw.expired, tw.removed)
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let free: usize = stacks.iter().map(|x| x.0).sum();
        let inserted: u64 = stacks.iter().map(|x| x.1).sum();
        let expired: u64 = stacks.iter().map(|x| x.2).sum();
        assert_eq!(free, 4096, "{s}: every record back");
        assert_eq!(inserted, expired, "{s}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    /// One worker's inserts, lookups, removals and expiry against a HashMap.
    #[test]
    fn table_matches_a_map(ops in prop::collection::vec((0u8..4, 0u64..200, 0u64..50), 1..400)) {
        let d = domain(Strategy::Fine, 1, 16);
        let cap = 128;
        let t = FlowTable::<u64, u64>::new(&d, "t", TableConfig { capacity: cap, overprovision: 2.0 });
        let (mut sync, mut tw) = (d.worker(0), t.worker(0));
        let mut model: HashMap<u64, (u64, u64)> = HashMap::new(); // key -> (value, last)
        let mut now = 0u64;
        for (op, k, dt) in ops {
            now += dt;
            let h = hash(k);
            match op {
                0 => {
                    let r = sync.section(t.stripe(h), |sec| t.entry(sec, &mut tw, k, h, now).map(|(_, v, new)| { *v += 1; (*v, new) }));
                    match r {
                        Ok((v, new)) => {
                            prop_assert_eq!(new, !model.contains_key(&k));
                            let e = model.entry(k).or_insert((0, now));
                            e.0 += 1;
                            e.1 = now;
                            prop_assert_eq!(v, e.0);
                        }
                        Err(_) => prop_assert!(!model.contains_key(&k)),
                    }
                }
                1 => {
                    let r = sync.section(t.stripe(h), |sec| t.find(sec, &k, h).map(|(_, v)| *v));
                    prop_assert_eq!(r, model.get(&k).map(|x| x.0));
                }
                2 => {
                    let r = sync.section(t.stripe(h), |sec| t.remove(sec, &mut tw, &k, h));
                    prop_assert_eq!(r, model.remove(&k).is_some());
                }
                _ => {
                    let idle = 40;
                    let n = t.expire(&mut sync, &mut tw, now, idle, usize::MAX, |_, _, _| {});
                    let before = model.len();
                    model.retain(|_, (_, last)| now.saturating_sub(*last) < idle);
                    prop_assert_eq!(n, before - model.len());
                }
            }
            prop_assert_eq!(tw.free() + model.len(), cap);
        }
    }
}
