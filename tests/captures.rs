//! Every real capture in `shared/data/pcap` (the pcapplusplus and zeek files, and the
//! tcpdump test captures unpacked from their tarball at test time) through every forwarder:
//! l2fwd (flood and drop policy), l3fwd (IPv4 + IPv6, with default routes so that packets
//! reach the rewrite), ndnfwd, cryptofwd, and the path-based batcher in front of l3fwd.
//!
//! For each capture and forwarder: no panic, conservation exact (input + created = output +
//! dropped, nothing in flight), every buffer back in the pool, no double free. A capture
//! with nothing to replay is refused with a message naming the file and its link types; the
//! refusals and the counts are printed (`cargo test --test captures -- --nocapture`).
//!
//! Skipped (with a note) when the data folder is absent.

use pktvec::batcher::{Batcher, BatcherConfig, BatcherNext, ReplaySource};
use pktvec::graph::builtin::NullSink;
use pktvec::graph::{Graph, GraphBuilder, GraphConfig};
use pktvec::io::capture::{read_capture, PcapSource, PcapSourceNext};
use pktvec::lookup::routes::{Route, Route4};
use pktvec::nodes::apps::cryptofwd::{Cryptofwd, CryptofwdConfig};
use pktvec::nodes::apps::l2fwd::{L2fwd, L2fwdConfig};
use pktvec::nodes::apps::l3fwd::{L3fwd, L3fwdConfig};
use pktvec::nodes::apps::ndnfwd::{Ndnfwd, NdnfwdConfig};
use pktvec::nodes::l2::UnknownUnicast;
use pktvec::packet::{BufferPool, PoolConfig};
use std::collections::BTreeMap;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::{Path, PathBuf};

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/pcap")
}

/// Every capture file under `dir` (recursively), sorted.
fn captures_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            captures_under(&p, out);
        } else if p
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| matches!(e, "pcap" | "pcapng" | "cap" | "dmp" | "trace"))
        {
            out.push(p);
        }
    }
}

