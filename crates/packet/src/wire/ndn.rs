//! NDN (Named Data Networking) packets over Ethernet (EtherType 0x8624): a zero-copy view
//! of an Interest and its Name, in the NDN packet format v0.3 TLV encoding.
//!
//! Only what a forwarder needs for name lookup is decoded: the Name and its components.
//! TLV type and length are NDN variable-size numbers (1, 3, 5 or 9 bytes).
//!
//! ```
//! use pktvec_packet::wire::ndn::NdnInterest;
//! // Interest { Name { "com", "example" }, Nonce }
//! let pkt = [0x05, 0x16, 0x07, 0x0e, 0x08, 0x03, b'c', b'o', b'm', 0x08, 0x07,
//!            b'e', b'x', b'a', b'm', b'p', b'l', b'e', 0x0a, 0x04, 1, 2, 3, 4];
//! let i = NdnInterest::new_checked(&pkt[..])?;
//! let comps: Vec<&[u8]> = i.components().collect();
//! assert_eq!(comps, [&b"com"[..], &b"example"[..]]);
//! assert_eq!(i.component_count(), 2);
//! // The encoded prefix of k components, for hashing name prefixes.
//! assert_eq!(i.prefix(1), &[0x08, 0x03, b'c', b'o', b'm'][..]);
//! # Ok::<(), pktvec_packet::wire::WireError>(())
//! ```

use super::WireError;

/// TLV type of an Interest.
pub const TLV_INTEREST: u64 = 0x05;
/// TLV type of a Data packet.
pub const TLV_DATA: u64 = 0x06;
/// TLV type of a Name.
pub const TLV_NAME: u64 = 0x07;
/// TLV type of a generic name component.
pub const TLV_GENERIC_COMPONENT: u64 = 0x08;

/// Reads an NDN variable-size number at `pos`; returns it and the position after it.
#[inline]
pub fn read_var(buf: &[u8], pos: usize) -> Result<(u64, usize), WireError> {
    let first = *buf.get(pos).ok_or(WireError::Truncated)?;
    let (n, w) = match first {
        0..=252 => return Ok((first as u64, pos + 1)),
        253 => (2, 3),
        254 => (4, 5),
        255 => (8, 9),
    };
    let bytes = buf.get(pos + 1..pos + 1 + n).ok_or(WireError::Truncated)?;
    let v = bytes.iter().fold(0u64, |a, &b| (a << 8) | b as u64);
    Ok((v, pos + w))
}

/// Reads a TLV header at `pos`: (type, value start, value end), value bounds checked.
#[inline]
pub fn read_tlv(buf: &[u8], pos: usize) -> Result<(u64, usize, usize), WireError> {
    let (t, p) = read_var(buf, pos)?;
    let (l, p) = read_var(buf, p)?;
    let end = p.checked_add(l as usize).ok_or(WireError::BadTotalLength)?;
    if l > buf.len() as u64 || end > buf.len() {
        return Err(WireError::BadTotalLength);
    }
    Ok((t, p, end))
}

/// A view of an NDN Interest (or Data) packet's Name.
///
/// `new_checked` validates the outer TLV, the Name TLV and every component TLV, so the
/// iteration afterwards cannot fail.
#[derive(Debug, Clone, Copy)]
pub struct NdnInterest<T> {
    buffer: T,
    name_start: usize,
    name_end: usize,
    components: usize,
}

impl<T: AsRef<[u8]>> NdnInterest<T> {
    /// Checks the Interest (type 0x05) or Data (0x06) TLV and its Name.
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        let b = buffer.as_ref();
        let (t, v, end) = read_tlv(b, 0)?;
        if t != TLV_INTEREST && t != TLV_DATA {
            return Err(WireError::Unsupported);
        }
        let (nt, ns, ne) = read_tlv(&b[..end], v)?;
        if nt != TLV_NAME {
            return Err(WireError::Unsupported);
        }
        let mut pos = ns;
        let mut components = 0;
        while pos < ne {
            let (_, _, cend) = read_tlv(&b[..ne], pos)?;
            pos = cend;
            components += 1;
        }
        Ok(NdnInterest {
            buffer,
            name_start: ns,
            name_end: ne,
            components,
        })
    }

    /// True for an Interest, false for a Data packet.
    pub fn is_interest(&self) -> bool {
        self.buffer.as_ref().first() == Some(&(TLV_INTEREST as u8))
    }

    /// Number of name components.
    pub fn component_count(&self) -> usize {
        self.components
    }

    /// Offset of the Name value (the first component TLV) in the packet.
    pub fn name_offset(&self) -> usize {
        self.name_start
    }

    /// The encoded Name value (all component TLVs).
    pub fn name_bytes(&self) -> &[u8] {
        &self.buffer.as_ref()[self.name_start..self.name_end]
    }

    /// The values of the name components, in order.
    pub fn components(&self) -> Components<'_> {
        Components {
            buf: self.name_bytes(),
            pos: 0,
        }
    }

    /// Fills `ends` with the end offset (within [`name_bytes`](Self::name_bytes)) of each
    /// of the first `ends.len()` components, in one pass; returns how many it filled.
    /// `name_bytes()[..ends[k - 1]]` is the encoded prefix of `k` components.
    pub fn component_ends(&self, ends: &mut [u16]) -> usize {
        let name = self.name_bytes();
        let mut pos = 0;
        let mut n = 0;
        while n < ends.len() {
            match read_tlv(name, pos) {
                Ok((_, _, end)) if end <= u16::MAX as usize => {
                    ends[n] = end as u16;
                    pos = end;
                    n += 1;
                }
                _ => break,
            }
        }
        n
    }

    /// The encoded first `k` components (the whole name if `k` is larger): the key under
    /// which a name prefix is stored in a FIB.
    pub fn prefix(&self, k: usize) -> &[u8] {
        let name = self.name_bytes();
        let mut pos = 0;
        for _ in 0..k {
            match read_tlv(name, pos) {
                Ok((_, _, end)) => pos = end,
                Err(_) => break,
            }
        }
        &name[..pos]
    }
}

