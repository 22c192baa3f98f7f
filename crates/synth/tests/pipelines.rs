//! The generated pipelines against a reference model written here, apart from the crate:
//! every record of every benchmark's sweep, its traffic through the pktvec graph, each
//! packet compared byte for byte (and by transmit port) with what the model computes from
//! the input frame and the record; bad input (truncations, other EtherTypes, runaway header
//! chains, TTL 0, unknown keys, random bytes) dropped with a reason, never a panic, and
//! conserved; and the SWX twin's spec checked for what DPDK's parser needs.

use pktvec_graph::{
    Conservation, Context, Frame, GraphBuilder, GraphConfig, NoError, NoNext, Node, NodeKind,
};
use pktvec_io::capture::{Capture, PcapSource, PcapSourceNext};
use pktvec_packet::{BufferPool, PoolConfig};
use pktvec_synth::layout::{
    dep_key, kv_key, kv_value, MAC_PORT1, MAC_PORT2, REGISTER_INIT, REGISTER_SIZE,
};
use pktvec_synth::pipeline::{self, KeyKind};
use pktvec_synth::record::{Bench, Record, RecordError, Registers, Share, Variant, Writes};
use pktvec_synth::swx::Twin;
use pktvec_synth::traffic;
use proptest::prelude::*;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex, OnceLock};

// ---------------------------------------------------------------------------------------
// Running a record's graph.

/// A sink keeping every packet's bytes and transmit interface.
#[derive(Default)]
struct Collect {
    out: Packets,
}

impl Node for Collect {
    type Next = NoNext;
    type Error = NoError;
    const KIND: NodeKind = NodeKind::Sink;
    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        for &bi in frame.buffers() {
            let pool = cx.pool();
            self.out.push((pool.data(bi).to_vec(), pool.meta(bi).tx_if));
        }
        cx.free_frame(frame);
    }
}

/// Packets at a sink: (bytes, transmit interface).
type Packets = Vec<(Vec<u8>, u16)>;

/// What came out of one run.
struct Run {
    /// Packets at the sink, in arrival order.
    out: Packets,
    /// Drops by reason (summed over nodes).
    drops: BTreeMap<String, u64>,
    /// The graph's conservation after the run.
    cons: Conservation,
}

/// `frames` once through the record's graph: source (not looping) → pipeline → sink.
fn run(r: &Record, frames: &[Vec<u8>]) -> Run {
    run_cfg(r, frames, GraphConfig::default())
}

/// [`run`] under a graph configuration (vector and sub-batch sizes).
fn run_cfg(r: &Record, frames: &[Vec<u8>], cfg: GraphConfig) -> Run {
    let cap = Capture {
        packets: frames.to_vec(),
        ..Default::default()
    };
    let mut b = GraphBuilder::new(cfg);
    b.add("input", PcapSource::new(cap).with_timestamps(false))
        .add("tx", Collect::default());
    let built = pipeline::add_to(r, &mut b, "tx").expect("the pipeline builds");
    b.set_next("input", PcapSourceNext::Out, &built.entry);
    let pool = BufferPool::new(PoolConfig {
        buffers: 1024,
        ..Default::default()
    })
    .expect("pool");
    let mut g = b.build(pool).expect("the graph builds");
    g.run_until_idle();
    let cons = g.conservation();
    let mut drops = BTreeMap::new();
    for row in g.errors().rows {
        *drops.entry(row.reason).or_insert(0) += row.count;
    }
    let out = std::mem::take(&mut g.node_mut::<Collect>("tx").expect("sink").out);
    let run = Run { out, drops, cons };
    check_conserved(r, frames.len(), &run);
    run
}

/// Exact conservation: every frame entered, left at the sink or was dropped with a reason,
/// none in flight, every buffer back in the pool.
fn check_conserved(r: &Record, n: usize, run: &Run) {
    let c = &run.cons;
    let name = r.name();
    assert!(c.is_balanced(), "{name}: {c}");
    assert_eq!(c.input, n as u64, "{name}: {c}");
    assert_eq!(c.created, 0, "{name}: {c}");
    assert_eq!(c.in_flight, 0, "{name}: {c}");
    assert_eq!(c.dropped_without_buffer, 0, "{name}: {c}");
    assert_eq!(c.output, run.out.len() as u64, "{name}: {c}");
    assert_eq!(c.dropped, run.drops.values().sum::<u64>(), "{name}: {c}");
    assert_eq!(c.buffers_in_use, 0, "{name}: {c}");
}

// ---------------------------------------------------------------------------------------
// The reference model: what one frame should become, from the record alone.

const TRUNCATED: &str = "truncated header";
const NO_KEY: &str = "no key/value header";
const FORWARD_MISS: &str = "forward_table miss";
const TABLE_MISS: &str = "table miss";
const NOT_IPV4: &str = "not ipv4";
const BAD_IPV4: &str = "bad ipv4 header";
const TTL_EXPIRED: &str = "ttl expired";

/// A packet out (bytes, port) or the reason it is dropped.
type Out = Result<(Vec<u8>, u16), &'static str>;

fn be16(d: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([d[at], d[at + 1]])
}

fn be32(d: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([d[at], d[at + 1], d[at + 2], d[at + 3]])
}

fn put32(d: &mut [u8], at: usize, v: u32) {
    d[at..at + 4].copy_from_slice(&v.to_be_bytes());
}

/// Ones' complement sum of 16-bit words, folded.
fn ones_sum(words: impl IntoIterator<Item = u16>) -> u16 {
    let mut s: u64 = words.into_iter().map(u64::from).sum();
    while s > 0xFFFF {
        s = (s & 0xFFFF) + (s >> 16);
    }
    s as u16
}

