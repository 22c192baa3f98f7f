//! The crypto node in a graph: ciphertexts equal an AEAD computed independently with the
//! documented layout, every cipher round-trips, tampering is caught, short packets dropped.

use aes_gcm::aead::{AeadInPlace, KeyInit};
use aes_gcm::Aes128Gcm;
use pktvec_graph::builtin::{NullSink, PacketSource, SourceNext};
use pktvec_graph::{
    next_nodes, Context, Frame, GraphBuilder, GraphConfig, NoError, NoNext, Node, NodeKind, Verdict,
};
use pktvec_nodes::crypto::{Cipher, CryptoConfig, CryptoNext, CryptoNode, Direction};
use pktvec_packet::{BufferPool, PoolConfig};

#[derive(Default)]
struct Recorder(Vec<Vec<u8>>);
impl Node for Recorder {
    type Next = NoNext;
    type Error = NoError;
    const KIND: NodeKind = NodeKind::Sink;
    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        for &bi in frame.buffers() {
            self.0.push(cx.pool().data(bi).to_vec());
        }
        cx.free_frame(frame);
    }
}

next_nodes! {
    /// Flip one ciphertext bit of every 3rd packet.
    pub enum TamperNext { Out = "decrypt" }
}
struct Tamper(u64);
impl Node for Tamper {
    type Next = TamperNext;
    type Error = NoError;
    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        let n = &mut self.0;
        cx.process_packets(frame, |p| {
            *n += 1;
            if *n % 3 == 0 {
                p.data_mut()[20] ^= 1;
            }
            Verdict::Next(TamperNext::Out)
        });
    }
}

fn packets() -> Vec<Vec<u8>> {
    (0..50u8)
        .map(|i| (0..(20 + i as usize * 7)).map(|k| (k as u8) ^ i).collect())
        .collect()
}

fn cfg(cipher: Cipher) -> CryptoConfig {
    let key = match cipher {
        Cipher::Aes128Gcm => vec![0x11; 16],
        _ => vec![0x22; 32],
    };
    CryptoConfig {
        cipher,
        key,
        salt: *b"salt",
        clear_header: 14,
    }
}

#[test]
fn ciphertext_matches_an_independent_aead() {
    let mut b = GraphBuilder::new(GraphConfig::default());
    b.add("src", PacketSource::new(packets()).with_limit(50))
        .add(
            "encrypt",
            CryptoNode::new(cfg(Cipher::Aes128Gcm), Direction::Encrypt).unwrap(),
        )
        .add("out", Recorder::default())
        .set_next("src", SourceNext::Out, "encrypt")
        .set_next("encrypt", CryptoNext::Out, "out");
    let mut g = b
        .build(BufferPool::new(PoolConfig::default()).unwrap())
        .unwrap();
    g.run_until_idle();
    let out = &g.node::<Recorder>("out").unwrap().0;
    assert_eq!(out.len(), 50);
    let aead = Aes128Gcm::new_from_slice(&[0x11; 16]).unwrap();
    for (i, (got, orig)) in out.iter().zip(packets()).enumerate() {
        let seq = i as u64 + 1;
        let mut nonce = *b"salt\0\0\0\0\0\0\0\0";
        nonce[4..].copy_from_slice(&seq.to_be_bytes());
        let mut msg = orig[14..].to_vec();
        let tag = aead
            .encrypt_in_place_detached(aes_gcm::Nonce::from_slice(&nonce), &orig[..14], &mut msg)
            .unwrap();
        let mut want = orig[..14].to_vec();
        want.extend_from_slice(&msg);
        want.extend_from_slice(&seq.to_be_bytes());
        want.extend_from_slice(&tag);
        assert_eq!(got, &want, "packet {i}");
    }
}

#[test]
fn every_cipher_round_trips_and_tampering_is_caught() {
    for cipher in [
        Cipher::Aes128Gcm,
        Cipher::Aes256Gcm,
        Cipher::ChaCha20Poly1305,
    ] {
        let mut pkts = packets();
        pkts.push(vec![1; 5]); // shorter than the clear header
        let mut b = GraphBuilder::new(GraphConfig {
            vector_size: 16,
            ..GraphConfig::default()
        });
        b.add("src", PacketSource::new(pkts.clone()).with_limit(51))
            .add(
                "encrypt",
                CryptoNode::new(cfg(cipher), Direction::Encrypt).unwrap(),
            )
            .add("tamper", Tamper(0))
            .add(
                "decrypt",
                CryptoNode::new(cfg(cipher), Direction::Decrypt).unwrap(),
            )
            .add("out", Recorder::default())
            .set_next("src", SourceNext::Out, "encrypt")
            .set_next("encrypt", CryptoNext::Out, "tamper")
            .set_next("decrypt", CryptoNext::Out, "out");
        let mut g = b
            .build(BufferPool::new(PoolConfig::default()).unwrap())
            .unwrap();
        g.run_until_idle();
        let out = &g.node::<Recorder>("out").unwrap().0;
        let errors = g.errors();
        assert_eq!(
            errors.count("encrypt", "packet too short for the crypto layout"),
            1
        );
        assert_eq!(
            errors.count("decrypt", "authentication failed"),
            16,
            "{cipher:?}"
        );
        assert_eq!(out.len(), 50 - 16);
        // Untampered packets come back identical, in order.
        let kept: Vec<Vec<u8>> = pkts[..50]
            .iter()
            .enumerate()
            .filter(|(i, _)| (i + 1) % 3 != 0)
            .map(|(_, p)| p.clone())
            .collect();
        assert_eq!(out, &kept);
        assert!(g.conservation().is_balanced());
    }
}

#[test]
fn wrong_key_lengths_are_errors() {
    let mut c = cfg(Cipher::Aes256Gcm);
    c.key.truncate(16);
    let e = CryptoNode::new(c, Direction::Encrypt).err().unwrap();
    assert!(e.to_string().contains("16-byte key"));
    let _ = NullSink;
}
