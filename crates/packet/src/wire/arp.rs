//! ARP (RFC 826) for Ethernet hardware addresses and IPv4 protocol addresses.
//!
//! ```
//! use pktvec_packet::wire::{ArpOperation, ArpPacket, MacAddr};
//! use std::net::Ipv4Addr;
//!
//! let mut buf = [0u8; ArpPacket::LEN];
//! let mut arp = ArpPacket::new_unchecked(&mut buf[..]);
//! arp.init_eth_ipv4();
//! arp.set_operation(ArpOperation::REQUEST);
//! arp.set_sender_hw_addr(MacAddr([2, 0, 0, 0, 0, 1]));
//! arp.set_sender_proto_addr(Ipv4Addr::new(10, 0, 0, 1));
//! arp.set_target_proto_addr(Ipv4Addr::new(10, 0, 0, 2));
//!
//! let arp = ArpPacket::new_checked(&buf[..]).unwrap();
//! assert_eq!(arp.operation(), ArpOperation::REQUEST);
//! assert_eq!(arp.target_proto_addr(), Ipv4Addr::new(10, 0, 0, 2));
//! assert_eq!(arp.target_hw_addr(), MacAddr::ZERO);
//! ```

use super::ethernet::{EtherType, MacAddr};
use super::{read_u16, write_u16, WireError};
use core::fmt;
use std::net::Ipv4Addr;

/// The ARP operation code.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Default)]
pub struct ArpOperation(pub u16);

impl ArpOperation {
    /// Request, 1.
    pub const REQUEST: ArpOperation = ArpOperation(1);
    /// Reply, 2.
    pub const REPLY: ArpOperation = ArpOperation(2);
}

impl fmt::Display for ArpOperation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ArpOperation::REQUEST => f.write_str("request"),
            ArpOperation::REPLY => f.write_str("reply"),
            ArpOperation(v) => write!(f, "op {v}"),
        }
    }
}

/// A read/write view of an Ethernet/IPv4 ARP packet (28 bytes).
///
/// `new_checked` accepts only hardware type 1 (Ethernet), protocol type
/// 0x0800 (IPv4), hardware length 6 and protocol length 4; anything else is
/// [`WireError::Unsupported`]. The operation is not restricted. Bytes after
/// the 28-byte packet (Ethernet padding) are ignored; ARP has no payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArpPacket<T> {
    buffer: T,
}

mod field {
    pub const HTYPE: usize = 0;
    pub const PTYPE: usize = 2;
    pub const HLEN: usize = 4;
    pub const PLEN: usize = 5;
    pub const OPER: usize = 6;
    pub const SHA: usize = 8;
    pub const SPA: usize = 14;
    pub const THA: usize = 18;
    pub const TPA: usize = 24;
}

impl ArpPacket<()> {
    /// Length of an Ethernet/IPv4 ARP packet.
    pub const LEN: usize = 28;
    /// Hardware type for Ethernet.
    pub const HTYPE_ETHERNET: u16 = 1;
}

impl<T: AsRef<[u8]>> ArpPacket<T> {
    /// Wraps `buffer` without checking it.
    #[inline]
    pub const fn new_unchecked(buffer: T) -> Self {
        ArpPacket { buffer }
    }

