//! A deterministic traffic generator driven by a [`TrafficProfile`].
//!
//! Flows are created up front (kind, addresses, ports, VLAN tags, size) and each has a
//! ready-made frame (a template); producing a packet is choosing a flow by popularity and
//! order, then copying its template. The same profile, seed and inputs always give the same
//! sequence of frames.
//!
//! ```
//! use pktvec_io::generator::{FlowKind, Generator};
//! use pktvec_io::profile::TrafficProfile;
//! let profile = TrafficProfile::from_toml(r#"
//!     order = "alternating"
//!     [mix]
//!     ipv4 = 1.0
//!     ipv6 = 1.0
//! "#)?;
//! let mut g = Generator::builder(profile).build()?;
//! let ids: Vec<usize> = (0..4).map(|_| g.next_packet().0).collect();
//! let kinds: Vec<FlowKind> = ids.iter().map(|&f| g.flows()[f].kind).collect();
//! assert_eq!(kinds, [FlowKind::Ipv4, FlowKind::Ipv6, FlowKind::Ipv4, FlowKind::Ipv6]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::profile::{Order, Popularity, ProfileError, Sizes, TrafficProfile};
use pktvec_graph::builtin::SourceError;
use pktvec_graph::{next_nodes, Context, Frame, Node, NodeKind};
use pktvec_packet::builder::PacketBuilder;
use pktvec_packet::pool::Block64;
use pktvec_packet::prefetch::prefetch_read_l2;
use pktvec_packet::wire::MacAddr;
use pktvec_packet::{PacketMut, PacketsMut};
use std::net::{Ipv4Addr, Ipv6Addr};

/// EtherType of NDN over Ethernet.
pub const ETHERTYPE_NDN: u16 = 0x8624;
/// EtherType used for "unknown" frames (IEEE 802 local experimental 1).
pub const ETHERTYPE_UNKNOWN: u16 = 0x88b5;

/// SplitMix64: small, fast, good enough for traffic, and the same everywhere.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }
    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (`n` > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// How a malformed flow is broken.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MalformedKind {
    /// Shorter than an Ethernet header.
    Runt,
    /// IPv4 cut inside its header.
    TruncatedIpv4,
    /// IPv4 header checksum wrong.
    BadIpv4Checksum,
    /// IPv4 IHL below 5.
    BadIhl,
    /// IPv4 total length larger than the frame (checksum correct).
    TotalLengthTooLong,
    /// IP version field neither 4 nor 6 under EtherType IPv4.
    BadVersion,
    /// IPv4 TTL 0 (checksum correct).
    TtlZero,
    /// IPv6 payload length larger than the frame.
    Ipv6PayloadTooLong,
}

const MALFORMED: [MalformedKind; 8] = [
    MalformedKind::Runt,
    MalformedKind::TruncatedIpv4,
    MalformedKind::BadIpv4Checksum,
    MalformedKind::BadIhl,
    MalformedKind::TotalLengthTooLong,
    MalformedKind::BadVersion,
    MalformedKind::TtlZero,
    MalformedKind::Ipv6PayloadTooLong,
];

/// What a flow carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FlowKind {
    /// IPv4/UDP.
    Ipv4,
    /// IPv6/UDP.
    Ipv6,
    /// ARP request.
    Arp,
    /// NDN Interest.
    Ndn,
    /// Unknown EtherType.
    Unknown,
    /// Broken on purpose.
    Malformed(MalformedKind),
}

/// One flow and its frame.
#[derive(Clone, Debug)]
pub struct Flow {
    /// Kind.
    pub kind: FlowKind,
    /// Source MAC.
    pub src_mac: MacAddr,
    /// Destination MAC.
    pub dst_mac: MacAddr,
    /// VLAN ids, outer first (0, 1 or 2 of them).
    pub vlans: Vec<u16>,
    /// Interface the flow arrives on (its source host's).
    pub rx_if: u16,
    /// IPv4 addresses (IPv4, ARP and IPv4-based malformed flows).
    pub ip4: Option<(Ipv4Addr, Ipv4Addr)>,
    /// IPv6 addresses.
    pub ip6: Option<(Ipv6Addr, Ipv6Addr)>,
    /// Whether the destination was drawn inside a route prefix.
    pub dst_in_routes: bool,
    /// UDP ports.
    pub ports: (u16, u16),
    /// NDN name (NDN flows).
    pub name: Option<String>,
    /// The frame (without FCS).
    pub frame: Vec<u8>,
}

