//! IPv4 (RFC 791) headers and the IP protocol number.
//!
//! ```
//! use pktvec_packet::wire::{IpProtocol, Ipv4Packet, WireError};
//! use std::net::Ipv4Addr;
//!
//! let mut buf = [0u8; 28];
//! let mut ip = Ipv4Packet::new_unchecked(&mut buf[..]);
//! ip.set_version(4);
//! ip.set_ihl(5);
//! ip.set_total_len(28);
//! ip.set_ttl(1);
//! ip.set_protocol(IpProtocol::UDP);
//! ip.set_src_addr(Ipv4Addr::new(192, 0, 2, 1));
//! ip.set_dst_addr(Ipv4Addr::new(198, 51, 100, 1));
//! ip.fill_checksum();
//!
//! let mut ip = Ipv4Packet::new_checked(&mut buf[..])?;
//! assert!(ip.verify_checksum());
//! assert_eq!(ip.payload().len(), 8);
//! assert_eq!(ip.decrement_ttl_update_checksum(), Some(0)); // now expired
//! assert!(ip.verify_checksum());
//! assert_eq!(ip.decrement_ttl_update_checksum(), None); // TTL 0 is left alone
//! # Ok::<(), WireError>(())
//! ```

use super::{clamp_range, read_u16, write_u16, WireError};
use crate::checksum;
use core::fmt;
use serde::{Deserialize, Serialize};
use std::net::Ipv4Addr;

/// An IP protocol number (IPv4 protocol field, IPv6 next header).
#[derive(
    Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Debug, Serialize, Deserialize,
)]
pub struct IpProtocol(pub u8);

impl IpProtocol {
    /// IPv6 Hop-by-Hop Options, 0.
    pub const HOPOPT: IpProtocol = IpProtocol(0);
    /// ICMP, 1.
    pub const ICMP: IpProtocol = IpProtocol(1);
    /// IGMP, 2.
    pub const IGMP: IpProtocol = IpProtocol(2);
    /// IPv4 in IP, 4.
    pub const IPV4: IpProtocol = IpProtocol(4);
    /// TCP, 6.
    pub const TCP: IpProtocol = IpProtocol(6);
    /// UDP, 17.
    pub const UDP: IpProtocol = IpProtocol(17);
    /// IPv6 in IP, 41.
    pub const IPV6: IpProtocol = IpProtocol(41);
    /// IPv6 Routing header, 43.
    pub const IPV6_ROUTE: IpProtocol = IpProtocol(43);
    /// IPv6 Fragment header, 44.
    pub const IPV6_FRAG: IpProtocol = IpProtocol(44);
    /// GRE, 47.
    pub const GRE: IpProtocol = IpProtocol(47);
    /// ESP, 50.
    pub const ESP: IpProtocol = IpProtocol(50);
    /// AH, 51.
    pub const AH: IpProtocol = IpProtocol(51);
    /// ICMPv6, 58.
    pub const ICMPV6: IpProtocol = IpProtocol(58);
    /// IPv6 No Next Header, 59.
    pub const IPV6_NONXT: IpProtocol = IpProtocol(59);
    /// IPv6 Destination Options, 60.
    pub const IPV6_OPTS: IpProtocol = IpProtocol(60);
    /// SCTP, 132.
    pub const SCTP: IpProtocol = IpProtocol(132);
}

impl From<u8> for IpProtocol {
    #[inline]
    fn from(v: u8) -> Self {
        IpProtocol(v)
    }
}

impl From<IpProtocol> for u8 {
    #[inline]
    fn from(v: IpProtocol) -> Self {
        v.0
    }
}

