//! The classifier against a reference model written here: frames parsed with etherparse,
//! each flow's new payload bytes concatenated in a `Vec` and tested with a hand-written
//! matcher of the l7-filter HTTP pattern (cross-checked with regex-automata's full regex
//! search), per-class counters summed the same way. Every strategy on 1 and 2 workers
//! (each worker's generated flows are its own, so a flow's packets stay in order under
//! any strategy; under flow affinity the handoff keeps one source's order per owner).

use etherparse::{NetSlice, SlicedPacket, TransportSlice};
use pktvec_nf::classifier::{
    generate, Class, Classifier, ClassifierConfig, FlowKey, FlowKind, TrafficConfig, HTTP_PATTERN,
    INSPECT_LIMIT,
};
use pktvec_nf::runtime::{run, same_flow_share, Nf, NfRun, NfWorker, RunConfig};
use pktvec_packet::builder::PacketBuilder;
use pktvec_packet::wire::{MacAddr, TcpFlags};
use pktvec_packet::{BufferPool, PoolConfig};
use pktvec_state::{Domain, Strategy, SyncConfig};
use std::collections::{BTreeMap, HashMap};
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::sync::Arc;

/// The l7-filter `http.pat`, typed again here.
const PATTERN: &str = r"http/(0\.9|1\.0|1\.1) [1-5][0-9][0-9] [\x09-\x0d -~]*(connection:|content-type:|content-length:|date:)|post [\x09-\x0d -~]* http/[01]\.[019]";

// ----- the reference matcher -----------------------------------------------------------

fn printable(b: u8) -> bool {
    (0x09..=0x0d).contains(&b) || (0x20..=0x7e).contains(&b)
}

/// Whether `data` holds a match of [`PATTERN`] anywhere (ASCII case-insensitive).
fn ref_match(data: &[u8]) -> bool {
    let s: Vec<u8> = data.iter().map(|b| b.to_ascii_lowercase()).collect();
    let at = |i: usize, lit: &[u8]| s.get(i..i + lit.len()) == Some(lit);
    let byte = |i: usize| s.get(i).copied().unwrap_or(0);
    for i in 0..s.len() {
        // http/(0.9|1.0|1.1) [1-5][0-9][0-9] [printable]*(keyword)
        if at(i, b"http/")
            && [&b"0.9"[..], b"1.0", b"1.1"].iter().any(|v| at(i + 5, v))
            && byte(i + 8) == b' '
            && (b'1'..=b'5').contains(&byte(i + 9))
            && byte(i + 10).is_ascii_digit()
            && byte(i + 11).is_ascii_digit()
            && byte(i + 12) == b' '
        {
            let mut j = i + 13;
            loop {
                let kw = [
                    &b"connection:"[..],
                    b"content-type:",
                    b"content-length:",
                    b"date:",
                ];
                if kw.iter().any(|k| at(j, k)) {
                    return true;
                }
                if j >= s.len() || !printable(s[j]) {
                    break;
                }
                j += 1;
            }
        }
        // post [printable]* http/[01].[019]
        if at(i, b"post ") {
            let mut j = i + 5;
            loop {
                if at(j, b" http/")
                    && b"01".contains(&byte(j + 6))
                    && byte(j + 7) == b'.'
                    && b"019".contains(&byte(j + 8))
                    && j + 8 < s.len()
                {
                    return true;
                }
                if j >= s.len() || !printable(s[j]) {
                    break;
                }
                j += 1;
            }
        }
    }
    false
}

// ----- the reference model -------------------------------------------------------------

#[derive(Default)]
struct RefFlow {
    buf: Vec<u8>,
    next: [Option<u32>; 2],
    class: Class,
    bytes: u64,
    packets: u64,
}

#[derive(Default)]
struct Reference {
    flows: HashMap<FlowKey, RefFlow>,
    /// (packets, bytes) by class, as the classifier's counters count them.
    class: HashMap<Class, (u64, u64)>,
    flows_decided: HashMap<Class, u64>,
    tcp: (u64, u64),
    /// Drops by the classifier's reason names.
    drops: BTreeMap<&'static str, u64>,
}

fn ipv4_header_ok(h: &[u8]) -> bool {
    let mut sum: u32 = h
        .chunks(2)
        .map(|c| u32::from(c[0]) << 8 | u32::from(c[1]))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum == 0xffff
}

