//! The NAT against an independent reference model (plain HashMaps), under every
//! synchronisation strategy, with 1 and 2 workers; checksums of every translated packet;
//! expiry; bad input; a real capture.

use pktvec_io::capture::read_capture;
use pktvec_nf::nat::{flow_id, InKey, Nat, NatConfig, NatTraffic, SessionInfo, Timeouts};
use pktvec_nf::runtime::{run, same_flow_share, Nf, NfRun, RunConfig};
use pktvec_packet::builder::PacketBuilder;
use pktvec_packet::checksum::{checksum, finish, pseudo_header_v4, sum};
use pktvec_packet::wire::{IpProtocol, MacAddr, TcpFlags};
use pktvec_state::{Domain, Strategy, SyncConfig};
use std::collections::{HashMap, HashSet};
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

fn nat(strategy: Strategy, workers: usize, stripes: usize, cfg: NatConfig) -> Arc<Nat> {
    let d = Domain::new(SyncConfig {
        strategy,
        workers,
        stripes,
        ..SyncConfig::default()
    })
    .unwrap();
    Arc::new(Nat::new(d, cfg).unwrap())
}

fn run_frames(nat: &Arc<Nat>, per_worker: Vec<Vec<Vec<u8>>>, pcap: Option<PathBuf>) -> NfRun {
    let n = per_worker.iter().map(Vec::len).max().unwrap_or(0) as u64;
    let frames = Arc::new(per_worker);
    let cfg = RunConfig {
        packets_per_worker: n,
        pin: false,
        pcap_out: pcap,
        // a ring and a pool that hold a worker's whole traffic: no congestion or buffer
        // drop under affinity, however the workers are scheduled
        handoff_ring: (n as usize).next_power_of_two().max(1024),
        buffers: (n as usize).max(8192) + 1024,
        ..RunConfig::default()
    };
    let r = run(nat, move |w| frames[w].clone(), &cfg).unwrap();
    let c = r.report.conservation();
    assert!(c.is_balanced(), "{c:?}");
    assert_eq!(c.input, c.output + c.dropped, "{c:?}");
    assert_eq!(c.input, n * nat.domain().workers() as u64);
    r
}

fn tmp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("pktvec-nat-{}-{name}.pcap", std::process::id()))
}

// ---------- independent packet reading and checksums ----------

/// (l3 offset, ihl bytes) of an untagged IPv4 frame.
fn ip_at(f: &[u8]) -> (usize, usize) {
    (14, usize::from(f[14] & 15) * 4)
}

fn u16at(f: &[u8], o: usize) -> u16 {
    u16::from_be_bytes([f[o], f[o + 1]])
}

fn u32at(f: &[u8], o: usize) -> u32 {
    u32::from_be_bytes([f[o], f[o + 1], f[o + 2], f[o + 3]])
}

/// Full recomputation: the IPv4 header checksum and the L4 one verify.
fn checksums_ok(f: &[u8]) -> bool {
    let (l3, hl) = ip_at(f);
    let total = usize::from(u16at(f, l3 + 2));
    if checksum(&f[l3..l3 + hl]) != 0 {
        return false;
    }
    let l4 = &f[l3 + hl..l3 + total];
    let src = Ipv4Addr::from(u32at(f, l3 + 12));
    let dst = Ipv4Addr::from(u32at(f, l3 + 16));
    match f[l3 + 9] {
        6 => finish(pseudo_header_v4(src, dst, IpProtocol::TCP, l4.len() as u32) + sum(l4)) == 0,
        17 => {
            u16at(l4, 6) == 0
                || finish(pseudo_header_v4(src, dst, IpProtocol::UDP, l4.len() as u32) + sum(l4))
                    == 0
        }
        1 => checksum(l4) == 0,
        _ => true,
    }
}

