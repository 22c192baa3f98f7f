//! The synchronisation strategies a [`Domain`](crate::Domain) can run under.

use std::fmt;
use std::str::FromStr;

/// How workers synchronise on shared state; chosen at run time, the same table layout under
/// every one.
///
/// ```
/// use pktvec_state::Strategy;
/// let s: Strategy = "rtm-coarse".parse().unwrap();
/// assert_eq!(s, Strategy::RtmCoarse);
/// assert!(s.uses_rtm());
/// assert_eq!(s.to_string(), "rtm-coarse");
/// assert!("spin".parse::<Strategy>().is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Strategy {
    /// One lock around every critical section.
    Coarse,
    /// Striped, cache-line padded locks: a section takes only its stripes' locks.
    Fine,
    /// No locks: state is sharded by stripe owner and every packet is processed by the
    /// worker owning its stripes (packets are handed to the owner first).
    Affinity,
    /// Hardware transactions (x86 RTM) eliding the fine-grained locks; bounded retries with
    /// back-off, then the locks.
    Rtm,
    /// Hardware transactions eliding the one coarse lock.
    RtmCoarse,
}

impl Strategy {
    /// Every strategy, in the order the results tables use.
    pub const ALL: [Strategy; 5] = [
        Strategy::Coarse,
        Strategy::Fine,
        Strategy::Affinity,
        Strategy::Rtm,
        Strategy::RtmCoarse,
    ];

    /// The strategies this machine runs, in [`ALL`](Self::ALL)'s order: the RTM ones only
    /// where RTM is detected and commits ([`Rtm::detect`](crate::rtm::Rtm::detect)).
    ///
    /// ```
    /// use pktvec_state::Strategy;
    /// let here = Strategy::available();
    /// assert!(here.starts_with(&[Strategy::Coarse, Strategy::Fine, Strategy::Affinity]));
    /// assert_eq!(here.len() == 5, pktvec_state::rtm::Rtm::detect().is_ok());
    /// ```
    pub fn available() -> Vec<Strategy> {
        let rtm = crate::rtm::Rtm::detect().is_ok();
        Strategy::ALL
            .into_iter()
            .filter(|s| rtm || !s.uses_rtm())
            .collect()
    }

    /// The name `--sync` takes.
    pub fn name(self) -> &'static str {
        match self {
            Strategy::Coarse => "coarse",
            Strategy::Fine => "fine",
            Strategy::Affinity => "affinity",
            Strategy::Rtm => "rtm",
            Strategy::RtmCoarse => "rtm-coarse",
        }
    }

    /// Whether the strategy needs hardware transactions.
    pub fn uses_rtm(self) -> bool {
        matches!(self, Strategy::Rtm | Strategy::RtmCoarse)
    }

    /// Whether sections hold (or elide) the one global lock rather than stripes.
    pub fn is_coarse(self) -> bool {
        matches!(self, Strategy::Coarse | Strategy::RtmCoarse)
    }
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A `--sync` value that names no strategy.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown synchronisation {0:?} (coarse, fine, affinity, rtm, rtm-coarse)")]
pub struct UnknownStrategy(pub String);

impl FromStr for Strategy {
    type Err = UnknownStrategy;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Strategy::ALL
            .into_iter()
            .find(|x| x.name() == s)
            .ok_or_else(|| UnknownStrategy(s.to_string()))
    }
}