impl fmt::Display for IpProtocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match *self {
            IpProtocol::HOPOPT => "HOPOPT",
            IpProtocol::ICMP => "ICMP",
            IpProtocol::IGMP => "IGMP",
            IpProtocol::IPV4 => "IPv4",
            IpProtocol::TCP => "TCP",
            IpProtocol::UDP => "UDP",
            IpProtocol::IPV6 => "IPv6",
            IpProtocol::IPV6_ROUTE => "IPv6-Route",
            IpProtocol::IPV6_FRAG => "IPv6-Frag",
            IpProtocol::GRE => "GRE",
            IpProtocol::ESP => "ESP",
            IpProtocol::AH => "AH",
            IpProtocol::ICMPV6 => "ICMPv6",
            IpProtocol::IPV6_NONXT => "IPv6-NoNxt",
            IpProtocol::IPV6_OPTS => "IPv6-Opts",
            IpProtocol::SCTP => "SCTP",
            IpProtocol(v) => return write!(f, "proto {v}"),
        };
        f.write_str(name)
    }
}

mod field {
    pub const VER_IHL: usize = 0;
    pub const DSCP_ECN: usize = 1;
    pub const TOTAL_LEN: usize = 2;
    pub const IDENT: usize = 4;
    pub const FLAGS_FRAG: usize = 6;
    pub const TTL: usize = 8;
    pub const PROTOCOL: usize = 9;
    pub const CHECKSUM: usize = 10;
    pub const SRC: usize = 12;
    pub const DST: usize = 16;
}

/// A read/write view of an IPv4 header, its options and its payload.
///
/// `new_checked` guarantees: buffer ≥ 20 bytes, version 4, IHL ≥ 5,
/// IHL × 4 ≤ buffer, IHL × 4 ≤ total length ≤ buffer. The buffer may extend
/// past the total length (Ethernet padding); [`payload`](Self::payload) stops
/// at the total length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv4Packet<T> {
    buffer: T,
}

impl Ipv4Packet<()> {
    /// Length of a header without options.
    pub const MIN_HEADER_LEN: usize = 20;
    /// Length of a header with 40 bytes of options.
    pub const MAX_HEADER_LEN: usize = 60;
}

impl<T: AsRef<[u8]>> Ipv4Packet<T> {
    /// Wraps `buffer` without checking it.
    #[inline]
    pub const fn new_unchecked(buffer: T) -> Self {
        Ipv4Packet { buffer }
    }

