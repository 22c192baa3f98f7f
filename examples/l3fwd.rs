//! `l3fwd`: an IPv4 and IPv6 router, VPP's graph: `ethernet-input → ip4-input →
//! ip4-lookup → ip4-rewrite → interface-output` (and the same for IPv6; ARP answered).
//!
//! ```text
//! cargo run --release --example l3fwd                                    # 20,000 generated IPv4 routes
//! cargo run --release --example l3fwd -- --routes ../shared/data/routes/tier1-fulltable-ipv4.txt.xz
//! cargo run --release --example l3fwd -- --route-count 1000000 -n 20000000 --json
//! cargo run --release --example l3fwd -- --pcap-in in.pcap --pcap-out out.pcap
//! ```
//! A route's next hop selects the output adjacency (`next hop % ports`); adjacency `i`
//! sends out of interface `i` with MACs 02:aa:..:i → 02:bb:..:i. Generated routes are
//! random prefixes a real capture misses: with `--pcap-in` and no `--routes`, the routes
//! are /24s covering the capture's destinations.

mod common;

use clap::{parser::ValueSource, CommandFactory, FromArgMatches, Parser};
use common::{exit_code, CommonArgs, Error, Ports};
use pktvec::graph::{Graph, GraphBuilder};
use pktvec::nodes::apps::l3fwd::{L3fwd, L3fwdConfig};
use pktvec::nodes::ip4::{Ip4InputConfig, Policy};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

const PROFILE: &str = r#"
# 64-byte IPv4/UDP to destinations inside the routes (98%).
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

#[derive(Parser, Debug, Clone)]
#[command(about = "IPv4/IPv6 router on a pktvec graph")]
struct Cli {
    #[command(flatten)]
    common: CommonArgs,
    /// IPv4 routes file (`prefix [next-hop]` per line; .xz read through xzcat).
    #[arg(long)]
    routes: Option<PathBuf>,
    /// Generated IPv4 routes when no file is given (real BGP length distribution).
    #[arg(long, default_value_t = 20_000)]
    route_count: usize,
    /// IPv6 routes file.
    #[arg(long)]
    routes6: Option<PathBuf>,
    /// Generated IPv6 /48–/64 routes when no file is given.
    #[arg(long, default_value_t = 2_000)]
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

fn main() -> ExitCode {
    let matches = Cli::command().get_matches();
    // ip4-lookup keeps its own sub-batch default (what the compressed LPM's staged lookup
    // wants) unless --sub-batch is given, which then sets every lookup's.
    let sub_batch_given = matches.value_source("sub_batch") == Some(ValueSource::CommandLine);
    exit_code(
        Cli::from_arg_matches(&matches)
            .map_err(Into::into)
            .and_then(|cli| run(cli, sub_batch_given)),
    )
}

fn run(cli: Cli, sub_batch_given: bool) -> Result<(), Error> {
    // one router for every worker: its FIBs are shared, a route change reaches them all
    let pcap = cli.common.pcap_input()?;
    let app = Arc::new(
        cli.common
            .router(config(&cli, sub_batch_given), pcap.as_ref())?,
    );
    let c = cli.clone();
    cli.common
        .run_app("l3fwd", move |ports, w| graph(&c, &app, ports, w))
}

/// The router's settings from the command line.
fn config(cli: &Cli, sub_batch_given: bool) -> L3fwdConfig {
    let policy = |drop: bool| if drop { Policy::Drop } else { Policy::Accept };
    L3fwdConfig {
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
        ip4_lookup_sub_batch: match sub_batch_given {
            true => None,
            false => L3fwdConfig::default().ip4_lookup_sub_batch,
        },
        ..L3fwdConfig::default()
    }
}

/// The graph for `worker` (its generated traffic seeded by the worker's index).
fn graph(cli: &Cli, app: &L3fwd, ports: &Option<Ports>, worker: usize) -> Result<Graph, Error> {
    let args = &cli.common;
    let pcap = args.pcap_input()?;
    let input = args.router_input(ports, pcap, app, PROFILE, worker)?;

    let mut b = GraphBuilder::new(args.graph_config());
    input.add_to(&mut b, "input", app.entry());
    let nodes = app.add_to(&mut b);
    args.output(ports)?.add_to(&mut b, &nodes.output_to_tx.to);
    Ok(b.build(args.pool(ports)?)?)
}
