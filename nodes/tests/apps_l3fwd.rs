//! l3fwd (`pktvec_nodes::apps::l3fwd`) end to end through pcap files: generated IPv4/IPv6
//! traffic with every malformed kind, ARP, NDN, unknown EtherTypes, VLAN/QinQ, plus
//! hand-made edge cases, written to one pcap per receive interface, replayed by
//! `PcapSource`s, the transmitted packets written to one pcap per transmit interface and read
//! back. Every output frame is compared byte for byte with a reference computed here from
//! the input bytes (own header parser, linear-scan longest-prefix match, TTL/hop limit − 1,
//! IPv4 checksum from scratch, adjacency MACs, payload unchanged), re-checked with
//! etherparse, and every input is accounted for: forwarded or dropped with the expected
//! (node, reason); conservation holds.

mod apps_common;

use apps_common::*;

use pktvec_io::generator::Generator;
use pktvec_io::profile::TrafficProfile;
use pktvec_lookup::routes::{generate_ipv4, generate_ipv6, Route4, Route6};
use pktvec_nodes::apps::l3fwd::{L3fwd, L3fwdConfig};
use pktvec_nodes::output::InterfaceOutput;
use pktvec_packet::builder::PacketBuilder;
use pktvec_packet::wire::MacAddr;
use pktvec_packet::PoolConfig;
use std::collections::BTreeMap;
use std::net::{Ipv4Addr, Ipv6Addr};

const PORTS: u16 = 4;
const RX_PORTS: usize = 2;
const OUR_IP: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 1);

enum Expect {
    Out(u16, Vec<u8>),
    Drop(&'static str, &'static str),
}

/// Independent longest-prefix match: linear scan, next hop modulo the ports.
fn lpm4(routes: &[Route4], a: u32) -> Option<u16> {
    routes
        .iter()
        .filter(|r| {
            let m = if r.len == 0 {
                0
            } else {
                u32::MAX << (32 - r.len)
            };
            a & m == u32::from(r.addr) & m
        })
        .max_by_key(|r| r.len)
        .map(|r| (r.next_hop % PORTS as u32) as u16)
}

fn lpm6(routes: &[Route6], a: u128) -> Option<u16> {
    routes
        .iter()
        .filter(|r| {
            let m = if r.len == 0 {
                0
            } else {
                u128::MAX << (128 - r.len)
            };
            a & m == u128::from(r.addr) & m
        })
        .max_by_key(|r| r.len)
        .map(|r| (r.next_hop % PORTS as u32) as u16)
}

/// The adjacency MACs as documented: 02:aa:00:00:00:i → 02:bb:00:00:00:i.
fn eth_header(port: u16, ethertype: [u8; 2]) -> Vec<u8> {
    let mut h = vec![2, 0xbb, 0, 0, 0, port as u8, 2, 0xaa, 0, 0, 0, port as u8];
    h.extend_from_slice(&ethertype);
    h
}