/// A flow's key as read from an inside → outside frame, by the test's own parsing.
fn key_of(f: &[u8]) -> InKey {
    let (l3, hl) = ip_at(f);
    let l4 = l3 + hl;
    let proto = f[l3 + 9];
    let (sport, dport) = match proto {
        1 => (u16at(f, l4 + 4), 0),
        _ => (u16at(f, l4), u16at(f, l4 + 2)),
    };
    InKey {
        src: u32at(f, l3 + 12),
        dst: u32at(f, l3 + 16),
        sport,
        dport,
        proto,
    }
}

/// The frame's (source, destination) address and port (ICMP: the identifier as both).
fn endpoints(f: &[u8]) -> (u32, u16, u32, u16) {
    let (l3, hl) = ip_at(f);
    let l4 = l3 + hl;
    let (sp, dp) = match (f[l3 + 9], f[l4]) {
        (1, 8) => (u16at(f, l4 + 4), 0),
        (1, 0) => (0, u16at(f, l4 + 4)),
        (1, _) => (0, 0),
        _ => (u16at(f, l4), u16at(f, l4 + 2)),
    };
    (u32at(f, l3 + 12), sp, u32at(f, l3 + 16), dp)
}

// ---------- the reference NAT ----------

/// What the reference NAT expects of a packet.
#[derive(Debug, Clone, PartialEq)]
enum Expect {
    /// Translated inside → outside, flow key.
    In2Out(InKey),
    /// Translated outside → inside to this flow.
    Out2In(InKey),
    /// Dropped for this reason.
    Drop(&'static str),
}

/// A plain NAT model: which flows exist (their outside tuple learnt from the first
/// translation pktvec made), and what each packet must become.
#[derive(Default)]
struct RefNat {
    pool: Vec<u32>,
    /// flow → (outside address, port)
    map: HashMap<InKey, (u32, u16)>,
    /// (outside address, port, proto) → flow
    rev: HashMap<(u32, u16, u8), InKey>,
}

impl RefNat {
    fn new(nat: &Nat) -> Self {
        RefNat {
            pool: nat.pool().into_iter().map(u32::from).collect(),
            ..RefNat::default()
        }
    }

    fn classify(&self, f: &[u8]) -> Expect {
        if f.len() < 14 || u16at(f, 12) != 0x0800 {
            return Expect::Drop("nat: not ipv4");
        }
        if f.len() < 34 {
            return Expect::Drop("nat: truncated or bad length");
        }
        let (l3, hl) = ip_at(f);
        let total = usize::from(u16at(f, l3 + 2));
        if hl < 20 || total < hl || l3 + total > f.len() {
            return Expect::Drop("nat: truncated or bad length");
        }
        if checksum(&f[l3..l3 + hl]) != 0 {
            return Expect::Drop("nat: bad ip checksum");
        }
        if f[l3 + 8] <= 1 {
            return Expect::Drop("nat: ttl expired");
        }
        if u16at(f, l3 + 6) & 0x3fff != 0 {
            return Expect::Drop("nat: fragment");
        }
        let k = key_of(f);
        let inside = k.src >> 24 == 10;
        if !inside && !self.pool.contains(&k.dst) {
            return Expect::Drop("nat: not inside nor to the pool");
        }
        let ty = f[l3 + hl];
        match (k.proto, inside) {
            (6 | 17, true) => Expect::In2Out(k),
            (1, true) if ty == 8 => Expect::In2Out(k),
            (1, false) if ty != 0 => Expect::Drop("nat: icmp not echo"),
            (1, true) => Expect::Drop("nat: icmp not echo"),
            (6 | 17 | 1, false) => {
                let (s, sp, d, dp) = endpoints(f);
                match self.rev.get(&(d, dp, k.proto)) {
                    None => Expect::Drop("nat: no session"),
                    Some(fk) if fk.dst != s || (k.proto != 1 && fk.dport != sp) => {
                        Expect::Drop("nat: remote endpoint mismatch")
                    }
                    Some(fk) => Expect::Out2In(*fk),
                }
            }
            _ => Expect::Drop("nat: unknown protocol"),
        }
    }

