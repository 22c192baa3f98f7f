//! Receive-side scaling on a port's rx queues: what to ask of the device ([`RssConfig`])
//! and what it does ([`RssStatus`]).
//!
//! The keys are `pktvec-workers`' software-RSS constants
//! ([`DEFAULT_KEY`](pktvec_workers::rss::DEFAULT_KEY),
//! [`SYMMETRIC_KEY`](pktvec_workers::rss::SYMMETRIC_KEY)), so a port and a software RSS
//! stage given the same key and fields hash a flow alike.

use super::DpdkError;
use pktvec_workers::rss::{DEFAULT_KEY, KEY_LEN, SYMMETRIC_KEY};
use serde::{Deserialize, Serialize};
use std::fmt;

/// `RTE_ETH_RSS_IP`: IPv4 and IPv6 addresses (2-tuple) of fragments and of packets other
/// than TCP, UDP and SCTP, IPv6 with extension headers included.
pub const RSS_IP: u64 =
    (1 << 2) | (1 << 3) | (1 << 7) | (1 << 8) | (1 << 9) | (1 << 13) | (1 << 15);
/// `RTE_ETH_RSS_TCP`: addresses and ports (4-tuple) of unfragmented TCP over IPv4 and IPv6.
pub const RSS_TCP: u64 = (1 << 4) | (1 << 10) | (1 << 16);
/// `RTE_ETH_RSS_UDP`: addresses and ports (4-tuple) of unfragmented UDP over IPv4 and IPv6.
pub const RSS_UDP: u64 = (1 << 5) | (1 << 11) | (1 << 17);

/// How a port with several rx queues spreads flows over them: a Toeplitz key, the header
/// fields hashed, and whether to program the redirection table (RETA).
///
/// The default is DPDK's (and Microsoft's) key `6d5a56da…`, IPv4 and IPv6 TCP and UDP
/// hashed on addresses and ports, other IP packets and fragments on addresses
/// ([`RSS_IP`] | [`RSS_TCP`] | [`RSS_UDP`], what `pktvec-workers`' software RSS hashes),
/// and a RETA whose entries go round the rx queues. [`symmetric`](Self::symmetric) takes
/// the `6d5a` key repeated, under which both directions of a flow hash alike.
///
/// ```
/// use pktvec_io::dpdk::{RssConfig, RSS_TCP, RSS_UDP};
/// let cfg = RssConfig::default();
/// assert_eq!(cfg.key[..4], [0x6d, 0x5a, 0x56, 0xda]);
/// assert!(RssConfig::symmetric().is_symmetric() && !cfg.is_symmetric());
/// // A key as ethtool prints it (colons optional); 40 bytes, nothing else.
/// let key = "6d:5a:".repeat(20);
/// let cfg = RssConfig::default().with_hex_key(&key)?;
/// assert!(cfg.is_symmetric());
/// let e = RssConfig::default().with_key(&[0u8; 52]).unwrap_err();
/// assert_eq!(e.to_string(), "RSS key: 52 bytes given, 40 needed (80 hex digits)");
/// // TCP and UDP only: other packets all go to the queue of RETA entry 0.
/// let tcp_udp = RssConfig { hash_fields: RSS_TCP | RSS_UDP, ..RssConfig::default() };
/// # let _ = tcp_udp;
/// # Ok::<(), pktvec_io::dpdk::DpdkError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct RssConfig {
    /// The Toeplitz key (hex text when serialized). A device whose keys are not 40 bytes
    /// (`rte_eth_dev_info.hash_key_size`) gets the symmetric key's pattern at its own
    /// length, its own default key for the default one, and refuses any other key at
    /// [`Port::start`](super::Port::start).
    #[serde(with = "key_hex")]
    pub key: [u8; KEY_LEN],
    /// What the device hashes: `RTE_ETH_RSS_*` bits, masked by what it supports
    /// (`rte_eth_dev_info.flow_type_rss_offloads`); 0 turns RSS off.
    pub hash_fields: u64,
    /// Program the redirection table so that its entries go round the rx queues (entry
    /// `i` to queue `i % rx_queues`), where the device has one and lets it be set.
    pub reta: bool,
}

impl Default for RssConfig {
    fn default() -> Self {
        RssConfig {
            key: DEFAULT_KEY,
            hash_fields: RSS_IP | RSS_TCP | RSS_UDP,
            reta: true,
        }
    }
}

impl RssConfig {
    /// The default configuration with the symmetric key (`6d5a` repeated): both
    /// directions of a flow go to one rx queue.
    pub fn symmetric() -> Self {
        RssConfig {
            key: SYMMETRIC_KEY,
            ..RssConfig::default()
        }
    }

