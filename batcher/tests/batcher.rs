//! The batcher's parser, path table and queues, and the batcher in front of l3fwd:
//! the same packets come out, with the same bytes and the same per-flow order.

use pktvec_batcher::parser::{Parsed, ProtocolGraph, ProtocolGraphConfig};
use pktvec_batcher::path_table::{PathTable, SharedPathTable};
use pktvec_batcher::{strip_to_l3, Batcher, BatcherConfig, BatcherNext, FullPolicy, ReplaySource};
use pktvec_graph::{
    builtin::NullSink, Context, Frame, GraphBuilder, GraphConfig, NoError, NoNext, Node, NodeKind,
    Verdict,
};
use pktvec_lookup::routes::{generate_ipv4, generate_ipv6};
use pktvec_nodes::apps::l3fwd::{L3fwd, L3fwdConfig};
use pktvec_nodes::ethernet::{ethernet_input_one, EthernetNext};
use pktvec_packet::builder::PacketBuilder;
use pktvec_packet::wire::tcp::TcpFlags;
use pktvec_packet::{BufferPool, PoolConfig};
use proptest::prelude::*;
use std::net::{Ipv4Addr, Ipv6Addr};

fn mac(i: u8) -> pktvec_packet::wire::MacAddr {
    [2, 0, 0, 0, 0, i].into()
}

/// An Ethernet frame with `vlans` tags, IPv6 (addresses from `a`, `b`) or IPv4 with
/// `opts` words of options, then UDP (`l4` 0), TCP (1), ICMP echo (2) or 8 raw bytes,
/// padded to 60 bytes.
#[allow(clippy::too_many_arguments)]
fn build_frame(
    vlans: usize,
    v6: bool,
    a: u32,
    b: u32,
    opts: usize,
    l4: u8,
    sport: u16,
    dport: u16,
) -> Vec<u8> {
    let mut pb = PacketBuilder::ethernet(mac(1), mac(2));
    for k in 0..vlans {
        pb = pb.vlan(10 + k as u16);
    }
    pb = if v6 {
        pb.ipv6(
            Ipv6Addr::from(((a as u128) << 96) | 1),
            Ipv6Addr::from(((b as u128) << 96) | 2),
        )
    } else {
        pb.ipv4(Ipv4Addr::from(a), Ipv4Addr::from(b))
            .ipv4_options(&vec![1u8; opts * 4])
    };
    pb = match l4 {
        0 => pb.udp(sport, dport),
        1 => pb.tcp(sport, dport, TcpFlags::SYN),
        2 => pb.icmp_echo(5, 6),
        _ => pb.payload_len(8),
    };
    pb.pad_to(60).build()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Any bytes: no panic, offsets inside the packet, truncation flagged consistently.
    #[test]
    fn parser_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let g = ProtocolGraph::builtin();
        let mut p = Parsed::default();
        g.parse(&bytes, &mut p);
        prop_assert!((p.l3_offset as usize) <= bytes.len());
        prop_assert!((p.l4_offset as usize) <= bytes.len());
        prop_assert!(p.depth as usize <= pktvec_batcher::parser::MAX_DEPTH);
    }

    /// Built packets: the parser agrees with etherparse on headers, offsets and fields.
    #[test]
    fn parser_agrees_with_etherparse(
        vlans in 0usize..3, v6 in any::<bool>(), l4 in 0u8..3,
        sport in any::<u16>(), dport in any::<u16>(), a in any::<u32>(), b in any::<u32>(),
        opts in 0usize..3,
    ) {
        let frame = build_frame(vlans, v6, a, b, opts, [0, 1, 3][l4 as usize], sport, dport);
        let g = ProtocolGraph::builtin();
        let mut p = Parsed::default();
        g.parse(&frame, &mut p);
        let e = etherparse::SlicedPacket::from_ethernet(&frame).unwrap();
        let f = |n: &str| p.field(g.field(n).unwrap());
        match e.net {
            Some(etherparse::NetSlice::Ipv4(ip)) => {
                prop_assert!(p.has(g.header("ipv4").unwrap()));
                prop_assert_eq!(f("ipv4.src"), Some(u32::from(ip.header().source_addr()) as u64));
                prop_assert_eq!(f("ipv4.dst"), Some(u32::from(ip.header().destination_addr()) as u64));
                prop_assert_eq!(p.l3_offset as usize, 14 + 4 * vlans);
            }
            Some(etherparse::NetSlice::Ipv6(ip)) => {
                prop_assert!(p.has(g.header("ipv6").unwrap()));
                let d = u128::from(ip.header().destination_addr());
                prop_assert_eq!(f("ipv6.dst_hi"), Some((d >> 64) as u64));
                prop_assert_eq!(p.l3_offset as usize, 14 + 4 * vlans);
            }
            _ => prop_assert!(false, "not IP"),
        }
        match e.transport {
            Some(etherparse::TransportSlice::Udp(u)) => {
                prop_assert_eq!(f("udp.sport"), Some(u.source_port() as u64));
                prop_assert_eq!(f("udp.dport"), Some(u.destination_port() as u64));
            }
            Some(etherparse::TransportSlice::Tcp(t)) => {
                prop_assert_eq!(f("tcp.dport"), Some(t.destination_port() as u64));
                prop_assert!(p.l4_offset > p.l3_offset);
            }
            _ => prop_assert!(!p.has(g.header("udp").unwrap()) && !p.has(g.header("tcp").unwrap())),
        }
        prop_assert_eq!(p.has(g.header("vlan").unwrap()), vlans > 0);
    }
}

