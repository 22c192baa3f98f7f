//! Dispatcher behaviour: hand-over, bulk enqueue, overflow carry, cycles, builder errors,
//! trace, capture and counters.

use pktvec_graph::builtin::{NullSink, PacketSource, SourceNext};
use pktvec_graph::{
    next_nodes, node_errors, Context, Frame, Graph, GraphBuilder, GraphConfig, GraphError,
    InputDrain, NoError, Node, Verdict,
};
use pktvec_packet::{BufferPool, PoolConfig};

next_nodes! {
    /// Three-way split.
    pub enum SplitNext { A = "a", B = "b", C = "c" }
}
node_errors! {
    /// Split drops.
    pub enum SplitError { Empty = "empty packet" }
}

/// Sends packets by first byte % 3; drops empty packets.
struct Split;
impl Node for Split {
    type Next = SplitNext;
    type Error = SplitError;
    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        cx.process_packets(frame, |p| match p.data().first() {
            None => Verdict::Drop(SplitError::Empty),
            Some(b) => Verdict::Next(match b % 3 {
                0 => SplitNext::A,
                1 => SplitNext::B,
                _ => SplitNext::C,
            }),
        });
    }
}

next_nodes! {
    /// One arc.
    pub enum PassNext { Out = "out" }
}

/// Forwards everything on its one arc, checking it never sees more than V packets.
struct Pass;
impl Node for Pass {
    type Next = PassNext;
    type Error = NoError;
    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        assert!(frame.len() <= cx.vector_size());
        cx.enqueue_all(frame, PassNext::Out);
    }
}

fn pool(n: u32) -> BufferPool {
    BufferPool::new(PoolConfig {
        buffers: n,
        ..PoolConfig::default()
    })
    .unwrap()
}

fn source(first_bytes: &[u8], limit: u64) -> PacketSource {
    let t = first_bytes
        .iter()
        .map(|&b| if b == 0xff { vec![] } else { vec![b; 60] })
        .collect();
    PacketSource::new(t).with_limit(limit)
}

fn assert_balanced(g: &Graph) {
    let c = g.conservation();
    assert!(c.is_balanced(), "{c}");
    assert_eq!(c.in_flight, 0, "{c}");
    assert_eq!(g.pool().in_use(), 0, "buffers leaked: {c}");
}

/// `src` (packets starting with `first_bytes` in turn, `limit` of them) → `split` → sinks
/// `a`, `b`, `c`, over a pool of `buffers`.
fn split_graph(cfg: GraphConfig, first_bytes: &[u8], limit: u64, buffers: u32) -> Graph {
    let mut b = GraphBuilder::new(cfg);
    b.add("src", source(first_bytes, limit))
        .add("split", Split)
        .add("a", NullSink)
        .add("b", NullSink)
        .add("c", NullSink)
        .set_next("src", SourceNext::Out, "split");
    b.build(pool(buffers)).unwrap()
}

#[test]
fn split_counts_and_conserves() {
    let mut g = split_graph(GraphConfig::default(), &[0, 1, 2, 3, 0xff], 1000, 4096);
    assert_eq!(g.run_until_idle(), 1000);
    let rt = g.runtime();
    assert_eq!(rt.row("a").unwrap().packets, 400);
    assert_eq!(rt.row("b").unwrap().packets, 200);
    assert_eq!(rt.row("c").unwrap().packets, 200);
    assert_eq!(g.errors().count("split", "empty packet"), 200);
    assert_eq!(rt.row("split").unwrap().packets, 1000);
    // 1000 packets in vectors of 256: 4 vectors.
    assert_eq!(rt.row("split").unwrap().vectors, 4);
    assert_balanced(&g);
    let shown = rt.to_string();
    assert!(
        shown.contains("Clocks/Pkt") && shown.contains("split"),
        "{shown}"
    );
    assert!(g.errors().to_string().contains("empty packet"));
}

#[test]
fn every_vector_size_works() {
    for v in [1usize, 2, 3, 4, 5, 7, 8, 16, 31, 64, 255, 256, 1000] {
        let mut b = GraphBuilder::new(GraphConfig {
            vector_size: v,
            ..GraphConfig::default()
        });
        b.add("src", source(&[0, 1, 2, 0xff], 777))
            .add("split", Split)
            .add("a", Pass)
            .add("b", NullSink)
            .add("c", NullSink)
            .add("out", NullSink)
            .set_next("src", SourceNext::Out, "split");
        let mut g = b.build(pool(4096)).unwrap();
        g.run_until_idle();
        let rt = g.runtime();
        assert!(rt.rows.iter().all(|r| r.packets_per_vector <= v as f64));
        assert_eq!(rt.row("out").unwrap().packets, 195, "v={v}");
        assert_balanced(&g);
    }
}

