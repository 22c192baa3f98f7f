//! Let the overhead model tune l3fwd (`pktvec::tune`): calibrate, predict the (V, b) grid,
//! take the tuner's choice and check it (`cargo run --release --example tune`); `--online`:
//! the (V, b) tuner, then the batcher tuner, on the live graph while its traffic switches
//! between IPv4 only and alternating IPv4/IPv6. Measured figures: `pktvec-bench model`.

use clap::Parser;
use pktvec::batcher::{Batcher, BatcherConfig, BatcherNext, BurstSource};
use pktvec::graph::builtin::{copy_into_buffers, NullSink};
use pktvec::graph::{Graph, GraphBuilder, GraphConfig};
use pktvec::io::generator::Generator;
use pktvec::io::profile::TrafficProfile;
use pktvec::nodes::apps::l3fwd::{L3fwd, L3fwdConfig};
use pktvec::packet::{BufferPool, PoolConfig};
use pktvec::tune::{self, AutoTuner, BatchTunerConfig, BatcherCalibrator, BatcherTuner};
use pktvec::tune::{Calibrator, Traffic, TunerConfig};
use std::sync::{atomic::AtomicUsize, atomic::Ordering::Relaxed, Arc};

#[derive(Parser)]
/// Calibrate the overhead model on l3fwd, predict, tune.
struct Cli {
    /// The tuners on the live graph while the traffic switches.
    #[arg(long)]
    online: bool,
}

/// Replays one of two pregenerated traffics (0: IPv4 only, 1: alternating IPv4/IPv6).
struct Phased(Vec<Vec<Vec<u8>>>, Vec<usize>, Arc<AtomicUsize>);

impl BurstSource for Phased {
    fn rx_burst(&mut self, pool: &mut BufferPool, out: &mut Vec<u32>, max: usize) -> usize {
        let (p, start) = (self.2.load(Relaxed), out.len());
        out.resize(start + max, 0); // the new buffers, then the packets copied into them
        let got = pool.alloc_bulk(&mut out[start..]);
        out.truncate(start + got);
        let (pkts, pos) = (&self.0[p], &mut self.1[p]);
        copy_into_buffers(pool, &out[start..], 0, || {
            *pos = (*pos + 1) % pkts.len();
            &pkts[*pos]
        });
        got
    }
}

/// l3fwd behind the path batcher, and its traffic switch.
fn build(routes: usize) -> Result<(Graph, Arc<AtomicUsize>), Box<dyn std::error::Error>> {
    let mut c = L3fwdConfig::default(); // the IPv4 lookup follows the graph's sub-batch:
    (c.route_count, c.route6_count, c.ip4_lookup_sub_batch) = (routes, routes / 5, None);
    let app = L3fwd::new(c)?;
    let gen = |toml: &str| -> Result<Vec<Vec<u8>>, Box<dyn std::error::Error>> {
        let mut g = Generator::builder(TrafficProfile::from_toml(toml)?)
            .ipv4_prefixes(app.routes4().iter().map(|r| (r.addr, r.len)).collect())
            .ipv6_prefixes(app.routes6().iter().map(|r| (r.addr, r.len)).collect())
            .build()?;
        Ok((0..16384).map(|_| g.next_packet().1.to_vec()).collect())
    };
    let t = "[sizes]\nfixed = 64\n[flows]\ncount = 16384\n[destinations]\nipv4_hit_rate = 1.0\nipv6_hit_rate = 1.0\n";
    let mixed = format!("order = \"alternating\"\n[mix]\nipv4 = 1.0\nipv6 = 1.0\n{t}");
    let phases = vec![gen(&format!("[mix]\nipv4 = 1.0\n{t}"))?, gen(&mixed)?];
    let phase = Arc::new(AtomicUsize::new(0));
    let mut b = GraphBuilder::new(GraphConfig::default());
    let src = Phased(phases, vec![0, 0], phase.clone());
    b.add("batcher", Batcher::new(src, BatcherConfig::default()));
    let nodes = app.add_to(&mut b);
    b.set_next("batcher", BatcherNext::Ip4, &nodes.ethernet_to_ip4.to)
        .set_next("batcher", BatcherNext::Ip6, &nodes.ethernet_to_ip6.to);
    b.add(&nodes.output_to_tx.to, NullSink);
    let mut g = b.build(BufferPool::new(PoolConfig::default())?)?;
    tune::set_batching::<Phased>(&mut g, "batcher", tune::Batching::Off)?; // plain l3fwd
    Ok((g, phase))
}

