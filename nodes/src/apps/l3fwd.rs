//! `l3fwd`, an IPv4 and IPv6 router in VPP's graph layout:
//!
//! ```text
//! entry → ethernet-input ─┬─ ip4-input → ip4-lookup → ip4-rewrite ─┬─ interface-output → tx
//!                         ├─ ip6-input → ip6-lookup → ip6-rewrite ─┤
//!                         ├─ arp-input (replies) ──────────────────┘
//!                         └─ NDN → drop
//! ```
//!
//! A route's next hop selects the adjacency (`next hop % ports`, applied when the tables are
//! built); adjacency `i` ([`adjacency`]) sends out of interface `i` with source MAC
//! `02:aa:00:00:i` (16-bit `i`) and destination MAC `02:bb:00:00:i`. ARP requests for
//! `arp_addresses` are answered with interface 0's MAC.
//!
//! To put a node of your own on the IPv4 path, splice it into
//! [`L3fwdNodes::ip4_input_to_lookup`] (see the [`apps`](super) example and
//! `examples/nf_acl.rs`).
//!
//! ```
//! use pktvec_graph::builtin::{NullSink, PacketSource, SourceNext};
//! use pktvec_graph::{GraphBuilder, GraphConfig};
//! use pktvec_lookup::routes::Route;
//! use pktvec_nodes::apps::l3fwd::{adjacency, L3fwd, L3fwdConfig};
//! use pktvec_packet::{builder::PacketBuilder, BufferPool};
//! use std::net::Ipv4Addr;
//!
//! let r4 = vec![Route { addr: Ipv4Addr::new(10, 0, 0, 0), len: 8, next_hop: 3 }];
//! let app = L3fwd::with_routes(L3fwdConfig::default(), r4, vec![])?;
//! let frame = PacketBuilder::ethernet([2, 0, 0, 0, 0, 1].into(), [2, 0, 0, 0, 0, 2].into())
//!     .ipv4(Ipv4Addr::new(192, 168, 0, 1), Ipv4Addr::new(10, 1, 2, 3))
//!     .ttl(64)
//!     .udp(1, 2)
//!     .build();
//! let mut b = GraphBuilder::new(GraphConfig::default());
//! b.add("input", PacketSource::new(vec![frame]).with_limit(10))
//!     .set_next("input", SourceNext::Out, app.entry());
//! let nodes = app.add_to(&mut b);
//! assert!(nodes.nodes.contains(&"ip4-lookup"));
//! b.add("tx", NullSink);
//! let mut g = b.build(BufferPool::new(Default::default())?)?;
//! g.run_until_idle();
//! let out = g.node::<pktvec_nodes::output::InterfaceOutput>("interface-output").unwrap();
//! assert_eq!(out.counters()[3].packets, 10);
//! assert_eq!(adjacency(3).dst_mac, [2, 0xbb, 0, 0, 0, 3].into());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use super::{default_tx, AppError, Edge};
use crate::arp::ArpInput;
use crate::ethernet::{EthernetInput, EthernetNext};
use crate::ip4::{Adjacency, Ip4Input, Ip4InputConfig, Ip4InputNext, Ip4Rewrite, Ip4RewriteNext};
use crate::ip6::{Ip6Input, Ip6InputNext, Ip6Rewrite, Ip6RewriteNext};
use crate::lookup::{Ip4Lookup, Ip4LookupNext, Ip6Lookup, Ip6LookupNext};
use crate::output::{InterfaceOutput, OutputNext};
use pktvec_graph::GraphBuilder;
use pktvec_lookup::ipv4::{Lpm4, Lpm4Config};
use pktvec_lookup::ipv6::{Lpm6, SharedLpm6};
use pktvec_lookup::routes::{self, Route4, Route6};
use serde::{Deserialize, Serialize};
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::sync::Arc;

