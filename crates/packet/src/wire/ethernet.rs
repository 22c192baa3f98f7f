//! Ethernet II frames, MAC addresses, EtherTypes and 802.1Q/802.1ad VLAN tags.
//!
//! ```
//! use pktvec_packet::wire::{parse_l2, EtherType, EthernetFrame, MacAddr, WireError};
//!
//! // dst, src, TPID 0x8100, TCI (pcp 5, vid 42), inner ethertype IPv4, payload.
//! let frame = [
//!     0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0, 0, 0, 1,
//!     0x81, 0x00, 0xa0, 0x2a, 0x08, 0x00, 0x45,
//! ];
//! let eth = EthernetFrame::new_checked(&frame[..])?;
//! assert!(eth.dst_addr().is_broadcast());
//! assert_eq!(eth.src_addr().to_string(), "02:00:00:00:00:01");
//! assert_eq!(eth.ethertype(), EtherType::VLAN);
//!
//! let l2 = parse_l2(&frame)?;
//! assert_eq!(l2.ethertype, EtherType::IPV4);
//! assert_eq!((l2.n_vlans, l2.vlans, l2.l3_offset), (1, [42, 0], 18));
//! # Ok::<(), WireError>(())
//! ```

use super::{read_u16, write_u16, WireError};
use core::fmt;
use core::str::FromStr;
use serde::{Deserialize, Serialize};

/// A 48-bit IEEE 802 MAC address.
///
/// ```
/// use pktvec_packet::wire::MacAddr;
/// let m: MacAddr = "01:00:5e:00:00:fb".parse().unwrap();
/// assert!(m.is_multicast() && !m.is_broadcast());
/// assert_eq!(m.to_string(), "01:00:5e:00:00:fb");
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
pub struct MacAddr(pub [u8; 6]);

impl MacAddr {
    /// `ff:ff:ff:ff:ff:ff`.
    pub const BROADCAST: MacAddr = MacAddr([0xff; 6]);
    /// `00:00:00:00:00:00`.
    pub const ZERO: MacAddr = MacAddr([0; 6]);

    /// The address from its six octets.
    #[inline]
    pub const fn new(octets: [u8; 6]) -> Self {
        MacAddr(octets)
    }

    /// The address from the first six bytes of `b`, or `None` if `b` is
    /// shorter than six bytes.
    #[inline]
    pub fn from_slice(b: &[u8]) -> Option<Self> {
        match b {
            [a, b, c, d, e, f, ..] => Some(MacAddr([*a, *b, *c, *d, *e, *f])),
            _ => None,
        }
    }

    /// The six octets.
    #[inline]
    pub const fn octets(&self) -> [u8; 6] {
        self.0
    }

    /// The six octets, borrowed.
    #[inline]
    pub const fn as_bytes(&self) -> &[u8; 6] {
        &self.0
    }

    /// `true` for `ff:ff:ff:ff:ff:ff`.
    #[inline]
    pub const fn is_broadcast(&self) -> bool {
        u64::from_be_bytes([
            0, 0, self.0[0], self.0[1], self.0[2], self.0[3], self.0[4], self.0[5],
        ]) == 0xffff_ffff_ffff
    }

    /// `true` if the group bit (I/G, least significant bit of the first
    /// octet) is set. Broadcast is a multicast address.
    #[inline]
    pub const fn is_multicast(&self) -> bool {
        self.0[0] & 0x01 != 0
    }

    /// `true` if the address is an individual (unicast) address.
    #[inline]
    pub const fn is_unicast(&self) -> bool {
        !self.is_multicast()
    }

    /// `true` if the locally administered (U/L) bit is set.
    #[inline]
    pub const fn is_local(&self) -> bool {
        self.0[0] & 0x02 != 0
    }
}

impl From<[u8; 6]> for MacAddr {
    #[inline]
    fn from(o: [u8; 6]) -> Self {
        MacAddr(o)
    }
}

impl From<MacAddr> for [u8; 6] {
    #[inline]
    fn from(m: MacAddr) -> Self {
        m.0
    }
}

impl fmt::Display for MacAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let o = &self.0;
        write!(
            f,
            "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
            o[0], o[1], o[2], o[3], o[4], o[5]
        )
    }
}

impl fmt::Debug for MacAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MacAddr({self})")
    }
}

