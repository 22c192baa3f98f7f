//! Route tables: text loading with line-numbered errors, seeded generators of realistic
//! tables and keys, and writers for the files the DPDK comparison harnesses read.
//!
//! # Text format
//!
//! One route per line, fields separated by whitespace (spaces or tabs):
//!
//! ```text
//! prefix[/len] [next-hop] [ignored fields...]
//! ```
//!
//! * `#` starts a comment that runs to the end of the line; blank lines are ignored.
//! * `prefix` is an IPv4 (for [`parse_ipv4`]) or IPv6 (for [`parse_ipv6`]) address. Without
//!   `/len` it is a host route (`/32` or `/128`).
//! * **Host bits set beyond the length are an error** ([`RouteErrorKind::HostBitsSet`]),
//!   not silently masked: a line like `10.1.2.3/8` is almost always a typo, and the real
//!   tables in `shared/data/routes/` are all canonical. Use [`Route::masked`] when masking is
//!   wanted.
//! * `next-hop` is either a decimal id (`0..=u32::MAX`) or an IP address of either family.
//!   Addresses are *interned*: the first distinct address seen in the text gets id 0, the
//!   next one id 1, and so on. (If a text mixes decimal ids and addresses, the two id spaces
//!   overlap; do not mix them.)
//! * A missing next hop gets the deterministic id `line_number % 2^20` (1-based line number),
//!   so tables made of bare prefixes (the tier1 files) still get many distinct next hops.
//! * Fields after the next hop are ignored, so the RIPE `prefix<TAB>next-hop<TAB>origin-AS`
//!   files load as they are.
//!
//! The `load_*_file` functions read plain text, or `.xz` files by running `xzcat` (package
//! `xz-utils`) as a child process; no compression library is linked.
//!
//! ```
//! use pktvec_lookup::routes::parse_ipv4;
//! use std::net::Ipv4Addr;
//!
//! let routes = parse_ipv4("# comment\n10.0.0.0/8 7\n\n192.168.1.0/24 10.0.0.1\n1.2.3.4\n")?;
//! assert_eq!(routes.len(), 3);
//! assert_eq!((routes[0].addr, routes[0].len, routes[0].next_hop), (Ipv4Addr::new(10, 0, 0, 0), 8, 7));
//! assert_eq!(routes[1].next_hop, 0); // first interned next-hop address
//! assert_eq!((routes[2].len, routes[2].next_hop), (32, 5)); // bare host route, line 5
//!
//! let err = parse_ipv4("1.2.3.0/24 1\n1.2.3.0/33 5\n").unwrap_err();
//! assert_eq!(err.to_string(), r#"line 2: "1.2.3.0/33 5": prefix length 33 > 32"#);
//! # Ok::<(), pktvec_lookup::routes::RouteError>(())
//! ```

use std::collections::HashMap;
use std::collections::HashSet;
use std::fmt;
use std::io::{self, BufWriter, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::Path;

use serde::{Deserialize, Serialize};

/// One route: a prefix (`addr/len`) and the next-hop id it maps to.
///
/// ```
/// use pktvec_lookup::routes::{Route4, Route};
/// use std::net::Ipv4Addr;
///
/// let r: Route4 = Route { addr: Ipv4Addr::new(10, 0, 0, 0), len: 8, next_hop: 3 };
/// assert_eq!(r.to_string(), "10.0.0.0/8 3");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Route<A> {
    /// Network address; bits beyond `len` are zero in every route this module produces.
    pub addr: A,
    /// Prefix length in bits (`0..=32` for IPv4, `0..=128` for IPv6).
    pub len: u8,
    /// Next-hop id.
    pub next_hop: u32,
}

/// An IPv4 route.
///
/// ```
/// let r = pktvec_lookup::routes::Route4 { addr: [1, 2, 3, 0].into(), len: 24, next_hop: 1 };
/// assert_eq!(r.len, 24);
/// ```
pub type Route4 = Route<Ipv4Addr>;

/// An IPv6 route.
///
/// ```
/// let r = pktvec_lookup::routes::Route6 { addr: "2001:db8::".parse().unwrap(), len: 32, next_hop: 1 };
/// assert_eq!(r.to_string(), "2001:db8::/32 1");
/// ```
pub type Route6 = Route<Ipv6Addr>;

impl<A: fmt::Display> fmt::Display for Route<A> {
    /// Formats the route as one line of the text format: `addr/len next_hop`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{} {}", self.addr, self.len, self.next_hop)
    }
}

/// Address families the loaders and generators handle (IPv4 and IPv6).
///
/// Sealed in practice: the methods are only meaningful for the two std address types.
pub trait Family: Copy + fmt::Display + Eq + std::hash::Hash + Sized {
    /// Address width in bits.
    const BITS: u8;
    /// Parses an address of this family.
    fn parse_addr(s: &str) -> Option<Self>;
    /// The address as an integer (IPv4 in the low 32 bits).
    fn to_bits(self) -> u128;
    /// The address from an integer (IPv4 from the low 32 bits).
    fn from_bits(v: u128) -> Self;
}

impl Family for Ipv4Addr {
    const BITS: u8 = 32;
    fn parse_addr(s: &str) -> Option<Self> {
        s.parse().ok()
    }
    fn to_bits(self) -> u128 {
        u128::from(u32::from(self))
    }
    fn from_bits(v: u128) -> Self {
        Ipv4Addr::from(v as u32)
    }
}

impl Family for Ipv6Addr {
    const BITS: u8 = 128;
    fn parse_addr(s: &str) -> Option<Self> {
        s.parse().ok()
    }
    fn to_bits(self) -> u128 {
        u128::from(self)
    }
    fn from_bits(v: u128) -> Self {
        Ipv6Addr::from(v)
    }
}

/// Mask of the top `len` bits of a `bits`-wide address, in the low `bits` bits of a u128.
fn net_mask(bits: u8, len: u8) -> u128 {
    let len = len.min(bits);
    let all: u128 = if bits == 128 {
        u128::MAX
    } else {
        (1u128 << bits) - 1
    };
    all & !all.checked_shr(u32::from(len)).unwrap_or(0)
}

