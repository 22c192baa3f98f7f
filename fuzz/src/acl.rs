//! The `ip4-acl` user node of `examples/nf_acl.rs` (examples are not a library, so its
//! essentials are copied here): drops IPv4 packets from denied source prefixes and UDP/TCP
//! packets to denied destination ports, permits the rest to `ip4-lookup`. The rules are the
//! example's defaults ([`DENY_SRC`], [`DENY_PORTS`]).

use pktvec::graph::{next_nodes, node_errors, Context, Frame, Node, Verdict};
use pktvec::packet::wire::{IpProtocol, Ipv4Packet};
use pktvec::packet::Packet;
use std::net::Ipv4Addr;

/// Denied source prefixes (the example's `--deny-src` default).
pub const DENY_SRC: [(Ipv4Addr, u8); 1] = [(Ipv4Addr::new(10, 0, 0, 0), 12)];
/// Denied UDP/TCP destination port ranges (the example's `--deny-dst-port` default).
pub const DENY_PORTS: [(u16, u16); 4] = [(22, 22), (23, 23), (53, 53), (100, 131)];

next_nodes! {
    /// Arcs of `ip4-acl`: permitted packets go on to the route lookup.
    pub enum AclNext {
        /// Permitted.
        Permit = "ip4-lookup",
    }
}

node_errors! {
    /// Why `ip4-acl` drops packets.
    pub enum AclError {
        /// Source address inside a denied prefix.
        SrcPrefix = "acl: denied source prefix",
        /// UDP or TCP to a denied destination port.
        DstPort = "acl: denied destination port",
        /// Not an IPv4 header (a node upstream is wrong).
        NotIp4 = "acl: not an ipv4 header",
    }
}

/// IPv4 ACL: deny source prefixes and destination ports, permit the rest. Expects packets
/// that start at the IPv4 header (as `ip4-input` leaves them).
pub struct Ip4Acl {
    deny_src: Vec<(u32, u32)>,
    deny_port: Box<[u64; 1024]>,
    /// Packets permitted so far.
    pub permitted: u64,
}

impl Ip4Acl {
    /// An ACL with these rules.
    pub fn new(deny_src: &[(Ipv4Addr, u8)], deny_ports: &[(u16, u16)]) -> Self {
        let mut deny_port = Box::new([0u64; 1024]);
        for &(lo, hi) in deny_ports {
            for p in lo..=hi {
                deny_port[p as usize / 64] |= 1 << (p % 64);
            }
        }
        let deny_src = deny_src
            .iter()
            .map(|&(a, len)| {
                let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
                (u32::from(a) & mask, mask)
            })
            .collect();
        Ip4Acl {
            deny_src,
            deny_port,
            permitted: 0,
        }
    }
}

/// The verdict for one packet.
#[inline(always)]
fn acl_one(
    deny_src: &[(u32, u32)],
    deny_port: &[u64; 1024],
    data: &[u8],
) -> Verdict<AclNext, AclError> {
    let Ok(ip) = Ipv4Packet::new_checked(data) else {
        return Verdict::Drop(AclError::NotIp4);
    };
    let src = u32::from(ip.src_addr());
    if deny_src.iter().any(|&(net, mask)| src & mask == net) {
        return Verdict::Drop(AclError::SrcPrefix);
    }
    let proto = ip.protocol();
    // Only the first fragment carries the L4 header.
    if (proto == IpProtocol::UDP || proto == IpProtocol::TCP) && ip.frag_offset() == 0 {
        if let Some(p) = ip.payload().get(2..4) {
            let port = u16::from_be_bytes([p[0], p[1]]) as usize;
            if deny_port[port / 64] & (1 << (port % 64)) != 0 {
                return Verdict::Drop(AclError::DstPort);
            }
        }
    }
    Verdict::Next(AclNext::Permit)
}

impl Node for Ip4Acl {
    type Next = AclNext;
    type Error = AclError;

    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        let (deny_src, deny_port) = (&self.deny_src[..], &*self.deny_port);
        let permitted = &mut self.permitted;
        cx.process_packets(frame, |pkt| {
            let v = acl_one(deny_src, deny_port, pkt.data());
            *permitted += matches!(v, Verdict::Next(_)) as u64;
            v
        });
    }

    fn format_trace(&self, pkt: Packet<'_>, out: &mut String) {
        use std::fmt::Write;
        let v = acl_one(&self.deny_src, &self.deny_port, pkt.data());
        let _ = match Ipv4Packet::new_checked(pkt.data()) {
            Ok(ip) => write!(
                out,
                "ACL: {} -> {} {}: {v:?}",
                ip.src_addr(),
                ip.dst_addr(),
                ip.protocol()
            ),
            Err(e) => write!(out, "ACL: not IPv4 ({e})"),
        };
    }
}
