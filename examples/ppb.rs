//! The path-based packet batcher in front of l3fwd (IPv4 + IPv6): the batcher parses each
//! packet, queues it by path and hands the graph whole vectors of one path, starting IPv4
//! and IPv6 vectors directly at `ip4-input` / `ip6-input`. Prints the runtime table, the
//! batcher's counters and the conservation check.
//!
//! ```sh
//! cargo run --release --example ppb                                  # alternating IPv4/IPv6
//! cargo run --release --example ppb -- --traffic realistic --batch 128 -n 2000000
//! cargo run --release --example ppb -- --batch 0                     # batcher off
//! ```
//! The measurement (off vs on, by traffic, and cachegrind's misses) is
//! `cargo run --release -p pktvec-bench -- batcher`.

use clap::{Parser, ValueEnum};
use pktvec::batcher::{Batcher, BatcherConfig, BatcherNext, ReplaySource};
use pktvec::graph::builtin::NullSink;
use pktvec::graph::{clock, GraphBuilder, GraphConfig};
use pktvec::io::generator::Generator;
use pktvec::io::profile::TrafficProfile;
use pktvec::nodes::apps::l3fwd::{L3fwd, L3fwdConfig};
use pktvec::packet::{BufferPool, PoolConfig};

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Traffic {
    /// 64-byte IPv4 and IPv6 strictly alternating (seed 001's worst case).
    Alternating,
    /// A realistic mix: IPv4 70%, IPv6 25%, ARP, VLAN, unknown EtherTypes, malformed.
    Realistic,
    /// 64-byte IPv4 only: one path.
    Single,
}

#[derive(Parser, Debug)]
#[command(about = "l3fwd behind the path-based packet batcher")]
struct Cli {
    /// Traffic.
    #[arg(long, value_enum, default_value_t = Traffic::Alternating)]
    traffic: Traffic,
    /// Batch size of the batcher; 0 = batcher off (packets pass straight through).
    #[arg(long, default_value_t = 128)]
    batch: usize,
    /// Packets.
    #[arg(short = 'n', long, default_value_t = 1_000_000)]
    packets: u64,
    /// IPv4 routes (generated).
    #[arg(long, default_value_t = 100_000)]
    route_count: usize,
    /// IPv6 routes (generated).
    #[arg(long, default_value_t = 20_000)]
    route6_count: usize,
    /// Distinct packets generated and replayed.
    #[arg(long, default_value_t = 65_536)]
    pregen: usize,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let cli = Cli::parse();
    let app = L3fwd::new(L3fwdConfig {
        route_count: cli.route_count,
        route6_count: cli.route6_count,
        ..L3fwdConfig::default()
    })?;
    let profile = match cli.traffic {
        Traffic::Alternating => "order = \"alternating\"\n[mix]\nipv4 = 1.0\nipv6 = 1.0\n[sizes]\nfixed = 64\n\
                                 [destinations]\nipv4_hit_rate = 1.0\nipv6_hit_rate = 1.0",
        Traffic::Realistic => "sizes = \"imix\"\n[mix]\nipv4 = 70.0\nipv6 = 25.0\narp = 1.0\n\
                               unknown_ethertype = 1.0\nmalformed = 1.0\nvlan = 0.02\n[flows]\ncount = 10000",
        Traffic::Single => "[mix]\nipv4 = 1.0\n[sizes]\nfixed = 64\n[destinations]\nipv4_hit_rate = 1.0",
    };
    let mut gen = Generator::builder(TrafficProfile::from_toml(profile)?)
        .ipv4_prefixes(app.routes4().iter().map(|r| (r.addr, r.len)).collect())
        .ipv6_prefixes(app.routes6().iter().map(|r| (r.addr, r.len)).collect())
        .build()?;
    let packets: Vec<Vec<u8>> = (0..cli.pregen.max(1))
        .map(|_| gen.next_packet().1.to_vec())
        .collect();

    // The batcher is the graph's input node; its Ip4/Ip6 arcs skip ethernet-input.
    let src = ReplaySource::new(packets)
        .looping(true)
        .with_limit(cli.packets);
    let cfg = BatcherConfig {
        enabled: cli.batch > 0,
        batch_size: cli.batch.max(1),
        ..BatcherConfig::default()
    };
    let mut b = GraphBuilder::new(GraphConfig::default());
    b.add("batcher", Batcher::new(src, cfg));
    let nodes = app.add_to(&mut b);
    b.set_next("batcher", BatcherNext::Ip4, &nodes.ethernet_to_ip4.to)
        .set_next("batcher", BatcherNext::Ip6, &nodes.ethernet_to_ip6.to);
    b.add(&nodes.output_to_tx.to, NullSink);
    let mut g = b.build(BufferPool::new(PoolConfig::default())?)?;

    let c0 = clock::now();
    let mut done = 0u64;
    loop {
        let n = g.run_once();
        done += n;
        if n == 0 && g.conservation().in_flight == 0 {
            break;
        }
    }
    let cycles = clock::now() - c0;

    println!("{}\n\n{}", g.runtime(), g.errors());
    let st = g
        .node::<Batcher<ReplaySource>>("batcher")
        .map_err(|e| e.to_string())?
        .stats();
    println!(
        "batcher {}: held time p50 {:.1} us, p99 {:.1} us, max {:.1} us; dropped (queue full) {}",
        if cli.batch > 0 { "on" } else { "off" },
        st.latency_p50_ns / 1e3,
        st.latency_p99_ns / 1e3,
        st.latency_max_ns / 1e3,
        st.dropped_full
    );
    for (i, q) in st.queues.iter().enumerate().filter(|(_, q)| q.vectors > 0) {
        println!(
            "  queue {i}: paths {:?}, {} packets in {} vectors (mean fill {:.2} of the batch), \
             {} handed over whole, {} deadline flushes",
            q.paths, q.packets, q.vectors, q.mean_fill, q.passed_through, q.deadline_flushes
        );
    }
    let c = g.conservation();
    println!(
        "ppb: {done} packets, {:.1} cycles/packet end to end (batcher included)",
        cycles as f64 / done.max(1) as f64
    );
    println!("conservation: {c}");
    if !c.is_balanced() || c.buffers_in_use != 0 {
        return Err("packets were lost".into());
    }
    Ok(())
}
