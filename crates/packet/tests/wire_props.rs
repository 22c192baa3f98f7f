//! Property tests for the `wire` views, the checksum and the packet builder.
//!
//! (a) arbitrary and mutated bytes never make a checked constructor or a
//!     getter panic, and every accessor stays in bounds;
//! (b) packets built from random fields parse back to the same fields, with
//!     our views and with etherparse 0.21 as an independent reference, and
//!     their checksums verify with both;
//! (c) the incremental TTL update equals a full recompute;
//! (d) every truncation of a valid packet is an error, never a panic.

use etherparse::{LinkExtSlice, LinkSlice, NetSlice, SlicedPacket, TransportSlice};
use pktvec_packet::builder::PacketBuilder;
use pktvec_packet::checksum;
use pktvec_packet::wire::{
    parse_l2, ArpOperation, ArpPacket, EtherType, EthernetFrame, Icmpv4Packet, Icmpv4Type,
    Icmpv6Packet, Icmpv6Type, IpProtocol, Ipv4Packet, Ipv6Packet, MacAddr, TcpFlags, TcpPacket,
    UdpPacket, VlanTag, WireError,
};
use proptest::prelude::*;
use std::net::{Ipv4Addr, Ipv6Addr};

// ---------------------------------------------------------------------------
// (a) never panic, always in bounds
// ---------------------------------------------------------------------------

/// `inner` is a sub-slice of `outer`.
fn within(outer: &[u8], inner: &[u8]) -> bool {
    let o = outer.as_ptr() as usize;
    let i = inner.as_ptr() as usize;
    i >= o && i + inner.len() <= o + outer.len()
}