/// Name of `ethernet-input` (the entry).
pub const ETHERNET_INPUT: &str = "ethernet-input";
/// Name of `ip4-input`.
pub const IP4_INPUT: &str = "ip4-input";
/// Name of `ip4-lookup`.
pub const IP4_LOOKUP: &str = "ip4-lookup";
/// Name of `ip4-rewrite`.
pub const IP4_REWRITE: &str = "ip4-rewrite";
/// Name of `ip6-input`.
pub const IP6_INPUT: &str = "ip6-input";
/// Name of `ip6-lookup`.
pub const IP6_LOOKUP: &str = "ip6-lookup";
/// Name of `ip6-rewrite`.
pub const IP6_REWRITE: &str = "ip6-rewrite";
/// Name of `arp-input`.
pub const ARP_INPUT: &str = "arp-input";
/// Name of `interface-output`.
pub const INTERFACE_OUTPUT: &str = "interface-output";

/// Default of [`L3fwdConfig::ip4_lookup_sub_batch`].
pub const DEFAULT_IP4_LOOKUP_SUB_BATCH: usize = 64;

/// Settings of the router.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct L3fwdConfig {
    /// Output interfaces = adjacencies (at least 1 is used).
    pub ports: u16,
    /// IPv4 routes file (`prefix [next-hop]` per line; `.xz` read through `xzcat`).
    pub routes: Option<PathBuf>,
    /// Generated IPv4 routes when no file is given (real BGP length distribution).
    pub route_count: usize,
    /// IPv6 routes file.
    pub routes6: Option<PathBuf>,
    /// Generated IPv6 /48–/64 routes when no file is given.
    pub route6_count: usize,
    /// Seed of the generated IPv4 routes (IPv6 uses `seed + 1`).
    pub seed: u64,
    /// Checks and policies of `ip4-input`.
    pub ip4: Ip4InputConfig,
    /// Sub-batch size of `ip4-lookup`'s staged LPM lookup; `None`: the graph's
    /// (`GraphConfig::sub_batch`). Default 64: the compressed IPv4 LPM prefetches one table
    /// level for a whole sub-batch before reading it, and its loads only overlap enough
    /// with `b >= 64` (see `docs/results/forwarders.md`), while the graph's default
    /// (16) is what the L2 and IPv6 hash-style lookups want.
    pub ip4_lookup_sub_batch: Option<usize>,
    /// Our IPv4 addresses: ARP requests for them are answered.
    pub arp_addresses: Vec<Ipv4Addr>,
    /// Name of the transmit node (added by the caller).
    pub tx: String,
}

impl Default for L3fwdConfig {
    fn default() -> Self {
        L3fwdConfig {
            ports: 4,
            routes: None,
            route_count: 500_000,
            routes6: None,
            route6_count: 200_000,
            seed: 1,
            ip4: Ip4InputConfig::default(),
            ip4_lookup_sub_batch: Some(DEFAULT_IP4_LOOKUP_SUB_BATCH),
            arp_addresses: vec![Ipv4Addr::new(192, 0, 2, 1)],
            tx: default_tx(),
        }
    }
}

/// Adjacency `i`: interface `i`, MACs `02:aa:00:00:i` → `02:bb:00:00:i` (`i` 16-bit).
///
/// ```
/// let a = pktvec_nodes::apps::l3fwd::adjacency(0x0102);
/// assert_eq!((a.tx_if, a.src_mac.to_string()), (0x0102, "02:aa:00:00:01:02".to_string()));
/// ```
pub fn adjacency(i: u16) -> Adjacency {
    let [hi, lo] = i.to_be_bytes();
    Adjacency {
        tx_if: i,
        src_mac: [2, 0xaa, 0, 0, hi, lo].into(),
        dst_mac: [2, 0xbb, 0, 0, hi, lo].into(),
    }
}

