//! Key types of the exact-match table and the hash function they share.
//!
//! The hash is a small multiply-fold hash (the folded 64×64→128-bit product, as in
//! wyhash/foldhash, written here from the idea, not from their code): every 8-byte word of
//! the key is mixed into the state with one folded multiply, and one more folded multiply
//! finishes. A MAC address is one word, an IPv4 5-tuple two, a 64-byte name at most eight.
//! It is seeded per table, so an attacker who does not know the seed cannot aim keys at one
//! bucket.

use core::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};

use pktvec_packet::wire::MacAddr;

const K0: u64 = 0x243f_6a88_85a3_08d3; // π
const K1: u64 = 0x9e37_79b9_7f4a_7c15; // golden ratio
const K2: u64 = 0xb7e1_5162_8aed_2a6b; // e

/// The 64-bit product of `a * b` folded: low half XOR high half of the 128-bit product.
#[inline(always)]
fn fold_mul(a: u64, b: u64) -> u64 {
    let p = (a as u128) * (b as u128);
    (p as u64) ^ ((p >> 64) as u64)
}

/// Hashes one 64-bit word with `seed` (the whole hash of a MAC address).
///
/// ```
/// use pktvec_lookup::hash::hash_u64;
/// assert_ne!(hash_u64(1, 0), hash_u64(2, 0));
/// assert_ne!(hash_u64(1, 0), hash_u64(1, 1));
/// ```
#[inline(always)]
pub fn hash_u64(word: u64, seed: u64) -> u64 {
    fold_mul(fold_mul(word ^ seed ^ K0, K1) ^ seed, K2 ^ 8)
}

/// Hashes two 64-bit words with `seed` (an IPv4 5-tuple).
#[inline(always)]
pub fn hash_u64x2(w0: u64, w1: u64, seed: u64) -> u64 {
    let h = fold_mul(w0 ^ seed ^ K0, K1);
    let h = fold_mul(h ^ w1, K2);
    fold_mul(h ^ seed, K1 ^ 16)
}

/// Hashes a byte string of any length with `seed`; the length is part of the hash, so
/// `b"a"` and `b"a\0"` differ.
///
/// ```
/// use pktvec_lookup::hash::hash_bytes;
/// assert_ne!(hash_bytes(b"a", 7), hash_bytes(b"a\0", 7));
/// assert_eq!(hash_bytes(b"/ndn/edu", 7), hash_bytes(b"/ndn/edu", 7));
/// ```
#[inline]
pub fn hash_bytes(bytes: &[u8], seed: u64) -> u64 {
    let mut h = seed ^ K0;
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        h = fold_mul(h ^ u64::from_le_bytes(w), K1);
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut w = [0u8; 8];
        w[..rest.len()].copy_from_slice(rest);
        h = fold_mul(h ^ u64::from_le_bytes(w), K1);
    }
    fold_mul(h ^ seed, K2 ^ bytes.len() as u64)
}

/// [`hash_bytes`] of every prefix of a byte string, in one pass over its bytes.
///
/// [`hash_bytes`] mixes whole 8-byte words into a running state, then a zero-padded last
/// word, then the length, so the hash of `bytes[..end]` is the running state after
/// `end / 8` words plus one word and one finishing multiply. A `PrefixHasher` keeps that
/// running state: asking for growing prefixes (the encoded prefixes of an NDN name, one
/// per component count) costs one multiply per 8 bytes in all, plus two per prefix, and
/// never copies the bytes.
///
/// `prefix(end)` equals `hash_bytes(&bytes[..end], seed)` for any `end`; ends past the
/// slice are clamped to its length, and asking for a shorter prefix than the previous one
/// restarts from the first byte (correct, just not one pass). The bytes after `end` are
/// never part of the hash, so the hasher may be given more than the key (a packet from the
/// key's first byte on): the last partial word is then read whole and masked.
///
/// ```
/// use pktvec_lookup::hash::{hash_bytes, PrefixHasher};
/// let name = b"\x08\x03com\x08\x07example\x08\x05video";
/// let mut h = PrefixHasher::new(name, 42);
/// for end in [5, 14, 21] {
///     assert_eq!(h.prefix(end), hash_bytes(&name[..end], 42));
/// }
/// assert_eq!(h.prefix(3), hash_bytes(&name[..3], 42)); // shorter: restarts
/// assert_eq!(h.prefix(1000), hash_bytes(name, 42)); // clamped
/// ```
#[derive(Clone, Debug)]
pub struct PrefixHasher<'a> {
    bytes: &'a [u8],
    seed: u64,
    /// State after mixing the words of `bytes[..done]`.
    state: u64,
    /// Bytes mixed into `state` (a multiple of 8).
    done: usize,
}