impl<A: Family> Route<A> {
    /// The same route with the host bits beyond `len` cleared (and `len` clamped to the
    /// address width).
    ///
    /// ```
    /// use pktvec_lookup::routes::Route4;
    /// let r = Route4 { addr: [10, 1, 2, 3].into(), len: 8, next_hop: 1 }.masked();
    /// assert_eq!(r.addr, std::net::Ipv4Addr::new(10, 0, 0, 0));
    /// ```
    pub fn masked(self) -> Self {
        let len = self.len.min(A::BITS);
        Route {
            addr: A::from_bits(self.addr.to_bits() & net_mask(A::BITS, len)),
            len,
            next_hop: self.next_hop,
        }
    }

    /// Whether `key` lies inside this route's prefix.
    ///
    /// ```
    /// use pktvec_lookup::routes::Route4;
    /// let r = Route4 { addr: [10, 0, 0, 0].into(), len: 8, next_hop: 1 };
    /// assert!(r.contains([10, 9, 9, 9].into()));
    /// assert!(!r.contains([11, 0, 0, 0].into()));
    /// ```
    pub fn contains(&self, key: A) -> bool {
        let m = net_mask(A::BITS, self.len);
        key.to_bits() & m == self.addr.to_bits() & m
    }
}

/// What was wrong with a line (or a file) of route text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RouteErrorKind {
    /// The prefix is not an address of the expected family.
    #[error("bad address {0:?}")]
    BadAddress(String),
    /// The text after `/` is not a decimal number.
    #[error("bad prefix length {0:?}")]
    BadLength(String),
    /// The prefix length exceeds the address width.
    #[error("prefix length {len} > {max}")]
    LengthTooLong {
        /// Length found.
        len: u32,
        /// Address width.
        max: u8,
    },
    /// Bits beyond the prefix length are set (e.g. `10.1.0.0/8`).
    #[error("host bits set beyond /{len} (network is {network})")]
    HostBitsSet {
        /// Prefix length.
        len: u8,
        /// The masked network address, as a hint.
        network: String,
    },
    /// The next hop is neither a decimal `u32` nor an IP address.
    #[error("bad next hop {0:?}")]
    BadNextHop(String),
    /// The file could not be read (or `xzcat` failed); `line` is 0.
    #[error("i/o error: {0}")]
    Io(String),
}

/// An error in route text: the 1-based line number, the line's text and what was wrong.
///
/// Displays as `line 12: "1.2.3.0/33 5": prefix length 33 > 32`.
///
/// ```
/// use pktvec_lookup::routes::{parse_ipv4, RouteErrorKind};
/// let e = parse_ipv4("10.1.0.0/8 1").unwrap_err();
/// assert_eq!(e.line, 1);
/// assert!(matches!(e.kind, RouteErrorKind::HostBitsSet { len: 8, .. }));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {text:?}: {kind}")]
pub struct RouteError {
    /// 1-based line number (0 for file-level errors).
    pub line: usize,
    /// The offending line (without its line terminator), or the path for file errors.
    pub text: String,
    /// What was wrong.
    pub kind: RouteErrorKind,
}

/// Parses route text of either family (see the [module docs](self) for the format).
///
/// ```
/// use pktvec_lookup::routes::parse;
/// let v4 = parse::<std::net::Ipv4Addr>("10.0.0.0/8 1")?;
/// assert_eq!(v4[0].len, 8);
/// # Ok::<(), pktvec_lookup::routes::RouteError>(())
/// ```
pub fn parse<A: Family>(text: &str) -> Result<Vec<Route<A>>, RouteError> {
    let mut out = Vec::new();
    let mut interned: HashMap<IpAddr, u32> = HashMap::new();
    for (i, raw) in text.lines().enumerate() {
        let line_no = i + 1;
        let content = raw.split('#').next().unwrap_or("");
        let mut fields = content.split_whitespace();
        let Some(prefix) = fields.next() else {
            continue;
        };
        let err = |kind| RouteError {
            line: line_no,
            text: raw.trim_end_matches('\r').to_string(),
            kind,
        };
        let (addr_s, len_s) = match prefix.split_once('/') {
            Some((a, l)) => (a, Some(l)),
            None => (prefix, None),
        };
        let addr = A::parse_addr(addr_s)
            .ok_or_else(|| err(RouteErrorKind::BadAddress(addr_s.to_string())))?;
        let len: u8 = match len_s {
            None => A::BITS,
            Some(l) => {
                if l.is_empty() || !l.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(err(RouteErrorKind::BadLength(l.to_string())));
                }
                let v: u32 = l
                    .parse()
                    .map_err(|_| err(RouteErrorKind::BadLength(l.to_string())))?;
                if v > u32::from(A::BITS) {
                    return Err(err(RouteErrorKind::LengthTooLong {
                        len: v,
                        max: A::BITS,
                    }));
                }
                v as u8
            }
        };
        let bits = addr.to_bits();
        let net = bits & net_mask(A::BITS, len);
        if net != bits {
            return Err(err(RouteErrorKind::HostBitsSet {
                len,
                network: A::from_bits(net).to_string(),
            }));
        }
        let next_hop = match fields.next() {
            None => (line_no % (1 << 20)) as u32,
            Some(nh) if nh.bytes().all(|b| b.is_ascii_digit()) => nh
                .parse::<u32>()
                .map_err(|_| err(RouteErrorKind::BadNextHop(nh.to_string())))?,
            Some(nh) => match nh.parse::<IpAddr>() {
                Ok(ip) => {
                    let next = interned.len() as u32;
                    *interned.entry(ip).or_insert(next)
                }
                Err(_) => return Err(err(RouteErrorKind::BadNextHop(nh.to_string()))),
            },
        };
        out.push(Route {
            addr,
            len,
            next_hop,
        });
    }
    Ok(out)
}

