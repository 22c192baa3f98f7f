//! ndnfwd (`pktvec_nodes::apps::ndnfwd`) end to end through pcap files: generated NDN
//! Interests (names hitting long and short FIB prefixes, and names with no route) mixed with
//! IPv4, ARP, unknown EtherTypes and malformed frames, plus hand-made malformed NDN TLVs and
//! a VLAN-tagged Interest. The reference here parses the NDN TLVs itself and finds the
//! longest matching prefix by a linear scan over the FIB's name list; every output frame
//! must be the input frame unchanged (Ethernet header restored) on the prefix's interface,
//! every input is accounted for, and in = out + drops by reason.

mod apps_common;

use apps_common::*;

use pktvec_io::generator::{ndn_interest, Generator};
use pktvec_io::profile::TrafficProfile;
use pktvec_nodes::apps::ndnfwd::{Ndnfwd, NdnfwdConfig};
use pktvec_packet::builder::PacketBuilder;
use pktvec_packet::PoolConfig;

const PORTS: u32 = 4;
const RX_PORTS: usize = 2;

/// NDN TLV: (type, value start, end) at `pos`, or None if it does not fit in `b`.
fn tlv(b: &[u8], pos: usize) -> Option<(u64, usize, usize)> {
    let num = |p: usize| -> Option<(u64, usize)> {
        let f = *b.get(p)?;
        let w = match f {
            0..=252 => return Some((f as u64, p + 1)),
            253 => 2,
            254 => 4,
            255 => 8,
        };
        let bytes = b.get(p + 1..p + 1 + w)?;
        Some((
            bytes.iter().fold(0u64, |a, &x| a << 8 | x as u64),
            p + 1 + w,
        ))
    };
    let (t, p) = num(pos)?;
    let (l, v) = num(p)?;
    let end = v.checked_add(usize::try_from(l).ok()?)?;
    (end <= b.len()).then_some((t, v, end))
}

/// The name components of an Interest or Data packet, or None if malformed.
fn name_components(pkt: &[u8]) -> Option<Vec<&[u8]>> {
    let (t, v, end) = tlv(pkt, 0)?;
    if t != 5 && t != 6 {
        return None;
    }
    let outer = &pkt[..end];
    let (nt, ns, ne) = tlv(outer, v)?;
    if nt != 7 {
        return None;
    }
    let name = &outer[..ne];
    let mut comps = Vec::new();
    let mut pos = ns;
    while pos < ne {
        let (_, cv, ce) = tlv(name, pos)?;
        comps.push(&name[cv..ce]);
        pos = ce;
    }
    Some(comps)
}

/// Longest FIB prefix of `comps` by linear scan; prefix `i` goes out of `i % PORTS`.
fn longest_match(prefixes: &[String], comps: &[&[u8]]) -> Option<u32> {
    prefixes
        .iter()
        .enumerate()
        .filter_map(|(i, p)| {
            let pc: Vec<&[u8]> = p
                .split('/')
                .filter(|c| !c.is_empty())
                .map(str::as_bytes)
                .collect();
            (pc.len() <= comps.len() && pc[..] == comps[..pc.len()]).then_some((pc.len(), i))
        })
        .max_by_key(|&(k, _)| k)
        .map(|(_, i)| i as u32 % PORTS)
}

fn reference(frame: &[u8], prefixes: &[String]) -> Result<u32, (&'static str, &'static str)> {
    if frame.len() < 14 {
        return Err(("ethernet-input", "truncated frame"));
    }
    let mut et = u16::from_be_bytes([frame[12], frame[13]]);
    let mut l3 = 14;
    let mut tags = 0;
    while matches!(et, 0x8100 | 0x88a8 | 0x9100) {
        if tags == 2 {
            return Err(("ethernet-input", "more than two vlan tags"));
        }
        if frame.len() < l3 + 4 {
            return Err(("ethernet-input", "truncated frame"));
        }
        et = u16::from_be_bytes([frame[l3 + 2], frame[l3 + 3]]);
        l3 += 4;
        tags += 1;
    }
    match et {
        0x8624 => {
            let comps =
                name_components(&frame[l3..]).ok_or(("ndn-lookup", "malformed ndn packet"))?;
            longest_match(prefixes, &comps).ok_or(("ndn-lookup", "no route for name"))
        }
        // ndnfwd sends IPv4, IPv6 and ARP to `drop` through ethernet-input's arcs.
        0x0800 | 0x86dd | 0x0806 => Err(("drop", "unspecified reason")),
        _ => Err(("ethernet-input", "unknown ethertype")),
    }
}

