//! Raw hand-over ([`Context::enqueue_raw`]): an input node lends buffers the pool does not
//! hold to a node that takes raw buffers; everything else sees only buffers the pool holds.
//!
//! The "backend" here is the test itself: buffers allocated and then released from an
//! owned pool are out of it (not held, not on its free list), as a driver's mbufs are.

use pktvec_graph::builtin::{NullSink, PacketSource, SourceNext};
use pktvec_graph::{
    next_nodes, Context, Frame, Graph, GraphBuilder, GraphConfig, NoError, NoNext, Node, NodeKind,
};
use pktvec_packet::{BufferPool, PoolConfig};

next_nodes! {
    /// The lender's one arc.
    pub enum LendNext { Out = "sink" }
}

/// Input node lending buffers of the "backend" (`stock`), `per_call` a call: raw when the
/// graph allows it, otherwise adopted first (as a DPDK rx node does).
struct Lender {
    stock: Vec<u32>,
    per_call: usize,
    raw_calls: u64,
    adopted_calls: u64,
}

impl Lender {
    fn new(stock: Vec<u32>, per_call: usize) -> Self {
        Lender {
            stock,
            per_call,
            raw_calls: 0,
            adopted_calls: 0,
        }
    }
}

impl Node for Lender {
    type Next = LendNext;
    type Error = NoError;
    const KIND: NodeKind = NodeKind::Input;
    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        let n = self.per_call.min(self.stock.len()).min(frame.room());
        if n == 0 {
            return;
        }
        let at = self.stock.len() - n;
        frame.extend_from_slice(&self.stock[at..]);
        self.stock.truncate(at);
        // SAFETY: the stock are buffers released from the pool (out of it, as a driver's),
        // handed over once each.
        if unsafe { cx.enqueue_raw(frame, LendNext::Out) } {
            assert!(frame.is_empty());
            self.raw_calls += 1;
            return;
        }
        assert_eq!(frame.len(), n, "a refused raw hand-over leaves the frame");
        for &bi in frame.buffers() {
            // SAFETY: as above.
            assert!(unsafe { cx.pool_mut().adopt_as(bi, 64, 60, 0) });
        }
        self.adopted_calls += 1;
        cx.enqueue_all(frame, LendNext::Out);
    }
}

/// Sink taking raw buffers (when `raw` is set): checks that exactly the raw prefix is
/// out of the pool, adopts it, and frees the frame.
struct RawSink {
    raw: bool,
    frames: Vec<(usize, usize)>,
}

impl RawSink {
    fn new(raw: bool) -> Self {
        RawSink {
            raw,
            frames: Vec::new(),
        }
    }
    fn raw_packets(&self) -> usize {
        self.frames.iter().map(|f| f.0).sum()
    }
    fn packets(&self) -> usize {
        self.frames.iter().map(|f| f.1).sum()
    }
}

impl Node for RawSink {
    type Next = NoNext;
    type Error = NoError;
    const KIND: NodeKind = NodeKind::Sink;
    fn takes_raw(&self) -> bool {
        self.raw
    }
    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        let r = frame.raw_len();
        assert!(r <= frame.len());
        assert!(
            r == 0 || self.raw,
            "raw buffers reached a node that does not take them"
        );
        self.frames.push((r, frame.len()));
        for (i, &bi) in frame.buffers().iter().enumerate() {
            assert_eq!(
                cx.pool().is_allocated(bi),
                i >= r,
                "buffer {bi} at {i}, raw {r}"
            );
            // Through the pool a raw buffer is an empty packet.
            if i < r {
                assert!(cx.packet(bi).data().is_empty());
            }
        }
        for &bi in &frame.buffers()[..r] {
            // SAFETY: raw buffers are the graph's to hand over (the lender's contract).
            assert!(unsafe { cx.pool_mut().adopt(bi) });
        }
        cx.free_frame(frame);
    }
}

const BUFFERS: u32 = 256;

