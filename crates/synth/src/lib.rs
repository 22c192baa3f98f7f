//! Whippersnapper-style synthetic benchmarks for pktvec (after the seed paper on P4
//! target benchmarking and its public generator): each benchmark varies one feature of a
//! packet-processing program — parsing, tables, checksums, state, header changes, field
//! writes, flows — and one [`record::Record`] per point generates three things that agree
//! byte for byte:
//!
//! * the pktvec graph ([`pipeline::add_to`], over the generated nodes of [`nodes`]);
//! * the traffic ([`traffic::frames`], [`traffic::write_pcap`]);
//! * the twin program for DPDK's SWX P4 pipeline ([`swx::Twin`]: `.spec`, table entries,
//!   I/O spec), which `pktvec-bench whippersnapper` compiles and times beside pktvec.
//!
//! ```
//! use pktvec_synth::record::{Bench, Record};
//! use pktvec_synth::swx::Twin;
//! let r = Record::new(Bench::TablesDependent, 2);
//! let twin = Twin::new(&r);
//! assert!(twin.spec.contains("table table_1"));
//! assert_eq!(twin.tables.len(), 3); // forward_table and the two tables
//! ```

pub mod layout;
pub mod nodes;
pub mod pipeline;
pub mod record;
pub mod swx;
pub mod traffic;
