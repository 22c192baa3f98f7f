//! `crypto`: authenticated encryption of each packet's payload with a RustCrypto AEAD
//! (AES-128-GCM, AES-256-GCM or ChaCha20-Poly1305), like DPDK's `l2fwd-crypto`.
//!
//! Layout after encryption: `[clear header (authenticated, not encrypted)] [ciphertext]
//! [8-byte sequence number] [16-byte tag]`. The nonce is a 4-byte salt from the key
//! configuration followed by the sequence number, so a decrypting node with the same key
//! and salt recovers the packet; a packet whose tag does not verify is dropped with a reason.
//! Encryption and decryption are in place (no copy, no allocation).
//!
//! ```
//! use pktvec_nodes::crypto::{Cipher, CryptoConfig, CryptoNode, Direction};
//! use pktvec_packet::BufferPool;
//! let cfg = CryptoConfig { cipher: Cipher::Aes128Gcm, key: vec![7; 16], salt: [1, 2, 3, 4], clear_header: 14 };
//! let mut enc = CryptoNode::new(cfg.clone(), Direction::Encrypt)?;
//! let mut dec = CryptoNode::new(cfg, Direction::Decrypt)?;
//! let mut pool = BufferPool::new(Default::default())?;
//! let original: Vec<u8> = (0..100).collect();
//! let bi = pool.alloc_with(&original)?;
//! assert!(enc.seal(&mut pool.packet_mut(bi)).is_ok());
//! assert_eq!(pool.data(bi).len(), 100 + 24);
//! assert_ne!(&pool.data(bi)[14..100], &original[14..]);
//! assert!(dec.open(&mut pool.packet_mut(bi)).is_ok());
//! assert_eq!(pool.data(bi), &original[..]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use aes_gcm::aead::{AeadInPlace, KeyInit};
use aes_gcm::{Aes128Gcm, Aes256Gcm};
use chacha20poly1305::ChaCha20Poly1305;
use pktvec_graph::{next_nodes, node_errors, Context, Frame, Node, Verdict};
use pktvec_packet::{Packet, PacketMut};
use std::fmt::Write as _;

/// Bytes added by encryption: sequence number and tag.
pub const TRAILER: usize = 8 + 16;

/// The AEAD algorithm (serde: `"aes-128-gcm"`, `"aes-256-gcm"`, `"chacha20-poly1305"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Cipher {
    /// AES-128-GCM (16-byte key).
    #[serde(rename = "aes-128-gcm")]
    Aes128Gcm,
    /// AES-256-GCM (32-byte key).
    #[serde(rename = "aes-256-gcm")]
    Aes256Gcm,
    /// ChaCha20-Poly1305 (32-byte key).
    #[serde(rename = "chacha20-poly1305")]
    ChaCha20Poly1305,
}

impl Cipher {
    /// Key length in bytes.
    ///
    /// ```
    /// assert_eq!(pktvec_nodes::crypto::Cipher::ChaCha20Poly1305.key_len(), 32);
    /// ```
    pub fn key_len(self) -> usize {
        match self {
            Cipher::Aes128Gcm => 16,
            Cipher::Aes256Gcm | Cipher::ChaCha20Poly1305 => 32,
        }
    }
}

/// Encrypt or decrypt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Seal: encrypt and append sequence number and tag.
    Encrypt,
    /// Open: verify, decrypt and remove them.
    Decrypt,
}

/// Key material and layout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CryptoConfig {
    /// Algorithm.
    pub cipher: Cipher,
    /// Key (16 bytes for AES-128-GCM, 32 otherwise).
    pub key: Vec<u8>,
    /// First 4 bytes of every nonce.
    pub salt: [u8; 4],
    /// Bytes at the start of the packet left in clear but authenticated (e.g. 14 for the
    /// Ethernet header).
    pub clear_header: usize,
}

/// The key length is wrong for the cipher.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyLengthError {
    /// Cipher.
    pub cipher: Cipher,
    /// Length given.
    pub len: usize,
}

impl std::fmt::Display for KeyLengthError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "a {}-byte key does not fit {:?}", self.len, self.cipher)
    }
}
impl std::error::Error for KeyLengthError {}

enum Engine {
    Aes128(Box<Aes128Gcm>),
    Aes256(Box<Aes256Gcm>),
    ChaCha(Box<ChaCha20Poly1305>),
}

next_nodes! {
    /// Arcs of `crypto`.
    pub enum CryptoNext {
        /// Processed packets.
        Out = "interface-output",
    }
}

node_errors! {
    /// Drop reasons of `crypto`.
    pub enum CryptoError {
        /// Shorter than the clear header (or, decrypting, than header + trailer).
        TooShort = "packet too short for the crypto layout",
        /// No room to append the trailer.
        NoTailroom = "no tailroom for the crypto trailer",
        /// Tag does not verify.
        AuthFailed = "authentication failed",
    }
}

