//! The command line the forwarder examples share, mapped onto `pktvec::app`: traffic
//! (profile, capture or DPDK ports), graph settings, output, and the report.
#![allow(dead_code)]

use clap::Args;
use pktvec::app::{self, Input, Output, Report, Run};
use pktvec::graph::{Graph, GraphConfig, InputDrain};
use pktvec::io::generator::Generator;
use pktvec::io::profile::TrafficProfile;
use pktvec::lookup::routes::load_ipv6_file;
use pktvec::nodes::apps::l3fwd::{L3fwd, L3fwdConfig};
use pktvec::packet::{BufferPool, PoolConfig};
use pktvec::tune;
use pktvec::workers::runtime::{Workers, WorkersConfig};
use std::path::PathBuf;

pub use pktvec::app::Error;

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
    #[arg(long, short = 'n', default_value_t = 200_000)]
    pub packets: u64,
    /// Vector size V (1..=4096).
    #[arg(long, default_value_t = 256)]
    pub vector_size: usize,
    /// Sub-batch size b of the two-phase lookups.
    #[arg(long, default_value_t = 16)]
    pub sub_batch: usize,
    /// Prefetch distance of the prefetching loops (0 = off).
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
    /// Measure each packet's latency from input to output (p50/p99/p99.9/max per sink).
    #[arg(long)]
    pub latency: bool,
    /// Print the statistics as JSON instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Receive from and transmit to DPDK ports instead: the EAL arguments, e.g.
    /// "--no-huge -m 1024 --no-pci --vdev=net_pcap0,rx_pcap=in.pcap,tx_pcap=out.pcap".
    /// Every port is polled on its rx queues (`--rx-queues`); a packet leaves on the port
    /// whose index is its tx interface (all on the one port if there is one), by tx queue 0.
    /// With `--workers N`, every port gets N rx and N tx queues and worker w polls rx queue
    /// w and sends on tx queue w of each. Needs `--features dpdk`.
    #[arg(long, allow_hyphen_values = true, conflicts_with_all = ["pcap_in", "pcap_out"])]
    pub dpdk: Option<String>,
    /// With `--dpdk`: receive queues per port, each polled by its own rx node of the one
    /// graph (`input`, `input-1`, ...).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub rx_queues: u16,
    /// With `--dpdk` and several rx queues: the RSS (Toeplitz) key, 40 bytes in hex
    /// (`6d5a56da...` or `6d:5a:...`); DPDK's default key if absent.
    #[arg(long, requires = "dpdk")]
    pub rss_key: Option<String>,
    /// With `--dpdk` and several rx queues: the symmetric RSS key (`6d5a` repeated), which
    /// sends both directions of a flow to one queue, so one worker.
    #[arg(long, requires = "dpdk", conflicts_with = "rss_key")]
    pub rss_symmetric: bool,
    /// When the nodes fed by the rx nodes run: `after-all` (every input polled first,
    /// VPP's order), `after-each`, or `when-full` (right after an input that filled a vector).
    #[arg(long, default_value = "after-all")]
    pub input_drain: InputDrain,
    /// Workers: one graph per worker (its own input, seeded per worker, or its own queue of
    /// every `--dpdk` port; its own pool and tables), each pinned to its own core; `-n`
    /// packets each. 1 runs on this thread.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub workers: u16,
    /// Run the online tuner on every worker: each calibrates the overhead model on its own
    /// graph (its packets count against `-n`), then retunes its vector size and sub-batch
    /// from windows of 64 turns.
    #[arg(long)]
    pub tune: bool,
}

/// The DPDK ports of `--dpdk`, opened once and used by the pool, the input and the output.
#[cfg(feature = "dpdk")]
pub type Ports = app::dpdk::DpdkPorts;
/// Without the `dpdk` feature there are none.
#[cfg(not(feature = "dpdk"))]
#[derive(Clone)]
pub enum Ports {}

