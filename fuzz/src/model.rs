//! Reference models: from an injected frame and its receive interface, what the forwarder
//! must transmit, written independently of the nodes (plain field reads, a hash map per
//! prefix length for the longest-prefix match, RFC 1071 sums), and the multiset of
//! expected transmissions the checking sink compares against.

use crate::acl::{DENY_PORTS, DENY_SRC};
use crate::synth::{ones_sum, OUR_IP};
use pktvec::lookup::routes::{Route4, Route6};
use pktvec::nodes::apps::l3fwd::adjacency;
use pktvec::nodes::ndn::NdnFib;
use pktvec::packet::wire::{parse_l2, NdnInterest};
use std::collections::HashMap;

/// Expected transmissions: (tx interface, frame bytes as the sink normalizes them) → how
/// many times at least and at most.
#[derive(Default, Debug)]
pub struct Expect {
    /// The bounds per transmission.
    pub map: HashMap<(u16, Vec<u8>), (u32, u32)>,
}

impl Expect {
    /// `frame` must leave on `tx` (once more).
    pub fn exact(&mut self, tx: u16, frame: Vec<u8>) {
        let e = self.map.entry((tx, frame)).or_default();
        e.0 += 1;
        e.1 += 1;
    }
    /// `frame` may leave on `tx` (once more).
    pub fn maybe(&mut self, tx: u16, frame: Vec<u8>) {
        self.map.entry((tx, frame)).or_default().1 += 1;
    }
    /// Forgets everything.
    pub fn clear(&mut self) {
        self.map.clear();
    }
}

/// Longest-prefix match by one hash map per prefix length, longest first.
pub struct RefLpm<A> {
    by_len: Vec<(u8, HashMap<A, u32>)>,
}

impl RefLpm<u32> {
    /// From IPv4 routes (next hops as given).
    pub fn v4(routes: &[Route4]) -> Self {
        let mut m: HashMap<u8, HashMap<u32, u32>> = HashMap::new();
        for r in routes {
            m.entry(r.len)
                .or_default()
                .insert(u32::from(r.addr) & mask4(r.len), r.next_hop);
        }
        let mut by_len: Vec<_> = m.into_iter().collect();
        by_len.sort_by_key(|e| std::cmp::Reverse(e.0));
        RefLpm { by_len }
    }
    /// The next hop of the longest prefix holding `a`.
    pub fn lookup(&self, a: u32) -> Option<u32> {
        self.by_len
            .iter()
            .find_map(|(l, t)| t.get(&(a & mask4(*l))).copied())
    }
}

impl RefLpm<u128> {
    /// From IPv6 routes (next hops as given).
    pub fn v6(routes: &[Route6]) -> Self {
        let mut m: HashMap<u8, HashMap<u128, u32>> = HashMap::new();
        for r in routes {
            m.entry(r.len)
                .or_default()
                .insert(u128::from(r.addr) & mask6(r.len), r.next_hop);
        }
        let mut by_len: Vec<_> = m.into_iter().collect();
        by_len.sort_by_key(|e| std::cmp::Reverse(e.0));
        RefLpm { by_len }
    }
    /// The next hop of the longest prefix holding `a`.
    pub fn lookup(&self, a: u128) -> Option<u32> {
        self.by_len
            .iter()
            .find_map(|(l, t)| t.get(&(a & mask6(*l))).copied())
    }
}

fn mask4(len: u8) -> u32 {
    if len == 0 {
        0
    } else {
        u32::MAX << (32 - u32::from(len.min(32)))
    }
}