/// Runs every checked constructor on `b` and, when it succeeds, every getter
/// and the mutating helpers on a copy. Returns how many views accepted `b`.
fn exercise(b: &[u8]) -> usize {
    let mut accepted = 0;
    if let Ok(info) = parse_l2(b) {
        accepted += 1;
        assert!(info.n_vlans <= 2);
        assert_eq!(
            usize::from(info.l3_offset),
            14 + 4 * usize::from(info.n_vlans)
        );
        assert!(usize::from(info.l3_offset) <= b.len());
        assert!(info.vlans.iter().all(|&v| v <= 0x0fff));
        let _ = (info.outer_vid(), info.inner_vid());
    }
    if let Ok(e) = EthernetFrame::new_checked(b) {
        accepted += 1;
        let _ = (e.dst_addr(), e.src_addr(), e.ethertype(), e.header_len());
        assert!(within(b, e.payload()));
        assert_eq!(e.payload().len(), b.len() - 14);
    }
    if let Ok(v) = VlanTag::new_checked(b) {
        accepted += 1;
        let _ = (
            v.tci(),
            v.pcp(),
            v.dei(),
            v.vid(),
            v.ethertype(),
            v.header_len(),
        );
        assert!(within(b, v.payload()));
    }
    if let Ok(a) = ArpPacket::new_checked(b) {
        accepted += 1;
        assert_eq!(a.hardware_type(), 1);
        assert_eq!(a.protocol_type(), EtherType::IPV4);
        let _ = (
            a.hardware_len(),
            a.protocol_len(),
            a.operation(),
            a.sender_hw_addr(),
            a.sender_proto_addr(),
            a.target_hw_addr(),
            a.target_proto_addr(),
        );
    }
    if let Ok(ip) = Ipv4Packet::new_checked(b) {
        accepted += 1;
        let hl = ip.header_len();
        let tl = usize::from(ip.total_len());
        assert_eq!(ip.version(), 4);
        assert!((20..=60).contains(&hl) && hl <= tl && tl <= b.len());
        let _ = (ip.ihl(), ip.dscp(), ip.ecn(), ip.ident(), ip.flags());
        let _ = (
            ip.dont_frag(),
            ip.more_frags(),
            ip.frag_offset(),
            ip.is_fragment(),
        );
        let _ = (
            ip.ttl(),
            ip.protocol(),
            ip.checksum(),
            ip.src_addr(),
            ip.dst_addr(),
        );
        let _ = ip.verify_checksum();
        assert!(within(b, ip.options()) && ip.options().len() == hl - 20);
        assert!(within(b, ip.payload()) && ip.payload().len() == tl - hl);
        let mut copy = b.to_vec();
        let mut ip = Ipv4Packet::new_checked(&mut copy[..]).unwrap();
        let was_ok = ip.verify_checksum();
        let _ = ip.decrement_ttl_update_checksum();
        assert_eq!(ip.verify_checksum(), was_ok);
        ip.fill_checksum();
        assert!(ip.verify_checksum());
        let _ = (ip.payload_mut().len(), ip.options_mut().len());
    }
    if let Ok(ip) = Ipv6Packet::new_checked(b) {
        accepted += 1;
        assert_eq!(ip.version(), 6);
        let _ = (
            ip.traffic_class(),
            ip.flow_label(),
            ip.next_header(),
            ip.hop_limit(),
        );
        let _ = (ip.src_addr(), ip.dst_addr(), ip.header_len());
        assert!(ip.total_len() <= b.len());
        assert!(within(b, ip.payload()) && ip.payload().len() == usize::from(ip.payload_len()));
        let mut copy = b.to_vec();
        let mut ip = Ipv6Packet::new_checked(&mut copy[..]).unwrap();
        let _ = (ip.decrement_hop_limit(), ip.payload_mut().len());
    }
    let (s4, d4) = (Ipv4Addr::new(1, 2, 3, 4), Ipv4Addr::new(5, 6, 7, 8));
    let (s6, d6) = (Ipv6Addr::LOCALHOST, Ipv6Addr::UNSPECIFIED);
    if let Ok(u) = UdpPacket::new_checked(b) {
        accepted += 1;
        let l = usize::from(u.len());
        assert!((8..=b.len()).contains(&l));
        let _ = (
            u.src_port(),
            u.dst_port(),
            u.checksum(),
            u.is_empty(),
            u.header_len(),
        );
        let _ = (u.verify_checksum(s4, d4), u.verify_checksum(s6, d6));
        assert!(within(b, u.payload()) && u.payload().len() == l - 8);
        let mut copy = b.to_vec();
        let mut u = UdpPacket::new_checked(&mut copy[..]).unwrap();
        u.fill_checksum(s4, d4);
        assert!(u.verify_checksum(s4, d4));
        u.fill_checksum(s6, d6);
        assert!(u.verify_checksum(s6, d6));
    }
    if let Ok(t) = TcpPacket::new_checked(b) {
        accepted += 1;
        let hl = t.header_len();
        assert!((20..=60).contains(&hl) && hl <= b.len());
        let _ = (t.src_port(), t.dst_port(), t.seq_number(), t.ack_number());
        let _ = (t.data_offset(), t.flags(), t.ns(), t.window(), t.checksum());
        let _ = (
            t.urgent_ptr(),
            t.verify_checksum(s4, d4),
            t.verify_checksum(s6, d6),
        );
        assert!(within(b, t.options()) && t.options().len() == hl - 20);
        assert!(within(b, t.payload()) && t.payload().len() == b.len() - hl);
        let mut copy = b.to_vec();
        let mut t = TcpPacket::new_checked(&mut copy[..]).unwrap();
        t.fill_checksum(s6, d6);
        assert!(t.verify_checksum(s6, d6));
    }
    if let Ok(i) = Icmpv4Packet::new_checked(b) {
        accepted += 1;
        let _ = (
            i.msg_type(),
            i.msg_code(),
            i.checksum(),
            i.echo_ident(),
            i.echo_seq(),
        );
        let _ = (i.rest_of_header(), i.verify_checksum(), i.header_len());
        assert!(within(b, i.payload()) && i.payload().len() == b.len() - 8);
    }
    if let Ok(i) = Icmpv6Packet::new_checked(b) {
        accepted += 1;
        let _ = (
            i.msg_type(),
            i.msg_code(),
            i.checksum(),
            i.echo_ident(),
            i.echo_seq(),
        );
        let _ = (i.rest_of_header(), i.verify_checksum(s6, d6));
        assert!(within(b, i.payload()));
        let mut copy = b.to_vec();
        let mut i = Icmpv6Packet::new_checked(&mut copy[..]).unwrap();
        i.fill_checksum(s6, d6);
        assert!(i.verify_checksum(s6, d6));
    }
    accepted
}

/// Layered parse with our views, as an input node would do it.
fn parse_all(f: &[u8]) -> Result<(), WireError> {
    fn l4(proto: IpProtocol, b: &[u8]) -> Result<(), WireError> {
        match proto {
            IpProtocol::UDP => UdpPacket::new_checked(b).map(drop),
            IpProtocol::TCP => TcpPacket::new_checked(b).map(drop),
            IpProtocol::ICMP => Icmpv4Packet::new_checked(b).map(drop),
            IpProtocol::ICMPV6 => Icmpv6Packet::new_checked(b).map(drop),
            _ => Ok(()),
        }
    }
    let l2 = parse_l2(f)?;
    let l3 = &f[usize::from(l2.l3_offset)..];
    match l2.ethertype {
        EtherType::IPV4 => {
            let ip = Ipv4Packet::new_checked(l3)?;
            l4(ip.protocol(), ip.payload())
        }
        EtherType::IPV6 => {
            let ip = Ipv6Packet::new_checked(l3)?;
            l4(ip.next_header(), ip.payload())
        }
        EtherType::ARP => ArpPacket::new_checked(l3).map(drop),
        _ => Ok(()),
    }
}

