//! The DPDK backend on real DPDK virtual devices (no hugepages, no PCI): net_pcap,
//! net_ring loopback and net_null. Needs the `dpdk` feature and the system's DPDK:
//! `cargo test -p pktvec-io --features dpdk --test dpdk`.
#![cfg(feature = "dpdk")]

use pktvec_graph::builtin::{PacketSource, SourceNext};
use pktvec_graph::{
    next_nodes, node_errors, Context, Frame, Graph, GraphBuilder, GraphConfig, Node, NodeKind,
};
use pktvec_io::capture::{read_capture, write_pcap, CountingSink};
use pktvec_io::dpdk::{
    DpdkRx, DpdkRxNext, DpdkTx, Eal, IoForward, Mempool, ObjectLayout, Port, PortConfig,
};
use std::sync::{Arc, Mutex};

mod common;

fn eal() -> Eal {
    common::eal("test", 512)
}

/// Runs `body` under the DPDK lock with the process's EAL and a new mempool of `mbufs`
/// mbufs (laid out as `layout` says), then checks that every mbuf is back in the mempool
/// (`body` drops whatever it built: graphs, ports).
fn with_mempool_as(mbufs: u32, layout: ObjectLayout, body: impl FnOnce(&Eal, &Mempool)) {
    let _g = common::serial();
    let eal = eal();
    let mempool = Mempool::with_object_layout(&eal, mbufs, 2048, layout).unwrap();
    assert_eq!(mempool.available(), mempool.capacity());
    body(&eal, &mempool);
    assert_eq!(mempool.available(), mempool.capacity(), "no mbuf leaked");
}

/// [`with_mempool_as`] with the default layout.
fn with_mempool(mbufs: u32, body: impl FnOnce(&Eal, &Mempool)) {
    with_mempool_as(mbufs, ObjectLayout::Auto, body)
}

/// Attaches the virtual device `dev` and starts it with `cfg` over `mempool`.
fn start_with(eal: &Eal, mempool: &Mempool, dev: &str, cfg: &PortConfig) -> Arc<Port> {
    let id = eal.attach(dev).unwrap();
    Port::start(eal, id, mempool, cfg).unwrap()
}

/// [`start_with`] the default port configuration.
fn start(eal: &Eal, mempool: &Mempool, dev: &str) -> Arc<Port> {
    start_with(eal, mempool, dev, &PortConfig::default())
}

/// A graph of `rx` → `tx` (nodes named "rx" and "tx") over the mempool's buffers.
fn forward(mempool: &Mempool, rx: DpdkRx, tx: DpdkTx) -> Graph {
    let mut b = GraphBuilder::new(GraphConfig::default());
    b.add("rx", rx)
        .add("tx", tx)
        .set_next("rx", DpdkRxNext::Out, "tx");
    b.build(mempool.buffer_pool().unwrap()).unwrap()
}

/// Starts ports `rx_dev` and `tx_dev` and wires rx queue 0 of the first (stopping after
/// `limit` packets) straight to tx queue 0 of the second (`retries` per burst): the graph
/// of the raw hand-over.
fn straight(
    eal: &Eal,
    mempool: &Mempool,
    rx_dev: &str,
    tx_dev: &str,
    limit: u64,
    retries: u32,
) -> (Arc<Port>, Arc<Port>, Graph) {
    let (rx, tx) = (start(eal, mempool, rx_dev), start(eal, mempool, tx_dev));
    let g = forward(
        mempool,
        DpdkRx::new(&rx, 0).with_limit(limit),
        DpdkTx::new(&tx, 0).with_retries(retries),
    );
    (rx, tx, g)
}

/// A graph of rx nodes all wired to one tx node named "tx".
fn fan_in<const N: usize>(
    cfg: GraphConfig,
    mempool: &Mempool,
    rxs: [(&str, DpdkRx); N],
    tx: DpdkTx,
) -> Graph {
    let mut b = GraphBuilder::new(cfg);
    b.add("tx", tx);
    for (name, rx) in rxs {
        b.add(name, rx).set_next(name, DpdkRxNext::Out, "tx");
    }
    b.build(mempool.buffer_pool().unwrap()).unwrap()
}

