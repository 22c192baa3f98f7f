//! Workers handing packets to each other over one shared arena, with routes changing while
//! they forward: for 1 to 4 workers, random flows (and frames that are not IP, or cut
//! short), rings small enough to overflow, and a control thread adding and deleting routes
//! in the FIB all workers share. Every run must end by itself, balance exactly (each packet
//! counted once however many workers it crossed), drop only with counted reasons, and give
//! every buffer back to the arena exactly once.

use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

use pktvec::graph::builtin::{NullSink, PacketSource, SourceNext};
use pktvec::graph::{GraphBuilder, GraphConfig};
use pktvec::lookup::routes::{Route, SplitMix64};
use pktvec::nodes::apps::l3fwd::{L3fwd, L3fwdConfig};
use pktvec::packet::arena::SharedArena;
use pktvec::packet::builder::PacketBuilder;
use pktvec::packet::wire::TcpFlags;
use pktvec::packet::PoolConfig;
use pktvec::workers::handoff::{Distribution, Handoff};
use pktvec::workers::runtime::{Workers, WorkersConfig, WorkersReport};
use proptest::prelude::*;

/// `n` frames of `flows` flows seeded by `seed`: mostly IPv4 UDP/TCP into 10.0.0.0/8, some
/// IPv6, some ARP (not IP: stays on its worker) and some IPv4 headers cut short.
fn frames(n: usize, flows: u32, seed: u64) -> Vec<Vec<u8>> {
    let mut rng = SplitMix64::new(seed);
    let eth = || PacketBuilder::ethernet([2, 0, 0, 0, 0, 1].into(), [2, 0, 0, 0, 0, 2].into());
    (0..n)
        .map(|_| {
            let f = rng.below(u64::from(flows.max(1))) as u32;
            let src = Ipv4Addr::from(0xc0a8_0000 | (f & 0xffff));
            let dst = Ipv4Addr::from(0x0a00_0000 | (f.wrapping_mul(2_654_435_761) & 0x00ff_ffff));
            match rng.below(20) {
                0 => {
                    let mut arp = eth().build();
                    arp[12..14].copy_from_slice(&[0x08, 0x06]);
                    arp.resize(60, 0);
                    arp
                }
                1 => eth()
                    .ipv6(
                        Ipv6Addr::from(u128::from(f) | 0x2001_0db8 << 96),
                        Ipv6Addr::from(0x2001_0db8_0001u128 << 80),
                    )
                    .udp(f as u16, 53)
                    .build(),
                2 => {
                    let mut cut = eth().ipv4(src, dst).udp(f as u16, 53).build();
                    cut.truncate(14 + 12);
                    cut
                }
                3..=8 => eth()
                    .ipv4(src, dst)
                    .ttl(64)
                    .tcp(f as u16, 80, TcpFlags::ACK)
                    .build(),
                _ => eth().ipv4(src, dst).ttl(64).udp(f as u16, 4789).build(),
            }
        })
        .collect()
}

struct Run {
    report: WorkersReport,
    arena: Arc<SharedArena>,
    updates: u64,
}

/// Runs `workers` workers, each replaying `per_worker` packets through
/// `input → worker-handoff → l3fwd`, with rings of `ring` slots, while this thread adds and
/// deletes routes under 10.0.0.0/8 in the FIB they share until they are done.
fn run(workers: usize, per_worker: u64, ring: usize, vector: usize, seed: u64) -> Run {
    let arena = SharedArena::new(PoolConfig {
        buffers: 4096,
        ..PoolConfig::default()
    })
    .unwrap();
    let handoff = Handoff::new(arena.clone(), Distribution::new(workers), ring).unwrap();
    let base = vec![Route {
        addr: Ipv4Addr::new(10, 0, 0, 0),
        len: 8,
        next_hop: 1,
    }];
    let app = Arc::new(L3fwd::with_routes(L3fwdConfig::default(), base, vec![]).unwrap());
    let fib = app.fib4().clone();
    let cfg = WorkersConfig {
        pin: false,
        ..WorkersConfig::new(workers).with_handoff(handoff.clone())
    };
    let h = handoff.clone();
    let forwarding = std::thread::spawn(move || {
        Workers::run(cfg, move |w| {
            let mut b = GraphBuilder::new(GraphConfig {
                vector_size: vector,
                ..GraphConfig::default()
            });
            let input = PacketSource::new(frames(97, 500, seed ^ w.id as u64));
            b.add("input", input.with_limit(per_worker));
            let nodes = app.add_to(&mut b);
            b.add(nodes.output_to_tx.to.as_str(), NullSink);
            let entry = h.add_to(&mut b, w.id, app.entry())?;
            b.set_next("input", SourceNext::Out, entry);
            Ok(b.build(h.pool())?)
        })
    });
    let mut rng = SplitMix64::new(seed);
    let mut updates = 0;
    while !forwarding.is_finished() {
        let addr = Ipv4Addr::from(0x0a00_0000 | (rng.next_u64() as u32 & 0x00ff_ff00));
        let len = 9 + rng.below(24) as u8;
        if rng.below(2) == 0 {
            fib.add(addr, len, rng.below(4) as u32).unwrap();
        } else {
            let _ = fib.delete(addr, len);
        }
        updates += 1;
    }
    let report = forwarding.join().unwrap().unwrap();
    Run {
        report,
        arena,
        updates,
    }
}

