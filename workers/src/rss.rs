//! Software receive-side scaling: the Toeplitz hash that NICs (and DPDK's `rte_softrss`)
//! compute over a flow's addresses and ports, and a redirection table (RETA) from hash to
//! owner worker.
//!
//! * [`Toeplitz`] holds a 40-byte key and what two hashing paths precompute from it; it
//!   hashes with one of them, its [`Path`]:
//!   * [`Path::Table`], any CPU: one table of 256 `u32` per input byte position (36 KiB),
//!     so hashing an IPv4 5-tuple (12 bytes: source and destination address, source and
//!     destination port, network order) is 12 loads and XORs.
//!   * [`Path::Gfni`], x86-64 with GFNI and AVX-512 (F, BW, VBMI): what input byte `i`
//!     adds to hash byte `k` is a linear map of that byte fixed by key bytes `i + k` and
//!     `i + k + 1`, i.e. an 8×8 bit matrix, which is what `GF2P8AFFINEQB` applies to every
//!     byte of a register. The 39 matrices of a key (320 bytes) are built once; a tuple is
//!     then a masked load, one byte permute, one affine transform and one XOR per 8 of
//!     `len + 3` lanes (2 for IPv4, 5 for IPv6), and a fold of the lanes.
//!     [`Toeplitz::hash_tuples`] hashes sixteen tuples per step with one store of their
//!     hashes.
//!
//!   [`Toeplitz::new`] takes the GFNI path where the CPU has it (`is_x86_feature_detected!`,
//!   once per hasher) and the table path elsewhere; [`Toeplitz::with_path`] forces one.
//!   The GFNI path is built by Rust 1.89 and later (older compilers build the table path
//!   alone). Both compute exactly [`toeplitz_scalar`], the bit-by-bit reference every path
//!   is tested against, for every key and input.
//! * [`DEFAULT_KEY`] is the Microsoft/Intel key that NIC drivers default to;
//!   [`SYMMETRIC_KEY`] (`6d5a` repeated) hashes both directions of a flow alike.
//! * [`Tuple`] is the hash input; [`tuple_from_frame`], [`tuple_from_ipv4`] and
//!   [`tuple_from_ipv6`] extract it from a packet (4-tuple for TCP and UDP, 2-tuple for
//!   every other protocol, for every fragment and for a truncated transport header).
//! * [`Reta`] maps `hash & (size - 1)` to the owner worker, as a NIC's indirection table.
//!
//! ```
//! use pktvec_workers::rss::{Path, Reta, Toeplitz, Tuple};
//! use std::net::Ipv4Addr;
//!
//! let rss = Toeplitz::default();
//! let t = Tuple::v4(
//!     Ipv4Addr::new(66, 9, 149, 187),
//!     Ipv4Addr::new(161, 142, 100, 80),
//!     Some((2794, 1766)),
//! );
//! // The Microsoft RSS verification suite's first IPv4/TCP vector.
//! assert_eq!(rss.hash(t.as_bytes()), 0x51cc_c178);
//! assert_eq!(rss.path(), Path::best());
//! // The same on the table path, whatever the CPU.
//! let table = rss.with_path(Path::Table).unwrap();
//! assert_eq!(table.hash(t.as_bytes()), 0x51cc_c178);
//! let reta = Reta::new(4, 128);
//! assert!(reta.owner(table.hash(t.as_bytes())) < 4);
//! ```

use std::net::{Ipv4Addr, Ipv6Addr};

use pktvec_packet::wire::{
    parse_l2, EtherType, IpProtocol, Ipv4Packet, Ipv6Packet, TcpPacket, UdpPacket,
};

#[cfg(pktvec_gfni)]
mod gfni;

/// Length of a Toeplitz key in bytes (as NICs and DPDK use it).
pub const KEY_LEN: usize = 40;

/// The longest input the 40-byte key covers: 36 bytes (an IPv6 address pair and two ports).
/// Longer inputs are hashed over their first 36 bytes.
pub const MAX_INPUT: usize = KEY_LEN - 4;

/// The Microsoft/Intel default RSS key
/// (`6d5a56da255b0ec24167253d43a38fb0d0ca2bcbae7b30b477cb2da38030f20c6a42b73bbeac01fa`).
pub const DEFAULT_KEY: [u8; KEY_LEN] = [
    0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0,
    0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30, 0xf2, 0x0c,
    0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
];

