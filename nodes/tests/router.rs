//! A small router graph built from the protocol nodes, fed with generated traffic (every
//! kind of malformed frame included): every forwarded packet is compared byte for byte
//! with an independent reference computed here, every drop is expected with its reason, and
//! in = out + drops.

use pktvec_graph::{
    next_nodes, Context, Frame, GraphBuilder, GraphConfig, NoError, NoNext, Node, NodeKind, Verdict,
};
use pktvec_io::generator::{FlowKind, Generator, GeneratorNext, GeneratorSource, MalformedKind};
use pktvec_io::profile::TrafficProfile;
use pktvec_lookup::ipv4::{Lpm4, Lpm4Config};
use pktvec_lookup::ipv6::{Lpm6, SharedLpm6};
use pktvec_nodes::arp::ArpInput;
use pktvec_nodes::ethernet::{EthernetInput, EthernetNext};
use pktvec_nodes::ip4::{Adjacency, Ip4Input, Ip4Rewrite};
use pktvec_nodes::ip6::{Ip6Input, Ip6Rewrite};
use pktvec_nodes::lookup::{Ip4Lookup, Ip6Lookup};
use pktvec_nodes::output::{InterfaceOutput, OutputNext};
use pktvec_packet::{BufferPool, PoolConfig};
use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::sync::Arc;

next_nodes! {
    /// Test lookup arcs.
    pub enum L4Next { Rewrite = "ip4-rewrite" }
}
next_nodes! {
    /// Test lookup arcs.
    pub enum L6Next { Rewrite = "ip6-rewrite" }
}

const ADJ: usize = 4;

/// Stand-in for ip4-lookup: adjacency = last address byte mod 4.
struct Lookup4;
impl Node for Lookup4 {
    type Next = L4Next;
    type Error = NoError;
    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        cx.process_packets(frame, |p| {
            let d = p.data();
            p.meta_mut().opaque = (d[19] as usize % ADJ) as u32;
            Verdict::Next(L4Next::Rewrite)
        });
    }
}

/// Stand-in for ip6-lookup: adjacency = last address byte mod 4.
struct Lookup6;
impl Node for Lookup6 {
    type Next = L6Next;
    type Error = NoError;
    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        cx.process_packets(frame, |p| {
            let d = p.data();
            p.meta_mut().opaque = (d[39] as usize % ADJ) as u32;
            Verdict::Next(L6Next::Rewrite)
        });
    }
}

/// Records every frame it gets (test only: allocates).
#[derive(Default)]
struct Recorder(Vec<(u16, Vec<u8>)>);
impl Node for Recorder {
    type Next = NoNext;
    type Error = NoError;
    const KIND: NodeKind = NodeKind::Sink;
    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        for &bi in frame.buffers() {
            self.0
                .push((cx.pool().meta(bi).tx_if, cx.pool().data(bi).to_vec()));
        }
        cx.free_frame(frame);
    }
}

fn adjacencies() -> Vec<Adjacency> {
    (0..ADJ as u8)
        .map(|i| Adjacency {
            tx_if: i as u16,
            src_mac: [2, 0xaa, 0, 0, 0, i].into(),
            dst_mac: [2, 0xbb, 0, 0, 0, i].into(),
        })
        .collect()
}

fn csum(h: &[u8]) -> u16 {
    let mut s: u32 = 0;
    for c in h.chunks(2) {
        s += u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]) as u32;
    }
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

/// The reference: what the router must do with one frame.
enum Expect {
    Out(u16, Vec<u8>),
    Drop(&'static str, &'static str),
    Ndn,
}

type Route4Fn<'a> = &'a dyn Fn(u32) -> Option<usize>;
type Route6Fn<'a> = &'a dyn Fn(u128) -> Option<usize>;