/// Error from parsing a [`MacAddr`] from text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("invalid MAC address syntax (expected six hex octets separated by ':' or '-')")]
pub struct MacAddrParseError;

impl FromStr for MacAddr {
    type Err = MacAddrParseError;

    /// Parses `aa:bb:cc:dd:ee:ff` or `aa-bb-cc-dd-ee-ff` (case-insensitive).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut out = [0u8; 6];
        let mut n = 0;
        for part in s.split([':', '-']) {
            if n == 6 || part.is_empty() || part.len() > 2 {
                return Err(MacAddrParseError);
            }
            out[n] = u8::from_str_radix(part, 16).map_err(|_| MacAddrParseError)?;
            n += 1;
        }
        if n == 6 {
            Ok(MacAddr(out))
        } else {
            Err(MacAddrParseError)
        }
    }
}

/// An EtherType (or, below 0x0600, an IEEE 802.3 length field).
#[derive(
    Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Debug, Serialize, Deserialize,
)]
pub struct EtherType(pub u16);

impl EtherType {
    /// IPv4, 0x0800.
    pub const IPV4: EtherType = EtherType(0x0800);
    /// ARP, 0x0806.
    pub const ARP: EtherType = EtherType(0x0806);
    /// IEEE 802.1Q VLAN tag (C-tag), 0x8100.
    pub const VLAN: EtherType = EtherType(0x8100);
    /// IPv6, 0x86DD.
    pub const IPV6: EtherType = EtherType(0x86dd);
    /// IEEE 802.1ad service tag (S-tag, QinQ outer), 0x88A8.
    pub const QINQ: EtherType = EtherType(0x88a8);
    /// Pre-standard QinQ outer tag used by some vendors, 0x9100.
    pub const QINQ_9100: EtherType = EtherType(0x9100);

    /// `true` for the tag protocol identifiers [`parse_l2`] walks:
    /// 0x8100, 0x88A8 and 0x9100.
    #[inline]
    pub const fn is_vlan_tpid(self) -> bool {
        matches!(self.0, 0x8100 | 0x88a8 | 0x9100)
    }

    /// `true` if the value is an IEEE 802.3 length (< 0x0600), not a type.
    #[inline]
    pub const fn is_length(self) -> bool {
        self.0 < 0x0600
    }
}

impl From<u16> for EtherType {
    #[inline]
    fn from(v: u16) -> Self {
        EtherType(v)
    }
}

impl From<EtherType> for u16 {
    #[inline]
    fn from(v: EtherType) -> Self {
        v.0
    }
}

impl fmt::Display for EtherType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            EtherType::IPV4 => f.write_str("IPv4"),
            EtherType::ARP => f.write_str("ARP"),
            EtherType::VLAN => f.write_str("802.1Q"),
            EtherType::IPV6 => f.write_str("IPv6"),
            EtherType::QINQ => f.write_str("802.1ad"),
            EtherType::QINQ_9100 => f.write_str("QinQ-9100"),
            EtherType(v) => write!(f, "0x{v:04x}"),
        }
    }
}

/// A read/write view of an Ethernet II header and its payload.
///
/// ```
/// use pktvec_packet::wire::{EtherType, EthernetFrame, MacAddr};
/// let mut buf = [0u8; 20];
/// let mut eth = EthernetFrame::new_checked(&mut buf[..]).unwrap();
/// eth.set_dst_addr(MacAddr::BROADCAST);
/// eth.set_src_addr(MacAddr([2, 0, 0, 0, 0, 9]));
/// eth.set_ethertype(EtherType::ARP);
/// assert_eq!(eth.payload().len(), 6);
/// assert_eq!(buf[12..14], [0x08, 0x06]);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EthernetFrame<T> {
    buffer: T,
}

impl EthernetFrame<()> {
    /// Length of the Ethernet II header (no VLAN tags, no FCS).
    pub const HEADER_LEN: usize = 14;
}

impl<T: AsRef<[u8]>> EthernetFrame<T> {
    /// Wraps `buffer` without checking its length.
    #[inline]
    pub const fn new_unchecked(buffer: T) -> Self {
        EthernetFrame { buffer }
    }

