//! Writes the seed corpora: `seed_corpus <pcap-dir> <corpus-dir> [target...]`.
//!
//! Reads every pcap/pcapng under `<pcap-dir>` (recursively, in path order) with
//! `pktvec::io::capture::read_capture`, keeps each distinct Ethernet frame once, and writes
//! for every target (all of them by default) into `<corpus-dir>/<target>/`:
//!
//! * `wire_parse`: one file per frame (the frame itself);
//! * the graph targets: one file per frame in the targets' input format (one raw frame,
//!   receive interface cycling over 0..=3), one file per run of 8 consecutive frames of a
//!   capture, and a set of synthetic-frame inputs that reach every forwarding path;
//!
//! at most [`MAX_PCAP_SEEDS`] frame files and [`MAX_GROUP_SEEDS`] group files per target,
//! frames taken round robin over the captures so small ones are not crowded out. The
//! output is deterministic (names `pcap-NNNNN`, `group-NNNN`, `synth-NNN`; files the
//! fuzzer added are left alone).
//!
//! It is a libFuzzer binary only because `cargo fuzz build` links every binary of the
//! crate with the coverage instrumentation (so it needs libFuzzer's runtime): the work is
//! done in the init hook, which libFuzzer calls before it parses its own flags, and the
//! process exits there.

#![no_main]

use libfuzzer_sys::fuzz_target;
use pktvec_fuzz::encode;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// Frame files per target at most.
const MAX_PCAP_SEEDS: usize = 2500;
/// Group files (8 consecutive frames) per target at most.
const MAX_GROUP_SEEDS: usize = 300;
/// The graph targets (same input format).
const GRAPH_TARGETS: [&str; 6] = [
    "l2fwd",
    "l3fwd",
    "ndnfwd",
    "cryptofwd",
    "ppb_l3fwd",
    "nf_acl",
];

fn captures(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            captures(&p, out);
        } else if matches!(
            p.extension().and_then(|e| e.to_str()),
            Some("pcap" | "pcapng" | "cap")
        ) {
            out.push(p);
        }
    }
}

/// Synthetic-frame parameters (see `pktvec_fuzz::synth`) for a target.
fn synthetic(target: &str) -> Vec<Vec<u8>> {
    let udp = [
        0x30u8, 0x39, 0x00, 0x35, 0x00, 0x10, 0x00, 0x00, 1, 2, 3, 4, 5, 6, 7, 8,
    ];
    let tcp = [
        0x30u8, 0x39, 0x00, 0x50, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x02, 0xff, 0xff, 0, 0, 0, 0,
    ];
    match target {
        "l3fwd" | "ppb_l3fwd" | "nf_acl" => {
            let mut v = Vec::new();
            // kind, ttl, route, host, src, proto, tos, ident, frag, [tags], [opts], [pad], [xor], payload
            for (i, kind) in [0u8, 1, 2, 3, 6, 7, 8, 0x30, 0x32, 0x40, 0x41, 0x80, 0x0a]
                .into_iter()
                .enumerate()
            {
                for (j, ttl) in [64u8, 2, 1].into_iter().enumerate() {
                    let mut p = vec![kind, ttl];
                    p.extend_from_slice(&((i * 37 + j) as u16).to_be_bytes());
                    p.extend_from_slice(&0x0000_1234u32.to_be_bytes());
                    // Sources inside and outside nf_acl's denied 10.0.0.0/12.
                    let src: u32 = if j == 1 { 0x0a01_0203 } else { 0xc633_6401 };
                    p.extend_from_slice(&src.to_be_bytes());
                    p.push(if i % 2 == 0 { 17 } else { 6 });
                    p.push(0);
                    p.extend_from_slice(&(i as u16).to_be_bytes());
                    p.extend_from_slice(&0u16.to_be_bytes());
                    if kind & 2 != 0 {
                        p.extend_from_slice(&[0x00, 0x64]);
                    }
                    if kind & 6 == 6 {
                        p.extend_from_slice(&[0x00, 0xc8]);
                    }
                    if kind & 9 == 8 {
                        p.extend_from_slice(&[1, 0x94, 0x04, 0x00, 0x00]);
                    }
                    if kind & 0x40 != 0 {
                        p.push(6);
                    }
                    if kind & 0x80 != 0 {
                        p.extend_from_slice(&[0, 1]);
                    }
                    p.extend_from_slice(if i % 2 == 0 { &udp[..] } else { &tcp[..] });
                    v.push(p);
                }
            }
            v
        }
        "l2fwd" => (0u8..16)
            .map(|k| {
                let mut p = vec![k | (k << 4 & 0x80), k * 5, k * 7 + 1];
                p.extend_from_slice(&[2, 0, 0, 0, 0, 9]);
                p.extend_from_slice(&[0x08, 0x00]);
                p.extend_from_slice(&udp);
                p
            })
            .collect(),
        "ndnfwd" => (0u8..8)
            .map(|k| {
                let mut p = vec![k & 3];
                if k & 2 != 0 {
                    p.extend_from_slice(&[0, 10]);
                }
                p.extend_from_slice(&u16::from(k * 11).to_be_bytes());
                p.push(k % 4);
                for c in 0..k % 4 {
                    p.push(3 + c);
                    p.extend_from_slice(&b"seg00001"[..usize::from(3 + c)]);
                }
                p.extend_from_slice(&[0xde, 0xad, 0xbe, 0xef]);
                p
            })
            .collect(),
        // The record's own frame (byte 0), then 3-byte edits, a last byte cutting it.
        "synth_pipelines" => vec![
            vec![0],
            vec![0, 0, 19, 2],
            vec![0, 0, 12, 0x08, 0, 13, 0x00],
            vec![0, 0, 58, 0xff, 0, 59, 0xff],
            vec![0, 60],
            vec![0, 0, 22, 0],
        ],
        _ => Vec::new(),
    }
}

