//! The generator against independent checks of the frames it emits, and the pcap
//! source/sink against real captures and tshark.

use pktvec_graph::{GraphBuilder, GraphConfig};
use pktvec_io::capture::{
    read_capture, write_pcap, CountingSink, PcapSink, PcapSource, PcapSourceNext,
};
use pktvec_io::generator::{FlowKind, Generator, GeneratorNext, GeneratorSource, MalformedKind};
use pktvec_io::profile::TrafficProfile;
use pktvec_packet::wire::{parse_l2, EtherType, Ipv4Packet, Ipv6Packet};
use pktvec_packet::{BufferPool, PoolConfig};
use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::path::PathBuf;

fn profile(text: &str) -> TrafficProfile {
    TrafficProfile::from_toml(text).unwrap()
}

fn frames(g: &mut Generator, n: usize) -> Vec<(usize, Vec<u8>)> {
    (0..n)
        .map(|_| {
            let (f, d) = g.next_packet();
            (f, d.to_vec())
        })
        .collect()
}

#[test]
fn same_seed_same_traffic_other_seed_other_traffic() {
    let text = "[mix]\nipv4 = 1.0\nipv6 = 1.0\narp = 0.1\nndn = 0.1\nmalformed = 0.2\nvlan = 0.2\nqinq = 0.1";
    let a = frames(
        &mut Generator::builder(profile(text)).build().unwrap(),
        2000,
    );
    let b = frames(
        &mut Generator::builder(profile(text)).build().unwrap(),
        2000,
    );
    assert_eq!(a, b);
    let c = frames(
        &mut Generator::builder(profile(&format!("seed = 99\n{text}")))
            .build()
            .unwrap(),
        2000,
    );
    assert_ne!(a, c);
}

#[test]
fn mix_shares_match_the_weights() {
    let p = profile("[mix]\nipv4 = 6.0\nipv6 = 3.0\narp = 1.0\n[flows]\ncount = 20000");
    let g = Generator::builder(p).build().unwrap();
    let mut by: HashMap<EtherType, usize> = HashMap::new();
    for f in g.flows() {
        *by.entry(parse_l2(&f.frame).unwrap().ethertype).or_default() += 1;
    }
    let share = |t| by.get(&t).copied().unwrap_or(0) as f64 / 20000.0;
    assert!((share(EtherType::IPV4) - 0.6).abs() < 0.02, "{by:?}");
    assert!((share(EtherType::IPV6) - 0.3).abs() < 0.02, "{by:?}");
    assert!((share(EtherType::ARP) - 0.1).abs() < 0.02, "{by:?}");
}

#[test]
fn valid_frames_parse_and_have_the_profile_size() {
    let p = profile("[mix]\nipv4 = 1.0\nipv6 = 1.0\nvlan = 0.3\nqinq = 0.2\n[sizes]\nfixed = 128\n[flows]\ncount = 2000");
    let g = Generator::builder(p).build().unwrap();
    let mut tags = [0usize; 3];
    for f in g.flows() {
        assert_eq!(
            f.frame.len(),
            124,
            "128-byte wire frames are 124 bytes without FCS"
        );
        let l2 = parse_l2(&f.frame).unwrap();
        tags[l2.n_vlans as usize] += 1;
        let l3 = &f.frame[l2.l3_offset as usize..];
        match l2.ethertype {
            EtherType::IPV4 => {
                let ip = Ipv4Packet::new_checked(l3).unwrap();
                assert!(ip.verify_checksum());
                assert_eq!(Some((ip.src_addr(), ip.dst_addr())), f.ip4);
            }
            EtherType::IPV6 => {
                let ip = Ipv6Packet::new_checked(l3).unwrap();
                assert_eq!(Some((ip.src_addr(), ip.dst_addr())), f.ip6);
            }
            t => panic!("unexpected {t}"),
        }
    }
    let share = |k: usize| tags[k] as f64 / 2000.0;
    assert!(
        (share(2) - 0.2).abs() < 0.04 && (share(1) - 0.3).abs() < 0.04,
        "{tags:?}"
    );
}

#[test]
fn alternating_order_strictly_alternates_on_the_wire() {
    let p = profile("order = \"alternating\"\n[mix]\nipv4 = 5.0\nipv6 = 1.0");
    let mut g = Generator::builder(p).build().unwrap();
    for (i, (_, f)) in frames(&mut g, 1000).iter().enumerate() {
        let want = if i % 2 == 0 {
            EtherType::IPV4
        } else {
            EtherType::IPV6
        };
        assert_eq!(parse_l2(f).unwrap().ethertype, want, "packet {i}");
    }
}