/// Builds a [`Generator`] with the route prefixes and names its flows draw from.
pub struct GeneratorBuilder {
    profile: TrafficProfile,
    v4: Vec<(Ipv4Addr, u8)>,
    v6: Vec<(Ipv6Addr, u8)>,
    names: Vec<String>,
}

impl GeneratorBuilder {
    /// IPv4 route prefixes destinations are drawn from (default 10.0.0.0/8).
    pub fn ipv4_prefixes(mut self, p: Vec<(Ipv4Addr, u8)>) -> Self {
        self.v4 = p;
        self
    }
    /// IPv6 route prefixes destinations are drawn from (default 2001:db8::/32).
    pub fn ipv6_prefixes(mut self, p: Vec<(Ipv6Addr, u8)>) -> Self {
        self.v6 = p;
        self
    }
    /// NDN names (`/a/b/c`) Interests ask for (default: synthetic names).
    pub fn names(mut self, n: Vec<String>) -> Self {
        self.names = n;
        self
    }
    /// Creates the flows.
    pub fn build(self) -> Result<Generator, ProfileError> {
        self.profile.validate()?;
        if self.v4.iter().any(|&(_, l)| l > 32) || self.v6.iter().any(|&(_, l)| l > 128) {
            return Err(ProfileError("route prefix length out of range".into()));
        }
        let mut g = Generator {
            rng: Rng::new(self.profile.seed),
            v4: if self.v4.is_empty() {
                vec![(Ipv4Addr::new(10, 0, 0, 0), 8)]
            } else {
                self.v4
            },
            v6: if self.v6.is_empty() {
                vec![("2001:db8::".parse().unwrap_or(Ipv6Addr::UNSPECIFIED), 32)]
            } else {
                self.v6
            },
            names: if self.names.is_empty() {
                (0..64)
                    .map(|i| format!("/pktvec/site{}/obj{}", i % 8, i))
                    .collect()
            } else {
                self.names
            },
            profile: self.profile,
            flows: Vec::new(),
            cdf: Vec::new(),
            v4_flows: Vec::new(),
            v6_flows: Vec::new(),
            v4_cdf: Vec::new(),
            v6_cdf: Vec::new(),
            emitted: 0,
            burst_left: 0,
            burst_flow: 0,
            next_is_v6: false,
        };
        let n = g.profile.flows.count;
        for _ in 0..n {
            let f = g.new_flow();
            g.flows.push(f);
        }
        g.index();
        Ok(g)
    }
}

/// The generator: flows plus the state of the arrival process.
pub struct Generator {
    profile: TrafficProfile,
    rng: Rng,
    v4: Vec<(Ipv4Addr, u8)>,
    v6: Vec<(Ipv6Addr, u8)>,
    names: Vec<String>,
    flows: Vec<Flow>,
    cdf: Vec<f64>,
    v4_flows: Vec<usize>,
    v6_flows: Vec<usize>,
    v4_cdf: Vec<f64>,
    v6_cdf: Vec<f64>,
    emitted: u64,
    burst_left: usize,
    burst_flow: usize,
    next_is_v6: bool,
}

fn cdf(n: usize, pop: Popularity) -> Vec<f64> {
    let mut acc = 0.0;
    let mut v: Vec<f64> = (0..n)
        .map(|k| {
            acc += match pop {
                Popularity::Uniform => 1.0,
                Popularity::Zipf(s) => 1.0 / ((k + 1) as f64).powf(s),
            };
            acc
        })
        .collect();
    if acc > 0.0 {
        v.iter_mut().for_each(|x| *x /= acc);
    }
    v
}

fn pick(cdf: &[f64], u: f64) -> usize {
    cdf.partition_point(|&c| c <= u)
        .min(cdf.len().saturating_sub(1))
}

fn host_mac(i: u64) -> MacAddr {
    let b = (i as u32).to_be_bytes();
    MacAddr([0x02, 0x00, b[0], b[1], b[2], b[3]])
}

