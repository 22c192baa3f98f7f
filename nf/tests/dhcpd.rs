//! The DHCP server against an independent reference server (plain `Vec`/`HashMap`, the
//! same address choice), under every strategy, plus invariants on two workers, malformed
//! input, exhaustion, a full client table and expiry.

use etherparse::{NetSlice, SlicedPacket, TransportSlice};
use pktvec_graph::ErrorReason;
use pktvec_nf::dhcpd::{
    echo_reply_frame, flow_of, host_mac, mac_hash, msg, pool_addr, request_frame, traffic,
    DhcpConfig, DhcpError, Dhcpd, LeaseState, Mac, TrafficConfig, SERVER_IP,
};
use pktvec_nf::runtime::{run, same_flow_share, Nf, NfRun, NfWorker, RunConfig};
use pktvec_packet::{BufferPool, PoolConfig};
use pktvec_state::{Domain, Strategy, SyncConfig};
use std::collections::{HashMap, HashSet};
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::sync::Arc;

fn domain(strategy: Strategy, workers: usize, stripes: usize) -> Arc<Domain> {
    Domain::new(SyncConfig {
        strategy,
        workers,
        stripes,
        ..SyncConfig::default()
    })
    .unwrap()
}

fn tmp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("pktvec-dhcpd-{}-{name}", std::process::id()))
}

// ---------------------------------------------------------------------------------------
// The reference server.

/// A request, parsed with etherparse and checked by hand.
#[derive(Clone, Copy, Debug)]
enum Req {
    Dhcp {
        kind: u8,
        mac: Mac,
        ciaddr: u32,
        requested: Option<u32>,
        server: Option<u32>,
    },
    Echo(u32),
}