    /// Whether the key is the symmetric one.
    pub fn is_symmetric(&self) -> bool {
        self.key == SYMMETRIC_KEY
    }

    /// This configuration with `key`; an error unless it is 40 bytes long.
    pub fn with_key(mut self, key: &[u8]) -> Result<Self, DpdkError> {
        self.key = key.try_into().map_err(|_| {
            DpdkError::RssKey(format!(
                "{} bytes given, {KEY_LEN} needed ({} hex digits)",
                key.len(),
                2 * KEY_LEN
            ))
        })?;
        Ok(self)
    }

    /// This configuration with the key written in hex (`6d5a56da…` or, as ethtool prints
    /// it, `6d:5a:56:da:…`); an error unless it is 40 bytes of hex.
    pub fn with_hex_key(self, text: &str) -> Result<Self, DpdkError> {
        self.with_key(&parse_hex(text)?)
    }
}

/// The bytes of a hex key, colons and a leading `0x` allowed.
fn parse_hex(text: &str) -> Result<Vec<u8>, DpdkError> {
    let t = text.trim();
    let t = t.strip_prefix("0x").unwrap_or(t).replace(':', "");
    hex::decode(&t).map_err(|e| DpdkError::RssKey(format!("{text:?} is not hex bytes: {e}")))
}

/// [`RssConfig::key`] as hex text in serialized forms (TOML, JSON).
mod key_hex {
    use super::KEY_LEN;
    use serde::de::Error;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(key: &[u8; KEY_LEN], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&hex::encode(key))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<[u8; KEY_LEN], D::Error> {
        let text = String::deserialize(d)?;
        let cfg = super::RssConfig::default()
            .with_hex_key(&text)
            .map_err(D::Error::custom)?;
        Ok(cfg.key)
    }
}

/// What RSS a started port does ([`Port::rss`](super::Port::rss)). `Display`: `RSS on:
/// fields 0x…, symmetric key, RETA of 128 entries over the rx queues` or `RSS off: why`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RssStatus {
    /// The fields the device hashes (asked and supported); 0: RSS is off.
    pub hash_fields: u64,
    /// The fields the device can hash (`rte_eth_dev_info.flow_type_rss_offloads`).
    pub supported: u64,
    /// The key given to the device (`None`: RSS off, or the device's own default key; see
    /// [`RssConfig::key`]).
    pub key: Option<Vec<u8>>,
    /// Entries of the redirection table programmed to go round the rx queues; 0 where
    /// RSS is off, [`RssConfig::reta`] is false, or the device has no table or does not
    /// let it be set (then its own table stands).
    pub reta_size: u16,
    /// Why RSS is off (`None` while on).
    pub off_because: Option<&'static str>,
}

impl RssStatus {
    /// What a port with `rx_queues` queues on a device that hashes `supported` does with
    /// `cfg` (the key and table are filled in as the port is set up).
    pub(crate) fn plan(cfg: &RssConfig, rx_queues: u16, supported: u64) -> RssStatus {
        let hash_fields = cfg.hash_fields & supported;
        let off_because = if rx_queues <= 1 {
            Some("one rx queue")
        } else if cfg.hash_fields == 0 {
            Some("no hash fields asked")
        } else if supported == 0 {
            Some("the device has no RSS")
        } else if hash_fields == 0 {
            Some("the device hashes none of the fields asked")
        } else {
            None
        };
        RssStatus {
            hash_fields: if off_because.is_none() {
                hash_fields
            } else {
                0
            },
            supported,
            key: None,
            reta_size: 0,
            off_because,
        }
    }

    /// Whether the device spreads flows over the rx queues by hash.
    pub fn is_active(&self) -> bool {
        self.hash_fields != 0
    }
}

impl fmt::Display for RssStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(why) = self.off_because {
            return write!(f, "RSS off: {why}");
        }
        write!(f, "RSS on: fields {:#x}, ", self.hash_fields)?;
        match self.key.as_deref() {
            None => write!(f, "the device's key")?,
            Some(k) if k.chunks(2).all(|w| w == [0x6d, 0x5a]) => write!(f, "symmetric key")?,
            Some(k) if k == DEFAULT_KEY => write!(f, "default key")?,
            Some(k) => write!(f, "key {}", hex::encode(k))?,
        }
        match self.reta_size {
            0 => write!(f, ", the device's RETA"),
            n => write!(f, ", RETA of {n} entries over the rx queues"),
        }
    }
}

