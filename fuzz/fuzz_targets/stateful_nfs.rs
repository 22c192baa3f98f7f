//! Fuzz target `stateful_nfs`: frames from the input (the graph targets' format, see
//! `pktvec_fuzz::Input`) through the four stateful NFs of `pktvec::nf` (`nat`,
//! `classifier`, `intruder`, `dhcpd`), each in a one-worker `Strategy::Fine` domain with
//! small tables (full tables, exhausted port and address pools and expiry are all
//! reached), after a prefix of the NF's own generated traffic. NAT, intruder and DHCP
//! server are built fresh for every input; the classifier (its DFA takes milliseconds to
//! build) once per process for each clock, every flow of the virtual-clock one expired
//! before each input (the real-clock one keeps its flows between inputs).
//! Checks: no panic, the graph's conservation balanced, every buffer back in the pool, no
//! double free; after expiring everything far in the future, every NAT table record and
//! outside port, every intruder reassembly and flow record and every flow of the
//! virtual-clock classifier is free again; the DHCP server's lease counts add up to the
//! pool. There is no reference model of what the NFs transmit.
//!
//! How the shared input format is read here:
//!
//! ```text
//! byte 0   bits 0..=4: frames - 1; bit 5: clock: 0 a virtual clock (our node `<nf>-v`
//!          runs the NF's worker at a time the input sets, deterministic), 1 the real
//!          TSC through the runtime's own `NfNode` (`<nf>`); bit 6: trace;
//!          bit 7: inject the frames into the NF node instead of our input node
//! byte 1   vector size, prefetch distance, sub-batch size (as every graph target)
//! byte 2   bits 0..=2: the NF (0 nat, 1 classifier, 2 intruder, 3 dhcpd, 4..=7 every
//!          frame through all four); bits 3..=4: generated frames run first (0, 8, 32,
//!          128); 0xc0 + n: only n buffers free while the input's own frames run
//! frames   receive interface index (bits 12..=14 of the frame header): with the virtual
//!          clock, how far the clock moves before the frame (STEPS); synthetic: byte 0
//!          picks a frame of the NF's generator (bits 0..=6; bit 7: instead one of the
//!          NF's extras: NAT replies to the sessions the prefix made, DHCP echo replies
//!          from pool addresses), then 3-byte edits (big-endian offset mod the length,
//!          byte written there), a last 1 or 2 bytes cut the frame to that length
//! ```
//!
//! `PKTVEC_FUZZ_DEBUG=1` prints each input's frames, conservation and drop reasons.

#![no_main]

use libfuzzer_sys::fuzz_target;
use pktvec::graph::builtin::NullSink;
use pktvec::graph::{
    clock, next_nodes, node_errors, Context, Frame, Graph, GraphBuilder, GraphConfig, Node,
    NodeKind, Verdict,
};
use pktvec::nf::classifier::{self, Classifier, ClassifierConfig, ClassifierWorker};
use pktvec::nf::dhcpd::{self, DhcpConfig, Dhcpd, DhcpdWorker};
use pktvec::nf::intruder::{self, Intruder, IntruderConfig, IntruderWorker};
use pktvec::nf::nat::{Nat, NatConfig, NatTraffic, NatWorker, Timeouts};
use pktvec::nf::runtime::{Nf, NfNext, NfNode, NfWorker};
use pktvec::packet::{BufferPool, PoolConfig};
use pktvec::state::{Domain, Strategy, SyncConfig};
use pktvec_fuzz::{hex, Input, RX_IFS};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::hint::black_box;
use std::net::Ipv4Addr;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// Lock stripes of every NF's domain.
const STRIPES: usize = 8;
/// Buffers in the graph's pool.
const BUFFERS: u32 = 1024;
/// Generated frames per NF (a synthetic frame picks one by 7 bits).
const GENERATED: usize = 128;
/// Generated frames run before the input's own (byte 2 bits 3..=4).
const PREFIX: [usize; 4] = [0, 8, 32, GENERATED];
/// DHCP pool addresses.
const DHCP_POOL: usize = 16;
/// NAT session table capacity.
const NAT_CAPACITY: usize = 8;
/// The four NFs' node names (the real-clock `NfNode`s; `-v`: the virtual-clock nodes).
const NAMES: [&str; 4] = ["nat", "classifier", "intruder", "dhcpd"];
const VNAMES: [&str; 4] = ["nat-v", "classifier-v", "intruder-v", "dhcpd-v"];

