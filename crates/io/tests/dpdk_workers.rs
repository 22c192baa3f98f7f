//! Several workers on DPDK ports (net_ring and net_null virtual devices, no hugepages, no
//! PCI): worker `w` polls rx queue `w` and sends on tx queue `w` of every port, with a
//! buffer pool of its own over the one mempool; RSS configured where the device hashes,
//! reported off where it does not. Needs the `dpdk` feature and the system's DPDK:
//! `cargo test -p pktvec-io --features dpdk --test dpdk_workers`.
#![cfg(feature = "dpdk")]

use pktvec_graph::builtin::{PacketSource, SourceNext};
use pktvec_graph::{
    next_nodes, node_errors, Context, Frame, Graph, GraphBuilder, GraphConfig, Node, NodeKind,
};
use pktvec_io::capture::CountingSink;
use pktvec_io::dpdk::{
    DpdkError, DpdkRx, DpdkRxNext, DpdkTx, Eal, Mempool, Port, PortConfig, RssConfig, RSS_IP,
    RSS_TCP, RSS_UDP,
};
use pktvec_workers::rss::{DEFAULT_KEY, SYMMETRIC_KEY};
use pktvec_workers::runtime::{WorkerInfo, Workers, WorkersConfig, WorkersReport};
use std::sync::Arc;

mod common;

const WORKERS: usize = 2;

fn eal() -> Eal {
    common::eal("workers", 512)
}

/// Two rx and two tx queues, RSS as `rss` says.
fn two_queues(rss: RssConfig) -> PortConfig {
    PortConfig {
        rx_queues: WORKERS as u16,
        tx_queues: WORKERS as u16,
        rss,
        ..PortConfig::default()
    }
}

fn start(eal: &Eal, mempool: &Mempool, dev: &str, cfg: &PortConfig) -> Arc<Port> {
    let id = eal.attach(dev).unwrap();
    Port::start(eal, id, mempool, cfg).unwrap()
}

/// Runs `build` on [`WORKERS`] workers (not pinned) and checks each worker's conservation
/// (balanced, nothing dropped, every buffer back in its pool).
fn run_workers(
    build: impl Fn(WorkerInfo) -> Result<Graph, Box<dyn std::error::Error + Send + Sync>>
        + Send
        + Sync
        + 'static,
) -> WorkersReport {
    let cfg = WorkersConfig {
        pin: false,
        ..WorkersConfig::new(WORKERS)
    };
    let report = Workers::run(cfg, build).unwrap();
    assert_eq!(report.workers.len(), WORKERS);
    for w in &report.workers {
        let c = &w.conservation;
        assert!(c.is_balanced(), "worker {}: {c}", w.worker);
        assert_eq!(c.buffers_in_use, 0, "worker {}: {c}", w.worker);
        assert_eq!(c.dropped, 0, "worker {}: {c}\n{}", w.worker, w.errors);
    }
    report
}

/// The frame worker `w` sends: its length and payload byte are the worker's.
fn frame(w: usize) -> Vec<u8> {
    let mut f = vec![w as u8; 64 + 64 * w];
    f[..12].copy_from_slice(&[2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2]);
    f[12..14].copy_from_slice(&0x88b5u16.to_be_bytes());
    f
}

next_nodes! {
    /// The one arc of [`Own`].
    enum OwnNext {
        Out = "count",
    }
}

node_errors! {
    /// Why [`Own`] drops.
    enum OwnError {
        Foreign = "another worker's packet",
    }
}

/// Passes on the packets of worker `tag` ([`frame`]) and drops any other.
struct Own {
    tag: u8,
}

impl Node for Own {
    type Next = OwnNext;
    type Error = OwnError;
    const KIND: NodeKind = NodeKind::Internal;

    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        for &bi in frame.buffers() {
            let d = cx.packet(bi).data().to_vec();
            if d.len() == 64 + 64 * self.tag as usize && d[14..].iter().all(|&b| b == self.tag) {
                cx.enqueue(bi, OwnNext::Out);
            } else {
                cx.drop_buffer(bi, OwnError::Foreign);
            }
        }
        frame.clear();
    }
}

