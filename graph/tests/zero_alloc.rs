//! Steady-state dispatch of a multi-node graph makes zero heap allocations.
//!
//! A counting global allocator wraps the system allocator; after a warm-up (during which
//! pending vectors may grow to their working size), thousands of turns of the main loop
//! through sources, a branching node, a two-phase lookup node, a fan-in node, the drop node
//! and sinks must not allocate, reallocate or free once; nor may a raw hand-over. The
//! count is per thread: the test harness and the other test allocate on their own threads
//! meanwhile.

use pktvec_graph::builtin::{NullSink, PacketSource, SourceNext};
use pktvec_graph::{
    next_nodes, node_errors, Context, Frame, GraphBuilder, GraphConfig, NoError, Node, Verdict,
};
use pktvec_packet::{BufferPool, PoolConfig};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

struct Counting;
thread_local! {
    /// Allocator calls made by this thread (const-initialised: reading it never allocates).
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}

/// Counts one allocator call of the calling thread (none while its thread-locals are torn
/// down).
fn count() {
    let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
}

/// This thread's allocator calls so far.
fn allocs() -> u64 {
    ALLOCS.with(Cell::get)
}

// SAFETY: forwards every call unchanged to the system allocator; only counts them.
unsafe impl GlobalAlloc for Counting {
    // SAFETY: (trait contract) callers pass a valid non-zero-size layout, as to System.
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        count();
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(l) }
    }
    // SAFETY: (trait contract) `p` came from this allocator with layout `l`.
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        count();
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(p, l) }
    }
    // SAFETY: (trait contract) `p` came from this allocator with layout `l`, `n` > 0.
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        count();
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(p, l, n) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

next_nodes! {
    /// Arcs of the classifier.
    pub enum ClassNext { Lookup = "lookup", Direct = "merge" }
}
node_errors! {
    /// Classifier drops.
    pub enum ClassError { Runt = "runt" }
}

struct Classify;
impl Node for Classify {
    type Next = ClassNext;
    type Error = ClassError;
    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        cx.process_packets(frame, |p| match p.data() {
            d if d.len() < 20 => Verdict::Drop(ClassError::Runt),
            d if d[0] & 1 == 0 => Verdict::Next(ClassNext::Lookup),
            _ => Verdict::Next(ClassNext::Direct),
        });
    }
}

next_nodes! {
    /// Arcs of the lookup.
    pub enum LookupNext { Merge = "merge" }
}

/// A two-phase table lookup writing the result into the packet.
struct Lookup {
    table: Vec<u64>,
}
impl Node for Lookup {
    type Next = LookupNext;
    type Error = NoError;
    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        let table = &self.table;
        cx.process_sub_batches(
            frame,
            |p| {
                let h = (p.data()[1] as usize * 2654435761) % table.len();
                pktvec_packet::prefetch::prefetch_read(&table[h]);
                h
            },
            |p, h| {
                p.meta_mut().opaque = table[h] as u32;
                Verdict::Next(LookupNext::Merge)
            },
        );
    }
}

next_nodes! {
    /// Arcs of the merge node.
    pub enum MergeNext { Tx = "tx" }
}

struct Merge;
impl Node for Merge {
    type Next = MergeNext;
    type Error = NoError;
    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        cx.enqueue_all(frame, MergeNext::Tx);
    }
}

/// Runs 100 turns of warm-up, then counts the allocator calls of 5,000 more; returns them
/// and the packets those 5,000 turns produced.
fn allocations_in_steady_state(g: &mut pktvec_graph::Graph) -> (u64, u64) {
    for _ in 0..100 {
        g.run_once();
    }
    let before = allocs();
    let produced = (0..5000).map(|_| g.run_once()).sum();
    let counted = allocs() - before;
    // The counter does see this thread's allocations.
    let probe = allocs();
    drop(std::hint::black_box(vec![1u8; 16]));
    assert_eq!(allocs() - probe, 2, "an allocation and a free");
    (counted, produced)
}

