//! A packet builder for tests and traffic generators.
//!
//! [`PacketBuilder`] describes one Ethernet frame layer by layer — Ethernet,
//! 0–2 VLAN tags, IPv4/IPv6/ARP (or a raw EtherType), UDP/TCP/ICMP echo and a
//! payload — and writes it with every length and checksum filled in, using
//! the [`wire`](crate::wire) views. It is not a fast-path API: the builder
//! owns its payload bytes. [`write_into`](PacketBuilder::write_into) itself
//! does not allocate, so a generator can build a template once and stamp it
//! into pool buffers.
//!
//! Call order: [`ethernet`](PacketBuilder::ethernet), then
//! [`vlan`](PacketBuilder::vlan) (0–2 times), then one network layer, its
//! options, then at most one transport layer and the payload. Misuse (a third
//! VLAN tag, UDP over ARP, over-long options) panics: this is a test tool.
//!
//! ```
//! use pktvec_packet::builder::PacketBuilder;
//! use pktvec_packet::wire::{parse_l2, EtherType, Ipv6Packet, MacAddr, TcpFlags, TcpPacket};
//! use std::net::Ipv6Addr;
//!
//! let (s, d): (Ipv6Addr, Ipv6Addr) = ("2001:db8::1".parse().unwrap(), "2001:db8::2".parse().unwrap());
//! let b = PacketBuilder::ethernet(MacAddr([2, 0, 0, 0, 0, 1]), MacAddr([2, 0, 0, 0, 0, 2]))
//!     .vlan(10)
//!     .vlan(20) // QinQ: outer 0x88a8 vid 10, inner 0x8100 vid 20
//!     .ipv6(s, d)
//!     .hop_limit(5)
//!     .tcp(443, 50000, TcpFlags::SYN | TcpFlags::ACK)
//!     .payload_len(100);
//! let mut buf = [0u8; 2048];
//! let n = b.write_into(&mut buf);
//! assert_eq!(n, 22 + 40 + 20 + 100);
//!
//! let l2 = parse_l2(&buf[..n]).unwrap();
//! assert_eq!((l2.ethertype, l2.vlans, usize::from(l2.l3_offset)), (EtherType::IPV6, [10, 20], b.l3_offset()));
//! let ip = Ipv6Packet::new_checked(&buf[b.l3_offset()..n]).unwrap();
//! let tcp = TcpPacket::new_checked(ip.payload()).unwrap();
//! assert_eq!(tcp.payload().len(), 100);
//! assert!(tcp.verify_checksum(s, d));
//! ```

use crate::wire::{
    ArpOperation, ArpPacket, EtherType, EthernetFrame, Icmpv4Packet, Icmpv4Type, Icmpv6Packet,
    Icmpv6Type, IpProtocol, Ipv4Packet, Ipv6Packet, MacAddr, TcpFlags, TcpPacket, UdpPacket,
    VlanTag, WireError,
};
use std::net::{Ipv4Addr, Ipv6Addr};