    /// Wraps `buffer` after checking lengths, version and IHL (see the type
    /// documentation). The checksum is *not* verified.
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        let b = buffer.as_ref();
        if b.len() < Ipv4Packet::MIN_HEADER_LEN {
            return Err(WireError::Truncated);
        }
        if b[field::VER_IHL] >> 4 != 4 {
            return Err(WireError::BadVersion);
        }
        let hl = usize::from(b[field::VER_IHL] & 0x0f) * 4;
        if hl < Ipv4Packet::MIN_HEADER_LEN {
            return Err(WireError::BadHeaderLength);
        }
        if hl > b.len() {
            return Err(WireError::Truncated);
        }
        let tl = usize::from(read_u16(b, field::TOTAL_LEN));
        if tl < hl || tl > b.len() {
            return Err(WireError::BadTotalLength);
        }
        Ok(Ipv4Packet { buffer })
    }

    /// Returns the wrapped buffer.
    #[inline]
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Version (4 after a checked construction).
    #[inline]
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[field::VER_IHL] >> 4
    }

    /// Internet header length in 32-bit words.
    #[inline]
    pub fn ihl(&self) -> u8 {
        self.buffer.as_ref()[field::VER_IHL] & 0x0f
    }

    /// Header length in bytes (IHL × 4), options included.
    #[inline]
    pub fn header_len(&self) -> usize {
        usize::from(self.ihl()) * 4
    }

    /// Differentiated services code point (6 bits).
    #[inline]
    pub fn dscp(&self) -> u8 {
        self.buffer.as_ref()[field::DSCP_ECN] >> 2
    }

    /// Explicit congestion notification (2 bits).
    #[inline]
    pub fn ecn(&self) -> u8 {
        self.buffer.as_ref()[field::DSCP_ECN] & 0x03
    }

    /// Total length (header and payload) in bytes.
    #[inline]
    pub fn total_len(&self) -> u16 {
        read_u16(self.buffer.as_ref(), field::TOTAL_LEN)
    }

    /// Identification.
    #[inline]
    pub fn ident(&self) -> u16 {
        read_u16(self.buffer.as_ref(), field::IDENT)
    }

    /// The three flag bits (reserved, DF, MF) as the low bits of a `u8`.
    #[inline]
    pub fn flags(&self) -> u8 {
        self.buffer.as_ref()[field::FLAGS_FRAG] >> 5
    }

    /// Don't fragment.
    #[inline]
    pub fn dont_frag(&self) -> bool {
        self.buffer.as_ref()[field::FLAGS_FRAG] & 0x40 != 0
    }

    /// More fragments.
    #[inline]
    pub fn more_frags(&self) -> bool {
        self.buffer.as_ref()[field::FLAGS_FRAG] & 0x20 != 0
    }

    /// Fragment offset in units of 8 bytes (13 bits).
    #[inline]
    pub fn frag_offset(&self) -> u16 {
        read_u16(self.buffer.as_ref(), field::FLAGS_FRAG) & 0x1fff
    }

    /// `true` if this packet is a fragment: MF set or a non-zero offset.
    #[inline]
    pub fn is_fragment(&self) -> bool {
        read_u16(self.buffer.as_ref(), field::FLAGS_FRAG) & 0x3fff != 0
    }

    /// Time to live.
    #[inline]
    pub fn ttl(&self) -> u8 {
        self.buffer.as_ref()[field::TTL]
    }

    /// Protocol of the payload.
    #[inline]
    pub fn protocol(&self) -> IpProtocol {
        IpProtocol(self.buffer.as_ref()[field::PROTOCOL])
    }

    /// Header checksum field.
    #[inline]
    pub fn checksum(&self) -> u16 {
        read_u16(self.buffer.as_ref(), field::CHECKSUM)
    }

    /// Source address.
    #[inline]
    pub fn src_addr(&self) -> Ipv4Addr {
        let b = self.buffer.as_ref();
        Ipv4Addr::new(
            b[field::SRC],
            b[field::SRC + 1],
            b[field::SRC + 2],
            b[field::SRC + 3],
        )
    }

    /// Destination address.
    #[inline]
    pub fn dst_addr(&self) -> Ipv4Addr {
        let b = self.buffer.as_ref();
        Ipv4Addr::new(
            b[field::DST],
            b[field::DST + 1],
            b[field::DST + 2],
            b[field::DST + 3],
        )
    }

    /// Header options (bytes 20..IHL × 4), possibly empty.
    #[inline]
    pub fn options(&self) -> &[u8] {
        let b = self.buffer.as_ref();
        let (s, e) = clamp_range(Ipv4Packet::MIN_HEADER_LEN, self.header_len(), b.len());
        &b[s..e]
    }

    /// Payload: from the end of the header to the total length (Ethernet
    /// padding excluded).
    #[inline]
    pub fn payload(&self) -> &[u8] {
        let (s, e) = self.payload_range();
        &self.buffer.as_ref()[s..e]
    }

    /// Byte range of the payload inside the buffer, clamped to the buffer.
    #[inline]
    fn payload_range(&self) -> (usize, usize) {
        clamp_range(
            self.header_len(),
            usize::from(self.total_len()),
            self.buffer.as_ref().len(),
        )
    }

    /// `true` if the header checksum is correct.
    #[inline]
    pub fn verify_checksum(&self) -> bool {
        let b = self.buffer.as_ref();
        let hl = self.header_len().min(b.len());
        checksum::checksum(&b[..hl]) == 0
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv4Packet<T> {
    /// Sets the version nibble.
    #[inline]
    pub fn set_version(&mut self, v: u8) {
        let b = &mut self.buffer.as_mut()[field::VER_IHL];
        *b = (*b & 0x0f) | (v << 4);
    }

    /// Sets the IHL nibble (header length in 32-bit words).
    #[inline]
    pub fn set_ihl(&mut self, words: u8) {
        let b = &mut self.buffer.as_mut()[field::VER_IHL];
        *b = (*b & 0xf0) | (words & 0x0f);
    }

    /// Sets the DSCP (low 6 bits used).
    #[inline]
    pub fn set_dscp(&mut self, v: u8) {
        let b = &mut self.buffer.as_mut()[field::DSCP_ECN];
        *b = (*b & 0x03) | (v << 2);
    }

    /// Sets the ECN (low 2 bits used).
    #[inline]
    pub fn set_ecn(&mut self, v: u8) {
        let b = &mut self.buffer.as_mut()[field::DSCP_ECN];
        *b = (*b & 0xfc) | (v & 0x03);
    }

    /// Sets the total length.
    #[inline]
    pub fn set_total_len(&mut self, v: u16) {
        write_u16(self.buffer.as_mut(), field::TOTAL_LEN, v);
    }

    /// Sets the identification.
    #[inline]
    pub fn set_ident(&mut self, v: u16) {
        write_u16(self.buffer.as_mut(), field::IDENT, v);
    }

    /// Sets the three flag bits (reserved, DF, MF) from the low bits of `v`.
    #[inline]
    pub fn set_flags(&mut self, v: u8) {
        let b = &mut self.buffer.as_mut()[field::FLAGS_FRAG];
        *b = (*b & 0x1f) | ((v & 0x07) << 5);
    }

    /// Sets or clears don't fragment.
    #[inline]
    pub fn set_dont_frag(&mut self, on: bool) {
        let b = &mut self.buffer.as_mut()[field::FLAGS_FRAG];
        *b = (*b & !0x40) | if on { 0x40 } else { 0 };
    }

    /// Sets or clears more fragments.
    #[inline]
    pub fn set_more_frags(&mut self, on: bool) {
        let b = &mut self.buffer.as_mut()[field::FLAGS_FRAG];
        *b = (*b & !0x20) | if on { 0x20 } else { 0 };
    }

    /// Sets the fragment offset in units of 8 bytes (low 13 bits used).
    #[inline]
    pub fn set_frag_offset(&mut self, units: u16) {
        let b = self.buffer.as_mut();
        let v = (read_u16(b, field::FLAGS_FRAG) & 0xe000) | (units & 0x1fff);
        write_u16(b, field::FLAGS_FRAG, v);
    }

    /// Sets the time to live (the checksum is not updated; see
    /// [`decrement_ttl_update_checksum`](Self::decrement_ttl_update_checksum)).
    #[inline]
    pub fn set_ttl(&mut self, v: u8) {
        self.buffer.as_mut()[field::TTL] = v;
    }

    /// Sets the protocol.
    #[inline]
    pub fn set_protocol(&mut self, p: IpProtocol) {
        self.buffer.as_mut()[field::PROTOCOL] = p.0;
    }

    /// Sets the checksum field.
    #[inline]
    pub fn set_checksum(&mut self, v: u16) {
        write_u16(self.buffer.as_mut(), field::CHECKSUM, v);
    }

    /// Sets the source address.
    #[inline]
    pub fn set_src_addr(&mut self, a: Ipv4Addr) {
        self.buffer.as_mut()[field::SRC..field::SRC + 4].copy_from_slice(&a.octets());
    }

    /// Sets the destination address.
    #[inline]
    pub fn set_dst_addr(&mut self, a: Ipv4Addr) {
        self.buffer.as_mut()[field::DST..field::DST + 4].copy_from_slice(&a.octets());
    }

    /// Mutable header options.
    #[inline]
    pub fn options_mut(&mut self) -> &mut [u8] {
        let (s, e) = clamp_range(
            Ipv4Packet::MIN_HEADER_LEN,
            self.header_len(),
            self.buffer.as_ref().len(),
        );
        &mut self.buffer.as_mut()[s..e]
    }

    /// Mutable payload (up to the total length).
    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let (s, e) = self.payload_range();
        &mut self.buffer.as_mut()[s..e]
    }

    /// Computes and stores the header checksum.
    #[inline]
    pub fn fill_checksum(&mut self) {
        self.set_checksum(0);
        let b = self.buffer.as_ref();
        let hl = self.header_len().min(b.len());
        let c = checksum::checksum(&b[..hl]);
        self.set_checksum(c);
    }

    /// Decrements the TTL and updates the checksum incrementally (RFC 1624),
    /// as a forwarding node does. Returns the new TTL, or `None` (leaving the
    /// packet untouched) if the TTL was already 0. A router drops packets for
    /// which this returns `None` or `Some(0)`.
    ///
    /// The result is bit-identical to setting the TTL and calling
    /// [`fill_checksum`](Self::fill_checksum) when the old checksum was
    /// correct; an incorrect checksum stays incorrect.
    #[inline]
    pub fn decrement_ttl_update_checksum(&mut self) -> Option<u8> {
        let b = self.buffer.as_mut();
        let ttl = b[field::TTL];
        if ttl == 0 {
            return None;
        }
        let proto = b[field::PROTOCOL];
        let old = u16::from_be_bytes([ttl, proto]);
        let new = u16::from_be_bytes([ttl - 1, proto]);
        let c = checksum::update_u16(read_u16(b, field::CHECKSUM), old, new);
        b[field::TTL] = ttl - 1;
        write_u16(b, field::CHECKSUM, c);
        Some(ttl - 1)
    }
}