fn check(r: &Run, workers: usize, per_worker: u64) {
    let c = r.report.conservation();
    assert!(c.is_balanced(), "{c}");
    assert_eq!(
        c.input,
        workers as u64 * per_worker,
        "each packet counted once"
    );
    assert_eq!(c.in_flight, 0, "finite runs end with nothing in flight");
    for w in &r.report.workers {
        assert!(
            w.conservation.is_balanced(),
            "worker {}: {}",
            w.worker,
            w.conservation
        );
        assert_eq!(w.conservation.buffers_in_use, 0, "worker {}", w.worker);
        assert_eq!(w.received(), per_worker, "worker {}", w.worker);
        assert_eq!(
            w.double_frees, 0,
            "worker {}: no buffer freed twice",
            w.worker
        );
    }
    let h = r.report.handoff.as_ref().expect("handoff stats");
    assert_eq!(h.in_rings, 0);
    assert_eq!(h.handed_off, h.received);
    let errors = r.report.errors();
    assert_eq!(
        errors.count("handoff-tx", "congestion drop"),
        h.congestion_drops
    );
    assert_eq!(errors.count("handoff-tx", "owned by this worker"), 0);
    assert_eq!(errors.count("handoff-input", "handoff buffer refused"), 0);
    if workers == 1 {
        assert_eq!(h.handed_off + h.congestion_drops, 0);
    }
    // every buffer is back in the arena, once
    assert_eq!(r.arena.available(), r.arena.capacity());
    assert_eq!(r.arena.free_duplicates(), 0);
    assert_eq!(r.report.reclaimed, 0);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn handoff_conserves_every_packet(
        workers in 1usize..=4,
        ring in prop::sample::select(vec![2usize, 8, 64, 1024]),
        vector in prop::sample::select(vec![1usize, 7, 64, 256]),
        per_worker in 1u64..3000,
        seed in any::<u64>(),
    ) {
        let r = run(workers, per_worker, ring, vector, seed);
        check(&r, workers, per_worker);
    }
}

#[test]
fn tiny_rings_congest_and_still_balance() {
    let r = run(2, 50_000, 2, 256, 7);
    check(&r, 2, 50_000);
    let h = r.report.handoff.as_ref().unwrap();
    assert!(h.congestion_drops > 0, "rings of 2 slots overflow: {h:?}");
    assert!(h.handed_off > 0);
    assert!(h.rings.iter().all(|p| p.stats.high_water <= 2));
    assert!(r.updates > 0);
}

#[test]
fn stopped_workers_return_what_is_in_the_rings() {
    let arena = SharedArena::new(PoolConfig {
        buffers: 8192,
        ..PoolConfig::default()
    })
    .unwrap();
    let handoff = Handoff::new(arena.clone(), Distribution::new(2), 4096).unwrap();
    let h = handoff.clone();
    let cfg = WorkersConfig {
        pin: false,
        ..WorkersConfig::new(2).with_handoff(handoff)
    };
    // endless inputs: whatever the rings hold at the stop goes back to the arena
    let running = Workers::spawn(cfg, move |w| {
        let mut b = GraphBuilder::new(GraphConfig::default());
        b.add("input", PacketSource::new(frames(64, 64, w.id as u64)));
        b.add("tx", NullSink);
        let entry = h.add_to(&mut b, w.id, "tx")?;
        b.set_next("input", SourceNext::Out, entry);
        Ok(b.build(h.pool())?)
    })
    .unwrap();
    running.wait_started();
    std::thread::sleep(std::time::Duration::from_millis(50));
    running.stop();
    let report = running.join().unwrap();
    let c = report.conservation();
    assert!(c.is_balanced(), "{c}");
    let hs = report.handoff.as_ref().unwrap();
    assert_eq!(report.reclaimed, hs.in_rings);
    assert_eq!(arena.available(), arena.capacity());
    assert_eq!(arena.free_duplicates(), 0);
}