#[test]
fn bursts_repeat_a_flow() {
    let p = profile("order = { bursts = 8 }\n[flows]\ncount = 500");
    let mut g = Generator::builder(p).build().unwrap();
    let ids: Vec<usize> = frames(&mut g, 800).into_iter().map(|x| x.0).collect();
    for chunk in ids.chunks(8) {
        assert!(chunk.iter().all(|&x| x == chunk[0]));
    }
}

#[test]
fn zipf_concentrates_on_the_first_flows() {
    let p = profile("[flows]\ncount = 1000\npopularity = { zipf = 1.0 }");
    let mut g = Generator::builder(p).build().unwrap();
    let mut hits = vec![0u32; 1000];
    for (f, _) in frames(&mut g, 100_000) {
        hits[f] += 1;
    }
    // With s = 1 over 1000 flows, flow 0 has 1/H(1000) ≈ 13.4% of the packets.
    let top = hits[0] as f64 / 100_000.0;
    assert!((top - 0.134).abs() < 0.01, "top flow share {top}");
    assert!(hits[0] > 5 * hits[9]);
}

#[test]
fn destinations_hit_the_routes_at_the_given_rate() {
    let routes = vec![
        (Ipv4Addr::new(192, 0, 2, 0), 24),
        (Ipv4Addr::new(198, 51, 100, 0), 24),
    ];
    let p = profile("[destinations]\nipv4_hit_rate = 0.7\n[flows]\ncount = 5000");
    let g = Generator::builder(p).ipv4_prefixes(routes).build().unwrap();
    let inside = g
        .flows()
        .iter()
        .filter(|f| {
            let ip = Ipv4Packet::new_checked(&f.frame[14..]).unwrap();
            let d = ip.dst_addr().octets();
            let hit = (d[..3] == [192, 0, 2]) || (d[..3] == [198, 51, 100]);
            assert_eq!(hit, f.dst_in_routes);
            hit
        })
        .count();
    assert!((inside as f64 / 5000.0 - 0.7).abs() < 0.03, "{inside}");
}

#[test]
fn malformed_frames_are_broken_as_labelled() {
    let p = profile("[mix]\nipv4 = 0.0\nmalformed = 1.0\n[flows]\ncount = 4000");
    let g = Generator::builder(p).build().unwrap();
    let mut seen = HashMap::new();
    for f in g.flows() {
        let FlowKind::Malformed(m) = f.kind else {
            panic!("{:?}", f.kind)
        };
        *seen.entry(m).or_insert(0) += 1;
        let l3 = f.frame.get(14..).unwrap_or_default();
        let broken = match m {
            MalformedKind::Runt => f.frame.len() < 14,
            MalformedKind::TruncatedIpv4
            | MalformedKind::BadIhl
            | MalformedKind::BadVersion
            | MalformedKind::TotalLengthTooLong => Ipv4Packet::new_checked(l3).is_err(),
            MalformedKind::BadIpv4Checksum => {
                !Ipv4Packet::new_checked(l3).unwrap().verify_checksum()
            }
            MalformedKind::TtlZero => {
                let ip = Ipv4Packet::new_checked(l3).unwrap();
                ip.verify_checksum() && ip.ttl() == 0
            }
            MalformedKind::Ipv6PayloadTooLong => Ipv6Packet::new_checked(l3).is_err(),
        };
        assert!(broken, "{m:?} frame is not broken: {:02x?}", f.frame);
    }
    assert_eq!(seen.len(), 8, "every kind appears: {seen:?}");
}

#[test]
fn ndn_interests_carry_the_names() {
    let p = profile("[mix]\nipv4 = 0.0\nndn = 1.0\n[flows]\ncount = 50");
    let names = vec!["/com/example/a".to_string(), "/org/x/y/z".to_string()];
    let g = Generator::builder(p).names(names.clone()).build().unwrap();
    for f in g.flows() {
        assert_eq!(parse_l2(&f.frame).unwrap().ethertype, EtherType(0x8624));
        let name = f.name.as_ref().unwrap();
        assert!(names.contains(name));
        let last = name.rsplit('/').next().unwrap().as_bytes();
        assert!(f.frame.windows(last.len()).any(|w| w == last));
        assert_eq!(f.frame[14], 0x05, "Interest TLV");
    }
}