    /// Wraps `buffer` after checking that it holds a whole header.
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        if buffer.as_ref().len() < EthernetFrame::HEADER_LEN {
            return Err(WireError::Truncated);
        }
        Ok(EthernetFrame { buffer })
    }

    /// Returns the wrapped buffer.
    #[inline]
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Header length: always 14.
    #[inline]
    pub const fn header_len(&self) -> usize {
        EthernetFrame::HEADER_LEN
    }

    /// Destination MAC address.
    #[inline]
    pub fn dst_addr(&self) -> MacAddr {
        let b = self.buffer.as_ref();
        MacAddr([b[0], b[1], b[2], b[3], b[4], b[5]])
    }

    /// Source MAC address.
    #[inline]
    pub fn src_addr(&self) -> MacAddr {
        let b = self.buffer.as_ref();
        MacAddr([b[6], b[7], b[8], b[9], b[10], b[11]])
    }

    /// The EtherType field (a VLAN TPID if the frame is tagged).
    #[inline]
    pub fn ethertype(&self) -> EtherType {
        EtherType(read_u16(self.buffer.as_ref(), 12))
    }

    /// Everything after the 14-byte header (including VLAN tags, if any).
    #[inline]
    pub fn payload(&self) -> &[u8] {
        let (s, e) = self.payload_range();
        &self.buffer.as_ref()[s..e]
    }

    /// Byte range of the payload inside the buffer, clamped to the buffer.
    #[inline]
    fn payload_range(&self) -> (usize, usize) {
        let len = self.buffer.as_ref().len();
        (EthernetFrame::HEADER_LEN.min(len), len)
    }
}

super::impl_into_payload!(EthernetFrame);

impl<T: AsRef<[u8]> + AsMut<[u8]>> EthernetFrame<T> {
    /// Sets the destination MAC address.
    #[inline]
    pub fn set_dst_addr(&mut self, a: MacAddr) {
        self.buffer.as_mut()[0..6].copy_from_slice(&a.0);
    }

    /// Sets the source MAC address.
    #[inline]
    pub fn set_src_addr(&mut self, a: MacAddr) {
        self.buffer.as_mut()[6..12].copy_from_slice(&a.0);
    }

    /// Sets the EtherType field.
    #[inline]
    pub fn set_ethertype(&mut self, t: EtherType) {
        write_u16(self.buffer.as_mut(), 12, t.0);
    }

    /// Mutable payload (everything after the 14-byte header).
    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let (s, e) = self.payload_range();
        &mut self.buffer.as_mut()[s..e]
    }
}

/// A read/write view of one 4-byte VLAN tag *after* its TPID: the TCI
/// (PCP, DEI, VID) and the encapsulated EtherType.
///
/// ```
/// use pktvec_packet::wire::{EtherType, VlanTag};
/// let mut tag = VlanTag::new_checked([0u8; 4]).unwrap();
/// tag.set_pcp(3);
/// tag.set_vid(4094);
/// tag.set_ethertype(EtherType::IPV6);
/// assert_eq!((tag.pcp(), tag.dei(), tag.vid()), (3, false, 4094));
/// assert_eq!(tag.into_inner(), [0x6f, 0xfe, 0x86, 0xdd]);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VlanTag<T> {
    buffer: T,
}

impl VlanTag<()> {
    /// Length of a tag without its TPID.
    pub const HEADER_LEN: usize = 4;
}

impl<T: AsRef<[u8]>> VlanTag<T> {
    /// Wraps `buffer` without checking its length.
    #[inline]
    pub const fn new_unchecked(buffer: T) -> Self {
        VlanTag { buffer }
    }

    /// Wraps `buffer` after checking that it holds a whole tag.
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        if buffer.as_ref().len() < VlanTag::HEADER_LEN {
            return Err(WireError::Truncated);
        }
        Ok(VlanTag { buffer })
    }

    /// Returns the wrapped buffer.
    #[inline]
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Header length: always 4.
    #[inline]
    pub const fn header_len(&self) -> usize {
        VlanTag::HEADER_LEN
    }

    /// The raw 16-bit tag control information.
    #[inline]
    pub fn tci(&self) -> u16 {
        read_u16(self.buffer.as_ref(), 0)
    }

    /// Priority code point (3 bits).
    #[inline]
    pub fn pcp(&self) -> u8 {
        self.buffer.as_ref()[0] >> 5
    }

    /// Drop eligible indicator.
    #[inline]
    pub fn dei(&self) -> bool {
        self.buffer.as_ref()[0] & 0x10 != 0
    }

    /// VLAN identifier (12 bits).
    #[inline]
    pub fn vid(&self) -> u16 {
        self.tci() & 0x0fff
    }

    /// The encapsulated EtherType (another TPID for QinQ).
    #[inline]
    pub fn ethertype(&self) -> EtherType {
        EtherType(read_u16(self.buffer.as_ref(), 2))
    }

    /// Everything after the tag.
    #[inline]
    pub fn payload(&self) -> &[u8] {
        let (s, e) = self.payload_range();
        &self.buffer.as_ref()[s..e]
    }

    /// Byte range of the payload inside the buffer, clamped to the buffer.
    #[inline]
    fn payload_range(&self) -> (usize, usize) {
        let len = self.buffer.as_ref().len();
        (VlanTag::HEADER_LEN.min(len), len)
    }
}

