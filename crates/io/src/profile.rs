//! Traffic profiles: what the [`Generator`](crate::generator::Generator) produces,
//! written in TOML (or built in code) and read with serde.
//!
//! ```
//! use pktvec_io::profile::{Order, Popularity, TrafficProfile};
//! let p: TrafficProfile = toml::from_str(r#"
//!     seed = 7
//!     order = "alternating"
//!     [mix]
//!     ipv4 = 1.0
//!     ipv6 = 1.0
//!     malformed = 0.05
//!     [flows]
//!     count = 4096
//!     popularity = { zipf = 1.1 }
//!     [sizes]
//!     fixed = 64
//! "#)?;
//! assert_eq!(p.order, Order::Alternating);
//! assert_eq!(p.flows.popularity, Popularity::Zipf(1.1));
//! assert_eq!(p.mix.arp, 0.0);
//! p.validate()?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use serde::{Deserialize, Serialize};

/// A complete traffic description.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TrafficProfile {
    /// Seed of every random choice: the same profile and seed give the same packets.
    pub seed: u64,
    /// Shares of each kind of packet.
    pub mix: Mix,
    /// Flow count, popularity and churn.
    pub flows: Flows,
    /// Frame sizes.
    pub sizes: Sizes,
    /// Arrival order.
    pub order: Order,
    /// Destination addresses.
    pub destinations: Destinations,
    /// Ethernet addresses.
    pub l2: L2,
}

impl Default for TrafficProfile {
    fn default() -> Self {
        TrafficProfile {
            seed: 1,
            mix: Mix::default(),
            flows: Flows::default(),
            sizes: Sizes::default(),
            order: Order::Random,
            destinations: Destinations::default(),
            l2: L2::default(),
        }
    }
}

/// Relative weights of the packet kinds (they need not sum to 1).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Mix {
    /// IPv4/UDP.
    pub ipv4: f64,
    /// IPv6/UDP.
    pub ipv6: f64,
    /// ARP requests.
    pub arp: f64,
    /// NDN Interests (EtherType 0x8624) carrying names.
    pub ndn: f64,
    /// Frames with an EtherType nobody handles.
    pub unknown_ethertype: f64,
    /// Malformed frames (truncated, lying lengths, bad checksums, TTL 0, bad versions, …).
    pub malformed: f64,
    /// Fraction of IPv4/IPv6 flows carrying one 802.1Q tag.
    pub vlan: f64,
    /// Fraction of IPv4/IPv6 flows carrying two tags (QinQ, outer 0x88a8).
    pub qinq: f64,
}

impl Default for Mix {
    fn default() -> Self {
        Mix {
            ipv4: 1.0,
            ipv6: 0.0,
            arp: 0.0,
            ndn: 0.0,
            unknown_ethertype: 0.0,
            malformed: 0.0,
            vlan: 0.0,
            qinq: 0.0,
        }
    }
}

/// How flows are chosen.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Popularity {
    /// Every flow equally likely.
    Uniform,
    /// Flow of rank k has weight 1/k^s.
    Zipf(f64),
}

/// Flow population.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Flows {
    /// Number of distinct flows.
    pub count: usize,
    /// Popularity distribution.
    pub popularity: Popularity,
    /// Replace `churn_fraction` of the flows every `churn_every` packets (0 = never).
    pub churn_every: u64,
    /// Share of flows replaced at each churn point.
    pub churn_fraction: f64,
}

impl Default for Flows {
    fn default() -> Self {
        Flows {
            count: 1024,
            popularity: Popularity::Uniform,
            churn_every: 0,
            churn_fraction: 0.0,
        }
    }
}

/// Frame sizes on the wire, FCS included (a "64-byte packet" is 60 bytes in memory).
/// Sizes are drawn per flow.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Sizes {
    /// Every frame this size.
    Fixed(usize),
    /// Simple IMIX: 64, 594 and 1518 bytes in the ratio 7:4:1.
    Imix,
    /// Uniform between the bounds (inclusive).
    Uniform {
        /// Smallest.
        min: usize,
        /// Largest.
        max: usize,
    },
}

impl Default for Sizes {
    fn default() -> Self {
        Sizes::Fixed(64)
    }
}

/// Arrival order of packets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Order {
    /// Each packet picks a flow by popularity.
    Random,
    /// A flow is picked by popularity and sends this many packets in a row.
    Bursts(usize),
    /// IPv4 and IPv6 strictly alternate (the worst case for vector splitting: every packet
    /// changes path).
    Alternating,
}

/// Destination addresses of IP flows: inside the route prefixes given to the generator with
/// probability `*_hit_rate`, otherwise from ranges no route table contains (240.0.0.0/4,
/// 3fff::/16 outside 2000::/3) so that they miss.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Destinations {
    /// Share of IPv4 flows whose destination is inside a route.
    pub ipv4_hit_rate: f64,
    /// Share of IPv6 flows whose destination is inside a route.
    pub ipv6_hit_rate: f64,
}