fn mask6(len: u8) -> u128 {
    if len == 0 {
        0
    } else {
        u128::MAX << (128 - u32::from(len.min(128)))
    }
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// The L3 bytes and EtherType of a frame `ethernet-input` accepts (at most two VLAN tags).
fn l3_of(frame: &[u8]) -> Option<(u16, &[u8])> {
    let l2 = parse_l2(frame).ok()?;
    Some((l2.ethertype.0, frame.get(usize::from(l2.l3_offset)..)?))
}

/// The `l3fwd` router (also behind the batcher, and with the ACL of `nf_acl`).
pub struct L3Model {
    lpm4: RefLpm<u32>,
    lpm6: RefLpm<u128>,
    ports: u16,
    acl: bool,
    strict: bool,
}

impl L3Model {
    /// The model of a router over these routes (next hops already modulo `ports`); `acl`:
    /// with `nf_acl`'s ACL between `ip4-input` and `ip4-lookup`; `strict`: `ip4-input`
    /// drops IPv4 options and fragments.
    pub fn new(
        routes4: &[Route4],
        routes6: &[Route6],
        ports: u16,
        acl: bool,
        strict: bool,
    ) -> Self {
        L3Model {
            lpm4: RefLpm::v4(routes4),
            lpm6: RefLpm::v6(routes6),
            ports,
            acl,
            strict,
        }
    }

    fn header(tx: u16, ethertype: u16) -> Vec<u8> {
        let a = adjacency(tx);
        let mut h = Vec::with_capacity(64);
        h.extend_from_slice(&a.dst_mac.0);
        h.extend_from_slice(&a.src_mac.0);
        h.extend_from_slice(&ethertype.to_be_bytes());
        h
    }

    /// `nf_acl`'s rules on a checked IPv4 packet `ip` (header length `hl`).
    fn acl_denies(ip: &[u8], hl: usize) -> bool {
        let src = be32(ip, 12);
        if DENY_SRC
            .iter()
            .any(|&(a, l)| src & mask4(l) == u32::from(a) & mask4(l))
        {
            return true;
        }
        let proto = ip[9];
        let first_fragment = be16(ip, 6) & 0x1fff == 0;
        if (proto == 6 || proto == 17) && first_fragment && ip.len() >= hl + 4 {
            let port = be16(ip, hl + 2);
            return DENY_PORTS.iter().any(|&(lo, hi)| (lo..=hi).contains(&port));
        }
        false
    }

    /// Adds what the router transmits for `frame` received on `rx_if`.
    pub fn expect(&self, frame: &[u8], rx_if: u16, e: &mut Expect) {
        let Some((et, l3)) = l3_of(frame) else {
            return;
        };
        match et {
            0x0800 => {
                // ip4-input: version, header length, total length, checksum, TTL.
                if l3.len() < 20 || l3[0] >> 4 != 4 {
                    return;
                }
                let hl = usize::from(l3[0] & 15) * 4;
                let total = usize::from(be16(l3, 2));
                if hl < 20 || hl > l3.len() || total < hl || total > l3.len() {
                    return;
                }
                if ones_sum(&l3[..hl]) != 0xffff || l3[8] <= 1 {
                    return;
                }
                if self.strict && (hl > 20 || be16(l3, 6) & 0x3fff != 0) {
                    return;
                }
                let ip = &l3[..total];
                if self.acl && Self::acl_denies(ip, hl) {
                    return;
                }
                let Some(nh) = self.lpm4.lookup(be32(ip, 16)) else {
                    return;
                };
                let tx = (nh % u32::from(self.ports)) as u16;
                let mut out = Self::header(tx, 0x0800);
                let at = out.len();
                out.extend_from_slice(ip);
                out[at + 8] -= 1;
                // The sink verifies the checksum and zeroes it.
                out[at + 10] = 0;
                out[at + 11] = 0;
                e.exact(tx, out);
            }
            0x86dd => {
                if l3.len() < 40 || l3[0] >> 4 != 6 {
                    return;
                }
                let total = 40 + usize::from(be16(l3, 4));
                if total > l3.len() || l3[7] <= 1 {
                    return;
                }
                let dst = u128::from_be_bytes(l3[24..40].try_into().unwrap_or_default());
                let Some(nh) = self.lpm6.lookup(dst) else {
                    return;
                };
                let tx = (nh % u32::from(self.ports)) as u16;
                let mut out = Self::header(tx, 0x86dd);
                let at = out.len();
                out.extend_from_slice(&l3[..total]);
                out[at + 7] -= 1;
                e.exact(tx, out);
            }
            0x0806 => {
                // A request for our address, answered on the interface it came from.
                if l3.len() < 28
                    || be16(l3, 0) != 1
                    || be16(l3, 2) != 0x0800
                    || l3[4] != 6
                    || l3[5] != 4
                    || be16(l3, 6) != 1
                    || l3[24..28] != OUR_IP.octets()
                    || rx_if >= self.ports
                {
                    return;
                }
                let ours = adjacency(0).src_mac.0;
                let mut out = Vec::with_capacity(14 + l3.len());
                out.extend_from_slice(&l3[8..14]);
                out.extend_from_slice(&ours);
                out.extend_from_slice(&0x0806u16.to_be_bytes());
                let at = out.len();
                out.extend_from_slice(l3);
                let (sha, spa) = (l3[8..14].to_vec(), l3[14..18].to_vec());
                out[at + 6..at + 8].copy_from_slice(&2u16.to_be_bytes());
                out[at + 8..at + 14].copy_from_slice(&ours);
                out[at + 14..at + 18].copy_from_slice(&OUR_IP.octets());
                out[at + 18..at + 24].copy_from_slice(&sha);
                out[at + 24..at + 28].copy_from_slice(&spa);
                e.exact(rx_if, out);
            }
            _ => {}
        }
    }
}

/// `ndnfwd`: an Interest or Data packet whose name has a prefix in the FIB leaves, as it
/// came, on that prefix's interface (the FIB's slow `lookup_encoded` against the node's
/// two-phase lookup).
pub fn ndn_expect(fib: &NdnFib, frame: &[u8], e: &mut Expect) {
    let Some((0x8624, l3)) = l3_of(frame) else {
        return;
    };
    let Ok(i) = NdnInterest::new_checked(l3) else {
        return;
    };
    if let Some(port) = fib.lookup_encoded(i.name_bytes()) {
        e.exact(port as u16, frame.to_vec());
    }
}

/// `cryptofwd`: a frame of at least the clear header (14 bytes) with room for the 24-byte
/// trailer, received on a cross-connected interface, leaves on its peer; the sink decrypts
/// it first when the graph does not.
pub fn crypto_expect(frame: &[u8], rx_if: u16, ports: u16, e: &mut Expect) {
    if rx_if < ports && frame.len() >= 14 && frame.len() + 24 <= crate::DATA_ROOM {
        e.exact(rx_if ^ 1, frame.to_vec());
    }
}

/// `l2fwd`: frames leave unchanged, never on the interface they came from. A frame to a
/// group address is flooded to every other port (whatever the table holds); a unicast frame
/// leaves on at most one port per other interface (one if known, all others if flooded,
/// none if dropped) — how many depends on what was learned earlier in the input.
pub fn l2_expect(frame: &[u8], rx_if: u16, ports: u16, e: &mut Expect) {
    if frame.len() < 14 {
        return;
    }
    let group = frame[0] & 1 != 0;
    for q in (0..ports).filter(|&q| q != rx_if) {
        if group {
            e.exact(q, frame.to_vec());
        } else {
            e.maybe(q, frame.to_vec());
        }
    }
}
