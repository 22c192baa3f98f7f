//! The intruder detector against a reference model written here (etherparse for the
//! frames, a HashMap reassembly, a naive substring search), under every strategy on one
//! and two workers; malformed and stateful-invalid fragments; reassembly and flow expiry.

use etherparse::{SlicedPacket, TransportSlice};
use pktvec_nf::intruder::{
    build_fragment, generate, parse_fragment, FlowState, FragmentHeader, Intruder, IntruderConfig,
    IntruderError, IntruderWorker, MessageKey, TrafficConfig, HEADER_LEN, PORT, SIGNATURES,
};
use pktvec_nf::runtime::{run, Nf, NfRun, NfWorker, RunConfig};
use pktvec_packet::builder::PacketBuilder;
use pktvec_packet::wire::{Ipv4Packet, MacAddr, TcpFlags, UdpPacket};
use pktvec_packet::{BufferPool, PoolConfig};
use pktvec_state::{Domain, Strategy, SyncConfig};
use proptest::prelude::*;
use std::collections::{BTreeMap, HashMap};
use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::Arc;
use std::time::Duration;

/// What the traffic should yield, computed independently of the detector.
#[derive(Default)]
struct Reference {
    attacks: Vec<MessageKey>,
    messages: u64,
    flows: BTreeMap<u32, FlowState>,
    attack_msgs: HashMap<u32, Vec<u32>>,
}