fn csum(data: &[u8], init: u32) -> u16 {
    let mut s = init;
    for c in data.chunks(2) {
        s += u32::from(c[0]) << 8 | u32::from(*c.get(1).unwrap_or(&0));
    }
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

fn parse_req(f: &[u8]) -> Option<Req> {
    let p = SlicedPacket::from_ethernet(f).ok()?;
    let Some(NetSlice::Ipv4(ip)) = &p.net else {
        return None;
    };
    let h = ip.header();
    if csum(h.slice(), 0) != 0 || h.is_fragmenting_payload() {
        return None;
    }
    let (src, dst) = (u32::from(h.source_addr()), u32::from(h.destination_addr()));
    match &p.transport {
        Some(TransportSlice::Icmpv4(i)) => {
            (i.type_u8() == 0 && csum(i.slice(), 0) == 0).then_some(Req::Echo(src))
        }
        Some(TransportSlice::Udp(u)) => {
            if u.destination_port() != 67 {
                return None;
            }
            let seg = u.slice();
            if u.checksum() != 0 {
                let ph = (src >> 16) + (src & 0xffff) + (dst >> 16) + (dst & 0xffff) + 17;
                if csum(seg, ph + seg.len() as u32) != 0 {
                    return None;
                }
            }
            let b = u.payload();
            if b.len() < 240
                || b[0] != 1
                || b[1] != 1
                || b[2] != 6
                || b[236..240] != [99, 130, 83, 99]
            {
                return None;
            }
            let (mut kind, mut requested, mut server) = (None, None, None);
            let mut i = 240;
            while i < b.len() {
                match b[i] {
                    0 => i += 1,
                    255 => break,
                    code => {
                        let len = *b.get(i + 1)? as usize;
                        let v = b.get(i + 2..i + 2 + len)?;
                        match (code, len) {
                            (53, 1) => kind = Some(v[0]),
                            (50, 4) => requested = Some(u32::from_be_bytes(v.try_into().ok()?)),
                            (54, 4) => server = Some(u32::from_be_bytes(v.try_into().ok()?)),
                            (50 | 53 | 54, _) => return None,
                            _ => {}
                        }
                        i += 2 + len;
                    }
                }
            }
            let mut mac = [0u8; 6];
            mac.copy_from_slice(&b[28..34]);
            Some(Req::Dhcp {
                kind: kind?,
                mac,
                ciaddr: u32::from_be_bytes(b[12..16].try_into().ok()?),
                requested,
                server,
            })
        }
        _ => None,
    }
}

/// What the server answers: a ping to an address, or a DHCP reply (type, yiaddr, chaddr).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Out {
    Ping(Ipv4Addr),
    Reply(u8, Ipv4Addr, Mac),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum St {
    Free,
    Pinging,
    Offered,
    Bound,
    Declined,
    InUse,
}

/// udhcpd's state in plain collections, one worker, nothing timing out (ping timeout 0).
struct Model {
    stripes: usize,
    max_probe: usize,
    cap: usize,
    leases: Vec<(St, Mac)>,
    clients: HashMap<Mac, usize>,
    consumed: HashMap<&'static str, u64>,
}

impl Model {
    fn new(pool: usize, clients: usize, stripes: usize, max_probe: usize) -> Self {
        Model {
            stripes,
            max_probe,
            cap: clients,
            leases: vec![(St::Free, [0; 6]); pool],
            clients: HashMap::new(),
            consumed: HashMap::new(),
        }
    }

    fn index(&self, a: u32) -> Option<usize> {
        let i = a.wrapping_sub(u32::from(pool_addr(0))) as usize;
        (i < self.leases.len()).then_some(i)
    }

    fn holds(&self, mac: &Mac, l: usize) -> bool {
        self.clients.get(mac) == Some(&l)
            && self.leases[l].1 == *mac
            && matches!(self.leases[l].0, St::Pinging | St::Offered | St::Bound)
    }

    fn count(&mut self, why: &'static str) -> Option<Out> {
        *self.consumed.entry(why).or_insert(0) += 1;
        None
    }

    fn step(&mut self, f: &[u8]) -> Option<Out> {
        let Some(req) = parse_req(f) else {
            return self.count("invalid");
        };
        let (kind, mac, ciaddr, requested, server) = match req {
            Req::Echo(a) => {
                let Some(l) = self.index(a) else {
                    return self.count("ping reply from outside the pool");
                };
                if matches!(self.leases[l].0, St::Free | St::Pinging) {
                    self.leases[l].0 = St::InUse;
                }
                return self.count("consumed: ping reply");
            }
            Req::Dhcp {
                kind,
                mac,
                ciaddr,
                requested,
                server,
            } => (kind, mac, ciaddr, requested, server),
        };
        let reply = |k, l: Option<usize>| {
            Some(Out::Reply(
                k,
                l.map_or(Ipv4Addr::UNSPECIFIED, pool_addr),
                mac,
            ))
        };
        match kind {
            msg::DISCOVER => {
                if let Some(&l) = self.clients.get(&mac) {
                    if self.holds(&mac, l) {
                        if self.leases[l].0 == St::Pinging {
                            self.leases[l].0 = St::Offered;
                        }
                        return reply(msg::OFFER, Some(l));
                    }
                    if self.leases[l].1 == mac {
                        self.leases[l].1 = [0; 6];
                    }
                    self.clients.remove(&mac);
                }
                let want = requested.and_then(|a| self.index(a));
                let mut pick = want.filter(|&i| self.leases[i].0 == St::Free);
                let cs = mac_hash(&mac) as usize & (self.stripes - 1);
                let mut k = 0;
                while pick.is_none() && k < self.max_probe.min(self.stripes) {
                    let t = (cs + k) % self.stripes; // one worker: every stripe, from home
                    pick = (t..self.leases.len())
                        .step_by(self.stripes)
                        .find(|&i| self.leases[i].0 == St::Free);
                    k += 1;
                }
                let Some(l) = pick else {
                    return self.count("no free address");
                };
                if self.clients.len() >= self.cap {
                    return self.count("client table full");
                }
                self.clients.insert(mac, l);
                self.leases[l] = (St::Pinging, mac);
                Some(Out::Ping(pool_addr(l)))
            }
            msg::REQUEST => {
                if server.is_some_and(|s| s != u32::from(SERVER_IP)) {
                    return self.count("request for another server");
                }
                let a = requested.or((ciaddr != 0).then_some(ciaddr));
                match a.and_then(|a| self.index(a)) {
                    Some(l) if self.holds(&mac, l) && self.leases[l].0 != St::Pinging => {
                        self.leases[l].0 = St::Bound;
                        reply(msg::ACK, Some(l))
                    }
                    _ => reply(msg::NAK, None),
                }
            }
            msg::RELEASE => match self.index(ciaddr) {
                Some(l) if ciaddr != 0 && self.holds(&mac, l) => {
                    self.leases[l] = (St::Free, [0; 6]);
                    self.clients.remove(&mac);
                    self.count("consumed: release")
                }
                _ => self.count("release of an address not held"),
            },
            msg::DECLINE => match requested.and_then(|a| self.index(a)) {
                Some(l) if self.holds(&mac, l) && self.leases[l].0 != St::Pinging => {
                    self.leases[l] = (St::Declined, [0; 6]);
                    self.clients.remove(&mac);
                    self.count("consumed: decline")
                }
                _ => self.count("decline of an address not offered"),
            },
            msg::INFORM => reply(msg::ACK, None),
            _ => self.count("unexpected message type"),
        }
    }
}

/// What an output frame is (parsed independently).
fn parse_out(f: &[u8]) -> Out {
    let p = SlicedPacket::from_ethernet(f).expect("reply parses");
    let Some(NetSlice::Ipv4(ip)) = &p.net else {
        panic!("reply not ipv4")
    };
    assert_eq!(csum(ip.header().slice(), 0), 0, "reply ip checksum");
    assert_eq!(ip.header().source_addr(), SERVER_IP);
    match &p.transport {
        Some(TransportSlice::Icmpv4(i)) => {
            assert_eq!(i.type_u8(), 8);
            assert_eq!(csum(i.slice(), 0), 0, "ping checksum");
            Out::Ping(ip.header().destination_addr())
        }
        Some(TransportSlice::Udp(u)) => {
            let (s, d) = (
                u32::from(ip.header().source_addr()),
                u32::from(ip.header().destination_addr()),
            );
            let ph = (s >> 16) + (s & 0xffff) + (d >> 16) + (d & 0xffff) + 17;
            assert_eq!(
                csum(u.slice(), ph + u.slice().len() as u32),
                0,
                "reply udp checksum"
            );
            assert_eq!((u.source_port(), u.destination_port()), (67, 68));
            let b = u.payload();
            assert_eq!(b.len(), 300);
            assert_eq!((b[0], &b[236..240]), (2, &[99u8, 130, 83, 99][..]));
            assert_eq!(&b[240..243][..2], &[53, 1]);
            let mut mac = [0u8; 6];
            mac.copy_from_slice(&b[28..34]);
            let y = Ipv4Addr::new(b[16], b[17], b[18], b[19]);
            Out::Reply(b[242], y, mac)
        }
        _ => panic!("reply neither udp nor icmp"),
    }
}

fn reason(e: DhcpError) -> &'static str {
    DhcpError::REASONS[e.index() as usize]
}

