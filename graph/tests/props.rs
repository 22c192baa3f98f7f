//! Property tests: random graphs (cycles included), random settings and random, often
//! malformed, packets. Nothing panics, no buffer leaks, and every packet ends exactly where
//! an independent per-packet model of the same graph says: at the same sink, or dropped by
//! the same node for the same reason. So packets in = packets out + drops by reason,
//! exactly, per sink and per reason.

use pktvec_graph::builtin::{NullSink, PacketSource, SourceNext};
use pktvec_graph::{
    next_nodes, node_errors, Context, Frame, GraphBuilder, GraphConfig, Node, Verdict,
};
use pktvec_packet::wire::{EthernetFrame, Ipv4Packet};
use pktvec_packet::{BufferPool, PoolConfig};
use proptest::prelude::*;
use std::collections::BTreeMap;

next_nodes! {
    /// Four arcs, rewired at random.
    pub enum RouterNext { R0 = "r0", R1 = "r1", R2 = "r2", R3 = "r3" }
}
node_errors! {
    /// Router drops.
    pub enum RouterError {
        HopLimit = "hop limit",
        Malformed = "malformed ipv4",
        Unlucky = "unlucky hash",
    }
}

/// How a router disposes of packets (to exercise every enqueue path).
#[derive(Clone, Copy, Debug)]
enum Style {
    Quad,
    SubBatch,
    OneByOne,
    Manual,
    Slices,
}

#[derive(Clone, Debug)]
struct RouterCfg {
    id: u8,
    arcs: usize,
    parse: bool,
    style: Style,
}

const MAX_HOPS: u8 = 12;

/// The decision of router `cfg` for a packet with these bytes, seen after `hops` hops.
/// Used by the nodes and by the model alike.
fn decide(cfg: &RouterCfg, data: &[u8], hops: u8) -> Result<usize, RouterError> {
    if hops >= MAX_HOPS {
        return Err(RouterError::HopLimit);
    }
    if cfg.parse {
        let ok = EthernetFrame::new_checked(data)
            .ok()
            .and_then(|_| data.get(14..))
            .is_some_and(|l3| Ipv4Packet::new_checked(l3).is_ok());
        if !ok {
            return Err(RouterError::Malformed);
        }
    }
    let mut h: u32 = 0x9e37_79b9 ^ cfg.id as u32 ^ ((hops as u32) << 8);
    for &b in data.iter().take(24) {
        h = (h ^ b as u32).wrapping_mul(0x0100_0193);
    }
    if h % 17 == 0 {
        return Err(RouterError::Unlucky);
    }
    Ok(h as usize % cfg.arcs)
}

const ARCS: [RouterNext; 4] = [
    RouterNext::R0,
    RouterNext::R1,
    RouterNext::R2,
    RouterNext::R3,
];

struct Router(RouterCfg);

impl Node for Router {
    type Next = RouterNext;
    type Error = RouterError;
    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        let cfg = &self.0;
        let verdict = |p: &mut pktvec_packet::PacketMut<'_>| {
            let hops = p.meta().user[0];
            match decide(cfg, p.data(), hops) {
                Ok(a) => {
                    p.meta_mut().user[0] = hops + 1;
                    Verdict::Next(ARCS[a])
                }
                Err(e) => Verdict::Drop(e),
            }
        };
        match cfg.style {
            Style::Quad => cx.process_packets(frame, verdict),
            Style::SubBatch => cx.process_sub_batches(frame, |p| p.len(), |p, _len| verdict(p)),
            Style::OneByOne => {
                for &bi in frame.buffers() {
                    match verdict(&mut cx.packet_mut(bi)) {
                        Verdict::Next(n) => cx.enqueue(bi, n),
                        Verdict::Drop(e) => cx.drop_buffer(bi, e),
                    }
                }
            }
            Style::Slices => {
                // Verdicts first, then runs of the same arc as bulk slices.
                let mut arcs: Vec<Option<usize>> = Vec::with_capacity(frame.len());
                for &bi in frame.buffers() {
                    match verdict(&mut cx.packet_mut(bi)) {
                        Verdict::Next(n) => arcs.push(Some(pktvec_graph::Next::index(n) as usize)),
                        Verdict::Drop(e) => {
                            arcs.push(None);
                            cx.drop_buffer(bi, e);
                        }
                    }
                }
                let bufs = frame.buffers();
                let mut i = 0;
                while i < bufs.len() {
                    let mut j = i + 1;
                    while j < bufs.len() && arcs[j] == arcs[i] {
                        j += 1;
                    }
                    if let Some(a) = arcs[i] {
                        cx.enqueue_slice(&bufs[i..j], ARCS[a]);
                    }
                    i = j;
                }
                frame.clear();
            }
            Style::Manual => {
                let map = cx.verdict_map();
                let (bufs, nexts) = frame.split_mut();
                for (slot, &bi) in nexts.iter_mut().zip(bufs) {
                    let mut p = cx.packet_mut(bi);
                    let v = verdict(&mut p);
                    *slot = map.slot(v, p.meta_mut());
                }
                cx.enqueue_frame(frame);
            }
        }
    }
}