#[test]
fn bad_vector_sizes_are_errors() {
    for v in [0usize, pktvec_graph::MAX_VECTOR_SIZE + 1] {
        let b = GraphBuilder::new(GraphConfig {
            vector_size: v,
            ..GraphConfig::default()
        });
        assert!(matches!(b.build(pool(8)), Err(GraphError::BadConfig(_))));
    }
    let mut b = GraphBuilder::new(GraphConfig::default());
    b.add("src", source(&[1], 1)).add("out", NullSink);
    b.set_next("src", SourceNext::Out, "out");
    let mut g = b.build(pool(8)).unwrap();
    assert!(g.set_vector_size(0).is_err());
    g.set_vector_size(2048).unwrap();
    assert_eq!(g.config().vector_size, 2048);
}

/// Fan-in: several sources feed one node more than V packets per turn; the excess is
/// carried to later calls, never dropped, and the node never sees more than V at once.
#[test]
fn overflow_is_carried_not_dropped() {
    let mut b = GraphBuilder::new(GraphConfig {
        vector_size: 32,
        ..GraphConfig::default()
    });
    for i in 0..5 {
        let name = format!("src{i}");
        b.add(name.as_str(), source(&[7], 1000));
        b.set_next(&name, SourceNext::Out, "merge");
    }
    b.add("merge", Pass).add("out", NullSink);
    let mut g = b.build(pool(8192)).unwrap();
    g.run_until_idle();
    let m = g.runtime().row("merge").unwrap().clone();
    assert_eq!(m.packets, 5000);
    assert!(m.packets_per_vector <= 32.0);
    assert_eq!(g.runtime().row("out").unwrap().packets, 5000);
    assert_balanced(&g);
}

next_nodes! {
    /// Loop or leave.
    pub enum LoopNext { Again = "loop", Out = "out" }
}

/// Sends each packet around a cycle `user[0]` more times (decap-and-reparse pattern).
struct Looper;
impl Node for Looper {
    type Next = LoopNext;
    type Error = NoError;
    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        cx.process_packets(frame, |p| {
            if p.data()[0] == p.meta().user[0] {
                Verdict::Next(LoopNext::Out)
            } else {
                p.meta_mut().user[0] += 1;
                Verdict::Next(LoopNext::Again)
            }
        });
    }
}

#[test]
fn cycles_are_allowed() {
    let mut b = GraphBuilder::new(GraphConfig {
        vector_size: 8,
        ..GraphConfig::default()
    });
    b.add("src", source(&[1, 2, 3, 4], 400))
        .add("loop", Looper)
        .add("out", NullSink)
        .set_next("src", SourceNext::Out, "loop");
    let mut g = b.build(pool(1024)).unwrap();
    g.run_until_idle();
    // Each packet visits `loop` first_byte + 1 times: (2+3+4+5) * 100.
    assert_eq!(g.runtime().row("loop").unwrap().packets, 1400);
    assert_eq!(g.runtime().row("out").unwrap().packets, 400);
    assert_balanced(&g);
}

#[test]
fn max_calls_per_run_bounds_a_turn_and_keeps_packets() {
    let mut b = GraphBuilder::new(GraphConfig {
        vector_size: 4,
        max_calls_per_run: 3,
        ..GraphConfig::default()
    });
    b.add("src", source(&[9], 64))
        .add("loop", Looper)
        .add("out", NullSink)
        .set_next("src", SourceNext::Out, "loop");
    let mut g = b.build(pool(1024)).unwrap();
    g.run_once();
    assert!(g.conservation().in_flight > 0);
    g.run_until_idle();
    assert_eq!(g.runtime().row("out").unwrap().packets, 64);
    assert_balanced(&g);
}

/// Two sources of `each` packets into one sink ("out"), vectors of 16.
fn two_inputs(input_drain: InputDrain, each: u64) -> Graph {
    let mut b = GraphBuilder::new(GraphConfig {
        vector_size: 16,
        input_drain,
        ..GraphConfig::default()
    });
    b.add("src1", source(&[1], each))
        .add("src2", source(&[2], each))
        .add("out", NullSink)
        .set_next("src1", SourceNext::Out, "out")
        .set_next("src2", SourceNext::Out, "out");
    b.build(pool(256)).unwrap()
}

