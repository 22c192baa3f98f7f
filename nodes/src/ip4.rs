//! IPv4 nodes: `ip4-input` (header checks and policies) and `ip4-rewrite` (TTL − 1 with an
//! incremental checksum update, new Ethernet header from an adjacency).
//!
//! Both expect the packet to start at the IPv4 header (as `ethernet-input` leaves it).
//! `ip4-lookup` (which fills the adjacency index in `BufferMeta::opaque`) lives with the
//! forwarding tables.
//!
//! ```
//! use pktvec_graph::{builtin::{NullSink, PacketSource, SourceNext}, GraphBuilder, GraphConfig};
//! use pktvec_nodes::ip4::{Adjacency, Ip4Input, Ip4InputNext, Ip4Rewrite};
//! use pktvec_packet::builder::PacketBuilder;
//! use pktvec_packet::BufferPool;
//! use std::net::Ipv4Addr;
//!
//! let eth = PacketBuilder::ethernet([2, 0, 0, 0, 0, 1].into(), [2, 0, 0, 0, 0, 2].into())
//!     .ipv4(Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2))
//!     .udp(1, 2)
//!     .build();
//! let ip_only = eth[14..].to_vec();
//! let adj = Adjacency { tx_if: 3, src_mac: [2, 0, 0, 0, 0, 9].into(), dst_mac: [2, 0, 0, 0, 0, 8].into() };
//! let mut b = GraphBuilder::new(GraphConfig::default());
//! b.add("src", PacketSource::new(vec![ip_only]).with_limit(10))
//!     .add("ip4-input", Ip4Input::default())
//!     .add("ip4-rewrite", Ip4Rewrite::new(vec![adj]))
//!     .add("interface-output", NullSink)
//!     .set_next("src", SourceNext::Out, "ip4-input")
//!     .set_next("ip4-input", Ip4InputNext::Lookup, "ip4-rewrite");
//! let mut g = b.build(BufferPool::new(Default::default())?)?;
//! g.run_until_idle();
//! assert_eq!(g.runtime().row("interface-output").unwrap().packets, 10);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use pktvec_graph::{next_nodes, node_errors, Context, Frame, Node, Verdict};
use pktvec_packet::wire::{EtherType, Ipv4Packet, MacAddr, WireError};
use pktvec_packet::{MetaFlags, Packet, PacketMut};
use std::fmt::Write as _;

/// Accept or drop (serde: `"accept"`, `"drop"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    /// Let the packet through.
    #[default]
    Accept,
    /// Drop it with a counted reason.
    Drop,
}

/// What `ip4-input` checks and lets through (serde: missing fields take the defaults).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Ip4InputConfig {
    /// Verify the header checksum (drop on mismatch).
    pub verify_checksum: bool,
    /// Packets with IPv4 options.
    pub options: Policy,
    /// Fragments (MF set or offset ≠ 0).
    pub fragments: Policy,
}

impl Default for Ip4InputConfig {
    fn default() -> Self {
        DEFAULT_IP4_INPUT
    }
}

/// [`Ip4InputConfig::default`] as a constant.
const DEFAULT_IP4_INPUT: Ip4InputConfig = Ip4InputConfig {
    verify_checksum: true,
    options: Policy::Accept,
    fragments: Policy::Accept,
};

next_nodes! {
    /// Arcs of `ip4-input`.
    pub enum Ip4InputNext {
        /// Good packets.
        Lookup = "ip4-lookup",
    }
}

node_errors! {
    /// Drop reasons of `ip4-input`.
    pub enum Ip4InputError {
        /// Shorter than 20 bytes.
        Truncated = "truncated ipv4 header",
        /// Version is not 4.
        BadVersion = "bad ip version",
        /// IHL below 5 or beyond the packet.
        BadHeaderLength = "bad ipv4 header length",
        /// Total length smaller than the header or larger than the packet.
        BadLength = "ipv4 length mismatch",
        /// Header checksum mismatch.
        BadChecksum = "bad ipv4 header checksum",
        /// TTL 0 or 1: it cannot be forwarded.
        TtlExpired = "ttl expired",
        /// Options present and not allowed.
        Options = "ipv4 options not allowed",
        /// Fragment and not allowed.
        Fragment = "ipv4 fragment not allowed",
    }
}

