//! NAT: endpoint-dependent NAPT44 for TCP, UDP and ICMP echo over shared flow state.
//!
//! Inside hosts (a prefix, `10.0.0.0/8` by default) reach the outside through a pool of
//! public IPv4 addresses (`198.51.100.1..` by default); each inside flow, keyed by its
//! [`InKey`] (inside source, source port or ICMP identifier, destination, destination
//! port, protocol), gets its own outside `(address, port)` from the pool (ports from 1024
//! up). Return packets to a public `address:port` are looked up in the port map, checked
//! against the flow's remote endpoint, and translated back.
//!
//! State, all in one [`Domain`]:
//!
//! * the in→out sessions, a [`FlowTable`]`<InKey, Session>`;
//! * the out→in port map, a [`StripedArray`]`<u32>` indexed by (public address, protocol,
//!   port): the session's record id + 1 (0: free; with [`FREE_LINK`] set: on its stripe's
//!   list of returned ports).
//!
//! A session's outside port is chosen so that `port % stripes` is the stripe of its in→out
//! key, so every packet (either direction) and every expiry touches ONE stripe: one
//! section per packet. Each worker has, per (protocol, stripe), a preallocated stack of
//! free `(address, port)` candidates of its own block (under flow affinity the stripe's
//! owner holds all its ports; otherwise the ports are split among the workers), so
//! allocations by different workers never touch the same memory. Expiry runs in
//! [`NfWorker::after_vector`] ([`FlowTable::expire`], a bounded number of buckets per
//! vector); the sweeper of a stripe (`stripe % workers`, under every strategy) clears the
//! port map entry and pushes the port onto its own stack when the port is of its block,
//! else onto the stripe's shared list of returned ports (in the port map itself, so in
//! the same stripe), which any worker in a section of that stripe allocates from once its
//! own stack is empty. So no port is ever lost, whatever the strategy.
//!
//! Timeouts are per protocol and TCP state: a record's "last seen" time in the table is
//! used as its deadline (`now + timeout` is passed as the time), and the sweep expires
//! records past it.
//!
//! Packets are checked before any state is touched: IPv4 header checksum, lengths
//! (total length against the frame and the header length, IP options skipped through
//! IHL), TTL (≤ 1: dropped; translated packets leave with TTL − 1), fragments (every
//! fragment is dropped, first ones too: without reassembly the later fragments could not
//! be translated, so a translated first fragment would be useless), L4 header lengths.
//! Checksums are updated incrementally (RFC 1624): the IPv4 header's, TCP's and UDP's
//! (pseudo header and port; a zero UDP checksum stays zero), ICMP's (identifier).
//!
//! ```
//! use pktvec_nf::nat::{Nat, NatConfig, NatTraffic};
//! use pktvec_nf::runtime::{run, RunConfig};
//! use pktvec_state::{Domain, Strategy, SyncConfig};
//! use std::sync::Arc;
//! let d = Domain::new(SyncConfig { strategy: Strategy::Fine, workers: 1, stripes: 64, ..SyncConfig::default() })?;
//! let nat = Arc::new(Nat::new(d, NatConfig { capacity: 4096, ..NatConfig::default() })?);
//! let traffic = NatTraffic::new(200, 7);
//! let cfg = RunConfig { packets_per_worker: 1000, pin: false, ..RunConfig::default() };
//! let r = run(&nat, move |w| traffic.frames(w, 1000), &cfg)?;
//! assert!(r.report.conservation().is_balanced());
//! assert_eq!(r.counter("in2out"), 1000);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::runtime::{Nf, NfWorker};
use pktvec_graph::{clock, node_errors};
use pktvec_packet::builder::PacketBuilder;
use pktvec_packet::checksum::{checksum, update_u16, update_u32};
use pktvec_packet::wire::{parse_l2, EtherType, MacAddr, TcpFlags};
use pktvec_packet::PacketMut;
use pktvec_state::{
    Domain, FlowTable, Section, StripedArray, TableConfig, TableWorker, WorkerSync,
};
use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A port map value with this bit set is a free port on its stripe's list of returned
/// ports; the low bits are the next one's index + 1 (0: end of the list).
pub const FREE_LINK: u32 = 1 << 31;

/// Most public addresses a pool may have.
pub const MAX_POOL: usize = 64;

const PROTO_TCP: u8 = 6;
const PROTO_UDP: u8 = 17;
const PROTO_ICMP: u8 = 1;
const PROTOS: usize = 3;

/// The protocol's index in the port map (TCP 0, UDP 1, ICMP 2).
fn proto_index(p: u8) -> usize {
    match p {
        PROTO_TCP => 0,
        PROTO_UDP => 1,
        _ => 2,
    }
}

/// Idle timeouts.
#[derive(Clone, Copy, Debug)]
pub struct Timeouts {
    /// UDP sessions.
    pub udp: Duration,
    /// TCP sessions that carried data and saw no FIN or RST.
    pub tcp_established: Duration,
    /// TCP sessions opening (SYN only) or closing (FIN or RST seen).
    pub tcp_transitory: Duration,
    /// ICMP echo sessions.
    pub icmp: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            udp: Duration::from_secs(300),
            tcp_established: Duration::from_secs(7440),
            tcp_transitory: Duration::from_secs(240),
            icmp: Duration::from_secs(60),
        }
    }
}

impl Timeouts {
    /// Every timeout `d` (tests).
    pub fn all(d: Duration) -> Self {
        Timeouts {
            udp: d,
            tcp_established: d,
            tcp_transitory: d,
            icmp: d,
        }
    }
}