impl Reference {
    fn drop(&mut self, why: &'static str) {
        *self.drops.entry(why).or_default() += 1;
    }

    fn feed(&mut self, frame: &[u8], verify_checksum: bool) {
        let Ok(p) = SlicedPacket::from_ethernet(frame) else {
            return self.drop("unparsed");
        };
        let Some(NetSlice::Ipv4(ip)) = &p.net else {
            return self.drop("not ipv4");
        };
        let h = ip.header();
        if verify_checksum && !ipv4_header_ok(h.slice()) {
            return self.drop("bad ipv4 checksum");
        }
        if h.more_fragments() || h.fragments_offset().value() != 0 {
            return self.drop("ipv4 fragment");
        }
        let Some(TransportSlice::Tcp(tcp)) = &p.transport else {
            return self.drop("not tcp");
        };
        let len = frame.len() as u64;
        self.tcp.0 += 1;
        self.tcp.1 += len;
        let src = (u32::from(h.source_addr()), tcp.source_port());
        let dst = (u32::from(h.destination_addr()), tcp.destination_port());
        let (lo, hi, dir) = if src <= dst {
            (src, dst, 0)
        } else {
            (dst, src, 1)
        };
        let key = FlowKey {
            lo_addr: lo.0,
            lo_port: lo.1,
            hi_addr: hi.0,
            hi_port: hi.1,
        };
        let f = self.flows.entry(key).or_default();
        f.bytes += len;
        f.packets += 1;
        if f.class != Class::Unknown {
            let c = self.class.entry(f.class).or_default();
            c.0 += 1;
            c.1 += len;
            return;
        }
        let payload = tcp.payload();
        let data_seq = tcp.sequence_number().wrapping_add(u32::from(tcp.syn()));
        let next = *f.next[dir].get_or_insert(data_seq);
        let behind = next.wrapping_sub(data_seq) as i32;
        let skip = behind.max(0) as usize;
        if behind <= 0 || skip < payload.len() {
            f.buf.extend_from_slice(&payload[skip.min(payload.len())..]);
            f.next[dir] = Some(
                data_seq
                    .wrapping_add(payload.len() as u32)
                    .wrapping_add(u32::from(tcp.fin())),
            );
        }
        let window = &f.buf[..f.buf.len().min(INSPECT_LIMIT)];
        if ref_match(window) {
            f.class = Class::Http;
        } else if f.buf.len() >= INSPECT_LIMIT {
            f.class = Class::NotHttp;
        }
        if f.class != Class::Unknown {
            let c = self.class.entry(f.class).or_default();
            c.0 += f.packets;
            c.1 += f.bytes;
            *self.flows_decided.entry(f.class).or_default() += 1;
        }
    }

    fn of(frames: &[Vec<u8>], verify_checksum: bool) -> Reference {
        let mut r = Reference::default();
        for f in frames {
            r.feed(f, verify_checksum);
        }
        r
    }
}

// ----- running -------------------------------------------------------------------------

fn domain(strategy: Strategy, workers: usize) -> Arc<Domain> {
    Domain::new(SyncConfig {
        strategy,
        workers,
        stripes: 64,
        ..SyncConfig::default()
    })
    .expect("domain")
}

/// Long timeouts: nothing expires while the test runs, so every flow can be looked up.
fn quiet_config() -> ClassifierConfig {
    ClassifierConfig {
        idle_timeout: 3600.0,
        closed_timeout: 3600.0,
        ..ClassifierConfig::default()
    }
}

fn run_on(
    strategy: Strategy,
    traffic: &[Vec<Vec<u8>>],
    cc: ClassifierConfig,
) -> (Arc<Classifier>, NfRun) {
    let workers = traffic.len();
    let n = traffic[0].len();
    assert!(traffic.iter().all(|t| t.len() == n));
    let nf = Arc::new(Classifier::new(&domain(strategy, workers), cc).expect("classifier"));
    let t: Arc<Vec<Vec<Vec<u8>>>> = Arc::new(traffic.to_vec());
    let cfg = RunConfig {
        packets_per_worker: n as u64,
        pin: false,
        // no handoff congestion drops: every packet is classified
        handoff_ring: (n * workers).next_power_of_two().max(1024),
        buffers: (n * workers + 1024).max(8192),
        ..RunConfig::default()
    };
    let r = run(&nf, move |w| t[w].clone(), &cfg).expect("run");
    (nf, r)
}