// ---------------------------------------------------------------------------
// Random packet specifications
// ---------------------------------------------------------------------------

#[derive(Debug, Clone)]
enum L3Spec {
    V4 {
        src: Ipv4Addr,
        dst: Ipv4Addr,
        ttl: u8,
        ident: u16,
        df: bool,
        dscp: u8,
        ecn: u8,
        opts: Vec<u8>,
    },
    V6 {
        src: Ipv6Addr,
        dst: Ipv6Addr,
        hop: u8,
        dscp: u8,
        ecn: u8,
        flow: u32,
    },
    Arp {
        reply: bool,
        sha: MacAddr,
        spa: Ipv4Addr,
        tha: MacAddr,
        tpa: Ipv4Addr,
    },
    Raw(u16),
}

#[derive(Debug, Clone)]
enum L4Spec {
    None,
    Udp(u16, u16),
    Tcp {
        sport: u16,
        dport: u16,
        flags: u8,
        seq: u32,
        ack: u32,
        window: u16,
        opts: Vec<u8>,
    },
    Icmp {
        id: u16,
        seq: u16,
        reply: bool,
    },
}

#[derive(Debug, Clone)]
struct Spec {
    src_mac: MacAddr,
    dst_mac: MacAddr,
    vlans: Vec<u16>,
    l3: L3Spec,
    l4: L4Spec,
    payload: Vec<u8>,
    pad_to: usize,
}

/// EtherTypes that either parser would interpret.
const KNOWN_ETHERTYPES: [u16; 8] = [
    0x0800, 0x86dd, 0x0806, 0x8100, 0x88a8, 0x9100, 0x9200, 0x88e5,
];

fn mac() -> impl Strategy<Value = MacAddr> {
    any::<[u8; 6]>().prop_map(MacAddr)
}

fn v4() -> impl Strategy<Value = Ipv4Addr> {
    any::<[u8; 4]>().prop_map(Ipv4Addr::from)
}

fn v6() -> impl Strategy<Value = Ipv6Addr> {
    any::<[u8; 16]>().prop_map(Ipv6Addr::from)
}

fn l3_spec() -> impl Strategy<Value = L3Spec> {
    prop_oneof![
        4 => (v4(), v4(), any::<u8>(), any::<u16>(), any::<bool>(), 0u8..64, 0u8..4,
              prop::collection::vec(any::<u8>(), 0..=40))
            .prop_map(|(src, dst, ttl, ident, df, dscp, ecn, opts)| L3Spec::V4 {
                src, dst, ttl, ident, df, dscp, ecn, opts
            }),
        3 => (v6(), v6(), any::<u8>(), 0u8..64, 0u8..4, 0u32..(1 << 20))
            .prop_map(|(src, dst, hop, dscp, ecn, flow)| L3Spec::V6 { src, dst, hop, dscp, ecn, flow }),
        1 => (any::<bool>(), mac(), v4(), mac(), v4())
            .prop_map(|(reply, sha, spa, tha, tpa)| L3Spec::Arp { reply, sha, spa, tha, tpa }),
        1 => (0x0600u16..=0xffff)
            .prop_filter("known ethertype", |t| !KNOWN_ETHERTYPES.contains(t))
            .prop_map(L3Spec::Raw),
    ]
}

fn l4_spec() -> impl Strategy<Value = L4Spec> {
    prop_oneof![
        1 => Just(L4Spec::None),
        3 => (any::<u16>(), any::<u16>()).prop_map(|(s, d)| L4Spec::Udp(s, d)),
        3 => (any::<u16>(), any::<u16>(), any::<u8>(), any::<u32>(), any::<u32>(), any::<u16>(),
              prop::collection::vec(any::<u8>(), 0..=40))
            .prop_map(|(sport, dport, flags, seq, ack, window, opts)| L4Spec::Tcp {
                sport, dport, flags, seq, ack, window, opts
            }),
        2 => (any::<u16>(), any::<u16>(), any::<bool>())
            .prop_map(|(id, seq, reply)| L4Spec::Icmp { id, seq, reply }),
    ]
}

