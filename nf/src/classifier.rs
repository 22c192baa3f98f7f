//! The flow classifier of the seed's run-to-completion NFs: it "performs a regular expression
//! matching on TCP packets, collects statistics on the number of bytes transferred and
//! monitors the packet rate for classified flows"; without a match the payloads are
//! reassembled and tested up to 500 bytes before the flow is marked non-matching. The
//! expression is the HTTP pattern of the Linux l7-filter ([`HTTP_PATTERN`]).
//!
//! * [`Classifier`] (shared) holds the [`Domain`], one [`FlowTable`] of [`FlowState`]s
//!   keyed by the TCP connection ([`FlowKey`]: both directions are one flow) and the
//!   pattern as a dense DFA, built once. [`ClassifierWorker`] is one worker's side.
//! * Each packet is one section over its flow's stripe: find or insert the flow, count its
//!   bytes and packets, update its rate (an exponentially weighted moving average of
//!   packets a second over the TSC), and while the flow is [`Class::Unknown`] run the DFA
//!   over the segment's new payload bytes, keeping the DFA state in the flow record.
//!   Nothing allocates per packet: the DFA is a table walk, one byte at a time.
//! * Streaming reassembly: matching segment by segment is the same as matching the
//!   concatenation of the flow's first [`ClassifierConfig::inspect_limit`] payload bytes,
//!   both directions in arrival order (as l7-filter appends them). Each direction keeps the
//!   next sequence number it expects (taken from the first segment seen; SYN and FIN count
//!   one): bytes before it are retransmissions and skipped (a segment of nothing but old
//!   bytes is counted in `segments old`), a segment starting beyond it (lost or reordered
//!   data) is taken whole and the expected number jumps to its end (`segments gap`).
//!   Nothing is buffered.
//! * A match makes the flow [`Class::Http`]; `inspect_limit` bytes without one make it
//!   [`Class::NotHttp`]; a flow that carried fewer bytes stays [`Class::Unknown`]. When a
//!   flow is decided, the bytes and packets it carried so far join its class's counters,
//!   then every later packet's do (so `http bytes` is the traffic of flows found to be
//!   HTTP; `tcp bytes` minus both classes is the traffic of undecided flows).
//! * Flows idle for [`ClassifierConfig::idle_timeout`] are expired by each worker's sweep
//!   after every vector; a flow closed by a RST, or by a FIN from both sides, expires after
//!   [`ClassifierConfig::closed_timeout`] instead (its last-seen time is set back so that
//!   the one idle sweep finds it early).
//! * Under flow affinity, [`Nf::owner`] is the owner of the flow's stripe, the same for
//!   both directions.
//! * Bad input is a counted drop ([`ClassifierError`]): not IPv4, bad IPv4 headers (short,
//!   lying lengths), bad IPv4 header checksums, fragments, other protocols than TCP, bad
//!   TCP headers, a full table. TCP checksums are not checked (captures taken on the
//!   sending host carry offloaded, unfilled ones).
//!
//! [`generate`] makes seeded TCP traffic with known classes (HTTP, near misses, late
//! matches, other protocols, short flows), skewed and bursty like the seed's traces.
//!
//! ```
//! use pktvec_nf::classifier::{generate, Class, Classifier, ClassifierConfig, TrafficConfig};
//! use pktvec_nf::runtime::{run, RunConfig};
//! use pktvec_state::{Domain, Strategy, SyncConfig};
//! use std::sync::Arc;
//!
//! let d = Domain::new(SyncConfig { strategy: Strategy::Fine, workers: 1, stripes: 64, ..SyncConfig::default() })?;
//! let cc = ClassifierConfig { closed_timeout: 30.0, ..ClassifierConfig::default() };
//! let nf = Arc::new(Classifier::new(&d, cc)?);
//! let tc = TrafficConfig { packets: 2_000, ..TrafficConfig::default() };
//! let traffic = generate(&tc, 0);
//! let n = traffic.frames.len() as u64;
//! let frames = traffic.frames.clone();
//! let cfg = RunConfig { packets_per_worker: n, pin: false, ..RunConfig::default() };
//! let r = run(&nf, move |_| frames.clone(), &cfg)?;
//! assert!(r.report.conservation().is_balanced());
//! assert_eq!(r.counter("tcp packets"), n);
//! // every completely sent flow got the class it was made to have
//! for f in traffic.flows.iter().filter(|f| f.complete) {
//!     assert_eq!(nf.flow(&f.key).map(|i| i.class), Some(f.expected));
//! }
//! assert!(r.counter("flows http") > 0 && r.counter("flows not-http") > 0);
//! # let _ = Class::Unknown;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::runtime::{Nf, NfWorker};
use pktvec_graph::{clock, node_errors};
use pktvec_packet::builder::PacketBuilder;
use pktvec_packet::wire::{parse_l2, EtherType, IpProtocol, Ipv4Packet, MacAddr, TcpFlags};
use pktvec_packet::PacketMut;
use pktvec_state::{Domain, FlowTable, TableConfig, TableWorker, WorkerSync};
use regex_automata::dfa::{dense, Automaton, StartKind};
use regex_automata::util::primitives::StateID;
use regex_automata::util::start;
use regex_automata::{Anchored, MatchKind};
use std::net::Ipv4Addr;
use std::sync::Arc;

