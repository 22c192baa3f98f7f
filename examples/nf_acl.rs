//! `nf_acl`: your own network function on a library forwarder. The `l3fwd` graph of
//! `pktvec::nodes::apps::l3fwd` with a user node, `ip4-acl` (an IPv4 firewall, below),
//! spliced in between `ip4-input` and `ip4-lookup`:
//!
//! ```text
//! input → ethernet-input → ip4-input → ip4-acl → ip4-lookup → ip4-rewrite → interface-output → tx
//! ```
//! `ip4-acl` drops packets from denied source prefixes and UDP/TCP packets to denied
//! destination ports, each with its own reason in `show errors`.
//!
//! ```text
//! cargo run --release --example nf_acl
//! cargo run --release --example nf_acl -- --deny-src 10.0.0.0/10 --deny-dst-port 1-100 -n 5000000
//! cargo run --release --example nf_acl -- --pcap-in in.pcap --pcap-out out.pcap --trace 4
//! ```

mod common;

use clap::Parser;
use common::{exit_code, CommonArgs, Error};
use pktvec::nodes::apps::l3fwd::L3fwdConfig;
use pktvec::packet::wire::{IpProtocol, Ipv4Packet};
use pktvec::prelude::*;
use std::net::Ipv4Addr;
use std::ops::RangeInclusive;
use std::process::ExitCode;

next_nodes! {
    /// Arcs of `ip4-acl`: permitted packets go on to the route lookup.
    pub enum AclNext { Permit = "ip4-lookup" }
}

node_errors! {
    /// Why `ip4-acl` drops packets.
    pub enum AclError {
        SrcPrefix = "acl: denied source prefix",
        DstPort = "acl: denied destination port",
        NotIp4 = "acl: not an ipv4 header",
    }
}

/// IPv4 ACL: deny source prefixes and destination ports, permit the rest.
struct Ip4Acl {
    /// (network, mask) of every denied source prefix.
    deny_src: Vec<(u32, u32)>,
    /// Indexed by destination port: one load per packet, whatever the number of ports.
    deny_port: Vec<bool>,
}

impl Node for Ip4Acl {
    type Next = AclNext;
    type Error = AclError;

    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        let (deny_src, deny_port) = (&self.deny_src, &self.deny_port);
        // The prefetching loop, then one bulk enqueue. No allocation, no lock.
        cx.process_packets(frame, |pkt| {
            // ip4-input left the packet at its IPv4 header: offset 0.
            let Ok(ip) = Ipv4Packet::new_checked(pkt.data()) else {
                return Verdict::Drop(AclError::NotIp4);
            };
            let src = u32::from(ip.src_addr());
            if deny_src.iter().any(|&(net, mask)| src & mask == net) {
                return Verdict::Drop(AclError::SrcPrefix);
            }
            let l4 = ip.protocol() == IpProtocol::UDP || ip.protocol() == IpProtocol::TCP;
            // Only the first fragment carries the L4 header.
            if let (true, 0, Some(p)) = (l4, ip.frag_offset(), ip.payload().get(2..4)) {
                if deny_port[u16::from_be_bytes([p[0], p[1]]) as usize] {
                    return Verdict::Drop(AclError::DstPort);
                }
            }
            Verdict::Next(AclNext::Permit)
        });
    }
}

// 64-byte IPv4/UDP (sources in 10.0.0.0/8, destination ports 1-1023) and a little IPv6.
const PROFILE: &str =
    "[mix]\nipv4 = 1.0\nipv6 = 0.1\n[flows]\ncount = 65536\n[sizes]\nfixed = 64\n";

fn parse_prefix(s: &str) -> Result<(u32, u32), String> {
    let (a, l) = s.split_once('/').unwrap_or((s, "32"));
    let (Ok(a), Ok(l @ 0..=32)) = (a.parse::<Ipv4Addr>(), l.parse::<u32>()) else {
        return Err(format!("{s:?}: not a.b.c.d/len"));
    };
    let mask = u32::MAX.checked_shl(32 - l).unwrap_or(0);
    Ok((u32::from(a) & mask, mask))
}

fn parse_ports(s: &str) -> Result<RangeInclusive<u16>, String> {
    let (lo, hi) = s.split_once('-').unwrap_or((s, s));
    match (lo.parse(), hi.parse()) {
        (Ok(lo), Ok(hi)) if lo <= hi => Ok(lo..=hi),
        _ => Err(format!("{s:?}: not a port or lo-hi range")),
    }
}

#[derive(Parser, Debug)]
#[command(about = "l3fwd with a user IPv4 ACL node spliced in before the route lookup")]
struct Cli {
    #[command(flatten)]
    common: CommonArgs,
    /// Deny packets from these source prefixes (`a.b.c.d/len`, comma-separated or repeated).
    #[arg(long, value_delimiter = ',', value_parser = parse_prefix, default_value = "10.0.0.0/12")]
    deny_src: Vec<(u32, u32)>,
    /// Deny UDP/TCP to these destination ports (`p` or `lo-hi`, comma-separated or repeated).
    #[arg(long, value_delimiter = ',', value_parser = parse_ports, default_value = "22,23,53,100-131")]
    deny_dst_port: Vec<RangeInclusive<u16>>,
    /// Generated IPv4 routes (with `--pcap-in`: /24s covering the capture instead).
    #[arg(long, default_value_t = 20_000)]
    route_count: usize,
    /// Generated IPv6 routes.
    #[arg(long, default_value_t = 2_000)]
    route6_count: usize,
}

fn main() -> ExitCode {
    exit_code(run(Cli::parse()))
}

fn run(cli: Cli) -> Result<(), Error> {
    let args = &cli.common;
    let cfg = L3fwdConfig {
        route_count: cli.route_count,
        route6_count: cli.route6_count,
        ..Default::default()
    };
    let ports = args.ports()?;
    let pcap = args.pcap_input()?;
    let app = args.router(cfg, pcap.as_ref())?;
    let input = args.router_input(&ports, pcap, &app, PROFILE, 0)?;

    let mut b = GraphBuilder::new(args.graph_config());
    input.add_to(&mut b, "input", app.entry());
    // The library forwarder, then the user node between ip4-input and ip4-lookup.
    let nodes = app.add_to(&mut b);
    let denied = |p| cli.deny_dst_port.iter().any(|r| r.contains(&p));
    let deny_port = (0..=u16::MAX).map(denied).collect();
    let acl = Ip4Acl {
        deny_src: cli.deny_src,
        deny_port,
    };
    let edge = &nodes.ip4_input_to_lookup;
    edge.insert(&mut b, "ip4-acl", acl, AclNext::Permit);
    args.output(&ports)?.add_to(&mut b, &nodes.output_to_tx.to);
    let mut graph = b.build(args.pool(&ports)?)?;
    args.run("nf_acl", &mut graph, &ports)?;
    Ok(())
}