/// Calls and packets of `out` after one turn of `two_inputs(drain, each)`.
fn out_after_one_turn(drain: InputDrain, each: u64) -> (u64, u64) {
    let mut g = two_inputs(drain, each);
    assert_eq!(g.run_once(), 2 * each.min(16));
    let out = g.runtime().row("out").unwrap().clone();
    g.run_until_idle();
    assert_balanced(&g);
    (out.calls, out.packets)
}

#[test]
fn input_drain_decides_when_inputs_packets_run() {
    use InputDrain::*;
    // Partial vectors (5 packets each): merged into one call, unless drained after each.
    assert_eq!(out_after_one_turn(AfterAll, 5), (1, 10));
    assert_eq!(out_after_one_turn(AfterEach, 5), (2, 10));
    assert_eq!(out_after_one_turn(WhenFull, 5), (1, 10));
    // Whole vectors (16 each): after all, `out` gets its two vectors in two calls at the
    // end; drained early, the same two calls, each right after its input.
    assert_eq!(out_after_one_turn(AfterAll, 64), (2, 32));
    assert_eq!(out_after_one_turn(AfterEach, 64), (2, 32));
    assert_eq!(out_after_one_turn(WhenFull, 64), (2, 32));
    assert_eq!(GraphConfig::default().input_drain, AfterAll);
}

/// An input node that produces nothing and records the buffers in use when it is polled:
/// polled between two sources, it shows whether the first one's packets are still in flight.
#[derive(Default)]
struct Probe {
    in_use: Vec<usize>,
}
impl Node for Probe {
    type Next = PassNext;
    type Error = NoError;
    const KIND: pktvec_graph::NodeKind = pktvec_graph::NodeKind::Input;
    fn process(&mut self, cx: &mut Context<'_, Self>, _frame: &mut Frame) {
        self.in_use.push(cx.pool().in_use());
    }
}

#[test]
fn input_drain_sets_what_is_in_flight_when_the_next_input_is_polled() {
    use InputDrain::*;
    let in_flight = |drain: InputDrain, each: u64| {
        let mut b = GraphBuilder::new(GraphConfig {
            vector_size: 16,
            input_drain: drain,
            ..GraphConfig::default()
        });
        b.add("src1", source(&[1], each))
            .add("probe", Probe::default())
            .add("src2", source(&[2], each))
            .add("out", NullSink)
            .set_next("src1", SourceNext::Out, "out")
            .set_next("probe", PassNext::Out, "out")
            .set_next("src2", SourceNext::Out, "out");
        let mut g = b.build(pool(256)).unwrap();
        g.run_once();
        g.run_until_idle();
        assert_balanced(&g);
        g.node::<Probe>("probe").unwrap().in_use[0]
    };
    // A whole vector from src1: still in flight only when every input is polled first.
    assert_eq!(in_flight(AfterAll, 64), 16);
    assert_eq!(in_flight(AfterEach, 64), 0);
    assert_eq!(in_flight(WhenFull, 64), 0);
    // A partial vector: kept for merging unless drained after each input.
    assert_eq!(in_flight(AfterAll, 5), 5);
    assert_eq!(in_flight(AfterEach, 5), 0);
    assert_eq!(in_flight(WhenFull, 5), 5);
}

#[test]
fn input_drain_keeps_one_budget_per_turn() {
    for drain in [
        InputDrain::AfterAll,
        InputDrain::AfterEach,
        InputDrain::WhenFull,
    ] {
        let mut b = GraphBuilder::new(GraphConfig {
            vector_size: 4,
            max_calls_per_run: 3,
            input_drain: drain,
            ..GraphConfig::default()
        });
        b.add("src1", source(&[9], 64))
            .add("src2", source(&[9], 64))
            .add("loop", Looper)
            .add("out", NullSink)
            .set_next("src1", SourceNext::Out, "loop")
            .set_next("src2", SourceNext::Out, "loop");
        let mut g = b.build(pool(1024)).unwrap();
        g.run_once();
        let rt = g.runtime();
        let calls = |n: &str| rt.row(n).map_or(0, |r| r.calls);
        assert_eq!(
            calls("loop") + calls("out"),
            3,
            "{drain:?}: the budget is the turn's, not each drain's"
        );
        assert!(g.conservation().in_flight > 0);
        g.run_until_idle();
        assert_eq!(g.runtime().row("out").unwrap().packets, 128);
        assert_balanced(&g);
    }
}