/// A NAT's settings.
#[derive(Clone, Debug)]
pub struct NatConfig {
    /// The inside prefix (address, length).
    pub inside: (Ipv4Addr, u8),
    /// The public addresses (1..=[`MAX_POOL`]).
    pub pool: Vec<Ipv4Addr>,
    /// Outside ports handed out (at least 1024).
    pub ports: std::ops::RangeInclusive<u16>,
    /// Sessions the table holds at most.
    pub capacity: usize,
    /// Idle timeouts.
    pub timeouts: Timeouts,
    /// Table buckets each worker sweeps for expiry after each vector.
    pub sweep_buckets: usize,
}

impl Default for NatConfig {
    fn default() -> Self {
        NatConfig {
            inside: (Ipv4Addr::new(10, 0, 0, 0), 8),
            pool: (1..=4).map(|i| Ipv4Addr::new(198, 51, 100, i)).collect(),
            ports: 1024..=65535,
            capacity: 1 << 16,
            timeouts: Timeouts::default(),
            sweep_buckets: 8,
        }
    }
}

/// Why a NAT cannot be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NatError {
    /// Bad settings.
    #[error("nat settings: {0}")]
    Config(String),
}

/// An inside flow: the in→out session's key.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct InKey {
    /// Inside source address.
    pub src: u32,
    /// Remote (destination) address.
    pub dst: u32,
    /// Inside source port, or ICMP echo identifier.
    pub sport: u16,
    /// Remote port (0 for ICMP).
    pub dport: u16,
    /// IP protocol (6, 17 or 1).
    pub proto: u8,
}

impl InKey {
    /// The key's 64-bit hash (its low bits pick the stripe).
    #[inline]
    pub fn hash(&self) -> u64 {
        let a = (u64::from(self.src) << 32) | u64::from(self.dst);
        let b =
            (u64::from(self.sport) << 32) | (u64::from(self.dport) << 16) | u64::from(self.proto);
        mix(a ^ mix(b ^ 0x9e37_79b9_7f4a_7c15))
    }
}

#[inline]
fn mix(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

/// TCP state bits of a [`Session`].
pub mod tcp_state {
    /// A SYN was seen.
    pub const SYN: u8 = 1;
    /// A segment without SYN, FIN or RST was seen (data or a bare ACK).
    pub const DATA: u8 = 2;
    /// A FIN was seen from inside.
    pub const FIN_IN: u8 = 4;
    /// A FIN was seen from outside.
    pub const FIN_OUT: u8 = 8;
    /// A RST was seen.
    pub const RST: u8 = 16;
}

/// One session's state.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Session {
    /// The public address.
    pub out_ip: u32,
    /// The public port (ICMP: identifier).
    pub out_port: u16,
    /// The public address's index in the pool.
    pub ip_index: u16,
    /// IP protocol (6, 17 or 1).
    pub proto: u8,
    /// TCP state ([`tcp_state`] bits).
    pub tcp: u8,
    /// Packets inside → outside.
    pub pkts_in2out: u64,
    /// Packets outside → inside.
    pub pkts_out2in: u64,
    /// Bytes (IP total length) inside → outside.
    pub bytes_in2out: u64,
    /// Bytes outside → inside.
    pub bytes_out2in: u64,
    /// TSC of the last packet.
    pub last_tsc: u64,
    /// Packets a second, an exponentially weighted moving average (weight 1/8) of the
    /// inverse gap between packets.
    pub rate_pps: f32,
}

impl Session {
    fn touch(&mut self, now: u64, hz: f32) {
        if self.last_tsc != 0 && now > self.last_tsc {
            let inst = hz / (now - self.last_tsc) as f32;
            self.rate_pps += (inst - self.rate_pps) * 0.125;
        }
        self.last_tsc = now;
    }

    fn tcp_transitory(&self) -> bool {
        self.tcp & (tcp_state::FIN_IN | tcp_state::FIN_OUT | tcp_state::RST) != 0
            || self.tcp & tcp_state::DATA == 0
    }
}

/// A session as the control plane sees it ([`NatWorker::sessions`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SessionInfo {
    /// The inside flow.
    pub key: InKey,
    /// Its state.
    pub session: Session,
}

node_errors! {
    /// Why the NAT drops packets.
    pub enum NatDrop {
        /// Not IPv4 (or a broken Ethernet/VLAN header).
        NotIpv4 = "nat: not ipv4",
        /// A header ends past the frame, or a length field lies.
        Truncated = "nat: truncated or bad length",
        /// The IPv4 header checksum does not verify.
        BadIpChecksum = "nat: bad ip checksum",
        /// TTL of 0 or 1.
        TtlExpired = "nat: ttl expired",
        /// An IPv4 fragment (first or not).
        Fragment = "nat: fragment",
        /// Neither TCP, UDP nor ICMP.
        UnknownProtocol = "nat: unknown protocol",
        /// ICMP other than echo (request from inside, reply from outside).
        IcmpNotEcho = "nat: icmp not echo",
        /// Neither from the inside prefix nor to a pool address.
        NotForNat = "nat: not inside nor to the pool",
        /// No free outside port in the flow's stripe.
        PortsExhausted = "nat: ports exhausted",
        /// No session record (table full or both buckets full).
        TableFull = "nat: session table full",
        /// A return packet to a port with no session.
        NoSession = "nat: no session",
        /// A return packet from another remote endpoint than the session's.
        RemoteMismatch = "nat: remote endpoint mismatch",
    }
}

/// Which way a packet goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dir {
    In2Out,
    Out2In,
}

/// What [`parse`] found.
#[derive(Clone, Copy, Debug)]
struct Parsed {
    dir: Dir,
    l3: usize,
    l4: usize,
    proto: u8,
    src: u32,
    dst: u32,
    /// TCP/UDP source port; ICMP: the identifier for a request, 0 for a reply.
    sport: u16,
    /// TCP/UDP destination port; ICMP: 0 for a request, the identifier for a reply.
    dport: u16,
    tcp_flags: u8,
    ip_len: u16,
}