/// The `ip4-input` node.
#[derive(Debug, Default, Clone, Copy)]
pub struct Ip4Input {
    /// Checks and policies.
    pub config: Ip4InputConfig,
}

impl Ip4Input {
    /// A node with these checks.
    pub fn new(config: Ip4InputConfig) -> Self {
        Ip4Input { config }
    }
}

/// Checks one packet that starts at its IPv4 header; trims Ethernet padding.
///
/// A header without options (first byte `0x45`, the common case) is checked from one
/// fixed-size view of its 20 bytes (one length test, no further bounds checks); other
/// headers go through [`Ipv4Packet::new_checked`]. Both give the same verdicts.
#[inline(always)]
pub fn ip4_input_one(
    cfg: &Ip4InputConfig,
    pkt: &mut PacketMut<'_>,
) -> Verdict<Ip4InputNext, Ip4InputError> {
    if ip4_input_fast(cfg, pkt) {
        Verdict::Next(Ip4InputNext::Lookup)
    } else {
        // A short packet, metadata past the buffer, options or a bad first byte.
        ip4_input_clamped(cfg, pkt.reborrow())
    }
}

/// [`ip4_input_one`]'s fast path: a 20-byte header (`0x45`) in a consistent window of at
/// least 20 bytes (two tests, no clamping: `m.len` is the packet length), checked, trimmed
/// and to go to [`Ip4InputNext::Lookup`]: `true`; `false` (and no edit) for anything else.
#[inline(always)]
fn ip4_input_fast(cfg: &Ip4InputConfig, pkt: &mut PacketMut<'_>) -> bool {
    let Some((m, h)) = pkt.head_mut::<20>() else {
        return false;
    };
    if h[0] != 0x45 {
        return false;
    }
    // Every check; a packet that fails any goes to the clamped path, which finds its
    // reason (the same checks, in the same order).
    let total = u16::from_be_bytes([h[2], h[3]]);
    if total < 20 || total > m.len {
        return false;
    }
    if cfg.verify_checksum && !ip4_header_checksum_ok(h) {
        return false;
    }
    if h[8] <= 1 {
        return false;
    }
    if cfg.fragments == Policy::Drop && u16::from_be_bytes([h[6], h[7]]) & 0x3fff != 0 {
        return false;
    }
    // `total <= len` and the window is inside the buffer: the same edit as
    // `truncate(total)`.
    m.len = total;
    m.flags.insert(MetaFlags::IP4_CSUM_OK);
    true
}

/// [`ip4_input_one`] over the clamped window (a packet under 20 bytes, metadata past the
/// buffer): the same checks and verdicts.
#[inline(never)]
fn ip4_input_clamped(
    cfg: &Ip4InputConfig,
    mut pkt: PacketMut<'_>,
) -> Verdict<Ip4InputNext, Ip4InputError> {
    let (m, d) = pkt.split();
    let Some(h) = d.first_chunk::<20>() else {
        return Verdict::Drop(Ip4InputError::Truncated);
    };
    if h[0] != 0x45 {
        return ip4_input_general(cfg, pkt.reborrow());
    }
    let total = usize::from(u16::from_be_bytes([h[2], h[3]]));
    if total < 20 || total > d.len() {
        return Verdict::Drop(Ip4InputError::BadLength);
    }
    if cfg.verify_checksum && !ip4_header_checksum_ok(h) {
        return Verdict::Drop(Ip4InputError::BadChecksum);
    }
    if h[8] <= 1 {
        return Verdict::Drop(Ip4InputError::TtlExpired);
    }
    if cfg.fragments == Policy::Drop && u16::from_be_bytes([h[6], h[7]]) & 0x3fff != 0 {
        return Verdict::Drop(Ip4InputError::Fragment);
    }
    // `d` is the packet's (clamped) window and `total <= d.len()`: the same edit as
    // `truncate(total)`.
    m.len = total as u16;
    m.flags.insert(MetaFlags::IP4_CSUM_OK);
    Verdict::Next(Ip4InputNext::Lookup)
}

