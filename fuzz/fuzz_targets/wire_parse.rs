//! Fuzz target: no input makes a `wire` constructor, getter or checksum
//! helper panic, and every slice a view returns lies inside the input.

#![no_main]

use libfuzzer_sys::fuzz_target;
use pktvec_packet::wire::{
    parse_l2, ArpPacket, EtherType, EthernetFrame, Icmpv4Packet, Icmpv6Packet, IpProtocol,
    Ipv4Packet, Ipv6Packet, TcpPacket, UdpPacket, VlanTag,
};
use std::hint::black_box;
use std::net::{Ipv4Addr, Ipv6Addr};

/// `inner` is a sub-slice of `outer`.
fn within(outer: &[u8], inner: &[u8]) -> bool {
    let o = outer.as_ptr() as usize;
    let i = inner.as_ptr() as usize;
    i >= o && i + inner.len() <= o + outer.len()
}

/// Every constructor and getter on `b`.
fn all_views(b: &[u8]) {
    let (s4, d4) = (Ipv4Addr::new(192, 0, 2, 1), Ipv4Addr::new(192, 0, 2, 2));
    let (s6, d6) = (Ipv6Addr::LOCALHOST, Ipv6Addr::UNSPECIFIED);

    if let Ok(e) = EthernetFrame::new_checked(b) {
        black_box((e.dst_addr(), e.src_addr(), e.ethertype()));
        assert!(within(b, e.payload()));
    }
    if let Ok(v) = VlanTag::new_checked(b) {
        black_box((v.tci(), v.pcp(), v.dei(), v.vid(), v.ethertype()));
        assert!(within(b, v.payload()));
    }
    if let Ok(a) = ArpPacket::new_checked(b) {
        black_box((
            a.hardware_type(),
            a.protocol_type(),
            a.hardware_len(),
            a.protocol_len(),
        ));
        black_box((a.operation(), a.sender_hw_addr(), a.sender_proto_addr()));
        black_box((a.target_hw_addr(), a.target_proto_addr()));
    }
    if let Ok(ip) = Ipv4Packet::new_checked(b) {
        black_box((
            ip.version(),
            ip.ihl(),
            ip.dscp(),
            ip.ecn(),
            ip.total_len(),
            ip.ident(),
        ));
        black_box((
            ip.flags(),
            ip.dont_frag(),
            ip.more_frags(),
            ip.frag_offset(),
        ));
        black_box((ip.is_fragment(), ip.ttl(), ip.protocol(), ip.checksum()));
        black_box((ip.src_addr(), ip.dst_addr(), ip.verify_checksum()));
        assert!(within(b, ip.options()) && within(b, ip.payload()));
        assert_eq!(
            ip.payload().len(),
            usize::from(ip.total_len()) - ip.header_len()
        );
        let mut copy = b.to_vec();
        let mut ip = Ipv4Packet::new_unchecked(&mut copy[..]);
        let ok = ip.verify_checksum();
        black_box(ip.decrement_ttl_update_checksum());
        assert_eq!(ip.verify_checksum(), ok);
    }
    if let Ok(ip) = Ipv6Packet::new_checked(b) {
        black_box((
            ip.version(),
            ip.traffic_class(),
            ip.flow_label(),
            ip.payload_len(),
        ));
        black_box((
            ip.next_header(),
            ip.hop_limit(),
            ip.src_addr(),
            ip.dst_addr(),
        ));
        assert!(within(b, ip.payload()));
        assert_eq!(ip.payload().len(), usize::from(ip.payload_len()));
    }
    if let Ok(u) = UdpPacket::new_checked(b) {
        black_box((u.src_port(), u.dst_port(), u.len(), u.checksum()));
        black_box((u.verify_checksum(s4, d4), u.verify_checksum(s6, d6)));
        assert!(within(b, u.payload()));
    }
    if let Ok(t) = TcpPacket::new_checked(b) {
        black_box((t.src_port(), t.dst_port(), t.seq_number(), t.ack_number()));
        black_box((
            t.data_offset(),
            t.flags(),
            t.ns(),
            t.window(),
            t.checksum(),
            t.urgent_ptr(),
        ));
        black_box((t.verify_checksum(s4, d4), t.verify_checksum(s6, d6)));
        assert!(within(b, t.options()) && within(b, t.payload()));
    }
    if let Ok(i) = Icmpv4Packet::new_checked(b) {
        black_box((
            i.msg_type(),
            i.msg_code(),
            i.checksum(),
            i.echo_ident(),
            i.echo_seq(),
        ));
        black_box((i.rest_of_header(), i.verify_checksum()));
        assert!(within(b, i.payload()));
    }
    if let Ok(i) = Icmpv6Packet::new_checked(b) {
        black_box((
            i.msg_type(),
            i.msg_code(),
            i.checksum(),
            i.echo_ident(),
            i.echo_seq(),
        ));
        black_box(i.verify_checksum(s6, d6));
        assert!(within(b, i.payload()));
    }
}

fuzz_target!(|data: &[u8]| {
    all_views(data);

    // The layered parse an input node performs, with every view on the way.
    let Ok(l2) = parse_l2(data) else { return };
    assert!(l2.n_vlans <= 2);
    let l3 = &data[usize::from(l2.l3_offset)..];
    all_views(l3);
    let (proto, l4) = match l2.ethertype {
        EtherType::IPV4 => match Ipv4Packet::new_checked(l3) {
            Ok(ip) => (ip.protocol(), ip.into_payload()),
            Err(_) => return,
        },
        EtherType::IPV6 => match Ipv6Packet::new_checked(l3) {
            Ok(ip) => (ip.next_header(), ip.into_payload()),
            Err(_) => return,
        },
        _ => return,
    };
    black_box(proto == IpProtocol::UDP);
    all_views(l4);
});