/// The HTTP pattern of the Linux l7-filter (`http.pat`), matched case-insensitively over
/// bytes, unanchored: a status line followed by one of four headers, or a POST request line.
pub const HTTP_PATTERN: &str = r"http/(0\.9|1\.0|1\.1) [1-5][0-9][0-9] [\x09-\x0d -~]*(connection:|content-type:|content-length:|date:)|post [\x09-\x0d -~]* http/[01]\.[019]";

/// Payload bytes a flow is tested over before it is marked non-matching (the seed's 500).
pub const INSPECT_LIMIT: usize = 500;

/// A flow's class.
#[repr(u8)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Class {
    /// Fewer than the inspected bytes seen, no match yet.
    #[default]
    Unknown,
    /// The HTTP pattern matched.
    Http,
    /// The inspected bytes went by without a match.
    NotHttp,
}

impl Class {
    /// Its name in counters and reports (`unknown`, `http`, `not-http`).
    pub fn name(self) -> &'static str {
        match self {
            Class::Unknown => "unknown",
            Class::Http => "http",
            Class::NotHttp => "not-http",
        }
    }
}

impl std::fmt::Display for Class {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A TCP connection, the same for both directions: the endpoint with the smaller
/// (address, port) first.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FlowKey {
    /// The lower endpoint's address.
    pub lo_addr: u32,
    /// The lower endpoint's port.
    pub lo_port: u16,
    /// The higher endpoint's address.
    pub hi_addr: u32,
    /// The higher endpoint's port.
    pub hi_port: u16,
}

impl FlowKey {
    /// The key of a segment from `src:sport` to `dst:dport`, and its direction (0: from
    /// the lower endpoint, 1: from the higher).
    ///
    /// ```
    /// use pktvec_nf::classifier::FlowKey;
    /// use std::net::Ipv4Addr;
    /// let (a, b) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2));
    /// let (k1, d1) = FlowKey::new(a, 40000, b, 80);
    /// let (k2, d2) = FlowKey::new(b, 80, a, 40000);
    /// assert_eq!((k1, d1, d2), (k2, 0, 1));
    /// assert_eq!(k1.hash(), k2.hash());
    /// ```
    pub fn new(src: Ipv4Addr, sport: u16, dst: Ipv4Addr, dport: u16) -> (FlowKey, usize) {
        let (s, d) = ((u32::from(src), sport), (u32::from(dst), dport));
        if s <= d {
            (
                FlowKey {
                    lo_addr: s.0,
                    lo_port: s.1,
                    hi_addr: d.0,
                    hi_port: d.1,
                },
                0,
            )
        } else {
            (
                FlowKey {
                    lo_addr: d.0,
                    lo_port: d.1,
                    hi_addr: s.0,
                    hi_port: s.1,
                },
                1,
            )
        }
    }

    /// The flow's 64-bit hash (its low bits pick the stripe).
    #[inline]
    pub fn hash(&self) -> u64 {
        let a = (u64::from(self.lo_addr) << 32) | u64::from(self.hi_addr);
        let p = (u64::from(self.lo_port) << 16) | u64::from(self.hi_port);
        mix(a ^ mix(p ^ 0x6a09_e667_f3bc_c909))
    }

    /// The key of an Ethernet frame carrying IPv4/TCP (first fragments and whole
    /// datagrams; no checksum checked), `None` otherwise.
    pub fn of_frame(frame: &[u8]) -> Option<FlowKey> {
        parse(frame).ok().map(|s| s.key)
    }
}

/// The splitmix64 finaliser.
#[inline]
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// One flow's record in the table.
#[derive(Clone, Copy, Debug, Default)]
pub struct FlowState {
    class: Class,
    inspected: u32,
    dfa: u32,
    next_seq: [u32; 2],
    seq_known: [bool; 2],
    fin: [bool; 2],
    rst: bool,
    bytes: u64,
    packets: u64,
    rate_pps: f64,
    last_tsc: u64,
}

/// What [`Classifier::flow`] tells about a flow.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FlowInfo {
    /// Its class.
    pub class: Class,
    /// Payload bytes run through the pattern.
    pub inspected: u32,
    /// Frame bytes seen, both directions.
    pub bytes: u64,
    /// Packets seen, both directions.
    pub packets: u64,
    /// Packets a second, as the moving average stood at its last packet.
    pub rate_pps: f64,
    /// Closed by a RST or a FIN from both sides.
    pub closed: bool,
}

/// The classifier's settings.
#[derive(Clone, Debug)]
pub struct ClassifierConfig {
    /// Flows the table holds at most.
    pub capacity: usize,
    /// Seconds a flow may be idle before it expires.
    pub idle_timeout: f64,
    /// Seconds a closed flow (RST, or FIN both ways) stays (at most `idle_timeout`).
    pub closed_timeout: f64,
    /// Payload bytes tested before a flow is marked non-matching.
    pub inspect_limit: usize,
    /// Time constant of the rate's moving average, seconds.
    pub rate_window: f64,
    /// Table buckets each worker sweeps for expiry after each vector.
    pub sweep_buckets: usize,
    /// Drop IPv4 packets whose header checksum is wrong (`bad ipv4 checksum`).
    pub verify_ipv4_checksum: bool,
}

