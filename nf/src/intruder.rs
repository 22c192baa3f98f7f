//! An intruder detector in the style of STAMP's `intruder`, as the seed adapted it
//! ("Intruder2"): flows send messages of at most [`MAX_MESSAGE`] bytes, each cut into at
//! most [`MAX_FRAGMENTS`] fragments carried in IPv4/UDP packets to [`PORT`]; the detector
//! reassembles every message in a shared table and scans it for known attack
//! [`SIGNATURES`].
//!
//! Each fragment is processed in two synchronisation phases on its flow's stripe, as in
//! the seed:
//!
//! 1. a section updates the flow's per-packet state ([`FlowState`]) and copies the
//!    fragment into the message's [`Reassembly`] (a fixed array, a bitmap of the
//!    fragments received and one of the bytes covered: no allocation); when the message
//!    is complete it is copied out to the worker's own buffer and its reassembly record
//!    freed;
//! 2. outside any section, the complete message is scanned with an Aho–Corasick automaton
//!    built at start (searching does not allocate);
//! 3. a second section on the same stripe updates the flow's detection counters and
//!    verdict.
//!
//! Reassemblies are keyed by (flow, message) ([`MessageKey`]), so a flow's next message
//! may start before its previous one is complete, and the fragments of one message may
//! reach different workers (without flow affinity they do): they meet in the shared
//! table. Every hash of a flow's records has the flow's stripe in its low bits, so
//! [`Nf::owner`] (the stripe's owner, from the flow id in the payload) is where all of
//! them live under flow affinity. Incomplete reassemblies are expired after an idle
//! timeout (counted as `reassembly timeout`), idle flows after another.
//!
//! Malformed frames (truncated headers, lying IPv4/UDP/fragment lengths, bad checksums,
//! fragment index ≥ count, offsets past the message, inconsistent, duplicate or
//! overlapping fragments, messages with holes) are counted drops ([`IntruderError`]);
//! valid fragments are forwarded.
//!
//! [`generate`] makes seeded traffic with a known answer ([`Traffic::attacks`]).
//!
//! ```
//! use pktvec_nf::intruder::{generate, Intruder, IntruderConfig, TrafficConfig};
//! use pktvec_nf::runtime::{run, RunConfig};
//! use pktvec_state::{Domain, Strategy, SyncConfig};
//! use std::sync::Arc;
//!
//! let d = Domain::new(SyncConfig { strategy: Strategy::Fine, workers: 1, stripes: 64, ..SyncConfig::default() })?;
//! let nf = Arc::new(Intruder::new(&d, IntruderConfig::default())?);
//! let t = generate(&TrafficConfig { packets: 1000, seed: 7, ..TrafficConfig::default() });
//! let frames = t.frames.clone();
//! let cfg = RunConfig { packets_per_worker: 1000, pin: false, buffers: 1024, ..RunConfig::default() };
//! let r = run(&nf, move |_| frames.clone(), &cfg)?;
//! assert_eq!(r.counter("messages"), t.messages);
//! assert_eq!(nf.detected(), t.attacks); // exactly the attacks the generator sent
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::runtime::{Nf, NfWorker};
use aho_corasick::AhoCorasick;
use pktvec_graph::{clock, node_errors};
use pktvec_packet::builder::PacketBuilder;
use pktvec_packet::wire::{parse_l2, EtherType, IpProtocol, Ipv4Packet, MacAddr, UdpPacket};
use pktvec_packet::PacketMut;
use pktvec_state::{Domain, FlowTable, TableConfig, TableWorker, WorkerSync};
use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The UDP destination port the detector's traffic is sent to.
pub const PORT: u16 = 7470;
/// Longest message (bytes).
pub const MAX_MESSAGE: usize = 128;
/// Most fragments a message is cut into.
pub const MAX_FRAGMENTS: usize = 4;
/// The fragment header after the UDP header: flow u32, message u32, index u8, count u8,
/// total length u16, offset u16, fragment length u16 (big-endian).
pub const HEADER_LEN: usize = 16;

