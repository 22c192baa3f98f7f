//! The handoff ring across threads and against a model.

use std::collections::VecDeque;

use pktvec_workers::ring::{ring, Mesh, RingStats};
use proptest::prelude::*;

/// A small xorshift generator (deterministic per seed).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// Millions of indices through a ring of 8 slots in random chunk sizes: every index the
/// producer put in arrives once, in order; what did not fit is counted as dropped and the
/// producer offers it again (so the stream has no gaps).
#[test]
fn two_threads_tiny_ring_in_order() {
    const TOTAL: u32 = if cfg!(debug_assertions) {
        2_000_000
    } else {
        20_000_000
    };
    let (mut p, mut c) = ring(8);
    let watch = p.watch();
    let producer = std::thread::spawn(move || {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let mut chunk = Vec::with_capacity(16);
        let mut next = 0u32;
        let mut dropped = 0u64;
        while next < TOTAL {
            let k = (1 + rng.below(16) as u32).min(TOTAL - next);
            chunk.clear();
            chunk.extend(next..next + k);
            let n = p.enqueue(&chunk);
            dropped += u64::from(k) - n as u64;
            next += n as u32;
            if n == 0 {
                std::hint::spin_loop();
            }
        }
        dropped
    });
    let consumer = std::thread::spawn(move || {
        let mut rng = Rng(0xD1B5_4A32_D192_ED03);
        let mut buf = [0u32; 16];
        let mut want = 0u32;
        while want < TOTAL {
            let k = 1 + rng.below(16) as usize;
            let n = c.dequeue(&mut buf[..k]);
            for &v in &buf[..n] {
                assert_eq!(v, want, "out of order or lost");
                want += 1;
            }
            if n == 0 {
                std::hint::spin_loop();
            }
        }
        let mut rest = [0u32; 8];
        assert_eq!(c.dequeue(&mut rest), 0, "more than was enqueued");
        want
    });
    let dropped = producer.join().unwrap();
    let received = consumer.join().unwrap();
    assert_eq!(received, TOTAL);
    let s = watch.stats();
    assert_eq!(s.enqueued, u64::from(TOTAL));
    assert_eq!(s.dequeued, u64::from(TOTAL));
    assert_eq!(s.enqueued, s.dequeued + s.in_ring());
    assert_eq!(s.dropped, dropped);
    assert!(s.high_water <= 8 && s.high_water > 0);
}

/// Every worker of a 3-worker mesh sends to both others at once; each ring delivers its
/// stream in order and the counters add up.
#[test]
fn mesh_all_pairs_concurrently() {
    const PER_RING: u32 = 200_000;
    let n = 3;
    let mesh = Mesh::new(n, 16);
    let watch = mesh.watch();
    let threads: Vec<_> = mesh
        .workers
        .into_iter()
        .map(|mut w| {
            std::thread::spawn(move || {
                let me = w.worker as u32;
                let mut sent = vec![0u32; n];
                let mut want = vec![0u32; n];
                let mut buf = [0u32; 8];
                let others: Vec<usize> = (0..n).filter(|&o| o != w.worker).collect();
                loop {
                    let mut idle = true;
                    for &o in &others {
                        if sent[o] < PER_RING {
                            let k = 5.min(PER_RING - sent[o]);
                            // the value names its source worker in the top byte
                            let chunk: Vec<u32> =
                                (sent[o]..sent[o] + k).map(|i| me << 24 | i).collect();
                            sent[o] += w.to[o].as_mut().unwrap().enqueue(&chunk) as u32;
                            idle = false;
                        }
                        let got = w.from[o].as_mut().unwrap().dequeue(&mut buf);
                        for &v in &buf[..got] {
                            assert_eq!(v, (o as u32) << 24 | want[o]);
                            want[o] += 1;
                        }
                        if want[o] < PER_RING {
                            idle = false;
                        }
                    }
                    if idle {
                        break;
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let stats = watch.stats();
    assert_eq!(stats.len(), 6);
    for r in stats {
        assert_ne!(r.from, r.to);
        assert_eq!(r.stats.enqueued, u64::from(PER_RING));
        assert_eq!(r.stats.dequeued, u64::from(PER_RING));
    }
}

#[derive(Clone, Debug)]
enum Op {
    Enqueue(usize),
    Dequeue(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0usize..20).prop_map(Op::Enqueue),
        (0usize..20).prop_map(Op::Dequeue)
    ]
}

proptest! {
    /// Any sequence of chunked enqueues and dequeues behaves like a bounded VecDeque that
    /// takes what fits and drops the rest.
    #[test]
    fn matches_vecdeque(cap_log in 0u32..5, ops in proptest::collection::vec(op(), 0..200)) {
        let cap = 1usize << cap_log;
        let (mut p, mut c) = ring(cap);
        let mut model: VecDeque<u32> = VecDeque::new();
        let mut next = 0u32;
        let mut want = RingStats::default();
        for o in ops {
            match o {
                Op::Enqueue(k) => {
                    let chunk: Vec<u32> = (next..next + k as u32).collect();
                    next += k as u32;
                    let fit = k.min(cap - model.len());
                    prop_assert_eq!(p.enqueue(&chunk), fit);
                    model.extend(&chunk[..fit]);
                    want.enqueued += fit as u64;
                    want.dropped += (k - fit) as u64;
                    want.high_water = want.high_water.max(model.len() as u64);
                }
                Op::Dequeue(k) => {
                    let mut out = vec![u32::MAX; k];
                    let n = c.dequeue(&mut out);
                    prop_assert_eq!(n, k.min(model.len()));
                    let expect: Vec<u32> = model.drain(..n).collect();
                    prop_assert_eq!(&out[..n], &expect[..]);
                    prop_assert!(out[n..].iter().all(|&v| v == u32::MAX));
                    want.dequeued += n as u64;
                }
            }
            // the producer's occupancy view may lag the consumer's dequeues, so its
            // high-water mark is at least the model's
            let s = p.stats();
            prop_assert_eq!((s.enqueued, s.dropped, s.dequeued), (want.enqueued, want.dropped, want.dequeued));
            prop_assert!(s.high_water >= want.high_water && s.high_water <= cap as u64);
            prop_assert_eq!(s.in_ring(), model.len() as u64);
        }
    }
}

/// DPDK's bulk semantics across two threads: whole chunks or nothing, in order, none lost
/// or counted as dropped.
#[test]
fn bulk_chunks_cross_threads_whole_and_in_order() {
    let (mut p, mut c) = ring(64);
    const CHUNK: usize = 24; // not a divisor of the capacity: chunks wrap around
    const CHUNKS: u32 = 20_000;
    let producer = std::thread::spawn(move || {
        let mut next = 0u32;
        while next < CHUNKS * CHUNK as u32 {
            let chunk: Vec<u32> = (next..next + CHUNK as u32).collect();
            if p.enqueue_bulk(&chunk) {
                next += CHUNK as u32;
            } else {
                std::hint::spin_loop();
            }
        }
        p.stats()
    });
    let mut buf = [0u32; CHUNK];
    let mut want = 0u32;
    while want < CHUNKS * CHUNK as u32 {
        if c.dequeue_bulk(&mut buf) {
            for &v in &buf {
                assert_eq!(v, want);
                want += 1;
            }
        } else {
            std::hint::spin_loop();
        }
    }
    let s = producer.join().unwrap();
    assert_eq!(s.dropped, 0);
    assert_eq!(s.enqueued, u64::from(CHUNKS) * CHUNK as u64);
    assert!(s.high_water <= 64);
}