impl<'a> PrefixHasher<'a> {
    /// A hasher of prefixes of `bytes` under `seed` (the seed of [`hash_bytes`]).
    #[inline(always)]
    pub fn new(bytes: &'a [u8], seed: u64) -> Self {
        PrefixHasher {
            bytes,
            seed,
            state: seed ^ K0,
            done: 0,
        }
    }

    /// `hash_bytes(&bytes[..end], seed)`, from the running state.
    #[inline(always)]
    pub fn prefix(&mut self, end: usize) -> u64 {
        let end = end.min(self.bytes.len());
        if end < self.done {
            self.state = self.seed ^ K0;
            self.done = 0;
        }
        // The whole words of bytes[done..end].
        let mid = self.bytes.get(self.done..end).unwrap_or_default();
        let mut words = mid.chunks_exact(8);
        for w in &mut words {
            if let Some(w) = w.first_chunk::<8>() {
                self.state = fold_mul(self.state ^ u64::from_le_bytes(*w), K1);
            }
        }
        self.done = end - words.remainder().len();
        let rest = words.remainder().len();
        let mut h = self.state;
        if rest != 0 {
            // 1..=7 bytes: a whole word masked when the slice goes on, else a padded copy.
            let w = match self
                .bytes
                .get(self.done..)
                .and_then(<[u8]>::first_chunk::<8>)
            {
                Some(w) => u64::from_le_bytes(*w) & (u64::MAX >> (64 - 8 * rest)),
                None => {
                    let mut w = [0u8; 8];
                    w[..rest].copy_from_slice(words.remainder());
                    u64::from_le_bytes(w)
                }
            };
            h = fold_mul(h ^ w, K1);
        }
        fold_mul(h ^ self.seed, K2 ^ end as u64)
    }
}

/// A key of [`HashTable`](super::HashTable): copyable, comparable, with a default value
/// for empty slots, and a seeded 64-bit hash.
///
/// Implement it for your own key types; the quality of `hash_with` decides how evenly
/// keys spread over buckets (a constant hash still works, but a table then holds at most
/// two buckets' worth of those keys; see the adversarial tests).
///
/// ```
/// use pktvec_lookup::hash::{hash_u64, HashKey, HashTable};
///
/// #[derive(Clone, Copy, PartialEq, Eq, Default, Debug)]
/// struct VlanMac { vlan: u16, mac: [u8; 6] }
///
/// impl HashKey for VlanMac {
///     fn hash_with(&self, seed: u64) -> u64 {
///         let mut w = [0u8; 8];
///         w[..2].copy_from_slice(&self.vlan.to_le_bytes());
///         w[2..].copy_from_slice(&self.mac);
///         hash_u64(u64::from_le_bytes(w), seed)
///     }
/// }
///
/// let mut t: HashTable<VlanMac, u32> = HashTable::new(100)?;
/// t.insert(VlanMac { vlan: 10, mac: [2, 0, 0, 0, 0, 1] }, 3)?;
/// assert_eq!(t.lookup(&VlanMac { vlan: 10, mac: [2, 0, 0, 0, 0, 1] }), Some(3));
/// assert_eq!(t.lookup(&VlanMac { vlan: 11, mac: [2, 0, 0, 0, 0, 1] }), None);
/// # Ok::<(), pktvec_lookup::hash::HashError>(())
/// ```
pub trait HashKey: Copy + Eq + Default {
    /// The key's 64-bit hash under `seed`. Equal keys must hash equally.
    fn hash_with(&self, seed: u64) -> u64;
}