/// The IPv4 header checksum of `h` (its checksum field counted as it is).
fn ip_checksum(h: &[u8]) -> u16 {
    !ones_sum(h.chunks(2).map(|c| u16::from_be_bytes([c[0], c[1]])))
}

/// The destination MAC's port, as `forward_table` has it.
fn forward(d: Vec<u8>) -> Out {
    let port = match d.get(..6) {
        Some(m) if m == MAC_PORT1 => 1,
        Some(m) if m == MAC_PORT2 => 2,
        Some(_) => return Err(FORWARD_MISS),
        None => return Err(TRUNCATED),
    };
    Ok((d, port))
}

/// The key/value table of a record, key → value, read from the rows the pipeline loads
/// after checking they are entry `j` → `kv_value(j) = j + 1` (cached: the flow benchmarks
/// share one 2^20-entry table).
fn kv_map(r: &Record) -> Arc<HashMap<u32, u32>> {
    type Cache = Mutex<HashMap<(u32, u64), Arc<HashMap<u32, u32>>>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let id = (r.kv_table_log2(), r.seed);
    if let Some(m) = cache.lock().unwrap().get(&id) {
        return m.clone();
    }
    let contents = pipeline::table_contents(r);
    assert_eq!(contents.len(), 1);
    let t = &contents[0];
    assert_eq!((t.name.as_str(), t.kind), ("kv_table", KeyKind::Kv));
    assert_eq!(t.rows.len(), 1 << r.kv_table_log2());
    let mut m = HashMap::with_capacity(t.rows.len());
    for (j, &(k, v)) in t.rows.iter().enumerate() {
        assert_eq!(v, j as u32 + 1, "entry {j}'s value");
        assert!(k <= u64::from(u32::MAX));
        assert!(m.insert(k as u32, v).is_none(), "key {k:#x} twice");
    }
    // Spot-check the traffic's side of the bijection.
    for j in [0u32, 1, 7] {
        assert_eq!(m.get(&kv_key(j, r.seed)), Some(&kv_value(j)));
    }
    let m = Arc::new(m);
    cache.lock().unwrap().insert(id, m.clone());
    m
}

/// What the record's program does to `input`: the bytes and port out, or the drop reason.
fn model(r: &Record, kv: Option<&HashMap<u32, u32>>, input: &[u8]) -> Out {
    let mut d = input.to_vec();
    let p = r.param;
    if r.bench == Bench::Checksum {
        return checksum_model(p, d);
    }
    // Ethernet, then PTP (anything else goes straight to forward_table, untouched).
    if d.len() < 14 {
        return Err(TRUNCATED);
    }
    if be16(&d, 12) != 0x88F7 {
        return forward(d);
    }
    if d.len() < 58 {
        return Err(TRUNCATED);
    }
    let kv_program = matches!(
        r.bench,
        Bench::TableSize
            | Bench::FlowChurn
            | Bench::FlowSize
            | Bench::StateRead
            | Bench::StateWrite
            | Bench::SharedRegister
    );
    // (headers declared, 16-bit fields each, branches per level)
    let (headers, fields, fanout) = match r.bench {
        Bench::ParseHeaders => (p, r.fields, 1),
        Bench::ParseFields => (1, p, 1),
        Bench::ParseBranches => (p, r.fields, r.fanout),
        Bench::HeaderRemove => (p, 4, 1),
        Bench::FieldWrites => (1, 16, 1),
        _ => (0, r.fields, 1),
    };
    let hlen = 2 * fields as usize;
    let mut parsed = 0;
    if kv_program {
        if d[19] != 1 {
            return Err(NO_KEY);
        }
        if d.len() < 66 {
            return Err(TRUNCATED);
        }
    } else {
        let (mut sel, mut off) = (u16::from(d[19]), 58);
        while parsed < headers && sel >= 1 && u32::from(sel) <= fanout {
            if off + hlen > d.len() {
                return Err(TRUNCATED);
            }
            sel = be16(&d, off);
            off += hlen;
            parsed += 1;
        }
    }
    match r.bench {
        Bench::ParseHeaders
        | Bench::ParseFields
        | Bench::ParseBranches
        | Bench::TablesIndependent
        | Bench::StateWrite
        | Bench::SharedRegister => {}
        Bench::TablesDependent => {
            // Table 0 maps the MAC of port a to ((1 + 1) << 8) | a, table i that key to
            // the next: the last writes ((p + 1) << 8) | a into PTP's reserved3.
            let a = match &d[..6] {
                m if m == MAC_PORT1 => 1,
                m if m == MAC_PORT2 => 2,
                _ => return Err(FORWARD_MISS),
            };
            let key = ((p + 1) << 8) | a;
            assert_eq!(key, dep_key(p, a));
            put32(&mut d, 30, key);
        }
        Bench::TableSize | Bench::FlowChurn | Bench::FlowSize => {
            let map = kv.expect("the key/value table");
            match map.get(&be32(&d, 58)) {
                Some(&v) => put32(&mut d, 62, v),
                None => return Err(TABLE_MISS),
            }
        }
        Bench::StateRead => put32(&mut d, 62, 0x5A5A_5A5A),
        Bench::HeaderAdd => {
            let mut o = d[..58].to_vec();
            o[19] = 1;
            for i in 0..p as u16 {
                // Four 16-bit fields: go on (0 in the last), the header's number, 0, 0.
                let go = u16::from(u32::from(i) + 1 < p);
                for field in [go, i, 0, 0] {
                    o.extend_from_slice(&field.to_be_bytes());
                }
            }
            o.extend_from_slice(&d[58..]);
            d = o;
        }
        Bench::HeaderRemove => {
            let mut o = d[..58].to_vec();
            o[19] = 0;
            o.extend_from_slice(&d[58 + 8 * parsed as usize..]);
            d = o;
        }
        Bench::FieldWrites => {
            // Only a header the program parsed is written.
            if parsed == 1 {
                let mut f = [0u16; 16];
                for (k, x) in f.iter_mut().enumerate() {
                    *x = be16(&d, 58 + 2 * k);
                }
                for i in 0..p as usize {
                    let (s, t) = (i % 16, (i + 1) % 16);
                    f[t] = match r.writes {
                        Writes::Chained => f[s],
                        Writes::Independent => 0x100 + i as u16,
                        Writes::Arithmetic => f[t].wrapping_add(f[s]),
                        Writes::Boolean => f[t] ^ f[s],
                    };
                }
                for (k, x) in f.iter().enumerate() {
                    d[58 + 2 * k..60 + 2 * k].copy_from_slice(&x.to_be_bytes());
                }
            }
        }
        Bench::Checksum => unreachable!(),
    }
    forward(d)
}