/// The router: config, routes and FIBs. [`new`](Self::new) loads route files or generates
/// routes (random prefixes: fine for generated traffic, missed by real captures);
/// [`with_routes`](Self::with_routes) takes yours. [`add_to`](Self::add_to) adds the nodes
/// and returns their arcs ([`L3fwdNodes`]).
///
/// ```
/// use pktvec_graph::builtin::{NullSink, PacketSource, SourceNext};
/// use pktvec_graph::{GraphBuilder, GraphConfig};
/// use pktvec_lookup::routes::Route;
/// use pktvec_nodes::apps::l3fwd::{L3fwd, L3fwdConfig};
/// use pktvec_packet::{builder::PacketBuilder, BufferPool};
/// use std::net::Ipv4Addr;
///
/// let routes = vec![
///     Route { addr: Ipv4Addr::new(10, 0, 0, 0), len: 8, next_hop: 1 },
///     Route { addr: Ipv4Addr::new(10, 9, 0, 0), len: 16, next_hop: 2 },
/// ];
/// let app = L3fwd::with_routes(L3fwdConfig { ports: 4, ..L3fwdConfig::default() }, routes, vec![])?;
/// let to = |d| {
///     PacketBuilder::ethernet([2, 0, 0, 0, 0, 1].into(), [2, 0, 0, 0, 0, 2].into())
///         .ipv4(Ipv4Addr::new(192, 168, 0, 1), d)
///         .ttl(64)
///         .udp(1, 2)
///         .build()
/// };
/// let traffic = vec![
///     to(Ipv4Addr::new(10, 1, 1, 1)),   // /8: interface 1
///     to(Ipv4Addr::new(10, 9, 1, 1)),   // longest match /16: interface 2
///     to(Ipv4Addr::new(192, 0, 2, 1)),  // no route
/// ];
/// let mut b = GraphBuilder::new(GraphConfig::default());
/// b.add("input", PacketSource::new(traffic).with_limit(30))
///     .set_next("input", SourceNext::Out, app.entry());
/// let nodes = app.add_to(&mut b);
/// b.add(nodes.output_to_tx.to.as_str(), NullSink);
/// let mut g = b.build(BufferPool::new(Default::default())?)?;
/// g.run_until_idle();
/// let out = g.node::<pktvec_nodes::output::InterfaceOutput>("interface-output").unwrap();
/// assert_eq!((out.counters()[1].packets, out.counters()[2].packets), (10, 10));
/// assert_eq!(g.errors().count("ip4-lookup", "no route"), 10);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct L3fwd {
    cfg: L3fwdConfig,
    routes4: Vec<Route4>,
    routes6: Vec<Route6>,
    fib4: Arc<Lpm4>,
    fib6: Arc<SharedLpm6>,
}

/// The nodes [`L3fwd::add_to`] added and its main arcs.
#[derive(Clone, Debug)]
pub struct L3fwdNodes {
    /// Node the input sends to (`ethernet-input`).
    pub entry: &'static str,
    /// Every node added.
    pub nodes: Vec<&'static str>,
    /// `ethernet-input → ip4-input`.
    pub ethernet_to_ip4: Edge<EthernetNext>,
    /// `ethernet-input → ip6-input`.
    pub ethernet_to_ip6: Edge<EthernetNext>,
    /// `ip4-input → ip4-lookup`: where an IPv4 ACL or classifier goes.
    pub ip4_input_to_lookup: Edge<Ip4InputNext>,
    /// `ip4-lookup → ip4-rewrite`.
    pub ip4_lookup_to_rewrite: Edge<Ip4LookupNext>,
    /// `ip4-rewrite → interface-output`.
    pub ip4_rewrite_to_output: Edge<Ip4RewriteNext>,
    /// `ip6-input → ip6-lookup`.
    pub ip6_input_to_lookup: Edge<Ip6InputNext>,
    /// `ip6-lookup → ip6-rewrite`.
    pub ip6_lookup_to_rewrite: Edge<Ip6LookupNext>,
    /// `ip6-rewrite → interface-output`.
    pub ip6_rewrite_to_output: Edge<Ip6RewriteNext>,
    /// `interface-output → tx`.
    pub output_to_tx: Edge<OutputNext>,
}

impl L3fwd {
    /// Loads or generates the routes the config asks for and builds the FIBs.
    pub fn new(cfg: L3fwdConfig) -> Result<Self, AppError> {
        let r4 = match &cfg.routes {
            Some(p) => routes::load_ipv4_file(p)?,
            None => routes::generate_ipv4(cfg.route_count, cfg.seed),
        };
        let r6 = match &cfg.routes6 {
            Some(p) => routes::load_ipv6_file(p)?,
            None => routes::generate_ipv6(cfg.route6_count, cfg.seed.wrapping_add(1)),
        };
        Self::with_routes(cfg, r4, r6)
    }