/// Path tables the fast path compiles for (and one it must refuse).
fn fast_tables(g: &ProtocolGraph) -> Vec<PathTable> {
    [
        // IP protocol splits, VLAN-tagged traffic apart, truncation.
        "default_path = 7\n\
         [[rules]]\npath = 1\npriority = 5\nheaders = [\"ipv4\"]\nfields = [ { field = \"ipv4.protocol\", value = 17 } ]\n\
         [[rules]]\npath = 2\nheaders = [\"ipv4\"]\ntruncated = false\n\
         [[rules]]\npath = 3\nfields = [ { field = \"ipv6.next_header\", value = 6 } ]\n\
         [[rules]]\npath = 4\nheaders = [\"ipv6\"]\n\
         [[rules]]\npath = 5\npriority = 9\nheaders = [\"vlan\"]\n\
         [[rules]]\npath = 6\ntruncated = true\n",
        // EtherType rules: other EtherTypes need the parser.
        "default_path = 0\n\
         [[rules]]\npath = 9\nfields = [ { field = \"ethernet.ethertype\", value = 0x88cc } ]\n\
         [[rules]]\npath = 3\nheaders = [\"arp\"]\n",
        // No rule at all.
        "default_path = 42",
    ]
    .iter()
    .map(|t| PathTable::from_toml(g, t).unwrap())
    .chain([PathTable::by_network_protocol(g)])
    .collect()
}

/// The generic parser's answer: (path, l3 offset, l4 offset).
fn generic(g: &ProtocolGraph, t: &PathTable, frame: &[u8]) -> (u16, u16, u16) {
    let mut p = Parsed::default();
    g.parse_fields(frame, &mut p, t.fields_used(), t.headers_used());
    (t.classify(&p), p.l3_offset, p.l4_offset)
}

fn fast_agrees(g: &ProtocolGraph, frame: &[u8]) -> Result<usize, TestCaseError> {
    let mut hits = 0;
    for t in fast_tables(g) {
        let f = t
            .fast_path()
            .expect("the fast path compiles for these tables");
        if let Some(c) = f.classify(frame) {
            let (path, l3, l4) = generic(g, &t, frame);
            prop_assert_eq!((c.path, c.l3_offset, 0), (path, l3, l4), "{:?}", t.config());
            hits += 1;
        }
    }
    Ok(hits)
}

