//! The shared IPv6 FIB under concurrent change: reader threads look addresses up a vector
//! at a time (one guard per vector, the vector and two-phase lookups) while a writer
//! thread adds and deletes prefixes; and two `l3fwd` graphs on two threads forwarding IPv6
//! traffic through one app's FIB while the control thread changes its routes.
//!
//! Next hops encode their prefix (`id * GEN + generation`, the id indexing a list of
//! prefixes every thread knows), so each answer is checked: a prefix that covers the key,
//! added with that generation before the answer was seen; a key under a prefix present
//! throughout is answered by it or a longer one.

use pktvec_graph::builtin::{PacketSource, SourceNext};
use pktvec_graph::{Context, Frame, GraphBuilder, GraphConfig, NoError, NoNext, Node, NodeKind};
use pktvec_lookup::ipv6::{Lpm6, Lpm6Op, SharedLpm6};
use pktvec_lookup::routes::Route6;
use pktvec_nodes::apps::l3fwd::{L3fwd, L3fwdConfig};
use pktvec_nodes::output::InterfaceOutput;
use pktvec_packet::builder::PacketBuilder;
use pktvec_packet::{BufferPool, PoolConfig};
use std::collections::BTreeMap;
use std::net::Ipv6Addr;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

/// Generations per prefix: a next hop is `id * GEN + generation`, generation < GEN.
const GEN: u32 = 1 << 16;

/// A small xorshift, so every run makes the same choices.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u32) -> u32 {
        (self.next() % u64::from(n)) as u32
    }
}

fn covers((addr, len): (u128, u8), key: u128) -> bool {
    len == 0 || (key ^ addr) >> (128 - u32::from(len)) == 0
}

/// `a:b:c:d::` with the given low 64 bits.
fn v6(a: u16, b: u16, c: u16, d: u16, low: u64) -> u128 {
    u128::from(a) << 112
        | u128::from(b) << 96
        | u128::from(c) << 80
        | u128::from(d) << 64
        | u128::from(low)
}

/// Stable /48s `2001:db8:i::/48`.
const STABLE: u16 = 64;
/// Sub-prefixes per stable prefix and kind.
const SUBS: u16 = 4;
/// Prefixes under `3000::/8`, where no prefix is stable.
const OTHER: u16 = 32;

/// The prefixes of the churn test: stable ones first (ids `0..STABLE`), then the moving
/// ones: short prefixes (≤ 16 bits, expanded into the first level: `::/0` among them),
/// prefixes covering every stable one, /56, /64 and /128 under the stable ones, and /32
/// and /64 under `3000::/8`.
fn prefixes() -> Vec<(u128, u8)> {
    let mut p: Vec<(u128, u8)> = (0..STABLE)
        .map(|i| (v6(0x2001, 0x0db8, i, 0, 0), 48))
        .collect();
    p.extend([
        (0, 0),
        (0x2000u128 << 112, 3),
        (0x2001u128 << 112, 16),
        (0x3000u128 << 112, 8),
        (0x3000u128 << 112, 12),
        (0x2001_0db8u128 << 96, 32),
        (0x2001_0db8u128 << 96, 40),
    ]);
    for i in 0..STABLE {
        for j in 0..SUBS {
            p.push((v6(0x2001, 0x0db8, i, j << 8, 0), 56));
            p.push((v6(0x2001, 0x0db8, i, j << 8 | 1, 0), 64));
            p.push((v6(0x2001, 0x0db8, i, j << 8 | 1, 9), 128));
        }
    }
    for i in 0..OTHER {
        p.push((v6(0x3000, i, 0, 0, 0), 32));
        p.push((v6(0x3000, i, 0, 1, 0), 64));
    }
    p
}

/// A key of one of three kinds: under a stable prefix (and maybe under moving ones), under
/// `3000::/8`, or under no prefix but the short ones.
fn key(rng: &mut Rng) -> u128 {
    match rng.below(4) {
        0 | 1 => {
            let i = rng.below(u32::from(STABLE)) as u16;
            let j = rng.below(u32::from(SUBS)) as u16;
            let d = j << 8 | rng.below(3) as u16;
            let low = match rng.below(3) {
                0 => 9,
                1 => 0,
                _ => rng.next(),
            };
            v6(0x2001, 0x0db8, i, d, low)
        }
        2 => v6(
            0x3000,
            rng.below(u32::from(OTHER) + 4) as u16,
            0,
            rng.below(3) as u16,
            rng.next(),
        ),
        _ => 0xfc00u128 << 112 | u128::from(rng.next()),
    }
}

/// The stable prefix (its id) that covers `key`, if one does.
fn stable_of(key: u128) -> Option<usize> {
    let i = (key >> 80) as u16;
    (key >> 96 == 0x2001_0db8 && i < STABLE).then_some(usize::from(i))
}

