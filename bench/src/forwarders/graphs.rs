//! The forwarders' graphs as the measurements build them, and timing one graph under
//! several settings in interleaved chunks.
//!
//! Each graph is `input → <forwarder> → tx`: the input replays pre-generated frames
//! (`GeneratorSource::pregenerate`: buffer allocation and a copy per packet, like an rx
//! driver) or a capture in a loop, with no packet limit; `tx` frees. One graph is built per
//! forwarder and table, and its vector size B and sub-batch b are changed between chunks
//! (`Graph::set_vector_size`, `set_sub_batch`), so every setting runs over the same pool,
//! tables and memory.

use std::path::Path;

use pktvec::graph::builtin::NullSink;
use pktvec::graph::{clock, Graph, GraphBuilder, GraphConfig};
use pktvec::io::capture::{PcapSource, PcapSourceNext};
use pktvec::io::generator::{Generator, GeneratorNext, GeneratorSource};
use pktvec::io::profile::TrafficProfile;
use pktvec::nodes::apps::cryptofwd::{Cryptofwd, CryptofwdConfig};
use pktvec::nodes::apps::l2fwd::{L2fwd, L2fwdConfig};
use pktvec::nodes::apps::l3fwd::L3fwd;
use pktvec::nodes::apps::ndnfwd::{Ndnfwd, NdnfwdConfig};
use pktvec::packet::{BufferPool, PoolConfig};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// Buffers in each graph's pool (the examples' default).
pub const BUFFERS: u32 = 16384;

/// l3fwd's built-in traffic: 64-byte IPv4/UDP to destinations inside the routes (98%).
pub const L3_IPV4: &str = "[mix]\nipv4 = 1.0\n[flows]\ncount = 65536\n[sizes]\nfixed = 64\n\
                           [destinations]\nipv4_hit_rate = 0.98\nipv6_hit_rate = 0.98\n";
/// All IPv6, 78-byte frames (the seed paper's IPv6 experiment).
pub const L3_IPV6: &str = "[mix]\nipv4 = 0.0\nipv6 = 1.0\n[flows]\ncount = 65536\n[sizes]\n\
                           fixed = 78\n[destinations]\nipv4_hit_rate = 0.98\nipv6_hit_rate = 0.98\n";
/// cryptofwd's built-in traffic: 64-byte IPv4/UDP, 1024 flows.
const CRYPTO: &str = "[mix]\nipv4 = 1.0\n[flows]\ncount = 1024\n[sizes]\nfixed = 64\n";

/// The graph settings every measurement starts from (the examples' defaults: V 256,
/// prefetch distance 4, sub-batch 16).
pub fn config() -> GraphConfig {
    GraphConfig::default()
}

fn pool() -> Res<BufferPool> {
    Ok(BufferPool::new(PoolConfig {
        buffers: BUFFERS,
        ..PoolConfig::default()
    })?)
}

/// Adds the endless generator input `input → entry`, pre-generating `pregen` frames.
fn add_generator(b: &mut GraphBuilder, gen: Generator, pregen: usize, entry: &str) {
    let src = GeneratorSource::new(gen).pregenerate(pregen);
    b.add("input", src)
        .set_next("input", GeneratorNext::Out, entry);
}

/// l2fwd over `app` (its stations), traffic between those stations.
pub fn l2fwd(app: &L2fwd, pregen: usize) -> Res<Graph> {
    l2fwd_seeded(app, pregen, None)
}

/// [`l2fwd`] with the traffic's seed given (one per worker), else the profile's.
pub fn l2fwd_seeded(app: &L2fwd, pregen: usize, seed: Option<u64>) -> Res<Graph> {
    let n = app.config().table_size;
    let profile = format!(
        "[mix]\nipv4 = 1.0\n[flows]\ncount = {}\n[sizes]\nfixed = 64\n[l2]\nhosts = {}\nports = {}\n",
        n.clamp(2, 1 << 20),
        n.max(2),
        app.ports()
    );
    let gen = Generator::builder(profile_seeded(&profile, seed)?).build()?;
    let mut b = GraphBuilder::new(config());
    add_generator(&mut b, gen, pregen, app.entry());
    let nodes = app.add_to(&mut b);
    b.add(&nodes.output_to_tx.to, NullSink);
    Ok(b.build(pool()?)?)
}

/// The L2 switch with `stations` in its MAC table (the example's other defaults).
pub fn l2_app(stations: usize) -> Res<L2fwd> {
    Ok(L2fwd::new(L2fwdConfig {
        table_size: stations,
        ..L2fwdConfig::default()
    })?)
}

