//! io forwarding between DPDK ports through a pktvec graph: one rx node per port wired to
//! the tx node of the next port (port i → port i+1 mod n), nothing in between. Needs
//! `--features dpdk` (the system's DPDK 22.11). With no arguments it forwards over two
//! `net_null` virtual devices:
//!
//! ```sh
//! cargo run --release --features dpdk --example dpdk_io
//! cargo run --release --features dpdk --example dpdk_io -- -n 2000000 --adopt \
//!     --eal "--no-huge -m 512 --no-pci -l 0 --vdev=net_null0 --vdev=net_null1"
//! ```
//!
//! With rx wired straight to tx, the rx node lends its mbufs raw
//! (`DpdkRx::with_raw_forwarding`): no hand-over to the buffer pool and back, testpmd's io
//! forwarding inside the graph. `--adopt` hands every packet to the pool, as any graph with
//! a node between rx and tx does. At the end it prints the runtime table, checks that the
//! graph's counts balance and that every mbuf is back in the mempool, and fails otherwise.
//! The measurement against testpmd's io loop is `pktvec-bench dpdk-io`.

use clap::Parser;
use pktvec::graph::{GraphBuilder, GraphConfig, InputDrain};
use pktvec::io::dpdk::{
    DpdkRx, DpdkRxNext, DpdkTx, Eal, IoForward, Mempool, Port, PortConfig, DEFAULT_RX_BURST,
};
use std::time::Instant;

#[derive(Parser, Debug)]
#[command(about = "io forwarding between DPDK ports through a pktvec graph")]
struct Cli {
    /// EAL arguments (the ports are its virtual devices)
    #[arg(
        long,
        allow_hyphen_values = true,
        default_value = "--no-huge -m 512 --no-pci -l 0 --file-prefix=pktvec-dpdk-io \
                         --vdev=net_null0 --vdev=net_null1"
    )]
    eal: String,
    /// Packets to forward, in all
    #[arg(long, short = 'n', default_value_t = 10_000_000)]
    packets: u64,
    /// Vector size: the most packets an rx node hands the graph per call
    #[arg(long, default_value_t = 256)]
    vector_size: usize,
    /// Hand every packet to the buffer pool on rx and back on tx, instead of lending the
    /// mbufs raw from rx to tx
    #[arg(long)]
    adopt: bool,
    /// No clock reads around node calls (`GraphConfig::node_cycles` off), as
    /// `pktvec-bench dpdk-io` measures
    #[arg(long)]
    no_node_cycles: bool,
    /// Forward with testpmd's io loop (`IoForward`, port i → port i+1) instead of a
    /// graph: the anchor of `pktvec-bench dpdk-io`, e.g. to count its instructions
    #[arg(long)]
    io_loop: bool,
}

fn main() {
    if let Err(e) = run(Cli::parse()) {
        eprintln!("Error: {e}");
        std::process::exit(1);
    }
}