fn conserved(r: &NfRun, input: u64) {
    let c = r.report.conservation();
    assert!(c.is_balanced(), "{r}");
    let drops: u64 = r.report.errors().rows.iter().map(|x| x.count).sum();
    let out = r.counter("tcp packets");
    assert_eq!(r.report.input_packets(), input, "{r}");
    assert_eq!(out + drops, input, "in == out + drops\n{r}");
}

/// The run agrees with the reference: every counter and every flow.
fn agrees(nf: &Classifier, r: &NfRun, rf: &Reference) {
    let cls = |c: Class| rf.class.get(&c).copied().unwrap_or_default();
    assert_eq!(r.counter("tcp packets"), rf.tcp.0, "{r}");
    assert_eq!(r.counter("tcp bytes"), rf.tcp.1, "{r}");
    assert_eq!(r.counter("http packets"), cls(Class::Http).0, "{r}");
    assert_eq!(r.counter("http bytes"), cls(Class::Http).1, "{r}");
    assert_eq!(r.counter("not-http packets"), cls(Class::NotHttp).0, "{r}");
    assert_eq!(r.counter("not-http bytes"), cls(Class::NotHttp).1, "{r}");
    let decided = |c: Class| rf.flows_decided.get(&c).copied().unwrap_or(0);
    assert_eq!(r.counter("flows http"), decided(Class::Http), "{r}");
    assert_eq!(r.counter("flows not-http"), decided(Class::NotHttp), "{r}");
    assert_eq!(r.counter("flows"), rf.flows.len() as u64, "{r}");
    for (reason, &n) in &rf.drops {
        assert_eq!(r.drops_of(reason), n, "{reason}\n{r}");
    }
    for (k, f) in &rf.flows {
        let got = nf.flow(k).unwrap_or_else(|| panic!("flow {k:?} missing"));
        assert_eq!(
            (got.class, got.bytes, got.packets),
            (f.class, f.bytes, f.packets),
            "{k:?}: {:?}",
            String::from_utf8_lossy(&f.buf[..f.buf.len().min(INSPECT_LIMIT)])
        );
        assert!(got.rate_pps > 0.0);
    }
}

fn traffic(workers: usize, packets: usize) -> (Vec<Vec<Vec<u8>>>, Vec<Reference>) {
    let tc = TrafficConfig {
        packets,
        seed: 7,
        ..TrafficConfig::default()
    };
    let mut frames = Vec::new();
    let mut refs = Vec::new();
    for w in 0..workers {
        let t = generate(&tc, w);
        let rf = Reference::of(&t.frames, true);
        // the generator's ground truth is what the reference finds, for every flow it
        // sent completely; and every kind of flow is there
        let mut kinds = HashMap::new();
        for g in t.flows.iter().filter(|g| g.complete) {
            let got = rf.flows.get(&g.key).map(|f| f.class);
            assert_eq!(got, Some(g.expected), "{:?} {:?}", g.kind, g.key);
            *kinds.entry((g.kind, g.expected)).or_insert(0) += 1;
        }
        assert!(kinds.len() >= 7, "{kinds:?}");
        frames.push(t.frames);
        refs.push(rf);
    }
    (frames, refs)
}

fn merged(refs: Vec<Reference>) -> Reference {
    let mut m = Reference::default();
    for r in refs {
        m.tcp.0 += r.tcp.0;
        m.tcp.1 += r.tcp.1;
        for (c, (p, b)) in r.class {
            let e = m.class.entry(c).or_default();
            e.0 += p;
            e.1 += b;
        }
        for (c, n) in r.flows_decided {
            *m.flows_decided.entry(c).or_default() += n;
        }
        for (k, v) in r.drops {
            *m.drops.entry(k).or_default() += v;
        }
        let before = m.flows.len() + r.flows.len();
        m.flows.extend(r.flows);
        assert_eq!(m.flows.len(), before, "workers' flows are disjoint");
    }
    m
}

// ----- tests ---------------------------------------------------------------------------

