//! ICMP for IPv4 (RFC 792) and ICMPv6 (RFC 4443).
//!
//! Both views cover the 8-byte header common to all messages (type, code,
//! checksum and four message-specific bytes, which for echo are the
//! identifier and sequence number) and treat the whole buffer as the message:
//! hand them exactly the IP payload. The ICMPv4 checksum covers the message
//! only; the ICMPv6 checksum also covers the IPv6 pseudo header.
//!
//! ```
//! use pktvec_packet::wire::{Icmpv4Packet, Icmpv4Type, WireError};
//!
//! let mut buf = [0u8; 12];
//! let mut icmp = Icmpv4Packet::new_unchecked(&mut buf[..]);
//! icmp.set_msg_type(Icmpv4Type::ECHO_REQUEST);
//! icmp.set_echo_ident(0x1234);
//! icmp.set_echo_seq(1);
//! icmp.payload_mut().copy_from_slice(b"ping");
//! icmp.fill_checksum();
//!
//! let icmp = Icmpv4Packet::new_checked(&buf[..])?;
//! assert_eq!(icmp.msg_type(), Icmpv4Type::ECHO_REQUEST);
//! assert_eq!((icmp.echo_ident(), icmp.echo_seq()), (0x1234, 1));
//! assert!(icmp.verify_checksum());
//! # Ok::<(), WireError>(())
//! ```

use super::ipv4::IpProtocol;
use super::{read_u16, read_u32, write_u16, write_u32, WireError};
use crate::checksum;
use core::fmt;
use std::net::Ipv6Addr;

/// An ICMPv4 message type.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Debug)]
pub struct Icmpv4Type(pub u8);

impl Icmpv4Type {
    /// Echo reply, 0.
    pub const ECHO_REPLY: Icmpv4Type = Icmpv4Type(0);
    /// Destination unreachable, 3.
    pub const DEST_UNREACHABLE: Icmpv4Type = Icmpv4Type(3);
    /// Redirect, 5.
    pub const REDIRECT: Icmpv4Type = Icmpv4Type(5);
    /// Echo request, 8.
    pub const ECHO_REQUEST: Icmpv4Type = Icmpv4Type(8);
    /// Time exceeded, 11.
    pub const TIME_EXCEEDED: Icmpv4Type = Icmpv4Type(11);
    /// Parameter problem, 12.
    pub const PARAM_PROBLEM: Icmpv4Type = Icmpv4Type(12);
}

impl fmt::Display for Icmpv4Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Icmpv4Type::ECHO_REPLY => f.write_str("echo reply"),
            Icmpv4Type::DEST_UNREACHABLE => f.write_str("destination unreachable"),
            Icmpv4Type::REDIRECT => f.write_str("redirect"),
            Icmpv4Type::ECHO_REQUEST => f.write_str("echo request"),
            Icmpv4Type::TIME_EXCEEDED => f.write_str("time exceeded"),
            Icmpv4Type::PARAM_PROBLEM => f.write_str("parameter problem"),
            Icmpv4Type(v) => write!(f, "type {v}"),
        }
    }
}

/// An ICMPv6 message type.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Debug)]
pub struct Icmpv6Type(pub u8);

impl Icmpv6Type {
    /// Destination unreachable, 1.
    pub const DEST_UNREACHABLE: Icmpv6Type = Icmpv6Type(1);
    /// Packet too big, 2.
    pub const PACKET_TOO_BIG: Icmpv6Type = Icmpv6Type(2);
    /// Time exceeded, 3.
    pub const TIME_EXCEEDED: Icmpv6Type = Icmpv6Type(3);
    /// Parameter problem, 4.
    pub const PARAM_PROBLEM: Icmpv6Type = Icmpv6Type(4);
    /// Echo request, 128.
    pub const ECHO_REQUEST: Icmpv6Type = Icmpv6Type(128);
    /// Echo reply, 129.
    pub const ECHO_REPLY: Icmpv6Type = Icmpv6Type(129);
    /// NDP router solicitation, 133.
    pub const ROUTER_SOLICIT: Icmpv6Type = Icmpv6Type(133);
    /// NDP router advertisement, 134.
    pub const ROUTER_ADVERT: Icmpv6Type = Icmpv6Type(134);
    /// NDP neighbor solicitation, 135.
    pub const NEIGHBOR_SOLICIT: Icmpv6Type = Icmpv6Type(135);
    /// NDP neighbor advertisement, 136.
    pub const NEIGHBOR_ADVERT: Icmpv6Type = Icmpv6Type(136);
    /// NDP redirect, 137.
    pub const REDIRECT: Icmpv6Type = Icmpv6Type(137);