/// Clock steps (in seconds) a frame's receive-interface index selects, virtual clock.
const STEPS: [f64; 8] = [0.0, 1e-9, 1e-6, 1e-3, 0.1, 1.0, 10.0, 3600.0];

fn hz() -> f64 {
    static HZ: OnceLock<f64> = OnceLock::new();
    *HZ.get_or_init(clock::tsc_hz)
}

fn step_ticks(i: u32) -> u64 {
    let s = STEPS[i as usize & 7];
    if s == 0.0 {
        0
    } else {
        ((s * hz()) as u64).max(1)
    }
}

fn debug() -> bool {
    static D: OnceLock<bool> = OnceLock::new();
    *D.get_or_init(|| std::env::var_os("PKTVEC_FUZZ_DEBUG").is_some())
}

// ---- the NFs ------------------------------------------------------------------------

fn domain() -> Arc<Domain> {
    Domain::new(SyncConfig {
        strategy: Strategy::Fine,
        workers: 1,
        stripes: STRIPES,
        ..SyncConfig::default()
    })
    .expect("domain")
}

fn nat_config() -> NatConfig {
    NatConfig {
        pool: vec![Ipv4Addr::new(198, 51, 100, 1)],
        // 4 ports per (protocol, stripe): ports run out as well as table records
        ports: 1024..=1055,
        capacity: NAT_CAPACITY,
        timeouts: Timeouts {
            udp: Duration::from_secs(2),
            tcp_established: Duration::from_secs(10),
            tcp_transitory: Duration::from_millis(500),
            icmp: Duration::from_secs(1),
        },
        sweep_buckets: 4,
        ..NatConfig::default()
    }
}

fn new_nat() -> Nat {
    Nat::new(domain(), nat_config()).expect("nat")
}

fn new_classifier() -> Classifier {
    Classifier::new(
        &domain(),
        ClassifierConfig {
            capacity: 8,
            idle_timeout: 1.0,
            closed_timeout: 0.05,
            sweep_buckets: 4,
            ..ClassifierConfig::default()
        },
    )
    .expect("classifier")
}

fn new_intruder() -> Intruder {
    Intruder::new(
        &domain(),
        IntruderConfig {
            reassembly_capacity: 8,
            flow_capacity: 8,
            reassembly_timeout: Duration::from_millis(100),
            flow_timeout: Duration::from_secs(1),
            sweep_buckets: 4,
            detection_log: 4,
        },
    )
    .expect("intruder")
}

fn dhcp_config() -> DhcpConfig {
    let hz = hz();
    DhcpConfig {
        pool: DHCP_POOL,
        clients: 8,
        lease_secs: 10,
        lease_ticks: (10.0 * hz) as u64,
        ping_ticks: (1e-3 * hz) as u64,
        offer_ticks: (0.5 * hz) as u64,
        decline_ticks: (2.0 * hz) as u64,
        max_probe: 4,
        sweep_stripes: 2,
        sweep_buckets: 2,
    }
}

fn new_dhcpd() -> Dhcpd {
    Dhcpd::new(&domain(), dhcp_config())
}

/// Each NF's generated frames (built once per process) and its fixed extras.
struct Generated {
    frames: [Vec<Vec<u8>>; 4],
    dhcp_echo: Vec<Vec<u8>>,
}