    /// Checks `out`, pktvec's translation of `inp` expected as `e`, and learns mappings.
    fn check(&mut self, inp: &[u8], out: &[u8], e: &Expect) {
        assert_eq!(inp.len(), out.len());
        assert!(checksums_ok(out), "checksums of a translated packet");
        let (l3, hl) = ip_at(inp);
        assert_eq!(out[l3 + 8], inp[l3 + 8] - 1, "ttl decremented");
        let total = usize::from(u16at(inp, l3 + 2));
        let l4 = l3 + hl;
        // the payload after the L4 header is untouched
        let hdr = match inp[l3 + 9] {
            6 => usize::from(inp[l4 + 12] >> 4) * 4,
            _ => 8,
        };
        assert_eq!(out[l4 + hdr..l3 + total], inp[l4 + hdr..l3 + total]);
        let (is, isp, id, idp) = endpoints(inp);
        let (os, osp, od, odp) = endpoints(out);
        match e {
            Expect::In2Out(k) => {
                assert_eq!((od, odp), (id, idp), "destination kept");
                assert!(self.pool.contains(&os), "source from the pool");
                assert!(osp >= 1024, "outside port {osp}");
                match self.map.get(k) {
                    Some(&t) => assert_eq!(t, (os, osp), "a flow keeps its outside tuple"),
                    None => {
                        let prev = self.rev.insert((os, osp, k.proto), *k);
                        assert!(prev.is_none(), "two flows share {os:x}:{osp}/{}", k.proto);
                        self.map.insert(*k, (os, osp));
                    }
                }
            }
            Expect::Out2In(k) => {
                assert_eq!((os, osp), (is, isp), "source kept");
                assert_eq!((od, odp), (k.src, k.sport), "back to the inside host");
            }
            Expect::Drop(_) => unreachable!(),
        }
    }

    /// Runs `inputs` (one worker) through the model against pktvec's output; returns
    /// the expected drops by reason.
    fn replay(&mut self, inputs: &[Vec<u8>], outputs: &[Vec<u8>]) -> HashMap<&'static str, u64> {
        let mut drops = HashMap::new();
        let mut o = outputs.iter();
        for inp in inputs {
            match self.classify(inp) {
                Expect::Drop(r) => *drops.entry(r).or_insert(0) += 1,
                e => self.check(inp, o.next().expect("a translated packet missing"), &e),
            }
        }
        assert!(o.next().is_none(), "more output than the model forwards");
        drops
    }
}

fn assert_drops(r: &NfRun, want: &HashMap<&'static str, u64>) {
    let mut total = 0;
    for row in &r.report.errors().rows {
        if row.count > 0 {
            assert_eq!(
                want.get(row.reason.as_str()).copied().unwrap_or(0),
                row.count,
                "drops of {:?}",
                row.reason
            );
            total += row.count;
        }
    }
    assert_eq!(total, want.values().sum::<u64>(), "{want:?}");
}

/// The packets of `p` whose IPv4, TCP, UDP or ICMP checksum tshark finds bad (its
/// checksum status 0 is "bad", 1 "good", 2 "unverified"); `None` if tshark is absent.
fn tshark_bad(p: &Path) -> Option<String> {
    let o = std::process::Command::new("tshark")
        .arg("-r")
        .arg(p)
        .args([
            "-o",
            "ip.check_checksum:TRUE",
            "-o",
            "tcp.check_checksum:TRUE",
            "-o",
            "udp.check_checksum:TRUE",
            "-Y",
            "ip.checksum.status==0||tcp.checksum.status==0||udp.checksum.status==0||icmp.checksum.status==0",
        ])
        .output()
        .ok()?;
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    Some(String::from_utf8_lossy(&o.stdout).into_owned())
}

