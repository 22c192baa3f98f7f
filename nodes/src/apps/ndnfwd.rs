//! `ndnfwd`, an NDN forwarder: `ethernet-input → ndn-lookup →
//! ethernet-restore → interface-output → tx`, longest name-prefix match of Interests in a
//! hash FIB; frames leave as they came (`ethernet-restore` puts back the Ethernet header
//! `ethernet-input` stripped). IPv4, IPv6 and ARP frames are dropped by `ethernet-input`
//! (their arcs lead to `drop`).
//!
//! FIB prefixes are domain names turned into NDN names ([`domain_to_name`]:
//! `www.example.com` → `/com/example/www`) or generated (`/tld{i % 97}/site{i}/area{i % 7}`),
//! prefix `i` routed to interface `i % ports`. [`Ndnfwd::interest_names`] gives the names
//! the example's traffic asks for: each prefix plus two more components, so every lookup
//! first misses on the full name, then hits a shorter prefix.
//!
//! ```
//! use pktvec_graph::builtin::{NullSink, PacketSource, SourceNext};
//! use pktvec_graph::{GraphBuilder, GraphConfig};
//! use pktvec_nodes::apps::ndnfwd::{Ndnfwd, NdnfwdConfig};
//! use pktvec_packet::BufferPool;
//!
//! let cfg: NdnfwdConfig = serde_json::from_str(r#"{ "name_count": 100 }"#)?;
//! let app = Ndnfwd::new(cfg)?;
//! assert_eq!(app.fib().lookup_name("/tld5/site5/area5/obj5/seg2"), Some(1)); // 5 % 4
//! let mut b = GraphBuilder::new(GraphConfig::default());
//! b.add("input", PacketSource::new(vec![vec![0u8; 60]]).with_limit(10))
//!     .set_next("input", SourceNext::Out, app.entry());
//! app.add_to(&mut b);
//! b.add("tx", NullSink);
//! let mut g = b.build(BufferPool::new(Default::default())?)?;
//! g.run_until_idle();
//! assert_eq!(g.errors().count("ethernet-input", "unknown ethertype"), 10);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use super::{default_tx, AppError, Edge};
use crate::ethernet::{EthernetInput, EthernetNext, EthernetRestore, EthernetRestoreNext};
use crate::ndn::{NdnFib, NdnLookup, NdnNext};
use crate::output::{InterfaceOutput, OutputNext};
use pktvec_graph::GraphBuilder;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::Arc;

/// Name of `ethernet-input` (the entry).
pub const ETHERNET_INPUT: &str = "ethernet-input";
/// Name of `ndn-lookup`.
pub const NDN_LOOKUP: &str = "ndn-lookup";
/// Name of `ethernet-restore`.
pub const ETHERNET_RESTORE: &str = "ethernet-restore";
/// Name of `interface-output`.
pub const INTERFACE_OUTPUT: &str = "interface-output";

/// Settings of the NDN forwarder.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NdnfwdConfig {
    /// Output interfaces (at least 1 is used).
    pub ports: u32,
    /// Domain list (`domain[<TAB>…]` per line, `#` comments, `.xz` read through `xzcat`);
    /// generated names if absent.
    pub names: Option<PathBuf>,
    /// Generated name prefixes when no file is given.
    pub name_count: usize,
    /// Room in the FIB for this many names beyond the prefixes it is built from, for
    /// prefixes the control plane adds while the graphs forward ([`NdnFib::add`]).
    pub spare_names: usize,
    /// Name of the transmit node (added by the caller).
    pub tx: String,
}

impl Default for NdnfwdConfig {
    fn default() -> Self {
        NdnfwdConfig {
            ports: 4,
            names: None,
            name_count: 100_000,
            spare_names: 0,
            tx: default_tx(),
        }
    }
}