/// The key to give a device whose keys are `size` bytes (0: it does not say): `key`
/// itself at 40 bytes; otherwise the symmetric pattern at `size` bytes (still symmetric:
/// it repeats every 16 bits), `None` (the device's own key) for the default key, and an
/// error for any other key.
pub(crate) fn device_key(key: &[u8; KEY_LEN], size: u8) -> Result<Option<Vec<u8>>, String> {
    if size == 0 || size as usize == KEY_LEN {
        return Ok(Some(key.to_vec()));
    }
    if *key == SYMMETRIC_KEY {
        return Ok(Some(
            (0..size).map(|i| SYMMETRIC_KEY[i as usize % 2]).collect(),
        ));
    }
    if *key == DEFAULT_KEY {
        return Ok(None);
    }
    Err(format!(
        "the device takes {size}-byte RSS keys: a {KEY_LEN}-byte key other than the default \
         or the symmetric one cannot be given to it"
    ))
}

/// Whether a DPDK return code says the device does not do what was asked (`-ENOTSUP`,
/// `-EOPNOTSUPP`, `-ENOSYS`).
pub(crate) fn unsupported(rc: i32) -> bool {
    rc < 0 && std::io::Error::from_raw_os_error(-rc).kind() == std::io::ErrorKind::Unsupported
}

/// A redirection table of `size` entries (in groups of 64, every entry's mask bit set),
/// entry `i` naming queue `i % queues`.
pub(crate) fn reta_round_robin(size: u16, queues: u16) -> Vec<ffi::RetaEntry64> {
    let queues = queues.max(1) as usize;
    let group = ffi::RETA_GROUP_SIZE;
    (0..(size as usize).div_ceil(group))
        .map(|g| {
            let mut e = ffi::RetaEntry64 {
                mask: 0,
                reta: [0; ffi::RETA_GROUP_SIZE],
            };
            for j in 0..group.min(size as usize - g * group) {
                e.mask |= 1 << j;
                e.reta[j] = ((g * group + j) % queues) as u16;
            }
            e
        })
        .collect()
}

/// The first `size` entries of a redirection table.
pub(crate) fn reta_entries(table: &[ffi::RetaEntry64], size: u16) -> Vec<u16> {
    table
        .iter()
        .flat_map(|e| e.reta)
        .take(size as usize)
        .collect()
}

/// ethdev's RSS calls, which `pktvec-dpdk-sys` does not bind: exported functions of
/// `librte_ethdev` (linked through `pktvec-dpdk-sys`), declared as DPDK 22.11's
/// `rte_ethdev.h` does.
pub(crate) mod ffi {
    use pktvec_dpdk_sys as sys;

    /// `RTE_ETH_RETA_GROUP_SIZE`.
    pub(crate) const RETA_GROUP_SIZE: usize = sys::RTE_ETH_RETA_GROUP_SIZE as usize;

    /// `struct rte_eth_rss_reta_entry64`: 64 entries of a redirection table and the mask
    /// of those to set or read.
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub(crate) struct RetaEntry64 {
        pub(crate) mask: u64,
        pub(crate) reta: [u16; RETA_GROUP_SIZE],
    }

    // `uint64_t` then `uint16_t[64]`: 136 bytes, 8-aligned, as C lays it out.
    const _: () = assert!(std::mem::size_of::<RetaEntry64>() == 136);
    const _: () = assert!(std::mem::align_of::<RetaEntry64>() == 8);