/// tshark finds no bad checksum in `p` (skipped without tshark); the filter is first
/// shown to catch a capture with a bad TCP checksum, when one is at hand.
fn tshark_clean(p: &Path) {
    let known_bad = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/data/pcap/zeek/chksums/ip4-tcp-bad-chksum.pcap");
    if known_bad.exists() {
        if let Some(b) = tshark_bad(&known_bad) {
            assert!(!b.is_empty(), "the tshark filter misses a bad TCP checksum");
        }
    }
    match tshark_bad(p) {
        None => eprintln!("tshark absent: pcap check skipped"),
        Some(b) => assert!(b.is_empty(), "bad checksums: {b}"),
    }
}

fn all_sessions(nat: &Nat) -> Vec<SessionInfo> {
    (0..nat.domain().workers())
        .flat_map(|w| nat.worker(w).sessions())
        .collect()
}

fn frame(src: [u8; 4], dst: [u8; 4]) -> PacketBuilder {
    PacketBuilder::ethernet(MacAddr([2, 0, 0, 0, 0, 1]), MacAddr([2, 0, 0, 0, 0, 2]))
        .ipv4(Ipv4Addr::from(src), Ipv4Addr::from(dst))
}

/// Malformed, unsupported and stray frames, each with the drop the model must predict.
fn bad_frames() -> Vec<Vec<u8>> {
    let good = frame([10, 9, 0, 1], [203, 0, 113, 9])
        .udp(5000, 53)
        .payload_len(20)
        .build();
    let mut v = Vec::new();
    let mut bad_ck = good.clone();
    bad_ck[24] ^= 0x55;
    v.push(bad_ck);
    v.push(good[..30].to_vec()); // truncated IPv4 header
    let mut lying = good.clone();
    lying[16..18].copy_from_slice(&1400u16.to_be_bytes()); // total length past the frame
    v.push(lying);
    v.push(
        frame([10, 9, 0, 1], [203, 0, 113, 9])
            .ttl(1)
            .udp(1, 2)
            .build(),
    );
    v.push(
        frame([10, 9, 0, 1], [203, 0, 113, 9])
            .fragment(8, false)
            .udp(1, 2)
            .build(),
    );
    v.push(
        frame([10, 9, 0, 1], [203, 0, 113, 9])
            .fragment(0, true)
            .udp(1, 2)
            .build(),
    );
    v.push(
        frame([10, 9, 0, 1], [203, 0, 113, 9])
            .payload_len(30)
            .build(),
    ); // not IP
    let mut gre = frame([10, 9, 0, 1], [203, 0, 113, 9]).udp(1, 2).build();
    gre[23] = 47;
    let c = checksum(&{
        let mut h = gre[14..34].to_vec();
        h[10] = 0;
        h[11] = 0;
        h
    });
    gre[24..26].copy_from_slice(&c.to_be_bytes());
    v.push(gre);
    v.push(
        PacketBuilder::ethernet(MacAddr::ZERO, MacAddr::BROADCAST)
            .arp_request(
                MacAddr([2, 0, 0, 0, 0, 1]),
                Ipv4Addr::new(10, 0, 0, 1),
                Ipv4Addr::new(10, 0, 0, 2),
            )
            .build(),
    );
    v.push(frame([192, 0, 2, 1], [203, 0, 113, 9]).udp(1, 2).build()); // not for the NAT
    v.push(
        frame([203, 0, 113, 9], [198, 51, 100, 1])
            .udp(53, 40000)
            .build(),
    ); // no session
    v.push(
        frame([203, 0, 113, 9], [198, 51, 100, 2])
            .icmp_echo(7, 1)
            .build(),
    ); // request in
    v.push(
        frame([10, 9, 0, 1], [203, 0, 113, 9])
            .icmp_echo_reply(7, 1)
            .build(),
    ); // reply out
       // valid, with IP options: translated (header length from IHL)
    v.push(
        frame([10, 9, 0, 2], [203, 0, 113, 9])
            .ipv4_options(&[1, 1, 1, 0])
            .udp(5001, 53)
            .payload_len(10)
            .build(),
    );
    v
}

