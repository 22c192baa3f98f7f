//! `ethernet-input`: parses the Ethernet header and up to two VLAN tags, records the
//! offsets in the metadata, strips the L2 header (the packet then starts at L3, as in VPP)
//! and dispatches by EtherType.
//!
//! ```
//! use pktvec_graph::{builtin::{NullSink, PacketSource, SourceNext}, GraphBuilder, GraphConfig};
//! use pktvec_nodes::ethernet::{EthernetInput, EthernetNext};
//! use pktvec_packet::builder::PacketBuilder;
//! use pktvec_packet::BufferPool;
//! use std::net::Ipv4Addr;
//!
//! let ip4 = PacketBuilder::ethernet([2, 0, 0, 0, 0, 1].into(), [2, 0, 0, 0, 0, 2].into())
//!     .vlan(10)
//!     .ipv4(Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2))
//!     .udp(1, 2)
//!     .build();
//! let mut b = GraphBuilder::new(GraphConfig::default());
//! b.add("src", PacketSource::new(vec![ip4, vec![0u8; 60]]).with_limit(100))
//!     .add("ethernet-input", EthernetInput)
//!     .add("v4", NullSink)
//!     .set_next("src", SourceNext::Out, "ethernet-input");
//! for (arc, to) in [(EthernetNext::Ip4, "v4"), (EthernetNext::Ip6, "drop"), (EthernetNext::Arp, "drop"), (EthernetNext::Ndn, "drop")] {
//!     b.set_next("ethernet-input", arc, to);
//! }
//! let mut g = b.build(BufferPool::new(Default::default())?)?;
//! g.run_until_idle();
//! assert_eq!(g.runtime().row("v4").unwrap().packets, 50);
//! assert_eq!(g.errors().count("ethernet-input", "unknown ethertype"), 50);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use pktvec_graph::{next_nodes, node_errors, Context, Frame, Node, Verdict};
use pktvec_packet::wire::{parse_l2, EtherType, WireError};
use pktvec_packet::{MetaFlags, Packet};
use std::fmt::Write as _;

/// EtherType of NDN over Ethernet.
pub const ETHERTYPE_NDN: EtherType = EtherType(0x8624);

next_nodes! {
    /// Arcs of `ethernet-input`.
    pub enum EthernetNext {
        /// IPv4.
        Ip4 = "ip4-input",
        /// IPv6.
        Ip6 = "ip6-input",
        /// ARP.
        Arp = "arp-input",
        /// NDN (EtherType 0x8624).
        Ndn = "ndn-lookup",
    }
}

node_errors! {
    /// Drop reasons of `ethernet-input`.
    pub enum EthernetError {
        /// Shorter than an Ethernet header or a tag.
        Truncated = "truncated frame",
        /// More than two VLAN tags.
        TooManyVlans = "more than two vlan tags",
        /// No node for this EtherType.
        UnknownEthertype = "unknown ethertype",
    }
}

/// The `ethernet-input` node.
#[derive(Debug, Default, Clone, Copy)]
pub struct EthernetInput;

/// Classifies one frame: records offsets, strips L2, returns the verdict.
///
/// Untagged IPv4/IPv6/ARP/NDN frames (the common case) are classified from one fixed-size
/// view of the first 14 bytes; tagged frames go through [`parse_l2`]. A consistent window
/// of at least 14 bytes ([`PacketMut::head_mut`](pktvec_packet::PacketMut::head_mut)) is
/// two tests; anything else (a short frame, metadata past the buffer) goes through the
/// clamped view, with the same verdicts and edits.
#[inline(always)]
pub fn ethernet_input_one(
    pkt: &mut pktvec_packet::PacketMut<'_>,
) -> Verdict<EthernetNext, EthernetError> {
    match ethernet_input_fast(pkt) {
        Some(v) => v,
        // One call site for every other case (tagged, unknown, short, inconsistent).
        None => ethernet_input_clamped(pkt.reborrow()),
    }
}

/// [`ethernet_input_one`]'s fast path: an untagged IPv4/IPv6/ARP/NDN frame in a
/// consistent window; `None` (and no edit) for anything else.
#[inline(always)]
fn ethernet_input_fast(
    pkt: &mut pktvec_packet::PacketMut<'_>,
) -> Option<Verdict<EthernetNext, EthernetError>> {
    let (m, h) = pkt.head_mut::<14>()?;
    // IPv4 first, compared as the bytes are in memory (no byte swap).
    let next = if [h[12], h[13]] == EtherType::IPV4.0.to_be_bytes() {
        EthernetNext::Ip4
    } else {
        ethernet_other(EtherType(u16::from_be_bytes([h[12], h[13]])))?
    };
    // The window is inside the buffer and holds at least 14 bytes: the same edit as
    // `advance(14)`, without recomputing it.
    let off = m.data_offset;
    m.l2_offset = off;
    m.l3_offset = off + 14;
    m.data_offset = off + 14;
    m.len -= 14;
    m.flags
        .insert(MetaFlags(MetaFlags::L2_VALID.0 | MetaFlags::L3_VALID.0));
    Some(Verdict::Next(next))
}

