//! `cryptofwd`: L2 forwarding with authenticated encryption of every payload, like DPDK's
//! `l2fwd-crypto` — the compute-bound contrast to the lookup-bound forwarders.
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
use common::{add_tx, run_and_report, CommonArgs};
use pktvec::graph::GraphBuilder;
use pktvec::io::generator::Generator;
use pktvec::nodes::crypto::{Cipher, CryptoConfig, CryptoNext, CryptoNode, Direction};
use pktvec::nodes::output::{InterfaceOutput, OutputNext};
use pktvec::nodes::xconnect::XConnect;

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

#[derive(Parser, Debug)]
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

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let cli = Cli::parse();
    let args = &cli.common;
    let (cipher, key) = match cli.cipher {
        CipherArg::Aes128Gcm => (Cipher::Aes128Gcm, vec![0x42; 16]),
        CipherArg::Aes256Gcm => (Cipher::Aes256Gcm, vec![0x42; 32]),
        CipherArg::Chacha20Poly1305 => (Cipher::ChaCha20Poly1305, vec![0x42; 32]),
    };
    let cfg = CryptoConfig {
        cipher,
        key,
        salt: *b"pktv",
        clear_header: 14,
    };
    let profile = args.profile(PROFILE)?;
    let input = args.input(|| Ok(Generator::builder(profile).build()?))?;

    let mut b = GraphBuilder::new(args.graph_config());
    input.add_to(&mut b, "input", "crypto");
    b.add("crypto", CryptoNode::new(cfg.clone(), Direction::Encrypt)?)
        .set_next("crypto", CryptoNext::Out, "l2-xconnect");
    if cli.verify {
        b.add("verify", CryptoNode::new(cfg, Direction::Decrypt)?)
            .set_next("crypto", CryptoNext::Out, "verify")
            .set_next("verify", CryptoNext::Out, "l2-xconnect");
    }
    b.add("l2-xconnect", XConnect::pairs(2))
        .add("interface-output", InterfaceOutput::new(2))
        .set_next("interface-output", OutputNext::Tx, "tx");
    add_tx(&mut b, "tx", args)?;
    let mut graph = b.build(args.pool()?)?;
    run_and_report("cryptofwd", &mut graph, args)
}