#[test]
fn traffic_has_the_seeds_locality() {
    let f = NatTraffic::new(2000, 3).frames(0, 20_000);
    let s = same_flow_share(&f, 100, flow_id);
    assert!((0.2..=0.4).contains(&s), "same-flow share {s}");
    assert!(f.iter().all(|x| checksums_ok(x)));
    let lens: HashSet<usize> = f.iter().map(Vec::len).collect();
    assert!(lens.contains(&64) && lens.contains(&1500));
}

#[test]
fn matches_the_reference_model_on_one_worker() {
    for s in Strategy::available() {
        let nat = nat(
            s,
            1,
            64,
            NatConfig {
                capacity: 4096,
                ..NatConfig::default()
            },
        );
        let mut rf = RefNat::new(&nat);
        let mut inputs = NatTraffic::new(300, 11).frames(0, 1500);
        for (i, b) in bad_frames().into_iter().enumerate() {
            inputs.insert(i * 97, b);
        }
        let p1 = tmp(&format!("ref1-{s}"));
        let r = run_frames(&nat, vec![inputs.clone()], Some(p1.clone()));
        let out = read_capture(&p1).unwrap().packets;
        let drops = rf.replay(&inputs, &out);
        assert_drops(&r, &drops);
        assert_eq!(r.counter("in2out"), out.len() as u64);
        assert_eq!(r.counter("sessions created"), rf.map.len() as u64);
        tshark_clean(&p1);
        // the control plane's dump is the model's mapping
        let sess = all_sessions(&nat);
        assert_eq!(sess.len(), rf.map.len());
        for x in &sess {
            assert_eq!(rf.map[&x.key], (x.session.out_ip, x.session.out_port));
            assert!(x.session.pkts_in2out > 0);
        }
        // return traffic, plus strays: a wrong remote, an unknown port
        let mut back = NatTraffic::replies(&sess, 2);
        let mut stray = back[0].clone();
        stray[26..30].copy_from_slice(&[203, 0, 113, 251]); // another remote
        let c = checksum(&{
            let mut h = stray[14..34].to_vec();
            h[10] = 0;
            h[11] = 0;
            h
        });
        stray[24..26].copy_from_slice(&c.to_be_bytes());
        back.insert(5, stray);
        back.insert(
            9,
            frame([203, 0, 113, 9], [198, 51, 100, 4])
                .tcp(80, 1023, TcpFlags::ACK)
                .build(),
        );
        let p2 = tmp(&format!("ref2-{s}"));
        let r2 = run_frames(&nat, vec![back.clone()], Some(p2.clone()));
        let out2 = read_capture(&p2).unwrap().packets;
        let drops2 = rf.replay(&back, &out2);
        assert_eq!(drops2.get("nat: remote endpoint mismatch"), Some(&1));
        assert_drops(&r2, &drops2);
        assert_eq!(r2.counter("out2in"), 2 * sess.len() as u64);
        tshark_clean(&p2);
        for x in all_sessions(&nat) {
            assert_eq!(x.session.pkts_out2in, 2);
        }
        let _ = std::fs::remove_file(p1);
        let _ = std::fs::remove_file(p2);
    }
}