fn generated() -> &'static Generated {
    static G: OnceLock<Generated> = OnceLock::new();
    G.get_or_init(|| {
        let nat = NatTraffic::new(16, 7).frames(0, GENERATED);
        let cls = classifier::generate(
            &classifier::TrafficConfig {
                packets: GENERATED,
                concurrency: 12,
                burst: 0.3,
                seed: 7,
                ..classifier::TrafficConfig::default()
            },
            0,
        )
        .frames;
        let intr = intruder::generate(&intruder::TrafficConfig {
            packets: GENERATED,
            active_flows: 12,
            attack_share: 0.3,
            seed: 7,
            ..intruder::TrafficConfig::default()
        })
        .frames;
        let dhcp = dhcpd::traffic(
            &dhcpd::TrafficConfig {
                hosts: 24,
                packets: GENERATED,
                seed: 7,
                active: 8,
                decline: 0.05,
                conflicts: 0.1,
                echo: 0.05,
                malformed: 0.05,
                ..dhcpd::TrafficConfig::default()
            },
            &dhcp_config(),
            STRIPES,
            0,
            1,
        );
        let dhcp_echo = (0..DHCP_POOL + 2)
            .map(|i| dhcpd::echo_reply_frame(dhcpd::pool_addr(i), i as u16))
            .collect();
        Generated {
            frames: [nat, cls, intr, dhcp],
            dhcp_echo,
        }
    })
}

// ---- the graph ----------------------------------------------------------------------

next_nodes! {
    /// Where our input node sends a frame: one NF node.
    pub enum SrcNext {
        Nat = "nat",
        Classifier = "classifier",
        Intruder = "intruder",
        Dhcpd = "dhcpd",
        NatV = "nat-v",
        ClassifierV = "classifier-v",
        IntruderV = "intruder-v",
        DhcpdV = "dhcpd-v",
    }
}

node_errors! {
    /// Why our input node drops.
    pub enum SrcError {
        /// The pool had no buffer for a frame.
        NoBuffer = "no buffer",
    }
}

const ARCS: [SrcNext; 8] = [
    SrcNext::Nat,
    SrcNext::Classifier,
    SrcNext::Intruder,
    SrcNext::Dhcpd,
    SrcNext::NatV,
    SrcNext::ClassifierV,
    SrcNext::IntruderV,
    SrcNext::DhcpdV,
];

/// One queued frame: bytes, the arc (index into [`ARCS`]), the clock step index.
type Queued = (Vec<u8>, u8, u8);

/// Hands the graph the queued frames, up to a vector per poll, each in a fresh buffer
/// (its clock step in the metadata's `opaque`), dropping and counting those the pool has
/// no buffer for.
#[derive(Default)]
struct Source {
    queue: VecDeque<Queued>,
}

impl Node for Source {
    type Next = SrcNext;
    type Error = SrcError;
    const KIND: NodeKind = NodeKind::Input;

    fn process(&mut self, cx: &mut Context<'_, Self>, _frame: &mut Frame) {
        let v = cx.vector_size();
        let mut n = 0;
        while n < v {
            let Some((bytes, arc, step)) = self.queue.pop_front() else {
                break;
            };
            // a frame without a buffer does not count towards the vector: a poll that
            // hands over nothing would end the run with frames still queued
            let Ok(bi) = cx.pool_mut().alloc_with(&bytes) else {
                cx.drop_unreceived(SrcError::NoBuffer, 1);
                continue;
            };
            n += 1;
            cx.pool_mut().meta_mut(bi).opaque = u32::from(step);
            cx.enqueue(bi, ARCS[usize::from(arc)]);
        }
    }
}

/// An NF worker on a virtual clock: before each packet the clock moves by the step in
/// its metadata; after each vector, `after_vector` at the clock's time.
struct VNode<W: NfWorker> {
    w: Option<W>,
    now: u64,
}

impl<W: NfWorker> Node for VNode<W> {
    type Next = NfNext;
    type Error = W::Error;

    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        let Some(w) = self.w.as_mut() else {
            panic!("virtual-clock node without a worker got packets");
        };
        let now = &mut self.now;
        cx.process_packets(frame, |p| {
            *now += step_ticks(p.meta().opaque);
            match w.packet(p, *now) {
                Ok(()) => Verdict::Next(NfNext::Tx),
                Err(e) => Verdict::Drop(e),
            }
        });
        w.after_vector(self.now);
    }
}