/// Runs frames through one worker directly at time `now`: each frame's output or drop.
fn direct<W: NfWorker<Error = DhcpError>>(
    w: &mut W,
    frames: &[Vec<u8>],
    now: u64,
) -> Vec<Result<Vec<u8>, &'static str>> {
    let mut pool = BufferPool::new(PoolConfig {
        buffers: 4,
        ..PoolConfig::default()
    })
    .unwrap();
    frames
        .iter()
        .map(|f| {
            let bi = pool.alloc().unwrap();
            let mut p = pool.packet_mut(bi);
            p.append(f.len()).unwrap().copy_from_slice(f);
            let r = w
                .packet(&mut p, now)
                .map(|()| p.data().to_vec())
                .map_err(reason);
            pool.free(bi);
            r
        })
        .collect()
}

fn check_balanced(r: &NfRun) {
    let c = r.report.conservation();
    assert!(c.is_balanced(), "{c:?}");
    assert_eq!(c.input, c.output + c.dropped, "in == out + drops");
}

// ---------------------------------------------------------------------------------------

const STRIPES: usize = 64;

fn small_traffic(packets: usize) -> TrafficConfig {
    TrafficConfig {
        hosts: 2_400,
        packets,
        seed: 7,
        active: 128,
        renewals: 3.0,
        release: 0.25,
        decline: 0.05,
        conflicts: 0.05,
        echo: 0.01,
        malformed: 0.01,
    }
}