/// True if the one's-complement sum of a 20-byte IPv4 header (checksum included) is
/// `0xffff` (RFC 1071): two 64-bit words and one 32-bit word added with end-around carry
/// into a 64-bit `s`.
///
/// Folding (end-around carry) keeps a value modulo 65535 (2⁶⁴ − 1 is a multiple of it),
/// is 0 only for an all-zero sum, and gives `0xffff` for any non-zero multiple of 65535,
/// so the test is `s != 0 && s % 65535 == 0`: one multiply instead of the folding down to
/// 16 bits. Byte order does not matter (RFC 1071 §2(B); a swapped 16-bit word is the word
/// times 256 modulo 65535, and 256 is invertible modulo 65535).
///
/// ```
/// use pktvec_nodes::ip4::ip4_header_checksum_ok;
/// let mut h = [0x45, 0, 0, 28, 0, 1, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2];
/// let c = pktvec_packet::checksum::checksum(&h);
/// h[10..12].copy_from_slice(&c.to_be_bytes());
/// assert!(ip4_header_checksum_ok(&h));
/// h[8] -= 1;
/// assert!(!ip4_header_checksum_ok(&h));
/// assert!(!ip4_header_checksum_ok(&[0; 20])); // sums to 0, not 0xffff
/// assert!(ip4_header_checksum_ok(&[0xff; 20])); // ten words 0xffff: sums to 0xffff
/// ```
#[inline(always)]
pub fn ip4_header_checksum_ok(h: &[u8; 20]) -> bool {
    let (a, rest) = h.split_first_chunk::<8>().unwrap_or((&[0; 8], &[]));
    let (b, c) = rest.split_first_chunk::<8>().unwrap_or((&[0; 8], &[]));
    let c = c.first_chunk::<4>().unwrap_or(&[0; 4]);
    let (a, b, c) = (
        u64::from_ne_bytes(*a),
        u64::from_ne_bytes(*b),
        u64::from(u32::from_ne_bytes(*c)),
    );
    // End-around carries: after a carry out, the sum is at most 2⁶⁴ − 2 (two words) or
    // below 2³² (a 32-bit word added), so adding the carry back never carries again.
    let (s, o) = a.overflowing_add(b);
    let s = s + u64::from(o);
    let (s, o) = s.overflowing_add(c);
    let s = s + u64::from(o);
    // `s != 0 && s % 0xffff == 0` with one multiply and one compare: 0xffff is odd, so
    // `s` is a multiple of it exactly when `s · 0xffff⁻¹ (mod 2⁶⁴)` is at most
    // `u64::MAX / 0xffff`; subtracting 1 first moves `s == 0` (product 0) past the bound.
    s.wrapping_mul(INV_FFFF).wrapping_sub(1) < u64::MAX / 0xffff
}

/// The inverse of 0xffff modulo 2⁶⁴ (Newton's iteration, each step doubling the correct
/// low bits: 0xffff is its own inverse modulo 2⁴, then 8, 16, 32, 64 bits).
const INV_FFFF: u64 = {
    let d: u64 = 0xffff;
    let mut x = d;
    let mut k = 0;
    while k < 4 {
        x = x.wrapping_mul(2u64.wrapping_sub(d.wrapping_mul(x)));
        k += 1;
    }
    x
};
const _: () = assert!(INV_FFFF.wrapping_mul(0xffff) == 1);

/// Headers with options (or a bad first byte): every check through the header view.
#[inline(never)]
fn ip4_input_general(
    cfg: &Ip4InputConfig,
    mut pkt: PacketMut<'_>,
) -> Verdict<Ip4InputNext, Ip4InputError> {
    let ip = match Ipv4Packet::new_checked(pkt.data()) {
        Ok(ip) => ip,
        Err(e) => {
            return Verdict::Drop(match e {
                WireError::Truncated => Ip4InputError::Truncated,
                WireError::BadVersion => Ip4InputError::BadVersion,
                WireError::BadHeaderLength => Ip4InputError::BadHeaderLength,
                _ => Ip4InputError::BadLength,
            })
        }
    };
    if cfg.verify_checksum && !ip.verify_checksum() {
        return Verdict::Drop(Ip4InputError::BadChecksum);
    }
    if ip.ttl() <= 1 {
        return Verdict::Drop(Ip4InputError::TtlExpired);
    }
    if cfg.options == Policy::Drop && ip.header_len() > 20 {
        return Verdict::Drop(Ip4InputError::Options);
    }
    if cfg.fragments == Policy::Drop && ip.is_fragment() {
        return Verdict::Drop(Ip4InputError::Fragment);
    }
    let total = ip.total_len() as usize;
    pkt.truncate(total);
    let m = pkt.meta_mut();
    m.flags.insert(MetaFlags::IP4_CSUM_OK);
    Verdict::Next(Ip4InputNext::Lookup)
}