super::impl_into_payload!(Ipv4Packet);

#[cfg(test)]
mod tests {
    use super::*;

    /// 20-byte header + 8 payload bytes, correct checksum.
    fn sample(options: &[u8], payload_len: usize) -> Vec<u8> {
        let hl = 20 + options.len();
        let mut b = vec![0u8; hl + payload_len];
        let mut ip = Ipv4Packet::new_unchecked(&mut b[..]);
        ip.set_version(4);
        ip.set_ihl((hl / 4) as u8);
        ip.set_dscp(46);
        ip.set_ecn(1);
        ip.set_total_len((hl + payload_len) as u16);
        ip.set_ident(0xbeef);
        ip.set_dont_frag(true);
        ip.set_ttl(64);
        ip.set_protocol(IpProtocol::TCP);
        ip.set_src_addr(Ipv4Addr::new(10, 1, 2, 3));
        ip.set_dst_addr(Ipv4Addr::new(172, 16, 0, 9));
        ip.options_mut().copy_from_slice(options);
        for (i, x) in ip.payload_mut().iter_mut().enumerate() {
            *x = i as u8;
        }
        ip.fill_checksum();
        b
    }

    #[test]
    fn getters() {
        let b = sample(&[], 8);
        let ip = Ipv4Packet::new_checked(&b[..]).unwrap();
        assert_eq!((ip.version(), ip.ihl(), ip.header_len()), (4, 5, 20));
        assert_eq!((ip.dscp(), ip.ecn()), (46, 1));
        assert_eq!(ip.total_len(), 28);
        assert_eq!(ip.ident(), 0xbeef);
        assert!(ip.dont_frag() && !ip.more_frags() && !ip.is_fragment());
        assert_eq!(ip.flags(), 0b010);
        assert_eq!(ip.frag_offset(), 0);
        assert_eq!(ip.ttl(), 64);
        assert_eq!(ip.protocol(), IpProtocol::TCP);
        assert_eq!(ip.src_addr(), Ipv4Addr::new(10, 1, 2, 3));
        assert_eq!(ip.dst_addr(), Ipv4Addr::new(172, 16, 0, 9));
        assert!(ip.options().is_empty());
        assert_eq!(ip.payload(), &[0, 1, 2, 3, 4, 5, 6, 7]);
        assert!(ip.verify_checksum());
    }