/// Iterator over name component values.
#[derive(Debug, Clone)]
pub struct Components<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Iterator for Components<'a> {
    type Item = &'a [u8];
    fn next(&mut self) -> Option<&'a [u8]> {
        let (_, v, end) = read_tlv(self.buf, self.pos).ok()?;
        self.pos = end;
        Some(&self.buf[v..end])
    }
}

/// Encodes an NDN name (`/a/b/c`) as the value of a Name TLV (component TLVs).
pub fn encode_name(name: &str, out: &mut Vec<u8>) {
    for c in name.split('/').filter(|c| !c.is_empty()) {
        push_tlv(out, TLV_GENERIC_COMPONENT, c.as_bytes());
    }
}

/// Appends a TLV with a variable-size type and length.
pub fn push_tlv(out: &mut Vec<u8>, t: u64, value: &[u8]) {
    push_var(out, t);
    push_var(out, value.len() as u64);
    out.extend_from_slice(value);
}

fn push_var(out: &mut Vec<u8>, v: u64) {
    match v {
        0..=252 => out.push(v as u8),
        253..=0xffff => {
            out.push(253);
            out.extend_from_slice(&(v as u16).to_be_bytes());
        }
        0x1_0000..=0xffff_ffff => {
            out.push(254);
            out.extend_from_slice(&(v as u32).to_be_bytes());
        }
        _ => {
            out.push(255);
            out.extend_from_slice(&v.to_be_bytes());
        }
    }
}

/// Encodes an Interest for `name` with a 4-byte nonce.
///
/// ```
/// use pktvec_packet::wire::ndn::{interest, NdnInterest};
/// let bytes = interest("/org/pktvec/a", 7);
/// let i = NdnInterest::new_checked(&bytes[..])?;
/// assert_eq!(i.components().count(), 3);
/// # Ok::<(), pktvec_packet::wire::WireError>(())
/// ```
pub fn interest(name: &str, nonce: u32) -> Vec<u8> {
    let mut n = Vec::new();
    encode_name(name, &mut n);
    let mut inner = Vec::new();
    push_tlv(&mut inner, TLV_NAME, &n);
    push_tlv(&mut inner, 0x0a, &nonce.to_be_bytes());
    let mut out = Vec::new();
    push_tlv(&mut out, TLV_INTEREST, &inner);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_components_use_three_byte_lengths() {
        let long = "x".repeat(300);
        let bytes = interest(&format!("/a/{long}/b"), 1);
        let i = NdnInterest::new_checked(&bytes[..]).unwrap();
        let c: Vec<&[u8]> = i.components().collect();
        assert_eq!(c.len(), 3);
        assert_eq!(c[1].len(), 300);
        assert_eq!(i.prefix(2).len(), 3 + (1 + 3 + 300));
        assert_eq!(i.prefix(9), i.name_bytes());
    }

    #[test]
    fn every_truncation_is_an_error_and_garbage_never_panics() {
        let bytes = interest("/com/example/video/seg1", 9);
        for n in 0..bytes.len() {
            assert!(NdnInterest::new_checked(&bytes[..n]).is_err(), "len {n}");
        }
        for seed in 0..2000u32 {
            let g: Vec<u8> = (0..(seed % 40))
                .map(|k| (seed.wrapping_mul(2654435761).rotate_left(k) & 0xff) as u8)
                .collect();
            if let Ok(i) = NdnInterest::new_checked(&g[..]) {
                assert_eq!(i.components().count(), i.component_count());
            }
        }
        // A length field claiming 2^64 - 1 bytes.
        let huge = [0x05, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff];
        assert!(NdnInterest::new_checked(&huge[..]).is_err());
    }

    #[test]
    fn not_an_interest() {
        assert_eq!(
            NdnInterest::new_checked(&[0x09, 0x00][..]).unwrap_err(),
            WireError::Unsupported
        );
    }
}