impl Node for Ip4Input {
    type Next = Ip4InputNext;
    type Error = Ip4InputError;

    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        let cfg = self.config;
        // The fast path in the loop, every other packet after it (through the clamped view,
        // which gives every verdict).
        if cfg == DEFAULT_IP4_INPUT {
            // The usual settings as constants: the loop tests no setting per packet.
            cx.process_packets_split_to(
                frame,
                Ip4InputNext::Lookup,
                |p| ip4_input_fast(&DEFAULT_IP4_INPUT, p),
                |p| ip4_input_clamped(&DEFAULT_IP4_INPUT, p.reborrow()),
            );
        } else {
            cx.process_packets_split_to(
                frame,
                Ip4InputNext::Lookup,
                |p| ip4_input_fast(&cfg, p),
                |p| ip4_input_clamped(&cfg, p.reborrow()),
            );
        }
    }

    fn format_trace(&self, pkt: Packet<'_>, out: &mut String) {
        format_ip4(pkt.data(), out);
    }
}

/// One line describing an IPv4 header (for traces).
pub fn format_ip4(data: &[u8], out: &mut String) {
    match Ipv4Packet::new_checked(data) {
        Ok(ip) => {
            let _ = write!(
                out,
                "IP4: {} -> {} {} ttl {} len {} checksum {:#06x}{}",
                ip.src_addr(),
                ip.dst_addr(),
                ip.protocol(),
                ip.ttl(),
                ip.total_len(),
                ip.checksum(),
                if ip.is_fragment() { " fragment" } else { "" }
            );
        }
        Err(e) => {
            let _ = write!(out, "IP4: bad header ({e}), {} bytes", data.len());
        }
    }
}

/// Where a route sends packets: the output interface and the Ethernet header to write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Adjacency {
    /// Transmit interface.
    pub tx_if: u16,
    /// Our MAC on that interface.
    pub src_mac: MacAddr,
    /// The next hop's MAC.
    pub dst_mac: MacAddr,
}

next_nodes! {
    /// Arcs of `ip4-rewrite`.
    pub enum Ip4RewriteNext {
        /// Rewritten packets.
        Output = "interface-output",
    }
}

node_errors! {
    /// Drop reasons of `ip4-rewrite`.
    pub enum Ip4RewriteError {
        /// The adjacency index in the metadata is not in the table.
        NoAdjacency = "no adjacency",
        /// TTL would reach 0.
        TtlExpired = "ttl expired",
        /// No headroom for the Ethernet header.
        NoHeadroom = "no headroom for the l2 header",
        /// Not an IPv4 header (a node upstream is wrong).
        NotIp4 = "not an ipv4 header",
    }
}

/// The `ip4-rewrite` node: adjacency index in `BufferMeta::opaque`.
#[derive(Debug, Clone, Default)]
pub struct Ip4Rewrite {
    adjacencies: Vec<Adjacency>,
    /// Per adjacency: the Ethernet header to write and the transmit interface.
    rewrites: Vec<L2Rewrite>,
}

/// An adjacency's precomputed L2 header (VPP's rewrite string), copied in one move.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct L2Rewrite {
    /// Destination MAC, source MAC, EtherType.
    pub(crate) header: [u8; 14],
    /// Transmit interface.
    pub(crate) tx_if: u16,
}

impl L2Rewrite {
    pub(crate) fn new(adj: &Adjacency, ethertype: EtherType) -> Self {
        let mut header = [0u8; 14];
        header[0..6].copy_from_slice(&adj.dst_mac.0);
        header[6..12].copy_from_slice(&adj.src_mac.0);
        header[12..14].copy_from_slice(&ethertype.0.to_be_bytes());
        L2Rewrite {
            header,
            tx_if: adj.tx_if,
        }
    }

    /// Writes the header in front of the packet; false if there is no headroom.
    #[inline(always)]
    pub(crate) fn push(&self, pkt: &mut PacketMut<'_>) -> bool {
        match pkt.prepend(14) {
            Ok(h) => {
                if let Ok(h) = <&mut [u8; 14]>::try_from(h) {
                    *h = self.header;
                }
                let m = pkt.meta_mut();
                m.tx_if = self.tx_if;
                m.l2_offset = m.data_offset;
                true
            }
            Err(_) => false,
        }
    }
}