#[test]
fn node_cycles_off_leaves_the_clocks_at_zero_and_counts_everything_else() {
    let run = |node_cycles: bool| {
        let cfg = GraphConfig {
            vector_size: 16,
            node_cycles,
            ..GraphConfig::default()
        };
        let mut g = split_graph(cfg, &[0, 1, 2], 300, 256);
        assert_eq!(g.run_until_idle(), 300);
        assert_balanced(&g);
        g.runtime()
    };
    let (on, off) = (run(true), run(false));
    for name in ["src", "split", "a", "b", "c"] {
        let (r1, r0) = (on.row(name).unwrap(), off.row(name).unwrap());
        assert_eq!(
            (r0.calls, r0.vectors, r0.packets),
            (r1.calls, r1.vectors, r1.packets)
        );
        assert_eq!(r0.cycles, 0, "{name}");
        assert!(r1.cycles > 0, "{name}");
    }
}

#[test]
fn builder_errors_name_the_culprit() {
    let build = |f: &dyn Fn(&mut GraphBuilder)| {
        let mut b = GraphBuilder::new(GraphConfig::default());
        f(&mut b);
        b.build(pool(8)).unwrap_err()
    };
    let e = build(&|b| {
        b.add("src", source(&[1], 1)).add("out", NullSink);
        b.set_next("src", SourceNext::Out, "nowhere");
    });
    assert_eq!(
        e.to_string(),
        "node `src`: next arc `Out` leads to unknown node `nowhere`; known nodes: drop, out, src"
    );
    let e = build(&|b| {
        b.add("x", NullSink).add("x", NullSink);
    });
    assert_eq!(e, GraphError::DuplicateNode { name: "x".into() });
    let e = build(&|b| {
        b.add("drop", NullSink);
    });
    assert!(e.to_string().contains("adds the drop node itself"));
    let e = build(&|b| {
        b.add("src", source(&[1], 1)).add("out", NullSink);
        b.set_next("srcc", SourceNext::Out, "out");
    });
    assert!(matches!(e, GraphError::UnknownNode { ref name, .. } if name == "srcc"));
    let e = build(&|b| {
        b.add("p", Pass).add("out", NullSink);
        b.set_next("p", SourceNext::Out, "out");
    });
    assert!(matches!(e, GraphError::ArcTypeMismatch { .. }), "{e}");
    let e = build(&|b| {
        b.add("src", source(&[1], 1)).add("p", Pass);
        b.set_next("src", SourceNext::Out, "p");
        b.set_next("p", PassNext::Out, "src");
    });
    assert!(matches!(e, GraphError::ArcToInput { .. }), "{e}");

    /// A node with no arcs that does not say it is a sink.
    struct Hole;
    impl Node for Hole {
        type Next = pktvec_graph::NoNext;
        type Error = NoError;
        fn process(&mut self, _: &mut Context<'_, Self>, _: &mut Frame) {}
    }
    let e = build(&|b| {
        b.add("hole", Hole);
    });
    assert_eq!(
        e,
        GraphError::NoWayOut {
            node: "hole".into()
        }
    );
}

/// A node that writes next indices by hand, some of them out of range.
struct Wild;
impl Node for Wild {
    type Next = PassNext;
    type Error = NoError;
    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        for (i, n) in frame.nexts_mut().iter_mut().enumerate() {
            *n = if i % 2 == 0 { 0 } else { 7 };
        }
        cx.enqueue_frame(frame);
    }
}

#[test]
fn invalid_next_index_goes_to_drop_with_reason() {
    let mut b = GraphBuilder::new(GraphConfig::default());
    b.add("src", source(&[1], 100))
        .add("wild", Wild)
        .add("out", NullSink)
        .set_next("src", SourceNext::Out, "wild");
    let mut g = b.build(pool(256)).unwrap();
    g.run_until_idle();
    assert_eq!(g.errors().count("wild", "invalid next arc"), 50);
    assert_eq!(g.runtime().row("out").unwrap().packets, 50);
    assert_balanced(&g);
}

