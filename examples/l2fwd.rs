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
use pktvec::nodes::l2::{L2Fib, L2Forward, L2Learn, UnknownUnicast};
use pktvec::nodes::output::{InterfaceOutput, OutputNext};
use pktvec::packet::wire::MacAddr;
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
    let ports = cli.ports.max(2);
    let t0 = Instant::now();
    let fib = L2Fib::with_capacity(cli.table_size.max(2))?;
    {
        let mut t = fib.write();
        for i in 0..cli.table_size as u32 {
            let b = i.to_be_bytes();
            t.insert(
                MacAddr([0x02, 0x00, b[0], b[1], b[2], b[3]]),
                i % ports as u32,
            )?;
        }
    }
    if !args.json {
        eprintln!(
            "l2fwd: {} stations, {:.1} MiB table, filled in {:.2} s",
            cli.table_size,
            fib.read().memory_bytes() as f64 / (1 << 20) as f64,
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
    input.add_to(&mut b, "input", "l2-learn");
    let policy = match cli.unknown {
        Unknown::Flood => UnknownUnicast::Flood,
        Unknown::Drop => UnknownUnicast::Drop,
    };
    b.add("l2-learn", L2Learn::new(fib.clone()))
        .add("l2-forward", L2Forward::new(fib, ports, policy))
        .add("interface-output", InterfaceOutput::new(ports as usize))
        .set_next("interface-output", OutputNext::Tx, "tx");
    add_tx(&mut b, "tx", args)?;
    let mut graph = b.build(args.pool()?)?;
    run_and_report("l2fwd", &mut graph, args)
}
