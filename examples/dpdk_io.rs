//! DPDK io forwarding through a pktvec graph (rx node → tx node, nothing in between): the
//! cost per packet of our rx and tx nodes, to set against `dpdk-testpmd --forward-mode=io`
//! on the same virtual devices. Needs `--features dpdk`.
//!
//! ```sh
//! cargo run --release --features dpdk --example dpdk_io -- -n 20000000 \
//!     --eal "--no-huge -m 1024 --no-pci -l 0 --vdev=net_pcap0,rx_pcap=in.pcap,infinite_rx=1"
//! ```
//! Every port is polled on rx queue 0 and forwards to the next port (port i → port i+1 mod
//! n, testpmd's default "paired" topology for one or two ports). With rx wired straight to
//! tx, the rx node lends its mbufs raw (`DpdkRx::with_raw_forwarding`): no per-packet hand-over
//! to the buffer pool and back; `--adopt` makes it hand every packet over, the cost a
//! graph with nodes between rx and tx pays.
//!
//! `--interleave K` measures the graph against testpmd's io loop in this one process: the
//! first half of the ports forward through the graph, the second half through
//! [`IoForward`] (testpmd's `pkt_burst_io_forward`, no graph), same mempool, same core, in
//! K pairs of alternating slices of `--slice` packets each; it prints both cycles a packet
//! per pair and the median of the per-pair ratios.
//!
//! ```sh
//! cargo run --release --features dpdk --example dpdk_io -- --interleave 40 --vector-size 128 \
//!     --eal "--no-huge -m 1024 --no-pci -l 1 --vdev=net_null0 --vdev=net_null1 \
//!            --vdev=net_null2 --vdev=net_null3"
//! ```

use clap::Parser;
use pktvec::graph::{clock, GraphBuilder, GraphConfig, InputDrain};
use pktvec::io::dpdk::{
    DpdkRx, DpdkRxNext, DpdkTx, Eal, IoForward, Mempool, ObjectLayout, Port, PortConfig,
};
use std::sync::Arc;
use std::time::Instant;

#[derive(Parser, Debug)]
#[command(about = "io forwarding between DPDK ports through a pktvec graph")]
struct Cli {
    /// EAL arguments.
    #[arg(long, allow_hyphen_values = true)]
    eal: String,
    /// Packets to forward (in all).
    #[arg(long, short = 'n', default_value_t = 10_000_000)]
    packets: u64,
    /// Vector size: the most packets the rx node hands the graph per call.
    #[arg(long, default_value_t = 256)]
    vector_size: usize,
    /// Packets per `rte_eth_rx_burst` call (testpmd's `--burst`, default 32); the rx node
    /// repeats bursts until its vector is full or the queue is empty. Give the vector
    /// size for one driver call per vector.
    #[arg(long, default_value_t = pktvec::io::dpdk::DEFAULT_RX_BURST)]
    rx_burst: usize,
    /// Mbufs in the mempool.
    #[arg(long, default_value_t = 65536)]
    mbufs: u32,
    /// Mbuf layout in memory: auto, standard (one object per 4 KiB page without
    /// hugepages) or packed.
    #[arg(long, default_value = "auto")]
    object_layout: String,
    /// Hand every packet to the buffer pool on rx and back on tx, instead of lending the
    /// mbufs raw from rx to tx.
    #[arg(long)]
    adopt: bool,
    /// No cycle counter reads around node calls (`GraphConfig::node_cycles` false: the
    /// runtime table's clocks stay 0).
    #[arg(long)]
    no_node_cycles: bool,
    /// When the tx nodes run (`GraphConfig::input_drain`): `when-full` (default: right
    /// after an rx node that filled a vector, so one port's mbufs are in flight),
    /// `after-each` (right after each rx node) or `after-all` (after every port was
    /// polled: all ports' mbufs in flight, VPP's order).
    #[arg(long, default_value = "when-full")]
    input_drain: InputDrain,
    /// With `--interleave`: the io loop reads the cycle counter twice a burst, as testpmd
    /// with `--record-core-cycles` (how testpmd's cycles a packet are measured).
    #[arg(long, requires = "interleave")]
    record_core_cycles: bool,
    /// Print the statistics as JSON.
    #[arg(long)]
    json: bool,
    /// Pairs of alternating slices, graph against testpmd's io loop in this process
    /// (needs an even number of ports, at least 4: the first half for the graph, the
    /// second half for the io loop); `-n` is then ignored.
    #[arg(long)]
    interleave: Option<usize>,
    /// Packets per slice with `--interleave`.
    #[arg(long, default_value_t = 20_000_000)]
    slice: u64,
    /// With `--interleave`: run only testpmd's io loop, `-n` packets in one slice (to
    /// count its instructions under cachegrind against testpmd's).
    #[arg(long, requires = "interleave")]
    io_loop_only: bool,
    /// With `--interleave`: the control experiment, testpmd's io loop on both halves
    /// (the graph stays idle); the ratios should then be 1.
    #[arg(long, requires = "interleave")]
    control: bool,
    /// With `--control`: the burst of the loop on the first half (default: `--rx-burst`),
    /// to measure what more mbufs in flight cost the very same loop.
    #[arg(long, requires = "control")]
    control_burst: Option<usize>,
}

