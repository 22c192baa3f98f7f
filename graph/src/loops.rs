//! Loop helpers over a vector of buffer indices: the prefetching loop (VPP's quad loop, one
//! packet a step), and the two-phase sub-batch loop (extract every key and prefetch its bucket,
//! then look them all up).
//!
//! Both take an explicit `state` (usually the buffer pool) that is passed to every
//! closure, so the prefetch closure and the body can use the same object without fighting
//! the borrow checker. Most nodes use them through
//! [`Context::process_packets`](crate::Context::process_packets) and
//! [`Context::process_sub_batches`](crate::Context::process_sub_batches).
//!
//! ```
//! use pktvec_graph::loops::quad_loop;
//! let table: Vec<u64> = (0..1000).collect();
//! let keys: Vec<u32> = vec![5, 900, 17, 3, 400, 2, 999];
//! let mut sum = 0u64;
//! quad_loop(
//!     &mut sum,
//!     &keys,
//!     4,
//!     |_, k| pktvec_packet::prefetch::prefetch_read(&table[k as usize]),
//!     |sum, _i, k| *sum += table[k as usize],
//! );
//! assert_eq!(sum, 5 + 900 + 17 + 3 + 400 + 2 + 999);
//! ```

use crate::context::MAX_SUB_BATCH;

/// Calls `body(state, i, idx[i])` for every element, in order, calling
/// `prefetch(state, idx[j])` for the element `distance` ahead (`distance` 0: no prefetch).
/// Every element is prefetched at most once and never past the end.
///
/// The first `distance` elements are prefetched before the loop; then each step prefetches
/// element `i + distance` (while there is one) and runs the body on element `i`. The body
/// has a single call site, so the compiler inlines it; one element a step (rather than
/// VPP's 4/2/1 groups) keeps the per-packet bookkeeping to a counter and one compare,
/// and the out-of-order core overlaps consecutive packets as a quad loop would.
#[inline(always)]
pub fn quad_loop<S: ?Sized>(
    state: &mut S,
    idx: &[u32],
    distance: usize,
    prefetch: impl Fn(&S, u32),
    mut body: impl FnMut(&mut S, usize, u32),
) {
    let n = idx.len();
    // Elements `..split` have one `distance` ahead to prefetch; the rest have none.
    let split = if distance > 0 {
        // Prime: the first `distance` elements are fetched before the loop starts.
        for &x in &idx[..distance.min(n)] {
            prefetch(state, x);
        }
        n.saturating_sub(distance)
    } else {
        0
    };
    // Two loops, so that neither tests per element whether there is one to prefetch.
    let (head, tail) = idx.split_at(split);
    let ahead = idx.get(distance..).unwrap_or_default();
    for ((i, &x), &a) in head.iter().enumerate().zip(ahead) {
        prefetch(state, a);
        body(state, i, x);
    }
    for (i, &x) in tail.iter().enumerate() {
        body(state, split + i, x);
    }
}

/// [`quad_loop`] that stores what the body returns for element `i` in `out[i]`: the same
/// visits and prefetches over the first `min(idx.len(), out.len())` elements. Walking
/// `idx` and `out` together, the store needs no bounds test (a node's next slots).
///
/// ```
/// use pktvec_graph::loops::quad_loop_into;
/// let idx = [3u32, 1, 2];
/// let mut out = [0u16; 3];
/// quad_loop_into(&mut (), &idx, &mut out, 2, |_, _| {}, |_, x| x as u16 * 10);
/// assert_eq!(out, [30, 10, 20]);
/// ```
#[inline(always)]
pub fn quad_loop_into<S: ?Sized, T>(
    state: &mut S,
    idx: &[u32],
    out: &mut [T],
    distance: usize,
    prefetch: impl Fn(&S, u32),
    mut body: impl FnMut(&mut S, u32) -> T,
) {
    let n = idx.len().min(out.len());
    let (idx, out) = (&idx[..n], &mut out[..n]);
    // Elements `..split` have one `distance` ahead to prefetch; the rest have none.
    let split = if distance > 0 {
        // Prime: the first `distance` elements are fetched before the loop starts.
        for &x in &idx[..distance.min(n)] {
            prefetch(state, x);
        }
        n.saturating_sub(distance)
    } else {
        0
    };
    // Two loops, so that neither tests per element whether there is one to prefetch: the
    // first walks the element, its slot and the element `distance` ahead together.
    let (head, tail) = idx.split_at(split);
    let (out_head, out_tail) = out.split_at_mut(split);
    let ahead = idx.get(distance..).unwrap_or_default();
    for ((&x, o), &a) in head.iter().zip(out_head.iter_mut()).zip(ahead) {
        prefetch(state, a);
        *o = body(state, x);
    }
    for (&x, o) in tail.iter().zip(out_tail.iter_mut()) {
        *o = body(state, x);
    }
}

