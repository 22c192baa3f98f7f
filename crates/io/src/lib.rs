//! # pktvec-io
//!
//! Where packets come from and go to, for pktvec graphs:
//!
//! * [`capture`]: pcap/pcapng files read into memory and replayed by an input node
//!   ([`capture::PcapSource`], optionally looping, each packet with its capture timestamp
//!   and, for pcapng, its interface), pcap writing ([`capture::PcapSink`], original
//!   timestamps kept, flushed every vector) and a per-interface counting sink
//!   ([`capture::CountingSink`]). Ethernet, Linux cooked (SLL, SLL2), raw IP and BSD
//!   loopback (NULL, LOOP) captures are replayed, the non-Ethernet ones behind a synthetic
//!   Ethernet header; other link types are skipped and counted.
//! * [`profile`] and [`generator`]: a seeded traffic generator described by a TOML profile
//!   (protocol mix, VLAN/QinQ, NDN names, unknown EtherTypes, malformed frames, flow count,
//!   Zipf popularity, churn, destinations from a route table with a hit rate, sizes, arrival
//!   order including strictly alternating IPv4/IPv6).
//! * `dpdk` (cargo feature `dpdk`): DPDK ethdev ports, zero copy: the EAL, a mempool that
//!   is the graph's buffer pool, port setup and counters, rx and tx nodes.
//!
//! ```
//! use pktvec_graph::{GraphBuilder, GraphConfig};
//! use pktvec_io::capture::CountingSink;
//! use pktvec_io::generator::{Generator, GeneratorNext, GeneratorSource};
//! use pktvec_io::profile::TrafficProfile;
//! use pktvec_packet::{BufferPool, PoolConfig};
//!
//! let profile = TrafficProfile::from_toml("[mix]\nipv4 = 3.0\nipv6 = 1.0\nmalformed = 0.1")?;
//! let gen = Generator::builder(profile).build()?;
//! let mut b = GraphBuilder::new(GraphConfig::default());
//! b.add("gen", GeneratorSource::new(gen).with_limit(10_000))
//!     .add("count", CountingSink::new(1))
//!     .set_next("gen", GeneratorNext::Out, "count");
//! let mut g = b.build(BufferPool::new(PoolConfig::default())?)?;
//! assert_eq!(g.run_until_idle(), 10_000);
//! assert_eq!(g.node::<CountingSink>("count").unwrap().packets.iter().sum::<u64>(), 10_000);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![warn(missing_docs)]

pub mod capture;
pub mod generator;
pub mod profile;

#[cfg(feature = "dpdk")]
pub mod dpdk;
