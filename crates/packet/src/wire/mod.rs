//! Zero-copy, bounds-checked views of packet headers.
//!
//! Every protocol has a view type that wraps a byte buffer `T: AsRef<[u8]>`
//! (and `AsMut<[u8]>` for the setters), in the style of smoltcp's `wire`
//! module:
//!
//! | view | protocol | minimum length |
//! |---|---|---|
//! | [`EthernetFrame`] | Ethernet II | 14 |
//! | [`VlanTag`] | IEEE 802.1Q / 802.1ad tag (after the TPID) | 4 |
//! | [`ArpPacket`] | ARP for Ethernet/IPv4 | 28 |
//! | [`Ipv4Packet`] | IPv4 | 20 (+ options) |
//! | [`Ipv6Packet`] | IPv6 fixed header | 40 |
//! | [`UdpPacket`] | UDP | 8 |
//! | [`TcpPacket`] | TCP | 20 (+ options) |
//! | [`Icmpv4Packet`], [`Icmpv6Packet`] | ICMP / ICMPv6 | 8 |
//!
//! # Checked and unchecked construction
//!
//! * `new_unchecked(buf)` wraps any buffer without looking at it. Getters on a
//!   buffer that is too short panic, as slice indexing does.
//! * `new_checked(buf)` validates the buffer length *and* every length field
//!   the view uses to find its payload (IPv4 IHL and total length, IPv6
//!   payload length, UDP length, TCP data offset). When it returns `Ok`, every
//!   getter, `payload()` and `payload_mut()` is in bounds and never panics.
//!   Setters write the fields they are asked to write; a setter that changes a
//!   length field can break that guarantee for the *length-derived* accessors
//!   only, which therefore clamp to the buffer instead of panicking.
//!
//! Nothing here allocates; all getters and setters are `#[inline]` and compile
//! to a few loads and a byte swap.
//!
//! The buffer handed to an L3 or L4 view starts at that header. A view does
//! not care what follows its payload: an IPv4 packet in a padded 60-byte
//! Ethernet frame parses, and [`Ipv4Packet::payload`] stops at the total
//! length. [`TcpPacket`] and the ICMP views have no length field of their own
//! and treat the whole buffer as the segment, so give them the L3 payload
//! ([`Ipv4Packet::payload`], [`Ipv6Packet::payload`]).
//!
//! # Example
//!
//! Build a VLAN-tagged UDP packet, parse it back, and decrement the TTL the
//! way an IPv4 forwarding node does:
//!
//! ```
//! use pktvec_packet::builder::PacketBuilder;
//! use pktvec_packet::wire::{
//!     parse_l2, EtherType, IpProtocol, Ipv4Packet, MacAddr, UdpPacket, WireError,
//! };
//! use std::net::Ipv4Addr;
//!
//! let mut frame = PacketBuilder::ethernet(
//!     MacAddr([0x02, 0, 0, 0, 0, 1]),
//!     MacAddr([0x02, 0, 0, 0, 0, 2]),
//! )
//! .vlan(100)
//! .ipv4(Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2))
//! .ttl(64)
//! .udp(1234, 53)
//! .payload(b"hello")
//! .pad_to(60)
//! .build();
//! assert_eq!(frame.len(), 60);
//!
//! let l2 = parse_l2(&frame)?;
//! assert_eq!(l2.ethertype, EtherType::IPV4);
//! assert_eq!((l2.n_vlans, l2.vlans[0]), (1, 100));
//!
//! let mut ip = Ipv4Packet::new_checked(&mut frame[usize::from(l2.l3_offset)..])?;
//! assert!(ip.verify_checksum());
//! assert_eq!(ip.protocol(), IpProtocol::UDP);
//! {
//!     let udp = UdpPacket::new_checked(ip.payload())?;
//!     assert_eq!(udp.dst_port(), 53);
//!     assert_eq!(udp.payload(), b"hello");
//!     assert!(udp.verify_checksum(ip.src_addr(), ip.dst_addr()));
//! }
//! assert_eq!(ip.decrement_ttl_update_checksum(), Some(63));
//! assert!(ip.verify_checksum());
//! # Ok::<(), WireError>(())
//! ```

/// Adds `into_payload` (for views over `&'a [u8]`) and `into_payload_mut`
/// (for views over `&'a mut [u8]`) to a view with a private
/// `payload_range(&self) -> (usize, usize)`.
macro_rules! impl_into_payload {
    ($name:ident) => {
        impl<'a> $name<&'a [u8]> {
            /// The payload with the lifetime of the underlying buffer rather
            /// than of the view, for descending into the next header from a
            /// function. The view is `Copy`, so it stays usable.
            #[inline]
            pub fn into_payload(self) -> &'a [u8] {
                let (s, e) = self.payload_range();
                &self.buffer[s..e]
            }
        }

        impl<'a> $name<&'a mut [u8]> {
            /// The mutable payload with the lifetime of the underlying buffer
            /// (consumes the view).
            #[inline]
            pub fn into_payload_mut(self) -> &'a mut [u8] {
                let (s, e) = self.payload_range();
                &mut self.buffer[s..e]
            }
        }
    };
}
pub(crate) use impl_into_payload;

pub mod arp;
pub mod ethernet;
pub mod icmp;
pub mod ipv4;
pub mod ipv6;
pub mod ndn;
pub mod tcp;
pub mod udp;

pub use arp::{ArpOperation, ArpPacket};
pub use ethernet::{
    parse_l2, EtherType, EthernetFrame, L2Info, MacAddr, MacAddrParseError, VlanTag,
};
pub use icmp::{Icmpv4Packet, Icmpv4Type, Icmpv6Packet, Icmpv6Type};
pub use ipv4::{IpProtocol, Ipv4Packet};
pub use ipv6::Ipv6Packet;
pub use ndn::NdnInterest;
pub use tcp::{TcpFlags, TcpPacket};
pub use udp::UdpPacket;

