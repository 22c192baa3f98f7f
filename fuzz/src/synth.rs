//! Synthetic frames: a synthetic frame's fuzz bytes are read as parameters (kind, TTL, which
//! route, host bits, ...) and the rest as payload, and a well-formed frame is built from
//! them, so that most inputs get past the header checks and reach the lookups, rewrites
//! and replies, while the fuzzer still controls every field that matters.

use pktvec::lookup::routes::{Route4, Route6};
use pktvec::nodes::apps::l2fwd::station_mac;
use pktvec::packet::wire::ndn::{push_tlv, TLV_INTEREST, TLV_NAME};
use std::net::Ipv4Addr;

use crate::DATA_ROOM;

/// Reads parameters from the front of a byte slice; past its end every read is 0.
pub struct Cursor<'a> {
    b: &'a [u8],
}

impl<'a> Cursor<'a> {
    /// A cursor at the start of `b`.
    pub fn new(b: &'a [u8]) -> Self {
        Cursor { b }
    }
    /// Up to `n` bytes (fewer at the end).
    pub fn take(&mut self, n: usize) -> &'a [u8] {
        let (h, t) = self.b.split_at(n.min(self.b.len()));
        self.b = t;
        h
    }
    /// One byte.
    pub fn u8(&mut self) -> u8 {
        self.take(1).first().copied().unwrap_or(0)
    }
    /// A big-endian u16.
    pub fn u16(&mut self) -> u16 {
        u16::from(self.u8()) << 8 | u16::from(self.u8())
    }
    /// A big-endian u32.
    pub fn u32(&mut self) -> u32 {
        u32::from(self.u16()) << 16 | u32::from(self.u16())
    }
    /// What is left.
    pub fn rest(&mut self) -> &'a [u8] {
        self.take(usize::MAX)
    }
}

/// Source MAC of synthesized frames (a host on the wire).
pub const HOST_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x01];
/// Destination MAC of synthesized IP frames (the router; `l3fwd` does not check it).
pub const ROUTER_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0xfe];
/// The router's IPv4 address (`L3fwdConfig::arp_addresses`' default).
pub const OUR_IP: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 1);

/// RFC 1071 one's-complement sum of `b` folded to 16 bits (an odd last byte padded).
pub fn ones_sum(b: &[u8]) -> u16 {
    let mut s: u64 = 0;
    let mut it = b.chunks_exact(2);
    for w in &mut it {
        s += u64::from(u16::from_be_bytes([w[0], w[1]]));
    }
    if let [x] = it.remainder() {
        s += u64::from(*x) << 8;
    }
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    s as u16
}

/// Writes the Ethernet header (and 0, 1 or 2 VLAN tags) for `ethertype`.
fn ethernet(out: &mut Vec<u8>, dst: [u8; 6], src: [u8; 6], tags: &[u16], ethertype: u16) {
    out.extend_from_slice(&dst);
    out.extend_from_slice(&src);
    let tpids: &[u16] = if tags.len() == 2 {
        &[0x88a8, 0x8100]
    } else {
        &[0x8100]
    };
    for (t, tci) in tpids.iter().zip(tags) {
        out.extend_from_slice(&t.to_be_bytes());
        out.extend_from_slice(&tci.to_be_bytes());
    }
    out.extend_from_slice(&ethertype.to_be_bytes());
}