fn hand_made() -> Vec<Vec<u8>> {
    let eth = |payload: &[u8]| {
        PacketBuilder::ethernet([2, 0, 0, 0, 0, 1].into(), [2, 0, 0, 0, 0, 2].into())
            .ethertype_raw(0x8624)
            .payload(payload)
            .build()
    };
    vec![
        eth(&[0x05, 0x10, 0x07, 0x02, 0x08]), // Interest longer than the frame
        eth(&[0x09, 0x02, 0x07, 0x00]),       // not an Interest
        eth(&[0x05, 0x04, 0x0a, 0x02, 0, 0]), // no Name first
        eth(&[0x05, 0x05, 0x07, 0x03, 0x08, 0x05, 0x61]), // component longer than the name
        eth(&[]),                             // empty
        eth(&[0x05, 0x02, 0x07, 0x00]),       // empty name: no route
        PacketBuilder::ethernet([2, 0, 0, 0, 0, 1].into(), [2, 0, 0, 0, 0, 2].into())
            .vlan(5)
            .ethertype_raw(0x8624)
            .payload(&ndn_interest("/tld3/zzz/a", 7))
            .build(), // tagged: forwarded, tag kept
    ]
}

fn run(seed: u64, vector_size: usize) {
    let mut prefixes: Vec<String> = (0..300)
        .map(|i| format!("/tld{}/site{}/area{}", i % 97, i, i % 7))
        .collect();
    prefixes.extend(["/tld3", "/tld5/site5", "/short"].map(String::from));
    let app = Ndnfwd::with_prefixes(
        NdnfwdConfig {
            ports: PORTS,
            ..NdnfwdConfig::default()
        },
        prefixes.clone(),
    )
    .unwrap();
    let mut names = app.interest_names();
    names.extend(
        [
            "/tld3/zzz/a",
            "/tld5/site5/x/y",
            "/nomatch/a/b",
            "/short",
            "/tld96/siteX",
        ]
        .map(String::from),
    );
    let profile = TrafficProfile::from_toml(&format!(
        "seed = {seed}\n[mix]\nipv4 = 0.5\nndn = 3.0\narp = 0.2\nunknown_ethertype = 0.2\nmalformed = 0.5\n[flows]\ncount = 400\n[sizes]\nfixed = 64\n"
    ))
    .unwrap();
    let mut gen = Generator::builder(profile).names(names).build().unwrap();
    let mut all: Vec<Vec<u8>> = (0..3000).map(|_| gen.next_packet().1.to_vec()).collect();
    all.extend(hand_made());
    all.extend(hand_made());
    let mut per_port = vec![Vec::new(); RX_PORTS];
    for (i, f) in all.into_iter().enumerate() {
        per_port[i % RX_PORTS].push(f);
    }

    let dir = TestDir::new(&format!("apps-ndnfwd-{seed}-{vector_size}"));
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

    let mut want: Vec<Vec<Vec<u8>>> = vec![Vec::new(); PORTS as usize];
    let mut want_drops = Vec::new();
    let mut n_in = 0;
    for f in per_port.iter().flatten() {
        n_in += 1;
        match reference(f, &prefixes) {
            Ok(p) => want[p as usize].push(f.clone()),
            Err(d) => want_drops.push(d),
        }
    }
    for p in 0..PORTS as usize {
        assert_same_frames(
            &format!("ndnfwd port {p} (seed {seed}, V {vector_size})"),
            &outputs[p],
            &want[p],
        );
    }
    let want_drops = count_drops(&want_drops);
    assert_eq!(drops(&g), want_drops, "drops by reason");
    let c = g.conservation();
    let n_out: u64 = outputs.iter().map(|o| o.len() as u64).sum();
    assert!(c.is_balanced(), "{c}");
    assert_eq!((c.input, c.output), (n_in, n_out));
    assert_eq!(c.dropped, want_drops.values().sum::<u64>());
    assert_eq!((c.in_flight, c.buffers_in_use), (0, 0));
    // Both outcomes and every reason were exercised.
    assert!(n_out > 1500, "{n_out} forwarded");
    for (n, r) in [
        ("ndn-lookup", "malformed ndn packet"),
        ("ndn-lookup", "no route for name"),
        ("drop", "unspecified reason"),
        ("ethernet-input", "unknown ethertype"),
    ] {
        assert!(
            want_drops.contains_key(&(n.to_string(), r.to_string())),
            "{n}: {r} not exercised"
        );
    }
}

#[test]
fn ndnfwd_pcap_matches_reference() {
    run(41, 256);
}

#[test]
fn ndnfwd_pcap_matches_reference_small_vectors() {
    run(42, 7);
}
