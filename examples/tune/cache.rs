//! `tune --cache`: the PPB model's I1/D1 misses per packet (seed `001_*` eq. 2–3) against
//! the cachegrind sweep of `scripts/ppb_sweep.py` (`docs/results/batcher.json`: l3fwd behind
//! the path batcher, off and on, b = 1…256, alternating and realistic traffic, 32 KiB and
//! 8 KiB simulated L1i; no flush deadline). I1 from the code lines measured by
//! `scripts/model_footprints.py` (b = 1, 2, 7, 64 and 256): replayed in the batcher's and the graph's
//! dispatch order through an exact LRU (`i1_replay`, [`replay_i1`]) and estimated per set
//! from touch rates (`i1_lru`, `i1_lru_path`); the older footprint × ratio model from the
//! `ppb` binary's symbol sizes (`nm -S`, `i1_ratio`) and D1 (eq. 3) with a few parameters
//! calibrated on a few batch sizes. The rest is predicted.

use pktvec::model::calibrate::{fit_code_capacity, fit_code_misses, fit_data_misses};
use pktvec::model::icache::{
    call_events, code_misses_by_node, tail_lines, CacheGeometry, CallLines, CodeLine, Families,
    LineOrder, NodeRate, SizeRule, Spread, Tail, TraceReplay, EVERY_CALL,
};
use pktvec::model::ppb::{
    code_footprint, code_lines_per_packet, misses_per_packet, MissParams, NodeCost, Order, Path,
};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::collections::VecDeque;
use std::path::Path as FsPath;

/// The graph of `examples/ppb.rs` as the model sees it: node name and the symbols (substrings
/// of `nm -C` names) whose sizes make its code footprint.
const NODES: &[(&str, &[&str])] = &[
    // Index 0 is the batcher; its code depends on on/off (see `footprints`).
    ("batcher", &[]),
    (
        "dispatch",
        &[
            "pktvec_graph::graph::Graph::run_once",
            "pktvec_graph::graph::Graph::drain",
            "pktvec_graph::graph::record_entry",
        ],
    ),
    (
        "ethernet-input",
        &["<pktvec_nodes::ethernet::EthernetInput as pktvec_graph::node::Node>::process"],
    ),
    (
        "ip4-input",
        &["<pktvec_nodes::ip4::Ip4Input as pktvec_graph::node::Node>::process"],
    ),
    (
        "ip4-lookup",
        &[
            "<pktvec_nodes::lookup::Ip4Lookup as pktvec_graph::node::Node>::process",
            "pktvec_lookup::ipv4::Lpm4::lookup_vector_raw",
            "pktvec_lookup::ipv4::Lpm4::master_vector",
        ],
    ),
    (
        "ip4-rewrite",
        &["<pktvec_nodes::ip4::Ip4Rewrite as pktvec_graph::node::Node>::process"],
    ),
    (
        "ip6-input",
        &["<pktvec_nodes::ip6::Ip6Input as pktvec_graph::node::Node>::process"],
    ),
    (
        "ip6-lookup",
        &[
            "<pktvec_nodes::lookup::Ip6Lookup as pktvec_graph::node::Node>::process",
            "pktvec_lookup::ipv6::Lpm6::lookup",
        ],
    ),
    (
        "ip6-rewrite",
        &["<pktvec_nodes::ip6::Ip6Rewrite as pktvec_graph::node::Node>::process"],
    ),
    (
        "arp-input",
        &[
            "<pktvec_nodes::arp::ArpInput as pktvec_graph::node::Node>::process",
            "pktvec_nodes::arp::arp_input_one",
        ],
    ),
    (
        "interface-output",
        &["<pktvec_nodes::output::InterfaceOutput as pktvec_graph::node::Node>::process"],
    ),
    (
        "tx",
        &[
            "<pktvec_graph::builtin::NullSink as pktvec_graph::node::Node>::process",
            "pktvec_packet::pool::BufferPool::refill",
        ],
    ),
    (
        "drop",
        &["<pktvec_graph::builtin::DropNode as pktvec_graph::node::Node>::process"],
    ),
    // Out-of-line slow paths inside nodes, run only when a vector holds such a packet:
    // modelled as nodes of their own on the paths of those packets.
    (
        "ethernet-input (tagged/unknown)",
        &["pktvec_nodes::ethernet::ethernet_input_tagged"],
    ),
    (
        "ip4-input (options/malformed)",
        &["pktvec_nodes::ip4::ip4_input_general"],
    ),
];

/// The prefetch loops' width (packets per iteration of the wide loop).
const WIDTH: usize = 4;

/// I1 misses per packet below which a measured point counts as ≈ 0 (no relative error).
const MIN_MISSES: f64 = 0.01;

/// The batcher's source (replay into buffers): runs whether the batcher is on or off.
const BATCHER_SOURCE: &str =
    "<pktvec_batcher::node::ReplaySource as pktvec_batcher::node::BurstSource>::rx_burst";

/// `nm -S -C` of `bin`: (name, size) of every text symbol.
fn symbols(bin: &FsPath) -> Result<Vec<(String, usize)>, Box<dyn std::error::Error>> {
    let out = std::process::Command::new("nm")
        .args(["-S", "-C", "--defined-only"])
        .arg(bin)
        .output()?;
    if !out.status.success() {
        return Err(format!("nm {} failed", bin.display()).into());
    }
    let mut syms = Vec::new();
    for l in String::from_utf8_lossy(&out.stdout).lines() {
        let mut it = l.splitn(4, ' ');
        let (_, size, kind, name) = (it.next(), it.next(), it.next(), it.next());
        if let (Some(size), Some(kind), Some(name)) = (size, kind, name) {
            if kind.eq_ignore_ascii_case("t") {
                if let Ok(s) = usize::from_str_radix(size, 16) {
                    syms.push((name.to_string(), s));
                }
            }
        }
    }
    Ok(syms)
}

/// Code bytes per node: the sum of the sizes of its symbols (each counted once, the first
/// exact-prefix match). The batcher on is its inlined `process_dyn` (the largest
/// monomorphisation of `DynNode::process_dyn`, which inlines `Batcher::process`: parser,
/// path table, queues) plus the replay source; off, only the source runs.
fn footprints(syms: &[(String, usize)]) -> (Vec<usize>, usize, usize) {
    let size_of = |pat: &str| -> usize {
        syms.iter()
            .filter(|(n, _)| n == pat || n.starts_with(&format!("{pat}::h")))
            .map(|(_, s)| *s)
            .max()
            .unwrap_or(0)
    };
    let bytes: Vec<usize> = NODES
        .iter()
        .map(|(_, pats)| pats.iter().map(|p| size_of(p)).sum())
        .collect();
    let process_dyn = syms
        .iter()
        .filter(|(n, _)| n.contains("as pktvec_graph::graph::DynNode>::process_dyn"))
        .map(|(_, s)| *s)
        .max()
        .unwrap_or(0);
    let source = size_of(BATCHER_SOURCE);
    (bytes, process_dyn + source, source)
}

