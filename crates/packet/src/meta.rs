//! Per-buffer metadata: one cache line per buffer.
//!
//! Every buffer in a [`BufferPool`](crate::BufferPool) has one [`BufferMeta`]: where the
//! packet starts and how long it is, flags, interfaces, the error code a node sets before
//! sending the packet to a drop node, a flow hash, a path id, the offsets of the L2/L3/L4
//! headers and a small user area. It is 60 bytes; the pool keeps it in one 64-byte,
//! 64-byte-aligned line together with its own record of whether it holds the buffer (out of
//! reach of `&mut BufferMeta`), so prefetching a buffer's metadata is one cache line, as
//! with VPP's `vlib_buffer_t` first line or DPDK's `rte_mbuf` first line.
//!
//! ```
//! use pktvec_packet::{BufferMeta, MetaFlags};
//! assert_eq!(std::mem::size_of::<BufferMeta>(), 60);
//! let mut m = BufferMeta::default();
//! m.flags.insert(MetaFlags::L3_VALID);
//! assert!(m.flags.contains(MetaFlags::L3_VALID));
//! ```

use bytemuck::{Pod, Zeroable};

/// Bit flags kept in [`BufferMeta::flags`].
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default, Pod, Zeroable)]
pub struct MetaFlags(pub u16);

impl MetaFlags {
    // Bit 0 is unused: it was the pool's "free" mark, which the pool now keeps outside
    // `BufferMeta`, where a node's write cannot change it.
    /// The packet is being traced: nodes add records to the graph's packet trace.
    pub const TRACED: MetaFlags = MetaFlags(1 << 1);
    /// `l2_offset` is valid.
    pub const L2_VALID: MetaFlags = MetaFlags(1 << 2);
    /// `l3_offset` is valid.
    pub const L3_VALID: MetaFlags = MetaFlags(1 << 3);
    /// `l4_offset` is valid.
    pub const L4_VALID: MetaFlags = MetaFlags(1 << 4);
    /// `flow_hash` is valid.
    pub const FLOW_HASH_VALID: MetaFlags = MetaFlags(1 << 5);
    /// The IPv4 header checksum was verified.
    pub const IP4_CSUM_OK: MetaFlags = MetaFlags(1 << 6);
    /// `path_id` was set by the path batcher.
    pub const PATH_VALID: MetaFlags = MetaFlags(1 << 7);
    /// [`BufferMeta::opaque`] holds the worker that owns the packet's state (set by a
    /// handoff node that chose the owner itself, read by `handoff-tx`).
    pub const OWNER_VALID: MetaFlags = MetaFlags(1 << 8);
    /// First bit free for applications (bits 12..16 are never used by pktvec).
    pub const USER0: MetaFlags = MetaFlags(1 << 12);

    /// True if all bits of `other` are set.
    #[inline]
    pub fn contains(self, other: MetaFlags) -> bool {
        self.0 & other.0 == other.0
    }
    /// Sets the bits of `other`.
    #[inline]
    pub fn insert(&mut self, other: MetaFlags) {
        self.0 |= other.0;
    }
    /// Clears the bits of `other`.
    #[inline]
    pub fn remove(&mut self, other: MetaFlags) {
        self.0 &= !other.0;
    }
}

impl std::fmt::Debug for MetaFlags {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        const NAMES: [(MetaFlags, &str); 8] = [
            (MetaFlags::TRACED, "TRACED"),
            (MetaFlags::L2_VALID, "L2"),
            (MetaFlags::L3_VALID, "L3"),
            (MetaFlags::L4_VALID, "L4"),
            (MetaFlags::FLOW_HASH_VALID, "HASH"),
            (MetaFlags::IP4_CSUM_OK, "IP4_CSUM_OK"),
            (MetaFlags::PATH_VALID, "PATH"),
            (MetaFlags::OWNER_VALID, "OWNER"),
        ];
        let mut first = true;
        write!(f, "MetaFlags(")?;
        for (flag, name) in NAMES {
            if self.contains(flag) {
                if !first {
                    write!(f, "|")?;
                }
                write!(f, "{name}")?;
                first = false;
            }
        }
        if self.0 & 0xf000 != 0 {
            write!(
                f,
                "{}user:{:#x}",
                if first { "" } else { "|" },
                self.0 >> 12
            )?;
        }
        write!(f, ")")
    }
}