/// Encodes an NDN Interest (TLV 0x05) for `name` with a nonce.
pub fn ndn_interest(name: &str, nonce: u32) -> Vec<u8> {
    pktvec_packet::wire::ndn::interest(name, nonce)
}

impl Generator {
    /// Starts building a generator for a profile.
    pub fn builder(profile: TrafficProfile) -> GeneratorBuilder {
        GeneratorBuilder {
            profile,
            v4: Vec::new(),
            v6: Vec::new(),
            names: Vec::new(),
        }
    }

    /// The flows (index = the flow id returned by [`next_packet`](Self::next_packet)).
    pub fn flows(&self) -> &[Flow] {
        &self.flows
    }

    /// The profile.
    pub fn profile(&self) -> &TrafficProfile {
        &self.profile
    }

    /// Packets produced so far.
    pub fn emitted(&self) -> u64 {
        self.emitted
    }

    fn index(&mut self) {
        let pop = self.profile.flows.popularity;
        self.cdf = cdf(self.flows.len(), pop);
        self.v4_flows = (0..self.flows.len())
            .filter(|&i| self.flows[i].kind == FlowKind::Ipv4)
            .collect();
        self.v6_flows = (0..self.flows.len())
            .filter(|&i| self.flows[i].kind == FlowKind::Ipv6)
            .collect();
        self.v4_cdf = cdf(self.v4_flows.len(), pop);
        self.v6_cdf = cdf(self.v6_flows.len(), pop);
    }

    fn frame_len(&mut self) -> usize {
        let wire = match self.profile.sizes {
            Sizes::Fixed(n) => n,
            Sizes::Imix => match self.rng.below(12) {
                0..=6 => 64,
                7..=10 => 594,
                _ => 1518,
            },
            Sizes::Uniform { min, max } => min + self.rng.below((max - min + 1) as u64) as usize,
        };
        wire - 4
    }

    fn kind(&mut self) -> FlowKind {
        let m = &self.profile.mix;
        let w = [
            m.ipv4,
            m.ipv6,
            m.arp,
            m.ndn,
            m.unknown_ethertype,
            m.malformed,
        ];
        let total: f64 = w.iter().sum();
        let mut u = self.rng.unit() * total;
        let mut k = 0;
        while k < w.len() - 1 && u >= w[k] {
            u -= w[k];
            k += 1;
        }
        // Never land on a zero-weight kind through rounding.
        while w[k] == 0.0 {
            k = (k + 1) % w.len();
        }
        match k {
            0 => FlowKind::Ipv4,
            1 => FlowKind::Ipv6,
            2 => FlowKind::Arp,
            3 => FlowKind::Ndn,
            4 => FlowKind::Unknown,
            _ => FlowKind::Malformed(MALFORMED[self.rng.below(MALFORMED.len() as u64) as usize]),
        }
    }

    fn dst4(&mut self) -> (Ipv4Addr, bool) {
        if self.rng.unit() < self.profile.destinations.ipv4_hit_rate {
            let (a, l) = self.v4[self.rng.below(self.v4.len() as u64) as usize];
            let mask = if l == 0 { 0 } else { u32::MAX << (32 - l) };
            let host = self.rng.next_u64() as u32 & !mask;
            (Ipv4Addr::from((u32::from(a) & mask) | host), true)
        } else {
            // 240.0.0.0/4 (reserved): in no real route table.
            let x = 0xf000_0000 | (self.rng.next_u64() as u32 & 0x0fff_ffff);
            (Ipv4Addr::from(x), false)
        }
    }

    fn dst6(&mut self) -> (Ipv6Addr, bool) {
        if self.rng.unit() < self.profile.destinations.ipv6_hit_rate {
            let (a, l) = self.v6[self.rng.below(self.v6.len() as u64) as usize];
            let mask = if l == 0 { 0 } else { u128::MAX << (128 - l) };
            let host = ((self.rng.next_u64() as u128) << 64 | self.rng.next_u64() as u128) & !mask;
            (Ipv6Addr::from((u128::from(a) & mask) | host), true)
        } else {
            // 100::/64 (discard-only, RFC 6666): in no real route table.
            let x = (0x0100u128 << 112) | self.rng.next_u64() as u128;
            (Ipv6Addr::from(x), false)
        }
    }