/// What the router must do with `frame` received on `rx`, from the bytes alone.
fn reference(frame: &[u8], rx: u16, r4: &[Route4], r6: &[Route6]) -> Expect {
    use Expect::Drop;
    if frame.len() < 14 {
        return Drop("ethernet-input", "truncated frame");
    }
    let mut et = u16::from_be_bytes([frame[12], frame[13]]);
    let mut l3 = 14;
    let mut tags = 0;
    while matches!(et, 0x8100 | 0x88a8 | 0x9100) {
        if tags == 2 {
            return Drop("ethernet-input", "more than two vlan tags");
        }
        if frame.len() < l3 + 4 {
            return Drop("ethernet-input", "truncated frame");
        }
        et = u16::from_be_bytes([frame[l3 + 2], frame[l3 + 3]]);
        l3 += 4;
        tags += 1;
    }
    let ip = &frame[l3..];
    match et {
        0x0800 => {
            if ip.len() < 20 {
                return Drop("ip4-input", "truncated ipv4 header");
            }
            if ip[0] >> 4 != 4 {
                return Drop("ip4-input", "bad ip version");
            }
            let ihl = (ip[0] & 0xf) as usize * 4;
            if ihl < 20 {
                return Drop("ip4-input", "bad ipv4 header length");
            }
            if ihl > ip.len() {
                return Drop("ip4-input", "truncated ipv4 header");
            }
            let total = u16::from_be_bytes([ip[2], ip[3]]) as usize;
            if total < ihl || total > ip.len() {
                return Drop("ip4-input", "ipv4 length mismatch");
            }
            if inet_checksum(&ip[..ihl]) != 0 {
                return Drop("ip4-input", "bad ipv4 header checksum");
            }
            if ip[8] <= 1 {
                return Drop("ip4-input", "ttl expired");
            }
            let Some(port) = lpm4(r4, u32::from_be_bytes([ip[16], ip[17], ip[18], ip[19]])) else {
                return Drop("ip4-lookup", "no route");
            };
            let mut out_ip = ip[..total].to_vec();
            out_ip[8] -= 1;
            out_ip[10..12].copy_from_slice(&[0, 0]);
            let c = inet_checksum(&out_ip[..ihl]);
            out_ip[10..12].copy_from_slice(&c.to_be_bytes());
            let mut out = eth_header(port, [0x08, 0x00]);
            out.extend_from_slice(&out_ip);
            Expect::Out(port, out)
        }
        0x86dd => {
            if ip.len() < 40 {
                return Drop("ip6-input", "truncated ipv6 header");
            }
            if ip[0] >> 4 != 6 {
                return Drop("ip6-input", "bad ip version");
            }
            let total = 40 + u16::from_be_bytes([ip[4], ip[5]]) as usize;
            if total > ip.len() {
                return Drop("ip6-input", "ipv6 length mismatch");
            }
            if ip[7] <= 1 {
                return Drop("ip6-input", "hop limit expired");
            }
            let dst = u128::from_be_bytes(ip[24..40].try_into().unwrap());
            let Some(port) = lpm6(r6, dst) else {
                return Drop("ip6-lookup", "no route");
            };
            let mut out = eth_header(port, [0x86, 0xdd]);
            out.extend_from_slice(&ip[..total]);
            out[14 + 7] -= 1;
            Expect::Out(port, out)
        }
        0x0806 => {
            let wellformed = ip.len() >= 28 && ip[..6] == [0, 1, 8, 0, 6, 4];
            if !wellformed {
                return Drop("arp-input", "malformed arp");
            }
            let request = ip[6..8] == [0, 1];
            if !request || ip[24..28] != OUR_IP.octets() {
                return Drop("arp-input", "arp not for us");
            }
            // Reply on the receiving interface, from interface 0's MAC, to the requester.
            let our_mac = [2, 0xaa, 0, 0, 0, 0];
            let mut arp = ip.to_vec();
            arp[6..8].copy_from_slice(&[0, 2]);
            arp[18..24].copy_from_slice(&ip[8..14]);
            arp[24..28].copy_from_slice(&ip[14..18]);
            arp[8..14].copy_from_slice(&our_mac);
            arp[14..18].copy_from_slice(&OUR_IP.octets());
            let mut out = ip[8..14].to_vec();
            out.extend_from_slice(&our_mac);
            out.extend_from_slice(&[0x08, 0x06]);
            out.extend_from_slice(&arp);
            Expect::Out(rx, out)
        }
        // NDN goes to `drop` through ethernet-input's arc: no node-specific reason.
        0x8624 => Drop("drop", "unspecified reason"),
        _ => Drop("ethernet-input", "unknown ethertype"),
    }
}

