//! `tune --batcher` and `tune --online --app ppb`: the tuner's third dimension, the path
//! batcher off or its batch size, on l3fwd (IPv4 + IPv6) behind the batcher (the `ppb`
//! example's graph: IPv4/IPv6 vectors enter at `ip4-input`/`ip6-input` when batching).
//!
//! The PPB model ([`BatchedGraph`], seed `001_*` §II-B) is calibrated from six runs
//! (alternating IPv4/IPv6: off at vectors of 32 and 256, on at batches of 32 and 256;
//! single path: off and batch 256): per node, cycles per call, per packet (off and on)
//! and per packet of a vector that splits there, by least squares over the nodes'
//! runtime stats. It then predicts, for any path mix, the cycles per packet off
//! and at each batch size; the path mix of the traffic comes from the nodes' packets
//! (`ip4-input` and `ip6-input` mark the two paths).
//!
//! * Offline (`--batcher`): one sitting, both traffics (single path = IPv4 only, and
//!   alternating), every setting measured in `reps` rounds (one window of `window`
//!   vectors each, shuffled per round), medians; the tuner's choice with predicted vs
//!   measured, against off and each batch.
//! * Online (`--online --app ppb`): one live graph, traffic single → alternating →
//!   single; the [`BatchTuner`] reads each window's path shares and drives
//!   `Batcher::set_batching` on the running graph; interleaved with it, each window, the
//!   same graph at fixed "off" and fixed "batch 256".

use crate::median;
use pktvec::batcher::{Batcher, BatcherConfig, BatcherNext, BurstSource};
use pktvec::graph::builtin::{copy_into_buffers, NullSink};
use pktvec::graph::{clock, Graph, GraphBuilder, GraphConfig};
use pktvec::io::generator::Generator;
use pktvec::io::profile::TrafficProfile;
use pktvec::model::ppb::{BatchedGraph, BatchedPath, Batching, CallSample, NodeLoad};
use pktvec::model::tuner::{BatchTuner, BatchTunerConfig};
use pktvec::nodes::apps::l3fwd::{L3fwd, L3fwdConfig};
use pktvec::packet::{BufferPool, PoolConfig};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Phase 0: single path; phase 1: alternating IPv4/IPv6.
const TRAFFIC: [&str; 2] = ["single path (IPv4)", "alternating IPv4/IPv6"];
/// Batch sizes the tuner chooses from (besides off), those up to the vector size.
const BATCHES: [usize; 5] = [16, 32, 64, 128, 256];
/// The largest vector size (the graph's at build, and the calibration's).
const VECTOR: usize = 256;
/// Chunks per measured stretch ([`robust`]).
const PARTS: u64 = 8;

/// A [`BurstSource`] replaying one of several pregenerated traffic phases; the phase is
/// switched from outside through a shared atomic (read once per burst).
struct PhaseBurst {
    phases: Vec<Vec<Vec<u8>>>,
    pos: Vec<usize>,
    phase: Arc<AtomicUsize>,
}

impl BurstSource for PhaseBurst {
    fn rx_burst(&mut self, pool: &mut BufferPool, out: &mut Vec<u32>, max: usize) -> usize {
        let p = self
            .phase
            .load(Ordering::Relaxed)
            .min(self.phases.len() - 1);
        let start = out.len();
        out.resize(start + max, 0);
        let got = pool.alloc_bulk(&mut out[start..]);
        out.truncate(start + got);
        let (packets, pos) = (&self.phases[p], &mut self.pos[p]);
        copy_into_buffers(pool, &out[start..], 0, || {
            let d = &packets[*pos];
            *pos = (*pos + 1) % packets.len();
            d
        });
        got
    }
}

