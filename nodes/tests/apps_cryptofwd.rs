//! cryptofwd (`pktvec_nodes::apps::cryptofwd`) end to end through pcap files: generated
//! frames (64–1518 bytes, malformed ones and runts included) plus frames too large for the
//! trailer, on three receive interfaces (0 and 1 are a cross-connected pair, 2 has no peer).
//! Every output frame is opened here with an independent AEAD (the documented layout: clear
//! Ethernet header as AAD, nonce = salt ‖ sequence number, 16-byte tag) and must decrypt to
//! an input frame of the peer interface; sequence numbers are unique; every input is
//! accounted for, and in = out + drops by reason. With `verify`, the output is the input.

mod apps_common;

use aes_gcm::aead::{AeadInPlace, KeyInit};
use aes_gcm::Aes128Gcm;
use apps_common::*;

use pktvec_io::generator::Generator;
use pktvec_io::profile::TrafficProfile;
use pktvec_nodes::apps::cryptofwd::{Cryptofwd, CryptofwdConfig};
use pktvec_nodes::crypto::Cipher;
use pktvec_packet::PoolConfig;
use std::collections::BTreeSet;

const RX_PORTS: usize = 3; // 0 <-> 1; 2 has no peer
const DATA_ROOM: usize = 2048;

fn inputs(seed: u64) -> Vec<Vec<Vec<u8>>> {
    let profile = TrafficProfile::from_toml(&format!(
        "seed = {seed}\n[mix]\nipv4 = 3.0\nipv6 = 1.0\narp = 0.2\nmalformed = 1.0\n[flows]\ncount = 200\n[sizes]\nuniform = {{ min = 64, max = 1518 }}\n"
    ))
    .unwrap();
    let mut gen = Generator::builder(profile).build().unwrap();
    let mut per_port = vec![Vec::new(); RX_PORTS];
    for i in 0..1500 {
        per_port[i % RX_PORTS].push(gen.next_packet().1.to_vec());
    }
    for p in per_port.iter_mut() {
        // The largest frame with room for the trailer, and two without.
        p.push((0..DATA_ROOM - 24).map(|k| k as u8).collect());
        p.push(vec![0x5a; DATA_ROOM - 23]);
        p.push(vec![0xa5; DATA_ROOM]);
        p.push(vec![1; 13]); // shorter than the clear header
    }
    per_port
}

fn expected_drop(frame: &[u8], rx: usize) -> Option<(&'static str, &'static str)> {
    if frame.len() < 14 {
        Some(("crypto", "packet too short for the crypto layout"))
    } else if frame.len() + 24 > DATA_ROOM {
        Some(("crypto", "no tailroom for the crypto trailer"))
    } else if rx >= 2 {
        Some(("l2-xconnect", "no cross-connect for rx interface"))
    } else {
        None
    }
}

fn run(seed: u64, vector_size: usize, verify: bool) {
    let cfg = CryptofwdConfig {
        verify,
        ..CryptofwdConfig::default()
    };
    assert_eq!(cfg.cipher, Cipher::Aes128Gcm);
    let key = cfg.crypto_config().key;
    let salt = cfg.salt;
    let app = Cryptofwd::new(cfg).unwrap();
    let per_port = inputs(seed);

    let dir = TestDir::new(&format!("apps-cryptofwd-{seed}-{vector_size}-{verify}"));
    let (g, outputs) = run_through_pcaps(
        &dir,
        &per_port,
        vector_size,
        PoolConfig {
            buffers: 4096,
            data_room: DATA_ROOM as u16,
            ..PoolConfig::default()
        },
        app.entry(),
        2,
        |b| app.add_to(b).unwrap().output_to_tx.to,
    );

    // Reference: packets of interface rx leave on rx ^ 1, unless dropped.
    let mut want: Vec<Vec<Vec<u8>>> = vec![Vec::new(); 2];
    let mut want_drops = Vec::new();
    let mut sealed = 0u64;
    for (rx, pkts) in per_port.iter().enumerate() {
        for f in pkts {
            match expected_drop(f, rx) {
                Some(d) => {
                    sealed += (d.0 == "l2-xconnect") as u64;
                    want_drops.push(d);
                }
                None => {
                    sealed += 1;
                    want[rx ^ 1].push(f.clone());
                }
            }
        }
    }
    let aead = Aes128Gcm::new_from_slice(&key).unwrap();
    let mut seqs = BTreeSet::new();
    for (port, frames) in outputs.iter().enumerate() {
        let got: Vec<Vec<u8>> = if verify {
            frames.clone()
        } else {
            frames
                .iter()
                .map(|f| {
                    assert!(f.len() >= 14 + 24, "port {port}: {} bytes", f.len());
                    let (body, trailer) = f.split_at(f.len() - 24);
                    let seq = u64::from_be_bytes(trailer[..8].try_into().unwrap());
                    assert!(seqs.insert(seq), "sequence number {seq} twice");
                    let mut nonce = [0u8; 12];
                    nonce[..4].copy_from_slice(&salt);
                    nonce[4..].copy_from_slice(&seq.to_be_bytes());
                    let (aad, ct) = body.split_at(14);
                    let mut pt = ct.to_vec();
                    aead.decrypt_in_place_detached(
                        aes_gcm::Nonce::from_slice(&nonce),
                        aad,
                        &mut pt,
                        aes_gcm::Tag::from_slice(&trailer[8..]),
                    )
                    .unwrap_or_else(|_| panic!("port {port}: seq {seq} does not authenticate"));
                    if pt.len() >= 32 {
                        assert_ne!(pt, ct, "payload was not encrypted");
                    }
                    [aad, &pt[..]].concat()
                })
                .collect()
        };
        assert_same_frames(
            &format!("cryptofwd port {port} (seed {seed}, V {vector_size}, verify {verify})"),
            &got,
            &want[port],
        );
    }
    if !verify {
        // Sequence numbers count every sealed packet, those xconnect dropped included.
        assert!(seqs.iter().all(|&s| (1..=sealed).contains(&s)));
    }
    let want_drops = count_drops(&want_drops);
    assert_eq!(drops(&g), want_drops, "drops by reason");
    let c = g.conservation();
    let n_in: u64 = per_port.iter().map(|p| p.len() as u64).sum();
    let n_out: u64 = outputs.iter().map(|o| o.len() as u64).sum();
    assert!(c.is_balanced(), "{c}");
    assert_eq!((c.input, c.output), (n_in, n_out));
    assert_eq!(c.dropped, want_drops.values().sum::<u64>());
    assert_eq!((c.in_flight, c.buffers_in_use), (0, 0));
    assert!(n_out > 900, "{n_out} forwarded");
}

#[test]
fn cryptofwd_pcap_decrypts_to_the_input() {
    run(51, 256, false);
}

#[test]
fn cryptofwd_pcap_decrypts_to_the_input_small_vectors() {
    run(52, 3, false);
}

#[test]
fn cryptofwd_verify_pcap_equals_the_input() {
    run(53, 64, true);
}
