//! BGP update streams as `bgpdump -m` prints them (one message a line, `|`-separated), for
//! replaying route changes into a FIB.
//!
//! ```text
//! BGP4MP|1470931200|A|37.49.236.123|198290|192.140.252.0/22|198290 6661 2914 …|IGP|…
//! BGP4MP|1470931202|W|37.49.236.32|34177|185.80.128.244/32
//! ```
//!
//! Field 3 is the message type (`A` announce, `W` withdraw, `STATE` a session change), field
//! 6 the prefix. [`parse`] keeps the IPv4 and the IPv6 announcements and withdrawals, each
//! family in stream order, and counts what it skipped (state messages, malformed lines);
//! the announcing peer and path are not kept: a replay installs each announced prefix and
//! removes each withdrawn one, as one peer's FIB would.
//!
//! ```
//! use pktvec_lookup::updates::{parse, Update};
//! use std::net::{Ipv4Addr, Ipv6Addr};
//! let text = "BGP4MP|1|A|10.0.0.1|65001|192.0.2.0/24|65001 65002|IGP|10.0.0.1|0|0||NAG||\n\
//!             BGP4MP|2|W|10.0.0.1|65001|192.0.2.0/24\n\
//!             BGP4MP|3|A|2001:db8::1|65001|2001:db8::/32|65001|IGP|2001:db8::1|0|0||NAG||\n";
//! let s = parse(text);
//! assert_eq!(s.ipv4, vec![
//!     Update::Announce { addr: Ipv4Addr::new(192, 0, 2, 0), len: 24 },
//!     Update::Withdraw { addr: Ipv4Addr::new(192, 0, 2, 0), len: 24 },
//! ]);
//! let net: Ipv6Addr = "2001:db8::".parse().unwrap();
//! assert_eq!(s.ipv6, vec![Update::Announce { addr: net, len: 32 }]);
//! assert_eq!(s.messages, 3);
//! ```

use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::Path;

use crate::routes::{read_text_file, RouteError};

/// One route change for addresses of type `A` (`Ipv4Addr` or `Ipv6Addr`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Update<A> {
    /// Install (or replace) the prefix.
    Announce {
        /// The prefix's address (host bits cleared).
        addr: A,
        /// Its length.
        len: u8,
    },
    /// Remove the prefix.
    Withdraw {
        /// The prefix's address (host bits cleared).
        addr: A,
        /// Its length.
        len: u8,
    },
}

impl<A: Copy> Update<A> {
    /// The prefix the update is about.
    pub fn prefix(&self) -> (A, u8) {
        match *self {
            Update::Announce { addr, len } | Update::Withdraw { addr, len } => (addr, len),
        }
    }

    /// Whether it announces.
    pub fn is_announce(&self) -> bool {
        matches!(self, Update::Announce { .. })
    }
}

/// An update stream's route changes, per family, and what was left out.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UpdateStream {
    /// IPv4 announcements and withdrawals, in stream order.
    pub ipv4: Vec<Update<Ipv4Addr>>,
    /// IPv6 announcements and withdrawals, in stream order.
    pub ipv6: Vec<Update<Ipv6Addr>>,
    /// Lines read (messages).
    pub messages: usize,
    /// Session state changes and other message types.
    pub skipped_other: usize,
    /// Lines that are not a well-formed message.
    pub malformed: usize,
}

impl UpdateStream {
    /// IPv4 announcements in the stream.
    pub fn announcements4(&self) -> usize {
        self.ipv4.iter().filter(|u| u.is_announce()).count()
    }

    /// IPv6 announcements in the stream.
    pub fn announcements6(&self) -> usize {
        self.ipv6.iter().filter(|u| u.is_announce()).count()
    }
}

fn prefix4(text: &str) -> Option<(Ipv4Addr, u8)> {
    let (a, l) = text.split_once('/')?;
    let addr: Ipv4Addr = a.parse().ok()?;
    let len: u8 = l.parse().ok().filter(|&l| l <= 32)?;
    let mask = u32::MAX.checked_shl(32 - u32::from(len)).unwrap_or(0);
    Some((Ipv4Addr::from(u32::from(addr) & mask), len))
}

fn prefix6(text: &str) -> Option<(Ipv6Addr, u8)> {
    let (a, l) = text.split_once('/')?;
    let addr: Ipv6Addr = a.parse().ok()?;
    let len: u8 = l.parse().ok().filter(|&l| l <= 128)?;
    let mask = u128::MAX.checked_shl(128 - u32::from(len)).unwrap_or(0);
    Some((Ipv6Addr::from(u128::from(addr) & mask), len))
}

/// The route changes of a `bgpdump -m` text (see the [module docs](self)). Never fails:
/// what it cannot use is counted.
pub fn parse(text: &str) -> UpdateStream {
    let mut s = UpdateStream::default();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        s.messages += 1;
        let f: Vec<&str> = line.split('|').collect();
        let (Some(kind), Some(prefix)) = (f.get(2), f.get(5)) else {
            s.malformed += 1;
            continue;
        };
        let announce = match *kind {
            "A" => true,
            "W" => false,
            _ => {
                s.skipped_other += 1;
                continue;
            }
        };
        let make = |addr, len| {
            if announce {
                Update::Announce { addr, len }
            } else {
                Update::Withdraw { addr, len }
            }
        };
        if prefix.contains(':') {
            match prefix6(prefix) {
                Some((a, l)) => s.ipv6.push(if announce {
                    Update::Announce { addr: a, len: l }
                } else {
                    Update::Withdraw { addr: a, len: l }
                }),
                None => s.malformed += 1,
            }
        } else {
            match prefix4(prefix) {
                Some((a, l)) => s.ipv4.push(make(a, l)),
                None => s.malformed += 1,
            }
        }
    }
    s
}

/// [`parse`] over a file (plain text or `.xz`).
///
/// ```no_run
/// let s = pktvec_lookup::updates::load_file("ripe-ris-updates.txt.xz")?;
/// println!("{} IPv4 and {} IPv6 updates", s.ipv4.len(), s.ipv6.len());
/// # Ok::<(), pktvec_lookup::routes::RouteError>(())
/// ```
pub fn load_file(path: impl AsRef<Path>) -> Result<UpdateStream, RouteError> {
    Ok(parse(&read_text_file(path)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_and_other_lines_are_counted() {
        let s = parse(
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
            s.ipv4,
            vec![Update::Announce {
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
        let s = load_file(path).unwrap();
        assert_eq!(s.messages, 41_234);
        assert_eq!(s.malformed, 0);
        assert_eq!(s.ipv4.len() + s.ipv6.len() + s.skipped_other, 41_234);
        assert_eq!(s.announcements4(), 32_710);
        assert_eq!((s.ipv4.len(), s.ipv6.len()), (34_326, 6_886));
    }
}
