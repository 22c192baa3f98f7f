//! The shared FIBs under concurrent change: reader threads look keys up a vector at a
//! time (one guard per vector, two-phase bulk lookups) while a writer thread adds, moves
//! and removes entries; and graphs on several threads sharing one FIB, learning (l2) or
//! looking up (ndn) while it changes.
//!
//! Values encode their key (`key * GEN + generation`), so a reader can tell a value that
//! was never written for that key; the generation is checked against the last one the
//! writer made. Keys present for the whole run must be found by every lookup.

use pktvec_graph::builtin::{PacketSource, SourceNext};
use pktvec_graph::{
    next_nodes, Context, Frame, GraphBuilder, GraphConfig, NoError, NoNext, Node, NodeKind,
};
use pktvec_lookup::hash::Hashed;
use pktvec_nodes::apps::ndnfwd::{Ndnfwd, NdnfwdConfig};
use pktvec_nodes::l2::{L2Change, L2Fib, L2Forward, L2Learn, UnknownUnicast};
use pktvec_nodes::ndn::{NdnChange, NdnFib};
use pktvec_nodes::output::{InterfaceOutput, OutputNext};
use pktvec_packet::builder::PacketBuilder;
use pktvec_packet::wire::ndn::{encode_name, interest};
use pktvec_packet::wire::MacAddr;
use pktvec_packet::{BufferPool, PoolConfig};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Barrier;

/// Generations per key: a value is `key * GEN + generation`, generation < GEN.
const GEN: u32 = 4096;

fn mac(i: u32) -> MacAddr {
    let b = i.to_be_bytes();
    MacAddr::new([2, 0x42, b[0], b[1], b[2], b[3]])
}

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

/// What the readers of one run saw.
#[derive(Default)]
struct Seen {
    vectors: AtomicU64,
    lookups: AtomicU64,
    moving_hits: AtomicU64,
    moving_misses: AtomicU64,
}

