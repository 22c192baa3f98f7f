//! `tune --online`: the tuner on a live graph whose traffic changes mid-run.
//!
//! One graph is built once; its input node replays one of two pregenerated traffic phases
//! and is switched between them while the graph runs (`Graph::node_mut`). Vector size B
//! and sub-batch b are runtime settings of the graph (`Graph::set_vector_size`,
//! `Graph::set_sub_batch`; l3fwd's IPv4 lookup follows the graph's b), so the tuner
//! changes them on the running graph, without a rebuild, every window of `window` input
//! vectors, from the window's runtime stats (cycles of all nodes per input packet).
//!
//! * l3fwd: a traffic-mix change, single path (IPv4 only) ↔ alternating IPv4/IPv6.
//! * l2fwd: a table change, 4,096 active stations (cache resident) ↔ 1M active stations of
//!   a 4M-station table (beyond the caches).

use crate::median;
use pktvec::graph::builtin::NullSink;
use pktvec::graph::NodeKind;
use pktvec::graph::{clock, Context, Frame, Graph, GraphBuilder, GraphConfig, NoError, Node};
use pktvec::io::generator::{Generator, GeneratorNext};
use pktvec::io::profile::TrafficProfile;
use pktvec::model::calibrate::{Calibration, Sample};
use pktvec::model::tuner::{Setting, Tuner, TunerConfig};
use pktvec::nodes::apps::l2fwd::{L2fwd, L2fwdConfig};
use pktvec::nodes::apps::l3fwd::{L3fwd, L3fwdConfig};
use pktvec::packet::{BufferPool, PoolConfig};
use serde_json::{json, Value};
use std::time::Instant;

/// Packets of one traffic phase, replayed in a loop.
struct Replay {
    bytes: Vec<u8>,
    /// (offset, length, rx_if) per packet.
    index: Vec<(u32, u16, u16)>,
    pos: usize,
}

impl Replay {
    fn new(mut gen: Generator, n: usize) -> Replay {
        let mut bytes = Vec::new();
        let mut index = Vec::with_capacity(n);
        for _ in 0..n {
            let (f, data) = gen.next_packet();
            let len = data.len().min(u16::MAX as usize);
            let off = bytes.len() as u32;
            bytes.extend_from_slice(&data[..len]);
            index.push((off, len as u16, gen.flows()[f].rx_if));
        }
        Replay {
            bytes,
            index,
            pos: 0,
        }
    }
}

/// An input node replaying one of several traffic phases; `phase` switches them.
pub struct PhaseSource {
    phases: Vec<Replay>,
    /// The phase replayed now.
    pub phase: usize,
}

impl Node for PhaseSource {
    type Next = GeneratorNext;
    type Error = NoError;
    const KIND: NodeKind = NodeKind::Input;

    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        let want = cx.vector_size();
        let got = cx.alloc_into(frame, want);
        let start = frame.len() - got;
        let r = &mut self.phases[self.phase];
        let pool = cx.pool_mut();
        for &bi in &frame.buffers()[start..] {
            let (off, len, rx) = r.index[r.pos];
            r.pos = if r.pos + 1 == r.index.len() {
                0
            } else {
                r.pos + 1
            };
            let data = &r.bytes[off as usize..off as usize + len as usize];
            let mut p = pool.packet_mut(bi);
            let n = data.len().min(p.tailroom());
            if let Ok(dst) = p.append(n) {
                dst.copy_from_slice(&data[..n]);
            }
            p.meta_mut().rx_if = rx;
        }
        cx.enqueue_all(frame, GeneratorNext::Out);
    }
}