/// The symmetric key: `6d5a` repeated. Its bit pattern repeats every 16 bits, so swapping
/// source and destination (a shift of 32 or 128 bits for addresses, 16 for ports) leaves
/// the hash unchanged: both directions of a flow land on the same worker.
pub const SYMMETRIC_KEY: [u8; KEY_LEN] = {
    let mut k = [0u8; KEY_LEN];
    let mut i = 0;
    while i < KEY_LEN {
        k[i] = if i % 2 == 0 { 0x6d } else { 0x5a };
        i += 1;
    }
    k
};

/// The 64 key bits starting at byte `i` (zeros past the key's end).
#[inline]
fn key_window(key: &[u8; KEY_LEN], i: usize) -> u64 {
    let mut w = [0u8; 8];
    for (j, b) in w.iter_mut().enumerate() {
        *b = key.get(i + j).copied().unwrap_or(0);
    }
    u64::from_be_bytes(w)
}

/// The Toeplitz hash of `input` under `key`, bit by bit: for every set input bit `n`
/// (most significant bit of the first byte first), XOR in the 32 key bits that start at key
/// bit `n`. This is the definition (and what `rte_softrss` computes); the reference for the
/// table and GFNI paths.
pub fn toeplitz_scalar(key: &[u8; KEY_LEN], input: &[u8]) -> u32 {
    let mut h = 0u32;
    for (i, &byte) in input.iter().take(MAX_INPUT).enumerate() {
        let w = key_window(key, i);
        for bit in 0..8 {
            if byte & (0x80 >> bit) != 0 {
                h ^= (w >> (32 - bit)) as u32;
            }
        }
    }
    h
}

/// How a [`Toeplitz`] hashes. Every path computes the same hash ([`toeplitz_scalar`]).
///
/// ```
/// use pktvec_workers::rss::Path;
///
/// assert!(Path::Table.available());
/// assert!(Path::best().available());
/// assert_eq!(Path::best() == Path::Gfni, Path::Gfni.available());
/// assert_eq!(Path::Gfni.to_string(), "gfni");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Path {
    /// Per-byte lookup tables: one load and one XOR per input byte. Any CPU.
    Table,
    /// `GF2P8AFFINEQB` on AVX-512 registers, sixteen tuples per step in bulk. x86-64 with
    /// GFNI, AVX-512F, AVX-512BW and AVX-512VBMI, built by Rust 1.89 or later.
    Gfni,
}

impl Path {
    /// Every path, the portable one first.
    pub const ALL: [Path; 2] = [Path::Table, Path::Gfni];

    /// Whether this build and this CPU run the path (the CPU's features are read once and
    /// cached by the standard library).
    pub fn available(self) -> bool {
        match self {
            Path::Table => true,
            #[cfg(pktvec_gfni)]
            Path::Gfni => gfni::available(),
            #[cfg(not(pktvec_gfni))]
            Path::Gfni => false,
        }
    }

    /// The fastest available path: [`Path::Gfni`] where available, else [`Path::Table`].
    pub fn best() -> Path {
        if Path::Gfni.available() {
            Path::Gfni
        } else {
            Path::Table
        }
    }

    /// The path's short name: `table` or `gfni`.
    pub fn name(self) -> &'static str {
        match self {
            Path::Table => "table",
            Path::Gfni => "gfni",
        }
    }
}