#[test]
fn steady_state_dispatch_does_not_allocate() {
    let templates: Vec<Vec<u8>> = (0..64u8)
        .map(|i| {
            let len = if i % 16 == 0 { 10 } else { 64 + i as usize };
            (0..len)
                .map(|k| i.wrapping_mul(7).wrapping_add(k as u8))
                .collect()
        })
        .collect();
    let mut b = GraphBuilder::new(GraphConfig::default());
    b.add("src0", PacketSource::new(templates.clone()))
        .add("src1", PacketSource::new(templates))
        .add("classify", Classify)
        .add(
            "lookup",
            Lookup {
                table: (0..4096).collect(),
            },
        )
        .add("merge", Merge)
        .add("tx", NullSink)
        .set_next("src0", SourceNext::Out, "classify")
        .set_next("src1", SourceNext::Out, "classify");
    let pool = BufferPool::new(PoolConfig {
        buffers: 4096,
        ..PoolConfig::default()
    })
    .unwrap();
    let mut g = b.build(pool).unwrap();
    let (allocs, produced) = allocations_in_steady_state(&mut g);
    assert_eq!(produced, 5000 * 2 * 256);
    assert_eq!(allocs, 0, "steady-state dispatch allocated {allocs} times");
    // The work really happened on all paths.
    let rt = g.runtime();
    for node in ["classify", "lookup", "merge", "tx", "drop"] {
        assert!(rt.row(node).is_some_and(|r| r.packets > 0), "{node} idle");
    }
    let c = g.conservation();
    assert!(c.is_balanced(), "{c}");
    assert_eq!(g.pool().in_use(), 0);
}

/// The test's "driver": buffers out of the pool (released), shared by the lender and the
/// sink, with room for all of them from the start.
type Backend = std::sync::Arc<std::sync::Mutex<Vec<u32>>>;

next_nodes! {
    /// The lender's arc.
    pub enum LendNext { Out = "raw-tx" }
}

/// Lends a vector of the backend's buffers raw per call (a DPDK rx node's raw path).
struct Lend(Backend);
impl Node for Lend {
    const KIND: pktvec_graph::NodeKind = pktvec_graph::NodeKind::Input;
    type Next = LendNext;
    type Error = NoError;
    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        let mut stock = self.0.lock().unwrap();
        let n = frame.room().min(stock.len());
        let at = stock.len() - n;
        frame.extend_from_slice(&stock[at..]);
        stock.truncate(at);
        drop(stock);
        // SAFETY: the backend's buffers are out of the pool (released), each lent once.
        assert!(unsafe { cx.enqueue_raw(frame, LendNext::Out) });
    }
}

/// Takes raw buffers and gives them back to the backend as they are (a DPDK tx node's
/// raw path, the driver returning them at once).
struct RawTx(Backend);
impl Node for RawTx {
    const KIND: pktvec_graph::NodeKind = pktvec_graph::NodeKind::Sink;
    type Next = pktvec_graph::NoNext;
    type Error = NoError;
    fn takes_raw(&self) -> bool {
        true
    }
    fn process(&mut self, _cx: &mut Context<'_, Self>, frame: &mut Frame) {
        assert_eq!(frame.raw_len(), frame.len());
        self.0.lock().unwrap().extend_from_slice(frame.buffers());
        frame.clear();
    }
}

#[test]
fn steady_state_raw_hand_over_does_not_allocate() {
    let mut pool = BufferPool::new(PoolConfig {
        buffers: 1024,
        ..PoolConfig::default()
    })
    .unwrap();
    let mut out = vec![0u32; 1024];
    assert_eq!(pool.alloc_bulk(&mut out), 1024);
    for &bi in &out {
        assert!(pool.release(bi));
    }
    let backend: Backend = std::sync::Arc::new(std::sync::Mutex::new(out));
    let mut b = GraphBuilder::new(GraphConfig::default());
    b.add("lend", Lend(backend.clone()))
        .add("raw-tx", RawTx(backend.clone()));
    let mut g = b.build(pool).unwrap();
    let (allocs, produced) = allocations_in_steady_state(&mut g);
    assert_eq!(produced, 5000 * 256);
    assert_eq!(allocs, 0, "raw hand-over allocated {allocs} times");
    assert_eq!(g.runtime().row("raw-tx").unwrap().packets, 5100 * 256);
    assert_eq!(backend.lock().unwrap().len(), 1024);
    assert_eq!(g.pool().in_use(), 0);
}