#[test]
fn pattern_and_reference_matcher() {
    assert_eq!(HTTP_PATTERN, PATTERN);
    let re = regex_automata::dfa::regex::Regex::builder()
        .syntax(
            regex_automata::util::syntax::Config::new()
                .case_insensitive(true)
                .unicode(false)
                .utf8(false),
        )
        .thompson(regex_automata::nfa::thompson::Config::new().utf8(false))
        .build(PATTERN)
        .expect("pattern");
    let cases: &[(&[u8], bool)] = &[
        (b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n", true),
        (b"xx\x80http/1.0 404 Not Found\r\nDATE: today", true),
        (b"HTTP/0.9 599 a\tb Connection:", true),
        (b"POST /form HTTP/1.0\r\n", true),
        (b"post  http/0.9", true),
        (b"HTTP/1.2 200 OK\r\nContent-Type: text/html\r\n", false),
        (b"HTTP/1.1 600 Odd\r\nConnection: close\r\n", false),
        (b"HTTP/1.1 200 OK\r\n\x7fContent-Type: x", false),
        (b"HTTP/1.1 200 OK\r\n\x00Date: x", false),
        (b"HTTP/1.1 200 OK\r\nX-Content-Typo: none\r\n", false),
        (b"POST /x HTTP/2.0\r\n", false),
        (b"GET / HTTP/1.1\r\nHost: a\r\n\r\n", false),
        (b"post /x http/1.", false),
        (b"HTTP/1.1 200 OK\r\nContent-Type", false),
        (b"", false),
    ];
    for &(s, want) in cases {
        assert_eq!(ref_match(s), want, "{:?}", String::from_utf8_lossy(s));
        assert_eq!(re.is_match(s), want, "{:?}", String::from_utf8_lossy(s));
    }
    // and on every generated flow's inspected bytes
    let t = generate(
        &TrafficConfig {
            packets: 3000,
            ..TrafficConfig::default()
        },
        0,
    );
    let rf = Reference::of(&t.frames, true);
    for f in rf.flows.values() {
        let w = &f.buf[..f.buf.len().min(INSPECT_LIMIT)];
        assert_eq!(ref_match(w), re.is_match(w));
    }
}

#[test]
fn generated_traffic_shape() {
    let t = generate(
        &TrafficConfig {
            packets: 20_000,
            ..TrafficConfig::default()
        },
        0,
    );
    assert_eq!(t.frames.len(), 20_000);
    let share = same_flow_share(&t.frames, 100, |f| FlowKey::of_frame(f).map(|k| k.hash()));
    assert!((0.2..=0.4).contains(&share), "same-flow share {share}");
    let http = t.flows.iter().filter(|f| f.expected == Class::Http).count();
    let frac = http as f64 / t.flows.len() as f64;
    assert!((0.4..0.8).contains(&frac), "{frac}");
    // flows longer than the limit without a match, and near misses, are there
    assert!(t
        .flows
        .iter()
        .any(|f| f.kind == FlowKind::NearMiss && f.expected == Class::NotHttp));
    assert!(t
        .flows
        .iter()
        .any(|f| f.kind == FlowKind::LateHttp && f.expected == Class::NotHttp));
    // seeded: the same again, another worker differs
    let again = generate(
        &TrafficConfig {
            packets: 20_000,
            ..TrafficConfig::default()
        },
        0,
    );
    assert_eq!(t.frames, again.frames);
    let w1 = generate(
        &TrafficConfig {
            packets: 100,
            ..TrafficConfig::default()
        },
        1,
    );
    assert!(w1
        .flows
        .iter()
        .all(|f| t.flows.iter().all(|g| g.key != f.key)));
}

#[test]
fn every_strategy_on_one_worker_matches_the_reference() {
    let (frames, refs) = traffic(1, 4000);
    let rf = merged(refs);
    assert!(rf.flows_decided[&Class::Http] > 0 && rf.flows_decided[&Class::NotHttp] > 0);
    for s in Strategy::available() {
        let (nf, r) = run_on(s, &frames, quiet_config());
        conserved(&r, 4000);
        assert_eq!(
            r.report.errors().rows.iter().map(|x| x.count).sum::<u64>(),
            0,
            "{s}\n{r}"
        );
        agrees(&nf, &r, &rf);
    }
}

#[test]
fn every_strategy_on_two_workers_matches_the_reference() {
    let (frames, refs) = traffic(2, 2500);
    let rf = merged(refs);
    for s in Strategy::available() {
        let (nf, r) = run_on(s, &frames, quiet_config());
        conserved(&r, 5000);
        assert_eq!(
            r.report.errors().rows.iter().map(|x| x.count).sum::<u64>(),
            0,
            "{s}\n{r}"
        );
        agrees(&nf, &r, &rf);
        if s == Strategy::Affinity {
            let h = r.handoff.as_ref().expect("handoff");
            assert!(h.handed_off > 0 && h.congestion_drops == 0, "{r}");
        }
    }
}

// ----- bad input -----------------------------------------------------------------------

fn tcp_frame(sport: u16, flags: TcpFlags, payload: &[u8]) -> Vec<u8> {
    PacketBuilder::ethernet(MacAddr([2, 0, 0, 0, 0, 1]), MacAddr([2, 0, 0, 0, 0, 2]))
        .ipv4(Ipv4Addr::new(10, 9, 0, 1), Ipv4Addr::new(10, 9, 0, 2))
        .tcp(sport, 80, flags)
        .tcp_seq_ack(1000, 0)
        .payload(payload)
        .build()
}

fn fix_ipv4_checksum(f: &mut [u8]) {
    let ihl = usize::from(f[14] & 0x0f) * 4;
    f[24] = 0;
    f[25] = 0;
    let mut sum: u32 = f[14..14 + ihl.min(f.len() - 14)]
        .chunks(2)
        .map(|c| u32::from(c[0]) << 8 | u32::from(*c.get(1).unwrap_or(&0)))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    let c = !(sum as u16);
    f[24..26].copy_from_slice(&c.to_be_bytes());
}

/// Malformed frames, each with the reason it must be dropped for.
fn bad_frames() -> Vec<(Vec<u8>, &'static str)> {
    let good = tcp_frame(5000, TcpFlags::ACK, b"hello");
    let mut v = Vec::new();
    v.push((good[..10].to_vec(), "bad ethernet header"));
    let mut arp = good.clone();
    arp[12..14].copy_from_slice(&[0x08, 0x06]);
    v.push((arp, "not ipv4"));
    v.push((good[..14 + 12].to_vec(), "bad ipv4 header"));
    let mut lying = good.clone();
    lying[16..18].copy_from_slice(&2000u16.to_be_bytes());
    fix_ipv4_checksum(&mut lying);
    v.push((lying, "bad ipv4 header"));
    let mut ihl = good.clone();
    ihl[14] = 0x43;
    v.push((ihl, "bad ipv4 header"));
    let mut ck = good.clone();
    ck[24] ^= 0x55;
    v.push((ck, "bad ipv4 checksum"));
    let mut frag = good.clone();
    frag[20] = 0x20; // more fragments
    fix_ipv4_checksum(&mut frag);
    v.push((frag, "ipv4 fragment"));
    let udp = PacketBuilder::ethernet(MacAddr([2, 0, 0, 0, 0, 1]), MacAddr([2, 0, 0, 0, 0, 2]))
        .ipv4(Ipv4Addr::new(10, 9, 0, 1), Ipv4Addr::new(10, 9, 0, 2))
        .udp(53, 53)
        .payload(b"dns?")
        .build();
    v.push((udp, "not tcp"));
    let mut short_tcp = good[..14 + 20 + 10].to_vec();
    short_tcp[16..18].copy_from_slice(&30u16.to_be_bytes());
    fix_ipv4_checksum(&mut short_tcp);
    v.push((short_tcp, "bad tcp header"));
    let mut doff = good.clone();
    doff[14 + 20 + 12] = 0xf0; // 60-byte header in a 25-byte segment
    v.push((doff, "bad tcp header"));
    let mut doff_small = good.clone();
    doff_small[14 + 20 + 12] = 0x20;
    v.push((doff_small, "bad tcp header"));
    v
}

#[test]
fn bad_input_is_counted_never_a_panic() {
    let bad = bad_frames();
    let mut expect: BTreeMap<&str, u64> = BTreeMap::new();
    let mut frames = Vec::new();
    for (f, why) in &bad {
        frames.push(f.clone());
        *expect.entry(why).or_default() += 1;
    }
    // random bytes and random corruptions of good frames: whatever they are, no panic
    let mut x = 0x1234_5678_9abc_def0u64;
    let mut rnd = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let good: Vec<Vec<u8>> = (0..8)
        .map(|i| {
            tcp_frame(
                6000 + i,
                TcpFlags::ACK | TcpFlags::PSH,
                b"HTTP/1.1 200 OK\r\nDate: x",
            )
        })
        .collect();
    for i in 0..400 {
        let mut f = if i % 2 == 0 {
            (0..(rnd() % 120) as usize).map(|_| rnd() as u8).collect()
        } else {
            good[i % good.len()].clone()
        };
        if !f.is_empty() {
            for _ in 0..1 + rnd() % 4 {
                let at = (rnd() as usize) % f.len();
                f[at] = rnd() as u8;
            }
            if rnd() % 3 == 0 {
                f.truncate((rnd() as usize) % f.len());
            }
        }
        frames.push(f);
    }
    let n = frames.len() as u64;
    for (s, workers) in [
        (Strategy::Coarse, 1),
        (Strategy::Affinity, 2),
        (Strategy::Fine, 2),
    ] {
        let t = vec![frames.clone(); workers];
        // (under 2 workers both replay the same frames: only order-free facts are checked)
        let (_nf, r) = run_on(s, &t, quiet_config());
        conserved(&r, n * workers as u64);
        for (why, &k) in &expect {
            assert!(r.drops_of(why) >= k * workers as u64, "{why}\n{r}");
        }
    }
    // the crafted ones alone: exactly their reasons
    let only: Vec<Vec<u8>> = bad.iter().map(|(f, _)| f.clone()).collect();
    let (_nf, r) = run_on(Strategy::Fine, std::slice::from_ref(&only), quiet_config());
    conserved(&r, only.len() as u64);
    for (why, &k) in &expect {
        assert_eq!(r.drops_of(why), k, "{why}\n{r}");
    }
    assert_eq!(r.counter("tcp packets"), 0);
}

#[test]
fn a_full_table_drops_new_flows() {
    // six flows of three packets one after another, room for four
    let mut frames = Vec::new();
    for f in 0..6u16 {
        frames.push(tcp_frame(7000 + f, TcpFlags::SYN, b""));
        frames.push(tcp_frame(7000 + f, TcpFlags::ACK, b"abc"));
        frames.push(tcp_frame(7000 + f, TcpFlags::ACK, b"def"));
    }
    let cc = ClassifierConfig {
        capacity: 4,
        ..quiet_config()
    };
    let (_nf, r) = run_on(Strategy::Coarse, &[frames], cc);
    conserved(&r, 18);
    assert_eq!(r.drops_of("flow table full"), 6, "{r}");
    assert_eq!(r.counter("flows"), 4);
}

#[test]
fn idle_and_closed_flows_expire() {
    let cc = ClassifierConfig {
        idle_timeout: 10.0,
        closed_timeout: 1.0,
        sweep_buckets: usize::MAX,
        ..ClassifierConfig::default()
    };
    let nf = Classifier::new(&domain(Strategy::Fine, 1), cc).expect("classifier");
    let mut w = nf.worker(0);
    let mut pool = BufferPool::new(PoolConfig::default()).expect("pool");
    let hz = pktvec_graph::clock::tsc_hz();
    let t0 = (1000.0 * hz) as u64;
    let at = |s: f64| t0 + (s * hz) as u64;
    let mut send = |w: &mut pktvec_nf::classifier::ClassifierWorker, f: &[u8], now: u64| {
        let bi = pool.alloc_with(f).expect("buffer");
        let r = w.packet(&mut pool.packet_mut(bi), now);
        pool.free(bi);
        r
    };
    let open = tcp_frame(8000, TcpFlags::ACK, b"data");
    let closing = tcp_frame(8001, TcpFlags::ACK, b"data");
    let key = |f: &[u8]| FlowKey::of_frame(f).expect("tcp");
    send(&mut w, &open, at(0.0)).expect("ok");
    send(&mut w, &closing, at(0.0)).expect("ok");
    // FIN one way: not closed yet
    send(
        &mut w,
        &tcp_frame(8001, TcpFlags::FIN | TcpFlags::ACK, b""),
        at(0.1),
    )
    .expect("ok");
    w.after_vector(at(2.0));
    assert!(nf.flow(&key(&closing)).is_some());
    // a FIN back (a frame from the server side) closes it
    let mut back = tcp_frame(80, TcpFlags::FIN | TcpFlags::ACK, b"");
    back[34..36].copy_from_slice(&80u16.to_be_bytes());
    back[36..38].copy_from_slice(&8001u16.to_be_bytes());
    back[26..34].rotate_left(4); // swap the addresses (the IPv4 checksum is unchanged)
    assert_eq!(key(&back), key(&closing));
    send(&mut w, &back, at(2.0)).expect("ok");
    assert!(nf.flow(&key(&closing)).expect("live").closed);
    w.after_vector(at(2.5));
    assert!(nf.flow(&key(&closing)).is_some(), "closed 0.5 s ago");
    w.after_vector(at(3.1));
    assert!(nf.flow(&key(&closing)).is_none(), "closed 1.1 s ago");
    assert!(nf.flow(&key(&open)).is_some(), "idle 3.1 s");
    w.after_vector(at(10.5));
    assert!(nf.flow(&key(&open)).is_none(), "idle 10.5 s");
    let c: HashMap<_, _> = w.counters().into_iter().collect();
    assert_eq!(
        (c["flows expired"], c["flows closed"], c["flows"]),
        (2, 1, 2)
    );
    // it comes back as a new flow
    send(&mut w, &open, at(11.0)).expect("ok");
    assert!(nf.flow(&key(&open)).is_some());
}

#[test]
fn retransmissions_and_gaps_in_the_stream() {
    // the match split over segments, with a duplicate, an overlap and a gap in between
    let c = |seq: u32, p: &[u8]| {
        let mut f = tcp_frame(9000, TcpFlags::ACK, p);
        f[38..42].copy_from_slice(&seq.to_be_bytes());
        f
    };
    let frames = vec![
        c(100, b"POST /a"),
        c(100, b"POST /a"), // duplicate: skipped
        c(104, b" /a HT"),  // overlap: " HT" is new
        c(110, b"xx"),      // in order
        c(200, b"garbage"), // a gap: taken whole
    ];
    let rf = Reference::of(&frames, true);
    let f = rf.flows.values().next().expect("flow");
    assert_eq!(f.buf, b"POST /a HTxxgarbage");
    let (nf, r) = run_on(
        Strategy::Fine,
        std::slice::from_ref(&frames),
        quiet_config(),
    );
    conserved(&r, 5);
    assert_eq!(
        (r.counter("segments old"), r.counter("segments gap")),
        (1, 1),
        "{r}"
    );
    assert_eq!(r.counter("inspected bytes"), f.buf.len() as u64);
    agrees(&nf, &r, &rf);
    // the same bytes as one clean split match: " HTTP/1.1" over three segments
    let frames = vec![c(1, b"post /x H"), c(10, b"TTP/1"), c(15, b".1\r\n")];
    let rf = Reference::of(&frames, true);
    let (nf, r) = run_on(Strategy::Coarse, &[frames], quiet_config());
    assert_eq!(r.counter("flows http"), 1);
    agrees(&nf, &r, &rf);
}

// ----- a real capture ------------------------------------------------------------------

fn capture(name: &str) -> Option<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    [
        root.join("../shared/data/pcap"),
        root.join("../../shared/data/pcap"),
    ]
    .into_iter()
    .map(|d| d.join(name))
    .find(|p| p.exists())
}

#[test]
fn http_capture_matches_the_reference() {
    let Some(path) = capture("pcapplusplus/mixed/http-packets.pcap") else {
        eprintln!("capture not found: skipped");
        return;
    };
    let cap = pktvec_io::capture::read_capture(&path).expect("capture");
    let frames = cap.packets;
    let rf = Reference::of(&frames, true);
    let http = rf.flows.values().filter(|f| f.class == Class::Http).count();
    assert!(http > 0, "the capture has HTTP flows");
    for s in [Strategy::Fine, Strategy::Affinity] {
        let (nf, r) = run_on(s, std::slice::from_ref(&frames), quiet_config());
        conserved(&r, frames.len() as u64);
        agrees(&nf, &r, &rf);
        assert_eq!(r.counter("flows http"), http as u64);
        eprintln!("{r}");
    }
    // with the offloaded (unfilled) IPv4 checksums accepted, more packets count
    let cc = ClassifierConfig {
        verify_ipv4_checksum: false,
        ..quiet_config()
    };
    let rf = Reference::of(&frames, false);
    let (nf, r) = run_on(Strategy::Coarse, std::slice::from_ref(&frames), cc);
    conserved(&r, frames.len() as u64);
    agrees(&nf, &r, &rf);
}
