//! `ndnfwd`: an NDN forwarder — `ethernet-input → ndn-lookup → interface-output`: longest
//! name-prefix match of Interests in a hash FIB (seed 000's NDN application).
//!
//! ```text
//! cargo run --release --example ndnfwd                      # 100k generated name prefixes
//! cargo run --release --example ndnfwd -- --names ../shared/data/names/hsts-preload-domains.tsv.xz
//! ```
//! FIB prefixes are domain names turned into NDN names (`www.example.com` →
//! `/com/example/www`), each routed to interface `i % ports`. Interests ask for a prefix plus
//! one or two more components, so every lookup first misses on the full name, then hits a
//! shorter prefix (the longest-prefix walk).

mod common;

use clap::Parser;
use common::{add_tx, run_and_report, CommonArgs};
use pktvec::graph::GraphBuilder;
use pktvec::io::generator::Generator;
use pktvec::nodes::ethernet::{EthernetInput, EthernetNext};
use pktvec::nodes::ndn::{NdnFib, NdnLookup};
use pktvec::nodes::output::{InterfaceOutput, OutputNext};
use std::time::Instant;

#[derive(Parser, Debug)]
#[command(about = "NDN name-prefix forwarder on a pktvec graph")]
struct Cli {
    #[command(flatten)]
    common: CommonArgs,
    /// Domain list (`domain[<TAB>…]` per line, .xz read through xzcat); generated names if absent.
    #[arg(long)]
    names: Option<std::path::PathBuf>,
    /// Generated name prefixes when no file is given.
    #[arg(long, default_value_t = 100_000)]
    name_count: usize,
    /// Output interfaces.
    #[arg(long, default_value_t = 4)]
    ports: u32,
}

fn domain_to_name(d: &str) -> String {
    let mut s = String::new();
    for label in d.trim().trim_end_matches('.').rsplit('.') {
        s.push('/');
        s.push_str(label);
    }
    s
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let cli = Cli::parse();
    let args = &cli.common;
    let t0 = Instant::now();
    let prefixes: Vec<String> = match &cli.names {
        Some(p) => pktvec::lookup::routes::read_text_file(p)?
            .lines()
            .filter_map(|l| l.split('\t').next())
            .filter(|d| !d.is_empty() && !d.starts_with('#'))
            .map(domain_to_name)
            .collect(),
        None => (0..cli.name_count)
            .map(|i| format!("/tld{}/site{}/area{}", i % 97, i, i % 7))
            .collect(),
    };
    let fib = NdnFib::from_names(
        prefixes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.as_str(), i as u32 % cli.ports.max(1))),
        prefixes.len().max(1),
    )?;
    if !args.json {
        eprintln!(
            "ndnfwd: {} name prefixes in the FIB, built in {:.2} s",
            fib.len(),
            t0.elapsed().as_secs_f64()
        );
    }
    let names: Vec<String> = prefixes
        .iter()
        .enumerate()
        .map(|(i, p)| format!("{p}/obj{}/seg{}", i % 13, i % 3))
        .collect();
    let flows = names.len().clamp(1, 1 << 16);
    let profile = args.profile(&format!(
        "[mix]\nipv4 = 0.0\nndn = 1.0\n[flows]\ncount = {flows}\n[sizes]\nfixed = 64\n"
    ))?;
    let input = args.input(|| Ok(Generator::builder(profile).names(names).build()?))?;
    let mut b = GraphBuilder::new(args.graph_config());
    input.add_to(&mut b, "input", "ethernet-input");
    b.add("ethernet-input", EthernetInput)
        .add("ndn-lookup", NdnLookup::new(fib))
        .add(
            "interface-output",
            InterfaceOutput::new(cli.ports.max(1) as usize),
        )
        .set_next("ethernet-input", EthernetNext::Ip4, "drop")
        .set_next("ethernet-input", EthernetNext::Ip6, "drop")
        .set_next("ethernet-input", EthernetNext::Arp, "drop")
        .set_next("interface-output", OutputNext::Tx, "tx");
    add_tx(&mut b, "tx", args)?;
    let mut graph = b.build(args.pool()?)?;
    run_and_report("ndnfwd", &mut graph, args)
}
