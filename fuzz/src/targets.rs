//! The graph targets: each forwarder's real graph (the library's `apps` builders, as the
//! examples use them) with small tables, built once per process and reused across inputs,
//! its transmit node replaced by a [`CheckSink`].
//!
//! One input ([`Input`]) is run as follows: the graph's vector size, prefetch distance
//! and sub-batch size are set from byte 1; each frame is built (raw or [`synth`]) and the
//! reference model adds what the forwarder must transmit for it; the frames enter the
//! graph either through an input node of ours (`input`, polled by the graph: up to a
//! vector per poll, traced when byte 0 bit 6 is set) or, with byte 0 bit 7, all at once
//! through [`Graph::inject`] into the entry node (for `ppb_l3fwd` the frames always come
//! through the batcher's burst source, its batch size set from byte 2); with pool
//! pressure (byte 2), all but a few buffers are held out of the pool; the graph runs
//! until idle. Then: conservation balanced, every buffer back in the pool, no double free,
//! and the transmitted frames exactly the model's.

use crate::model::{crypto_expect, l2_expect, ndn_expect, Expect, L3Model};
use crate::sink::{CheckSink, Normalize};
use crate::{hex, synth, Input};
use pktvec::batcher::{Batcher, BatcherConfig, BatcherNext, BurstSource};
use pktvec::graph::NodeKind;
use pktvec::graph::{
    next_nodes, node_errors, Context, Frame, Graph, GraphBuilder, GraphConfig, Node,
};
use pktvec::lookup::routes::{self, Route4, Route6};
use pktvec::nodes::apps::cryptofwd::{Cryptofwd, CryptofwdConfig};
use pktvec::nodes::apps::l2fwd::{station_mac, L2fwd, L2fwdConfig};
use pktvec::nodes::apps::l3fwd::{L3fwd, L3fwdConfig};
use pktvec::nodes::apps::ndnfwd::{Ndnfwd, NdnfwdConfig};
use pktvec::nodes::arp::ArpInput;
use pktvec::nodes::crypto::{Cipher, CryptoNode, Direction};
use pktvec::nodes::ip4::{Ip4InputConfig, Policy};
use pktvec::nodes::l2::{L2Fib, UnknownUnicast};
use pktvec::nodes::ndn::NdnFib;
use pktvec::packet::{BufferPool, PoolConfig};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::hint::black_box;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::{Arc, Mutex, OnceLock};

/// Name of our input node.
const INPUT: &str = "input";
/// Name of the checking sink (the forwarders' transmit node).
const TX: &str = "tx";
/// Interfaces of every forwarder but `cryptofwd` (which cross-connects 2).
const PORTS: u16 = 4;
/// Generated routes of the IP forwarders (each family).
const ROUTES: usize = 1000;
/// Generated NDN name prefixes.
const NAMES: usize = 1000;
/// Buffers in a graph's pool: far more than an input can hold, flood copies included.
const BUFFERS: u32 = 1024;
/// `arp-input`'s neighbour limit.
const MAX_NEIGHBORS: usize = pktvec::nodes::arp::DEFAULT_NEIGHBOR_LIMIT;

/// Frames waiting to enter the graph: bytes and receive interface.
type Queue = VecDeque<(Vec<u8>, u16)>;

next_nodes! {
    /// The one arc of [`FuzzSource`].
    pub enum FuzzSourceNext {
        /// Every frame (to the forwarder's entry node).
        Out = "ethernet-input",
    }
}

node_errors! {
    /// Why [`FuzzSource`] drops.
    pub enum FuzzSourceError {
        /// The pool had no buffer for a received frame.
        NoBuffer = "no buffer",
    }
}

/// An input node that hands the graph the frames queued before the run, up to a vector per
/// poll, each copied into a fresh buffer with its receive interface, as a NIC would (and,
/// as a NIC does, dropping and counting a frame the pool has no buffer for).
#[derive(Default)]
pub struct FuzzSource {
    queue: Queue,
}