    extern "C" {
        pub(crate) fn rte_eth_dev_rss_reta_update(
            port_id: u16,
            reta_conf: *mut RetaEntry64,
            reta_size: u16,
        ) -> i32;
        pub(crate) fn rte_eth_dev_rss_reta_query(
            port_id: u16,
            reta_conf: *mut RetaEntry64,
            reta_size: u16,
        ) -> i32;
        pub(crate) fn rte_eth_dev_rss_hash_update(
            port_id: u16,
            rss_conf: *mut sys::rte_eth_rss_conf,
        ) -> i32;
        pub(crate) fn rte_eth_dev_rss_hash_conf_get(
            port_id: u16,
            rss_conf: *mut sys::rte_eth_rss_conf,
        ) -> i32;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_from_bytes_and_hex_and_clear_errors() {
        let hex_key = hex::encode(DEFAULT_KEY);
        assert_eq!(
            RssConfig::symmetric().with_hex_key(&hex_key).unwrap(),
            RssConfig::default()
        );
        let colons: Vec<String> = SYMMETRIC_KEY.iter().map(|b| format!("{b:02X}")).collect();
        let cfg = RssConfig::default()
            .with_hex_key(&format!("0x{}", colons.join(":")))
            .unwrap();
        assert!(cfg.is_symmetric());
        for (bad, says) in [
            ("6d5a", "2 bytes given, 40 needed"),
            ("", "0 bytes given"),
            (&"6d5a".repeat(21)[..], "42 bytes given"),
            ("6d5a5", "is not hex bytes"),
            ("zz", "is not hex bytes"),
        ] {
            let e = RssConfig::default().with_hex_key(bad).unwrap_err();
            assert!(matches!(e, DpdkError::RssKey(_)), "{e}");
            assert!(e.to_string().starts_with("RSS key: "), "{e}");
            assert!(e.to_string().contains(says), "{bad:?}: {e}");
        }
        assert!(RssConfig::default().with_key(&[7; 39]).is_err());
        assert_eq!(
            RssConfig::default().with_key(&[7; 40]).unwrap().key,
            [7; 40]
        );
    }

    #[test]
    fn serializes_the_key_as_hex() {
        let cfg = RssConfig::symmetric();
        let text = toml::to_string(&cfg).unwrap();
        assert!(
            text.contains(&format!("key = \"{}\"", "6d5a".repeat(20))),
            "{text}"
        );
        assert_eq!(toml::from_str::<RssConfig>(&text).unwrap(), cfg);
        let e = toml::from_str::<RssConfig>("key = \"6d5a\"").unwrap_err();
        assert!(e.to_string().contains("2 bytes given, 40 needed"), "{e}");
        // Fields left out take their defaults.
        let cfg: RssConfig = toml::from_str("reta = false").unwrap();
        assert_eq!(cfg.key, DEFAULT_KEY);
        assert!(!cfg.reta);
    }

    #[test]
    fn plan_masks_by_what_the_device_hashes() {
        let cfg = RssConfig::default();
        let on = RssStatus::plan(&cfg, 2, RSS_TCP | (1 << 40));
        assert_eq!(on.hash_fields, RSS_TCP);
        assert!(on.is_active() && on.off_because.is_none());
        for (queues, supported, why) in [
            (1, u64::MAX, "one rx queue"),
            (4, 0, "the device has no RSS"),
            (4, 1 << 40, "the device hashes none of the fields asked"),
        ] {
            let s = RssStatus::plan(&cfg, queues, supported);
            assert!(!s.is_active());
            assert_eq!(s.to_string(), format!("RSS off: {why}"));
        }
        let none = RssConfig {
            hash_fields: 0,
            ..cfg
        };
        assert_eq!(
            RssStatus::plan(&none, 4, u64::MAX).off_because,
            Some("no hash fields asked")
        );
        let mut s = RssStatus::plan(&RssConfig::symmetric(), 2, u64::MAX);
        s.key = device_key(&SYMMETRIC_KEY, 40).unwrap();
        s.reta_size = 128;
        let text = s.to_string();
        assert!(
            text.contains("symmetric key, RETA of 128 entries"),
            "{text}"
        );
    }

    #[test]
    fn keys_for_devices_of_other_key_sizes() {
        assert_eq!(device_key(&DEFAULT_KEY, 40).unwrap().unwrap(), DEFAULT_KEY);
        assert_eq!(device_key(&DEFAULT_KEY, 0).unwrap().unwrap(), DEFAULT_KEY);
        assert_eq!(device_key(&DEFAULT_KEY, 52).unwrap(), None);
        let k = device_key(&SYMMETRIC_KEY, 52).unwrap().unwrap();
        assert_eq!(k.len(), 52);
        assert!(k.chunks(2).all(|w| w == [0x6d, 0x5a]));
        let e = device_key(&[1; 40], 52).unwrap_err();
        assert!(e.contains("52-byte RSS keys"), "{e}");
    }

    #[test]
    fn reta_goes_round_the_queues() {
        let t = reta_round_robin(128, 3);
        assert_eq!(t.len(), 2);
        assert!(t.iter().all(|e| e.mask == u64::MAX));
        let e = reta_entries(&t, 128);
        assert_eq!(e.len(), 128);
        assert!(e.iter().enumerate().all(|(i, &q)| q as usize == i % 3));
        // A size that is not a multiple of 64: the last group's mask covers what is left.
        let t = reta_round_robin(100, 2);
        assert_eq!(t[1].mask, (1 << 36) - 1);
        assert_eq!(reta_entries(&t, 100).len(), 100);
        assert_eq!(reta_entries(&reta_round_robin(64, 0), 64), vec![0; 64]);
    }

    #[test]
    fn not_supported_codes() {
        assert!(unsupported(-95) && unsupported(-38));
        assert!(!unsupported(0) && !unsupported(-22) && !unsupported(5));
    }
}