fn spec() -> impl Strategy<Value = Spec> {
    (
        mac(),
        mac(),
        prop::collection::vec(0u16..4096, 0..=2),
        l3_spec(),
        l4_spec(),
        prop::collection::vec(any::<u8>(), 0..200),
        prop_oneof![Just(0usize), Just(60), Just(64), 0usize..128],
    )
        .prop_map(
            |(src_mac, dst_mac, vlans, l3, mut l4, mut payload, pad_to)| {
                match l3 {
                    L3Spec::Arp { .. } => {
                        l4 = L4Spec::None;
                        payload.clear();
                    }
                    L3Spec::Raw(_) => l4 = L4Spec::None,
                    _ => {}
                }
                Spec {
                    src_mac,
                    dst_mac,
                    vlans,
                    l3,
                    l4,
                    payload,
                    pad_to,
                }
            },
        )
}

fn padded(opts: &[u8]) -> Vec<u8> {
    let mut v = opts.to_vec();
    v.resize(opts.len().div_ceil(4) * 4, 0);
    v
}

fn builder(s: &Spec) -> PacketBuilder {
    let mut b = PacketBuilder::ethernet(s.src_mac, s.dst_mac);
    for &v in &s.vlans {
        b = b.vlan(v);
    }
    b = match &s.l3 {
        L3Spec::V4 {
            src,
            dst,
            ttl,
            ident,
            df,
            dscp,
            ecn,
            opts,
        } => b
            .ipv4(*src, *dst)
            .ttl(*ttl)
            .ident(*ident)
            .dont_frag(*df)
            .dscp_ecn(*dscp, *ecn)
            .ipv4_options(opts),
        L3Spec::V6 {
            src,
            dst,
            hop,
            dscp,
            ecn,
            flow,
        } => b
            .ipv6(*src, *dst)
            .hop_limit(*hop)
            .dscp_ecn(*dscp, *ecn)
            .flow_label(*flow),
        L3Spec::Arp {
            reply: false,
            sha,
            spa,
            tpa,
            ..
        } => b.arp_request(*sha, *spa, *tpa),
        L3Spec::Arp {
            reply: true,
            sha,
            spa,
            tha,
            tpa,
        } => b.arp_reply(*sha, *spa, *tha, *tpa),
        L3Spec::Raw(t) => b.ethertype_raw(*t),
    };
    b = match &s.l4 {
        L4Spec::None => b,
        L4Spec::Udp(sp, dp) => b.udp(*sp, *dp),
        L4Spec::Tcp {
            sport,
            dport,
            flags,
            seq,
            ack,
            window,
            opts,
        } => b
            .tcp(*sport, *dport, TcpFlags(*flags))
            .tcp_seq_ack(*seq, *ack)
            .tcp_window(*window)
            .tcp_options(opts),
        L4Spec::Icmp {
            id,
            seq,
            reply: false,
        } => b.icmp_echo(*id, *seq),
        L4Spec::Icmp {
            id,
            seq,
            reply: true,
        } => b.icmp_echo_reply(*id, *seq),
    };
    b.payload(&s.payload).pad_to(s.pad_to)
}

/// Checks the transport layer with our views.
fn check_l4_ours<A>(
    s: &Spec,
    proto: IpProtocol,
    seg: &[u8],
    src: A,
    dst: A,
    v6: Option<(Ipv6Addr, Ipv6Addr)>,
) where
    A: checksum::PseudoHeaderAddr,
{
    match &s.l4 {
        L4Spec::None => assert_eq!(seg, &s.payload[..]),
        L4Spec::Udp(sp, dp) => {
            assert_eq!(proto, IpProtocol::UDP);
            let u = UdpPacket::new_checked(seg).unwrap();
            assert_eq!((u.src_port(), u.dst_port()), (*sp, *dp));
            assert_eq!(usize::from(u.len()), seg.len());
            assert_eq!(u.payload(), &s.payload[..]);
            assert_ne!(u.checksum(), 0);
            assert!(u.verify_checksum(src, dst));
        }
        L4Spec::Tcp {
            sport,
            dport,
            flags,
            seq,
            ack,
            window,
            opts,
        } => {
            assert_eq!(proto, IpProtocol::TCP);
            let t = TcpPacket::new_checked(seg).unwrap();
            assert_eq!((t.src_port(), t.dst_port()), (*sport, *dport));
            assert_eq!((t.seq_number(), t.ack_number()), (*seq, *ack));
            assert_eq!((t.flags(), t.window()), (TcpFlags(*flags), *window));
            assert_eq!(t.options(), &padded(opts)[..]);
            assert_eq!(t.payload(), &s.payload[..]);
            assert!(t.verify_checksum(src, dst));
        }
        L4Spec::Icmp { id, seq, reply } => {
            if let Some((s6, d6)) = v6 {
                assert_eq!(proto, IpProtocol::ICMPV6);
                let i = Icmpv6Packet::new_checked(seg).unwrap();
                let want = if *reply {
                    Icmpv6Type::ECHO_REPLY
                } else {
                    Icmpv6Type::ECHO_REQUEST
                };
                assert_eq!(i.msg_type(), want);
                assert_eq!((i.echo_ident(), i.echo_seq()), (*id, *seq));
                assert_eq!(i.payload(), &s.payload[..]);
                assert!(i.verify_checksum(s6, d6));
            } else {
                assert_eq!(proto, IpProtocol::ICMP);
                let i = Icmpv4Packet::new_checked(seg).unwrap();
                let want = if *reply {
                    Icmpv4Type::ECHO_REPLY
                } else {
                    Icmpv4Type::ECHO_REQUEST
                };
                assert_eq!(i.msg_type(), want);
                assert_eq!((i.echo_ident(), i.echo_seq()), (*id, *seq));
                assert_eq!(i.payload(), &s.payload[..]);
                assert!(i.verify_checksum());
            }
        }
    }
}

