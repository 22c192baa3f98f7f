//! What every forwarder example shares: traffic options (profile or capture), graph
//! settings, the run loop with a progress line, and the report (runtime table, errors,
//! conservation, optional JSON).
#![allow(dead_code)]

use clap::Args;
use pktvec::graph::builtin::NullSink;
use pktvec::graph::{Graph, GraphBuilder, GraphConfig, InputDrain};
use pktvec::io::capture::{PcapSink, PcapSource, PcapSourceNext};
use pktvec::io::generator::{Generator, GeneratorNext, GeneratorSource};
use pktvec::io::profile::TrafficProfile;
use pktvec::packet::{BufferPool, PoolConfig};
use std::path::PathBuf;
use std::time::Instant;

/// Options shared by the forwarders.
#[derive(Args, Debug, Clone)]
pub struct CommonArgs {
    /// Traffic profile (TOML); the forwarder's built-in profile if absent.
    #[arg(long)]
    pub profile: Option<PathBuf>,
    /// Replay this pcap/pcapng capture instead of generating traffic (looping).
    #[arg(long, conflicts_with = "profile")]
    pub pcap_in: Option<PathBuf>,
    /// Write the transmitted packets to this pcap file.
    #[arg(long)]
    pub pcap_out: Option<PathBuf>,
    /// Packets to process.
    #[arg(long, short = 'n', default_value_t = 1_000_000)]
    pub packets: u64,
    /// Vector size V (1..=4096).
    #[arg(long, default_value_t = 256)]
    pub vector_size: usize,
    /// Sub-batch size b of the two-phase lookups.
    #[arg(long, default_value_t = 16)]
    pub sub_batch: usize,
    /// Prefetch distance of the 4/2/1 loops (0 = off).
    #[arg(long, default_value_t = 4)]
    pub prefetch: usize,
    /// Buffers in the pool.
    #[arg(long, default_value_t = 16384)]
    pub buffers: u32,
    /// Generated traffic: produce this many packets once and replay them (0 = generate
    /// every packet live, slower).
    #[arg(long, default_value_t = 65536)]
    pub pregen: usize,
    /// Trace this many packets and print the trace.
    #[arg(long, default_value_t = 0)]
    pub trace: usize,
    /// Print the statistics as JSON instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Receive from and transmit to DPDK ports instead: the EAL arguments, e.g.
    /// "--no-huge -m 1024 --no-pci --vdev=net_pcap0,rx_pcap=in.pcap,tx_pcap=out.pcap".
    /// Every port is polled on its rx queues (`--rx-queues`); a packet leaves on the port
    /// whose index is its tx interface (all on the one port if there is one), by tx queue 0.
    /// Needs `--features dpdk`.
    #[arg(long, allow_hyphen_values = true, conflicts_with_all = ["pcap_in", "pcap_out"])]
    pub dpdk: Option<String>,
    /// With `--dpdk`: receive queues per port (RSS spreads flows over them where the
    /// device hashes; net_pcap needs one `rx_pcap=` per queue), each polled by its own rx
    /// node of the one graph (`input`, `input-1`, ...).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub rx_queues: u16,
    /// When the nodes fed by the rx nodes run (`GraphConfig::input_drain`): `after-all`
    /// (every input polled first, VPP's order), `after-each`, or `when-full` (right after
    /// an input that filled a vector: fewer mbufs in flight with several ports or queues).
    #[arg(long, default_value = "after-all")]
    pub input_drain: InputDrain,
}

impl CommonArgs {
    /// Graph settings from the options.
    pub fn graph_config(&self) -> GraphConfig {
        GraphConfig {
            vector_size: self.vector_size,
            prefetch_distance: self.prefetch,
            sub_batch: self.sub_batch,
            input_drain: self.input_drain,
            ..GraphConfig::default()
        }
    }

    /// The buffer pool (with `--dpdk`, the DPDK mempool's mbufs).
    pub fn pool(&self) -> Result<BufferPool, Box<dyn std::error::Error>> {
        if self.dpdk.is_some() {
            return dpdk_io::pool(self);
        }
        Ok(BufferPool::new(PoolConfig {
            buffers: self.buffers,
            ..PoolConfig::default()
        })?)
    }