/// Writes 16-bit fields (EtherTypes) at the given offsets and the IPv4 version/IHL byte at
/// 14, where `bytes` is long enough: arbitrary bytes biased towards what parsers branch on.
fn set_fields(bytes: &mut [u8], fields: &[(usize, u16)], vihl: u8) {
    for &(at, v) in fields {
        if bytes.len() >= at + 2 {
            bytes[at..at + 2].copy_from_slice(&v.to_be_bytes());
        }
    }
    if bytes.len() >= 15 {
        bytes[14] = vihl;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    /// Any bytes (biased towards the EtherTypes and IPv4 header lengths the fast path
    /// reads): where the fast path answers, it gives the generic parser's path id and
    /// offsets, for every table it compiles for.
    #[test]
    fn fast_path_matches_generic_parser_on_any_bytes(
        mut bytes in proptest::collection::vec(any::<u8>(), 0..80),
        et in prop_oneof![Just(0x0800u16), Just(0x86dd), Just(0x0806), Just(0x8100),
                          Just(0x88a8), Just(0x88cc), any::<u16>()],
        vihl in prop_oneof![Just(0x45u8), any::<u8>()],
    ) {
        set_fields(&mut bytes, &[(12, et)], vihl);
        fast_agrees(&ProtocolGraph::builtin(), &bytes)?;
    }

    /// Built packets (VLAN tags, IPv4 options, UDP/TCP/ICMP/raw, truncated): same answer
    /// where the fast path answers, and it answers for every untagged IPv4-without-options
    /// and IPv6 frame.
    #[test]
    fn fast_path_matches_generic_parser_on_built_packets(
        vlans in 0usize..3, v6 in any::<bool>(), l4 in 0u8..4, opts in 0usize..3,
        a in any::<u32>(), b in any::<u32>(), cut in 0usize..80,
    ) {
        let frame = build_frame(vlans, v6, a, b, opts, l4, 1, 2);
        let g = ProtocolGraph::builtin();
        let hits = fast_agrees(&g, &frame)?;
        if vlans == 0 && (v6 || opts == 0) {
            prop_assert_eq!(hits, 4, "the common case takes the fast path");
        }
        fast_agrees(&g, &frame[..cut.min(frame.len())])?;
    }

    /// The batcher's `ethernet-input` work ([`strip_to_l3`], with and without the fast
    /// path's class) is `ethernet_input_one`'s: same verdict for IPv4/IPv6, same metadata
    /// and bytes; anything else is left untouched for `ethernet-input`.
    #[test]
    fn strip_to_l3_is_ethernet_input(
        mut bytes in proptest::collection::vec(any::<u8>(), 0..80),
        et in prop_oneof![Just(0x0800u16), Just(0x86dd), Just(0x0806), Just(0x8100),
                          Just(0x88a8), Just(0x8624), any::<u16>()],
        inner in prop_oneof![Just(0x0800u16), Just(0x86dd), Just(0x8100), any::<u16>()],
        inner2 in prop_oneof![Just(0x0800u16), Just(0x86dd), Just(0x8100), any::<u16>()],
        vihl in prop_oneof![Just(0x45u8), any::<u8>()],
        use_fast in any::<bool>(),
    ) {
        set_fields(&mut bytes, &[(12, et), (16, inner), (20, inner2)], vihl);
        let g = ProtocolGraph::builtin();
        let t = PathTable::by_network_protocol(&g);
        let mut pool = BufferPool::new(PoolConfig { buffers: 2, ..PoolConfig::default() }).unwrap();
        let a = pool.alloc_with(&bytes).unwrap();
        let b = pool.alloc_with(&bytes).unwrap();
        let fresh = *pool.meta(a);
        let fast = if use_fast {
            t.fast_path().unwrap().classify(&bytes).map(|c| c.l3)
        } else {
            None
        };
        let ours = strip_to_l3(&mut pool, a, fast);
        let theirs = ethernet_input_one(&mut pool.packet_mut(b));
        let key = |m: &pktvec_packet::BufferMeta| (m.data_offset, m.len, m.l2_offset, m.l3_offset, m.flags.0);
        match ours {
            Some(n) => {
                let want = match n {
                    BatcherNext::Ip4 => EthernetNext::Ip4,
                    BatcherNext::Ip6 => EthernetNext::Ip6,
                    BatcherNext::Out => unreachable!(),
                };
                prop_assert_eq!(theirs, Verdict::Next(want));
                prop_assert_eq!(key(pool.meta(a)), key(pool.meta(b)));
                prop_assert_eq!(pool.data(a), pool.data(b));
            }
            None => {
                prop_assert!(!matches!(theirs, Verdict::Next(EthernetNext::Ip4 | EthernetNext::Ip6)));
                prop_assert_eq!(*pool.meta(a), fresh);
            }
        }
    }
}

#[test]
fn the_fast_path_compiles_only_where_it_is_exact() {
    let g = ProtocolGraph::builtin();
    assert!(PathTable::by_network_protocol(&g).fast_path().is_some());
    // A table reading an L4 port, or a source address, needs the generic parser.
    for t in [
        "[[rules]]\npath = 1\nfields = [ { field = \"udp.dport\", value = 53 } ]",
        "[[rules]]\npath = 1\nheaders = [\"tcp\"]",
        "[[rules]]\npath = 1\nfields = [ { field = \"ipv4.src\", value = 1 } ]",
    ] {
        assert!(
            PathTable::from_toml(&g, t).unwrap().fast_path().is_none(),
            "{t}"
        );
    }
    // A protocol graph other than the built-in one: no fast path.
    let mut cfg = ProtocolGraph::builtin_config();
    cfg.headers[0]
        .next
        .as_mut()
        .unwrap()
        .map
        .push((0x8847, "arp".into()));
    let g2 = ProtocolGraph::new(cfg).unwrap();
    assert!(PathTable::by_network_protocol(&g2).fast_path().is_none());
}

#[test]
fn new_protocols_come_from_configuration() {
    // MPLS (EtherType 0x8847) added to the built-in graph, then matched by the path table.
    let mut cfg: ProtocolGraphConfig = ProtocolGraph::builtin_config();
    let eth = cfg
        .headers
        .iter_mut()
        .find(|h| h.name == "ethernet")
        .unwrap();
    eth.next.as_mut().unwrap().map.push((0x8847, "mpls".into()));
    cfg.headers.push(
        toml::from_str(
            "name = \"mpls\"\nlength = 4\nfields = [ { name = \"label_exp_s\", offset = 0, bytes = 3 } ]",
        )
        .unwrap(),
    );
    let g = ProtocolGraph::new(cfg).unwrap();
    let frame = PacketBuilder::ethernet(mac(1), mac(2))
        .ethertype_raw(0x8847)
        .payload(&[0x00, 0x01, 0x41, 0x40])
        .pad_to(60)
        .build();
    let mut p = Parsed::default();
    g.parse(&frame, &mut p);
    assert!(p.has(g.header("mpls").unwrap()));
    // Label 20 (0x00014), S bit set: match the label with a mask.
    let t = PathTable::from_toml(
        &g,
        "default_path = 0\n[[rules]]\npath = 7\nfields = [ { field = \"mpls.label_exp_s\", value = 0x000140, mask = 0xfffff0 } ]",
    )
    .unwrap();
    assert_eq!(t.classify(&p), 7);
    // Bad configurations are errors with the name.
    let e = PathTable::from_toml(&g, "[[rules]]\npath = 1\nheaders = [\"nope\"]").unwrap_err();
    assert!(e.to_string().contains("nope"));
    let e = ProtocolGraph::from_toml("first = \"x\"\nheaders = []").unwrap_err();
    assert!(e.to_string().contains("\"x\""));
}

#[test]
fn path_table_priorities_masks_and_defaults() {
    let g = ProtocolGraph::builtin();
    let t = PathTable::from_toml(
        &g,
        r#"
        default_path = 99
        [[rules]]
        path = 1
        headers = ["ipv4"]
        [[rules]]
        path = 2
        priority = 5
        headers = ["ipv4", "udp"]
        fields = [ { field = "ipv4.dst", value = 0x0a000000, mask = 0xff000000 } ]
        [[rules]]
        path = 3
        truncated = true
    "#,
    )
    .unwrap();
    let parse = |f: &[u8]| {
        let mut p = Parsed::default();
        g.parse(f, &mut p);
        t.classify(&p)
    };
    let udp_to = |d: Ipv4Addr| {
        PacketBuilder::ethernet(mac(1), mac(2))
            .ipv4(Ipv4Addr::new(1, 1, 1, 1), d)
            .udp(1, 2)
            .build()
    };
    assert_eq!(parse(&udp_to(Ipv4Addr::new(10, 9, 8, 7))), 2);
    assert_eq!(parse(&udp_to(Ipv4Addr::new(11, 9, 8, 7))), 1);
    assert_eq!(
        parse(&udp_to(Ipv4Addr::new(10, 9, 8, 7))[..30]),
        3,
        "truncated IPv4"
    );
    assert_eq!(parse(&[0u8; 60]), 99);
}

/// Sink recording every packet (test code: it allocates).
#[derive(Default)]
struct Record(Vec<(u16, Vec<u8>)>);
impl Node for Record {
    type Next = NoNext;
    type Error = NoError;
    const KIND: NodeKind = NodeKind::Sink;
    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        for &bi in frame.buffers() {
            let m = cx.pool().meta(bi);
            self.0.push((m.tx_if, cx.pool().data(bi).to_vec()));
        }
        cx.free_frame(frame);
    }
}

