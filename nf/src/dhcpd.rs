//! A DHCPv4 server (RFC 2131/2132) in the style of udhcpd, as the seed's `UDHCP`
//! workload: leases in an array traversed linearly, an address offered only after a ping
//! for it went unanswered, periodic expiry, and the lease array shared by every worker.
//!
//! # Wire
//!
//! Requests are untagged Ethernet/IPv4/UDP 68→67 BOOTP messages with the DHCP magic
//! cookie and a message-type option. The IPv4 header checksum and (when not zero) the UDP
//! checksum are verified; options are walked safely (pad, end, a length running past the
//! message, a missing cookie or message type are counted drops). Replies are written in
//! place over the request's buffer (grown or cut to [`REPLY_LEN`] bytes): Ethernet, IPv4,
//! UDP and BOOTP headers rewritten, checksums computed, options message type, server id,
//! lease time, subnet mask, router, end.
//!
//! # State
//!
//! * a [`StripedArray`] of [`Lease`]s, one per pool address (address `i` in stripe
//!   `i % stripes`); the wait list of udhcpd (addresses being pinged) is the leases in
//!   state [`LeaseState::Pinging`], each with the time its ping times out;
//! * a client table, [`FlowTable`]`<Mac, u32>`: client hardware address → lease index. The
//!   lease is the authority: a client's record is trusted only while the lease it names
//!   still carries the client's address ([`Lease::mac`]).
//!
//! # Address choice and flow affinity
//!
//! A client (its `chaddr` hash) lives in client stripe `cs`; the worker owning `cs` under
//! flow affinity is `cs % workers`. Every address the client can get lies in a lease stripe
//! of that same *owner class* (`stripe % workers == cs % workers`), so one worker owns
//! everything a client's packets touch and [`Nf::owner`] maps a frame to that worker.
//! A new client gets, in this order: the address it asks for (option 50) if it is free and
//! in its class; else the lowest free address of its *home* lease stripe (`cs`, which is in
//! its class), then of the following stripes of its class, at most
//! [`DhcpConfig::max_probe`] stripes, each a linear scan of the ~`pool / stripes` leases
//! of one stripe. Each step is one section over `[client stripe, lease stripe]`
//! ([`WorkerSync::section_multi`]); most packets take exactly one.
//!
//! The price of the classes: with `n` workers a client draws from `1/n` of the pool, so it
//! can be refused ("no free address") while another class still has free addresses, and
//! a DISCOVER probing a nearly full class takes up to `max_probe` sections. The policy is
//! the same under every strategy, so results do not depend on it.
//!
//! # Protocol
//!
//! * DISCOVER from a new client: an address is chosen and put on the wait list; the reply
//!   is an ICMP echo request to it, written over the DISCOVER (udhcpd's ping). An ICMP echo
//!   reply from a pool address marks it in use (for [`DhcpConfig::decline_ticks`]). The
//!   client's retransmitted DISCOVER, once the ping timed out, gets the OFFER; if the ping
//!   was answered, the server chooses (and pings) another address.
//! * REQUEST (selecting: requested address option; renewing: `ciaddr`): ACK if the
//!   address is the client's offered or bound lease, else NAK.
//! * RELEASE frees the lease; DECLINE marks the address unusable for a while; INFORM gets
//!   an ACK with the configuration and no address.
//! * Every vector, each worker sweeps [`DhcpConfig::sweep_stripes`] of the lease stripes it
//!   owns: expired leases, stale offers and pings, and ended declines return to the pool;
//!   client records idle past a lease time are expired from the table.
//!
//! RELEASE, DECLINE and echo replies produce no reply: they are counted as drops under a
//! `consumed: …` reason, so conservation stays exact.
//!
//! # Time
//!
//! Times are TSC ticks (`now` of [`NfWorker::packet`]). A replayed trace compresses a
//! network's minutes into milliseconds, so the default ping timeout is 0: a DISCOVER
//! retransmission is taken as arriving after the timeout, as it does on a real network
//! (udhcpd waits 500 ms; clients retransmit after 4 s).
//!
//! # Example
//!
//! ```
//! use pktvec_nf::dhcpd::{traffic, DhcpConfig, Dhcpd, TrafficConfig};
//! use pktvec_nf::runtime::{run, RunConfig};
//! use pktvec_state::{Domain, Strategy, SyncConfig};
//! use std::sync::Arc;
//!
//! let sync = SyncConfig { strategy: Strategy::Fine, workers: 1, stripes: 64, ..SyncConfig::default() };
//! let d = Domain::new(sync)?;
//! let cfg = DhcpConfig { pool: 1000, clients: 2048, ..DhcpConfig::default() };
//! let nf = Arc::new(Dhcpd::new(&d, cfg.clone()));
//! let t = TrafficConfig { hosts: 500, packets: 2000, ..TrafficConfig::default() };
//! let rc = RunConfig { packets_per_worker: 2000, pin: false, ..RunConfig::default() };
//! let r = run(&nf, move |w| traffic(&t, &cfg, 64, w, 1), &rc)?;
//! assert!(r.report.conservation().is_balanced());
//! assert!(r.counter("acked") > 0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::runtime::{Nf, NfWorker};
use pktvec_graph::{clock, node_errors};
use pktvec_packet::checksum;
use pktvec_packet::wire::IpProtocol;
use pktvec_packet::PacketMut;
use pktvec_state::{
    Domain, FlowTable, Section, StripedArray, TableConfig, TableWorker, WorkerSync,
};
use std::net::Ipv4Addr;
use std::sync::Arc;

/// A client's hardware (Ethernet) address.
pub type Mac = [u8; 6];

/// The server's address (its server identifier, the router it hands out).
pub const SERVER_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
/// The server's Ethernet address.
pub const SERVER_MAC: Mac = [0x02, 0, 0, 0, 0, 0x01];
/// The first pool address (pool address `i` is `POOL_BASE + i`).
pub const POOL_BASE: Ipv4Addr = Ipv4Addr::new(10, 1, 0, 1);
/// The subnet mask handed out.
pub const SUBNET_MASK: Ipv4Addr = Ipv4Addr::new(255, 0, 0, 0);
/// Length of every DHCP reply frame: Ethernet 14 + IPv4 20 + UDP 8 + a 300-byte BOOTP
/// message (the RFC 1542 minimum).
pub const REPLY_LEN: usize = 342;
/// Length of the ping frame (Ethernet 14 + IPv4 20 + ICMP 8 + 18 bytes of data).
pub const PING_LEN: usize = 60;
/// The ICMP identifier of the server's pings.
pub const PING_ID: u16 = 0x6468;

/// BOOTP fixed header (236) + magic cookie (4).
const BOOTP_MIN: usize = 240;
const MAGIC: [u8; 4] = [99, 130, 83, 99];