    #[test]
    fn truncated_at_every_length() {
        let b = sample(&[1, 1, 1, 0], 8); // 24-byte header, total 32
        for n in 0..b.len() {
            let r = Ipv4Packet::new_checked(&b[..n]);
            let want = if n < 24 {
                WireError::Truncated
            } else {
                WireError::BadTotalLength
            };
            assert_eq!(r.err(), Some(want), "len {n}");
        }
        assert!(Ipv4Packet::new_checked(&b[..]).is_ok());
    }

    #[test]
    fn padding_is_excluded_from_payload() {
        let mut b = sample(&[], 6);
        b.resize(46, 0xaa);
        let ip = Ipv4Packet::new_checked(&b[..]).unwrap();
        assert_eq!(ip.payload().len(), 6);
        assert!(ip.verify_checksum());
    }

    #[test]
    fn bad_version_and_ihl() {
        let mut b = sample(&[], 8);
        b[0] = 0x65;
        assert_eq!(
            Ipv4Packet::new_checked(&b[..]).err(),
            Some(WireError::BadVersion)
        );
        for ihl in 0..5 {
            b[0] = 0x40 | ihl;
            assert_eq!(
                Ipv4Packet::new_checked(&b[..]).err(),
                Some(WireError::BadHeaderLength)
            );
        }
        b[0] = 0x48; // 32-byte header in a 28-byte buffer
        assert_eq!(
            Ipv4Packet::new_checked(&b[..]).err(),
            Some(WireError::Truncated)
        );
    }