    /// Builds the FIBs from these routes (the config's route options are ignored); next
    /// hops are taken modulo `ports`.
    pub fn with_routes(
        cfg: L3fwdConfig,
        mut routes4: Vec<Route4>,
        mut routes6: Vec<Route6>,
    ) -> Result<Self, AppError> {
        let ports = cfg.ports.max(1) as u32;
        routes4.iter_mut().for_each(|r| r.next_hop %= ports);
        routes6.iter_mut().for_each(|r| r.next_hop %= ports);
        let fib4 = Arc::new(Lpm4::from_routes(Lpm4Config::default(), &routes4)?);
        let fib6 = Arc::new(SharedLpm6::new(Lpm6::from_routes(
            routes6.iter().map(|r| (r.addr, r.len, r.next_hop)),
        )?));
        Ok(L3fwd {
            cfg,
            routes4,
            routes6,
            fib4,
            fib6,
        })
    }

    /// A router over an IPv4 FIB built elsewhere (for one a control plane updates while
    /// workers forward; its next hops select adjacencies as they are, so keep them below
    /// `ports` or put a node of yours between `ip4-lookup` and `ip4-rewrite` that maps
    /// them). `prefixes` are what [`routes4`](Self::routes4) reports (traffic generators aim
    /// at them); the IPv6 FIB is empty (add routes through [`fib6`](Self::fib6)).
    ///
    /// ```
    /// use pktvec_lookup::ipv4::Lpm4;
    /// use pktvec_lookup::routes::Route;
    /// use pktvec_nodes::apps::l3fwd::{L3fwd, L3fwdConfig};
    /// use std::sync::Arc;
    /// let fib = Arc::new(Lpm4::new(Default::default()));
    /// fib.add([10, 0, 0, 0].into(), 8, 2)?;
    /// let app = L3fwd::with_fib4(L3fwdConfig::default(), fib.clone(), vec![])?;
    /// fib.add([10, 1, 0, 0].into(), 16, 3)?; // seen by every graph built from `app`
    /// assert_eq!(app.fib4().lookup(0x0a01_0001u32), Some(3));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_fib4(
        cfg: L3fwdConfig,
        fib4: Arc<Lpm4>,
        prefixes: Vec<Route4>,
    ) -> Result<Self, AppError> {
        let fib6 = Arc::new(SharedLpm6::new(Lpm6::new()));
        Ok(Self::with_fibs(cfg, (fib4, prefixes), (fib6, Vec::new())))
    }

    /// A router over an IPv4 and an IPv6 FIB built elsewhere, each with the prefixes
    /// [`routes4`](Self::routes4) and [`routes6`](Self::routes6) report (see
    /// [`with_fib4`](Self::with_fib4)).
    ///
    /// ```
    /// use pktvec_lookup::ipv4::Lpm4;
    /// use pktvec_lookup::ipv6::{Lpm6, SharedLpm6};
    /// use pktvec_nodes::apps::l3fwd::{L3fwd, L3fwdConfig};
    /// use std::sync::Arc;
    /// let fib4 = Arc::new(Lpm4::new(Default::default()));
    /// let fib6 = Arc::new(SharedLpm6::new(Lpm6::new()));
    /// let app = L3fwd::with_fibs(L3fwdConfig::default(), (fib4, vec![]), (fib6.clone(), vec![]));
    /// fib6.add("2001:db8::".parse::<std::net::Ipv6Addr>()?, 32, 1)?; // seen by every graph
    /// assert_eq!(app.fib6().lookup("2001:db8::1".parse::<std::net::Ipv6Addr>()?), Some(1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_fibs(
        cfg: L3fwdConfig,
        (fib4, prefixes4): (Arc<Lpm4>, Vec<Route4>),
        (fib6, prefixes6): (Arc<SharedLpm6>, Vec<Route6>),
    ) -> Self {
        L3fwd {
            cfg,
            routes4: prefixes4,
            routes6: prefixes6,
            fib4,
            fib6,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &L3fwdConfig {
        &self.cfg
    }

    /// Interfaces used (`ports`, at least 1).
    pub fn ports(&self) -> u16 {
        self.cfg.ports.max(1)
    }

    /// The IPv4 routes in the FIB (next hops already modulo `ports`).
    pub fn routes4(&self) -> &[Route4] {
        &self.routes4
    }

    /// The IPv6 routes in the FIB.
    pub fn routes6(&self) -> &[Route6] {
        &self.routes6
    }

    /// The IPv4 FIB (shared: routes can change while the graph runs).
    pub fn fib4(&self) -> &Arc<Lpm4> {
        &self.fib4
    }

    /// The IPv6 FIB (shared: routes can change while the graph runs; each graph's
    /// `ip6-lookup` has its own reader). Its next hops select adjacencies as they are:
    /// keep those added here below `ports`.
    ///
    /// ```
    /// use pktvec_nodes::apps::l3fwd::{L3fwd, L3fwdConfig};
    /// let app = L3fwd::with_routes(L3fwdConfig::default(), vec![], vec![])?;
    /// app.fib6().add(0x2001_0db8u128 << 96, 32, 1)?; // seen by every graph built from `app`
    /// assert_eq!(app.fib6().lookup(0x2001_0db8u128 << 96 | 1), Some(1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn fib6(&self) -> &Arc<SharedLpm6> {
        &self.fib6
    }

    /// The adjacency table: [`adjacency`]`(i)` for every interface.
    pub fn adjacencies(&self) -> Vec<Adjacency> {
        (0..self.ports()).map(adjacency).collect()
    }

    /// The node the caller's input must send to.
    pub fn entry(&self) -> &'static str {
        ETHERNET_INPUT
    }

    /// Adds the router's nodes; `interface-output`'s transmit arc leads to `tx`, which the
    /// caller adds. NDN frames are dropped (`ethernet-input`'s NDN arc leads to `drop`).
    pub fn add_to(&self, b: &mut GraphBuilder) -> L3fwdNodes {
        let adjs = self.adjacencies();
        let ours = self
            .cfg
            .arp_addresses
            .iter()
            .map(|&a| (a, adjacency(0).src_mac))
            .collect();
        let tx = self.cfg.tx.as_str();
        b.add(ETHERNET_INPUT, EthernetInput)
            .add(IP4_INPUT, Ip4Input::new(self.cfg.ip4))
            .add(
                IP4_LOOKUP,
                Ip4Lookup::new(self.fib4.clone()).with_sub_batch(self.cfg.ip4_lookup_sub_batch),
            )
            .add(IP4_REWRITE, Ip4Rewrite::new(adjs.clone()))
            .add(IP6_INPUT, Ip6Input)
            .add(IP6_LOOKUP, Ip6Lookup::new(self.fib6.clone()))
            .add(IP6_REWRITE, Ip6Rewrite::new(adjs))
            .add(ARP_INPUT, ArpInput::new(ours))
            .add(
                INTERFACE_OUTPUT,
                InterfaceOutput::new(self.ports() as usize),
            )
            .set_next(ETHERNET_INPUT, EthernetNext::Ndn, "drop")
            .set_next(INTERFACE_OUTPUT, OutputNext::Tx, tx);
        L3fwdNodes {
            entry: ETHERNET_INPUT,
            nodes: vec![
                ETHERNET_INPUT,
                IP4_INPUT,
                IP4_LOOKUP,
                IP4_REWRITE,
                IP6_INPUT,
                IP6_LOOKUP,
                IP6_REWRITE,
                ARP_INPUT,
                INTERFACE_OUTPUT,
            ],
            ethernet_to_ip4: Edge::new(ETHERNET_INPUT, EthernetNext::Ip4, IP4_INPUT),
            ethernet_to_ip6: Edge::new(ETHERNET_INPUT, EthernetNext::Ip6, IP6_INPUT),
            ip4_input_to_lookup: Edge::new(IP4_INPUT, Ip4InputNext::Lookup, IP4_LOOKUP),
            ip4_lookup_to_rewrite: Edge::new(IP4_LOOKUP, Ip4LookupNext::Rewrite, IP4_REWRITE),
            ip4_rewrite_to_output: Edge::new(IP4_REWRITE, Ip4RewriteNext::Output, INTERFACE_OUTPUT),
            ip6_input_to_lookup: Edge::new(IP6_INPUT, Ip6InputNext::Lookup, IP6_LOOKUP),
            ip6_lookup_to_rewrite: Edge::new(IP6_LOOKUP, Ip6LookupNext::Rewrite, IP6_REWRITE),
            ip6_rewrite_to_output: Edge::new(IP6_REWRITE, Ip6RewriteNext::Output, INTERFACE_OUTPUT),
            output_to_tx: Edge::new(INTERFACE_OUTPUT, OutputNext::Tx, tx),
        }
    }
}