/// A domain name as an NDN name: labels reversed (`www.example.com.` → `/com/example/www`).
///
/// ```
/// assert_eq!(pktvec_nodes::apps::ndnfwd::domain_to_name("www.example.com."), "/com/example/www");
/// ```
pub fn domain_to_name(d: &str) -> String {
    let mut s = String::new();
    for label in d.trim().trim_end_matches('.').rsplit('.') {
        s.push('/');
        s.push_str(label);
    }
    s
}

/// The NDN forwarder: config, FIB prefixes and FIB. [`new`](Self::new) reads a domain
/// list or generates names, [`with_prefixes`](Self::with_prefixes) takes yours (prefix `i`
/// to interface `i % ports`). [`add_to`](Self::add_to) adds the nodes and returns their
/// arcs ([`NdnfwdNodes`]).
///
/// ```
/// use pktvec_graph::builtin::NullSink;
/// use pktvec_graph::{GraphBuilder, GraphConfig};
/// use pktvec_io::generator::{Generator, GeneratorNext, GeneratorSource};
/// use pktvec_io::profile::TrafficProfile;
/// use pktvec_nodes::apps::ndnfwd::{Ndnfwd, NdnfwdConfig};
/// use pktvec_packet::BufferPool;
///
/// let prefixes = vec!["/com/example".to_string(), "/org/wiki".to_string()];
/// let app = Ndnfwd::with_prefixes(NdnfwdConfig { ports: 2, ..NdnfwdConfig::default() }, prefixes)?;
/// assert_eq!(app.fib().lookup_name("/org/wiki/page/1"), Some(1));
///
/// // Interests for names under both prefixes.
/// let profile = TrafficProfile::from_toml("[mix]\nipv4 = 0.0\nndn = 1.0\n")?;
/// let names = vec!["/com/example/a".to_string(), "/org/wiki/b/c".to_string()];
/// let gen = Generator::builder(profile).names(names).build()?;
/// let mut b = GraphBuilder::new(GraphConfig::default());
/// b.add("input", GeneratorSource::new(gen).with_limit(100))
///     .set_next("input", GeneratorNext::Out, app.entry());
/// let nodes = app.add_to(&mut b);
/// b.add(nodes.output_to_tx.to.as_str(), NullSink);
/// let mut g = b.build(BufferPool::new(Default::default())?)?;
/// g.run_until_idle();
/// assert_eq!(g.runtime().row("tx").unwrap().packets, 100);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Ndnfwd {
    cfg: NdnfwdConfig,
    prefixes: Vec<String>,
    fib: Arc<NdnFib>,
}

/// The nodes [`Ndnfwd::add_to`] added and its arcs.
#[derive(Clone, Debug)]
pub struct NdnfwdNodes {
    /// Node the input sends to (`ethernet-input`).
    pub entry: &'static str,
    /// Every node added, in path order.
    pub nodes: Vec<&'static str>,
    /// `ethernet-input → ndn-lookup`.
    pub ethernet_to_ndn: Edge<EthernetNext>,
    /// `ndn-lookup → ethernet-restore`.
    pub ndn_to_restore: Edge<NdnNext>,
    /// `ethernet-restore → interface-output`.
    pub restore_to_output: Edge<EthernetRestoreNext>,
    /// `interface-output → tx`.
    pub output_to_tx: Edge<OutputNext>,
}

impl Ndnfwd {
    /// Reads or generates the name prefixes and builds the FIB.
    pub fn new(cfg: NdnfwdConfig) -> Result<Self, AppError> {
        let prefixes: Vec<String> = match &cfg.names {
            Some(p) => pktvec_lookup::routes::read_text_file(p)?
                .lines()
                .filter_map(|l| l.split('\t').next())
                .filter(|d| !d.is_empty() && !d.starts_with('#'))
                .map(domain_to_name)
                .collect(),
            None => (0..cfg.name_count)
                .map(|i| format!("/tld{}/site{}/area{}", i % 97, i, i % 7))
                .collect(),
        };
        Self::with_prefixes(cfg, prefixes)
    }