/// The footprints stored in an earlier output of this command (`code_bytes`,
/// `batcher_code_bytes`): the sweep's measurements belong to the binary they were taken
/// on, and the symbols of a later build (renamed, inlined differently) do not match.
fn stored_footprints(
    path: &FsPath,
) -> Result<(Vec<usize>, usize, usize), Box<dyn std::error::Error>> {
    let d: Value = serde_json::from_str(&std::fs::read_to_string(path)?)?;
    let bytes: Vec<usize> = NODES
        .iter()
        .map(|(name, _)| {
            d["code_bytes"]
                .as_array()
                .and_then(|a| a.iter().find(|x| x["node"] == *name))
                .and_then(|x| x["bytes"].as_u64())
                .map(|b| b as usize)
                .ok_or_else(|| format!("{}: no code_bytes for {name}", path.display()))
        })
        .collect::<Result<_, _>>()?;
    let b = &d["batcher_code_bytes"];
    let get = |k: &str| {
        b[k].as_u64()
            .map(|x| x as usize)
            .ok_or("batcher_code_bytes")
    };
    Ok((bytes, get("on")?, get("off")?))
}

/// The path mixes of `examples/ppb.rs`'s traffic, as node indices into [`NODES`]; every
/// path includes the batcher (0) and the dispatcher (1), which run once per vector. With
/// the batcher on (`on`), untagged IPv4/IPv6 vectors enter at `ip4-input`/`ip6-input`
/// (`ppb`'s direct entry): `ethernet-input` (2) is only on the other packets' paths.
fn traffic(name: &str, on: bool) -> Vec<Path> {
    let eth: &[usize] = if on { &[] } else { &[2] };
    let untagged = |rest: &[usize]| -> Vec<usize> { [&[0, 1], eth, rest].concat() };
    let ip4 = untagged(&[3, 4, 5, 10, 11]);
    let ip6 = untagged(&[6, 7, 8, 10, 11]);
    let p = |share: f64, nodes: Vec<usize>| Path { share, nodes };
    match name {
        // 64-byte IPv4 and IPv6 strictly alternating ([`order`]: interleaved).
        "alternating" => vec![p(0.5, ip4), p(0.5, ip6)],
        // ipv4 70, ipv6 25 (2% of all VLAN-tagged), arp 1 (not for us: dropped),
        // unknown EtherType 1, malformed 1 (through ip4-input's general check).
        _ => {
            // Tagged packets go through ethernet-input (2) and its tagged path (13) with the
            // batcher off; with it on, the batcher strips the tag of an IP frame and sends
            // it straight to ip4-input/ip6-input in its path's vectors (`ppb --json`,
            // realistic, b = 256: the IPv4 queue holds 72.4% of the packets, the mice
            // queue only ARP and unknown EtherTypes, 1.9%).
            let tagged = |rest: &[usize]| -> Vec<usize> {
                if on {
                    untagged(rest)
                } else {
                    [&[0, 1, 2, 13], rest].concat()
                }
            };
            vec![
                p(0.98 * 70.0 / 98.0, ip4),
                p(0.02 * 70.0 / 98.0, tagged(&[3, 4, 5, 10, 11])),
                p(0.98 * 25.0 / 98.0, ip6),
                p(0.02 * 25.0 / 98.0, tagged(&[6, 7, 8, 10, 11])),
                p(1.0 / 98.0, vec![0, 1, 2, 9, 12]),
                p(1.0 / 98.0, vec![0, 1, 2, 13, 12]),
                p(1.0 / 98.0, untagged(&[3, 14, 12])),
            ]
        }
    }
}

/// The order of a traffic's paths: `ppb`'s alternating traffic interleaves IPv4 and IPv6
/// strictly; the realistic mix draws each packet's kind independently.
fn order(name: &str) -> Order {
    match name {
        "alternating" => Order::Interleaved,
        _ => Order::Independent,
    }
}

struct Point {
    traffic: &'static str,
    l1i: usize,
    on: bool,
    b: usize,
    i1: f64,
    d1: f64,
    /// Calls and packets per packet of each node in this run (runtime stats recorded by
    /// the sweep), when present.
    rates: BTreeMap<String, NodeRate>,
}

/// The owners of measured code lines (`scripts/model_footprints.py`): the nodes of
/// [`NODES`] without the slow-path pseudo-nodes (their code belongs to their node), with
/// `dispatch` run per call of any node.
const OWNERS: &[&str] = &[
    "batcher",
    "batcher-rx",
    "dispatch",
    "ethernet-input",
    "ip4-input",
    "ip4-lookup",
    "ip4-rewrite",
    "ip6-input",
    "ip6-lookup",
    "ip6-rewrite",
    "arp-input",
    "interface-output",
    "tx",
    "drop",
];

/// Per-owner [`NodeRate`] from per-node (calls, packets) per packet: `dispatch` is the
/// sum over all nodes (the dispatcher runs once per node call); `batcher-rx` (the
/// batcher's receive side) runs in the receiving calls, [`receiving_calls`].
fn owner_rates(node: impl Fn(&str) -> NodeRate, tr: &str, on: bool, b: usize) -> Vec<NodeRate> {
    let all: Vec<NodeRate> = OWNERS
        .iter()
        .filter(|o| **o != "dispatch" && **o != "batcher-rx")
        .map(|o| node(o))
        .collect();
    OWNERS
        .iter()
        .map(|o| match *o {
            "dispatch" => NodeRate {
                calls: all.iter().map(|r| r.calls).sum(),
                packets: all.iter().map(|r| r.packets).sum(),
            },
            "batcher-rx" => NodeRate {
                calls: receiving_calls(tr, on, b),
                packets: 1.0,
            },
            _ => node(o),
        })
        .collect()
}

/// The batcher's calls that receive, per packet. Off: every call receives one vector of
/// `b`. On: a call receives bursts of b until a queue holds a batch — ⌈1/s⌉ bursts for
/// the largest queue's share s — and hands that batch over; the following calls hand the
/// other queues' vectors over without receiving (full batches, or, under cachegrind, the
/// flush deadline: 100 µs is ≈ 5 packets at valgrind's ≈ 20 µs per packet, so every
/// queue is flushed before the next receive). One receiving call per b·⌈1/s⌉ packets.
fn receiving_calls(tr: &str, on: bool, b: usize) -> f64 {
    let b = b.max(1) as f64;
    if !on {
        return 1.0 / b;
    }
    let s = pktvec::model::ppb::batcher_queues(&traffic(tr, on), Some(0.05))
        .iter()
        .map(|(s, _)| *s)
        .fold(0.0, f64::max);
    if s <= 0.0 {
        return 1.0 / b;
    }
    1.0 / (b * (1.0 / s - 1e-9).ceil())
}

/// The measured code lines of one calibration run (a family: traffic, batcher on/off,
/// calls narrower than the prefetch width or not).
struct Family {
    batch: usize,
    vector: usize,
    lines: Vec<CodeLine>,
    /// Per line (same index), where it runs inside its owner's calls, if the footprints
    /// carry the order (`model_footprints.py`'s lackey runs).
    order: Vec<Option<LineOrder>>,
}