    /// Wraps `buffer` after checking its length and that it is Ethernet/IPv4 ARP.
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        let b = buffer.as_ref();
        if b.len() < ArpPacket::LEN {
            return Err(WireError::Truncated);
        }
        if read_u16(b, field::HTYPE) != ArpPacket::HTYPE_ETHERNET
            || read_u16(b, field::PTYPE) != EtherType::IPV4.0
            || b[field::HLEN] != 6
            || b[field::PLEN] != 4
        {
            return Err(WireError::Unsupported);
        }
        Ok(ArpPacket { buffer })
    }

    /// Returns the wrapped buffer.
    #[inline]
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Header length: always 28.
    #[inline]
    pub const fn header_len(&self) -> usize {
        ArpPacket::LEN
    }

    /// Hardware type (1 for Ethernet).
    #[inline]
    pub fn hardware_type(&self) -> u16 {
        read_u16(self.buffer.as_ref(), field::HTYPE)
    }

    /// Protocol type (0x0800 for IPv4).
    #[inline]
    pub fn protocol_type(&self) -> EtherType {
        EtherType(read_u16(self.buffer.as_ref(), field::PTYPE))
    }

    /// Hardware address length (6).
    #[inline]
    pub fn hardware_len(&self) -> u8 {
        self.buffer.as_ref()[field::HLEN]
    }

    /// Protocol address length (4).
    #[inline]
    pub fn protocol_len(&self) -> u8 {
        self.buffer.as_ref()[field::PLEN]
    }

    /// Operation.
    #[inline]
    pub fn operation(&self) -> ArpOperation {
        ArpOperation(read_u16(self.buffer.as_ref(), field::OPER))
    }

    /// Sender hardware address.
    #[inline]
    pub fn sender_hw_addr(&self) -> MacAddr {
        mac_at(self.buffer.as_ref(), field::SHA)
    }

    /// Sender protocol address.
    #[inline]
    pub fn sender_proto_addr(&self) -> Ipv4Addr {
        ipv4_at(self.buffer.as_ref(), field::SPA)
    }

    /// Target hardware address.
    #[inline]
    pub fn target_hw_addr(&self) -> MacAddr {
        mac_at(self.buffer.as_ref(), field::THA)
    }

    /// Target protocol address.
    #[inline]
    pub fn target_proto_addr(&self) -> Ipv4Addr {
        ipv4_at(self.buffer.as_ref(), field::TPA)
    }
}

#[inline(always)]
fn mac_at(b: &[u8], at: usize) -> MacAddr {
    MacAddr([b[at], b[at + 1], b[at + 2], b[at + 3], b[at + 4], b[at + 5]])
}