/// The known attacks: every one holds a byte outside [`ALPHABET`], so random message
/// bytes can never contain one by chance.
pub const SIGNATURES: [&[u8]; 10] = [
    b"/bin/sh -c",
    b"\x90\x90\x90\x90\x90\x90\x90\x90",
    b"cmd.exe /c",
    b"' OR 1=1 --",
    b"../../etc/passwd",
    b"<script>alert(",
    b"DROP TABLE",
    b"%n%n%n%n",
    b"wget http://",
    b"SELECT * FROM",
];

/// The bytes of benign message text (and of the text around an attack).
pub const ALPHABET: &[u8; 26] = b"abcdefghijklmnopqrstuvwxyz";

node_errors! {
    /// Why the detector drops packets.
    pub enum IntruderError {
        /// Not Ethernet/IPv4 (or the Ethernet/VLAN header is truncated).
        NotIpv4 = "intruder: not ipv4",
        /// The IPv4 header is truncated, or its header or total length lies.
        BadIpv4 = "intruder: bad ipv4 header",
        /// IPv4 or UDP checksum wrong.
        BadChecksum = "intruder: bad checksum",
        /// Not UDP to the detector's port, or an IP fragment.
        NotIntruder = "intruder: not intruder traffic",
        /// The UDP header is truncated or its length lies.
        BadUdp = "intruder: bad udp length",
        /// The payload is shorter than the fragment header.
        Truncated = "intruder: truncated fragment header",
        /// The fragment length field disagrees with the UDP payload.
        BadLength = "intruder: fragment length disagrees with udp length",
        /// Count 0 or above 4, index ≥ count, total 0 or above 128, empty fragment, or
        /// offset + length past the total.
        BadFields = "intruder: bad fragment index, count, offset or length",
        /// Count or total length differ from the message's earlier fragments.
        Inconsistent = "intruder: fragment disagrees with its message",
        /// This fragment index was received already.
        Duplicate = "intruder: duplicate fragment",
        /// Its bytes overlap bytes received already.
        Overlap = "intruder: overlapping fragment",
        /// Every fragment arrived but they leave holes: the message is discarded.
        Gap = "intruder: reassembled message has holes",
        /// No reassembly record left.
        ReassemblyFull = "intruder: reassembly table full",
        /// No flow record left.
        FlowFull = "intruder: flow table full",
    }
}

/// A fragment header's fields (as sent: they may lie).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FragmentHeader {
    /// Flow id.
    pub flow: u32,
    /// Message id within the flow.
    pub msg: u32,
    /// This fragment's index.
    pub index: u8,
    /// Fragments in the message.
    pub count: u8,
    /// The message's length.
    pub total: u16,
    /// This fragment's offset in the message.
    pub offset: u16,
    /// This fragment's length.
    pub len: u16,
}

/// A validated fragment: its header and bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fragment<'a> {
    /// The header (consistent with itself and the packet).
    pub header: FragmentHeader,
    /// The fragment's bytes (`header.len` of them).
    pub data: &'a [u8],
}