/// A frame for the IP forwarders (`l3fwd`, `ppb_l3fwd`, `nf_acl`), from `bytes`:
///
/// ```text
/// kind  bit 0 IPv6; bit 1 one VLAN tag; bit 2 (with bit 1) two tags; bit 3 IPv4
///       options; bits 4..=5 both set: an ARP request for the router instead; bit 6
///       Ethernet padding after the packet; bit 7 corrupt the IPv4 header checksum
/// ttl   TTL / hop limit
/// route which route's prefix the destination is in (u16, modulo the route count)
/// host  host bits inside the prefix (u32; IPv6: u32 + u32 + u16)
/// src   source address (u32; IPv6: 2001:db8::/96 + u32)
/// proto protocol / next header, tos, ident (u16), fragment field (u16), [vlan tags],
/// [options length and bytes], [padding length], [checksum xor], payload
/// ```
pub fn l3_frame(bytes: &[u8], routes4: &[Route4], routes6: &[Route6], out: &mut Vec<u8>) {
    let mut c = Cursor::new(bytes);
    let kind = c.u8();
    let ttl = c.u8();
    let route = usize::from(c.u16());
    let host = c.u32();
    let src = c.u32();
    let proto = c.u8();
    let tos = c.u8();
    let ident = c.u16();
    let frag = c.u16();
    let tags: Vec<u16> = match kind & 6 {
        2 => vec![c.u16()],
        6 => vec![c.u16(), c.u16()],
        _ => vec![],
    };
    out.clear();
    if kind & 0x30 == 0x30 {
        // ARP request: who has OUR_IP, tell src (sender MAC from the fuzz bytes).
        let mut sha = [0u8; 6];
        sha.copy_from_slice(&[c.take(6), &[0; 6]].concat()[..6]);
        ethernet(out, [0xff; 6], sha, &tags, 0x0806);
        out.extend_from_slice(&[0, 1, 8, 0, 6, 4, 0, 1]);
        out.extend_from_slice(&sha);
        out.extend_from_slice(&src.to_be_bytes());
        out.extend_from_slice(&[0; 6]);
        out.extend_from_slice(&OUR_IP.octets());
        let room = DATA_ROOM - out.len();
        let pad = c.rest();
        out.extend_from_slice(&pad[..pad.len().min(room)]);
        return;
    }
    if kind & 1 == 0 {
        let opts_len = if kind & 8 != 0 {
            usize::from(c.u8() % 11) * 4
        } else {
            0
        };
        let opts = {
            let o = c.take(opts_len);
            let mut v = o.to_vec();
            v.resize(opts_len, 0);
            v
        };
        let pad = if kind & 0x40 != 0 {
            usize::from(c.u8() % 32)
        } else {
            0
        };
        let xor = if kind & 0x80 != 0 { c.u16() } else { 0 };
        let dst = match routes4.get(route % routes4.len().max(1)) {
            Some(r) => {
                let mask = if r.len == 0 {
                    0
                } else {
                    u32::MAX << (32 - r.len)
                };
                u32::from(r.addr) & mask | host & !mask
            }
            None => host,
        };
        ethernet(out, ROUTER_MAC, HOST_MAC, &tags, 0x0800);
        let hl = 20 + opts_len;
        let room = DATA_ROOM - out.len() - hl - pad;
        let payload = c.rest();
        let payload = &payload[..payload.len().min(room)];
        let total = (hl + payload.len()) as u16;
        let at = out.len();
        out.push(0x40 | (hl / 4) as u8);
        out.push(tos);
        out.extend_from_slice(&total.to_be_bytes());
        out.extend_from_slice(&ident.to_be_bytes());
        out.extend_from_slice(&frag.to_be_bytes());
        out.extend_from_slice(&[ttl, proto, 0, 0]);
        out.extend_from_slice(&src.to_be_bytes());
        out.extend_from_slice(&dst.to_be_bytes());
        out.extend_from_slice(&opts);
        let sum = !ones_sum(&out[at..at + hl]) ^ xor;
        out[at + 10..at + 12].copy_from_slice(&sum.to_be_bytes());
        out.extend_from_slice(payload);
        out.resize(out.len() + pad, 0);
    } else {
        let host = u128::from(host) | u128::from(c.u32()) << 32 | u128::from(c.u16()) << 64;
        let pad = if kind & 0x40 != 0 {
            usize::from(c.u8() % 32)
        } else {
            0
        };
        let dst = match routes6.get(route % routes6.len().max(1)) {
            Some(r) => {
                let mask = if r.len == 0 {
                    0
                } else {
                    u128::MAX << (128 - r.len)
                };
                u128::from(r.addr) & mask | host & !mask
            }
            None => host,
        };
        let src6 = 0x2001_0db8u128 << 96 | u128::from(src);
        ethernet(out, ROUTER_MAC, HOST_MAC, &tags, 0x86dd);
        let room = DATA_ROOM - out.len() - 40 - pad;
        let payload = c.rest();
        let payload = &payload[..payload.len().min(room)];
        let flow = u32::from(ident) << 4 | u32::from(frag & 0xf);
        let w0 = 6u32 << 28 | u32::from(tos) << 20 | flow & 0xfffff;
        out.extend_from_slice(&w0.to_be_bytes());
        out.extend_from_slice(&(payload.len() as u16).to_be_bytes());
        out.extend_from_slice(&[proto, ttl]);
        out.extend_from_slice(&src6.to_be_bytes());
        out.extend_from_slice(&dst.to_be_bytes());
        out.extend_from_slice(payload);
        out.resize(out.len() + pad, 0);
    }
}