fn write(dir: &Path, name: String, bytes: &[u8]) {
    let p = dir.join(name);
    if let Err(e) = std::fs::write(&p, bytes) {
        eprintln!("seed_corpus: {}: {e}", p.display());
        std::process::exit(1);
    }
}

fn seed(pcap_dir: &Path, corpus: &Path, targets: &[String]) {
    let mut files = Vec::new();
    captures(pcap_dir, &mut files);
    // Per capture, its distinct frames (a frame seen in an earlier capture is skipped).
    let mut seen = HashSet::new();
    let mut per_file: Vec<Vec<Vec<u8>>> = Vec::new();
    for f in &files {
        match pktvec::io::capture::read_capture(f) {
            Ok(c) => per_file.push(
                c.packets
                    .into_iter()
                    .filter(|p| seen.insert(p.clone()))
                    .collect(),
            ),
            Err(e) => eprintln!("seed_corpus: skipped {}: {e}", f.display()),
        }
    }
    // Round robin over the captures.
    let mut frames: Vec<&[u8]> = Vec::new();
    let longest = per_file.iter().map(Vec::len).max().unwrap_or(0);
    'rr: for i in 0..longest {
        for f in &per_file {
            if let Some(p) = f.get(i) {
                frames.push(p);
                if frames.len() == MAX_PCAP_SEEDS {
                    break 'rr;
                }
            }
        }
    }
    let groups: Vec<&[Vec<u8>]> = per_file
        .iter()
        .flat_map(|f| f.chunks(8).take(8))
        .filter(|g| g.len() > 1)
        .take(MAX_GROUP_SEEDS)
        .collect();
    for t in targets {
        let dir = corpus.join(t);
        if let Err(e) = std::fs::create_dir_all(&dir) {
            eprintln!("seed_corpus: {}: {e}", dir.display());
            std::process::exit(1);
        }
        let mut n = 0;
        if t == "wire_parse" {
            for (i, f) in frames.iter().enumerate() {
                write(&dir, format!("pcap-{i:05}"), f);
            }
            n += frames.len();
        } else {
            for (i, f) in frames.iter().enumerate() {
                // b0: variant on every 4th, injection on every 3rd; b1: vector size cycles;
                // b2: no pool pressure, the batch size cycles (ppb_l3fwd).
                let b0 = (u8::from(i % 4 == 3) << 5) | (u8::from(i % 3 == 2) << 7);
                let b1 = (i % 8) as u8;
                write(
                    &dir,
                    format!("pcap-{i:05}"),
                    &encode(b0, b1, (i % 4) as u8, &[((i % 4) as u8, false, f)]),
                );
            }
            for (i, g) in groups.iter().enumerate() {
                let fr: Vec<(u8, bool, &[u8])> = g
                    .iter()
                    .enumerate()
                    .map(|(k, p)| (((i + k) % 4) as u8, false, &p[..]))
                    .collect();
                let b0 = (u8::from(i % 2 == 1) << 5) | (u8::from(i % 3 == 0) << 6);
                write(
                    &dir,
                    format!("group-{i:04}"),
                    &encode(b0, (i % 8) as u8, (i % 4) as u8, &fr),
                );
            }
            n += frames.len() + groups.len();
            let syn = synthetic(t);
            for (i, p) in syn.iter().enumerate() {
                let b0 = (u8::from(i % 2 == 1) << 5) | (u8::from(i % 5 == 4) << 7);
                write(
                    &dir,
                    format!("synth-{i:03}"),
                    &encode(b0, 0, (i % 4) as u8, &[((i % 4) as u8, true, p)]),
                );
            }
            // All synthetic frames of the target in one input, at a few vector sizes.
            if !syn.is_empty() {
                for (k, b1) in [0u8, 1, 3, 6].into_iter().enumerate() {
                    let fr: Vec<(u8, bool, &[u8])> = syn
                        .iter()
                        .enumerate()
                        .map(|(i, p)| (((i + k) % 4) as u8, true, &p[..]))
                        .collect();
                    write(&dir, format!("synth-all-{k}"), &encode(0, b1, k as u8, &fr));
                }
            }
            n += syn.len();
        }
        println!("seed_corpus: {t}: {n} files in {}", dir.display());
    }
}

/// The seeding, then exit (so libFuzzer never starts).
fn seed_main() {
    {
        let args: Vec<String> = std::env::args().collect();
        if args.len() < 3 || args[1].starts_with('-') {
            eprintln!(
                "usage: seed_corpus <pcap-dir> <corpus-dir> [target...]\n\
                 (writes seed corpora for the fuzz targets; targets: wire_parse {})",
                GRAPH_TARGETS.join(" ")
            );
            std::process::exit(2);
        }
        let mut targets: Vec<String> = args[3..].to_vec();
        if targets.is_empty() {
            targets.push("wire_parse".into());
            targets.extend(GRAPH_TARGETS.iter().map(|t| t.to_string()));
        }
        seed(Path::new(&args[1]), Path::new(&args[2]), &targets);
    }
    std::process::exit(0);
}

fuzz_target!(init: seed_main(), |_data: &[u8]| {});