impl Default for ClassifierConfig {
    fn default() -> Self {
        ClassifierConfig {
            capacity: 1 << 16,
            idle_timeout: 30.0,
            closed_timeout: 2.0,
            inspect_limit: INSPECT_LIMIT,
            rate_window: 1.0,
            sweep_buckets: 8,
            verify_ipv4_checksum: true,
        }
    }
}

/// Why a classifier cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// The pattern did not compile to a DFA.
    #[error("the HTTP pattern: {0}")]
    Pattern(#[from] Box<regex_automata::dfa::dense::BuildError>),
    /// The DFA has no unanchored start state.
    #[error("the HTTP pattern's start state: {0}")]
    Start(#[from] regex_automata::dfa::StartError),
    /// Bad settings.
    #[error("classifier settings: {0}")]
    Config(String),
}

/// The l7-filter HTTP pattern as a dense DFA for unanchored, case-insensitive byte search.
///
/// ```
/// use pktvec_nf::classifier::http_dfa;
/// use regex_automata::dfa::Automaton;
/// use regex_automata::Input;
/// let dfa = http_dfa()?;
/// let hit = |s: &[u8]| dfa.try_search_fwd(&Input::new(s)).unwrap().is_some();
/// assert!(hit(b"xx HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"));
/// assert!(hit(b"post /form HTTP/1.0\r\n"));
/// assert!(!hit(b"HTTP/1.2 200 OK\r\nContent-Type: text/html\r\n"));
/// assert!(!hit(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"));
/// # Ok::<(), pktvec_nf::classifier::BuildError>(())
/// ```
pub fn http_dfa() -> Result<dense::DFA<Vec<u32>>, BuildError> {
    Ok(dense::Builder::new()
        .configure(
            dense::DFA::config()
                .start_kind(StartKind::Unanchored)
                .match_kind(MatchKind::All)
                .minimize(false),
        )
        .syntax(
            regex_automata::util::syntax::Config::new()
                .case_insensitive(true)
                .unicode(false)
                .utf8(false),
        )
        .thompson(regex_automata::nfa::thompson::Config::new().utf8(false))
        .build(HTTP_PATTERN)
        .map_err(Box::new)?)
}

/// What every worker shares.
struct Shared {
    domain: Arc<Domain>,
    table: FlowTable<FlowKey, FlowState>,
    dfa: dense::DFA<Vec<u32>>,
    start: StateID,
    cfg: ClassifierConfig,
    idle_ticks: u64,
    closed_backdate: u64,
    tau_ticks: f64,
}

/// The classifier NF (see the [module documentation](self)).
pub struct Classifier {
    shared: Arc<Shared>,
}

impl Classifier {
    /// A classifier over `domain` with its table and its DFA.
    pub fn new(domain: &Arc<Domain>, cfg: ClassifierConfig) -> Result<Classifier, BuildError> {
        let ok = |x: f64| x.is_finite() && x > 0.0;
        if !ok(cfg.idle_timeout) || !ok(cfg.closed_timeout) || !ok(cfg.rate_window) {
            return Err(BuildError::Config(format!(
                "timeouts and rate window must be positive seconds: idle {}, closed {}, rate {}",
                cfg.idle_timeout, cfg.closed_timeout, cfg.rate_window
            )));
        }
        if cfg.inspect_limit > u32::MAX as usize || cfg.capacity == 0 {
            return Err(BuildError::Config(format!(
                "inspect limit {} and capacity {}",
                cfg.inspect_limit, cfg.capacity
            )));
        }
        let dfa = http_dfa()?;
        let start = dfa.start_state(&start::Config::new().anchored(Anchored::No))?;
        let hz = clock::tsc_hz();
        let idle_ticks = (cfg.idle_timeout * hz) as u64;
        let closed_ticks = ((cfg.closed_timeout * hz) as u64).min(idle_ticks);
        let table = FlowTable::new(
            domain,
            "classifier flows",
            TableConfig {
                capacity: cfg.capacity,
                ..TableConfig::default()
            },
        );
        Ok(Classifier {
            shared: Arc::new(Shared {
                domain: domain.clone(),
                table,
                dfa,
                start,
                idle_ticks,
                closed_backdate: idle_ticks - closed_ticks,
                tau_ticks: cfg.rate_window * hz,
                cfg,
            }),
        })
    }

    /// The settings.
    pub fn config(&self) -> &ClassifierConfig {
        &self.shared.cfg
    }

    /// What the table holds about `key` (looked up by the worker owning its stripe; not
    /// for the fast path), `None` if it holds nothing (never seen, or expired).
    pub fn flow(&self, key: &FlowKey) -> Option<FlowInfo> {
        let sh = &*self.shared;
        let h = key.hash();
        let stripe = sh.table.stripe(h);
        let mut sync = sh.domain.worker(sh.domain.owner(stripe));
        sync.section(stripe, |sec| {
            sh.table.find(sec, key, h).map(|(_, s)| FlowInfo {
                class: s.class,
                inspected: s.inspected,
                bytes: s.bytes,
                packets: s.packets,
                rate_pps: s.rate_pps,
                closed: s.rst || (s.fin[0] && s.fin[1]),
            })
        })
    }
}

impl Nf for Classifier {
    type Worker = ClassifierWorker;
    const NAME: &'static str = "classifier";

    fn domain(&self) -> &Arc<Domain> {
        &self.shared.domain
    }

    fn worker(&self, id: usize) -> ClassifierWorker {
        ClassifierWorker {
            sync: self.shared.domain.worker(id),
            tw: self.shared.table.worker(id),
            shared: self.shared.clone(),
            c: Counters::default(),
        }
    }

    fn owner(&self, frame: &[u8]) -> Option<usize> {
        let key = FlowKey::of_frame(frame)?;
        let d = &self.shared.domain;
        Some(d.owner(self.shared.table.stripe(key.hash())))
    }
}

node_errors! {
    /// Why the classifier drops packets.
    pub enum ClassifierError {
        /// Shorter than an Ethernet header, or more than two VLAN tags.
        BadEthernet = "bad ethernet header",
        /// Not IPv4.
        NotIpv4 = "not ipv4",
        /// An IPv4 header that is short, or whose lengths lie.
        BadIpv4 = "bad ipv4 header",
        /// A wrong IPv4 header checksum.
        BadChecksum = "bad ipv4 checksum",
        /// An IPv4 fragment (not reassembled).
        Fragment = "ipv4 fragment",
        /// IPv4 carrying another protocol than TCP.
        NotTcp = "not tcp",
        /// A TCP header that is short or whose data offset lies.
        BadTcp = "bad tcp header",
        /// No record left for a new flow.
        TableFull = "flow table full",
    }
}

/// A parsed segment.
struct Segment {
    key: FlowKey,
    dir: usize,
    seq: u32,
    flags: TcpFlags,
    payload: std::ops::Range<usize>,
}

/// Parses an Ethernet/IPv4/TCP frame (checksum not checked here).
fn parse(frame: &[u8]) -> Result<Segment, ClassifierError> {
    parse_checked(frame, false)
}

fn parse_checked(frame: &[u8], checksum: bool) -> Result<Segment, ClassifierError> {
    let l2 = parse_l2(frame).map_err(|_| ClassifierError::BadEthernet)?;
    if l2.ethertype != EtherType::IPV4 {
        return Err(ClassifierError::NotIpv4);
    }
    let l3 = usize::from(l2.l3_offset);
    let ip = Ipv4Packet::new_checked(&frame[l3..]).map_err(|_| ClassifierError::BadIpv4)?;
    if checksum && !ip.verify_checksum() {
        return Err(ClassifierError::BadChecksum);
    }
    if ip.more_frags() || ip.frag_offset() != 0 {
        return Err(ClassifierError::Fragment);
    }
    if ip.protocol() != IpProtocol::TCP {
        return Err(ClassifierError::NotTcp);
    }
    let l4 = l3 + ip.header_len();
    let end = l3 + usize::from(ip.total_len());
    let tcp = frame.get(l4..end).ok_or(ClassifierError::BadIpv4)?;
    if tcp.len() < 20 {
        return Err(ClassifierError::BadTcp);
    }
    let hl = usize::from(tcp[12] >> 4) * 4;
    if hl < 20 || hl > tcp.len() {
        return Err(ClassifierError::BadTcp);
    }
    let be16 = |i: usize| u16::from_be_bytes([tcp[i], tcp[i + 1]]);
    let (key, dir) = FlowKey::new(ip.src_addr(), be16(0), ip.dst_addr(), be16(2));
    Ok(Segment {
        key,
        dir,
        seq: u32::from_be_bytes([tcp[4], tcp[5], tcp[6], tcp[7]]),
        flags: TcpFlags(tcp[13]),
        payload: l4 + hl..end,
    })
}

/// One worker's counts (summed over workers by name).
#[derive(Clone, Copy, Debug, Default)]
struct Counters {
    tcp_packets: u64,
    tcp_bytes: u64,
    http_packets: u64,
    http_bytes: u64,
    not_http_packets: u64,
    not_http_bytes: u64,
    flows: u64,
    flows_http: u64,
    flows_not_http: u64,
    flows_closed: u64,
    inspected: u64,
    segments_old: u64,
    segments_gap: u64,
}

/// What one packet's section did (applied to the counters after it, so a section that
/// runs more than once counts once).
#[derive(Clone, Copy, Default)]
struct Outcome {
    new: bool,
    class: Class,
    /// Decided by this packet: the flow's bytes and packets so far.
    decided: Option<(u64, u64)>,
    inspected: u32,
    old: bool,
    gap: bool,
    closed_now: bool,
}

/// One worker's side of the [`Classifier`].
pub struct ClassifierWorker {
    sync: WorkerSync,
    tw: TableWorker,
    shared: Arc<Shared>,
    c: Counters,
}

impl ClassifierWorker {
    /// Runs the DFA over `bytes` from `state`: the new state and whether the pattern
    /// matched within them (a match ending at their end included).
    #[inline]
    fn scan(dfa: &dense::DFA<Vec<u32>>, mut state: StateID, bytes: &[u8]) -> (StateID, bool) {
        for &b in bytes {
            state = dfa.next_state(state, b);
            if dfa.is_match_state(state) {
                return (state, true);
            }
        }
        let eoi = dfa.next_eoi_state(state);
        (state, dfa.is_match_state(eoi))
    }
}

impl NfWorker for ClassifierWorker {
    type Error = ClassifierError;

    fn packet(&mut self, pkt: &mut PacketMut<'_>, now: u64) -> Result<(), ClassifierError> {
        let sh = &*self.shared;
        let frame = pkt.data();
        let seg = parse_checked(frame, sh.cfg.verify_ipv4_checksum)?;
        let len = frame.len() as u64;
        let payload = &frame[seg.payload.clone()];
        let hash = seg.key.hash();
        let tw = &mut self.tw;
        let out = self.sync.section(sh.table.stripe(hash), |sec| {
            let (_, st, new) = sh.table.entry(sec, tw, seg.key, hash, now).ok()?;
            let mut o = Outcome {
                new,
                ..Outcome::default()
            };
            if new {
                st.dfa = sh.start.as_u32();
                st.rate_pps = 0.0;
            } else {
                let dt = now.saturating_sub(st.last_tsc) as f64;
                st.rate_pps *= (-dt / sh.tau_ticks).exp();
            }
            st.rate_pps += 1.0 / sh.cfg.rate_window;
            st.last_tsc = now;
            st.bytes += len;
            st.packets += 1;
            let d = seg.dir;
            let was_closed = st.rst || (st.fin[0] && st.fin[1]);
            if st.class == Class::Unknown {
                let syn = u32::from(seg.flags.contains(TcpFlags::SYN));
                let fin = u32::from(seg.flags.contains(TcpFlags::FIN));
                let data_seq = seg.seq.wrapping_add(syn);
                if !st.seq_known[d] {
                    st.next_seq[d] = data_seq;
                    st.seq_known[d] = true;
                }
                let ahead = data_seq.wrapping_sub(st.next_seq[d]) as i32;
                let old = if ahead < 0 {
                    ahead.unsigned_abs() as usize
                } else {
                    0
                };
                o.gap = ahead > 0;
                if old < payload.len() || ahead >= 0 {
                    st.next_seq[d] = data_seq
                        .wrapping_add(payload.len() as u32)
                        .wrapping_add(fin);
                    let fresh = payload.get(old..).unwrap_or(&[]);
                    let room = sh.cfg.inspect_limit.saturating_sub(st.inspected as usize);
                    let chunk = &fresh[..fresh.len().min(room)];
                    let state = StateID::new_unchecked(st.dfa as usize);
                    let (state, hit) = Self::scan(&sh.dfa, state, chunk);
                    st.dfa = state.as_u32();
                    st.inspected += chunk.len() as u32;
                    o.inspected = chunk.len() as u32;
                    if hit {
                        st.class = Class::Http;
                    } else if st.inspected as usize >= sh.cfg.inspect_limit {
                        st.class = Class::NotHttp;
                    }
                    if st.class != Class::Unknown {
                        o.decided = Some((st.bytes, st.packets));
                    }
                } else {
                    o.old = !payload.is_empty();
                }
            }
            if seg.flags.contains(TcpFlags::RST) {
                st.rst = true;
            }
            if seg.flags.contains(TcpFlags::FIN) {
                st.fin[d] = true;
            }
            o.class = st.class;
            let closed = st.rst || (st.fin[0] && st.fin[1]);
            o.closed_now = closed && !was_closed;
            if closed {
                // set the last-seen time back so the idle sweep takes it after the
                // closed timeout
                let back = now.saturating_sub(sh.closed_backdate);
                let _ = sh.table.find_mut(sec, &seg.key, hash, back);
            }
            Some(o)
        });
        let Some(o) = out else {
            return Err(ClassifierError::TableFull);
        };
        let c = &mut self.c;
        c.tcp_packets += 1;
        c.tcp_bytes += len;
        c.flows += u64::from(o.new);
        c.inspected += u64::from(o.inspected);
        c.segments_old += u64::from(o.old);
        c.segments_gap += u64::from(o.gap);
        c.flows_closed += u64::from(o.closed_now);
        let (bytes, packets) = o.decided.unwrap_or((len, 1));
        match o.class {
            Class::Http => {
                c.http_bytes += bytes;
                c.http_packets += packets;
                c.flows_http += u64::from(o.decided.is_some());
            }
            Class::NotHttp => {
                c.not_http_bytes += bytes;
                c.not_http_packets += packets;
                c.flows_not_http += u64::from(o.decided.is_some());
            }
            Class::Unknown => {}
        }
        Ok(())
    }

    fn after_vector(&mut self, now: u64) {
        let sh = &*self.shared;
        sh.table.expire(
            &mut self.sync,
            &mut self.tw,
            now,
            sh.idle_ticks,
            sh.cfg.sweep_buckets,
            |_, _, _| {},
        );
    }

    fn sync(&mut self) -> &mut WorkerSync {
        &mut self.sync
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        let c = &self.c;
        vec![
            ("tcp packets", c.tcp_packets),
            ("tcp bytes", c.tcp_bytes),
            ("http packets", c.http_packets),
            ("http bytes", c.http_bytes),
            ("not-http packets", c.not_http_packets),
            ("not-http bytes", c.not_http_bytes),
            ("flows", c.flows),
            ("flows http", c.flows_http),
            ("flows not-http", c.flows_not_http),
            ("flows closed", c.flows_closed),
            ("flows expired", self.tw.expired),
            ("inspected bytes", c.inspected),
            ("segments old", c.segments_old),
            ("segments gap", c.segments_gap),
        ]
    }
}

// ---------------------------------------------------------------------------------------
// Traffic
// ---------------------------------------------------------------------------------------

/// What a generated flow carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FlowKind {
    /// GET requests answered by HTTP responses (status line, then a header the pattern
    /// names): [`Class::Http`].
    Http,
    /// A POST request line: [`Class::Http`] from the client's first segment.
    Post,
    /// Almost HTTP (HTTP/1.2, a DEL or NUL byte before the header, RTSP, HTTP/2.0
    /// POST, no named header): [`Class::NotHttp`] past the limit, else unknown.
    NearMiss,
    /// Binary bytes first, then an HTTP response whose match ends around the limit:
    /// HTTP if it ends within it, else [`Class::NotHttp`].
    LateHttp,
    /// Another protocol's bytes (no ASCII letters), past the limit: [`Class::NotHttp`].
    Binary,
    /// A short exchange under the limit: [`Class::Unknown`].
    Short,
}

