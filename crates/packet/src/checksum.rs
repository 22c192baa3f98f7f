//! The Internet checksum (RFC 1071) and its incremental update (RFC 1624).
//!
//! Sums are carried as `u64` accumulators of big-endian 16-bit words so that
//! partial sums (a pseudo header, a header, a payload) can simply be added and
//! folded once at the end:
//!
//! ```
//! use pktvec_packet::checksum;
//! use pktvec_packet::wire::IpProtocol;
//! use std::net::Ipv4Addr;
//!
//! let (src, dst) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2));
//! // A UDP header (ports 1000 -> 2000, length 10, checksum 0) and 2 payload bytes.
//! let mut udp = [0x03, 0xe8, 0x07, 0xd0, 0x00, 0x0a, 0x00, 0x00, b'h', b'i'];
//! let sum = checksum::pseudo_header_v4(src, dst, IpProtocol::UDP, udp.len() as u32)
//!     + checksum::sum(&udp);
//! let csum = checksum::finish(sum);
//! udp[6..8].copy_from_slice(&csum.to_be_bytes());
//! // Summing again, checksum included, gives "all ones": finish() == 0.
//! let check = checksum::pseudo_header_v4(src, dst, IpProtocol::UDP, 10) + checksum::sum(&udp);
//! assert_eq!(checksum::finish(check), 0);
//!
//! // RFC 1624: change one 16-bit word without summing the data again.
//! let hdr = [0x45u8, 0x00, 0x00, 0x1c, 0x00, 0x00, 0x00, 0x00, 0x40, 0x11];
//! let before = checksum::checksum(&hdr);
//! let mut hdr2 = hdr;
//! hdr2[8] = 0x3f; // TTL 64 -> 63
//! assert_eq!(checksum::update_u16(before, 0x4011, 0x3f11), checksum::checksum(&hdr2));
//! ```

use crate::wire::IpProtocol;
use std::net::{Ipv4Addr, Ipv6Addr};

/// One's-complement sum of `data` read as big-endian 16-bit words, a trailing
/// odd byte padded with zero (RFC 1071).
///
/// The result is already folded to at most `0xFFFF`, so results of many calls
/// (and pseudo-header sums) can be added with plain `+` and finished with
/// [`finish`]. Concatenation rule: `sum(a ++ b) == fold(sum(a) + sum(b))`
/// holds when `a` has even length.
///
/// The loop adds 32-bit native-endian words into a 64-bit accumulator and
/// folds the carries once at the end (byte-order independence, RFC 1071 §2(B)).
#[inline]
pub fn sum(data: &[u8]) -> u64 {
    let mut acc: u64 = 0;
    let mut chunks = data.chunks_exact(8);
    for c in &mut chunks {
        let w = u64::from_ne_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
        acc += (w & 0xffff_ffff) + (w >> 32);
    }
    let mut rem = chunks.remainder();
    if rem.len() >= 4 {
        acc += u64::from(u32::from_ne_bytes([rem[0], rem[1], rem[2], rem[3]]));
        rem = &rem[4..];
    }
    if rem.len() >= 2 {
        acc += u64::from(u16::from_ne_bytes([rem[0], rem[1]]));
        rem = &rem[2..];
    }
    if let [b] = rem {
        acc += u64::from(u16::from_ne_bytes([*b, 0]));
    }
    // The folded native-endian sum is the byte swap of the big-endian sum.
    u64::from(u16::from_be(fold(acc)))
}

/// Folds a 64-bit accumulator to a 16-bit one's-complement sum (end-around
/// carry). A non-zero input never folds to zero.
#[inline]
pub const fn fold(sum: u64) -> u16 {
    let s = (sum & 0xffff_ffff) + (sum >> 32);
    let s = (s & 0xffff_ffff) + (s >> 32);
    let s = (s & 0xffff) + (s >> 16);
    let s = (s & 0xffff) + (s >> 16);
    s as u16
}

/// Folds and complements an accumulator: the value to store in a checksum
/// field. Over data that includes a correct checksum it returns `0`.
#[inline]
pub const fn finish(sum: u64) -> u16 {
    !fold(sum)
}

/// The Internet checksum of `data`: `finish(sum(data))`.
#[inline]
pub fn checksum(data: &[u8]) -> u16 {
    finish(sum(data))
}

/// Sum of the IPv4 pseudo header (RFC 768/793): source, destination, zero,
/// protocol, and the upper-layer length.
#[inline]
pub fn pseudo_header_v4(src: Ipv4Addr, dst: Ipv4Addr, proto: IpProtocol, len: u32) -> u64 {
    let s = u32::from(src);
    let d = u32::from(dst);
    u64::from(s >> 16)
        + u64::from(s & 0xffff)
        + u64::from(d >> 16)
        + u64::from(d & 0xffff)
        + u64::from(proto.0)
        + u64::from(len >> 16)
        + u64::from(len & 0xffff)
}

