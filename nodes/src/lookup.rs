//! `ip4-lookup` and `ip6-lookup`: longest-prefix match of the destination address in a
//! shared FIB, two-phase (extract the address and prefetch the table lines for `b` packets,
//! then look them up). The route's next-hop id is the adjacency index the rewrite node
//! uses (`BufferMeta::opaque`).
//!
//! The IPv4 FIB is shared as `Arc<Lpm4>`: routes can be added and deleted from another
//! thread while workers look up. The IPv6 FIB is read-only while shared.
//!
//! ```
//! use pktvec_lookup::ipv4::{Lpm4, Lpm4Config};
//! use pktvec_nodes::lookup::Ip4Lookup;
//! use std::{net::Ipv4Addr, sync::Arc};
//! let fib = Arc::new(Lpm4::new(Lpm4Config::default()));
//! fib.add(Ipv4Addr::new(10, 0, 0, 0), 8, 3)?;
//! let node = Ip4Lookup::new(fib.clone());
//! assert_eq!(node.fib().lookup(u32::from(Ipv4Addr::new(10, 1, 2, 3))), Some(3));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use pktvec_graph::{next_nodes, node_errors, Context, Frame, Node, Verdict};
use pktvec_lookup::ipv4::Lpm4;
use pktvec_lookup::ipv6::Lpm6;
use pktvec_packet::Packet;
use std::fmt::Write as _;
use std::sync::Arc;

next_nodes! {
    /// Arcs of `ip4-lookup`.
    pub enum Ip4LookupNext {
        /// Routed packets.
        Rewrite = "ip4-rewrite",
    }
}

node_errors! {
    /// Drop reasons of `ip4-lookup`.
    pub enum Ip4LookupError {
        /// No route matches the destination.
        NoRoute = "no route",
        /// Shorter than an IPv4 header (a node upstream is wrong).
        Truncated = "truncated ipv4 header",
    }
}

/// The `ip4-lookup` node.
pub struct Ip4Lookup {
    fib: Arc<Lpm4>,
}

impl Ip4Lookup {
    /// A lookup node over a shared FIB.
    pub fn new(fib: Arc<Lpm4>) -> Self {
        Ip4Lookup { fib }
    }
    /// The FIB.
    pub fn fib(&self) -> &Lpm4 {
        &self.fib
    }
}

#[inline(always)]
fn dst4(p: &Packet<'_>) -> Option<u32> {
    let d = p.data().get(16..20)?;
    Some(u32::from_be_bytes([d[0], d[1], d[2], d[3]]))
}

impl Node for Ip4Lookup {
    type Next = Ip4LookupNext;
    type Error = Ip4LookupError;

    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        let fib = &*self.fib;
        cx.process_sub_batches(
            frame,
            |p| {
                let d = dst4(&p);
                if let Some(d) = d {
                    fib.prefetch(d);
                }
                d
            },
            |p, d| match d {
                None => Verdict::Drop(Ip4LookupError::Truncated),
                Some(d) => match fib.lookup(d) {
                    Some(nh) => {
                        p.meta_mut().opaque = nh;
                        Verdict::Next(Ip4LookupNext::Rewrite)
                    }
                    None => Verdict::Drop(Ip4LookupError::NoRoute),
                },
            },
        );
    }

    fn format_trace(&self, pkt: Packet<'_>, out: &mut String) {
        match dst4(&pkt) {
            Some(d) => {
                let _ = write!(
                    out,
                    "fib lookup {}: {:?}",
                    std::net::Ipv4Addr::from(d),
                    self.fib.lookup(d)
                );
            }
            None => out.push_str("truncated"),
        }
    }
}

next_nodes! {
    /// Arcs of `ip6-lookup`.
    pub enum Ip6LookupNext {
        /// Routed packets.
        Rewrite = "ip6-rewrite",
    }
}

node_errors! {
    /// Drop reasons of `ip6-lookup`.
    pub enum Ip6LookupError {
        /// No route matches the destination.
        NoRoute = "no route",
        /// Shorter than an IPv6 header.
        Truncated = "truncated ipv6 header",
    }
}

/// The `ip6-lookup` node.
pub struct Ip6Lookup {
    fib: Arc<Lpm6>,
}

impl Ip6Lookup {
    /// A lookup node over a shared (read-only) FIB.
    pub fn new(fib: Arc<Lpm6>) -> Self {
        Ip6Lookup { fib }
    }
}

#[inline(always)]
fn dst6(p: &Packet<'_>) -> Option<u128> {
    let d: [u8; 16] = p.data().get(24..40)?.try_into().ok()?;
    Some(u128::from_be_bytes(d))
}

impl Node for Ip6Lookup {
    type Next = Ip6LookupNext;
    type Error = Ip6LookupError;

    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        let fib = &*self.fib;
        cx.process_sub_batches(
            frame,
            |p| {
                let d = dst6(&p);
                if let Some(d) = d {
                    fib.prefetch(d);
                }
                d
            },
            |p, d| match d {
                None => Verdict::Drop(Ip6LookupError::Truncated),
                Some(d) => match fib.lookup(d) {
                    Some(nh) => {
                        p.meta_mut().opaque = nh;
                        Verdict::Next(Ip6LookupNext::Rewrite)
                    }
                    None => Verdict::Drop(Ip6LookupError::NoRoute),
                },
            },
        );
    }

    fn format_trace(&self, pkt: Packet<'_>, out: &mut String) {
        match dst6(&pkt) {
            Some(d) => {
                let _ = write!(
                    out,
                    "fib lookup {}: {:?}",
                    std::net::Ipv6Addr::from(d),
                    self.fib.lookup(d)
                );
            }
            None => out.push_str("truncated"),
        }
    }
}