/// The `crypto` node.
pub struct CryptoNode {
    engine: Engine,
    direction: Direction,
    salt: [u8; 4],
    clear: usize,
    seq: u64,
}

impl CryptoNode {
    /// A node with this key and direction.
    pub fn new(cfg: CryptoConfig, direction: Direction) -> Result<Self, KeyLengthError> {
        let bad = || KeyLengthError {
            cipher: cfg.cipher,
            len: cfg.key.len(),
        };
        let engine = match cfg.cipher {
            Cipher::Aes128Gcm => Engine::Aes128(Box::new(
                Aes128Gcm::new_from_slice(&cfg.key).map_err(|_| bad())?,
            )),
            Cipher::Aes256Gcm => Engine::Aes256(Box::new(
                Aes256Gcm::new_from_slice(&cfg.key).map_err(|_| bad())?,
            )),
            Cipher::ChaCha20Poly1305 => Engine::ChaCha(Box::new(
                ChaCha20Poly1305::new_from_slice(&cfg.key).map_err(|_| bad())?,
            )),
        };
        Ok(CryptoNode {
            engine,
            direction,
            salt: cfg.salt,
            clear: cfg.clear_header,
            seq: 0,
        })
    }

    fn nonce(&self, seq: u64) -> [u8; 12] {
        let mut n = [0u8; 12];
        n[..4].copy_from_slice(&self.salt);
        n[4..].copy_from_slice(&seq.to_be_bytes());
        n
    }

    /// Encrypts one packet in place and appends sequence number and tag.
    pub fn seal(&mut self, pkt: &mut PacketMut<'_>) -> Result<(), CryptoError> {
        let len = pkt.len();
        if len < self.clear {
            return Err(CryptoError::TooShort);
        }
        if pkt.append(TRAILER).is_err() {
            return Err(CryptoError::NoTailroom);
        }
        self.seq = self.seq.wrapping_add(1);
        let nonce = self.nonce(self.seq);
        let data = pkt.data_mut();
        let (body, trailer) = data.split_at_mut(len);
        let (aad, msg) = body.split_at_mut(self.clear);
        let n = aes_gcm::Nonce::from_slice(&nonce);
        let tag = match &self.engine {
            Engine::Aes128(c) => c.encrypt_in_place_detached(n, aad, msg),
            Engine::Aes256(c) => c.encrypt_in_place_detached(n, aad, msg),
            Engine::ChaCha(c) => c.encrypt_in_place_detached(n, aad, msg),
        }
        .map_err(|_| CryptoError::TooShort)?;
        trailer[..8].copy_from_slice(&self.seq.to_be_bytes());
        trailer[8..].copy_from_slice(&tag);
        Ok(())
    }

    /// Verifies and decrypts one packet in place and removes the trailer.
    pub fn open(&mut self, pkt: &mut PacketMut<'_>) -> Result<(), CryptoError> {
        let len = pkt.len();
        if len < self.clear + TRAILER {
            return Err(CryptoError::TooShort);
        }
        let body_len = len - TRAILER;
        let data = pkt.data_mut();
        let (body, trailer) = data.split_at_mut(body_len);
        let mut seq = [0u8; 8];
        seq.copy_from_slice(&trailer[..8]);
        let nonce = self.nonce(u64::from_be_bytes(seq));
        let tag = aes_gcm::Tag::from_slice(&trailer[8..]);
        let (aad, msg) = body.split_at_mut(self.clear);
        let n = aes_gcm::Nonce::from_slice(&nonce);
        match &self.engine {
            Engine::Aes128(c) => c.decrypt_in_place_detached(n, aad, msg, tag),
            Engine::Aes256(c) => c.decrypt_in_place_detached(n, aad, msg, tag),
            Engine::ChaCha(c) => c.decrypt_in_place_detached(n, aad, msg, tag),
        }
        .map_err(|_| CryptoError::AuthFailed)?;
        pkt.truncate(body_len);
        Ok(())
    }
}

impl Node for CryptoNode {
    type Next = CryptoNext;
    type Error = CryptoError;

    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        let dir = self.direction;
        cx.process_packets(frame, |p| {
            let r = match dir {
                Direction::Encrypt => self.seal(p),
                Direction::Decrypt => self.open(p),
            };
            match r {
                Ok(()) => Verdict::Next(CryptoNext::Out),
                Err(e) => Verdict::Drop(e),
            }
        });
    }

    fn format_trace(&self, pkt: Packet<'_>, out: &mut String) {
        let _ = write!(
            out,
            "{:?} {} bytes, clear header {}, next sequence {}",
            self.direction,
            pkt.len(),
            self.clear,
            self.seq + 1
        );
    }
}