/// The ports as worker `w` sees them: its own rx and tx queue of each, its own pool.
fn worker_ports(ports: &Option<Ports>, w: usize) -> Result<Option<Ports>, Error> {
    #[cfg(feature = "dpdk")]
    return ports.as_ref().map(|p| p.worker(w)).transpose();
    #[cfg(not(feature = "dpdk"))]
    {
        let _ = w;
        Ok(ports.clone())
    }
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

    /// The profile from `--profile`, or `default` (TOML text).
    pub fn profile(&self, default: &str) -> Result<TrafficProfile, Error> {
        let text = match &self.profile {
            Some(p) => std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?,
            None => default.to_string(),
        };
        Ok(TrafficProfile::from_toml(&text)?)
    }

    /// The ports of `--dpdk` (None without it): `--rx-queues` rx queues and one tx queue
    /// each, or with `--workers N`, N of each; RSS as `--rss-key`/`--rss-symmetric` say.
    pub fn ports(&self) -> Result<Option<Ports>, Error> {
        let Some(eal) = &self.dpdk else {
            return Ok(None);
        };
        #[cfg(feature = "dpdk")]
        {
            use pktvec::io::dpdk::{PortConfig, RssConfig};
            let mut rss = match self.rss_symmetric {
                true => RssConfig::symmetric(),
                false => RssConfig::default(),
            };
            if let Some(key) = &self.rss_key {
                rss = rss.with_hex_key(key)?;
            }
            let (workers, buffers) = (self.workers, self.buffers);
            if workers > 1 && self.rx_queues > 1 {
                let e = "--rx-queues is for one worker: with --workers N every port gets N rx \
                         and N tx queues, one of each per worker";
                return Err(e.into());
            }
            if workers > 1 {
                return Ok(Some(Ports::for_workers(eal, buffers, workers, rss)?));
            }
            let cfg = PortConfig {
                rx_queues: self.rx_queues,
                rss,
                ..PortConfig::default()
            };
            return Ok(Some(Ports::open_with(eal, buffers, &cfg)?));
        }
        #[cfg(not(feature = "dpdk"))]
        {
            let _ = eal;
            Err("--dpdk needs DPDK support: rebuild with `--features dpdk` \
                 (and the system's DPDK: apt-get install libdpdk-dev pkg-config)"
                .into())
        }
    }

    /// The buffer pool (with `--dpdk`, the mempool's mbufs).
    pub fn pool(&self, ports: &Option<Ports>) -> Result<BufferPool, Error> {
        #[cfg(feature = "dpdk")]
        if let Some(p) = ports {
            return p.pool();
        }
        let _ = ports;
        Ok(BufferPool::new(PoolConfig {
            buffers: self.buffers,
            ..PoolConfig::default()
        })?)
    }

    /// The capture of `--pcap-in`, opened (None without it); prints what was skipped.
    pub fn pcap_input(&self) -> Result<Option<Input>, Error> {
        let Some(p) = &self.pcap_in else {
            return Ok(None);
        };
        let input = Input::pcap(p, self.packets)?;
        if let Some(warning) = input.capture().and_then(|c| c.warning()) {
            eprintln!("{}: {warning}", p.display());
        }
        Ok(Some(input))
    }

    /// The input: DPDK ports, the capture `pcap` (from [`pcap_input`](Self::pcap_input)),
    /// or generated traffic from `gen`.
    pub fn input(
        &self,
        ports: &Option<Ports>,
        pcap: Option<Input>,
        gen: impl FnOnce() -> Result<Generator, Error>,
    ) -> Result<Input, Error> {
        #[cfg(feature = "dpdk")]
        if let Some(p) = ports {
            return Ok(p.input(self.packets));
        }
        let _ = ports;
        match pcap {
            Some(input) => Ok(input),
            None => Ok(Input::generator(gen()?, self.packets, self.pregen)),
        }
    }

    /// The output: DPDK ports, `--pcap-out`, or a null sink.
    pub fn output(&self, ports: &Option<Ports>) -> Result<Output, Error> {
        #[cfg(feature = "dpdk")]
        if let Some(p) = ports {
            return Ok(p.output());
        }
        let _ = ports;
        Ok(match &self.pcap_out {
            Some(p) => Output::pcap(p)?,
            None => Output::Null,
        })
    }

    /// Runs the graph to the end (a progress line a second on stderr), prints the report
    /// (or its JSON) and fails if packets were lost.
    pub fn run(
        &self,
        name: &str,
        graph: &mut Graph,
        ports: &Option<Ports>,
    ) -> Result<Report, Error> {
        #[cfg_attr(not(feature = "dpdk"), allow(unused_mut))]
        let mut report = Run::new(name)
            .trace(self.trace)
            .latency(self.latency)
            .progress(self.packets)
            .run(graph);
        #[cfg(feature = "dpdk")]
        if let Some(p) = ports {
            report.ports = p.report(graph);
        }
        let _ = ports;
        if self.json {
            println!("{}", serde_json::to_string_pretty(&report.to_json())?);
        } else {
            println!("{report}");
        }
        report.check()?;
        Ok(report)
    }

    /// The router of `l3fwd` and `nf_acl`. With `--pcap-in` and no `--routes` file, IPv4
    /// /24s (and, without `--routes6`, IPv6 /64s) covering the capture's destinations:
    /// generated routes are random prefixes that real traffic misses.
    pub fn router(&self, cfg: L3fwdConfig, pcap: Option<&Input>) -> Result<L3fwd, Error> {
        let Some(cap) = pcap
            .and_then(Input::capture)
            .filter(|_| cfg.routes.is_none())
        else {
            return Ok(L3fwd::new(cfg)?);
        };
        let (r4, mut r6) = app::routes_covering(cap);
        if let Some(p) = &cfg.routes6 {
            r6 = load_ipv6_file(p)?;
        }
        if !self.json {
            eprintln!(
                "routes: {} IPv4 /24s covering the capture's destinations (give --routes FILE \
                 for a real table), {} IPv6 routes",
                r4.len(),
                r6.len()
            );
        }
        Ok(L3fwd::with_routes(cfg, r4, r6)?)
    }

    /// The input of a router: DPDK ports, the capture `pcap`, or traffic of the profile
    /// (`--profile`, else `default`, its seed offset by `worker`) to the router's prefixes.
    pub fn router_input(
        &self,
        ports: &Option<Ports>,
        pcap: Option<Input>,
        app: &L3fwd,
        default: &str,
        worker: usize,
    ) -> Result<Input, Error> {
        let mut profile = self.profile(default)?;
        profile.seed += worker as u64;
        self.input(ports, pcap, || {
            Ok(Generator::builder(profile)
                .ipv4_prefixes(app.routes4().iter().map(|r| (r.addr, r.len)).collect())
                .ipv6_prefixes(app.routes6().iter().map(|r| (r.addr, r.len)).collect())
                .build()?)
        })
    }
}