/// The checksum program: Ethernet + IPv4, TTL - 1, the checksum per mode.
fn checksum_model(mode: u32, mut d: Vec<u8>) -> Out {
    if d.len() < 34 {
        return Err(TRUNCATED);
    }
    if be16(&d, 12) != 0x0800 || d[14] >> 4 != 4 {
        return Err(NOT_IPV4);
    }
    let hl = usize::from(d[14] & 0xF) * 4;
    if hl < 20 || 14 + hl > d.len() {
        return Err(BAD_IPV4);
    }
    if d[22] == 0 {
        return Err(TTL_EXPIRED);
    }
    let old = be16(&d, 22);
    d[22] -= 1;
    let new = be16(&d, 22);
    match mode {
        0 => {}
        1 => {
            // RFC 1624, eqn. 3: HC' = ~(~HC + ~m + m').
            let hc = be16(&d, 24);
            let c = !ones_sum([!hc, !old, new]);
            d[24..26].copy_from_slice(&c.to_be_bytes());
        }
        _ => {
            d[24] = 0;
            d[25] = 0;
            let c = ip_checksum(&d[14..14 + hl]);
            d[24..26].copy_from_slice(&c.to_be_bytes());
        }
    }
    forward(d)
}

/// Runs `frames` and compares with the model packet for packet: in order (`ordered`) or as
/// multisets (when packets take different paths through a chain and may be reordered);
/// drops compared by reason.
fn check_against_model(r: &Record, frames: &[Vec<u8>], ordered: bool) -> Run {
    check_against_model_cfg(r, frames, ordered, GraphConfig::default())
}

/// [`check_against_model`] under a graph configuration.
fn check_against_model_cfg(r: &Record, frames: &[Vec<u8>], ordered: bool, cfg: GraphConfig) -> Run {
    let kv = matches!(
        r.bench,
        Bench::TableSize | Bench::FlowChurn | Bench::FlowSize
    )
    .then(|| kv_map(r));
    let mut want = Vec::new();
    let mut want_drops: BTreeMap<String, u64> = BTreeMap::new();
    for f in frames {
        match model(r, kv.as_deref(), f) {
            Ok(o) => want.push(o),
            Err(why) => *want_drops.entry(why.to_string()).or_insert(0) += 1,
        }
    }
    let got = run_cfg(r, frames, cfg);
    let name = r.name();
    assert_eq!(got.drops, want_drops, "{name}: drops by reason");
    assert_eq!(got.out.len(), want.len(), "{name}: packets out");
    if ordered {
        for (i, (g, w)) in got.out.iter().zip(&want).enumerate() {
            assert_eq!(g.1, w.1, "{name}: packet {i}'s port");
            assert_eq!(hex(&g.0), hex(&w.0), "{name}: packet {i}'s bytes");
        }
    } else {
        let mut g = got.out.clone();
        let mut w = want;
        g.sort();
        w.sort();
        assert!(g == w, "{name}: the packets out differ from the model's");
    }
    got
}

fn hex(d: &[u8]) -> String {
    d.iter().map(|b| format!("{b:02x}")).collect()
}

// ---------------------------------------------------------------------------------------
// 1. Every sweep record, its traffic, against the model.

/// Packets sent for a record: its traffic (at most 512 frames), a one-frame traffic sent
/// 300 times (more than a vector, so the loops' tails and state across packets are run).
fn test_frames(r: &Record) -> Vec<Vec<u8>> {
    let f = traffic::frames(r);
    if f.len() == 1 {
        vec![f[0].clone(); 300]
    } else {
        f
    }
}

/// A sweep's records made quick enough for a debug build: 512 packets, tables of at most
/// 2^14 entries.
fn quick_sweep(b: Bench) -> Vec<Record> {
    let mut out: Vec<Record> = Vec::new();
    for mut r in Record::sweep(b) {
        r.packets = 512;
        r.flow_table_log2 = 14;
        if r.bench == Bench::TableSize {
            r.param = r.param.min(14);
        }
        if !out.contains(&r) {
            out.push(r);
        }
    }
    out
}

