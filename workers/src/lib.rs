//! # pktvec-workers
//!
//! Many cores: one graph per worker, pinned to its core ([`runtime`]); software receive-side
//! scaling, a Toeplitz hash over the flow's addresses and ports into a redirection table of
//! owner workers ([`rss`]); and bounded single-producer/single-consumer rings of buffer
//! indices that hand packets to the worker that owns their flow ([`ring`]).
#![warn(missing_docs)]

pub mod handoff;
pub mod ring;
pub mod rss;
pub mod runtime;