#[test]
fn two_workers_over_ring_ports_each_on_its_own_queues() {
    let _g = common::serial();
    let eal = eal();
    let mempool = Mempool::new(&eal, 8192, 2048).unwrap();
    // net_ring hashes nothing: the queues come without RSS, whatever the settings.
    let cfg = two_queues(RssConfig::symmetric());
    let a = start(&eal, &mempool, "net_ring40", &cfg);
    let b = start(&eal, &mempool, "net_ring41", &cfg);
    for p in [&a, &b] {
        assert!(!p.rss_active());
        assert_eq!(p.rss().to_string(), "RSS off: the device has no RSS");
        assert_eq!((p.rx_queues(), p.tx_queues()), (2, 2));
    }
    const N: u64 = 20_000;
    let (pa, pb, mp) = (a.clone(), b.clone(), mempool.clone());
    // Worker w: its frames out of a's tx queue w (the ring of a's rx queue w), received
    // there and sent raw out of b's tx queue w, received from b's rx queue w and checked.
    let report = run_workers(move |w| {
        let q = w.id as u16;
        let mut g = GraphBuilder::new(GraphConfig::default());
        g.add("gen", PacketSource::new(vec![frame(w.id)]).with_limit(N))
            .add("tx-a", DpdkTx::new(&pa, q))
            .add("rx-a", DpdkRx::new(&pa, q))
            .add("tx-b", DpdkTx::new(&pb, q))
            .add("rx-b", DpdkRx::new(&pb, q))
            .add("own", Own { tag: w.id as u8 })
            .add("count", CountingSink::new(1))
            .set_next("gen", SourceNext::Out, "tx-a")
            .set_next("rx-a", DpdkRxNext::Out, "tx-b")
            .set_next("rx-b", DpdkRxNext::Out, "own");
        Ok(g.build(mp.worker_pool()?)?)
    });
    for w in &report.workers {
        // In: N generated + N received on each port; out: N sent on each port + N counted.
        assert_eq!(w.conservation.input, 3 * N, "worker {}", w.worker);
        assert_eq!(w.conservation.output, 3 * N);
        for node in ["rx-a", "rx-b", "count"] {
            assert_eq!(w.runtime.row(node).unwrap().packets, N, "{node}");
        }
    }
    for p in [&a, &b] {
        let q = p.queue_stats();
        assert_eq!((q.rx, q.tx), (vec![N; 2], vec![N; 2]), "{}", p.name());
    }
    // Every worker's pool is gone with its graph and the rings are empty: every mbuf back.
    assert_eq!(mempool.available(), mempool.capacity(), "no mbuf leaked");
}

#[test]
fn two_workers_over_null_ports_with_rss() {
    let _g = common::serial();
    let eal = eal();
    let mempool = Mempool::new(&eal, 8192, 2048).unwrap();
    let cfg = two_queues(RssConfig::symmetric());
    let rx = start(&eal, &mempool, "net_null40", &cfg);
    let tx = start(&eal, &mempool, "net_null41", &cfg);
    // net_null keeps an RSS key, hash fields and a 128-entry table (it hashes nothing
    // itself): what the port set is what the device reports.
    for p in [&rx, &tx] {
        assert!(p.rss_active(), "{}", p.rss());
        let s = p.rss();
        assert_eq!(s.hash_fields, (RSS_IP | RSS_TCP | RSS_UDP) & s.supported);
        assert_eq!(
            s.hash_fields,
            RSS_IP | RSS_TCP | RSS_UDP,
            "net_null takes all"
        );
        assert_eq!(s.key.as_deref(), Some(&SYMMETRIC_KEY[..]));
        assert_eq!(s.reta_size, 128);
        let text = s.to_string();
        assert!(
            text.contains("symmetric key, RETA of 128 entries over the rx queues"),
            "{text}"
        );
        assert_eq!(
            p.rss_hash_conf().unwrap(),
            (SYMMETRIC_KEY.to_vec(), s.hash_fields)
        );
        let reta = p.reta().unwrap();
        assert_eq!(reta.len(), 128);
        assert!(reta.iter().enumerate().all(|(i, &q)| q as usize == i % 2));
    }
    const N: u64 = 50_000;
    let (prx, ptx, mp) = (rx.clone(), tx.clone(), mempool.clone());
    let report = run_workers(move |w| {
        let q = w.id as u16;
        let mut g = GraphBuilder::new(GraphConfig::default());
        g.add("rx", DpdkRx::new(&prx, q).with_limit(N))
            .add("tx", DpdkTx::new(&ptx, q))
            .set_next("rx", DpdkRxNext::Out, "tx");
        Ok(g.build(mp.worker_pool()?)?)
    });
    for w in &report.workers {
        assert_eq!(w.conservation.input, N);
        assert_eq!(w.conservation.output, N);
    }
    assert_eq!(report.conservation().output, WORKERS as u64 * N);
    assert_eq!(rx.queue_stats().rx, vec![N; 2], "both workers received");
    assert_eq!(tx.queue_stats().tx, vec![N; 2], "both workers sent");
    assert_eq!(tx.stats().opackets, WORKERS as u64 * N);
    assert_eq!(mempool.available(), mempool.capacity(), "no mbuf leaked");
}