/// What one generated flow is.
#[derive(Clone, Debug)]
pub struct GeneratedFlow {
    /// Its key.
    pub key: FlowKey,
    /// What it carries.
    pub kind: FlowKind,
    /// The class it was made to have once all its packets went by.
    pub expected: Class,
    /// Its packets in the trace.
    pub packets: usize,
    /// Whether all its packets are in the trace (the trace stops at its length).
    pub complete: bool,
}

/// Generated traffic: the frames in order and each flow's ground truth.
#[derive(Clone, Debug, Default)]
pub struct Traffic {
    /// Ethernet/IPv4/TCP frames.
    pub frames: Vec<Vec<u8>>,
    /// Every flow started, by start.
    pub flows: Vec<GeneratedFlow>,
}

/// How to generate traffic.
#[derive(Clone, Debug)]
pub struct TrafficConfig {
    /// Frames per worker.
    pub packets: usize,
    /// Flows open at once (the trace interleaves them; fewer: more packets of one flow
    /// close together).
    pub concurrency: usize,
    /// Share of flows that are HTTP (GET or POST); the rest are near misses, late
    /// matches, other protocols and short exchanges.
    pub http_share: f64,
    /// Zipf exponent of the open flows' popularity.
    pub skew: f64,
    /// Chance that a flow, once picked, sends a burst of 2–6 packets.
    pub burst: f64,
    /// The seed (worker `w` uses `seed + w`).
    pub seed: u64,
}