/// Checks every record of `b`'s sweep against the model, and that the chain and fused
/// variants of one point emit the same bytes.
fn sweep_against_model(b: Bench) {
    let mut by_point: HashMap<u32, Vec<(Variant, Packets)>> = HashMap::new();
    for r in quick_sweep(b) {
        r.validate().expect("sweep records are valid");
        let frames = test_frames(&r);
        assert!(!frames.is_empty());
        let got = check_against_model(&r, &frames, true);
        let name = r.name();
        // The traffic is clean: nothing dropped, everything to port 2.
        assert!(got.drops.is_empty(), "{name}: {:?}", got.drops);
        assert_eq!(got.out.len(), frames.len(), "{name}");
        assert!(got.out.iter().all(|(_, port)| *port == 2), "{name}");
        by_point
            .entry(r.param)
            .or_default()
            .push((r.variant, got.out));
    }
    let two_variants = matches!(
        b,
        Bench::ParseHeaders
            | Bench::ParseFields
            | Bench::ParseBranches
            | Bench::TablesIndependent
            | Bench::TablesDependent
    );
    if two_variants {
        for (p, runs) in by_point {
            let chain = runs.iter().find(|(v, _)| *v == Variant::Chain);
            let fused = runs.iter().find(|(v, _)| *v == Variant::Fused);
            let (Some(chain), Some(fused)) = (chain, fused) else {
                panic!("{}: param {p} lacks a variant", b.name());
            };
            assert!(
                chain.1 == fused.1,
                "{}/{p}: chain and fused differ",
                b.name()
            );
        }
    }
}

#[test]
fn parse_headers_sweep() {
    sweep_against_model(Bench::ParseHeaders);
}

#[test]
fn parse_fields_sweep() {
    sweep_against_model(Bench::ParseFields);
}

#[test]
fn parse_branches_sweep() {
    sweep_against_model(Bench::ParseBranches);
}

#[test]
fn tables_independent_sweep() {
    sweep_against_model(Bench::TablesIndependent);
}

#[test]
fn tables_dependent_sweep() {
    sweep_against_model(Bench::TablesDependent);
}

#[test]
fn table_size_sweep() {
    sweep_against_model(Bench::TableSize);
}

#[test]
fn checksum_sweep() {
    sweep_against_model(Bench::Checksum);
    // Beyond the model: TTL 64 → 63; modes 1 and 2 leave a valid header checksum (as
    // etherparse reads it), equal to each other; mode 0 leaves the old one (now invalid).
    let mut outs = Vec::new();
    for mode in 0..3 {
        let r = Record::new(Bench::Checksum, mode);
        let input = &traffic::frames(&r)[0];
        let got = run(&r, std::slice::from_ref(input));
        let (d, port) = &got.out[0];
        assert_eq!((d.len(), *port, d[22]), (input.len(), 2, 63), "mode {mode}");
        let ip = etherparse::Ipv4HeaderSlice::from_slice(&d[14..]).expect("an IPv4 header");
        let valid = ip.header_checksum() == ip.to_header().calc_header_checksum();
        assert_eq!(valid, mode != 0, "mode {mode}: checksum valid");
        if mode == 0 {
            assert_eq!(d[24..26], input[24..26]);
        }
        outs.push(d.clone());
    }
    assert_eq!(outs[1], outs[2], "incremental and full agree");
}

#[test]
fn state_read_sweep() {
    sweep_against_model(Bench::StateRead);
    assert_eq!(REGISTER_INIT, 0x5A5A_5A5A);
}

#[test]
fn state_write_sweep() {
    sweep_against_model(Bench::StateWrite);
}

#[test]
fn header_add_sweep() {
    sweep_against_model(Bench::HeaderAdd);
}

#[test]
fn header_remove_sweep() {
    sweep_against_model(Bench::HeaderRemove);
}

#[test]
fn field_writes_sweep() {
    sweep_against_model(Bench::FieldWrites);
}

#[test]
fn flow_churn_sweep() {
    sweep_against_model(Bench::FlowChurn);
}

#[test]
fn flow_size_sweep() {
    sweep_against_model(Bench::FlowSize);
}

#[test]
fn shared_register_sweep() {
    sweep_against_model(Bench::SharedRegister);
}

#[test]
fn shared_register_counts_every_packet() {
    for share in [Share::Atomic, Share::Sharded] {
        let r = Record {
            share,
            ..Record::new(Bench::SharedRegister, 2)
        };
        let frames = test_frames(&r);
        let mut b = GraphBuilder::new(GraphConfig::default());
        b.add(
            "input",
            PcapSource::new(Capture {
                packets: frames.clone(),
                ..Default::default()
            })
            .with_timestamps(false),
        )
        .add("tx", Collect::default());
        let built = pipeline::add_to(&r, &mut b, "tx").unwrap();
        b.set_next("input", PcapSourceNext::Out, &built.entry);
        let mut g = b
            .build(BufferPool::new(PoolConfig::default()).unwrap())
            .unwrap();
        g.run_until_idle();
        let key = (be32(&frames[0], 58) & (REGISTER_SIZE - 1)) as usize;
        let node = g
            .node::<pktvec_synth::nodes::SharedRegister>("shared-register")
            .unwrap();
        match share {
            Share::Atomic => {
                let a = built.shared.expect("the shared register");
                assert_eq!(a[key].load(std::sync::atomic::Ordering::Relaxed), 300);
                assert_eq!(node.shard_total(), 0);
            }
            Share::Sharded => {
                assert!(built.shared.is_none());
                assert_eq!(node.shard_total(), 300);
            }
        }
    }
}