/// Unpacks the tcpdump test captures into a fresh temp directory (pure Rust: xz, then tar).
fn unpack_tcpdump(tarball: &Path) -> PathBuf {
    let dest = std::env::temp_dir().join(format!("pktvec-tcpdump-pcaps-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dest);
    std::fs::create_dir_all(&dest).unwrap();
    let mut xz = std::io::BufReader::new(std::fs::File::open(tarball).unwrap());
    let mut tar_bytes = Vec::new();
    lzma_rs::xz_decompress(&mut xz, &mut tar_bytes).unwrap();
    tar::Archive::new(&tar_bytes[..]).unpack(&dest).unwrap();
    dest
}

/// The forwarders, each as "add your nodes after an input node and return the entry node
/// and the transmit node's name".
struct Forwarders {
    l2_flood: L2fwd,
    l2_drop: L2fwd,
    l3: L3fwd,
    ndn: Ndnfwd,
    crypto: Cryptofwd,
}

impl Forwarders {
    fn new() -> Self {
        let l2 = |unknown_unicast| {
            L2fwd::new(L2fwdConfig {
                table_size: 1024,
                unknown_unicast,
                ..L2fwdConfig::default()
            })
            .unwrap()
        };
        // Generated routes plus default routes, so real traffic reaches the rewrite.
        let mut r4 = pktvec::lookup::routes::generate_ipv4(1000, 1);
        r4.push(Route4 {
            addr: Ipv4Addr::UNSPECIFIED,
            len: 0,
            next_hop: 1,
        });
        let mut r6 = pktvec::lookup::routes::generate_ipv6(200, 1);
        r6.push(Route {
            addr: Ipv6Addr::UNSPECIFIED,
            len: 0,
            next_hop: 2,
        });
        Forwarders {
            l2_flood: l2(UnknownUnicast::Flood),
            l2_drop: l2(UnknownUnicast::Drop),
            l3: L3fwd::with_routes(L3fwdConfig::default(), r4, r6).unwrap(),
            ndn: Ndnfwd::new(NdnfwdConfig {
                name_count: 1000,
                ..NdnfwdConfig::default()
            })
            .unwrap(),
            crypto: Cryptofwd::new(CryptofwdConfig {
                verify: true,
                ..CryptofwdConfig::default()
            })
            .unwrap(),
        }
    }
}

const NAMES: [&str; 6] = [
    "l2fwd",
    "l2fwd-drop",
    "l3fwd",
    "ndnfwd",
    "cryptofwd",
    "ppb-l3fwd",
];

/// Enough for a vector, its flood copies to 3 further ports and the batcher's queues.
fn pool() -> BufferPool {
    BufferPool::new(PoolConfig {
        buffers: 4096,
        ..PoolConfig::default()
    })
    .unwrap()
}

/// One capture through forwarder `which`: the graph after running it dry.
fn run_one(f: &Forwarders, which: &str, path: &Path, packets: &[Vec<u8>]) -> Graph {
    let mut b = GraphBuilder::new(GraphConfig::default());
    let tx = if which == "ppb-l3fwd" {
        let src = ReplaySource::new(packets.to_vec());
        b.add("batcher", Batcher::new(src, BatcherConfig::default()));
        let nodes = f.l3.add_to(&mut b);
        b.set_next("batcher", BatcherNext::Ip4, &nodes.ethernet_to_ip4.to)
            .set_next("batcher", BatcherNext::Ip6, &nodes.ethernet_to_ip6.to);
        nodes.output_to_tx.to.clone()
    } else {
        let entry = match which {
            "l2fwd" => f.l2_flood.entry(),
            "l2fwd-drop" => f.l2_drop.entry(),
            "l3fwd" => f.l3.entry(),
            "ndnfwd" => f.ndn.entry(),
            _ => f.crypto.entry(),
        };
        b.add("input", PcapSource::open(path).unwrap()).set_next(
            "input",
            PcapSourceNext::Out,
            entry,
        );
        match which {
            "l2fwd" => f.l2_flood.add_to(&mut b).output_to_tx.to.clone(),
            "l2fwd-drop" => f.l2_drop.add_to(&mut b).output_to_tx.to.clone(),
            "l3fwd" => f.l3.add_to(&mut b).output_to_tx.to.clone(),
            "ndnfwd" => f.ndn.add_to(&mut b).output_to_tx.to.clone(),
            _ => f.crypto.add_to(&mut b).unwrap().output_to_tx.to.clone(),
        }
    };
    b.add(tx.as_str(), NullSink);
    let mut g = b.build(pool()).unwrap();
    g.run_until_idle();
    g
}

#[derive(Default)]
struct Totals {
    files: u64,
    input: u64,
    created: u64,
    output: u64,
    dropped: u64,
}

#[test]
fn every_capture_through_every_forwarder() {
    let dir = data_dir();
    if !dir.is_dir() {
        eprintln!("note: {} absent, capture sweep skipped", dir.display());
        return;
    }
    let mut files = Vec::new();
    captures_under(&dir, &mut files);
    let tarball = dir.join("tcpdump-tests-pcaps.tar.xz");
    let unpacked = tarball.is_file().then(|| unpack_tcpdump(&tarball));
    if let Some(u) = &unpacked {
        captures_under(u, &mut files);
    }
    assert!(files.len() > 100, "only {} captures found", files.len());

    let f = Forwarders::new();
    let mut refused: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut totals: BTreeMap<&str, Totals> = BTreeMap::new();
    let mut replayed = 0u64;
    for path in &files {
        let shown = path
            .strip_prefix(&dir)
            .or_else(|_| path.strip_prefix(unpacked.as_deref().unwrap_or(&dir)))
            .unwrap_or(path)
            .display()
            .to_string();
        let capture = match read_capture(path) {
            Ok(c) => c,
            Err(e) => {
                refused
                    .entry("not a readable capture".into())
                    .or_default()
                    .push(e.to_string());
                continue;
            }
        };
        if let Err(e) = PcapSource::open(path) {
            assert!(
                capture.packets.is_empty(),
                "{shown}: refused although it has packets: {e}"
            );
            let msg = e.to_string();
            assert!(
                msg.contains(path.file_name().unwrap().to_str().unwrap()),
                "{msg}"
            );
            refused
                .entry("nothing to replay".into())
                .or_default()
                .push(msg);
            continue;
        }
        replayed += 1;
        for which in NAMES {
            let g = run_one(&f, which, path, &capture.packets);
            let c = g.conservation();
            assert!(c.is_balanced(), "{which} on {shown}: {c}");
            assert_eq!(c.in_flight, 0, "{which} on {shown}: {c}");
            assert_eq!(
                c.input,
                capture.packets.len() as u64,
                "{which} on {shown}: {c}"
            );
            assert_eq!(g.pool().in_use(), 0, "{which} on {shown}: buffers left");
            assert_eq!(g.pool().double_frees(), 0, "{which} on {shown}");
            let t = totals.entry(which).or_default();
            t.files += 1;
            t.input += c.input;
            t.created += c.created;
            t.output += c.output;
            t.dropped += c.dropped;
        }
    }
    println!("captures: {} found, {replayed} replayed", files.len());
    println!(
        "{:<12} {:>6} {:>9} {:>9} {:>9} {:>9}",
        "forwarder", "files", "in", "created", "out", "dropped"
    );
    for (which, t) in &totals {
        println!(
            "{which:<12} {:>6} {:>9} {:>9} {:>9} {:>9}",
            t.files, t.input, t.created, t.output, t.dropped
        );
    }
    // Refusals grouped by the link types named in the message, with the number of files
    // and one example each.
    for (why, list) in &refused {
        println!("refused ({why}): {} files", list.len());
        let mut by_kind: BTreeMap<String, (u64, &str)> = BTreeMap::new();
        for m in list {
            let kind = match m.split_once("(link types: ") {
                Some((_, rest)) => rest
                    .split(", ")
                    .map(|t| t.split(' ').next().unwrap_or(t).trim_end_matches(')'))
                    .collect::<Vec<_>>()
                    .join("+"),
                None => m.rsplit(": ").next().unwrap_or(m).to_string(),
            };
            let e = by_kind.entry(kind).or_insert((0, m));
            e.0 += 1;
        }
        for (kind, (n, example)) in by_kind {
            println!("  {n:>4} {kind:<24} e.g. {example}");
        }
    }
    if let Some(u) = unpacked {
        let _ = std::fs::remove_dir_all(u);
    }
    assert_eq!(totals.len(), NAMES.len());
}