/// DHCP message types (option 53).
pub mod msg {
    /// DHCPDISCOVER.
    pub const DISCOVER: u8 = 1;
    /// DHCPOFFER.
    pub const OFFER: u8 = 2;
    /// DHCPREQUEST.
    pub const REQUEST: u8 = 3;
    /// DHCPDECLINE.
    pub const DECLINE: u8 = 4;
    /// DHCPACK.
    pub const ACK: u8 = 5;
    /// DHCPNAK.
    pub const NAK: u8 = 6;
    /// DHCPRELEASE.
    pub const RELEASE: u8 = 7;
    /// DHCPINFORM.
    pub const INFORM: u8 = 8;
}

/// A lease's state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LeaseState {
    /// In the pool.
    #[default]
    Free,
    /// Chosen for a client and pinged (the wait list); offered on the client's next
    /// DISCOVER after the ping timed out.
    Pinging,
    /// Offered to the client.
    Offered,
    /// Acknowledged: the client holds it until [`Lease::until`].
    Bound,
    /// Declined by a client: unusable until [`Lease::until`].
    Declined,
    /// Answered a ping: some host uses it; unusable until [`Lease::until`].
    InUse,
}

/// One pool address's lease.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Lease {
    /// Its state.
    pub state: LeaseState,
    /// The client it is pinged for, offered or bound to (zero when none).
    pub mac: Mac,
    /// When the state ends (lease end, stale offer or ping, end of a decline).
    pub until: u64,
    /// While pinging: when the ping times out.
    pub ping_until: u64,
}

/// Leases by state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LeaseCounts {
    /// Free.
    pub free: usize,
    /// Pinging (the wait list).
    pub pinging: usize,
    /// Offered.
    pub offered: usize,
    /// Bound.
    pub bound: usize,
    /// Declined.
    pub declined: usize,
    /// In use by a host that answered a ping.
    pub in_use: usize,
}

impl LeaseCounts {
    /// Every lease counted.
    pub fn total(&self) -> usize {
        self.free + self.pinging + self.offered + self.bound + self.declined + self.in_use
    }
}

/// The server's settings.
#[derive(Clone, Debug)]
pub struct DhcpConfig {
    /// Pool addresses (leases), from [`POOL_BASE`].
    pub pool: usize,
    /// Client table capacity.
    pub clients: usize,
    /// Lease time handed out (option 51), seconds.
    pub lease_secs: u32,
    /// Lease time, TSC ticks (when a bound lease expires without renewal).
    pub lease_ticks: u64,
    /// Ping timeout, ticks.
    pub ping_ticks: u64,
    /// How long a ping or offer waits for the client before it is stale, ticks.
    pub offer_ticks: u64,
    /// How long a declined or in-use address stays out of the pool, ticks.
    pub decline_ticks: u64,
    /// Lease stripes a DISCOVER probes for a free address at most.
    pub max_probe: usize,
    /// Lease stripes each worker sweeps for expiry after each vector.
    pub sweep_stripes: usize,
    /// Client-table buckets each worker sweeps after each vector.
    pub sweep_buckets: usize,
}

impl Default for DhcpConfig {
    /// 20,000 addresses, 32,768 clients, 10-second leases, offers stale after a second,
    /// declines for 5 seconds, ping timeout 0 (see the module's *Time*).
    fn default() -> Self {
        let hz = clock::tsc_hz();
        DhcpConfig {
            pool: 20_000,
            clients: 32_768,
            lease_secs: 10,
            lease_ticks: (10.0 * hz) as u64,
            ping_ticks: 0,
            offer_ticks: hz as u64,
            decline_ticks: (5.0 * hz) as u64,
            max_probe: 64,
            sweep_stripes: 2,
            sweep_buckets: 2,
        }
    }
}

impl DhcpConfig {
    /// Settings under which nothing expires during a run (leases, offers, declines of
    /// about a day): results then depend only on the order of the packets.
    pub fn timeless(pool: usize, clients: usize) -> Self {
        let day = (86_400.0 * clock::tsc_hz()) as u64;
        DhcpConfig {
            pool,
            clients,
            lease_secs: 86_400,
            lease_ticks: day,
            ping_ticks: 0,
            offer_ticks: day,
            decline_ticks: day,
            ..DhcpConfig::default()
        }
    }
}

node_errors! {
    /// Why the DHCP server drops packets (or consumes them without a reply).
    pub enum DhcpError {
        /// Not an IPv4 frame.
        NotIpv4 = "not ipv4",
        /// A header is cut short, or a length field lies.
        Truncated = "truncated header",
        /// The IPv4 header checksum is wrong.
        BadIpChecksum = "bad ip checksum",
        /// A fragment.
        Fragment = "ip fragment",
        /// Neither UDP to port 67 nor an ICMP echo reply.
        NotDhcp = "not dhcp or a ping reply",
        /// The UDP checksum is wrong.
        BadUdpChecksum = "bad udp checksum",
        /// The ICMP checksum is wrong.
        BadIcmpChecksum = "bad icmp checksum",
        /// The BOOTP message is shorter than its fixed header and cookie.
        TruncatedBootp = "truncated bootp",
        /// A BOOTREPLY, or an unknown op.
        NotRequest = "not a bootrequest",
        /// Hardware type not Ethernet or address length not 6.
        BadHardware = "bad hardware address",
        /// No DHCP magic cookie.
        NoCookie = "missing magic cookie",
        /// An option's length runs past the message, or a fixed-size option has another.
        MalformedOption = "malformed option",
        /// No message-type option.
        NoMessageType = "missing message type",
        /// A server's message type, or an unknown one.
        UnexpectedType = "unexpected message type",
        /// A REQUEST naming another server (the client chose it).
        OtherServer = "request for another server",
        /// A DISCOVER retransmitted before the ping timed out.
        PingPending = "discover while ping pending",
        /// No free address in the client's stripes.
        PoolExhausted = "no free address",
        /// The client table (or the worker's share of its records) is full.
        ClientTableFull = "client table full",
        /// The buffer cannot hold the reply.
        NoRoom = "no room for reply",
        /// The client's record changed under it repeatedly.
        Raced = "client state raced",
        /// A RELEASE (no reply).
        Released = "consumed: release",
        /// A RELEASE of an address the client does not hold.
        ReleaseIgnored = "release of an address not held",
        /// A DECLINE (no reply).
        Declined = "consumed: decline",
        /// A DECLINE of an address the client was not offered.
        DeclineIgnored = "decline of an address not offered",
        /// An ICMP echo reply from a pool address (no reply).
        PingReply = "consumed: ping reply",
        /// An ICMP echo reply from outside the pool.
        PingForeign = "ping reply from outside the pool",
    }
}

