//! Running a forwarder from your own crate, as the examples do: where packets come from
//! ([`Input`]: generated traffic, a capture file, DPDK ports), where they go ([`Output`]:
//! nowhere, a capture file, DPDK ports), running the [`Graph`] until the input is done
//! ([`Run`]) and what it did ([`Report`]: `show runtime`, `show errors`, the packets nodes
//! made, the rate, and the conservation line).
//!
//! ```
//! use pktvec::app::{Input, Output, Run};
//! use pktvec::io::generator::Generator;
//! use pktvec::io::profile::TrafficProfile;
//! use pktvec::nodes::apps::l2fwd::{L2fwd, L2fwdConfig};
//! use pktvec::prelude::*;
//!
//! let app = L2fwd::new(L2fwdConfig { table_size: 1024, ..L2fwdConfig::default() })?;
//! let profile = TrafficProfile::from_toml("[l2]\nhosts = 1024\nports = 4\n")?;
//! let input = Input::generator(Generator::builder(profile).build()?, 10_000, 4096);
//!
//! let mut b = GraphBuilder::new(GraphConfig::default());
//! input.add_to(&mut b, "input", app.entry());
//! let nodes = app.add_to(&mut b);
//! Output::Null.add_to(&mut b, &nodes.output_to_tx.to);
//! let mut graph = b.build(BufferPool::new(PoolConfig::default())?)?;
//!
//! let report = Run::new("l2fwd").run(&mut graph);
//! println!("{report}");
//! assert_eq!(report.packets, 10_000);
//! report.check()?; // every packet accounted for, every buffer back in the pool
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! With the `dpdk` feature, `pktvec::app::dpdk::DpdkPorts` opens DPDK ports and gives the
//! buffer pool, the [`Input`] and the [`Output`] over them, for one graph or for each of
//! several workers (its own rx and tx queue of every port, RSS configured, its own pool).

#[cfg(feature = "dpdk")]
pub mod dpdk;

use pktvec_graph::builtin::NullSink;
use pktvec_graph::{Conservation, ErrorTable, Graph, GraphBuilder, RuntimeTable};
use pktvec_io::capture::{Capture, CaptureIoError, PcapSink, PcapSource, PcapSourceNext};
use pktvec_io::generator::{Generator, GeneratorNext, GeneratorSource};
use pktvec_lookup::routes::{Route4, Route6};
use pktvec_packet::wire::{parse_l2, EtherType, Ipv4Packet, Ipv6Packet};
use std::collections::BTreeSet;
use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

/// The error type of this module's fallible calls: any error, shown to a user by its
/// `Display` text (see [`exit_code`]).
pub type Error = Box<dyn std::error::Error>;

/// Where the packets come from: one input node (several for DPDK ports and queues).
pub enum Input {
    /// Generated traffic ([`Input::generator`]).
    Generator(Box<GeneratorSource>),
    /// A capture replayed in a loop ([`Input::pcap`]).
    Pcap(Box<PcapSource>),
    /// DPDK rx nodes, one per port and queue (`dpdk::DpdkPorts::input`).
    #[cfg(feature = "dpdk")]
    Dpdk(Vec<pktvec_io::dpdk::DpdkRx>),
}