/// Traffic of `flows` flows (IPv4 and IPv6, to routed destinations), each packet carrying
/// (flow, sequence) in its payload, in a random order that keeps each flow's order; plus
/// ARP and garbage.
fn traffic(seed: u64, flows: usize, packets: usize) -> (Vec<Vec<u8>>, L3fwd) {
    let mut r4 = generate_ipv4(1000, seed);
    r4.retain(|r| r.len > 0);
    let r6 = generate_ipv6(200, seed + 1);
    let app = L3fwd::with_routes(
        L3fwdConfig {
            ports: 4,
            ..L3fwdConfig::default()
        },
        r4.clone(),
        r6.clone(),
    )
    .unwrap();
    let mut x = seed | 1;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut seq = vec![0u32; flows];
    let mut out = Vec::with_capacity(packets);
    for _ in 0..packets {
        let f = (rnd() % flows as u64) as usize;
        let k = seq[f];
        seq[f] += 1;
        let mut payload = (f as u32).to_be_bytes().to_vec();
        payload.extend_from_slice(&k.to_be_bytes());
        let pb = PacketBuilder::ethernet(mac(1), mac(2));
        let frame = match f % 7 {
            0..=3 => {
                let r = &r4[f % r4.len()];
                pb.ipv4(
                    Ipv4Addr::new(192, 168, 0, f as u8),
                    Ipv4Addr::from(u32::from(r.addr) | 1),
                )
                .udp(1000 + f as u16, 53)
                .payload(&payload)
                .pad_to(60)
                .build()
            }
            4 | 5 => {
                let r = &r6[f % r6.len()];
                pb.ipv6(Ipv6Addr::LOCALHOST, Ipv6Addr::from(u128::from(r.addr) | 1))
                    .udp(1000 + f as u16, 53)
                    .payload(&payload)
                    .build()
            }
            _ => {
                let mut g = vec![0u8; 24 + (k as usize % 40)];
                g[12] = 0x08; // IPv4 EtherType, then garbage: dropped by ip4-input
                g[14..22].copy_from_slice(&payload);
                g
            }
        };
        out.push(frame);
    }
    (out, app)
}

/// l3fwd behind a batcher over `packets` (`direct`: IPv4/IPv6 vectors start after
/// `ethernet-input`), its transmit side recorded; returns the graph and the recorder's name.
fn l3fwd_graph(
    packets: &[Vec<u8>],
    app: &L3fwd,
    cfg: BatcherConfig,
    direct: bool,
) -> (pktvec_graph::Graph, String) {
    let mut b = GraphBuilder::new(GraphConfig::default());
    b.add(
        "batcher",
        Batcher::new(ReplaySource::new(packets.to_vec()), cfg),
    );
    let nodes = app.add_to(&mut b);
    if direct {
        // Whole-path vectors of untagged IPv4/IPv6 start after ethernet-input.
        b.set_next("batcher", BatcherNext::Ip4, &nodes.ethernet_to_ip4.to)
            .set_next("batcher", BatcherNext::Ip6, &nodes.ethernet_to_ip6.to);
    }
    b.add(&nodes.output_to_tx.to, Record::default());
    let pool = BufferPool::new(PoolConfig {
        buffers: 8192,
        ..PoolConfig::default()
    });
    (b.build(pool.unwrap()).unwrap(), nodes.output_to_tx.to)
}