/// Parses IPv4 route text (see the [module docs](self)).
///
/// ```
/// let r = pktvec_lookup::routes::parse_ipv4("1.0.0.0/24\t202.249.2.20\t4788\n")?;
/// assert_eq!((r[0].len, r[0].next_hop), (24, 0));
/// # Ok::<(), pktvec_lookup::routes::RouteError>(())
/// ```
pub fn parse_ipv4(text: &str) -> Result<Vec<Route4>, RouteError> {
    parse(text)
}

/// Parses IPv6 route text (see the [module docs](self)).
///
/// ```
/// let r = pktvec_lookup::routes::parse_ipv6("2001:db8::/32 4\n2001:db8:1::/48\n")?;
/// assert_eq!((r[0].len, r[0].next_hop), (32, 4));
/// assert_eq!((r[1].len, r[1].next_hop), (48, 2));
/// assert!(pktvec_lookup::routes::parse_ipv6("2001:db8::/129").is_err());
/// # Ok::<(), pktvec_lookup::routes::RouteError>(())
/// ```
pub fn parse_ipv6(text: &str) -> Result<Vec<Route6>, RouteError> {
    parse(text)
}

/// Reads a whole text file; `.xz` files are decompressed by running `xzcat`.
///
/// ```no_run
/// let text = pktvec_lookup::routes::read_text_file("routes.txt.xz")?;
/// # Ok::<(), pktvec_lookup::routes::RouteError>(())
/// ```
pub fn read_text_file(path: impl AsRef<Path>) -> Result<String, RouteError> {
    let path = path.as_ref();
    let io_err = |m: String| RouteError {
        line: 0,
        text: path.display().to_string(),
        kind: RouteErrorKind::Io(m),
    };
    let bytes = if path.extension().is_some_and(|e| e == "xz") {
        let out = std::process::Command::new("xzcat")
            .arg("--")
            .arg(path)
            .output()
            .map_err(|e| io_err(format!("cannot run xzcat (package xz-utils): {e}")))?;
        if !out.status.success() {
            return Err(io_err(format!(
                "xzcat failed ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        out.stdout
    } else {
        std::fs::read(path).map_err(|e| io_err(e.to_string()))?
    };
    String::from_utf8(bytes).map_err(|e| io_err(format!("not UTF-8: {e}")))
}

/// Loads an IPv4 route file (plain text or `.xz`, see the [module docs](self)).
///
/// ```no_run
/// let routes = pktvec_lookup::routes::load_ipv4_file(
///     "/work/shared/data/routes/tier1-fulltable-ipv4.txt.xz")?;
/// assert_eq!(routes.len(), 901_899);
/// # Ok::<(), pktvec_lookup::routes::RouteError>(())
/// ```
pub fn load_ipv4_file(path: impl AsRef<Path>) -> Result<Vec<Route4>, RouteError> {
    parse_ipv4(&read_text_file(path)?)
}

/// Loads an IPv6 route file (plain text or `.xz`, see the [module docs](self)).
///
/// ```no_run
/// let routes = pktvec_lookup::routes::load_ipv6_file(
///     "/work/shared/data/routes/tier1-fulltable-ipv6.txt.xz")?;
/// assert_eq!(routes.len(), 160_147);
/// # Ok::<(), pktvec_lookup::routes::RouteError>(())
/// ```
pub fn load_ipv6_file(path: impl AsRef<Path>) -> Result<Vec<Route6>, RouteError> {
    parse_ipv6(&read_text_file(path)?)
}

// ---------------------------------------------------------------------------------------
// Generators
// ---------------------------------------------------------------------------------------

/// A tiny deterministic PRNG (SplitMix64): fast, seedable, no dependency. Good enough for
/// test tables and keys; not for cryptography.
///
/// ```
/// use pktvec_lookup::routes::SplitMix64;
/// let mut a = SplitMix64::new(42);
/// let mut b = SplitMix64::new(42);
/// assert_eq!(a.next_u64(), b.next_u64());
/// assert!(a.below(10) < 10);
/// ```
#[derive(Debug, Clone)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator seeded with `seed`.
    ///
    /// ```
    /// let _ = pktvec_lookup::routes::SplitMix64::new(1);
    /// ```
    pub fn new(seed: u64) -> Self {
        SplitMix64 { state: seed }
    }

    /// The next 64 random bits.
    ///
    /// ```
    /// let mut r = pktvec_lookup::routes::SplitMix64::new(1);
    /// assert_ne!(r.next_u64(), r.next_u64());
    /// ```
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A value in `0..n` (0 when `n == 0`), by multiply-shift (negligible bias).
    ///
    /// ```
    /// let mut r = pktvec_lookup::routes::SplitMix64::new(1);
    /// assert!((0..100).all(|_| r.below(7) < 7));
    /// ```
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }
}

/// Prefix-length histogram (length, count) of `shared/data/routes/tier1-fulltable-ipv4.txt.xz`
/// (901,899 prefixes), computed with
/// `xzcat tier1-fulltable-ipv4.txt.xz | awk -F/ '{c[$2]++} END{for(k in c) print k, c[k]}' | sort -n`.
pub const IPV4_BGP_LENGTH_HISTOGRAM: &[(u8, u32)] = &[
    (8, 16),
    (9, 13),
    (10, 38),
    (11, 103),
    (12, 299),
    (13, 581),
    (14, 1203),
    (15, 2100),
    (16, 13490),
    (17, 8235),
    (18, 13798),
    (19, 24870),
    (20, 42611),
    (21, 50750),
    (22, 108623),
    (23, 96510),
    (24, 537698),
    (25, 20),
    (26, 3),
    (27, 11),
    (28, 18),
    (29, 17),
    (30, 3),
    (31, 3),
    (32, 886),
];

/// Prefix-length histogram within /48../64 of `shared/data/routes/tier1-fulltable-ipv6.txt.xz`
/// (75,550 of its 160,147 prefixes fall in that range), computed with
/// `xzcat tier1-fulltable-ipv6.txt.xz | awk -F/ '$2>=48 && $2<=64 {c[$2]++} END{for(k in c) print k, c[k]}'`.
/// Lengths with no prefix in the real table are absent.
pub const IPV6_48_64_LENGTH_HISTOGRAM: &[(u8, u32)] = &[
    (48, 75488),
    (49, 11),
    (50, 3),
    (52, 1),
    (55, 1),
    (56, 24),
    (58, 20),
    (60, 2),
];

fn sample_len(rng: &mut SplitMix64, hist: &[(u8, u32)], total: u64) -> u8 {
    let mut x = rng.below(total);
    for &(len, c) in hist {
        if x < u64::from(c) {
            return len;
        }
        x -= u64::from(c);
    }
    hist.last().map_or(0, |h| h.0)
}

/// Generic generator: `n` distinct prefixes with lengths drawn from `hist`, network bits
/// random under the fixed `top` bits (`top_len` of them), next hops uniform in `0..2^24`.
fn generate<A: Family>(
    n: usize,
    seed: u64,
    hist: &[(u8, u32)],
    top: u128,
    top_len: u8,
) -> Vec<Route<A>> {
    let total: u64 = hist.iter().map(|h| u64::from(h.1)).sum();
    let mut rng = SplitMix64::new(seed);
    let mut seen: HashSet<(u128, u8)> = HashSet::with_capacity(n);
    let mut out = Vec::with_capacity(n);
    // Bounded effort: a request larger than the prefix space the histogram can fill returns
    // fewer routes instead of looping forever.
    let max_attempts = (n as u64).saturating_mul(64).saturating_add(1024);
    let mut attempts = 0u64;
    while out.len() < n && attempts < max_attempts {
        attempts += 1;
        let len = sample_len(&mut rng, hist, total);
        let raw = (u128::from(rng.next_u64()) << 64) | u128::from(rng.next_u64());
        let raw = if A::BITS == 128 {
            raw
        } else {
            raw & ((1u128 << A::BITS) - 1)
        };
        let top_mask = net_mask(A::BITS, top_len);
        let bits = ((raw & !top_mask) | (top & top_mask)) & net_mask(A::BITS, len);
        if seen.insert((bits, len)) {
            out.push(Route {
                addr: A::from_bits(bits),
                len,
                next_hop: rng.below(1 << 24) as u32,
            });
        }
    }
    out
}

/// `n` distinct random IPv4 prefixes with the prefix-length distribution of a real BGP
/// table ([`IPV4_BGP_LENGTH_HISTOGRAM`]), next hops uniform in `0..2^24`. Deterministic for a
/// given `(n, seed)`. Returns fewer than `n` routes only when `n` is beyond what the
/// distribution can fill (tens of millions).
///
/// ```
/// let a = pktvec_lookup::routes::generate_ipv4(10_000, 7);
/// assert_eq!(a.len(), 10_000);
/// assert_eq!(a, pktvec_lookup::routes::generate_ipv4(10_000, 7));
/// let n24 = a.iter().filter(|r| r.len == 24).count();
/// assert!(n24 > 5_500 && n24 < 6_400); // ~59.6% of a real table is /24
/// ```
pub fn generate_ipv4(n: usize, seed: u64) -> Vec<Route4> {
    generate(n, seed, IPV4_BGP_LENGTH_HISTOGRAM, 0, 0)
}

/// `n` distinct random IPv6 prefixes of length /48–/64 inside `2000::/3` with the length
/// distribution of [`IPV6_48_64_LENGTH_HISTOGRAM`] (the seed paper on batching uses
/// 200,000 such prefixes for IPv6), next hops uniform in `0..2^24`. Deterministic for `(n, seed)`.
///
/// ```
/// let a = pktvec_lookup::routes::generate_ipv6(1_000, 7);
/// assert_eq!(a.len(), 1_000);
/// assert!(a.iter().all(|r| (48..=64).contains(&r.len) && r.addr.segments()[0] >> 13 == 1));
/// ```
pub fn generate_ipv6(n: usize, seed: u64) -> Vec<Route6> {
    generate(n, seed, IPV6_48_64_LENGTH_HISTOGRAM, 0x2000u128 << 112, 3)
}

/// Prefixes per /8 (index = first octet) of `shared/data/routes/tier1-fulltable-ipv4.txt.xz`
/// (901,899 prefixes; 220 of the 256 /8s hold at least one). The clustered generator
/// ([`generate_ipv4_clustered`]) places the prefixes that start a new cluster in a /8 drawn
/// with these weights. Recomputed from the file by `tests/routes.rs`
/// (`clustered_model_constants_match_tier1`), or with
/// `xzcat tier1-fulltable-ipv4.txt.xz | awk -F. '{c[$1]++} END{for(k in c) print k, c[k]}' | sort -n`.
///
/// ```
/// use pktvec_lookup::routes::IPV4_BGP_PER_SLASH8;
/// assert_eq!(IPV4_BGP_PER_SLASH8.iter().sum::<u32>(), 901_899);
/// assert_eq!(IPV4_BGP_PER_SLASH8[10], 0); // private space is not routed
/// ```
pub const IPV4_BGP_PER_SLASH8: [u32; 256] = [
    0, 2617, 2412, 250, 20, 7686, 593, 11, 2113, 1, 0, 285, 1846, 904, 4240, 527, 154, 1223, 993,
    9, 372, 5, 228, 9730, 5581, 7, 1, 4848, 1, 25, 1, 4313, 213, 1, 1359, 1001, 3818, 7833, 5481,
    1693, 421, 7335, 1567, 3227, 368, 25609, 7878, 1238, 0, 3433, 3565, 982, 2124, 2, 793, 1070,
    28, 326, 2869, 2067, 1525, 4326, 4511, 2791, 8536, 3591, 7794, 4875, 3578, 6512, 3145, 2145,
    5424, 1, 4763, 2430, 1239, 4343, 3457, 4333, 3965, 3044, 2732, 2339, 2882, 5590, 1338, 3605,
    2242, 6061, 1995, 11139, 4116, 4225, 6423, 6871, 2614, 1013, 2185, 1150, 269, 2242, 5134,
    38520, 7781, 1625, 2372, 3855, 1778, 6501, 3768, 5481, 3914, 3059, 2625, 3937, 3503, 6112,
    3728, 3219, 3745, 2081, 4398, 4273, 2767, 3844, 246, 0, 2079, 1938, 1725, 3680, 1708, 746,
    2962, 584, 1543, 1752, 4789, 2714, 1998, 2384, 2726, 2725, 2069, 803, 2798, 2770, 3323, 3204,
    1662, 2362, 2691, 850, 6141, 2411, 3054, 2102, 1944, 3331, 3676, 2568, 5185, 2113, 2604, 2609,
    1803, 2850, 5923, 1338, 7633, 2620, 4468, 5250, 2860, 1851, 6289, 10444, 6290, 5033, 4281,
    5999, 4313, 3681, 4047, 32643, 9981, 9350, 7096, 9058, 13576, 3139, 14143, 12257, 10308, 8123,
    5727, 4586, 8009, 8667, 11724, 10083, 13867, 13837, 6307, 4956, 5776, 5074, 6286, 6963, 6270,
    4272, 6629, 6124, 1624, 112, 9855, 4751, 2551, 1276, 2843, 1695, 1808, 4335, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
];

/// (length, prefixes of that length covered by a shorter prefix of the same table) for
/// `tier1-fulltable-ipv4.txt.xz`: e.g. 276,616 of its 537,698 /24s lie inside a shorter
/// prefix of the table. Divided by [`IPV4_BGP_LENGTH_HISTOGRAM`], the probability that
/// [`generate_ipv4_clustered`] draws a prefix of that length inside an existing shorter one.
/// Recomputed from the file by `tests/routes.rs` (`clustered_model_constants_match_tier1`).
///
/// ```
/// use pktvec_lookup::routes::IPV4_BGP_COVERED;
/// assert_eq!(IPV4_BGP_COVERED.iter().map(|c| c.1).sum::<u32>(), 457_209);
/// ```
pub const IPV4_BGP_COVERED: &[(u8, u32)] = &[
    (8, 0),
    (9, 4),
    (10, 0),
    (11, 4),
    (12, 31),
    (13, 96),
    (14, 178),
    (15, 464),
    (16, 3206),
    (17, 3754),
    (18, 6875),
    (19, 9815),
    (20, 23206),
    (21, 27723),
    (22, 49227),
    (23, 55056),
    (24, 276616),
    (25, 20),
    (26, 3),
    (27, 11),
    (28, 17),
    (29, 17),
    (30, 3),
    (31, 3),
    (32, 880),
];

/// (gap, count): for each covered prefix of `tier1-fulltable-ipv4.txt.xz`, its length minus
/// the length of its longest covering prefix in the same table (a /24 whose longest cover
/// is a /16 has gap 8). [`generate_ipv4_clustered`] draws the depth of a new prefix below
/// its cover, or below the block it shares with a neighbour, from this histogram.
/// Recomputed from the file by `tests/routes.rs` (`clustered_model_constants_match_tier1`).
///
/// ```
/// use pktvec_lookup::routes::{IPV4_BGP_COVERED, IPV4_BGP_COVER_GAP_HISTOGRAM};
/// let covered: u32 = IPV4_BGP_COVERED.iter().map(|c| c.1).sum();
/// assert_eq!(IPV4_BGP_COVER_GAP_HISTOGRAM.iter().map(|g| g.1).sum::<u32>(), covered);
/// ```
pub const IPV4_BGP_COVER_GAP_HISTOGRAM: &[(u8, u32)] = &[
    (1, 70531),
    (2, 57434),
    (3, 40549),
    (4, 53480),
    (5, 50792),
    (6, 41923),
    (7, 32871),
    (8, 48742),
    (9, 17125),
    (10, 12203),
    (11, 8366),
    (12, 7845),
    (13, 4802),
    (14, 2633),
    (15, 3358),
    (16, 4549),
    (17, 2),
    (18, 1),
    (19, 3),
];

/// (bits, count): for each prefix of `tier1-fulltable-ipv4.txt.xz` (sorted by address, then
/// length), how many leading bits it shares with the nearer of its two neighbours in that
/// order, capped at the shorter of the two lengths (so a prefix next to its own cover counts
/// the cover's length). Most prefixes share 19–23 bits with a neighbour: real tables are
/// built from adjacent blocks. [`generate_ipv4_clustered`] draws how close a new prefix lies
/// to a randomly chosen placed prefix from this histogram. Recomputed from the file by
/// `tests/routes.rs` (`clustered_model_constants_match_tier1`).
///
/// ```
/// use pktvec_lookup::routes::IPV4_BGP_NEIGHBOUR_BITS_HISTOGRAM;
/// assert_eq!(IPV4_BGP_NEIGHBOUR_BITS_HISTOGRAM.iter().map(|h| h.1).sum::<u32>(), 901_899);
/// ```
pub const IPV4_BGP_NEIGHBOUR_BITS_HISTOGRAM: &[(u8, u32)] = &[
    (7, 6),
    (8, 14),
    (9, 31),
    (10, 72),
    (11, 203),
    (12, 430),
    (13, 977),
    (14, 2597),
    (15, 8895),
    (16, 13007),
    (17, 15655),
    (18, 26322),
    (19, 51347),
    (20, 69634),
    (21, 119870),
    (22, 153192),
    (23, 438710),
    (24, 377),
    (25, 40),
    (26, 43),
    (27, 62),
    (28, 50),
    (29, 46),
    (30, 93),
    (31, 226),
];

/// Share (in 1/1000) of the prefixes that are *not* drawn inside a cover which
/// [`generate_ipv4_clustered`] places next to an existing prefix (sharing
/// [`IPV4_BGP_NEIGHBOUR_BITS_HISTOGRAM`] leading bits with a randomly chosen placed prefix);
/// the rest start a new cluster in a /8 drawn from
/// [`IPV4_BGP_PER_SLASH8`]. This is the model's one free parameter, chosen so that the
/// generated 1M table's share of single-run /18 quarters matches tier1's (see
/// `docs/results/lookup-tables.md`).
///
/// ```
/// assert!(pktvec_lookup::routes::IPV4_CLUSTERED_NEIGHBOUR_PERMILLE <= 1000);
/// ```
pub const IPV4_CLUSTERED_NEIGHBOUR_PERMILLE: u64 = 970;

/// `n` distinct IPv4 prefixes with a real BGP table's length distribution *and* its spatial
/// clustering, next hops uniform in `0..2^24`. Deterministic for a given `(n, seed)`; always
/// returns exactly `n` routes (for `n` up to tens of millions).
///
/// [`generate_ipv4`] places every prefix uniformly in the address space, so a 1M table
/// splits almost every /18 (255,876 of 262,144 in its 1M table) into several runs of
/// next hops — a worst case no real table shows: real prefixes sit in allocated blocks and
/// half of them inside a shorter prefix of the same table. This generator reproduces, from
/// `tier1-fulltable-ipv4.txt.xz`:
///
/// * the prefix-length histogram ([`IPV4_BGP_LENGTH_HISTOGRAM`]);
/// * per length, the share of prefixes lying inside a shorter prefix of the table
///   ([`IPV4_BGP_COVERED`]) and how many bits below it ([`IPV4_BGP_COVER_GAP_HISTOGRAM`]);
/// * how many leading bits a prefix shares with its nearest neighbour
///   ([`IPV4_BGP_NEIGHBOUR_BITS_HISTOGRAM`]);
/// * the spread over /8s ([`IPV4_BGP_PER_SLASH8`]: nothing in 0/8, 10/8, 127/8, 224/3, ...).
///
/// Lengths are drawn first and placed shortest first (allocations before more-specifics).
/// A prefix of length `L` is, with the covered share of `L`, drawn inside a random placed
/// prefix of length `L - gap` (or the nearest shorter length that has one); otherwise,
/// with probability [`IPV4_CLUSTERED_NEIGHBOUR_PERMILLE`], next to a random placed prefix,
/// sharing [`IPV4_BGP_NEIGHBOUR_BITS_HISTOGRAM`] leading bits with it (a neighbour from the
/// same allocation, never outside its /8); otherwise (and always for lengths ≤ 8) in a
/// random place of a /8 drawn from [`IPV4_BGP_PER_SLASH8`]. A prefix drawn twice is redrawn.
///
/// ```
/// use pktvec_lookup::routes::{generate_ipv4, generate_ipv4_clustered, ipv4_quarter_stats};
/// let a = generate_ipv4_clustered(20_000, 7);
/// assert_eq!(a.len(), 20_000);
/// assert_eq!(a, generate_ipv4_clustered(20_000, 7));
/// // far fewer /18 quarters split into several runs than with uniform placement
/// let clustered = ipv4_quarter_stats(&a).multi_run;
/// let uniform = ipv4_quarter_stats(&generate_ipv4(20_000, 7)).multi_run;
/// assert!(clustered * 2 < uniform, "{clustered} vs {uniform}");
/// ```
pub fn generate_ipv4_clustered(n: usize, seed: u64) -> Vec<Route4> {
    let len_total: u64 = IPV4_BGP_LENGTH_HISTOGRAM
        .iter()
        .map(|h| u64::from(h.1))
        .sum();
    let gap_total: u64 = IPV4_BGP_COVER_GAP_HISTOGRAM
        .iter()
        .map(|h| u64::from(h.1))
        .sum();
    let per8: Vec<(u8, u32)> = IPV4_BGP_PER_SLASH8
        .iter()
        .enumerate()
        .map(|(i, &c)| (i as u8, c))
        .collect();
    let nb_total: u64 = IPV4_BGP_NEIGHBOUR_BITS_HISTOGRAM
        .iter()
        .map(|h| u64::from(h.1))
        .sum();
    let per8_total: u64 = per8.iter().map(|h| u64::from(h.1)).sum();
    // covered share per length, in 1/2^32
    let mut covered = [0u64; 33];
    for &(len, c) in IPV4_BGP_COVERED {
        if let Some(&(_, all)) = IPV4_BGP_LENGTH_HISTOGRAM.iter().find(|h| h.0 == len) {
            covered[usize::from(len)] = (u64::from(c) << 32) / u64::from(all.max(1));
        }
    }
    let mut rng = SplitMix64::new(seed ^ 0x636c_7573_7465_7234);
    let mut lens: Vec<u8> = (0..n)
        .map(|_| sample_len(&mut rng, IPV4_BGP_LENGTH_HISTOGRAM, len_total))
        .collect();
    lens.sort_unstable();

    let mask = |len: u8| -> u32 { net_mask(32, len) as u32 };
    let mut by_len: Vec<Vec<u32>> = vec![Vec::new(); 33];
    let mut all: Vec<(u32, u8)> = Vec::with_capacity(n);
    let mut seen: HashSet<(u32, u8)> = HashSet::with_capacity(n);
    let mut out = Vec::with_capacity(n);
    for &len in &lens {
        let mut attempts = 0u32;
        loop {
            attempts += 1;
            let random = rng.next_u64() as u32;
            // a random place in a /8 drawn with the real table's weights
            let fresh = |rng: &mut SplitMix64| {
                let o8 = sample_len(rng, &per8, per8_total);
                ((u32::from(o8) << 24) | (random & 0x00ff_ffff)) & mask(len)
            };
            let bits = if attempts > 64 || len <= 8 {
                // (after 64 draws in a crowded neighbourhood: always ends, the real /8s
                // hold far more prefixes of every length than any n asked for)
                fresh(&mut rng)
            } else {
                let gap = sample_len(&mut rng, IPV4_BGP_COVER_GAP_HISTOGRAM, gap_total);
                let above = len.saturating_sub(gap);
                let roll = rng.next_u64() >> 32;
                // inside a placed prefix of length `above`, or the nearest shorter length
                // that has one, or failing that the nearest longer one < len
                let cover = (0..=above)
                    .rev()
                    .chain(above + 1..len)
                    .find(|&l| !by_len[usize::from(l)].is_empty());
                match cover {
                    Some(l) if roll < covered[usize::from(len)] => {
                        let v = &by_len[usize::from(l)];
                        let parent = v[rng.below(v.len() as u64) as usize];
                        (parent | (random & !mask(l))) & mask(len)
                    }
                    _ if !all.is_empty() && rng.below(1000) < IPV4_CLUSTERED_NEIGHBOUR_PERMILLE => {
                        // next to a placed prefix, in the same /8
                        let (addr, _) = all[rng.below(all.len() as u64) as usize];
                        let shared =
                            sample_len(&mut rng, IPV4_BGP_NEIGHBOUR_BITS_HISTOGRAM, nb_total)
                                .clamp(8, len - 1);
                        ((addr & mask(shared)) | (random & !mask(shared))) & mask(len)
                    }
                    _ => fresh(&mut rng),
                }
            };
            if seen.insert((bits, len)) {
                by_len[usize::from(len)].push(bits);
                all.push((bits, len));
                out.push(Route {
                    addr: Ipv4Addr::from(bits),
                    len,
                    next_hop: rng.below(1 << 24) as u32,
                });
                break;
            }
        }
    }
    out
}

/// How a table's 2^24 /24 slots fall into runs per /18 *quarter* (64 slots), the unit of
/// `Lpm4`'s read path: a quarter that is one run of equal slots costs a lookup one directory
/// read; a quarter of several runs adds a record line. See [`ipv4_quarter_stats`].
///
/// ```
/// let s = pktvec_lookup::routes::ipv4_quarter_stats(&[]);
/// assert_eq!((s.quarters, s.single_run, s.multi_run, s.runs), (262_144, 262_144, 0, 262_144));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ipv4QuarterStats {
    /// Quarters in the address space: 2^18.
    pub quarters: u32,
    /// Quarters whose 64 slots all hold the same answer (one next hop, or no route).
    pub single_run: u32,
    /// Quarters of two or more runs.
    pub multi_run: u32,
    /// Runs over all quarters (a run never crosses a quarter boundary).
    pub runs: u64,
}

impl Ipv4QuarterStats {
    /// `single_run / quarters`.
    ///
    /// ```
    /// assert_eq!(pktvec_lookup::routes::ipv4_quarter_stats(&[]).single_run_share(), 1.0);
    /// ```
    pub fn single_run_share(&self) -> f64 {
        f64::from(self.single_run) / f64::from(self.quarters)
    }
}

/// Splits the longest-prefix-match answers of `routes` over the 2^24 /24 slots into runs
/// per /18 quarter. A slot's answer is the next hop (truncated to 24 bits, as in the DPDK
/// comparison) of the longest route of length ≤ 24 covering it, or "no route"; a slot that
/// also holds a longer prefix (/25–/32) is a run of its own. Later duplicates of a prefix
/// win, as in `Lpm4::from_routes`. Uses a 64 MiB scratch array.
///
/// ```
/// use pktvec_lookup::routes::{ipv4_quarter_stats, parse_ipv4};
/// // a /16 (four quarters of one run each) with one /24 inside: one quarter gets 3 runs
/// let r = parse_ipv4("10.0.0.0/16 1\n10.0.1.0/24 2\n")?;
/// let s = ipv4_quarter_stats(&r);
/// assert_eq!((s.multi_run, s.runs), (1, 262_144 + 2));
/// # Ok::<(), pktvec_lookup::routes::RouteError>(())
/// ```
pub fn ipv4_quarter_stats(routes: &[Route4]) -> Ipv4QuarterStats {
    const GROUP: u32 = 1 << 31;
    // 0 = no route, 1 + next hop (24 bits) = a route's answer, GROUP | slot = a longer prefix
    let mut slots = vec![0u32; 1 << 24];
    let mut order: Vec<usize> = (0..routes.len()).collect();
    order.sort_by_key(|&i| routes[i].len); // stable: later duplicates paint last
    for i in order {
        let r = routes[i];
        let addr = u32::from(r.addr);
        if r.len <= 24 {
            let first = (addr >> 8) as usize & !((1usize << (24 - r.len)) - 1);
            let v = 1 + (r.next_hop & 0xff_ffff);
            slots[first..first + (1 << (24 - r.len))].fill(v);
        } else {
            let s = (addr >> 8) as usize;
            slots[s] = GROUP | s as u32;
        }
    }
    let mut st = Ipv4QuarterStats {
        quarters: 1 << 18,
        single_run: 0,
        multi_run: 0,
        runs: 0,
    };
    for q in slots.chunks_exact(64) {
        let runs = 1 + q.windows(2).filter(|w| w[0] != w[1]).count() as u64;
        st.runs += runs;
        if runs == 1 {
            st.single_run += 1;
        } else {
            st.multi_run += 1;
        }
    }
    st
}

/// The union of several route tables: every distinct prefix (address and length) once,
/// sorted by (address, length), with next hop = its index in that sorted list (the input
/// next hops are dropped). Used to merge real tables into one larger real-prefix table,
/// e.g. the tier1 dump and the RIPE 2010 fib: 901,899 + 323,485 prefixes, 1,069,869
/// distinct. (A text-level `sort -u` of the two files counts 1,225,384 because the tier1
/// file has CRLF line ends; the loaders strip them.)
///
/// ```
/// use pktvec_lookup::routes::{parse_ipv4, union_prefixes};
/// let a = parse_ipv4("10.0.0.0/8 5\n10.1.0.0/16 6\n")?;
/// let b = parse_ipv4("10.1.0.0/16 9\n9.0.0.0/8 7\n")?;
/// let u = union_prefixes(&[&a, &b]);
/// let text: Vec<String> = u.iter().map(|r| r.to_string()).collect();
/// assert_eq!(text, ["9.0.0.0/8 0", "10.0.0.0/8 1", "10.1.0.0/16 2"]);
/// # Ok::<(), pktvec_lookup::routes::RouteError>(())
/// ```
pub fn union_prefixes<A: Family + Ord>(tables: &[&[Route<A>]]) -> Vec<Route<A>> {
    let mut v: Vec<(A, u8)> = tables
        .iter()
        .flat_map(|t| t.iter().map(|r| (r.addr, r.len)))
        .collect();
    v.sort_unstable();
    v.dedup();
    v.into_iter()
        .enumerate()
        .map(|(i, (addr, len))| Route {
            addr,
            len,
            next_hop: i as u32,
        })
        .collect()
}

/// `n` uniformly random IPv4 addresses (random destinations). Deterministic for `(n, seed)`.
///
/// ```
/// let k = pktvec_lookup::routes::random_ipv4_keys(4, 1);
/// assert_eq!(k.len(), 4);
/// assert_eq!(k, pktvec_lookup::routes::random_ipv4_keys(4, 1));
/// ```
pub fn random_ipv4_keys(n: usize, seed: u64) -> Vec<Ipv4Addr> {
    let mut rng = SplitMix64::new(seed ^ 0x6b65_7973_0000_0004);
    (0..n)
        .map(|_| Ipv4Addr::from(rng.next_u64() as u32))
        .collect()
}

/// `n` uniformly random IPv6 addresses inside `2000::/3` (global unicast, where
/// [`generate_ipv6`] puts its prefixes). Deterministic for `(n, seed)`.
///
/// ```
/// let k = pktvec_lookup::routes::random_ipv6_keys(4, 1);
/// assert!(k.iter().all(|a| a.segments()[0] >> 13 == 1));
/// ```
pub fn random_ipv6_keys(n: usize, seed: u64) -> Vec<Ipv6Addr> {
    let mut rng = SplitMix64::new(seed ^ 0x6b65_7973_0000_0006);
    (0..n)
        .map(|_| {
            let v = (u128::from(rng.next_u64()) << 64) | u128::from(rng.next_u64());
            Ipv6Addr::from((v >> 3) | (1u128 << 125))
        })
        .collect()
}

/// `n` random addresses each inside a randomly chosen route of `routes` (keys that hit the
/// table; useful for IPv6 where uniform keys almost always miss). Empty if `routes` is.
///
/// ```
/// use pktvec_lookup::routes::{generate_ipv6, random_keys_in};
/// let routes = generate_ipv6(100, 1);
/// let keys = random_keys_in(&routes, 50, 2);
/// assert!(keys.iter().all(|k| routes.iter().any(|r| r.contains(*k))));
/// ```
pub fn random_keys_in<A: Family>(routes: &[Route<A>], n: usize, seed: u64) -> Vec<A> {
    if routes.is_empty() {
        return Vec::new();
    }
    let mut rng = SplitMix64::new(seed ^ 0x6b65_7973_0000_00ff);
    (0..n)
        .map(|_| {
            let r = routes[rng.below(routes.len() as u64) as usize];
            let v = (u128::from(rng.next_u64()) << 64) | u128::from(rng.next_u64());
            let m = net_mask(A::BITS, r.len);
            let host = if A::BITS == 128 {
                v
            } else {
                v & ((1u128 << A::BITS) - 1)
            };
            A::from_bits((r.addr.to_bits() & m) | (host & !m))
        })
        .collect()
}

// ---------------------------------------------------------------------------------------
// Writers
// ---------------------------------------------------------------------------------------

/// Writes routes in the text format, one `addr/len next_hop` per line (what [`parse`]
/// reads back, and what `benches/dpdk/*.c` harnesses read).
///
/// ```
/// use pktvec_lookup::routes::{generate_ipv4, parse_ipv4, write_routes};
/// let routes = generate_ipv4(100, 3);
/// let mut buf = Vec::new();
/// write_routes(&mut buf, &routes)?;
/// assert_eq!(parse_ipv4(std::str::from_utf8(&buf).unwrap()).unwrap(), routes);
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn write_routes<A: fmt::Display>(w: impl Write, routes: &[Route<A>]) -> io::Result<()> {
    let mut w = BufWriter::new(w);
    for r in routes {
        writeln!(w, "{r}")?;
    }
    w.flush()
}

/// Writes addresses one per line.
///
/// ```
/// let mut buf = Vec::new();
/// pktvec_lookup::routes::write_keys(&mut buf, &[std::net::Ipv4Addr::new(1, 2, 3, 4)])?;
/// assert_eq!(buf, b"1.2.3.4\n");
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn write_keys<A: fmt::Display>(w: impl Write, keys: &[A]) -> io::Result<()> {
    let mut w = BufWriter::new(w);
    for k in keys {
        writeln!(w, "{k}")?;
    }
    w.flush()
}

/// [`write_routes`] to a new file at `path` (truncated if it exists).
///
/// ```no_run
/// let routes = pktvec_lookup::routes::generate_ipv4(1_000_000, 1);
/// pktvec_lookup::routes::write_routes_file("/tmp/routes.txt", &routes)?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn write_routes_file<A: fmt::Display>(
    path: impl AsRef<Path>,
    routes: &[Route<A>],
) -> io::Result<()> {
    write_routes(std::fs::File::create(path)?, routes)
}

/// [`write_keys`] to a new file at `path` (truncated if it exists).
///
/// ```no_run
/// let keys = pktvec_lookup::routes::random_ipv4_keys(1 << 20, 1);
/// pktvec_lookup::routes::write_keys_file("/tmp/keys.txt", &keys)?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn write_keys_file<A: fmt::Display>(path: impl AsRef<Path>, keys: &[A]) -> io::Result<()> {
    write_keys(std::fs::File::create(path)?, keys)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks() {
        assert_eq!(net_mask(32, 0), 0);
        assert_eq!(net_mask(32, 8), 0xFF00_0000);
        assert_eq!(net_mask(32, 32), 0xFFFF_FFFF);
        assert_eq!(net_mask(128, 128), u128::MAX);
        assert_eq!(net_mask(128, 1), 1u128 << 127);
    }
}