    /// The profile from `--profile`, or `default` (TOML text).
    pub fn profile(&self, default: &str) -> Result<TrafficProfile, Box<dyn std::error::Error>> {
        let text = match &self.profile {
            Some(p) => std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?,
            None => default.to_string(),
        };
        Ok(TrafficProfile::from_toml(&text)?)
    }
}

/// The input node the options ask for.
pub enum Input {
    /// Generated traffic.
    Generator(Box<GeneratorSource>),
    /// A capture replayed in a loop.
    Pcap(Box<PcapSource>),
    /// DPDK rx nodes, one per port.
    #[cfg(feature = "dpdk")]
    Dpdk(Vec<pktvec::io::dpdk::DpdkRx>),
}

impl Input {
    /// Adds the input node under `name`, sending to `target`.
    pub fn add_to(self, b: &mut GraphBuilder, name: &str, target: &str) {
        match self {
            Input::Generator(g) => {
                b.add(name, *g).set_next(name, GeneratorNext::Out, target);
            }
            Input::Pcap(p) => {
                b.add(name, *p).set_next(name, PcapSourceNext::Out, target);
            }
            #[cfg(feature = "dpdk")]
            Input::Dpdk(rxs) => {
                use pktvec::io::dpdk::DpdkRxNext;
                for (i, rx) in rxs.into_iter().enumerate() {
                    let n = if i == 0 {
                        name.to_string()
                    } else {
                        format!("{name}-{i}")
                    };
                    b.add(&n, rx).set_next(&n, DpdkRxNext::Out, target);
                }
            }
        }
    }
}

/// Adds the transmit sink `name`: the pcap writer if `--pcap-out`, else a null sink.
pub fn add_tx(
    b: &mut GraphBuilder,
    name: &str,
    args: &CommonArgs,
) -> Result<(), Box<dyn std::error::Error>> {
    if args.dpdk.is_some() {
        return dpdk_io::add_tx(b, name, args);
    }
    match args.pcap_out()? {
        Some(sink) => b.add(name, sink),
        None => b.add(name, NullSink),
    };
    Ok(())
}

impl CommonArgs {
    /// Builds the input: a capture if `--pcap-in`, else the generator over `gen`.
    pub fn input(
        &self,
        gen: impl FnOnce() -> Result<Generator, Box<dyn std::error::Error>>,
    ) -> Result<Input, Box<dyn std::error::Error>> {
        if self.dpdk.is_some() {
            return dpdk_io::input(self);
        }
        Ok(match &self.pcap_in {
            Some(p) => {
                // An error if nothing in the file can be replayed (it names the link types).
                let src = PcapSource::open(p).map_err(|e| e.to_string())?;
                if let Some(warning) = src.capture().warning() {
                    eprintln!("{}: {warning}", p.display());
                }
                Input::Pcap(Box::new(src.looping(true).with_limit(self.packets)))
            }
            None => {
                let src = GeneratorSource::new(gen()?).with_limit(self.packets);
                Input::Generator(Box::new(if self.pregen > 0 {
                    src.pregenerate(self.pregen)
                } else {
                    src
                }))
            }
        })
    }

    /// The transmit sink: a pcap writer if `--pcap-out`, else None (use a null sink).
    pub fn pcap_out(&self) -> Result<Option<PcapSink>, Box<dyn std::error::Error>> {
        Ok(match &self.pcap_out {
            Some(p) => Some(PcapSink::create(p)?),
            None => None,
        })
    }
}