/// Cycles a packet of each side, pair by pair, of `--interleave`.
#[derive(serde::Serialize)]
struct Interleaved {
    slice: u64,
    graph: Vec<f64>,
    io_loop: Vec<f64>,
    ratios: Vec<f64>,
    ratio_median: f64,
    ratio_of_medians: f64,
    io_loop_forwarded: u64,
    io_loop_dropped: u64,
}

fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        f64::NAN
    } else if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let cli = Cli::parse();
    let eal = Eal::init(&cli.eal)?;
    let ids = eal.ports();
    if ids.is_empty() {
        return Err("no DPDK port: add --vdev=...".into());
    }
    let layout = match cli.object_layout.as_str() {
        "auto" => ObjectLayout::Auto,
        "standard" => ObjectLayout::Standard,
        "packed" => ObjectLayout::Packed,
        other => return Err(format!("--object-layout {other}: auto, standard or packed").into()),
    };
    let mempool = Mempool::with_object_layout(&eal, cli.mbufs, 2048, layout)?;
    let all = ids
        .iter()
        .map(|&id| Port::start(&eal, id, &mempool, &PortConfig::default()))
        .collect::<Result<Vec<_>, _>>()?;
    let half = if cli.interleave.is_some() {
        if all.len() < 4 || all.len() % 2 != 0 {
            return Err("--interleave needs an even number of ports, at least 4".into());
        }
        all.len() / 2
    } else {
        all.len()
    };
    let (ports, loop_ports) = all.split_at(half);
    // testpmd's io loop on the second half (port i -> port i+1 of that half), if asked.
    let loops_over = |ps: &[Arc<Port>], burst: usize| -> Vec<IoForward> {
        (0..ps.len())
            .map(|i| {
                IoForward::new(&ps[i], &ps[(i + 1) % ps.len()], burst)
                    .with_cycle_recording(cli.record_core_cycles)
            })
            .collect()
    };
    let mut control: Vec<IoForward> = if cli.control {
        loops_over(ports, cli.control_burst.unwrap_or(cli.rx_burst))
    } else {
        Vec::new()
    };
    let mut io_loop = loops_over(loop_ports, cli.rx_burst);
    let mut b = GraphBuilder::new(GraphConfig {
        vector_size: cli.vector_size,
        node_cycles: !cli.no_node_cycles,
        input_drain: cli.input_drain,
        ..GraphConfig::default()
    });
    let per_port = cli.packets.div_ceil(ports.len() as u64);
    for (i, p) in ports.iter().enumerate() {
        let out = &ports[(i + 1) % ports.len()];
        let (rx, tx) = (format!("{}-rx", p.name()), format!("{}-tx", out.name()));
        let node = DpdkRx::new(p, 0)
            .with_burst(cli.rx_burst)
            .with_raw_forwarding(!cli.adopt);
        b.add(
            &rx,
            if cli.interleave.is_some() {
                node
            } else {
                node.with_limit(per_port)
            },
        )
        .add(&tx, DpdkTx::new(out, 0))
        .set_next(&rx, DpdkRxNext::Out, &tx);
    }
    let mut g = b.build(mempool.buffer_pool()?)?;
    // Progress by the cycle counter: `Instant` is a clock_gettime call (a system call
    // under valgrind, where it showed as ~1 instruction a packet at vectors of 32).
    let hz = clock::tsc_hz() as u64;
    let start = Instant::now();
    let mut last = clock::now();
    let mut done = 0u64;
    let mut idle = 0u32;
    let mut turns = 0u64;
    let mut interleaved = None;
    let mut graph_cycles = 0u64;
    if let Some(pairs) = cli.interleave {
        let (mut graph, mut lp) = (Vec::new(), Vec::new());
        let (pairs, slice) = if cli.io_loop_only {
            (1, cli.packets)
        } else {
            (pairs, cli.slice)
        };
        for pair in 0..pairs {
            // Alternate which side goes first, so that neither always follows the other.
            for side in [pair % 2, 1 - pair % 2] {
                if cli.io_loop_only && side == 0 {
                    graph.push(f64::NAN);
                    continue;
                }
                let t0 = clock::now();
                let mut n = 0u64;
                if side == 0 && cli.control {
                    while n < slice {
                        for f in control.iter_mut() {
                            n += f.run_once() as u64;
                        }
                    }
                } else if side == 0 {
                    while n < slice {
                        n += g.run_once();
                    }
                    done += n;
                    graph_cycles += clock::now().wrapping_sub(t0);
                } else {
                    while n < slice {
                        for f in io_loop.iter_mut() {
                            n += f.run_once() as u64;
                        }
                    }
                }
                let cpp = clock::now().wrapping_sub(t0) as f64 / n as f64;
                if side == 0 {
                    graph.push(cpp)
                } else {
                    lp.push(cpp)
                }
            }
            eprintln!(
                "dpdk_io: pair {pair:>3}: graph {:6.2}, testpmd's io loop {:6.2} cycles/packet: {:.3}",
                graph[pair],
                lp[pair],
                graph[pair] / lp[pair]
            );
        }
        let ratios: Vec<f64> = graph.iter().zip(&lp).map(|(a, b)| a / b).collect();
        interleaved = Some(Interleaved {
            slice,
            ratio_median: median(&ratios),
            ratio_of_medians: median(&graph) / median(&lp),
            graph,
            io_loop: lp,
            ratios,
            io_loop_forwarded: io_loop.iter().map(IoForward::forwarded).sum(),
            io_loop_dropped: io_loop.iter().map(IoForward::dropped).sum(),
        });
    }
    while interleaved.is_none() {
        let n = g.run_once();
        done += n;
        idle = if n == 0 { idle + 1 } else { 0 };
        // Stop at the packet count, or when the ports have been quiet for 100k polls (a
        // finite capture is over).
        if done >= per_port * ports.len() as u64 || idle >= 100_000 {
            break;
        }
        // The clock every 64 turns: a read per turn costs ~2 cycles a packet at vectors
        // of 32.
        turns += 1;
        if turns % 64 == 0 && clock::now().wrapping_sub(last) >= hz {
            last = clock::now();
            eprintln!(
                "dpdk_io: {done:>12} / {} packets, {:.2} Mpps",
                cli.packets,
                done as f64 / start.elapsed().as_secs_f64() / 1e6
            );
        }
    }
    if interleaved.is_some() {
        // The rx nodes have no limit there: finish what is pending, poll no more.
        g.dispatch_pending();
    } else {
        g.run_until_idle();
    }
    // With --interleave, the graph's own slices.
    let secs = if interleaved.is_some() {
        graph_cycles as f64 / hz as f64
    } else {
        start.elapsed().as_secs_f64()
    };
    let rt = g.runtime();
    let c = g.conservation();
    let stats: Vec<_> = ports
        .iter()
        .map(|p| (p.name().to_string(), p.stats()))
        .collect();
    let node_cycles: u64 = rt.rows.iter().map(|r| r.cycles).sum();
    let lent: u64 = ports
        .iter()
        .filter_map(|p| g.node::<DpdkRx>(&format!("{}-rx", p.name())).ok())
        .map(|rx| rx.lent())
        .sum();
    let cpp = node_cycles as f64 / done.max(1) as f64;
    if cli.json {
        let v = serde_json::json!({
            "packets": done, "seconds": secs, "object_stride": mempool.object_stride(), "mpps": done as f64 / secs / 1e6,
            "cycles_per_packet_rx_tx": cpp, "lent_raw": lent, "runtime": rt, "conservation": c, "ports": stats,
            "interleave": interleaved,
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        println!("{rt}\n\n{}", g.errors());
        for (name, s) in &stats {
            println!("port {name}: {s:?}");
        }
        println!(
            "dpdk_io: {done} packets in {secs:.3} s: {:.2} Mpps; rx+tx nodes {cpp:.1} cycles/packet",
            done as f64 / secs / 1e6
        );
        println!("conservation: {c}");
        println!("raw hand-over (rx to tx, no pool): {lent} of {done} packets");
        if let Some(i) = &interleaved {
            println!(
                "interleaved, {} pairs of {} packets: graph {:.2}, testpmd's io loop {:.2} cycles/packet \
                 (medians); graph / io loop: median of the pairs' ratios {:.3}, ratio of the medians {:.3} \
                 (io loop forwarded {}, dropped {})",
                i.ratios.len(),
                i.slice,
                median(&i.graph),
                median(&i.io_loop),
                i.ratio_median,
                i.ratio_of_medians,
                i.io_loop_forwarded,
                i.io_loop_dropped
            );
        }
    }
    drop(g);
    drop(io_loop);
    drop(all);
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