#[test]
fn l2_readers_see_whole_entries_while_a_writer_churns() {
    // 800 stations present all along, 1000 that come, move and go, at up to 90% of the
    // table's capacity (so inserts displace present keys along cuckoo paths), and keys
    // never written.
    const STABLE: u32 = 800;
    const MOVING: u32 = 1000;
    const NEVER: u32 = 200;
    const READERS: usize = 3;
    const ROUNDS: u32 = 1000;
    let fib = L2Fib::with_capacity(2000).unwrap();
    fib.apply((0..STABLE).map(|i| L2Change::Insert(mac(i), i * GEN)));
    let generation = AtomicU32::new(0);
    let done = AtomicBool::new(false);
    let seen = Seen::default();
    let start = Barrier::new(READERS + 1);

    std::thread::scope(|s| {
        for r in 0..READERS {
            let reader = fib.reader();
            let (done, seen, generation, start) = (&done, &seen, &generation, &start);
            s.spawn(move || {
                let mut rng = Rng(0x9e37_79b9 + r as u64);
                let mut keys = [0u32; 256];
                let mut macs = [MacAddr::ZERO; 256];
                let mut out = [None; 256];
                start.wait();
                let mut vectors = 0u64;
                // At least 50 vectors, then until the writer is done.
                while vectors < 50 || !done.load(Ordering::Acquire) {
                    for (k, m) in keys.iter_mut().zip(macs.iter_mut()) {
                        *k = rng.below(STABLE + MOVING + NEVER);
                        *m = mac(*k);
                    }
                    let (mut hits, mut misses) = (0, 0);
                    {
                        // One guard per vector, as a node takes it.
                        let table = reader.enter();
                        if vectors % 2 == 0 {
                            table.lookup_bulk(&macs, &mut out);
                        } else {
                            // The nodes' two phases: hash + prefetch all, then search.
                            let mut hs = [Hashed(0); 256];
                            for (h, m) in hs.iter_mut().zip(&macs) {
                                *h = table.hash(m);
                                table.prefetch(*h);
                            }
                            for ((o, m), h) in out.iter_mut().zip(&macs).zip(&hs) {
                                *o = table.lookup_hashed(m, *h);
                            }
                        }
                    }
                    // Every generation seen was published before this load.
                    let newest = generation.load(Ordering::Acquire);
                    for (&k, &v) in keys.iter().zip(&out) {
                        if k < STABLE {
                            assert_eq!(v, Some(k * GEN), "station {k} present all along");
                        } else if k < STABLE + MOVING {
                            match v {
                                Some(v) => {
                                    assert_eq!(v / GEN, k, "value {v} never written for {k}");
                                    assert!(
                                        v % GEN <= newest,
                                        "generation {} not made yet",
                                        v % GEN
                                    );
                                    hits += 1;
                                }
                                None => misses += 1,
                            }
                        } else {
                            assert_eq!(v, None, "key {k} was never written");
                        }
                    }
                    vectors += 1;
                    seen.moving_hits.fetch_add(hits, Ordering::Relaxed);
                    seen.moving_misses.fetch_add(misses, Ordering::Relaxed);
                }
                seen.vectors.fetch_add(vectors, Ordering::Relaxed);
                seen.lookups.fetch_add(vectors * 256, Ordering::Relaxed);
            });
        }

        // The writer: batches of moves, adds and removes, single learns and forgets.
        let mut rng = Rng(0x1234_5678);
        start.wait();
        let mut changes = Vec::with_capacity(64);
        for round in 0..ROUNDS {
            let g = (round % (GEN - 1)) + 1;
            changes.clear();
            for _ in 0..rng.below(64) {
                let k = STABLE + rng.below(MOVING);
                changes.push(if rng.below(3) == 0 {
                    L2Change::Remove(mac(k))
                } else {
                    L2Change::Insert(mac(k), k * GEN + g)
                });
            }
            generation.store(g, Ordering::Release);
            let out = fib.apply(changes.iter().copied());
            assert_eq!(out.failed, 0, "the table has room for every key");
            let k = STABLE + rng.below(MOVING);
            if round % 2 == 0 {
                fib.learn(mac(k), k * GEN + g).unwrap();
            } else {
                fib.forget(mac(k));
            }
        }
        done.store(true, Ordering::Release);
    });

    fib.read().check_invariants().unwrap();
    let (vectors, hits, misses) = (
        seen.vectors.load(Ordering::Relaxed),
        seen.moving_hits.load(Ordering::Relaxed),
        seen.moving_misses.load(Ordering::Relaxed),
    );
    assert!(vectors >= 50 * READERS as u64, "{vectors} vectors");
    assert!(
        hits > 0 && misses > 0,
        "churn seen: {hits} hits, {misses} misses"
    );
    assert_eq!(
        fib.len() as u32,
        STABLE
            + (0..MOVING)
                .filter(|&k| fib.port(mac(STABLE + k)).is_some())
                .count() as u32
    );
}