#[inline]
fn be16(d: &[u8], o: usize) -> u16 {
    u16::from_be_bytes([d[o], d[o + 1]])
}

#[inline]
fn be32(d: &[u8], o: usize) -> u32 {
    u32::from_be_bytes([d[o], d[o + 1], d[o + 2], d[o + 3]])
}

/// Everything the NAT needs to know about the shape of the addresses.
#[derive(Clone, Copy, Debug)]
struct Addrs {
    inside_net: u32,
    inside_mask: u32,
    pool_first: u32,
    pool_len: u32,
}

impl Addrs {
    fn pool_index(&self, ip: u32) -> Option<usize> {
        let i = ip.wrapping_sub(self.pool_first);
        (i < self.pool_len).then_some(i as usize)
    }
}

/// Checks a frame and finds its flow; no state touched.
fn parse(d: &[u8], a: &Addrs) -> Result<Parsed, NatDrop> {
    let l2 = parse_l2(d).map_err(|_| NatDrop::NotIpv4)?;
    if l2.ethertype != EtherType::IPV4 {
        return Err(NatDrop::NotIpv4);
    }
    let l3 = usize::from(l2.l3_offset);
    if d.len() < l3 + 20 {
        return Err(NatDrop::Truncated);
    }
    if d[l3] >> 4 != 4 {
        return Err(NatDrop::NotIpv4);
    }
    let hl = usize::from(d[l3] & 0x0f) * 4;
    let total = usize::from(be16(d, l3 + 2));
    if hl < 20 || total < hl || d.len() < l3 + total {
        return Err(NatDrop::Truncated);
    }
    if checksum(&d[l3..l3 + hl]) != 0 {
        return Err(NatDrop::BadIpChecksum);
    }
    if d[l3 + 8] <= 1 {
        return Err(NatDrop::TtlExpired);
    }
    let frag = be16(d, l3 + 6);
    if frag & 0x3fff != 0 {
        return Err(NatDrop::Fragment);
    }
    let proto = d[l3 + 9];
    let src = be32(d, l3 + 12);
    let dst = be32(d, l3 + 16);
    let dir = if src & a.inside_mask == a.inside_net {
        Dir::In2Out
    } else if a.pool_index(dst).is_some() {
        Dir::Out2In
    } else {
        return Err(NatDrop::NotForNat);
    };
    let l4 = l3 + hl;
    let l4_len = total - hl;
    let (mut sport, mut dport, mut tcp_flags) = (0, 0, 0);
    match proto {
        PROTO_TCP => {
            if l4_len < 20 {
                return Err(NatDrop::Truncated);
            }
            let doff = usize::from(d[l4 + 12] >> 4) * 4;
            if doff < 20 || doff > l4_len {
                return Err(NatDrop::Truncated);
            }
            sport = be16(d, l4);
            dport = be16(d, l4 + 2);
            tcp_flags = d[l4 + 13];
        }
        PROTO_UDP => {
            if l4_len < 8 {
                return Err(NatDrop::Truncated);
            }
            let ulen = usize::from(be16(d, l4 + 4));
            if ulen < 8 || ulen > l4_len {
                return Err(NatDrop::Truncated);
            }
            sport = be16(d, l4);
            dport = be16(d, l4 + 2);
        }
        PROTO_ICMP => {
            if l4_len < 8 {
                return Err(NatDrop::Truncated);
            }
            let (ty, code) = (d[l4], d[l4 + 1]);
            let id = be16(d, l4 + 4);
            match (dir, ty, code) {
                (Dir::In2Out, 8, 0) => sport = id,
                (Dir::Out2In, 0, 0) => dport = id,
                _ => return Err(NatDrop::IcmpNotEcho),
            }
        }
        _ => return Err(NatDrop::UnknownProtocol),
    }
    Ok(Parsed {
        dir,
        l3,
        l4,
        proto,
        src,
        dst,
        sport,
        dport,
        tcp_flags,
        ip_len: total as u16,
    })
}

/// Rewrites the address at `ip_off` and the port (ICMP: identifier) at `port_off` of a
/// checked packet, decrements the TTL, and updates the checksums incrementally.
fn rewrite(d: &mut [u8], p: &Parsed, new_ip: u32, new_port: u16) {
    let ip_off = match p.dir {
        Dir::In2Out => 12,
        Dir::Out2In => 16,
    };
    let port_off = match (p.dir, p.proto) {
        (_, PROTO_ICMP) => 4,
        (Dir::In2Out, _) => 0,
        (Dir::Out2In, _) => 2,
    };
    let l3 = p.l3;
    let l4 = p.l4;
    let old_ip = be32(d, l3 + ip_off);
    let old_port = be16(d, l4 + port_off);
    // IPv4 header: the address and the TTL/protocol word
    let ttl_word = be16(d, l3 + 8);
    let new_ttl_word = ttl_word - 0x0100;
    let mut c = be16(d, l3 + 10);
    c = update_u32(c, old_ip, new_ip);
    c = update_u16(c, ttl_word, new_ttl_word);
    d[l3 + 8..l3 + 10].copy_from_slice(&new_ttl_word.to_be_bytes());
    d[l3 + 10..l3 + 12].copy_from_slice(&c.to_be_bytes());
    d[l3 + ip_off..l3 + ip_off + 4].copy_from_slice(&new_ip.to_be_bytes());
    // L4: TCP and UDP cover the pseudo header (the address) and the port; ICMP only the
    // identifier
    let ck = match p.proto {
        PROTO_TCP => 16,
        PROTO_UDP => 6,
        _ => 2,
    };
    let old = be16(d, l4 + ck);
    let new = match p.proto {
        PROTO_ICMP => update_u16(old, old_port, new_port),
        PROTO_UDP if old == 0 => 0,
        _ => {
            let c = update_u16(update_u32(old, old_ip, new_ip), old_port, new_port);
            if p.proto == PROTO_UDP && c == 0 {
                0xffff
            } else {
                c
            }
        }
    };
    d[l4 + ck..l4 + ck + 2].copy_from_slice(&new.to_be_bytes());
    d[l4 + port_off..l4 + port_off + 2].copy_from_slice(&new_port.to_be_bytes());
}

