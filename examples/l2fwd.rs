//! `l2fwd`: an L2 switch, `l2-learn` (source MAC) → `l2-forward` (destination MAC) →
//! `interface-output`, both lookups two-phase in one shared MAC table.
//!
//! ```text
//! cargo run --release --example l2fwd                                  # 4,096 stations
//! cargo run --release --example l2fwd -- --table-size 16777216 -n 20000000
//! cargo run --release --example l2fwd -- --pcap-in in.pcap --unknown drop --pcap-out out.pcap
//! ```
//! The table is filled with `--table-size` stations (station `i` on interface `i % ports`)
//! and the generated traffic's MACs are drawn from the same stations, so both lookups hit.
//! A capture's stations are unknown: they are learned, and unknown destinations flood
//! (or are dropped with `--unknown drop`).

mod common;

use clap::{Parser, ValueEnum};
use common::{exit_code, CommonArgs, Error, Ports};
use pktvec::graph::{Graph, GraphBuilder};
use pktvec::io::generator::Generator;
use pktvec::nodes::apps::l2fwd::{L2fwd, L2fwdConfig};
use pktvec::nodes::l2::UnknownUnicast;
use std::process::ExitCode;
use std::sync::Arc;

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Unknown {
    Flood,
    Drop,
}

#[derive(Parser, Debug, Clone)]
#[command(about = "L2 switch on a pktvec graph")]
struct Cli {
    #[command(flatten)]
    common: CommonArgs,
    /// Stations in the MAC table (and in the generated traffic).
    #[arg(long, default_value_t = 4096)]
    table_size: usize,
    /// Interfaces.
    #[arg(long, default_value_t = 4)]
    ports: u16,
    /// Unknown-unicast policy.
    #[arg(long, value_enum, default_value_t = Unknown::Flood)]
    unknown: Unknown,
}

fn main() -> ExitCode {
    exit_code(run(Cli::parse()))
}

fn run(cli: Cli) -> Result<(), Error> {
    // one switch for every worker: one MAC table, learned into and read by all of them
    let app = Arc::new(L2fwd::new(L2fwdConfig {
        ports: cli.ports,
        table_size: cli.table_size,
        unknown_unicast: match cli.unknown {
            Unknown::Flood => UnknownUnicast::Flood,
            Unknown::Drop => UnknownUnicast::Drop,
        },
        ..L2fwdConfig::default()
    })?);
    let c = cli.clone();
    cli.common
        .run_app("l2fwd", move |ports, w| graph(&c, &app, ports, w))
}

/// The switch's graph for `worker` (its traffic seeded by the worker's index).
fn graph(cli: &Cli, app: &L2fwd, ports: &Option<Ports>, worker: usize) -> Result<Graph, Error> {
    let args = &cli.common;
    let default = format!(
        "[mix]\nipv4 = 1.0\n[flows]\ncount = {}\n[sizes]\nfixed = 64\n[l2]\nhosts = {}\nports = {}\n",
        cli.table_size.clamp(2, 1 << 20),
        cli.table_size.max(2),
        app.ports()
    );
    let mut profile = args.profile(&default)?;
    profile.seed += worker as u64;
    let pcap = args.pcap_input()?;
    let input = args.input(ports, pcap, || Ok(Generator::builder(profile).build()?))?;

    let mut b = GraphBuilder::new(args.graph_config());
    input.add_to(&mut b, "input", app.entry());
    let nodes = app.add_to(&mut b);
    args.output(ports)?.add_to(&mut b, &nodes.output_to_tx.to);
    Ok(b.build(args.pool(ports)?)?)
}