    /// `true` for error messages (types 0–127).
    #[inline]
    pub const fn is_error(self) -> bool {
        self.0 < 128
    }
}

impl fmt::Display for Icmpv6Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match *self {
            Icmpv6Type::DEST_UNREACHABLE => "destination unreachable",
            Icmpv6Type::PACKET_TOO_BIG => "packet too big",
            Icmpv6Type::TIME_EXCEEDED => "time exceeded",
            Icmpv6Type::PARAM_PROBLEM => "parameter problem",
            Icmpv6Type::ECHO_REQUEST => "echo request",
            Icmpv6Type::ECHO_REPLY => "echo reply",
            Icmpv6Type::ROUTER_SOLICIT => "router solicitation",
            Icmpv6Type::ROUTER_ADVERT => "router advertisement",
            Icmpv6Type::NEIGHBOR_SOLICIT => "neighbor solicitation",
            Icmpv6Type::NEIGHBOR_ADVERT => "neighbor advertisement",
            Icmpv6Type::REDIRECT => "redirect",
            Icmpv6Type(v) => return write!(f, "type {v}"),
        };
        f.write_str(s)
    }
}

mod field {
    pub const TYPE: usize = 0;
    pub const CODE: usize = 1;
    pub const CHECKSUM: usize = 2;
    pub const IDENT: usize = 4;
    pub const SEQ: usize = 6;
}

/// Length of the common ICMP/ICMPv6 header.
const HEADER_LEN: usize = 8;

/// Methods shared by both ICMP views.
macro_rules! icmp_common {
    ($name:ident, $ty:ident) => {
        impl $name<()> {
            /// Length of the common header (type, code, checksum, 4 bytes).
            pub const HEADER_LEN: usize = HEADER_LEN;
        }

        impl<T: AsRef<[u8]>> $name<T> {
            /// Wraps `buffer` without checking it.
            #[inline]
            pub const fn new_unchecked(buffer: T) -> Self {
                $name { buffer }
            }

            /// Wraps `buffer` after checking that it holds the 8-byte header.
            #[inline]
            pub fn new_checked(buffer: T) -> Result<Self, WireError> {
                if buffer.as_ref().len() < HEADER_LEN {
                    return Err(WireError::Truncated);
                }
                Ok($name { buffer })
            }

            /// Returns the wrapped buffer.
            #[inline]
            pub fn into_inner(self) -> T {
                self.buffer
            }

            /// Header length: always 8.
            #[inline]
            pub const fn header_len(&self) -> usize {
                HEADER_LEN
            }

            /// Message type.
            #[inline]
            pub fn msg_type(&self) -> $ty {
                $ty(self.buffer.as_ref()[field::TYPE])
            }

            /// Message code.
            #[inline]
            pub fn msg_code(&self) -> u8 {
                self.buffer.as_ref()[field::CODE]
            }

            /// Checksum field.
            #[inline]
            pub fn checksum(&self) -> u16 {
                read_u16(self.buffer.as_ref(), field::CHECKSUM)
            }

            /// Echo identifier (bytes 4..6; meaningful for echo messages).
            #[inline]
            pub fn echo_ident(&self) -> u16 {
                read_u16(self.buffer.as_ref(), field::IDENT)
            }

            /// Echo sequence number (bytes 6..8; meaningful for echo messages).
            #[inline]
            pub fn echo_seq(&self) -> u16 {
                read_u16(self.buffer.as_ref(), field::SEQ)
            }

            /// Bytes 4..8 as a big-endian `u32` (e.g. MTU, pointer, unused).
            #[inline]
            pub fn rest_of_header(&self) -> u32 {
                read_u32(self.buffer.as_ref(), field::IDENT)
            }

            /// Message body after the 8-byte header.
            #[inline]
            pub fn payload(&self) -> &[u8] {
                let (s, e) = self.payload_range();
                &self.buffer.as_ref()[s..e]
            }

            /// Byte range of the payload inside the buffer.
            #[inline]
            fn payload_range(&self) -> (usize, usize) {
                let len = self.buffer.as_ref().len();
                (HEADER_LEN.min(len), len)
            }
        }

        impl<T: AsRef<[u8]> + AsMut<[u8]>> $name<T> {
            /// Sets the message type.
            #[inline]
            pub fn set_msg_type(&mut self, t: $ty) {
                self.buffer.as_mut()[field::TYPE] = t.0;
            }

            /// Sets the message code.
            #[inline]
            pub fn set_msg_code(&mut self, c: u8) {
                self.buffer.as_mut()[field::CODE] = c;
            }

            /// Sets the checksum field.
            #[inline]
            pub fn set_checksum(&mut self, v: u16) {
                write_u16(self.buffer.as_mut(), field::CHECKSUM, v);
            }

            /// Sets the echo identifier.
            #[inline]
            pub fn set_echo_ident(&mut self, v: u16) {
                write_u16(self.buffer.as_mut(), field::IDENT, v);
            }

            /// Sets the echo sequence number.
            #[inline]
            pub fn set_echo_seq(&mut self, v: u16) {
                write_u16(self.buffer.as_mut(), field::SEQ, v);
            }

            /// Sets bytes 4..8.
            #[inline]
            pub fn set_rest_of_header(&mut self, v: u32) {
                write_u32(self.buffer.as_mut(), field::IDENT, v);
            }

            /// Mutable message body after the 8-byte header.
            #[inline]
            pub fn payload_mut(&mut self) -> &mut [u8] {
                let (s, e) = self.payload_range();
                &mut self.buffer.as_mut()[s..e]
            }
        }

        super::impl_into_payload!($name);
    };
}