impl std::fmt::Display for Path {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// [`Toeplitz::with_path`] asked for a path that this build or CPU does not run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the {0} Toeplitz path is not available on this CPU or build")]
pub struct PathUnavailable(pub Path);

/// A Toeplitz hasher: the key, what its paths precompute (the per-byte lookup tables, 36 ×
/// 256 `u32` = 36 KiB, and where built the 40 GFNI matrices, 320 bytes), and the [`Path`]
/// it hashes with.
#[derive(Clone)]
pub struct Toeplitz {
    key: [u8; KEY_LEN],
    table: Box<[[u32; 256]; MAX_INPUT]>,
    #[cfg(pktvec_gfni)]
    matrices: gfni::Matrices,
    /// `Path::Gfni` only where `Path::Gfni.available()` (checked by `new` and `with_path`).
    path: Path,
}

impl std::fmt::Debug for Toeplitz {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Toeplitz")
            .field("key", &self.key)
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl Default for Toeplitz {
    /// The hasher for [`DEFAULT_KEY`].
    fn default() -> Self {
        Toeplitz::new(&DEFAULT_KEY)
    }
}

impl Toeplitz {
    /// Precomputes the tables (and the GFNI matrices) for `key`; hashes with
    /// [`Path::best`].
    ///
    /// ```
    /// use pktvec_workers::rss::{toeplitz_scalar, Toeplitz, DEFAULT_KEY};
    ///
    /// let rss = Toeplitz::new(&DEFAULT_KEY);
    /// assert_eq!(rss.hash(b"any input"), toeplitz_scalar(&DEFAULT_KEY, b"any input"));
    /// ```
    pub fn new(key: &[u8; KEY_LEN]) -> Toeplitz {
        let mut table = Box::new([[0u32; 256]; MAX_INPUT]);
        for (i, t) in table.iter_mut().enumerate() {
            let w = key_window(key, i);
            // bit_value[b]: the contribution of bit b (0 = most significant) of byte i
            let bit_value: [u32; 8] = std::array::from_fn(|b| (w >> (32 - b)) as u32);
            for v in 1..256usize {
                let low = v.trailing_zeros() as usize; // lowest set bit, 0 = least significant
                t[v] = t[v & (v - 1)] ^ bit_value[7 - low];
            }
        }
        Toeplitz {
            key: *key,
            table,
            #[cfg(pktvec_gfni)]
            matrices: gfni::Matrices::new(key),
            path: Path::best(),
        }
    }

    /// The hasher for [`SYMMETRIC_KEY`].
    pub fn symmetric() -> Toeplitz {
        Toeplitz::new(&SYMMETRIC_KEY)
    }

    /// The same hasher on `path`, or [`PathUnavailable`] where this build or CPU lacks it.
    ///
    /// ```
    /// use pktvec_workers::rss::{Path, PathUnavailable, Toeplitz};
    ///
    /// let table = Toeplitz::default().with_path(Path::Table).unwrap();
    /// assert_eq!(table.path(), Path::Table);
    /// match Toeplitz::default().with_path(Path::Gfni) {
    ///     Ok(gfni) => assert_eq!(gfni.hash(b"0123456789ab"), table.hash(b"0123456789ab")),
    ///     Err(e) => assert_eq!(e, PathUnavailable(Path::Gfni)),
    /// }
    /// ```
    pub fn with_path(mut self, path: Path) -> Result<Toeplitz, PathUnavailable> {
        if !path.available() {
            return Err(PathUnavailable(path));
        }
        self.path = path;
        Ok(self)
    }

    /// The path this hasher takes.
    pub fn path(&self) -> Path {
        self.path
    }

    /// The key.
    pub fn key(&self) -> &[u8; KEY_LEN] {
        &self.key
    }

    /// The hash of `input` (its first [`MAX_INPUT`] bytes) on this hasher's path. Equals
    /// [`toeplitz_scalar`] with the same key.
    #[inline]
    pub fn hash(&self, input: &[u8]) -> u32 {
        #[cfg(pktvec_gfni)]
        if self.path == Path::Gfni {
            // SAFETY: the path is Gfni only where gfni::available() held (`new`,
            // `with_path`), which is what gfni::hash needs.
            return unsafe { gfni::hash(&self.matrices, input) };
        }
        self.hash_table(input)
    }

    /// The hash of `input` (its first [`MAX_INPUT`] bytes) on the table path, whatever
    /// [`Toeplitz::path`] says: one load and one XOR per byte.
    ///
    /// ```
    /// use pktvec_workers::rss::{toeplitz_scalar, Toeplitz, SYMMETRIC_KEY};
    ///
    /// let rss = Toeplitz::symmetric();
    /// assert_eq!(rss.hash_table(b"abcd"), toeplitz_scalar(&SYMMETRIC_KEY, b"abcd"));
    /// ```
    #[inline]
    pub fn hash_table(&self, input: &[u8]) -> u32 {
        input
            .iter()
            .zip(self.table.iter())
            .fold(0u32, |h, (&b, t)| h ^ t[usize::from(b)])
    }