/// What `l3fwd_graph`'s recorder got, after checking that every packet went in and none
/// is left.
fn recorded(g: &mut pktvec_graph::Graph, sink: &str, input: usize) -> Vec<(u16, Vec<u8>)> {
    let c = g.conservation();
    assert!(c.is_balanced() && c.buffers_in_use == 0, "{c}");
    assert_eq!(c.input, input as u64);
    std::mem::take(&mut g.node_mut::<Record>(sink).unwrap().0)
}

fn run_l3fwd(
    packets: &[Vec<u8>],
    app: &L3fwd,
    cfg: BatcherConfig,
    direct: bool,
) -> (Vec<(u16, Vec<u8>)>, pktvec_graph::Graph) {
    let (mut g, sink) = l3fwd_graph(packets, app, cfg, direct);
    g.run_until_idle();
    (recorded(&mut g, &sink, packets.len()), g)
}

/// `run_l3fwd` with the batcher off: the reference run.
fn run_off(packets: &[Vec<u8>], app: &L3fwd) -> (Vec<(u16, Vec<u8>)>, pktvec_graph::Graph) {
    let off = BatcherConfig {
        enabled: false,
        ..Default::default()
    };
    run_l3fwd(packets, app, off, false)
}

/// The batcher over `src` (with `table` over the built-in protocol graph, else the
/// built-in table) feeding `sink` as its only next node, in graph vectors of `vector`.
fn batcher_graph<N: Node>(
    src: ReplaySource,
    cfg: BatcherConfig,
    table: Option<SharedPathTable>,
    sink: N,
    vector: usize,
) -> pktvec_graph::Graph {
    let bt = match table {
        Some(t) => Batcher::with_table(src, cfg, ProtocolGraph::builtin(), t),
        None => Batcher::new(src, cfg),
    };
    let mut b = GraphBuilder::new(GraphConfig {
        vector_size: vector,
        ..Default::default()
    });
    b.add("batcher", bt).add("ethernet-input", sink);
    b.build(BufferPool::new(PoolConfig::default()).unwrap())
        .unwrap()
}

/// (flow, seq) from a forwarded packet's payload (the 8 bytes after the UDP header).
fn flow_seq(frame: &[u8]) -> (u32, u32) {
    let e = etherparse::SlicedPacket::from_ethernet(frame).unwrap();
    let p = match e.transport {
        Some(etherparse::TransportSlice::Udp(u)) => u.payload(),
        _ => panic!("forwarded non-UDP"),
    };
    (
        u32::from_be_bytes(p[..4].try_into().unwrap()),
        u32::from_be_bytes(p[4..8].try_into().unwrap()),
    )
}

/// The batcher's promise, checked between a run without it (`off`) and one with it
/// (`on`): the same multiset of (port, bytes), the same drops, and each flow's packets in
/// the same, increasing order.
fn assert_same_forwarding(
    what: &str,
    off: &[(u16, Vec<u8>)],
    on: &[(u16, Vec<u8>)],
    goff: &pktvec_graph::Graph,
    gon: &pktvec_graph::Graph,
) {
    let (mut a, mut b) = (off.to_vec(), on.to_vec());
    a.sort();
    b.sort();
    assert!(a == b, "{what}: same multiset of (port, bytes)");
    assert_eq!(
        goff.errors().to_string(),
        gon.errors().to_string(),
        "{what}: same drops"
    );
    let order = |v: &[(u16, Vec<u8>)]| {
        let mut per: std::collections::BTreeMap<u32, Vec<u32>> = Default::default();
        for (_, f) in v {
            let (fl, s) = flow_seq(f);
            per.entry(fl).or_default().push(s);
        }
        per
    };
    let (oa, ob) = (order(off), order(on));
    assert_eq!(oa, ob, "{what}: same per-flow order");
    assert!(
        ob.values().all(|s| s.windows(2).all(|w| w[0] < w[1])),
        "{what}: flows stay in order"
    );
}

#[test]
fn batcher_on_and_off_forward_the_same_packets_in_flow_order() {
    for (seed, batch, queues, direct) in [
        (1u64, 128usize, 8usize, false),
        (2, 32, 2, false),
        (3, 256, 1, false),
        (4, 64, 4, false),
        (5, 128, 8, true),
        (6, 32, 2, true),
        (7, 256, 1, true),
        (8, 64, 4, true),
    ] {
        let (pkts, app) = traffic(seed, 97, 6000);
        let (off, goff) = run_off(&pkts, &app);
        let cfg = BatcherConfig {
            batch_size: batch,
            max_queues: queues,
            epoch_packets: 1000, // several reassignments during the run
            ..Default::default()
        };
        let (on, gon) = run_l3fwd(&pkts, &app, cfg, direct);
        if direct {
            // IPv4/IPv6 vectors skipped ethernet-input (here: every packet).
            let eth = gon.runtime().row("ethernet-input").map_or(0, |r| r.packets);
            let eth_off = goff.runtime().row("ethernet-input").unwrap().packets;
            assert!(
                eth * 3 < eth_off,
                "{eth} of {eth_off} through ethernet-input"
            );
        }
        assert!(off.len() > 3000, "most packets forwarded");
        assert_same_forwarding(&format!("seed {seed}"), &off, &on, &goff, &gon);
    }
}