/// Reads `scripts/model_footprints.py`'s output: per family, each line's owner and runs
/// per packet, turned into per-call and per-packet rates with the family's node stats.
fn load_footprints(path: &FsPath) -> Result<BTreeMap<String, Family>, Box<dyn std::error::Error>> {
    let d: Value = serde_json::from_str(&std::fs::read_to_string(path)?)?;
    let mut out = BTreeMap::new();
    for (key, f) in d["families"].as_object().ok_or("families")? {
        let stat = |name: &str| NodeRate {
            calls: f["nodes"][name]["calls"].as_f64().unwrap_or(0.0),
            packets: f["nodes"][name]["packets"].as_f64().unwrap_or(0.0),
        };
        let (batch, vector) = (
            f["batch"].as_u64().unwrap_or(0) as usize,
            f["vector"].as_u64().unwrap_or(0) as usize,
        );
        let tr = key.split('-').next().unwrap_or("");
        let on = batch > 0;
        let rates = owner_rates(stat, tr, on, if on { batch } else { vector });
        let mut lines = Vec::new();
        let mut order = Vec::new();
        for l in f["lines"].as_array().ok_or("lines")? {
            let name = l["node"].as_str().ok_or("node")?;
            let Some(o) = OWNERS.iter().position(|x| *x == name) else {
                continue;
            };
            order.push(match (l["first"].as_f64(), l["last"].as_f64()) {
                (Some(first), Some(last)) => Some(LineOrder {
                    first,
                    last,
                    twice: l["twice"].as_f64().unwrap_or(0.0),
                }),
                _ => None,
            });
            lines.push(CodeLine::from_run(
                l["line"].as_u64().ok_or("line")?,
                o,
                l["per_packet"].as_f64().ok_or("per_packet")?,
                rates[o],
            ));
        }
        out.insert(
            key.clone(),
            Family {
                batch,
                vector,
                lines,
                order,
            },
        );
    }
    Ok(out)
}

/// The path model's node rates (calls and packets per packet) for a traffic, batcher
/// on/off and vectors (or batches) of `b`: per queue of the batcher (one queue when off),
/// its vectors per packet, each calling node i with the probability that one of its
/// packets visits i ([`Order`]). Queues fill to b, unless the flush deadline, `deadline`
/// packets, is shorter than a receive round (b·⌈1/s⌉ packets, s the largest queue's
/// share; see [`receiving_calls`]): then every queue is flushed once per round, the
/// largest in ⌈s·R/b⌉ vectors, a small one in one vector when it got a packet.
fn path_rates(tr: &str, on: bool, b: usize, deadline: Option<f64>) -> Vec<NodeRate> {
    use pktvec::model::ppb::batcher_queues;
    let mix = traffic(tr, on);
    let ord = order(tr);
    let elephant = if on { Some(0.05) } else { None };
    let queues = batcher_queues(&mix, elephant);
    let bf = b.max(1) as f64;
    let round = 1.0 / receiving_calls(tr, on, b);
    let per_round = on && deadline.is_some_and(|d| round > d);
    // Per queue: (vectors per packet, packets per vector).
    let vectors: Vec<(f64, f64)> = queues
        .iter()
        .map(|(s, _)| {
            if !per_round {
                return (s / bf, bf);
            }
            let got = s * round;
            let v = if got >= bf {
                (got / bf - 1e-9).ceil()
            } else {
                1.0 - (1.0 - s).powf(round)
            };
            (v / round, if v > 0.0 { got / v } else { 0.0 })
        })
        .collect();
    let called = |q: f64, n: f64| match ord {
        Order::Interleaved => (q * n).min(1.0),
        Order::Independent => 1.0 - (1.0 - q.min(1.0)).powf(n),
    };
    let node = |name: &str| -> NodeRate {
        let Some(i) = NODES.iter().position(|(n, _)| *n == name) else {
            return NodeRate::default();
        };
        let mut r = NodeRate::default();
        for ((share, qmix), &(vecs, n)) in queues.iter().zip(&vectors) {
            let q: f64 = qmix
                .iter()
                .filter(|p| p.nodes.contains(&i))
                .map(|p| p.share)
                .sum::<f64>()
                .min(1.0);
            r.calls += vecs * called(q, n);
            r.packets += share * q;
        }
        r
    };
    owner_rates(node, tr, on, b)
}

/// I1 misses per packet from the measured lines: each owner's lines from the calibration
/// family of this traffic and batcher state whose calls match its width (narrow: fewer
/// packets per call than the prefetch width), touch rates from `rates`.
fn lru_i1(
    fams: &BTreeMap<String, Family>,
    tr: &str,
    on: bool,
    rates: &[NodeRate],
    b: usize,
    l1i: usize,
    spread_by_order: bool,
) -> Vec<f64> {
    let width = WIDTH;
    let onoff = if on { "on" } else { "off" };
    let mut lines: Vec<CodeLine> = Vec::new();
    for (o, r) in rates.iter().enumerate() {
        // The receive side's loops run over one burst (b packets), the others over a call.
        let n = if OWNERS[o] == "batcher-rx" {
            b as f64
        } else {
            r.per_call()
        };
        let narrow = r.calls > 0.0 && n < width as f64;
        let key = format!("{tr}-{onoff}-{}", if narrow { "narrow" } else { "wide" });
        if let Some(f) = fams.get(&key) {
            lines.extend(f.lines.iter().filter(|l| l.node == o).cloned());
        }
    }
    code_misses_by_node(
        &lines,
        rates,
        CacheGeometry {
            bytes: l1i,
            ways: 8,
            line: 64,
        },
        if spread_by_order && order(tr) == Order::Independent {
            Spread::Random
        } else {
            Spread::Even
        },
    )
}

/// The owner ([`OWNERS`] index) of a node of [`NODES`]: the batcher and the dispatcher
/// as such, the slow-path pseudo-nodes their node's, every other node itself.
fn owner_of(node: usize) -> usize {
    match node {
        0 => 0,
        1 => 2,
        13 => 3, // ethernet-input (tagged/unknown)
        14 => 4, // ip4-input (options/malformed)
        i => i + 1,
    }
}

/// A SplitMix64 generator in [0, 1) (the replay's traffic draws).
struct Draw(u64);