    /// The hash of a fixed-length input (`N` ≤ [`MAX_INPUT`]) on this hasher's path; the
    /// table path fully unrolled: 12 loads and XORs for an IPv4 5-tuple, 36 for IPv6.
    ///
    /// ```
    /// use pktvec_workers::rss::{Path, Toeplitz};
    ///
    /// let rss = Toeplitz::default();
    /// let t = [66, 9, 149, 187, 161, 142, 100, 80, 0x0a, 0xea, 0x06, 0xe6];
    /// assert_eq!(rss.hash_fixed(&t), 0x51cc_c178);
    /// assert_eq!(rss.with_path(Path::Table).unwrap().hash_fixed(&t), 0x51cc_c178);
    /// ```
    #[inline]
    pub fn hash_fixed<const N: usize>(&self, input: &[u8; N]) -> u32 {
        const { assert!(N <= MAX_INPUT) };
        #[cfg(pktvec_gfni)]
        if self.path == Path::Gfni {
            // SAFETY: as in `hash`.
            return unsafe { gfni::hash(&self.matrices, input) };
        }
        // The input is read 8 bytes at a time and split with shifts, so the loads are the
        // table's only (one per byte instead of two).
        let mut h = 0u32;
        let mut i = 0;
        while i + 8 <= N {
            let mut w = [0u8; 8];
            w.copy_from_slice(&input[i..i + 8]);
            let w = u64::from_le_bytes(w);
            for j in 0..8 {
                h ^= self.table[i + j][((w >> (8 * j)) & 0xff) as usize];
            }
            i += 8;
        }
        while i < N {
            h ^= self.table[i][usize::from(input[i])];
            i += 1;
        }
        h
    }

    /// Hashes a vector of tuples into `out` (`out[i]` for `tuples[i]`; stops at the
    /// shorter) on this hasher's path: on the GFNI path sixteen tuples per step (a padded
    /// step for the last fewer than sixteen), each step as long as its longest tuple needs.
    ///
    /// ```
    /// use pktvec_workers::rss::{Toeplitz, Tuple};
    /// use std::net::Ipv4Addr;
    ///
    /// let rss = Toeplitz::default();
    /// let tuples: Vec<Tuple> = (0..20u8)
    ///     .map(|i| Tuple::v4(Ipv4Addr::new(10, 0, 0, i), Ipv4Addr::new(10, 0, 1, 1), Some((1000, 80))))
    ///     .collect();
    /// let mut out = [0u32; 20];
    /// rss.hash_tuples(&tuples, &mut out);
    /// for (t, h) in tuples.iter().zip(out) {
    ///     assert_eq!(h, rss.hash(t.as_bytes()));
    /// }
    /// ```
    pub fn hash_tuples(&self, tuples: &[Tuple], out: &mut [u32]) {
        #[cfg(pktvec_gfni)]
        if self.path == Path::Gfni {
            // SAFETY: as in `hash`.
            return unsafe { gfni::hash_tuples(&self.matrices, tuples, out) };
        }
        for (t, o) in tuples.iter().zip(out.iter_mut()) {
            *o = self.hash_table(t.as_bytes());
        }
    }
}

/// The input of the hash: a flow's addresses and, for TCP and UDP, its ports, in network
/// order (source address, destination address, source port, destination port). 8 bytes
/// (IPv4 2-tuple), 12 (IPv4 4-tuple), 32 (IPv6 2-tuple) or 36 (IPv6 4-tuple).
// 40 bytes, 8-aligned: a tuple moves as a few whole words instead of a 37-byte copy
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(C, align(8))]
pub struct Tuple {
    bytes: [u8; MAX_INPUT],
    len: u8,
}

impl Tuple {
    /// The empty input (hash 0): padding for the GFNI path's last step.
    #[cfg(pktvec_gfni)]
    const EMPTY: Tuple = Tuple {
        bytes: [0; MAX_INPUT],
        len: 0,
    };

