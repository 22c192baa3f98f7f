//! Shared by the `apps_*` forwarder tests: pcap files in and out (one file per interface),
//! a capturing sink that writes each packet to its transmit interface's pcap, the from-scratch
//! IPv4 checksum, drop tables, multiset comparison and the optional tshark check.
#![allow(dead_code)]

use pktvec_graph::{Context, Frame, Graph, GraphBuilder, NoError, NoNext, Node, NodeKind};
use pktvec_io::capture::{read_capture, write_pcap, PcapFileWriter, PcapSource, PcapSourceNext};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A fresh directory under the system temp dir, removed on drop.
pub struct TestDir(pub PathBuf);

impl TestDir {
    pub fn new(name: &str) -> Self {
        let d = std::env::temp_dir().join(format!("pktvec-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        TestDir(d)
    }
    pub fn path(&self, file: &str) -> PathBuf {
        self.0.join(file)
    }
}

impl Drop for TestDir {
    fn drop(&mut self) {
        if std::env::var_os("PKTVEC_KEEP_PCAPS").is_none() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// Sink writing every packet to `out-port{tx_if}.pcap` (the transmit side of a multi-port
/// forwarder), then freeing it. Test code: writes through a buffered file per packet.
pub struct PortPcapSink {
    writers: Vec<Option<PcapFileWriter>>,
    paths: Vec<PathBuf>,
    /// Packets whose tx interface has no file.
    pub stray: u64,
    /// Write errors.
    pub errors: u64,
}

impl PortPcapSink {
    pub fn create(dir: &TestDir, ports: usize) -> Self {
        let paths: Vec<PathBuf> = (0..ports)
            .map(|p| dir.path(&format!("out-port{p}.pcap")))
            .collect();
        PortPcapSink {
            writers: paths
                .iter()
                .map(|p| Some(PcapFileWriter::create(p).unwrap()))
                .collect(),
            paths,
            stray: 0,
            errors: 0,
        }
    }

    /// Completes the files and returns their paths (port order).
    pub fn finish(&mut self) -> Vec<PathBuf> {
        for w in self.writers.iter_mut() {
            if let Some(w) = w.take() {
                w.finish().unwrap();
            }
        }
        self.paths.clone()
    }
}

impl Node for PortPcapSink {
    type Next = NoNext;
    type Error = NoError;
    const KIND: NodeKind = NodeKind::Sink;

    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        for &bi in frame.buffers() {
            let port = cx.pool().meta(bi).tx_if as usize;
            match self.writers.get_mut(port).and_then(Option::as_mut) {
                Some(w) => {
                    if w.write(cx.pool().data(bi)).is_err() {
                        self.errors += 1;
                    }
                }
                None => self.stray += 1,
            }
        }
        cx.free_frame(frame);
    }
}

/// Writes `in-port{i}.pcap` for every receive interface, reads each back (the capture
/// round trip must be exact) and returns the paths.
pub fn write_inputs(dir: &TestDir, per_port: &[Vec<Vec<u8>>]) -> Vec<PathBuf> {
    per_port
        .iter()
        .enumerate()
        .map(|(i, pkts)| {
            let p = dir.path(&format!("in-port{i}.pcap"));
            write_pcap(&p, pkts).unwrap();
            let back = read_capture(&p).unwrap();
            assert!(!back.truncated && back.skipped == 0);
            assert_eq!(&back.packets, pkts, "pcap round trip of {}", p.display());
            p
        })
        .collect()
}

/// Adds one `PcapSource` per input file, `rx{i}` with receive interface `i`, sending to
/// `entry`.
pub fn add_pcap_inputs(b: &mut GraphBuilder, inputs: &[PathBuf], entry: &str) {
    for (i, p) in inputs.iter().enumerate() {
        let name = format!("rx{i}");
        b.add(
            name.as_str(),
            // `new`, not `open`: an interface may have an empty input file on purpose.
            PcapSource::new(read_capture(p).unwrap()).with_rx_interface(i as u16),
        )
        .set_next(&name, PcapSourceNext::Out, entry);
    }
}

/// The whole pcap-in, pcap-out run of a forwarder: writes `per_port` as one input pcap per
/// receive interface ([`write_inputs`]), builds a graph of one `PcapSource` per file sending
/// to `entry`, the forwarder's nodes (`add` adds them and returns the name of its transmit
/// node) and a [`PortPcapSink`] of `tx_ports` interfaces there, runs it dry and returns the
/// graph (for its counters) and the packets of each output pcap.
pub fn run_through_pcaps(
    dir: &TestDir,
    per_port: &[Vec<Vec<u8>>],
    vector_size: usize,
    pool: pktvec_packet::PoolConfig,
    entry: &str,
    tx_ports: usize,
    add: impl FnOnce(&mut GraphBuilder) -> String,
) -> (Graph, Vec<Vec<Vec<u8>>>) {
    let inputs = write_inputs(dir, per_port);
    let mut b = GraphBuilder::new(pktvec_graph::GraphConfig {
        vector_size,
        ..pktvec_graph::GraphConfig::default()
    });
    add_pcap_inputs(&mut b, &inputs, entry);
    let tx = add(&mut b);
    b.add(tx.as_str(), PortPcapSink::create(dir, tx_ports));
    let mut g = b
        .build(pktvec_packet::BufferPool::new(pool).unwrap())
        .unwrap();
    let outputs = run_and_read(&mut g, &tx);
    (g, outputs)
}

/// Runs the graph dry, completes the output pcaps and reads them back (port order).
pub fn run_and_read(g: &mut Graph, tx: &str) -> Vec<Vec<Vec<u8>>> {
    g.run_until_idle();
    let sink = g.node_mut::<PortPcapSink>(tx).unwrap();
    assert_eq!((sink.stray, sink.errors), (0, 0));
    sink.finish()
        .iter()
        .map(|p| {
            let c = read_capture(p).unwrap();
            assert!(!c.truncated);
            c.packets
        })
        .collect()
}

/// The Internet checksum of `h`, computed from scratch (RFC 1071).
pub fn inet_checksum(h: &[u8]) -> u16 {
    let mut s: u32 = 0;
    for c in h.chunks(2) {
        s += u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]) as u32;
    }
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

/// Drops by (node, reason) as the graph counted them.
pub fn drops(g: &Graph) -> BTreeMap<(String, String), u64> {
    g.errors()
        .rows
        .iter()
        .map(|r| ((r.node.clone(), r.reason.clone()), r.count))
        .collect()
}

/// Expected drops, from (node, reason) string pairs.
pub fn count_drops(d: &[(&'static str, &'static str)]) -> BTreeMap<(String, String), u64> {
    let mut m = BTreeMap::new();
    for (n, r) in d {
        *m.entry((n.to_string(), r.to_string())).or_insert(0) += 1;
    }
    m
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The packets of one port equal the reference as multisets (same frames, same counts).
pub fn assert_same_frames(what: &str, got: &[Vec<u8>], want: &[Vec<u8>]) {
    let (mut g, mut w) = (got.to_vec(), want.to_vec());
    g.sort();
    w.sort();
    assert_eq!(g.len(), w.len(), "{what}: packet count");
    for (i, (a, b)) in g.iter().zip(&w).enumerate() {
        assert!(
            a == b,
            "{what}: sorted frame {i} differs\n got  {}\n want {}",
            hex(a),
            hex(b)
        );
    }
}

/// If tshark is installed, it reads every file, sees `counts[i]` frames in file `i`, and
/// with IPv4 header checksum validation on finds every IPv4 header checksum good; otherwise
/// the check is skipped. (Payload dissectors are not checked: generated UDP payloads are
/// random bytes that some port-based dissectors call malformed.)
pub fn tshark_check(files: &[PathBuf], counts: &[usize]) {
    let ok = std::process::Command::new("tshark")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("tshark not installed: skipping the tshark check");
        return;
    }
    for (f, &n) in files.iter().zip(counts) {
        let out = tshark(f, &["-T", "fields", "-e", "frame.number"]);
        assert_eq!(out.lines().count(), n, "tshark frames in {}", f.display());
        let csum = ["-o", "ip.check_checksum:TRUE", "-Y"];
        let bad = tshark(
            f,
            &[&csum[..], &["ip && !(ip.checksum.status == 1)"]].concat(),
        );
        assert_eq!(
            bad.lines().count(),
            0,
            "tshark: IPv4 checksum not good in {}: {bad}",
            f.display()
        );
    }
}

fn tshark(f: &Path, args: &[&str]) -> String {
    let o = std::process::Command::new("tshark")
        .arg("-n")
        .arg("-r")
        .arg(f)
        .args(args)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "tshark -r {}: {}",
        f.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}