/// Stations whose MACs synthetic `l2fwd` frames use: the first [`STATIONS_KNOWN`] are in the
/// MAC table at the start of every input, the rest are unknown until learned.
pub const STATIONS: u32 = 96;
/// Stations put in the MAC table before every input.
pub const STATIONS_KNOWN: u32 = 64;

/// A frame for `l2fwd`: `dst kind` (0: station, 1: broadcast, 2: IPv4 multicast, 3: six
/// raw bytes), `src kind` (0..=2: station, 3: six raw bytes), station numbers (u8 each,
/// modulo [`STATIONS`]), EtherType (u16), payload.
pub fn l2_frame(bytes: &[u8], out: &mut Vec<u8>) {
    let mut c = Cursor::new(bytes);
    let kinds = c.u8();
    let (ds, ss) = (u32::from(c.u8()) % STATIONS, u32::from(c.u8()) % STATIONS);
    let mac = |k: u8, s: u32, c: &mut Cursor<'_>| -> [u8; 6] {
        match k & 3 {
            0 => station_mac(s).0,
            1 if kinds & 0x80 == 0 => [0xff; 6],
            1 | 2 => [0x01, 0x00, 0x5e, 0x00, 0x00, s as u8],
            _ => {
                let mut m = [0u8; 6];
                let t = c.take(6);
                m[..t.len()].copy_from_slice(t);
                m
            }
        }
    };
    let dst = mac(kinds, ds, &mut c);
    let src = mac(if kinds & 0x0c == 0x0c { 3 } else { 0 }, ss, &mut c);
    let et = c.u16();
    out.clear();
    ethernet(out, dst, src, &[], et);
    let p = c.rest();
    out.extend_from_slice(&p[..p.len().min(DATA_ROOM - 14)]);
}

/// An NDN frame for `ndnfwd`: `kind` (bit 0: Data instead of Interest; bit 1: one VLAN
/// tag, with its TCI next), `prefix` (u16, modulo the FIB's prefixes), up to three more
/// name components (a count byte, then per component a length byte, modulo 16, and its
/// bytes), then the rest as a further TLV (type 0x0a, Nonce) inside the packet.
pub fn ndn_frame(bytes: &[u8], prefixes: &[String], out: &mut Vec<u8>) {
    let mut c = Cursor::new(bytes);
    let kind = c.u8();
    let tags: Vec<u16> = if kind & 2 != 0 { vec![c.u16()] } else { vec![] };
    let prefix = usize::from(c.u16());
    let mut name = Vec::new();
    if let Some(p) = prefixes.get(prefix % prefixes.len().max(1)) {
        pktvec::packet::wire::ndn::encode_name(p, &mut name);
    }
    for _ in 0..c.u8() % 4 {
        let n = usize::from(c.u8() % 16);
        push_tlv(&mut name, 0x08, c.take(n));
    }
    let mut inner = Vec::new();
    push_tlv(&mut inner, TLV_NAME, &name);
    let rest = c.rest();
    let room = (DATA_ROOM - 32).saturating_sub(inner.len() + 20);
    push_tlv(&mut inner, 0x0a, &rest[..rest.len().min(room)]);
    out.clear();
    ethernet(out, ROUTER_MAC, HOST_MAC, &tags, 0x8624);
    push_tlv(out, if kind & 1 != 0 { 0x06 } else { TLV_INTEREST }, &inner);
}