super::impl_into_payload!(VlanTag);

impl<T: AsRef<[u8]> + AsMut<[u8]>> VlanTag<T> {
    /// Sets the raw tag control information.
    #[inline]
    pub fn set_tci(&mut self, tci: u16) {
        write_u16(self.buffer.as_mut(), 0, tci);
    }

    /// Sets the priority code point (low 3 bits of `pcp` are used).
    #[inline]
    pub fn set_pcp(&mut self, pcp: u8) {
        let b = &mut self.buffer.as_mut()[0];
        *b = (*b & 0x1f) | ((pcp & 0x07) << 5);
    }

    /// Sets the drop eligible indicator.
    #[inline]
    pub fn set_dei(&mut self, dei: bool) {
        let b = &mut self.buffer.as_mut()[0];
        *b = (*b & !0x10) | if dei { 0x10 } else { 0 };
    }

    /// Sets the VLAN identifier (low 12 bits of `vid` are used).
    #[inline]
    pub fn set_vid(&mut self, vid: u16) {
        let tci = (self.tci() & 0xf000) | (vid & 0x0fff);
        self.set_tci(tci);
    }

    /// Sets the encapsulated EtherType.
    #[inline]
    pub fn set_ethertype(&mut self, t: EtherType) {
        write_u16(self.buffer.as_mut(), 2, t.0);
    }

    /// Mutable payload (everything after the tag).
    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let (s, e) = self.payload_range();
        &mut self.buffer.as_mut()[s..e]
    }
}

/// The result of [`parse_l2`]: where the network header starts and which
/// VLANs the frame is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct L2Info {
    /// EtherType of the network layer (after all VLAN tags).
    pub ethertype: EtherType,
    /// Byte offset of the network header from the start of the frame
    /// (14 + 4 × `n_vlans`).
    pub l3_offset: u16,
    /// VLAN ids, outermost first; unused entries are 0.
    pub vlans: [u16; 2],
    /// Number of VLAN tags (0, 1 or 2).
    pub n_vlans: u8,
}

impl L2Info {
    /// The outer VLAN id, if the frame is tagged.
    #[inline]
    pub const fn outer_vid(&self) -> Option<u16> {
        if self.n_vlans > 0 {
            Some(self.vlans[0])
        } else {
            None
        }
    }

    /// The innermost VLAN id, if the frame is tagged.
    #[inline]
    pub const fn inner_vid(&self) -> Option<u16> {
        match self.n_vlans {
            0 => None,
            1 => Some(self.vlans[0]),
            _ => Some(self.vlans[1]),
        }
    }
}