impl Ip4Rewrite {
    /// A rewrite node over an adjacency table.
    pub fn new(adjacencies: Vec<Adjacency>) -> Self {
        let rewrites = adjacencies
            .iter()
            .map(|a| L2Rewrite::new(a, EtherType::IPV4))
            .collect();
        Ip4Rewrite {
            adjacencies,
            rewrites,
        }
    }
    /// The adjacency table.
    pub fn adjacencies(&self) -> &[Adjacency] {
        &self.adjacencies
    }
}

/// Writes a 14-byte Ethernet header in front of the packet.
#[inline(always)]
pub fn push_ethernet(pkt: &mut PacketMut<'_>, adj: &Adjacency, ethertype: EtherType) -> bool {
    L2Rewrite::new(adj, ethertype).push(pkt)
}

/// Rewrites one packet that starts at its IPv4 header.
#[inline(always)]
pub fn ip4_rewrite_one(
    adjs: &[Adjacency],
    pkt: &mut PacketMut<'_>,
) -> Verdict<Ip4RewriteNext, Ip4RewriteError> {
    let Some(adj) = adjs.get(pkt.meta().opaque as usize) else {
        return Verdict::Drop(Ip4RewriteError::NoAdjacency);
    };
    ip4_rewrite_with(&L2Rewrite::new(adj, EtherType::IPV4), pkt)
}

/// The header checksum after TTL − 1 (TTL ≥ 1 before): RFC 1624 eqn. 3,
/// `HC' = ~(~HC + ~m + m')`, where the changed word `m` = TTL·256 + protocol drops by
/// 0x100, so `~m + m'` is the constant 0xfeff: one add and one end-around carry. Equal to
/// [`checksum::update_u16`] for every input (tested).
#[inline(always)]
fn ttl_decrement_checksum(old: u16) -> u16 {
    let s = u32::from(!old) + 0xfeff;
    !((s & 0xffff) + (s >> 16)) as u16
}

/// [`ttl_decrement_checksum`] on the checksum as the bytes lie in memory, read and
/// written with the same (native) byte order: one's-complement sums commute with swapping
/// the bytes of every word, and a swapped TTL word drops by 0x0001 (not 0x0100) where the
/// big-endian one drops by 0x0100, so the constant is `0xffff - δ` in the read order.
///
/// Worked out, `~(~old + 0xffff - δ)` with its end-around carry is `old + δ` when that is
/// below 0xffff and `old + δ + 1` (mod 2¹⁶) otherwise: one add of `δ + 1` whose carry
/// out says which, then `- 1 + carry` (an add and an add-with-carry on x86). Equal to
/// the three-step form for every input (tested exhaustively).
#[inline(always)]
fn ttl_decrement_checksum_ne(old: u16) -> u16 {
    let d = u16::from_ne_bytes([1, 0]);
    let (r, carry) = old.overflowing_add(d + 1);
    r.wrapping_sub(1).wrapping_add(u16::from(carry))
}

/// Rewrites one packet with a precomputed L2 header: TTL − 1 with the RFC 1624 update of
/// the checksum, then the header in one copy.
///
/// The common case — a consistent window, 14 bytes of headroom, a 20-byte header
/// (`0x45`) whose total length fits the packet, TTL > 1 — is done on fixed views of the
/// 14 bytes of headroom and the 20-byte header
/// ([`PacketMut::head_and_room_mut`]), then plain stores. Anything else goes to [`ip4_rewrite_general`], which gives the same
/// result for the common case (tested) and the verdicts for the rest.
#[inline(always)]
fn ip4_rewrite_with(
    rw: &L2Rewrite,
    pkt: &mut PacketMut<'_>,
) -> Verdict<Ip4RewriteNext, Ip4RewriteError> {
    if ip4_rewrite_fast(rw, pkt) {
        Verdict::Next(Ip4RewriteNext::Output)
    } else {
        ip4_rewrite_general(rw, pkt.reborrow())
    }
}

