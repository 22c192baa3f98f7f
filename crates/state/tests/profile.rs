//! The conflict profiler against a brute-force count over hand-made read/write sets.

use pktvec_state::profile::Profiler;
use pktvec_state::{Domain, Strategy, StripedArray, SyncConfig};
use proptest::prelude::*;

/// One packet: (object, write) accesses.
type Sets = Vec<(u64, bool)>;

fn conflict(a: &Sets, b: &Sets) -> bool {
    a.iter()
        .any(|&(x, wx)| b.iter().any(|&(y, wy)| x == y && (wx || wy)))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    /// Pair and packet shares per window equal a direct count over every window.
    #[test]
    fn shares_match_a_direct_count(
        packets in prop::collection::vec(prop::collection::vec((0u64..6, any::<bool>()), 0..4), 2..40)
    ) {
        let mut p = Profiler::default();
        for sets in &packets {
            p.begin_packet();
            for &(o, w) in sets {
                // objects 4,096 bytes apart: each its own line too
                p.access(1, o, 4096 * o as usize, 8, w);
            }
            p.end_packet();
        }
        let rows = p.conflicts(2..=8);
        for r in rows {
            let w = r.window;
            let (mut pairs, mut hit, mut pk, mut pk_hit) = (0u64, 0u64, 0u64, 0u64);
            for s in 0..packets.len().saturating_sub(w - 1) {
                let win = &packets[s..s + w];
                let mut any = vec![false; w];
                for i in 0..w {
                    for j in i + 1..w {
                        pairs += 1;
                        if conflict(&win[i], &win[j]) {
                            hit += 1;
                            any[i] = true;
                            any[j] = true;
                        }
                    }
                }
                pk += w as u64;
                pk_hit += any.iter().filter(|&&a| a).count() as u64;
            }
            let share = |a: u64, b: u64| if b == 0 { 0.0 } else { a as f64 / b as f64 };
            prop_assert!((r.pairs_by_object - share(hit, pairs)).abs() < 1e-12);
            prop_assert!((r.packets_by_object - share(pk_hit, pk)).abs() < 1e-12);
            // one object a line: lines conflict exactly when objects do
            prop_assert!((r.pairs_by_line - r.pairs_by_object).abs() < 1e-12);
        }
    }
}

/// Two objects in one 64-byte line: packets touching different objects conflict by line
/// (false sharing), not by object; the accessors record sections' accesses themselves.
#[test]
fn false_sharing_shows_by_line_only() {
    let d = Domain::new(SyncConfig {
        strategy: Strategy::Coarse,
        workers: 1,
        stripes: 16,
        ..SyncConfig::default()
    })
    .unwrap();
    let a = StripedArray::<u32>::new(&d, "counters", 16); // 16 × 4 B: one or two lines
    let mut w = d.worker(0);
    w.enable_profile();
    for i in 0..100usize {
        w.profile_mut().unwrap().begin_packet();
        // neighbouring elements, alternately: never the same object, often the same line
        let e = 2 * (i % 2);
        w.section(a.stripe(e), |sec| *a.get_mut(sec, e) += 1);
        w.profile_mut().unwrap().end_packet();
    }
    // outside a packet, nothing is recorded
    w.section(a.stripe(0), |sec| *a.get_mut(sec, 0) += 1);
    let p = w.take_profile().unwrap();
    assert_eq!(p.packets(), 100);
    let r = &p.conflicts(2..=2)[0];
    assert_eq!(r.pairs_by_object, 0.0);
    // elements 0 and 2 are 8 bytes apart: the same line unless a line boundary falls
    // between them (the array is only 4-byte aligned); the profile must say which
    let (a0, a2) = w.section(0, |sec| {
        let x = a.get(sec, 0) as *const u32 as usize;
        let y = a.get(sec, 2) as *const u32 as usize;
        (x, y)
    });
    let same_line = a0 / 64 == a2 / 64;
    assert_eq!(r.pairs_by_line, if same_line { 1.0 } else { 0.0 });
    // every packet writes: window 3 pairs packets two apart, the same element
    let r3 = &p.conflicts(3..=3)[0];
    assert!(r3.pairs_by_object > 0.3, "{r3:?}");
}