/// The arc of an EtherType other than IPv4 that `ethernet-input` sends on untagged.
#[inline(always)]
fn ethernet_other(et: EtherType) -> Option<EthernetNext> {
    match et {
        EtherType::IPV6 => Some(EthernetNext::Ip6),
        EtherType::ARP => Some(EthernetNext::Arp),
        ETHERTYPE_NDN => Some(EthernetNext::Ndn),
        _ => None,
    }
}

/// [`ethernet_input_one`] over the clamped window: short frames and metadata that points
/// past the buffer.
#[inline(never)]
fn ethernet_input_clamped(
    mut pkt: pktvec_packet::PacketMut<'_>,
) -> Verdict<EthernetNext, EthernetError> {
    let (m, d) = pkt.split();
    let Some(h) = d.first_chunk::<14>() else {
        return Verdict::Drop(EthernetError::Truncated);
    };
    let next = match EtherType(u16::from_be_bytes([h[12], h[13]])) {
        EtherType::IPV4 => EthernetNext::Ip4,
        EtherType::IPV6 => EthernetNext::Ip6,
        EtherType::ARP => EthernetNext::Arp,
        ETHERTYPE_NDN => EthernetNext::Ndn,
        _ => return ethernet_input_tagged(pkt.reborrow()),
    };
    // `d` is the packet's window (offset and length already clamped to the buffer) and
    // holds at least 14 bytes: the same edit as `advance(14)`, without recomputing it.
    let len = d.len() - 14;
    let off = m.data_offset;
    m.l2_offset = off;
    m.l3_offset = off.wrapping_add(14);
    m.data_offset = off.wrapping_add(14);
    m.len = len as u16;
    m.flags
        .insert(MetaFlags(MetaFlags::L2_VALID.0 | MetaFlags::L3_VALID.0));
    Verdict::Next(next)
}

/// VLAN-tagged or unknown EtherType: the general parser.
#[inline(never)]
fn ethernet_input_tagged(
    mut pkt: pktvec_packet::PacketMut<'_>,
) -> Verdict<EthernetNext, EthernetError> {
    let l2 = match parse_l2(pkt.data()) {
        Ok(l2) => l2,
        Err(WireError::TooManyVlans) => return Verdict::Drop(EthernetError::TooManyVlans),
        Err(_) => return Verdict::Drop(EthernetError::Truncated),
    };
    let next = match l2.ethertype {
        EtherType::IPV4 => EthernetNext::Ip4,
        EtherType::IPV6 => EthernetNext::Ip6,
        EtherType::ARP => EthernetNext::Arp,
        ETHERTYPE_NDN => EthernetNext::Ndn,
        _ => return Verdict::Drop(EthernetError::UnknownEthertype),
    };
    let m = pkt.meta_mut();
    m.l2_offset = m.data_offset;
    m.l3_offset = m.data_offset + l2.l3_offset;
    m.flags.insert(MetaFlags::L2_VALID);
    m.flags.insert(MetaFlags::L3_VALID);
    // parse_l2 guarantees l3_offset <= len.
    let _ = pkt.advance(l2.l3_offset as usize);
    Verdict::Next(next)
}

impl Node for EthernetInput {
    type Next = EthernetNext;
    type Error = EthernetError;

    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        // The fast path in the loop, every other frame after it.
        cx.process_packets_split(frame, ethernet_input_fast, |p| {
            ethernet_input_clamped(p.reborrow())
        });
    }

    fn format_trace(&self, pkt: Packet<'_>, out: &mut String) {
        match parse_l2(pkt.data()) {
            Ok(l2) => {
                let d = pkt.data();
                let mac = |o: usize| {
                    d[o..o + 6]
                        .iter()
                        .map(|b| format!("{b:02x}"))
                        .collect::<Vec<_>>()
                        .join(":")
                };
                let _ = write!(out, "{}: {} -> {}", l2.ethertype, mac(6), mac(0));
                for v in &l2.vlans[..l2.n_vlans as usize] {
                    let _ = write!(out, " vlan {v}");
                }
            }
            Err(e) => {
                let _ = write!(out, "bad frame ({e}), {} bytes", pkt.len());
            }
        }
    }
}

next_nodes! {
    /// Arcs of `ethernet-restore`.
    pub enum EthernetRestoreNext {
        /// Frames with their Ethernet header back.
        Output = "interface-output",
    }
}