/// l3fwd over `app` with generated traffic of `profile` (TOML) to its routes.
pub fn l3fwd(app: &L3fwd, profile: &str, pregen: usize) -> Res<Graph> {
    l3fwd_seeded(app, profile, pregen, None)
}

/// [`l3fwd`] with the traffic's seed given (one per worker), else the profile's.
pub fn l3fwd_seeded(app: &L3fwd, profile: &str, pregen: usize, seed: Option<u64>) -> Res<Graph> {
    l3fwd_with(app, profile, pregen, seed, pool()?, |_, entry| {
        Ok(entry.to_string())
    })
}

/// [`l3fwd_seeded`] over `pool`, with nodes of the caller's between the input and the
/// router: `front(builder, router's entry)` adds them and returns the node the input
/// sends to.
pub fn l3fwd_with<S: AsRef<str>>(
    app: &L3fwd,
    profile: &str,
    pregen: usize,
    seed: Option<u64>,
    pool: BufferPool,
    front: impl FnOnce(&mut GraphBuilder, &str) -> Res<S>,
) -> Res<Graph> {
    let gen = l3_generator(app, profile, seed)?;
    let mut b = GraphBuilder::new(config());
    let entry = front(&mut b, app.entry())?;
    add_generator(&mut b, gen, pregen, entry.as_ref());
    let nodes = app.add_to(&mut b);
    b.add(&nodes.output_to_tx.to, NullSink);
    Ok(b.build(pool)?)
}

/// The traffic generator of [`l3fwd_with`]: `profile` (TOML, its seed replaced by `seed` if
/// given) aimed at `app`'s IPv4 and IPv6 prefixes. The same arguments give the same frames.
pub fn l3_generator(app: &L3fwd, profile: &str, seed: Option<u64>) -> Res<Generator> {
    Ok(Generator::builder(profile_seeded(profile, seed)?)
        .ipv4_prefixes(app.routes4().iter().map(|r| (r.addr, r.len)).collect())
        .ipv6_prefixes(app.routes6().iter().map(|r| (r.addr, r.len)).collect())
        .build()?)
}

/// The profile of `toml`, its seed replaced by `seed` if given.
fn profile_seeded(toml: &str, seed: Option<u64>) -> Res<TrafficProfile> {
    let mut p = TrafficProfile::from_toml(toml)?;
    if let Some(s) = seed {
        p.seed = s;
    }
    Ok(p)
}

/// l3fwd over `app` replaying the capture at `path` in a loop.
pub fn l3fwd_pcap(app: &L3fwd, path: &Path) -> Res<Graph> {
    let src = PcapSource::open(path)
        .map_err(|e| format!("{}: {e}", path.display()))?
        .looping(true);
    let mut b = GraphBuilder::new(config());
    b.add("input", src)
        .set_next("input", PcapSourceNext::Out, app.entry());
    let nodes = app.add_to(&mut b);
    b.add(&nodes.output_to_tx.to, NullSink);
    Ok(b.build(pool()?)?)
}

/// The NDN forwarder with `names` generated name prefixes.
pub fn ndn_app(names: usize) -> Res<Ndnfwd> {
    Ok(Ndnfwd::new(NdnfwdConfig {
        name_count: names,
        ..NdnfwdConfig::default()
    })?)
}

/// ndnfwd over `app`: Interests for its prefixes plus one or two components.
pub fn ndnfwd(app: &Ndnfwd, pregen: usize) -> Res<Graph> {
    let names = app.interest_names();
    let flows = names.len().clamp(1, 1 << 16);
    let profile =
        format!("[mix]\nipv4 = 0.0\nndn = 1.0\n[flows]\ncount = {flows}\n[sizes]\nfixed = 64\n");
    let gen = Generator::builder(TrafficProfile::from_toml(&profile)?)
        .names(names)
        .build()?;
    let mut b = GraphBuilder::new(config());
    add_generator(&mut b, gen, pregen, app.entry());
    let nodes = app.add_to(&mut b);
    b.add(&nodes.output_to_tx.to, NullSink);
    Ok(b.build(pool()?)?)
}

/// cryptofwd (AES-128-GCM over every payload) with its built-in traffic.
pub fn cryptofwd(pregen: usize) -> Res<Graph> {
    let app = Cryptofwd::new(CryptofwdConfig::default())?;
    let gen = Generator::builder(TrafficProfile::from_toml(CRYPTO)?).build()?;
    let mut b = GraphBuilder::new(config());
    add_generator(&mut b, gen, pregen, app.entry());
    let nodes = app.add_to(&mut b)?;
    b.add(&nodes.output_to_tx.to, NullSink);
    Ok(b.build(pool()?)?)
}

