//! `cryptofwd`, L2 forwarding with authenticated encryption of every payload, like DPDK's
//! `l2fwd-crypto`: `crypto (encrypt) [→ verify (decrypt)] → l2-xconnect → interface-output
//! → tx`. Interfaces are cross-connected in pairs (0↔1, 2↔3, …); the Ethernet header stays
//! in clear (authenticated), the rest is encrypted and followed by an 8-byte sequence number
//! and a 16-byte tag (layout in [`crate::crypto`]).
//!
//! ```
//! use pktvec_graph::builtin::{NullSink, PacketSource, SourceNext};
//! use pktvec_graph::{GraphBuilder, GraphConfig};
//! use pktvec_nodes::apps::cryptofwd::{Cryptofwd, CryptofwdConfig};
//! use pktvec_nodes::crypto::Cipher;
//! use pktvec_packet::BufferPool;
//!
//! let cfg: CryptofwdConfig = serde_json::from_str(r#"{ "cipher": "chacha20-poly1305", "verify": true }"#)?;
//! assert_eq!(cfg.cipher, Cipher::ChaCha20Poly1305);
//! let app = Cryptofwd::new(cfg)?;
//! let mut b = GraphBuilder::new(GraphConfig::default());
//! b.add("input", PacketSource::new(vec![vec![7u8; 64], vec![1u8; 8]]).with_limit(10))
//!     .set_next("input", SourceNext::Out, app.entry());
//! let nodes = app.add_to(&mut b)?;
//! assert_eq!(nodes.nodes, ["crypto", "verify", "l2-xconnect", "interface-output"]);
//! b.add("tx", NullSink);
//! let mut g = b.build(BufferPool::new(Default::default())?)?;
//! g.run_until_idle();
//! assert_eq!(g.runtime().row("tx").unwrap().packets, 5); // every 64-byte frame
//! assert_eq!(g.errors().count("crypto", "packet too short for the crypto layout"), 5);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use super::{default_tx, AppError, Edge};
use crate::crypto::{Cipher, CryptoConfig, CryptoNext, CryptoNode, Direction, KeyLengthError};
use crate::output::{InterfaceOutput, OutputNext};
use crate::xconnect::{XConnect, XConnectNext};
use pktvec_graph::GraphBuilder;
use serde::{Deserialize, Serialize};

/// Name of the encrypting `crypto` node (the entry).
pub const CRYPTO: &str = "crypto";
/// Name of the decrypting node (with `verify`).
pub const VERIFY: &str = "verify";
/// Name of `l2-xconnect`.
pub const L2_XCONNECT: &str = "l2-xconnect";
/// Name of `interface-output`.
pub const INTERFACE_OUTPUT: &str = "interface-output";

/// Settings of the crypto forwarder.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CryptofwdConfig {
    /// AEAD algorithm.
    pub cipher: Cipher,
    /// Key; `None` = `0x42` repeated to the cipher's key length.
    pub key: Option<Vec<u8>>,
    /// First 4 bytes of every nonce.
    pub salt: [u8; 4],
    /// Bytes left in clear (authenticated): the Ethernet header.
    pub clear_header: usize,
    /// Decrypt again after encrypting (checks every tag; doubles the work).
    pub verify: bool,
    /// Interfaces, cross-connected in pairs (at least 2 are used).
    pub ports: u16,
    /// Name of the transmit node (added by the caller).
    pub tx: String,
}

impl Default for CryptofwdConfig {
    fn default() -> Self {
        CryptofwdConfig {
            cipher: Cipher::Aes128Gcm,
            key: None,
            salt: *b"pktv",
            clear_header: 14,
            verify: false,
            ports: 2,
            tx: default_tx(),
        }
    }
}

impl CryptofwdConfig {
    /// The crypto nodes' configuration (the key resolved).
    ///
    /// ```
    /// use pktvec_nodes::apps::cryptofwd::CryptofwdConfig;
    /// assert_eq!(CryptofwdConfig::default().crypto_config().key, vec![0x42; 16]);
    /// ```
    pub fn crypto_config(&self) -> CryptoConfig {
        CryptoConfig {
            cipher: self.cipher,
            key: self
                .key
                .clone()
                .unwrap_or_else(|| vec![0x42; self.cipher.key_len()]),
            salt: self.salt,
            clear_header: self.clear_header,
        }
    }
}