#[test]
fn one_worker_matches_the_reference_server_under_every_strategy() {
    let pool = 2_000;
    let cfg = DhcpConfig {
        max_probe: 8,
        ..DhcpConfig::timeless(pool, 4096)
    };
    let t = small_traffic(12_000);
    let frames = traffic(&t, &cfg, STRIPES, 0, 1);
    let mut m = Model::new(pool, 4096, STRIPES, cfg.max_probe);
    let want: Vec<Out> = frames.iter().filter_map(|f| m.step(f)).collect();
    let kinds = |k| {
        want.iter()
            .filter(|o| matches!(o, Out::Reply(x, ..) if *x == k))
            .count() as u64
    };
    let pings = want.iter().filter(|o| matches!(o, Out::Ping(_))).count() as u64;
    assert!(
        kinds(msg::ACK) > 1000 && kinds(msg::NAK) > 0 && kinds(msg::OFFER) > 100 && pings > 100
    );
    assert!(m.consumed.contains_key("consumed: ping reply"));
    for s in Strategy::available() {
        let d = domain(s, 1, STRIPES);
        let nf = Arc::new(Dhcpd::new(&d, cfg.clone()));
        let path = tmp(&format!("model-{s}.pcap"));
        let fr = Arc::new(frames.clone());
        let rc = RunConfig {
            packets_per_worker: frames.len() as u64,
            pin: false,
            pcap_out: Some(path.clone()),
            ..RunConfig::default()
        };
        let r = run(&nf, move |_| fr.to_vec(), &rc).unwrap();
        check_balanced(&r);
        let got: Vec<Out> = pktvec_io::capture::read_capture(&path)
            .unwrap()
            .packets
            .iter()
            .map(|f| parse_out(f))
            .collect();
        assert_eq!(got.len(), want.len(), "{s}: replies");
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g, w, "{s}: reply {i}");
        }
        assert_eq!(r.counter("acked"), kinds(msg::ACK), "{s}");
        assert_eq!(r.counter("naked"), kinds(msg::NAK), "{s}");
        assert_eq!(r.counter("offered"), kinds(msg::OFFER), "{s}");
        assert_eq!(r.counter("pings"), pings, "{s}");
        for why in [
            "consumed: release",
            "consumed: decline",
            "consumed: ping reply",
            "no free address",
            "release of an address not held",
        ] {
            assert_eq!(
                r.drops_of(why),
                m.consumed.get(why).copied().unwrap_or(0),
                "{s}: {why}"
            );
        }
        // the final lease array equals the model's
        let leases = nf.leases();
        for (i, (l, (st, mac))) in leases.iter().zip(&m.leases).enumerate() {
            let st2 = match l.state {
                LeaseState::Free => St::Free,
                LeaseState::Pinging => St::Pinging,
                LeaseState::Offered => St::Offered,
                LeaseState::Bound => St::Bound,
                LeaseState::Declined => St::Declined,
                LeaseState::InUse => St::InUse,
            };
            assert_eq!((st2, l.mac), (*st, *mac), "{s}: lease {i}");
        }
        if s == Strategy::Coarse {
            tshark_check(&path);
        }
        let _ = std::fs::remove_file(&path);
    }
}

/// tshark decodes every reply as DHCP (or ICMP) with no malformed or error expert info,
/// and finds every IPv4 and UDP checksum good.
fn tshark_check(path: &PathBuf) {
    let Ok(o) = std::process::Command::new("tshark").arg("-v").output() else {
        eprintln!("tshark not installed: decode check skipped");
        return;
    };
    assert!(o.status.success());
    let count = |filter: &str| {
        let o = std::process::Command::new("tshark")
            .args([
                "-n",
                "-o",
                "ip.check_checksum:TRUE",
                "-o",
                "udp.check_checksum:TRUE",
                "-r",
            ])
            .arg(path)
            .args(["-Y", filter])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).lines().count()
    };
    let all = count("frame");
    assert!(all > 0);
    assert_eq!(count("_ws.malformed || _ws.expert.severity >= error"), 0);
    assert_eq!(count("dhcp") + count("icmp.type == 8"), all);
    assert!(count("dhcp.option.dhcp == 2") > 0 && count("dhcp.option.dhcp == 5") > 0);
    // checksums verified by tshark too
    let good = count("ip.checksum.status == \"Good\" && (udp.checksum.status == \"Good\" || icmp)");
    assert_eq!(good, all);
}

