//! `cryptofwd`: L2 forwarding with authenticated encryption of every payload, like DPDK's
//! `l2fwd-crypto`: the compute-bound contrast to the lookup-bound forwarders.
//!
//! ```text
//! cargo run --release --example cryptofwd                        # built-in traffic, AES-128-GCM
//! cargo run --release --example cryptofwd -- --cipher chacha20-poly1305 -n 5000000
//! cargo run --release --example cryptofwd -- --verify --pcap-out /tmp/enc.pcap -n 1000
//! ```
//! Graph: `input → crypto (encrypt) [→ verify (decrypt)] → l2-xconnect (port 0 ↔ 1) →
//! interface-output → tx`.

mod common;

use clap::{Parser, ValueEnum};
use common::{exit_code, CommonArgs, Error, Ports};
use pktvec::graph::{Graph, GraphBuilder};
use pktvec::io::generator::Generator;
use pktvec::nodes::apps::cryptofwd::{Cryptofwd, CryptofwdConfig};
use pktvec::nodes::crypto::Cipher;
use std::process::ExitCode;

const PROFILE: &str = r#"
# 64-byte IPv4/UDP frames, 1024 flows.
[mix]
ipv4 = 1.0
[flows]
count = 1024
[sizes]
fixed = 64
"#;

#[derive(Clone, Copy, Debug, ValueEnum)]
enum CipherArg {
    Aes128Gcm,
    Aes256Gcm,
    Chacha20Poly1305,
}

#[derive(Parser, Debug, Clone)]
#[command(about = "L2 forwarding with AEAD encryption of every payload (pktvec)")]
struct Cli {
    #[command(flatten)]
    common: CommonArgs,
    /// AEAD algorithm.
    #[arg(long, value_enum, default_value_t = CipherArg::Aes128Gcm)]
    cipher: CipherArg,
    /// Decrypt again after encrypting (checks every tag; doubles the work).
    #[arg(long)]
    verify: bool,
}

fn main() -> ExitCode {
    exit_code(run(Cli::parse()))
}

fn run(cli: Cli) -> Result<(), Error> {
    let c = cli.clone();
    cli.common
        .run_app("cryptofwd", move |ports, w| graph(&c, ports, w))
}

/// The graph for `worker` (its generated traffic seeded by the worker's index).
fn graph(cli: &Cli, ports: &Option<Ports>, worker: usize) -> Result<Graph, Error> {
    let args = &cli.common;
    let app = Cryptofwd::new(CryptofwdConfig {
        cipher: match cli.cipher {
            CipherArg::Aes128Gcm => Cipher::Aes128Gcm,
            CipherArg::Aes256Gcm => Cipher::Aes256Gcm,
            CipherArg::Chacha20Poly1305 => Cipher::ChaCha20Poly1305,
        },
        verify: cli.verify,
        ..CryptofwdConfig::default()
    })?;
    let mut profile = args.profile(PROFILE)?;
    profile.seed += worker as u64;
    let pcap = args.pcap_input()?;
    let input = args.input(ports, pcap, || Ok(Generator::builder(profile).build()?))?;

    let mut b = GraphBuilder::new(args.graph_config());
    input.add_to(&mut b, "input", app.entry());
    let nodes = app.add_to(&mut b)?;
    args.output(ports)?.add_to(&mut b, &nodes.output_to_tx.to);
    Ok(b.build(args.pool(ports)?)?)
}