/// The 64-bit hash of a client's hardware address (its client-table hash; its low bits
/// are its client stripe).
#[inline]
pub fn mac_hash(mac: &Mac) -> u64 {
    let mut x = u64::from_be_bytes([0, 0, mac[0], mac[1], mac[2], mac[3], mac[4], mac[5]]);
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Pool address `i`.
#[inline]
pub fn pool_addr(i: usize) -> Ipv4Addr {
    Ipv4Addr::from(u32::from(POOL_BASE).wrapping_add(i as u32))
}

/// The lease stripe probed `k`-th for a client in client stripe `cs` (`k = 0`: its home
/// stripe `cs`): the stripes of `cs`'s owner class (`stripe % workers`), in order from
/// `cs`, wrapping. Returns `None` past the class's last stripe.
#[inline]
pub fn probe_stripe(cs: usize, k: usize, stripes: usize, workers: usize) -> Option<usize> {
    let r = cs % workers;
    let n = (stripes - r).div_ceil(workers);
    if k >= n {
        return None;
    }
    Some(r + ((cs / workers + k) % n) * workers)
}

#[inline]
fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

#[inline]
fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// What a DHCP request says (copied out before the reply overwrites it).
#[derive(Clone, Copy, Debug, Default)]
struct Dhcp {
    msg: u8,
    xid: [u8; 4],
    flags: [u8; 2],
    ciaddr: u32,
    giaddr: u32,
    chaddr: Mac,
    eth_src: Mac,
    requested: Option<u32>,
    server_id: Option<u32>,
}

/// A valid request.
#[derive(Clone, Copy, Debug)]
enum Msg {
    Dhcp(Dhcp),
    /// An ICMP echo reply from this address.
    EchoReply(u32),
}

/// Parses and validates a frame (the one parser behind both [`Nf::owner`] and
/// [`NfWorker::packet`], so a frame with no owner never reaches the state).
fn classify(f: &[u8]) -> Result<Msg, DhcpError> {
    if f.len() < 14 {
        return Err(DhcpError::Truncated);
    }
    if be16(f, 12) != 0x0800 {
        return Err(DhcpError::NotIpv4);
    }
    let ip = &f[14..];
    if ip.len() < 20 {
        return Err(DhcpError::Truncated);
    }
    if ip[0] >> 4 != 4 {
        return Err(DhcpError::NotIpv4);
    }
    let ihl = usize::from(ip[0] & 0x0f) * 4;
    let total = usize::from(be16(ip, 2));
    if ihl < 20 || total < ihl || total > ip.len() {
        return Err(DhcpError::Truncated);
    }
    if checksum::checksum(&ip[..ihl]) != 0 {
        return Err(DhcpError::BadIpChecksum);
    }
    if be16(ip, 6) & 0x3fff != 0 {
        return Err(DhcpError::Fragment);
    }
    let (src, dst) = (be32(ip, 12), be32(ip, 16));
    let l4 = &ip[ihl..total];
    match ip[9] {
        17 => {
            if l4.len() < 8 {
                return Err(DhcpError::Truncated);
            }
            let ulen = usize::from(be16(l4, 4));
            if ulen < 8 || ulen > l4.len() {
                return Err(DhcpError::Truncated);
            }
            if be16(l4, 2) != 67 {
                return Err(DhcpError::NotDhcp);
            }
            if be16(l4, 6) != 0 {
                let s = checksum::pseudo_header_v4(
                    Ipv4Addr::from(src),
                    Ipv4Addr::from(dst),
                    IpProtocol::UDP,
                    ulen as u32,
                ) + checksum::sum(&l4[..ulen]);
                if checksum::finish(s) != 0 {
                    return Err(DhcpError::BadUdpChecksum);
                }
            }
            let mut d = parse_bootp(&l4[8..ulen])?;
            d.eth_src.copy_from_slice(&f[6..12]);
            Ok(Msg::Dhcp(d))
        }
        1 => {
            if l4.len() < 8 {
                return Err(DhcpError::Truncated);
            }
            if l4[0] != 0 {
                return Err(DhcpError::NotDhcp);
            }
            if checksum::checksum(l4) != 0 {
                return Err(DhcpError::BadIcmpChecksum);
            }
            Ok(Msg::EchoReply(src))
        }
        _ => Err(DhcpError::NotDhcp),
    }
}

/// The BOOTP message and its DHCP options.
fn parse_bootp(b: &[u8]) -> Result<Dhcp, DhcpError> {
    if b.len() < BOOTP_MIN {
        return Err(DhcpError::TruncatedBootp);
    }
    if b[0] != 1 {
        return Err(DhcpError::NotRequest);
    }
    if b[1] != 1 || b[2] != 6 {
        return Err(DhcpError::BadHardware);
    }
    if b[236..240] != MAGIC {
        return Err(DhcpError::NoCookie);
    }
    let mut d = Dhcp {
        ciaddr: be32(b, 12),
        giaddr: be32(b, 24),
        ..Dhcp::default()
    };
    d.xid.copy_from_slice(&b[4..8]);
    d.flags.copy_from_slice(&b[10..12]);
    d.chaddr.copy_from_slice(&b[28..34]);
    let mut i = BOOTP_MIN;
    let mut msg = None;
    while i < b.len() {
        let code = b[i];
        match code {
            0 => {
                i += 1;
                continue;
            }
            255 => break,
            _ => {}
        }
        let Some(&len) = b.get(i + 1) else {
            return Err(DhcpError::MalformedOption);
        };
        let (start, end) = (i + 2, i + 2 + usize::from(len));
        let Some(v) = b.get(start..end) else {
            return Err(DhcpError::MalformedOption);
        };
        match (code, v.len()) {
            (53, 1) => msg = Some(v[0]),
            (50, 4) => d.requested = Some(be32(v, 0)),
            (54, 4) => d.server_id = Some(be32(v, 0)),
            (53 | 50 | 54, _) => return Err(DhcpError::MalformedOption),
            _ => {}
        }
        i = end;
    }
    d.msg = msg.ok_or(DhcpError::NoMessageType)?;
    Ok(d)
}

/// Resizes the packet to `len` bytes in place (growing into the tailroom).
fn resize(pkt: &mut PacketMut<'_>, len: usize) -> Result<(), DhcpError> {
    let have = pkt.len();
    if have < len {
        pkt.append(len - have).map_err(|_| DhcpError::NoRoom)?;
    } else {
        pkt.truncate(len);
    }
    Ok(())
}

/// Writes Ethernet + IPv4 headers (no options) for an IPv4 payload of `l4_len` bytes.
fn write_eth_ip(b: &mut [u8], dst_mac: &Mac, dst: u32, proto: u8, l4_len: usize) {
    b[0..6].copy_from_slice(dst_mac);
    b[6..12].copy_from_slice(&SERVER_MAC);
    b[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
    let ip = &mut b[14..34];
    ip[0] = 0x45;
    ip[1] = 0;
    ip[2..4].copy_from_slice(&((20 + l4_len) as u16).to_be_bytes());
    ip[4..8].copy_from_slice(&[0, 0, 0x40, 0]); // id 0, don't fragment
    ip[8] = 64;
    ip[9] = proto;
    ip[10..12].copy_from_slice(&[0, 0]);
    ip[12..16].copy_from_slice(&SERVER_IP.octets());
    ip[16..20].copy_from_slice(&dst.to_be_bytes());
    let c = checksum::checksum(ip);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
}

/// Writes a DHCP reply over the request (RFC 2131 §4.1 addressing, without ARP: a reply
/// not sent to a relay or to the client's `ciaddr` is broadcast).
fn write_reply(
    pkt: &mut PacketMut<'_>,
    d: &Dhcp,
    kind: u8,
    yiaddr: u32,
    lease_secs: u32,
) -> Result<(), DhcpError> {
    resize(pkt, REPLY_LEN)?;
    let b = pkt.data_mut();
    let Some(b) = b.get_mut(..REPLY_LEN) else {
        return Err(DhcpError::NoRoom);
    };
    b.fill(0);
    let (dst_mac, dst, dport) = if d.giaddr != 0 {
        (d.eth_src, d.giaddr, 67u16)
    } else if d.ciaddr != 0 && kind != msg::NAK {
        (d.chaddr, d.ciaddr, 68)
    } else {
        ([0xff; 6], u32::MAX, 68)
    };
    write_eth_ip(b, &dst_mac, dst, 17, REPLY_LEN - 34);
    let udp_len = REPLY_LEN - 34;
    {
        let u = &mut b[34..42];
        u[0..2].copy_from_slice(&67u16.to_be_bytes());
        u[2..4].copy_from_slice(&dport.to_be_bytes());
        u[4..6].copy_from_slice(&(udp_len as u16).to_be_bytes());
    }
    let m = &mut b[42..];
    m[0] = 2; // BOOTREPLY
    m[1] = 1;
    m[2] = 6;
    m[4..8].copy_from_slice(&d.xid);
    m[10..12].copy_from_slice(&d.flags);
    if kind != msg::NAK {
        m[12..16].copy_from_slice(&d.ciaddr.to_be_bytes());
    }
    m[16..20].copy_from_slice(&yiaddr.to_be_bytes());
    m[24..28].copy_from_slice(&d.giaddr.to_be_bytes());
    m[28..34].copy_from_slice(&d.chaddr);
    m[236..240].copy_from_slice(&MAGIC);
    let o = &mut m[240..];
    let sid = SERVER_IP.octets();
    o[0..3].copy_from_slice(&[53, 1, kind]);
    o[3..5].copy_from_slice(&[54, 4]);
    o[5..9].copy_from_slice(&sid);
    let mut n = 9;
    if kind != msg::NAK {
        if kind != msg::ACK || yiaddr != 0 {
            o[n..n + 2].copy_from_slice(&[51, 4]);
            o[n + 2..n + 6].copy_from_slice(&lease_secs.to_be_bytes());
            n += 6;
        }
        o[n..n + 2].copy_from_slice(&[1, 4]);
        o[n + 2..n + 6].copy_from_slice(&SUBNET_MASK.octets());
        o[n + 6..n + 8].copy_from_slice(&[3, 4]);
        o[n + 8..n + 12].copy_from_slice(&sid);
        n += 12;
    }
    o[n] = 255;
    let s = checksum::pseudo_header_v4(
        SERVER_IP,
        Ipv4Addr::from(dst),
        IpProtocol::UDP,
        udp_len as u32,
    ) + checksum::sum(&b[34..REPLY_LEN]);
    let mut c = checksum::finish(s);
    if c == 0 {
        c = 0xffff;
    }
    b[40..42].copy_from_slice(&c.to_be_bytes());
    Ok(())
}

/// Writes udhcpd's ping, an ICMP echo request to pool address `addr`, over the DISCOVER.
/// The server has no ARP here: the frame goes to the Ethernet broadcast address.
fn write_ping(pkt: &mut PacketMut<'_>, addr: u32, seq: u16) -> Result<(), DhcpError> {
    resize(pkt, PING_LEN)?;
    let Some(b) = pkt.data_mut().get_mut(..PING_LEN) else {
        return Err(DhcpError::NoRoom);
    };
    b.fill(0);
    write_eth_ip(b, &[0xff; 6], addr, 1, PING_LEN - 34);
    let icmp = &mut b[34..];
    icmp[0] = 8;
    icmp[4..6].copy_from_slice(&PING_ID.to_be_bytes());
    icmp[6..8].copy_from_slice(&seq.to_be_bytes());
    icmp[8..16].copy_from_slice(b"udhcpd\0\0");
    let c = checksum::checksum(icmp);
    icmp[2..4].copy_from_slice(&c.to_be_bytes());
    Ok(())
}

struct Shared {
    domain: Arc<Domain>,
    cfg: DhcpConfig,
    leases: StripedArray<Lease>,
    clients: FlowTable<Mac, u32>,
}

/// The DHCP server's shared state: the domain, the lease array (with the wait list) and
/// the client table.
pub struct Dhcpd {
    s: Arc<Shared>,
}

impl Dhcpd {
    /// A server over `domain` (pool and tables preallocated).
    pub fn new(domain: &Arc<Domain>, cfg: DhcpConfig) -> Self {
        let leases = StripedArray::new(domain, "dhcpd-leases", cfg.pool);
        let clients = FlowTable::new(
            domain,
            "dhcpd-clients",
            TableConfig {
                capacity: cfg.clients.max(1),
                ..TableConfig::default()
            },
        );
        Dhcpd {
            s: Arc::new(Shared {
                domain: domain.clone(),
                cfg,
                leases,
                clients,
            }),
        }
    }

    /// The settings.
    pub fn config(&self) -> &DhcpConfig {
        &self.s.cfg
    }

    /// Every lease, read one section at a time (by each stripe's owner, so it works under
    /// every strategy). Call it when no worker runs.
    pub fn leases(&self) -> Vec<Lease> {
        let d = &self.s.domain;
        let mut syncs: Vec<WorkerSync> = (0..d.workers()).map(|w| d.worker(w)).collect();
        let leases = &self.s.leases;
        (0..leases.len())
            .map(|i| {
                let st = leases.stripe(i);
                syncs[d.owner(st)].section(st, |sec| *leases.get(sec, i))
            })
            .collect()
    }

    /// Leases by state (see [`leases`](Self::leases)).
    pub fn lease_counts(&self) -> LeaseCounts {
        let mut c = LeaseCounts::default();
        for l in self.leases() {
            match l.state {
                LeaseState::Free => c.free += 1,
                LeaseState::Pinging => c.pinging += 1,
                LeaseState::Offered => c.offered += 1,
                LeaseState::Bound => c.bound += 1,
                LeaseState::Declined => c.declined += 1,
                LeaseState::InUse => c.in_use += 1,
            }
        }
        c
    }

    /// The lease index a client's record names, if it has one (call when no worker runs).
    pub fn client_lease(&self, mac: &Mac) -> Option<u32> {
        let d = &self.s.domain;
        let h = mac_hash(mac);
        let st = self.s.clients.stripe(h);
        let mut sync = d.worker(d.owner(st));
        let t = &self.s.clients;
        sync.section(st, |sec| t.find(sec, mac, h).map(|(_, v)| *v))
    }

    /// The pool index of an address, if it is in the pool.
    pub fn pool_index(&self, addr: Ipv4Addr) -> Option<usize> {
        self.s.pool_index(u32::from(addr))
    }
}

impl Shared {
    #[inline]
    fn pool_index(&self, addr: u32) -> Option<usize> {
        let i = addr.wrapping_sub(u32::from(POOL_BASE)) as usize;
        (i < self.cfg.pool).then_some(i)
    }

    /// The owner class of a stripe.
    #[inline]
    fn class(&self, stripe: usize) -> usize {
        self.domain.owner(stripe)
    }
}

impl Nf for Dhcpd {
    type Worker = DhcpdWorker;
    const NAME: &'static str = "dhcpd";

    fn domain(&self) -> &Arc<Domain> {
        &self.s.domain
    }

    fn worker(&self, id: usize) -> DhcpdWorker {
        let d = &self.s.domain;
        let own = (0..d.stripes()).filter(|s| d.owner(*s) == id).count();
        DhcpdWorker {
            s: self.s.clone(),
            sync: d.worker(id),
            tw: self.s.clients.worker(id),
            c: Counters::default(),
            sweep: 0,
            own_stripes: own,
        }
    }

    /// A client's frames go to the owner of its client stripe (all its addresses lie in
    /// that owner's stripes); an echo reply to the owner of its address's lease stripe.
    fn owner(&self, frame: &[u8]) -> Option<usize> {
        match classify(frame).ok()? {
            Msg::Dhcp(d) => Some(
                self.s
                    .domain
                    .owner(self.s.clients.stripe(mac_hash(&d.chaddr))),
            ),
            Msg::EchoReply(a) => {
                let i = self.s.pool_index(a)?;
                Some(self.s.domain.owner(self.s.leases.stripe(i)))
            }
        }
    }
}

#[derive(Clone, Copy, Debug, Default)]
struct Counters {
    pings: u64,
    offered: u64,
    acked: u64,
    naked: u64,
    released: u64,
    declined: u64,
    informed: u64,
    ping_in_use: u64,
    expired: u64,
    stale: u64,
    unblocked: u64,
    sweeps: u64,
}

/// One worker's side of the server.
pub struct DhcpdWorker {
    s: Arc<Shared>,
    sync: WorkerSync,
    tw: TableWorker,
    c: Counters,
    sweep: usize,
    own_stripes: usize,
}

/// What a DISCOVER section decided.
enum Step {
    /// Ping this lease.
    Ping(u32),
    /// Offer this lease.
    Offer(u32),
    /// The client's record names a lease in this other stripe.
    Elsewhere(usize),
    /// The client's claim is gone (record removed): choose afresh.
    Lost,
    /// No free lease in the stripe probed.
    NoFree,
    /// Still pinging.
    Waiting,
    /// The client table refused the record.
    TableFull,
}

/// What a REQUEST/RELEASE/DECLINE section decided.
#[derive(PartialEq, Eq)]
enum Claim {
    Yes,
    No,
}

impl DhcpdWorker {
    /// Whether `mac` holds lease `l` (a valid claim) in a section holding its stripes.
    #[inline]
    fn holds(s: &Shared, sec: &mut Section<'_>, mac: &Mac, h: u64, l: usize, now: u64) -> bool {
        let rec = s.clients.find(sec, mac, h).map(|(_, v)| *v);
        if rec != Some(l as u32) {
            return false;
        }
        let lease = s.leases.get(sec, l);
        lease.mac == *mac
            && matches!(
                lease.state,
                LeaseState::Pinging | LeaseState::Offered | LeaseState::Bound
            )
            && lease.until > now
    }

    /// One DISCOVER step in a section over the client's stripe and lease stripe `ls`.
    #[allow(clippy::too_many_arguments)]
    fn discover_step(
        s: &Shared,
        tw: &mut TableWorker,
        sec: &mut Section<'_>,
        mac: &Mac,
        h: u64,
        ls: usize,
        want: Option<usize>,
        now: u64,
    ) -> Step {
        let cfg = &s.cfg;
        if let Some((_, &mut l)) = s.clients.find_mut(sec, mac, h, now) {
            let l = l as usize;
            if l >= s.leases.len() {
                s.clients.remove(sec, tw, mac, h);
                return Step::Lost;
            }
            if s.leases.stripe(l) != ls {
                return Step::Elsewhere(s.leases.stripe(l));
            }
            let lease = s.leases.get_mut(sec, l);
            let valid = lease.mac == *mac
                && matches!(
                    lease.state,
                    LeaseState::Pinging | LeaseState::Offered | LeaseState::Bound
                )
                && lease.until > now;
            if !valid {
                if lease.mac == *mac
                    && matches!(lease.state, LeaseState::InUse | LeaseState::Declined)
                {
                    lease.mac = [0; 6];
                }
                s.clients.remove(sec, tw, mac, h);
                return Step::Lost;
            }
            return match lease.state {
                LeaseState::Pinging if now < lease.ping_until => Step::Waiting,
                LeaseState::Pinging | LeaseState::Offered => {
                    lease.state = LeaseState::Offered;
                    lease.until = now.saturating_add(cfg.offer_ticks);
                    Step::Offer(l as u32)
                }
                _ => Step::Offer(l as u32),
            };
        }
        // a new client: the address it asks for, else the stripe's lowest free one
        let pick = match want {
            Some(i) => (s.leases.get(sec, i).state == LeaseState::Free).then_some(i),
            None => {
                let mut i = ls;
                let mut found = None;
                while i < s.leases.len() {
                    if s.leases.get(sec, i).state == LeaseState::Free {
                        found = Some(i);
                        break;
                    }
                    i += s.domain.stripes();
                }
                found
            }
        };
        let Some(l) = pick else {
            return Step::NoFree;
        };
        match s.clients.entry(sec, tw, *mac, h, now) {
            Ok((_, v, _)) => *v = l as u32,
            Err(_) => return Step::TableFull,
        }
        let ping_until = now.saturating_add(cfg.ping_ticks);
        *s.leases.get_mut(sec, l) = Lease {
            state: LeaseState::Pinging,
            mac: *mac,
            until: ping_until.saturating_add(cfg.offer_ticks),
            ping_until,
        };
        Step::Ping(l as u32)
    }

    fn discover(&mut self, d: &Dhcp, now: u64) -> Result<Step, DhcpError> {
        let s = &*self.s;
        let h = mac_hash(&d.chaddr);
        let cs = s.clients.stripe(h);
        let (stripes, workers) = (s.domain.stripes(), s.domain.workers());
        let want = d
            .requested
            .and_then(|a| s.pool_index(a))
            .filter(|&i| s.class(s.leases.stripe(i)) == s.class(cs));
        let first = match want {
            Some(i) => s.leases.stripe(i),
            None => cs,
        };
        let (want0, mut want, mut ls) = (want, want, first);
        let mut k = 0usize; // home-class stripes probed
        let mut restarts = 0;
        let limit = s.cfg.max_probe.max(1);
        loop {
            let tw = &mut self.tw;
            let step = self.sync.section_multi(&[cs, ls], |sec| {
                Self::discover_step(s, tw, sec, &d.chaddr, h, ls, want, now)
            });
            match step {
                Step::Elsewhere(st) if restarts < 2 && s.class(st) == s.class(cs) => {
                    restarts += 1;
                    ls = st;
                }
                Step::Lost if restarts < 2 => {
                    // the claim is gone: choose afresh, as a new client
                    restarts += 1;
                    want = want0;
                    k = 0;
                    ls = first;
                }
                Step::Elsewhere(_) | Step::Lost => return Err(DhcpError::Raced),
                Step::NoFree if want.is_some() => {
                    want = None;
                    ls = cs;
                }
                Step::NoFree => {
                    k += 1;
                    match probe_stripe(cs, k, stripes, workers) {
                        Some(t) if k < limit => ls = t,
                        _ => return Err(DhcpError::PoolExhausted),
                    }
                }
                Step::Waiting => return Err(DhcpError::PingPending),
                Step::TableFull => return Err(DhcpError::ClientTableFull),
                st @ (Step::Ping(_) | Step::Offer(_)) => return Ok(st),
            }
        }
    }

    /// The lease a REQUEST, RELEASE or DECLINE names, if it is in the pool and in the
    /// client's class.
    fn named_lease(&self, d: &Dhcp, addr: Option<u32>) -> Option<(usize, u64, usize)> {
        let s = &*self.s;
        let l = s.pool_index(addr?)?;
        let h = mac_hash(&d.chaddr);
        let cs = s.clients.stripe(h);
        (s.class(s.leases.stripe(l)) == s.class(cs)).then_some((l, h, cs))
    }

    fn request(&mut self, d: &Dhcp, now: u64) -> (u8, u32) {
        let addr = d.requested.or((d.ciaddr != 0).then_some(d.ciaddr));
        let Some((l, h, cs)) = self.named_lease(d, addr) else {
            return (msg::NAK, 0);
        };
        let s = &*self.s;
        let ok = self.sync.section_multi(&[cs, s.leases.stripe(l)], |sec| {
            if !Self::holds(s, sec, &d.chaddr, h, l, now) {
                return Claim::No;
            }
            let lease = s.leases.get_mut(sec, l);
            if lease.state == LeaseState::Pinging {
                return Claim::No; // not offered yet
            }
            lease.state = LeaseState::Bound;
            lease.until = now.saturating_add(s.cfg.lease_ticks);
            // the record's last-seen time follows the lease
            let _ = s.clients.find_mut(sec, &d.chaddr, h, now);
            Claim::Yes
        });
        match ok {
            Claim::Yes => (msg::ACK, u32::from(pool_addr(l))),
            Claim::No => (msg::NAK, 0),
        }
    }

    /// RELEASE (`decline == false`) or DECLINE of the lease `addr` names.
    fn give_up(&mut self, d: &Dhcp, addr: Option<u32>, decline: bool, now: u64) -> bool {
        let Some((l, h, cs)) = self.named_lease(d, addr) else {
            return false;
        };
        let s = &*self.s;
        let tw = &mut self.tw;
        self.sync.section_multi(&[cs, s.leases.stripe(l)], |sec| {
            if !Self::holds(s, sec, &d.chaddr, h, l, now) {
                return false;
            }
            let lease = s.leases.get_mut(sec, l);
            if decline && lease.state == LeaseState::Pinging {
                return false;
            }
            *lease = match decline {
                true => Lease {
                    state: LeaseState::Declined,
                    until: now.saturating_add(s.cfg.decline_ticks),
                    ..Lease::default()
                },
                false => Lease::default(),
            };
            s.clients.remove(sec, tw, &d.chaddr, h);
            true
        })
    }

    /// An echo reply from pool address `l`: someone uses it.
    fn echo_reply(&mut self, l: usize, now: u64) -> bool {
        let s = &*self.s;
        self.sync.section(s.leases.stripe(l), |sec| {
            let lease = s.leases.get_mut(sec, l);
            match lease.state {
                LeaseState::Free | LeaseState::Pinging => {
                    lease.state = LeaseState::InUse;
                    lease.until = now.saturating_add(s.cfg.decline_ticks);
                    true
                }
                _ => false,
            }
        })
    }
}

impl NfWorker for DhcpdWorker {
    type Error = DhcpError;

    fn packet(&mut self, pkt: &mut PacketMut<'_>, now: u64) -> Result<(), DhcpError> {
        let d = match classify(pkt.data())? {
            Msg::Dhcp(d) => d,
            Msg::EchoReply(a) => {
                let l = self.s.pool_index(a).ok_or(DhcpError::PingForeign)?;
                if self.echo_reply(l, now) {
                    self.c.ping_in_use += 1;
                }
                return Err(DhcpError::PingReply);
            }
        };
        let lease_secs = self.s.cfg.lease_secs;
        match d.msg {
            msg::DISCOVER => match self.discover(&d, now)? {
                Step::Ping(l) => {
                    write_ping(pkt, u32::from(pool_addr(l as usize)), l as u16)?;
                    self.c.pings += 1;
                    Ok(())
                }
                Step::Offer(l) => {
                    let a = u32::from(pool_addr(l as usize));
                    write_reply(pkt, &d, msg::OFFER, a, lease_secs)?;
                    self.c.offered += 1;
                    Ok(())
                }
                _ => Err(DhcpError::Raced),
            },
            msg::REQUEST => {
                if d.server_id.is_some_and(|x| x != u32::from(SERVER_IP)) {
                    return Err(DhcpError::OtherServer);
                }
                let (kind, a) = self.request(&d, now);
                write_reply(pkt, &d, kind, a, lease_secs)?;
                match kind {
                    msg::ACK => self.c.acked += 1,
                    _ => self.c.naked += 1,
                }
                Ok(())
            }
            msg::RELEASE => {
                let addr = (d.ciaddr != 0).then_some(d.ciaddr);
                match self.give_up(&d, addr, false, now) {
                    true => {
                        self.c.released += 1;
                        Err(DhcpError::Released)
                    }
                    false => Err(DhcpError::ReleaseIgnored),
                }
            }
            msg::DECLINE => match self.give_up(&d, d.requested, true, now) {
                true => {
                    self.c.declined += 1;
                    Err(DhcpError::Declined)
                }
                false => Err(DhcpError::DeclineIgnored),
            },
            msg::INFORM => {
                write_reply(pkt, &d, msg::ACK, 0, lease_secs)?;
                self.c.informed += 1;
                Ok(())
            }
            _ => Err(DhcpError::UnexpectedType),
        }
    }

    /// Sweeps the next [`DhcpConfig::sweep_stripes`] lease stripes this worker owns, one
    /// section each, and a few client-table buckets.
    fn after_vector(&mut self, now: u64) {
        let s = &*self.s;
        let (me, workers, stripes) = (self.sync.id(), s.domain.workers(), s.domain.stripes());
        if self.own_stripes == 0 {
            return;
        }
        for _ in 0..s.cfg.sweep_stripes.min(self.own_stripes) {
            let st = me + (self.sweep % self.own_stripes) * workers;
            self.sweep = self.sweep.wrapping_add(1);
            let (e, st_, u) = self.sync.section(st, |sec| {
                let (mut e, mut stale, mut unb) = (0u64, 0u64, 0u64);
                let mut i = st;
                while i < s.leases.len() {
                    let lease = s.leases.get(sec, i);
                    if lease.state != LeaseState::Free && lease.until <= now {
                        match lease.state {
                            LeaseState::Bound => e += 1,
                            LeaseState::Pinging | LeaseState::Offered => stale += 1,
                            _ => unb += 1,
                        }
                        *s.leases.get_mut(sec, i) = Lease::default();
                    }
                    i += stripes;
                }
                (e, stale, unb)
            });
            self.c.expired += e;
            self.c.stale += st_;
            self.c.unblocked += u;
            self.c.sweeps += 1;
        }
        let idle = s.cfg.lease_ticks.saturating_add(s.cfg.offer_ticks);
        s.clients.expire(
            &mut self.sync,
            &mut self.tw,
            now,
            idle,
            s.cfg.sweep_buckets,
            |_, _, _| {},
        );
    }

    fn sync(&mut self) -> &mut WorkerSync {
        &mut self.sync
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        let c = &self.c;
        vec![
            ("pings", c.pings),
            ("offered", c.offered),
            ("acked", c.acked),
            ("naked", c.naked),
            ("released", c.released),
            ("declined", c.declined),
            ("informed", c.informed),
            ("ping answered", c.ping_in_use),
            ("expired", c.expired),
            ("stale offers", c.stale),
            ("unblocked", c.unblocked),
            ("clients expired", self.tw.expired),
            ("client inserts refused", self.tw.refused),
        ]
    }
}

/// A client's DHCP message as a frame: Ethernet/IPv4/UDP 68→67 with a 300-byte BOOTP
/// message (options: message type, requested address, server id, parameter list, end).
/// Sent from `ciaddr` to the server when `ciaddr` is set (a renewal), else broadcast from
/// 0.0.0.0.
pub fn request_frame(
    mac: &Mac,
    xid: u32,
    kind: u8,
    ciaddr: Option<Ipv4Addr>,
    requested: Option<Ipv4Addr>,
    server_id: Option<Ipv4Addr>,
) -> Vec<u8> {
    let mut m = vec![0u8; 300];
    m[0] = 1;
    m[1] = 1;
    m[2] = 6;
    m[4..8].copy_from_slice(&xid.to_be_bytes());
    if let Some(c) = ciaddr {
        m[12..16].copy_from_slice(&c.octets());
    } else {
        m[10] = 0x80; // broadcast flag
    }
    m[28..34].copy_from_slice(mac);
    m[236..240].copy_from_slice(&MAGIC);
    let mut n = 240;
    m[n..n + 3].copy_from_slice(&[53, 1, kind]);
    n += 3;
    for (code, a) in [(50u8, requested), (54, server_id)] {
        if let Some(a) = a {
            m[n..n + 2].copy_from_slice(&[code, 4]);
            m[n + 2..n + 6].copy_from_slice(&a.octets());
            n += 6;
        }
    }
    m[n..n + 6].copy_from_slice(&[55, 4, 1, 3, 51, 54]);
    m[n + 6] = 255;
    let (src, dst, dmac) = match ciaddr {
        Some(c) => (c, SERVER_IP, SERVER_MAC),
        None => (Ipv4Addr::UNSPECIFIED, Ipv4Addr::BROADCAST, [0xff; 6]),
    };
    pktvec_packet::builder::PacketBuilder::ethernet(
        pktvec_packet::wire::MacAddr(*mac),
        pktvec_packet::wire::MacAddr(dmac),
    )
    .ipv4(src, dst)
    .udp(68, 67)
    .payload(&m)
    .build()
}

/// An ICMP echo reply from `addr` to the server (a host answering the server's ping).
pub fn echo_reply_frame(addr: Ipv4Addr, seq: u16) -> Vec<u8> {
    let o = addr.octets();
    pktvec_packet::builder::PacketBuilder::ethernet(
        pktvec_packet::wire::MacAddr([0x02, 0xee, o[0], o[1], o[2], o[3]]),
        pktvec_packet::wire::MacAddr(SERVER_MAC),
    )
    .ipv4(addr, SERVER_IP)
    .icmp_echo_reply(PING_ID, seq)
    .payload(b"udhcpd\0\0")
    .pad_to(60)
    .build()
}

/// A frame's flow for [`same_flow_share`](crate::runtime::same_flow_share): a DHCP
/// message's client, an echo reply's address; `None` for anything malformed.
pub fn flow_of(frame: &[u8]) -> Option<u64> {
    match classify(frame).ok()? {
        Msg::Dhcp(d) => Some(mac_hash(&d.chaddr)),
        Msg::EchoReply(a) => Some(u64::from(a) | 1 << 48),
    }
}

/// Host `h`'s hardware address.
pub fn host_mac(h: usize) -> Mac {
    let b = (h as u32).to_be_bytes();
    [0x02, 0xdc, b[0], b[1], b[2], b[3]]
}

/// The traffic generator's settings.
#[derive(Clone, Debug)]
pub struct TrafficConfig {
    /// Hosts on the network, split among the workers (`h % workers`); every tenth has a
    /// static address ([`is_static`]), the others are DHCP clients.
    pub hosts: usize,
    /// Packets of each worker's trace.
    pub packets: usize,
    /// The seed.
    pub seed: u64,
    /// Clients in conversation at once (their messages interleave).
    pub active: usize,
    /// Mean renewals a session makes.
    pub renewals: f64,
    /// Share of sessions ending with a RELEASE.
    pub release: f64,
    /// Share of sessions declining their address after the ACK.
    pub decline: f64,
    /// Share of new clients whose address is taken by a static host (answers the ping).
    pub conflicts: f64,
    /// Share of a bound client's turns in which its address answers someone's ping (an echo
    /// reply the server ignores: the address is bound).
    pub echo: f64,
    /// Share of packets that are malformed.
    pub malformed: f64,
}

impl Default for TrafficConfig {
    /// 20,000 hosts, 256 in conversation, 6 renewals a session, 20% releases, 1%
    /// declines, 1% conflicts, 1% echo replies, 0.5% malformed.
    fn default() -> Self {
        TrafficConfig {
            hosts: 20_000,
            packets: 100_000,
            seed: 1,
            active: 256,
            renewals: 6.0,
            release: 0.2,
            decline: 0.01,
            conflicts: 0.01,
            echo: 0.01,
            malformed: 0.005,
        }
    }
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn chance(&mut self, p: f64) -> bool {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64 <= p && p > 0.0
    }
}

/// Whether host `h` has a static address (every tenth host): it sends no DHCP, so the
/// pool keeps a tenth of its addresses spare, spread over every stripe.
pub fn is_static(h: usize) -> bool {
    h % 10 == 9
}

/// Each DHCP host's preferred address (the one it asks for): pool indices handed out from
/// the top down within each owner class, so the address lies in the class of the host's
/// client stripe and the spare addresses are each stripe's lowest, the first the server's
/// scan finds for a client that cannot have its own (`None` when its class ran out).
pub fn preferred_addresses(
    hosts: usize,
    pool: usize,
    stripes: usize,
    workers: usize,
) -> Vec<Option<usize>> {
    let mut next = vec![0usize; workers]; // per class: the k-th index of the class
    let mut by_class: Vec<Vec<usize>> = vec![Vec::new(); workers];
    for i in 0..pool {
        by_class[(i & (stripes - 1)) % workers].push(i);
    }
    (0..hosts)
        .map(|h| {
            if is_static(h) {
                return None;
            }
            let cs = mac_hash(&host_mac(h)) as usize & (stripes - 1);
            let r = cs % workers;
            let c = &by_class[r];
            let i = c.len().checked_sub(next[r] + 1).map(|j| c[j]);
            next[r] += 1;
            i
        })
        .collect()
}

#[derive(Clone, Copy)]
enum Say {
    Discover,
    Select,
    Renew,
    Release,
    Decline,
    Echo,
}

/// Worker `worker`'s trace: its hosts' (`h % workers == worker`) conversations,
/// interleaved, each client's messages in protocol order: a new client's DISCOVER (asking
/// for its preferred address), the retransmitted DISCOVER, the selecting REQUEST, then
/// renewals; some sessions end in a RELEASE or decline their address; a host already
/// holding a lease starts with renewals. Conflicted clients' addresses answer the ping (an
/// echo reply right after the DISCOVER), and those clients retransmit twice and give up.
/// Conflicted and declining clients then leave the trace (their next address is the
/// server's choice, which a precomputed trace cannot follow).
/// Mixed in: echo replies from addresses in use and malformed frames (truncated, no
/// cookie, an option running past the end, no message type, bad IPv4 or UDP checksum).
/// `stripes` and `workers` must be the domain's (they decide the preferred addresses).
pub fn traffic(
    t: &TrafficConfig,
    cfg: &DhcpConfig,
    stripes: usize,
    worker: usize,
    workers: usize,
) -> Vec<Vec<u8>> {
    let mut rng = Rng(t.seed ^ (worker as u64 + 1).wrapping_mul(0xd1b5_4a32_d192_ed03));
    let pref = preferred_addresses(t.hosts, cfg.pool, stripes, workers);
    let mine: Vec<usize> = (worker..t.hosts)
        .step_by(workers.max(1))
        .filter(|&h| !is_static(h))
        .collect();
    let mut out = Vec::with_capacity(t.packets);
    if mine.is_empty() {
        return out;
    }
    let mut bound = vec![false; mine.len()];
    let mut next_host = 0usize;
    let server = Some(SERVER_IP);
    // a session: (index into mine, xid, script, position)
    // a conflicted or declining client leaves the network: the address it would ask for
    // next is not the one the server chose for it, which a replayed trace cannot know
    let mut retired = vec![false; mine.len()];
    let mut new_session = |rng: &mut Rng, next_host: &mut usize, bound: &mut [bool]| {
        let mut k = *next_host % mine.len();
        for _ in 0..mine.len() {
            if !retired[k] {
                break;
            }
            *next_host += 1;
            k = *next_host % mine.len();
        }
        *next_host += 1;
        let mut s = Vec::new();
        if !bound[k] {
            s.push(Say::Discover);
            if rng.chance(t.conflicts) {
                s.extend([Say::Echo, Say::Discover, Say::Discover]);
                retired[k] = true;
                return (k, rng.next() as u32, s, 0usize);
            }
            s.extend([Say::Discover, Say::Select]);
            if rng.chance(t.decline) {
                s.push(Say::Decline);
                retired[k] = true;
                return (k, rng.next() as u32, s, 0);
            }
        }
        let p = t.renewals / (t.renewals + 1.0);
        while (s.is_empty() || rng.chance(p)) && s.len() < 64 {
            s.push(Say::Renew);
        }
        if rng.chance(t.release) {
            s.push(Say::Release);
            bound[k] = false;
        } else {
            bound[k] = true;
        }
        (k, rng.next() as u32, s, 0)
    };
    let mut active: Vec<(usize, u32, Vec<Say>, usize)> = (0..t.active.max(1))
        .map(|_| new_session(&mut rng, &mut next_host, &mut bound))
        .collect();
    while out.len() < t.packets {
        if rng.chance(t.malformed) {
            let h = mine[rng.below(mine.len())];
            out.push(malformed(&mut rng, &host_mac(h)));
            continue;
        }
        let slot = rng.below(active.len());
        let (k, xid, ref script, pos) = active[slot];
        // a host in use answering someone's ping: a client between its ACK and release
        if matches!(script[pos], Say::Renew | Say::Release) && rng.chance(t.echo) {
            if let Some(i) = pref[mine[k]] {
                out.push(echo_reply_frame(pool_addr(i), rng.next() as u16));
                continue;
            }
        }
        let h = mine[k];
        let mac = host_mac(h);
        let a = pref[h].map(pool_addr);
        let f = match script[pos] {
            Say::Discover => request_frame(&mac, xid, msg::DISCOVER, None, a, None),
            Say::Select => request_frame(&mac, xid, msg::REQUEST, None, a, server),
            Say::Renew if a.is_some() => request_frame(&mac, xid, msg::REQUEST, a, None, None),
            Say::Renew => request_frame(&mac, xid, msg::REQUEST, None, None, None),
            Say::Release => request_frame(&mac, xid, msg::RELEASE, a, None, server),
            Say::Decline => request_frame(&mac, xid, msg::DECLINE, None, a, server),
            Say::Echo => match a {
                Some(a) => echo_reply_frame(a, rng.next() as u16),
                None => request_frame(&mac, xid, msg::DISCOVER, None, None, None),
            },
        };
        out.push(f);
        if pos + 1 >= script.len() {
            active[slot] = new_session(&mut rng, &mut next_host, &mut bound);
        } else {
            active[slot].3 += 1;
        }
    }
    out
}

/// A broken DISCOVER from `mac` (one of six ways).
fn malformed(rng: &mut Rng, mac: &Mac) -> Vec<u8> {
    let mut f = request_frame(mac, rng.next() as u32, msg::DISCOVER, None, None, None);
    const BOOTP: usize = 42;
    match rng.below(6) {
        0 => {
            let n = 14 + rng.below(f.len() - 14);
            f.truncate(n);
        }
        1 => f[BOOTP + 236] = 0,
        2 => f[BOOTP + 241] = 200,
        3 => f[BOOTP + 240..BOOTP + 243].fill(0),
        4 => f[24] ^= 0x5a,
        _ => {
            f[BOOTP + 100] ^= 0xff; // the UDP checksum no longer matches
            return f;
        }
    }
    if matches!(f.len(), 42..) {
        f[40..42].fill(0); // no UDP checksum: the damage itself is what is caught
    }
    f
}