    #[test]
    fn lying_total_length() {
        let mut b = sample(&[], 8);
        for tl in [0u16, 1, 19, 29, 1500, 0xffff] {
            b[2..4].copy_from_slice(&tl.to_be_bytes());
            assert_eq!(
                Ipv4Packet::new_checked(&b[..]).err(),
                Some(WireError::BadTotalLength),
                "tl {tl}"
            );
        }
        b[2..4].copy_from_slice(&20u16.to_be_bytes());
        let ip = Ipv4Packet::new_checked(&b[..]).unwrap();
        assert!(ip.payload().is_empty());
        // Options make the header longer than the total length.
        let mut b = sample(&[0; 8], 0);
        b[2..4].copy_from_slice(&24u16.to_be_bytes());
        assert_eq!(
            Ipv4Packet::new_checked(&b[..]).err(),
            Some(WireError::BadTotalLength)
        );
    }

    #[test]
    fn options() {
        let opts = [0x94, 0x04, 0x00, 0x00, 0x01, 0x01, 0x01, 0x00]; // router alert, NOPs, EOL
        let mut b = sample(&opts, 4);
        let mut ip = Ipv4Packet::new_checked(&mut b[..]).unwrap();
        assert_eq!(ip.header_len(), 28);
        assert_eq!(ip.options(), &opts);
        assert_eq!(ip.payload(), &[0, 1, 2, 3]);
        assert!(ip.verify_checksum());
        ip.options_mut()[1] = 0x05;
        assert!(!ip.verify_checksum());
        ip.fill_checksum();
        assert!(ip.verify_checksum());
    }

    #[test]
    fn fragments() {
        let mut b = sample(&[], 8);
        let mut ip = Ipv4Packet::new_checked(&mut b[..]).unwrap();
        ip.set_dont_frag(false);
        ip.set_more_frags(true);
        assert!(ip.is_fragment() && ip.more_frags() && !ip.dont_frag());
        assert_eq!(ip.frag_offset(), 0);
        ip.set_more_frags(false);
        ip.set_frag_offset(185); // 1480 bytes
        assert!(ip.is_fragment());
        assert_eq!(ip.frag_offset(), 185);
        assert!(!ip.more_frags());
        ip.set_frag_offset(0xffff);
        assert_eq!(ip.frag_offset(), 0x1fff);
        assert_eq!(ip.flags(), 0);
        ip.set_frag_offset(0);
        assert!(!ip.is_fragment());
        // The reserved ("evil") bit alone does not make a fragment.
        ip.set_flags(0b100);
        assert!(!ip.is_fragment());
        assert_eq!(ip.flags(), 0b100);
    }

    fn full_recompute_after_decrement(b: &[u8]) -> Vec<u8> {
        let mut c = b.to_vec();
        let mut ip = Ipv4Packet::new_unchecked(&mut c[..]);
        let t = ip.ttl();
        ip.set_ttl(t - 1);
        ip.fill_checksum();
        c
    }

    #[test]
    fn ttl_decrement_matches_recompute() {
        for ttl in 1..=255u8 {
            for ident in [0u16, 1, 0x7fff, 0xfffe, 0xffff] {
                let mut b = sample(&[], 4);
                let mut ip = Ipv4Packet::new_unchecked(&mut b[..]);
                ip.set_ttl(ttl);
                ip.set_ident(ident);
                ip.fill_checksum();
                let want = full_recompute_after_decrement(&b);
                let mut ip = Ipv4Packet::new_unchecked(&mut b[..]);
                assert_eq!(ip.decrement_ttl_update_checksum(), Some(ttl - 1));
                assert_eq!(b, want, "ttl {ttl} ident {ident:#x}");
            }
        }
    }