/// Parses `f` with our views and compares with `s`.
fn check_ours(s: &Spec, b: &PacketBuilder, f: &[u8]) {
    let l2 = parse_l2(f).unwrap();
    assert_eq!(usize::from(l2.n_vlans), s.vlans.len());
    assert_eq!(&l2.vlans[..s.vlans.len()], &s.vlans[..]);
    assert_eq!(usize::from(l2.l3_offset), b.l3_offset());
    let eth = EthernetFrame::new_checked(f).unwrap();
    assert_eq!((eth.src_addr(), eth.dst_addr()), (s.src_mac, s.dst_mac));
    let l3 = &f[b.l3_offset()..];
    match &s.l3 {
        L3Spec::V4 {
            src,
            dst,
            ttl,
            ident,
            df,
            dscp,
            ecn,
            opts,
        } => {
            assert_eq!(l2.ethertype, EtherType::IPV4);
            let ip = Ipv4Packet::new_checked(l3).unwrap();
            assert_eq!((ip.src_addr(), ip.dst_addr()), (*src, *dst));
            assert_eq!((ip.ttl(), ip.ident(), ip.dont_frag()), (*ttl, *ident, *df));
            assert_eq!((ip.dscp(), ip.ecn()), (*dscp, *ecn));
            assert!(!ip.is_fragment());
            assert_eq!(ip.options(), &padded(opts)[..]);
            assert_eq!(
                usize::from(ip.total_len()),
                b.unpadded_len() - b.l3_offset()
            );
            assert!(ip.verify_checksum());
            check_l4_ours(s, ip.protocol(), ip.payload(), *src, *dst, None);
        }
        L3Spec::V6 {
            src,
            dst,
            hop,
            dscp,
            ecn,
            flow,
        } => {
            assert_eq!(l2.ethertype, EtherType::IPV6);
            let ip = Ipv6Packet::new_checked(l3).unwrap();
            assert_eq!((ip.src_addr(), ip.dst_addr()), (*src, *dst));
            assert_eq!((ip.hop_limit(), ip.flow_label()), (*hop, *flow));
            assert_eq!(ip.traffic_class(), (dscp << 2) | ecn);
            assert_eq!(ip.total_len(), b.unpadded_len() - b.l3_offset());
            check_l4_ours(
                s,
                ip.next_header(),
                ip.payload(),
                *src,
                *dst,
                Some((*src, *dst)),
            );
        }
        L3Spec::Arp {
            reply,
            sha,
            spa,
            tha,
            tpa,
        } => {
            assert_eq!(l2.ethertype, EtherType::ARP);
            let a = ArpPacket::new_checked(l3).unwrap();
            let op = if *reply {
                ArpOperation::REPLY
            } else {
                ArpOperation::REQUEST
            };
            assert_eq!(a.operation(), op);
            assert_eq!((a.sender_hw_addr(), a.sender_proto_addr()), (*sha, *spa));
            let tha = if *reply { *tha } else { MacAddr::ZERO };
            assert_eq!((a.target_hw_addr(), a.target_proto_addr()), (tha, *tpa));
        }
        L3Spec::Raw(t) => {
            assert_eq!(l2.ethertype, EtherType(*t));
            assert_eq!(&l3[..s.payload.len()], &s.payload[..]);
        }
    }
}