impl Default for TrafficConfig {
    fn default() -> Self {
        TrafficConfig {
            packets: 100_000,
            concurrency: 1024,
            http_share: 0.5,
            skew: 0.5,
            burst: 0.1,
            seed: 1,
        }
    }
}

/// A small deterministic generator (splitmix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        mix(self.0)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }
    fn chance(&mut self, p: f64) -> bool {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64 <= p
    }
    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.below(xs.len())]
    }
}

/// One packet of a flow to send: direction (0 client to server), flags, payload.
struct Planned {
    from_server: bool,
    flags: TcpFlags,
    payload: Vec<u8>,
}

/// A flow being sent.
struct Live {
    index: usize,
    client: (Ipv4Addr, u16),
    server: (Ipv4Addr, u16),
    seq: [u32; 2],
    plan: Vec<Planned>,
    next: usize,
}

/// `n` bytes no part of the pattern can match (no ASCII letters or digits).
fn binary(rng: &mut Rng, n: usize) -> Vec<u8> {
    (0..n).map(|_| 0x80 | (rng.next() as u8 & 0x7f)).collect()
}

/// Printable filler without the pattern's words.
fn text(rng: &mut Rng, n: usize) -> Vec<u8> {
    const WORDS: &[&str] = &[
        "lorem ", "ipsum ", "pktvec ", "vector ", "graph ", "<p>", "</p>\n",
    ];
    let mut v = Vec::with_capacity(n + 8);
    while v.len() < n {
        v.extend_from_slice(rng.pick(WORDS).as_bytes());
    }
    v.truncate(n);
    v
}

