//! UDP (RFC 768) datagrams.
//!
//! ```
//! use pktvec_packet::wire::{UdpPacket, WireError};
//! use std::net::Ipv6Addr;
//!
//! let mut buf = [0u8; 12];
//! let mut udp = UdpPacket::new_unchecked(&mut buf[..]);
//! udp.set_src_port(546);
//! udp.set_dst_port(547);
//! udp.set_len(12);
//! udp.payload_mut().copy_from_slice(b"ping");
//! let (src, dst) = (Ipv6Addr::LOCALHOST, Ipv6Addr::LOCALHOST);
//! udp.fill_checksum(src, dst);
//!
//! let udp = UdpPacket::new_checked(&buf[..])?;
//! assert_eq!((udp.src_port(), udp.dst_port()), (546, 547));
//! assert_eq!(udp.payload(), b"ping");
//! assert!(udp.verify_checksum(src, dst));
//! # Ok::<(), WireError>(())
//! ```

use super::ipv4::IpProtocol;
use super::{clamp_range, read_u16, write_u16, WireError};
use crate::checksum::{self, PseudoHeaderAddr};

mod field {
    pub const SRC_PORT: usize = 0;
    pub const DST_PORT: usize = 2;
    pub const LENGTH: usize = 4;
    pub const CHECKSUM: usize = 6;
}

/// A read/write view of a UDP header and its payload.
///
/// `new_checked` guarantees: buffer ≥ 8 bytes and 8 ≤ length field ≤ buffer.
/// The payload ends at the length field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdpPacket<T> {
    buffer: T,
}

impl UdpPacket<()> {
    /// Length of the UDP header.
    pub const HEADER_LEN: usize = 8;
}

impl<T: AsRef<[u8]>> UdpPacket<T> {
    /// Wraps `buffer` without checking it.
    #[inline]
    pub const fn new_unchecked(buffer: T) -> Self {
        UdpPacket { buffer }
    }

    /// Wraps `buffer` after checking its length and the length field.
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        let b = buffer.as_ref();
        if b.len() < UdpPacket::HEADER_LEN {
            return Err(WireError::Truncated);
        }
        let len = usize::from(read_u16(b, field::LENGTH));
        if len < UdpPacket::HEADER_LEN || len > b.len() {
            return Err(WireError::BadTotalLength);
        }
        Ok(UdpPacket { buffer })
    }

    /// Returns the wrapped buffer.
    #[inline]
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Header length: always 8.
    #[inline]
    pub const fn header_len(&self) -> usize {
        UdpPacket::HEADER_LEN
    }

    /// Source port.
    #[inline]
    pub fn src_port(&self) -> u16 {
        read_u16(self.buffer.as_ref(), field::SRC_PORT)
    }

    /// Destination port.
    #[inline]
    pub fn dst_port(&self) -> u16 {
        read_u16(self.buffer.as_ref(), field::DST_PORT)
    }

    /// Length field (header and payload).
    #[inline]
    pub fn len(&self) -> u16 {
        read_u16(self.buffer.as_ref(), field::LENGTH)
    }

    /// `true` if the datagram has no payload (length field ≤ 8).
    #[inline]
    pub fn is_empty(&self) -> bool {
        usize::from(self.len()) <= UdpPacket::HEADER_LEN
    }

    /// Checksum field (0 = none, IPv4 only).
    #[inline]
    pub fn checksum(&self) -> u16 {
        read_u16(self.buffer.as_ref(), field::CHECKSUM)
    }

    /// Payload: bytes 8..length.
    #[inline]
    pub fn payload(&self) -> &[u8] {
        let (s, e) = self.payload_range();
        &self.buffer.as_ref()[s..e]
    }

    /// Byte range of the payload inside the buffer, clamped to the buffer.
    #[inline]
    fn payload_range(&self) -> (usize, usize) {
        clamp_range(
            UdpPacket::HEADER_LEN,
            usize::from(self.len()),
            self.buffer.as_ref().len(),
        )
    }

    /// The datagram covered by the checksum: bytes 0..length (clamped).
    #[inline]
    fn datagram(&self) -> &[u8] {
        let b = self.buffer.as_ref();
        &b[..usize::from(self.len()).min(b.len())]
    }

    /// `true` if the checksum is correct for the pseudo header `src`, `dst`
    /// (either both [`std::net::Ipv4Addr`] or both [`std::net::Ipv6Addr`]).
    /// Over IPv4 a zero checksum means "not computed" and verifies; over
    /// IPv6 it is invalid (RFC 8200 §8.1).
    #[inline]
    pub fn verify_checksum<A: PseudoHeaderAddr>(&self, src: A, dst: A) -> bool {
        if self.checksum() == 0 {
            return !A::IS_IPV6;
        }
        let d = self.datagram();
        let s = A::pseudo_header_sum(src, dst, IpProtocol::UDP, d.len() as u32) + checksum::sum(d);
        checksum::finish(s) == 0
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> UdpPacket<T> {
    /// Sets the source port.
    #[inline]
    pub fn set_src_port(&mut self, v: u16) {
        write_u16(self.buffer.as_mut(), field::SRC_PORT, v);
    }

    /// Sets the destination port.
    #[inline]
    pub fn set_dst_port(&mut self, v: u16) {
        write_u16(self.buffer.as_mut(), field::DST_PORT, v);
    }

    /// Sets the length field.
    #[inline]
    pub fn set_len(&mut self, v: u16) {
        write_u16(self.buffer.as_mut(), field::LENGTH, v);
    }

    /// Sets the checksum field.
    #[inline]
    pub fn set_checksum(&mut self, v: u16) {
        write_u16(self.buffer.as_mut(), field::CHECKSUM, v);
    }

    /// Mutable payload (bytes 8..length).
    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let (s, e) = self.payload_range();
        &mut self.buffer.as_mut()[s..e]
    }

    /// Computes and stores the checksum over the pseudo header and the
    /// datagram (up to the length field, which must already be set). A
    /// computed 0 is sent as 0xFFFF.
    #[inline]
    pub fn fill_checksum<A: PseudoHeaderAddr>(&mut self, src: A, dst: A) {
        self.set_checksum(0);
        let d = self.datagram();
        let s = A::pseudo_header_sum(src, dst, IpProtocol::UDP, d.len() as u32) + checksum::sum(d);
        let c = match checksum::finish(s) {
            0 => 0xffff,
            c => c,
        };
        self.set_checksum(c);
    }
}