/// One worker's free ports and table records, parked in the [`Nat`] between runs.
struct WorkerState {
    tw: TableWorker,
    /// Per (protocol, stripe): `ip index << 16 | port`, this worker's block.
    ports: Vec<Vec<u32>>,
}

/// What every worker shares (behind the [`Nat`]'s `Arc`).
struct Shared {
    domain: Arc<Domain>,
    table: FlowTable<InKey, Session>,
    ports: StripedArray<u32>,
    addrs: Addrs,
    port_lo: u16,
    port_hi: u16,
    stripe_bits: u32,
    timeouts_tsc: [u64; 4],
    hz: f32,
    sweep_buckets: usize,
    parked: Mutex<Vec<Option<WorkerState>>>,
}

/// Indices into `timeouts_tsc`.
const T_UDP: usize = 0;
const T_EST: usize = 1;
const T_TRANS: usize = 2;
const T_ICMP: usize = 3;

/// The NAT: what every worker shares (see the [module](self)).
pub struct Nat(Arc<Shared>);

impl Nat {
    /// A NAT in `domain` (whose workers will run it).
    pub fn new(domain: Arc<Domain>, cfg: NatConfig) -> Result<Nat, NatError> {
        Shared::new(domain, cfg).map(|s| Nat(Arc::new(s)))
    }

    /// The session table.
    pub fn table(&self) -> &FlowTable<InKey, Session> {
        &self.0.table
    }

    /// Outside ports in all (every address and protocol).
    pub fn total_ports(&self) -> usize {
        self.0.total_ports()
    }

    /// The public addresses, in pool order.
    pub fn pool(&self) -> Vec<Ipv4Addr> {
        (0..self.0.addrs.pool_len)
            .map(|i| Ipv4Addr::from(self.0.addrs.pool_first + i))
            .collect()
    }
}

impl Shared {
    fn new(domain: Arc<Domain>, cfg: NatConfig) -> Result<Shared, NatError> {
        let n = cfg.pool.len();
        if n == 0 || n > MAX_POOL {
            return Err(NatError::Config(format!(
                "the pool has {n} addresses (1..={MAX_POOL})"
            )));
        }
        let first = u32::from(cfg.pool[0]);
        if cfg
            .pool
            .iter()
            .enumerate()
            .any(|(i, a)| u32::from(*a) != first.wrapping_add(i as u32))
        {
            return Err(NatError::Config(
                "the pool must be consecutive addresses".into(),
            ));
        }
        if *cfg.ports.start() < 1024 || cfg.ports.is_empty() {
            return Err(NatError::Config(format!(
                "ports {:?}: must be a non-empty range from 1024 up",
                cfg.ports
            )));
        }
        let (net, len) = cfg.inside;
        if len > 32 {
            return Err(NatError::Config(format!("inside prefix length {len}")));
        }
        let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
        let inside_net = u32::from(net) & mask;
        if (0..n as u32).any(|i| first.wrapping_add(i) & mask == inside_net) {
            return Err(NatError::Config(
                "a pool address lies in the inside prefix".into(),
            ));
        }
        if domain.stripes() > usize::from(*cfg.ports.start()) {
            return Err(NatError::Config(format!(
                "{} stripes: at most the first port ({})",
                domain.stripes(),
                cfg.ports.start()
            )));
        }
        if cfg.capacity >= FREE_LINK as usize {
            return Err(NatError::Config("capacity too large".into()));
        }
        let hz = clock::tsc_hz();
        let t = |d: Duration| (d.as_secs_f64() * hz) as u64;
        let to = &cfg.timeouts;
        let table = FlowTable::new(
            &domain,
            "nat-sessions",
            TableConfig {
                capacity: cfg.capacity,
                ..TableConfig::default()
            },
        );
        let ports = StripedArray::new(&domain, "nat-ports", n * PROTOS * 65536);
        let workers = domain.workers();
        Ok(Shared {
            stripe_bits: domain.stripes().trailing_zeros(),
            domain,
            table,
            ports,
            addrs: Addrs {
                inside_net,
                inside_mask: mask,
                pool_first: first,
                pool_len: n as u32,
            },
            port_lo: *cfg.ports.start(),
            port_hi: *cfg.ports.end(),
            timeouts_tsc: [
                t(to.udp),
                t(to.tcp_established),
                t(to.tcp_transitory),
                t(to.icmp),
            ],
            hz: hz as f32,
            sweep_buckets: cfg.sweep_buckets.max(1),
            parked: Mutex::new((0..workers).map(|_| None).collect()),
        })
    }

    fn total_ports(&self) -> usize {
        self.addrs.pool_len as usize * PROTOS * usize::from(self.port_hi - self.port_lo + 1)
    }

    /// The port map index of (address index, protocol, port).
    #[inline]
    fn port_index(ip: usize, proto: u8, port: u16) -> usize {
        ((ip * PROTOS + proto_index(proto)) << 16) | usize::from(port)
    }

    /// The worker whose block holds a port: the stripe's owner under flow affinity,
    /// otherwise spread over the workers.
    fn block_owner(&self, ip: usize, port: u16) -> usize {
        let d = &self.domain;
        let stripe = usize::from(port) & (d.stripes() - 1);
        match d.strategy() {
            pktvec_state::Strategy::Affinity => d.owner(stripe),
            _ => ((usize::from(port) >> self.stripe_bits) + ip) % d.workers(),
        }
    }