/// Parses and validates a frame (Ethernet, IPv4 with correct header checksum and lengths,
/// UDP to [`PORT`] with correct length and checksum, the fragment header and bytes).
pub fn parse_fragment(frame: &[u8]) -> Result<Fragment<'_>, IntruderError> {
    let l2 = parse_l2(frame).map_err(|_| IntruderError::NotIpv4)?;
    if l2.ethertype != EtherType::IPV4 {
        return Err(IntruderError::NotIpv4);
    }
    let l3 = frame
        .get(usize::from(l2.l3_offset)..)
        .ok_or(IntruderError::BadIpv4)?;
    let ip = Ipv4Packet::new_checked(l3).map_err(|_| IntruderError::BadIpv4)?;
    if !ip.verify_checksum() {
        return Err(IntruderError::BadChecksum);
    }
    if ip.protocol() != IpProtocol::UDP || ip.is_fragment() {
        return Err(IntruderError::NotIntruder);
    }
    let (src, dst) = (ip.src_addr(), ip.dst_addr());
    let udp = UdpPacket::new_checked(ip.into_payload()).map_err(|_| IntruderError::BadUdp)?;
    if udp.dst_port() != PORT {
        return Err(IntruderError::NotIntruder);
    }
    if !udp.verify_checksum(src, dst) {
        return Err(IntruderError::BadChecksum);
    }
    let p = udp.into_payload();
    if p.len() < HEADER_LEN {
        return Err(IntruderError::Truncated);
    }
    let u16_at = |i: usize| u16::from_be_bytes([p[i], p[i + 1]]);
    let u32_at = |i: usize| u32::from_be_bytes([p[i], p[i + 1], p[i + 2], p[i + 3]]);
    let h = FragmentHeader {
        flow: u32_at(0),
        msg: u32_at(4),
        index: p[8],
        count: p[9],
        total: u16_at(10),
        offset: u16_at(12),
        len: u16_at(14),
    };
    let data = &p[HEADER_LEN..];
    if data.len() != usize::from(h.len) {
        return Err(IntruderError::BadLength);
    }
    let (total, offset, len) = (
        usize::from(h.total),
        usize::from(h.offset),
        usize::from(h.len),
    );
    if h.count == 0
        || usize::from(h.count) > MAX_FRAGMENTS
        || h.index >= h.count
        || total == 0
        || total > MAX_MESSAGE
        || len == 0
        || offset + len > total
    {
        return Err(IntruderError::BadFields);
    }
    Ok(Fragment { header: h, data })
}

/// The flow id of a frame that carries a valid fragment (for
/// [`same_flow_share`](crate::runtime::same_flow_share)).
pub fn frame_flow(frame: &[u8]) -> Option<u64> {
    parse_fragment(frame).ok().map(|f| u64::from(f.header.flow))
}

/// The frame carrying `data` under header `h`, written as given (so a test can make it
/// lie): Ethernet, IPv4 from 10.x.y.z (the flow's low 24 bits) to 10.255.0.1, UDP from
/// the flow's port to [`PORT`], lengths and checksums filled in.
pub fn build_fragment(h: &FragmentHeader, data: &[u8]) -> Vec<u8> {
    let mut payload = Vec::with_capacity(HEADER_LEN + data.len());
    payload.extend_from_slice(&h.flow.to_be_bytes());
    payload.extend_from_slice(&h.msg.to_be_bytes());
    payload.push(h.index);
    payload.push(h.count);
    payload.extend_from_slice(&h.total.to_be_bytes());
    payload.extend_from_slice(&h.offset.to_be_bytes());
    payload.extend_from_slice(&h.len.to_be_bytes());
    payload.extend_from_slice(data);
    let f = h.flow.to_be_bytes();
    PacketBuilder::ethernet(
        MacAddr([0x02, 0, 0, 0, 0, 1]),
        MacAddr([0x02, 0, 0, 0, 0, 2]),
    )
    .ipv4(
        Ipv4Addr::new(10, f[1], f[2], f[3]),
        Ipv4Addr::new(10, 255, 0, 1),
    )
    .udp(1024 + (h.flow % 60000) as u16, PORT)
    .payload(&payload)
    .build()
}

/// Where a message's reassembly is filed: its flow and its id in the flow.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MessageKey {
    /// Flow id.
    pub flow: u32,
    /// Message id within the flow.
    pub msg: u32,
}

/// A message being reassembled: fixed storage, no allocation.
#[derive(Clone, Copy, Debug)]
pub struct Reassembly {
    data: [u8; MAX_MESSAGE],
    /// Bytes received (bit i: byte i).
    covered: u128,
    /// Fragments received (bit i: fragment i).
    received: u8,
    count: u8,
    total: u8,
}

impl Default for Reassembly {
    fn default() -> Self {
        Reassembly {
            data: [0; MAX_MESSAGE],
            covered: 0,
            received: 0,
            count: 0,
            total: 0,
        }
    }
}

/// One flow's state: updated by every fragment (phase 1) and every complete message
/// (phase 2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlowState {
    /// Valid fragments seen.
    pub fragments: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Messages reassembled and scanned.
    pub messages: u64,
    /// Of those, attacks.
    pub attacks: u64,
    /// The verdict: this flow sent an attack.
    pub flagged: bool,
    /// The id of its last attack message.
    pub last_attack: u32,
}