#[test]
fn rss_settings_reach_the_device_or_are_reported_off() {
    let _g = common::serial();
    let eal = eal();
    let mempool = Mempool::new(&eal, 1024, 2048).unwrap();
    // The default key; TCP only, the table left as the device has it.
    let tcp = RssConfig {
        hash_fields: RSS_TCP,
        reta: false,
        ..RssConfig::default()
    };
    let p = start(&eal, &mempool, "net_null42", &two_queues(tcp));
    assert_eq!(p.rss_hash_conf().unwrap(), (DEFAULT_KEY.to_vec(), RSS_TCP));
    assert_eq!(p.rss().reta_size, 0);
    assert!(p
        .rss()
        .to_string()
        .ends_with("default key, the device's RETA"));
    drop(p);
    // A key of the user's, in hex.
    let key: Vec<u8> = (0..40u8).map(|i| i.wrapping_mul(37) ^ 0xa5).collect();
    let hex: String = key.iter().map(|b| format!("{b:02x}")).collect();
    let custom = RssConfig::default().with_hex_key(&hex).unwrap();
    let p = start(&eal, &mempool, "net_null43", &two_queues(custom));
    assert_eq!(p.rss_hash_conf().unwrap().0, key);
    drop(p);
    // One rx queue: no RSS to speak of; four: the table goes round all four.
    let one = PortConfig {
        rss: RssConfig::symmetric(),
        ..PortConfig::default()
    };
    let p = start(&eal, &mempool, "net_null44", &one);
    assert_eq!(p.rss().to_string(), "RSS off: one rx queue");
    drop(p);
    let four = PortConfig {
        rx_queues: 4,
        ..PortConfig::default()
    };
    let p = start(&eal, &mempool, "net_null45", &four);
    let reta = p.reta().unwrap();
    assert!(reta.iter().enumerate().all(|(i, &q)| q as usize == i % 4));
    drop(p);
    // Hash fields the device cannot hash at all: RSS off, the port still starts.
    let odd = RssConfig {
        hash_fields: 1 << 62,
        ..RssConfig::default()
    };
    let p = start(&eal, &mempool, "net_null46", &two_queues(odd));
    assert_eq!(
        p.rss().to_string(),
        "RSS off: the device hashes none of the fields asked"
    );
    drop(p);
    // A key of the wrong length is a clear error, before any port is touched.
    let e = RssConfig::default().with_key(&[0u8; 39]).unwrap_err();
    assert!(matches!(e, DpdkError::RssKey(_)));
    assert_eq!(
        e.to_string(),
        "RSS key: 39 bytes given, 40 needed (80 hex digits)"
    );
    let e = RssConfig::default().with_hex_key("6d5a56").unwrap_err();
    assert!(e.to_string().contains("3 bytes given, 40 needed"), "{e}");
    assert_eq!(mempool.available(), mempool.capacity());
}

#[test]
fn workers_pools_share_a_mempool_and_never_a_buffer() {
    let _g = common::serial();
    let eal = eal();
    let mempool = Mempool::new(&eal, 2048, 2048).unwrap();
    // Several workers' pools at once, but not beside the sole pool, nor it beside them.
    let pools = [
        mempool.worker_pool().unwrap(),
        mempool.worker_pool().unwrap(),
    ];
    let e = mempool.buffer_pool().unwrap_err();
    assert!(matches!(e, DpdkError::PoolTaken(_)), "{e}");
    drop(pools);
    let sole = mempool.buffer_pool().unwrap();
    assert!(matches!(
        mempool.worker_pool(),
        Err(DpdkError::PoolTaken(_))
    ));
    drop(sole);
    // Two threads take, stamp, check and give back buffers of one mempool, again and
    // again: a buffer held by both pools at once would show the other's stamp.
    let threads: Vec<_> = (0..2u8)
        .map(|t| {
            let mut pool = mempool.worker_pool().unwrap();
            std::thread::spawn(move || {
                let mut held = vec![0u32; 300];
                for round in 0..2000u32 {
                    let n = pool.alloc_bulk(&mut held);
                    assert!(n > 0, "round {round}");
                    let stamp = [t, round as u8, (round >> 8) as u8, 0x5a];
                    for &bi in &held[..n] {
                        let mut pkt = pool.packet_mut(bi);
                        pkt.append(64).unwrap()[..4].copy_from_slice(&stamp);
                    }
                    std::thread::yield_now();
                    for &bi in &held[..n] {
                        assert_eq!(pool.data(bi)[..4], stamp, "buffer {bi}");
                    }
                    pool.free_bulk(&held[..n]);
                }
                assert_eq!(pool.in_use(), 0);
                assert_eq!(pool.double_frees(), 0);
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(mempool.available(), mempool.capacity(), "no mbuf leaked");
}