/// The sweep test of each benchmark (an exhaustive match: a new benchmark does not compile
/// without one).
fn sweep_test(b: Bench) -> fn() {
    match b {
        Bench::ParseHeaders => parse_headers_sweep,
        Bench::ParseFields => parse_fields_sweep,
        Bench::ParseBranches => parse_branches_sweep,
        Bench::TablesIndependent => tables_independent_sweep,
        Bench::TablesDependent => tables_dependent_sweep,
        Bench::TableSize => table_size_sweep,
        Bench::Checksum => checksum_sweep,
        Bench::StateRead => state_read_sweep,
        Bench::StateWrite => state_write_sweep,
        Bench::HeaderAdd => header_add_sweep,
        Bench::HeaderRemove => header_remove_sweep,
        Bench::FieldWrites => field_writes_sweep,
        Bench::FlowChurn => flow_churn_sweep,
        Bench::FlowSize => flow_size_sweep,
        Bench::SharedRegister => shared_register_sweep,
    }
}

#[test]
fn every_bench_has_a_sweep_test() {
    let tests: BTreeSet<usize> = Bench::ALL.iter().map(|&b| sweep_test(b) as usize).collect();
    assert_eq!(tests.len(), Bench::ALL.len());
    let names: BTreeSet<_> = Bench::ALL.iter().map(|b| b.name()).collect();
    assert_eq!(names.len(), Bench::ALL.len());
}

// ---------------------------------------------------------------------------------------
// 2. Bad input: dropped with a reason, never a panic.

/// One record per benchmark (small tables), both variants where there are two.
fn representatives() -> Vec<Record> {
    let mut v = Vec::new();
    for b in Bench::ALL {
        let p = match b {
            Bench::TableSize => 10,
            Bench::Checksum => 2,
            Bench::FlowChurn | Bench::FlowSize => continue, // table-size's program
            _ => *b.sweep().get(2).unwrap_or(&b.sweep()[0]),
        };
        let r = Record {
            packets: 64,
            ..Record::new(b, p)
        };
        if matches!(
            b,
            Bench::ParseHeaders
                | Bench::ParseFields
                | Bench::ParseBranches
                | Bench::TablesIndependent
                | Bench::TablesDependent
        ) {
            v.push(r.clone().with_variant(Variant::Chain));
        }
        v.push(r);
    }
    v
}

/// The offset where a record's headers end (what a frame needs for the program).
fn headers_end(r: &Record) -> usize {
    match r.bench {
        Bench::Checksum => 34,
        Bench::TablesIndependent | Bench::TablesDependent | Bench::HeaderAdd => 58,
        _ if r.has_kv() => 66,
        _ => 58 + 2 * (r.generic_headers() * r.fields_per_header()) as usize,
    }
}

#[test]
fn truncated_frames_are_dropped() {
    for r in representatives() {
        let full = traffic::frames(&r)[0].clone();
        let frames: Vec<Vec<u8>> = (0..=full.len()).map(|n| full[..n].to_vec()).collect();
        let got = check_against_model(&r, &frames, false);
        let need = headers_end(&r);
        let name = r.name();
        assert_eq!(
            got.drops,
            BTreeMap::from([(TRUNCATED.to_string(), need as u64)]),
            "{name}"
        );
        assert_eq!(got.out.len(), full.len() + 1 - need, "{name}");
    }
}

#[test]
fn other_ethertypes_are_forwarded_unparsed() {
    for r in representatives() {
        if r.bench == Bench::Checksum {
            continue;
        }
        let full = traffic::frames(&r)[0].clone();
        let mut frames = Vec::new();
        for et in [0x0800u16, 0x86DD, 0x88F8, 0x0000] {
            let mut f = full.clone();
            f[12..14].copy_from_slice(&et.to_be_bytes());
            frames.push(f.clone());
            frames.push(f[..60].to_vec()); // the Ethernet minimum
            frames.push(f[..20].to_vec()); // shorter than PTP
            frames.push(f[..14].to_vec());
        }
        let got = check_against_model(&r, &frames, false);
        let name = r.name();
        assert!(got.drops.is_empty(), "{name}: {:?}", got.drops);
        let mut out: Vec<_> = got.out.clone();
        let mut want: Vec<_> = frames.iter().map(|f| (f.clone(), 2)).collect();
        out.sort();
        want.sort();
        assert!(
            out == want,
            "{name}: other EtherTypes are not forwarded unchanged"
        );
    }
    // The checksum program drops what is not IPv4 (its SWX twin forwards it unchanged).
    let r = Record::new(Bench::Checksum, 1);
    let mut f = traffic::frames(&r)[0].clone();
    f[12..14].copy_from_slice(&0x88F7u16.to_be_bytes());
    let got = check_against_model(&r, &[f], true);
    assert_eq!(got.drops, BTreeMap::from([(NOT_IPV4.to_string(), 1)]));
}

#[test]
fn header_chains_longer_than_the_packet_are_dropped() {
    // Every 16-bit field 0x0001: each header selects another until the packet ends.
    let cases = [
        Record {
            fields: 8,
            packet_size: 600,
            ..Record::new(Bench::ParseHeaders, 32)
        },
        Record::new(Bench::ParseFields, 64),
        Record {
            fields: 8,
            packet_size: 600,
            ..Record::new(Bench::ParseBranches, 6)
        },
        Record::new(Bench::HeaderRemove, 16),
    ];
    for r in cases {
        for v in [Variant::Chain, Variant::Fused] {
            let r = r.clone().with_variant(v);
            r.validate().unwrap();
            let mut f = traffic::frames(&r)[0][..58].to_vec();
            f[19] = 1;
            while f.len() < 120 {
                f.extend_from_slice(&[0, 1]);
            }
            let got = check_against_model(&r, &[f.clone(), f[..59].to_vec()], false);
            assert_eq!(
                got.drops,
                BTreeMap::from([(TRUNCATED.to_string(), 2)]),
                "{}",
                r.name()
            );
        }
    }
}