/// A pool and `n` of its buffers taken out of it (allocated, then released).
fn pool_and_stock(n: usize) -> (BufferPool, Vec<u32>) {
    let mut pool = BufferPool::new(PoolConfig {
        buffers: BUFFERS,
        ..PoolConfig::default()
    })
    .unwrap();
    let mut stock = vec![0u32; n];
    assert_eq!(pool.alloc_bulk(&mut stock), n);
    for &bi in &stock {
        assert!(pool.release(bi));
    }
    assert_eq!(pool.in_use(), 0);
    (pool, stock)
}

fn graph(v: usize, pool: BufferPool, nodes: impl FnOnce(&mut GraphBuilder)) -> Graph {
    let mut b = GraphBuilder::new(GraphConfig {
        vector_size: v,
        ..GraphConfig::default()
    });
    nodes(&mut b);
    b.build(pool).unwrap()
}

/// Every lent buffer is back on the free list, none is held, the counts balance.
fn assert_all_back(g: &Graph) {
    let c = g.conservation();
    assert!(c.is_balanced(), "{c}");
    assert_eq!(c.in_flight, 0, "{c}");
    let p = g.pool();
    assert_eq!(p.in_use(), 0);
    assert_eq!(p.free_count(), BUFFERS as usize);
    assert_eq!((p.bad_adopts(), p.double_frees()), (0, 0));
}

#[test]
fn raw_frames_reach_only_a_sink_that_takes_them_and_whole() {
    for takes_raw in [true, false] {
        let (pool, stock) = pool_and_stock(40);
        let mut g = graph(16, pool, |b| {
            b.add("lend", Lender::new(stock, 16))
                .add("sink", RawSink::new(takes_raw));
        });
        g.run_until_idle();
        let l = g.node::<Lender>("lend").unwrap();
        let s = g.node::<RawSink>("sink").unwrap();
        if takes_raw {
            assert_eq!((l.raw_calls, l.adopted_calls), (3, 0));
            assert_eq!(s.frames, vec![(16, 16), (16, 16), (8, 8)]);
        } else {
            // A node that does not take raw buffers gets adopted ones.
            assert_eq!((l.raw_calls, l.adopted_calls), (0, 3));
            assert_eq!(s.frames, vec![(0, 16), (0, 16), (0, 8)]);
        }
        let rt = g.runtime();
        assert_eq!(rt.row("lend").unwrap().packets, 40);
        assert_eq!(rt.row("sink").unwrap().packets, 40);
        assert_all_back(&g);
    }
}

#[test]
fn raw_and_held_buffers_share_a_vector_raw_first() {
    // Both inputs feed the sink. Inputs are polled in the order they were added: after
    // the lender's raw frame, the source's packets are appended behind it; with the source
    // first, the lender finds held packets pending and adopts instead (then lends raw once
    // the source has run dry).
    for lender_first in [true, false] {
        let (pool, stock) = pool_and_stock(48);
        let mut g = graph(64, pool, |b| {
            if lender_first {
                b.add("lend", Lender::new(stock, 16));
                b.add("src", PacketSource::new(vec![vec![7u8; 60]]).with_limit(48));
            } else {
                b.add("src", PacketSource::new(vec![vec![7u8; 60]]).with_limit(48));
                b.add("lend", Lender::new(stock, 16));
            }
            b.add("sink", RawSink::new(true));
            b.set_next("src", SourceNext::Out, "sink");
        });
        g.run_until_idle();
        let l = g.node::<Lender>("lend").unwrap();
        let s = g.node::<RawSink>("sink").unwrap();
        assert_eq!(s.packets(), 96);
        if lender_first {
            assert_eq!((l.raw_calls, l.adopted_calls), (3, 0));
            assert_eq!(s.raw_packets(), 48);
            // The first vector: 16 raw, then the source's 48 behind them.
            assert_eq!(s.frames, vec![(16, 64), (16, 16), (16, 16)]);
        } else {
            // The source's 48 come first in the first run; afterwards it has none left.
            assert_eq!((l.raw_calls, l.adopted_calls), (2, 1));
            assert_eq!(s.frames, vec![(0, 64), (16, 16), (16, 16)]);
        }
        assert_all_back(&g);
    }
}