    /// An IPv4 tuple; with `ports` = `Some((source, destination))` the 4-tuple.
    pub fn v4(src: Ipv4Addr, dst: Ipv4Addr, ports: Option<(u16, u16)>) -> Tuple {
        let mut bytes = [0u8; MAX_INPUT];
        bytes[0..4].copy_from_slice(&src.octets());
        bytes[4..8].copy_from_slice(&dst.octets());
        let len = match ports {
            Some((s, d)) => {
                bytes[8..10].copy_from_slice(&s.to_be_bytes());
                bytes[10..12].copy_from_slice(&d.to_be_bytes());
                12
            }
            None => 8,
        };
        Tuple { bytes, len }
    }

    /// An IPv6 tuple; with `ports` = `Some((source, destination))` the 4-tuple.
    pub fn v6(src: Ipv6Addr, dst: Ipv6Addr, ports: Option<(u16, u16)>) -> Tuple {
        let mut bytes = [0u8; MAX_INPUT];
        bytes[0..16].copy_from_slice(&src.octets());
        bytes[16..32].copy_from_slice(&dst.octets());
        let len = match ports {
            Some((s, d)) => {
                bytes[32..34].copy_from_slice(&s.to_be_bytes());
                bytes[34..36].copy_from_slice(&d.to_be_bytes());
                36
            }
            None => 32,
        };
        Tuple { bytes, len }
    }

    /// The hash input bytes.
    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }

    /// The same flow seen in the other direction (addresses and ports swapped).
    pub fn reversed(&self) -> Tuple {
        let a = if self.len >= 32 { 16 } else { 4 };
        let mut bytes = [0u8; MAX_INPUT];
        bytes[..a].copy_from_slice(&self.bytes[a..2 * a]);
        bytes[a..2 * a].copy_from_slice(&self.bytes[..a]);
        if usize::from(self.len) > 2 * a {
            let p = 2 * a;
            bytes[p..p + 2].copy_from_slice(&self.bytes[p + 2..p + 4]);
            bytes[p + 2..p + 4].copy_from_slice(&self.bytes[p..p + 2]);
        }
        Tuple {
            bytes,
            len: self.len,
        }
    }
}

/// Source and destination port of a TCP or UDP header at the start of `l4`, when the first
/// four bytes are there.
fn ports(proto: IpProtocol, l4: &[u8]) -> Option<(u16, u16)> {
    if l4.len() < 4 {
        return None;
    }
    match proto {
        IpProtocol::TCP => {
            let t = TcpPacket::new_unchecked(l4);
            Some((t.src_port(), t.dst_port()))
        }
        IpProtocol::UDP => {
            let u = UdpPacket::new_unchecked(l4);
            Some((u.src_port(), u.dst_port()))
        }
        _ => None,
    }
}

/// The tuple of an IPv4 packet (`l3` starts at the IPv4 header): the 4-tuple for TCP and
/// UDP, the 2-tuple for other protocols, for any fragment (first or not, so that all of a
/// datagram's fragments hash alike) and when the transport header is cut off. `None` when
/// the IPv4 header itself is not there (short buffer, version not 4, IHL below 5 or past
/// the buffer). Reads only within `l3`; never panics.
pub fn tuple_from_ipv4(l3: &[u8]) -> Option<Tuple> {
    if l3.len() < Ipv4Packet::MIN_HEADER_LEN {
        return None;
    }
    let ip = Ipv4Packet::new_unchecked(l3);
    let hl = ip.header_len();
    if ip.version() != 4 || hl < Ipv4Packet::MIN_HEADER_LEN || hl > l3.len() {
        return None;
    }
    let (src, dst) = (ip.src_addr(), ip.dst_addr());
    if ip.more_frags() || ip.frag_offset() != 0 {
        return Some(Tuple::v4(src, dst, None));
    }
    // The transport header ends with the datagram (total length), or with the buffer when
    // the total length is shorter than the header (a bogus field).
    let tl = usize::from(ip.total_len());
    let end = if tl >= hl { tl.min(l3.len()) } else { hl };
    Some(Tuple::v4(src, dst, ports(ip.protocol(), &l3[hl..end])))
}