fn reference(
    kind: FlowKind,
    frame: &[u8],
    vlans: usize,
    r4: Route4Fn<'_>,
    r6: Route6Fn<'_>,
) -> Expect {
    let l3 = 14 + 4 * vlans;
    let adjs = adjacencies();
    match kind {
        FlowKind::Ipv4 => {
            let ihl = (frame[l3] & 0xf) as usize * 4;
            let total = u16::from_be_bytes([frame[l3 + 2], frame[l3 + 3]]) as usize;
            let mut ip = frame[l3..l3 + total].to_vec();
            if ip[8] <= 1 {
                return Expect::Drop("ip4-input", "ttl expired");
            }
            let Some(adj) = r4(u32::from_be_bytes([ip[16], ip[17], ip[18], ip[19]])) else {
                return Expect::Drop("ip4-lookup", "no route");
            };
            ip[8] -= 1;
            ip[10] = 0;
            ip[11] = 0;
            let c = csum(&ip[..ihl]);
            ip[10..12].copy_from_slice(&c.to_be_bytes());
            let a = &adjs[adj];
            let mut out = a.dst_mac.0.to_vec();
            out.extend_from_slice(&a.src_mac.0);
            out.extend_from_slice(&[0x08, 0x00]);
            out.extend_from_slice(&ip);
            Expect::Out(a.tx_if, out)
        }
        FlowKind::Ipv6 => {
            let plen = u16::from_be_bytes([frame[l3 + 4], frame[l3 + 5]]) as usize;
            let mut ip = frame[l3..l3 + 40 + plen].to_vec();
            if ip[7] <= 1 {
                return Expect::Drop("ip6-input", "hop limit expired");
            }
            let dst: [u8; 16] = ip[24..40].try_into().unwrap();
            let Some(adj) = r6(u128::from_be_bytes(dst)) else {
                return Expect::Drop("ip6-lookup", "no route");
            };
            ip[7] -= 1;
            let a = &adjs[adj];
            let mut out = a.dst_mac.0.to_vec();
            out.extend_from_slice(&a.src_mac.0);
            out.extend_from_slice(&[0x86, 0xdd]);
            out.extend_from_slice(&ip);
            Expect::Out(a.tx_if, out)
        }
        FlowKind::Arp => Expect::Drop("arp-input", "arp not for us"),
        FlowKind::Ndn => Expect::Ndn,
        FlowKind::Unknown => Expect::Drop("ethernet-input", "unknown ethertype"),
        FlowKind::Malformed(m) => match m {
            MalformedKind::Runt => Expect::Drop("ethernet-input", "truncated frame"),
            MalformedKind::TruncatedIpv4 => Expect::Drop("ip4-input", "truncated ipv4 header"),
            MalformedKind::BadIpv4Checksum => Expect::Drop("ip4-input", "bad ipv4 header checksum"),
            MalformedKind::BadIhl => Expect::Drop("ip4-input", "bad ipv4 header length"),
            MalformedKind::TotalLengthTooLong => Expect::Drop("ip4-input", "ipv4 length mismatch"),
            MalformedKind::BadVersion => Expect::Drop("ip4-input", "bad ip version"),
            MalformedKind::TtlZero => Expect::Drop("ip4-input", "ttl expired"),
            MalformedKind::Ipv6PayloadTooLong => Expect::Drop("ip6-input", "ipv6 length mismatch"),
        },
    }
}

/// Real FIBs for the run: routes and the independent longest-match reference over them.
struct Fibs {
    v4: Vec<pktvec_lookup::routes::Route4>,
    v6: Vec<pktvec_lookup::routes::Route6>,
}

fn lpm4_ref(routes: &[pktvec_lookup::routes::Route4], a: u32) -> Option<usize> {
    routes
        .iter()
        .filter(|r| {
            let m = if r.len == 0 {
                0
            } else {
                u32::MAX << (32 - r.len)
            };
            a & m == u32::from(r.addr) & m
        })
        .max_by_key(|r| r.len)
        .map(|r| r.next_hop as usize % ADJ)
}

fn lpm6_ref(routes: &[pktvec_lookup::routes::Route6], a: u128) -> Option<usize> {
    routes
        .iter()
        .filter(|r| {
            let m = if r.len == 0 {
                0
            } else {
                u128::MAX << (128 - r.len)
            };
            a & m == u128::from(r.addr) & m
        })
        .max_by_key(|r| r.len)
        .map(|r| r.next_hop as usize % ADJ)
}