/// The two-phase loop: for each sub-batch of `b` elements (clamped to
/// 1..=[`MAX_SUB_BATCH`]), first `key(state, i, idx[i])` for all of them (compute the key
/// and hash, prefetch the table bucket; `prefetch_next(state, idx[i + b])` is called for
/// the element one sub-batch ahead), then `finish(state, i, idx[i], key)` for all of them.
///
/// ```
/// use pktvec_graph::loops::two_phase;
/// let table: Vec<u64> = (0..64).map(|x| x * 10).collect();
/// let idx: Vec<u32> = (0..10).collect();
/// let mut out = Vec::new();
/// two_phase::<usize, _>(
///     &mut out,
///     &idx,
///     4,
///     |_, _, x| (x as usize * 7) % 64,      // phase 1: "hash"
///     |_, _| {},                            // nothing to prefetch ahead
///     |out, _, _, h| out.push(table[h]),    // phase 2: lookup
/// );
/// assert_eq!(out[3], 210);
/// ```
#[inline(always)]
pub fn two_phase<K: Copy + Default, S: ?Sized>(
    state: &mut S,
    idx: &[u32],
    b: usize,
    mut key: impl FnMut(&mut S, usize, u32) -> K,
    prefetch_next: impl Fn(&S, u32),
    mut finish: impl FnMut(&mut S, usize, u32, K),
) {
    let b = b.clamp(1, MAX_SUB_BATCH);
    let mut keys = [K::default(); MAX_SUB_BATCH];
    let n = idx.len();
    let mut s = 0;
    while s < n {
        let e = (s + b).min(n);
        for (j, &x) in idx[s..e].iter().enumerate() {
            if let Some(&ahead) = idx.get(s + j + b) {
                prefetch_next(state, ahead);
            }
            keys[j] = key(state, s + j, x);
        }
        for (j, &x) in idx[s..e].iter().enumerate() {
            finish(state, s + j, x, keys[j]);
        }
        s = e;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    #[test]
    fn quad_loop_visits_each_once_and_prefetches_in_range() {
        for n in 0..20usize {
            for d in 0..7usize {
                let idx: Vec<u32> = (0..n as u32).map(|x| x * 3).collect();
                let fetched = RefCell::new(Vec::new());
                let mut seen = Vec::new();
                quad_loop(
                    &mut seen,
                    &idx,
                    d,
                    |_, x| fetched.borrow_mut().push(x),
                    |seen, i, x| {
                        assert_eq!(idx[i], x);
                        seen.push(i)
                    },
                );
                assert_eq!(seen, (0..n).collect::<Vec<_>>());
                let mut f = fetched.into_inner();
                if d == 0 {
                    assert!(f.is_empty());
                } else {
                    f.sort_unstable();
                    let before = f.len();
                    f.dedup();
                    assert_eq!(
                        before,
                        f.len(),
                        "n={n} d={d}: an element was prefetched twice"
                    );
                    assert_eq!(f, idx, "n={n} d={d}: every element is prefetched");
                }
            }
        }
    }

    #[test]
    fn quad_loop_into_matches_quad_loop() {
        for n in 0..20usize {
            for d in 0..7usize {
                let idx: Vec<u32> = (0..n as u32).map(|x| x * 3 + 1).collect();
                let (fa, fb) = (RefCell::new(Vec::new()), RefCell::new(Vec::new()));
                let mut a = vec![0u32; n];
                quad_loop(
                    &mut a,
                    &idx,
                    d,
                    |_, x| fa.borrow_mut().push(x),
                    |a, i, x| a[i] = x * 2,
                );
                let mut b = vec![0u32; n];
                quad_loop_into(
                    &mut (),
                    &idx,
                    &mut b,
                    d,
                    |_, x| fb.borrow_mut().push(x),
                    |_, x| x * 2,
                );
                assert_eq!(a, b, "n={n} d={d}");
                assert_eq!(fa.into_inner(), fb.into_inner(), "n={n} d={d}");
            }
        }
    }

    #[test]
    fn two_phase_orders_phases_per_sub_batch() {
        for n in 0..40usize {
            for b in [0usize, 1, 2, 3, 8, 16, 300] {
                let idx: Vec<u32> = (0..n as u32).collect();
                let mut log: Vec<(char, usize)> = Vec::new();
                two_phase::<u32, _>(
                    &mut log,
                    &idx,
                    b,
                    |log, i, x| {
                        log.push(('k', i));
                        x + 1
                    },
                    |_, _| {},
                    |log, i, x, k| {
                        assert_eq!(k, x + 1);
                        log.push(('f', i))
                    },
                );
                let bb = b.clamp(1, MAX_SUB_BATCH);
                let mut expect = Vec::new();
                let mut s = 0;
                while s < n {
                    let e = (s + bb).min(n);
                    expect.extend((s..e).map(|i| ('k', i)));
                    expect.extend((s..e).map(|i| ('f', i)));
                    s = e;
                }
                assert_eq!(log, expect, "n={n} b={b}");
            }
        }
    }
}