fn tmp(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("pktvec-dpdk-test-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

/// Frames of assorted sizes (60..1514 bytes), each with a distinct payload.
fn frames(n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| {
            let len = 60 + (i * 97) % 1455;
            let mut f = vec![0u8; len];
            f[..6].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
            f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
            f[12..14].copy_from_slice(&0x88b5u16.to_be_bytes());
            for (k, b) in f[14..].iter_mut().enumerate() {
                *b = (i as u8).wrapping_mul(31).wrapping_add(k as u8);
            }
            f
        })
        .collect()
}

#[test]
fn pcap_port_round_trip_is_zero_copy_and_conserves() {
    // Twice: rx wired straight to tx hands its mbufs over raw (as received, chains and
    // all, as testpmd's io forwarding does); with raw forwarding off every packet is
    // adopted into the pool first, and the chained one is dropped (the pool's buffers are
    // one segment).
    for raw in [true, false] {
        let input = tmp(&format!("xc-in-{raw}.pcap"));
        let output = tmp(&format!("xc-out-{raw}.pcap"));
        let mut sent = frames(3000);
        // One jumbo frame larger than an mbuf: net_pcap chains it.
        sent.push(vec![0xab; 4000]);
        write_pcap(&input, &sent).unwrap();
        let expect_out = if raw { 3001 } else { 3000 };
        with_mempool(4096, |eal, mempool| {
            let dev = format!(
                "net_pcap1{},rx_pcap={},tx_pcap={}",
                raw as u8,
                input.display(),
                output.display()
            );
            let port = start(eal, mempool, &dev);
            let rx = DpdkRx::new(&port, 0).with_raw_forwarding(raw);
            let mut g = forward(mempool, rx, DpdkTx::new(&port, 0));
            assert_eq!(g.run_until_idle(), 3001);
            let c = g.conservation();
            assert!(c.is_balanced(), "{c}");
            assert_eq!(
                (c.input, c.output, c.dropped),
                (3001, expect_out, 3001 - expect_out)
            );
            let errors = g.errors().to_string();
            assert_eq!(errors.contains("multi-segment packet"), !raw, "{errors}");
            let st = port.stats();
            assert_eq!(st.ipackets, c.input, "port rx counter = graph input");
            assert_eq!(st.opackets, c.output, "port tx counter = graph output");
            let tx = g.node::<DpdkTx>("tx").unwrap();
            assert_eq!(tx.sent(), expect_out);
            let lent = g.node::<DpdkRx>("rx").unwrap().lent();
            assert_eq!(
                (lent, tx.sent_raw()),
                if raw { (3001, 3001) } else { (0, 0) }
            );
            drop(g);
            drop(port); // closes the port: flushes tx_pcap, frees the rx ring's mbufs
        });
        let got = read_capture(&output).unwrap().packets;
        assert_eq!(got.len() as u64, expect_out);
        assert!(
            got.iter().zip(&sent).all(|(a, b)| a == b),
            "bytes identical, in order"
        );
    }
}

#[test]
fn ring_loopback_returns_the_same_buffers() {
    with_mempool(2048, |eal, mempool| {
        let port = start(eal, mempool, "net_ring10");
        let sent = frames(64);
        let mut b = GraphBuilder::new(GraphConfig::default());
        b.add("gen", PacketSource::new(sent.clone()).with_limit(10_000))
            .add("tx", DpdkTx::new(&port, 0))
            .add("rx", DpdkRx::new(&port, 0).with_rx_interface(0))
            .add("count", CountingSink::new(1))
            .set_next("gen", SourceNext::Out, "tx")
            .set_next("rx", DpdkRxNext::Out, "count");
        let mut g = b.build(mempool.buffer_pool().unwrap()).unwrap();
        g.run_until_idle();
        let c = g.conservation();
        assert!(c.is_balanced(), "{c}");
        // 10,000 generated and transmitted, 10,000 received back (input counts both).
        assert_eq!(c.input, 20_000);
        assert_eq!(c.dropped, 0);
        let count = g.node::<CountingSink>("count").unwrap();
        // Received packets have no tx interface: the sink counts them in its last slot.
        assert_eq!(count.packets[1], 10_000);
        let bytes: u64 = (0..10_000).map(|i| sent[i % 64].len() as u64).sum();
        assert_eq!(count.bytes[1], bytes, "every byte came back");
        let st = port.stats();
        assert_eq!((st.opackets, st.ipackets), (10_000, 10_000));
    });
}

#[test]
fn full_tx_queue_retries_then_drops_without_leaks() {
    with_mempool(4096, |eal, mempool| {
        let port = start(eal, mempool, "net_ring11");
        // Nobody polls the ring: it fills up, then the driver refuses every burst.
        let mut b = GraphBuilder::new(GraphConfig::default());
        b.add("gen", PacketSource::new(frames(64)).with_limit(3000))
            .add("tx", DpdkTx::new(&port, 0).with_retries(2))
            .set_next("gen", SourceNext::Out, "tx");
        let mut g = b.build(mempool.buffer_pool().unwrap()).unwrap();
        g.run_until_idle();
        let (sent, _) = full_queue_counts(&g, &port, 3000);
        drop(g);
        // The ring still holds the sent mbufs: a second graph receives every one back.
        assert_eq!(drain_ring(mempool, &port), (sent, 0));
    });
}

/// Checks the counts of a graph whose tx node ("tx") found its queue full: some sent, the
/// rest dropped as "tx queue full", sent + dropped = `total`, conservation, the port's tx
/// counter; returns the packets sent and how many of them went raw.
fn full_queue_counts(g: &Graph, port: &Port, total: u64) -> (u64, u64) {
    let c = g.conservation();
    assert!(c.is_balanced(), "{c}");
    let tx = g.node::<DpdkTx>("tx").unwrap();
    let (sent, full) = (tx.sent(), tx.queue_full());
    assert!(sent > 0 && full > 0, "sent {sent}, dropped {full}");
    assert_eq!(sent + full, total);
    assert_eq!((c.output, c.dropped), (sent, full));
    assert_eq!(port.stats().opackets, sent);
    let errors = g.errors().to_string();
    assert!(errors.contains("tx queue full"), "{errors}");
    (sent, tx.sent_raw())
}

/// Receives what `port`'s ring still holds into a counting sink, through a new graph
/// (the rx node adopts: its next takes no raw buffers); returns how many packets came
/// back and how many were lent raw.
fn drain_ring(mempool: &Mempool, port: &Arc<Port>) -> (u64, u64) {
    let mut b = GraphBuilder::new(GraphConfig::default());
    b.add("rx", DpdkRx::new(port, 0))
        .add("count", CountingSink::new(1))
        .set_next("rx", DpdkRxNext::Out, "count");
    let mut g = b.build(mempool.buffer_pool().unwrap()).unwrap();
    g.run_until_idle();
    (
        g.conservation().input,
        g.node::<DpdkRx>("rx").unwrap().lent(),
    )
}

next_nodes! {
    /// The arc of [`Twice`].
    enum TwiceNext {
        Out = "tx",
    }
}

node_errors! {
    /// [`Twice`] drops nothing.
    enum TwiceError {
        Never = "never",
    }
}

/// A faulty node: sends every buffer on twice.
struct Twice(Vec<u32>);

impl Node for Twice {
    type Next = TwiceNext;
    type Error = TwiceError;
    const KIND: NodeKind = NodeKind::Internal;

    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        self.0.clear();
        self.0.extend_from_slice(frame.buffers());
        frame.clear();
        cx.enqueue_slice(&self.0, TwiceNext::Out);
        cx.enqueue_slice(&self.0, TwiceNext::Out);
    }
}