impl CommonArgs {
    /// Runs a forwarder whose graph `graph(ports, worker)` builds: on `--workers` workers
    /// (each on its own queues of the ports of `--dpdk`, if any), or on this thread over the
    /// ports of `--dpdk` (if any).
    pub fn run_app<F>(&self, name: &str, graph: F) -> Result<(), Error>
    where
        F: Fn(&Option<Ports>, usize) -> Result<Graph, Error> + Send + Sync + 'static,
    {
        if self.workers > 1 || self.tune {
            return self.run_workers(name, graph);
        }
        let ports = self.ports()?;
        let mut graph = graph(&ports, 0)?;
        self.run(name, &mut graph, &ports)?;
        Ok(())
    }

    /// Runs the graphs `graph(ports, worker)` builds on `--workers` workers (with `--dpdk`,
    /// `ports` as the worker sees them: rx queue w and tx queue w of every port, a pool of
    /// its own) and prints each worker's runtime table, the totals, the imbalance,
    /// conservation summed over the workers and the ports' counters; fails if a worker
    /// fails or lost packets.
    pub fn run_workers<F>(&self, name: &str, graph: F) -> Result<(), Error>
    where
        F: Fn(&Option<Ports>, usize) -> Result<Graph, Error> + Send + Sync + 'static,
    {
        if self.pcap_out.is_some() || self.trace > 0 || self.json {
            return Err(
                "--workers above 1 runs generated traffic, --pcap-in or --dpdk ports; \
                 --pcap-out, --trace and --json take one worker"
                    .into(),
            );
        }
        let ports = self.ports()?;
        let shared = ports.clone();
        let mut cfg = WorkersConfig::new(self.workers.into());
        if self.tune {
            let calibrator = tune::Calibrator::new().packets(4_000).reps(1);
            cfg = cfg.with_turn(tune::worker_tuner(calibrator, Default::default(), 64));
        }
        let latency = self.latency;
        let report = Workers::run(cfg, move |w| {
            let mine = worker_ports(&shared, w.id).map_err(|e| e.to_string())?;
            let mut g = graph(&mine, w.id).map_err(|e| e.to_string())?;
            g.latency_enable(latency);
            Ok(g)
        })?;
        println!("{report}");
        let packets = report.input_packets() as f64;
        println!(
            "{name}: {} workers, {packets} packets, {:.2} Mpps in all",
            report.workers.len(),
            report
                .workers
                .iter()
                .map(|w| w.conservation.input as f64 / w.seconds)
                .sum::<f64>()
                / 1e6
        );
        #[cfg(feature = "dpdk")]
        for p in ports.iter().flat_map(|p| p.port_reports()) {
            println!("{p}");
        }
        let _ = ports;
        for w in &report.workers {
            let c = &w.conservation;
            if !c.is_balanced() || c.buffers_in_use != 0 {
                return Err(format!("worker {}: packets were lost: {c}", w.worker).into());
            }
        }
        Ok(())
    }
}

pub use app::exit_code;