fn run(seed: u64, vector_size: usize) {
    run_with(seed, vector_size, None);
}

fn run_with(seed: u64, vector_size: usize, fibs: Option<&Fibs>) {
    let dests = if fibs.is_some() {
        "\n[destinations]\nipv4_hit_rate = 0.85\nipv6_hit_rate = 0.85"
    } else {
        ""
    };
    let profile = TrafficProfile::from_toml(&format!(
        "seed = {seed}{dests}\n[mix]\nipv4 = 4.0\nipv6 = 2.0\narp = 0.3\nndn = 0.2\nunknown_ethertype = 0.2\nmalformed = 1.5\nvlan = 0.2\nqinq = 0.1\n[flows]\ncount = 300\n[sizes]\nuniform = {{ min = 64, max = 300 }}"
    ))
    .unwrap();
    let n = 5000u64;
    let builder = |p: TrafficProfile| {
        let mut b = Generator::builder(p);
        if let Some(f) = fibs {
            b = b
                .ipv4_prefixes(f.v4.iter().map(|r| (r.addr, r.len)).collect())
                .ipv6_prefixes(f.v6.iter().map(|r| (r.addr, r.len)).collect());
        }
        b.build().unwrap()
    };
    let gen = builder(profile.clone());
    let mut reference_gen = builder(profile);

    let mut b = GraphBuilder::new(GraphConfig {
        vector_size,
        ..GraphConfig::default()
    });
    b.add("gen", GeneratorSource::new(gen).with_limit(n))
        .add("ethernet-input", EthernetInput)
        .add("ip4-input", Ip4Input::default())
        .add("ip4-rewrite", Ip4Rewrite::new(adjacencies()))
        .add("ip6-input", Ip6Input)
        .add("ip6-rewrite", Ip6Rewrite::new(adjacencies()))
        .add(
            "arp-input",
            ArpInput::new(vec![(
                Ipv4Addr::new(192, 0, 2, 1),
                [2, 0, 0, 0, 0, 1].into(),
            )]),
        )
        .add("interface-output", InterfaceOutput::new(ADJ))
        .add("tx", Recorder::default())
        .add("ndn-lookup", Recorder::default())
        .set_next("gen", GeneratorNext::Out, "ethernet-input")
        .set_next("interface-output", OutputNext::Tx, "tx")
        .set_next("ethernet-input", EthernetNext::Ndn, "ndn-lookup");
    match fibs {
        None => {
            b.add("ip4-lookup", Lookup4).add("ip6-lookup", Lookup6);
        }
        Some(f) => {
            let mut v4 = f.v4.clone();
            v4.iter_mut().for_each(|r| r.next_hop %= ADJ as u32);
            let fib4 = Lpm4::from_routes(Lpm4Config::default(), &v4).unwrap();
            let fib6 = Lpm6::from_routes(
                f.v6.iter()
                    .map(|r| (r.addr, r.len, r.next_hop % ADJ as u32)),
            )
            .unwrap();
            b.add("ip4-lookup", Ip4Lookup::new(Arc::new(fib4))).add(
                "ip6-lookup",
                Ip6Lookup::new(Arc::new(SharedLpm6::new(fib6))),
            );
        }
    }
    let stub4 = |a: u32| Some((a & 0xff) as usize % ADJ);
    let stub6 = |a: u128| Some((a & 0xff) as usize % ADJ);
    let real4 = |a: u32| fibs.and_then(|f| lpm4_ref(&f.v4, a));
    let real6 = |a: u128| fibs.and_then(|f| lpm6_ref(&f.v6, a));
    let (r4, r6): (Route4Fn<'_>, Route6Fn<'_>) = if fibs.is_some() {
        (&real4, &real6)
    } else {
        (&stub4, &stub6)
    };
    let mut g = b
        .build(
            BufferPool::new(PoolConfig {
                buffers: 2048,
                ..PoolConfig::default()
            })
            .unwrap(),
        )
        .unwrap();
    assert_eq!(g.run_until_idle(), n);

    let mut want_out: HashMap<u16, Vec<Vec<u8>>> = HashMap::new();
    let mut want_drops: HashMap<(&str, &str), u64> = HashMap::new();
    let mut want_ndn = 0;
    for _ in 0..n {
        let (f, frame) = reference_gen.next_packet();
        let frame = frame.to_vec();
        let flow = &reference_gen.flows()[f];
        match reference(flow.kind, &frame, flow.vlans.len(), r4, r6) {
            Expect::Out(port, bytes) => want_out.entry(port).or_default().push(bytes),
            Expect::Drop(node, reason) => *want_drops.entry((node, reason)).or_default() += 1,
            Expect::Ndn => want_ndn += 1,
        }
    }
    let tx = g.node::<Recorder>("tx").unwrap();
    let mut got_out: HashMap<u16, Vec<Vec<u8>>> = HashMap::new();
    for (port, bytes) in &tx.0 {
        got_out.entry(*port).or_default().push(bytes.clone());
    }
    for port in 0..ADJ as u16 {
        let (got, want) = (got_out.get(&port), want_out.get(&port));
        let (got, want) = (got.map_or(&[][..], |v| v), want.map_or(&[][..], |v| v));
        assert_eq!(
            got.len(),
            want.len(),
            "port {port} count (seed {seed}, V {vector_size})"
        );
        // Per port, IPv4 and IPv6 keep their own order.
        let split =
            |v: &[Vec<u8>], t: u8| v.iter().filter(|f| f[12] == t).cloned().collect::<Vec<_>>();
        assert_eq!(
            split(got, 0x08),
            split(want, 0x08),
            "port {port} ipv4 bytes"
        );
        assert_eq!(
            split(got, 0x86),
            split(want, 0x86),
            "port {port} ipv6 bytes"
        );
    }
    let errors = g.errors();
    let mut got_drops: HashMap<(String, String), u64> = HashMap::new();
    for r in &errors.rows {
        got_drops.insert((r.node.clone(), r.reason.clone()), r.count);
    }
    let want_drops: HashMap<(String, String), u64> = want_drops
        .into_iter()
        .map(|((a, b), c)| ((a.to_string(), b.to_string()), c))
        .collect();
    assert_eq!(got_drops, want_drops, "drops by reason (seed {seed})");
    assert_eq!(g.node::<Recorder>("ndn-lookup").unwrap().0.len(), want_ndn);
    let out = g.node::<InterfaceOutput>("interface-output").unwrap();
    let per_port: u64 = out.counters().iter().map(|c| c.packets).sum();
    assert_eq!(per_port, tx.0.len() as u64);
    let c = g.conservation();
    assert!(c.is_balanced(), "{c}");
    assert_eq!(g.pool().in_use(), 0);
    // The traffic really exercised both outcomes.
    assert!(tx.0.len() > 2000, "forwarded {}", tx.0.len());
    assert!(errors.total() > 800, "dropped {}", errors.total());
    assert!(errors.rows.len() >= 10, "{errors}");
    if fibs.is_some() {
        assert!(errors.count("ip4-lookup", "no route") > 0, "{errors}");
        assert!(errors.count("ip6-lookup", "no route") > 0, "{errors}");
    }
}

#[test]
fn router_with_real_fibs_matches_a_linear_scan_reference() {
    let mut v4 = pktvec_lookup::routes::generate_ipv4(3000, 7);
    // A default route would hide the misses; keep it out, keep a few nested prefixes in.
    v4.retain(|r| r.len > 0);
    let v6 = pktvec_lookup::routes::generate_ipv6(500, 8);
    let fibs = Fibs { v4, v6 };
    for (seed, v) in [(11, 256), (12, 5)] {
        run_with(seed, v, Some(&fibs));
    }
}

#[test]
fn router_matches_the_reference_on_generated_traffic() {
    for (seed, v) in [(1, 256), (2, 1), (3, 7), (4, 64)] {
        run(seed, v);
    }
}
