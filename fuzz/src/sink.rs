//! The checking sink that stands in for the transmit node: it records every frame the
//! forwarder transmits (tx interface and bytes, normalized), frees the buffers, and after
//! the run compares the record with the reference model's expectation.

use crate::hex;
use crate::model::Expect;
use crate::synth::ones_sum;
use pktvec::graph::{Context, Frame, NoError, NoNext, Node, NodeKind};
use pktvec::nodes::crypto::CryptoNode;
use std::collections::HashMap;
use std::fmt::Write as _;

/// How the sink normalizes a transmitted frame before recording it.
pub enum Normalize {
    /// As it is.
    None,
    /// IPv4 frames (EtherType 0x0800 at offset 12): the header checksum must verify
    /// (RFC 1071, panics otherwise) and is zeroed.
    Ip4Checksum,
    /// Decrypted (and its tag checked, panics otherwise) with this node's key.
    Decrypt(Box<CryptoNode>),
}

/// The sink.
pub struct CheckSink {
    norm: Normalize,
    seen: HashMap<(u16, Vec<u8>), u32>,
    /// Frames transmitted since the last [`finish`](Self::finish).
    pub transmitted: u64,
}

impl CheckSink {
    /// A sink that normalizes frames with `norm`.
    pub fn new(norm: Normalize) -> Self {
        CheckSink {
            norm,
            seen: HashMap::new(),
            transmitted: 0,
        }
    }

    /// Compares what was transmitted with `e` and forgets it; panics with both sides on
    /// any difference (with `complete` false, only on frames transmitted more often than
    /// expected, not on missing ones). `what` names the input for the message.
    pub fn finish(&mut self, e: &Expect, complete: bool, what: &dyn Fn() -> String) {
        let mut bad = String::new();
        for (k, &n) in &self.seen {
            match e.map.get(k) {
                Some(&(_, max)) if n <= max => {}
                Some(&(min, max)) => {
                    let _ = writeln!(
                        bad,
                        "  transmitted {n} times (expected {min}..={max}) on {}: {}",
                        k.0,
                        hex(&k.1)
                    );
                }
                None => {
                    let _ = writeln!(
                        bad,
                        "  transmitted {n} times, not expected, on {}: {}",
                        k.0,
                        hex(&k.1)
                    );
                }
            }
        }
        for (k, &(min, max)) in &e.map {
            let n = self.seen.get(k).copied().unwrap_or(0);
            if complete && n < min {
                let _ = writeln!(
                    bad,
                    "  missing: transmitted {n} times (expected {min}..={max}) on {}: {}",
                    k.0,
                    hex(&k.1)
                );
            }
        }
        if !bad.is_empty() {
            panic!(
                "transmitted frames differ from the reference model:\n{bad}input: {}",
                what()
            );
        }
        self.seen.clear();
        self.transmitted = 0;
    }
}

impl Node for CheckSink {
    type Next = NoNext;
    type Error = NoError;
    const KIND: NodeKind = NodeKind::Sink;

    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        for &bi in frame.buffers() {
            let tx = cx.packet(bi).meta().tx_if;
            let bytes = match &mut self.norm {
                Normalize::None => cx.packet(bi).data().to_vec(),
                Normalize::Ip4Checksum => {
                    let mut b = cx.packet(bi).data().to_vec();
                    if b.len() >= 34 && b[12..14] == [0x08, 0x00] {
                        let hl = usize::from(b[14] & 15) * 4;
                        if b[14] >> 4 == 4 && hl >= 20 && 14 + hl <= b.len() {
                            assert_eq!(
                                ones_sum(&b[14..14 + hl]),
                                0xffff,
                                "transmitted IPv4 header checksum does not verify: {}",
                                hex(&b)
                            );
                            b[24] = 0;
                            b[25] = 0;
                        }
                    }
                    b
                }
                Normalize::Decrypt(node) => {
                    let mut p = cx.packet_mut(bi);
                    if let Err(e) = node.open(&mut p) {
                        panic!(
                            "transmitted frame does not decrypt ({e:?}): {}",
                            hex(p.data())
                        );
                    }
                    p.data().to_vec()
                }
            };
            *self.seen.entry((tx, bytes)).or_default() += 1;
            self.transmitted += 1;
        }
        cx.free_frame(frame);
    }
}
