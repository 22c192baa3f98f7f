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
/// distribution of [`IPV6_48_64_LENGTH_HISTOGRAM`] (the seed paper's IPv6 experiment uses
/// 200,000 such prefixes), next hops uniform in `0..2^24`. Deterministic for `(n, seed)`.
///
/// ```
/// let a = pktvec_lookup::routes::generate_ipv6(1_000, 7);
/// assert_eq!(a.len(), 1_000);
/// assert!(a.iter().all(|r| (48..=64).contains(&r.len) && r.addr.segments()[0] >> 13 == 1));
/// ```
pub fn generate_ipv6(n: usize, seed: u64) -> Vec<Route6> {
    generate(n, seed, IPV6_48_64_LENGTH_HISTOGRAM, 0x2000u128 << 112, 3)
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