/// Runs the graph until the input is exhausted, with a progress line every second on
/// stderr, then prints the report. Fails if packets were lost.
pub fn run_and_report(
    name: &str,
    graph: &mut Graph,
    args: &CommonArgs,
) -> Result<(), Box<dyn std::error::Error>> {
    if args.trace > 0 {
        graph.trace_add(args.trace);
    }
    let start = Instant::now();
    // CPU time of this thread: on a shared machine the wall clock also counts the time
    // other processes held this core; this does not (a hypervisor's steal time aside).
    let cpu_start = cpu_time::ThreadTime::now();
    let mut last = Instant::now();
    let mut done = 0u64;
    loop {
        let n = graph.run_once();
        done += n;
        if n == 0 && graph.conservation().in_flight == 0 {
            break;
        }
        if last.elapsed().as_secs_f64() >= 1.0 {
            last = Instant::now();
            eprintln!(
                "{name}: {done:>12} / {} packets, {:.2} Mpps",
                args.packets,
                done as f64 / start.elapsed().as_secs_f64() / 1e6
            );
        }
    }
    let secs = start.elapsed().as_secs_f64();
    let cpu_secs = cpu_start.elapsed().as_secs_f64();
    let rt = graph.runtime();
    let errors = graph.errors();
    let created = graph.created();
    let c = graph.conservation();
    if args.json {
        let v = serde_json::json!({
            "forwarder": name,
            "packets": done,
            "seconds": secs,
            "mpps": done as f64 / secs / 1e6,
            "cpu_seconds": cpu_secs,
            "mpps_cpu": done as f64 / cpu_secs / 1e6,
            "runtime": rt,
            "errors": errors,
            "created": created,
            "conservation": c,
            "ports": dpdk_io::json(graph, args),
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        if args.trace > 0 {
            println!("{}", graph.trace());
        }
        println!("{rt}\n");
        println!("{errors}");
        if !created.rows.is_empty() {
            println!("packets made by nodes:\n{created}");
        }
        println!(
            "{name}: {done} packets in {secs:.3} s: {:.2} Mpps ({:.2} Mpps per second of this thread's CPU time, {cpu_secs:.3} s)",
            done as f64 / secs / 1e6,
            done as f64 / cpu_secs / 1e6
        );
        println!("conservation: {c}");
        dpdk_io::report(graph, args);
    }
    if !c.is_balanced() || c.buffers_in_use != 0 {
        return Err("packets were lost".into());
    }
    Ok(())
}

/// `--dpdk`: one EAL, one mempool and the ports, set up on first use by `pool`, `input` or
/// `add_tx` (in any order) and shared by them.
#[cfg(feature = "dpdk")]
mod dpdk_io {
    use super::{CommonArgs, Input};
    use pktvec::graph::{Graph, GraphBuilder};
    use pktvec::io::dpdk::{DpdkRx, DpdkTx, Eal, Mempool, Port, PortConfig};
    use pktvec::packet::BufferPool;
    use std::sync::{Arc, OnceLock};

    struct Io {
        mempool: Mempool,
        ports: Vec<Arc<Port>>,
    }

    static IO: OnceLock<Result<Io, String>> = OnceLock::new();

    fn io(args: &CommonArgs) -> Result<&'static Io, Box<dyn std::error::Error>> {
        let r = IO.get_or_init(|| {
            let eal = Eal::init(args.dpdk.as_deref().unwrap_or("")).map_err(|e| e.to_string())?;
            let ids = eal.ports();
            if ids.is_empty() {
                return Err("--dpdk: the EAL found no port (add --vdev=... or a NIC)".into());
            }
            let mempool =
                Mempool::new(&eal, args.buffers.max(1024), 2048).map_err(|e| e.to_string())?;
            let ports = ids
                .iter()
                .map(|&id| {
                    let cfg = PortConfig {
                        rx_queues: args.rx_queues,
                        ..PortConfig::default()
                    };
                    Port::start(&eal, id, &mempool, &cfg)
                })
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| e.to_string())?;
            Ok(Io { mempool, ports })
        });
        r.as_ref().map_err(|e| e.clone().into())
    }

    pub fn pool(args: &CommonArgs) -> Result<BufferPool, Box<dyn std::error::Error>> {
        Ok(io(args)?.mempool.buffer_pool()?)
    }

    pub fn input(args: &CommonArgs) -> Result<Input, Box<dyn std::error::Error>> {
        let io = io(args)?;
        // The packet limit split over every (port, queue): each rx node stops at its share.
        let queues = io.ports.len() as u64 * args.rx_queues as u64;
        let per_queue = args.packets.div_ceil(queues);
        Ok(Input::Dpdk(
            io.ports
                .iter()
                .enumerate()
                .flat_map(|(i, p)| {
                    (0..p.rx_queues()).map(move |q| {
                        DpdkRx::new(p, q)
                            .with_rx_interface(i as u16)
                            .with_limit(per_queue)
                    })
                })
                .collect(),
        ))
    }

    pub fn add_tx(
        b: &mut GraphBuilder,
        name: &str,
        args: &CommonArgs,
    ) -> Result<(), Box<dyn std::error::Error>> {
        let io = io(args)?;
        let queues: Vec<_> = io.ports.iter().map(|p| (p.clone(), 0)).collect();
        b.add(name, DpdkTx::by_interface(&queues));
        Ok(())
    }

    /// The graph's rx nodes by the port they poll: (node name, node).
    fn rx_nodes(graph: &Graph) -> Vec<(&str, &DpdkRx)> {
        (0..graph.node_count() as u32)
            .filter_map(|id| {
                let name = graph.node_name(id)?;
                Some((name, graph.node::<DpdkRx>(name).ok()?))
            })
            .collect()
    }

    /// Prints each port's counters (`rte_eth_stats`) after the run, and what its rx node
    /// did not pass to the graph: mbufs of another mempool (freed) and mbufs the pool
    /// already held (left alone); both 0 unless something is wrong.
    pub fn report(graph: &Graph, args: &CommonArgs) {
        if args.dpdk.is_none() {
            return;
        }
        if let Some(Ok(io)) = IO.get() {
            let rx = rx_nodes(graph);
            for p in &io.ports {
                let s = p.stats();
                print!(
                    "port {} ({}): rx {} tx {} imissed {} ierrors {} oerrors {} rx_nombuf {}",
                    p.id(),
                    p.name(),
                    s.ipackets,
                    s.opackets,
                    s.imissed,
                    s.ierrors,
                    s.oerrors,
                    s.rx_nombuf
                );
                for (name, n) in rx.iter().filter(|(_, n)| n.port().id() == p.id()) {
                    print!(" | {name}: foreign {} refused {}", n.foreign(), n.refused());
                }
                println!();
            }
        }
    }

    /// The same as JSON (`null` without `--dpdk`): one object per port with its counters
    /// and its rx nodes' `received`, `foreign` and `refused`.
    pub fn json(graph: &Graph, args: &CommonArgs) -> serde_json::Value {
        let (Some(_), Some(Ok(io))) = (&args.dpdk, IO.get()) else {
            return serde_json::Value::Null;
        };
        let rx = rx_nodes(graph);
        io.ports
            .iter()
            .map(|p| {
                let nodes: Vec<_> = rx
                    .iter()
                    .filter(|(_, n)| n.port().id() == p.id())
                    .map(|(name, n)| {
                        serde_json::json!({"node": name, "received": n.received(),
                                           "foreign": n.foreign(), "refused": n.refused()})
                    })
                    .collect();
                serde_json::json!({"port": p.id(), "name": p.name(), "stats": p.stats(),
                                   "rx_nodes": nodes})
            })
            .collect()
    }
}

/// Without the `dpdk` feature, `--dpdk` is a clear error.
#[cfg(not(feature = "dpdk"))]
mod dpdk_io {
    use super::{CommonArgs, Input};
    use pktvec::graph::{Graph, GraphBuilder};
    use pktvec::packet::BufferPool;

    const MSG: &str = "--dpdk needs DPDK support: rebuild with `--features dpdk` \
                       (and the system's DPDK: apt-get install libdpdk-dev pkg-config)";

    pub fn pool(_: &CommonArgs) -> Result<BufferPool, Box<dyn std::error::Error>> {
        Err(MSG.into())
    }
    pub fn input(_: &CommonArgs) -> Result<Input, Box<dyn std::error::Error>> {
        Err(MSG.into())
    }
    pub fn add_tx(
        _: &mut GraphBuilder,
        _: &str,
        _: &CommonArgs,
    ) -> Result<(), Box<dyn std::error::Error>> {
        Err(MSG.into())
    }
    pub fn report(_: &Graph, _: &CommonArgs) {}
    pub fn json(_: &Graph, _: &CommonArgs) -> serde_json::Value {
        serde_json::Value::Null
    }
}