/// The detector's settings.
#[derive(Clone, Debug)]
pub struct IntruderConfig {
    /// Messages being reassembled at once, at most (all workers).
    pub reassembly_capacity: usize,
    /// Flows tracked at once, at most.
    pub flow_capacity: usize,
    /// An incomplete message idle this long is discarded.
    pub reassembly_timeout: Duration,
    /// A flow idle this long is forgotten.
    pub flow_timeout: Duration,
    /// Buckets of each table each worker sweeps for expiry after every vector.
    pub sweep_buckets: usize,
    /// Detected (flow, message) ids each worker records for [`Intruder::detected`]
    /// (preallocated; beyond it they are only counted, `detection log overflow`).
    pub detection_log: usize,
}

impl Default for IntruderConfig {
    fn default() -> Self {
        IntruderConfig {
            reassembly_capacity: 16384,
            flow_capacity: 1 << 16,
            reassembly_timeout: Duration::from_secs(1),
            flow_timeout: Duration::from_secs(10),
            sweep_buckets: 16,
            detection_log: 1 << 16,
        }
    }
}

/// Why a detector cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// The signature automaton.
    #[error("signatures: {0}")]
    Signatures(#[from] aho_corasick::BuildError),
}

/// The detector, shared by every worker: its domain, the reassembly and flow tables, the
/// signature automaton and the detections the workers recorded.
pub struct Intruder {
    domain: Arc<Domain>,
    reassembly: Arc<FlowTable<MessageKey, Reassembly>>,
    flows: Arc<FlowTable<u32, FlowState>>,
    signatures: Arc<AhoCorasick>,
    reassembly_ticks: u64,
    flow_ticks: u64,
    sweep_buckets: usize,
    log_capacity: usize,
    detected: Arc<Mutex<Vec<MessageKey>>>,
}

/// The 64-bit hash of a flow id; its low bits pick the stripe of all the flow's records.
#[inline]
pub fn flow_hash(flow: u32) -> u64 {
    mix64(u64::from(flow) ^ 0x5bd1_e995_0000_0000)
}

/// The hash a message's reassembly is filed under: the flow's stripe bits (below
/// `stripes`, a power of two) under bits of the (flow, message) hash.
#[inline]
pub fn message_hash(flow: u32, msg: u32, stripes: usize) -> u64 {
    let mask = stripes as u64 - 1;
    (mix64(u64::from(flow) << 32 | u64::from(msg)) & !mask) | (flow_hash(flow) & mask)
}

#[inline]
fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn ticks(d: Duration) -> u64 {
    (d.as_secs_f64() * clock::tsc_hz()) as u64
}

impl Intruder {
    /// A detector in `domain`.
    pub fn new(domain: &Arc<Domain>, cfg: IntruderConfig) -> Result<Intruder, SetupError> {
        let signatures = AhoCorasick::new(SIGNATURES)?;
        Ok(Intruder {
            domain: domain.clone(),
            reassembly: Arc::new(FlowTable::new(
                domain,
                "intruder reassembly",
                TableConfig {
                    capacity: cfg.reassembly_capacity,
                    ..TableConfig::default()
                },
            )),
            flows: Arc::new(FlowTable::new(
                domain,
                "intruder flows",
                TableConfig {
                    capacity: cfg.flow_capacity,
                    ..TableConfig::default()
                },
            )),
            signatures: Arc::new(signatures),
            reassembly_ticks: ticks(cfg.reassembly_timeout).max(1),
            flow_ticks: ticks(cfg.flow_timeout).max(1),
            sweep_buckets: cfg.sweep_buckets.max(1),
            log_capacity: cfg.detection_log,
            detected: Arc::new(Mutex::new(Vec::new())),
        })
    }

    /// The reassembly timeout in TSC ticks.
    pub fn reassembly_timeout_ticks(&self) -> u64 {
        self.reassembly_ticks
    }

    /// The flow timeout in TSC ticks.
    pub fn flow_timeout_ticks(&self) -> u64 {
        self.flow_ticks
    }