impl Default for Destinations {
    fn default() -> Self {
        Destinations {
            ipv4_hit_rate: 1.0,
            ipv6_hit_rate: 1.0,
        }
    }
}

/// Ethernet addresses and interfaces: source and destination MACs are drawn from `hosts`
/// distinct locally administered unicast addresses (the L2 switch's table size). Host `i`
/// sits behind interface `i % ports`: a flow arrives on its source host's interface, and its
/// destination host is behind another interface when there is more than one.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct L2 {
    /// Number of distinct host MAC addresses.
    pub hosts: usize,
    /// Number of interfaces the hosts are spread over.
    pub ports: u16,
}

impl Default for L2 {
    fn default() -> Self {
        L2 {
            hosts: 256,
            ports: 1,
        }
    }
}

/// A profile that cannot be generated.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("invalid traffic profile: {0}")]
pub struct ProfileError(pub String);

impl TrafficProfile {
    /// Reads a profile from TOML text.
    pub fn from_toml(text: &str) -> Result<Self, ProfileError> {
        let p: TrafficProfile = toml::from_str(text).map_err(|e| ProfileError(e.to_string()))?;
        p.validate()?;
        Ok(p)
    }

    /// Checks ranges and weights.
    pub fn validate(&self) -> Result<(), ProfileError> {
        let m = &self.mix;
        let w = [
            m.ipv4,
            m.ipv6,
            m.arp,
            m.ndn,
            m.unknown_ethertype,
            m.malformed,
        ];
        if w.iter().any(|x| !x.is_finite() || *x < 0.0) || w.iter().sum::<f64>() <= 0.0 {
            return Err(ProfileError(
                "mix weights must be finite, ≥ 0 and not all 0".into(),
            ));
        }
        for (name, x) in [
            ("mix.vlan", m.vlan),
            ("mix.qinq", m.qinq),
            ("flows.churn_fraction", self.flows.churn_fraction),
            (
                "destinations.ipv4_hit_rate",
                self.destinations.ipv4_hit_rate,
            ),
            (
                "destinations.ipv6_hit_rate",
                self.destinations.ipv6_hit_rate,
            ),
        ] {
            if !(0.0..=1.0).contains(&x) {
                return Err(ProfileError(format!("{name} = {x} is outside 0..=1")));
            }
        }
        if m.vlan + m.qinq > 1.0 {
            return Err(ProfileError("mix.vlan + mix.qinq must be ≤ 1".into()));
        }
        if self.flows.count == 0 {
            return Err(ProfileError("flows.count must be at least 1".into()));
        }
        if self.l2.hosts < 2 {
            return Err(ProfileError("l2.hosts must be at least 2".into()));
        }
        if self.l2.ports == 0 || self.l2.ports as usize > self.l2.hosts {
            return Err(ProfileError(
                "l2.ports must be between 1 and l2.hosts".into(),
            ));
        }
        if let Popularity::Zipf(s) = self.flows.popularity {
            if !(s.is_finite() && s > 0.0) {
                return Err(ProfileError("zipf exponent must be > 0".into()));
            }
        }
        let (lo, hi) = match self.sizes {
            Sizes::Fixed(n) => (n, n),
            Sizes::Imix => (64, 1518),
            Sizes::Uniform { min, max } => (min, max),
        };
        if lo < 64 || hi > 9018 || lo > hi {
            return Err(ProfileError(format!(
                "frame sizes {lo}..={hi} must lie within 64..=9018"
            )));
        }
        if self.order == Order::Alternating && (m.ipv4 == 0.0 || m.ipv6 == 0.0) {
            return Err(ProfileError(
                "alternating order needs both ipv4 and ipv6 in the mix".into(),
            ));
        }
        if let Order::Bursts(0) = self.order {
            return Err(ProfileError("burst length must be at least 1".into()));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_validate_and_round_trip() {
        let p = TrafficProfile::default();
        p.validate().unwrap();
        let text = toml::to_string(&p).unwrap();
        assert_eq!(TrafficProfile::from_toml(&text).unwrap(), p);
    }

    #[test]
    fn bad_profiles_are_errors_naming_the_field() {
        for (text, needle) in [
            ("[mix]\nipv4 = -1.0", "mix weights"),
            ("[mix]\nvlan = 2.0", "mix.vlan"),
            ("[flows]\ncount = 0", "flows.count"),
            ("[sizes]\nfixed = 20", "frame sizes"),
            ("order = \"alternating\"", "alternating"),
            ("colour = 3", "unknown field"),
            ("order = { bursts = 0 }", "burst"),
        ] {
            let e = TrafficProfile::from_toml(text).unwrap_err();
            assert!(e.to_string().contains(needle), "{text}: {e}");
        }
    }
}