#[test]
fn a_buffer_sent_twice_is_transmitted_once() {
    with_mempool(2048, |eal, mempool| {
        let port = start(eal, mempool, "net_null20");
        let mut b = GraphBuilder::new(GraphConfig::default());
        b.add("gen", PacketSource::new(frames(8)).with_limit(1000))
            .add("twice", Twice(Vec::new()))
            .add("tx", DpdkTx::new(&port, 0))
            .set_next("gen", SourceNext::Out, "twice");
        let mut g = b.build(mempool.buffer_pool().unwrap()).unwrap();
        g.run_until_idle();
        // The second copy of each index is refused by the pool (a double free) and leaves
        // a hole in the burst that is closed before the driver sees it.
        assert_eq!(g.node::<DpdkTx>("tx").unwrap().sent(), 1000);
        assert_eq!(port.stats().opackets, 1000);
        assert_eq!(g.pool().double_frees(), 1000);
        assert_eq!(g.pool().in_use(), 0);
    });
}

/// Forwards 200,000 packets net_null → net_null over a mempool of `mbufs` mbufs laid out
/// as `layout`, raw or adopted; returns the mempool's object stride.
fn null_forwarding_as(
    mbufs: u32,
    layout: ObjectLayout,
    raw: bool,
    rx_dev: &str,
    tx_dev: &str,
) -> usize {
    let mut stride = 0;
    with_mempool_as(mbufs, layout, |eal, mempool| {
        stride = mempool.object_stride();
        let rx = start(eal, mempool, rx_dev);
        let tx = start(eal, mempool, tx_dev);
        let mut g = forward(
            mempool,
            DpdkRx::new(&rx, 0)
                .with_limit(200_000)
                .with_raw_forwarding(raw),
            DpdkTx::new(&tx, 0),
        );
        assert_eq!(g.run_until_idle(), 200_000);
        let c = g.conservation();
        assert!(c.is_balanced() && c.output == 200_000, "{c}");
        assert_eq!(tx.stats().opackets, 200_000);
        let sent_raw = g.node::<DpdkTx>("tx").unwrap().sent_raw();
        assert_eq!(sent_raw, if raw { 200_000 } else { 0 });
        assert_eq!(g.pool().in_use(), 0);
        let rt = g.runtime().to_string();
        assert!(rt.contains("rx") && rt.contains("tx"), "{rt}");
    });
    stride
}