#[test]
fn elephants_get_their_own_queue_and_mice_share_one() {
    let g = ProtocolGraph::builtin();
    let table = PathTable::from_toml(
        &g,
        "default_path = 0\n\
         [[rules]]\npath = 1\nfields = [ { field = \"udp.dport\", value = 1 } ]\n\
         [[rules]]\npath = 2\nfields = [ { field = \"udp.dport\", value = 2 } ]\n\
         [[rules]]\npath = 3\nfields = [ { field = \"udp.dport\", value = 3 } ]\n\
         [[rules]]\npath = 4\nfields = [ { field = \"udp.dport\", value = 4 } ]\n",
    )
    .unwrap();
    // Shares 80% / 10% / 6% / 4% over dports 1..4.
    let pkt = |d: u16| {
        PacketBuilder::ethernet(mac(1), mac(2))
            .ipv4(Ipv4Addr::new(1, 1, 1, 1), Ipv4Addr::new(2, 2, 2, 2))
            .udp(9, d)
            .build()
    };
    let pkts: Vec<Vec<u8>> = (0..10_000)
        .map(|i| {
            pkt(match i % 50 {
                0..=39 => 1,
                40..=44 => 2,
                45..=47 => 3,
                _ => 4,
            })
        })
        .collect();
    let cfg = BatcherConfig {
        max_queues: 3,
        elephant_share: 0.08,
        epoch_packets: 2000,
        batch_size: 64,
        ..Default::default()
    };
    let src = ReplaySource::new(pkts);
    let mut gr = batcher_graph(src, cfg, Some(SharedPathTable::new(table)), NullSink, 256);
    gr.run_until_idle();
    let st = gr.node::<Batcher<ReplaySource>>("batcher").unwrap().stats();
    assert!(st.remaps >= 1);
    assert_eq!(st.queues[1].paths, vec![1], "{st:?}");
    assert_eq!(st.queues[2].paths, vec![2]);
    assert_eq!(st.queues[0].paths, vec![3, 4], "mice share queue 0");
    assert_eq!(
        st.path_packets,
        vec![(1, 8000), (2, 1000), (3, 600), (4, 400)]
    );
    assert!(gr.conservation().is_balanced());
}

#[test]
fn full_queues_drop_with_a_reason_and_memory_stays_bounded() {
    let (pkts, _) = traffic(5, 31, 4000);
    let cfg = BatcherConfig {
        batch_size: 256,
        queue_capacity: 16, // below the batch: "full" before a batch is whole
        on_full: FullPolicy::Drop,
        ..Default::default()
    };
    let mut g = batcher_graph(ReplaySource::new(pkts), cfg, None, NullSink, 256);
    g.run_until_idle();
    let c = g.conservation();
    assert!(c.is_balanced() && c.buffers_in_use == 0, "{c}");
    let st = g.node::<Batcher<ReplaySource>>("batcher").unwrap().stats();
    // capacity is max(queue_capacity, batch_size): 256; bursts of 256 into one queue
    // never exceed capacity + one burst.
    assert!(st.queues.iter().all(|q| q.held == 0));
    assert_eq!(c.dropped, st.dropped_full);
}

#[test]
fn a_quiet_path_is_flushed_at_its_deadline() {
    // One IPv6 packet among IPv4 floods: without a deadline it would wait for 255 more.
    let v4 = PacketBuilder::ethernet(mac(1), mac(2))
        .ipv4(Ipv4Addr::new(1, 1, 1, 1), Ipv4Addr::new(2, 2, 2, 2))
        .udp(1, 2)
        .build();
    let v6 = PacketBuilder::ethernet(mac(1), mac(2))
        .ipv6(Ipv6Addr::LOCALHOST, Ipv6Addr::LOCALHOST)
        .udp(1, 2)
        .build();
    let mut pkts = vec![v6];
    pkts.extend(std::iter::repeat_n(v4, 255));
    let cfg = BatcherConfig {
        batch_size: 256,
        flush_deadline_us: 20.0,
        ..Default::default()
    };
    let src = ReplaySource::new(pkts).looping(true).with_limit(200_000);
    let mut g = batcher_graph(src, cfg, None, NullSink, 256);
    g.run_until_idle();
    let st = g.node::<Batcher<ReplaySource>>("batcher").unwrap().stats();
    let q6 = st.queues.iter().find(|q| q.paths == vec![2]).unwrap();
    assert!(q6.deadline_flushes > 0, "{st:?}");
    assert!(g.conservation().is_balanced());
    assert!(st.latency_p50_ns < st.latency_p99_ns * 1.01 + 1.0);
}