    fn new_flow(&mut self) -> Flow {
        let kind = self.kind();
        let hosts = self.profile.l2.hosts as u64;
        let nports = self.profile.l2.ports.max(1) as u64;
        let s = self.rng.below(hosts);
        let mut d = self.rng.below(hosts - 1);
        if d >= s {
            d += 1;
        }
        if nports > 1 && d % nports == s % nports {
            // Move the destination to the next host, which is behind the next interface.
            d = (d + 1) % hosts;
            if d == s || d % nports == s % nports {
                d = (s + 1) % hosts;
            }
        }
        let (src_mac, dst_mac) = (host_mac(s), host_mac(d));
        let mut vlans = Vec::new();
        if matches!(kind, FlowKind::Ipv4 | FlowKind::Ipv6) {
            let u = self.rng.unit();
            let m = &self.profile.mix;
            if u < m.qinq {
                vlans = vec![
                    1 + self.rng.below(4094) as u16,
                    1 + self.rng.below(4094) as u16,
                ];
            } else if u < m.qinq + m.vlan {
                vlans = vec![1 + self.rng.below(4094) as u16];
            }
        }
        let len = self.frame_len();
        let ports = (
            1024 + self.rng.below(60000) as u16,
            1 + self.rng.below(1023) as u16,
        );
        let src4 = Ipv4Addr::from(0x0a00_0000 | (self.rng.next_u64() as u32 & 0x00ff_ffff));
        let src6 = Ipv6Addr::from((0xfd00u128 << 112) | self.rng.next_u64() as u128);
        let mut flow = Flow {
            kind,
            src_mac,
            dst_mac,
            vlans,
            rx_if: (s % nports) as u16,
            ip4: None,
            ip6: None,
            dst_in_routes: false,
            ports,
            name: None,
            frame: Vec::new(),
        };
        let mut b = PacketBuilder::ethernet(src_mac, dst_mac);
        for &v in &flow.vlans {
            b = b.vlan(v);
        }
        let v6_based = matches!(
            kind,
            FlowKind::Ipv6 | FlowKind::Malformed(MalformedKind::Ipv6PayloadTooLong)
        );
        let b = match kind {
            FlowKind::Arp => {
                let (dst, hit) = self.dst4();
                flow.ip4 = Some((src4, dst));
                flow.dst_in_routes = hit;
                b.arp_request(src_mac, src4, dst)
            }
            FlowKind::Ndn => {
                let name = self.names[self.rng.below(self.names.len() as u64) as usize].clone();
                let payload = ndn_interest(&name, self.rng.next_u64() as u32);
                flow.name = Some(name);
                b.ethertype_raw(ETHERTYPE_NDN).payload(&payload)
            }
            FlowKind::Unknown => b.ethertype_raw(ETHERTYPE_UNKNOWN).payload_len(46),
            _ if v6_based => {
                let (dst, hit) = self.dst6();
                flow.ip6 = Some((src6, dst));
                flow.dst_in_routes = hit;
                let b = b.ipv6(src6, dst).udp(ports.0, ports.1);
                let hdr = b.payload_offset();
                b.payload_len(len.saturating_sub(hdr))
            }
            _ => {
                let (dst, hit) = self.dst4();
                flow.ip4 = Some((src4, dst));
                flow.dst_in_routes = hit;
                let b = b.ipv4(src4, dst).udp(ports.0, ports.1);
                let hdr = b.payload_offset();
                b.payload_len(len.saturating_sub(hdr))
            }
        };
        let mut frame = b.pad_to(60).build();
        if let FlowKind::Malformed(m) = kind {
            self.break_frame(&mut frame, m, flow.vlans.len());
        }
        flow.frame = frame;
        flow
    }