#[inline(always)]
fn mac_word(m: &[u8; 6]) -> u64 {
    let mut w = [0u8; 8];
    w[..6].copy_from_slice(m);
    u64::from_le_bytes(w)
}

impl HashKey for [u8; 6] {
    #[inline(always)]
    fn hash_with(&self, seed: u64) -> u64 {
        hash_u64(mac_word(self), seed)
    }
}

impl HashKey for MacAddr {
    #[inline(always)]
    fn hash_with(&self, seed: u64) -> u64 {
        hash_u64(mac_word(&self.0), seed)
    }
}

impl HashKey for u32 {
    #[inline(always)]
    fn hash_with(&self, seed: u64) -> u64 {
        hash_u64(u64::from(*self), seed)
    }
}

impl HashKey for u64 {
    #[inline(always)]
    fn hash_with(&self, seed: u64) -> u64 {
        hash_u64(*self, seed)
    }
}

/// An IPv4 flow key: addresses, ports and IP protocol number (14 bytes in memory).
///
/// ```
/// use pktvec_lookup::hash::Ipv4FiveTuple;
/// let f = Ipv4FiveTuple::new([10, 0, 0, 1].into(), [10, 0, 0, 2].into(), 1234, 80, 6);
/// assert_eq!(f.reversed().src_port, 80);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Ipv4FiveTuple {
    /// Source address.
    pub src: Ipv4Addr,
    /// Destination address.
    pub dst: Ipv4Addr,
    /// Source port (0 for protocols without ports).
    pub src_port: u16,
    /// Destination port (0 for protocols without ports).
    pub dst_port: u16,
    /// IP protocol number (6 TCP, 17 UDP, …).
    pub proto: u8,
}

impl Ipv4FiveTuple {
    /// A flow key from its five fields.
    pub const fn new(
        src: Ipv4Addr,
        dst: Ipv4Addr,
        src_port: u16,
        dst_port: u16,
        proto: u8,
    ) -> Self {
        Ipv4FiveTuple {
            src,
            dst,
            src_port,
            dst_port,
            proto,
        }
    }

    /// The key of the reverse direction (addresses and ports swapped).
    pub const fn reversed(&self) -> Self {
        Ipv4FiveTuple::new(self.dst, self.src, self.dst_port, self.src_port, self.proto)
    }
}

impl Default for Ipv4FiveTuple {
    fn default() -> Self {
        Ipv4FiveTuple::new(Ipv4Addr::UNSPECIFIED, Ipv4Addr::UNSPECIFIED, 0, 0, 0)
    }
}

impl HashKey for Ipv4FiveTuple {
    #[inline(always)]
    fn hash_with(&self, seed: u64) -> u64 {
        let w0 = (u64::from(u32::from(self.src)) << 32) | u64::from(u32::from(self.dst));
        let w1 = (u64::from(self.src_port) << 24)
            | (u64::from(self.dst_port) << 8)
            | u64::from(self.proto);
        hash_u64x2(w0, w1, seed)
    }
}

/// An IPv6 flow key: addresses, ports and next-header number (38 bytes in memory).
///
/// ```
/// use pktvec_lookup::hash::Ipv6FiveTuple;
/// let f = Ipv6FiveTuple::new("2001:db8::1".parse().unwrap(), "2001:db8::2".parse().unwrap(), 1, 2, 17);
/// assert_eq!(f.reversed().dst, "2001:db8::1".parse::<std::net::Ipv6Addr>().unwrap());
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Ipv6FiveTuple {
    /// Source address.
    pub src: Ipv6Addr,
    /// Destination address.
    pub dst: Ipv6Addr,
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// Next header (upper-layer protocol) number.
    pub proto: u8,
}

impl Ipv6FiveTuple {
    /// A flow key from its five fields.
    pub const fn new(
        src: Ipv6Addr,
        dst: Ipv6Addr,
        src_port: u16,
        dst_port: u16,
        proto: u8,
    ) -> Self {
        Ipv6FiveTuple {
            src,
            dst,
            src_port,
            dst_port,
            proto,
        }
    }

    /// The key of the reverse direction (addresses and ports swapped).
    pub const fn reversed(&self) -> Self {
        Ipv6FiveTuple::new(self.dst, self.src, self.dst_port, self.src_port, self.proto)
    }
}