    /// Reassembly records in all (the sum of `reassembly records free` when none is live).
    pub fn reassembly_capacity(&self) -> usize {
        self.reassembly.capacity()
    }

    /// Flow records in all.
    pub fn flow_capacity(&self) -> usize {
        self.flows.capacity()
    }

    /// Every attack message detected by workers that have finished (dropped), sorted.
    pub fn detected(&self) -> Vec<MessageKey> {
        let mut v = self
            .detected
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        v.sort_unstable();
        v
    }

    /// A flow's state, read in a section of its stripe's owner (control plane: call it
    /// while no worker runs, or from a thread allowed to run that worker's sections).
    pub fn flow(&self, flow: u32) -> Option<FlowState> {
        let h = flow_hash(flow);
        let mut sync = self.domain.worker(self.domain.owner(self.flows.stripe(h)));
        let flows = &self.flows;
        sync.section(flows.stripe(h), |sec| {
            flows.find(sec, &flow, h).map(|(_, v)| *v)
        })
    }
}

impl Nf for Intruder {
    type Worker = IntruderWorker;
    const NAME: &'static str = "intruder";

    fn domain(&self) -> &Arc<Domain> {
        &self.domain
    }

    fn worker(&self, id: usize) -> IntruderWorker {
        IntruderWorker {
            sync: self.domain.worker(id),
            reassembly: self.reassembly.clone(),
            flows: self.flows.clone(),
            rw: self.reassembly.worker(id),
            fw: self.flows.worker(id),
            signatures: self.signatures.clone(),
            stripes: self.domain.stripes(),
            reassembly_ticks: self.reassembly_ticks,
            flow_ticks: self.flow_ticks,
            sweep_buckets: self.sweep_buckets,
            message: [0; MAX_MESSAGE],
            log: Vec::with_capacity(self.log_capacity),
            detected: self.detected.clone(),
            n: WorkerCounters::default(),
        }
    }

    fn owner(&self, frame: &[u8]) -> Option<usize> {
        let f = parse_fragment(frame).ok()?;
        let stripe = self.domain.stripe_of(flow_hash(f.header.flow));
        Some(self.domain.owner(stripe))
    }
}

#[derive(Clone, Copy, Debug, Default)]
struct WorkerCounters {
    fragments: u64,
    messages: u64,
    detections: u64,
    timeouts: u64,
    flows_expired: u64,
    flow_lost: u64,
    log_overflow: u64,
}

/// What phase 1 did with a fragment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase1 {
    Pending,
    Complete(usize),
    Gap,
    Duplicate,
    Overlap,
    Inconsistent,
    ReassemblyFull,
    FlowFull,
}

/// The bytes `offset..offset + len` as a mask (`offset + len ≤ 128`, `len ≥ 1`).
#[inline]
fn span(offset: usize, len: usize) -> u128 {
    let ones = if len >= 128 {
        u128::MAX
    } else {
        (1u128 << len) - 1
    };
    ones << (offset & 127)
}

/// One worker of the detector.
pub struct IntruderWorker {
    sync: WorkerSync,
    reassembly: Arc<FlowTable<MessageKey, Reassembly>>,
    flows: Arc<FlowTable<u32, FlowState>>,
    rw: TableWorker,
    fw: TableWorker,
    signatures: Arc<AhoCorasick>,
    stripes: usize,
    reassembly_ticks: u64,
    flow_ticks: u64,
    sweep_buckets: usize,
    message: [u8; MAX_MESSAGE],
    log: Vec<MessageKey>,
    detected: Arc<Mutex<Vec<MessageKey>>>,
    n: WorkerCounters,
}

impl IntruderWorker {
    /// Sweeps up to `buckets` buckets of each table for idle records at time `now`;
    /// returns the reassemblies expired.
    pub fn expire(&mut self, now: u64, buckets: usize) -> usize {
        let gone = self.reassembly.expire(
            &mut self.sync,
            &mut self.rw,
            now,
            self.reassembly_ticks,
            buckets,
            |_, _, _| {},
        );
        self.n.timeouts += gone as u64;
        let flows = self.flows.expire(
            &mut self.sync,
            &mut self.fw,
            now,
            self.flow_ticks,
            buckets,
            |_, _, _| {},
        );
        self.n.flows_expired += flows as u64;
        gone
    }

