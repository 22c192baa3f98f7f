//! TCP (RFC 9293) segment headers.
//!
//! TCP has no length field: the view treats its whole buffer as the segment,
//! so hand it exactly the IP payload ([`Ipv4Packet::payload`](super::Ipv4Packet::payload)).
//!
//! ```
//! use pktvec_packet::wire::{TcpFlags, TcpPacket, WireError};
//! use std::net::Ipv4Addr;
//!
//! let mut buf = [0u8; 24];
//! let mut tcp = TcpPacket::new_unchecked(&mut buf[..]);
//! tcp.set_src_port(40000);
//! tcp.set_dst_port(443);
//! tcp.set_seq_number(1);
//! tcp.set_header_len(24);
//! tcp.set_flags(TcpFlags::SYN);
//! tcp.set_window(65535);
//! tcp.options_mut().copy_from_slice(&[2, 4, 0x05, 0xb4]); // MSS 1460
//! let (src, dst) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2));
//! tcp.fill_checksum(src, dst);
//!
//! let tcp = TcpPacket::new_checked(&buf[..])?;
//! assert!(tcp.flags().contains(TcpFlags::SYN));
//! assert_eq!(tcp.options(), &[2, 4, 0x05, 0xb4]);
//! assert!(tcp.payload().is_empty());
//! assert!(tcp.verify_checksum(src, dst));
//! # Ok::<(), WireError>(())
//! ```

use super::ipv4::IpProtocol;
use super::{clamp_range, read_u16, read_u32, write_u16, write_u32, WireError};
use crate::checksum::{self, PseudoHeaderAddr};
use core::fmt;
use core::ops::{BitAnd, BitOr, BitOrAssign};

/// The eight TCP control bits (byte 13 of the header).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default, Debug)]
pub struct TcpFlags(pub u8);

impl TcpFlags {
    /// FIN.
    pub const FIN: TcpFlags = TcpFlags(0x01);
    /// SYN.
    pub const SYN: TcpFlags = TcpFlags(0x02);
    /// RST.
    pub const RST: TcpFlags = TcpFlags(0x04);
    /// PSH.
    pub const PSH: TcpFlags = TcpFlags(0x08);
    /// ACK.
    pub const ACK: TcpFlags = TcpFlags(0x10);
    /// URG.
    pub const URG: TcpFlags = TcpFlags(0x20);
    /// ECE.
    pub const ECE: TcpFlags = TcpFlags(0x40);
    /// CWR.
    pub const CWR: TcpFlags = TcpFlags(0x80);

    /// No flags.
    #[inline]
    pub const fn empty() -> Self {
        TcpFlags(0)
    }

    /// `true` if every flag in `other` is set in `self`.
    #[inline]
    pub const fn contains(self, other: TcpFlags) -> bool {
        self.0 & other.0 == other.0
    }

    /// `true` if no flag is set.
    #[inline]
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }
}

impl BitOr for TcpFlags {
    type Output = TcpFlags;
    #[inline]
    fn bitor(self, rhs: TcpFlags) -> TcpFlags {
        TcpFlags(self.0 | rhs.0)
    }
}

impl BitOrAssign for TcpFlags {
    #[inline]
    fn bitor_assign(&mut self, rhs: TcpFlags) {
        self.0 |= rhs.0;
    }
}

impl BitAnd for TcpFlags {
    type Output = TcpFlags;
    #[inline]
    fn bitand(self, rhs: TcpFlags) -> TcpFlags {
        TcpFlags(self.0 & rhs.0)
    }
}

impl fmt::Display for TcpFlags {
    /// `SYN|ACK`-style list, `-` when empty.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const NAMES: [&str; 8] = ["FIN", "SYN", "RST", "PSH", "ACK", "URG", "ECE", "CWR"];
        if self.0 == 0 {
            return f.write_str("-");
        }
        let mut first = true;
        for (i, n) in NAMES.iter().enumerate() {
            if self.0 & (1 << i) != 0 {
                if !first {
                    f.write_str("|")?;
                }
                f.write_str(n)?;
                first = false;
            }
        }
        Ok(())
    }
}

