//! # pktvec-batcher
//!
//! A path-based packet batcher (PPB, after the seed paper on path batching) in software:
//! before the graph sees them, packets are parsed ([`parser`]), given a path id by a path table
//! ([`path_table`]), queued per path ([`queues`]) and handed on as whole vectors of one
//! path, so that vectors do not split at every branch of the graph and each node's code
//! and data stay in cache for a whole vector.
//!
//! The batcher is the graph's input node ([`Batcher`] over a [`BurstSource`]); the graph
//! and its nodes do not change. It stores what it parsed in the buffer metadata
//! (`path_id`, `l2_offset`, `l3_offset`, `l4_offset`).
//!
//! See the example on [`Batcher`].
#![warn(missing_docs)]

pub mod node;
pub mod parser;
pub mod path_table;
pub mod queues;

pub use node::{strip_to_l3, Batcher, BatcherError, BatcherNext, BurstSource, ReplaySource};
pub use queues::{BatcherConfig, BatcherStats, FullPolicy, QueueStats};