fn request(rng: &mut Rng, i: usize) -> Vec<u8> {
    let path = rng.pick(&[
        "/",
        "/index.html",
        "/api/v1/items",
        "/static/app.js",
        "/img/logo.png",
    ]);
    format!(
        "GET {path}?q={i} HTTP/1.1\r\nHost: www{}.example.org\r\nUser-Agent: pktvec-gen/1.0\r\nAccept: */*\r\n\r\n",
        i % 97
    )
    .into_bytes()
}

fn response(rng: &mut Rng, body: usize) -> Vec<u8> {
    let version = rng.pick(&["HTTP/1.1", "HTTP/1.0", "http/1.1"]);
    let status = rng.pick(&[
        "200 OK",
        "301 Moved Permanently",
        "404 Not Found",
        "500 Oops",
    ]);
    let header = rng.pick(&[
        "Content-Type: text/html",
        "content-type: text/plain; charset=utf-8",
        "Date: Tue, 15 Nov 1994 08:12:31 GMT",
        "Connection: keep-alive",
        "CONTENT-LENGTH: 10",
    ]);
    let mut v = format!("{version} {status}\r\nServer: gen\r\n{header}\r\n\r\n").into_bytes();
    v.extend(text(rng, body));
    v
}

/// Splits `bytes` into segments of at most `mss` (at least 1).
fn segments(bytes: &[u8], mss: usize) -> impl Iterator<Item = &[u8]> {
    bytes.chunks(mss.max(1))
}