/// [`null_forwarding_as`], raw (rx wired straight to tx).
fn null_forwarding(mbufs: u32, layout: ObjectLayout, rx_dev: &str, tx_dev: &str) -> usize {
    null_forwarding_as(mbufs, layout, true, rx_dev, tx_dev)
}

#[test]
fn null_ports_forward_in_bursts_without_leaks() {
    null_forwarding(8192, ObjectLayout::Auto, "net_null10", "net_null11");
    null_forwarding_as(8192, ObjectLayout::Auto, false, "net_null30", "net_null31");
}

#[test]
fn raw_forwarding_into_a_full_queue_drops_without_leaks() {
    with_mempool(4096, |eal, mempool| {
        // Nobody polls the ring: once it is full the driver refuses the raw bursts, which
        // are adopted and dropped as "tx queue full".
        let (_, port, mut g) = straight(eal, mempool, "net_null32", "net_ring12", 3000, 1);
        assert_eq!(g.run_until_idle(), 3000);
        let (sent, sent_raw) = full_queue_counts(&g, &port, 3000);
        assert_eq!(sent_raw, sent, "every packet lent raw");
        assert_eq!(g.node::<DpdkRx>("rx").unwrap().lent(), 3000);
        assert_eq!(g.pool().in_use(), 0);
        drop(g);
        // Empty the ring: every sent mbuf comes back once.
        assert_eq!(drain_ring(mempool, &port), (sent, 0));
    });
}

#[test]
fn testpmd_io_loop_forwards_and_frees_what_tx_refuses() {
    with_mempool(4096, |eal, mempool| {
        // Into a ring nobody polls: the first bursts fit, then the queue refuses and the
        // loop frees the refused mbufs (testpmd's drop), counted.
        let from = start(eal, mempool, "net_null47");
        let to = start(eal, mempool, "net_ring14");
        let mut fwd = IoForward::new(&from, &to, 32).with_cycle_recording(true);
        let mut received = 0u64;
        while received < 3000 {
            received += fwd.run_once() as u64;
        }
        let (sent, dropped) = (fwd.forwarded(), fwd.dropped());
        assert!(sent > 0 && dropped > 0, "sent {sent}, dropped {dropped}");
        assert_eq!(sent + dropped, received);
        assert_eq!(from.stats().ipackets, received);
        assert_eq!(to.stats().opackets, sent);
        assert!(fwd.cycles() > 0);
        drop(fwd);
        // The ring holds exactly the forwarded mbufs; the dropped ones are back in the
        // mempool already (checked by `with_mempool` once the ring is drained).
        assert_eq!(drain_ring(mempool, &to), (sent, 0));
    });
}