/// The graph: l3fwd behind the batcher (off at first), and the phase switch.
fn build(
    route_count: usize,
    route6_count: usize,
) -> Result<(Graph, Arc<AtomicUsize>), Box<dyn std::error::Error>> {
    let app = L3fwd::new(L3fwdConfig {
        route_count,
        route6_count,
        ip4_lookup_sub_batch: Some(64),
        ..L3fwdConfig::default()
    })?;
    let gen = |toml: &str| -> Result<Vec<Vec<u8>>, Box<dyn std::error::Error>> {
        let mut g = Generator::builder(TrafficProfile::from_toml(toml)?)
            .ipv4_prefixes(app.routes4().iter().map(|r| (r.addr, r.len)).collect())
            .ipv6_prefixes(app.routes6().iter().map(|r| (r.addr, r.len)).collect())
            .build()?;
        Ok((0..16384).map(|_| g.next_packet().1.to_vec()).collect())
    };
    let phases = vec![
        gen("[mix]\nipv4 = 1.0\n[sizes]\nfixed = 64\n[destinations]\nipv4_hit_rate = 1.0")?,
        gen("order = \"alternating\"\n[mix]\nipv4 = 1.0\nipv6 = 1.0\n[sizes]\nfixed = 64\n[destinations]\nipv4_hit_rate = 1.0\nipv6_hit_rate = 1.0")?,
    ];
    let phase = Arc::new(AtomicUsize::new(0));
    let src = PhaseBurst {
        pos: vec![0; phases.len()],
        phases,
        phase: phase.clone(),
    };
    let cfg = BatcherConfig {
        enabled: false,
        batch_size: VECTOR,
        ..BatcherConfig::default()
    };
    let mut b = GraphBuilder::new(GraphConfig {
        vector_size: VECTOR,
        ..GraphConfig::default()
    });
    b.add("batcher", Batcher::new(src, cfg));
    let nodes = app.add_to(&mut b);
    b.set_next("batcher", BatcherNext::Ip4, &nodes.ethernet_to_ip4.to)
        .set_next("batcher", BatcherNext::Ip6, &nodes.ethernet_to_ip6.to);
    b.add(&nodes.output_to_tx.to, NullSink);
    let g = b.build(BufferPool::new(PoolConfig {
        buffers: 16384,
        ..PoolConfig::default()
    })?)?;
    Ok((g, phase))
}

fn set_batching(g: &mut Graph, s: Batching) {
    let bt = g
        .node_mut::<Batcher<PhaseBurst>>("batcher")
        .expect("batcher node");
    match s {
        // Off: the batch size is not used; the largest keeps the rings' clamp out of it.
        Batching::Off => bt.set_batching(false, VECTOR),
        Batching::Batch(b) => bt.set_batching(true, b),
    };
}

/// A node's (name, calls, packets, cycles) per input packet.
type NodeRow = (String, f64, f64, f64);

/// One measured stretch: per node (name → (calls, packets, cycles) per input packet), all
/// nodes' cycles per input packet, end-to-end TSC cycles per packet, packets, seconds,
/// input vectors.
struct Stretch {
    nodes: Vec<NodeRow>,
    node_cycles: f64,
    cycles: f64,
    packets: u64,
    secs: f64,
    vectors: u64,
}

/// Runs until `packets` input packets (or `vectors` input vectors, whichever is given).
fn stretch(g: &mut Graph, packets: u64, vectors: u64) -> Stretch {
    g.reset_stats();
    let (t0, c0) = (Instant::now(), clock::now());
    let (mut done, mut calls) = (0u64, 0u64);
    while (packets > 0 && done < packets) || (vectors > 0 && calls < vectors) {
        done += g.run_once();
        calls += 1;
    }
    let (c1, secs) = (clock::now(), t0.elapsed().as_secs_f64());
    let rt = g.runtime();
    let (input, vin) = crate::input_totals(&rt);
    let per = |x: u64| x as f64 / input.max(1) as f64;
    Stretch {
        nodes: rt
            .rows
            .iter()
            .map(|r| {
                (
                    r.name.clone(),
                    per(r.vectors),
                    per(r.packets),
                    per(r.cycles),
                )
            })
            .collect(),
        node_cycles: per(rt.rows.iter().map(|r| r.cycles).sum()),
        cycles: (c1 - c0) as f64 / done.max(1) as f64,
        packets: input,
        secs,
        vectors: vin,
    }
}