/// The tuple of an IPv6 packet (`l3` starts at the IPv6 header), after the hop-by-hop,
/// routing, destination options and AH extension headers (at most 8 of them): the 4-tuple
/// for TCP and UDP, the 2-tuple for other protocols, behind a fragment header, and when an
/// extension or transport header is cut off. `None` when the 40-byte header is not there or
/// the version is not 6. Reads only within `l3`; never panics.
pub fn tuple_from_ipv6(l3: &[u8]) -> Option<Tuple> {
    if l3.len() < Ipv6Packet::HEADER_LEN {
        return None;
    }
    let ip = Ipv6Packet::new_unchecked(l3);
    if ip.version() != 6 {
        return None;
    }
    let (src, dst) = (ip.src_addr(), ip.dst_addr());
    let pl = usize::from(ip.payload_len());
    // Payload length 0 is a jumbogram (or a bogus field): the buffer's end then.
    let end = if pl == 0 {
        l3.len()
    } else {
        (Ipv6Packet::HEADER_LEN + pl).min(l3.len())
    };
    let mut next = ip.next_header();
    let mut off = Ipv6Packet::HEADER_LEN;
    for _ in 0..8 {
        let ext_len = match next {
            IpProtocol::HOPOPT | IpProtocol::IPV6_ROUTE | IpProtocol::IPV6_OPTS => {
                l3.get(off + 1).map(|&n| (usize::from(n) + 1) * 8)
            }
            IpProtocol::AH => l3.get(off + 1).map(|&n| (usize::from(n) + 2) * 4),
            IpProtocol::IPV6_FRAG => return Some(Tuple::v6(src, dst, None)),
            _ => break,
        };
        match (ext_len, l3.get(off)) {
            (Some(n), Some(&nh)) if off + 1 < end => {
                next = IpProtocol(nh);
                off += n;
            }
            _ => return Some(Tuple::v6(src, dst, None)),
        }
    }
    let l4 = l3.get(off..end).unwrap_or(&[]);
    Some(Tuple::v6(src, dst, ports(next, l4)))
}

/// The tuple of an Ethernet frame (with up to two VLAN tags): see [`tuple_from_ipv4`] and
/// [`tuple_from_ipv6`]. `None` for other EtherTypes and malformed L2/L3 headers. Never
/// panics.
#[inline(always)]
pub fn tuple_from_frame(frame: &[u8]) -> Option<Tuple> {
    match fast_ipv4_ports(frame) {
        Some(b) => {
            let mut bytes = [0u8; MAX_INPUT];
            bytes[..12].copy_from_slice(b);
            Some(Tuple { bytes, len: 12 })
        }
        None => tuple_from_frame_parsed(frame),
    }
}

/// The common case in a few byte tests: untagged IPv4 without options, not a fragment, TCP
/// or UDP with its ports inside the datagram: the 12 tuple bytes (addresses and ports, as
/// they lie in the frame), the same the full parse gives.
#[inline(always)]
fn fast_ipv4_ports(frame: &[u8]) -> Option<&[u8; 12]> {
    let h = frame.get(..38)?;
    if h[12..15] == [0x08, 0x00, 0x45]
        && h[20] & 0x3f == 0
        && h[21] == 0
        && (h[23] == 6 || h[23] == 17)
        && u16::from_be_bytes([h[16], h[17]]) >= 24
    {
        h[26..38].try_into().ok()
    } else {
        None
    }
}

impl Tuple {
    /// Fills this tuple with `frame`'s ([`tuple_from_frame`]) in place, and returns true;
    /// false, leaving it as it was, when the frame has none. The per-packet step of a node
    /// that hashes a vector of tuples at once.
    ///
    /// ```
    /// use pktvec_packet::builder::PacketBuilder;
    /// use pktvec_workers::rss::{tuple_from_frame, Tuple};
    /// use std::net::Ipv4Addr;
    /// let f = PacketBuilder::ethernet([2; 6].into(), [4; 6].into())
    ///     .ipv4(Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2))
    ///     .udp(1, 2)
    ///     .build();
    /// let mut t = Tuple::v4(Ipv4Addr::UNSPECIFIED, Ipv4Addr::UNSPECIFIED, None);
    /// assert!(t.set_from_frame(&f));
    /// assert_eq!(Some(t), tuple_from_frame(&f));
    /// assert!(!t.set_from_frame(&[0u8; 10]));
    /// ```
    #[inline(always)]
    pub fn set_from_frame(&mut self, frame: &[u8]) -> bool {
        if let Some(b) = fast_ipv4_ports(frame) {
            self.bytes[..12].copy_from_slice(b);
            self.bytes[12..].fill(0);
            self.len = 12;
            return true;
        }
        match tuple_from_frame_parsed(frame) {
            Some(t) => {
                *self = t;
                true
            }
            None => false,
        }
    }
}

