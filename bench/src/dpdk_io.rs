//! `dpdk-io`: io forwarding between DPDK ports through a graph (rx node → tx node, nothing
//! in between) against testpmd's io loop, in one process.
//!
//! The first half of the ports forward through the graph (port i → port i+1 of that half),
//! the second half through [`IoForward`](pktvec::io::dpdk::IoForward) (testpmd's
//! `pkt_burst_io_forward`: one rx burst of 32, one tx burst, the refused mbufs freed), one
//! mempool, one core, in pairs of alternating slices; each pair gives a ratio of TSC cycles
//! a packet, and the machine's drift (a third from second to second on a shared VM)
//! cancels within a pair. The headline ratio of a variant is the median of its pairs'
//! ratios. Needs the bench crate's `dpdk` feature (on by default).

use crate::sitting::Common;

/// Options of `dpdk-io`.
#[derive(clap::Args, Debug)]
#[cfg_attr(not(feature = "dpdk"), allow(dead_code))]
pub struct Args {
    #[command(flatten)]
    common: Common,
    /// EAL arguments: an even number of ports, at least 4 (the first half for the graph,
    /// the second half for the io loop)
    #[arg(
        long,
        allow_hyphen_values = true,
        default_value = "--no-huge -m 1024 --no-pci -l 0 --file-prefix=pktvec-bench --log-level=error \
                         --vdev=net_null0 --vdev=net_null1 --vdev=net_null2 --vdev=net_null3"
    )]
    eal: String,
    /// Pairs of alternating slices per variant; default 40, 4 with --quick
    #[arg(long)]
    pairs: Option<usize>,
    /// Packets per slice; default 10,000,000 (about 0.1 s), 1,000,000 with --quick
    #[arg(long)]
    slice: Option<u64>,
    /// Vector size of the graph (the most packets an rx node hands on per call)
    #[arg(long, default_value_t = 256)]
    vector_size: usize,
    /// Mbufs in the mempool
    #[arg(long, default_value_t = 65536)]
    mbufs: u32,
}

/// Runs the measurement.
pub fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    #[cfg(feature = "dpdk")]
    return measure::run(args);
    #[cfg(not(feature = "dpdk"))]
    {
        let _ = args;
        Err(
            "dpdk-io needs DPDK: build pktvec-bench with --features dpdk \
             (and the system's DPDK 22.11: apt-get install libdpdk-dev pkg-config)"
                .into(),
        )
    }
}

#[cfg(feature = "dpdk")]
mod measure {
    use std::sync::Arc;

    use pktvec::graph::{clock, GraphBuilder, GraphConfig, InputDrain};
    use pktvec::io::dpdk::{
        DpdkRx, DpdkRxNext, DpdkTx, Eal, IoForward, Mempool, Port, PortConfig, DEFAULT_RX_BURST,
    };
    use serde::Serialize;

    use super::Args;
    use crate::sitting::{Headline, Sitting};

    /// The anchor's name in the headline rows.
    const ANCHOR: &str = "testpmd io loop (same process)";

    /// One pairing of the graph against the io loop.
    struct Variant {
        name: &'static str,
        label: &'static str,
        /// Every packet through the buffer pool (as any graph with a node between rx and
        /// tx), instead of the raw hand-over.
        adopt: bool,
        /// The graph reads the TSC around every node call (`GraphConfig::node_cycles`).
        node_cycles: bool,
        /// The io loop reads the TSC twice a burst (testpmd's `--record-core-cycles`, how
        /// testpmd's own cycles a packet are measured).
        record_cycles: bool,
        /// The control: the io loop on both halves (the ratio should be 1).
        control: bool,
        /// Only in the full run.
        full_only: bool,
    }

    const VARIANTS: [Variant; 4] = [
        Variant {
            name: "raw",
            label: "raw hand-over rx → tx, neither side clocked",
            adopt: false,
            node_cycles: false,
            record_cycles: false,
            control: false,
            full_only: false,
        },
        Variant {
            name: "adopted",
            label: "through the buffer pool, neither side clocked",
            adopt: true,
            node_cycles: false,
            record_cycles: false,
            control: false,
            full_only: false,
        },
        Variant {
            name: "raw-clocked",
            label: "raw hand-over, both sides clocked (as testpmd reports cycles)",
            adopt: false,
            node_cycles: true,
            record_cycles: true,
            control: false,
            full_only: true,
        },
        Variant {
            name: "control",
            label: "control: the io loop on both halves",
            adopt: false,
            node_cycles: false,
            record_cycles: false,
            control: true,
            full_only: true,
        },
    ];