/// Parses `f` with etherparse and compares with `s`.
fn check_etherparse(s: &Spec, f: &[u8]) {
    let p = SlicedPacket::from_ethernet(f).unwrap_or_else(|e| panic!("etherparse: {e:?}"));
    match &p.link {
        Some(LinkSlice::Ethernet2(e)) => {
            assert_eq!(e.source(), s.src_mac.0);
            assert_eq!(e.destination(), s.dst_mac.0);
        }
        other => panic!("link {other:?}"),
    }
    let vids: Vec<u16> = p
        .link_exts
        .iter()
        .map(|x| match x {
            LinkExtSlice::Vlan(v) => v.vlan_identifier().value(),
            other => panic!("link ext {other:?}"),
        })
        .collect();
    assert_eq!(vids, s.vlans);

    let (v4, v6) = match (&s.l3, &p.net) {
        (
            L3Spec::V4 {
                src,
                dst,
                ttl,
                ident,
                opts,
                ..
            },
            Some(NetSlice::Ipv4(ip)),
        ) => {
            let h = ip.header();
            assert_eq!((h.source_addr(), h.destination_addr()), (*src, *dst));
            assert_eq!((h.ttl(), h.identification()), (*ttl, *ident));
            assert_eq!(h.options(), &padded(opts)[..]);
            assert_eq!(h.to_header().calc_header_checksum(), h.header_checksum());
            (Some((*src, *dst)), None)
        }
        (
            L3Spec::V6 {
                src,
                dst,
                hop,
                flow,
                ..
            },
            Some(NetSlice::Ipv6(ip)),
        ) => {
            let h = ip.header();
            assert_eq!((h.source_addr(), h.destination_addr()), (*src, *dst));
            assert_eq!(h.hop_limit(), *hop);
            assert_eq!(h.flow_label().value(), *flow);
            (None, Some((*src, *dst)))
        }
        (
            L3Spec::Arp {
                reply,
                sha,
                spa,
                tpa,
                ..
            },
            Some(NetSlice::Arp(a)),
        ) => {
            let a = a.to_packet().try_eth_ipv4().unwrap();
            assert_eq!(a.operation.0, if *reply { 2 } else { 1 });
            assert_eq!((a.sender_mac, a.sender_ipv4), (sha.0, spa.octets()));
            assert_eq!(a.target_ipv4, tpa.octets());
            return;
        }
        (L3Spec::Raw(_), None) => return,
        (l3, net) => panic!("l3 {l3:?} vs etherparse {net:?}"),
    };

    match (&s.l4, &p.transport) {
        (L4Spec::None, None) => {}
        (L4Spec::Udp(sp, dp), Some(TransportSlice::Udp(u))) => {
            assert_eq!((u.source_port(), u.destination_port()), (*sp, *dp));
            assert_eq!(u.payload(), &s.payload[..]);
            let c = match (v4, v6) {
                (Some((a, b)), _) => u
                    .to_header()
                    .calc_checksum_ipv4_raw(a.octets(), b.octets(), u.payload())
                    .unwrap(),
                (_, Some((a, b))) => u
                    .to_header()
                    .calc_checksum_ipv6_raw(a.octets(), b.octets(), u.payload())
                    .unwrap(),
                _ => unreachable!(),
            };
            assert_eq!(c, u.checksum());
        }
        (
            L4Spec::Tcp {
                sport,
                dport,
                flags,
                seq,
                ack,
                window,
                ..
            },
            Some(TransportSlice::Tcp(t)),
        ) => {
            assert_eq!((t.source_port(), t.destination_port()), (*sport, *dport));
            assert_eq!(
                (t.sequence_number(), t.acknowledgment_number()),
                (*seq, *ack)
            );
            assert_eq!(t.window_size(), *window);
            let f = TcpFlags(*flags);
            assert_eq!(t.fin(), f.contains(TcpFlags::FIN));
            assert_eq!(t.syn(), f.contains(TcpFlags::SYN));
            assert_eq!(t.rst(), f.contains(TcpFlags::RST));
            assert_eq!(t.psh(), f.contains(TcpFlags::PSH));
            assert_eq!(t.ack(), f.contains(TcpFlags::ACK));
            assert_eq!(t.urg(), f.contains(TcpFlags::URG));
            assert_eq!(t.ece(), f.contains(TcpFlags::ECE));
            assert_eq!(t.cwr(), f.contains(TcpFlags::CWR));
            assert_eq!(t.payload(), &s.payload[..]);
            let c = match (v4, v6) {
                (Some((a, b)), _) => t.calc_checksum_ipv4(a.octets(), b.octets()).unwrap(),
                (_, Some((a, b))) => t.calc_checksum_ipv6(a.octets(), b.octets()).unwrap(),
                _ => unreachable!(),
            };
            assert_eq!(c, t.checksum());
        }
        (L4Spec::Icmp { id, seq, reply }, Some(TransportSlice::Icmpv4(i))) => {
            assert!(v4.is_some());
            assert_eq!(i.type_u8(), if *reply { 0 } else { 8 });
            let rest = i.bytes5to8();
            assert_eq!(u16::from_be_bytes([rest[0], rest[1]]), *id);
            assert_eq!(u16::from_be_bytes([rest[2], rest[3]]), *seq);
            assert_eq!(i.payload(), &s.payload[..]);
            assert_eq!(
                i.header().icmp_type.calc_checksum(i.payload()),
                i.checksum()
            );
        }
        (L4Spec::Icmp { id, seq, reply }, Some(TransportSlice::Icmpv6(i))) => {
            let (a, b) = v6.unwrap();
            assert_eq!(i.type_u8(), if *reply { 129 } else { 128 });
            let rest = i.bytes5to8();
            assert_eq!(u16::from_be_bytes([rest[0], rest[1]]), *id);
            assert_eq!(u16::from_be_bytes([rest[2], rest[3]]), *seq);
            assert_eq!(i.payload(), &s.payload[..]);
            assert!(i.is_checksum_valid(a.octets(), b.octets()));
        }
        (l4, t) => panic!("l4 {l4:?} vs etherparse {t:?}"),
    }
}