/// Builds flow `i`'s packets and the class it should end with.
fn plan(rng: &mut Rng, kind: FlowKind, i: usize) -> (Vec<Planned>, Class) {
    let mut p = vec![
        Planned {
            from_server: false,
            flags: TcpFlags::SYN,
            payload: Vec::new(),
        },
        Planned {
            from_server: true,
            flags: TcpFlags::SYN | TcpFlags::ACK,
            payload: Vec::new(),
        },
        Planned {
            from_server: false,
            flags: TcpFlags::ACK,
            payload: Vec::new(),
        },
    ];
    let mss = rng.range(24, 700);
    let send = |p: &mut Vec<Planned>, from_server: bool, bytes: &[u8]| {
        for s in segments(bytes, mss) {
            p.push(Planned {
                from_server,
                flags: TcpFlags::ACK | TcpFlags::PSH,
                payload: s.to_vec(),
            });
        }
    };
    let mut total = 0usize;
    let expected = match kind {
        FlowKind::Http => {
            for _ in 0..rng.range(1, 3) {
                send(&mut p, false, &request(rng, i));
                let body = rng.range(0, 3000);
                send(&mut p, true, &response(rng, body));
            }
            Class::Http
        }
        FlowKind::Post => {
            let n = rng.range(10, 400);
            let body = text(rng, n);
            let mut req = format!(
                "POST /submit/{i} HTTP/1.{}\r\nHost: forms.example.org\r\nContent-Length: {}\r\n\r\n",
                rng.pick(&["0", "1"]),
                body.len()
            )
            .into_bytes();
            req.extend(body);
            send(&mut p, false, &req);
            send(&mut p, true, b"HTTP/1.1 204 No Content\r\n\r\n");
            Class::Http
        }
        FlowKind::NearMiss => {
            let miss: &[u8] = match rng.below(6) {
                0 => b"HTTP/1.2 200 OK\r\nContent-Type: text/html\r\n\r\n",
                1 => b"HTTP/1.1 200 OK\r\n\x7fContent-Type: text/html\r\n\r\n",
                2 => b"HTTP/1.1 200 OK\r\n\x00Date: Tue, 15 Nov 1994 08:12:31 GMT\r\n\r\n",
                3 => b"RTSP/1.0 200 OK\r\nContent-Type: application/sdp\r\n\r\n",
                4 => b"HTTP/1.1 600 Odd\r\nConnection: close\r\n\r\n",
                _ => b"HTTP/1.1 200 OK\r\nServer: gen\r\nX-Content-Typo: none\r\n\r\n",
            };
            let req: Vec<u8> = if rng.chance(0.5) {
                b"POST /x HTTP/2.0\r\nHost: h\r\n\r\n".to_vec()
            } else {
                b"OPTIONS rtsp://media.example.org/ RTSP/1.0\r\nCSeq: 1\r\n\r\n".to_vec()
            };
            send(&mut p, false, &req);
            let mut resp = miss.to_vec();
            let body = rng.range(0, 1200);
            resp.extend(text(rng, body));
            send(&mut p, true, &resp);
            total += req.len() + resp.len();
            if total >= INSPECT_LIMIT {
                Class::NotHttp
            } else {
                Class::Unknown
            }
        }
        FlowKind::LateHttp => {
            let lead = rng.range(440, 500);
            send(&mut p, false, &binary(rng, lead));
            let mut resp = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n".to_vec();
            resp.extend(text(rng, 200));
            send(&mut p, true, &resp);
            // "HTTP/1.1 200 OK\r\nContent-Type:" is 30 bytes
            if lead + 30 <= INSPECT_LIMIT {
                Class::Http
            } else {
                Class::NotHttp
            }
        }
        FlowKind::Binary => {
            for _ in 0..rng.range(1, 4) {
                let a = rng.range(40, 400);
                send(&mut p, false, &binary(rng, a));
                let b = rng.range(500, 2500);
                send(&mut p, true, &binary(rng, b));
            }
            Class::NotHttp
        }
        FlowKind::Short => {
            let hello = format!("SSH-2.0-gen_{}\r\n", i % 1000).into_bytes();
            send(&mut p, true, &hello);
            send(&mut p, false, b"SSH-2.0-client\r\n");
            let n = rng.range(0, 200);
            send(&mut p, false, &binary(rng, n));
            Class::Unknown
        }
    };
    let (first, second) = if rng.chance(0.5) {
        (false, true)
    } else {
        (true, false)
    };
    p.push(Planned {
        from_server: first,
        flags: TcpFlags::FIN | TcpFlags::ACK,
        payload: Vec::new(),
    });
    p.push(Planned {
        from_server: second,
        flags: TcpFlags::FIN | TcpFlags::ACK,
        payload: Vec::new(),
    });
    p.push(Planned {
        from_server: first,
        flags: TcpFlags::ACK,
        payload: Vec::new(),
    });
    (p, expected)
}