    fn build_worker(&self, id: usize) -> WorkerState {
        let stripes = self.domain.stripes();
        let mask = stripes - 1;
        let mut count = vec![0usize; PROTOS * stripes];
        for ip in 0..self.addrs.pool_len as usize {
            for port in self.port_lo..=self.port_hi {
                if self.block_owner(ip, port) == id {
                    for p in 0..PROTOS {
                        count[p * stripes + (usize::from(port) & mask)] += 1;
                    }
                }
            }
        }
        let mut ports: Vec<Vec<u32>> = count.iter().map(|&c| Vec::with_capacity(c)).collect();
        // pushed high to low so the lowest ports come off first
        for ip in (0..self.addrs.pool_len as usize).rev() {
            for port in (self.port_lo..=self.port_hi).rev() {
                if self.block_owner(ip, port) == id {
                    for (p, _) in [PROTO_TCP, PROTO_UDP, PROTO_ICMP].iter().enumerate() {
                        ports[p * stripes + (usize::from(port) & mask)]
                            .push(((ip as u32) << 16) | u32::from(port));
                    }
                }
            }
        }
        WorkerState {
            tw: self.table.worker(id),
            ports,
        }
    }

    #[inline]
    fn timeout(&self, proto: u8, s: &Session) -> u64 {
        self.timeouts_tsc[match proto {
            PROTO_UDP => T_UDP,
            PROTO_ICMP => T_ICMP,
            _ if s.tcp_transitory() => T_TRANS,
            _ => T_EST,
        }]
    }
}

impl Nf for Nat {
    type Worker = NatWorker;
    const NAME: &'static str = "nat";

    fn domain(&self) -> &Arc<Domain> {
        &self.0.domain
    }

    /// Worker `id`'s side: its state parked by its last run's worker, else fresh.
    fn worker(&self, id: usize) -> NatWorker {
        let nat = &self.0;
        let parked = nat
            .parked
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_mut(id)
            .and_then(Option::take);
        let st = parked.unwrap_or_else(|| nat.build_worker(id));
        NatWorker {
            nat: nat.clone(),
            sync: nat.domain.worker(id),
            st: Some(st),
            in2out: 0,
            out2in: 0,
            created: 0,
            expired: 0,
        }
    }

    fn owner(&self, frame: &[u8]) -> Option<usize> {
        let nat = &self.0;
        let p = parse(frame, &nat.addrs).ok()?;
        let stripe = match p.dir {
            Dir::In2Out => nat.domain.stripe_of(key_of(&p).hash()),
            Dir::Out2In => usize::from(p.dport) & (nat.domain.stripes() - 1),
        };
        Some(nat.domain.owner(stripe))
    }
}

fn key_of(p: &Parsed) -> InKey {
    InKey {
        src: p.src,
        dst: p.dst,
        sport: p.sport,
        dport: p.dport,
        proto: p.proto,
    }
}

/// One worker's side of the [`Nat`]. Dropped, it parks its free ports and records in the
/// `Nat` for the worker of the same id made next (a later run continues the state).
pub struct NatWorker {
    nat: Arc<Shared>,
    sync: WorkerSync,
    st: Option<WorkerState>,
    in2out: u64,
    out2in: u64,
    created: u64,
    expired: u64,
}

impl Drop for NatWorker {
    fn drop(&mut self) {
        // park the free ports and records for the next run's worker: nothing is lost
        let id = self.sync.id();
        if let Some(st) = self.st.take() {
            let mut p = self.nat.parked.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(slot) = p.get_mut(id) {
                *slot = Some(st);
            }
        }
    }
}

/// What the in→out section did.
enum Out {
    Translated(u32, u16),
    Created(u32, u16),
}

impl NatWorker {
    /// Free table records on this worker's stack.
    pub fn free_records(&self) -> usize {
        self.st.as_ref().map_or(0, |s| s.tw.free())
    }

    /// The table side (counters).
    pub fn table_worker(&self) -> Option<&TableWorker> {
        self.st.as_ref().map(|s| &s.tw)
    }

    /// Free ports on this worker's stacks.
    pub fn free_ports(&self) -> usize {
        self.st
            .as_ref()
            .map_or(0, |s| s.ports.iter().map(Vec::len).sum())
    }

    /// Free ports on the returned-port lists of the stripes this worker sweeps
    /// (`stripe % workers == id`).
    pub fn shared_free_ports(&mut self) -> usize {
        let nat = &*self.nat;
        let stripes = nat.domain.stripes();
        let me = self.sync.id();
        let mut n = 0;
        for s in (0..stripes).filter(|s| s % nat.domain.workers() == me) {
            for p in 0..PROTOS {
                n += self.sync.section(s, |sec| {
                    let mut c = 0;
                    for ip in 0..nat.addrs.pool_len as usize {
                        let base = Shared::port_index(ip, [PROTO_TCP, PROTO_UDP, PROTO_ICMP][p], 0);
                        // walk this (address, protocol)'s ports of the stripe (not the
                        // list head, below the first port)
                        let mut port = s;
                        while port < 65536 {
                            if port >= usize::from(nat.port_lo) {
                                let v = *nat.ports.get(sec, base + port);
                                c += usize::from(v & FREE_LINK != 0);
                            }
                            port += stripes;
                        }
                    }
                    c
                });
            }
        }
        n
    }

    /// The live sessions whose stripe this worker sweeps (`stripe % workers == id`): the
    /// control plane's dump (allocates; not for the packet path).
    pub fn sessions(&mut self) -> Vec<SessionInfo> {
        let nat = &*self.nat;
        let stripes = nat.domain.stripes();
        let me = self.sync.id();
        let mut out: Vec<SessionInfo> = Vec::with_capacity(nat.table.capacity());
        for s in (0..stripes).filter(|s| s % nat.domain.workers() == me) {
            self.sync.section(s, |sec| {
                let mut i = s;
                while i < nat.ports.len() {
                    let v = *nat.ports.get(sec, i);
                    if v != 0 && v & FREE_LINK == 0 {
                        if let Some((k, sess)) = nat.table.get(sec, v - 1) {
                            if out.len() < out.capacity() {
                                // within capacity: no allocation in the section
                                out.push(SessionInfo {
                                    key: *k,
                                    session: *sess,
                                });
                            }
                        }
                    }
                    i += stripes;
                }
            });
        }
        out
    }