    /// Builds the FIB from these prefixes (`/a/b/c`; prefix `i` to interface `i % ports`).
    pub fn with_prefixes(cfg: NdnfwdConfig, prefixes: Vec<String>) -> Result<Self, AppError> {
        let ports = cfg.ports.max(1);
        let fib = NdnFib::from_names(
            prefixes
                .iter()
                .enumerate()
                .map(|(i, n)| (n.as_str(), i as u32 % ports)),
            prefixes.len().saturating_add(cfg.spare_names).max(1),
        )?;
        Ok(Ndnfwd { cfg, prefixes, fib })
    }

    /// The configuration.
    pub fn config(&self) -> &NdnfwdConfig {
        &self.cfg
    }

    /// Interfaces used (`ports`, at least 1).
    pub fn ports(&self) -> u32 {
        self.cfg.ports.max(1)
    }

    /// The FIB prefixes, in route order.
    pub fn prefixes(&self) -> &[String] {
        &self.prefixes
    }

    /// The FIB: the control plane adds and removes prefixes while the graphs forward
    /// ([`NdnFib::add`], [`NdnFib::remove`], [`NdnFib::apply`]). Every graph
    /// [`add_to`](Self::add_to) builds shares it (one `Ndnfwd` serves several workers, each
    /// `ndn-lookup` with its own reader); [`prefixes`](Self::prefixes) stays the list the
    /// FIB was built from.
    pub fn fib(&self) -> &Arc<NdnFib> {
        &self.fib
    }

    /// One Interest name per prefix: `{prefix}/obj{i % 13}/seg{i % 3}`.
    pub fn interest_names(&self) -> Vec<String> {
        self.prefixes
            .iter()
            .enumerate()
            .map(|(i, p)| format!("{p}/obj{}/seg{}", i % 13, i % 3))
            .collect()
    }

    /// The node the caller's input must send to.
    pub fn entry(&self) -> &'static str {
        ETHERNET_INPUT
    }

    /// Adds `ethernet-input`, `ndn-lookup`, `ethernet-restore` and `interface-output` (whose
    /// transmit arc leads to `tx`, which the caller adds).
    pub fn add_to(&self, b: &mut GraphBuilder) -> NdnfwdNodes {
        let tx = self.cfg.tx.as_str();
        b.add(ETHERNET_INPUT, EthernetInput)
            .add(NDN_LOOKUP, NdnLookup::new(self.fib.clone()))
            .add(ETHERNET_RESTORE, EthernetRestore)
            .add(
                INTERFACE_OUTPUT,
                InterfaceOutput::new(self.ports() as usize),
            )
            .set_next(ETHERNET_INPUT, EthernetNext::Ip4, "drop")
            .set_next(ETHERNET_INPUT, EthernetNext::Ip6, "drop")
            .set_next(ETHERNET_INPUT, EthernetNext::Arp, "drop")
            .set_next(ETHERNET_INPUT, EthernetNext::Ndn, NDN_LOOKUP)
            .set_next(NDN_LOOKUP, NdnNext::Output, ETHERNET_RESTORE)
            .set_next(
                ETHERNET_RESTORE,
                EthernetRestoreNext::Output,
                INTERFACE_OUTPUT,
            )
            .set_next(INTERFACE_OUTPUT, OutputNext::Tx, tx);
        NdnfwdNodes {
            entry: ETHERNET_INPUT,
            nodes: vec![
                ETHERNET_INPUT,
                NDN_LOOKUP,
                ETHERNET_RESTORE,
                INTERFACE_OUTPUT,
            ],
            ethernet_to_ndn: Edge::new(ETHERNET_INPUT, EthernetNext::Ndn, NDN_LOOKUP),
            ndn_to_restore: Edge::new(NDN_LOOKUP, NdnNext::Output, ETHERNET_RESTORE),
            restore_to_output: Edge::new(
                ETHERNET_RESTORE,
                EthernetRestoreNext::Output,
                INTERFACE_OUTPUT,
            ),
            output_to_tx: Edge::new(INTERFACE_OUTPUT, OutputNext::Tx, tx),
        }
    }
}
