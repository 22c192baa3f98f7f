//! `l3fwd`: an IPv4 and IPv6 router, VPP's graph: `ethernet-input → ip4-input →
//! ip4-lookup → ip4-rewrite → interface-output` (and the same for IPv6; ARP answered).
//!
//! ```text
//! cargo run --release --example l3fwd                                    # 500k generated IPv4 routes
//! cargo run --release --example l3fwd -- --routes ../shared/data/routes/tier1-fulltable-ipv4.txt.xz
//! cargo run --release --example l3fwd -- --route-count 1000000 --vector-size 64 --sub-batch 8 --json
//! cargo run --release --example l3fwd -- --pcap-in in.pcap --pcap-out out.pcap -n 100000
//! ```
//! A route's next hop selects the output adjacency (`next hop % ports`); adjacency `i`
//! sends out of interface `i` with MACs 02:aa:..:i → 02:bb:..:i.

mod common;

use clap::Parser;
use common::{add_tx, run_and_report, CommonArgs};
use pktvec::graph::GraphBuilder;
use pktvec::io::generator::Generator;
use pktvec::lookup::ipv4::{Lpm4, Lpm4Config};
use pktvec::lookup::ipv6::Lpm6;
use pktvec::lookup::routes;
use pktvec::nodes::arp::ArpInput;
use pktvec::nodes::ethernet::{EthernetInput, EthernetNext};
use pktvec::nodes::ip4::Ip4Rewrite;
use pktvec::nodes::ip4::{Adjacency, Ip4Input, Ip4InputConfig, Policy};
use pktvec::nodes::ip6::{Ip6Input, Ip6Rewrite};
use pktvec::nodes::lookup::{Ip4Lookup, Ip6Lookup};
use pktvec::nodes::output::{InterfaceOutput, OutputNext};
use std::net::Ipv4Addr;
use std::sync::Arc;
use std::time::Instant;

const PROFILE: &str = r#"
# 64-byte IPv4/UDP (and a little IPv6) to destinations inside the routes (98%).
[mix]
ipv4 = 1.0
[flows]
count = 65536
[sizes]
fixed = 64
[destinations]
ipv4_hit_rate = 0.98
ipv6_hit_rate = 0.98
"#;

#[derive(Parser, Debug)]
#[command(about = "IPv4/IPv6 router on a pktvec graph")]
struct Cli {
    #[command(flatten)]
    common: CommonArgs,
    /// IPv4 routes file (`prefix [next-hop]` per line; .xz read through xzcat).
    #[arg(long)]
    routes: Option<std::path::PathBuf>,
    /// Generated IPv4 routes when no file is given (real BGP length distribution).
    #[arg(long, default_value_t = 500_000)]
    route_count: usize,
    /// IPv6 routes file.
    #[arg(long)]
    routes6: Option<std::path::PathBuf>,
    /// Generated IPv6 /48–/64 routes when no file is given.
    #[arg(long, default_value_t = 200_000)]
    route6_count: usize,
    /// Output interfaces (adjacencies).
    #[arg(long, default_value_t = 4)]
    ports: u16,
    /// Drop IPv4 packets with options.
    #[arg(long)]
    drop_options: bool,
    /// Drop IPv4 fragments.
    #[arg(long)]
    drop_fragments: bool,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let cli = Cli::parse();
    let args = &cli.common;
    let ports = cli.ports.max(1);
    let t0 = Instant::now();
    let mut r4 = match &cli.routes {
        Some(p) => routes::load_ipv4_file(p)?,
        None => routes::generate_ipv4(cli.route_count, 1),
    };
    let mut r6 = match &cli.routes6 {
        Some(p) => routes::load_ipv6_file(p)?,
        None => routes::generate_ipv6(cli.route6_count, 2),
    };
    for r in r4.iter_mut() {
        r.next_hop %= ports as u32;
    }
    for r in r6.iter_mut() {
        r.next_hop %= ports as u32;
    }
    let fib4 = Arc::new(Lpm4::from_routes(Lpm4Config::default(), &r4)?);
    let fib6 = Arc::new(Lpm6::from_routes(
        r6.iter().map(|r| (r.addr, r.len, r.next_hop)),
    )?);
    if !args.json {
        eprintln!(
            "l3fwd: {} IPv4 routes ({:.1} MiB), {} IPv6 routes, built in {:.2} s",
            r4.len(),
            fib4.memory_bytes() as f64 / (1 << 20) as f64,
            r6.len(),
            t0.elapsed().as_secs_f64()
        );
    }
    let adjs: Vec<Adjacency> = (0..ports)
        .map(|i| Adjacency {
            tx_if: i,
            src_mac: [2, 0xaa, 0, 0, (i >> 8) as u8, i as u8].into(),
            dst_mac: [2, 0xbb, 0, 0, (i >> 8) as u8, i as u8].into(),
        })
        .collect();
    let profile = args.profile(PROFILE)?;
    let input = args.input(|| {
        Ok(Generator::builder(profile)
            .ipv4_prefixes(r4.iter().map(|r| (r.addr, r.len)).collect())
            .ipv6_prefixes(r6.iter().map(|r| (r.addr, r.len)).collect())
            .build()?)
    })?;

    let mut b = GraphBuilder::new(args.graph_config());
    input.add_to(&mut b, "input", "ethernet-input");
    b.add("ethernet-input", EthernetInput)
        .add(
            "ip4-input",
            Ip4Input::new(Ip4InputConfig {
                verify_checksum: true,
                options: if cli.drop_options {
                    Policy::Drop
                } else {
                    Policy::Accept
                },
                fragments: if cli.drop_fragments {
                    Policy::Drop
                } else {
                    Policy::Accept
                },
            }),
        )
        .add("ip4-lookup", Ip4Lookup::new(fib4))
        .add("ip4-rewrite", Ip4Rewrite::new(adjs.clone()))
        .add("ip6-input", Ip6Input)
        .add("ip6-lookup", Ip6Lookup::new(fib6))
        .add("ip6-rewrite", Ip6Rewrite::new(adjs))
        .add(
            "arp-input",
            ArpInput::new(vec![(
                Ipv4Addr::new(192, 0, 2, 1),
                [2, 0xaa, 0, 0, 0, 0].into(),
            )]),
        )
        .add("interface-output", InterfaceOutput::new(ports as usize))
        .set_next("ethernet-input", EthernetNext::Ndn, "drop")
        .set_next("interface-output", OutputNext::Tx, "tx");
    add_tx(&mut b, "tx", args)?;
    let mut graph = b.build(args.pool()?)?;
    run_and_report("l3fwd", &mut graph, args)
}
