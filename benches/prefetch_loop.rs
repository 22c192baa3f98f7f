//! A header-touching node (IPv4 TTL decrement with incremental checksum) over buffer pools
//! larger than L2 and than the last-level cache, visited in random order, with the
//! prefetching 4/2/1 loop at distance d = 0 (no prefetch), 2, 4 and 8.
//!
//! ```text
//! cargo bench --bench prefetch_loop
//! ```
//! Results and their discussion: docs/results/graph-overhead.md.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use pktvec::graph::{
    next_nodes, Context, Frame, GraphBuilder, GraphConfig, NoError, NoNext, Node, NodeKind, Verdict,
};
use pktvec::packet::builder::PacketBuilder;
use pktvec::packet::wire::Ipv4Packet;
use pktvec::packet::{BufferPool, PoolConfig};
use std::net::Ipv4Addr;
use std::time::Duration;

next_nodes! {
    /// Arc of the source.
    pub enum SourceNext { Out = "ip4-ttl" }
}

/// Input node: each poll emits the next 256 indices of a shuffled list of allocated,
/// pre-filled buffers (no allocation, no copy of packet bytes).
struct IndexSource {
    idx: Vec<u32>,
    pos: usize,
}

impl Node for IndexSource {
    type Next = SourceNext;
    type Error = NoError;
    const KIND: NodeKind = NodeKind::Input;
    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        let n = cx.vector_size().min(self.idx.len());
        if self.pos + n > self.idx.len() {
            self.pos = 0;
        }
        frame.extend_from_slice(&self.idx[self.pos..self.pos + n]);
        self.pos += n;
        cx.enqueue_all(frame, SourceNext::Out);
    }
}

/// Sink that forgets the indices: the buffers stay allocated and are replayed.
struct Discard;

impl Node for Discard {
    type Next = NoNext;
    type Error = NoError;
    const KIND: NodeKind = NodeKind::Sink;
    fn process(&mut self, _cx: &mut Context<'_, Self>, frame: &mut Frame) {
        frame.clear();
    }
}

next_nodes! {
    /// Arc of the TTL node.
    pub enum TtlNext { Out = "sink" }
}

/// Reads the Ethernet/IPv4 headers and rewrites TTL and checksum: one metadata line and
/// one data line per packet.
struct TtlNode;

impl Node for TtlNode {
    type Next = TtlNext;
    type Error = NoError;
    #[inline]
    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        cx.process_packets(frame, |p| {
            let off = p.meta().l3_offset as usize;
            if let Some(l3) = p.data_mut().get_mut(off..) {
                if let Ok(mut ip) = Ipv4Packet::new_checked(l3) {
                    if ip.decrement_ttl_update_checksum().is_none() {
                        ip.set_ttl(255);
                        ip.fill_checksum();
                    }
                }
            }
            Verdict::Next(TtlNext::Out)
        });
    }
}

fn shuffled(n: u32, mut seed: u64) -> Vec<u32> {
    let mut v: Vec<u32> = (0..n).collect();
    for i in (1..v.len()).rev() {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        v.swap(i, (seed % (i as u64 + 1)) as usize);
    }
    v
}

fn bench(c: &mut Criterion) {
    let frame = PacketBuilder::ethernet([2, 0, 0, 0, 0, 1].into(), [2, 0, 0, 0, 0, 2].into())
        .ipv4(Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2))
        .udp(1, 2)
        .payload_len(18)
        .build();
    // 2,176 B per buffer + 64 B metadata: 512 buffers ≈ 1.1 MiB (inside L2),
    // 65,536 ≈ 147 MiB (above the 32 MiB L3 this VM reports), 262,144 ≈ 587 MiB (above
    // "hundreds of MiB", what the host's L3 may really be).
    for buffers in [512u32, 65_536, 262_144] {
        let mut pool = BufferPool::new(PoolConfig {
            buffers,
            ..PoolConfig::default()
        })
        .unwrap();
        let mut idx = vec![0u32; buffers as usize];
        pool.alloc_bulk_exact(&mut idx).unwrap();
        for &bi in &idx {
            pool.packet_mut(bi)
                .append(frame.len())
                .unwrap()
                .copy_from_slice(&frame);
            pool.meta_mut(bi).l3_offset = 14;
        }
        let mut b = GraphBuilder::new(GraphConfig::default());
        b.add(
            "source",
            IndexSource {
                idx: shuffled(buffers, 0x9e3779b97f4a7c15),
                pos: 0,
            },
        )
        .add("ip4-ttl", TtlNode)
        .add("sink", Discard);
        let mut g = b.build(pool).unwrap();
        let mib = buffers as f64 * (2176.0 + 64.0) / (1 << 20) as f64;
        let mut group = c.benchmark_group(format!("prefetch_loop/pool_{buffers}_{mib:.0}MiB"));
        group.throughput(Throughput::Elements(256));
        for d in [0usize, 2, 4, 8] {
            g.set_prefetch_distance(d);
            group.bench_function(BenchmarkId::new("distance", d), |bch| {
                bch.iter(|| g.run_once())
            });
        }
        group.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(30);
    targets = bench
}
criterion_main!(benches);