fn full_recompute_after_decrement(h: &[u8]) -> Vec<u8> {
    let mut c = h.to_vec();
    let mut ip = Ipv4Packet::new_unchecked(&mut c[..]);
    let t = ip.ttl();
    ip.set_ttl(t - 1);
    ip.fill_checksum();
    c
}

proptest! {
    // 512 cases by default; PROPTEST_CASES=100000 for a longer soak.
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(512)
    ))]

    /// (a) Arbitrary bytes: no panic, accessors in bounds.
    #[test]
    fn arbitrary_bytes_never_panic(b in prop::collection::vec(any::<u8>(), 0..160)) {
        exercise(&b);
        let _ = parse_all(&b);
    }

    /// (a) Arbitrary bytes behind a plausible first byte (so the IP version
    /// and IHL checks pass more often and the deeper checks are reached).
    #[test]
    fn plausible_headers_never_panic(
        first in prop_oneof![0x45u8..=0x4f, 0x60u8..=0x6f, any::<u8>()],
        len_field in any::<u16>(),
        rest in prop::collection::vec(any::<u8>(), 0..120),
    ) {
        let mut b = vec![first, 0];
        b.extend_from_slice(&len_field.to_be_bytes());
        b.extend_from_slice(&rest);
        exercise(&b);
        // Same bytes with the length field where IPv6 and UDP keep it.
        if b.len() >= 6 {
            b[4..6].copy_from_slice(&len_field.to_be_bytes());
        }
        exercise(&b);
    }

    /// (a) Valid packets with random byte mutations, at every layer offset.
    #[test]
    fn mutated_packets_never_panic(
        s in spec(),
        muts in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
    ) {
        let b = builder(&s);
        let mut f = b.build();
        for (i, v) in muts {
            let at = i.index(f.len());
            f[at] = v;
        }
        let _ = parse_all(&f);
        for off in [0, 12, 14, 18, 22, b.l3_offset(), b.l4_offset(), b.payload_offset()] {
            if off <= f.len() {
                exercise(&f[off..]);
            }
        }
    }

    /// (b) Built packets parse back to their fields, with our views and with
    /// etherparse, and all checksums verify with both.
    #[test]
    fn built_packets_roundtrip(s in spec()) {
        let b = builder(&s);
        let f = b.build();
        prop_assert_eq!(f.len(), b.frame_len());
        prop_assert!(f.len() >= s.pad_to);
        prop_assert!(f[b.unpadded_len()..].iter().all(|&x| x == 0));
        check_ours(&s, &b, &f);
        check_etherparse(&s, &f);
        prop_assert_eq!(parse_all(&f), Ok(()));
        // write_into a dirty, larger buffer gives the same bytes.
        let mut buf = vec![0xa5u8; f.len() + 7];
        prop_assert_eq!(b.write_into(&mut buf), f.len());
        prop_assert_eq!(&buf[..f.len()], &f[..]);
    }

    /// (c) Incremental TTL decrement equals a full recompute.
    #[test]
    fn ttl_decrement_equals_recompute(
        ihl in 5u8..=15,
        bytes in prop::collection::vec(any::<u8>(), 60),
        ttl in any::<u8>(),
    ) {
        let hl = usize::from(ihl) * 4;
        let mut h = bytes[..hl].to_vec();
        h[0] = 0x40 | ihl;
        h[2..4].copy_from_slice(&(hl as u16).to_be_bytes());
        h[8] = ttl;
        let mut ip = Ipv4Packet::new_checked(&mut h[..]).unwrap();
        ip.fill_checksum();
        let before = h.clone();
        let mut ip = Ipv4Packet::new_checked(&mut h[..]).unwrap();
        match ip.decrement_ttl_update_checksum() {
            None => {
                prop_assert_eq!(ttl, 0);
                prop_assert_eq!(&h, &before);
            }
            Some(t) => {
                prop_assert_eq!(t, ttl - 1);
                prop_assert!(ip.verify_checksum());
                prop_assert_eq!(&h, &full_recompute_after_decrement(&before));
            }
        }
    }

    /// (c) The same for the generic RFC 1624 update of any word.
    #[test]
    fn update_u16_equals_recompute(
        bytes in prop::collection::vec(any::<u8>(), 4..80),
        word in any::<prop::sample::Index>(),
        new in any::<u16>(),
    ) {
        let mut d = bytes.clone();
        d[0] |= 1; // not all-zero
        let n_words = d.len() / 2;
        let w = 1 + word.index(n_words - 1); // keep word 0 non-zero
        let old = u16::from_be_bytes([d[2 * w], d[2 * w + 1]]);
        let c = checksum::checksum(&d);
        d[2 * w..2 * w + 2].copy_from_slice(&new.to_be_bytes());
        prop_assert_eq!(checksum::update_u16(c, old, new), checksum::checksum(&d));
    }

    /// (d) Any truncation of a valid packet (below its unpadded length) is an
    /// error for the layered parse, never a panic.
    #[test]
    fn truncation_is_an_error(s in spec(), cut in any::<prop::sample::Index>()) {
        let b = builder(&s);
        let f = b.build();
        // A raw EtherType payload has no length field: only cuts inside the
        // Ethernet/VLAN header are detectable there.
        let limit = match s.l3 {
            L3Spec::Raw(_) => b.l3_offset(),
            _ => b.unpadded_len(),
        };
        let n = cut.index(limit);
        let r = parse_all(&f[..n]);
        prop_assert!(r.is_err(), "len {} of {} parsed: {:?}", n, limit, r);
        exercise(&f[..n]);
    }
}