node_errors! {
    /// Drop reasons of `ethernet-restore`.
    pub enum EthernetRestoreError {
        /// No Ethernet header was recorded for the packet, or it is gone from the headroom.
        NoL2 = "no l2 header to restore",
    }
}

/// The `ethernet-restore` node: puts back the Ethernet header (and VLAN tags) that
/// `ethernet-input` stripped, unchanged, for forwarders that switch frames by a higher-layer
/// key without rewriting L2 (`ndnfwd`). The header is still in the headroom, so this only
/// moves the data offset back to the recorded `l2_offset`.
///
/// ```
/// use pktvec_graph::Verdict;
/// use pktvec_nodes::ethernet::{ethernet_input_one, ethernet_restore_one, EthernetRestoreNext};
/// use pktvec_packet::BufferPool;
/// let mut frame = vec![0u8; 60];
/// frame[12..14].copy_from_slice(&[0x86, 0x24]); // NDN
/// let mut pool = BufferPool::new(Default::default())?;
/// let bi = pool.alloc_with(&frame)?;
/// assert!(matches!(ethernet_input_one(&mut pool.packet_mut(bi)), Verdict::Next(_)));
/// assert_eq!(pool.data(bi).len(), 46);
/// assert_eq!(ethernet_restore_one(&mut pool.packet_mut(bi)), Verdict::Next(EthernetRestoreNext::Output));
/// assert_eq!(pool.data(bi), &frame[..]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Default, Clone, Copy)]
pub struct EthernetRestore;

/// Restores one packet's L2 header.
#[inline(always)]
pub fn ethernet_restore_one(
    pkt: &mut pktvec_packet::PacketMut<'_>,
) -> Verdict<EthernetRestoreNext, EthernetRestoreError> {
    let m = pkt.meta();
    if !m.flags.contains(MetaFlags::L2_VALID) || m.l2_offset > m.data_offset {
        return Verdict::Drop(EthernetRestoreError::NoL2);
    }
    let n = (m.data_offset - m.l2_offset) as usize;
    match pkt.prepend(n) {
        Ok(_) => Verdict::Next(EthernetRestoreNext::Output),
        Err(_) => Verdict::Drop(EthernetRestoreError::NoL2),
    }
}

impl Node for EthernetRestore {
    type Next = EthernetRestoreNext;
    type Error = EthernetRestoreError;

    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        cx.process_packets(frame, ethernet_restore_one);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pktvec_packet::{BufferPool, PoolConfig};
    use proptest::prelude::*;

    fn run(
        bytes: &[u8],
        f: impl FnOnce(&mut pktvec_packet::PacketMut<'_>) -> Verdict<EthernetNext, EthernetError>,
    ) -> (
        Verdict<EthernetNext, EthernetError>,
        Vec<u8>,
        pktvec_packet::BufferMeta,
    ) {
        let mut pool = BufferPool::new(PoolConfig {
            buffers: 1,
            ..PoolConfig::default()
        })
        .unwrap();
        let bi = pool.alloc_with(bytes).unwrap();
        let mut p = pool.packet_mut(bi);
        let v = f(&mut p);
        (v, p.data().to_vec(), *p.meta())
    }

    proptest! {
        /// The untagged fast path and the general parser agree on verdicts, offsets and
        /// the stripped packet.
        #[test]
        fn fast_path_matches_parse_l2(
            et in prop_oneof![
                Just(0x0800u16), Just(0x86dd), Just(0x0806), Just(0x8624), Just(0x8100),
                Just(0x88a8), any::<u16>()
            ],
            inner in prop_oneof![Just(0x0800u16), Just(0x8100), any::<u16>()],
            len in 0usize..40,
        ) {
            let mut f = vec![0xaa; 40];
            f[12..14].copy_from_slice(&et.to_be_bytes());
            f[16..18].copy_from_slice(&inner.to_be_bytes());
            f.truncate(len);
            let fast = run(&f, ethernet_input_one);
            let clamped = run(&f, |p| ethernet_input_clamped(p.reborrow()));
            let general = run(&f, |p| ethernet_input_tagged(p.reborrow()));
            prop_assert_eq!(fast.0, clamped.0);
            prop_assert_eq!(&fast.1, &clamped.1);
            prop_assert_eq!(fast.2, clamped.2);
            prop_assert_eq!(fast.0, general.0);
            prop_assert_eq!(fast.1, general.1);
            let (a, b) = (fast.2, general.2);
            prop_assert_eq!(
                (a.data_offset, a.len, a.l2_offset, a.l3_offset, a.flags.0),
                (b.data_offset, b.len, b.l2_offset, b.l3_offset, b.flags.0)
            );
        }
    }
}