#[test]
fn ndn_readers_find_the_longest_present_prefix_while_a_writer_churns() {
    // Stable prefixes /s/i (2 components) and /m (1); moving prefixes /m/j/x (3) and
    // /m/j/x/y (4) that come and go, so whole component counts appear and disappear.
    // A lookup of /m/j/x/y/q answers /m/j/x/y, /m/j/x or /m: never nothing, never a value
    // of another name.
    const STABLE: u32 = 300;
    const MOVING: u32 = 200;
    const READERS: usize = 2;
    const ROUNDS: u32 = 300;
    const M_PORT: u32 = u32::MAX;
    let fib = NdnFib::from_names(
        (0..STABLE)
            .map(|i| (format!("/s/{i}"), i * GEN))
            .collect::<Vec<_>>()
            .iter()
            .map(|(n, p)| (n.as_str(), *p))
            .chain([("/m", M_PORT)]),
        (STABLE + 2 * MOVING + 1) as usize,
    )
    .unwrap();
    let long = |j: u32, depth: u32| {
        if depth == 4 {
            format!("/m/{j}/x/y")
        } else {
            format!("/m/{j}/x")
        }
    };
    // Value of a moving prefix: (2j + depth - 3) * GEN + generation.
    let value = |j: u32, depth: u32, g: u32| (2 * j + depth - 3) * GEN + g;
    let done = AtomicBool::new(false);
    let seen = Seen::default();
    let start = Barrier::new(READERS + 1);

    std::thread::scope(|s| {
        for r in 0..READERS {
            let reader = fib.reader();
            let (done, seen, start) = (&done, &seen, &start);
            s.spawn(move || {
                let enc = |n: &str| {
                    let mut e = Vec::new();
                    encode_name(n, &mut e);
                    e
                };
                // Encoded once: a lookup by the encoded name allocates nothing.
                let stable: Vec<Vec<u8>> =
                    (0..STABLE).map(|i| enc(&format!("/s/{i}/obj/1"))).collect();
                let moving: Vec<Vec<u8>> =
                    (0..MOVING).map(|j| enc(&format!("/m/{j}/x/y/q"))).collect();
                let mut rng = Rng(0x5555 + r as u64);
                start.wait();
                let mut vectors = 0u64;
                while vectors < 50 || !done.load(Ordering::Acquire) {
                    let (mut hits, mut misses) = (0, 0);
                    let table = reader.enter();
                    for _ in 0..64 {
                        let i = rng.below(STABLE);
                        assert_eq!(table.lookup_encoded(&stable[i as usize]), Some(i * GEN));
                        let j = rng.below(MOVING);
                        match table.lookup_encoded(&moving[j as usize]) {
                            Some(M_PORT) => misses += 1,
                            Some(v) => {
                                assert_eq!(v / GEN / 2, j, "value {v} never written for /m/{j}");
                                hits += 1;
                            }
                            None => panic!("/m is present all along"),
                        }
                    }
                    drop(table);
                    vectors += 1;
                    seen.moving_hits.fetch_add(hits, Ordering::Relaxed);
                    seen.moving_misses.fetch_add(misses, Ordering::Relaxed);
                }
                seen.vectors.fetch_add(vectors, Ordering::Relaxed);
            });
        }

        let mut rng = Rng(0xabcd_ef01);
        start.wait();
        for round in 0..ROUNDS {
            let g = (round % (GEN - 1)) + 1;
            let names: Vec<(u32, u32, bool)> = (0..rng.below(16))
                .map(|_| (rng.below(MOVING), 3 + rng.below(2), rng.below(3) != 0))
                .collect();
            let texts: Vec<String> = names.iter().map(|&(j, d, _)| long(j, d)).collect();
            let changes = names.iter().zip(&texts).map(|(&(j, d, add), n)| {
                if add {
                    NdnChange::Add(n, value(j, d, g))
                } else {
                    NdnChange::Remove(n)
                }
            });
            let out = fib.apply(changes).unwrap();
            assert_eq!(out.failed, 0);
            // Now and then every moving prefix of one depth goes, so its component count
            // leaves the FIB's set, and single adds bring it back.
            if round % 100 == 99 {
                let depth = 3 + (round / 100) % 2;
                let gone: Vec<String> = (0..MOVING).map(|j| long(j, depth)).collect();
                fib.apply(gone.iter().map(|n| NdnChange::Remove(n)))
                    .unwrap();
            }
            let j = rng.below(MOVING);
            fib.add(&long(j, 4), value(j, 4, g)).unwrap();
            fib.remove(&long(rng.below(MOVING), 3));
        }
        done.store(true, Ordering::Release);
    });

    let (vectors, hits, misses) = (
        seen.vectors.load(Ordering::Relaxed),
        seen.moving_hits.load(Ordering::Relaxed),
        seen.moving_misses.load(Ordering::Relaxed),
    );
    assert!(vectors >= 50 * READERS as u64);
    assert!(
        hits > 0 && misses > 0,
        "churn seen: {hits} hits, {misses} misses"
    );
    // After the run the FIB answers as the model of what was left.
    for j in 0..MOVING {
        let want = [4, 3].iter().find_map(|&d| {
            fib.read().lookup_encoded(&{
                let mut e = Vec::new();
                encode_name(&long(j, d), &mut e);
                e
            })
        });
        assert_eq!(
            fib.lookup_name(&format!("/m/{j}/x/y/q")),
            Some(want.unwrap_or(M_PORT))
        );
    }
}