mod field {
    pub const SRC_PORT: usize = 0;
    pub const DST_PORT: usize = 2;
    pub const SEQ: usize = 4;
    pub const ACK: usize = 8;
    pub const DATA_OFF: usize = 12;
    pub const FLAGS: usize = 13;
    pub const WINDOW: usize = 14;
    pub const CHECKSUM: usize = 16;
    pub const URGENT: usize = 18;
}

/// A read/write view of a TCP header, its options and its payload.
///
/// `new_checked` guarantees: buffer ≥ 20 bytes, data offset ≥ 5 and
/// data offset × 4 ≤ buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpPacket<T> {
    buffer: T,
}

impl TcpPacket<()> {
    /// Length of a header without options.
    pub const MIN_HEADER_LEN: usize = 20;
    /// Length of a header with 40 bytes of options.
    pub const MAX_HEADER_LEN: usize = 60;
}

impl<T: AsRef<[u8]>> TcpPacket<T> {
    /// Wraps `buffer` without checking it.
    #[inline]
    pub const fn new_unchecked(buffer: T) -> Self {
        TcpPacket { buffer }
    }

    /// Wraps `buffer` after checking its length and data offset.
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        let b = buffer.as_ref();
        if b.len() < TcpPacket::MIN_HEADER_LEN {
            return Err(WireError::Truncated);
        }
        let hl = usize::from(b[field::DATA_OFF] >> 4) * 4;
        if hl < TcpPacket::MIN_HEADER_LEN {
            return Err(WireError::BadHeaderLength);
        }
        if hl > b.len() {
            return Err(WireError::Truncated);
        }
        Ok(TcpPacket { buffer })
    }

    /// Returns the wrapped buffer.
    #[inline]
    pub fn into_inner(self) -> T {
        self.buffer
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

    /// Sequence number.
    #[inline]
    pub fn seq_number(&self) -> u32 {
        read_u32(self.buffer.as_ref(), field::SEQ)
    }

    /// Acknowledgment number.
    #[inline]
    pub fn ack_number(&self) -> u32 {
        read_u32(self.buffer.as_ref(), field::ACK)
    }

    /// Data offset in 32-bit words.
    #[inline]
    pub fn data_offset(&self) -> u8 {
        self.buffer.as_ref()[field::DATA_OFF] >> 4
    }

    /// Header length in bytes (data offset × 4), options included.
    #[inline]
    pub fn header_len(&self) -> usize {
        usize::from(self.data_offset()) * 4
    }

    /// The eight control bits.
    #[inline]
    pub fn flags(&self) -> TcpFlags {
        TcpFlags(self.buffer.as_ref()[field::FLAGS])
    }

    /// The former NS (ECN nonce) bit, now reserved (RFC 8311).
    #[inline]
    pub fn ns(&self) -> bool {
        self.buffer.as_ref()[field::DATA_OFF] & 0x01 != 0
    }

    /// Receive window.
    #[inline]
    pub fn window(&self) -> u16 {
        read_u16(self.buffer.as_ref(), field::WINDOW)
    }

    /// Checksum field.
    #[inline]
    pub fn checksum(&self) -> u16 {
        read_u16(self.buffer.as_ref(), field::CHECKSUM)
    }

    /// Urgent pointer.
    #[inline]
    pub fn urgent_ptr(&self) -> u16 {
        read_u16(self.buffer.as_ref(), field::URGENT)
    }

    /// Options (bytes 20..header length), possibly empty.
    #[inline]
    pub fn options(&self) -> &[u8] {
        let b = self.buffer.as_ref();
        let (s, e) = clamp_range(TcpPacket::MIN_HEADER_LEN, self.header_len(), b.len());
        &b[s..e]
    }

    /// Payload: everything after the header.
    #[inline]
    pub fn payload(&self) -> &[u8] {
        let (s, e) = self.payload_range();
        &self.buffer.as_ref()[s..e]
    }

    /// Byte range of the payload inside the buffer, clamped to the buffer.
    #[inline]
    fn payload_range(&self) -> (usize, usize) {
        let len = self.buffer.as_ref().len();
        clamp_range(self.header_len(), len, len)
    }

    /// `true` if the checksum over the pseudo header and the whole buffer is
    /// correct.
    #[inline]
    pub fn verify_checksum<A: PseudoHeaderAddr>(&self, src: A, dst: A) -> bool {
        let b = self.buffer.as_ref();
        let s = A::pseudo_header_sum(src, dst, IpProtocol::TCP, b.len() as u32) + checksum::sum(b);
        checksum::finish(s) == 0
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> TcpPacket<T> {
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

    /// Sets the sequence number.
    #[inline]
    pub fn set_seq_number(&mut self, v: u32) {
        write_u32(self.buffer.as_mut(), field::SEQ, v);
    }

    /// Sets the acknowledgment number.
    #[inline]
    pub fn set_ack_number(&mut self, v: u32) {
        write_u32(self.buffer.as_mut(), field::ACK, v);
    }

    /// Sets the data offset in 32-bit words (low 4 bits used).
    #[inline]
    pub fn set_data_offset(&mut self, words: u8) {
        let b = &mut self.buffer.as_mut()[field::DATA_OFF];
        *b = (*b & 0x0f) | (words << 4);
    }

    /// Sets the header length in bytes (rounded down to a multiple of 4).
    #[inline]
    pub fn set_header_len(&mut self, bytes: usize) {
        self.set_data_offset((bytes / 4) as u8);
    }

    /// Sets the eight control bits.
    #[inline]
    pub fn set_flags(&mut self, f: TcpFlags) {
        self.buffer.as_mut()[field::FLAGS] = f.0;
    }

    /// Sets or clears the reserved NS bit.
    #[inline]
    pub fn set_ns(&mut self, on: bool) {
        let b = &mut self.buffer.as_mut()[field::DATA_OFF];
        *b = (*b & !0x01) | u8::from(on);
    }

    /// Sets the receive window.
    #[inline]
    pub fn set_window(&mut self, v: u16) {
        write_u16(self.buffer.as_mut(), field::WINDOW, v);
    }

    /// Sets the checksum field.
    #[inline]
    pub fn set_checksum(&mut self, v: u16) {
        write_u16(self.buffer.as_mut(), field::CHECKSUM, v);
    }

    /// Sets the urgent pointer.
    #[inline]
    pub fn set_urgent_ptr(&mut self, v: u16) {
        write_u16(self.buffer.as_mut(), field::URGENT, v);
    }

    /// Mutable options.
    #[inline]
    pub fn options_mut(&mut self) -> &mut [u8] {
        let (s, e) = clamp_range(
            TcpPacket::MIN_HEADER_LEN,
            self.header_len(),
            self.buffer.as_ref().len(),
        );
        &mut self.buffer.as_mut()[s..e]
    }

    /// Mutable payload.
    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let (s, e) = self.payload_range();
        &mut self.buffer.as_mut()[s..e]
    }

    /// Computes and stores the checksum over the pseudo header and the whole
    /// buffer.
    #[inline]
    pub fn fill_checksum<A: PseudoHeaderAddr>(&mut self, src: A, dst: A) {
        self.set_checksum(0);
        let b = self.buffer.as_ref();
        let s = A::pseudo_header_sum(src, dst, IpProtocol::TCP, b.len() as u32) + checksum::sum(b);
        self.set_checksum(checksum::finish(s));
    }
}

super::impl_into_payload!(TcpPacket);

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    fn sample(opts: &[u8], payload: &[u8]) -> Vec<u8> {
        let hl = 20 + opts.len();
        let mut b = vec![0u8; hl + payload.len()];
        let mut t = TcpPacket::new_unchecked(&mut b[..]);
        t.set_src_port(1234);
        t.set_dst_port(80);
        t.set_seq_number(0xdead_beef);
        t.set_ack_number(0x0102_0304);
        t.set_header_len(hl);
        t.set_flags(TcpFlags::ACK | TcpFlags::PSH);
        t.set_window(29200);
        t.set_urgent_ptr(7);
        t.options_mut().copy_from_slice(opts);
        t.payload_mut().copy_from_slice(payload);
        b
    }

    #[test]
    fn getters() {
        let b = sample(&[1, 1, 1, 0], b"GET /");
        let t = TcpPacket::new_checked(&b[..]).unwrap();
        assert_eq!((t.src_port(), t.dst_port()), (1234, 80));
        assert_eq!((t.seq_number(), t.ack_number()), (0xdead_beef, 0x0102_0304));
        assert_eq!((t.data_offset(), t.header_len()), (6, 24));
        assert_eq!(t.flags(), TcpFlags::ACK | TcpFlags::PSH);
        assert!(!t.ns());
        assert_eq!((t.window(), t.urgent_ptr()), (29200, 7));
        assert_eq!(t.options(), &[1, 1, 1, 0]);
        assert_eq!(t.payload(), b"GET /");
    }

    #[test]
    fn flags_ops_and_display() {
        let f = TcpFlags::SYN | TcpFlags::ACK;
        assert!(f.contains(TcpFlags::SYN) && f.contains(TcpFlags::ACK));
        assert!(!f.contains(TcpFlags::SYN | TcpFlags::FIN));
        assert_eq!(f.to_string(), "SYN|ACK");
        assert_eq!(TcpFlags::empty().to_string(), "-");
        assert!(TcpFlags::empty().is_empty());
        let mut g = TcpFlags::FIN;
        g |= TcpFlags::CWR;
        assert_eq!(g & TcpFlags::CWR, TcpFlags::CWR);
        assert_eq!(
            TcpFlags(0xff).to_string(),
            "FIN|SYN|RST|PSH|ACK|URG|ECE|CWR"
        );
    }

    #[test]
    fn ns_bit_does_not_touch_data_offset() {
        let mut b = sample(&[], b"");
        let mut t = TcpPacket::new_unchecked(&mut b[..]);
        t.set_ns(true);
        assert!(t.ns());
        assert_eq!(t.data_offset(), 5);
        t.set_data_offset(15);
        assert!(t.ns());
        t.set_ns(false);
        assert_eq!(t.data_offset(), 15);
    }

    #[test]
    fn truncated_and_bad_offset() {
        let b = sample(&[0; 12], b"");
        for n in 0..b.len() {
            assert_eq!(
                TcpPacket::new_checked(&b[..n]).err(),
                Some(WireError::Truncated),
                "len {n}"
            );
        }
        let mut b = sample(&[], b"xx");
        for off in 0..5u8 {
            b[12] = off << 4;
            assert_eq!(
                TcpPacket::new_checked(&b[..]).err(),
                Some(WireError::BadHeaderLength)
            );
        }
        b[12] = 6 << 4; // 24 > 22
        assert_eq!(
            TcpPacket::new_checked(&b[..]).err(),
            Some(WireError::Truncated)
        );
    }

    #[test]
    fn checksum_v4_v6() {
        let s4 = Ipv4Addr::new(1, 2, 3, 4);
        let d4 = Ipv4Addr::new(5, 6, 7, 8);
        let s6: Ipv6Addr = "2001:db8::a".parse().unwrap();
        let d6: Ipv6Addr = "2001:db8::b".parse().unwrap();
        for payload in [&b""[..], b"a", b"odd", b"even"] {
            let mut b = sample(&[2, 4, 5, 0xb4], payload);
            let mut t = TcpPacket::new_checked(&mut b[..]).unwrap();
            t.fill_checksum(s4, d4);
            assert!(t.verify_checksum(s4, d4));
            assert!(!t.verify_checksum(d4, d4));
            t.fill_checksum(s6, d6);
            assert!(t.verify_checksum(s6, d6));
            t.set_window(1);
            assert!(!t.verify_checksum(s6, d6));
        }
    }

    #[test]
    fn setters_after_checked_never_panic_accessors() {
        let mut b = sample(&[], b"abc");
        let mut t = TcpPacket::new_checked(&mut b[..]).unwrap();
        t.set_data_offset(15);
        assert_eq!(t.options().len(), 3);
        assert!(t.payload().is_empty());
        assert!(t.payload_mut().is_empty());
        assert_eq!(t.options_mut().len(), 3);
    }
}