/// Sum of the IPv6 pseudo header (RFC 8200 §8.1): source, destination, 32-bit
/// upper-layer length, zero, next header.
#[inline]
pub fn pseudo_header_v6(src: Ipv6Addr, dst: Ipv6Addr, next_header: IpProtocol, len: u32) -> u64 {
    sum(&src.octets())
        + sum(&dst.octets())
        + u64::from(next_header.0)
        + u64::from(len >> 16)
        + u64::from(len & 0xffff)
}

/// An address family usable in a transport pseudo header, so that
/// `fill_checksum(src, dst)`/`verify_checksum(src, dst)` of the UDP and TCP
/// views work with both [`Ipv4Addr`] and [`Ipv6Addr`].
pub trait PseudoHeaderAddr: Copy {
    /// `true` for IPv6, where a UDP checksum of zero is not allowed.
    const IS_IPV6: bool;
    /// The pseudo-header sum for `src`, `dst`, `proto` and upper-layer `len`.
    fn pseudo_header_sum(src: Self, dst: Self, proto: IpProtocol, len: u32) -> u64;
}

impl PseudoHeaderAddr for Ipv4Addr {
    const IS_IPV6: bool = false;
    #[inline]
    fn pseudo_header_sum(src: Self, dst: Self, proto: IpProtocol, len: u32) -> u64 {
        pseudo_header_v4(src, dst, proto, len)
    }
}

impl PseudoHeaderAddr for Ipv6Addr {
    const IS_IPV6: bool = true;
    #[inline]
    fn pseudo_header_sum(src: Self, dst: Self, proto: IpProtocol, len: u32) -> u64 {
        pseudo_header_v6(src, dst, proto, len)
    }
}

/// Incremental checksum update when one 16-bit word of the covered data
/// changes from `old_word` to `new_word` (RFC 1624 eqn. 3:
/// `HC' = ~(~HC + ~m + m')`).
///
/// Equals a full recomputation for any data that is not all zeros after the
/// change (for all-zero data the full checksum is `0xFFFF` while this returns
/// `0x0000`; both verify). In particular it never produces the `0xFFFF`
/// ("minus zero") result that RFC 1141's eqn. 2 produces where a recompute
/// gives `0x0000`.
#[inline]
pub const fn update_u16(old_csum: u16, old_word: u16, new_word: u16) -> u16 {
    if old_word == new_word {
        return old_csum;
    }
    let s = (!old_csum) as u64 + (!old_word) as u64 + new_word as u64;
    !fold(s)
}