#[test]
fn two_workers_keep_the_invariants() {
    let pool = 3_000;
    let cfg = DhcpConfig {
        max_probe: 16,
        ..DhcpConfig::timeless(pool, 8192)
    };
    for s in [Strategy::Coarse, Strategy::Fine, Strategy::Affinity] {
        let d = domain(s, 2, STRIPES);
        let nf = Arc::new(Dhcpd::new(&d, cfg.clone()));
        let (t, c2) = (small_traffic(6_000), cfg.clone());
        let rc = RunConfig {
            packets_per_worker: 6_000,
            pin: false,
            ..RunConfig::default()
        };
        let r = run(&nf, move |w| traffic(&t, &c2, STRIPES, w, 2), &rc).unwrap();
        check_balanced(&r);
        let out = r.report.conservation().output;
        let replies = ["pings", "offered", "acked", "naked", "informed"]
            .iter()
            .map(|k| r.counter(k))
            .sum::<u64>();
        assert_eq!(out, replies, "{s}: every output is a counted reply");
        assert!(r.counter("acked") > 500, "{s}");
        // lease counts conserve; every live lease is its client's, each client holds one
        let leases = nf.leases();
        assert_eq!(nf.lease_counts().total(), pool);
        let mut owners = HashSet::new();
        for (i, l) in leases.iter().enumerate() {
            if matches!(
                l.state,
                LeaseState::Pinging | LeaseState::Offered | LeaseState::Bound
            ) {
                assert!(owners.insert(l.mac), "{s}: {:?} holds two leases", l.mac);
                assert_eq!(nf.client_lease(&l.mac), Some(i as u32), "{s}: lease {i}");
                // all of a client's addresses lie in its owner's stripes
                let cs = mac_hash(&l.mac) as usize % STRIPES;
                assert_eq!(
                    cs % 2,
                    (i % STRIPES) % 2,
                    "{s}: lease {i} outside the client's class"
                );
            }
        }
        if s == Strategy::Affinity {
            assert!(r.handoff.as_ref().is_some_and(|h| h.handed_off > 0));
        }
    }
}

