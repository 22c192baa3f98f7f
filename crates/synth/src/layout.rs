//! Where everything is in the benchmark packets, and the keys of the tables: the
//! constants the traffic, the pktvec nodes and the SWX twin share.
//!
//! Every packet but the checksum benchmark's is Ethernet (EtherType 0x88F7) + PTP (44
//! bytes) + what the benchmark adds, padded with zeros to the record's packet size:
//!
//! ```text
//! 0      14                 19           30            58
//! | eth  | ptp ... reserved2 | ... reserved3 (4) ... | generic headers or key/value (8) | zeros
//! ```
//!
//! PTP's `reserved2` byte selects what follows (0: nothing, 1..=fan-out: the first
//! generic header's branch); a generic header's first 16-bit field selects the next one
//! the same way. The checksum benchmark's packets are Ethernet + IPv4 (20 bytes) + UDP.
//!
//! ```
//! use pktvec_synth::layout::{kv_key, GENERIC, PTP_RESERVED2};
//! assert_eq!((PTP_RESERVED2, GENERIC), (19, 58));
//! assert_ne!(kv_key(1, 0), kv_key(2, 0));
//! ```

/// Ethernet header length.
pub const ETH_LEN: usize = 14;
/// PTP header length.
pub const PTP_LEN: usize = 44;
/// Offset of PTP's `reserved2` byte (the parse selector).
pub const PTP_RESERVED2: usize = ETH_LEN + 5;
/// Offset of PTP's 32-bit `reserved3` (where the dependent tables' last key is written).
pub const PTP_RESERVED3: usize = ETH_LEN + 16;
/// Offset of the first header after PTP.
pub const GENERIC: usize = ETH_LEN + PTP_LEN;
/// Length of the key/value header (32-bit key, 32-bit value).
pub const KV_LEN: usize = 8;
/// Offset of the key/value header's key.
pub const KV_KEY: usize = GENERIC;
/// Offset of the key/value header's value.
pub const KV_VALUE: usize = GENERIC + 4;
/// Smallest frame of the checksum benchmark (Ethernet + IPv4 + UDP).
pub const IPV4_FRAME_MIN: usize = ETH_LEN + 20 + 8;
/// PTP's EtherType.
pub const ETHERTYPE_PTP: u16 = 0x88F7;
/// IPv4's EtherType.
pub const ETHERTYPE_IPV4: u16 = 0x0800;
/// Destination MAC forwarded to port 1 by `forward_table`.
pub const MAC_PORT1: [u8; 6] = [0x0C, 0xC4, 0x7A, 0xA3, 0x25, 0x34];
/// Destination MAC forwarded to port 2 by `forward_table` (the traffic's).
pub const MAC_PORT2: [u8; 6] = [0x0C, 0xC4, 0x7A, 0xA3, 0x25, 0x35];
/// Registers in each register array of the state benchmarks (index = key & (size - 1)).
pub const REGISTER_SIZE: u32 = 1024;
/// Every register's initial value.
pub const REGISTER_INIT: u32 = 0x5A5A_5A5A;

/// The key of table entry `j` (a bijection of `j`, so the keys are distinct and spread).
pub fn kv_key(j: u32, seed: u64) -> u32 {
    let mut x = j ^ (seed as u32);
    x = x.wrapping_mul(0x9E37_79B1);
    x ^= x >> 16;
    x = x.wrapping_mul(0x85EB_CA6B);
    x ^= x >> 13;
    x
}

/// The value of table entry `j` (written into the packet on a hit).
pub fn kv_value(j: u32) -> u32 {
    j.wrapping_add(1)
}

/// The key table `i` of tables-dependent matches for a packet to port `a` (1 or 2); the
/// value it writes is `dep_key(i + 1, a)`.
pub fn dep_key(i: u32, a: u32) -> u32 {
    ((i + 1) << 8) | a
}

/// A small deterministic generator (splitmix64) for traffic and filler entries.
#[derive(Clone, Debug)]
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// A value in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}