#[test]
fn churn_replaces_flows() {
    let p = profile("[flows]\ncount = 1000\nchurn_every = 1000\nchurn_fraction = 0.5");
    let mut g = Generator::builder(p).build().unwrap();
    let before: Vec<Vec<u8>> = g.flows().iter().map(|f| f.frame.clone()).collect();
    frames(&mut g, 1001);
    let changed = g
        .flows()
        .iter()
        .zip(&before)
        .filter(|(f, b)| &f.frame != *b)
        .count();
    // Half the picks, some picked twice: between 30% and 50% replaced.
    assert!((300..=500).contains(&changed), "{changed}");
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("pktvec-io-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

#[test]
fn generator_through_pcap_sink_is_read_back_by_us_and_tshark() {
    let p = profile("[mix]\nipv4 = 1.0\nipv6 = 1.0\nmalformed = 0.2");
    let gen = Generator::builder(p.clone()).build().unwrap();
    let path = tmp("gen.pcap");
    let mut b = GraphBuilder::new(GraphConfig::default());
    b.add("gen", GeneratorSource::new(gen).with_limit(3000))
        .add("pcap-out", PcapSink::create(&path).unwrap())
        .set_next("gen", GeneratorNext::Out, "pcap-out");
    let mut g = b
        .build(BufferPool::new(PoolConfig::default()).unwrap())
        .unwrap();
    assert_eq!(g.run_until_idle(), 3000);
    assert!(g.conservation().is_balanced());
    drop(g); // closes the file
    let cap = read_capture(&path).unwrap();
    let mut again = Generator::builder(p).build().unwrap();
    let want = frames(&mut again, 3000);
    assert_eq!(cap.packets.len(), 3000);
    for (got, (_, w)) in cap.packets.iter().zip(&want) {
        assert_eq!(got, w);
    }
    if let Ok(out) = std::process::Command::new("tshark")
        .args([
            "-r",
            path.to_str().unwrap(),
            "-T",
            "fields",
            "-e",
            "frame.len",
        ])
        .output()
    {
        assert!(out.status.success());
        assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 3000);
    }
}

#[test]
fn real_captures_replay_through_a_graph() {
    let base = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/pcap");
    let files = [
        "pcapplusplus/mixed/vlan-qinq-cdp.pcap",
        "pcapplusplus/mixed/many-protocols.pcap",
        "zeek/snap-arp.pcapng",
        "zeek/vlan-pcp-dei.pcapng",
        "pcapplusplus/mixed/linux-sll.pcap",
    ];
    let mut any = false;
    for f in files {
        let path = base.join(f);
        if !path.exists() {
            eprintln!("skipping {f}: shared data not present");
            continue;
        }
        any = true;
        let cap = read_capture(&path).unwrap();
        let n = cap.packets.len() as u64;
        if f.contains("linux-sll") {
            // Linux cooked captures are replayed behind a synthetic Ethernet header.
            assert_eq!((n, cap.skipped), (518, 0), "{f}");
        }
        assert!(n > 0, "{f}");
        let mut b = GraphBuilder::new(GraphConfig::default());
        b.add("pcap", PcapSource::new(cap).looping(true).with_limit(3 * n))
            .add("count", CountingSink::new(4))
            .set_next("pcap", PcapSourceNext::Out, "count");
        let mut g = b
            .build(BufferPool::new(PoolConfig::default()).unwrap())
            .unwrap();
        assert_eq!(g.run_until_idle(), 3 * n, "{f}");
        let c = g.node::<CountingSink>("count").unwrap();
        assert_eq!(c.packets.iter().sum::<u64>(), 3 * n);
    }
    if !any {
        eprintln!("no shared captures found");
    }
}

#[test]
fn bad_files_are_errors_or_truncated_never_panics() {
    let junk = tmp("junk.pcap");
    std::fs::write(&junk, b"this is not a capture at all").unwrap();
    assert!(read_capture(&junk).is_err());
    assert!(read_capture(tmp("missing.pcap")).is_err());
    let empty = tmp("empty.pcap");
    std::fs::write(&empty, b"").unwrap();
    assert!(read_capture(&empty).is_err());
    // A valid file cut in the middle of its last packet keeps the packets before it.
    let good = tmp("good.pcap");
    write_pcap(&good, &[vec![1u8; 60], vec![2u8; 60], vec![3u8; 60]]).unwrap();
    let bytes = std::fs::read(&good).unwrap();
    let cut = tmp("cut.pcap");
    std::fs::write(&cut, &bytes[..bytes.len() - 10]).unwrap();
    let cap = read_capture(&cut).unwrap();
    assert_eq!(cap.packets.len(), 2);
    assert!(cap.truncated);
}