/// The crypto forwarder: [`new`](Self::new) checks the key against the cipher,
/// [`add_to`](Self::add_to) adds the nodes and returns their arcs ([`CryptofwdNodes`]).
/// A frame leaves with its payload encrypted, an 8-byte sequence number and a 16-byte tag
/// appended, on the interface cross-connected to the one it came in on.
///
/// ```
/// use pktvec_graph::builtin::{NullSink, PacketSource, SourceNext};
/// use pktvec_graph::{GraphBuilder, GraphConfig};
/// use pktvec_nodes::apps::cryptofwd::{Cryptofwd, CryptofwdConfig};
/// use pktvec_nodes::crypto::Cipher;
/// use pktvec_nodes::output::InterfaceOutput;
/// use pktvec_packet::BufferPool;
///
/// let app = Cryptofwd::new(CryptofwdConfig {
///     cipher: Cipher::Aes256Gcm,
///     key: Some(vec![7; 32]),
///     ..CryptofwdConfig::default()
/// })?;
/// let mut b = GraphBuilder::new(GraphConfig::default());
/// b.add("input", PacketSource::new(vec![vec![1u8; 100]]).with_limit(10))
///     .set_next("input", SourceNext::Out, app.entry());
/// let nodes = app.add_to(&mut b)?;
/// b.add(nodes.output_to_tx.to.as_str(), NullSink);
/// let mut g = b.build(BufferPool::new(Default::default())?)?;
/// g.run_until_idle();
/// // In on interface 0, out on 1, 24 bytes longer.
/// let out = g.node::<InterfaceOutput>("interface-output").unwrap();
/// assert_eq!((out.counters()[1].packets, out.counters()[1].bytes), (10, 10 * 124));
///
/// // A key of the wrong length is refused.
/// assert!(Cryptofwd::new(CryptofwdConfig { key: Some(vec![7; 5]), ..Default::default() }).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Cryptofwd {
    cfg: CryptofwdConfig,
}

/// The nodes [`Cryptofwd::add_to`] added and its arcs.
#[derive(Clone, Debug)]
pub struct CryptofwdNodes {
    /// Node the input sends to (`crypto`).
    pub entry: &'static str,
    /// Every node added, in path order.
    pub nodes: Vec<&'static str>,
    /// `crypto → verify` with `verify`, else `crypto → l2-xconnect`.
    pub crypto_out: Edge<CryptoNext>,
    /// `l2-xconnect → interface-output`.
    pub xconnect_to_output: Edge<XConnectNext>,
    /// `interface-output → tx`.
    pub output_to_tx: Edge<OutputNext>,
}

impl Cryptofwd {
    /// Checks the key against the cipher.
    pub fn new(cfg: CryptofwdConfig) -> Result<Self, AppError> {
        let c = cfg.crypto_config();
        if c.key.len() != c.cipher.key_len() {
            return Err(KeyLengthError {
                cipher: c.cipher,
                len: c.key.len(),
            }
            .into());
        }
        Ok(Cryptofwd { cfg })
    }

    /// The configuration.
    pub fn config(&self) -> &CryptofwdConfig {
        &self.cfg
    }

    /// Interfaces used (`ports`, at least 2).
    pub fn ports(&self) -> u16 {
        self.cfg.ports.max(2)
    }

    /// The node the caller's input must send to.
    pub fn entry(&self) -> &'static str {
        CRYPTO
    }

    /// Adds the crypto node(s), `l2-xconnect` and `interface-output` (whose transmit arc
    /// leads to `tx`, which the caller adds).
    pub fn add_to(&self, b: &mut GraphBuilder) -> Result<CryptofwdNodes, AppError> {
        let c = self.cfg.crypto_config();
        let ports = self.ports();
        let tx = self.cfg.tx.as_str();
        let mut nodes = vec![CRYPTO];
        b.add(CRYPTO, CryptoNode::new(c.clone(), Direction::Encrypt)?);
        let crypto_out = if self.cfg.verify {
            nodes.push(VERIFY);
            b.add(VERIFY, CryptoNode::new(c, Direction::Decrypt)?)
                .set_next(CRYPTO, CryptoNext::Out, VERIFY)
                .set_next(VERIFY, CryptoNext::Out, L2_XCONNECT);
            Edge::new(CRYPTO, CryptoNext::Out, VERIFY)
        } else {
            b.set_next(CRYPTO, CryptoNext::Out, L2_XCONNECT);
            Edge::new(CRYPTO, CryptoNext::Out, L2_XCONNECT)
        };
        b.add(L2_XCONNECT, XConnect::pairs(ports))
            .add(INTERFACE_OUTPUT, InterfaceOutput::new(ports as usize))
            .set_next(L2_XCONNECT, XConnectNext::Output, INTERFACE_OUTPUT)
            .set_next(INTERFACE_OUTPUT, OutputNext::Tx, tx);
        nodes.extend([L2_XCONNECT, INTERFACE_OUTPUT]);
        Ok(CryptofwdNodes {
            entry: CRYPTO,
            nodes,
            crypto_out,
            xconnect_to_output: Edge::new(L2_XCONNECT, XConnectNext::Output, INTERFACE_OUTPUT),
            output_to_tx: Edge::new(INTERFACE_OUTPUT, OutputNext::Tx, tx),
        })
    }
}