impl Input {
    /// `packets` packets of generated traffic. With `pregen > 0`, `pregen` packets are
    /// made once and replayed (fast); with 0 every packet is generated as it is sent.
    ///
    /// ```
    /// use pktvec::app::Input;
    /// use pktvec::io::generator::Generator;
    /// use pktvec::io::profile::TrafficProfile;
    /// let gen = Generator::builder(TrafficProfile::default()).build()?;
    /// let input = Input::generator(gen, 1000, 256);
    /// assert!(input.capture().is_none());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn generator(gen: Generator, packets: u64, pregen: usize) -> Input {
        let src = GeneratorSource::new(gen).with_limit(packets);
        Input::Generator(Box::new(if pregen > 0 {
            src.pregenerate(pregen)
        } else {
            src
        }))
    }

    /// A pcap or pcapng file replayed in a loop until `packets` packets were sent. Fails
    /// if the file cannot be read, or holds nothing pktvec can replay (the message names
    /// its link types). Packets that were skipped are described by
    /// [`Capture::warning`] on [`capture`](Self::capture): print it.
    ///
    /// ```
    /// use pktvec::app::Input;
    /// use pktvec::io::capture::write_pcap;
    /// let path = std::env::temp_dir().join(format!("pktvec-app-in-{}.pcap", std::process::id()));
    /// write_pcap(&path, &vec![vec![0u8; 60]; 3])?;
    /// let input = Input::pcap(&path, 100)?;
    /// assert_eq!(input.capture().unwrap().packets.len(), 3);
    ///
    /// let err = Input::pcap("no-such.pcap", 100).err().unwrap();
    /// assert_eq!(err.to_string(), "no-such.pcap: No such file or directory (os error 2)");
    /// # std::fs::remove_file(&path).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn pcap(path: impl AsRef<Path>, packets: u64) -> Result<Input, CaptureIoError> {
        let src = PcapSource::open(path)?;
        Ok(Input::Pcap(Box::new(src.looping(true).with_limit(packets))))
    }

    /// The capture a [`Input::Pcap`] replays (None for the others): its packets, link
    /// types and what was skipped. See [`Input::pcap`] for an example.
    pub fn capture(&self) -> Option<&Capture> {
        match self {
            Input::Pcap(p) => Some(p.capture()),
            _ => None,
        }
    }

    /// Adds the input node under `name`, its arc leading to `target` (with several DPDK
    /// rx nodes, the others are `name-1`, `name-2`, ...).
    ///
    /// ```
    /// use pktvec::app::{Input, Output};
    /// use pktvec::io::generator::Generator;
    /// use pktvec::io::profile::TrafficProfile;
    /// use pktvec::prelude::*;
    /// let gen = Generator::builder(TrafficProfile::default()).build()?;
    /// let mut b = GraphBuilder::new(GraphConfig::default());
    /// Input::generator(gen, 1000, 0).add_to(&mut b, "input", "tx");
    /// Output::Null.add_to(&mut b, "tx");
    /// let mut graph = b.build(BufferPool::new(PoolConfig::default())?)?;
    /// assert_eq!(graph.run_until_idle(), 1000);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
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
                use pktvec_io::dpdk::DpdkRxNext;
                for (i, rx) in rxs.into_iter().enumerate() {
                    let n = match i {
                        0 => name.to_string(),
                        _ => format!("{name}-{i}"),
                    };
                    b.add(&n, rx).set_next(&n, DpdkRxNext::Out, target);
                }
            }
        }
    }
}

/// Where transmitted packets go: one sink node.
pub enum Output {
    /// Freed ([`NullSink`]).
    Null,
    /// Written to a pcap file ([`Output::pcap`]).
    Pcap(Box<PcapSink>),
    /// Sent on the DPDK port whose index is the packet's tx interface
    /// (`dpdk::DpdkPorts::output`).
    #[cfg(feature = "dpdk")]
    Dpdk(Box<pktvec_io::dpdk::DpdkTx>),
}

impl Output {
    /// A pcap file (created or truncated now) that receives every transmitted packet.
    ///
    /// ```
    /// use pktvec::app::{Input, Output, Run};
    /// use pktvec::io::capture::read_capture;
    /// use pktvec::io::generator::Generator;
    /// use pktvec::io::profile::TrafficProfile;
    /// use pktvec::prelude::*;
    /// let path = std::env::temp_dir().join(format!("pktvec-app-out-{}.pcap", std::process::id()));
    /// let gen = Generator::builder(TrafficProfile::default()).build()?;
    /// let mut b = GraphBuilder::new(GraphConfig::default());
    /// Input::generator(gen, 100, 0).add_to(&mut b, "input", "tx");
    /// Output::pcap(&path)?.add_to(&mut b, "tx");
    /// let mut graph = b.build(BufferPool::new(PoolConfig::default())?)?;
    /// Run::new("gen-to-pcap").run(&mut graph).check()?;
    /// assert_eq!(read_capture(&path)?.packets.len(), 100);
    /// # std::fs::remove_file(&path).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn pcap(path: impl AsRef<Path>) -> Result<Output, CaptureIoError> {
        Ok(Output::Pcap(Box::new(PcapSink::create(path)?)))
    }

    /// Adds the sink node under `name` (a forwarder's `output_to_tx.to`, usually `tx`).
    /// See [`Input::add_to`] for an example.
    pub fn add_to(self, b: &mut GraphBuilder, name: &str) {
        match self {
            Output::Null => b.add(name, NullSink),
            Output::Pcap(s) => b.add(name, *s),
            #[cfg(feature = "dpdk")]
            Output::Dpdk(tx) => b.add(name, *tx),
        };
    }
}