impl Default for Ipv6FiveTuple {
    fn default() -> Self {
        Ipv6FiveTuple::new(Ipv6Addr::UNSPECIFIED, Ipv6Addr::UNSPECIFIED, 0, 0, 0)
    }
}

impl HashKey for Ipv6FiveTuple {
    #[inline]
    fn hash_with(&self, seed: u64) -> u64 {
        let s = u128::from(self.src);
        let d = u128::from(self.dst);
        let mut h = fold_mul(seed ^ K0 ^ (s as u64), K1);
        h = fold_mul(h ^ ((s >> 64) as u64), K2);
        h = fold_mul(h ^ (d as u64), K1);
        h = fold_mul(h ^ ((d >> 64) as u64), K2);
        let w = (u64::from(self.src_port) << 24)
            | (u64::from(self.dst_port) << 8)
            | u64::from(self.proto);
        h = fold_mul(h ^ w, K1);
        fold_mul(h ^ seed, K2 ^ 37)
    }
}

/// A variable-length name of at most [`Name::MAX_LEN`] bytes (an NDN name in its wire or
/// URI form, a DNS name, …), stored inline: 64 bytes and a length, so a table of names
/// needs no side arena and a lookup no pointer chase.
///
/// Bytes past the length are always zero, so equality compares the fixed 65 bytes.
///
/// ```
/// use pktvec_lookup::hash::Name;
/// let n = Name::new(b"/ndn/edu/ucla/ping")?;
/// assert_eq!(n.as_bytes(), b"/ndn/edu/ucla/ping");
/// assert_eq!(n.len(), 18);
/// assert!(Name::new(&[b'a'; 65]).is_err());
/// # Ok::<(), pktvec_lookup::hash::NameTooLong>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Name {
    len: u8,
    bytes: [u8; Name::MAX_LEN],
}

/// The error of [`Name::new`] for names longer than [`Name::MAX_LEN`] bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("name of {0} bytes is longer than {max} bytes", max = Name::MAX_LEN)]
pub struct NameTooLong(pub usize);

impl Name {
    /// Longest name, in bytes.
    pub const MAX_LEN: usize = 64;

    /// The name holding `bytes`, or an error if it is longer than [`Name::MAX_LEN`].
    pub fn new(bytes: &[u8]) -> Result<Self, NameTooLong> {
        if bytes.len() > Self::MAX_LEN {
            return Err(NameTooLong(bytes.len()));
        }
        let mut n = Name::default();
        n.bytes[..bytes.len()].copy_from_slice(bytes);
        n.len = bytes.len() as u8;
        Ok(n)
    }

    /// The name's bytes.
    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }

    /// Length in bytes.
    #[inline]
    pub fn len(&self) -> usize {
        usize::from(self.len)
    }

    /// Whether the name is empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether the name's bytes are `bytes` (what `*self == Name::new(bytes)?` says, without
    /// building a 64-byte copy; false for slices longer than [`Name::MAX_LEN`]).
    ///
    /// ```
    /// use pktvec_lookup::hash::Name;
    /// let n = Name::new(b"/ndn/edu")?;
    /// assert!(n.eq_bytes(b"/ndn/edu"));
    /// assert!(!n.eq_bytes(b"/ndn/edu/ucla"));
    /// assert!(!n.eq_bytes(b"/ndn"));
    /// # Ok::<(), pktvec_lookup::hash::NameTooLong>(())
    /// ```
    #[inline(always)]
    pub fn eq_bytes(&self, bytes: &[u8]) -> bool {
        usize::from(self.len) == bytes.len()
            && self.bytes.get(..bytes.len()).is_some_and(|b| b == bytes)
    }
}

impl Default for Name {
    fn default() -> Self {
        Name {
            len: 0,
            bytes: [0; Name::MAX_LEN],
        }
    }
}

impl fmt::Debug for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Name({:?})", String::from_utf8_lossy(self.as_bytes()))
    }
}

impl TryFrom<&[u8]> for Name {
    type Error = NameTooLong;
    fn try_from(b: &[u8]) -> Result<Self, NameTooLong> {
        Name::new(b)
    }
}

