//! `l2fwd`: the L2 switch of seed 000 — `l2-learn` (source MAC) → `l2-forward`
//! (destination MAC) → `interface-output`, both lookups two-phase in one shared MAC table.
//!
//! ```text
//! cargo run --release --example l2fwd                                  # 65,536 stations
//! cargo run --release --example l2fwd -- --table-size 16777216 -n 20000000
//! cargo run --release --example l2fwd -- --vector-size 32 --sub-batch 32 --unknown drop
//! ```
//! The table is filled with `--table-size` stations (station `i` on interface `i % ports`)
//! and the traffic's source and destination MACs are drawn from the same stations, so both
//! lookups hit, as in the seed's experiment.

mod common;

use clap::{Parser, ValueEnum};
use common::{add_tx, run_and_report, CommonArgs};
use pktvec::graph::GraphBuilder;
use pktvec::io::generator::Generator;
use pktvec::nodes::apps::l2fwd::{L2fwd, L2fwdConfig};
use pktvec::nodes::l2::UnknownUnicast;
use std::time::Instant;

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Unknown {
    Flood,
    Drop,
}

#[derive(Parser, Debug)]
#[command(about = "L2 switch on a pktvec graph")]
struct Cli {
    #[command(flatten)]
    common: CommonArgs,
    /// Stations in the MAC table (and in the traffic).
    #[arg(long, default_value_t = 65_536)]
    table_size: usize,
    /// Interfaces.
    #[arg(long, default_value_t = 4)]
    ports: u16,
    /// Unknown-unicast policy.
    #[arg(long, value_enum, default_value_t = Unknown::Flood)]
    unknown: Unknown,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let cli = Cli::parse();
    let args = &cli.common;
    let t0 = Instant::now();
    let app = L2fwd::new(L2fwdConfig {
        ports: cli.ports,
        table_size: cli.table_size,
        unknown_unicast: match cli.unknown {
            Unknown::Flood => UnknownUnicast::Flood,
            Unknown::Drop => UnknownUnicast::Drop,
        },
        ..L2fwdConfig::default()
    })?;
    let ports = app.ports();
    if !args.json {
        eprintln!(
            "l2fwd: {} stations, {:.1} MiB table, filled in {:.2} s",
            cli.table_size,
            app.fib().read().memory_bytes() as f64 / (1 << 20) as f64,
            t0.elapsed().as_secs_f64()
        );
    }
    let default = format!(
        "[mix]\nipv4 = 1.0\n[flows]\ncount = {}\n[sizes]\nfixed = 64\n[l2]\nhosts = {}\nports = {}\n",
        cli.table_size.clamp(2, 1 << 20),
        cli.table_size.max(2),
        ports
    );
    let profile = args.profile(&default)?;
    let input = args.input(|| Ok(Generator::builder(profile).build()?))?;
    let mut b = GraphBuilder::new(args.graph_config());
    input.add_to(&mut b, "input", app.entry());
    let nodes = app.add_to(&mut b);
    add_tx(&mut b, &nodes.output_to_tx.to, args)?;
    let mut graph = b.build(args.pool()?)?;
    run_and_report("l2fwd", &mut graph, args)
}