#[inline(always)]
fn ipv4_at(b: &[u8], at: usize) -> Ipv4Addr {
    Ipv4Addr::new(b[at], b[at + 1], b[at + 2], b[at + 3])
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> ArpPacket<T> {
    /// Writes the fixed Ethernet/IPv4 fields: hardware type 1, protocol type
    /// 0x0800, lengths 6 and 4.
    #[inline]
    pub fn init_eth_ipv4(&mut self) {
        self.set_hardware_type(ArpPacket::HTYPE_ETHERNET);
        self.set_protocol_type(EtherType::IPV4);
        self.set_hardware_len(6);
        self.set_protocol_len(4);
    }

    /// Sets the hardware type.
    #[inline]
    pub fn set_hardware_type(&mut self, v: u16) {
        write_u16(self.buffer.as_mut(), field::HTYPE, v);
    }

    /// Sets the protocol type.
    #[inline]
    pub fn set_protocol_type(&mut self, v: EtherType) {
        write_u16(self.buffer.as_mut(), field::PTYPE, v.0);
    }

    /// Sets the hardware address length.
    #[inline]
    pub fn set_hardware_len(&mut self, v: u8) {
        self.buffer.as_mut()[field::HLEN] = v;
    }

    /// Sets the protocol address length.
    #[inline]
    pub fn set_protocol_len(&mut self, v: u8) {
        self.buffer.as_mut()[field::PLEN] = v;
    }

    /// Sets the operation.
    #[inline]
    pub fn set_operation(&mut self, op: ArpOperation) {
        write_u16(self.buffer.as_mut(), field::OPER, op.0);
    }

    /// Sets the sender hardware address.
    #[inline]
    pub fn set_sender_hw_addr(&mut self, a: MacAddr) {
        self.buffer.as_mut()[field::SHA..field::SHA + 6].copy_from_slice(&a.0);
    }

    /// Sets the sender protocol address.
    #[inline]
    pub fn set_sender_proto_addr(&mut self, a: Ipv4Addr) {
        self.buffer.as_mut()[field::SPA..field::SPA + 4].copy_from_slice(&a.octets());
    }

    /// Sets the target hardware address.
    #[inline]
    pub fn set_target_hw_addr(&mut self, a: MacAddr) {
        self.buffer.as_mut()[field::THA..field::THA + 6].copy_from_slice(&a.0);
    }

    /// Sets the target protocol address.
    #[inline]
    pub fn set_target_proto_addr(&mut self, a: Ipv4Addr) {
        self.buffer.as_mut()[field::TPA..field::TPA + 4].copy_from_slice(&a.octets());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An ARP request captured from the wire (who-has 192.168.1.1 tell 192.168.1.100).
    const REQ: [u8; 28] = [
        0x00, 0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x01, 0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 192,
        168, 1, 100, 0, 0, 0, 0, 0, 0, 192, 168, 1, 1,
    ];

    #[test]
    fn parse_request() {
        let a = ArpPacket::new_checked(&REQ[..]).unwrap();
        assert_eq!(a.hardware_type(), 1);
        assert_eq!(a.protocol_type(), EtherType::IPV4);
        assert_eq!((a.hardware_len(), a.protocol_len()), (6, 4));
        assert_eq!(a.operation(), ArpOperation::REQUEST);
        assert_eq!(
            a.sender_hw_addr(),
            MacAddr([0, 0x11, 0x22, 0x33, 0x44, 0x55])
        );
        assert_eq!(a.sender_proto_addr(), Ipv4Addr::new(192, 168, 1, 100));
        assert_eq!(a.target_hw_addr(), MacAddr::ZERO);
        assert_eq!(a.target_proto_addr(), Ipv4Addr::new(192, 168, 1, 1));
        assert_eq!(a.header_len(), 28);
        assert_eq!(a.operation().to_string(), "request");
    }

    #[test]
    fn truncated_at_every_length() {
        for n in 0..28 {
            assert_eq!(
                ArpPacket::new_checked(&REQ[..n]).err(),
                Some(WireError::Truncated)
            );
        }
        let mut padded = REQ.to_vec();
        padded.resize(46, 0);
        assert!(ArpPacket::new_checked(&padded[..]).is_ok());
    }

    #[test]
    fn unsupported_variants() {
        for (i, v) in [(1, 6u8), (2, 0x86), (4, 8), (5, 16)] {
            let mut b = REQ;
            b[i] = v;
            assert_eq!(
                ArpPacket::new_checked(&b[..]).err(),
                Some(WireError::Unsupported),
                "byte {i}"
            );
        }
    }

    #[test]
    fn setters_roundtrip() {
        let mut b = [0xeeu8; 28];
        let mut a = ArpPacket::new_unchecked(&mut b[..]);
        a.init_eth_ipv4();
        a.set_operation(ArpOperation::REPLY);
        a.set_sender_hw_addr(MacAddr([1, 2, 3, 4, 5, 6]));
        a.set_sender_proto_addr(Ipv4Addr::new(1, 1, 1, 1));
        a.set_target_hw_addr(MacAddr([6, 5, 4, 3, 2, 1]));
        a.set_target_proto_addr(Ipv4Addr::new(2, 2, 2, 2));
        let a = ArpPacket::new_checked(a.into_inner()).unwrap();
        assert_eq!(a.operation(), ArpOperation::REPLY);
        assert_eq!(a.sender_hw_addr(), MacAddr([1, 2, 3, 4, 5, 6]));
        assert_eq!(a.sender_proto_addr(), Ipv4Addr::new(1, 1, 1, 1));
        assert_eq!(a.target_hw_addr(), MacAddr([6, 5, 4, 3, 2, 1]));
        assert_eq!(a.target_proto_addr(), Ipv4Addr::new(2, 2, 2, 2));
        assert_eq!(ArpOperation(9).to_string(), "op 9");
    }
}