#[test]
fn raw_buffers_still_pending_go_back_when_the_graph_is_dropped() {
    with_mempool(4096, |eal, mempool| {
        let rx = start(eal, mempool, "net_null33");
        let tx = start(eal, mempool, "net_null34");
        // Two rx nodes lend 32 each into tx's pending vector; vectors of 32 and one node
        // call per run: tx sends the first 32, the other 32 stay pending, raw.
        let cfg = GraphConfig {
            vector_size: 32,
            max_calls_per_run: 1,
            ..GraphConfig::default()
        };
        let rx_a = DpdkRx::new(&rx, 0).with_limit(32);
        let rx_b = DpdkRx::new(&rx, 0).with_limit(32);
        let mut g = fan_in(
            cfg,
            mempool,
            [("rx-a", rx_a), ("rx-b", rx_b)],
            DpdkTx::new(&tx, 0),
        );
        g.run_once();
        let c = g.conservation();
        assert_eq!((c.input, c.output, c.in_flight), (64, 32, 32), "{c}");
        assert_eq!(g.node::<DpdkTx>("tx").unwrap().sent_raw(), 32);
        assert_eq!(mempool.available(), mempool.capacity() - 32);
        // `with_mempool` checks that dropping the graph gave all 32 back.
        drop(g);
    });
}

#[test]
fn a_trace_sees_adopted_packets_then_raw_forwarding_resumes() {
    with_mempool(4096, |eal, mempool| {
        let (_, tx, mut g) = straight(eal, mempool, "net_null35", "net_null36", 1000, 8);
        g.trace_add(3);
        g.run_once();
        let shown = g.trace().to_string();
        assert!(shown.contains("rx queue 0: len 64"), "{shown}");
        // The first vector was adopted (traced), the rest go raw.
        g.run_until_idle();
        let (lent, sent_raw) = (
            g.node::<DpdkRx>("rx").unwrap().lent(),
            g.node::<DpdkTx>("tx").unwrap().sent_raw(),
        );
        assert_eq!((lent, sent_raw), (1000 - 256, 1000 - 256));
        assert_eq!(tx.stats().opackets, 1000);
    });
}

#[test]
fn both_object_layouts_forward_without_leaks() {
    // Without hugepages the standard layout puts one mbuf per 4 KiB page; packed, they
    // follow each other (2,368 bytes with a 2,048-byte room). The EAL here runs
    // IOVA-as-VA, so the default is packed. (The standard layout has no fallback: a small
    // pool, 256 mbufs, so that the EAL's memory, fragmented by the tests that ran before in
    // this process, holds it in one piece; with 1,024 mbufs it failed in about one run of
    // four once six more tests ran before it, whatever the EAL's -m.)
    let standard = null_forwarding(256, ObjectLayout::Standard, "net_null15", "net_null16");
    let packed = null_forwarding(1024, ObjectLayout::Packed, "net_null17", "net_null18");
    assert_eq!(standard % 4096, 0, "one object per page: {standard}");
    assert!(packed < standard && packed % 4096 != 0, "{packed}");
    let auto = null_forwarding(1024, ObjectLayout::Auto, "net_null21", "net_null22");
    assert_eq!(auto, packed);
}

#[test]
fn rx_repeats_short_driver_bursts_until_the_vector_is_full() {
    with_mempool(8192, |eal, mempool| {
        let rx = start(eal, mempool, "net_null13");
        let tx = start(eal, mempool, "net_null14");
        let total = 256 * 40 + 100;
        let mut b = GraphBuilder::new(GraphConfig::default());
        // Bursts of 7 (not a divisor of 256), and a node asking for more than a vector.
        b.add("rx7", DpdkRx::new(&rx, 0).with_burst(7).with_limit(total))
            .add(
                "rx-big",
                DpdkRx::new(&rx, 0).with_burst(5000).with_limit(total),
            )
            .add("tx", DpdkTx::new(&tx, 0))
            .set_next("rx7", DpdkRxNext::Out, "tx")
            .set_next("rx-big", DpdkRxNext::Out, "tx");
        let mut g = b.build(mempool.buffer_pool().unwrap()).unwrap();
        assert_eq!(g.run_until_idle(), 2 * total);
        let rt = g.runtime();
        for name in ["rx7", "rx-big"] {
            let row = rt.row(name).unwrap();
            assert_eq!(row.packets, total, "{name}");
            // 40 full vectors of 256, then the 100 left under the limit.
            assert_eq!(row.vectors, 41, "{name}: {row:?}");
        }
        let c = g.conservation();
        assert!(c.is_balanced() && c.output == 2 * total, "{c}");
        assert_eq!(tx.stats().opackets, 2 * total);
    });
}