/// Seeded TCP traffic for `worker`: flows open `cfg.concurrency` at a time, picked by a
/// Zipf popularity over the open slots and sometimes in bursts, each flow's packets in
/// order (handshake, requests and responses split into segments of a per-flow size,
/// closing FINs). Flows of different workers never share a key (the worker is in the
/// client's address), so each worker's flows stay in order whichever worker runs them.
/// The trace stops after `cfg.packets` frames.
///
/// ```
/// use pktvec_nf::classifier::{generate, FlowKey, TrafficConfig};
/// use pktvec_nf::runtime::same_flow_share;
/// let t = generate(&TrafficConfig { packets: 5_000, ..TrafficConfig::default() }, 0);
/// assert_eq!(t.frames.len(), 5_000);
/// let share = same_flow_share(&t.frames, 100, |f| FlowKey::of_frame(f).map(|k| k.hash()));
/// assert!((0.2..=0.4).contains(&share), "{share}");
/// ```
pub fn generate(cfg: &TrafficConfig, worker: usize) -> Traffic {
    let mut rng = Rng(cfg
        .seed
        .wrapping_add(worker as u64)
        .wrapping_mul(0x2545_f491_4f6c_dd1d));
    let slots = cfg.concurrency.max(1);
    // Zipf weights over slots, as a cumulative table
    let mut cum = Vec::with_capacity(slots);
    let mut acc = 0.0;
    for s in 0..slots {
        acc += 1.0 / ((s + 1) as f64).powf(cfg.skew);
        cum.push(acc);
    }
    let mut out = Traffic::default();
    let mut live: Vec<Option<Live>> = (0..slots).map(|_| None).collect();
    let (cmac, smac) = (MacAddr([2, 0, 0, 0, 0, 1]), MacAddr([2, 0, 0, 0, 0, 2]));
    let other = [
        FlowKind::NearMiss,
        FlowKind::LateHttp,
        FlowKind::Binary,
        FlowKind::Short,
    ];
    let start = |rng: &mut Rng, flows: &mut Vec<GeneratedFlow>| -> Live {
        let i = flows.len();
        let kind = if rng.chance(cfg.http_share) {
            if rng.chance(0.2) {
                FlowKind::Post
            } else {
                FlowKind::Http
            }
        } else {
            other[rng.below(other.len())]
        };
        let client = (
            Ipv4Addr::new(10, (worker % 256) as u8, (i >> 8) as u8, i as u8),
            1024 + ((i >> 16) % 60_000) as u16,
        );
        let server = (
            Ipv4Addr::new(192, 168, (worker % 256) as u8, 1 + rng.below(32) as u8),
            *[80u16, 8080, 443, 22, 554][..]
                .get(rng.below(5))
                .unwrap_or(&80),
        );
        let (p, expected) = plan(rng, kind, i);
        let (key, _) = FlowKey::new(client.0, client.1, server.0, server.1);
        flows.push(GeneratedFlow {
            key,
            kind,
            expected,
            packets: 0,
            complete: false,
        });
        Live {
            index: i,
            client,
            server,
            seq: [rng.next() as u32, rng.next() as u32],
            plan: p,
            next: 0,
        }
    };
    while out.frames.len() < cfg.packets {
        let x = (rng.next() >> 11) as f64 / (1u64 << 53) as f64 * acc;
        let slot = cum.partition_point(|&c| c < x).min(slots - 1);
        let burst = if rng.chance(cfg.burst) {
            rng.range(2, 6)
        } else {
            1
        };
        for _ in 0..burst {
            if out.frames.len() >= cfg.packets {
                break;
            }
            if live[slot].is_none() {
                live[slot] = Some(start(&mut rng, &mut out.flows));
            }
            let Some(f) = live[slot].as_mut() else {
                break;
            };
            let Some(pk) = f.plan.get(f.next) else {
                break;
            };
            let d = usize::from(pk.from_server);
            let (src, dst) = if pk.from_server {
                (f.server, f.client)
            } else {
                (f.client, f.server)
            };
            let (sm, dm) = if pk.from_server {
                (smac, cmac)
            } else {
                (cmac, smac)
            };
            let ack = if pk.flags.contains(TcpFlags::ACK) {
                f.seq[1 - d]
            } else {
                0
            };
            let frame = PacketBuilder::ethernet(sm, dm)
                .ipv4(src.0, dst.0)
                .tcp(src.1, dst.1, pk.flags)
                .tcp_seq_ack(f.seq[d], ack)
                .payload(&pk.payload)
                .build();
            let used = pk.payload.len() as u32
                + u32::from(pk.flags.contains(TcpFlags::SYN))
                + u32::from(pk.flags.contains(TcpFlags::FIN));
            f.seq[d] = f.seq[d].wrapping_add(used);
            out.frames.push(frame);
            f.next += 1;
            let gf = &mut out.flows[f.index];
            gf.packets += 1;
            if f.next == f.plan.len() {
                gf.complete = true;
                live[slot] = None;
                break;
            }
        }
    }
    out
}