next_nodes! {
    /// Arc of the test's station source.
    pub enum StationsNext { Out = "l2-learn" }
}

/// Frames from stations, each arriving on its own station's interface.
struct Stations {
    frames: Vec<(u16, Vec<u8>)>,
    pos: usize,
}

impl Node for Stations {
    type Next = StationsNext;
    type Error = NoError;
    const KIND: NodeKind = NodeKind::Input;
    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        let n = cx.vector_size().min(self.frames.len() - self.pos);
        let got = cx.alloc_into(frame, n);
        for k in 0..got {
            let bi = frame.buffers()[k];
            let (rx, f) = &self.frames[self.pos];
            self.pos += 1;
            let mut p = cx.packet_mut(bi);
            if let Ok(b) = p.append(f.len()) {
                b.copy_from_slice(f);
            }
            p.meta_mut().rx_if = *rx;
        }
        cx.enqueue_all(frame, StationsNext::Out);
    }
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
fn two_graphs_learn_into_one_table_at_once() {
    // Each graph's stations are its own (w * 1000 + i) and live on interface i % 4; a few
    // roaming stations show up in both graphs on different interfaces (moves back and
    // forth). Both graphs learn at once into one table; each is balanced on its own.
    const PORTS: u16 = 4;
    const STATIONS: u32 = 300;
    const ROAMING: u32 = 8;
    const FRAMES: usize = 20_000;
    let fib = L2Fib::with_capacity(1000).unwrap();
    let start = Barrier::new(2);
    let results: Vec<_> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..2u32)
            .map(|w| {
                let (fib, start) = (fib.clone(), &start);
                s.spawn(move || {
                    let mut rng = Rng(0x77 + u64::from(w));
                    let station = |i: u32| (mac(w * 1000 + i), (i % u32::from(PORTS)) as u16);
                    let frames = (0..FRAMES)
                        .map(|_| {
                            let (src, rx) = if rng.below(10) == 0 {
                                let r = rng.below(ROAMING);
                                (mac(900 + r), ((r + w) % u32::from(PORTS)) as u16)
                            } else {
                                station(rng.below(STATIONS))
                            };
                            let dst = match rng.below(20) {
                                0 => MacAddr::BROADCAST,
                                1 => mac(5000 + rng.below(50)), // never seen: flooded
                                _ => station(rng.below(STATIONS)).0,
                            };
                            (
                                rx,
                                PacketBuilder::ethernet(src, dst)
                                    .ethertype_raw(0x88b5)
                                    .payload(&[w as u8; 46])
                                    .build(),
                            )
                        })
                        .collect();
                    let mut b = GraphBuilder::new(GraphConfig {
                        vector_size: 64,
                        ..GraphConfig::default()
                    });
                    b.add("stations", Stations { frames, pos: 0 })
                        .add("l2-learn", L2Learn::new(fib.clone()))
                        .add(
                            "l2-forward",
                            L2Forward::new(fib.clone(), PORTS, UnknownUnicast::Flood),
                        )
                        .add("interface-output", InterfaceOutput::new(PORTS as usize))
                        .add("tx", Count::default())
                        .set_next("interface-output", OutputNext::Tx, "tx");
                    let pool = BufferPool::new(PoolConfig {
                        buffers: 8192,
                        ..PoolConfig::default()
                    })
                    .unwrap();
                    let mut g = b.build(pool).unwrap();
                    start.wait();
                    g.run_until_idle();
                    let learned = g.node::<L2Learn>("l2-learn").unwrap().counters();
                    let out = g.node::<Count>("tx").unwrap().0;
                    (g.conservation(), learned, out)
                })
            })
            .collect();
        workers.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut learned_new = 0;
    for (w, (c, (learned, _moved, failed), out)) in results.iter().enumerate() {
        assert!(c.is_balanced(), "graph {w}: {c}");
        assert_eq!(c.input, FRAMES as u64, "graph {w}");
        assert_eq!(c.in_flight, 0, "graph {w}");
        assert_eq!(c.buffers_in_use, 0, "graph {w}");
        assert_eq!(c.output, *out, "graph {w}");
        assert_eq!(*failed, 0, "graph {w}");
        learned_new += learned;
    }
    // Every station was learned as new exactly once (a roaming one by whichever graph
    // saw it first), and each graph's own stations are on their interfaces.
    assert_eq!(learned_new, u64::from(2 * STATIONS + ROAMING));
    assert_eq!(fib.len() as u32, 2 * STATIONS + ROAMING);
    for w in 0..2 {
        for i in 0..STATIONS {
            assert_eq!(fib.port(mac(w * 1000 + i)), Some(i % u32::from(PORTS)));
        }
    }
    fib.read().check_invariants().unwrap();
}