#[test]
fn several_queues_each_polled_by_its_own_node() {
    with_mempool(8192, |eal, mempool| {
        let cfg = PortConfig {
            rx_queues: 2,
            tx_queues: 2,
            ..PortConfig::default()
        };
        let port = start_with(eal, mempool, "net_null12", &cfg);
        assert_eq!((port.rx_queues(), port.tx_queues()), (2, 2));
        let rx0 = DpdkRx::new(&port, 0).with_limit(50_000);
        let rx1 = DpdkRx::new(&port, 1).with_limit(50_000);
        let cfg = GraphConfig::default();
        let mut g = fan_in(
            cfg,
            mempool,
            [("rx0", rx0), ("rx1", rx1)],
            DpdkTx::new(&port, 1),
        );
        assert_eq!(g.run_until_idle(), 100_000);
        let c = g.conservation();
        assert!(c.is_balanced() && c.output == 100_000, "{c}");
        assert_eq!(g.runtime().row("rx1").unwrap().packets, 50_000);
    });
}

#[test]
fn bad_inputs_are_clear_errors() {
    with_mempool(256, |eal, mempool| {
        // A second init with other arguments is refused, not a crash.
        assert!(Eal::init("--no-huge -m 64").is_err());
        // Missing port.
        let e = eal.port_by_name("net_nothing").unwrap_err().to_string();
        assert!(e.contains("net_nothing"), "{e}");
        assert!(Port::start(eal, 31, mempool, &PortConfig::default()).is_err());
        // Too few mbufs, or more than the EAL memory holds.
        assert!(Mempool::new(eal, 10, 2048).is_err());
        let e = Mempool::new(eal, 10_000_000, 2048).unwrap_err().to_string();
        assert!(e.contains("mempool"), "{e}");
        // A malformed capture: the pcap device refuses to probe.
        let bad = tmp("garbage.pcap");
        std::fs::write(&bad, b"this is not a pcap file at all").unwrap();
        let e = eal
            .attach(&format!("net_pcap19,rx_pcap={}", bad.display()))
            .unwrap_err()
            .to_string();
        assert!(e.contains("rte_dev_probe"), "{e}");
        // Too many queues for the device.
        let id = eal.attach("net_null19").unwrap();
        let cfg = PortConfig {
            rx_queues: u16::MAX,
            ..PortConfig::default()
        };
        assert!(Port::start(eal, id, mempool, &cfg).is_err());
    });
}

next_nodes! {
    /// The one arc of [`Faulty`].
    enum FaultyNext {
        Out = "tx",
    }
}

node_errors! {
    /// [`Faulty`] drops nothing.
    enum FaultyError {
        Never = "never",
    }
}

/// What [`Faulty`] does to each frame.
type FrameEdit = Box<dyn FnMut(&mut pktvec_packet::BufferPool, &mut Vec<u32>) + Send>;

/// A node with a bug, as a user's node might have one: `f` edits each frame (metadata,
/// indices) before it goes on to the tx node.
struct Faulty(FrameEdit);

impl Node for Faulty {
    type Next = FaultyNext;
    type Error = FaultyError;
    const KIND: NodeKind = NodeKind::Internal;

    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        let mut bis = frame.buffers().to_vec();
        frame.clear();
        (self.0)(cx.pool_mut(), &mut bis);
        cx.enqueue_slice(&bis, FaultyNext::Out);
    }
}

