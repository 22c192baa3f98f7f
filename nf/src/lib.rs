//! # pktvec-nf
//!
//! Stateful network functions over [`pktvec_state`]: each is written once against the
//! state API and runs on many workers under any synchronisation (`coarse`, `fine`,
//! `affinity`, `rtm`, `rtm-coarse`), as the seed on run-to-completion with shared state
//! (`004_*`) compares them.
//!
//! * [`runtime`]: the [`Nf`](runtime::Nf)/[`NfWorker`](runtime::NfWorker) traits, the
//!   graph node that runs them, an offered-load source and [`run`](runtime::run).
#![warn(missing_docs)]

pub mod classifier;
pub mod dhcpd;
pub mod intruder;
pub mod nat;
pub mod runtime;