/// The EtherType used when no network layer is chosen: IEEE 802 local
/// experimental EtherType 1.
const DEFAULT_ETHERTYPE: EtherType = EtherType(0x88b5);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum L3 {
    Raw(EtherType),
    Ipv4 {
        src: Ipv4Addr,
        dst: Ipv4Addr,
    },
    Ipv6 {
        src: Ipv6Addr,
        dst: Ipv6Addr,
    },
    Arp {
        op: ArpOperation,
        sha: MacAddr,
        spa: Ipv4Addr,
        tha: MacAddr,
        tpa: Ipv4Addr,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum L4 {
    None,
    Udp {
        sport: u16,
        dport: u16,
    },
    Tcp {
        sport: u16,
        dport: u16,
        flags: TcpFlags,
    },
    IcmpEcho {
        id: u16,
        seq: u16,
        reply: bool,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Payload {
    Bytes(Vec<u8>),
    /// `n` bytes of the pattern `0, 1, 2, …, 255, 0, …`.
    Pattern(usize),
}

/// Describes one Ethernet frame and writes it with lengths and checksums
/// filled in. See the [module documentation](self).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PacketBuilder {
    eth_src: MacAddr,
    eth_dst: MacAddr,
    vlans: [u16; 2],
    n_vlans: u8,
    l3: L3,
    hop: u8,
    ident: u16,
    dont_frag: bool,
    frag_offset: u16,
    more_frags: bool,
    traffic_class: u8,
    flow_label: u32,
    ip_opts: [u8; 40],
    ip_opts_len: u8,
    l4: L4,
    tcp_seq: u32,
    tcp_ack: u32,
    tcp_window: u16,
    tcp_opts: [u8; 40],
    tcp_opts_len: u8,
    payload: Payload,
    pad_to: usize,
}

/// Copies `opts` into a 40-byte option area, zero-padded (EOL) to a multiple
/// of 4. Returns the padded length.
fn set_options(area: &mut [u8; 40], opts: &[u8], what: &str) -> u8 {
    let padded = opts.len().div_ceil(4) * 4;
    assert!(
        padded <= 40,
        "{what} options longer than 40 bytes ({} bytes)",
        opts.len()
    );
    *area = [0; 40];
    area[..opts.len()].copy_from_slice(opts);
    padded as u8
}

impl PacketBuilder {
    /// Starts a frame from `src` to `dst`. Until a network layer is chosen the
    /// frame carries EtherType 0x88B5 (IEEE local experimental) followed by
    /// the payload.
    pub fn ethernet(src: MacAddr, dst: MacAddr) -> Self {
        PacketBuilder {
            eth_src: src,
            eth_dst: dst,
            vlans: [0; 2],
            n_vlans: 0,
            l3: L3::Raw(DEFAULT_ETHERTYPE),
            hop: 64,
            ident: 0,
            dont_frag: false,
            frag_offset: 0,
            more_frags: false,
            traffic_class: 0,
            flow_label: 0,
            ip_opts: [0; 40],
            ip_opts_len: 0,
            l4: L4::None,
            tcp_seq: 0,
            tcp_ack: 0,
            tcp_window: 65535,
            tcp_opts: [0; 40],
            tcp_opts_len: 0,
            payload: Payload::Pattern(0),
            pad_to: 0,
        }
    }

    /// Adds a VLAN tag with id `vid` (PCP 0, DEI 0). With one tag the TPID
    /// is 0x8100; with two, the first (outer) tag uses 0x88A8 and the inner
    /// one 0x8100.
    ///
    /// # Panics
    /// On a third tag or if `vid > 4095`.
    pub fn vlan(mut self, vid: u16) -> Self {
        assert!(self.n_vlans < 2, "at most two VLAN tags");
        assert!(vid <= 0x0fff, "VLAN id {vid} out of range");
        self.vlans[usize::from(self.n_vlans)] = vid;
        self.n_vlans += 1;
        self
    }

    /// Carries an IPv4 header (TTL 64, no options, ident 0 unless set).
    pub fn ipv4(mut self, src: Ipv4Addr, dst: Ipv4Addr) -> Self {
        self.l3 = L3::Ipv4 { src, dst };
        self
    }

    /// Carries an IPv6 header (hop limit 64 unless set).
    pub fn ipv6(mut self, src: Ipv6Addr, dst: Ipv6Addr) -> Self {
        self.l3 = L3::Ipv6 { src, dst };
        self
    }

    /// Carries an ARP request: who has `target_ip`, tell `sender_ip` at
    /// `sender_mac`. The target hardware address is zero. (The Ethernet
    /// destination is whatever was given to [`ethernet`](Self::ethernet),
    /// usually [`MacAddr::BROADCAST`].)
    pub fn arp_request(
        mut self,
        sender_mac: MacAddr,
        sender_ip: Ipv4Addr,
        target_ip: Ipv4Addr,
    ) -> Self {
        self.l3 = L3::Arp {
            op: ArpOperation::REQUEST,
            sha: sender_mac,
            spa: sender_ip,
            tha: MacAddr::ZERO,
            tpa: target_ip,
        };
        self
    }

    /// Carries an ARP reply: `sender_ip` is at `sender_mac`, addressed to
    /// `target_mac`/`target_ip`.
    pub fn arp_reply(
        mut self,
        sender_mac: MacAddr,
        sender_ip: Ipv4Addr,
        target_mac: MacAddr,
        target_ip: Ipv4Addr,
    ) -> Self {
        self.l3 = L3::Arp {
            op: ArpOperation::REPLY,
            sha: sender_mac,
            spa: sender_ip,
            tha: target_mac,
            tpa: target_ip,
        };
        self
    }

    /// Uses EtherType `ethertype` with the payload directly after the
    /// Ethernet/VLAN header (for unknown or unsupported EtherTypes).
    pub fn ethertype_raw(mut self, ethertype: u16) -> Self {
        self.l3 = L3::Raw(EtherType(ethertype));
        self
    }

    /// Sets the IPv4 TTL (same field as [`hop_limit`](Self::hop_limit)).
    pub fn ttl(mut self, ttl: u8) -> Self {
        self.hop = ttl;
        self
    }

    /// Sets the IPv6 hop limit (same field as [`ttl`](Self::ttl)).
    pub fn hop_limit(mut self, hop_limit: u8) -> Self {
        self.hop = hop_limit;
        self
    }

    /// Sets IPv4 option bytes, zero-padded (EOL) to a multiple of 4. Ignored
    /// for IPv6.
    ///
    /// # Panics
    /// If the padded options exceed 40 bytes.
    pub fn ipv4_options(mut self, opts: &[u8]) -> Self {
        self.ip_opts_len = set_options(&mut self.ip_opts, opts, "IPv4");
        self
    }

    /// Sets the IPv4 identification.
    pub fn ident(mut self, ident: u16) -> Self {
        self.ident = ident;
        self
    }

    /// Sets the IPv4 don't-fragment flag.
    pub fn dont_frag(mut self, on: bool) -> Self {
        self.dont_frag = on;
        self
    }

    /// Marks the IPv4 packet as a fragment at `offset_units` × 8 bytes with
    /// the more-fragments flag `more`. The L4 header, if any, is still
    /// written at the start of the payload.
    pub fn fragment(mut self, offset_units: u16, more: bool) -> Self {
        self.frag_offset = offset_units & 0x1fff;
        self.more_frags = more;
        self
    }

    /// Sets DSCP and ECN (IPv4 DSCP/ECN fields, IPv6 traffic class).
    pub fn dscp_ecn(mut self, dscp: u8, ecn: u8) -> Self {
        self.traffic_class = (dscp << 2) | (ecn & 0x03);
        self
    }

    /// Sets the IPv6 flow label (low 20 bits).
    pub fn flow_label(mut self, label: u32) -> Self {
        self.flow_label = label & 0x000f_ffff;
        self
    }

    fn require_ip(&self, what: &str) {
        assert!(
            matches!(self.l3, L3::Ipv4 { .. } | L3::Ipv6 { .. }),
            "{what}() needs ipv4() or ipv6() first"
        );
    }

    /// Carries a UDP header.
    ///
    /// # Panics
    /// If the network layer is not IPv4 or IPv6.
    pub fn udp(mut self, sport: u16, dport: u16) -> Self {
        self.require_ip("udp");
        self.l4 = L4::Udp { sport, dport };
        self
    }

    /// Carries a TCP header with `flags` (sequence/ack numbers 0 and window
    /// 65535 unless set).
    ///
    /// # Panics
    /// If the network layer is not IPv4 or IPv6.
    pub fn tcp(mut self, sport: u16, dport: u16, flags: TcpFlags) -> Self {
        self.require_ip("tcp");
        self.l4 = L4::Tcp {
            sport,
            dport,
            flags,
        };
        self
    }

    /// Sets the TCP sequence and acknowledgment numbers.
    pub fn tcp_seq_ack(mut self, seq: u32, ack: u32) -> Self {
        self.tcp_seq = seq;
        self.tcp_ack = ack;
        self
    }

    /// Sets the TCP window.
    pub fn tcp_window(mut self, window: u16) -> Self {
        self.tcp_window = window;
        self
    }

    /// Sets TCP option bytes, zero-padded (EOL) to a multiple of 4.
    ///
    /// # Panics
    /// If the padded options exceed 40 bytes.
    pub fn tcp_options(mut self, opts: &[u8]) -> Self {
        self.tcp_opts_len = set_options(&mut self.tcp_opts, opts, "TCP");
        self
    }

    /// Carries an ICMP echo request (ICMPv4 type 8 over IPv4, ICMPv6 type
    /// 128 over IPv6).
    ///
    /// # Panics
    /// If the network layer is not IPv4 or IPv6.
    pub fn icmp_echo(mut self, id: u16, seq: u16) -> Self {
        self.require_ip("icmp_echo");
        self.l4 = L4::IcmpEcho {
            id,
            seq,
            reply: false,
        };
        self
    }

    /// Carries an ICMP echo reply (ICMPv4 type 0, ICMPv6 type 129).
    ///
    /// # Panics
    /// If the network layer is not IPv4 or IPv6.
    pub fn icmp_echo_reply(mut self, id: u16, seq: u16) -> Self {
        self.require_ip("icmp_echo_reply");
        self.l4 = L4::IcmpEcho {
            id,
            seq,
            reply: true,
        };
        self
    }

    /// Sets the payload bytes (after the innermost header).
    pub fn payload(mut self, bytes: &[u8]) -> Self {
        self.payload = Payload::Bytes(bytes.to_vec());
        self
    }

    /// Sets a payload of `n` bytes `0, 1, 2, …` (wrapping at 256).
    pub fn payload_len(mut self, n: usize) -> Self {
        self.payload = Payload::Pattern(n);
        self
    }

    /// Pads the frame with zeros to at least `min_len` bytes (60 for a
    /// minimum Ethernet frame without FCS, 64 with). Length fields do not
    /// count the padding.
    pub fn pad_to(mut self, min_len: usize) -> Self {
        self.pad_to = min_len;
        self
    }

    fn payload_bytes_len(&self) -> usize {
        match &self.payload {
            Payload::Bytes(b) => b.len(),
            Payload::Pattern(n) => *n,
        }
    }

    fn l3_header_len(&self) -> usize {
        match self.l3 {
            L3::Raw(_) => 0,
            L3::Ipv4 { .. } => 20 + usize::from(self.ip_opts_len),
            L3::Ipv6 { .. } => 40,
            L3::Arp { .. } => ArpPacket::LEN,
        }
    }

    fn l4_header_len(&self) -> usize {
        match self.l4 {
            L4::None => 0,
            L4::Udp { .. } => UdpPacket::HEADER_LEN,
            L4::Tcp { .. } => 20 + usize::from(self.tcp_opts_len),
            L4::IcmpEcho { .. } => 8,
        }
    }

    /// Offset of the network header: 14 + 4 × number of VLAN tags.
    pub fn l3_offset(&self) -> usize {
        EthernetFrame::HEADER_LEN + VlanTag::HEADER_LEN * usize::from(self.n_vlans)
    }

    /// Offset of the transport header (equals the payload offset when there
    /// is none).
    pub fn l4_offset(&self) -> usize {
        self.l3_offset() + self.l3_header_len()
    }

    /// Offset of the payload.
    pub fn payload_offset(&self) -> usize {
        self.l4_offset() + self.l4_header_len()
    }

    /// Length of the frame without padding.
    pub fn unpadded_len(&self) -> usize {
        self.payload_offset() + self.payload_bytes_len()
    }

    /// Length of the frame [`write_into`](Self::write_into) writes: the
    /// unpadded length or the [`pad_to`](Self::pad_to) length, whichever is
    /// larger.
    pub fn frame_len(&self) -> usize {
        self.unpadded_len().max(self.pad_to)
    }

    /// Writes the frame into a new vector.
    ///
    /// # Panics
    /// If a length field would overflow (IP packet larger than 65535 bytes).
    pub fn build(&self) -> Vec<u8> {
        let mut v = vec![0u8; self.frame_len()];
        self.write_into(&mut v);
        v
    }

    /// Writes the frame into the start of `buf` and returns its length. Does
    /// not allocate.
    ///
    /// # Panics
    /// If `buf` is shorter than [`frame_len`](Self::frame_len) or a length
    /// field would overflow; see [`try_write_into`](Self::try_write_into).
    pub fn write_into(&self, buf: &mut [u8]) -> usize {
        match self.try_write_into(buf) {
            Ok(n) => n,
            Err(e) => panic!(
                "PacketBuilder::write_into: {e} (frame {} bytes, buffer {} bytes)",
                self.frame_len(),
                buf.len()
            ),
        }
    }

    /// Writes the frame into the start of `buf` and returns its length, or
    /// [`WireError::Truncated`] if `buf` is shorter than
    /// [`frame_len`](Self::frame_len), or [`WireError::BadTotalLength`] if the
    /// IP total length / IPv6 payload length / UDP length would not fit in 16
    /// bits. Does not allocate.
    pub fn try_write_into(&self, buf: &mut [u8]) -> Result<usize, WireError> {
        let len = self.frame_len();
        if buf.len() < len {
            return Err(WireError::Truncated);
        }
        let l3_off = self.l3_offset();
        let l4_off = self.l4_offset();
        let pay_off = self.payload_offset();
        let end = self.unpadded_len();
        let l4_len = end - l4_off;
        let l3_len = end - l3_off;
        let too_long = match (self.l3, self.l4) {
            (L3::Ipv4 { .. }, _) => l3_len > 0xffff,
            (L3::Ipv6 { .. }, _) => l4_len > 0xffff,
            _ => false,
        };
        if too_long {
            return Err(WireError::BadTotalLength);
        }

        let frame = &mut buf[..len];
        frame.fill(0);

        // Ethernet and VLAN tags.
        let l3_type = match self.l3 {
            L3::Raw(t) => t,
            L3::Ipv4 { .. } => EtherType::IPV4,
            L3::Ipv6 { .. } => EtherType::IPV6,
            L3::Arp { .. } => EtherType::ARP,
        };
        let tpids: [EtherType; 2] = if self.n_vlans == 2 {
            [EtherType::QINQ, EtherType::VLAN]
        } else {
            [EtherType::VLAN, EtherType::VLAN]
        };
        let n = usize::from(self.n_vlans);
        {
            let mut eth = EthernetFrame::new_unchecked(&mut frame[..]);
            eth.set_dst_addr(self.eth_dst);
            eth.set_src_addr(self.eth_src);
            eth.set_ethertype(if n > 0 { tpids[0] } else { l3_type });
        }
        for i in 0..n {
            let at = EthernetFrame::HEADER_LEN + VlanTag::HEADER_LEN * i;
            let mut tag = VlanTag::new_unchecked(&mut frame[at..]);
            tag.set_vid(self.vlans[i]);
            tag.set_ethertype(if i + 1 < n { tpids[i + 1] } else { l3_type });
        }

        // Payload.
        match &self.payload {
            Payload::Bytes(b) => frame[pay_off..end].copy_from_slice(b),
            Payload::Pattern(_) => {
                for (i, x) in frame[pay_off..end].iter_mut().enumerate() {
                    *x = i as u8;
                }
            }
        }

        // Transport header and checksum (needs the network addresses).
        let seg = &mut frame[l4_off..end];
        match (self.l4, self.l3) {
            (L4::None, _) => {}
            (L4::Udp { sport, dport }, l3) => {
                let mut udp = UdpPacket::new_unchecked(&mut seg[..]);
                udp.set_src_port(sport);
                udp.set_dst_port(dport);
                udp.set_len(u16::try_from(l4_len).map_err(|_| WireError::BadTotalLength)?);
                match l3 {
                    L3::Ipv4 { src, dst } => udp.fill_checksum(src, dst),
                    L3::Ipv6 { src, dst } => udp.fill_checksum(src, dst),
                    _ => unreachable!("checked by udp()"),
                }
            }
            (
                L4::Tcp {
                    sport,
                    dport,
                    flags,
                },
                l3,
            ) => {
                let mut tcp = TcpPacket::new_unchecked(&mut seg[..]);
                tcp.set_src_port(sport);
                tcp.set_dst_port(dport);
                tcp.set_seq_number(self.tcp_seq);
                tcp.set_ack_number(self.tcp_ack);
                tcp.set_header_len(20 + usize::from(self.tcp_opts_len));
                tcp.set_flags(flags);
                tcp.set_window(self.tcp_window);
                tcp.options_mut()
                    .copy_from_slice(&self.tcp_opts[..usize::from(self.tcp_opts_len)]);
                match l3 {
                    L3::Ipv4 { src, dst } => tcp.fill_checksum(src, dst),
                    L3::Ipv6 { src, dst } => tcp.fill_checksum(src, dst),
                    _ => unreachable!("checked by tcp()"),
                }
            }
            (L4::IcmpEcho { id, seq, reply }, L3::Ipv6 { src, dst }) => {
                let mut icmp = Icmpv6Packet::new_unchecked(&mut seg[..]);
                icmp.set_msg_type(if reply {
                    Icmpv6Type::ECHO_REPLY
                } else {
                    Icmpv6Type::ECHO_REQUEST
                });
                icmp.set_echo_ident(id);
                icmp.set_echo_seq(seq);
                icmp.fill_checksum(src, dst);
            }
            (L4::IcmpEcho { id, seq, reply }, _) => {
                let mut icmp = Icmpv4Packet::new_unchecked(&mut seg[..]);
                icmp.set_msg_type(if reply {
                    Icmpv4Type::ECHO_REPLY
                } else {
                    Icmpv4Type::ECHO_REQUEST
                });
                icmp.set_echo_ident(id);
                icmp.set_echo_seq(seq);
                icmp.fill_checksum();
            }
        }

        // Network header.
        let net = &mut frame[l3_off..end];
        match self.l3 {
            L3::Raw(_) => {}
            L3::Ipv4 { src, dst } => {
                let mut ip = Ipv4Packet::new_unchecked(&mut net[..]);
                ip.set_version(4);
                ip.set_ihl(((20 + usize::from(self.ip_opts_len)) / 4) as u8);
                ip.set_dscp(self.traffic_class >> 2);
                ip.set_ecn(self.traffic_class & 0x03);
                ip.set_total_len(l3_len as u16);
                ip.set_ident(self.ident);
                ip.set_dont_frag(self.dont_frag);
                ip.set_more_frags(self.more_frags);
                ip.set_frag_offset(self.frag_offset);
                ip.set_ttl(self.hop);
                ip.set_protocol(match self.l4 {
                    L4::None => IpProtocol(253), // RFC 3692 experimentation
                    L4::Udp { .. } => IpProtocol::UDP,
                    L4::Tcp { .. } => IpProtocol::TCP,
                    L4::IcmpEcho { .. } => IpProtocol::ICMP,
                });
                ip.set_src_addr(src);
                ip.set_dst_addr(dst);
                ip.options_mut()
                    .copy_from_slice(&self.ip_opts[..usize::from(self.ip_opts_len)]);
                ip.fill_checksum();
            }
            L3::Ipv6 { src, dst } => {
                let mut ip = Ipv6Packet::new_unchecked(&mut net[..]);
                ip.set_version(6);
                ip.set_traffic_class(self.traffic_class);
                ip.set_flow_label(self.flow_label);
                ip.set_payload_len(l4_len as u16);
                ip.set_next_header(match self.l4 {
                    L4::None => IpProtocol::IPV6_NONXT,
                    L4::Udp { .. } => IpProtocol::UDP,
                    L4::Tcp { .. } => IpProtocol::TCP,
                    L4::IcmpEcho { .. } => IpProtocol::ICMPV6,
                });
                ip.set_hop_limit(self.hop);
                ip.set_src_addr(src);
                ip.set_dst_addr(dst);
            }
            L3::Arp {
                op,
                sha,
                spa,
                tha,
                tpa,
            } => {
                let mut arp = ArpPacket::new_unchecked(&mut net[..]);
                arp.init_eth_ipv4();
                arp.set_operation(op);
                arp.set_sender_hw_addr(sha);
                arp.set_sender_proto_addr(spa);
                arp.set_target_hw_addr(tha);
                arp.set_target_proto_addr(tpa);
            }
        }
        Ok(len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::parse_l2;

    const A: MacAddr = MacAddr([2, 0, 0, 0, 0, 0xa]);
    const B: MacAddr = MacAddr([2, 0, 0, 0, 0, 0xb]);
    const S4: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
    const D4: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);

    #[test]
    fn ipv4_udp_padded() {
        let f = PacketBuilder::ethernet(A, B)
            .ipv4(S4, D4)
            .udp(1, 2)
            .payload(b"x")
            .pad_to(60)
            .build();
        assert_eq!(f.len(), 60);
        let eth = EthernetFrame::new_checked(&f[..]).unwrap();
        assert_eq!(
            (eth.src_addr(), eth.dst_addr(), eth.ethertype()),
            (A, B, EtherType::IPV4)
        );
        let ip = Ipv4Packet::new_checked(eth.payload()).unwrap();
        assert_eq!(ip.total_len(), 29);
        assert_eq!((ip.ttl(), ip.protocol()), (64, IpProtocol::UDP));
        assert!(ip.verify_checksum());
        let udp = UdpPacket::new_checked(ip.payload()).unwrap();
        assert_eq!((udp.src_port(), udp.dst_port(), udp.len()), (1, 2, 9));
        assert_eq!(udp.payload(), b"x");
        assert!(udp.verify_checksum(S4, D4));
        assert!(f[43..].iter().all(|&b| b == 0));
    }

    #[test]
    fn ipv4_options_fragment_icmp() {
        let f = PacketBuilder::ethernet(A, B)
            .vlan(7)
            .ipv4(S4, D4)
            .ttl(1)
            .ident(0x4242)
            .dont_frag(false)
            .fragment(3, true)
            .dscp_ecn(10, 2)
            .ipv4_options(&[0x94, 0x04, 0, 0, 1])
            .icmp_echo(9, 10)
            .payload_len(300)
            .build();
        let l2 = parse_l2(&f).unwrap();
        assert_eq!((l2.n_vlans, l2.vlans[0], l2.l3_offset), (1, 7, 18));
        let ip = Ipv4Packet::new_checked(&f[18..]).unwrap();
        assert_eq!(ip.header_len(), 28);
        assert_eq!(ip.options(), &[0x94, 4, 0, 0, 1, 0, 0, 0]);
        assert_eq!(
            (ip.ident(), ip.frag_offset(), ip.more_frags()),
            (0x4242, 3, true)
        );
        assert!(ip.is_fragment());
        assert_eq!((ip.dscp(), ip.ecn(), ip.ttl()), (10, 2, 1));
        assert!(ip.verify_checksum());
        let icmp = Icmpv4Packet::new_checked(ip.payload()).unwrap();
        assert_eq!(icmp.msg_type(), Icmpv4Type::ECHO_REQUEST);
        assert_eq!((icmp.echo_ident(), icmp.echo_seq()), (9, 10));
        assert_eq!(icmp.payload().len(), 300);
        assert_eq!(icmp.payload()[257], 1);
        assert!(icmp.verify_checksum());
    }

    #[test]
    fn ipv6_icmp_reply_and_tcp() {
        let s: Ipv6Addr = "fe80::1".parse().unwrap();
        let d: Ipv6Addr = "fe80::2".parse().unwrap();
        let f = PacketBuilder::ethernet(A, B)
            .ipv6(s, d)
            .hop_limit(255)
            .dscp_ecn(46, 0)
            .flow_label(0xfffff)
            .icmp_echo_reply(1, 2)
            .build();
        let ip = Ipv6Packet::new_checked(&f[14..]).unwrap();
        assert_eq!(
            (ip.hop_limit(), ip.traffic_class(), ip.flow_label()),
            (255, 184, 0xfffff)
        );
        assert_eq!(ip.next_header(), IpProtocol::ICMPV6);
        let icmp = Icmpv6Packet::new_checked(ip.payload()).unwrap();
        assert_eq!(icmp.msg_type(), Icmpv6Type::ECHO_REPLY);
        assert!(icmp.verify_checksum(s, d));

        let f = PacketBuilder::ethernet(A, B)
            .ipv6(s, d)
            .tcp(1, 2, TcpFlags::FIN)
            .tcp_seq_ack(5, 6)
            .tcp_window(7)
            .tcp_options(&[2, 4, 5, 0xb4, 1, 3, 3])
            .payload(b"abc")
            .build();
        let ip = Ipv6Packet::new_checked(&f[14..]).unwrap();
        let tcp = TcpPacket::new_checked(ip.payload()).unwrap();
        assert_eq!(
            (tcp.seq_number(), tcp.ack_number(), tcp.window()),
            (5, 6, 7)
        );
        assert_eq!(tcp.options(), &[2, 4, 5, 0xb4, 1, 3, 3, 0]);
        assert_eq!(tcp.flags(), TcpFlags::FIN);
        assert_eq!(tcp.payload(), b"abc");
        assert!(tcp.verify_checksum(s, d));
    }

    #[test]
    fn arp_and_raw() {
        let f = PacketBuilder::ethernet(A, MacAddr::BROADCAST)
            .vlan(1)
            .vlan(2)
            .arp_request(A, S4, D4)
            .pad_to(64)
            .build();
        assert_eq!(f.len(), 64);
        let l2 = parse_l2(&f).unwrap();
        assert_eq!(
            (l2.ethertype, l2.vlans, l2.l3_offset),
            (EtherType::ARP, [1, 2], 22)
        );
        assert_eq!(f[12..14], [0x88, 0xa8]);
        assert_eq!(f[16..18], [0x81, 0x00]);
        let arp = ArpPacket::new_checked(&f[22..]).unwrap();
        assert_eq!(arp.operation(), ArpOperation::REQUEST);
        assert_eq!((arp.sender_hw_addr(), arp.sender_proto_addr()), (A, S4));
        assert_eq!(
            (arp.target_hw_addr(), arp.target_proto_addr()),
            (MacAddr::ZERO, D4)
        );

        let f = PacketBuilder::ethernet(B, A)
            .arp_reply(B, D4, A, S4)
            .build();
        let arp = ArpPacket::new_checked(&f[14..]).unwrap();
        assert_eq!(arp.operation(), ArpOperation::REPLY);
        assert_eq!((arp.target_hw_addr(), arp.target_proto_addr()), (A, S4));

        let f = PacketBuilder::ethernet(A, B)
            .ethertype_raw(0x88cc)
            .payload(&[1, 2, 3])
            .build();
        assert_eq!(f.len(), 17);
        assert_eq!(parse_l2(&f).unwrap().ethertype, EtherType(0x88cc));
        assert_eq!(f[14..], [1, 2, 3]);
        let f = PacketBuilder::ethernet(A, B).build();
        assert_eq!(parse_l2(&f).unwrap().ethertype, EtherType(0x88b5));
    }

    #[test]
    fn write_into_dirty_and_short_buffers() {
        let b = PacketBuilder::ethernet(A, B)
            .ipv4(S4, D4)
            .udp(1, 2)
            .payload_len(10)
            .pad_to(60);
        let mut buf = [0xffu8; 100];
        assert_eq!(b.write_into(&mut buf), 60);
        assert_eq!(&buf[..60], &b.build()[..]);
        assert_eq!(buf[60], 0xff);
        assert_eq!(b.try_write_into(&mut buf[..59]), Err(WireError::Truncated));
        assert_eq!(
            (b.l3_offset(), b.l4_offset(), b.payload_offset()),
            (14, 34, 42)
        );
        assert_eq!((b.unpadded_len(), b.frame_len()), (52, 60));
    }

    #[test]
    fn oversize_is_an_error() {
        let b = PacketBuilder::ethernet(A, B)
            .ipv4(S4, D4)
            .udp(1, 2)
            .payload_len(65_510);
        let mut buf = vec![0u8; b.frame_len()];
        assert_eq!(b.try_write_into(&mut buf), Err(WireError::BadTotalLength));
        let b = PacketBuilder::ethernet(A, B)
            .ipv4(S4, D4)
            .udp(1, 2)
            .payload_len(65_507);
        let mut buf = vec![0u8; b.frame_len()];
        assert!(b.try_write_into(&mut buf).is_ok());
    }

    #[test]
    #[should_panic(expected = "at most two VLAN tags")]
    fn third_vlan_panics() {
        let _ = PacketBuilder::ethernet(A, B).vlan(1).vlan(2).vlan(3);
    }

    #[test]
    #[should_panic(expected = "udp() needs ipv4() or ipv6() first")]
    fn udp_over_arp_panics() {
        let _ = PacketBuilder::ethernet(A, B)
            .arp_request(A, S4, D4)
            .udp(1, 2);
    }

    #[test]
    #[should_panic(expected = "options longer than 40 bytes")]
    fn long_options_panic() {
        let _ = PacketBuilder::ethernet(A, B)
            .ipv4(S4, D4)
            .ipv4_options(&[1; 41]);
    }
}