/// A stretch measured in `parts` chunks (each its own runtime stats); the chunk with the
/// median cycles per packet stands for it (packets and seconds are the totals' share).
/// On this shared VM another process takes the CPU for whole scheduler slices (≈ 4 ms):
/// a slice lands in one chunk and moves the median little.
fn robust(g: &mut Graph, packets: u64, vectors: u64, parts: u64) -> Stretch {
    let parts = parts.max(1);
    let mut xs: Vec<Stretch> = (0..parts)
        .map(|_| {
            stretch(
                g,
                packets.div_ceil(parts) * (packets > 0) as u64,
                vectors.div_ceil(parts) * (vectors > 0) as u64,
            )
        })
        .collect();
    let (pk, vecs): (u64, u64) = xs
        .iter()
        .fold((0, 0), |a, x| (a.0 + x.packets, a.1 + x.vectors));
    xs.sort_by(|a, b| a.node_cycles.total_cmp(&b.node_cycles));
    let mut m = xs.swap_remove(xs.len() / 2);
    // Throughput at the median chunk's rate over all the packets.
    m.secs *= pk as f64 / m.packets.max(1) as f64;
    (m.packets, m.vectors) = (pk, vecs);
    m
}

/// The model's node list and paths, by name: nodes with "ip4"/"ip6" in their name are on
/// the IPv4/IPv6 path; `ethernet-input` only with the batcher off (on, IP vectors enter
/// at `ip4-input`/`ip6-input`); the rest (batcher, interface-output, tx) on both.
fn paths(names: &[String]) -> Vec<BatchedPath> {
    let path = |name: &str, other: &str| {
        let off: Vec<usize> = names
            .iter()
            .enumerate()
            .filter(|(_, n)| !n.contains(other))
            .map(|(i, _)| i)
            .collect();
        BatchedPath {
            name: name.into(),
            on: off
                .iter()
                .copied()
                .filter(|&i| names[i] != "ethernet-input")
                .collect(),
            off,
        }
    };
    vec![path("ipv4", "ip6"), path("ipv6", "ip4")]
}

/// Calibrates the PPB model: on alternating traffic off at vectors of 32 and 256 and on
/// at batches of 32 (vectors of 32) and 256 (vectors of 256); on single-path traffic off and at batch 256
/// (one path: nothing splits, which separates the split cost); `reps` rounds of one
/// window of `window` input vectors per setting, interleaved, medians.
fn calibrate(g: &mut Graph, phase: &AtomicUsize, window: u64, reps: usize) -> BatchedGraph {
    let runs: [(usize, usize, Batching); 6] = [
        (1, 32, Batching::Off),
        (1, VECTOR, Batching::Off),
        (1, 32, Batching::Batch(32)),
        (1, VECTOR, Batching::Batch(VECTOR)),
        (0, VECTOR, Batching::Off),
        (0, VECTOR, Batching::Batch(VECTOR)),
    ];
    let mut m: Vec<Vec<Stretch>> = (0..runs.len()).map(|_| Vec::new()).collect();
    for _ in 0..reps.max(1) {
        for (k, &(p, v, s)) in runs.iter().enumerate() {
            phase.store(p, Ordering::Relaxed);
            g.set_vector_size(v).expect("vector size");
            set_batching(g, s);
            stretch(g, 0, window / 8 + 1);
            m[k].push(robust(g, 0, window, PARTS));
        }
    }
    g.set_vector_size(VECTOR).expect("vector size");
    // Node names: every node seen in any run, in the order first seen.
    let mut names: Vec<String> = Vec::new();
    for s in m.iter().flatten() {
        for n in &s.nodes {
            if !names.contains(&n.0) {
                names.push(n.0.clone());
            }
        }
    }
    // The graph's structure (costs 0) gives each run's next-hop mixedness per node.
    let structure = BatchedGraph::fit(
        &names,
        paths(&names),
        BatcherConfig::default().elephant_share,
        &vec![Vec::new(); names.len()],
    );
    let loads: Vec<Vec<NodeLoad>> = runs
        .iter()
        .zip(&m)
        .map(|(&(_, v, s), st)| structure.node_load(&shares(&structure, &st[0]), v, s))
        .collect();
    let samples: Vec<Vec<CallSample>> = names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            runs.iter()
                .zip(&m)
                .zip(&loads)
                .map(|((&(_, _, s), st), load)| {
                    let get = |f: &dyn Fn(&NodeRow) -> f64| {
                        median(
                            st.iter()
                                .map(|x| x.nodes.iter().find(|n| &n.0 == name).map_or(0.0, f))
                                .collect(),
                        )
                    };
                    CallSample {
                        on: s != Batching::Off,
                        calls: get(&|n| n.1),
                        packets: get(&|n| n.2),
                        cycles: get(&|n| n.3),
                        mixed: load[i].mixed,
                    }
                })
                .collect()
        })
        .collect();
    BatchedGraph::fit(
        &names,
        structure.paths.clone(),
        structure.elephant_share,
        &samples,
    )
}