#[derive(Debug, Clone)]
struct Spec {
    routers: Vec<RouterCfg>,
    /// Target of each router arc: < routers.len() is a router, otherwise sink (n - routers).
    targets: Vec<[usize; 4]>,
    sinks: usize,
    vector_size: usize,
    prefetch: usize,
    sub_batch: usize,
    packets: Vec<Vec<u8>>,
    /// Input nodes: (router they feed, packets they produce). Several feed the same
    /// router at times, so vectors overflow and must be carried.
    sources: Vec<(usize, u64)>,
}

fn valid_ipv4_frame() -> impl Strategy<Value = Vec<u8>> {
    (any::<[u8; 12]>(), 20usize..80, any::<u8>()).prop_map(|(macs, total, ttl)| {
        let mut v = macs.to_vec();
        v.extend_from_slice(&[0x08, 0x00]);
        let mut ip = vec![0u8; total];
        ip[0] = 0x45;
        ip[2..4].copy_from_slice(&(total as u16).to_be_bytes());
        ip[8] = ttl;
        ip[9] = 17;
        v.extend_from_slice(&ip);
        v
    })
}

fn packet() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        3 => valid_ipv4_frame(),
        // Valid frames cut short.
        2 => (valid_ipv4_frame(), 0usize..60).prop_map(|(mut v, n)| { v.truncate(n); v }),
        // Arbitrary bytes.
        2 => proptest::collection::vec(any::<u8>(), 0..120),
    ]
}

fn spec() -> impl Strategy<Value = Spec> {
    (1usize..7, 1usize..4).prop_flat_map(|(nr, sinks)| {
        let router =
            (1usize..=4, any::<bool>(), 0u8..5).prop_map(|(arcs, parse, s)| (arcs, parse, s));
        (
            proptest::collection::vec(router, nr),
            proptest::collection::vec(proptest::array::uniform4(0..nr + sinks), nr),
            prop_oneof![
                Just(1usize),
                Just(2),
                Just(3),
                Just(4),
                Just(5),
                1usize..300,
                Just(256)
            ],
            0usize..9,
            0usize..40,
            proptest::collection::vec(packet(), 1..24),
            proptest::collection::vec((0..nr, 1u64..1500), 1..4),
        )
            .prop_map(
                move |(rs, targets, vector_size, prefetch, sub_batch, packets, sources)| Spec {
                    routers: rs
                        .into_iter()
                        .enumerate()
                        .map(|(i, (arcs, parse, s))| RouterCfg {
                            id: i as u8,
                            arcs,
                            parse,
                            style: [
                                Style::Quad,
                                Style::SubBatch,
                                Style::OneByOne,
                                Style::Manual,
                                Style::Slices,
                            ][s as usize],
                        })
                        .collect(),
                    targets,
                    sinks,
                    vector_size,
                    prefetch,
                    sub_batch,
                    packets,
                    sources,
                },
            )
    })
}

