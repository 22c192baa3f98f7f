//! `ndnfwd`: an NDN forwarder, `ethernet-input → ndn-lookup → interface-output`: longest
//! name-prefix match of Interests in a hash FIB.
//!
//! ```text
//! cargo run --release --example ndnfwd                      # 20,000 generated name prefixes
//! cargo run --release --example ndnfwd -- --names ../shared/data/names/hsts-preload-domains.tsv.xz
//! ```
//! FIB prefixes are domain names turned into NDN names (`www.example.com` →
//! `/com/example/www`), each routed to interface `i % ports`. Interests ask for a prefix plus
//! one or two more components, so every lookup first misses on the full name, then hits a
//! shorter prefix (the longest-prefix walk).

mod common;

use clap::Parser;
use common::{exit_code, CommonArgs, Error, Ports};
use pktvec::graph::{Graph, GraphBuilder};
use pktvec::io::generator::Generator;
use pktvec::nodes::apps::ndnfwd::{Ndnfwd, NdnfwdConfig};
use std::process::ExitCode;
use std::sync::Arc;

#[derive(Parser, Debug, Clone)]
#[command(about = "NDN name-prefix forwarder on a pktvec graph")]
struct Cli {
    #[command(flatten)]
    common: CommonArgs,
    /// Domain list (`domain[<TAB>…]` per line, .xz read through xzcat); generated names if absent.
    #[arg(long)]
    names: Option<std::path::PathBuf>,
    /// Generated name prefixes when no file is given.
    #[arg(long, default_value_t = 20_000)]
    name_count: usize,
    /// Output interfaces.
    #[arg(long, default_value_t = 4)]
    ports: u32,
}

fn main() -> ExitCode {
    exit_code(run(Cli::parse()))
}

fn run(cli: Cli) -> Result<(), Error> {
    // one forwarder for every worker: one name table they all read
    let app = Arc::new(Ndnfwd::new(NdnfwdConfig {
        ports: cli.ports,
        names: cli.names.clone(),
        name_count: cli.name_count,
        ..NdnfwdConfig::default()
    })?);
    let c = cli.clone();
    cli.common
        .run_app("ndnfwd", move |ports, w| graph(&c, &app, ports, w))
}

/// The graph for `worker` (its generated traffic seeded by the worker's index).
fn graph(cli: &Cli, app: &Ndnfwd, ports: &Option<Ports>, worker: usize) -> Result<Graph, Error> {
    let args = &cli.common;
    let names = app.interest_names();
    let flows = names.len().clamp(1, 1 << 16);
    let mut profile = args.profile(&format!(
        "[mix]\nipv4 = 0.0\nndn = 1.0\n[flows]\ncount = {flows}\n[sizes]\nfixed = 64\n"
    ))?;
    profile.seed += worker as u64;
    let pcap = args.pcap_input()?;
    let input = args.input(ports, pcap, || {
        Ok(Generator::builder(profile).names(names).build()?)
    })?;

    let mut b = GraphBuilder::new(args.graph_config());
    input.add_to(&mut b, "input", app.entry());
    let nodes = app.add_to(&mut b);
    args.output(ports)?.add_to(&mut b, &nodes.output_to_tx.to);
    Ok(b.build(args.pool(ports)?)?)
}