impl Draw {
    fn next(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Trace-driven I1 misses per packet (per owner) of one point, from the measured lines of
/// the calibration families and nothing measured at the point itself: the traffic's
/// packets (alternating: IPv4 and IPv6 in turn; realistic: each packet's path drawn from
/// the mix) go through the batcher's rule (`batcher/src/node.rs`, no flush deadline:
/// bursts of b; a burst of one path whose queue is empty is handed over at once, else
/// queued per protocol (entry node), those of ≥ 5% of the packets in their own queue, the
/// rest in the mice queue;
/// a call hands over one vector — the next queue in round robin holding a batch, up to b
/// packets of one next node — after receiving until some queue does), or with the
/// batcher off vectors of b to `ethernet-input`. Each vector then runs through the graph
/// as `Graph::drain` does: the nodes with pending packets in the order they were scheduled
/// (first come, first served), each call with the packets that reached the node. Every
/// call (the batcher's too) replays the dispatcher's lines, then its owner's lines (the
/// batcher's receive side in the calls that receive), through an exact 8-way LRU L1i
/// ([`TraceReplay`]): each call the lines of the calibration family its size selects
/// ([`SizeRule`]). Returns (misses per packet per owner, the
/// replay's calls and packets per packet per owner).
///
/// Not replayed: the batcher's `uniform_vectors` rule (vectors of 2–3 at b = 1), epoch
/// re-decisions, queue capacity (never reached without a deadline at b ≤ 256).
fn replay_i1(
    fams: &BTreeMap<String, Family>,
    tr: &str,
    on: bool,
    b: usize,
    l1i: usize,
    (rule, call_order, chunked_loops, size_rule): (LineRule, CallOrder, bool, SizeRule),
) -> (Vec<f64>, Vec<NodeRate>) {
    let b = b.max(1);
    let onoff = if on { "on" } else { "off" };
    // Per family (narrow, wide, and huge if calibrated: `model_footprints.py`'s default)
    // and owner: its lines in address order, with where they run inside a call if measured.
    let by_owner = |family: &str| -> (Vec<Vec<CodeLine>>, Vec<Vec<Option<LineOrder>>>) {
        let key = format!("{tr}-{onoff}-{family}");
        let mut v = vec![Vec::new(); OWNERS.len()];
        if let Some(f) = fams.get(&key) {
            for (l, o) in f.lines.iter().zip(&f.order) {
                v[l.node].push((l.clone(), *o));
            }
        }
        let mut lines = Vec::new();
        let mut orders = Vec::new();
        for mut l in v {
            l.sort_by_key(|(l, _)| l.line);
            orders.push(l.iter().map(|(_, o)| *o).collect());
            lines.push(l.into_iter().map(|(l, _)| l).collect());
        }
        (lines, orders)
    };
    // Two calibration sizes tell per-call code from per-packet code ([`LineRule`]): a line
    // the wide run (calls of ≈ 64 packets) ran on every call but that depends on packets
    // (a branch for some packets) runs in a call of n packets with probability
    // 1 − (1 − ρ)^n, ρ its runs per packet of its owner.
    let (narrow, narrow_order) = by_owner("narrow");
    let (mut wide, wide_order) = by_owner("wide");
    let (mut huge, huge_order) = by_owner("huge");
    let (mut small, small_order) = by_owner("small");
    for (o, ls) in wide
        .iter_mut()
        .enumerate()
        .chain(huge.iter_mut().enumerate())
        .chain(small.iter_mut().enumerate())
    {
        for l in ls.iter_mut() {
            let in_narrow = narrow[o].iter().find(|n| n.line == l.line);
            let integral = (l.per_call - l.per_call.round()).abs() < 0.05;
            let demote = match rule {
                LineRule::Wide => false,
                LineRule::Absent => in_narrow.map_or(true, |n| n.per_call < EVERY_CALL),
                LineRule::Present => in_narrow.is_some_and(|n| n.per_call < EVERY_CALL),
                LineRule::Integral => match in_narrow {
                    Some(n) => n.per_call < EVERY_CALL,
                    None => !integral,
                },
            };
            if l.per_call >= EVERY_CALL && demote {
                l.per_call = 0.0;
            }
        }
    }
    // Chunked loops (with the measured order): a line the narrow run never ran that the
    // wide run ran a whole number (≥ 2) of times per call, and the huge run as often per
    // packet (so more times per call), is a loop over chunks of 1/ρ packets (ρ its runs
    // per packet of its owner; e.g. a SIMD pass over 16 indices at a time): a call of
    // fewer packets than a chunk does not enter it.
    let mut chunk: BTreeMap<(u64, usize), f64> = BTreeMap::new();
    for o in (0..OWNERS.len()).filter(|_| chunked_loops) {
        for w in &wide[o] {
            let integral = (w.per_call - w.per_call.round()).abs() < 0.05;
            if w.per_call < 1.95 || !integral || narrow[o].iter().any(|n| n.line == w.line) {
                continue;
            }
            if let Some(h) = huge[o].iter().find(|h| h.line == w.line) {
                if (h.per_packet / w.per_packet - 1.0).abs() < 0.1 && h.per_call > 1.5 * w.per_call
                {
                    chunk.insert((w.line, o), 1.0 / w.per_packet);
                }
            }
        }
    }
    let has_huge = huge.iter().any(|l| !l.is_empty());
    let (dual, dual_order) = by_owner("dual");
    let has_dual = dual.iter().any(|l| !l.is_empty());
    let has_small = small.iter().any(|l| !l.is_empty());
    // The small family's tail and remainder lines per owner (session 9,
    // [`SizeRule::Tail`], [`tail_lines`]).
    let tails: Vec<Vec<pktvec::model::icache::TailLine>> = (0..OWNERS.len())
        .map(|o| tail_lines(&small[o], &wide[o], &narrow[o], &dual[o]))
        .collect();
    // Derived line sets: a family's lines per owner with the small family's tail lines
    // added (all, or without the remainder ones), or the small family's lines without its
    // remainder lines.
    type Set = (Vec<Vec<CodeLine>>, Vec<Vec<Option<LineOrder>>>);
    let derive = |base: Option<&Set>, keep_rem: bool| -> Set {
        let mut out: Set = (Vec::new(), Vec::new());
        for o in 0..OWNERS.len() {
            let mut v: Vec<(CodeLine, Option<LineOrder>)> = match base {
                Some(b) => b.0[o].iter().cloned().zip(b.1[o].iter().copied()).collect(),
                None => Vec::new(),
            };
            for (i, l) in small[o].iter().enumerate() {
                let t = tails[o][i];
                if (base.is_none() || t.tail) && (keep_rem || !t.remainder) {
                    v.push((l.clone(), small_order[o][i]));
                }
            }
            v.sort_by_key(|(l, _)| l.line);
            out.1.push(v.iter().map(|(_, o)| *o).collect());
            out.0.push(v.into_iter().map(|(l, _)| l).collect());
        }
        out
    };
    let have = Families {
        dual: has_dual,
        small: has_small,
        huge: has_huge,
    };
    let base: [Set; 5] = [
        (wide, wide_order),
        (narrow, narrow_order),
        (huge, huge_order),
        (dual, dual_order),
        (small.clone(), small_order.clone()),
    ];
    let mut sets: Vec<Set> = base.to_vec();
    // 5: small without remainder; 6/7: wide + tail (all / without remainder); 8/9: huge.
    sets.push(derive(None, false));
    for b in [0, 2] {
        sets.push(derive(Some(&base[b]), true));
        sets.push(derive(Some(&base[b]), false));
    }
    let (lines, orders): (Vec<_>, Vec<_>) = sets.into_iter().unzip();
    // Which set a call of n packets runs ([`SizeRule`]).
    let family = |n: usize| match size_rule.lines(n, have) {
        CallLines::Wide { tail: Tail::None } => 0,
        CallLines::Narrow => 1,
        CallLines::Huge { tail: Tail::None } => 2,
        CallLines::Dual => 3,
        CallLines::Small { remainder: true } => 4,
        CallLines::Small { remainder: false } => 5,
        CallLines::Wide { tail: Tail::All } => 6,
        CallLines::Wide {
            tail: Tail::NoRemainder,
        } => 7,
        CallLines::Huge { tail: Tail::All } => 8,
        CallLines::Huge {
            tail: Tail::NoRemainder,
        } => 9,
    };
    let pick = |o: usize, n: usize| &lines[family(n)][o];
    // With the measured order (`CallOrder::Measured`): per family and owner, one call's
    // lines and the order of its touches ([`call_events`]); the batcher's call holds its
    // hand-over lines and its receive side's (owner 1), which interleave. A line the
    // lackey run did not see (rare) takes the position of its owner's nearest line that
    // it saw.
    let templates: Vec<Vec<(Vec<CodeLine>, Vec<usize>)>> = (0..lines.len())
        .map(|f| {
            (0..OWNERS.len())
                .map(|o| {
                    let owners: &[usize] = match o {
                        0 => &[0, 1],
                        1 => &[],
                        _ => std::slice::from_ref(&o),
                    };
                    let mut ls = Vec::new();
                    let mut pos = Vec::new();
                    for &w in owners {
                        let (l, ord) = (&lines[f][w], &orders[f][w]);
                        for (i, line) in l.iter().enumerate() {
                            let known = ord[i].or_else(|| {
                                (0..l.len())
                                    .filter(|&j| ord[j].is_some())
                                    .min_by_key(|&j| l[j].line.abs_diff(line.line))
                                    .and_then(|j| ord[j])
                            });
                            ls.push(line.clone());
                            pos.push(known.unwrap_or(LineOrder {
                                first: 0.5,
                                last: 0.5,
                                twice: 0.0,
                            }));
                        }
                    }
                    let ev = call_events(&pos);
                    (ls, ev)
                })
                .collect()
        })
        .collect();
    // Paths as owner sequences (batcher and dispatcher left out, repeats merged).
    let mix = traffic(tr, on);
    let paths: Vec<Vec<usize>> = mix
        .iter()
        .map(|p| {
            let mut v: Vec<usize> = Vec::new();
            for &n in &p.nodes[2..] {
                let o = owner_of(n);
                if v.last() != Some(&o) {
                    v.push(o);
                }
            }
            v
        })
        .collect();
    // Queues: the batcher classifies by protocol (the IPv4 path holds untagged, tagged
    // and malformed IPv4 frames alike), i.e. by the node a packet enters at; an entry
    // node with at least 5% of the packets gets a queue of its own, the rest share the
    // mice queue (0).
    const ELEPHANT: f64 = 0.05;
    let mut entry_share: BTreeMap<usize, f64> = BTreeMap::new();
    for (p, path) in mix.iter().zip(&paths) {
        *entry_share.entry(path[0]).or_default() += p.share;
    }
    let mut queue_by_entry: BTreeMap<usize, usize> = BTreeMap::new();
    for (&e, &share) in &entry_share {
        if share >= ELEPHANT {
            let q = queue_by_entry.len() + 1;
            queue_by_entry.insert(e, q);
        }
    }
    let nq = queue_by_entry.len() + 1;
    let queue_of: Vec<usize> = paths
        .iter()
        .map(|p| queue_by_entry.get(&p[0]).copied().unwrap_or(0))
        .collect();
    let mut draw = Draw(0x5eed);
    let mut seq = 0usize;
    let mut next_packet = || -> usize {
        seq += 1;
        if tr == "alternating" {
            return seq % 2;
        }
        let mut u = draw.next();
        for (i, p) in mix.iter().enumerate() {
            if u < p.share {
                return i;
            }
            u -= p.share;
        }
        mix.len() - 1
    };
    let geo = CacheGeometry {
        bytes: l1i,
        ways: 8,
        line: 64,
    };
    let mut rep = TraceReplay::new(geo, OWNERS.len(), 0x1c0de).with_lines();
    let mut calls = vec![0u64; OWNERS.len()];
    let mut pkts = vec![0u64; OWNERS.len()];
    let total = 30_000 + 400 * b;
    let warm = total / 5;
    let mut queues: Vec<VecDeque<usize>> = vec![VecDeque::new(); nq];
    let mut rr = 0usize;
    let mut handed_total = 0usize;
    let mut counted = 0usize;
    let mut rx_calls = 0u64;
    while handed_total < total {
        // One batcher call: the vector it hands over, the packets it received.
        let mut received = 0usize;
        let mut vector: Vec<usize> = Vec::new();
        if !on {
            vector = (0..b).map(|_| next_packet()).collect();
            received = b;
        } else {
            let ready = |qs: &Vec<VecDeque<usize>>, rr: usize| {
                (0..nq).map(|k| (rr + k) % nq).find(|&i| qs[i].len() >= b)
            };
            let mut picked = ready(&queues, rr);
            while picked.is_none() {
                let burst: Vec<usize> = (0..b).map(|_| next_packet()).collect();
                received += b;
                let q0 = queue_of[burst[0]];
                if burst.iter().all(|&p| p == burst[0]) && queues[q0].is_empty() {
                    vector = burst;
                    break;
                }
                for p in burst {
                    queues[queue_of[p]].push_back(p);
                }
                picked = ready(&queues, rr);
            }
            if let Some(i) = picked {
                rr = (i + 1) % nq;
                let entry = paths[queues[i][0]][0];
                while vector.len() < b && queues[i].front().is_some_and(|&p| paths[p][0] == entry) {
                    vector.extend(queues[i].pop_front());
                }
            }
        }
        handed_total += vector.len();
        let counting = handed_total > warm;
        rep.counting = counting;
        if counting {
            counted += vector.len();
        }
        // A node's call: the dispatcher's loop, the node, the dispatcher's loop again.
        let mut call = |rep: &mut TraceReplay, o: usize, n: usize, rx: Option<usize>| {
            rep.call(pick(2, n), n as f64);
            let d = rep.last().to_vec();
            if call_order == CallOrder::Measured {
                // The call's lines in their measured order; the batcher's receive side
                // (owner 1) runs with the packets received, not at all without.
                let (ls, ev) = &templates[family(n)][o];
                let received = rx.unwrap_or(0) as f64;
                rep.call_ordered(ls, ev, |l| {
                    let k = if l.node == 1 { received } else { n as f64 };
                    match chunk.get(&(l.line, l.node)) {
                        Some(&min) if k < min => 0.0,
                        _ => k,
                    }
                });
            } else {
                let own: Vec<CodeLine> = pick(o, n)
                    .iter()
                    .filter(|l| {
                        chunk
                            .get(&(l.line, l.node))
                            .map_or(true, |&min| n as f64 >= min)
                    })
                    .cloned()
                    .collect();
                rep.call(&own, n as f64);
                if let Some(received) = rx {
                    // The batcher's receive side runs inside its call, its hand-over after.
                    let h = rep.last().to_vec();
                    rep.call(pick(1, b), received as f64);
                    rep.retouch(&h);
                }
            }
            rep.retouch(&d);
            if counting {
                calls[o] += 1;
                pkts[o] += n as u64;
                calls[2] += 1;
                pkts[2] += n as u64;
            }
        };
        call(
            &mut rep,
            0,
            vector.len(),
            (received > 0).then_some(received),
        );
        if received > 0 {
            rx_calls += counting as u64;
        }
        // The graph drains the vector: nodes in the order they were scheduled.
        let mut pending: Vec<Vec<(usize, usize)>> = vec![Vec::new(); OWNERS.len()];
        let mut ready: VecDeque<usize> = VecDeque::new();
        for &p in &vector {
            let o = paths[p][0];
            if pending[o].is_empty() {
                ready.push_back(o);
            }
            pending[o].push((p, 0));
        }
        while let Some(o) = ready.pop_front() {
            let here = std::mem::take(&mut pending[o]);
            call(&mut rep, o, here.len(), None);
            for (p, k) in here {
                if let Some(&n) = paths[p].get(k + 1) {
                    if pending[n].is_empty() {
                        ready.push_back(n);
                    }
                    pending[n].push((p, k + 1));
                }
            }
        }
    }
    calls[1] = rx_calls;
    pkts[1] = counted as u64;
    let per = counted.max(1) as f64;
    let misses = rep.misses.iter().map(|&m| m as f64 / per).collect();
    if let (Ok(want), Some(by_line)) = (std::env::var("TUNE_REPLAY_LINES"), &rep.by_line) {
        // Debug: `TUNE_REPLAY_LINES=realistic-on-16-32768`: per line, its owner, set,
        // touches and misses per packet (stderr).
        if want == format!("{tr}-{onoff}-{b}-{l1i}") {
            let sets = geo.sets() as u64;
            for (&line, &(t, m)) in by_line {
                let o = lines
                    .iter()
                    .flatten()
                    .flatten()
                    .find(|l| l.line == line)
                    .map_or("?", |l| OWNERS[l.node]);
                eprintln!(
                    "line {line:#x} set {:2} {o:16} touches {:.5} misses {:.5}",
                    line % sets,
                    t as f64 / per,
                    m as f64 / per
                );
            }
        }
    }
    let rates = calls
        .iter()
        .zip(&pkts)
        .map(|(&c, &n)| NodeRate {
            calls: c as f64 / per,
            packets: n as f64 / per,
        })
        .collect();
    (misses, rates)
}

/// Which lines the wide calibration run (calls of ≈ 64 packets) ran on every call are
/// taken, in the trace replay, to run for some packets only (a branch: probability
/// 1 − (1 − ρ)^n in a call of n packets) rather than on every call; decided from the
/// narrow run (calls of 1–3 packets) of the same traffic.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LineRule {
    /// Those the narrow run ran in some calls only (a per-packet branch), and those it
    /// never ran (code for calls of ≥ 4 packets) unless they ran a whole number of times
    /// per call in the wide run (structural code — loop entries, fixed-trip loops — runs
    /// an integral number of times per call; a branch taken by some packets averages a
    /// fraction).
    Integral,
    /// Only those the narrow run ran in some calls only.
    Present,
    /// Those too that the narrow run never ran.
    Absent,
    /// None: the wide run's every-call lines run on every call.
    Wide,
}

/// The settings of one comparison (`tune --cache …`).
pub struct Options<'a> {
    /// Batch sizes whose points calibrate the fitted parameters (D1; I1 of the ratio model).
    pub cal_batches: &'a [usize],
    /// L1d bytes of the cachegrind runs.
    pub l1d: usize,
    /// The ratio model with its capacity term.
    pub capacity: bool,
    /// Measured code lines (`scripts/model_footprints.py`): the LRU model.
    pub lines_file: Option<&'a FsPath>,
    /// The batcher's flush deadline in packets of the cachegrind runs (path model's calls).
    pub deadline: Option<f64>,
    /// Print nothing (the caller prints the JSON).
    pub json: bool,
    /// I1: touches of different nodes spread at random for independently drawn paths
    /// ([`Spread::Random`]), else evenly.
    pub spread_by_order: bool,
    /// I1 trace replay: which wide-run lines run per packet rather than per call.
    pub line_rule: LineRule,
    /// I1 trace replay: the order of the lines inside a call.
    pub call_order: CallOrder,
    /// I1 trace replay: lines of chunked loops (see `replay_i1`) do not run in calls
    /// shorter than a chunk.
    pub chunked_loops: bool,
    /// I1 trace replay: which calibration family's lines a call of n packets runs.
    pub size_rule: SizeRuleArg,
}