/// gen (`n` packets of 60..1514 bytes) → faulty(`f`) → `tx`.
fn faulty_graph(
    mempool: &Mempool,
    n: u64,
    f: impl FnMut(&mut pktvec_packet::BufferPool, &mut Vec<u32>) + Send + 'static,
    tx: DpdkTx,
) -> Graph {
    let mut b = GraphBuilder::new(GraphConfig::default());
    b.add("gen", PacketSource::new(frames(8)).with_limit(n))
        .add("faulty", Faulty(Box::new(f)))
        .add("tx", tx)
        .set_next("gen", SourceNext::Out, "faulty");
    b.build(mempool.buffer_pool().unwrap()).unwrap()
}

#[test]
fn a_place_beyond_the_buffer_is_sent_as_the_accessors_show_it() {
    with_mempool(2048, |eal, mempool| {
        let (input, output) = (tmp("beyond-in.pcap"), tmp("beyond-out.pcap"));
        write_pcap(&input, &[]).unwrap();
        let dev = format!(
            "net_pcap50,rx_pcap={},tx_pcap={}",
            input.display(),
            output.display()
        );
        let port = start(eal, mempool, &dev);
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = seen.clone();
        // The buffer is 2,176 bytes (headroom and data room): offset 2,100 leaves 76.
        let mut g = faulty_graph(
            mempool,
            10,
            move |pool, bis| {
                for &bi in bis.iter() {
                    let m = pool.meta_mut(bi);
                    (m.data_offset, m.len) = (2100, 5000);
                    s.lock().unwrap().push(pool.data(bi).to_vec());
                }
            },
            DpdkTx::new(&port, 0),
        );
        g.run_until_idle();
        assert_eq!(g.node::<DpdkTx>("tx").unwrap().sent(), 10);
        drop(g);
        drop(port);
        let sent = read_capture(&output).unwrap().packets;
        let seen = seen.lock().unwrap();
        assert_eq!(seen.iter().map(Vec::len).collect::<Vec<_>>(), vec![76; 10]);
        assert_eq!(
            sent, *seen,
            "the driver sent what the nodes saw, not past the buffer"
        );
    });
}

#[test]
fn bad_indices_from_a_node_are_refused_not_sent() {
    with_mempool(2048, |eal, mempool| {
        let ports = [
            start(eal, mempool, "net_null51"),
            start(eal, mempool, "net_null52"),
        ];
        for by_interface in [false, true] {
            let tx = if by_interface {
                DpdkTx::by_interface(&[(ports[0].clone(), 0), (ports[1].clone(), 0)])
            } else {
                DpdkTx::new(&ports[0], 0)
            };
            let mut g = faulty_graph(
                mempool,
                1000,
                |pool, bis| {
                    for &bi in bis.iter() {
                        pool.meta_mut(bi).tx_if = (bi % 2) as u16;
                    }
                    // Indices no pool holds: out of range, and (freed first) one it gave up.
                    let gone = bis.pop().unwrap();
                    assert_eq!(pool.free_bulk(&[gone, 70_000]), 1, "a bad index in a free");
                    bis.extend([u32::MAX, 70_000, gone]);
                },
                tx,
            );
            g.run_until_idle();
            let sent = g.node::<DpdkTx>("tx").unwrap().sent();
            let vectors = 1000u64.div_ceil(256);
            assert_eq!(sent, 1000 - vectors, "by interface {by_interface}");
            // Per vector: 70,000 in the free, then the three bad indices at the tx node.
            assert_eq!(g.pool().double_frees(), 4 * vectors);
            assert_eq!(g.pool().in_use(), 0);
        }
    });
}

#[test]
fn a_queue_the_port_lacks_is_refused_when_the_node_is_made() {
    with_mempool(1024, |eal, mempool| {
        let port = start(eal, mempool, "net_null53");
        let text = |f: &mut dyn FnMut()| {
            let e = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_err();
            e.downcast_ref::<String>().cloned().unwrap_or_default()
        };
        let rx = text(&mut || {
            DpdkRx::new(&port, 5);
        });
        assert!(rx.contains("has 1 rx queues, no queue 5"), "{rx}");
        let tx = text(&mut || {
            DpdkTx::new(&port, 7);
        });
        assert!(tx.contains("has 1 tx queues, no queue 7"), "{tx}");
    });
}