/// IPv4 routes (IPv6: a fifth), turns per window, windows per traffic phase.
const ROUTES: usize = 100_000;
/// Packets per calibration run.
const PACKETS: u64 = 50_000;
const WINDOW: u64 = 64;
const PHASE_WINDOWS: usize = 24;
const TRAFFIC: [&str; 2] = ["IPv4 only", "alternating IPv4/IPv6"];

fn median(mut x: Vec<f64>) -> f64 {
    x.sort_by(f64::total_cmp);
    x[x.len() / 2]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let cli = Cli::parse();
    let (mut g, phase) = build(ROUTES)?;
    tune::Window::measure(&mut g, 256); // warm up
    let cal = Calibrator::new().packets(PACKETS);
    let calib = cal.reps(if cli.online { 1 } else { 3 }).calibrate(&mut g)?;
    let cfg = TunerConfig::default();
    if !cli.online {
        println!("l3fwd, {} IPv4 routes; predicted cycles/packet:", ROUTES);
        for p in tune::predict(&calib, &tune::grid(&cfg)) {
            let (s, c) = (p.setting, p.cycles_per_packet);
            println!("  V {:>3} b {:>3}: {c:6.1}", s.vector, s.sub_batch);
        }
        let (choice, default) = (tune::choose(&calib, &cfg), tune::current(&g));
        let runs = tune::measure_shuffled(&mut g, &[choice, default], 3, PACKETS, 8)?;
        for (what, s) in [("tuner's choice", choice), ("default", default)] {
            let m = runs.iter().filter(|r| r.0 == s);
            let m = median(m.map(|r| r.1.node_cycles).collect());
            let p = calib.predict(s.vector, s.sub_batch, |_| 1.0);
            let (v, b) = (s.vector, s.sub_batch);
            println!("{what}: V {v} b {b}: predicted {p:.1}, measured {m:.1}");
        }
        return Ok(());
    }
    // The (V, b) tuner on the live graph, traffic IPv4 → alternating → IPv4.
    let t = AutoTuner::new(calib, cfg).window_vectors(WINDOW);
    let mut t = t.attach(&mut g)?;
    for (seg, &p) in [0usize, 1, 0].iter().enumerate() {
        phase.store(p, Relaxed);
        let (mut mpps, mut explorations) = (Vec::new(), 0);
        for _ in 0..PHASE_WINDOWS {
            let s = t.step(&mut g)?;
            mpps.push(s.window.mpps);
            explorations += s.started as u32;
        }
        let (s, m, tr) = (t.setting(), median(mpps), TRAFFIC[p]);
        let (v, b) = (s.vector, s.sub_batch);
        println!("segment {seg} ({tr}): {m:.2} Mpps, explorations {explorations}, now V {v} b {b}");
    }
    // The batcher tuner: calibrate the path-batching model, then the same schedule.
    g.set_vector_size(256)?; // the batcher tuner decides for the vector size in force
    let sw = |_: &mut Graph, t: Traffic| phase.store((t == Traffic::Mixed) as usize, Relaxed);
    let cal = BatcherCalibrator::new().window(4 * WINDOW);
    let model = cal.calibrate::<Phased>(&mut g, "batcher", sw)?;
    phase.store(0, Relaxed);
    let bcfg = BatchTunerConfig::default();
    let mut bt = BatcherTuner::<Phased>::attach(model, bcfg, &mut g, "batcher", WINDOW)?;
    let mut settled = true;
    for (seg, &p) in [0usize, 1, 0].iter().enumerate() {
        phase.store(p, Relaxed);
        let (d0, mut explorations) = (bt.decisions(), 0);
        for _ in 0..PHASE_WINDOWS {
            explorations += bt.step(&mut g)?.started as u32;
        }
        settled &= explorations == 0 || (bt.decisions() > d0 && !bt.exploring());
        let (tr, now) = (TRAFFIC[p], bt.setting());
        println!("batcher segment {seg} ({tr}): explorations {explorations}, now {now}");
    }
    println!("batcher tuner: every re-decision settled: {settled}");
    Ok(())
}