impl Node for FuzzSource {
    type Next = FuzzSourceNext;
    type Error = FuzzSourceError;
    const KIND: NodeKind = NodeKind::Input;

    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        let v = cx.vector_size().min(frame.room());
        while frame.len() < v {
            let Some((bytes, rx)) = self.queue.pop_front() else {
                break;
            };
            let Ok(bi) = cx.pool_mut().alloc_with(&bytes) else {
                cx.drop_unreceived(FuzzSourceError::NoBuffer, 1);
                continue;
            };
            cx.pool_mut().meta_mut(bi).rx_if = rx;
            frame.push(bi);
        }
        if !frame.is_empty() {
            cx.enqueue_all(frame, FuzzSourceNext::Out);
        }
    }
}

/// The batcher's burst source: the frames queued before the run (shared with the harness,
/// since the batcher owns its source); a frame the pool has no buffer for is lost before
/// the graph sees it, as in a NIC's full ring.
pub struct FuzzBurst(Arc<Mutex<Queue>>);

impl BurstSource for FuzzBurst {
    fn rx_burst(&mut self, pool: &mut BufferPool, out: &mut Vec<u32>, max: usize) -> usize {
        let mut q = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let mut n = 0;
        while n < max {
            let Some((bytes, rx)) = q.pop_front() else {
                break;
            };
            let Ok(bi) = pool.alloc_with(&bytes) else {
                continue;
            };
            pool.meta_mut(bi).rx_if = rx;
            out.push(bi);
            n += 1;
        }
        n
    }
}

/// What a target builds frames with and checks them against.
enum Kind {
    /// l3fwd, ppb_l3fwd, nf_acl.
    L3 {
        model: L3Model,
        routes4: Vec<Route4>,
        routes6: Vec<Route6>,
    },
    /// l2fwd: its MAC table (reset before every input).
    L2 { fib: Arc<L2Fib> },
    /// ndnfwd.
    Ndn {
        fib: Arc<NdnFib>,
        prefixes: Vec<String>,
    },
    /// cryptofwd.
    Crypto,
}

/// How the frames enter the graph.
enum Feed {
    /// Through our input node [`INPUT`], or injected into the entry node.
    Source { entry: u32 },
    /// Through the batcher (its source's queue).
    Batcher(Arc<Mutex<Queue>>),
}

/// One graph of a target and what it takes to run an input through it.
pub struct Harness {
    graph: Graph,
    feed: Feed,
    kind: Kind,
    expect: Expect,
    frames: Vec<(Vec<u8>, u16)>,
    /// Buffers held out of the pool during a run (pool pressure).
    held: Vec<u32>,
}

/// The pool every graph gets.
fn pool() -> BufferPool {
    BufferPool::new(PoolConfig {
        buffers: BUFFERS,
        ..PoolConfig::default()
    })
    .expect("pool")
}

impl Harness {
    fn new(build: Box<dyn Fn() -> Graph>, kind: Kind, batcher: Option<Arc<Mutex<Queue>>>) -> Self {
        let graph = build();
        let feed = match batcher {
            Some(q) => Feed::Batcher(q),
            None => Feed::Source {
                entry: graph
                    .node_id(graph.next_names(graph.node_id(INPUT).expect("input node"))[0])
                    .expect("entry node"),
            },
        };
        Harness {
            graph,
            feed,
            kind,
            expect: Expect::default(),
            frames: Vec::new(),
            held: Vec::new(),
        }
    }