/// Edge cases the generator does not make, with destinations inside the routes.
fn hand_made(r4: &[Route4], r6: &[Route6]) -> Vec<Vec<u8>> {
    let (a, b): (MacAddr, MacAddr) = ([2, 0, 0, 0, 0, 1].into(), [2, 0, 0, 0, 0, 2].into());
    let host = |len: u8| 0xffff_ffffu32.checked_shr(len as u32).unwrap_or(0) & 0x5a5a;
    let hit4 = |i: usize| Ipv4Addr::from(u32::from(r4[i].addr) | host(r4[i].len));
    let hit6 = |i: usize| Ipv6Addr::from(u128::from(r6[i].addr) | 0x1234); // routes are /48–/64
    let src = Ipv4Addr::new(10, 9, 8, 7);
    let v4 = |i: usize| PacketBuilder::ethernet(a, b).ipv4(src, hit4(i));
    let mut out = vec![
        v4(0).ttl(1).udp(1, 2).payload_len(30).pad_to(60).build(), // expires
        v4(1).ttl(2).udp(1, 2).payload_len(30).pad_to(60).build(), // leaves with TTL 1
        v4(2).ttl(255).udp(3, 4).payload_len(200).build(),
        v4(3)
            .ipv4_options(&[1, 1, 1, 0])
            .udp(5, 6)
            .payload_len(40)
            .build(), // IHL 6
        v4(4).fragment(10, true).udp(7, 8).payload_len(40).build(),
        PacketBuilder::ethernet(a, b)
            .vlan(7)
            .vlan(8)
            .ipv4(src, hit4(5))
            .ttl(9)
            .udp(9, 10)
            .payload_len(10)
            .pad_to(64)
            .build(),
        PacketBuilder::ethernet(a, b)
            .ipv4(src, Ipv4Addr::new(240, 1, 2, 3)) // no route
            .udp(1, 2)
            .build(),
        PacketBuilder::ethernet(a, b)
            .ipv6("fd00::1".parse().unwrap(), hit6(0))
            .hop_limit(1)
            .udp(1, 2)
            .build(),
        PacketBuilder::ethernet(a, b)
            .ipv6("fd00::1".parse().unwrap(), hit6(1))
            .hop_limit(2)
            .udp(1, 2)
            .payload_len(100)
            .build(),
        PacketBuilder::ethernet(a, MacAddr::BROADCAST)
            .arp_request(a, Ipv4Addr::new(192, 0, 2, 77), OUR_IP)
            .pad_to(60)
            .build(),
        PacketBuilder::ethernet(b, MacAddr::BROADCAST)
            .arp_request(b, Ipv4Addr::new(192, 0, 2, 78), OUR_IP)
            .build(),
        PacketBuilder::ethernet(a, b)
            .arp_reply(a, Ipv4Addr::new(192, 0, 2, 77), b, OUR_IP)
            .pad_to(60)
            .build(),
    ];
    // Three VLAN tags: a third one in front of a QinQ frame.
    let qinq = PacketBuilder::ethernet(a, b)
        .vlan(1)
        .vlan(2)
        .ipv4(src, hit4(6))
        .udp(1, 2)
        .build();
    let mut three = qinq[..12].to_vec();
    three.extend_from_slice(&[0x81, 0x00, 0x00, 0x03]);
    three.extend_from_slice(&qinq[12..]);
    out.push(three);
    // A VLAN tag cut short, a bare Ethernet header.
    out.push(vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x81, 0x00, 0]);
    out.push(vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00]);
    out
}