/// How to run a graph: its name in the report, tracing, a progress line.
///
/// ```
/// use pktvec::app::Run;
/// use pktvec::prelude::*;
/// let mut b = GraphBuilder::new(GraphConfig::default());
/// b.add("source", PacketSource::new(vec![vec![0u8; 60]]).with_limit(1000))
///     .add("tx", NullSink)
///     .set_next("source", SourceNext::Out, "tx");
/// let mut graph = b.build(BufferPool::new(PoolConfig::default())?)?;
/// let report = Run::new("demo").trace(2).run(&mut graph);
/// assert_eq!(report.packets, 1000);
/// assert!(report.trace.as_ref().unwrap().contains("source"));
/// assert!(report.to_string().contains("\nconservation: in 1000 + created 0 = out 1000"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct Run {
    name: String,
    trace: usize,
    progress: Option<u64>,
    latency: bool,
}

impl Run {
    /// A run named `name` (the report's rate line starts with it), without trace or
    /// progress line.
    pub fn new(name: &str) -> Run {
        Run {
            name: name.to_string(),
            trace: 0,
            progress: None,
            latency: false,
        }
    }

    /// Traces the first `n` packets; the report holds the trace.
    pub fn trace(mut self, n: usize) -> Run {
        self.trace = n;
        self
    }

    /// Measures each packet's latency from its input node to its sink
    /// ([`pktvec_graph::latency`]); the report shows it next to the runtime table.
    pub fn latency(mut self, on: bool) -> Run {
        self.latency = on;
        self
    }

    /// Prints a progress line every second on stderr, counting towards `expected`
    /// packets: `name:   1200000 / 5000000 packets, 9.81 Mpps`.
    pub fn progress(mut self, expected: u64) -> Run {
        self.progress = Some(expected);
        self
    }

    /// Runs the graph until its inputs are done and nothing is in flight, then reports.
    pub fn run(&self, graph: &mut Graph) -> Report {
        if self.trace > 0 {
            graph.trace_add(self.trace);
        }
        if self.latency {
            graph.latency_enable(true);
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
            if let Some(expected) = self.progress {
                if last.elapsed().as_secs_f64() >= 1.0 {
                    last = Instant::now();
                    eprintln!(
                        "{}: {done:>12} / {expected} packets, {:.2} Mpps",
                        self.name,
                        done as f64 / start.elapsed().as_secs_f64() / 1e6
                    );
                }
            }
        }
        Report {
            name: self.name.clone(),
            packets: done,
            seconds: start.elapsed().as_secs_f64(),
            cpu_seconds: cpu_start.elapsed().as_secs_f64(),
            runtime: graph.runtime(),
            errors: graph.errors(),
            created: graph.created(),
            conservation: graph.conservation(),
            trace: (self.trace > 0).then(|| graph.trace().to_string()),
            latency: graph.latency(),
            #[cfg(feature = "dpdk")]
            ports: Vec::new(),
        }
    }
}

/// What a [`Run`] did. `Display` prints the trace (if any), the runtime table, the error
/// counters, the packets nodes made (if any), the rate and the conservation line
/// (`conservation: in ... = out ... + dropped ...: balanced; buffers in use 0`); see
/// [`Run`] for an example.
#[derive(Clone, Debug)]
pub struct Report {
    /// The run's name.
    pub name: String,
    /// Packets the graph's nodes took in (the sum of `run_once`'s counts).
    pub packets: u64,
    /// Wall-clock seconds.
    pub seconds: f64,
    /// CPU seconds of the running thread.
    pub cpu_seconds: f64,
    /// `show runtime`.
    pub runtime: RuntimeTable,
    /// `show errors`: drops by node and reason.
    pub errors: ErrorTable,
    /// Packets nodes made, by node and reason.
    pub created: ErrorTable,
    /// Packets in against packets out and dropped.
    pub conservation: Conservation,
    /// The trace of the first packets, if [`Run::trace`] asked for one.
    pub trace: Option<String>,
    /// Latency per sink, if [`Run::latency`] asked for it (else empty).
    pub latency: pktvec_graph::LatencyTable,
    /// The DPDK ports' counters (`dpdk::DpdkPorts::report` fills it in).
    #[cfg(feature = "dpdk")]
    pub ports: Vec<dpdk::PortReport>,
}