    /// Detected messages this worker recorded so far.
    pub fn detected(&self) -> &[MessageKey] {
        &self.log
    }
}

impl NfWorker for IntruderWorker {
    type Error = IntruderError;

    fn packet(&mut self, pkt: &mut PacketMut<'_>, now: u64) -> Result<(), IntruderError> {
        let frag = parse_fragment(pkt.data())?;
        let h = frag.header;
        let fh = flow_hash(h.flow);
        let stripe = self.flows.stripe(fh);
        let key = MessageKey {
            flow: h.flow,
            msg: h.msg,
        };
        let mh = message_hash(h.flow, h.msg, self.stripes);
        let (reassembly, flows) = (&*self.reassembly, &*self.flows);
        let (rw, fw, out) = (&mut self.rw, &mut self.fw, &mut self.message);
        let (offset, len, total) = (
            usize::from(h.offset),
            usize::from(h.len),
            usize::from(h.total),
        );
        // Phase 1: the flow's per-packet state and the reassembly.
        let r = self.sync.section(stripe, |sec| {
            let Ok((_, fs, _)) = flows.entry(sec, fw, h.flow, fh, now) else {
                return Phase1::FlowFull;
            };
            fs.fragments += 1;
            fs.bytes += len as u64;
            let Ok((_, ra, new)) = reassembly.entry(sec, rw, key, mh, now) else {
                return Phase1::ReassemblyFull;
            };
            if new {
                ra.count = h.count;
                ra.total = total as u8;
            } else if ra.count != h.count || usize::from(ra.total) != total {
                return Phase1::Inconsistent;
            }
            let bit = 1u8 << (h.index & 7);
            if ra.received & bit != 0 {
                return Phase1::Duplicate;
            }
            let bytes = span(offset, len);
            if ra.covered & bytes != 0 {
                return Phase1::Overlap;
            }
            let (Some(dst), Some(src)) =
                (ra.data.get_mut(offset..offset + len), frag.data.get(..len))
            else {
                return Phase1::Inconsistent; // unreachable: parse_fragment bounds both
            };
            dst.copy_from_slice(src);
            ra.received |= bit;
            ra.covered |= bytes;
            if u32::from(ra.received) != (1u32 << ra.count) - 1 {
                return Phase1::Pending;
            }
            let whole = ra.covered == span(0, total);
            if whole {
                out[..total].copy_from_slice(&ra.data[..total]);
            }
            reassembly.remove(sec, rw, &key, mh);
            if whole {
                Phase1::Complete(total)
            } else {
                Phase1::Gap
            }
        });
        let total = match r {
            Phase1::Pending => {
                self.n.fragments += 1;
                return Ok(());
            }
            Phase1::Complete(t) => t,
            Phase1::Gap => return Err(IntruderError::Gap),
            Phase1::Duplicate => return Err(IntruderError::Duplicate),
            Phase1::Overlap => return Err(IntruderError::Overlap),
            Phase1::Inconsistent => return Err(IntruderError::Inconsistent),
            Phase1::ReassemblyFull => return Err(IntruderError::ReassemblyFull),
            Phase1::FlowFull => return Err(IntruderError::FlowFull),
        };
        self.n.fragments += 1;
        self.n.messages += 1;
        // Detection, outside any section, on the worker's copy.
        let attack = self
            .signatures
            .is_match(&self.message[..total.min(MAX_MESSAGE)]);
        if attack {
            self.n.detections += 1;
            if self.log.len() < self.log.capacity() {
                self.log.push(key);
            } else {
                self.n.log_overflow += 1;
            }
        }
        // Phase 2: the flow's detection counters and verdict.
        let (flows, fw) = (&*self.flows, &mut self.fw);
        let kept = self.sync.section(stripe, |sec| {
            let Ok((_, fs, _)) = flows.entry(sec, fw, h.flow, fh, now) else {
                return false;
            };
            fs.messages += 1;
            if attack {
                fs.attacks += 1;
                fs.flagged = true;
                fs.last_attack = h.msg;
            }
            true
        });
        if !kept {
            self.n.flow_lost += 1;
        }
        Ok(())
    }