fn node_name(spec: &Spec, t: usize) -> String {
    if t < spec.routers.len() {
        format!("r{t}")
    } else {
        format!("s{}", t - spec.routers.len())
    }
}

/// Where each packet ends, by walking the graph one packet at a time.
fn model(spec: &Spec) -> (BTreeMap<String, u64>, BTreeMap<(String, String), u64>) {
    let mut sinks = BTreeMap::new();
    let mut drops = BTreeMap::new();
    for k in spec
        .sources
        .iter()
        .flat_map(|&(entry, n)| (0..n).map(move |k| (entry, k)))
    {
        let (entry, k) = k;
        let data = &spec.packets[(k % spec.packets.len() as u64) as usize];
        let mut node = entry;
        let mut hops = 0u8;
        loop {
            if node >= spec.routers.len() {
                *sinks.entry(node_name(spec, node)).or_insert(0) += 1;
                break;
            }
            let cfg = &spec.routers[node];
            match decide(cfg, data, hops) {
                Ok(a) => {
                    hops += 1;
                    node = spec.targets[node][a];
                }
                Err(e) => {
                    let reason = <RouterError as pktvec_graph::ErrorReason>::REASONS
                        [pktvec_graph::ErrorReason::index(e) as usize];
                    *drops
                        .entry((node_name(spec, node), reason.to_string()))
                        .or_insert(0) += 1;
                    break;
                }
            }
        }
    }
    (sinks, drops)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 160, ..ProptestConfig::default() })]

    #[test]
    fn random_graphs_deliver_every_packet_where_the_model_says(spec in spec()) {
        let mut b = GraphBuilder::new(GraphConfig {
            vector_size: spec.vector_size,
            prefetch_distance: spec.prefetch,
            sub_batch: spec.sub_batch,
            ..GraphConfig::default()
        });
        for (i, &(entry, n)) in spec.sources.iter().enumerate() {
            let name = format!("src{i}");
            b.add(name.as_str(), PacketSource::new(spec.packets.clone()).with_limit(n));
            b.set_next(&name, SourceNext::Out, &format!("r{entry}"));
        }
        for (i, r) in spec.routers.iter().enumerate() {
            let name = format!("r{i}");
            b.add(name.as_str(), Router(r.clone()));
            for (a, &t) in spec.targets[i].iter().enumerate() {
                b.set_next(&name, ARCS[a], &node_name(&spec, t));
            }
        }
        for s in 0..spec.sinks {
            b.add(format!("s{s}"), NullSink);
        }
        // Room for a vector from every source in one turn: a source with no buffer drops
        // (counted "no buffer", a NIC's behaviour), which this model does not predict.
        let buffers = (spec.sources.len() * spec.vector_size).max(512) as u32;
        let pool = BufferPool::new(PoolConfig { buffers, ..PoolConfig::default() }).unwrap();
        let mut g = b.build(pool).unwrap();
        g.run_until_idle();

        let (want_sinks, want_drops) = model(&spec);
        let rt = g.runtime();
        for s in 0..spec.sinks {
            let name = format!("s{s}");
            let got = rt.row(&name).map_or(0, |r| r.packets);
            prop_assert_eq!(got, want_sinks.get(&name).copied().unwrap_or(0), "sink {}", name);
        }
        let errors = g.errors();
        let mut got_drops = BTreeMap::new();
        for row in &errors.rows {
            got_drops.insert((row.node.clone(), row.reason.clone()), row.count);
        }
        prop_assert_eq!(got_drops, want_drops);
        let c = g.conservation();
        prop_assert!(c.is_balanced(), "{}", c);
        prop_assert_eq!(c.input, spec.sources.iter().map(|s| s.1).sum::<u64>());
        prop_assert_eq!(c.in_flight, 0);
        prop_assert_eq!(g.pool().in_use(), 0);
        prop_assert_eq!(g.pool().double_frees(), 0);
    }
}