/// A sink that frees what it gets and, while `record` is set, keeps copies of the first
/// [`TAP_KEEP`] frames (the NAT's translated frames, to answer them).
#[derive(Default)]
struct Tap {
    record: bool,
    frames: Vec<Vec<u8>>,
}

const TAP_KEEP: usize = 64;

impl Node for Tap {
    type Next = pktvec::graph::NoNext;
    type Error = pktvec::graph::NoError;
    const KIND: NodeKind = NodeKind::Sink;

    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        if self.record {
            for &bi in frame.buffers() {
                if self.frames.len() < TAP_KEEP {
                    self.frames.push(cx.packet(bi).data().to_vec());
                }
            }
        }
        cx.free_frame(frame);
    }
}

/// One's-complement update of a 16-bit checksum for a 16-bit word changing from `old` to
/// `new` (RFC 1624, eqn. 3).
fn csum_update(hc: u16, old: u16, new: u16) -> u16 {
    let mut s = u32::from(!hc) + u32::from(!old) + u32::from(new);
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

/// The answer to a frame the NAT translated inside → outside: Ethernet addresses, IPv4
/// addresses and L4 ports swapped (checksums unchanged), an ICMP echo request turned
/// into a reply. `None` for what is not IPv4 TCP, UDP or ICMP echo.
fn reply_to(f: &[u8]) -> Option<Vec<u8>> {
    let mut r = f.to_vec();
    if r.len() < 34 || r[12..14] != [0x08, 0x00] {
        return None;
    }
    let l4 = 14 + usize::from(r[14] & 0xf) * 4;
    if r.len() < l4 + 8 {
        return None;
    }
    for i in 0..6 {
        r.swap(i, 6 + i);
    }
    for i in 0..4 {
        r.swap(26 + i, 30 + i);
    }
    match r[23] {
        6 | 17 => {
            r.swap(l4, l4 + 2);
            r.swap(l4 + 1, l4 + 3);
        }
        1 if r[l4] == 8 => {
            let hc = u16::from_be_bytes([r[l4 + 2], r[l4 + 3]]);
            let old = u16::from_be_bytes([r[l4], r[l4 + 1]]);
            r[l4] = 0;
            let new = u16::from_be_bytes([r[l4], r[l4 + 1]]);
            r[l4 + 2..l4 + 4].copy_from_slice(&csum_update(hc, old, new).to_be_bytes());
        }
        _ => return None,
    }
    Some(r)
}

/// The NFs of the input being run (fresh for each input).
#[derive(Default)]
struct Current {
    nat: Option<Nat>,
    intruder: Option<Intruder>,
    dhcpd: Option<Dhcpd>,
}

struct Harness {
    graph: Graph,
    /// Buffers held out of the pool (pool pressure).
    held: Vec<u32>,
    /// The virtual-clock classifier's clock at the end of the last input.
    classifier_clock: u64,
}

/// Virtual clock at the start of every input (a TSC-like value, not near 0 or wrapping).
const T0: u64 = 1 << 40;

fn build() -> Harness {
    // placeholder workers, replaced before every input
    let mut b = GraphBuilder::new(GraphConfig::default());
    // the classifiers' DFA takes milliseconds to build: one classifier per process for
    // each clock, its worker in its node for good
    let classifiers = [new_classifier(), new_classifier()];
    b.add("input", Source::default());
    b.add("tx", NullSink);
    b.add("nat-tx", Tap::default());
    b.add("nat", NfNode::new(new_nat().worker(0), false, None));
    b.add(
        "classifier",
        NfNode::new(classifiers[0].worker(0), false, None),
    );
    b.add(
        "intruder",
        NfNode::new(new_intruder().worker(0), false, None),
    );
    b.add("dhcpd", NfNode::new(new_dhcpd().worker(0), false, None));
    b.add("nat-v", VNode::<NatWorker> { w: None, now: T0 });
    b.add(
        "classifier-v",
        VNode::<ClassifierWorker> {
            w: Some(classifiers[1].worker(0)),
            now: T0,
        },
    );
    b.add("intruder-v", VNode::<IntruderWorker> { w: None, now: T0 });
    b.add("dhcpd-v", VNode::<DhcpdWorker> { w: None, now: T0 });
    for n in NAMES.iter().chain(VNAMES.iter()) {
        let tx = if n.starts_with("nat") { "nat-tx" } else { "tx" };
        b.set_next(n, NfNext::Tx, tx);
    }
    let pool = BufferPool::new(PoolConfig {
        buffers: BUFFERS,
        ..PoolConfig::default()
    })
    .expect("pool");
    Harness {
        graph: b.build(pool).expect("graph"),
        held: Vec::new(),
        classifier_clock: T0,
    }
}

/// Puts a fresh worker of `nf` into the real-clock node `name` or the virtual one.
fn install<N: Nf>(g: &mut Graph, nf: &N, i: usize, real: bool) {
    if real {
        *g.node_mut::<NfNode<N::Worker>>(NAMES[i])
            .expect("nf node")
            .worker() = nf.worker(0);
    } else {
        let v = g.node_mut::<VNode<N::Worker>>(VNAMES[i]).expect("v node");
        v.w = Some(nf.worker(0));
        v.now = T0;
    }
}

fn worker_mut<W: NfWorker>(g: &mut Graph, i: usize, real: bool) -> &mut W {
    if real {
        g.node_mut::<NfNode<W>>(NAMES[i]).expect("nf node").worker()
    } else {
        g.node_mut::<VNode<W>>(VNAMES[i])
            .expect("v node")
            .w
            .as_mut()
            .expect("worker")
    }
}

/// Expires every flow of the virtual-clock classifier at `now` (far past its idle
/// timeout), and checks none is left: flows made = flows expired.
fn expire_classifier(w: &mut ClassifierWorker, now: u64, data: &[u8]) {
    let count = |w: &ClassifierWorker, name: &str| {
        w.counters().iter().find(|c| c.0 == name).map_or(0, |c| c.1)
    };
    for _ in 0..4096 {
        if count(w, "flows") == count(w, "flows expired") {
            return;
        }
        w.after_vector(now);
    }
    panic!(
        "classifier: {} flows made, {} expired after sweeping far past their timeout\ninput: {}",
        count(w, "flows"),
        count(w, "flows expired"),
        hex(data)
    );
}

/// Applies a synthetic frame's edits to `base`.
fn mutate(base: &[u8], edits: &[u8], out: &mut Vec<u8>) {
    out.clear();
    out.extend_from_slice(base);
    let mut chunks = edits.chunks_exact(3);
    for c in &mut chunks {
        if out.is_empty() {
            break;
        }
        let off = usize::from(u16::from_be_bytes([c[0], c[1]])) % out.len();
        out[off] = c[2];
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let cut = if rest.len() == 2 {
            usize::from(u16::from_be_bytes([rest[0], rest[1]]))
        } else {
            usize::from(rest[0])
        };
        out.truncate(cut);
    }
    out.truncate(pktvec_fuzz::DATA_ROOM);
}

impl Harness {
    fn run(&mut self, data: &[u8]) {
        let input = Input::parse(data);
        let b2 = data.get(2).copied().unwrap_or(0);
        let sel = usize::from(b2 & 7);
        let nfs: Vec<usize> = if sel < 4 { vec![sel] } else { vec![0, 1, 2, 3] };
        let prefix = if input.free_buffers.is_none() {
            PREFIX[usize::from((b2 >> 3) & 3)]
        } else {
            0
        };
        let real = input.variant;
        let trace = input.extra & 1 != 0;
        let inject = input.extra & 2 != 0;
        let gen = generated();

        let g = &mut self.graph;
        g.set_vector_size(input.vector_size).expect("vector size");
        g.set_prefetch_distance(input.prefetch);
        g.set_sub_batch(input.sub_batch);

        // Fresh NFs, their workers in the nodes.
        let mut cur = Current::default();
        for &i in &nfs {
            match i {
                0 => {
                    let nf = new_nat();
                    install(g, &nf, 0, real);
                    cur.nat = Some(nf);
                }
                1 if real => {}
                1 => {
                    // "fresh": far past every timeout, and every flow expired
                    let v = g
                        .node_mut::<VNode<ClassifierWorker>>(VNAMES[1])
                        .expect("v node");
                    v.now = self.classifier_clock + (1 << 44);
                    expire_classifier(v.w.as_mut().expect("worker"), v.now, data);
                }
                2 => {
                    let nf = new_intruder();
                    install(g, &nf, 2, real);
                    cur.intruder = Some(nf);
                }
                _ => {
                    let nf = new_dhcpd();
                    install(g, &nf, 3, real);
                    cur.dhcpd = Some(nf);
                }
            }
        }
        let arc = |i: usize| (i + if real { 0 } else { 4 }) as u8;
        let tap_nat = cur.nat.is_some() && prefix > 0;
        if tap_nat {
            let t = g.node_mut::<Tap>("nat-tx").expect("tap");
            t.record = true;
            t.frames.clear();
        }

        // The generated prefix, one small clock step apart.
        if prefix > 0 {
            let src = g.node_mut::<Source>("input").expect("input");
            for k in 0..prefix {
                for &i in &nfs {
                    if let Some(f) = gen.frames[i].get(k) {
                        src.queue.push_back((f.clone(), arc(i), 2));
                    }
                }
            }
            g.run_until_idle();
        }

        // Extras: NAT replies to the live sessions.
        let mut nat_replies = Vec::new();
        if tap_nat {
            let t = g.node_mut::<Tap>("nat-tx").expect("tap");
            t.record = false;
            nat_replies = t.frames.iter().filter_map(|f| reply_to(f)).collect();
        }

        // The input's frames.
        let mut frames: Vec<Queued> = Vec::new();
        let mut buf = Vec::new();
        for f in &input.frames {
            let step = RX_IFS.iter().position(|&r| r == f.rx_if).unwrap_or(0) as u8;
            for &i in &nfs {
                let bytes = if f.synthetic {
                    let k = f.bytes.first().copied().unwrap_or(0);
                    let extras: &[Vec<u8>] = match i {
                        0 => &nat_replies,
                        3 => &gen.dhcp_echo,
                        _ => &[],
                    };
                    let base = if k & 0x80 != 0 && !extras.is_empty() {
                        &extras[usize::from(k & 0x7f) % extras.len()]
                    } else {
                        &gen.frames[i][usize::from(k & 0x7f) % gen.frames[i].len()]
                    };
                    mutate(base, f.bytes.get(1..).unwrap_or_default(), &mut buf);
                    buf.clone()
                } else {
                    f.bytes.to_vec()
                };
                frames.push((bytes, arc(i), step));
            }
        }

        if inject {
            for &i in &nfs {
                let mut bis = Vec::new();
                for (bytes, a, step) in &frames {
                    if *a != arc(i) {
                        continue;
                    }
                    let bi = g.pool_mut().alloc_with(bytes).expect("pool has room");
                    g.pool_mut().meta_mut(bi).opaque = u32::from(*step);
                    bis.push(bi);
                }
                let name = if real { NAMES[i] } else { VNAMES[i] };
                let id = g.node_id(name).expect("nf node id");
                if !bis.is_empty() {
                    assert!(g.inject(id, &bis), "nf node takes packets");
                }
            }
        } else {
            if trace {
                g.trace_add(frames.len());
            }
            g.node_mut::<Source>("input")
                .expect("input")
                .queue
                .extend(frames.iter().cloned());
        }

        // Pool pressure: all but `free` buffers held out of the pool during the run.
        pktvec_fuzz::targets::run_under_pressure(g, input.free_buffers, &mut self.held);

        if trace {
            black_box(g.trace().to_string());
            g.trace_clear();
        }
        assert!(
            g.node::<Source>("input").expect("input").queue.is_empty(),
            "frames left queued after the run"
        );
        let c = g.conservation();
        if debug() {
            eprintln!(
                "nfs {nfs:?}, {} clock, prefix {prefix}, {} frames; {c}",
                if real { "real" } else { "virtual" },
                frames.len()
            );
            for (bytes, a, step) in &frames {
                eprintln!("  to arc {a}, step {step}: {}", hex(bytes));
            }
            eprintln!("{}", g.errors());
        }
        assert!(c.is_balanced(), "conservation: {c}\ninput: {}", hex(data));
        assert_eq!(
            g.pool().in_use(),
            0,
            "buffers still allocated after the run: {c}\ninput: {}",
            hex(data)
        );
        assert_eq!(
            g.pool().double_frees(),
            0,
            "double free\ninput: {}",
            hex(data)
        );

        // Nothing leaks: a NAT sweep far in the future frees every record and port.
        if let Some(nat) = &cur.nat {
            let total = nat.total_ports();
            let w = worker_mut::<NatWorker>(g, 0, real);
            let far = clock::now().max(T0) + (1u64 << 52);
            w.sweep(far, usize::MAX);
            // with one worker every port goes back on its own stacks; the walk of the
            // shared lists (slow) only if they do not hold them all
            let mut ports = w.free_ports();
            if ports != total {
                ports += w.shared_free_ports();
            }
            let records = w.free_records();
            assert_eq!(
                records,
                NAT_CAPACITY,
                "nat: {records} of {NAT_CAPACITY} table records free after expiring everything\ninput: {}",
                hex(data)
            );
            assert_eq!(
                ports,
                total,
                "nat: {ports} of {total} ports free after expiring everything\ninput: {}",
                hex(data)
            );
        }
        if let Some(d) = &cur.dhcpd {
            let lc = d.lease_counts();
            assert_eq!(
                lc.total(),
                DHCP_POOL,
                "dhcpd lease counts {lc:?}\ninput: {}",
                hex(data)
            );
        }
        if let Some(nf) = &cur.intruder {
            let w = worker_mut::<IntruderWorker>(g, 2, real);
            w.expire(clock::now().max(T0) + (1u64 << 52), usize::MAX);
            let free = |w: &IntruderWorker, name: &str| {
                w.counters()
                    .iter()
                    .find(|c| c.0 == name)
                    .map_or(0, |c| c.1 as usize)
            };
            let (r, f) = (
                free(w, "reassembly records free"),
                free(w, "flow records free"),
            );
            assert_eq!(
                (r, f),
                (nf.reassembly_capacity(), nf.flow_capacity()),
                "intruder: (reassembly, flow) records free after expiring everything\ninput: {}",
                hex(data)
            );
            black_box(nf.detected());
        }
        if !real && nfs.contains(&1) {
            let v = g
                .node_mut::<VNode<ClassifierWorker>>(VNAMES[1])
                .expect("v node");
            self.classifier_clock = v.now;
        }

        // Virtual nodes let go of their workers (the real nodes keep theirs until the
        // next input replaces them).
        for &i in &nfs {
            if !real {
                match i {
                    0 => g.node_mut::<VNode<NatWorker>>(VNAMES[0]).expect("v").w = None,
                    1 => {}
                    2 => g.node_mut::<VNode<IntruderWorker>>(VNAMES[2]).expect("v").w = None,
                    _ => g.node_mut::<VNode<DhcpdWorker>>(VNAMES[3]).expect("v").w = None,
                }
            }
        }
        g.reset_stats();
    }
}

thread_local! {
    static H: RefCell<Option<Harness>> = const { RefCell::new(None) };
}

fuzz_target!(|data: &[u8]| {
    H.with(|h| h.borrow_mut().get_or_insert_with(build).run(data));
});
