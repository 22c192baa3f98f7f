//! `nf_acl`: a user's network function on top of a library forwarder. Takes the `l3fwd`
//! graph from `pktvec::nodes::apps::l3fwd` and splices a user node, `ip4-acl` (an IPv4
//! firewall written below), between `ip4-input` and `ip4-lookup`:
//!
//! ```text
//! input → ethernet-input → ip4-input → ip4-acl → ip4-lookup → ip4-rewrite → interface-output → tx
//!                        └ ip6-input → ip6-lookup → ip6-rewrite ┘
//! ```
//!
//! `ip4-acl` drops packets from denied source prefixes and UDP/TCP packets to denied
//! destination ports, each with its own counted reason (`show errors`), and lets the rest
//! through to the route lookup.
//!
//! ```text
//! cargo run --release --example nf_acl                                  # built-in traffic
//! cargo run --release --example nf_acl -- --deny-src 10.0.0.0/10 --deny-dst-port 1-100 -n 5000000
//! cargo run --release --example nf_acl -- --pcap-in in.pcap --pcap-out out.pcap --trace 4
//! ```

mod common;

use clap::Parser;
use common::{add_tx, run_and_report, CommonArgs};
use pktvec::graph::GraphBuilder;
use pktvec::io::generator::Generator;
use pktvec::nodes::apps::l3fwd::{L3fwd, L3fwdConfig};
use pktvec::packet::wire::{IpProtocol, Ipv4Packet};
use pktvec::prelude::*;
use std::net::Ipv4Addr;

// ---- the user node ---------------------------------------------------------------------

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
struct Ip4Acl {
    /// (network, mask) of every denied source prefix.
    deny_src: Vec<(u32, u32)>,
    /// One bit per destination port (8 KiB): a test and a load per packet, whatever the
    /// number of denied ports.
    deny_port: Box<[u64; 1024]>,
    permitted: u64,
}

impl Ip4Acl {
    fn new(deny_src: &[(Ipv4Addr, u8)], deny_ports: &[(u16, u16)]) -> Self {
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

/// The verdict for one packet: no allocation, no lock, bounds-checked header access.
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
        // The 4/2/1 loop with prefetch, then one bulk enqueue.
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

// ---- options, traffic and graph ---------------------------------------------------------

const PROFILE: &str = r#"
# 64-byte IPv4/UDP (sources in 10.0.0.0/8, destination ports 1-1023) and a little IPv6.
[mix]
ipv4 = 1.0
ipv6 = 0.1
[flows]
count = 65536
[sizes]
fixed = 64
[destinations]
ipv4_hit_rate = 0.98
ipv6_hit_rate = 0.98
"#;

fn parse_prefix(s: &str) -> Result<(Ipv4Addr, u8), String> {
    let (a, l) = s.split_once('/').unwrap_or((s, "32"));
    let a: Ipv4Addr = a.parse().map_err(|e| format!("{s:?}: {e}"))?;
    let l: u8 = l.parse().map_err(|e| format!("{s:?}: {e}"))?;
    if l > 32 {
        return Err(format!("{s:?}: prefix length above 32"));
    }
    Ok((a, l))
}

fn parse_ports(s: &str) -> Result<(u16, u16), String> {
    let (lo, hi) = s.split_once('-').unwrap_or((s, s));
    let lo: u16 = lo.parse().map_err(|e| format!("{s:?}: {e}"))?;
    let hi: u16 = hi.parse().map_err(|e| format!("{s:?}: {e}"))?;
    if lo > hi {
        return Err(format!("{s:?}: empty range"));
    }
    Ok((lo, hi))
}

#[derive(Parser, Debug)]
#[command(about = "l3fwd with a user IPv4 ACL node spliced in before the route lookup")]
struct Cli {
    #[command(flatten)]
    common: CommonArgs,
    /// Deny packets from these source prefixes (`a.b.c.d/len`, comma-separated or repeated).
    #[arg(long, value_delimiter = ',', value_parser = parse_prefix, default_value = "10.0.0.0/12")]
    deny_src: Vec<(Ipv4Addr, u8)>,
    /// Deny UDP/TCP to these destination ports (`p` or `lo-hi`, comma-separated or repeated).
    #[arg(long, value_delimiter = ',', value_parser = parse_ports, default_value = "22,23,53,100-131")]
    deny_dst_port: Vec<(u16, u16)>,
    /// Generated IPv4 routes.
    #[arg(long, default_value_t = 100_000)]
    route_count: usize,
    /// Generated IPv6 routes.
    #[arg(long, default_value_t = 10_000)]
    route6_count: usize,
    /// Output interfaces.
    #[arg(long, default_value_t = 4)]
    ports: u16,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let cli = Cli::parse();
    let args = &cli.common;
    let app = L3fwd::new(L3fwdConfig {
        ports: cli.ports,
        route_count: cli.route_count,
        route6_count: cli.route6_count,
        ..L3fwdConfig::default()
    })?;
    let profile = args.profile(PROFILE)?;
    let input = args.input(|| {
        Ok(Generator::builder(profile)
            .ipv4_prefixes(app.routes4().iter().map(|r| (r.addr, r.len)).collect())
            .ipv6_prefixes(app.routes6().iter().map(|r| (r.addr, r.len)).collect())
            .build()?)
    })?;

    let mut b = GraphBuilder::new(args.graph_config());
    input.add_to(&mut b, "input", app.entry());
    // The library forwarder...
    let nodes = app.add_to(&mut b);
    // ...and the user node between ip4-input and ip4-lookup.
    nodes.ip4_input_to_lookup.insert(
        &mut b,
        "ip4-acl",
        Ip4Acl::new(&cli.deny_src, &cli.deny_dst_port),
        AclNext::Permit,
    );
    add_tx(&mut b, &nodes.output_to_tx.to, args)?;
    let mut graph = b.build(args.pool()?)?;
    if !args.json {
        eprintln!(
            "nf_acl: l3fwd with {} IPv4 / {} IPv6 routes + ip4-acl (deny src {:?}, deny dst ports {:?})",
            app.routes4().len(),
            app.routes6().len(),
            cli.deny_src,
            cli.deny_dst_port
        );
    }
    run_and_report("nf_acl", &mut graph, args)?;
    if !args.json {
        let errors = graph.errors();
        let acl = graph.node::<Ip4Acl>("ip4-acl")?;
        println!(
            "ip4-acl: {} permitted, {} denied by source prefix, {} denied by destination port",
            acl.permitted,
            errors.count("ip4-acl", "acl: denied source prefix"),
            errors.count("ip4-acl", "acl: denied destination port")
        );
    }
    Ok(())
}