    /// Sweeps up to `max_buckets` table buckets for sessions past their deadline at `now`,
    /// freeing their records and ports. Returns the sessions expired.
    pub fn sweep(&mut self, now: u64, max_buckets: usize) -> usize {
        let nat = &*self.nat;
        let Some(st) = self.st.as_mut() else {
            return 0;
        };
        let me = self.sync.id();
        let stripes = nat.domain.stripes();
        let mask = stripes - 1;
        let ports = &mut st.ports;
        let n = nat.table.expire(
            &mut self.sync,
            &mut st.tw,
            now,
            1,
            max_buckets,
            |sec, _key, s| release(nat, sec, ports, me, mask, s),
        );
        self.expired += n as u64;
        n
    }
}

/// Frees a session's port (in the section of its stripe): back to this worker's stack if
/// of its block, else onto the stripe's returned-port list.
#[inline]
fn release(
    nat: &Shared,
    sec: &mut Section<'_>,
    ports: &mut [Vec<u32>],
    me: usize,
    mask: usize,
    s: &Session,
) {
    let ip = usize::from(s.ip_index);
    let proto = s.proto;
    let idx = Shared::port_index(ip, proto, s.out_port);
    let stripe = usize::from(s.out_port) & mask;
    if nat.block_owner(ip, s.out_port) == me {
        *nat.ports.get_mut(sec, idx) = 0;
        let stack = &mut ports[proto_index(proto) * (mask + 1) + stripe];
        if stack.len() < stack.capacity() {
            stack.push(((ip as u32) << 16) | u32::from(s.out_port));
        }
    } else {
        push_shared(nat, sec, ip, proto, stripe, idx);
    }
}

/// The returned-port list head of (address, protocol, stripe): the port map element of
/// port `stripe`, which lies in that stripe and is never handed out ([`Nat::new`] checks
/// that the domain has no more stripes than the first port handed out).
#[inline]
fn head_index(ip: usize, proto: u8, stripe: usize) -> usize {
    Shared::port_index(ip, proto, 0) + stripe
}

fn push_shared(
    nat: &Shared,
    sec: &mut Section<'_>,
    ip: usize,
    proto: u8,
    stripe: usize,
    idx: usize,
) {
    let h = head_index(ip, proto, stripe);
    let head = *nat.ports.get(sec, h) & !FREE_LINK;
    *nat.ports.get_mut(sec, idx) = FREE_LINK | head;
    *nat.ports.get_mut(sec, h) = FREE_LINK | (idx as u32 + 1);
}

fn pop_shared(
    nat: &Shared,
    sec: &mut Section<'_>,
    proto: u8,
    stripe: usize,
) -> Option<(usize, u16)> {
    for ip in 0..nat.addrs.pool_len as usize {
        let h = head_index(ip, proto, stripe);
        let head = *nat.ports.get(sec, h) & !FREE_LINK;
        if head != 0 {
            let idx = head as usize - 1;
            let next = *nat.ports.get(sec, idx) & !FREE_LINK;
            *nat.ports.get_mut(sec, h) = if next == 0 { 0 } else { FREE_LINK | next };
            *nat.ports.get_mut(sec, idx) = 0;
            return Some((ip, (idx & 0xffff) as u16));
        }
    }
    None
}

impl NfWorker for NatWorker {
    type Error = NatDrop;