/// Incremental checksum update for a changed 32-bit field (e.g. an IPv4
/// address rewritten by NAT): two applications of [`update_u16`] at once.
#[inline]
pub const fn update_u32(old_csum: u16, old: u32, new: u32) -> u16 {
    if old == new {
        return old_csum;
    }
    let s = (!old_csum) as u64
        + (!(old >> 16) & 0xffff) as u64
        + (!old & 0xffff) as u64
        + (new >> 16) as u64
        + (new & 0xffff) as u64;
    !fold(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 1071 straight from the text: 16-bit big-endian words, 32-bit
    /// accumulator folded after every addition.
    fn naive(data: &[u8]) -> u16 {
        let mut s: u32 = 0;
        let mut i = 0;
        while i < data.len() {
            let hi = u32::from(data[i]) << 8;
            let lo = if i + 1 < data.len() {
                u32::from(data[i + 1])
            } else {
                0
            };
            s += hi | lo;
            s = (s & 0xffff) + (s >> 16);
            i += 2;
        }
        !(s as u16)
    }

    fn pseudo_random(n: usize, seed: u32) -> Vec<u8> {
        let mut x = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                (x >> 24) as u8
            })
            .collect()
    }

    #[test]
    fn rfc1071_example() {
        // RFC 1071 §3: bytes 00 01 f2 03 f4 f5 f6 f7 sum to 0xddf2.
        let d = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(fold(sum(&d)), 0xddf2);
        assert_eq!(checksum(&d), !0xddf2);
    }

    #[test]
    fn matches_naive_all_lengths_and_offsets() {
        let data = pseudo_random(300, 7);
        for start in 0..9 {
            for end in start..data.len() {
                let d = &data[start..end];
                assert_eq!(checksum(d), naive(d), "start {start} end {end}");
            }
        }
    }

    #[test]
    fn matches_naive_extremes() {
        for len in 0..70 {
            let ones = vec![0xffu8; len];
            assert_eq!(checksum(&ones), naive(&ones), "ones {len}");
            let zeros = vec![0u8; len];
            assert_eq!(checksum(&zeros), 0xffff);
        }
        // Large buffer of 0xff: many carries.
        let big = vec![0xffu8; 65_536 + 3];
        assert_eq!(checksum(&big), naive(&big));
    }

    #[test]
    fn sums_concatenate_at_even_boundaries() {
        let data = pseudo_random(101, 3);
        for split in (0..data.len()).step_by(2) {
            let (a, b) = data.split_at(split);
            assert_eq!(finish(sum(a) + sum(b)), checksum(&data));
        }
    }

    #[test]
    fn ipv4_header_known_value() {
        // Wikipedia's IPv4 header checksum example: checksum 0xb861.
        let mut h = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        assert_eq!(checksum(&h), 0xb861);
        h[10..12].copy_from_slice(&0xb861u16.to_be_bytes());
        assert_eq!(checksum(&h), 0);
    }

    #[test]
    fn pseudo_headers_match_byte_layout() {
        let src = Ipv4Addr::new(192, 168, 1, 1);
        let dst = Ipv4Addr::new(10, 255, 0, 7);
        let mut ph = Vec::new();
        ph.extend_from_slice(&src.octets());
        ph.extend_from_slice(&dst.octets());
        ph.extend_from_slice(&[0, 17, 0x12, 0x34]);
        assert_eq!(
            fold(pseudo_header_v4(src, dst, IpProtocol::UDP, 0x1234)),
            fold(sum(&ph))
        );

        let s6: Ipv6Addr = "2001:db8::1".parse().unwrap();
        let d6: Ipv6Addr = "fe80::ffff:1:2".parse().unwrap();
        let mut ph6 = Vec::new();
        ph6.extend_from_slice(&s6.octets());
        ph6.extend_from_slice(&d6.octets());
        ph6.extend_from_slice(&0x0001_0203u32.to_be_bytes());
        ph6.extend_from_slice(&[0, 0, 0, 58]);
        assert_eq!(
            fold(pseudo_header_v6(s6, d6, IpProtocol::ICMPV6, 0x0001_0203)),
            fold(sum(&ph6))
        );
    }

    /// Exhaustive over every new value of one word: incremental update equals
    /// a full recompute, including the results 0x0000 and the corner cases
    /// where the old checksum is 0x0000.
    #[test]
    fn update_u16_exhaustive_new_word() {
        for seed in 0..4 {
            let mut data = pseudo_random(20, seed);
            data[0] = 0x45; // never all-zero
            let old_csum = checksum(&data);
            let old_word = u16::from_be_bytes([data[6], data[7]]);
            let mut saw_zero = false;
            for new in 0..=u16::MAX {
                data[6..8].copy_from_slice(&new.to_be_bytes());
                let full = checksum(&data);
                assert_eq!(update_u16(old_csum, old_word, new), full, "new {new:#x}");
                assert_ne!(full, 0xffff);
                saw_zero |= full == 0;
            }
            assert!(saw_zero, "some value must give checksum 0x0000");
        }
    }

    #[test]
    fn update_u16_from_zero_checksum() {
        // Force a header whose checksum is 0x0000, then change words from it.
        let mut data = pseudo_random(20, 11);
        data[0] = 0x45;
        data[10] = 0;
        data[11] = 0;
        // Choose word 5 (bytes 10..12, the "checksum" slot) so the sum is 0xffff.
        let s = fold(sum(&data));
        let fill = !s; // s + !s == 0xffff
        data[10..12].copy_from_slice(&fill.to_be_bytes());
        let c0 = checksum(&data);
        assert_eq!(c0, 0x0000);
        let old_word = u16::from_be_bytes([data[2], data[3]]);
        for new in (0..=u16::MAX).step_by(7) {
            let mut d = data.clone();
            d[2..4].copy_from_slice(&new.to_be_bytes());
            assert_eq!(update_u16(c0, old_word, new), checksum(&d));
        }
    }

    #[test]
    fn update_u32_matches_recompute() {
        for seed in 0..200u32 {
            let mut data = pseudo_random(24, seed);
            data[0] = 0x45;
            let old_csum = checksum(&data);
            let old = u32::from_be_bytes([data[12], data[13], data[14], data[15]]);
            let new = seed.wrapping_mul(0x9e37_79b9) ^ (seed << 7);
            data[12..16].copy_from_slice(&new.to_be_bytes());
            assert_eq!(
                update_u32(old_csum, old, new),
                checksum(&data),
                "seed {seed}"
            );
        }
    }
}
