//! Two mempools in one process: a graph built over a buffer pool that is not its ports'
//! mempool stops with a clear message before any mbuf is touched, and mbufs of another
//! mempool arriving on an rx queue are given back to their own mempool and counted. Its own
//! test binary (own EAL and memory): a second mempool's hole in the EAL's memory would keep
//! `dpdk.rs`'s one-chunk standard-layout pool from fitting.
//! `cargo test -p pktvec-io --features dpdk --test dpdk_two_mempools`.
#![cfg(feature = "dpdk")]

use pktvec_graph::builtin::{NullSink, PacketSource, SourceNext};
use pktvec_graph::{Graph, GraphBuilder, GraphConfig};
use pktvec_io::dpdk::{DpdkRx, DpdkRxNext, DpdkTx, Eal, Mempool, Port, PortConfig};
use std::sync::Arc;

mod common;

fn eal() -> Eal {
    common::eal("two-mempools", 256)
}

/// A started port `name` over rings `rx` and `tx` (made on first use), over `mempool`.
fn ring_port(eal: &Eal, mempool: &Mempool, name: &str, rx: &str, tx: &str) -> Arc<Port> {
    let id = eal.ring_port(name, rx, tx, 4096).unwrap();
    Port::start(eal, id, mempool, &PortConfig::default()).unwrap()
}

fn start(eal: &Eal, mempool: &Mempool, dev: &str) -> Arc<Port> {
    let id = eal.attach(dev).unwrap();
    Port::start(eal, id, mempool, &PortConfig::default()).unwrap()
}

/// `n` minimal Ethernet frames.
fn frames(n: usize) -> Vec<Vec<u8>> {
    (0..n).map(|i| vec![i as u8; 60]).collect()
}