#[test]
fn ttl_zero_is_dropped() {
    for mode in 0..3 {
        let r = Record::new(Bench::Checksum, mode);
        let good = traffic::frames(&r)[0].clone();
        let mut dead = good.clone();
        dead[22] = 0;
        let mut one = good.clone();
        one[22] = 1;
        let got = check_against_model(&r, &[dead, good, one], true);
        assert_eq!(got.drops, BTreeMap::from([(TTL_EXPIRED.to_string(), 1)]));
        assert_eq!(got.out[1].0[22], 0, "TTL 1 leaves with TTL 0");
    }
    // A header length below 5 words or past the packet, a version other than 4.
    let r = Record::new(Bench::Checksum, 2);
    let good = traffic::frames(&r)[0].clone();
    let mut short_ihl = good.clone();
    short_ihl[14] = 0x44;
    let mut long_ihl = good[..40].to_vec();
    long_ihl[14] = 0x4F;
    let mut v6 = good.clone();
    v6[14] = 0x65;
    let got = check_against_model(&r, &[short_ihl, long_ihl, v6], true);
    assert_eq!(
        got.drops,
        BTreeMap::from([(BAD_IPV4.to_string(), 2), (NOT_IPV4.to_string(), 1)])
    );
}

#[test]
fn unknown_keys_miss_the_table() {
    let r = Record {
        packets: 64,
        ..Record::new(Bench::TableSize, 10)
    };
    let map = kv_map(&r);
    let mut frames = traffic::frames(&r);
    let mut misses = 0;
    for (i, f) in frames.iter_mut().enumerate().filter(|(i, _)| i % 3 == 0) {
        let mut k = 0xDEAD_0000 + i as u32;
        while map.contains_key(&k) {
            k += 1;
        }
        put32(f, 58, k);
        misses += 1;
    }
    for v in [true, false] {
        let r = Record {
            prefetch: v,
            ..r.clone()
        };
        let got = check_against_model(&r, &frames, true);
        assert_eq!(
            got.drops,
            BTreeMap::from([(TABLE_MISS.to_string(), misses)])
        );
    }
    // No key/value header: the selector is not 1.
    let r = Record::new(Bench::StateRead, 2);
    let mut f = traffic::frames(&r)[0].clone();
    f[19] = 0;
    let got = check_against_model(&r, &[f], true);
    assert_eq!(got.drops, BTreeMap::from([(NO_KEY.to_string(), 1)]));
}

#[test]
fn unknown_destinations_miss_forward_table() {
    for r in representatives() {
        let mut f = traffic::frames(&r)[0].clone();
        f[5] ^= 0x80;
        let mut to1 = traffic::frames(&r)[0].clone();
        to1[..6].copy_from_slice(&MAC_PORT1);
        let got = check_against_model(&r, &[f, to1], true);
        assert_eq!(
            got.drops,
            BTreeMap::from([(FORWARD_MISS.to_string(), 1)]),
            "{}",
            r.name()
        );
        assert_eq!(got.out[0].1, 1, "{}", r.name());
    }
}

#[test]
fn table_nodes_at_every_vector_and_sub_batch_size() {
    // Hits, key misses and unknown destinations interleaved, through the sub-batch loop's
    // edges: vectors of 1 to 256, sub-batches of 1 to 256 (and no prefetch: one at a time).
    let mut cases = Vec::new();
    for prefetch in [true, false] {
        let r = Record {
            packets: 100,
            prefetch,
            ..Record::new(Bench::TableSize, 10)
        };
        let map = kv_map(&r);
        let mut frames = traffic::frames(&r);
        for (i, f) in frames.iter_mut().enumerate() {
            if i % 7 == 3 {
                let mut k = 0x7000_0000 + i as u32;
                while map.contains_key(&k) {
                    k += 1;
                }
                put32(f, 58, k);
            }
        }
        cases.push((r, frames));
        for b in [Bench::TablesIndependent, Bench::TablesDependent] {
            for v in [Variant::Chain, Variant::Fused] {
                let r = Record {
                    prefetch,
                    ..Record::new(b, 4).with_variant(v)
                };
                let base = traffic::frames(&r)[0].clone();
                let frames = (0..100)
                    .map(|i| {
                        let mut f = base.clone();
                        match i % 5 {
                            1 => f[..6].copy_from_slice(&MAC_PORT1),
                            3 => f[5] = i as u8,
                            _ => {}
                        }
                        f
                    })
                    .collect::<Vec<_>>();
                cases.push((r, frames));
            }
        }
    }
    for (r, frames) in &cases {
        for vector_size in [1, 5, 64, 256] {
            for sub_batch in [1, 3, 16, 256] {
                let cfg = GraphConfig {
                    vector_size,
                    sub_batch,
                    ..GraphConfig::default()
                };
                check_against_model_cfg(r, frames, true, cfg);
            }
        }
    }
}

#[test]
fn header_add_fills_the_headroom() {
    let r = Record::new(Bench::HeaderAdd, 16);
    r.validate().unwrap();
    let frames = test_frames(&r);
    let got = check_against_model(&r, &frames, true);
    assert!(got.drops.is_empty());
    assert!(got.out.iter().all(|(d, _)| d.len() == 256 + 16 * 8));
    assert!(Record::new(Bench::HeaderAdd, 17).validate().is_err());
    // Removing what was added gives the traffic back (bar PTP's selector).
    let back = Record::new(Bench::HeaderRemove, 16);
    let added = got.out[0].0.clone();
    let got = check_against_model(&back, &[added], true);
    let mut want = frames[0].clone();
    want[19] = 0;
    assert_eq!(got.out[0].0, want);
}