impl Report {
    /// Million packets a second of wall-clock time.
    pub fn mpps(&self) -> f64 {
        self.packets as f64 / self.seconds / 1e6
    }

    /// Million packets a second of the thread's CPU time.
    pub fn mpps_cpu(&self) -> f64 {
        self.packets as f64 / self.cpu_seconds / 1e6
    }

    /// True if conservation holds and every buffer is back in the pool.
    pub fn is_lossless(&self) -> bool {
        self.conservation.is_balanced() && self.conservation.buffers_in_use == 0
    }

    /// An error (`packets were lost: <conservation>`) unless [`is_lossless`](Self::is_lossless).
    ///
    /// ```
    /// use pktvec::app::Run;
    /// use pktvec::prelude::*;
    /// let mut b = GraphBuilder::new(GraphConfig::default());
    /// b.add("source", PacketSource::new(vec![vec![0u8; 60]]).with_limit(100))
    ///     .add("tx", NullSink)
    ///     .set_next("source", SourceNext::Out, "tx");
    /// let mut graph = b.build(BufferPool::new(PoolConfig::default())?)?;
    /// let report = Run::new("demo").run(&mut graph);
    /// assert!(report.is_lossless() && report.mpps() > 0.0 && report.mpps_cpu() > 0.0);
    /// report.check()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn check(&self) -> Result<(), Error> {
        if self.is_lossless() {
            Ok(())
        } else {
            Err(format!("packets were lost: {}", self.conservation).into())
        }
    }

    /// The report as JSON: `forwarder`, `packets`, `seconds`, `mpps`, `cpu_seconds`,
    /// `mpps_cpu`, `runtime`, `errors`, `created`, `conservation`, `ports` (null without
    /// DPDK ports).
    ///
    /// ```
    /// use pktvec::app::Run;
    /// use pktvec::prelude::*;
    /// let mut b = GraphBuilder::new(GraphConfig::default());
    /// b.add("source", PacketSource::new(vec![vec![0u8; 60]]).with_limit(10))
    ///     .add("tx", NullSink)
    ///     .set_next("source", SourceNext::Out, "tx");
    /// let mut graph = b.build(BufferPool::new(PoolConfig::default())?)?;
    /// let json = Run::new("demo").run(&mut graph).to_json();
    /// assert_eq!(json["packets"], 10);
    /// assert_eq!(json["conservation"]["output"], 10);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn to_json(&self) -> serde_json::Value {
        #[cfg(feature = "dpdk")]
        let ports = match self.ports.is_empty() {
            true => serde_json::Value::Null,
            false => self.ports.iter().map(dpdk::PortReport::to_json).collect(),
        };
        #[cfg(not(feature = "dpdk"))]
        let ports = serde_json::Value::Null;
        serde_json::json!({
            "forwarder": self.name,
            "packets": self.packets,
            "seconds": self.seconds,
            "mpps": self.mpps(),
            "cpu_seconds": self.cpu_seconds,
            "mpps_cpu": self.mpps_cpu(),
            "runtime": self.runtime,
            "errors": self.errors,
            "created": self.created,
            "conservation": self.conservation,
            "latency": self.latency,
            "ports": ports,
        })
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(t) = &self.trace {
            writeln!(f, "{t}")?;
        }
        writeln!(f, "{}\n", self.runtime)?;
        if !self.latency.rows.is_empty() {
            writeln!(f, "{}", self.latency)?;
        }
        writeln!(f, "{}", self.errors)?;
        if !self.created.rows.is_empty() {
            writeln!(f, "packets made by nodes:\n{}", self.created)?;
        }
        writeln!(
            f,
            "{}: {} packets in {:.3} s: {:.2} Mpps ({:.2} Mpps per second of this thread's CPU time, {:.3} s)",
            self.name,
            self.packets,
            self.seconds,
            self.mpps(),
            self.mpps_cpu(),
            self.cpu_seconds
        )?;
        write!(f, "conservation: {}", self.conservation)?;
        #[cfg(feature = "dpdk")]
        for p in &self.ports {
            write!(f, "\n{p}")?;
        }
        Ok(())
    }
}

