//! # pktvec-nodes
//!
//! Protocol nodes for pktvec graphs, each a vector node built on the prefetching
//! loop, every drop counted with a reason, no panic on any input:
//!
//! | node | module | does |
//! |---|---|---|
//! | `ethernet-input` | [`ethernet`] | Ethernet + 802.1Q/QinQ parse, offsets in metadata, strips L2, dispatch by EtherType |
//! | `ethernet-restore` | [`ethernet`] | puts the stripped Ethernet header back (L2-transparent forwarders such as ndnfwd) |
//! | `ip4-input` | [`ip4`] | version, IHL, total length, checksum, TTL, options and fragment policies |
//! | `ip4-rewrite` | [`ip4`] | TTL − 1 with incremental checksum, Ethernet header from an adjacency |
//! | `ip6-input` | [`ip6`] | version, payload length, hop limit |
//! | `ip6-rewrite` | [`ip6`] | hop limit − 1, Ethernet header from an adjacency |
//! | `ip4-lookup`, `ip6-lookup` | [`lookup`] | two-phase LPM of the destination, adjacency index to `opaque` |
//! | `l2-learn`, `l2-forward` | [`l2`] | two-phase MAC lookups in a shared table; learning; flood or drop unknown unicast |
//! | `ndn-lookup` | [`ndn`] | longest name-prefix match of NDN Interests in a hash FIB |
//! | `arp-input` | [`arp`] | replies for our addresses, learns neighbours |
//! | `crypto` | [`crypto`] | AES-GCM / ChaCha20-Poly1305 over the payload, in place (RustCrypto) |
//! | `l2-xconnect` | [`xconnect`] | fixed rx→tx interface pairs (l2fwd's port pairs), optional source MAC rewrite |
//! | `interface-output` | [`output`] | per-interface counters, hand-off to the transmit node |
//!
//! Each node's per-packet function (`*_one`) is public too, for tests and for nodes that
//! fuse several steps.
//!
//! The forwarders are assembled from these nodes in [`apps`]:
//!
//! | forwarder | module | nodes it adds (the caller adds input and tx) |
//! |---|---|---|
//! | l2fwd | [`apps::l2fwd`] | `l2-learn → l2-forward → interface-output` |
//! | l3fwd | [`apps::l3fwd`] | `ethernet-input → ip4/ip6-input → -lookup → -rewrite → interface-output`, `arp-input` |
//! | ndnfwd | [`apps::ndnfwd`] | `ethernet-input → ndn-lookup → ethernet-restore → interface-output` |
//! | cryptofwd | [`apps::cryptofwd`] | `crypto [→ verify] → l2-xconnect → interface-output` |
//!
//! Each has a serde config with defaults and returns its node names and arcs
//! ([`apps::Edge`]), so a user's NF can splice its own node into the forwarder's graph.
#![warn(missing_docs)]

pub mod apps;
pub mod arp;
pub mod crypto;
pub mod ethernet;
pub mod ip4;
pub mod ip6;
pub mod l2;
pub mod lookup;
pub mod ndn;
pub mod output;
pub mod xconnect;