/// [`tuple_from_frame`] by the full parse (VLAN tags, options, fragments, IPv6).
#[inline(never)]
fn tuple_from_frame_parsed(frame: &[u8]) -> Option<Tuple> {
    let l2 = parse_l2(frame).ok()?;
    let l3 = frame.get(usize::from(l2.l3_offset)..)?;
    match l2.ethertype {
        EtherType::IPV4 => tuple_from_ipv4(l3),
        EtherType::IPV6 => tuple_from_ipv6(l3),
        _ => None,
    }
}

/// A redirection table (RETA): `size` entries (a power of two), each naming the worker that
/// owns the flows whose hash has those low bits. Filled round-robin by [`Reta::new`]; single
/// entries can be moved with [`Reta::set`], as on a NIC.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reta {
    entries: Vec<u16>,
    workers: usize,
}

impl Reta {
    /// A table of `size` entries over `workers` workers, entry `i` owned by `i % workers`.
    ///
    /// # Panics
    /// If `size` is not a power of two, `workers` is 0 or above 65,536.
    pub fn new(workers: usize, size: usize) -> Reta {
        assert!(
            size.is_power_of_two(),
            "RETA size {size} is not a power of two"
        );
        assert!(
            (1..=1 << 16).contains(&workers),
            "RETA over {workers} workers"
        );
        let entries = (0..size).map(|i| (i % workers) as u16).collect();
        Reta { entries, workers }
    }

    /// The worker that owns `hash`: entry `hash & (size - 1)`.
    #[inline]
    pub fn owner(&self, hash: u32) -> usize {
        usize::from(self.entries[hash as usize & (self.entries.len() - 1)])
    }

    /// Entry `index`'s worker.
    ///
    /// # Panics
    /// If `index` ≥ [`Reta::len`].
    pub fn get(&self, index: usize) -> usize {
        usize::from(self.entries[index])
    }

    /// Gives entry `index` to `worker`.
    ///
    /// # Panics
    /// If `index` ≥ [`Reta::len`] or `worker` ≥ [`Reta::workers`].
    pub fn set(&mut self, index: usize, worker: usize) {
        assert!(worker < self.workers, "worker {worker} of {}", self.workers);
        self.entries[index] = worker as u16;
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Always false: a table has at least one entry.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Number of workers.
    pub fn workers(&self) -> usize {
        self.workers
    }
}

/// DPDK's own `rte_softrss`, through the C shim of pktvec-dpdk-sys (the `dpdk` feature),
/// for tests and measurements against it.
#[cfg(feature = "dpdk")]
pub mod dpdk {
    use super::{KEY_LEN, MAX_INPUT};

    /// `rte_softrss(input, input.len(), key)`: `input` is the tuple as 32-bit words in host
    /// order (word `j` = bytes `4j..4j+4` of the network-order tuple read big-endian), as
    /// DPDK's `rte_ipv4_tuple` holds it.
    ///
    /// # Panics
    /// If `input` has more than 9 words (the 40-byte key covers 36 bytes).
    pub fn softrss(input: &[u32], key: &[u8; KEY_LEN]) -> u32 {
        assert!(input.len() * 4 <= MAX_INPUT, "{} words", input.len());
        // SAFETY: rte_softrss reads `input[0..len]` and key bytes `0..4 * (len + 1)`
        // (≤ 40 by the assertion); both slices are that long, and it writes nothing.
        unsafe {
            pktvec_dpdk_sys::pktvec_rte_softrss(input.as_ptr(), input.len() as u32, key.as_ptr())
        }
    }

    /// The tuple bytes (network order, a multiple of 4 long) as `rte_softrss`'s words.
    pub fn words(tuple: &[u8]) -> Vec<u32> {
        tuple
            .chunks_exact(4)
            .map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]))
            .collect()
    }
}