    fn break_frame(&mut self, f: &mut Vec<u8>, m: MalformedKind, tags: usize) {
        use pktvec_packet::wire::{Ipv4Packet, Ipv6Packet};
        let l3 = 14 + 4 * tags;
        match m {
            MalformedKind::Runt => f.truncate(self.rng.below(14) as usize),
            MalformedKind::TruncatedIpv4 => f.truncate(l3 + self.rng.below(20) as usize),
            MalformedKind::BadIpv4Checksum => f[l3 + 10] ^= 0x5a,
            MalformedKind::BadIhl => f[l3] = 0x40 | self.rng.below(5) as u8,
            MalformedKind::BadVersion => f[l3] = 0x55,
            MalformedKind::TotalLengthTooLong | MalformedKind::TtlZero => {
                let total = f.len() - l3;
                let mut ip = Ipv4Packet::new_unchecked(&mut f[l3..]);
                if m == MalformedKind::TtlZero {
                    ip.set_ttl(0);
                } else {
                    ip.set_total_len((total + 1 + self.rng.below(200) as usize) as u16);
                }
                ip.fill_checksum();
            }
            MalformedKind::Ipv6PayloadTooLong => {
                let room = f.len() - l3 - 40;
                let mut ip = Ipv6Packet::new_unchecked(&mut f[l3..]);
                ip.set_payload_len((room + 1 + self.rng.below(200) as usize) as u16);
            }
        }
    }

    fn churn(&mut self) {
        let n = ((self.flows.len() as f64) * self.profile.flows.churn_fraction) as usize;
        for _ in 0..n {
            let i = self.rng.below(self.flows.len() as u64) as usize;
            let f = self.new_flow();
            self.flows[i] = f;
        }
        self.index();
    }

    /// Chooses the next packet: returns its flow id and its frame.
    pub fn next_packet(&mut self) -> (usize, &[u8]) {
        let every = self.profile.flows.churn_every;
        if every > 0 && self.emitted > 0 && self.emitted % every == 0 {
            self.churn();
        }
        self.emitted += 1;
        let f = match self.profile.order {
            Order::Random => pick(&self.cdf, self.rng.unit()),
            Order::Bursts(k) => {
                if self.burst_left == 0 {
                    self.burst_flow = pick(&self.cdf, self.rng.unit());
                    self.burst_left = k;
                }
                self.burst_left -= 1;
                self.burst_flow
            }
            Order::Alternating => {
                let v6 = self.next_is_v6;
                self.next_is_v6 = !v6;
                let (set, c) = if v6 {
                    (&self.v6_flows, &self.v6_cdf)
                } else {
                    (&self.v4_flows, &self.v4_cdf)
                };
                match set.get(pick(c, self.rng.unit())) {
                    Some(&i) => i,
                    // A mix too small to hold both kinds: fall back to popularity.
                    None => pick(&self.cdf, self.rng.unit()),
                }
            }
        };
        (f, &self.flows[f].frame)
    }
}

next_nodes! {
    /// The one arc of [`GeneratorSource`].
    pub enum GeneratorNext {
        /// Every packet (by default to `ethernet-input`).
        Out = "ethernet-input",
    }
}

/// Input node producing the generator's packets, one vector per poll, up to a limit.
/// The flow id of each packet is stored in its metadata's `opaque` field and its receive
/// interface in `rx_if`.
///
/// With [`pregenerate`](Self::pregenerate), the first `n` packets are produced once into
/// one contiguous arena and then replayed in a loop: the per-packet cost becomes a copy,
/// which is what memory-to-memory forwarding benchmarks want from their source.
pub struct GeneratorSource {
    gen: Generator,
    limit: Option<u64>,
    produced: u64,
    no_buffer: u64,
    replay: Option<Replay>,
}

/// Alignment and padding of the replayed packets (see [`GeneratorSource::pregenerate`]).
const REPLAY_CHUNK: usize = 64;

struct Replay {
    /// The packets, each from a multiple of [`REPLAY_CHUNK`] and padded to one.
    bytes: Vec<u8>,
    /// (offset, length, flow, rx_if) per packet.
    index: Vec<(u32, u16, u32, u16)>,
    pos: usize,
    /// The longest packet.
    max_len: usize,
}