    /// Runs one input (see the module documentation) and checks everything.
    pub fn run(&mut self, input: &Input<'_>, data: &[u8]) {
        if let Ok(arp) = self.graph.node::<ArpInput>("arp-input") {
            // The table has a limit (it grew without bound before this target found it).
            assert!(
                arp.neighbor_count() <= MAX_NEIGHBORS,
                "arp-input learned {} neighbours, past its limit",
                arp.neighbor_count()
            );
        }
        let g = &mut self.graph;
        g.set_vector_size(input.vector_size).expect("vector size");
        g.set_prefetch_distance(input.prefetch);
        g.set_sub_batch(input.sub_batch);
        let trace = input.extra & 1 != 0;
        let inject = input.extra & 2 != 0;

        // The frames and what must come out.
        self.expect.clear();
        self.frames.clear();
        for f in &input.frames {
            let mut bytes = Vec::new();
            match &self.kind {
                Kind::L3 {
                    model,
                    routes4,
                    routes6,
                } => {
                    if f.synthetic {
                        synth::l3_frame(f.bytes, routes4, routes6, &mut bytes);
                    } else {
                        bytes.extend_from_slice(f.bytes);
                    }
                    model.expect(&bytes, f.rx_if, &mut self.expect);
                }
                Kind::L2 { .. } => {
                    if f.synthetic {
                        synth::l2_frame(f.bytes, &mut bytes);
                    } else {
                        bytes.extend_from_slice(f.bytes);
                    }
                    l2_expect(&bytes, f.rx_if, PORTS, &mut self.expect);
                }
                Kind::Ndn { fib, prefixes } => {
                    if f.synthetic {
                        synth::ndn_frame(f.bytes, prefixes, &mut bytes);
                    } else {
                        bytes.extend_from_slice(f.bytes);
                    }
                    ndn_expect(fib, &bytes, &mut self.expect);
                }
                Kind::Crypto => {
                    bytes.extend_from_slice(f.bytes);
                    bytes.truncate(crate::DATA_ROOM);
                    crypto_expect(&bytes, f.rx_if, 2, &mut self.expect);
                }
            }
            self.frames.push((bytes, f.rx_if));
        }

        // The L2 table as at the start of every input: stations 0..STATIONS_KNOWN.
        if let Kind::L2 { fib } = &self.kind {
            let mut t = fib.write();
            t.clear();
            for i in 0..synth::STATIONS_KNOWN {
                t.insert(station_mac(i), i % u32::from(PORTS))
                    .expect("station fits the table");
            }
        }
        match &self.feed {
            Feed::Batcher(q) => {
                let b = g
                    .node_mut::<Batcher<FuzzBurst>>("batcher")
                    .expect("batcher node");
                b.set_batching(input.batch.is_some(), input.batch.unwrap_or(128));
                if trace {
                    g.trace_add(self.frames.len());
                }
                q.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .extend(self.frames.iter().cloned());
            }
            Feed::Source { entry } if inject => {
                let mut bis = Vec::with_capacity(self.frames.len());
                for (bytes, rx) in &self.frames {
                    let bi = g.pool_mut().alloc_with(bytes).expect("pool has room");
                    g.pool_mut().meta_mut(bi).rx_if = *rx;
                    bis.push(bi);
                }
                assert!(g.inject(*entry, &bis), "entry node takes packets");
            }
            Feed::Source { .. } => {
                if trace {
                    g.trace_add(self.frames.len());
                }
                g.node_mut::<FuzzSource>(INPUT)
                    .expect("input node")
                    .queue
                    .extend(self.frames.iter().cloned());
            }
        }

        run_under_pressure(g, input.free_buffers, &mut self.held);

        if trace {
            black_box(g.trace().to_string());
            g.trace_clear();
        }
        let c = g.conservation();
        if debug() {
            let sent = g.node::<CheckSink>(TX).map_or(0, |s| s.transmitted);
            eprintln!(
                "{} frames, {sent} transmitted, {} expected at least; {c}",
                self.frames.len(),
                self.expect.map.values().map(|e| e.0).sum::<u32>()
            );
            for (bytes, rx) in &self.frames {
                eprintln!("  in rx {rx}: {}", hex(bytes));
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
        if let Ok(b) = g.node::<Batcher<FuzzBurst>>("batcher") {
            assert_eq!(
                b.held(),
                0,
                "batcher still holds packets\ninput: {}",
                hex(data)
            );
        }
        if let Kind::L2 { fib } = &self.kind {
            if let Err(e) = fib.read().check_invariants() {
                panic!("MAC table invariant broken: {e}\ninput: {}", hex(data));
            }
        }
        let sink = g.node_mut::<CheckSink>(TX).expect("tx node");
        // Under pool pressure a frame may be lost for want of a buffer: only what was
        // transmitted is checked, not what is missing.
        sink.finish(&self.expect, input.free_buffers.is_none(), &|| hex(data));
        g.reset_stats();
    }
}

/// `PKTVEC_FUZZ_DEBUG=1`: print each input's frames, counts and drop reasons (to see
/// what a crash or corpus file does: run the target binary on the file).
fn debug() -> bool {
    static D: OnceLock<bool> = OnceLock::new();
    *D.get_or_init(|| std::env::var_os("PKTVEC_FUZZ_DEBUG").is_some())
}

/// The graph config every target starts from.
fn config() -> GraphConfig {
    GraphConfig::default()
}

/// The `l3fwd` router: 1,000 generated IPv4 and 1,000 IPv6 routes, 4 ports; `strict`:
/// `ip4-input` drops IPv4 options and fragments, and default routes (`0.0.0.0/0` to port
/// 3, `::/0` to port 2) send every packet that misses the others out (so captured
/// traffic, whose addresses the generated routes rarely hold, reaches the rewrites too).
fn l3_app(strict: bool) -> L3fwd {
    let cfg = L3fwdConfig {
        ports: PORTS,
        ip4: if strict {
            Ip4InputConfig {
                options: Policy::Drop,
                fragments: Policy::Drop,
                ..Ip4InputConfig::default()
            }
        } else {
            Ip4InputConfig::default()
        },
        ..L3fwdConfig::default()
    };
    let mut r4 = routes::generate_ipv4(ROUTES, cfg.seed);
    let mut r6 = routes::generate_ipv6(ROUTES, cfg.seed.wrapping_add(1));
    if strict {
        r4.push(Route4 {
            addr: Ipv4Addr::UNSPECIFIED,
            len: 0,
            next_hop: 3,
        });
        r6.push(Route6 {
            addr: Ipv6Addr::UNSPECIFIED,
            len: 0,
            next_hop: 2,
        });
    }
    L3fwd::with_routes(cfg, r4, r6).expect("l3fwd tables")
}

fn l3_harness(strict: bool, acl: bool) -> Harness {
    let app = Arc::new(l3_app(strict));
    let kind = Kind::L3 {
        model: L3Model::new(app.routes4(), app.routes6(), app.ports(), acl, strict),
        routes4: app.routes4().to_vec(),
        routes6: app.routes6().to_vec(),
    };
    let build = Box::new(move || {
        let mut b = GraphBuilder::new(config());
        b.add(INPUT, FuzzSource::default())
            .set_next(INPUT, FuzzSourceNext::Out, app.entry());
        let nodes = app.add_to(&mut b);
        if acl {
            nodes.ip4_input_to_lookup.insert(
                &mut b,
                "ip4-acl",
                crate::acl::Ip4Acl::new(&crate::acl::DENY_SRC, &crate::acl::DENY_PORTS),
                crate::acl::AclNext::Permit,
            );
        }
        b.add(
            &nodes.output_to_tx.to,
            CheckSink::new(Normalize::Ip4Checksum),
        );
        b.build(pool()).expect("l3fwd graph")
    });
    Harness::new(build, kind, None)
}

/// `l3fwd` behind the path-based batcher, wired as `examples/ppb.rs` does: with `direct`
/// (its default) IPv4/IPv6 vectors start at `ip4-input`/`ip6-input`, without (its
/// `--no-direct`) every vector goes to `ethernet-input`.
fn ppb_harness(direct: bool) -> Harness {
    let app = Arc::new(l3_app(false));
    let kind = Kind::L3 {
        model: L3Model::new(app.routes4(), app.routes6(), app.ports(), false, false),
        routes4: app.routes4().to_vec(),
        routes6: app.routes6().to_vec(),
    };
    let q: Arc<Mutex<Queue>> = Arc::default();
    let q2 = q.clone();
    let build = Box::new(move || {
        let cfg = BatcherConfig {
            batch_size: 128,
            ..BatcherConfig::default()
        };
        let mut b = GraphBuilder::new(config());
        b.add("batcher", Batcher::new(FuzzBurst(q2.clone()), cfg));
        let nodes = app.add_to(&mut b);
        if direct {
            b.set_next("batcher", BatcherNext::Ip4, &nodes.ethernet_to_ip4.to)
                .set_next("batcher", BatcherNext::Ip6, &nodes.ethernet_to_ip6.to);
        }
        b.add(
            &nodes.output_to_tx.to,
            CheckSink::new(Normalize::Ip4Checksum),
        );
        b.build(pool()).expect("ppb graph")
    });
    Harness::new(build, kind, Some(q))
}

fn l2_harness(policy: UnknownUnicast) -> Harness {
    let app = Arc::new(
        L2fwd::new(L2fwdConfig {
            ports: PORTS,
            table_size: 256,
            unknown_unicast: policy,
            ..L2fwdConfig::default()
        })
        .expect("l2fwd table"),
    );
    let kind = Kind::L2 {
        fib: app.fib().clone(),
    };
    let build = Box::new(move || {
        let mut b = GraphBuilder::new(config());
        b.add(INPUT, FuzzSource::default())
            .set_next(INPUT, FuzzSourceNext::Out, app.entry());
        let nodes = app.add_to(&mut b);
        b.add(&nodes.output_to_tx.to, CheckSink::new(Normalize::None));
        b.build(pool()).expect("l2fwd graph")
    });
    Harness::new(build, kind, None)
}

/// `ndnfwd` over [`NAMES`] prefixes of 1 to 7 components (the generated names all have 3,
/// so the lookup would only ever try one prefix length; with 7 lengths a name has more
/// candidates than the node's first phase keeps, and the slow path runs too).
fn ndn_harness() -> Harness {
    let prefixes: Vec<String> = (0..NAMES)
        .map(|i| {
            let c = [
                format!("tld{}", i % 97),
                format!("site{i}"),
                format!("area{}", i % 7),
                format!("d{}", i % 3),
                format!("e{}", i % 5),
                format!("f{}", i % 11),
                format!("g{i}"),
            ];
            c[..1 + i % 7].iter().map(|c| format!("/{c}")).collect()
        })
        .collect();
    let app = Arc::new(
        Ndnfwd::with_prefixes(
            NdnfwdConfig {
                ports: u32::from(PORTS),
                ..NdnfwdConfig::default()
            },
            prefixes,
        )
        .expect("ndn fib"),
    );
    let kind = Kind::Ndn {
        fib: app.fib().clone(),
        prefixes: app.prefixes().to_vec(),
    };
    let build = Box::new(move || {
        let mut b = GraphBuilder::new(config());
        b.add(INPUT, FuzzSource::default())
            .set_next(INPUT, FuzzSourceNext::Out, app.entry());
        let nodes = app.add_to(&mut b);
        b.add(&nodes.output_to_tx.to, CheckSink::new(Normalize::None));
        b.build(pool()).expect("ndnfwd graph")
    });
    Harness::new(build, kind, None)
}

/// `cryptofwd` with AES-128-GCM and no verify node (the sink decrypts), or with
/// ChaCha20-Poly1305 and the verify node (frames leave as they came).
fn crypto_harness(verify: bool) -> Harness {
    let cfg = CryptofwdConfig {
        cipher: if verify {
            Cipher::ChaCha20Poly1305
        } else {
            Cipher::Aes128Gcm
        },
        verify,
        ports: 2,
        ..CryptofwdConfig::default()
    };
    let app = Arc::new(Cryptofwd::new(cfg.clone()).expect("crypto key"));
    let build = Box::new(move || {
        let norm = if verify {
            Normalize::None
        } else {
            Normalize::Decrypt(Box::new(
                CryptoNode::new(cfg.crypto_config(), Direction::Decrypt).expect("key"),
            ))
        };
        let mut b = GraphBuilder::new(config());
        b.add(INPUT, FuzzSource::default())
            .set_next(INPUT, FuzzSourceNext::Out, app.entry());
        let nodes = app.add_to(&mut b).expect("cryptofwd nodes");
        b.add(&nodes.output_to_tx.to, CheckSink::new(norm));
        b.build(pool()).expect("cryptofwd graph")
    });
    Harness::new(build, Kind::Crypto, None)
}

/// Runs `data` through the graph `pick` selects among the target's graphs, made by `make`
/// once per process.
fn with_target(
    cell: &'static std::thread::LocalKey<RefCell<Option<Vec<Harness>>>>,
    make: fn() -> Vec<Harness>,
    pick: fn(&Input<'_>) -> usize,
    data: &[u8],
) {
    let input = Input::parse(data);
    cell.with(|c| {
        let mut c = c.borrow_mut();
        let hs = c.get_or_insert_with(make);
        let i = pick(&input).min(hs.len() - 1);
        hs[i].run(&input, data);
    });
}

macro_rules! target {
    ($(#[$m:meta])* $name:ident, $make:expr, $pick:expr) => {
        $(#[$m])*
        pub fn $name(data: &[u8]) {
            thread_local! {
                static T: RefCell<Option<Vec<Harness>>> = const { RefCell::new(None) };
            }
            with_target(&T, $make, $pick, data);
        }
    };
}

target!(
    /// `l3fwd`: the variant bit picks `ip4-input` dropping IPv4 options and fragments.
    l3fwd,
    || vec![l3_harness(false, false), l3_harness(true, false)],
    |i| i.variant as usize
);
target!(
    /// `nf_acl`: l3fwd with `ip4-acl` between `ip4-input` and `ip4-lookup`; the variant
    /// bit as for `l3fwd`.
    nf_acl,
    || vec![l3_harness(false, true), l3_harness(true, true)],
    |i| i.variant as usize
);
target!(
    /// `ppb_l3fwd`: l3fwd behind the batcher; the variant bit picks the batcher sending
    /// every vector to `ethernet-input` (`examples/ppb.rs --no-direct`).
    ppb_l3fwd,
    || vec![ppb_harness(true), ppb_harness(false)],
    |i| i.variant as usize
);
target!(
    /// `l2fwd`: the variant bit picks dropping unknown unicast instead of flooding it.
    l2fwd,
    || vec![
        l2_harness(UnknownUnicast::Flood),
        l2_harness(UnknownUnicast::Drop)
    ],
    |i| i.variant as usize
);
target!(
    /// `ndnfwd`.
    ndnfwd,
    || vec![ndn_harness()],
    |_| 0
);
target!(
    /// `cryptofwd`: the variant bit picks ChaCha20-Poly1305 with the verify node instead of
    /// AES-128-GCM without it.
    cryptofwd,
    || vec![crypto_harness(false), crypto_harness(true)],
    |i| i.variant as usize
);

/// Runs `g` until idle with all but `free` of its pool's buffers held out of the pool
/// (pool pressure; `None`: no pressure), then gives them back; `held` is scratch kept
/// between inputs so nothing allocates per input once it has grown.
pub fn run_under_pressure(g: &mut Graph, free: Option<usize>, held: &mut Vec<u32>) {
    if let Some(free) = free {
        let n = g.pool().free_count().saturating_sub(free);
        held.resize(n, 0);
        let got = g.pool_mut().alloc_bulk(held);
        held.truncate(got);
    }
    g.run_until_idle();
    assert_eq!(
        g.pool_mut().free_bulk(held),
        held.len(),
        "held buffers free"
    );
    held.clear();
}