#[test]
fn more_raw_than_a_vector_is_split_with_its_prefix() {
    // Two lenders fill the sink's pending vector with 2 x 8 raw buffers; vectors of 8.
    let (pool, stock) = pool_and_stock(32);
    let (a, b2) = stock.split_at(16);
    let (a, b2) = (a.to_vec(), b2.to_vec());
    let mut g = graph(8, pool, |b| {
        b.add("lend-a", Lender::new(a, 8))
            .add("lend-b", Lender::new(b2, 8))
            .add("sink", RawSink::new(true))
            .set_next("lend-b", LendNext::Out, "sink");
    });
    g.run_until_idle();
    let s = g.node::<RawSink>("sink").unwrap();
    assert_eq!(s.frames, vec![(8, 8); 4]);
    assert_all_back(&g);
}

#[test]
fn trace_and_capture_turn_raw_hand_over_off() {
    let (pool, stock) = pool_and_stock(64);
    let mut g = graph(16, pool, |b| {
        b.add("lend", Lender::new(stock, 16))
            .add("sink", RawSink::new(true));
    });
    // A trace wants to mark packets: adopted.
    g.trace_add(4);
    g.run_once();
    assert_eq!(g.node::<Lender>("lend").unwrap().adopted_calls, 1);
    assert!(g.trace().to_string().contains("lend"), "{}", g.trace());
    // Its budget is spent (the trace is kept, nothing more to mark): raw again, and the
    // trace does not read the raw buffers' metadata.
    g.run_once();
    assert_eq!(g.node::<Lender>("lend").unwrap().raw_calls, 1);
    assert_eq!(g.trace().packets().len(), 4);
    // A capture of the lender's output reads the bytes: adopted.
    let dir = std::env::temp_dir().join(format!("pktvec-raw-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("lend.pcap");
    g.capture_start("lend", &path, None).unwrap();
    g.run_once();
    assert_eq!(g.capture_stop("lend").unwrap(), 16);
    g.run_until_idle();
    let l = g.node::<Lender>("lend").unwrap();
    assert_eq!((l.raw_calls, l.adopted_calls), (2, 2));
    assert_eq!(g.node::<RawSink>("sink").unwrap().raw_packets(), 32);
    assert_all_back(&g);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Receives its frame and sends it on whole (a node that takes raw buffers but forwards
/// them: its raw prefix is lost as raw, the buffers arrive as not held).
struct Forward;
next_nodes! {
    /// Forward's arc.
    pub enum FwdNext { Out = "null" }
}
impl Node for Forward {
    type Next = FwdNext;
    type Error = NoError;
    fn takes_raw(&self) -> bool {
        true
    }
    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        assert_eq!(frame.raw_len(), frame.len());
        cx.enqueue_all(frame, FwdNext::Out);
    }
}

#[test]
fn an_enqueued_frame_is_never_raw_downstream() {
    // The documented misuse: `Forward` does not adopt. Its buffers reach `null` as
    // ordinary indices the pool does not hold, so freeing them is refused and counted;
    // they are lost to the backend (the test's stock), never freed twice.
    let (pool, stock) = pool_and_stock(8);
    let mut g = graph(8, pool, |b| {
        b.add("lend", Lender::new(stock, 8))
            .add("fwd", Forward)
            .add("null", NullSink)
            .set_next("lend", LendNext::Out, "fwd");
    });
    g.run_until_idle();
    assert_eq!(g.node::<Lender>("lend").unwrap().raw_calls, 1);
    let p = g.pool();
    assert_eq!((p.in_use(), p.double_frees()), (0, 8));
    assert_eq!(p.free_count(), BUFFERS as usize - 8);
}