#[test]
fn two_workers_keep_mappings_consistent() {
    for s in [Strategy::Coarse, Strategy::Fine, Strategy::Affinity] {
        let nat = nat(
            s,
            2,
            64,
            NatConfig {
                capacity: 8192,
                ..NatConfig::default()
            },
        );
        let t = NatTraffic::new(400, 5);
        let inputs: Vec<_> = (0..2).map(|w| t.frames(w, 2000)).collect();
        let r = run_frames(&nat, inputs.clone(), None);
        assert_eq!(r.counter("in2out"), 4000, "{s}: {r}");
        let flows: HashSet<InKey> = inputs.iter().flatten().map(|f| key_of(f)).collect();
        assert_eq!(r.counter("sessions created"), flows.len() as u64);
        let sess = all_sessions(&nat);
        assert_eq!(sess.len(), flows.len());
        let stripes = nat.domain().stripes();
        let mut tuples = HashSet::new();
        for x in &sess {
            assert!(flows.contains(&x.key));
            assert!(tuples.insert((x.session.out_ip, x.session.out_port, x.key.proto)));
            assert_eq!(
                usize::from(x.session.out_port) % stripes,
                nat.domain().stripe_of(x.key.hash()),
                "port in the key's stripe"
            );
        }
        let total: u64 = sess.iter().map(|x| x.session.pkts_in2out).sum();
        assert_eq!(total, 4000);
        // return traffic split over both workers: every reply reaches its inside host
        let back = NatTraffic::replies(&sess, 1);
        let halves = vec![
            back.iter().step_by(2).cloned().collect::<Vec<_>>(),
            back.iter().skip(1).step_by(2).cloned().collect(),
        ];
        let n = halves[0].len() as u64;
        let r2 = run_frames(&nat, halves, None);
        // worker 1 may replay its last frame once more to make up `n` packets
        assert_eq!(r2.counter("out2in"), 2 * n, "{r2}");
        let c = r2.report.conservation();
        assert_eq!(c.dropped, 0);
    }
}

#[test]
fn expiry_frees_every_session_and_port() {
    for s in [Strategy::Fine, Strategy::Affinity, Strategy::Coarse] {
        let cfg = NatConfig {
            capacity: 2048,
            timeouts: Timeouts::all(Duration::from_millis(1)),
            ..NatConfig::default()
        };
        let nat = nat(s, 2, 64, cfg);
        let total_ports = nat.total_ports();
        let t = NatTraffic::new(300, 9);
        let r = run_frames(&nat, (0..2).map(|w| t.frames(w, 1500)).collect(), None);
        assert_eq!(r.counter("in2out"), 3000);
        std::thread::sleep(Duration::from_millis(5));
        let now = pktvec_graph::clock::now();
        let mut ws: Vec<_> = (0..2).map(|w| nat.worker(w)).collect();
        let gone: usize = ws.iter_mut().map(|w| w.sweep(now, usize::MAX)).sum();
        assert_eq!(
            gone as u64 + r.counter("sessions expired"),
            r.counter("sessions created")
        );
        let records: usize = ws.iter().map(|w| w.free_records()).sum();
        assert_eq!(records, 2048);
        let ports: usize = ws
            .iter_mut()
            .map(|w| w.free_ports() + w.shared_free_ports())
            .sum();
        assert_eq!(ports, total_ports);
        assert!(ws.iter_mut().all(|w| w.sessions().is_empty()));
    }
}

#[test]
fn bad_input_is_counted_never_a_panic() {
    for s in Strategy::available() {
        let nat = nat(
            s,
            1,
            64,
            NatConfig {
                capacity: 256,
                ..NatConfig::default()
            },
        );
        let mut rf = RefNat::new(&nat);
        let inputs = bad_frames();
        let p = tmp(&format!("bad-{s}"));
        let r = run_frames(&nat, vec![inputs.clone()], Some(p.clone()));
        let out = read_capture(&p).unwrap().packets;
        assert_eq!(out.len(), 1, "only the frame with IP options");
        let drops = rf.replay(&inputs, &out);
        assert_drops(&r, &drops);
        let _ = std::fs::remove_file(p);
    }
    // a zero UDP checksum stays zero
    let nat = nat(Strategy::Fine, 1, 64, NatConfig::default());
    let mut f = frame([10, 1, 1, 1], [203, 0, 113, 1])
        .udp(4000, 53)
        .payload_len(12)
        .build();
    f[40] = 0;
    f[41] = 0;
    let p = tmp("udp0");
    run_frames(&nat, vec![vec![f]], Some(p.clone()));
    let out = read_capture(&p).unwrap().packets;
    assert_eq!(u16at(&out[0], 40), 0);
    assert!(checksums_ok(&out[0]));
    let _ = std::fs::remove_file(p);
}

