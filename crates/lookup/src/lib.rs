//! # pktvec-lookup
//!
//! Forwarding tables for pktvec, independent of the graph: IPv4 LPM ([`ipv4`]), IPv6 LPM
//! ([`ipv6`]), an exact-match hash whose lookups split into hash → prefetch → search
//! ([`hash`]), and route-table loading and generation ([`routes`]).
#![warn(missing_docs)]

pub mod hash;
pub mod ipv4;
pub mod ipv6;
pub mod routes;
pub mod updates;