/// What the readers of one run saw.
#[derive(Default)]
struct Seen {
    vectors: AtomicU64,
    longer: AtomicU64,
    misses: AtomicU64,
}

#[test]
fn ipv6_readers_see_whole_changes_while_a_writer_churns() {
    const READERS: usize = 3;
    const ROUNDS: u32 = 150;
    const VECTOR: usize = 256;
    let pfx = prefixes();
    let stable = usize::from(STABLE);
    let fib = SharedLpm6::new(
        Lpm6::from_routes(
            pfx[..stable]
                .iter()
                .enumerate()
                .map(|(id, &(a, l))| (a, l, id as u32 * GEN)),
        )
        .unwrap(),
    );
    // The newest generation each prefix was added with (stored before the publish).
    let written: Vec<AtomicU32> = (0..pfx.len()).map(|_| AtomicU32::new(0)).collect();
    let done = AtomicBool::new(false);
    let seen = Seen::default();
    let start = Barrier::new(READERS + 1);

    std::thread::scope(|s| {
        for r in 0..READERS {
            let reader = fib.reader();
            let (pfx, written, done, seen, start) = (&pfx, &written, &done, &seen, &start);
            s.spawn(move || {
                let mut rng = Rng(0x9e37_79b9 + r as u64);
                let mut keys = [0u128; VECTOR];
                let mut out = [None; VECTOR];
                start.wait();
                let mut vectors = 0u64;
                while vectors < 50 || !done.load(Ordering::Acquire) {
                    keys.iter_mut().for_each(|k| *k = key(&mut rng));
                    {
                        // One guard per vector, as ip6-lookup takes it per frame.
                        let t = reader.enter();
                        match vectors % 4 {
                            0 => t.lookup_vector(&keys, &mut out).unwrap(),
                            1 => t.lookup_vector_with(&keys, &mut out, false).unwrap(),
                            2 => t.lookup_bulk(&keys, &mut out).unwrap(),
                            _ => {
                                // ip6-lookup's two phases: prefetch a sub-batch, look it up.
                                for (kc, oc) in keys.chunks(16).zip(out.chunks_mut(16)) {
                                    kc.iter().for_each(|&k| t.prefetch(k));
                                    for (o, &k) in oc.iter_mut().zip(kc) {
                                        *o = t.lookup(k);
                                    }
                                }
                            }
                        }
                    }
                    let (mut longer, mut misses) = (0, 0);
                    for (&k, &v) in keys.iter().zip(&out) {
                        let under_stable = stable_of(k);
                        let Some(v) = v else {
                            assert!(under_stable.is_none(), "key {k:x}: no answer");
                            misses += 1;
                            continue;
                        };
                        let (id, g) = ((v / GEN) as usize, v % GEN);
                        assert!(id < pfx.len(), "key {k:x}: next hop {v} never written");
                        assert!(
                            covers(pfx[id], k),
                            "key {k:x}: {v} is not a covering prefix"
                        );
                        if id < stable {
                            assert_eq!(g, 0, "key {k:x}: stable prefix with value {v}");
                        } else {
                            assert!(g >= 1, "key {k:x}: {v} never written");
                            assert!(
                                g <= written[id].load(Ordering::Acquire),
                                "key {k:x}: prefix {id} not added with generation {g} yet"
                            );
                        }
                        if let Some(s) = under_stable {
                            assert!(
                                pfx[id].1 >= pfx[s].1,
                                "key {k:x}: answered by the shorter prefix {id}"
                            );
                            longer += u64::from(id != s);
                        }
                    }
                    vectors += 1;
                    seen.longer.fetch_add(longer, Ordering::Relaxed);
                    seen.misses.fetch_add(misses, Ordering::Relaxed);
                }
                seen.vectors.fetch_add(vectors, Ordering::Relaxed);
            });
        }

        // The writer: batches of adds and deletes of moving prefixes, single ones too.
        let mut model: BTreeMap<usize, u32> = BTreeMap::new();
        let mut rng = Rng(0x1234_5678);
        let moving = (pfx.len() - stable) as u32;
        let op = |rng: &mut Rng, model: &mut BTreeMap<usize, u32>, g: u32| {
            let id = stable + rng.below(moving) as usize;
            let (addr, len) = pfx[id];
            if rng.below(3) == 0 {
                model.remove(&id);
                Lpm6Op::Delete { addr, len }
            } else {
                model.insert(id, g);
                written[id].store(g, Ordering::Release);
                Lpm6Op::Add {
                    addr,
                    len,
                    next_hop: id as u32 * GEN + g,
                }
            }
        };
        start.wait();
        for round in 0..ROUNDS {
            let g = round + 1;
            let ops: Vec<Lpm6Op> = (0..rng.below(24))
                .map(|_| op(&mut rng, &mut model, g))
                .collect();
            let o = fib.apply(ops).unwrap();
            assert_eq!(o.failed, 0);
            match op(&mut rng, &mut model, g) {
                Lpm6Op::Add {
                    addr,
                    len,
                    next_hop,
                } => fib.add(addr, len, next_hop).map(|_| ()).unwrap(),
                Lpm6Op::Delete { addr, len } => fib.delete(addr, len).map(|_| ()).unwrap(),
            }
        }
        done.store(true, Ordering::Release);

        // The FIB ends as the model of what was left, in both copies.
        let want = Lpm6::from_routes(
            pfx[..stable]
                .iter()
                .enumerate()
                .map(|(id, &(a, l))| (a, l, id as u32 * GEN))
                .chain(
                    model
                        .iter()
                        .map(|(&id, &g)| (pfx[id].0, pfx[id].1, id as u32 * GEN + g)),
                ),
        )
        .unwrap();
        for _ in 0..2 {
            fib.apply([]).unwrap();
            let t = fib.read();
            assert_eq!(
                t.routes().collect::<Vec<_>>(),
                want.routes().collect::<Vec<_>>()
            );
            let mut rng = Rng(7);
            for _ in 0..10_000 {
                let k = key(&mut rng);
                assert_eq!(t.lookup(k), want.lookup(k), "key {k:x}");
            }
        }
    });

    let (vectors, longer, misses) = (
        seen.vectors.load(Ordering::Relaxed),
        seen.longer.load(Ordering::Relaxed),
        seen.misses.load(Ordering::Relaxed),
    );
    assert!(vectors >= 50 * READERS as u64, "{vectors} vectors");
    assert!(
        longer > 0 && misses > 0,
        "churn seen: {longer} longer matches, {misses} misses"
    );
}