/// [`ip4_rewrite_with`]'s common case, rewritten and to go to [`Ip4RewriteNext::Output`]:
/// `true`; `false` (and no edit) for anything else.
#[inline(always)]
fn ip4_rewrite_fast(rw: &L2Rewrite, pkt: &mut PacketMut<'_>) -> bool {
    if let Some((m, eth, h)) = pkt.head_and_room_mut::<14, 20>() {
        let total = u16::from_be_bytes([h[2], h[3]]);
        let ttl = h[8];
        // `20 <= total <= len` as one unsigned compare (`len >= 20`: the view holds 20
        // bytes).
        if h[0] == 0x45 && total.wrapping_sub(20) <= m.len - 20 && ttl > 1 {
            // The checksum as stored (byte order does not matter to RFC 1624, see
            // `ttl_decrement_checksum_ne`): no byte swaps.
            let c = ttl_decrement_checksum_ne(u16::from_ne_bytes([h[10], h[11]]));
            h[8] = ttl - 1;
            h[10..12].copy_from_slice(&c.to_ne_bytes());
            *eth = rw.header;
            // The window starts at least 14 bytes in and ends inside the buffer.
            let l2 = m.data_offset - 14;
            m.data_offset = l2;
            m.l2_offset = l2;
            m.len += 14;
            m.tx_if = rw.tx_if;
            return true;
        }
    }
    false
}

/// [`ip4_rewrite_with`] through the packet's checked views: every case, slower.
#[inline(never)]
fn ip4_rewrite_general(
    rw: &L2Rewrite,
    mut pkt: PacketMut<'_>,
) -> Verdict<Ip4RewriteNext, Ip4RewriteError> {
    let d = pkt.data_mut();
    let len = d.len();
    let fast = match d.first_chunk_mut::<20>() {
        Some(h) if h[0] == 0x45 => {
            let total = usize::from(u16::from_be_bytes([h[2], h[3]]));
            if total < 20 || total > len {
                return Verdict::Drop(Ip4RewriteError::NotIp4);
            }
            let ttl = h[8];
            if ttl <= 1 {
                return Verdict::Drop(Ip4RewriteError::TtlExpired);
            }
            let c = ttl_decrement_checksum(u16::from_be_bytes([h[10], h[11]]));
            h[8] = ttl - 1;
            h[10..12].copy_from_slice(&c.to_be_bytes());
            true
        }
        _ => false,
    };
    if !fast {
        let Ok(mut ip) = Ipv4Packet::new_checked(pkt.data_mut()) else {
            return Verdict::Drop(Ip4RewriteError::NotIp4);
        };
        match ip.decrement_ttl_update_checksum() {
            Some(t) if t > 0 => {}
            _ => return Verdict::Drop(Ip4RewriteError::TtlExpired),
        }
    }
    if rw.push(&mut pkt) {
        Verdict::Next(Ip4RewriteNext::Output)
    } else {
        Verdict::Drop(Ip4RewriteError::NoHeadroom)
    }
}