/// Path shares from a stretch's node packets, in the model's node order.
fn shares(model: &BatchedGraph, s: &Stretch) -> Vec<f64> {
    let per_node: Vec<f64> = model
        .nodes
        .iter()
        .map(|n| s.nodes.iter().find(|x| x.0 == n.name).map_or(0.0, |x| x.2))
        .collect();
    model.shares_from_node_packets(&per_node)
}

/// Options of the batcher runs.
pub struct Options {
    /// IPv4 routes.
    pub route_count: usize,
    /// IPv6 routes.
    pub route6_count: usize,
    /// Interleaved rounds: each setting measured once per round, one window each
    /// (calibration, and the offline comparison).
    pub reps: usize,
    /// Input vectors per measured window.
    pub window: u64,
    /// Online: windows per traffic phase.
    pub phase_windows: usize,
    /// Online: rounds of the live schedule.
    pub rounds: usize,
    /// The graph's vector size (batch sizes up to it).
    pub vector: usize,
}

/// The batcher tuner's settings: the batch sizes of [`BATCHES`].
fn tuner_config() -> BatchTunerConfig {
    BatchTunerConfig {
        batches: BATCHES.to_vec(),
        ..BatchTunerConfig::default()
    }
}

fn label(s: Batching) -> String {
    s.to_string()
}

/// `tune --batcher`: calibrate, predict and measure off and each batch size on both
/// traffics in one sitting; the tuner's choice per traffic.
pub fn offline(o: &Options, json_out: bool) -> Result<Value, Box<dyn std::error::Error>> {
    let (mut g, phase) = build(o.route_count, o.route6_count)?;
    stretch(&mut g, 0, 4 * o.window); // warm up
    let model = calibrate(&mut g, &phase, o.window, o.reps);
    g.set_vector_size(o.vector).expect("vector size");
    let settings: Vec<Batching> = std::iter::once(Batching::Off)
        .chain(
            BATCHES
                .iter()
                .filter(|&&b| b <= o.vector)
                .map(|&b| Batching::Batch(b)),
        )
        .collect();
    // Every (traffic, setting) `reps` times, each round in a shuffled order.
    let mut order: Vec<(usize, usize)> = (0..2)
        .flat_map(|p| (0..settings.len()).map(move |k| (p, k)))
        .collect();
    let mut m: Vec<Vec<Vec<Stretch>>> = (0..2)
        .map(|_| (0..settings.len()).map(|_| Vec::new()).collect())
        .collect();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..o.reps.max(1) {
        for i in (1..order.len()).rev() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            order.swap(i, (x % (i as u64 + 1)) as usize);
        }
        for &(p, k) in &order {
            phase.store(p, Ordering::Relaxed);
            set_batching(&mut g, settings[k]);
            stretch(&mut g, 0, o.window / 8 + 1);
            m[p][k].push(robust(&mut g, 0, o.window, PARTS));
        }
    }
    let mut traffics = Vec::new();
    for p in 0..2 {
        // The traffic's path mix, from the off runs' node packets.
        let sh = shares(&model, &m[p][0][0]);
        let tuner = BatchTuner::new(tuner_config(), model.clone(), o.vector, &sh);
        let choice = tuner.setting();
        let rows: Vec<(Batching, f64, f64, f64, f64, f64)> = settings
            .iter()
            .zip(&m[p])
            .map(|(&s, st)| {
                let nc: Vec<f64> = st.iter().map(|x| x.node_cycles).collect();
                let (lo, hi) = nc
                    .iter()
                    .fold((f64::INFINITY, 0.0f64), |a, &c| (a.0.min(c), a.1.max(c)));
                (
                    s,
                    tuner.predict(&sh, s),
                    median(nc),
                    lo,
                    hi,
                    median(st.iter().map(|x| x.cycles).collect()),
                )
            })
            .collect();
        let best = rows
            .iter()
            .min_by(|a, b| a.2.total_cmp(&b.2))
            .expect("settings");
        let chosen = rows.iter().find(|r| r.0 == choice).expect("a candidate");
        let off = rows[0].2;
        // Paired: each round's measurement against the same round's "off" (same traffic,
        // seconds apart), the median of the ratios.
        let paired: Vec<f64> = m[p]
            .iter()
            .map(|st| {
                median(
                    st.iter()
                        .zip(&m[p][0])
                        .map(|(a, o)| a.node_cycles / o.node_cycles)
                        .collect(),
                )
            })
            .collect();
        if !json_out {
            println!(
                "traffic {}: path shares {:?}; tuner (PPB model): {}",
                TRAFFIC[p],
                sh.iter()
                    .map(|s| (s * 1000.0).round() / 1000.0)
                    .collect::<Vec<_>>(),
                label(choice)
            );
            println!(
                "  {:>10} {:>10} {:>10} {:>16} {:>8} {:>10} {:>8}",
                "batcher", "predicted", "measured", "range", "error", "end-to-end", "vs off"
            );
            for (r, pr) in rows.iter().zip(&paired) {
                println!(
                    "  {:>10} {:>10.1} {:>10.1} {:>7.1}–{:<8.1} {:>+7.1}% {:>10.1} {:>+7.1}% (paired {:>+6.1}%){}",
                    label(r.0),
                    r.1,
                    r.2,
                    r.3,
                    r.4,
                    100.0 * (r.1 - r.2) / r.2,
                    r.5,
                    100.0 * (r.2 - off) / off,
                    100.0 * (pr - 1.0),
                    if r.0 == choice { "  <- tuner" } else { "" }
                );
            }
            println!(
                "  tuner {}: {:.1} cycles/packet measured; best measured {}: {:.1}; tuner / best {:.1}%",
                label(choice),
                chosen.2,
                label(best.0),
                best.2,
                100.0 * best.2 / chosen.2
            );
        }
        traffics.push(json!({
            "traffic": TRAFFIC[p], "shares": sh,
            "choice": label(choice), "choice_measured": chosen.2,
            "best": label(best.0), "best_measured": best.2, "quality": best.2 / chosen.2,
            "settings": rows.iter().map(|r| json!({"batching": label(r.0), "predicted": r.1,
                "measured": r.2, "min": r.3, "max": r.4, "end_to_end": r.5,
                "vs_off": (r.2 - off) / off})).collect::<Vec<_>>(),
            "paired_vs_off": settings.iter().zip(&paired).map(|(s, r)| json!({"batching": label(*s), "ratio": r})).collect::<Vec<_>>(),
        }));
    }
    Ok(json!({
        "mode": "batcher", "vector": o.vector, "reps": o.reps, "window_vectors": o.window,
        "route_count": o.route_count, "route6_count": o.route6_count,
        "model": model, "traffics": traffics,
    }))
}