/// Interface index meaning "none" in [`BufferMeta::rx_if`]/[`BufferMeta::tx_if`].
pub const NO_INTERFACE: u16 = u16::MAX;

/// Size of [`BufferMeta::user`], the area free for applications.
pub const META_USER_BYTES: usize = 28;

/// Metadata of one buffer: 60 bytes, kept by the pool in one 64-byte cache line with the
/// pool's own "held" mark.
///
/// Offsets are relative to the start of the buffer (headroom included), so a packet can be
/// decapsulated (advance) or encapsulated (prepend) without moving bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
pub struct BufferMeta {
    /// Offset of the first packet byte from the buffer start.
    pub data_offset: u16,
    /// Packet length in bytes.
    pub len: u16,
    /// [`MetaFlags`] bits.
    pub flags: MetaFlags,
    /// Error code set by the node that drops the packet (graph-wide error index; 0 = none).
    pub error: u16,
    /// Interface the packet was received on ([`NO_INTERFACE`] if none).
    pub rx_if: u16,
    /// Interface the packet is to be sent on ([`NO_INTERFACE`] if none).
    pub tx_if: u16,
    /// Scratch for the next-node decision of the current node.
    pub next: u16,
    /// Path id assigned by the path batcher.
    pub path_id: u16,
    /// Flow hash (RSS-like), valid if [`MetaFlags::FLOW_HASH_VALID`].
    pub flow_hash: u32,
    /// Offset of the L2 header from the buffer start.
    pub l2_offset: u16,
    /// Offset of the L3 header from the buffer start.
    pub l3_offset: u16,
    /// Offset of the L4 header from the buffer start.
    pub l4_offset: u16,
    /// Index into the graph's packet trace (valid if [`MetaFlags::TRACED`]).
    pub trace_index: u16,
    /// Opaque value for nodes (e.g. adjacency or next-hop index after a lookup).
    pub opaque: u32,
    /// Free for applications and user nodes.
    pub user: [u8; META_USER_BYTES],
}

impl BufferMeta {
    /// The metadata of a fresh buffer: no place, no flags, no interfaces, all zero
    /// otherwise (also as [`Default`]; a constant for tables and statics).
    pub const DEFAULT: BufferMeta = BufferMeta {
        data_offset: 0,
        len: 0,
        flags: MetaFlags(0),
        error: 0,
        rx_if: NO_INTERFACE,
        tx_if: NO_INTERFACE,
        next: 0,
        path_id: 0,
        flow_hash: 0,
        l2_offset: 0,
        l3_offset: 0,
        l4_offset: 0,
        trace_index: 0,
        opaque: 0,
        user: [0; META_USER_BYTES],
    };
}

impl Default for BufferMeta {
    /// [`BufferMeta::DEFAULT`], written as zeros plus the two interfaces so that the
    /// compiler stores it from registers (a copy of the constant is loaded from memory:
    /// three more instructions per buffer reset).
    #[inline]
    fn default() -> Self {
        BufferMeta {
            rx_if: NO_INTERFACE,
            tx_if: NO_INTERFACE,
            ..Zeroable::zeroed()
        }
    }
}

const _: () = assert!(std::mem::size_of::<BufferMeta>() == 60);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_is_the_constant() {
        assert_eq!(BufferMeta::default(), BufferMeta::DEFAULT);
    }

    #[test]
    fn fits_a_cache_line_with_the_pools_mark() {
        assert_eq!(std::mem::size_of::<BufferMeta>(), 60);
        let m = BufferMeta::default();
        assert_eq!(m.rx_if, NO_INTERFACE);
        assert_eq!(m.flags, MetaFlags::default());
    }

    #[test]
    fn flags_ops_and_debug() {
        let mut f = MetaFlags::default();
        f.insert(MetaFlags::TRACED);
        f.insert(MetaFlags::L3_VALID);
        assert!(f.contains(MetaFlags::TRACED));
        f.remove(MetaFlags::TRACED);
        assert!(!f.contains(MetaFlags::TRACED));
        assert_eq!(format!("{f:?}"), "MetaFlags(L3)");
        f.insert(MetaFlags::USER0);
        assert_eq!(format!("{f:?}"), "MetaFlags(L3|user:0x1)");
    }
}
