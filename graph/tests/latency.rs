//! Per-packet latency: measured from an input node to each sink, off by default, and it
//! sees what holds packets up (a slow node, a larger vector).

use pktvec_graph::builtin::{NullSink, PacketSource, SourceNext};
use pktvec_graph::{
    clock, next_nodes, node_errors, Context, Frame, Graph, GraphBuilder, GraphConfig, Node, Verdict,
};
use pktvec_packet::{BufferPool, PoolConfig};

next_nodes! {
    /// Arcs of `slow`.
    pub enum SlowNext {
        Tx = "tx",
    }
}

node_errors! {
    /// Why `slow` drops.
    pub enum SlowError {
        Odd = "odd first byte",
    }
}

/// Spins `per_vector` cycles on each vector; drops frames whose first byte is odd.
struct Slow {
    per_vector: u64,
}

impl Node for Slow {
    type Next = SlowNext;
    type Error = SlowError;
    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        let t = clock::now();
        while clock::now() - t < self.per_vector {
            std::hint::spin_loop();
        }
        cx.process_packets(frame, |p| match p.data().first() {
            Some(b) if b % 2 == 1 => Verdict::Drop(SlowError::Odd),
            _ => Verdict::Next(SlowNext::Tx),
        });
    }
}

fn graph(vector: usize, per_vector: u64, packets: u64) -> Graph {
    let frames: Vec<Vec<u8>> = (0..4u8).map(|i| vec![i; 60]).collect();
    let mut b = GraphBuilder::new(GraphConfig {
        vector_size: vector,
        ..GraphConfig::default()
    });
    b.add("source", PacketSource::new(frames).with_limit(packets))
        .add("slow", Slow { per_vector })
        .add("tx", NullSink)
        .set_next("source", SourceNext::Out, "slow");
    b.build(BufferPool::new(PoolConfig::default()).unwrap())
        .unwrap()
}

#[test]
fn off_by_default_and_measured_per_sink_when_on() {
    let mut g = graph(256, 0, 10_000);
    g.run_until_idle();
    assert!(!g.latency_enabled());
    assert!(g.latency().rows.is_empty());

    let mut g = graph(256, 0, 10_000);
    g.latency_enable(true);
    g.run_until_idle();
    let t = g.latency();
    // half the frames are dropped (odd first byte): both sinks have their packets
    let tx = t.rows.iter().find(|r| r.sink == "tx").unwrap();
    let drop = t.rows.iter().find(|r| r.sink == "drop").unwrap();
    assert_eq!(tx.packets, 5_000);
    assert_eq!(drop.packets, 5_000);
    assert!(tx.p50 <= tx.p99 && tx.p99 <= tx.p999 && tx.p999 <= tx.max);
    assert!(g.conservation().is_balanced());
    let shown = t.to_string();
    assert!(shown.contains("tx") && shown.contains("p99.9"), "{shown}");
    // serde: the rows, not the histograms
    let json = serde_json::to_value(&t).unwrap();
    assert_eq!(json["rows"][0]["packets"], 5_000);
    assert!(json["rows"][0].get("histogram").is_none());
}

#[test]
fn a_slow_node_shows_in_every_packet() {
    // 200,000 cycles a vector: every packet waits at least that long
    let spin = 200_000;
    let mut g = graph(64, spin, 2_000);
    g.latency_enable(true);
    g.run_until_idle();
    let tx = g
        .latency()
        .rows
        .into_iter()
        .find(|r| r.sink == "tx")
        .unwrap();
    assert!(tx.p50 >= spin, "{tx:?}");
    // and stopping keeps what was measured; starting again clears it
    g.latency_enable(false);
    assert_eq!(g.latency().rows.len(), 2);
    g.latency_enable(true);
    assert!(g.latency().rows.is_empty());
}

#[test]
fn merged_tables_add_up() {
    let mut a = graph(256, 0, 4_000);
    let mut b = graph(256, 0, 8_000);
    for g in [&mut a, &mut b] {
        g.latency_enable(true);
        g.run_until_idle();
    }
    let m = pktvec_graph::LatencyTable::merged([&a.latency(), &b.latency()]);
    let tx = m.rows.iter().find(|r| r.sink == "tx").unwrap();
    assert_eq!(tx.packets, 6_000);
}
