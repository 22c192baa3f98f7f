//! # pktvec-packet
//!
//! Packets for [pktvec](https://docs.rs/pktvec): a [`BufferPool`] of fixed-size buffers
//! addressed by `u32` index, one cache line of [`BufferMeta`] per buffer, [`Packet`] /
//! [`PacketMut`] access with headroom for encapsulation, zero-copy typed header views in
//! [`wire`] (Ethernet/802.1Q/QinQ, ARP, IPv4, IPv6, UDP, TCP, ICMP/ICMPv6), the internet
//! [`checksum`] and a [`builder`] for test and generator packets.
//!
//! Nothing here allocates after [`BufferPool::new`]; nothing panics on packet contents.
//!
//! ```
//! use pktvec_packet::{BufferPool, PoolConfig};
//! use pktvec_packet::builder::PacketBuilder;
//! use pktvec_packet::wire::{EthernetFrame, EtherType, Ipv4Packet};
//! use std::net::Ipv4Addr;
//!
//! let mut pool = BufferPool::new(PoolConfig::default())?;
//! let bytes = PacketBuilder::ethernet([2, 0, 0, 0, 0, 1].into(), [2, 0, 0, 0, 0, 2].into())
//!     .ipv4(Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2))
//!     .udp(1234, 80)
//!     .payload(b"hi")
//!     .build();
//! let bi = pool.alloc_with(&bytes)?;
//!
//! let mut pkt = pool.packet_mut(bi);
//! let eth = EthernetFrame::new_checked(pkt.data_mut())?;
//! assert_eq!(eth.ethertype(), EtherType::IPV4);
//! let mut ip = Ipv4Packet::new_checked(eth.into_inner().get_mut(14..).unwrap_or_default())?;
//! let ttl = ip.ttl();
//! ip.decrement_ttl_update_checksum();
//! assert_eq!(ip.ttl(), ttl - 1);
//! assert!(ip.verify_checksum());
//! pool.free(bi);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![warn(missing_docs)]

pub mod arena;
pub mod builder;
pub mod checksum;
pub mod mem;
pub mod meta;
pub mod packet;
pub mod pool;
pub mod prefetch;
pub mod wire;

pub use arena::SharedArena;
pub use meta::{BufferMeta, MetaFlags, META_USER_BYTES, NO_INTERFACE};
pub use packet::{Packet, PacketError, PacketMut};
pub use pool::{
    BufferBackend, BufferPool, ExternalRegion, PacketsMut, PoolConfig, PoolError, CACHE_LINE,
    DEFAULT_DATA_ROOM, DEFAULT_HEADROOM, EXTERNAL_CACHE,
};