#[test]
fn the_path_table_can_change_while_running() {
    let g = ProtocolGraph::builtin();
    let shared = SharedPathTable::new(PathTable::by_network_protocol(&g));
    let v4 = PacketBuilder::ethernet(mac(1), mac(2))
        .ipv4(Ipv4Addr::new(1, 1, 1, 1), Ipv4Addr::new(2, 2, 2, 2))
        .udp(1, 2)
        .build();
    let src = ReplaySource::new(vec![v4]).looping(true).with_limit(20_000);
    let cfg = BatcherConfig::default();
    let mut gr = batcher_graph(src, cfg, Some(shared.clone()), NullSink, 256);
    for _ in 0..20 {
        gr.run_once();
    }
    shared.store(PathTable::from_toml(&g, "default_path = 42").unwrap());
    gr.run_until_idle();
    let st = gr.node::<Batcher<ReplaySource>>("batcher").unwrap().stats();
    let paths: Vec<u16> = st.path_packets.iter().map(|p| p.0).collect();
    assert_eq!(paths, vec![1, 42], "{st:?}");
    assert_eq!(st.path_packets.iter().map(|p| p.1).sum::<u64>(), 20_000);
}

#[test]
fn batching_can_be_switched_and_resized_while_running() {
    let (pkts, app) = traffic(11, 97, 8000);
    let (off, goff) = run_off(&pkts, &app);
    // The same traffic, with batching switched on/off and resized every few calls.
    let cfg = BatcherConfig {
        batch_size: 128,
        ..Default::default()
    };
    let (mut g, sink) = l3fwd_graph(&pkts, &app, cfg, false);
    let settings = [
        (false, 128),
        (true, 16),
        (true, 256),
        (false, 64),
        (true, 4096),
        (true, 1),
    ];
    let mut applied = Vec::new();
    let mut switched_with_held = 0;
    for call in 0.. {
        if call % 5 == 0 {
            let (on, size) = settings[(call / 5) % settings.len()];
            let bt = g.node_mut::<Batcher<ReplaySource>>("batcher").unwrap();
            switched_with_held += (!on && bt.held() > 0) as u32;
            applied.push(bt.set_batching(on, size));
        }
        if g.run_once() == 0 && g.node::<Batcher<ReplaySource>>("batcher").unwrap().held() == 0 {
            break;
        }
    }
    g.run_until_idle();
    // Queues sized for capacity 1024 + batch 128 (a 2048-slot ring): 4096 is cut to 1024.
    assert!(
        applied.iter().all(|&b| (1..=1024).contains(&b)),
        "{applied:?}"
    );
    assert!(applied.contains(&1024) && applied.contains(&1) && applied.contains(&16));
    assert!(
        switched_with_held > 0,
        "some switches off happened with packets queued"
    );
    let on = recorded(&mut g, &sink, pkts.len());
    assert_same_forwarding("switched while running", &off, &on, &goff, &g);
}

#[test]
fn single_path_bursts_are_handed_over_whole_and_in_order() {
    // 1000 IPv4 packets, one path: every burst of a batch leaves as the vector itself
    // (its queue is empty), the last 40 wait in the queue until the source runs dry.
    // With uniform vectors (the default), four bursts of 64 make the first vector of
    // 256, then each call receives a whole vector's burst (256, 256, then the last 232,
    // uniform too: 4 vectors, all handed over); without, each burst of 64 is one vector
    // and the last 40 wait in the queue until the source runs dry.
    let pkts: Vec<Vec<u8>> = (0..1000u32)
        .map(|i| {
            PacketBuilder::ethernet(mac(1), mac(2))
                .ipv4(Ipv4Addr::new(1, 1, 1, 1), Ipv4Addr::new(2, 2, 2, 2))
                .udp(9, 53)
                .payload(&i.to_be_bytes())
                .build()
        })
        .collect();
    for (uniform_vectors, vectors, passed) in [(false, 16, 15), (true, 4, 4)] {
        let cfg = BatcherConfig {
            batch_size: 64,
            uniform_vectors,
            ..Default::default()
        };
        let src = ReplaySource::new(pkts.clone());
        let mut g = batcher_graph(src, cfg, None, Record::default(), 256);
        g.run_until_idle();
        let c = g.conservation();
        assert!(c.is_balanced() && c.buffers_in_use == 0, "{c}");
        let got: Vec<Vec<u8>> = g
            .node::<Record>("ethernet-input")
            .unwrap()
            .0
            .iter()
            .map(|(_, f)| f.clone())
            .collect();
        assert_eq!(got, pkts, "same packets, same order");
        let rt = g.runtime();
        let row = rt.row("ethernet-input").unwrap();
        assert_eq!((row.packets, row.vectors), (1000, vectors));
        let st = g.node::<Batcher<ReplaySource>>("batcher").unwrap().stats();
        assert_eq!(st.path_packets, vec![(1, 1000)]);
        let q = &st.queues[1];
        assert_eq!(
            (q.packets, q.vectors, q.passed_through),
            (1000, vectors, passed)
        );
        assert_eq!(q.held, 0);
        assert_eq!(
            st.latency_p50_ns, 0.0,
            "handed-over packets are held for no time"
        );
    }
}

