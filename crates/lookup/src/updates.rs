//! BGP update streams as `bgpdump -m` prints them (one message a line, `|`-separated), for
//! replaying route changes into a FIB.
//!
//! ```text
//! BGP4MP|1470931200|A|37.49.236.123|198290|192.140.252.0/22|198290 6661 2914 …|IGP|…
//! BGP4MP|1470931202|W|37.49.236.32|34177|185.80.128.244/32
//! ```
//!
//! Field 3 is the message type (`A` announce, `W` withdraw, `STATE` a session change), field
//! 6 the prefix. [`parse_ipv4`] keeps the IPv4 announcements and withdrawals in order and
//! counts what it skipped (IPv6 prefixes, state messages, malformed lines); the announcing
//! peer and path are not kept: a replay installs each announced prefix and removes each
//! withdrawn one, as one peer's FIB would.
//!
//! ```
//! use pktvec_lookup::updates::{parse_ipv4, Update4};
//! use std::net::Ipv4Addr;
//! let text = "BGP4MP|1|A|10.0.0.1|65001|192.0.2.0/24|65001 65002|IGP|10.0.0.1|0|0||NAG||\n\
//!             BGP4MP|2|W|10.0.0.1|65001|192.0.2.0/24\n\
//!             BGP4MP|3|A|2001:db8::1|65001|2001:db8::/32|65001|IGP|2001:db8::1|0|0||NAG||\n";
//! let s = parse_ipv4(text);
//! assert_eq!(s.updates, vec![
//!     Update4::Announce { addr: Ipv4Addr::new(192, 0, 2, 0), len: 24 },
//!     Update4::Withdraw { addr: Ipv4Addr::new(192, 0, 2, 0), len: 24 },
//! ]);
//! assert_eq!((s.messages, s.skipped_ipv6), (3, 1));
//! ```

use std::net::Ipv4Addr;
use std::path::Path;

use crate::routes::{read_text_file, RouteError};

/// One IPv4 route change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Update4 {
    /// Install (or replace) the prefix.
    Announce {
        /// The prefix's address (host bits cleared).
        addr: Ipv4Addr,
        /// Its length.
        len: u8,
    },
    /// Remove the prefix.
    Withdraw {
        /// The prefix's address (host bits cleared).
        addr: Ipv4Addr,
        /// Its length.
        len: u8,
    },
}

impl Update4 {
    /// The prefix the update is about.
    pub fn prefix(&self) -> (Ipv4Addr, u8) {
        match *self {
            Update4::Announce { addr, len } | Update4::Withdraw { addr, len } => (addr, len),
        }
    }
}

/// An update stream's IPv4 changes and what was left out.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UpdateStream {
    /// IPv4 announcements and withdrawals, in stream order.
    pub updates: Vec<Update4>,
    /// Lines read (messages).
    pub messages: usize,
    /// IPv6 announcements and withdrawals.
    pub skipped_ipv6: usize,
    /// Session state changes and other message types.
    pub skipped_other: usize,
    /// Lines that are not a well-formed message.
    pub malformed: usize,
}

impl UpdateStream {
    /// Announcements in the stream.
    pub fn announcements(&self) -> usize {
        self.updates
            .iter()
            .filter(|u| matches!(u, Update4::Announce { .. }))
            .count()
    }
}

fn prefix4(text: &str) -> Option<(Ipv4Addr, u8)> {
    let (a, l) = text.split_once('/')?;
    let addr: Ipv4Addr = a.parse().ok()?;
    let len: u8 = l.parse().ok().filter(|&l| l <= 32)?;
    let mask = u32::MAX.checked_shl(32 - u32::from(len)).unwrap_or(0);
    Some((Ipv4Addr::from(u32::from(addr) & mask), len))
}

/// The IPv4 updates of a `bgpdump -m` text (see the [module docs](self)). Never fails:
/// what it cannot use is counted.
pub fn parse_ipv4(text: &str) -> UpdateStream {
    let mut s = UpdateStream::default();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        s.messages += 1;
        let f: Vec<&str> = line.split('|').collect();
        let (Some(kind), Some(prefix)) = (f.get(2), f.get(5)) else {
            s.malformed += 1;
            continue;
        };
        if *kind != "A" && *kind != "W" {
            s.skipped_other += 1;
            continue;
        }
        if prefix.contains(':') {
            s.skipped_ipv6 += 1;
            continue;
        }
        let Some((addr, len)) = prefix4(prefix) else {
            s.malformed += 1;
            continue;
        };
        s.updates.push(if *kind == "A" {
            Update4::Announce { addr, len }
        } else {
            Update4::Withdraw { addr, len }
        });
    }
    s
}

/// [`parse_ipv4`] over a file (plain text or `.xz`).
///
/// ```no_run
/// let s = pktvec_lookup::updates::load_ipv4_file("ripe-ris-updates.txt.xz")?;
/// println!("{} IPv4 updates", s.updates.len());
/// # Ok::<(), pktvec_lookup::routes::RouteError>(())
/// ```
pub fn load_ipv4_file(path: impl AsRef<Path>) -> Result<UpdateStream, RouteError> {
    Ok(parse_ipv4(&read_text_file(path)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_and_other_lines_are_counted() {
        let s = parse_ipv4(
            "BGP4MP|1|STATE|10.0.0.1|65001|3|6\n\
             garbage\n\
             BGP4MP|1|A|10.0.0.1|65001|300.0.0.0/8|x\n\
             BGP4MP|1|A|10.0.0.1|65001|10.1.2.3/40|x\n\
             BGP4MP|1|A|10.0.0.1|65001|10.1.2.3/16|x\n",
        );
        assert_eq!(s.messages, 5);
        assert_eq!(s.skipped_other, 1);
        assert_eq!(s.malformed, 3);
        assert_eq!(
            s.updates,
            vec![Update4::Announce {
                addr: Ipv4Addr::new(10, 1, 0, 0),
                len: 16
            }]
        );
    }

    #[test]
    fn the_real_stream_parses() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../../shared/data/routes/ripe-ris-updates-20160811.1600.bgpdump.txt.xz"
        );
        if !Path::new(path).exists() {
            eprintln!("skipped: {path} not found");
            return;
        }
        let s = load_ipv4_file(path).unwrap();
        assert_eq!(s.messages, 41_234);
        assert_eq!(s.malformed, 0);
        assert_eq!(s.updates.len() + s.skipped_ipv6 + s.skipped_other, 41_234);
        assert_eq!(s.announcements(), 32_710);
    }
}
