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

use clap::{parser::ValueSource, CommandFactory, FromArgMatches, Parser};
use common::{add_tx, run_and_report, CommonArgs};
use pktvec::graph::GraphBuilder;
use pktvec::io::generator::Generator;
use pktvec::nodes::apps::l3fwd::{L3fwd, L3fwdConfig};
use pktvec::nodes::ip4::{Ip4InputConfig, Policy};
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
    let matches = Cli::command().get_matches();
    let cli = Cli::from_arg_matches(&matches)?;
    let args = &cli.common;
    // ip4-lookup keeps its own sub-batch default (64, what the compressed LPM's staged
    // lookup wants) unless --sub-batch is given, which then sets every lookup's.
    let sub_batch_given = matches.value_source("sub_batch") == Some(ValueSource::CommandLine);
    let t0 = Instant::now();
    let policy = |drop: bool| if drop { Policy::Drop } else { Policy::Accept };
    let app = L3fwd::new(L3fwdConfig {
        ports: cli.ports,
        routes: cli.routes.clone(),
        route_count: cli.route_count,
        routes6: cli.routes6.clone(),
        route6_count: cli.route6_count,
        ip4: Ip4InputConfig {
            verify_checksum: true,
            options: policy(cli.drop_options),
            fragments: policy(cli.drop_fragments),
        },
        ip4_lookup_sub_batch: if sub_batch_given {
            None
        } else {
            L3fwdConfig::default().ip4_lookup_sub_batch
        },
        ..L3fwdConfig::default()
    })?;
    if !args.json {
        eprintln!(
            "l3fwd: {} IPv4 routes ({:.1} MiB), {} IPv6 routes, built in {:.2} s",
            app.routes4().len(),
            app.fib4().memory_bytes() as f64 / (1 << 20) as f64,
            app.routes6().len(),
            t0.elapsed().as_secs_f64()
        );
    }
    let profile = args.profile(PROFILE)?;
    let input = args.input(|| {
        Ok(Generator::builder(profile)
            .ipv4_prefixes(app.routes4().iter().map(|r| (r.addr, r.len)).collect())
            .ipv6_prefixes(app.routes6().iter().map(|r| (r.addr, r.len)).collect())
            .build()?)
    })?;

    let mut b = GraphBuilder::new(args.graph_config());
    input.add_to(&mut b, "input", app.entry());
    let nodes = app.add_to(&mut b);
    add_tx(&mut b, &nodes.output_to_tx.to, args)?;
    let mut graph = b.build(args.pool()?)?;
    run_and_report("l3fwd", &mut graph, args)
}