/// `tune --i1-size-rule`: the trace replay's [`SizeRule`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum SizeRuleArg {
    /// [`SizeRule::Tail`] (default since session 9).
    Tail,
    /// [`SizeRule::Small`].
    Small,
    /// [`SizeRule::Session8`].
    Session8,
}

impl From<SizeRuleArg> for SizeRule {
    fn from(a: SizeRuleArg) -> SizeRule {
        match a {
            SizeRuleArg::Tail => SizeRule::Tail,
            SizeRuleArg::Small => SizeRule::Small,
            SizeRuleArg::Session8 => SizeRule::Session8,
        }
    }
}

/// The order in which the trace replay touches the lines of one call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum CallOrder {
    /// As the footprints' lackey runs measured it ([`LineOrder`], [`call_events`]): each
    /// line at its mean first position, and again at its last when it ran at two separate
    /// moments of most calls. Footprints without order data fall back to positions 0.5.
    Measured,
    /// Address order, each line once; the batcher's hand-over lines again after its
    /// receive side (sessions 7 and before).
    Address,
}

/// Runs the comparison; returns the JSON document (also printed as a table unless `json`).
pub fn run(
    data: &FsPath,
    bin: &FsPath,
    opt: &Options<'_>,
) -> Result<Value, Box<dyn std::error::Error>> {
    let Options {
        cal_batches,
        l1d,
        capacity,
        lines_file,
        deadline,
        json,
        spread_by_order,
        line_rule,
        call_order,
        chunked_loops,
        size_rule,
    } = *opt;
    let size_rule = SizeRule::from(size_rule);
    let d: Value = serde_json::from_str(&std::fs::read_to_string(data)?)?;
    let batches: Vec<usize> = d["batches"]
        .as_array()
        .ok_or("batches")?
        .iter()
        .map(|x| x.as_u64().unwrap_or(0) as usize)
        .collect();
    let mut points = Vec::new();
    for tr in ["alternating", "realistic"] {
        for (l1i, key) in [(32768usize, "host"), (8192, "8192")] {
            for on in [false, true] {
                let k = format!("{tr}-I1-{key}{}", if on { "" } else { "-off" });
                let series = d["cachegrind"][&k].as_array().ok_or(k.clone())?;
                for (&b, p) in batches.iter().zip(series) {
                    if b == 0 {
                        continue; // vectors of 256 with the batcher off: the b = 256 point
                    }
                    let mut rates = BTreeMap::new();
                    for o in OWNERS {
                        if let Some(c) = p[format!("calls:{o}")].as_f64() {
                            let packets = p[format!("packets:{o}")].as_f64().unwrap_or(0.0);
                            rates.insert(o.to_string(), NodeRate { calls: c, packets });
                        }
                    }
                    points.push(Point {
                        traffic: tr,
                        l1i,
                        on,
                        b,
                        i1: p["I1"].as_f64().ok_or("I1")?,
                        d1: p["D1"].as_f64().ok_or("D1")?,
                        rates,
                    });
                }
            }
        }
    }
    let (bytes, batcher_on, batcher_off) = if bin.extension().is_some_and(|e| e == "json") {
        stored_footprints(bin)?
    } else {
        footprints(&symbols(bin)?)
    };
    let nodes = |on: bool| -> Vec<NodeCost> {
        NODES
            .iter()
            .zip(&bytes)
            .enumerate()
            .map(|(i, ((name, _), &b))| NodeCost {
                name: name.to_string(),
                per_packet: 0.0,
                code_bytes: if i == 0 {
                    if on {
                        batcher_on
                    } else {
                        batcher_off
                    }
                } else {
                    b
                },
                data_lines: 0.0,
            })
            .collect()
    };
    const ELEPHANT: f64 = 0.05; // BatcherConfig::default().elephant_share
    let elephant = |on: bool| if on { Some(ELEPHANT) } else { None };
    let l1d_lines = (l1d / 64) as f64;
    let is_cal = |p: &Point| cal_batches.contains(&p.b);
    // With the capacity term: one (ratio, narrow ratio, capacity) for both L1i sizes, from
    // all calibration points (those measured at ≈ 0 included: a footprint that fits).
    let shared = capacity.then(|| {
        let code: Vec<(f64, f64, f64, f64, f64)> = points
            .iter()
            .filter(|p| is_cal(p))
            .map(|p| {
                let mix = (traffic(p.traffic, p.on), order(p.traffic));
                let (w, n) = code_lines_per_packet(
                    &nodes(p.on),
                    (&mix.0, mix.1),
                    p.b,
                    elephant(p.on),
                    WIDTH,
                );
                let f = code_footprint(&nodes(p.on), (&mix.0, mix.1), p.b, elephant(p.on));
                (w, n, f, p.l1i as f64, p.i1)
            })
            .collect();
        fit_code_capacity(&code, MIN_MISSES)
    });
    // I1: per L1i size, (code_miss_ratio, narrow_code_ratio) from the calibration points.
    let mut params: BTreeMap<(usize, &str), MissParams> = BTreeMap::new();
    for l1i in [32768usize, 8192] {
        let code: Vec<(f64, f64, f64)> = points
            .iter()
            // Points measured at ≈ 0 carry no ratio (and dominate a fit of logarithms).
            .filter(|p| p.l1i == l1i && is_cal(p) && p.i1 >= MIN_MISSES)
            .map(|p| {
                let (w, n) = code_lines_per_packet(
                    &nodes(p.on),
                    (&traffic(p.traffic, p.on), order(p.traffic)),
                    p.b,
                    elephant(p.on),
                    WIDTH,
                );
                (w, n, p.i1)
            })
            .collect();
        let (ratio, narrow, cap) = match shared {
            Some(x) => x,
            None => {
                let (r, n) = fit_code_misses(&code);
                (r, n, 0.0)
            }
        };
        for tr in ["alternating", "realistic"] {
            // D1: per traffic (packet sizes differ), from the same calibration points.
            let data: Vec<(f64, f64)> = points
                .iter()
                .filter(|p| p.traffic == tr && is_cal(p))
                .map(|p| (p.b as f64 * if p.on { 2.0 } else { 1.0 }, p.d1))
                .collect();
            let (k0, r, w) = fit_data_misses(&data, l1d_lines);
            params.insert(
                (l1i, tr),
                MissParams {
                    code_miss_ratio: ratio,
                    narrow_code_ratio: narrow,
                    d_compulsory: k0,
                    d_reuse: r,
                    d_lines_per_packet: w,
                    l1i_bytes: if capacity { l1i as f64 } else { 0.0 },
                    code_capacity: cap,
                },
            );
        }
    }
    let fams = lines_file.map(load_footprints).transpose()?;
    // With measured lines, the I1 side has no fitted parameter: its calibration runs are
    // those of the footprints (b = 1, 2, 7, 64 and 256, batcher on and off); the rest is predicted.
    let is_cal_i1 = |p: &Point| match &fams {
        Some(f) => f.values().any(|f| {
            if p.on {
                f.batch == p.b
            } else {
                f.batch == 0 && f.vector == p.b
            }
        }),
        None => is_cal(p),
    };
    let mut rows = Vec::new();
    // Per variant and L1i size: relative errors of the predicted points; and the points
    // measured below MIN_MISSES (count, largest prediction there).
    let mut err_i1: BTreeMap<(String, usize), Vec<f64>> = BTreeMap::new();
    let mut zero_i1: BTreeMap<(String, usize), (usize, f64)> = BTreeMap::new();
    let mut err_d1 = Vec::new();
    for p in &points {
        let mp = params[&(p.l1i, p.traffic)];
        let (ratio_i1, d1) = misses_per_packet(
            &nodes(p.on),
            (&traffic(p.traffic, p.on), order(p.traffic)),
            p.b,
            elephant(p.on),
            WIDTH,
            l1d_lines,
            &mp,
        );
        // The variants: "lru" = measured lines with this run's node calls (runtime stats),
        // "lru_path" = measured lines with the path model's calls, "ratio" = the
        // footprint × fitted ratio model (nm sizes).
        let mut variants: Vec<(&str, f64, bool)> = vec![("ratio", ratio_i1, is_cal(p))];
        let mut by_owner: Vec<(&str, Vec<f64>)> = Vec::new();
        let mut replay_rates: Option<Vec<NodeRate>> = None;
        if let Some(f) = &fams {
            if !p.rates.is_empty() {
                let rates = owner_rates(
                    |o| p.rates.get(o).copied().unwrap_or_default(),
                    p.traffic,
                    p.on,
                    p.b,
                );
                let by = lru_i1(f, p.traffic, p.on, &rates, p.b, p.l1i, spread_by_order);
                variants.push(("lru", by.iter().sum(), is_cal_i1(p)));
                by_owner.push(("lru", by));
            }
            let rates = path_rates(p.traffic, p.on, p.b, deadline);
            let by = lru_i1(f, p.traffic, p.on, &rates, p.b, p.l1i, spread_by_order);
            variants.push(("lru_path", by.iter().sum(), is_cal_i1(p)));
            by_owner.push(("lru_path", by));
            let (by, rates) = replay_i1(
                f,
                p.traffic,
                p.on,
                p.b,
                p.l1i,
                (line_rule, call_order, chunked_loops, size_rule),
            );
            variants.push(("replay", by.iter().sum(), is_cal_i1(p)));
            by_owner.push(("replay", by));
            replay_rates = Some(rates);
        }
        // Below the floor the measured misses are ≈ 0 (the difference of two runs can even
        // be slightly negative): no relative error; counted apart with the prediction.
        let near_zero = p.i1 < MIN_MISSES;
        let mut row = json!({
            "traffic": p.traffic, "l1i": p.l1i, "batcher": if p.on { "on" } else { "off" },
            "b": p.b, "calibration": is_cal(p), "calibration_i1": is_cal_i1(p),
            "i1_measured": p.i1,
            "d1_predicted": d1, "d1_measured": p.d1, "d1_error": (d1 - p.d1) / p.d1,
            "node_rates": p.rates.iter().map(|(k, r)| (k.clone(), json!([r.calls, r.packets]))).collect::<serde_json::Map<_, _>>(),
        });
        if let Some(r) = &replay_rates {
            row["replay_node_rates"] = OWNERS
                .iter()
                .zip(r)
                .map(|(o, r)| (o.to_string(), json!([r.calls, r.packets])))
                .collect::<serde_json::Map<_, _>>()
                .into();
        }
        for (name, by) in &by_owner {
            row[format!("i1_{name}_by_node")] = OWNERS
                .iter()
                .zip(by)
                .map(|(o, m)| (o.to_string(), json!(m)))
                .collect::<serde_json::Map<_, _>>()
                .into();
        }
        for &(name, i1, cal) in &variants {
            let e = (i1 - p.i1) / p.i1;
            row[format!("i1_{name}")] = json!(i1);
            row[format!("i1_{name}_error")] = if near_zero { Value::Null } else { json!(e) };
            if cal {
                continue;
            }
            if near_zero {
                let z = zero_i1
                    .entry((name.to_string(), p.l1i))
                    .or_insert((0, 0.0f64));
                *z = (z.0 + 1, z.1.max(i1));
            } else {
                err_i1
                    .entry((name.to_string(), p.l1i))
                    .or_default()
                    .push(e.abs());
            }
        }
        // D1 does not depend on the simulated L1i: count it once (host runs).
        if !is_cal(p) && p.l1i == 32768 {
            err_d1.push(((d1 - p.d1) / p.d1).abs());
        }
        rows.push(row);
    }
    let stats = |v: &mut Vec<f64>| -> (f64, f64) {
        v.sort_by(f64::total_cmp);
        (v[v.len() / 2], *v.last().unwrap_or(&0.0))
    };
    let mut summary = serde_json::Map::new();
    for ((name, l1i), v) in err_i1.iter_mut() {
        let (m, w) = stats(v);
        let (zeros, zero_max) = zero_i1
            .get(&(name.clone(), *l1i))
            .copied()
            .unwrap_or((0, 0.0));
        summary.insert(
            format!("i1_{name}_l1i_{l1i}"),
            json!({"median_abs_error": m, "worst_abs_error": w, "points": v.len(),
                   "points_measured_near_zero": zeros, "largest_prediction_there": zero_max}),
        );
    }
    let (m, w) = stats(&mut err_d1);
    summary.insert(
        "d1".into(),
        json!({"median_abs_error": m, "worst_abs_error": w, "points": err_d1.len()}),
    );
    let doc = json!({
        "data": data.display().to_string(), "binary": bin.display().to_string(),
        "calibration_batches": cal_batches, "l1d_bytes": l1d, "prefetch_width": WIDTH,
        "i1_capacity_term": capacity, "i1_replay_line_rule": format!("{line_rule:?}"),
        "i1_replay_order": format!("{call_order:?}"), "i1_replay_chunked_loops": chunked_loops,
        "i1_replay_size_rule": format!("{size_rule:?}"),
        "code_bytes": NODES.iter().zip(&bytes).map(|((n, _), b)| json!({"node": n, "bytes": b})).collect::<Vec<_>>(),
        "batcher_code_bytes": {"on": batcher_on, "off": batcher_off},
        "params": params.iter().map(|((l1i, tr), p)| json!({"l1i": l1i, "traffic": tr, "params": p})).collect::<Vec<_>>(),
        "rows": rows, "summary": summary,
    });
    if !json {
        println!("code bytes (nm -S of {}):", bin.display());
        for ((n, _), b) in NODES.iter().zip(&bytes) {
            print!(" {n} {b};");
        }
        println!(" batcher on {batcher_on}, off {batcher_off}");
        for ((l1i, tr), p) in &params {
            println!(
                "L1i {l1i}, {tr}: code miss ratio {:.3}, narrow {:.2}, capacity {:.2}; D1 k0 {:.2}, reuse {:.2}, lines/packet {:.2}",
                p.code_miss_ratio, p.narrow_code_ratio, p.code_capacity, p.d_compulsory, p.d_reuse, p.d_lines_per_packet
            );
        }
        println!(
            "{:<12} {:>6} {:>4} {:>5} {:>9} | {:>9} {:>6} | {:>9} {:>6} | {:>9} {:>6} | {:>9} {:>6} | {:>7} {:>7} {:>6}",
            "traffic", "L1i", "ppb", "b", "I1 meas", "lru", "err", "lru_path", "err", "replay", "err", "ratio", "err", "D1 pred", "D1 meas", "err"
        );
        let pct = |v: &Value| match v.as_f64() {
            Some(e) => format!("{:+.0}%", 100.0 * e),
            None => "-".into(),
        };
        for r in &rows {
            println!(
                "{:<12} {:>6} {:>4} {:>5} {:>9.3} | {:>9.3} {:>6} | {:>9.3} {:>6} | {:>9.3} {:>6} | {:>9.3} {:>6} | {:>7.2} {:>7.2} {:>6}{}",
                r["traffic"].as_str().unwrap_or(""),
                r["l1i"],
                r["batcher"].as_str().unwrap_or(""),
                r["b"],
                r["i1_measured"].as_f64().unwrap_or(0.0),
                r["i1_lru"].as_f64().unwrap_or(f64::NAN),
                pct(&r["i1_lru_error"]),
                r["i1_lru_path"].as_f64().unwrap_or(f64::NAN),
                pct(&r["i1_lru_path_error"]),
                r["i1_replay"].as_f64().unwrap_or(f64::NAN),
                pct(&r["i1_replay_error"]),
                r["i1_ratio"].as_f64().unwrap_or(0.0),
                pct(&r["i1_ratio_error"]),
                r["d1_predicted"].as_f64().unwrap_or(0.0),
                r["d1_measured"].as_f64().unwrap_or(0.0),
                pct(&r["d1_error"]),
                match (r["calibration_i1"].as_bool(), r["calibration"].as_bool()) {
                    (Some(true), Some(true)) => "  (calibration: I1 lines, fits)",
                    (Some(true), _) => "  (calibration: I1 lines)",
                    (_, Some(true)) => "  (calibration: fits)",
                    _ => "",
                }
            );
        }
        for (k, v) in &summary {
            println!(
                "{k}: median abs error {:.1}%, worst {:.1}% over {} predicted points{}",
                100.0 * v["median_abs_error"].as_f64().unwrap_or(0.0),
                100.0 * v["worst_abs_error"].as_f64().unwrap_or(0.0),
                v["points"],
                match v["points_measured_near_zero"].as_u64() {
                    Some(z) if z > 0 => format!(
                        "; {z} more measured below {MIN_MISSES} per packet (predicted at most {:.3})",
                        v["largest_prediction_there"].as_f64().unwrap_or(0.0)
                    ),
                    _ => String::new(),
                }
            );
        }
    }
    Ok(doc)
}