    fn packet(&mut self, pkt: &mut PacketMut<'_>, now: u64) -> Result<(), NatDrop> {
        let nat = &*self.nat;
        let p = parse(pkt.data(), &nat.addrs)?;
        let Some(st) = self.st.as_mut() else {
            return Err(NatDrop::TableFull);
        };
        let mask = nat.domain.stripes() - 1;
        match p.dir {
            Dir::In2Out => {
                let key = key_of(&p);
                let h = key.hash();
                let stripe = nat.table.stripe(h);
                let ports = &mut st.ports;
                let tw = &mut st.tw;
                let pi = proto_index(p.proto);
                let stack_i = pi * (mask + 1) + stripe;
                let r = self.sync.section(stripe, |sec| {
                    let guess = nat.timeouts_tsc[match p.proto {
                        PROTO_UDP => T_UDP,
                        PROTO_ICMP => T_ICMP,
                        _ if p.tcp_flags & 0x07 != 0 => T_TRANS,
                        _ => T_EST,
                    }];
                    let (out, s) = match nat.table.find_mut(sec, &key, h, now + guess) {
                        Some((_, s)) => (Out::Translated(s.out_ip, s.out_port), s),
                        None => {
                            let own = ports[stack_i].pop();
                            let cand = match own {
                                Some(c) => Some(((c >> 16) as usize, c as u16)),
                                None => pop_shared(nat, sec, p.proto, stripe),
                            };
                            let Some((ip, port)) = cand else {
                                return Err(NatDrop::PortsExhausted);
                            };
                            match nat.table.entry(sec, tw, key, h, now + guess) {
                                Ok((id, s, _)) => {
                                    s.out_ip = nat.addrs.pool_first + ip as u32;
                                    s.out_port = port;
                                    s.ip_index = ip as u16;
                                    s.proto = p.proto;
                                    let out_ip = s.out_ip;
                                    // the port map points at the session (one section
                                    // borrow at a time: the session is taken again after)
                                    *nat.ports
                                        .get_mut(sec, Shared::port_index(ip, p.proto, port)) =
                                        id + 1;
                                    let Some((_, s)) = nat.table.get(sec, id) else {
                                        return Err(NatDrop::TableFull);
                                    };
                                    (Out::Created(out_ip, port), s)
                                }
                                Err(_) => {
                                    match own {
                                        Some(c) => ports[stack_i].push(c),
                                        None => push_shared(
                                            nat,
                                            sec,
                                            ip,
                                            p.proto,
                                            stripe,
                                            Shared::port_index(ip, p.proto, port),
                                        ),
                                    }
                                    return Err(NatDrop::TableFull);
                                }
                            }
                        }
                    };
                    s.pkts_in2out += 1;
                    s.bytes_in2out += u64::from(p.ip_len);
                    s.touch(now, nat.hz);
                    if p.proto == PROTO_TCP {
                        s.tcp |= tcp_bits(p.tcp_flags, Dir::In2Out);
                    }
                    let t = nat.timeout(p.proto, s);
                    if t != guess {
                        nat.table.find_mut(sec, &key, h, now + t);
                    }
                    Ok(out)
                })?;
                let (ip, port) = match r {
                    Out::Translated(ip, port) => (ip, port),
                    Out::Created(ip, port) => {
                        self.created += 1;
                        (ip, port)
                    }
                };
                rewrite(pkt.data_mut(), &p, ip, port);
                self.in2out += 1;
            }
            Dir::Out2In => {
                let ip = nat.addrs.pool_index(p.dst).unwrap_or(0);
                let idx = Shared::port_index(ip, p.proto, p.dport);
                let stripe = usize::from(p.dport) & mask;
                let (ip, port) = self.sync.section(stripe, |sec| {
                    let v = *nat.ports.get(sec, idx);
                    if v == 0 || v & FREE_LINK != 0 {
                        return Err(NatDrop::NoSession);
                    }
                    let Some((k, s)) = nat.table.get(sec, v - 1) else {
                        return Err(NatDrop::NoSession);
                    };
                    if k.dst != p.src || k.dport != p.sport || k.proto != p.proto {
                        return Err(NatDrop::RemoteMismatch);
                    }
                    let key = *k;
                    s.pkts_out2in += 1;
                    s.bytes_out2in += u64::from(p.ip_len);
                    s.touch(now, nat.hz);
                    if p.proto == PROTO_TCP {
                        s.tcp |= tcp_bits(p.tcp_flags, Dir::Out2In);
                    }
                    let t = nat.timeout(p.proto, s);
                    // refresh the deadline (get() leaves it)
                    nat.table.find_mut(sec, &key, key.hash(), now + t);
                    Ok((key.src, key.sport))
                })?;
                rewrite(pkt.data_mut(), &p, ip, port);
                self.out2in += 1;
            }
        }
        Ok(())
    }

    fn after_vector(&mut self, now: u64) {
        let b = self.nat.sweep_buckets;
        self.sweep(now, b);
    }

    fn sync(&mut self) -> &mut WorkerSync {
        &mut self.sync
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("in2out", self.in2out),
            ("out2in", self.out2in),
            ("sessions created", self.created),
            ("sessions expired", self.expired),
        ]
    }
}

#[inline]
fn tcp_bits(flags: u8, dir: Dir) -> u8 {
    let f = TcpFlags(flags);
    let mut b = 0;
    if f.contains(TcpFlags::SYN) {
        b |= tcp_state::SYN;
    }
    if f.contains(TcpFlags::RST) {
        b |= tcp_state::RST;
    }
    if f.contains(TcpFlags::FIN) {
        b |= match dir {
            Dir::In2Out => tcp_state::FIN_IN,
            Dir::Out2In => tcp_state::FIN_OUT,
        };
    }
    if flags & 0x07 == 0 {
        b |= tcp_state::DATA;
    }
    b
}

/// A flow's identity for [`same_flow_share`](crate::runtime::same_flow_share): a hash of
/// the IPv4 5-tuple (ICMP: the echo identifier as both ports), `None` for anything else.
pub fn flow_id(frame: &[u8]) -> Option<u64> {
    let l2 = parse_l2(frame).ok()?;
    if l2.ethertype != EtherType::IPV4 {
        return None;
    }
    let l3 = usize::from(l2.l3_offset);
    let ip = frame.get(l3..l3 + 20)?;
    let l4 = l3 + usize::from(ip[0] & 15) * 4;
    let proto = ip[9];
    let ports = match proto {
        PROTO_ICMP => {
            let id = frame.get(l4 + 4..l4 + 6)?;
            u32::from(u16::from_be_bytes([id[0], id[1]])) * 0x1_0001
        }
        _ => {
            let p = frame.get(l4..l4 + 4)?;
            u32::from_be_bytes([p[0], p[1], p[2], p[3]])
        }
    };
    Some(
        InKey {
            src: be32(ip, 12),
            dst: be32(ip, 16),
            sport: (ports >> 16) as u16,
            dport: ports as u16,
            proto,
        }
        .hash(),
    )
}

/// A seeded NAT workload: `flows` inside flows per worker (inside hosts `10.w+1.x.y` for
/// worker `w`, so workers' flows are disjoint), about 60% TCP (a SYN first, data, a FIN
/// last), 30% UDP and 10% ICMP echo, frames of 64 to 1500 bytes. Flows are picked with a
/// skewed popularity (a few hot flows) and in short bursts, so that about a quarter to a
/// third of the packets have a packet of their flow among the 100 before them
/// ([`same_flow_share`](crate::runtime::same_flow_share) with [`flow_id`]).
///
/// Return traffic is built from the NAT's sessions ([`NatWorker::sessions`]) with
/// [`replies`](Self::replies).
///
/// ```
/// use pktvec_nf::nat::{flow_id, NatTraffic};
/// use pktvec_nf::runtime::same_flow_share;
/// let f = NatTraffic::new(2000, 1).frames(0, 20_000);
/// let s = same_flow_share(&f, 100, flow_id);
/// assert!((0.2..=0.4).contains(&s), "{s}");
/// ```
#[derive(Clone, Debug)]
pub struct NatTraffic {
    flows: usize,
    seed: u64,
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        mix(self.0)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

const MAC_IN: MacAddr = MacAddr([0x02, 0, 0, 0, 0, 1]);
const MAC_OUT: MacAddr = MacAddr([0x02, 0, 0, 0, 0, 2]);

impl NatTraffic {
    /// `flows` flows per worker (at most 65536), seeded.
    pub fn new(flows: usize, seed: u64) -> Self {
        NatTraffic {
            flows: flows.clamp(1, 65536),
            seed,
        }
    }