#[test]
fn every_truncation_of_fixed_packets_is_an_error() {
    let a = MacAddr([2, 0, 0, 0, 0, 1]);
    let c = MacAddr([2, 0, 0, 0, 0, 2]);
    let (s4, d4) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2));
    let (s6, d6) = (
        "2001:db8::1".parse().unwrap(),
        "2001:db8::2".parse().unwrap(),
    );
    let packets = [
        PacketBuilder::ethernet(a, c)
            .vlan(1)
            .vlan(2)
            .ipv4(s4, d4)
            .ipv4_options(&[1; 8])
            .tcp(1, 2, TcpFlags::SYN)
            .tcp_options(&[1; 12])
            .payload_len(33),
        PacketBuilder::ethernet(a, c)
            .ipv6(s6, d6)
            .udp(1, 2)
            .payload_len(5)
            .pad_to(64),
        PacketBuilder::ethernet(a, c)
            .vlan(9)
            .ipv6(s6, d6)
            .icmp_echo(1, 2),
        PacketBuilder::ethernet(a, c)
            .ipv4(s4, d4)
            .icmp_echo(3, 4)
            .payload_len(1),
        PacketBuilder::ethernet(a, MacAddr::BROADCAST)
            .arp_request(a, s4, d4)
            .pad_to(60),
    ];
    for b in &packets {
        let f = b.build();
        assert_eq!(parse_all(&f), Ok(()));
        for n in 0..b.unpadded_len() {
            assert!(parse_all(&f[..n]).is_err(), "{b:?} len {n}");
            exercise(&f[..n]);
        }
    }
}

#[test]
fn exercise_accepts_valid_layers() {
    let f = PacketBuilder::ethernet(MacAddr([2, 0, 0, 0, 0, 1]), MacAddr::BROADCAST)
        .ipv4(Ipv4Addr::new(1, 1, 1, 1), Ipv4Addr::new(2, 2, 2, 2))
        .udp(7, 7)
        .payload_len(20)
        .build();
    // Ethernet, VLAN-tag view (any 4 bytes), ICMP views (any 8 bytes), at least.
    assert!(exercise(&f) >= 3);
    assert!(exercise(&f[14..]) >= 2);
}