super::impl_into_payload!(UdpPacket);

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    fn sample(payload: &[u8]) -> Vec<u8> {
        let mut b = vec![0u8; 8 + payload.len()];
        let mut u = UdpPacket::new_unchecked(&mut b[..]);
        u.set_src_port(5353);
        u.set_dst_port(53);
        u.set_len((8 + payload.len()) as u16);
        u.payload_mut().copy_from_slice(payload);
        b
    }

    const S4: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 1);
    const D4: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 2);

    #[test]
    fn getters_and_checksum_v4() {
        let mut b = sample(b"abcde");
        let mut u = UdpPacket::new_checked(&mut b[..]).unwrap();
        assert_eq!((u.src_port(), u.dst_port(), u.len()), (5353, 53, 13));
        assert_eq!(u.payload(), b"abcde");
        assert!(!u.is_empty());
        assert_eq!(u.header_len(), 8);
        // Zero checksum: "none" over IPv4, invalid over IPv6.
        assert!(u.verify_checksum(S4, D4));
        assert!(!u.verify_checksum(Ipv6Addr::LOCALHOST, Ipv6Addr::LOCALHOST));
        u.fill_checksum(S4, D4);
        assert_ne!(u.checksum(), 0);
        assert!(u.verify_checksum(S4, D4));
        assert!(!u.verify_checksum(S4, Ipv4Addr::new(192, 0, 2, 3)));
        u.payload_mut()[0] ^= 1;
        assert!(!u.verify_checksum(S4, D4));
    }

    #[test]
    fn checksum_v6_and_padding() {
        let s: Ipv6Addr = "fe80::1".parse().unwrap();
        let d: Ipv6Addr = "ff02::1:2".parse().unwrap();
        let mut b = sample(b"xyz");
        UdpPacket::new_unchecked(&mut b[..]).fill_checksum(s, d);
        b.extend_from_slice(&[0xee; 7]); // trailing bytes beyond the length field
        let u = UdpPacket::new_checked(&b[..]).unwrap();
        assert_eq!(u.payload(), b"xyz");
        assert!(u.verify_checksum(s, d));
    }

    #[test]
    fn computed_zero_is_sent_as_ffff() {
        // Search a payload word that makes the computed checksum 0.
        let mut b = sample(&[0, 0]);
        let base = {
            let u = UdpPacket::new_unchecked(&b[..]);
            checksum::fold(
                checksum::pseudo_header_v4(S4, D4, IpProtocol::UDP, 10)
                    + checksum::sum(u.datagram()),
            )
        };
        // fold(base + w) must be 0xffff.
        let w = checksum::fold(0xffff + u64::from(!base));
        b[8..10].copy_from_slice(&w.to_be_bytes());
        let mut u = UdpPacket::new_unchecked(&mut b[..]);
        u.fill_checksum(S4, D4);
        assert_eq!(u.checksum(), 0xffff);
        assert!(u.verify_checksum(S4, D4));
    }

    #[test]
    fn truncated_and_lying_length() {
        let b = sample(b"hello");
        for n in 0..b.len() {
            let want = if n < 8 {
                WireError::Truncated
            } else {
                WireError::BadTotalLength
            };
            assert_eq!(UdpPacket::new_checked(&b[..n]).err(), Some(want), "len {n}");
        }
        let mut b = sample(b"hello");
        for l in [0u16, 7, 14, 0xffff] {
            b[4..6].copy_from_slice(&l.to_be_bytes());
            assert_eq!(
                UdpPacket::new_checked(&b[..]).err(),
                Some(WireError::BadTotalLength)
            );
        }
        b[4..6].copy_from_slice(&8u16.to_be_bytes());
        let u = UdpPacket::new_checked(&b[..]).unwrap();
        assert!(u.is_empty() && u.payload().is_empty());
    }

    #[test]
    fn setters_after_checked_never_panic_accessors() {
        let mut b = sample(b"hi");
        let mut u = UdpPacket::new_checked(&mut b[..]).unwrap();
        u.set_len(0xffff);
        assert_eq!(u.payload().len(), 2);
        let _ = u.verify_checksum(S4, D4);
        u.set_len(3);
        assert!(u.payload_mut().is_empty());
        u.fill_checksum(S4, D4);
    }
}