impl Replay {
    /// Fills the freshly allocated buffers `bis` with the next packets of the loop;
    /// `copy(packet, arena, offset, length)` appends one packet's bytes.
    #[inline(always)]
    fn replay_into(
        &mut self,
        pool: &mut PacketsMut<'_>,
        bis: &[u32],
        copy: impl Fn(&mut PacketMut<'_>, &[u8], usize, usize),
    ) {
        // The position lives in a register for the loop (the packet writes could alias
        // `self` as far as the compiler knows, so `self.pos` would be reloaded).
        let (index, bytes, mut pos) = (&self.index[..], &self.bytes[..], self.pos);
        for &bi in bis {
            let Some(&(off, len, flow, rx)) = index.get(pos) else {
                break;
            };
            pos += 1;
            if pos == index.len() {
                pos = 0;
            }
            let mut p = pool.packet_mut(bi);
            copy(&mut p, bytes, off as usize, len as usize);
            let m = p.meta_mut();
            m.rx_if = rx;
            m.opaque = flow;
        }
        self.pos = pos;
    }
}

impl Replay {
    /// Prefetches into L2 what the next `want` packets of the loop will read: their blocks
    /// and their index entries. A replayed stream larger than L2 is read once per pass,
    /// and between two calls of the source the rest of the graph evicts what the hardware
    /// prefetcher brought in; asked for a whole vector ahead, the lines arrive while the
    /// other nodes run. (Only where the next packets do not wrap round the loop.)
    #[inline(always)]
    fn prefetch_next(&self, want: usize) {
        let Some(next) = self.index.get(self.pos..self.pos + want) else {
            return;
        };
        // One prefetch per index line (an entry is 12 bytes), then one per block.
        const PER_LINE: usize = 64 / std::mem::size_of::<(u32, u16, u32, u16)>();
        for e in next.iter().step_by(PER_LINE) {
            prefetch_read_l2(e);
        }
        for &(off, ..) in next {
            if let Some(b) = self.bytes.get(off as usize) {
                prefetch_read_l2(b);
            }
        }
    }
}

impl Replay {
    /// Allocates up to `want` buffers into `frame`, each filled with the next packet of
    /// the loop (every packet within one 64-byte block); returns how many it got.
    #[inline(always)]
    fn replay_blocks(
        &mut self,
        cx: &mut Context<'_, GeneratorSource>,
        frame: &mut Frame,
        want: usize,
    ) -> usize {
        const NONE: [u8; REPLAY_CHUNK] = [0; REPLAY_CHUNK];
        // The position lives in a local for the loop, as in `replay_into`.
        let (index, bytes, mut pos) = (&self.index[..], &self.bytes[..], self.pos);
        // The block of a stored packet (always whole: each packet is stored from a 64-byte
        // boundary, padded to a multiple of 64 bytes).
        let block = |off: u32| {
            bytes
                .get(off as usize..)
                .and_then(|b| b.first_chunk::<REPLAY_CHUNK>())
                .unwrap_or(&NONE)
        };
        if let Some(run) = index.get(pos..pos + want) {
            // The usual case: the next `want` packets do not wrap round the loop, so the
            // `k`-th buffer takes `run[k]` (no position to advance and wrap per packet).
            let got = cx.alloc_blocks_into(frame, want, |k| {
                // Always some: `k < want == run.len()`.
                let (off, len, flow, rx) = run.get(k).copied().unwrap_or_default();
                Block64 {
                    bytes: block(off),
                    len,
                    rx_if: rx,
                    opaque: flow,
                }
            });
            pos += got;
            self.pos = if pos == index.len() { 0 } else { pos };
            self.prefetch_next(want);
            return got;
        }
        let got = cx.alloc_blocks_into(frame, want, |_| {
            // Always some: the index is never empty, and each packet is stored from a
            // 64-byte boundary, padded to a multiple of 64 bytes.
            let (off, len, flow, rx) = index.get(pos).copied().unwrap_or_default();
            pos += 1;
            if pos == index.len() {
                pos = 0;
            }
            Block64 {
                bytes: block(off),
                len,
                rx_if: rx,
                opaque: flow,
            }
        });
        self.pos = pos;
        got
    }
}

impl GeneratorSource {
    /// A source over a generator.
    pub fn new(gen: Generator) -> Self {
        GeneratorSource {
            gen,
            limit: None,
            produced: 0,
            no_buffer: 0,
            replay: None,
        }
    }
    /// Stops after `n` packets.
    pub fn with_limit(mut self, n: u64) -> Self {
        self.limit = Some(n);
        self
    }
    /// Produces the next `n` packets now and replays them in a loop from then on.
    ///
    /// Each packet is stored from a 64-byte boundary and padded to a multiple of 64 bytes,
    /// so a packet of up to 64 bytes is replayed with one 64-byte block copy
    /// ([`PacketMut::append_chunks`]).
    ///
    /// [`PacketMut::append_chunks`]: pktvec_packet::PacketMut::append_chunks
    pub fn pregenerate(mut self, n: usize) -> Self {
        let mut bytes = Vec::new();
        let mut index = Vec::with_capacity(n);
        for _ in 0..n.max(1) {
            let (f, data) = self.gen.next_packet();
            let len = data.len().min(u16::MAX as usize);
            index.push((bytes.len() as u32, len as u16, f as u32, 0));
            bytes.extend_from_slice(&data[..len]);
            bytes.resize(bytes.len().next_multiple_of(REPLAY_CHUNK), 0);
            let rx = self.gen.flows()[f].rx_if;
            if let Some(last) = index.last_mut() {
                last.3 = rx;
            }
        }
        // Start the arena on a cache line, so each packet's 64-byte block is one line (a
        // large allocation is page-aligned plus the allocator's header, not line-aligned).
        let mut aligned: Vec<u8> = Vec::with_capacity(bytes.len() + REPLAY_CHUNK);
        let pad = aligned
            .as_ptr()
            .align_offset(REPLAY_CHUNK)
            .min(REPLAY_CHUNK);
        aligned.resize(pad, 0);
        aligned.extend_from_slice(&bytes);
        for e in &mut index {
            e.0 += pad as u32;
        }
        let max_len = index.iter().map(|e| e.1 as usize).max().unwrap_or(0);
        self.replay = Some(Replay {
            bytes: aligned,
            index,
            pos: 0,
            max_len,
        });
        self
    }
    /// The generator.
    pub fn generator(&self) -> &Generator {
        &self.gen
    }
    /// Packets produced so far.
    pub fn produced(&self) -> u64 {
        self.produced
    }
    /// Packets dropped so far because the pool had no buffer for them (counted under
    /// "no buffer", and towards the limit).
    pub fn no_buffer(&self) -> u64 {
        self.no_buffer
    }
}

impl Node for GeneratorSource {
    type Next = GeneratorNext;
    type Error = SourceError;
    const KIND: NodeKind = NodeKind::Input;

    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        let mut want = cx.vector_size();
        if let Some(l) = self.limit {
            want = want.min(l.saturating_sub(self.produced + self.no_buffer) as usize);
        }
        let blocks_fit = cx.pool().data_room() as usize >= REPLAY_CHUNK;
        let got = match self.replay.as_mut() {
            // Minimum-size frames (every replayed packet within one 64-byte block, and a
            // fresh buffer's data room holds a block): the pool writes each buffer's block
            // and its whole metadata line as it allocates it, in one pass.
            Some(r) if r.max_len <= REPLAY_CHUNK && blocks_fit => r.replay_blocks(cx, frame, want),
            _ => {
                let got = cx.alloc_into(frame, want);
                let start = frame.len() - got;
                let mut pool = cx.pool_mut().packets_mut();
                match self.replay.as_mut() {
                    Some(r) => r.replay_into(
                        &mut pool,
                        &frame.buffers()[start..],
                        |p, bytes, off, len| {
                            // The packet and what follows it: its padding makes 64 bytes
                            // at least.
                            p.append_chunks(bytes.get(off..).unwrap_or_default(), len);
                        },
                    ),
                    None => {
                        for &bi in &frame.buffers()[start..] {
                            let (flow, data) = self.gen.next_packet();
                            let mut p = pool.packet_mut(bi);
                            let n = data.len().min(p.tailroom());
                            if let Ok(dst) = p.append(n) {
                                dst.copy_from_slice(&data[..n]);
                            }
                            // The receive interface of a live-generated packet is its flow's.
                            let m = p.meta_mut();
                            m.opaque = flow as u32;
                            m.rx_if = self.gen.flows().get(flow).map_or(0, |f| f.rx_if);
                        }
                    }
                }
                got
            }
        };
        self.produced += got as u64;
        if got < want {
            // Like a NIC with an empty ring: the packets that found no buffer are dropped.
            let missing = want - got;
            if let Some(r) = self.replay.as_mut() {
                r.pos = (r.pos + missing) % r.index.len().max(1);
            }
            self.no_buffer += missing as u64;
            cx.drop_unreceived(SourceError::NoBuffer, missing as u64);
        }
        cx.enqueue_all(frame, GeneratorNext::Out);
    }
}