/// A graph setting: vector size B and sub-batch b (capped at B).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Setting {
    /// Vector size.
    pub vector: usize,
    /// Sub-batch of the two-phase lookups.
    pub sub: usize,
}

impl Setting {
    /// B and b (b capped at B).
    pub fn new(vector: usize, sub: usize) -> Setting {
        Setting {
            vector,
            sub: sub.min(vector),
        }
    }

    /// Puts this setting in force on `g`.
    pub fn apply(self, g: &mut Graph) -> Res<()> {
        g.set_vector_size(self.vector)?;
        g.set_sub_batch(self.sub);
        Ok(())
    }
}

/// One timed chunk: packets and TSC cycles, and each node's share from the runtime table.
#[derive(Clone, Debug, Default)]
pub struct Chunk {
    /// Packets the input produced.
    pub packets: u64,
    /// TSC cycles the chunk took.
    pub cycles: u64,
    /// (node, cycles, packets) of every node called in the chunk.
    pub nodes: Vec<(String, u64, u64)>,
}

impl Chunk {
    /// Million packets per second by the TSC.
    pub fn mpps(&self) -> f64 {
        self.packets as f64 * clock::tsc_hz() / self.cycles.max(1) as f64 / 1e6
    }

    /// TSC cycles per packet, whole graph (input and tx included).
    pub fn cycles_per_packet(&self) -> f64 {
        self.cycles as f64 / self.packets.max(1) as f64
    }
}

/// Runs `g` for about `secs` seconds (whole turns of the main loop) and times it.
pub fn run_for(g: &mut Graph, secs: f64) -> Chunk {
    g.reset_stats();
    let budget = (secs * clock::tsc_hz()) as u64;
    let c0 = clock::now();
    let mut packets = 0u64;
    let cycles = loop {
        packets += g.run_once();
        let c = clock::now() - c0;
        if c >= budget {
            break c;
        }
    };
    let nodes = g
        .runtime()
        .rows
        .into_iter()
        .map(|r| (r.name, r.cycles, r.packets))
        .collect();
    Chunk {
        packets,
        cycles,
        nodes,
    }
}

/// Cycles per packet of each node over `chunks` (its cycles over the packets the input
/// produced, so the nodes' figures add up to the graph's), in node order.
pub fn node_cycles(chunks: &[Chunk]) -> Vec<(String, f64)> {
    let packets: u64 = chunks.iter().map(|c| c.packets).sum();
    let mut out: Vec<(String, u64)> = Vec::new();
    for c in chunks {
        for (name, cycles, _) in &c.nodes {
            match out.iter_mut().find(|(n, _)| n == name) {
                Some(e) => e.1 += cycles,
                None => out.push((name.clone(), *cycles)),
            }
        }
    }
    out.into_iter()
        .map(|(n, c)| (n, c as f64 / packets.max(1) as f64))
        .collect()
}

/// Times the `settings` of `g` in `reps` rounds, one chunk of `secs` each per round, the
/// order reversed every other round (so each setting runs first and last equally often),
/// after one warm-up chunk each. Returns the chunks per setting, in round order.
pub fn interleave(
    g: &mut Graph,
    settings: &[Setting],
    reps: usize,
    secs: f64,
) -> Res<Vec<Vec<Chunk>>> {
    for s in settings {
        s.apply(g)?;
        run_for(g, secs / 4.0);
    }
    let mut out = vec![Vec::with_capacity(reps); settings.len()];
    for rep in 0..reps {
        let order: Vec<usize> = if rep % 2 == 0 {
            (0..settings.len()).collect()
        } else {
            (0..settings.len()).rev().collect()
        };
        for i in order {
            settings[i].apply(g)?;
            out[i].push(run_for(g, secs));
        }
    }
    Ok(out)
}

/// The median of `v` (mean of the middle two for an even count; 0 if empty).
pub fn median(v: &[f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

/// Median, min and max of `v`.
pub fn spread(v: &[f64]) -> [f64; 3] {
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    [median(v), lo, hi]
}

/// [`plot::lines`](crate::plot::lines), creating the plot's directory first (the extra
/// plots are drawn before `Sitting::finish` creates the data directory).
pub fn plot_lines(
    path: &Path,
    title: &str,
    x_desc: &str,
    y_desc: &str,
    series: &[(String, Vec<(f64, f64)>)],
) -> Res<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    crate::plot::lines(path, title, x_desc, y_desc, series)
}