    fn after_vector(&mut self, now: u64) {
        self.expire(now, self.sweep_buckets);
    }

    fn sync(&mut self) -> &mut WorkerSync {
        &mut self.sync
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("fragments", self.n.fragments),
            ("messages", self.n.messages),
            ("detections", self.n.detections),
            ("reassembly timeout", self.n.timeouts),
            ("flows expired", self.n.flows_expired),
            ("flow state lost", self.n.flow_lost),
            ("detection log overflow", self.n.log_overflow),
            ("reassembly records free", self.rw.free() as u64),
            ("flow records free", self.fw.free() as u64),
        ]
    }
}

impl Drop for IntruderWorker {
    /// Hands the worker's detections to [`Intruder::detected`].
    fn drop(&mut self) {
        self.detected
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend_from_slice(&self.log);
    }
}

/// How to make test traffic.
#[derive(Clone, Debug)]
pub struct TrafficConfig {
    /// Packets (fragments) in all.
    pub packets: usize,
    /// Flows sending at once; a flow that sent its last message is replaced by a new one.
    pub active_flows: usize,
    /// Messages a flow sends: 1 to this many.
    pub max_messages_per_flow: u32,
    /// Share of messages that carry an attack signature.
    pub attack_share: f64,
    /// Fragments are shuffled within a sliding window of this many.
    pub window: usize,
    /// The first flow id (flow ids count up from it).
    pub first_flow: u32,
    /// The random seed.
    pub seed: u64,
}

impl Default for TrafficConfig {
    fn default() -> Self {
        TrafficConfig {
            packets: 10_000,
            active_flows: 256,
            max_messages_per_flow: 4,
            attack_share: 0.1,
            window: 16,
            first_flow: 1,
            seed: 1,
        }
    }
}

/// Generated traffic and its answer.
#[derive(Clone, Debug, Default)]
pub struct Traffic {
    /// The frames, in sending order.
    pub frames: Vec<Vec<u8>>,
    /// The (flow, message) ids of the attack messages, sorted.
    pub attacks: Vec<MessageKey>,
    /// Messages sent.
    pub messages: u64,
    /// Flows that sent.
    pub flows: u64,
}

impl Traffic {
    /// The frames dealt round robin to `workers` workers (frame i to worker i % workers),
    /// so the fragments of one message usually reach different workers.
    pub fn split(&self, workers: usize) -> Vec<Vec<Vec<u8>>> {
        let workers = workers.max(1);
        let mut out = vec![Vec::new(); workers];
        for (i, f) in self.frames.iter().enumerate() {
            out[i % workers].push(f.clone());
        }
        out
    }

    /// The share of frames with a frame of the same flow among the `window` before them.
    pub fn same_flow_share(&self, window: usize) -> f64 {
        crate::runtime::same_flow_share(&self.frames, window, frame_flow)
    }
}

/// A small seeded generator (SplitMix64).
#[derive(Clone, Debug)]
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        mix64(self.0.wrapping_sub(0x9e37_79b9_7f4a_7c15))
    }

    /// Uniform in `0..n` (`n ≥ 1`).
    fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next()) * n as u128) >> 64) as usize
    }

    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }

    fn chance(&mut self, p: f64) -> bool {
        ((self.next() >> 11) as f64 / (1u64 << 53) as f64) < p
    }
}