#[test]
fn inject_and_single_packet_paths() {
    next_nodes! {
        /// Arcs.
        pub enum OneNext { Out = "out" }
    }
    node_errors! {
        /// Reasons.
        pub enum OneError { Odd = "odd length" }
    }
    struct OneByOne;
    impl Node for OneByOne {
        type Next = OneNext;
        type Error = OneError;
        fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
            for &bi in frame.buffers() {
                if cx.packet(bi).len() % 2 == 1 {
                    cx.drop_buffer(bi, OneError::Odd);
                } else {
                    cx.enqueue(bi, OneNext::Out);
                }
            }
        }
    }
    let mut b = GraphBuilder::new(GraphConfig::default());
    b.add("one", OneByOne).add("out", NullSink);
    let mut g = b.build(pool(64)).unwrap();
    let mut bis = vec![];
    for len in 0..40 {
        bis.push(g.pool_mut().alloc_with(&vec![1u8; len]).unwrap());
    }
    let one = g.node_id("one").unwrap();
    assert!(g.inject(one, &bis));
    assert!(!g.inject(999, &bis[..0]));
    g.dispatch_pending();
    assert_eq!(g.errors().count("one", "odd length"), 20);
    assert_eq!(g.runtime().row("out").unwrap().packets, 20);
    assert_eq!(g.next_names(one), vec!["out", "drop"]);
    assert_balanced(&g);
    g.reset_stats();
    assert!(g.runtime().rows.is_empty());
    assert_eq!(g.errors().total(), 0);
}

#[test]
fn exhausted_pool_drops_what_finds_no_buffer_and_counts_it() {
    let mut b = GraphBuilder::new(GraphConfig::default());
    b.add("src", source(&[1], 10_000))
        .add("out", NullSink)
        .set_next("src", SourceNext::Out, "out");
    let mut g = b.build(pool(10)).unwrap();
    // Never more than 10 buffers at once: each poll of 256 gets 10 through and drops 246
    // as a NIC with an empty ring would, counted under "no buffer".
    let got = g.run_until_idle();
    let polls = 10_000u64.div_ceil(256);
    assert_eq!(got, 10 * polls);
    assert_eq!(g.runtime().row("src").unwrap().packets_per_vector, 10.0);
    assert_eq!(g.errors().count("src", "no buffer"), 10_000 - got);
    assert_eq!(
        g.node::<PacketSource>("src").unwrap().no_buffer(),
        10_000 - got
    );
    let c = g.conservation();
    assert_eq!((c.input, c.dropped_without_buffer), (10_000, 10_000 - got));
    assert_balanced(&g);
}

#[test]
fn trace_records_each_node() {
    let mut b = GraphBuilder::new(GraphConfig::default());
    b.add("src", source(&[0, 1, 0xff], 30))
        .add("split", Split)
        .add("a", Pass)
        .add("b", NullSink)
        .add("c", NullSink)
        .add("out", NullSink)
        .set_next("src", SourceNext::Out, "split");
    let mut g = b.build(pool(256)).unwrap();
    g.trace_add(3);
    g.run_until_idle();
    let t = g.trace();
    assert_eq!(t.packets().len(), 3);
    let path = |i: usize| -> Vec<&str> {
        t.packets()[i]
            .records
            .iter()
            .map(|r| r.node.as_str())
            .collect()
    };
    assert_eq!(path(0), ["src", "split", "a", "out"]);
    assert_eq!(path(1), ["src", "split", "b"]);
    assert_eq!(path(2), ["src", "split", "drop"]);
    // What each node decided: the next node on every record but the last, and on the drop
    // node's record the dropping node and its reason.
    let nexts = |i: usize| -> Vec<Option<&str>> {
        t.packets()[i]
            .records
            .iter()
            .map(|r| r.next.as_deref())
            .collect()
    };
    assert_eq!(nexts(0), [Some("split"), Some("a"), Some("out"), None]);
    assert_eq!(nexts(2), [Some("split"), Some("drop"), None]);
    let drop_record = &t.packets()[2].records[2];
    assert!(
        drop_record.text.starts_with("split: "),
        "{}",
        drop_record.text
    );
    let text = t.to_string();
    assert!(text.contains("  -> split"), "{text}");
    assert!(text.contains(&format!("  {}", drop_record.text)), "{text}");
    assert!(text.contains("Packet 3"), "{text}");
    assert!(text.contains("len 60: 00 00"), "{text}");
    g.trace_clear();
    assert!(g.trace().packets().is_empty());
    assert!(!g.trace().is_active());
}