/// Stretches of one path (IPv4 only, IPv6 only) between mixed stretches: uniform bursts
/// are handed over only while their path's queue is empty, so flows keep their order.
fn stretches(pkts: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let kind = |f: &Vec<u8>| match (f.len() >= 60, f[12], f[13]) {
        (true, 0x08, 0x00) => 0,
        (_, 0x86, 0xdd) => 1,
        _ => 2,
    };
    let mut streams: [std::collections::VecDeque<Vec<u8>>; 3] = Default::default();
    for f in pkts {
        streams[kind(f)].push_back(f.clone());
    }
    // Each flow is of one kind, so any merge of the three streams keeps per-flow order.
    let mut out = Vec::with_capacity(pkts.len());
    let mut turn = 0usize;
    while streams.iter().any(|s| !s.is_empty()) {
        let (from, n) = match turn % 4 {
            0 => (Some(0), 300),
            1 | 3 => (None, 70),
            _ => (Some(1), 200),
        };
        for k in 0..n {
            let s = from.unwrap_or(k % 3);
            if let Some(f) = streams[s].pop_front() {
                out.push(f);
            }
        }
        turn += 1;
    }
    out
}

#[test]
fn hand_over_keeps_flow_order_between_single_path_and_mixed_stretches() {
    for (seed, batch, direct) in [(11u64, 64usize, true), (12, 32, false), (13, 128, true)] {
        let (pkts, app) = traffic(seed, 97, 6000);
        let pkts = stretches(&pkts);
        let (off, goff) = run_off(&pkts, &app);
        let cfg = BatcherConfig {
            batch_size: batch,
            epoch_packets: 1000,
            ..Default::default()
        };
        let (on, gon) = run_l3fwd(&pkts, &app, cfg, direct);
        assert_same_forwarding(&format!("seed {seed}"), &off, &on, &goff, &gon);
        let st = gon
            .node::<Batcher<ReplaySource>>("batcher")
            .unwrap()
            .stats();
        let passed: u64 = st.queues.iter().map(|q| q.passed_through).sum();
        let vectors: u64 = st.queues.iter().map(|q| q.vectors).sum();
        let sent: u64 = st.queues.iter().map(|q| q.packets).sum();
        assert!(
            passed > 0 && passed < vectors,
            "{passed} of {vectors} handed over"
        );
        assert_eq!(
            sent + st.dropped_full,
            pkts.len() as u64,
            "stats count every packet"
        );
        let counted: u64 = st.path_packets.iter().map(|p| p.1).sum();
        assert_eq!(counted, pkts.len() as u64);
    }
}

#[test]
fn bursts_of_many_paths_keep_each_paths_order() {
    // 12 paths (by UDP destination port) in a random order: bursts hold more classes than
    // are queued class by class (8), queues are shared (1 or 4 queues) or not (16).
    let g = ProtocolGraph::builtin();
    let rules: String = (1..=12)
        .map(|d| {
            format!(
                "[[rules]]\npath = {d}\nfields = [ {{ field = \"udp.dport\", value = {d} }} ]\n"
            )
        })
        .collect();
    let table = PathTable::from_toml(&g, &format!("default_path = 0\n{rules}")).unwrap();
    let mut x = 0x9e3779b97f4a7c15u64;
    let mut seq = [0u32; 13];
    let pkts: Vec<Vec<u8>> = (0..5000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let d = (x % 12 + 1) as u16;
            seq[d as usize] += 1;
            PacketBuilder::ethernet(mac(1), mac(2))
                .ipv4(Ipv4Addr::new(1, 1, 1, 1), Ipv4Addr::new(2, 2, 2, 2))
                .udp(9, d)
                .payload(&seq[d as usize].to_be_bytes())
                .build()
        })
        .collect();
    for (queues, batch) in [(1usize, 64usize), (4, 32), (16, 16)] {
        let cfg = BatcherConfig {
            max_queues: queues,
            batch_size: batch,
            epoch_packets: 700,
            ..Default::default()
        };
        let src = ReplaySource::new(pkts.clone());
        let t = Some(SharedPathTable::new(table.clone()));
        let mut gr = batcher_graph(src, cfg, t, Record::default(), 256);
        gr.run_until_idle();
        assert!(gr.conservation().is_balanced());
        let rec = &gr.node::<Record>("ethernet-input").unwrap().0;
        assert_eq!(rec.len(), pkts.len(), "{queues} queues: every packet out");
        let mut next = [1u32; 13];
        for (_, f) in rec {
            let d = u16::from_be_bytes([f[36], f[37]]) as usize;
            let s = u32::from_be_bytes(f[42..46].try_into().unwrap());
            assert_eq!(s, next[d], "{queues} queues: path {d} in order");
            next[d] += 1;
        }
        let st = gr.node::<Batcher<ReplaySource>>("batcher").unwrap().stats();
        let sent: u64 = st.queues.iter().map(|q| q.packets).sum();
        assert_eq!(sent, pkts.len() as u64);
    }
}