fn run(cli: Cli) -> Result<(), Box<dyn std::error::Error>> {
    let eal = Eal::init(&cli.eal)?;
    let ids = eal.ports();
    if ids.is_empty() {
        return Err("no DPDK port: add --vdev=... to --eal".into());
    }
    // One mempool for every port: the graph's buffer pool is this mempool's mbufs.
    let mempool = Mempool::new(&eal, 65536, 2048)?;
    let ports = ids
        .iter()
        .map(|&id| Port::start(&eal, id, &mempool, &PortConfig::default()))
        .collect::<Result<Vec<_>, _>>()?;

    if cli.io_loop {
        return io_loop(&cli, &mempool, ports);
    }

    // rx of port i → tx of port i+1. Each rx node stops after its share of the packets;
    // the tx nodes run right after the rx node that filled a vector (one port's mbufs in
    // flight at a time).
    let mut b = GraphBuilder::new(GraphConfig {
        vector_size: cli.vector_size,
        input_drain: InputDrain::WhenFull,
        node_cycles: !cli.no_node_cycles,
        ..GraphConfig::default()
    });
    let per_port = cli.packets.div_ceil(ports.len() as u64);
    for (i, p) in ports.iter().enumerate() {
        let out = &ports[(i + 1) % ports.len()];
        let (rx, tx) = (format!("{}-rx", p.name()), format!("{}-tx", out.name()));
        let node = DpdkRx::new(p, 0)
            .with_raw_forwarding(!cli.adopt)
            .with_limit(per_port);
        b.add(&rx, node)
            .add(&tx, DpdkTx::new(out, 0))
            .set_next(&rx, DpdkRxNext::Out, &tx);
    }
    let mut g = b.build(mempool.buffer_pool()?)?;

    // Forward until every rx node reached its limit, or the ports have been quiet for
    // 100,000 turns (a finite capture is over), then let what is pending leave.
    let start = Instant::now();
    let (mut done, mut idle) = (0u64, 0u32);
    while done < per_port * ports.len() as u64 && idle < 100_000 {
        let n = g.run_once();
        done += n;
        idle = if n == 0 { idle + 1 } else { 0 };
    }
    g.run_until_idle();
    let secs = start.elapsed().as_secs_f64();

    let rt = g.runtime();
    let c = g.conservation();
    let lent: u64 = ports
        .iter()
        .filter_map(|p| g.node::<DpdkRx>(&format!("{}-rx", p.name())).ok())
        .map(DpdkRx::lent)
        .sum();
    let node_cycles: u64 = rt.rows.iter().map(|r| r.cycles).sum();
    println!("{rt}\n\n{}", g.errors());
    for p in &ports {
        println!("port {}: {:?}", p.name(), p.stats());
    }
    println!(
        "dpdk_io: {done} packets in {secs:.3} s: {:.2} Mpps; rx+tx nodes {:.1} cycles/packet",
        done as f64 / secs / 1e6,
        node_cycles as f64 / done.max(1) as f64
    );
    println!("conservation: {c}");
    println!("raw hand-over (rx to tx, no pool): {lent} of {done} packets");

    // The graph gives its buffers back to the mempool when dropped, the ports their rings
    // when closed: then every mbuf must be home.
    drop(g);
    drop(ports);
    if !c.is_balanced() || mempool.available() != mempool.capacity() {
        return Err(format!(
            "lost packets or mbufs: {c}; mempool {} of {} free",
            mempool.available(),
            mempool.capacity()
        )
        .into());
    }
    Ok(())
}

/// `--io-loop`: testpmd's io forwarding (port i → port i+1) until `-n` packets were
/// received, then the same check that every mbuf is back in the mempool.
fn io_loop(
    cli: &Cli,
    mempool: &Mempool,
    ports: Vec<std::sync::Arc<Port>>,
) -> Result<(), Box<dyn std::error::Error>> {
    let mut loops: Vec<IoForward> = (0..ports.len())
        .map(|i| IoForward::new(&ports[i], &ports[(i + 1) % ports.len()], DEFAULT_RX_BURST))
        .collect();
    let start = Instant::now();
    let (mut done, mut idle) = (0u64, 0u32);
    while done < cli.packets && idle < 100_000 {
        let mut n = 0;
        for f in loops.iter_mut() {
            n += f.run_once() as u64;
        }
        done += n;
        idle = if n == 0 { idle + 1 } else { 0 };
    }
    let secs = start.elapsed().as_secs_f64();
    let (sent, dropped): (u64, u64) = loops
        .iter()
        .fold((0, 0), |(s, d), f| (s + f.forwarded(), d + f.dropped()));
    println!(
        "io loop: {done} packets in {secs:.3} s: {:.2} Mpps; {sent} sent, {dropped} dropped",
        done as f64 / secs / 1e6
    );
    drop(loops);
    drop(ports);
    if sent + dropped != done || mempool.available() != mempool.capacity() {
        return Err(format!(
            "lost packets or mbufs: {done} received, {sent} sent, {dropped} dropped; \
             mempool {} of {} free",
            mempool.available(),
            mempool.capacity()
        )
        .into());
    }
    Ok(())
}