/// The scenario's graph and the names of its two phases.
fn build(l2: bool) -> Result<(Graph, [&'static str; 2]), Box<dyn std::error::Error>> {
    const PREGEN: usize = 65536;
    let mut b = GraphBuilder::new(GraphConfig::default());
    let (phases, entry, tx, names) = if l2 {
        let size = 4 << 20;
        let app = L2fwd::new(L2fwdConfig {
            table_size: size,
            ..L2fwdConfig::default()
        })?;
        let gen = |hosts: usize| -> Result<Generator, Box<dyn std::error::Error>> {
            Ok(Generator::builder(TrafficProfile::from_toml(&format!(
                "[mix]\nipv4 = 1.0\n[flows]\ncount = {}\n[sizes]\nfixed = 64\n[l2]\nhosts = {hosts}\nports = 4\n",
                hosts.min(1 << 20)
            ))?)
            .build()?)
        };
        let phases = vec![
            Replay::new(gen(4096)?, PREGEN),
            Replay::new(gen(size)?, PREGEN),
        ];
        let tx = app.add_to(&mut b).output_to_tx.to;
        (
            phases,
            app.entry(),
            tx,
            ["4K stations", "1M of 4M stations"],
        )
    } else {
        let app = L3fwd::new(L3fwdConfig {
            route_count: 500_000,
            route6_count: 20_000,
            ip4_lookup_sub_batch: None, // follow the graph's b
            ..L3fwdConfig::default()
        })?;
        let gen = |toml: &str| -> Result<Generator, Box<dyn std::error::Error>> {
            Ok(Generator::builder(TrafficProfile::from_toml(toml)?)
                .ipv4_prefixes(app.routes4().iter().map(|r| (r.addr, r.len)).collect())
                .ipv6_prefixes(app.routes6().iter().map(|r| (r.addr, r.len)).collect())
                .build()?)
        };
        let phases = vec![
            Replay::new(
                gen("[mix]\nipv4 = 1.0\n[flows]\ncount = 65536\n[sizes]\nfixed = 64\n[destinations]\nipv4_hit_rate = 0.98")?,
                PREGEN,
            ),
            Replay::new(
                gen("order = \"alternating\"\n[mix]\nipv4 = 1.0\nipv6 = 1.0\n[flows]\ncount = 65536\n[sizes]\nfixed = 64\n[destinations]\nipv4_hit_rate = 0.98\nipv6_hit_rate = 0.98")?,
                PREGEN,
            ),
        ];
        let tx = app.add_to(&mut b).output_to_tx.to;
        (
            phases,
            app.entry(),
            tx,
            ["single path (IPv4)", "alternating IPv4/IPv6"],
        )
    };
    b.add("input", PhaseSource { phases, phase: 0 })
        .set_next("input", GeneratorNext::Out, entry);
    b.add(&tx, NullSink);
    let g = b.build(BufferPool::new(PoolConfig::default())?)?;
    Ok((g, names))
}

/// One measured window.
#[derive(Clone, Debug)]
struct Window {
    /// Cycles of all nodes per input packet (what the model is calibrated on).
    node_cycles: f64,
    /// End-to-end TSC cycles per packet (dispatch included).
    cycles: f64,
    /// Packets per second, wall clock.
    pps: f64,
    packets: u64,
    vectors: u64,
    /// Each node's share of the input packets, then of the cycles: the traffic profile.
    profile: Vec<f64>,
}

/// Runs `vectors` input vectors at the graph's current setting.
fn window(g: &mut Graph, vectors: u64) -> Window {
    g.reset_stats();
    let (t0, c0) = (Instant::now(), clock::now());
    let mut done = 0;
    while done < vectors {
        g.run_once();
        done += 1;
    }
    let (c1, secs) = (clock::now(), t0.elapsed().as_secs_f64());
    let rt = g.runtime();
    let (packets, vecs) = crate::input_totals(&rt);
    let node: u64 = rt.rows.iter().map(|r| r.cycles).sum();
    let mut profile: Vec<f64> = rt
        .rows
        .iter()
        .map(|r| r.packets as f64 / packets.max(1) as f64)
        .collect();
    profile.extend(rt.rows.iter().map(|r| r.cycles as f64 / node.max(1) as f64));
    Window {
        profile,
        node_cycles: node as f64 / packets.max(1) as f64,
        cycles: (c1 - c0) as f64 / packets.max(1) as f64,
        pps: packets as f64 / secs.max(1e-9),
        packets,
        vectors: vecs,
    }
}

fn apply(g: &mut Graph, s: Setting) {
    g.set_vector_size(s.vector).expect("vector size in range");
    g.set_sub_batch(s.sub_batch);
}

/// Options of the online run.
pub struct Options {
    /// l2fwd (table change) or l3fwd (mix change).
    pub l2: bool,
    /// Input vectors per window.
    pub window: u64,
    /// Windows per phase.
    pub phase_windows: usize,
    /// Windows per setting in the fixed-setting sweep of each phase.
    pub sweep_windows: usize,
    /// Vector sizes and sub-batches the tuner chooses from.
    pub vectors: Vec<usize>,
    /// Sub-batches.
    pub sub_batches: Vec<usize>,
    /// Drift threshold.
    pub drift: f64,
    /// Calibration settings measured this many windows each (median).
    pub calib_windows: usize,
    /// Rounds of the live schedule (tuner and fixed settings interleaved).
    pub rounds: usize,
    /// Detect changes from the traffic profile (node shares of packets and cycles) instead
    /// of the absolute cycles per packet.
    pub profile: bool,
}

/// Runs the scenario; returns the JSON document and prints a summary unless `json`.
pub fn run(o: &Options, json_out: bool) -> Result<Value, Box<dyn std::error::Error>> {
    let (mut g, names) = build(o.l2)?;
    let set_phase = |g: &mut Graph, p: usize| {
        g.node_mut::<PhaseSource>("input")
            .expect("input node")
            .phase = p;
    };
    // Warm up (fills the pool caches, the tables' hot lines).
    apply(
        &mut g,
        Setting {
            vector: 256,
            sub_batch: 16,
        },
    );
    window(&mut g, 4 * o.window);

    // 1. Offline calibration on phase 0 (the seed's offline phase): 7 settings.
    let mut calib_runs = Vec::new();
    for &v in o.vectors.iter().filter(|&&v| v >= 32) {
        calib_runs.push((v, 64.min(v)));
    }
    for &bb in &[1, 4, 16] {
        calib_runs.push((256, bb));
    }
    let mut per_node: Vec<(String, Sample)> = Vec::new();
    for &(v, bb) in &calib_runs {
        apply(
            &mut g,
            Setting {
                vector: v,
                sub_batch: bb,
            },
        );
        window(&mut g, o.window);
        let mut rows: Vec<Vec<(String, f64)>> = Vec::new();
        for _ in 0..o.calib_windows.max(1) {
            window(&mut g, o.window);
            rows.push(crate::node_cycles_per_input(&g.runtime()));
        }
        for (i, (name, _)) in rows[0].iter().enumerate() {
            per_node.push((
                name.clone(),
                Sample {
                    vector: v,
                    sub_batch: bb,
                    cycles_per_packet: median(rows.iter().map(|r| r[i].1).collect()),
                },
            ));
        }
    }
    let calib = Calibration::fit(&per_node);
    let cfg = TunerConfig {
        vectors: o.vectors.clone(),
        sub_batches: o.sub_batches.clone(),
        drift: o.drift,
        ..TunerConfig::default()
    };
    let initial = Tuner::new(cfg.clone(), calib.clone()).setting();

    // 2. The fixed-setting sweep of each phase: every setting, `sweep_windows` windows,
    //    interleaved in rounds, medians: the best fixed setting per phase.
    let mut grid = Vec::new();
    for &v in &o.vectors {
        for &bb in o.sub_batches.iter().filter(|&&b| b <= v) {
            grid.push(Setting {
                vector: v,
                sub_batch: bb,
            });
        }
    }
    let mut sweep: Vec<Vec<Vec<Window>>> = vec![vec![Vec::new(); grid.len()]; 2];
    for _ in 0..o.sweep_windows.max(1) {
        for (p, per_phase) in sweep.iter_mut().enumerate() {
            set_phase(&mut g, p);
            for (i, &s) in grid.iter().enumerate() {
                apply(&mut g, s);
                window(&mut g, o.window / 4 + 1); // settle after the switch
                per_phase[i].push(window(&mut g, o.window));
            }
        }
    }
    let fixed: Vec<Vec<(Setting, f64, f64)>> = sweep
        .iter()
        .map(|per_phase| {
            grid.iter()
                .zip(per_phase)
                .map(|(&s, ws)| {
                    (
                        s,
                        median(ws.iter().map(|w| w.pps).collect()),
                        median(ws.iter().map(|w| w.node_cycles).collect()),
                    )
                })
                .collect()
        })
        .collect();
    let best_fixed: Vec<(Setting, f64)> = fixed
        .iter()
        .map(|f| {
            let b = f.iter().max_by(|a, b| a.1.total_cmp(&b.1)).expect("a grid");
            (b.0, b.1)
        })
        .collect();
    let at = |p: usize, s: Setting| -> f64 {
        fixed[p]
            .iter()
            .find(|f| f.0 == s)
            .map(|f| f.1)
            .unwrap_or(f64::NAN)
    };

    // 3. The live run: phases 0, 1, 0, the tuner deciding every window; in each round the
    //    same schedule is also run at fixed settings (each phase's best fixed from the sweep
    //    and the initial choice), so the comparison shares the machine's drift.
    let mut contenders: Vec<Setting> = vec![initial];
    for b in &best_fixed {
        if !contenders.contains(&b.0) {
            contenders.push(b.0);
        }
    }
    let mut log = Vec::new();
    let mut rounds = Vec::new();
    for round in 0..o.rounds.max(1) {
        let mut tuner = Tuner::new(cfg.clone(), calib.clone());
        let (tuned, fixed_segs) = schedule_run(&mut g, o, &mut tuner, &contenders, round, &mut log);
        let fixed_runs: Vec<Value> = contenders
            .iter()
            .zip(fixed_segs)
            .map(
                |(c, segs)| json!({"vector": c.vector, "sub_batch": c.sub_batch, "segments": segs}),
            )
            .collect();
        rounds.push(json!({"round": round, "tuner": tuned, "fixed": fixed_runs}));
    }
    // Per segment, medians over rounds: the tuner's throughput against the best of the
    // fixed settings run in the same rounds, and against the initial choice kept fixed.
    let mut segments = Vec::new();
    for (seg, &p) in SCHEDULE.iter().enumerate() {
        let med = |f: &dyn Fn(&Value) -> Option<f64>| -> Option<f64> {
            let xs: Vec<f64> = rounds.iter().filter_map(f).collect();
            (!xs.is_empty()).then(|| median(xs))
        };
        let tuner_mpps = med(&|r: &Value| r["tuner"][seg]["mpps"].as_f64());
        let fixed_mpps: Vec<(Setting, f64)> = contenders
            .iter()
            .enumerate()
            .filter_map(|(k, &c)| {
                med(&|r: &Value| r["fixed"][k]["segments"][seg]["mpps"].as_f64()).map(|m| (c, m))
            })
            .collect();
        let best = fixed_mpps
            .iter()
            .copied()
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .expect("contenders");
        let settle: Vec<f64> = rounds
            .iter()
            .filter_map(|r| r["tuner"][seg]["vectors_until_settled"].as_f64())
            .collect();
        let settle_w: Vec<f64> = rounds
            .iter()
            .filter_map(|r| r["tuner"][seg]["windows_until_settled"].as_f64())
            .collect();
        segments.push(json!({
            "segment": seg, "phase": p, "traffic": names[p],
            "tuner_mpps": tuner_mpps,
            "tuner_mpps_until_settled": med(&|r: &Value| r["tuner"][seg]["mpps_until_settled"].as_f64()),
            "tuner_mpps_after_settled": med(&|r: &Value| r["tuner"][seg]["mpps_after_settled"].as_f64()),
            "vectors_until_settled": settle, "windows_until_settled": settle_w,
            "unsettled_rounds": rounds.len() - settle.len(),
            "explorations": rounds.iter().map(|r| r["tuner"][seg]["explorations"].clone()).collect::<Vec<_>>(),
            "final_settings": rounds.iter().map(|r| r["tuner"][seg]["final_setting"].clone()).collect::<Vec<_>>(),
            "best_fixed": {"vector": best.0.vector, "sub_batch": best.0.sub_batch, "mpps": best.1},
            "initial_fixed_mpps": fixed_mpps.first().map(|f| f.1),
            "fixed_mpps": fixed_mpps.iter().map(|(c, m)| json!({"vector": c.vector, "sub_batch": c.sub_batch, "mpps": m})).collect::<Vec<_>>(),
            "tuner_vs_best_fixed": tuner_mpps.map(|t| t / best.1),
            "best_fixed_mpps_during_transition": med(&|r: &Value| {
                let k = contenders.iter().position(|c| *c == best.0)?;
                r["fixed"][k]["segments"][seg]["mpps_during_tuner_transition"].as_f64()
            }),
        }));
    }
    let doc = json!({
        "app": if o.l2 { "l2fwd" } else { "l3fwd" }, "phases": names,
        "window_vectors": o.window, "phase_windows": o.phase_windows, "drift": o.drift,
        "rounds": o.rounds, "trigger": if o.profile { "profile" } else { "cycles" },
        "calibration": calib,
        "initial": {"vector": initial.vector, "sub_batch": initial.sub_batch},
        "fixed": fixed.iter().enumerate().map(|(p, f)| json!({"phase": p, "settings": f.iter().map(|(s, pps, c)| json!({"vector": s.vector, "sub_batch": s.sub_batch, "mpps": pps / 1e6, "node_cycles_per_packet": c})).collect::<Vec<_>>()})).collect::<Vec<_>>(),
        "segments": segments, "round_results": rounds, "windows": log,
    });
    if !json_out {
        println!(
            "{}: phases {:?}, windows of {} vectors, {} windows per phase, {} rounds; calibrated on phase 0, initial setting V {}, b {}",
            doc["app"].as_str().unwrap_or(""),
            names,
            o.window,
            o.phase_windows,
            o.rounds,
            initial.vector,
            initial.sub_batch
        );
        for (p, b) in best_fixed.iter().enumerate() {
            println!(
                "sweep, phase {p} ({}): best fixed V {}, b {}: {:.2} Mpps; the initial setting: {:.2} Mpps",
                names[p],
                b.0.vector,
                b.0.sub_batch,
                b.1 / 1e6,
                at(p, initial) / 1e6
            );
        }
        for sgm in doc["segments"].as_array().into_iter().flatten() {
            println!(
                "segment {} ({}): tuner {:.2} Mpps (until settled {:.2} vs best fixed {:.2} in the same windows, after {:.2}); best fixed V {} b {} {:.2}; initial fixed {:.2}; tuner/best {:.1}%; vectors until settled {} (windows {}), unsettled rounds {}, explorations {}",
                sgm["segment"],
                sgm["traffic"].as_str().unwrap_or(""),
                sgm["tuner_mpps"].as_f64().unwrap_or(f64::NAN),
                sgm["tuner_mpps_until_settled"].as_f64().unwrap_or(f64::NAN),
                sgm["best_fixed_mpps_during_transition"]
                    .as_f64()
                    .unwrap_or(f64::NAN),
                sgm["tuner_mpps_after_settled"].as_f64().unwrap_or(f64::NAN),
                sgm["best_fixed"]["vector"],
                sgm["best_fixed"]["sub_batch"],
                sgm["best_fixed"]["mpps"].as_f64().unwrap_or(f64::NAN),
                sgm["initial_fixed_mpps"].as_f64().unwrap_or(f64::NAN),
                100.0 * sgm["tuner_vs_best_fixed"].as_f64().unwrap_or(f64::NAN),
                sgm["vectors_until_settled"],
                sgm["windows_until_settled"],
                sgm["unsettled_rounds"],
                sgm["explorations"]
            );
        }
    }
    Ok(doc)
}

/// The phase order of a live run.
const SCHEDULE: [usize; 3] = [0, 1, 0];

/// Runs the schedule once with the tuner and, interleaved window by window on the same
/// graph, at each fixed setting of `fixed`: every window, each contender in turn gets its
/// setting applied, a short settling run (window/8 vectors, not counted) and one measured
/// window, so all see the same traffic phase and the same state of this noisy machine. The
/// tuner decides after each of its own windows. Returns the tuner's segments and each fixed
/// setting's segments (JSON), and appends the tuner's windows to `log`.
fn schedule_run(
    g: &mut Graph,
    o: &Options,
    tuner: &mut Tuner,
    fixed: &[Setting],
    round: usize,
    log: &mut Vec<Value>,
) -> (Vec<Value>, Vec<Vec<Value>>) {
    let mut s = tuner.setting();
    let mut segments = Vec::new();
    let mut fixed_segments = vec![Vec::new(); fixed.len()];
    let mpps = |pk: u64, t: f64| (t > 0.0).then(|| pk as f64 / t / 1e6);
    for (seg, &p) in SCHEDULE.iter().enumerate() {
        g.node_mut::<PhaseSource>("input")
            .expect("input node")
            .phase = p;
        let decisions0 = tuner.decisions();
        // An exploration still running from the previous segment counts as this one's.
        let mut explored = tuner.exploring();
        let mut settled_at: Option<usize> = None;
        let (mut vec_to_settle, mut pk_trans, mut t_trans) = (0u64, 0u64, 0.0f64);
        let (mut pk_after, mut t_after, mut pk_all, mut t_all) = (0u64, 0.0f64, 0u64, 0.0f64);
        let mut fixed_acc = vec![(0u64, 0.0f64); fixed.len()];
        let mut explorations = 0u64;
        // Per window, each fixed contender's (packets, seconds).
        let mut fixed_windows: Vec<Vec<(u64, f64)>> = Vec::new();
        for w in 0..o.phase_windows {
            let mut this = Vec::new();
            for (k, &f) in fixed.iter().enumerate() {
                apply(g, f);
                window(g, o.window / 8 + 1);
                let m = window(g, o.window);
                fixed_acc[k].0 += m.packets;
                fixed_acc[k].1 += m.packets as f64 / m.pps;
                this.push((m.packets, m.packets as f64 / m.pps));
            }
            fixed_windows.push(this);
            apply(g, s);
            window(g, o.window / 8 + 1);
            let m = window(g, o.window);
            let was = s;
            let secs = m.packets as f64 / m.pps;
            pk_all += m.packets;
            t_all += secs;
            let exploring_before = tuner.exploring();
            s = if o.profile {
                tuner.observe_profile(m.node_cycles, &m.profile)
            } else {
                tuner.observe(m.node_cycles)
            };
            if !exploring_before && tuner.exploring() {
                explorations += 1;
                explored = true;
            }
            if settled_at.is_none() {
                vec_to_settle += m.vectors;
                pk_trans += m.packets;
                t_trans += secs;
                if explored && !tuner.exploring() && tuner.decisions() > decisions0 {
                    // The first exploration after the change is over.
                    settled_at = Some(w + 1);
                } else if !explored && w + 1 >= 2 * cfg_confirm() {
                    // No drift: the setting in place suits the new traffic.
                    settled_at = Some(0);
                    vec_to_settle = 0;
                }
            } else {
                pk_after += m.packets;
                t_after += secs;
            }
            log.push(json!({
                "round": round, "segment": seg, "phase": p, "window": w, "vector": was.vector,
                "sub_batch": was.sub_batch, "exploring": exploring_before,
                "node_cycles_per_packet": m.node_cycles, "cycles_per_packet": m.cycles,
                "mpps": m.pps / 1e6, "packets": m.packets, "vectors": m.vectors,
                "profile": m.profile,
            }));
        }
        segments.push(json!({
            "segment": seg, "phase": p, "mpps": mpps(pk_all, t_all),
            "windows_until_settled": settled_at,
            "vectors_until_settled": settled_at.map(|_| vec_to_settle),
            "explorations": explorations,
            "mpps_until_settled": mpps(pk_trans, t_trans),
            "mpps_after_settled": mpps(pk_after, t_after),
            "final_setting": {"vector": s.vector, "sub_batch": s.sub_batch},
        }));
        // The same windows as the tuner's transition (until settled, or the whole segment).
        let trans = match settled_at {
            Some(0) => 2 * cfg_confirm(),
            Some(w) => w,
            None => o.phase_windows,
        };
        for (k, acc) in fixed_acc.iter().enumerate() {
            let (pk, t) = fixed_windows[..trans.min(fixed_windows.len())]
                .iter()
                .fold((0u64, 0.0f64), |a, w| (a.0 + w[k].0, a.1 + w[k].1));
            fixed_segments[k].push(
                json!({"segment": seg, "phase": p, "mpps": mpps(acc.0, acc.1),
                "mpps_during_tuner_transition": mpps(pk, t)}),
            );
        }
    }
    (segments, fixed_segments)
}

/// The tuner's confirmation windows: a segment with no exploration in twice that many
/// windows needed no re-tuning (settled after 0 windows).
fn cfg_confirm() -> usize {
    TunerConfig::default().confirm_windows
}