#[test]
fn capture_writes_a_readable_pcap() {
    let dir = std::env::temp_dir().join(format!("pktvec-capture-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("split.pcap");
    let mut g = split_graph(GraphConfig::default(), &[0, 1, 2, 0xff], 100, 256);
    g.capture_start("split", &path, Some(60)).unwrap();
    assert!(g.capture_start("nope", &path, None).is_err());
    g.run_until_idle();
    assert_eq!(g.capture_stop("split").unwrap(), 60);
    assert!(g.capture_stop("split").is_err());
    let file = std::fs::File::open(&path).unwrap();
    let mut r = pcap_file::pcap::PcapReader::new(file).unwrap();
    let mut lens = vec![];
    while let Some(p) = r.next_packet() {
        lens.push(p.unwrap().data.len());
    }
    assert_eq!(lens.len(), 60);
    assert_eq!(lens.iter().filter(|&&l| l == 0).count(), 15);
    assert_balanced(&g);
    // tshark reads it too, when installed (CI installs it).
    if let Ok(out) = std::process::Command::new("tshark")
        .args([
            "-r",
            path.to_str().unwrap(),
            "-T",
            "fields",
            "-e",
            "frame.len",
        ])
        .output()
    {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(text.lines().count(), 60, "{text}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn every_name_taking_call_lists_the_known_names() {
    let mut b = GraphBuilder::new(GraphConfig::default());
    b.add("src", source(&[0], 1))
        .add("out", NullSink)
        .set_next("src", SourceNext::Out, "out");
    let mut g = b.build(pool(16)).unwrap();
    let known = "known nodes: drop, out, src";
    let e = g.node::<NullSink>("outt").unwrap_err().to_string();
    assert!(e.contains("`outt`") && e.contains(known), "{e}");
    let e = g.node_mut::<NullSink>("outt").unwrap_err().to_string();
    assert!(e.contains(known), "{e}");
    let e = g.node::<PacketSource>("out").unwrap_err().to_string();
    assert!(e.contains("NullSink") && e.contains("PacketSource"), "{e}");
    let path = std::env::temp_dir().join(format!("pktvec-names-{}.pcap", std::process::id()));
    let e = g
        .capture_start("outt", &path, None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("`outt`") && e.contains(known), "{e}");
    let e = g.capture_stop("outt").unwrap_err().to_string();
    assert!(e.contains(known), "{e}");
    assert!(!path.exists());
}

next_nodes! {
    /// One arc, for the single-arc split loop.
    pub enum OneNext { Out = "out" }
}

/// `process_packets_split_to`: the fast path takes packets with an even first byte, the
/// slow path the odd ones (to `out`) and the empty ones (dropped).
struct EvenFast;
impl Node for EvenFast {
    type Next = OneNext;
    type Error = SplitError;
    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        cx.process_packets_split_to(
            frame,
            OneNext::Out,
            |p| match p.data_mut().first_mut() {
                Some(b) if *b % 2 == 0 => {
                    *b = 0x80;
                    true
                }
                _ => false,
            },
            |p| match p.data().first() {
                None => Verdict::Drop(SplitError::Empty),
                Some(&b) => {
                    assert!(b % 2 == 1, "the slow path got a packet the fast path took");
                    Verdict::Next(OneNext::Out)
                }
            },
        );
    }
}

#[test]
fn split_to_sends_fast_and_slow_packets_and_drops() {
    for v in [1usize, 2, 3, 5, 8, 63, 64, 65, 256, 1000] {
        for d in 0..7usize {
            let mut b = GraphBuilder::new(GraphConfig {
                vector_size: v,
                prefetch_distance: d,
                ..GraphConfig::default()
            });
            b.add("src", source(&[0, 1, 0xff, 2, 4, 3, 0xff], 700))
                .add("even", EvenFast)
                .add("out", NullSink)
                .set_next("src", SourceNext::Out, "even");
            let mut g = b.build(pool(4096)).unwrap();
            g.run_until_idle();
            let rt = g.runtime();
            assert_eq!(rt.row("out").unwrap().packets, 500, "v={v} d={d}");
            assert_eq!(g.errors().count("even", "empty packet"), 200, "v={v} d={d}");
            assert_balanced(&g);
        }
    }
}