/// Two workers driven directly, every reply kept: no address is ACKed to two clients
/// (no lease ends in this traffic), and every ACK matches the client's final lease.
#[test]
fn two_workers_never_ack_one_address_to_two_clients() {
    let pool = 2_000;
    let cfg = DhcpConfig {
        max_probe: 16,
        ..DhcpConfig::timeless(pool, 8192)
    };
    let t = TrafficConfig {
        release: 0.0,
        decline: 0.0,
        conflicts: 0.0,
        echo: 0.0,
        hosts: 2_500,
        ..small_traffic(5_000)
    };
    for s in [Strategy::Coarse, Strategy::Fine, Strategy::Affinity] {
        let d = domain(s, 2, STRIPES);
        let nf = Dhcpd::new(&d, cfg.clone());
        let mut streams: Vec<Vec<Vec<u8>>> =
            (0..2).map(|w| traffic(&t, &cfg, STRIPES, w, 2)).collect();
        if s == Strategy::Affinity {
            // hand every frame to its owner, each stream's order kept
            let all: Vec<Vec<u8>> = streams.concat();
            streams = (0..2)
                .map(|w| {
                    all.iter()
                        .filter(|f| nf.owner(f).unwrap_or(0) == w)
                        .cloned()
                        .collect()
                })
                .collect();
        }
        let outs: Vec<Vec<Result<Vec<u8>, &str>>> = std::thread::scope(|sc| {
            let hs: Vec<_> = streams
                .iter()
                .enumerate()
                .map(|(w, fr)| {
                    let mut wk = nf.worker(w);
                    sc.spawn(move || direct(&mut wk, fr, pktvec_graph::clock::now()))
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let mut acked: HashMap<Ipv4Addr, Mac> = HashMap::new();
        let mut last_ack: HashMap<Mac, Ipv4Addr> = HashMap::new();
        for o in outs.iter().flatten().flatten() {
            if let Out::Reply(msg::ACK, y, mac) = parse_out(o) {
                let prev = acked.insert(y, mac);
                assert!(
                    prev.is_none() || prev == Some(mac),
                    "{s}: {y} acked to {prev:?} and {mac:?}"
                );
                last_ack.insert(mac, y);
            }
        }
        assert!(acked.len() > 300, "{s}: {}", acked.len());
        let leases = nf.leases();
        for (mac, y) in &last_ack {
            let i = nf.pool_index(*y).unwrap();
            assert_eq!(
                (leases[i].state, leases[i].mac),
                (LeaseState::Bound, *mac),
                "{s}"
            );
            assert_eq!(nf.client_lease(mac), Some(i as u32), "{s}");
        }
        assert_eq!(nf.lease_counts().bound, acked.len(), "{s}");
    }
}

fn discover(h: usize) -> Vec<u8> {
    request_frame(&host_mac(h), h as u32, msg::DISCOVER, None, None, None)
}

fn select(h: usize, a: Ipv4Addr) -> Vec<u8> {
    request_frame(
        &host_mac(h),
        h as u32,
        msg::REQUEST,
        None,
        Some(a),
        Some(SERVER_IP),
    )
}

#[test]
fn malformed_and_truncated_frames_are_counted_drops() {
    let d = domain(Strategy::Fine, 1, 16);
    let nf = Dhcpd::new(&d, DhcpConfig::timeless(64, 64));
    let mut w = nf.worker(0);
    let good = discover(1);
    let now = pktvec_graph::clock::now();
    // every truncation of a valid DISCOVER
    let cuts: Vec<Vec<u8>> = (0..good.len()).map(|n| good[..n].to_vec()).collect();
    for (n, r) in direct(&mut w, &cuts, now).into_iter().enumerate() {
        assert!(r.is_err(), "cut to {n} bytes accepted");
    }
    let fix_ip = |f: &mut Vec<u8>| {
        f[24..26].fill(0);
        let c = csum(&f[14..34], 0);
        f[24..26].copy_from_slice(&c.to_be_bytes());
    };
    let bootp = 42;
    let mut cases: Vec<(Vec<u8>, &str)> = Vec::new();
    let mut f = good.clone();
    f[bootp + 236] = 0;
    f[40..42].fill(0);
    cases.push((f, "missing magic cookie"));
    let mut f = good.clone();
    f[bootp + 241] = 250;
    f[40..42].fill(0);
    cases.push((f, "malformed option"));
    let mut f = good.clone();
    f[bootp + 241] = 2; // message type of length 2
    f[40..42].fill(0);
    cases.push((f, "malformed option"));
    let mut f = good.clone();
    f[bootp + 240..bootp + 243].fill(0);
    f[40..42].fill(0);
    cases.push((f, "missing message type"));
    let mut f = good.clone();
    f[24] ^= 1;
    cases.push((f, "bad ip checksum"));
    let mut f = good.clone();
    f[bootp + 50] ^= 1;
    cases.push((f, "bad udp checksum"));
    let mut f = good.clone();
    f[bootp] = 2;
    f[40..42].fill(0);
    cases.push((f, "not a bootrequest"));
    let mut f = good.clone();
    f[bootp + 242] = msg::OFFER;
    f[40..42].fill(0);
    cases.push((f, "unexpected message type"));
    let mut f = good.clone();
    f[36..38].copy_from_slice(&53u16.to_be_bytes());
    f[40..42].fill(0);
    cases.push((f, "not dhcp or a ping reply"));
    let mut f = good.clone();
    f[38..40].copy_from_slice(&5000u16.to_be_bytes()); // UDP length past the packet
    f[40..42].fill(0);
    cases.push((f, "truncated header"));
    let mut f = good.clone();
    f[16..18].copy_from_slice(&5000u16.to_be_bytes()); // IP total length lies
    fix_ip(&mut f);
    cases.push((f, "truncated header"));
    let mut f = good.clone();
    f[20..22].copy_from_slice(&0x2000u16.to_be_bytes()); // more fragments
    fix_ip(&mut f);
    cases.push((f, "ip fragment"));
    let mut f = good.clone();
    f[12..14].copy_from_slice(&0x0806u16.to_be_bytes());
    cases.push((f, "not ipv4"));
    cases.push((
        echo_reply_frame(Ipv4Addr::new(192, 168, 0, 1), 1),
        "ping reply from outside the pool",
    ));
    let mut f = echo_reply_frame(pool_addr(3), 1);
    f[40] ^= 1;
    cases.push((f, "bad icmp checksum"));
    cases.push((select(2, Ipv4Addr::new(10, 1, 0, 9)), "")); // NAK
    let frames: Vec<Vec<u8>> = cases.iter().map(|c| c.0.clone()).collect();
    for (r, (_, why)) in direct(&mut w, &frames, now).into_iter().zip(&cases) {
        match r {
            Err(e) => assert_eq!(e, *why),
            Ok(out) => assert_eq!(
                parse_out(&out),
                Out::Reply(msg::NAK, Ipv4Addr::UNSPECIFIED, host_mac(2))
            ),
        }
    }
    // seeded garbage, and garbage after valid headers
    let mut x = 0x1234_5678_u64;
    let mut junk = Vec::new();
    for i in 0..600 {
        let mut f = if i % 2 == 0 {
            good.clone()
        } else {
            vec![0u8; 20 + i % 400]
        };
        for _ in 0..1 + i % 8 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let n = f.len();
            f[(x as usize) % n] = (x >> 32) as u8;
        }
        f.truncate(14 + (x >> 40) as usize % f.len());
        junk.push(f);
    }
    let _ = direct(&mut w, &junk, now);
    // nothing was leaked: at most the garbage that still parsed holds a lease, each with
    // its client's record
    for (i, l) in nf.leases().iter().enumerate() {
        if matches!(
            l.state,
            LeaseState::Pinging | LeaseState::Offered | LeaseState::Bound
        ) {
            assert_eq!(nf.client_lease(&l.mac), Some(i as u32));
        }
    }
}

#[test]
fn generated_malformed_traffic_keeps_exact_conservation() {
    for s in [Strategy::Fine, Strategy::Affinity] {
        let d = domain(s, 2, STRIPES);
        let cfg = DhcpConfig::timeless(1_000, 4096);
        let nf = Arc::new(Dhcpd::new(&d, cfg.clone()));
        let t = TrafficConfig {
            malformed: 0.3,
            ..small_traffic(3_000)
        };
        let rc = RunConfig {
            packets_per_worker: 3_000,
            pin: false,
            ..RunConfig::default()
        };
        let r = run(&nf, move |w| traffic(&t, &cfg, STRIPES, w, 2), &rc).unwrap();
        check_balanced(&r);
        for why in [
            "truncated header",
            "missing magic cookie",
            "malformed option",
            "missing message type",
            "bad ip checksum",
            "bad udp checksum",
        ] {
            assert!(r.drops_of(why) > 0, "{s}: no {why}");
        }
    }
}

#[test]
fn a_tiny_pool_runs_out_and_refills_without_leaks() {
    let d = domain(Strategy::Coarse, 1, 4);
    let nf = Dhcpd::new(&d, DhcpConfig::timeless(8, 64));
    let mut w = nf.worker(0);
    let now = pktvec_graph::clock::now();
    let mut got = HashMap::new();
    for h in 0..20 {
        let r = direct(&mut w, &[discover(h), discover(h)], now);
        match &r[1] {
            Ok(o) => {
                let Out::Reply(msg::OFFER, y, _) = parse_out(o) else {
                    panic!()
                };
                let a = direct(&mut w, &[select(h, y)], now);
                assert!(
                    matches!(parse_out(a[0].as_ref().unwrap()), Out::Reply(msg::ACK, a, _) if a == y)
                );
                got.insert(h, y);
            }
            Err(e) => assert_eq!((&r[0], *e), (&Err("no free address"), "no free address")),
        }
    }
    assert_eq!(got.len(), 8);
    assert_eq!(nf.lease_counts().bound, 8);
    // four release, four new clients get exactly those addresses
    let mut freed = HashSet::new();
    for (h, y) in got.iter().take(4) {
        let f = request_frame(
            &host_mac(*h),
            9,
            msg::RELEASE,
            Some(*y),
            None,
            Some(SERVER_IP),
        );
        assert_eq!(direct(&mut w, &[f], now)[0], Err("consumed: release"));
        freed.insert(*y);
    }
    assert_eq!(nf.lease_counts().free, 4);
    for h in 100..106 {
        let r = direct(&mut w, &[discover(h), discover(h)], now);
        if let Ok(o) = &r[1] {
            let Out::Reply(msg::OFFER, y, _) = parse_out(o) else {
                panic!()
            };
            assert!(freed.remove(&y));
        } else {
            assert!(h >= 104);
        }
    }
    assert!(freed.is_empty());
    assert_eq!(nf.lease_counts().total(), 8);
}

#[test]
fn a_full_client_table_refuses_without_leaking_leases() {
    let d = domain(Strategy::Fine, 1, 16);
    let nf = Dhcpd::new(&d, DhcpConfig::timeless(100, 4));
    let mut w = nf.worker(0);
    let now = pktvec_graph::clock::now();
    let frames: Vec<Vec<u8>> = (0..10).map(discover).collect();
    let r = direct(&mut w, &frames, now);
    assert_eq!(r.iter().filter(|x| x.is_ok()).count(), 4);
    assert_eq!(
        r.iter().filter(|x| **x == Err("client table full")).count(),
        6
    );
    let c = nf.lease_counts();
    assert_eq!((c.pinging, c.free), (4, 96));
}

#[test]
fn expiry_returns_leases_offers_and_declined_addresses() {
    let d = domain(Strategy::Fine, 1, 8);
    let cfg = DhcpConfig {
        lease_ticks: 1_000,
        ping_ticks: 10,
        offer_ticks: 500,
        decline_ticks: 700,
        sweep_stripes: 8,
        sweep_buckets: 1 << 20,
        ..DhcpConfig::timeless(16, 64)
    };
    let nf = Dhcpd::new(&d, cfg);
    let mut w = nf.worker(0);
    let t0 = 1_000_000u64;
    // client 1: pinged, retransmits too early, then offered and bound
    let r = direct(&mut w, &[discover(1)], t0);
    let Out::Ping(a1) = parse_out(r[0].as_ref().unwrap()) else {
        panic!()
    };
    assert_eq!(
        direct(&mut w, &[discover(1)], t0 + 5)[0],
        Err("discover while ping pending")
    );
    let r = direct(&mut w, &[discover(1), select(1, a1)], t0 + 20);
    assert_eq!(
        parse_out(r[1].as_ref().unwrap()),
        Out::Reply(msg::ACK, a1, host_mac(1))
    );
    // client 2: offered, never requests (a stale offer)
    direct(&mut w, &[discover(2)], t0 + 20);
    let r = direct(&mut w, &[discover(2)], t0 + 40);
    assert!(matches!(
        parse_out(r[0].as_ref().unwrap()),
        Out::Reply(msg::OFFER, ..)
    ));
    // client 3: bound, then declines
    direct(&mut w, &[discover(3)], t0 + 20);
    let r = direct(&mut w, &[discover(3)], t0 + 40);
    let Out::Reply(_, a3, _) = parse_out(r[0].as_ref().unwrap()) else {
        panic!()
    };
    let dec = request_frame(
        &host_mac(3),
        3,
        msg::DECLINE,
        None,
        Some(a3),
        Some(SERVER_IP),
    );
    let r = direct(&mut w, &[select(3, a3), dec], t0 + 50);
    assert_eq!(r[1], Err("consumed: decline"));
    // a host answers for address 9
    assert_eq!(
        direct(&mut w, &[echo_reply_frame(pool_addr(9), 1)], t0)[0],
        Err("consumed: ping reply")
    );
    let c = nf.lease_counts();
    assert_eq!((c.bound, c.offered, c.declined, c.in_use), (1, 1, 1, 1));
    // renewal keeps client 1 bound past its first lease end
    let renew = request_frame(&host_mac(1), 1, msg::REQUEST, Some(a1), None, None);
    let r = direct(&mut w, std::slice::from_ref(&renew), t0 + 900);
    assert!(matches!(
        parse_out(r[0].as_ref().unwrap()),
        Out::Reply(msg::ACK, ..)
    ));
    w.after_vector(t0 + 1_200);
    let c = nf.lease_counts();
    assert_eq!(
        (c.bound, c.offered, c.declined, c.in_use),
        (1, 0, 0, 0),
        "{c:?}"
    );
    w.after_vector(t0 + 2_000);
    assert_eq!(nf.lease_counts().free, 16);
    let counters: HashMap<_, _> = w.counters().into_iter().collect();
    assert_eq!(
        (
            counters["expired"],
            counters["stale offers"],
            counters["unblocked"]
        ),
        (1, 1, 2)
    );
    // the expired client's renewal is refused
    let r = direct(&mut w, &[renew], t0 + 2_000);
    assert!(matches!(
        parse_out(r[0].as_ref().unwrap()),
        Out::Reply(msg::NAK, ..)
    ));
    assert_eq!(nf.lease_counts().free, 16);
}

#[test]
fn generated_traffic_is_in_protocol_order_and_local() {
    let cfg = DhcpConfig::timeless(20_000, 32_768);
    let t = TrafficConfig {
        packets: 20_000,
        ..TrafficConfig::default()
    };
    let a = traffic(&t, &cfg, 1024, 0, 2);
    assert_eq!(a, traffic(&t, &cfg, 1024, 0, 2), "seeded");
    let share = same_flow_share(&a, 100, flow_of);
    assert!((0.1..0.7).contains(&share), "{share}");
    // per client: a selecting REQUEST comes after a DISCOVER; renewals after a selection
    let mut seen: HashMap<Mac, (bool, bool)> = HashMap::new();
    let mut kinds = HashMap::new();
    for f in &a {
        if let Some(Req::Dhcp {
            kind, mac, ciaddr, ..
        }) = parse_req(f)
        {
            *kinds.entry(kind).or_insert(0) += 1;
            let e = seen.entry(mac).or_insert((false, false));
            match kind {
                msg::DISCOVER => e.0 = true,
                msg::REQUEST if ciaddr == 0 => {
                    assert!(e.0);
                    e.1 = true;
                }
                _ => {}
            }
        }
    }
    assert!(kinds[&msg::REQUEST] > kinds[&msg::DISCOVER], "{kinds:?}");
    assert!(kinds[&msg::RELEASE] > 0 && kinds[&msg::DECLINE] > 0);
}
