//! IPv6 (RFC 8200) fixed headers.
//!
//! Extension headers are not walked here: [`Ipv6Packet::next_header`] is the
//! value in the fixed header and [`Ipv6Packet::payload`] starts right after it.
//!
//! ```
//! use pktvec_packet::wire::{IpProtocol, Ipv6Packet, WireError};
//! use std::net::Ipv6Addr;
//!
//! let mut buf = [0u8; 48];
//! let mut ip = Ipv6Packet::new_unchecked(&mut buf[..]);
//! ip.set_version(6);
//! ip.set_flow_label(0xabcde);
//! ip.set_payload_len(8);
//! ip.set_next_header(IpProtocol::UDP);
//! ip.set_hop_limit(2);
//! ip.set_src_addr(Ipv6Addr::LOCALHOST);
//!
//! let mut ip = Ipv6Packet::new_checked(&mut buf[..])?;
//! assert_eq!(ip.flow_label(), 0xabcde);
//! assert_eq!(ip.payload().len(), 8);
//! assert_eq!(ip.decrement_hop_limit(), Some(1));
//! # Ok::<(), WireError>(())
//! ```

use super::ipv4::IpProtocol;
use super::{clamp_range, read_u16, read_u32, write_u16, write_u32, WireError};
use std::net::Ipv6Addr;

mod field {
    pub const VER_TC_FLOW: usize = 0;
    pub const PAYLOAD_LEN: usize = 4;
    pub const NEXT_HEADER: usize = 6;
    pub const HOP_LIMIT: usize = 7;
    pub const SRC: usize = 8;
    pub const DST: usize = 24;
}

/// A read/write view of an IPv6 fixed header and its payload.
///
/// `new_checked` guarantees: buffer ≥ 40 bytes, version 6,
/// 40 + payload length ≤ buffer. The buffer may be longer (Ethernet
/// padding); [`payload`](Self::payload) stops at the payload length. A
/// payload length of 0 (also used by jumbograms, RFC 2675) gives an empty
/// payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv6Packet<T> {
    buffer: T,
}

impl Ipv6Packet<()> {
    /// Length of the fixed header.
    pub const HEADER_LEN: usize = 40;
}

impl<T: AsRef<[u8]>> Ipv6Packet<T> {
    /// Wraps `buffer` without checking it.
    #[inline]
    pub const fn new_unchecked(buffer: T) -> Self {
        Ipv6Packet { buffer }
    }

    /// Wraps `buffer` after checking its length, version and payload length.
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        let b = buffer.as_ref();
        if b.len() < Ipv6Packet::HEADER_LEN {
            return Err(WireError::Truncated);
        }
        if b[field::VER_TC_FLOW] >> 4 != 6 {
            return Err(WireError::BadVersion);
        }
        if Ipv6Packet::HEADER_LEN + usize::from(read_u16(b, field::PAYLOAD_LEN)) > b.len() {
            return Err(WireError::BadTotalLength);
        }
        Ok(Ipv6Packet { buffer })
    }

    /// Returns the wrapped buffer.
    #[inline]
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Header length: always 40.
    #[inline]
    pub const fn header_len(&self) -> usize {
        Ipv6Packet::HEADER_LEN
    }

    /// Version (6 after a checked construction).
    #[inline]
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[field::VER_TC_FLOW] >> 4
    }

    /// Traffic class (DSCP << 2 | ECN).
    #[inline]
    pub fn traffic_class(&self) -> u8 {
        (read_u16(self.buffer.as_ref(), field::VER_TC_FLOW) >> 4) as u8
    }

    /// Flow label (20 bits).
    #[inline]
    pub fn flow_label(&self) -> u32 {
        read_u32(self.buffer.as_ref(), field::VER_TC_FLOW) & 0x000f_ffff
    }

    /// Payload length (everything after the fixed header, extension headers
    /// included).
    #[inline]
    pub fn payload_len(&self) -> u16 {
        read_u16(self.buffer.as_ref(), field::PAYLOAD_LEN)
    }

    /// Total length: 40 + payload length.
    #[inline]
    pub fn total_len(&self) -> usize {
        Ipv6Packet::HEADER_LEN + usize::from(self.payload_len())
    }

    /// Next header.
    #[inline]
    pub fn next_header(&self) -> IpProtocol {
        IpProtocol(self.buffer.as_ref()[field::NEXT_HEADER])
    }

    /// Hop limit.
    #[inline]
    pub fn hop_limit(&self) -> u8 {
        self.buffer.as_ref()[field::HOP_LIMIT]
    }

    /// Source address.
    #[inline]
    pub fn src_addr(&self) -> Ipv6Addr {
        addr_at(self.buffer.as_ref(), field::SRC)
    }

    /// Destination address.
    #[inline]
    pub fn dst_addr(&self) -> Ipv6Addr {
        addr_at(self.buffer.as_ref(), field::DST)
    }

    /// Payload: bytes 40..40 + payload length.
    #[inline]
    pub fn payload(&self) -> &[u8] {
        let (s, e) = self.payload_range();
        &self.buffer.as_ref()[s..e]
    }

    /// Byte range of the payload inside the buffer, clamped to the buffer.
    #[inline]
    fn payload_range(&self) -> (usize, usize) {
        clamp_range(
            Ipv6Packet::HEADER_LEN,
            self.total_len(),
            self.buffer.as_ref().len(),
        )
    }
}