fn run(seed: u64, vector_size: usize, check_tshark: bool) {
    let mut r4 = generate_ipv4(2000, seed);
    r4.retain(|r| r.len > 0); // no default route: keep the misses
    let r6 = generate_ipv6(300, seed + 1);
    let app = L3fwd::with_routes(
        L3fwdConfig {
            ports: PORTS,
            ..L3fwdConfig::default()
        },
        r4.clone(),
        r6.clone(),
    )
    .unwrap();

    // Traffic: generated (every malformed kind) plus the hand-made cases.
    let profile = TrafficProfile::from_toml(&format!(
        "seed = {seed}\n[destinations]\nipv4_hit_rate = 0.85\nipv6_hit_rate = 0.85\n[mix]\nipv4 = 4.0\nipv6 = 2.0\narp = 0.3\nndn = 0.2\nunknown_ethertype = 0.2\nmalformed = 1.5\nvlan = 0.2\nqinq = 0.1\n[flows]\ncount = 300\n[sizes]\nuniform = {{ min = 64, max = 600 }}"
    ))
    .unwrap();
    let mut gen = Generator::builder(profile)
        .ipv4_prefixes(r4.iter().map(|r| (r.addr, r.len)).collect())
        .ipv6_prefixes(r6.iter().map(|r| (r.addr, r.len)).collect())
        .build()
        .unwrap();
    let mut all: Vec<Vec<u8>> = (0..3000).map(|_| gen.next_packet().1.to_vec()).collect();
    let extra = hand_made(&r4, &r6);
    all.extend(extra.iter().cloned());
    all.extend(extra); // on the other interface too
    let mut per_port = vec![Vec::new(); RX_PORTS];
    for (i, f) in all.into_iter().enumerate() {
        per_port[i % RX_PORTS].push(f);
    }

    let dir = TestDir::new(&format!("apps-l3fwd-{seed}-{vector_size}"));
    let (g, outputs) = run_through_pcaps(
        &dir,
        &per_port,
        vector_size,
        PoolConfig {
            buffers: 4096,
            ..PoolConfig::default()
        },
        app.entry(),
        PORTS as usize,
        |b| app.add_to(b).output_to_tx.to,
    );

    // The reference, packet by packet.
    let mut want: Vec<Vec<Vec<u8>>> = vec![Vec::new(); PORTS as usize];
    let mut want_drops = Vec::new();
    let n_in: usize = per_port.iter().map(Vec::len).sum();
    for (rx, pkts) in per_port.iter().enumerate() {
        for f in pkts {
            match reference(f, rx as u16, &r4, &r6) {
                Expect::Out(p, bytes) => want[p as usize].push(bytes),
                Expect::Drop(n, r) => want_drops.push((n, r)),
            }
        }
    }
    let n_out: usize = want.iter().map(Vec::len).sum();
    assert_eq!(
        n_out + want_drops.len(),
        n_in,
        "reference accounts for every input"
    );
    for p in 0..PORTS as usize {
        assert_same_frames(
            &format!("l3fwd port {p} (seed {seed}, V {vector_size})"),
            &outputs[p],
            &want[p],
        );
    }
    // A second, independent parser over what left: checksums and TTLs are right.
    let mut v4_out = 0;
    for f in outputs.iter().flatten().filter(|f| f[12..14] == [8, 0]) {
        let h = etherparse::Ipv4HeaderSlice::from_slice(&f[14..]).unwrap();
        assert_eq!(h.header_checksum(), h.to_header().calc_header_checksum());
        assert!(h.ttl() >= 1);
        v4_out += 1;
    }
    let want_drops = count_drops(&want_drops);
    assert_eq!(drops(&g), want_drops, "drops by reason (seed {seed})");

    // Conservation: in = out + drops by reason, nothing in flight, every buffer back.
    let c = g.conservation();
    assert!(c.is_balanced(), "{c}");
    assert_eq!(c.input as usize, n_in);
    assert_eq!(c.output as usize, n_out);
    assert_eq!(c.dropped, want_drops.values().sum::<u64>());
    assert_eq!((c.in_flight, c.buffers_in_use), (0, 0));
    let out = g.node::<InterfaceOutput>("interface-output").unwrap();
    for (counter, frames) in out.counters().iter().zip(&outputs) {
        assert_eq!(counter.packets as usize, frames.len());
    }
    // The traffic exercised what it should.
    assert!(v4_out > 1000, "{v4_out} IPv4 forwarded");
    let kinds: BTreeMap<&str, usize> = want_drops.keys().fold(BTreeMap::new(), |mut m, (n, _)| {
        *m.entry(n.as_str()).or_default() += 1;
        m
    });
    assert!(want_drops.len() >= 14, "{want_drops:?}");
    for node in [
        "ethernet-input",
        "ip4-input",
        "ip4-lookup",
        "ip6-input",
        "ip6-lookup",
        "arp-input",
        "drop",
    ] {
        assert!(
            kinds.contains_key(node),
            "no drop at {node}: {want_drops:?}"
        );
    }
    if check_tshark {
        let files: Vec<_> = (0..PORTS)
            .map(|p| dir.path(&format!("out-port{p}.pcap")))
            .collect();
        let counts: Vec<usize> = outputs.iter().map(Vec::len).collect();
        tshark_check(&files, &counts);
    }
}

#[test]
fn l3fwd_pcap_matches_reference() {
    run(21, 256, false);
}

#[test]
fn l3fwd_pcap_matches_reference_small_vectors() {
    run(22, 3, false);
}

#[test]
fn l3fwd_output_pcaps_read_by_tshark() {
    run(23, 64, true);
}