/// Counts and frees what reaches it.
#[derive(Default)]
struct Count(u64);
impl Node for Count {
    type Next = NoNext;
    type Error = NoError;
    const KIND: NodeKind = NodeKind::Sink;
    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        self.0 += frame.len() as u64;
        cx.free_frame(frame);
    }
}

#[test]
fn l3fwd_graphs_forward_ipv6_while_the_control_plane_changes_the_fib() {
    // One app, two graphs on two threads. Its FIB holds 16 stable /48s
    // (`2001:db8:i::/48` → interface i % 4); a control thread adds and deletes /56s under
    // them (→ interface (i + 1) % 4), /64s under 2001:db9:0:j:: (routed or not) and a
    // short 2001:db9::/32 over those, while the graphs forward traffic to all of them and
    // to 3fff::/16, which no route covers.
    const PORTS: u16 = 4;
    const ROUNDS: u64 = 500;
    const CHURNED: u16 = 8;
    let stable: Vec<Route6> = (0..16u16)
        .map(|i| Route6 {
            addr: Ipv6Addr::from(v6(0x2001, 0x0db8, i, 0, 0)),
            len: 48,
            next_hop: u32::from(i % PORTS),
        })
        .collect();
    let app = L3fwd::with_routes(
        L3fwdConfig {
            ports: PORTS,
            ..L3fwdConfig::default()
        },
        Vec::new(),
        stable,
    )
    .unwrap();
    let frame = |dst: u128| {
        PacketBuilder::ethernet([2, 0, 0, 0, 0, 1].into(), [2, 0, 0, 0, 0, 2].into())
            .ipv6("fd00::1".parse().unwrap(), Ipv6Addr::from(dst))
            .hop_limit(64)
            .udp(1, 2)
            .payload_len(20)
            .build()
    };
    // 16 to stable prefixes only, 16 under the churned /56s, 8 under the churned /64s, 8
    // to no route.
    let mut frames: Vec<Vec<u8>> = Vec::new();
    frames.extend((0..16).map(|i| frame(v6(0x2001, 0x0db8, i, 0x8000, 0x1234))));
    frames.extend((0..16).map(|i| frame(v6(0x2001, 0x0db8, i, 0x0010, 0x5678))));
    frames.extend((0..CHURNED).map(|j| frame(v6(0x2001, 0x0db9, 0, j, 7))));
    frames.extend((0..8).map(|j| frame(v6(0x3fff, j, 0, 0, 1))));
    let per_round = frames.len() as u64;
    let churned = |rng: &mut Rng| -> (u128, u8, u32) {
        match rng.below(3) {
            0 => {
                let i = rng.below(16) as u16;
                (v6(0x2001, 0x0db8, i, 0, 0), 56, u32::from((i + 1) % PORTS))
            }
            1 => {
                let j = rng.below(u32::from(CHURNED)) as u16;
                (v6(0x2001, 0x0db9, 0, j, 0), 64, u32::from(j % PORTS))
            }
            _ => (v6(0x2001, 0x0db9, 0, 0, 0), 32, 3),
        }
    };
    let start = Barrier::new(3);
    // Changes published so far: a graph waits for the control thread when it gets ahead
    // (one change per two turns of its loop), so changes and forwarding interleave however
    // the threads are scheduled.
    let published = AtomicU64::new(0);
    let (results, changes) = std::thread::scope(|s| {
        let graphs: Vec<_> = (0..2)
            .map(|_| {
                let (app, frames, start, published) = (&app, frames.clone(), &start, &published);
                s.spawn(move || {
                    let mut b = GraphBuilder::new(GraphConfig::default());
                    b.add(
                        "input",
                        PacketSource::new(frames.clone()).with_limit(frames.len() as u64 * ROUNDS),
                    )
                    .set_next("input", SourceNext::Out, app.entry());
                    let nodes = app.add_to(&mut b);
                    b.add(nodes.output_to_tx.to.as_str(), Count::default());
                    let mut g = b
                        .build(
                            BufferPool::new(PoolConfig {
                                buffers: 4096,
                                ..PoolConfig::default()
                            })
                            .unwrap(),
                        )
                        .unwrap();
                    start.wait();
                    let first = published.load(Ordering::Acquire);
                    let (mut produced, mut turns) = (0, 0u64);
                    // Stops waiting if the control thread stopped (it failed).
                    let deadline = Instant::now() + Duration::from_secs(60);
                    while produced < per_round * ROUNDS {
                        produced += g.run_once();
                        turns += 1;
                        // No guard is held between turns: the control thread's publish
                        // does not wait for this graph here.
                        while published.load(Ordering::Acquire) < first + turns / 2
                            && Instant::now() < deadline
                        {
                            std::thread::yield_now();
                        }
                    }
                    g.run_until_idle();
                    let during = published.load(Ordering::Acquire) - first;
                    let out = g
                        .node::<InterfaceOutput>("interface-output")
                        .unwrap()
                        .counters()
                        .iter()
                        .map(|c| c.packets)
                        .collect::<Vec<_>>();
                    let sent = g.node::<Count>("tx").unwrap().0;
                    (
                        g.conservation(),
                        out,
                        sent,
                        g.errors().count("ip6-lookup", "no route"),
                        (turns, during),
                    )
                })
            })
            .collect();
        let fib = app.fib6();
        let mut rng = Rng(99);
        start.wait();
        let mut changes = 0u64;
        while !graphs.iter().all(|h| h.is_finished()) || changes < 50 {
            if rng.below(4) == 0 {
                // A batch, published at once.
                let ops: Vec<Lpm6Op> = (0..4)
                    .map(|_| {
                        let (addr, len, next_hop) = churned(&mut rng);
                        if rng.below(2) == 0 {
                            Lpm6Op::Add {
                                addr,
                                len,
                                next_hop,
                            }
                        } else {
                            Lpm6Op::Delete { addr, len }
                        }
                    })
                    .collect();
                fib.apply(ops).unwrap();
            } else {
                let (addr, len, next_hop) = churned(&mut rng);
                if rng.below(2) == 0 {
                    fib.add(addr, len, next_hop).unwrap();
                } else {
                    fib.delete(addr, len).unwrap();
                }
            }
            changes += 1;
            published.store(changes, Ordering::Release);
            std::thread::yield_now();
        }
        let results: Vec<_> = graphs.into_iter().map(|h| h.join().unwrap()).collect();
        (results, changes)
    });
    assert!(changes >= 50);
    for (w, (c, out, sent, no_route, (turns, during))) in results.iter().enumerate() {
        assert!(
            *during >= turns / 2,
            "graph {w}: {during} changes in {turns} turns"
        );
        assert!(c.is_balanced(), "graph {w}: {c}");
        assert_eq!(c.input, per_round * ROUNDS, "graph {w}");
        assert_eq!(c.in_flight, 0, "graph {w}");
        assert_eq!(c.buffers_in_use, 0, "graph {w}");
        assert_eq!(c.output, *sent, "graph {w}");
        // The only drops are "no route": every frame to 3fff::/16, some to the churned /64s.
        assert_eq!(c.dropped, *no_route, "graph {w}: drops other than no route");
        assert!(
            *no_route >= 8 * ROUNDS && *no_route <= (8 + u64::from(CHURNED)) * ROUNDS,
            "graph {w}: {no_route} without a route"
        );
        let total: u64 = out.iter().sum();
        assert_eq!(total, *sent, "graph {w}");
        assert_eq!(total + no_route, per_round * ROUNDS, "graph {w}");
        // The 16 frames under the stable prefixes only went to interface i % 4.
        assert!(out.iter().all(|&p| p >= 4 * ROUNDS), "graph {w}: {out:?}");
    }
}