#[inline(always)]
fn addr_at(b: &[u8], at: usize) -> Ipv6Addr {
    let mut o = [0u8; 16];
    o.copy_from_slice(&b[at..at + 16]);
    Ipv6Addr::from(o)
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv6Packet<T> {
    /// Sets the version nibble.
    #[inline]
    pub fn set_version(&mut self, v: u8) {
        let b = &mut self.buffer.as_mut()[0];
        *b = (*b & 0x0f) | (v << 4);
    }

    /// Sets the traffic class.
    #[inline]
    pub fn set_traffic_class(&mut self, tc: u8) {
        let b = self.buffer.as_mut();
        let w = (read_u16(b, 0) & 0xf00f) | (u16::from(tc) << 4);
        write_u16(b, 0, w);
    }

    /// Sets the flow label (low 20 bits used).
    #[inline]
    pub fn set_flow_label(&mut self, fl: u32) {
        let b = self.buffer.as_mut();
        let w = (read_u32(b, 0) & 0xfff0_0000) | (fl & 0x000f_ffff);
        write_u32(b, 0, w);
    }

    /// Sets the payload length.
    #[inline]
    pub fn set_payload_len(&mut self, v: u16) {
        write_u16(self.buffer.as_mut(), field::PAYLOAD_LEN, v);
    }

    /// Sets the next header.
    #[inline]
    pub fn set_next_header(&mut self, p: IpProtocol) {
        self.buffer.as_mut()[field::NEXT_HEADER] = p.0;
    }

    /// Sets the hop limit.
    #[inline]
    pub fn set_hop_limit(&mut self, v: u8) {
        self.buffer.as_mut()[field::HOP_LIMIT] = v;
    }

    /// Sets the source address.
    #[inline]
    pub fn set_src_addr(&mut self, a: Ipv6Addr) {
        self.buffer.as_mut()[field::SRC..field::SRC + 16].copy_from_slice(&a.octets());
    }

    /// Sets the destination address.
    #[inline]
    pub fn set_dst_addr(&mut self, a: Ipv6Addr) {
        self.buffer.as_mut()[field::DST..field::DST + 16].copy_from_slice(&a.octets());
    }

    /// Mutable payload.
    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let (s, e) = self.payload_range();
        &mut self.buffer.as_mut()[s..e]
    }

    /// Decrements the hop limit (IPv6 has no header checksum). Returns the
    /// new hop limit, or `None` (packet untouched) if it was already 0. A
    /// router drops packets for which this returns `None` or `Some(0)`.
    #[inline]
    pub fn decrement_hop_limit(&mut self) -> Option<u8> {
        let b = &mut self.buffer.as_mut()[field::HOP_LIMIT];
        let h = b.checked_sub(1)?;
        *b = h;
        Some(h)
    }
}