/// Seeded traffic: `cfg.packets` fragments of messages from about `cfg.active_flows`
/// flows at a time, each message of 1–128 random [`ALPHABET`] bytes, a share
/// `cfg.attack_share` of them with one of the [`SIGNATURES`] inside, cut into 1–4
/// fragments; the fragment stream is shuffled within a sliding window of `cfg.window`.
pub fn generate(cfg: &TrafficConfig) -> Traffic {
    struct Active {
        flow: u32,
        next_msg: u32,
        left: u32,
    }
    let mut rng = Rng(cfg.seed);
    let max_msgs = cfg.max_messages_per_flow.max(1) as usize;
    let mut next_flow = cfg.first_flow;
    let mut new_flow = |rng: &mut Rng| {
        let a = Active {
            flow: next_flow,
            next_msg: 0,
            left: rng.range(1, max_msgs) as u32,
        };
        next_flow = next_flow.wrapping_add(1);
        a
    };
    let mut active: Vec<Active> = (0..cfg.active_flows.max(1))
        .map(|_| new_flow(&mut rng))
        .collect();
    let mut t = Traffic::default();
    let mut in_order: Vec<Vec<u8>> = Vec::with_capacity(cfg.packets);
    let mut msg = [0u8; MAX_MESSAGE];
    let mut flows = std::collections::HashSet::new();
    while in_order.len() < cfg.packets {
        let room = cfg.packets - in_order.len();
        let slot = rng.below(active.len());
        let (flow, id) = (active[slot].flow, active[slot].next_msg);
        let attack = rng.chance(cfg.attack_share);
        let len = if attack {
            let sig = SIGNATURES[rng.below(SIGNATURES.len())];
            let len = rng.range(sig.len(), MAX_MESSAGE);
            for b in &mut msg[..len] {
                *b = ALPHABET[rng.below(ALPHABET.len())];
            }
            let at = rng.range(0, len - sig.len());
            msg[at..at + sig.len()].copy_from_slice(sig);
            t.attacks.push(MessageKey { flow, msg: id });
            len
        } else {
            let len = rng.range(1, MAX_MESSAGE);
            for b in &mut msg[..len] {
                *b = ALPHABET[rng.below(ALPHABET.len())];
            }
            len
        };
        // cut points: `count - 1` distinct offsets in 1..len
        let count = rng.range(1, MAX_FRAGMENTS.min(len).min(room));
        let mut cuts = [0usize; MAX_FRAGMENTS + 1];
        let mut n = 1;
        while n < count {
            let c = rng.range(1, len - 1);
            if !cuts[1..n].contains(&c) {
                cuts[n] = c;
                n += 1;
            }
        }
        cuts[count] = len;
        cuts[1..count].sort_unstable();
        for i in 0..count {
            let (a, b) = (cuts[i], cuts[i + 1]);
            let h = FragmentHeader {
                flow,
                msg: id,
                index: i as u8,
                count: count as u8,
                total: len as u16,
                offset: a as u16,
                len: (b - a) as u16,
            };
            in_order.push(build_fragment(&h, &msg[a..b]));
        }
        t.messages += 1;
        flows.insert(flow);
        let a = &mut active[slot];
        a.next_msg += 1;
        a.left -= 1;
        if a.left == 0 {
            active[slot] = new_flow(&mut rng);
        }
    }
    // the sliding-window shuffle
    let window = cfg.window.max(1);
    let mut w: Vec<Vec<u8>> = Vec::with_capacity(window);
    t.frames.reserve(in_order.len());
    for f in in_order {
        w.push(f);
        if w.len() == window {
            let i = rng.below(w.len());
            t.frames.push(w.swap_remove(i));
        }
    }
    while !w.is_empty() {
        let i = rng.below(w.len());
        t.frames.push(w.swap_remove(i));
    }
    t.attacks.sort_unstable();
    t.flows = flows.len() as u64;
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alphabet_holds_no_signature_byte_set() {
        for s in SIGNATURES {
            assert!(s.iter().any(|b| !ALPHABET.contains(b)), "{s:?}");
            assert!((8..=16).contains(&s.len()));
        }
    }

    #[test]
    fn spans() {
        assert_eq!(span(0, 128), u128::MAX);
        assert_eq!(span(127, 1), 1u128 << 127);
        assert_eq!(span(2, 3), 0b11100);
    }

    #[test]
    fn message_hash_keeps_the_flow_stripe() {
        for f in 0..100u32 {
            for m in 0..10u32 {
                assert_eq!(message_hash(f, m, 64) & 63, flow_hash(f) & 63);
            }
        }
    }
}