#[test]
fn ndnfwd_graphs_forward_while_the_control_plane_changes_the_fib() {
    // Two graphs share one Ndnfwd's FIB; a control thread adds and removes prefixes under
    // /live while they forward Interests for the stable prefixes (always routed to their
    // interface) and for /live names (routed or dropped as "no route").
    const PORTS: u32 = 4;
    const ROUNDS: u64 = 400;
    let prefixes: Vec<String> = (0..64).map(|i| format!("/stable/p{i}")).collect();
    let app = Ndnfwd::with_prefixes(
        NdnfwdConfig {
            ports: PORTS,
            spare_names: 16,
            ..NdnfwdConfig::default()
        },
        prefixes,
    )
    .unwrap();
    let frame = |name: &str| {
        PacketBuilder::ethernet(mac(1), mac(2))
            .ethertype_raw(0x8624)
            .payload(&interest(name, 7))
            .build()
    };
    let mut stable: Vec<Vec<u8>> = (0..64)
        .map(|i| frame(&format!("/stable/p{i}/obj")))
        .collect();
    let live: Vec<Vec<u8>> = (0..16).map(|i| frame(&format!("/live/l{i}/seg"))).collect();
    stable.extend(live);
    let frames = stable;
    // Half the /live prefixes are there from the start: both outcomes occur whatever the
    // threads' timing.
    for i in (0..16).step_by(2) {
        app.fib().add(&format!("/live/l{i}"), i % PORTS).unwrap();
    }
    let start = Barrier::new(3);
    let results: Vec<_> = std::thread::scope(|s| {
        let graphs: Vec<_> = (0..2)
            .map(|_| {
                let (app, frames, start) = (&app, frames.clone(), &start);
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
                        .build(BufferPool::new(Default::default()).unwrap())
                        .unwrap();
                    start.wait();
                    g.run_until_idle();
                    let out = g
                        .node::<InterfaceOutput>("interface-output")
                        .unwrap()
                        .counters()
                        .iter()
                        .map(|c| c.packets)
                        .collect::<Vec<_>>();
                    (
                        g.conservation(),
                        out,
                        g.errors().count("ndn-lookup", "no route for name"),
                    )
                })
            })
            .collect();
        let fib = app.fib();
        start.wait();
        let mut rng = Rng(99);
        let mut changes = 0;
        while !graphs.iter().all(|h| h.is_finished()) || changes < 50 {
            let i = rng.below(16);
            let name = format!("/live/l{i}");
            if rng.below(2) == 0 {
                fib.add(&name, PORTS - 1 - i % PORTS).unwrap();
            } else {
                fib.remove(&name);
            }
            changes += 1;
            std::thread::yield_now();
        }
        graphs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (w, (c, out, no_route)) in results.iter().enumerate() {
        assert!(c.is_balanced(), "graph {w}: {c}");
        assert_eq!(c.input, 80 * ROUNDS);
        assert_eq!(c.buffers_in_use, 0);
        // Only /live Interests may miss; each stable prefix i went to interface i % 4.
        assert_eq!(c.dropped, *no_route, "graph {w}: drops other than no route");
        assert!(
            *no_route > 0 && *no_route < 16 * ROUNDS,
            "graph {w}: {no_route}"
        );
        let total: u64 = out.iter().sum();
        assert_eq!(total + no_route, 80 * ROUNDS);
        assert!(out.iter().all(|&p| p >= 16 * ROUNDS), "graph {w}: {out:?}");
    }
}