impl Node for Ip4Rewrite {
    type Next = Ip4RewriteNext;
    type Error = Ip4RewriteError;

    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        let rws = &self.rewrites[..];
        // The common case in the loop, every other packet after it.
        cx.process_packets_split_to(
            frame,
            Ip4RewriteNext::Output,
            |p| {
                rws.get(p.meta().opaque as usize)
                    .is_some_and(|rw| ip4_rewrite_fast(rw, p))
            },
            |p| match rws.get(p.meta().opaque as usize) {
                Some(rw) => ip4_rewrite_general(rw, p.reborrow()),
                None => Verdict::Drop(Ip4RewriteError::NoAdjacency),
            },
        );
    }

    fn format_trace(&self, pkt: Packet<'_>, out: &mut String) {
        let _ = write!(out, "adjacency {}: ", pkt.meta().opaque);
        format_ip4(pkt.data(), out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use pktvec_packet::{checksum, BufferPool, PoolConfig};
    use proptest::prelude::*;

    /// The add-with-carry form of the native-order update equals the three-step RFC 1624
    /// form (`~(~old + k)` with its end-around carry) for every checksum.
    #[test]
    fn ttl_decrement_checksum_ne_matches_three_step_form_exhaustively() {
        let k: u32 = 0xffff - u32::from(u16::from_ne_bytes([1, 0]));
        for old in 0..=u16::MAX {
            let s = u32::from(!old) + k;
            let three_step = !((s & 0xffff) + (s >> 16)) as u16;
            assert_eq!(ttl_decrement_checksum_ne(old), three_step, "old {old:#06x}");
        }
    }

    /// A valid 20-byte header (`0x45`) with `extra` payload bytes, then `edit` applied.
    fn header(extra: usize, ttl: u8, frag: u16) -> Vec<u8> {
        let total = (20 + extra) as u16;
        let mut h = vec![
            0x45, 0, 0, 0, 0, 1, 0, 0, ttl, 17, 0, 0, 10, 0, 0, 1, 10, 1, 2, 3,
        ];
        h[2..4].copy_from_slice(&total.to_be_bytes());
        h[6..8].copy_from_slice(&frag.to_be_bytes());
        let c = checksum::checksum(&h);
        h[10..12].copy_from_slice(&c.to_be_bytes());
        h.resize(20 + extra, 0xab);
        h
    }

    fn run<T>(bytes: &[u8], f: impl FnOnce(&mut PacketMut<'_>) -> T) -> (T, Vec<u8>, u16) {
        let mut pool = BufferPool::new(PoolConfig {
            buffers: 1,
            ..PoolConfig::default()
        })
        .unwrap();
        let bi = pool.alloc_with(bytes).unwrap();
        let mut p = pool.packet_mut(bi);
        let v = f(&mut p);
        let flags = p.meta().flags.0;
        (v, p.data().to_vec(), flags)
    }

    proptest! {
        /// The fixed-size fast path of `ip4-input` and the general path agree on every
        /// verdict and edit, for valid headers with random byte edits and lengths.
        #[test]
        fn ip4_input_fast_path_matches_general(
            extra in 0usize..40,
            ttl in 0u8..4,
            frag in prop_oneof![Just(0u16), Just(0x2000u16), Just(0x4000u16), any::<u16>()],
            edits in proptest::collection::vec((0usize..24, any::<u8>()), 0..3),
            cut in 0usize..70,
            drop_frag in any::<bool>(),
            drop_opts in any::<bool>(),
            verify in any::<bool>(),
        ) {
            let mut b = header(extra, ttl, frag);
            for (i, v) in edits {
                if i < b.len() {
                    b[i] = v;
                }
            }
            b.truncate(cut.max(1));
            let policy = |d| if d { Policy::Drop } else { Policy::Accept };
            let cfg = Ip4InputConfig {
                verify_checksum: verify,
                options: policy(drop_opts),
                fragments: policy(drop_frag),
            };
            let fast = run(&b, |p| ip4_input_one(&cfg, p));
            let clamped = run(&b, |p| ip4_input_clamped(&cfg, p.reborrow()));
            let general = run(&b, |p| ip4_input_general(&cfg, p.reborrow()));
            prop_assert_eq!(&fast, &general);
            prop_assert_eq!(fast, clamped);
        }

        /// The update on the stored bytes equals the big-endian one.
        #[test]
        fn ttl_decrement_checksum_ne_matches_be(c in any::<[u8; 2]>()) {
            prop_assert_eq!(
                ttl_decrement_checksum_ne(u16::from_ne_bytes(c)).to_ne_bytes(),
                ttl_decrement_checksum(u16::from_be_bytes(c)).to_be_bytes()
            );
        }

        /// The constant-time TTL update equals the general RFC 1624 update.
        #[test]
        fn ttl_decrement_checksum_matches_update_u16(c in any::<u16>(), ttl in 1u8..=255, proto in any::<u8>()) {
            prop_assert_eq!(
                ttl_decrement_checksum(c),
                checksum::update_u16(c, u16::from_be_bytes([ttl, proto]), u16::from_be_bytes([ttl - 1, proto]))
            );
        }

        /// The multiply-and-compare divisibility test is `s != 0 && s % 0xffff == 0` for
        /// every sum five 32-bit words can make (and beyond).
        #[test]
        fn checksum_divisibility_test_matches_modulo(
            s in prop_oneof![0u64..(5u64 << 32), (0u64..(5u64 << 32) / 0xffff).prop_map(|k| k * 0xffff), any::<u64>()]
        ) {
            prop_assert_eq!(
                s.wrapping_mul(INV_FFFF).wrapping_sub(1) < u64::MAX / 0xffff,
                s != 0 && s % 0xffff == 0
            );
        }

        /// The 20-byte checksum test agrees with the RFC 1071 sum.
        #[test]
        fn header_checksum_ok_matches_rfc1071(
            h in prop_oneof![
                any::<[u8; 20]>(),
                // Words near all-ones: the 64-bit adds carry out.
                proptest::array::uniform20(prop_oneof![Just(0xffu8), Just(0xfe), any::<u8>()]),
            ]
        ) {
            prop_assert_eq!(ip4_header_checksum_ok(&h), checksum::checksum(&h) == 0);
            // Random bytes rarely sum to a multiple of 65535: fix the checksum field so
            // that they do, and check both agree again.
            let mut g = h;
            g[10..12].copy_from_slice(&[0, 0]);
            let c = checksum::checksum(&g);
            g[10..12].copy_from_slice(&c.to_be_bytes());
            prop_assert!(ip4_header_checksum_ok(&g));
            prop_assert_eq!(checksum::checksum(&g), 0);
        }

        /// The one-view fast path of `ip4-rewrite` and the general path agree on any bytes,
        /// any headroom and any (even inconsistent) metadata: same verdict, same buffer,
        /// same metadata.
        #[test]
        fn ip4_rewrite_fast_path_matches_general_on_anything(
            mut bytes in proptest::collection::vec(any::<u8>(), 0..80),
            valid in any::<bool>(),
            ttl in 0u8..4,
            headroom in 0u16..40,
            lie in prop_oneof![Just(None), (0u16..200).prop_map(Some)],
        ) {
            if valid && bytes.len() >= 20 {
                bytes[0] = 0x45;
                bytes[8] = ttl;
                let total = (bytes.len() as u16).saturating_sub(u16::from(ttl & 1));
                bytes[2..4].copy_from_slice(&total.to_be_bytes());
            }
            let adj = Adjacency {
                tx_if: 3,
                src_mac: [2, 0, 0, 0, 0, 9].into(),
                dst_mac: [2, 0, 0, 0, 0, 8].into(),
            };
            let rw = L2Rewrite::new(&adj, EtherType::IPV4);
            let cfg = PoolConfig { buffers: 2, headroom, data_room: 128 };
            let mut pool = BufferPool::new(cfg).unwrap();
            let a = pool.alloc_with(&bytes).unwrap();
            let b = pool.alloc_with(&bytes).unwrap();
            if let Some(l) = lie {
                pool.meta_mut(a).len = l;
                pool.meta_mut(b).len = l;
            }
            let fast = ip4_rewrite_with(&rw, &mut pool.packet_mut(a));
            let general = ip4_rewrite_general(&rw, pool.packet_mut(b));
            prop_assert_eq!(fast, general);
            if let Verdict::Next(_) = fast {
                prop_assert_eq!(pool.data(a), pool.data(b));
                let (ma, mb) = (*pool.meta(a), *pool.meta(b));
                prop_assert_eq!(ma, mb);
            }
        }

        /// `ip4-rewrite`'s fast path and the header-view path give the same verdicts and
        /// bytes for forwarded packets (TTL − 1, checksum as a full recompute gives).
        #[test]
        fn ip4_rewrite_fast_path_matches_recompute(
            extra in 0usize..40,
            ttl in 0u8..=255,
            ident in any::<u16>(),
        ) {
            let mut b = header(extra, ttl, 0);
            b[4..6].copy_from_slice(&ident.to_be_bytes());
            b[10..12].copy_from_slice(&[0, 0]);
            let c = checksum::checksum(&b[..20]);
            b[10..12].copy_from_slice(&c.to_be_bytes());
            let adj = Adjacency {
                tx_if: 2,
                src_mac: [2, 0, 0, 0, 0, 9].into(),
                dst_mac: [2, 0, 0, 0, 0, 8].into(),
            };
            let (v, out, _) = run(&b, |p| {
                p.meta_mut().opaque = 0;
                ip4_rewrite_one(&[adj], p)
            });
            if ttl <= 1 {
                prop_assert_eq!(v, Verdict::Drop(Ip4RewriteError::TtlExpired));
            } else {
                prop_assert_eq!(v, Verdict::Next(Ip4RewriteNext::Output));
                prop_assert_eq!(&out[..14], &[2, 0, 0, 0, 0, 8, 2, 0, 0, 0, 0, 9, 8, 0][..]);
                let mut want = b.clone();
                want[8] = ttl - 1;
                want[10..12].copy_from_slice(&[0, 0]);
                let c = checksum::checksum(&want[..20]);
                want[10..12].copy_from_slice(&c.to_be_bytes());
                prop_assert_eq!(&out[14..], &want[..]);
            }
        }
    }
}