/// Routes that cover every destination of a capture: one IPv4 /24 per destination /24
/// and one IPv6 /64 per destination /64, next hops 0, 1, 2, ... in address order.
///
/// A router's generated routes (random prefixes) miss real traffic: give
/// [`L3fwd::with_routes`](pktvec_nodes::apps::l3fwd::L3fwd::with_routes) these, or a route
/// file, to forward a capture.
///
/// ```
/// use pktvec::app::routes_covering;
/// use pktvec::io::capture::Capture;
/// use pktvec::nodes::apps::l3fwd::{L3fwd, L3fwdConfig};
/// use pktvec::packet::builder::PacketBuilder;
/// use std::net::Ipv4Addr;
/// let to = |d: Ipv4Addr| {
///     PacketBuilder::ethernet([2, 0, 0, 0, 0, 1].into(), [2, 0, 0, 0, 0, 2].into())
///         .ipv4(Ipv4Addr::new(192, 168, 0, 1), d)
///         .udp(1, 2)
///         .build()
/// };
/// let cap = Capture {
///     packets: vec![to(Ipv4Addr::new(10, 1, 2, 3)), to(Ipv4Addr::new(10, 1, 2, 9)), to(Ipv4Addr::new(8, 8, 8, 8))],
///     ..Default::default()
/// };
/// let (r4, r6) = routes_covering(&cap);
/// let r4: Vec<String> = r4.iter().map(|r| r.to_string()).collect();
/// assert_eq!(r4, ["8.8.8.0/24 0", "10.1.2.0/24 1"]);
/// assert!(r6.is_empty());
/// let app = L3fwd::with_routes(L3fwdConfig::default(), routes_covering(&cap).0, vec![])?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn routes_covering(capture: &Capture) -> (Vec<Route4>, Vec<Route6>) {
    let mut v4 = BTreeSet::new();
    let mut v6 = BTreeSet::new();
    for frame in &capture.packets {
        let Ok(l2) = parse_l2(frame) else { continue };
        let Some(l3) = frame.get(l2.l3_offset as usize..) else {
            continue;
        };
        if l2.ethertype == EtherType::IPV4 {
            if let Ok(ip) = Ipv4Packet::new_checked(l3) {
                v4.insert(u32::from(ip.dst_addr()) & 0xffff_ff00);
            }
        } else if l2.ethertype == EtherType::IPV6 {
            if let Ok(ip) = Ipv6Packet::new_checked(l3) {
                v6.insert(u128::from(ip.dst_addr()) & !((1u128 << 64) - 1));
            }
        }
    }
    let r4 = v4.into_iter().enumerate().map(|(i, a)| Route4 {
        addr: Ipv4Addr::from(a),
        len: 24,
        next_hop: i as u32,
    });
    let r6 = v6.into_iter().enumerate().map(|(i, a)| Route6 {
        addr: Ipv6Addr::from(a),
        len: 64,
        next_hop: i as u32,
    });
    (r4.collect(), r6.collect())
}

/// The exit status of a program whose work returned `result`: success, or the error's
/// `Display` text on stderr (`error: in.pcap: No such file or directory (os error 2)`) and
/// status 1. For `fn main() -> ExitCode { exit_code(run()) }`.
///
/// ```
/// use pktvec::app::exit_code;
/// use std::process::ExitCode;
/// assert_eq!(exit_code(Ok(())), ExitCode::SUCCESS);
/// assert_eq!(exit_code(Err("no routes".into())), ExitCode::FAILURE); // prints "error: no routes"
/// ```
pub fn exit_code(result: Result<(), Error>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