/// Parses the Ethernet header and up to two VLAN tags.
///
/// Any of the TPIDs 0x8100, 0x88A8 and 0x9100 is accepted at either position
/// (QinQ normally uses 0x88A8 or 0x9100 outside and 0x8100 inside, but
/// double 0x8100 tagging is common too). A third tag gives
/// [`WireError::TooManyVlans`]; a frame that ends inside the header or a tag
/// gives [`WireError::Truncated`]. The network header itself is not checked.
///
/// ```
/// use pktvec_packet::wire::{parse_l2, EtherType, WireError};
/// let mut f = vec![0u8; 12];
/// f.extend_from_slice(&[0x88, 0xa8, 0x00, 0x0a, 0x81, 0x00, 0x00, 0x14, 0x86, 0xdd]);
/// let l2 = parse_l2(&f)?;
/// assert_eq!(l2.ethertype, EtherType::IPV6);
/// assert_eq!((l2.n_vlans, l2.vlans, l2.l3_offset), (2, [10, 20], 22));
/// assert_eq!(parse_l2(&f[..20]), Err(WireError::Truncated));
/// # Ok::<(), WireError>(())
/// ```
#[inline]
pub fn parse_l2(frame: &[u8]) -> Result<L2Info, WireError> {
    if frame.len() < EthernetFrame::HEADER_LEN {
        return Err(WireError::Truncated);
    }
    let mut info = L2Info {
        ethertype: EtherType(read_u16(frame, 12)),
        l3_offset: EthernetFrame::HEADER_LEN as u16,
        vlans: [0; 2],
        n_vlans: 0,
    };
    let mut off = EthernetFrame::HEADER_LEN;
    while info.ethertype.is_vlan_tpid() {
        if info.n_vlans == 2 {
            return Err(WireError::TooManyVlans);
        }
        if frame.len() < off + VlanTag::HEADER_LEN {
            return Err(WireError::Truncated);
        }
        info.vlans[usize::from(info.n_vlans)] = read_u16(frame, off) & 0x0fff;
        info.ethertype = EtherType(read_u16(frame, off + 2));
        info.n_vlans += 1;
        off += VlanTag::HEADER_LEN;
    }
    info.l3_offset = off as u16;
    Ok(info)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(tags: &[(u16, u16)], inner: u16, extra: usize) -> Vec<u8> {
        let mut f = vec![0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0, 0, 1];
        for (tpid, tci) in tags {
            f.extend_from_slice(&tpid.to_be_bytes());
            f.extend_from_slice(&tci.to_be_bytes());
        }
        f.extend_from_slice(&inner.to_be_bytes());
        f.resize(f.len() + extra, 0xab);
        f
    }

    #[test]
    fn mac_addr_classes_and_display() {
        let b = MacAddr::BROADCAST;
        assert!(b.is_broadcast() && b.is_multicast() && !b.is_unicast());
        let m = MacAddr([0x33, 0x33, 0, 0, 0, 1]);
        assert!(m.is_multicast() && !m.is_broadcast());
        let u = MacAddr([0x02, 0xaa, 0xbb, 0xcc, 0xdd, 0x0e]);
        assert!(u.is_unicast() && u.is_local() && !u.is_broadcast());
        assert_eq!(u.to_string(), "02:aa:bb:cc:dd:0e");
        assert_eq!(format!("{u:?}"), "MacAddr(02:aa:bb:cc:dd:0e)");
        assert_eq!("02-AA-bb-cc-dd-0e".parse::<MacAddr>(), Ok(u));
        for bad in [
            "",
            "02:aa:bb:cc:dd",
            "02:aa:bb:cc:dd:0e:ff",
            "02:aa:bb:cc:dd:xx",
            "002:a:b:c:d:e",
            "::::::",
        ] {
            assert_eq!(bad.parse::<MacAddr>(), Err(MacAddrParseError), "{bad}");
        }
        assert_eq!(MacAddr::from_slice(&[1, 2, 3, 4, 5]), None);
        assert_eq!(
            MacAddr::from_slice(&[1, 2, 3, 4, 5, 6, 7]),
            Some(MacAddr([1, 2, 3, 4, 5, 6]))
        );
        assert_eq!(<[u8; 6]>::from(u), u.octets());
    }

    #[test]
    fn mac_addr_serde_roundtrip_shape() {
        // serde derive on a newtype over [u8; 6]: serialized as the array.
        fn assert_serde<T: Serialize + for<'de> Deserialize<'de>>() {}
        assert_serde::<MacAddr>();
        assert_serde::<EtherType>();
    }

    #[test]
    fn ethertype_display() {
        assert_eq!(EtherType::IPV4.to_string(), "IPv4");
        assert_eq!(EtherType::QINQ.to_string(), "802.1ad");
        assert_eq!(EtherType(0x88cc).to_string(), "0x88cc");
        assert!(EtherType::QINQ_9100.is_vlan_tpid());
        assert!(!EtherType::IPV6.is_vlan_tpid());
        assert!(EtherType(1500).is_length());
    }

    #[test]
    fn ethernet_truncated_at_every_length() {
        let f = frame(&[], 0x0800, 0);
        for n in 0..14 {
            assert_eq!(
                EthernetFrame::new_checked(&f[..n]).err(),
                Some(WireError::Truncated)
            );
            assert_eq!(parse_l2(&f[..n]), Err(WireError::Truncated));
        }
        let e = EthernetFrame::new_checked(&f[..]).unwrap();
        assert_eq!(e.payload(), &[] as &[u8]);
        assert_eq!(e.header_len(), 14);
    }

    #[test]
    fn ethernet_roundtrip_setters() {
        let mut buf = [0u8; 16];
        let mut e = EthernetFrame::new_unchecked(&mut buf[..]);
        e.set_dst_addr(MacAddr([1, 2, 3, 4, 5, 6]));
        e.set_src_addr(MacAddr([7, 8, 9, 10, 11, 12]));
        e.set_ethertype(EtherType::IPV6);
        e.payload_mut().copy_from_slice(&[0xde, 0xad]);
        assert_eq!(e.dst_addr(), MacAddr([1, 2, 3, 4, 5, 6]));
        assert_eq!(e.src_addr(), MacAddr([7, 8, 9, 10, 11, 12]));
        assert_eq!(e.ethertype(), EtherType::IPV6);
        assert_eq!(e.payload(), &[0xde, 0xad]);
        let inner = e.into_inner();
        assert_eq!(inner[12..], [0x86, 0xdd, 0xde, 0xad]);
    }

    #[test]
    fn vlan_tag_fields() {
        let mut t = VlanTag::new_checked([0xff, 0xff, 0, 0]).unwrap();
        assert_eq!((t.pcp(), t.dei(), t.vid()), (7, true, 0xfff));
        t.set_dei(false);
        t.set_pcp(2);
        t.set_vid(0x1234); // only 12 bits kept
        assert_eq!((t.pcp(), t.dei(), t.vid()), (2, false, 0x234));
        for n in 0..4 {
            assert_eq!(
                VlanTag::new_checked(&[0u8; 4][..n]).err(),
                Some(WireError::Truncated)
            );
        }
        let mut buf = [0u8; 6];
        let mut t = VlanTag::new_checked(&mut buf[..]).unwrap();
        t.payload_mut()[1] = 9;
        assert_eq!(t.payload(), &[0, 9]);
        assert_eq!(t.header_len(), 4);
    }

    #[test]
    fn parse_untagged() {
        let f = frame(&[], 0x0806, 28);
        let l2 = parse_l2(&f).unwrap();
        assert_eq!(
            l2,
            L2Info {
                ethertype: EtherType::ARP,
                l3_offset: 14,
                vlans: [0, 0],
                n_vlans: 0
            }
        );
        assert_eq!(l2.outer_vid(), None);
        assert_eq!(l2.inner_vid(), None);
    }

    #[test]
    fn parse_single_and_double_tags() {
        let f = frame(&[(0x8100, 0xe00a)], 0x0800, 20);
        let l2 = parse_l2(&f).unwrap();
        assert_eq!(
            (l2.ethertype, l2.l3_offset, l2.n_vlans, l2.vlans),
            (EtherType::IPV4, 18, 1, [10, 0])
        );
        assert_eq!((l2.outer_vid(), l2.inner_vid()), (Some(10), Some(10)));
        for outer in [0x88a8, 0x9100, 0x8100] {
            let f = frame(&[(outer, 0x0064), (0x8100, 0x0fff)], 0x86dd, 0);
            let l2 = parse_l2(&f).unwrap();
            assert_eq!(
                (l2.ethertype, l2.l3_offset, l2.n_vlans, l2.vlans),
                (EtherType::IPV6, 22, 2, [100, 4095])
            );
            assert_eq!((l2.outer_vid(), l2.inner_vid()), (Some(100), Some(4095)));
        }
    }

    #[test]
    fn parse_too_many_tags() {
        let f = frame(&[(0x88a8, 1), (0x8100, 2), (0x8100, 3)], 0x0800, 20);
        assert_eq!(parse_l2(&f), Err(WireError::TooManyVlans));
    }

    #[test]
    fn parse_truncated_inside_tags() {
        let f = frame(&[(0x88a8, 1), (0x8100, 2)], 0x0800, 0);
        assert_eq!(f.len(), 22);
        for n in 0..22 {
            assert_eq!(parse_l2(&f[..n]), Err(WireError::Truncated), "len {n}");
        }
        assert!(parse_l2(&f).is_ok());
    }
}