/// A read/write view of an ICMPv4 message.
///
/// `new_checked` guarantees a buffer of at least 8 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Icmpv4Packet<T> {
    buffer: T,
}

icmp_common!(Icmpv4Packet, Icmpv4Type);

impl<T: AsRef<[u8]>> Icmpv4Packet<T> {
    /// `true` if the checksum over the whole buffer is correct.
    #[inline]
    pub fn verify_checksum(&self) -> bool {
        checksum::checksum(self.buffer.as_ref()) == 0
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Icmpv4Packet<T> {
    /// Computes and stores the checksum over the whole buffer.
    #[inline]
    pub fn fill_checksum(&mut self) {
        self.set_checksum(0);
        let c = checksum::checksum(self.buffer.as_ref());
        self.set_checksum(c);
    }
}

/// A read/write view of an ICMPv6 message.
///
/// `new_checked` guarantees a buffer of at least 8 bytes.
///
/// ```
/// use pktvec_packet::wire::{Icmpv6Packet, Icmpv6Type};
/// use std::net::Ipv6Addr;
///
/// let (src, dst): (Ipv6Addr, Ipv6Addr) = ("fe80::1".parse().unwrap(), "ff02::1".parse().unwrap());
/// let mut buf = [0u8; 8];
/// let mut icmp = Icmpv6Packet::new_checked(&mut buf[..]).unwrap();
/// icmp.set_msg_type(Icmpv6Type::ECHO_REPLY);
/// icmp.fill_checksum(src, dst);
/// assert!(icmp.verify_checksum(src, dst));
/// assert!(!icmp.msg_type().is_error());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Icmpv6Packet<T> {
    buffer: T,
}

icmp_common!(Icmpv6Packet, Icmpv6Type);

impl<T: AsRef<[u8]>> Icmpv6Packet<T> {
    /// `true` if the checksum over the IPv6 pseudo header and the whole
    /// buffer is correct.
    #[inline]
    pub fn verify_checksum(&self, src: Ipv6Addr, dst: Ipv6Addr) -> bool {
        let b = self.buffer.as_ref();
        let s = checksum::pseudo_header_v6(src, dst, IpProtocol::ICMPV6, b.len() as u32)
            + checksum::sum(b);
        checksum::finish(s) == 0
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Icmpv6Packet<T> {
    /// Computes and stores the checksum over the IPv6 pseudo header and the
    /// whole buffer.
    #[inline]
    pub fn fill_checksum(&mut self, src: Ipv6Addr, dst: Ipv6Addr) {
        self.set_checksum(0);
        let b = self.buffer.as_ref();
        let s = checksum::pseudo_header_v6(src, dst, IpProtocol::ICMPV6, b.len() as u32)
            + checksum::sum(b);
        self.set_checksum(checksum::finish(s));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Echo request captured from `ping 127.0.0.1` payload shortened:
    /// type 8, code 0, id 0x0001, seq 0x0002, "abcd".
    fn echo4() -> Vec<u8> {
        let mut b = vec![8, 0, 0, 0, 0, 1, 0, 2, b'a', b'b', b'c', b'd'];
        let c = checksum::checksum(&b);
        b[2..4].copy_from_slice(&c.to_be_bytes());
        b
    }

    #[test]
    fn icmpv4_getters() {
        let b = echo4();
        let p = Icmpv4Packet::new_checked(&b[..]).unwrap();
        assert_eq!(p.msg_type(), Icmpv4Type::ECHO_REQUEST);
        assert_eq!(p.msg_code(), 0);
        assert_eq!((p.echo_ident(), p.echo_seq()), (1, 2));
        assert_eq!(p.rest_of_header(), 0x0001_0002);
        assert_eq!(p.payload(), b"abcd");
        assert_eq!(p.header_len(), 8);
        assert!(p.verify_checksum());
        assert_eq!(p.msg_type().to_string(), "echo request");
        assert_eq!(Icmpv4Type(42).to_string(), "type 42");
    }

    #[test]
    fn icmpv4_setters_and_checksum() {
        let mut b = echo4();
        let mut p = Icmpv4Packet::new_checked(&mut b[..]).unwrap();
        p.set_msg_type(Icmpv4Type::ECHO_REPLY);
        assert!(!p.verify_checksum());
        p.fill_checksum();
        assert!(p.verify_checksum());
        p.set_msg_code(3);
        p.set_rest_of_header(0xaabb_ccdd);
        assert_eq!((p.echo_ident(), p.echo_seq()), (0xaabb, 0xccdd));
        p.payload_mut()[0] = b'z';
        p.fill_checksum();
        assert!(p.verify_checksum());
        assert_eq!(p.into_inner()[8], b'z');
    }

    #[test]
    fn truncated_at_every_length() {
        let b = echo4();
        for n in 0..8 {
            assert_eq!(
                Icmpv4Packet::new_checked(&b[..n]).err(),
                Some(WireError::Truncated)
            );
            assert_eq!(
                Icmpv6Packet::new_checked(&b[..n]).err(),
                Some(WireError::Truncated)
            );
        }
        assert!(Icmpv4Packet::new_checked(&b[..8])
            .unwrap()
            .payload()
            .is_empty());
    }

    #[test]
    fn icmpv6_checksum() {
        let src: Ipv6Addr = "2001:db8::1".parse().unwrap();
        let dst: Ipv6Addr = "2001:db8::2".parse().unwrap();
        for len in 8..20 {
            let mut b = vec![0u8; len];
            let mut p = Icmpv6Packet::new_checked(&mut b[..]).unwrap();
            p.set_msg_type(Icmpv6Type::ECHO_REQUEST);
            p.set_echo_ident(7);
            p.set_echo_seq(len as u16);
            for (i, x) in p.payload_mut().iter_mut().enumerate() {
                *x = (i * 37) as u8;
            }
            p.fill_checksum(src, dst);
            assert!(p.verify_checksum(src, dst));
            // Swapping src and dst does not change a one's-complement sum.
            assert!(p.verify_checksum(dst, src));
            assert!(!p.verify_checksum(src, "2001:db8::3".parse().unwrap()));
            assert_eq!(p.msg_type(), Icmpv6Type::ECHO_REQUEST);
            assert_eq!(p.msg_type().to_string(), "echo request");
        }
        assert!(Icmpv6Type::TIME_EXCEEDED.is_error());
        assert_eq!(Icmpv6Type(200).to_string(), "type 200");
    }
}