super::impl_into_payload!(Ipv6Packet);

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(payload_len: usize) -> Vec<u8> {
        let mut b = vec![0u8; 40 + payload_len];
        let mut ip = Ipv6Packet::new_unchecked(&mut b[..]);
        ip.set_version(6);
        ip.set_traffic_class(0xb8);
        ip.set_flow_label(0x12345);
        ip.set_payload_len(payload_len as u16);
        ip.set_next_header(IpProtocol::TCP);
        ip.set_hop_limit(64);
        ip.set_src_addr("2001:db8::1".parse().unwrap());
        ip.set_dst_addr("2001:db8:ffff::2".parse().unwrap());
        for (i, x) in ip.payload_mut().iter_mut().enumerate() {
            *x = i as u8;
        }
        b
    }

    #[test]
    fn getters() {
        let b = sample(5);
        let ip = Ipv6Packet::new_checked(&b[..]).unwrap();
        assert_eq!(ip.version(), 6);
        assert_eq!(ip.traffic_class(), 0xb8);
        assert_eq!(ip.flow_label(), 0x12345);
        assert_eq!(ip.payload_len(), 5);
        assert_eq!(ip.total_len(), 45);
        assert_eq!(ip.next_header(), IpProtocol::TCP);
        assert_eq!(ip.hop_limit(), 64);
        assert_eq!(ip.src_addr(), "2001:db8::1".parse::<Ipv6Addr>().unwrap());
        assert_eq!(
            ip.dst_addr(),
            "2001:db8:ffff::2".parse::<Ipv6Addr>().unwrap()
        );
        assert_eq!(ip.payload(), &[0, 1, 2, 3, 4]);
        assert_eq!(ip.header_len(), 40);
        assert_eq!(b[0..4], [0x6b, 0x81, 0x23, 0x45]);
    }

    #[test]
    fn field_setters_do_not_clobber_neighbours() {
        let mut b = sample(0);
        let mut ip = Ipv6Packet::new_unchecked(&mut b[..]);
        ip.set_traffic_class(0xff);
        assert_eq!((ip.version(), ip.flow_label()), (6, 0x12345));
        ip.set_flow_label(0xffff_ffff);
        assert_eq!(
            (ip.version(), ip.traffic_class(), ip.flow_label()),
            (6, 0xff, 0xfffff)
        );
        ip.set_traffic_class(0);
        ip.set_flow_label(0);
        assert_eq!(ip.into_inner()[0..4], [0x60, 0, 0, 0]);
    }

    #[test]
    fn truncated_and_lying_length() {
        let b = sample(10);
        for n in 0..b.len() {
            let want = if n < 40 {
                WireError::Truncated
            } else {
                WireError::BadTotalLength
            };
            assert_eq!(
                Ipv6Packet::new_checked(&b[..n]).err(),
                Some(want),
                "len {n}"
            );
        }
        let mut b = sample(10);
        b[4..6].copy_from_slice(&0xffffu16.to_be_bytes());
        assert_eq!(
            Ipv6Packet::new_checked(&b[..]).err(),
            Some(WireError::BadTotalLength)
        );
        let mut padded = sample(2);
        padded.resize(60, 0);
        assert_eq!(
            Ipv6Packet::new_checked(&padded[..]).unwrap().payload(),
            &[0, 1]
        );
    }

    #[test]
    fn bad_version() {
        let mut b = sample(0);
        for v in [0u8, 4, 7, 15] {
            b[0] = (b[0] & 0x0f) | (v << 4);
            assert_eq!(
                Ipv6Packet::new_checked(&b[..]).err(),
                Some(WireError::BadVersion)
            );
        }
    }

    #[test]
    fn hop_limit_decrement() {
        let mut b = sample(0);
        let mut ip = Ipv6Packet::new_checked(&mut b[..]).unwrap();
        ip.set_hop_limit(1);
        assert_eq!(ip.decrement_hop_limit(), Some(0));
        assert_eq!(ip.decrement_hop_limit(), None);
        assert_eq!(ip.hop_limit(), 0);
    }

    #[test]
    fn setters_after_checked_never_panic_accessors() {
        let mut b = sample(4);
        let mut ip = Ipv6Packet::new_checked(&mut b[..]).unwrap();
        ip.set_payload_len(1000);
        assert_eq!(ip.payload().len(), 4);
        assert_eq!(ip.payload_mut().len(), 4);
    }
}