fn be16(b: &[u8]) -> u16 {
    u16::from_be_bytes([b[0], b[1]])
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// Reassembles valid traffic with plain maps and scans each message naively.
fn reference(frames: &[Vec<u8>]) -> Reference {
    type Parts = (u8, usize, Vec<(usize, Vec<u8>)>);
    let mut r = Reference::default();
    let mut pending: HashMap<(u32, u32), Parts> = HashMap::new();
    for f in frames {
        let p = SlicedPacket::from_ethernet(f).expect("valid frame");
        let Some(TransportSlice::Udp(u)) = p.transport else {
            panic!("not udp")
        };
        assert_eq!(u.destination_port(), PORT);
        let pl = u.payload();
        let (flow, msg, count, total, offset) = (
            be32(&pl[0..]),
            be32(&pl[4..]),
            pl[9],
            usize::from(be16(&pl[10..])),
            usize::from(be16(&pl[12..])),
        );
        let data = pl[HEADER_LEN..].to_vec();
        let fs = r.flows.entry(flow).or_default();
        fs.fragments += 1;
        fs.bytes += data.len() as u64;
        let e = pending
            .entry((flow, msg))
            .or_insert((count, total, Vec::new()));
        e.2.push((offset, data));
        if e.2.len() == usize::from(e.0) {
            let (_, total, parts) = pending.remove(&(flow, msg)).unwrap();
            let mut m = vec![0u8; total];
            for (o, d) in parts {
                m[o..o + d.len()].copy_from_slice(&d);
            }
            let attack = SIGNATURES
                .iter()
                .any(|s| m.windows(s.len()).any(|w| w == *s));
            r.messages += 1;
            fs.messages += 1;
            if attack {
                fs.attacks += 1;
                fs.flagged = true;
                r.attacks.push(MessageKey { flow, msg });
                r.attack_msgs.entry(flow).or_default().push(msg);
            }
        }
    }
    assert!(
        pending.is_empty(),
        "generated traffic left incomplete messages"
    );
    r.attacks.sort_unstable();
    r
}

fn domain(strategy: Strategy, workers: usize) -> Arc<Domain> {
    Domain::new(SyncConfig {
        strategy,
        workers,
        stripes: 64,
        ..SyncConfig::default()
    })
    .unwrap()
}

fn config() -> IntruderConfig {
    IntruderConfig {
        reassembly_capacity: 32768,
        flow_capacity: 32768,
        reassembly_timeout: Duration::from_secs(600),
        flow_timeout: Duration::from_secs(600),
        ..IntruderConfig::default()
    }
}

fn run_cfg(packets_per_worker: usize) -> RunConfig {
    RunConfig {
        packets_per_worker: packets_per_worker as u64,
        pin: false,
        // a ring and a pool that hold a worker's whole traffic: no congestion or buffer
        // drop under affinity, however the workers are scheduled
        buffers: packets_per_worker.max(4096) + 1024,
        handoff_ring: packets_per_worker.next_power_of_two().max(1024),
        ..RunConfig::default()
    }
}

fn run_split(nf: &Arc<Intruder>, parts: Vec<Vec<Vec<u8>>>, per_worker: usize) -> NfRun {
    let parts = Arc::new(parts);
    run(nf, move |w| parts[w].clone(), &run_cfg(per_worker)).unwrap()
}

#[test]
fn detections_equal_the_ground_truth_under_every_strategy() {
    const PER_WORKER: usize = 20_000;
    for workers in [1, 2] {
        let t = generate(&TrafficConfig {
            packets: PER_WORKER * workers,
            seed: 11 + workers as u64,
            ..TrafficConfig::default()
        });
        let want = reference(&t.frames);
        // the generator's answer is the reference's
        assert_eq!(want.attacks, t.attacks);
        assert_eq!(want.messages, t.messages);
        assert_eq!(want.flows.len() as u64, t.flows);
        let share = t.attacks.len() as f64 / t.messages as f64;
        assert!((0.05..0.15).contains(&share), "attack share {share}");
        let parts = t.split(workers);
        if workers == 2 {
            // fragments of one message reach both workers: reassembly must meet in the table
            let mut seen: HashMap<(u32, u32), [bool; 2]> = HashMap::new();
            for (w, p) in parts.iter().enumerate() {
                for f in p {
                    let h = parse_fragment(f).unwrap().header;
                    seen.entry((h.flow, h.msg)).or_default()[w] = true;
                }
            }
            let both = seen.values().filter(|s| s[0] && s[1]).count();
            assert!(both > 500, "{both} messages split across workers");
        }
        for strategy in Strategy::available() {
            let what = format!("{strategy} on {workers} workers");
            let d = domain(strategy, workers);
            let nf = Arc::new(Intruder::new(&d, config()).unwrap());
            let r = run_split(&nf, parts.clone(), PER_WORKER);
            let c = r.report.conservation();
            let total = (PER_WORKER * workers) as u64;
            assert!(c.is_balanced(), "{what}: {c}");
            assert_eq!(c.input, total, "{what}");
            assert_eq!(c.input, c.output + c.dropped, "{what}");
            assert_eq!(c.dropped, 0, "{what}: {}", r);
            assert_eq!(r.counter("fragments"), total, "{what}");
            assert_eq!(r.counter("messages"), t.messages, "{what}");
            assert_eq!(r.counter("detections"), t.attacks.len() as u64, "{what}");
            assert_eq!(nf.detected(), t.attacks, "{what}");
            assert_eq!(r.counter("reassembly timeout"), 0, "{what}");
            assert_eq!(r.counter("flow state lost"), 0, "{what}");
            assert_eq!(r.counter("detection log overflow"), 0, "{what}");
            // every reassembly record is back on a worker's stack; one flow record per flow
            assert_eq!(
                r.counter("reassembly records free"),
                nf.reassembly_capacity() as u64,
                "{what}"
            );
            assert_eq!(
                nf.flow_capacity() as u64 - r.counter("flow records free"),
                t.flows,
                "{what}"
            );
            // both phases' per-flow state
            for (&flow, exp) in &want.flows {
                let got = nf
                    .flow(flow)
                    .unwrap_or_else(|| panic!("{what}: flow {flow}"));
                assert_eq!(
                    (
                        got.fragments,
                        got.bytes,
                        got.messages,
                        got.attacks,
                        got.flagged
                    ),
                    (
                        exp.fragments,
                        exp.bytes,
                        exp.messages,
                        exp.attacks,
                        exp.flagged
                    ),
                    "{what}: flow {flow}"
                );
                if got.flagged {
                    assert!(want.attack_msgs[&flow].contains(&got.last_attack));
                }
            }
            if strategy == Strategy::Affinity && workers == 2 {
                let h = r.handoff.as_ref().unwrap();
                assert_eq!(h.congestion_drops, 0);
                assert!(h.handed_off > 0);
            }
        }
    }
}

fn header(
    flow: u32,
    msg: u32,
    index: u8,
    count: u8,
    total: u16,
    offset: u16,
    len: u16,
) -> FragmentHeader {
    FragmentHeader {
        flow,
        msg,
        index,
        count,
        total,
        offset,
        len,
    }
}

/// Sets the IPv4 total length (header checksum refilled).
fn set_ip_len(f: &mut [u8], len: u16) {
    let mut ip = Ipv4Packet::new_unchecked(&mut f[14..]);
    ip.set_total_len(len);
    ip.fill_checksum();
}

/// Sets the UDP length (checksum 0: none).
fn set_udp_len(f: &mut [u8], len: u16) {
    let mut u = UdpPacket::new_unchecked(&mut f[34..]);
    u.set_len(len);
    u.set_checksum(0);
}

/// Malformed frames with the reason each must be dropped under.
fn malformed() -> Vec<(Vec<u8>, &'static str)> {
    let data = [b'a'; 10];
    let good = build_fragment(&header(9, 0, 0, 2, 20, 0, 10), &data);
    let mut v: Vec<(Vec<u8>, &'static str)> = Vec::new();
    for n in 0..good.len() {
        let why = if n < 14 {
            "intruder: not ipv4"
        } else {
            "intruder: bad ipv4 header"
        };
        v.push((good[..n].to_vec(), why));
    }
    // IPv4 total length past the frame / cutting into the UDP datagram
    let mut f = good.clone();
    set_ip_len(&mut f, (good.len() - 14 + 10) as u16);
    v.push((f, "intruder: bad ipv4 header"));
    let mut f = good.clone();
    set_ip_len(&mut f, 20 + 8 + 16 + 4);
    v.push((f, "intruder: bad udp length"));
    // UDP length: shorter than the fragment's length field / than the fragment header
    let mut f = good.clone();
    set_udp_len(&mut f, 8 + 16 + 7);
    v.push((f, "intruder: fragment length disagrees with udp length"));
    let mut f = good.clone();
    set_udp_len(&mut f, 8 + 10);
    v.push((f, "intruder: truncated fragment header"));
    let mut f = good.clone();
    set_udp_len(&mut f, 4);
    v.push((f, "intruder: bad udp length"));
    // checksums
    let mut f = good.clone();
    f[14 + 8] ^= 1; // TTL without refilling the header checksum
    v.push((f, "intruder: bad checksum"));
    let mut f = good.clone();
    let last = f.len() - 1;
    f[last] ^= 0x40; // a payload byte under a UDP checksum
    v.push((f, "intruder: bad checksum"));
    // fragment fields that lie
    let bad = [
        header(9, 1, 0, 0, 20, 0, 10),
        header(9, 1, 0, 5, 20, 0, 10),
        header(9, 1, 2, 2, 20, 0, 10),
        header(9, 1, 255, 4, 20, 0, 10),
        header(9, 1, 0, 2, 0, 0, 10),
        header(9, 1, 0, 2, 129, 0, 10),
        header(9, 1, 0, 2, 20, 11, 10),
        header(9, 1, 0, 2, 20, 200, 10),
        header(9, 1, 0, 2, 128, 65535, 10),
    ];
    for h in bad {
        v.push((
            build_fragment(&h, &data),
            "intruder: bad fragment index, count, offset or length",
        ));
    }
    v.push((
        build_fragment(&header(9, 1, 0, 2, 20, 0, 0), &[]),
        "intruder: bad fragment index, count, offset or length",
    ));
    v.push((
        build_fragment(&header(9, 1, 0, 2, 20, 0, 11), &data),
        "intruder: fragment length disagrees with udp length",
    ));
    v.push((
        build_fragment(&header(9, 1, 0, 2, 20, 0, 9), &data),
        "intruder: fragment length disagrees with udp length",
    ));
    // somebody else's traffic
    let mac = (MacAddr([2, 0, 0, 0, 0, 1]), MacAddr([2, 0, 0, 0, 0, 2]));
    let (a, b) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2));
    let other = [
        PacketBuilder::ethernet(mac.0, mac.1)
            .ipv4(a, b)
            .udp(1, PORT + 1)
            .payload(&[0; 40])
            .build(),
        PacketBuilder::ethernet(mac.0, mac.1)
            .ipv4(a, b)
            .tcp(1, PORT, TcpFlags::SYN)
            .payload(&[0; 40])
            .build(),
        PacketBuilder::ethernet(mac.0, mac.1)
            .ipv4(a, b)
            .fragment(0, true)
            .udp(1, PORT)
            .payload(&[0; 40])
            .build(),
    ];
    for f in other {
        v.push((f, "intruder: not intruder traffic"));
    }
    let v6 = PacketBuilder::ethernet(mac.0, mac.1)
        .ipv6(Ipv6Addr::LOCALHOST, Ipv6Addr::LOCALHOST)
        .udp(1, PORT)
        .payload(&[0; 40])
        .build();
    v.push((v6, "intruder: not ipv4"));
    v
}