    /// Flow `f` of worker `w`: (inside host, source port or id, remote, remote port,
    /// protocol).
    pub fn flow(&self, w: usize, f: usize) -> InKey {
        let h = mix(self.seed ^ ((w as u64) << 32) ^ f as u64);
        let proto = match h % 10 {
            0..=5 => PROTO_TCP,
            6..=8 => PROTO_UDP,
            _ => PROTO_ICMP,
        };
        let src = u32::from(Ipv4Addr::new(10, (w + 1) as u8, (f >> 8) as u8, f as u8));
        let dst = u32::from(Ipv4Addr::new(203, 0, 113, 1 + ((h >> 8) % 250) as u8));
        let sport = 1024 + ((h >> 16) % 60000) as u16;
        let dport = match proto {
            PROTO_TCP => [80, 443, 22, 8080][((h >> 40) % 4) as usize],
            PROTO_UDP => [53, 123, 443, 5060][((h >> 40) % 4) as usize],
            _ => 0,
        };
        InKey {
            src,
            dst,
            sport,
            dport,
            proto,
        }
    }

    /// `n` inside → outside frames of worker `w`.
    pub fn frames(&self, w: usize, n: usize) -> Vec<Vec<u8>> {
        let mut rng = Rng(self.seed ^ (w as u64 + 1).wrapping_mul(0xa076_1d64_78bd_642f));
        let mut seq: Vec<(usize, usize)> = Vec::with_capacity(n); // (flow, frame length)
        let mut burst = 0;
        let mut cur = 0;
        let hot = (self.flows / 50).max(1);
        while seq.len() < n {
            if burst == 0 {
                let u = rng.unit();
                cur = if u < 0.12 {
                    rng.below(hot as u64) as usize // a few hot flows
                } else {
                    rng.below(self.flows as u64) as usize
                };
                burst = if rng.unit() < 0.12 {
                    2 + rng.below(3) as usize
                } else {
                    1
                };
            }
            burst -= 1;
            let len = match rng.below(4) {
                0 | 1 => 64,
                2 => 64 + rng.below(1437) as usize,
                _ => 1500,
            };
            seq.push((cur, len));
        }
        let mut first = vec![usize::MAX; self.flows];
        let mut last = vec![usize::MAX; self.flows];
        for (i, &(f, _)) in seq.iter().enumerate() {
            if first[f] == usize::MAX {
                first[f] = i;
            }
            last[f] = i;
        }
        let mut count = vec![0u16; self.flows];
        seq.iter()
            .enumerate()
            .map(|(i, &(f, len))| {
                let k = self.flow(w, f);
                count[f] = count[f].wrapping_add(1);
                let flags = if i == first[f] {
                    TcpFlags::SYN
                } else if i == last[f] {
                    TcpFlags(TcpFlags::FIN.0 | TcpFlags::ACK.0)
                } else {
                    TcpFlags(TcpFlags::ACK.0 | TcpFlags::PSH.0)
                };
                build(
                    k.src, k.dst, k.sport, k.dport, k.proto, false, flags, count[f], len,
                )
            })
            .collect()
    }

    /// `per_session` outside → inside frames for each session (from its remote endpoint
    /// to its public address and port: TCP ACKs with data, UDP, ICMP echo replies).
    pub fn replies(sessions: &[SessionInfo], per_session: usize) -> Vec<Vec<u8>> {
        let mut out = Vec::with_capacity(sessions.len() * per_session);
        for i in 0..per_session {
            for s in sessions {
                let k = &s.key;
                let flags = TcpFlags(TcpFlags::ACK.0 | TcpFlags::PSH.0);
                let len = if i % 2 == 0 { 64 } else { 600 };
                out.push(build(
                    k.dst,
                    s.session.out_ip,
                    k.dport,
                    s.session.out_port,
                    k.proto,
                    true,
                    flags,
                    i as u16,
                    len,
                ));
            }
        }
        out
    }
}

/// One frame of about `len` bytes (at least the headers, 60 with padding).
#[allow(clippy::too_many_arguments)]
fn build(
    src: u32,
    dst: u32,
    sport: u16,
    dport: u16,
    proto: u8,
    reply: bool,
    flags: TcpFlags,
    seq: u16,
    len: usize,
) -> Vec<u8> {
    let (ms, md) = if reply {
        (MAC_OUT, MAC_IN)
    } else {
        (MAC_IN, MAC_OUT)
    };
    let b = PacketBuilder::ethernet(ms, md).ipv4(Ipv4Addr::from(src), Ipv4Addr::from(dst));
    let (b, hdr) = match proto {
        PROTO_TCP => (
            b.tcp(sport, dport, flags)
                .tcp_seq_ack(u32::from(seq) * 1000, 1),
            14 + 20 + 20,
        ),
        PROTO_UDP => (b.udp(sport, dport), 14 + 20 + 8),
        _ if reply => (b.icmp_echo_reply(dport, seq), 14 + 20 + 8),
        _ => (b.icmp_echo(sport, seq), 14 + 20 + 8),
    };
    b.payload_len(len.saturating_sub(hdr)).pad_to(60).build()
}
