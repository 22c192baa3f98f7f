//! A graph built over a buffer pool that is not its ports' mempool: the DPDK nodes stop
//! with a clear message before any mbuf is touched. Its own test binary (own EAL and
//! memory): it creates and frees a second mempool, whose hole in the EAL's memory would
//! keep `dpdk.rs`'s one-chunk standard-layout pool from fitting.
//! `cargo test -p pktvec-io --features dpdk --test dpdk_pool_mismatch`.
#![cfg(feature = "dpdk")]

use pktvec_graph::builtin::{PacketSource, SourceNext};
use pktvec_graph::{GraphBuilder, GraphConfig};
use pktvec_io::dpdk::{DpdkRx, DpdkRxNext, DpdkTx, Eal, Mempool, Port, PortConfig};
use std::sync::Arc;

fn eal() -> Eal {
    let args = format!(
        "--no-huge -m 256 --no-pci --no-shconf --file-prefix=pktvec-mismatch-{} -l 0 --log-level=lib.eal:error",
        std::process::id()
    );
    Eal::init(&args).expect("EAL init with virtual devices only")
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
        // The generator's 100 buffers of the other mempool stay in the frame of the graph
        // the panic abandoned (a panic frees nothing); no other mbuf is missing.
        assert_eq!(other.available(), other.capacity() - 100);
    }
    assert_eq!(
        mempool.available(),
        mempool.capacity(),
        "no mbuf of the graph's mempool leaked"
    );
}