/// Messages whose fragments are each valid alone but wrong together, and valid ones
/// (attacks split across fragments, out of order): `(frames, drops by reason, detected)`.
/// Frames, the drops they must cause by reason, the messages detected.
type Scenario = (Vec<Vec<u8>>, Vec<(&'static str, u64)>, Vec<MessageKey>);

fn stateful() -> Scenario {
    let mut f = Vec::new();
    // flow 1 message 0: an attack, with a duplicate, two inconsistent and an overlapping
    // fragment before its second half
    let a = b"aaaa/bin/sh -caaaaaa";
    f.push(build_fragment(&header(1, 0, 0, 2, 20, 0, 10), &a[..10]));
    f.push(build_fragment(&header(1, 0, 0, 2, 20, 0, 10), &a[..10]));
    f.push(build_fragment(&header(1, 0, 1, 3, 20, 10, 10), &a[10..]));
    f.push(build_fragment(&header(1, 0, 1, 2, 21, 10, 10), &a[10..]));
    f.push(build_fragment(&header(1, 0, 1, 2, 20, 5, 10), &a[5..15]));
    f.push(build_fragment(&header(1, 0, 1, 2, 20, 10, 10), &a[10..]));
    // flow 1 message 1: two fragments that leave holes
    f.push(build_fragment(&header(1, 1, 0, 2, 20, 0, 5), b"bbbbb"));
    f.push(build_fragment(&header(1, 1, 1, 2, 20, 10, 5), b"bbbbb"));
    // flow 2 message 0: one fragment, an attack
    f.push(build_fragment(
        &header(2, 0, 0, 1, 16, 0, 16),
        b"xSELECT * FROMxx",
    ));
    // flow 2 message 1: benign, three fragments out of order
    let c = b"abcdefghijklmnopqrstuvwxyzabcd";
    f.push(build_fragment(&header(2, 1, 2, 3, 30, 20, 10), &c[20..]));
    f.push(build_fragment(&header(2, 1, 0, 3, 30, 0, 10), &c[..10]));
    f.push(build_fragment(&header(2, 1, 1, 3, 30, 10, 10), &c[10..20]));
    // flow 3 message 7: a signature cut in two by the fragments, which arrive reversed
    let e = b"qq../../etc/passwdqq";
    f.push(build_fragment(&header(3, 7, 1, 2, 20, 9, 11), &e[9..]));
    f.push(build_fragment(&header(3, 7, 0, 2, 20, 0, 9), &e[..9]));
    let drops = vec![
        ("intruder: duplicate fragment", 1),
        ("intruder: fragment disagrees with its message", 2),
        ("intruder: overlapping fragment", 1),
        ("intruder: reassembled message has holes", 1),
    ];
    let detected = vec![
        MessageKey { flow: 1, msg: 0 },
        MessageKey { flow: 2, msg: 0 },
        MessageKey { flow: 3, msg: 7 },
    ];
    (f, drops, detected)
}

#[test]
fn malformed_fragments_are_counted_drops() {
    let bad = malformed();
    let mut want: BTreeMap<&str, u64> = BTreeMap::new();
    for (f, why) in &bad {
        *want.entry(why).or_default() += 1;
        assert!(parse_fragment(f).is_err());
    }
    let frames: Vec<Vec<u8>> = bad.iter().map(|(f, _)| f.clone()).collect();
    for workers in [1, 2] {
        for strategy in Strategy::available() {
            let what = format!("{strategy} on {workers} workers");
            let d = domain(strategy, workers);
            let nf = Arc::new(Intruder::new(&d, config()).unwrap());
            let parts = vec![frames.clone(); workers];
            let r = run_split(&nf, parts, frames.len());
            let c = r.report.conservation();
            assert!(c.is_balanced(), "{what}: {c}");
            assert_eq!(c.output, 0, "{what}");
            assert_eq!(c.input, c.dropped, "{what}");
            for (why, n) in &want {
                assert_eq!(r.drops_of(why), n * workers as u64, "{what}: {why}");
            }
            assert_eq!(r.counter("fragments"), 0);
            assert_eq!(
                r.counter("reassembly records free"),
                nf.reassembly_capacity() as u64
            );
            assert_eq!(r.counter("flow records free"), nf.flow_capacity() as u64);
        }
    }
}

#[test]
fn inconsistent_duplicate_overlapping_fragments_and_holes() {
    let (frames, drops, detected) = stateful();
    let n = frames.len() as u64;
    let dropped: u64 = drops.iter().map(|d| d.1).sum();
    for workers in [1, 2] {
        for strategy in Strategy::available() {
            let what = format!("{strategy} on {workers} workers");
            let d = domain(strategy, workers);
            let nf = Arc::new(Intruder::new(&d, config()).unwrap());
            // all frames enter at worker 0, in order (under affinity each flow's frames
            // keep their order through the handoff ring to the owner)
            let mut parts = vec![frames.clone()];
            parts.resize(workers, Vec::new());
            let r = run_split(&nf, parts, frames.len());
            let c = r.report.conservation();
            assert!(c.is_balanced(), "{what}: {c}");
            assert_eq!(c.input, n, "{what}");
            assert_eq!(c.dropped, dropped, "{what}: {r}");
            assert_eq!(c.output, n - dropped, "{what}");
            for (why, k) in &drops {
                assert_eq!(r.drops_of(why), *k, "{what}: {why}");
            }
            assert_eq!(r.counter("messages"), 4, "{what}");
            assert_eq!(r.counter("detections"), 3, "{what}");
            assert_eq!(nf.detected(), detected, "{what}");
            assert_eq!(
                r.counter("reassembly records free"),
                nf.reassembly_capacity() as u64,
                "{what}"
            );
            let f1 = nf.flow(1).unwrap();
            assert_eq!((f1.messages, f1.attacks, f1.flagged), (1, 1, true));
            let f2 = nf.flow(2).unwrap();
            assert_eq!((f2.messages, f2.attacks, f2.last_attack), (2, 1, 0));
        }
    }
}

/// Drives workers directly (one thread, packets to the owner, time chosen by the test).
struct Driver {
    nf: Intruder,
    workers: Vec<IntruderWorker>,
    pool: BufferPool,
}

impl Driver {
    fn new(strategy: Strategy, workers: usize, cfg: IntruderConfig) -> Driver {
        let d = domain(strategy, workers);
        let nf = Intruder::new(&d, cfg).unwrap();
        let workers = (0..workers).map(|w| nf.worker(w)).collect();
        let pool = BufferPool::new(PoolConfig {
            buffers: 64,
            ..PoolConfig::default()
        })
        .unwrap();
        Driver { nf, workers, pool }
    }

    fn send(&mut self, frame: &[u8], now: u64) -> Result<(), IntruderError> {
        let w = self.nf.owner(frame).unwrap_or(0);
        let bi = self.pool.alloc_with(frame).unwrap();
        let r = {
            let mut p = self.pool.packet_mut(bi);
            self.workers[w].packet(&mut p, now)
        };
        self.pool.free(bi);
        r
    }

    fn sweep(&mut self, now: u64) -> usize {
        self.workers
            .iter_mut()
            .map(|w| w.expire(now, usize::MAX))
            .sum()
    }

    fn counter(&self, name: &str) -> u64 {
        self.workers
            .iter()
            .flat_map(|w| w.counters())
            .filter(|(k, _)| *k == name)
            .map(|(_, v)| v)
            .sum()
    }
}

#[test]
fn reassembly_timeouts_free_the_records() {
    for strategy in [Strategy::Fine, Strategy::Affinity, Strategy::Coarse] {
        let mut dr = Driver::new(
            strategy,
            2,
            IntruderConfig {
                reassembly_capacity: 256,
                flow_capacity: 256,
                reassembly_timeout: Duration::from_millis(10),
                flow_timeout: Duration::from_millis(50),
                ..IntruderConfig::default()
            },
        );
        let (rcap, fcap) = (
            dr.nf.reassembly_capacity() as u64,
            dr.nf.flow_capacity() as u64,
        );
        let (rt, ft) = (dr.nf.reassembly_timeout_ticks(), dr.nf.flow_timeout_ticks());
        let t0 = 1_000_000u64;
        let body = b"zz/bin/sh -czzzzzzzz";
        // 100 messages over 50 flows: only their first halves arrive
        for i in 0..100u32 {
            let h = header(100 + i / 2, i % 2, 0, 2, 20, 0, 10);
            dr.send(&build_fragment(&h, &body[..10]), t0).unwrap();
        }
        // and one message complete
        dr.send(&build_fragment(&header(7, 0, 0, 1, 20, 0, 20), body), t0)
            .unwrap();
        assert_eq!(dr.counter("reassembly records free"), rcap - 100);
        assert_eq!(dr.counter("flow records free"), fcap - 51);
        assert_eq!(
            dr.sweep(t0 + rt - 1),
            0,
            "{strategy}: nothing idle long enough"
        );
        assert_eq!(dr.sweep(t0 + rt), 100, "{strategy}");
        assert_eq!(dr.counter("reassembly timeout"), 100);
        assert_eq!(dr.counter("reassembly records free"), rcap, "{strategy}");
        // the second halves now start new reassemblies: nothing completes
        let t1 = t0 + rt + 1;
        for i in 0..100u32 {
            let h = header(100 + i / 2, i % 2, 1, 2, 20, 10, 10);
            dr.send(&build_fragment(&h, &body[10..]), t1).unwrap();
        }
        assert_eq!(dr.counter("messages"), 1);
        assert_eq!(dr.counter("detections"), 1);
        assert_eq!(dr.counter("reassembly records free"), rcap - 100);
        assert_eq!(dr.sweep(t1 + rt), 100);
        assert_eq!(dr.counter("reassembly timeout"), 200);
        assert_eq!(dr.counter("reassembly records free"), rcap);
        // flows expire after their own timeout: every record is back on a stack
        assert_eq!(dr.counter("flows expired"), 0);
        dr.sweep(t1 + ft);
        assert_eq!(dr.counter("flows expired"), 51, "{strategy}");
        assert_eq!(dr.counter("flow records free"), fcap, "{strategy}");
        let d: Vec<MessageKey> = dr
            .workers
            .iter()
            .flat_map(|w| w.detected().to_vec())
            .collect();
        assert_eq!(d, vec![MessageKey { flow: 7, msg: 0 }]);
    }
}

#[test]
fn a_full_reassembly_table_is_a_counted_drop() {
    let mut dr = Driver::new(
        Strategy::Fine,
        1,
        IntruderConfig {
            reassembly_capacity: 4,
            flow_capacity: 64,
            ..IntruderConfig::default()
        },
    );
    let mut full = 0;
    for i in 0..8u32 {
        let h = header(i, 0, 0, 2, 20, 0, 10);
        if dr.send(&build_fragment(&h, &[b'a'; 10]), 1) == Err(IntruderError::ReassemblyFull) {
            full += 1;
        }
    }
    assert_eq!(full, 4);
    assert_eq!(dr.counter("reassembly records free"), 0);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// Random corruption of valid fragments (checksums refilled, so the corruption
    /// reaches the fragment header) never panics, and what is accepted is valid.
    #[test]
    fn corrupted_fragments_never_panic(
        edits in proptest::collection::vec((0usize..200, any::<u8>()), 0..6),
        cut in 0usize..200,
        fix in any::<bool>(),
        count in 1u8..=4,
    ) {
        let mut dr = Driver::new(Strategy::Coarse, 1, IntruderConfig {
            reassembly_capacity: 64, flow_capacity: 64, ..IntruderConfig::default()
        });
        let data = [b'q'; 12];
        for i in 0..count {
            let h = header(3, 0, i, count, 48, u16::from(i) * 12, 12);
            let mut f = build_fragment(&h, &data);
            for &(at, b) in &edits {
                let at = 14 + at % (f.len() - 14);
                f[at] = b;
            }
            if fix && f.len() >= 34 {
                let mut ip = Ipv4Packet::new_unchecked(&mut f[14..]);
                if ip.header_len() == 20 {
                    ip.fill_checksum();
                    UdpPacket::new_unchecked(&mut f[34..]).set_checksum(0);
                }
            }
            f.truncate(cut.max(f.len() / 2));
            let ok = dr.send(&f, 10).is_ok();
            if ok {
                let p = parse_fragment(&f).unwrap().header;
                prop_assert!(p.index < p.count && usize::from(p.offset) + usize::from(p.len) <= usize::from(p.total));
            }
        }
        prop_assert!(dr.counter("messages") <= u64::from(count));
    }
}