    /// Choose the ident so that a header's checksum is exactly `target`.
    fn force_checksum(b: &mut [u8], target: u16) {
        let mut ip = Ipv4Packet::new_unchecked(&mut b[..]);
        ip.set_ident(0);
        ip.set_checksum(0);
        let s = checksum::fold(checksum::sum(&b[..20]));
        // We need fold(s + ident) == !target.
        let want = !target;
        let ident = checksum::fold(u64::from(want) + u64::from(!s));
        let mut ip = Ipv4Packet::new_unchecked(&mut b[..]);
        ip.set_ident(ident);
        ip.fill_checksum();
        assert_eq!(ip.checksum(), target);
    }

    #[test]
    fn ttl_decrement_corner_cases() {
        // Old checksum 0x0000 (header sum 0xffff) before the decrement.
        let mut b = sample(&[], 0);
        force_checksum(&mut b, 0x0000);
        let want = full_recompute_after_decrement(&b);
        Ipv4Packet::new_unchecked(&mut b[..]).decrement_ttl_update_checksum();
        assert_eq!(b, want);

        // New checksum must become 0x0000 after the decrement: force the
        // post-decrement header to 0x0000, then restore the TTL.
        let mut b = sample(&[], 0);
        {
            let mut ip = Ipv4Packet::new_unchecked(&mut b[..]);
            let t = ip.ttl();
            ip.set_ttl(t - 1);
        }
        force_checksum(&mut b, 0x0000);
        {
            let mut ip = Ipv4Packet::new_unchecked(&mut b[..]);
            let t = ip.ttl();
            ip.set_ttl(t + 1);
            ip.fill_checksum();
            assert_ne!(ip.checksum(), 0);
            assert_eq!(ip.decrement_ttl_update_checksum(), Some(t));
            // RFC 1624: eqn. 3 yields 0x0000 here, not 0xffff.
            assert_eq!(ip.checksum(), 0x0000);
            assert!(ip.verify_checksum());
        }
        // Old checksum 0xffff can only be a corrupt header; it stays corrupt.
        let mut b = sample(&[], 0);
        let mut ip = Ipv4Packet::new_unchecked(&mut b[..]);
        ip.set_checksum(0xffff);
        let ok_before = ip.verify_checksum();
        ip.decrement_ttl_update_checksum();
        assert_eq!(ip.verify_checksum(), ok_before);
    }

    #[test]
    fn ttl_zero_untouched() {
        let mut b = sample(&[], 0);
        let mut ip = Ipv4Packet::new_unchecked(&mut b[..]);
        ip.set_ttl(0);
        ip.fill_checksum();
        let before = b.clone();
        assert_eq!(
            Ipv4Packet::new_unchecked(&mut b[..]).decrement_ttl_update_checksum(),
            None
        );
        assert_eq!(b, before);
    }

    #[test]
    fn setters_after_checked_never_panic_accessors() {
        let mut b = sample(&[], 8);
        let mut ip = Ipv4Packet::new_checked(&mut b[..]).unwrap();
        ip.set_total_len(0xffff);
        assert_eq!(ip.payload().len(), 8);
        ip.set_ihl(15);
        assert_eq!(ip.options().len(), 8);
        assert!(ip.payload().is_empty());
        ip.set_total_len(0);
        assert!(ip.payload_mut().is_empty());
        let _ = ip.verify_checksum();
        ip.fill_checksum();
    }

    #[test]
    fn protocol_display() {
        assert_eq!(IpProtocol::UDP.to_string(), "UDP");
        assert_eq!(IpProtocol::ICMPV6.to_string(), "ICMPv6");
        assert_eq!(IpProtocol(253).to_string(), "proto 253");
        assert_eq!(u8::from(IpProtocol::from(6)), 6);
    }
}