/// The panic message of `f`, which must panic.
fn panic_text(f: impl FnOnce()) -> String {
    let e = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_err();
    e.downcast_ref::<String>()
        .cloned()
        .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

#[test]
fn a_graph_over_another_pool_stops_before_any_mbuf_is_touched() {
    let _serial = common::serial();
    let eal = eal();
    let mempool = &Mempool::new(&eal, 2048, 2048).unwrap();
    let eal = &eal;
    {
        let rx = start(eal, mempool, "net_null30");
        let tx = start(eal, mempool, "net_null31");
        let other = Mempool::new(eal, 1024, 2048).unwrap();
        let pool_of = |what: &str| match what {
            "heap" => pktvec_packet::BufferPool::new(Default::default()).unwrap(),
            _ => other.buffer_pool().unwrap(),
        };
        for what in ["heap", "another mempool"] {
            // rx → tx: the rx node stops on its first call, before its driver burst.
            let mut b = GraphBuilder::new(GraphConfig::default());
            b.add("rx", DpdkRx::new(&rx, 0))
                .add("tx", DpdkTx::new(&tx, 0))
                .set_next("rx", DpdkRxNext::Out, "tx");
            let mut g = b.build(pool_of(what)).unwrap();
            let msg = panic_text(|| {
                g.run_once();
            });
            assert!(
                msg.contains("DpdkRx on port") && msg.contains("buffer_pool"),
                "{what}: {msg}"
            );
            drop(g);
            // A generator → tx: the tx node stops before it maps an index to an mbuf.
            let mut b = GraphBuilder::new(GraphConfig::default());
            b.add("gen", PacketSource::new(frames(8)).with_limit(100))
                .add("tx", DpdkTx::new(&tx, 0))
                .set_next("gen", SourceNext::Out, "tx");
            let mut g = b.build(pool_of(what)).unwrap();
            let msg = panic_text(|| {
                g.run_once();
            });
            assert!(msg.contains("DpdkTx on port"), "{what}: {msg}");
            drop(g);
            // `rx_into` checks the same.
            let mut pool = pool_of(what);
            let msg = panic_text(|| {
                DpdkRx::new(&rx, 0).rx_into(&mut pool, &mut Vec::new(), 32);
            });
            assert!(msg.contains("DpdkRx on port"), "{what}: {msg}");
        }
        // Nothing reached a driver: no packet counted by either port.
        assert_eq!((rx.stats().ipackets, tx.stats().opackets), (0, 0));
        // One tx node over ports of two mempools is refused when it is made.
        let third = start(eal, &other, "net_null32");
        let msg = panic_text(|| {
            DpdkTx::by_interface(&[(tx.clone(), 0), (third.clone(), 0)]);
        });
        assert!(msg.contains("one graph sends from one mempool"), "{msg}");
        drop(third);
        // The generator's 100 buffers of the other mempool, left in the frame of the graph
        // the panic abandoned, went back with that graph's pool: nothing is missing.
        assert_eq!(other.available(), other.capacity());
    }
    assert_eq!(
        mempool.available(),
        mempool.capacity(),
        "no mbuf of the graph's mempool leaked"
    );
}

/// Generator → tx on `port`, `v` packets a vector, over `mempool`'s buffers; the frames
/// are `templates`, in turn.
fn sender(mempool: &Mempool, port: &Arc<Port>, templates: Vec<Vec<u8>>, n: u64, v: usize) -> Graph {
    let cfg = GraphConfig {
        vector_size: v,
        ..GraphConfig::default()
    };
    let mut b = GraphBuilder::new(cfg);
    b.add("gen", PacketSource::new(templates).with_limit(n))
        .add("tx", DpdkTx::new(port, 0))
        .set_next("gen", SourceNext::Out, "tx");
    b.build(mempool.buffer_pool().unwrap()).unwrap()
}

#[test]
fn mbufs_of_another_mempool_go_back_to_it_and_are_counted() {
    let _serial = common::serial();
    let eal = &eal();
    let mp_a = &Mempool::new(eal, 1024, 2048).unwrap();
    let mp_b = &Mempool::new(eal, 1024, 2048).unwrap();
    {
        // Ports `a` (mempool A) and `c` (mempool B) both transmit into ring "x", which
        // port `b` (mempool B) receives from: b's bursts mix mbufs of both mempools.
        let port = |name: &str, rx: &str, tx: &str, mp: &Mempool| ring_port(eal, mp, name, rx, tx);
        let a = port("ring_a", "ring_a_rx", "ring_x", mp_a);
        let c = port("ring_c", "ring_c_rx", "ring_x", mp_b);
        let b = port("ring_b", "ring_x", "ring_b_tx", mp_b);
        // Bad arguments are errors: a port name taken, a ring name too long, a ring size
        // that is not a power of two.
        let long = "r".repeat(22);
        for (name, rx, size) in [
            ("ring_b", "ring_y", 64),
            ("ring_d", &long[..], 64),
            ("ring_e", "ring_z", 100),
        ] {
            let e = eal.ring_port(name, rx, "ring_b_tx", size).unwrap_err();
            assert!(e.to_string().contains("rte_eth_from_rings"), "{name}: {e}");
        }
        assert!(
            eal.ring_port("ring_g", &long[..21], "ring_g_tx", 64)
                .is_ok(),
            "21 bytes"
        );
        assert_eq!(eal.port_name(b.id()).unwrap(), "net_ring_ring_b");
        // Port names up to 19 bytes (DPDK's limit through rte_eth_from_rings).
        assert!(eal
            .ring_port(&"q".repeat(19), "ring_h", "ring_h", 64)
            .is_ok());
        assert!(eal
            .ring_port(&"q".repeat(20), "ring_h", "ring_h", 64)
            .is_err());
        // A mempool's own free ring is out of reach: its name gives a new, empty ring.
        let mp_ring = format!("MP_{}", mp_a.name());
        let f = port("ring_f", &mp_ring, "ring_f_tx", mp_b);
        let mut pool = mp_b.buffer_pool().unwrap();
        let mut got = Vec::new();
        assert_eq!(DpdkRx::new(&f, 0).rx_into(&mut pool, &mut got, 256), 0);
        drop(pool);
        assert_eq!(mp_a.available(), mp_a.capacity());
        // B's frames carry their number (mod 256) in byte 0, A's are all 0xAA.
        let ours: Vec<Vec<u8>> = (0..=255u8).map(|i| vec![i; 60]).collect();
        for round in 0..2 {
            let (n_a, n_c) = (700u64, 500u64);
            let mut ga = sender(mp_a, &a, vec![vec![0xAA; 64]], n_a, 7);
            let mut gc = sender(mp_b, &c, ours.clone(), n_c, 5);
            // Alternating vectors of 7 foreign and 5 own packets into the ring.
            for _ in 0..200 {
                ga.run_once();
                gc.run_once();
            }
            assert!(ga.conservation().is_balanced() && gc.conservation().is_balanced());
            drop((ga, gc));
            let (rx_before, a_free) = (b.stats().ipackets, mp_a.available());
            assert_eq!(
                a_free,
                mp_a.capacity() - n_a as usize,
                "A's mbufs sit in the ring"
            );
            let rx = DpdkRx::new(&b, 0);
            let (got, foreign) = if round == 0 {
                // `rx_into`: the own packets, in order and intact.
                let mut rx = rx;
                let mut pool = mp_b.buffer_pool().unwrap();
                let mut got = Vec::new();
                while rx.rx_into(&mut pool, &mut got, 256) > 0 {}
                for (k, &bi) in got.iter().enumerate() {
                    assert_eq!(pool.data(bi), &ours[k % 256][..], "packet {k}");
                }
                pool.free_bulk(&got);
                assert_eq!(pool.in_use(), 0);
                (got.len() as u64, rx.foreign())
            } else {
                // As a graph node: the foreign mbufs never enter the graph.
                let mut g = GraphBuilder::new(GraphConfig::default());
                g.add("rx", rx)
                    .add("sink", NullSink)
                    .set_next("rx", DpdkRxNext::Out, "sink");
                let mut g = g.build(mp_b.buffer_pool().unwrap()).unwrap();
                g.run_until_idle();
                let c = g.conservation();
                assert!(c.is_balanced() && c.buffers_in_use == 0, "{c}");
                let got = g.node_stats(g.node_id("sink").unwrap()).unwrap().packets;
                (got, g.node::<DpdkRx>("rx").unwrap().foreign())
            };
            assert_eq!((got, foreign), (n_c, n_a), "round {round}: own, foreign");
            // The port counted all; every mbuf of A is back in A, none of B is missing.
            assert_eq!(b.stats().ipackets - rx_before, n_a + n_c);
            assert_eq!(mp_a.available(), mp_a.capacity(), "round {round}: A");
            assert_eq!(mp_b.available(), mp_b.capacity(), "round {round}: B");
        }
        assert_eq!(a.stats().opackets, 1400);
        assert_eq!(c.stats().opackets, 1000);
    }
    assert_eq!(mp_a.available(), mp_a.capacity());
    assert_eq!(mp_b.available(), mp_b.capacity());
}

#[test]
fn one_buffer_pool_per_mempool_at_a_time() {
    let _serial = common::serial();
    let eal = &eal();
    let mp = &Mempool::new(eal, 256, 2048).unwrap();
    let mut pool = mp.buffer_pool().unwrap();
    let mut held = vec![0u32; 10];
    assert_eq!(pool.alloc_bulk(&mut held), 10);
    // A second pool over the same mbufs could reach the ten buffers the first holds.
    let e = mp.buffer_pool().unwrap_err();
    assert!(matches!(e, pktvec_io::dpdk::DpdkError::PoolTaken(_)), "{e}");
    assert!(e.to_string().contains("one per mempool"), "{e}");
    pool.free_bulk(&held);
    drop(pool);
    // Gone (its cache handed back): the next one may be built, over every mbuf.
    assert_eq!(mp.available(), mp.capacity());
    let pool = mp.buffer_pool().unwrap();
    drop(pool);
    assert_eq!(mp.available(), mp.capacity());
}

/// A mempool whose mbufs still sit in a ring when its last handle goes is kept, not freed:
/// the port that later dequeues them gets mbufs of live memory (foreign to it: freed back
/// to their own mempool and counted).
#[test]
fn a_mempool_with_mbufs_in_a_ring_is_kept_when_dropped() {
    let _serial = common::serial();
    let eal = &eal();
    {
        let m1 = Mempool::new(eal, 1024, 2048).unwrap();
        let a = ring_port(eal, &m1, "keep_a", "keep_a_rx", "keep_r");
        let mut g = sender(&m1, &a, vec![vec![7; 60]], 10, 32);
        g.run_until_idle();
        assert_eq!(g.node::<DpdkTx>("tx").unwrap().sent(), 10);
        drop(g);
        assert_eq!(m1.available(), m1.capacity() - 10, "ten mbufs in the ring");
    } // graph, port and the last handle of m1 gone, ten of its mbufs in ring "keep_r"
    let m2 = Mempool::new(eal, 1024, 2048).unwrap();
    let b = ring_port(eal, &m2, "keep_b", "keep_r", "keep_b_tx");
    let mut g = GraphBuilder::new(GraphConfig::default());
    g.add("rx", DpdkRx::new(&b, 0))
        .add("sink", NullSink)
        .set_next("rx", DpdkRxNext::Out, "sink");
    let mut g = g.build(m2.buffer_pool().unwrap()).unwrap();
    assert_eq!(g.run_until_idle(), 0);
    let rx = g.node::<DpdkRx>("rx").unwrap();
    assert_eq!((rx.received(), rx.foreign(), rx.refused()), (0, 10, 0));
    assert_eq!(b.stats().ipackets, 10);
    drop(g);
    assert_eq!(m2.available(), m2.capacity());
}