#[test]
fn exhausted_ports_and_a_full_table_are_counted_drops_without_leaks() {
    for s in [Strategy::Coarse, Strategy::Fine, Strategy::Affinity] {
        // one address, ports 1024..=1031, 8 stripes: one UDP port per stripe
        let cfg = NatConfig {
            pool: vec![Ipv4Addr::new(198, 51, 100, 1)],
            ports: 1024..=1031,
            capacity: 256,
            timeouts: Timeouts::all(Duration::from_millis(1)),
            sweep_buckets: 0,
            ..NatConfig::default()
        };
        let nat = nat(s, 1, 8, cfg);
        let frames: Vec<_> = (0..40u16)
            .map(|i| {
                frame([10, 0, 0, 1], [203, 0, 113, 1])
                    .udp(2000 + i, 53)
                    .build()
            })
            .collect();
        let stripes: HashSet<usize> = frames
            .iter()
            .map(|f| key_of(f).hash() as usize & 7)
            .collect();
        let r = run_frames(&nat, vec![frames.clone()], None);
        assert_eq!(r.counter("in2out"), stripes.len() as u64, "{r}");
        assert_eq!(
            r.drops_of("nat: ports exhausted"),
            40 - stripes.len() as u64
        );
        std::thread::sleep(Duration::from_millis(3));
        let mut w = nat.worker(0);
        w.sweep(pktvec_graph::clock::now(), usize::MAX);
        assert_eq!(w.free_records(), 256);
        assert_eq!(w.free_ports() + w.shared_free_ports(), nat.total_ports());
        drop(w);

        // a table of 16 records: the rest are counted drops, nothing leaks
        let cfg = NatConfig {
            capacity: 16,
            timeouts: Timeouts::all(Duration::from_millis(1)),
            sweep_buckets: 0,
            ..NatConfig::default()
        };
        let nat = self::nat(s, 1, 8, cfg);
        let frames: Vec<_> = (0..100u16)
            .map(|i| {
                frame([10, 0, 1, 1], [203, 0, 113, 1])
                    .tcp(3000 + i, 80, TcpFlags::SYN)
                    .build()
            })
            .collect();
        let r = run_frames(&nat, vec![frames], None);
        let made = r.counter("sessions created");
        assert!((8..=16).contains(&made), "{made}");
        assert_eq!(r.drops_of("nat: session table full"), 100 - made);
        std::thread::sleep(Duration::from_millis(3));
        let mut w = nat.worker(0);
        assert_eq!(w.sweep(pktvec_graph::clock::now(), usize::MAX) as u64, made);
        assert_eq!(w.free_records(), 16);
        assert_eq!(w.free_ports() + w.shared_free_ports(), nat.total_ports());
    }
}

#[test]
fn a_real_capture_runs_through() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/pcap");
    let files = [
        "pcapplusplus/mixed/many-protocols.pcap",
        "pcapplusplus/mixed/ip4-fragments.pcap",
        "zeek/web.pcap",
    ];
    let mut ran = 0;
    for f in files {
        let Ok(cap) = read_capture(dir.join(f)) else {
            continue;
        };
        if cap.packets.is_empty() {
            continue;
        }
        for s in [Strategy::Fine, Strategy::Affinity] {
            // everything below 128.0.0.0 is "inside", so real flows get translated
            let cfg = NatConfig {
                inside: (Ipv4Addr::new(0, 0, 0, 0), 1),
                ..NatConfig::default()
            };
            let nat = nat(s, 2, 64, cfg);
            let pk = cap.packets.clone();
            let r = run_frames(&nat, vec![pk.clone(), pk], None);
            let c = r.report.conservation();
            assert_eq!(c.input, c.output + c.dropped);
            assert_eq!(c.output, r.counter("in2out") + r.counter("out2in"));
        }
        ran += 1;
    }
    if ran == 0 {
        eprintln!("no capture under {}: skipped", dir.display());
    }
}