impl TryFrom<&str> for Name {
    type Error = NameTooLong;
    fn try_from(s: &str) -> Result<Self, NameTooLong> {
        Name::new(s.as_bytes())
    }
}

impl HashKey for Name {
    #[inline]
    fn hash_with(&self, seed: u64) -> u64 {
        hash_bytes(self.as_bytes(), seed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Chi-squared statistic of `n` keys over `buckets` buckets, divided by its expected
    /// value (buckets − 1): about 1 for a uniform hash.
    fn chi2_ratio(hashes: impl Iterator<Item = u64>, buckets: usize) -> f64 {
        let mut counts = vec![0u64; buckets];
        let mut n = 0u64;
        for h in hashes {
            counts[((h as u128 * buckets as u128) >> 64) as usize] += 1;
            n += 1;
        }
        let e = n as f64 / buckets as f64;
        let chi: f64 = counts.iter().map(|&c| (c as f64 - e).powi(2) / e).sum();
        chi / (buckets as f64 - 1.0)
    }

    #[test]
    fn sequential_macs_spread_evenly() {
        // One OUI, incrementing NIC part: the most regular MAC population there is.
        let keys = (0..200_000u64).map(|i| {
            let mut m = [0x00, 0x1b, 0x21, 0, 0, 0];
            m[3..].copy_from_slice(&i.to_be_bytes()[5..]);
            m
        });
        let r = chi2_ratio(keys.clone().map(|k| k.hash_with(5)), 4096);
        assert!(r < 1.2, "high bits chi2 ratio {r}");
        // Low 16 bits are the tag: they must be uniform too.
        let r = chi2_ratio(keys.map(|k| k.hash_with(5) << 48), 4096);
        assert!(r < 1.2, "tag bits chi2 ratio {r}");
    }

    #[test]
    fn every_input_bit_changes_half_the_output() {
        let mut total = 0u32;
        let mut n = 0u32;
        for i in 0..2000u64 {
            let k = hash_u64(i.wrapping_mul(0x9e37_79b9), 0) ^ i;
            let mac: [u8; 6] = k.to_le_bytes()[..6].try_into().unwrap();
            let h = mac.hash_with(1);
            for bit in 0..48 {
                let mut m = mac;
                m[bit / 8] ^= 1 << (bit % 8);
                total += (h ^ m.hash_with(1)).count_ones();
                n += 1;
            }
        }
        let avg = f64::from(total) / f64::from(n);
        assert!((30.0..34.0).contains(&avg), "avalanche {avg}");
    }

    #[test]
    fn flows_and_names_spread_evenly() {
        let flows = (0..100_000u32).map(|i| {
            Ipv4FiveTuple::new(
                Ipv4Addr::from(0x0a00_0000 | (i >> 4)),
                Ipv4Addr::new(192, 168, 0, 1),
                (i & 15) as u16 + 1024,
                80,
                6,
            )
        });
        assert!(chi2_ratio(flows.map(|f| f.hash_with(9)), 1024) < 1.2);
        let names =
            (0..100_000u32).map(|i| Name::try_from(format!("/ndn/edu/ucla/{i}").as_str()).unwrap());
        assert!(chi2_ratio(names.map(|n| n.hash_with(9)), 1024) < 1.2);
        let v6 = (0..60_000u16)
            .map(|i| Ipv6FiveTuple::new(Ipv6Addr::LOCALHOST, Ipv6Addr::LOCALHOST, i, 443, 6));
        assert!(chi2_ratio(v6.map(|f| f.hash_with(9)), 1024) < 1.2);
    }

    #[test]
    fn names_respect_length() {
        assert!(Name::new(&[1; 64]).is_ok());
        assert_eq!(Name::new(&[1; 65]), Err(NameTooLong(65)));
        let a = Name::new(b"abc").unwrap();
        let b = Name::new(b"abc\0").unwrap();
        assert_ne!(a, b);
        assert_ne!(a.hash_with(0), b.hash_with(0));
        assert!(Name::default().is_empty());
        assert_eq!(format!("{a:?}"), "Name(\"abc\")");
    }
}