/// The live schedule: traffic phases in order.
const SCHEDULE: [usize; 3] = [0, 1, 0];

/// `tune --online --app ppb`: the batcher tuner on a live graph, traffic single →
/// alternating → single, against fixed off and fixed batch = the vector size interleaved
/// per window.
pub fn online(o: &Options, json_out: bool) -> Result<Value, Box<dyn std::error::Error>> {
    let (mut g, phase) = build(o.route_count, o.route6_count)?;
    stretch(&mut g, 0, 4 * o.window);
    let model = calibrate(&mut g, &phase, o.window, o.reps);
    g.set_vector_size(o.vector).expect("vector size");
    let fixed = [Batching::Off, Batching::Batch(o.vector)];
    let mut rounds = Vec::new();
    let mut log = Vec::new();
    // Times the tuner moved the live knob, and whether every exploration ended in its
    // segment (the tuner settled).
    let (mut switches, mut all_settled) = (0u64, true);
    for round in 0..o.rounds.max(1) {
        phase.store(SCHEDULE[0], Ordering::Relaxed);
        set_batching(&mut g, Batching::Off);
        let first = stretch(&mut g, 0, o.window);
        let mut tuner = BatchTuner::new(
            tuner_config(),
            model.clone(),
            o.vector,
            &shares(&model, &first),
        );
        let mut segs = Vec::new();
        for (seg, &p) in SCHEDULE.iter().enumerate() {
            phase.store(p, Ordering::Relaxed);
            let d0 = tuner.decisions();
            // Per window Mpps of the tuner and of each fixed setting (medians reported:
            // a window hit by another process does not dominate).
            let mut tw: Vec<f64> = Vec::new();
            let mut fw: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
            let mut settled: Option<(usize, u64)> = None;
            let mut vecs = 0u64;
            let mut explorations = 0;
            for w in 0..o.phase_windows {
                for (k, &f) in fixed.iter().enumerate() {
                    set_batching(&mut g, f);
                    stretch(&mut g, 0, o.window / 8 + 1);
                    let s = robust(&mut g, 0, o.window, PARTS);
                    fw[k].push(s.packets as f64 / s.secs.max(1e-12) / 1e6);
                }
                let was = tuner.setting();
                set_batching(&mut g, was);
                stretch(&mut g, 0, o.window / 8 + 1);
                let s = robust(&mut g, 0, o.window, PARTS);
                tw.push(s.packets as f64 / s.secs.max(1e-12) / 1e6);
                vecs += s.vectors;
                let sh = shares(&model, &s);
                let exploring = tuner.exploring();
                let next = tuner.observe(s.node_cycles, &sh);
                if !exploring && tuner.exploring() {
                    explorations += 1;
                }
                switches += (next != was) as u64;
                if settled.is_none() && tuner.decisions() > d0 {
                    settled = Some((w + 1, vecs));
                }
                log.push(
                    json!({"round": round, "segment": seg, "phase": p, "window": w,
                    "batching": label(was), "next": label(next), "exploring": exploring,
                    "node_cycles_per_packet": s.node_cycles, "cycles_per_packet": s.cycles,
                    "mpps": s.packets as f64 / s.secs / 1e6, "shares": sh}),
                );
            }
            all_settled &= explorations == 0 || (settled.is_some() && !tuner.exploring());
            // The transition: the windows until settled (or the first `confirm` + 1).
            let tr = settled.map_or(3, |s| s.0).min(tw.len());
            let ratio =
                |a: &[f64], b: &[f64]| median(a.iter().zip(b).map(|(x, y)| x / y).collect());
            segs.push(json!({
                "segment": seg, "phase": p, "traffic": TRAFFIC[p],
                "tuner_mpps": median(tw.clone()), "off_mpps": median(fw[0].clone()),
                "batch_mpps": median(fw[1].clone()),
                "tuner_vs_off": ratio(&tw, &fw[0]), "tuner_vs_batch": ratio(&tw, &fw[1]),
                "transition_tuner_mpps": median(tw[..tr].to_vec()),
                "transition_off_mpps": median(fw[0][..tr].to_vec()),
                "transition_batch_mpps": median(fw[1][..tr].to_vec()),
                "windows_until_settled": settled.map(|s| s.0),
                "vectors_until_settled": settled.map(|s| s.1),
                "explorations": explorations, "final": label(tuner.setting()),
            }));
        }
        rounds.push(json!({"round": round, "segments": segs}));
    }
    if !json_out {
        println!(
            "ppb online: l3fwd ({} / {} routes) behind the batcher, vectors of {}, windows of {} vectors, {} per phase, {} rounds",
            o.route_count, o.route6_count, o.vector, o.window, o.phase_windows, o.rounds
        );
        for r in &rounds {
            for s in r["segments"].as_array().into_iter().flatten() {
                println!(
                    "round {} segment {} ({}): Mpps (medians of windows) tuner {:.2}, fixed off {:.2}, fixed batch {} {:.2}; settled after {} windows ({} vectors), explorations {}, final {}",
                    r["round"],
                    s["segment"],
                    s["traffic"].as_str().unwrap_or(""),
                    s["tuner_mpps"].as_f64().unwrap_or(f64::NAN),
                    s["off_mpps"].as_f64().unwrap_or(f64::NAN),
                    o.vector,
                    s["batch_mpps"].as_f64().unwrap_or(f64::NAN),
                    s["windows_until_settled"],
                    s["vectors_until_settled"],
                    s["explorations"],
                    s["final"].as_str().unwrap_or("")
                );
            }
        }
    }
    if !json_out {
        println!(
            "live knob: the tuner switched Batcher::set_batching {switches} times; every re-decision settled: {all_settled}"
        );
    }
    Ok(json!({
        "mode": "batcher-online", "switches": switches, "all_settled": all_settled, "vector": o.vector, "window_vectors": o.window,
        "phase_windows": o.phase_windows, "rounds_n": o.rounds,
        "route_count": o.route_count, "route6_count": o.route6_count,
        "model": model, "rounds": rounds, "windows": log,
    }))
}