/// Why a buffer was rejected by a `new_checked` constructor or [`parse_l2`].
///
/// The variants are deliberately few so that a graph node can map each one
/// to a drop reason counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
pub enum WireError {
    /// The buffer is shorter than the fixed header, the header length it
    /// declares (IPv4 IHL, TCP data offset), or a VLAN tag it announces.
    #[error("buffer truncated")]
    Truncated,
    /// The IP version nibble is not 4 (IPv4) or 6 (IPv6).
    #[error("wrong IP version")]
    BadVersion,
    /// A header length field is smaller than the minimal header
    /// (IPv4 IHL < 5, TCP data offset < 5).
    #[error("bad header length field")]
    BadHeaderLength,
    /// A length field lies: it is larger than the buffer or smaller than the
    /// header (IPv4 total length, IPv6 payload length, UDP length).
    #[error("bad total length field")]
    BadTotalLength,
    /// A checksum did not verify. Constructors never check checksums (that is
    /// a per-node policy); this variant is for nodes that do, so that they
    /// report it in the same error type.
    #[error("bad checksum")]
    BadChecksum,
    /// More than two VLAN tags precede the network header.
    #[error("more than two VLAN tags")]
    TooManyVlans,
    /// The header is well formed but describes a variant this view does not
    /// handle (e.g. ARP for a hardware type other than Ethernet or a protocol
    /// other than IPv4).
    #[error("unsupported header variant")]
    Unsupported,
}

/// Reads a big-endian `u16` at `at`.
#[inline(always)]
pub(crate) fn read_u16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

/// Reads a big-endian `u32` at `at`.
#[inline(always)]
pub(crate) fn read_u32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// Writes a big-endian `u16` at `at`.
#[inline(always)]
pub(crate) fn write_u16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_be_bytes());
}

/// Writes a big-endian `u32` at `at`.
#[inline(always)]
pub(crate) fn write_u32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_be_bytes());
}

/// Clamps `start..end` into `0..len` so that slicing never panics, even if a
/// setter made a length field inconsistent after a checked construction.
#[inline(always)]
pub(crate) fn clamp_range(start: usize, end: usize, len: usize) -> (usize, usize) {
    let end = end.min(len);
    (start.min(end), end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_display_is_meaningful() {
        assert_eq!(WireError::Truncated.to_string(), "buffer truncated");
        assert_eq!(
            WireError::TooManyVlans.to_string(),
            "more than two VLAN tags"
        );
    }

    /// Descend Ethernet -> IPv4 -> UDP in a function returning the innermost
    /// payload: needs the buffer lifetime, not the view's.
    fn udp_payload(frame: &[u8]) -> Result<&[u8], WireError> {
        let eth = EthernetFrame::new_checked(frame)?;
        let ip = Ipv4Packet::new_checked(eth.into_payload())?;
        let udp = UdpPacket::new_checked(ip.into_payload())?;
        Ok(udp.into_payload())
    }

    #[test]
    fn into_payload_descends_layers() {
        use crate::builder::PacketBuilder;
        use std::net::Ipv4Addr;
        let a = Ipv4Addr::new(10, 0, 0, 1);
        let mut f = PacketBuilder::ethernet(MacAddr::ZERO, MacAddr::BROADCAST)
            .ipv4(a, a)
            .udp(1, 2)
            .payload(b"abc")
            .pad_to(60)
            .build();
        assert_eq!(udp_payload(&f), Ok(&b"abc"[..]));
        assert_eq!(udp_payload(&f[..40]), Err(WireError::BadTotalLength));

        // Mutable descent: rewrite the UDP destination port in place.
        let eth = EthernetFrame::new_checked(&mut f[..]).unwrap();
        let ip = Ipv4Packet::new_checked(eth.into_payload_mut()).unwrap();
        let mut udp = UdpPacket::new_checked(ip.into_payload_mut()).unwrap();
        udp.set_dst_port(99);
        udp.fill_checksum(a, a);
        let tail = udp.into_payload_mut();
        tail[0] = b'A';
        assert_eq!(udp_payload(&f), Ok(&b"Abc"[..]));
        assert_eq!(f[36..38], [0, 99]);

        let v = [0u8, 5, 8, 0, 1];
        assert_eq!(VlanTag::new_checked(&v[..]).unwrap().into_payload(), &[1]);
        let t = [0x50u8; 21];
        assert_eq!(
            TcpPacket::new_checked(&t[..]).unwrap().into_payload(),
            &[0x50]
        );
        let i = [0u8; 9];
        assert_eq!(
            Icmpv4Packet::new_checked(&i[..])
                .unwrap()
                .into_payload()
                .len(),
            1
        );
        assert_eq!(
            Icmpv6Packet::new_checked(&i[..])
                .unwrap()
                .into_payload()
                .len(),
            1
        );
        let mut six = [0u8; 41];
        six[0] = 0x60;
        six[5] = 1;
        assert_eq!(
            Ipv6Packet::new_checked(&six[..])
                .unwrap()
                .into_payload()
                .len(),
            1
        );
        assert_eq!(
            Ipv6Packet::new_checked(&mut six[..])
                .unwrap()
                .into_payload_mut()
                .len(),
            1
        );
    }

    #[test]
    fn clamp_never_inverts() {
        assert_eq!(clamp_range(20, 10, 100), (10, 10));
        assert_eq!(clamp_range(20, 200, 100), (20, 100));
        assert_eq!(clamp_range(200, 300, 100), (100, 100));
        assert_eq!(clamp_range(5, 10, 100), (5, 10));
    }
}