    /// What one variant measured.
    #[derive(Serialize, Debug)]
    struct Outcome {
        name: &'static str,
        label: &'static str,
        adopt: bool,
        node_cycles: bool,
        record_cycles: bool,
        control: bool,
        /// Cycles a packet of the graph (or the control's first loop), slice by slice.
        graph: Vec<f64>,
        /// Cycles a packet of the io loop, slice by slice.
        io_loop: Vec<f64>,
        /// graph / io loop, pair by pair.
        ratios: Vec<f64>,
        ratio_median: f64,
        ratio_quartiles: [f64; 2],
        graph_median: f64,
        io_loop_median: f64,
        /// Packets the rx nodes lent raw to the tx nodes.
        lent_raw: u64,
        graph_packets: u64,
        io_loop_forwarded: u64,
        io_loop_dropped: u64,
        conservation: String,
    }

    fn quantile(xs: &[f64], q: f64) -> f64 {
        let mut v = xs.to_vec();
        v.sort_by(f64::total_cmp);
        if v.is_empty() {
            return f64::NAN;
        }
        let pos = q * (v.len() - 1) as f64;
        let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
        v[lo] + (v[hi] - v[lo]) * (pos - lo as f64)
    }

    /// Runs the measurement.
    pub fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
        let quick = args.common.quick;
        let pairs = args.pairs.unwrap_or(if quick { 4 } else { 40 }).max(1);
        let slice = args
            .slice
            .unwrap_or(if quick { 1_000_000 } else { 10_000_000 })
            .max(1);
        let sitting = Sitting::begin(
            "dpdk-io",
            "DPDK io forwarding vs testpmd's io loop",
            "dpdk-io.md",
            &args.common,
        )?;
        let eal = Eal::init(&args.eal)?;
        let ids = eal.ports();
        if ids.len() < 4 || ids.len() % 2 != 0 {
            return Err(format!(
                "dpdk-io needs an even number of ports, at least 4 (got {}): give --eal four \
                 --vdev=net_nullN",
                ids.len()
            )
            .into());
        }
        let mempool = Mempool::new(&eal, args.mbufs, 2048)?;
        let all = ids
            .iter()
            .map(|&id| Port::start(&eal, id, &mempool, &PortConfig::default()))
            .collect::<Result<Vec<_>, _>>()?;
        let (ports, loop_ports) = all.split_at(all.len() / 2);
        println!(
            "EAL {}\n{} ports ({} for the graph, {} for the io loop), mempool of {} mbufs (stride {} B), \
             vectors of {}, bursts of {DEFAULT_RX_BURST}; {pairs} pairs of {slice}-packet slices a variant",
            args.eal,
            all.len(),
            ports.len(),
            loop_ports.len(),
            mempool.capacity(),
            mempool.object_stride(),
            args.vector_size,
        );
        let mut outcomes = Vec::new();
        for v in VARIANTS.iter().filter(|v| !quick || !v.full_only) {
            let o = interleave(
                v,
                ports,
                loop_ports,
                &mempool,
                args.vector_size,
                pairs,
                slice,
            )?;
            println!(
                "{:<12} graph {:6.2}, io loop {:6.2} cycles/packet (medians); graph / io loop: \
                 median of {} pair ratios {:.3} (quartiles {:.3}-{:.3})",
                o.name,
                o.graph_median,
                o.io_loop_median,
                o.ratios.len(),
                o.ratio_median,
                o.ratio_quartiles[0],
                o.ratio_quartiles[1],
            );
            outcomes.push(o);
        }
        drop(all);
        if mempool.available() != mempool.capacity() {
            return Err(format!(
                "mbufs missing: mempool {} of {} free after the ports were closed",
                mempool.available(),
                mempool.capacity()
            )
            .into());
        }
        println!("every mbuf back in the mempool ({})", mempool.capacity());
        let headline = outcomes
            .iter()
            .filter_map(|o| {
                let (case, target) = match o.name {
                    "raw" => (
                        format!("raw hand-over rx → tx, V {}", args.vector_size),
                        Some(1.0),
                    ),
                    // A packet through the pool costs at most 1.2× the io loop's cycles at
                    // V 256 and 1.3× at V 32 (the ratio shown is the io loop's ÷ ours).
                    "adopted" => (
                        format!("through the buffer pool, V {}", args.vector_size),
                        Some(if args.vector_size <= 32 {
                            1.0 / 1.3
                        } else {
                            1.0 / 1.2
                        }),
                    ),
                    _ => return None,
                };
                // The ratio of a pair cancels the machine's drift (its clock and load change
                // between slices), so the figure is the median of the pairs' ratios, shown in
                // units of the io loop's cycles (each side's own medians are in the data file).
                let h = Headline::cost(&case, "× io loop's cycles", o.ratio_median, ANCHOR, 1.0);
                Some(match target {
                    Some(t) => h.target(t),
                    None => h,
                })
            })
            .collect();
        let detail = serde_json::json!({
            "eal": args.eal,
            "pairs": pairs,
            "slice": slice,
            "vector_size": args.vector_size,
            "burst": DEFAULT_RX_BURST,
            "input_drain": "when-full",
            "mbufs": mempool.capacity(),
            "object_stride": mempool.object_stride(),
            "variants": outcomes,
        });
        sitting.finish(headline, detail)?;
        Ok(())
    }

    /// One variant: builds its graph over the mempool, runs `pairs` pairs of alternating
    /// slices, checks conservation, and gives the pool back (by dropping the graph).
    fn interleave(
        v: &Variant,
        ports: &[Arc<Port>],
        loop_ports: &[Arc<Port>],
        mempool: &Mempool,
        vector_size: usize,
        pairs: usize,
        slice: u64,
    ) -> Result<Outcome, Box<dyn std::error::Error>> {
        let loops_over = |ps: &[Arc<Port>]| -> Vec<IoForward> {
            (0..ps.len())
                .map(|i| {
                    IoForward::new(&ps[i], &ps[(i + 1) % ps.len()], DEFAULT_RX_BURST)
                        .with_cycle_recording(v.record_cycles)
                })
                .collect()
        };
        let mut io_loop = loops_over(loop_ports);
        let mut control = if v.control {
            loops_over(ports)
        } else {
            Vec::new()
        };
        let mut b = GraphBuilder::new(GraphConfig {
            vector_size,
            node_cycles: v.node_cycles,
            input_drain: InputDrain::WhenFull,
            ..GraphConfig::default()
        });
        for (i, p) in ports.iter().enumerate() {
            let out = &ports[(i + 1) % ports.len()];
            let (rx, tx) = (format!("{}-rx", p.name()), format!("{}-tx", out.name()));
            b.add(
                &rx,
                DpdkRx::new(p, 0)
                    .with_burst(DEFAULT_RX_BURST)
                    .with_raw_forwarding(!v.adopt),
            )
            .add(&tx, DpdkTx::new(out, 0))
            .set_next(&rx, DpdkRxNext::Out, &tx);
        }
        let mut g = b.build(mempool.buffer_pool()?)?;
        let mut graph_packets = 0u64;
        let (mut gs, mut ls) = (Vec::new(), Vec::new());
        // Pair 0 warms up (caches, mempool cache, branch predictors) and is not kept.
        for pair in 0..=pairs {
            // Alternate which side goes first, so that neither always follows the other.
            for side in [pair % 2, 1 - pair % 2] {
                let t0 = clock::now();
                let mut n = 0u64;
                if side == 0 && v.control {
                    while n < slice {
                        for f in control.iter_mut() {
                            n += f.run_once() as u64;
                        }
                    }
                } else if side == 0 {
                    while n < slice {
                        n += g.run_once();
                    }
                    graph_packets += n;
                } else {
                    while n < slice {
                        for f in io_loop.iter_mut() {
                            n += f.run_once() as u64;
                        }
                    }
                }
                let cpp = clock::now().wrapping_sub(t0) as f64 / n as f64;
                if pair > 0 {
                    if side == 0 {
                        gs.push(cpp);
                    } else {
                        ls.push(cpp);
                    }
                }
            }
        }
        // The rx nodes have no limit: finish what is pending, poll no more.
        g.dispatch_pending();
        let c = g.conservation();
        let lent: u64 = ports
            .iter()
            .filter_map(|p| g.node::<DpdkRx>(&format!("{}-rx", p.name())).ok())
            .map(DpdkRx::lent)
            .sum();
        if !c.is_balanced() {
            return Err(format!("{}: packets lost in the graph: {c}", v.name).into());
        }
        let ratios: Vec<f64> = gs.iter().zip(&ls).map(|(a, b)| a / b).collect();
        Ok(Outcome {
            name: v.name,
            label: v.label,
            adopt: v.adopt,
            node_cycles: v.node_cycles,
            record_cycles: v.record_cycles,
            control: v.control,
            ratio_median: quantile(&ratios, 0.5),
            ratio_quartiles: [quantile(&ratios, 0.25), quantile(&ratios, 0.75)],
            graph_median: quantile(&gs, 0.5),
            io_loop_median: quantile(&ls, 0.5),
            graph: gs,
            io_loop: ls,
            ratios,
            lent_raw: lent,
            graph_packets,
            io_loop_forwarded: io_loop.iter().map(IoForward::forwarded).sum(),
            io_loop_dropped: io_loop.iter().map(IoForward::dropped).sum(),
            conservation: c.to_string(),
        })
    }
}