#[test]
fn field_writes_leave_an_absent_header_alone() {
    // The selector says no generic header follows PTP: nothing to write.
    for w in [
        Writes::Chained,
        Writes::Independent,
        Writes::Arithmetic,
        Writes::Boolean,
    ] {
        let r = Record {
            writes: w,
            ..Record::new(Bench::FieldWrites, 16)
        };
        let mut f = traffic::frames(&r)[0].clone();
        f[19] = 0;
        let got = check_against_model(&r, std::slice::from_ref(&f), true);
        assert_eq!(got.out[0].0, f, "{}", r.name());
    }
}

/// Records for the random-input property: one per program with small tables.
fn fuzz_records() -> Vec<Record> {
    let mut v = representatives();
    v.push(Record {
        registers: Registers::Different,
        ..Record::new(Bench::StateRead, 4)
    });
    v.push(Record {
        writes: Writes::Arithmetic,
        ..Record::new(Bench::FieldWrites, 20)
    });
    v.push(Record {
        fanout: 3,
        ..Record::new(Bench::ParseBranches, 3)
    });
    v.push(Record::new(Bench::Checksum, 1));
    v.push(Record::new(Bench::Checksum, 0));
    v
}

/// A frame: a record's traffic frame, cut and with a few bytes changed in its headers, or
/// random bytes.
fn frame_strategy() -> impl Strategy<Value = (usize, Vec<(usize, u8)>, Option<Vec<u8>>)> {
    (
        0usize..300,
        prop::collection::vec((0usize..120, any::<u8>()), 0..4),
        prop_oneof![
            3 => Just(None),
            1 => prop::collection::vec(any::<u8>(), 0..200).prop_map(Some),
        ],
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn random_frames_are_handled(
        which in 0usize..64,
        shapes in prop::collection::vec(frame_strategy(), 1..12),
    ) {
        let records = fuzz_records();
        let r = &records[which % records.len()];
        let base = &traffic::frames(r)[0];
        let frames: Vec<Vec<u8>> = shapes
            .into_iter()
            .map(|(len, edits, random)| {
                let mut f = random.unwrap_or_else(|| base.clone());
                for (at, b) in edits {
                    if at < f.len() {
                        f[at] = b;
                    }
                }
                f.truncate(len);
                f
            })
            .collect();
        // No panic, exact conservation (in `run`), the model's verdicts.
        check_against_model(r, &frames, false);
    }
}

// ---------------------------------------------------------------------------------------
// 3. The SWX twin.

/// The spec's `apply { ... }` block and the rest.
fn split_apply(spec: &str) -> (Vec<&str>, Vec<&str>) {
    let lines: Vec<&str> = spec.lines().collect();
    let start = lines
        .iter()
        .position(|l| *l == "apply {")
        .expect("an apply block");
    let end = start
        + lines[start..]
            .iter()
            .position(|l| *l == "}")
            .expect("the apply block ends");
    let mut rest = lines[..start].to_vec();
    rest.extend_from_slice(&lines[end + 1..]);
    (lines[start + 1..end].to_vec(), rest)
}

/// An apply line's instruction and operands (without its label).
fn instruction(l: &str) -> Vec<&str> {
    let l = match l.split_once(" : ") {
        Some((_, i)) => i,
        None => l,
    };
    l.split_whitespace().collect()
}

fn check_twin(r: &Record) {
    let name = r.name();
    let twin = Twin::new(r);
    let spec = &twin.spec;
    assert_eq!(spec.matches("apply {").count(), 1, "{name}");
    let (apply, rest) = split_apply(spec);
    // Declarations.
    let declared = |kw: &str| -> BTreeSet<String> {
        rest.iter()
            .filter_map(|l| l.strip_prefix(kw))
            .map(|l| l.split_whitespace().next().unwrap().to_string())
            .collect()
    };
    let tables = declared("table ");
    let headers = declared("header ");
    let actions = declared("action ");
    let regarrays = declared("regarray ");
    let header_lines = spec.lines().filter(|l| l.starts_with("header ")).count();
    assert_eq!(
        header_lines,
        headers.len(),
        "{name}: a header declared twice"
    );
    assert!(
        header_lines <= 64,
        "{name}: {header_lines} headers (DPDK's limit is 64)"
    );
    // Tables: each applied one declared, each declared one applied, its actions declared.
    let applied: BTreeSet<String> = apply
        .iter()
        .map(|l| instruction(l))
        .filter(|i| i.first() == Some(&"table"))
        .map(|i| i[1].to_string())
        .collect();
    assert_eq!(applied, tables, "{name}: tables applied vs declared");
    let mut in_actions = false;
    for l in &rest {
        match l.trim() {
            "actions {" => in_actions = true,
            "}" => in_actions = false,
            a if in_actions => assert!(actions.contains(a), "{name}: action {a}"),
            _ => {}
        }
    }
    // DPDK's checks on the apply block: rx first, tx (or drop) or jmp last.
    assert_eq!(instruction(apply[0])[0], "rx", "{name}");
    let last = instruction(apply[apply.len() - 1])[0];
    assert!(
        matches!(last, "tx" | "drop" | "jmp"),
        "{name}: ends with {last}"
    );
    // Labels jumped to are defined; headers and registers used are declared.
    let labels: BTreeSet<&str> = apply
        .iter()
        .filter_map(|l| l.split_once(" : ").map(|(lab, _)| lab))
        .collect();
    for l in &apply {
        let i = instruction(l);
        if i[0].starts_with("jmp") {
            assert!(labels.contains(i[1]), "{name}: label {} undefined", i[1]);
        }
        for op in &i[1..] {
            if let Some(h) = op.strip_prefix("h.") {
                let h = h.split('.').next().unwrap();
                assert!(headers.contains(h), "{name}: header {h} undeclared");
            }
        }
        // regrd DST ARRAY INDEX; regwr and regadd ARRAY INDEX SRC.
        let array = match i[0] {
            "regrd" => Some(i[2]),
            "regwr" | "regadd" => Some(i[1]),
            _ => None,
        };
        if let Some(a) = array {
            assert!(
                regarrays.contains(a),
                "{name}: register array {a} undeclared"
            );
        }
    }
    // Entries: forward_table's two, then one line per row of each table.
    let contents = pipeline::table_contents(r);
    assert_eq!(twin.tables.len(), contents.len() + 1, "{name}");
    assert_eq!(twin.tables[0].0, "forward_table");
    assert_eq!(twin.tables[0].1.lines().count(), 2);
    for ((tname, text), c) in twin.tables[1..].iter().zip(&contents) {
        assert_eq!(tname, &c.name);
        assert!(
            tables.contains(tname),
            "{name}: entries for undeclared {tname}"
        );
        assert_eq!(
            text.lines().count(),
            c.rows.len(),
            "{name}: {tname}'s entries"
        );
    }
    for (tname, _) in &twin.tables {
        let size = spec
            .split(&format!("table {tname} {{"))
            .nth(1)
            .and_then(|s| s.split("\tsize ").nth(1))
            .and_then(|s| s.lines().next())
            .and_then(|s| s.parse::<usize>().ok())
            .expect("the table's size");
        let rows = twin
            .tables
            .iter()
            .find(|t| &t.0 == tname)
            .unwrap()
            .1
            .lines()
            .count();
        assert!(size >= rows, "{name}: {tname} holds {size} < {rows} rows");
    }
}

/// Records beyond the sweeps: the representatives of the bad-input tests, the longest
/// header chains and header-add's 16 headers.
#[test]
fn twin_specs_of_other_records_are_well_formed() {
    let mut records = fuzz_records();
    records.extend([
        Record::new(Bench::ParseHeaders, 32),
        Record::new(Bench::ParseFields, 64),
        Record::new(Bench::HeaderAdd, 16),
        Record::new(Bench::HeaderRemove, 16),
        Record::new(Bench::FieldWrites, 64),
        Record::new(Bench::StateWrite, 32),
        Record {
            registers: Registers::Different,
            ..Record::new(Bench::StateRead, 32)
        },
        Record {
            fanout: 3,
            ..Record::new(Bench::ParseBranches, 3)
        },
        Record::new(Bench::TablesDependent, 32).with_variant(Variant::Chain),
    ]);
    for r in records {
        r.validate().unwrap();
        check_twin(&r);
    }
}

/// A key/value table of more than 2^14 entries.
fn big_table(r: &Record) -> bool {
    matches!(
        r.bench,
        Bench::TableSize | Bench::FlowChurn | Bench::FlowSize
    ) && r.kv_table_log2() > 14
}

/// Every sweep record but the biggest tables.
#[test]
fn twin_specs_are_well_formed() {
    for b in Bench::ALL {
        for r in Record::sweep(b) {
            if !big_table(&r) {
                check_twin(&r);
            }
        }
    }
}

/// The sweep records with 2^18 entries and more (the slowest test in a debug build: about
/// 11 s for 2^18 + 2^22 + 16 × 2^20 entries).
#[test]
fn twin_specs_of_big_tables_are_well_formed() {
    for b in [Bench::TableSize, Bench::FlowChurn, Bench::FlowSize] {
        for r in Record::sweep(b) {
            if big_table(&r) {
                check_twin(&r);
            }
        }
    }
}

#[test]
fn records_round_trip_through_toml() {
    for b in Bench::ALL {
        for mut r in Record::sweep(b) {
            r.seed = 0x1234_5678;
            r.packets = 1000;
            let text = toml::to_string(&r).expect("serializes");
            let back: Record = toml::from_str(&text).expect("parses back");
            assert_eq!(back, r, "{text}");
            // Unknown fields are refused.
            let bad = format!("{text}\nbogus = 1\n");
            let err = toml::from_str::<Record>(&bad).unwrap_err().to_string();
            assert!(err.contains("bogus"), "{err}");
        }
    }
    // The defaults fill in what a file leaves out.
    let r: Record = toml::from_str("bench = \"table-size\"\nparam = 12").unwrap();
    assert_eq!(r, Record::new(Bench::TableSize, 12));
    assert!(toml::from_str::<Record>("bench = \"nope\"\nparam = 1").is_err());
    assert!(matches!(
        Record::new(Bench::Checksum, 3).validate(),
        Err(RecordError::OutOfRange { field: "param", .. })
    ));
}

/// Every record file shipped in `crates/synth/records/` parses, validates and builds.
#[test]
fn shipped_records_build() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("records");
    let mut seen = std::collections::HashSet::new();
    for e in std::fs::read_dir(&dir).unwrap() {
        let path = e.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let mut r: pktvec_synth::record::Record =
            toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        r.validate().unwrap();
        seen.insert(r.bench);
        r.packets = r.packets.min(64);
        let mut b = pktvec_graph::GraphBuilder::new(pktvec_graph::GraphConfig::default());
        b.add("tx", pktvec_io::capture::CountingSink::new(4));
        pktvec_synth::pipeline::add_to(&r, &mut b, "tx").unwrap();
        assert!(pktvec_synth::swx::Twin::new(&r).spec.contains("apply {"));
    }
    assert_eq!(
        seen.len(),
        pktvec_synth::record::Bench::ALL.len(),
        "one record per benchmark"
    );
}
