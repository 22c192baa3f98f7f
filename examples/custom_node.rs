//! Writing your own node: a graph of built-in nodes plus one user node in safe Rust.
//!
//! ```text
//! cargo run --release --example custom_node            # 200,000 packets
//! cargo run --release --example custom_node -- 5000000 # any count
//! ```
//!
//! Graph: `source` (built-in, replays generated packets) → `ip4-ttl` (the user node below:
//! checks Ethernet + IPv4, decrements the TTL with an incremental checksum update) →
//! `tx` (built-in null sink); drops go to the built-in `drop` node with a counted reason.
//! `pktvec::app::Run` runs it and prints the trace of the first packets (`show trace`),
//! the runtime table (`show runtime`), the error counters (`show errors`) and the
//! conservation check.

use pktvec::app::{exit_code, Error, Run};
use pktvec::packet::wire::{parse_l2, EtherType, Ipv4Packet, MacAddr};
use pktvec::prelude::*;
use std::net::Ipv4Addr;
use std::process::ExitCode;

// ---- the user node: a few dozen lines ------------------------------------------------

next_nodes! {
    /// Where ip4-ttl sends packets.
    pub enum Ip4TtlNext {
        /// Forwarded packets.
        Tx = "tx",
    }
}

node_errors! {
    /// Why ip4-ttl drops packets.
    pub enum Ip4TtlError {
        NotIp4 = "not IPv4",
        Malformed = "malformed IPv4 header",
        BadChecksum = "bad IPv4 header checksum",
        TtlExpired = "ttl expired",
    }
}

/// Decrements the IPv4 TTL of Ethernet frames (VLAN tags allowed).
#[derive(Default)]
struct Ip4Ttl;

impl Node for Ip4Ttl {
    type Next = Ip4TtlNext;
    type Error = Ip4TtlError;

    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        // A prefetching loop over the vector, then one bulk enqueue.
        cx.process_packets(frame, |pkt| {
            let Ok(l2) = parse_l2(pkt.data()) else {
                return Verdict::Drop(Ip4TtlError::NotIp4);
            };
            if l2.ethertype != EtherType::IPV4 {
                return Verdict::Drop(Ip4TtlError::NotIp4);
            }
            let l3 = &mut pkt.data_mut()[l2.l3_offset as usize..];
            let Ok(mut ip) = Ipv4Packet::new_checked(l3) else {
                return Verdict::Drop(Ip4TtlError::Malformed);
            };
            if !ip.verify_checksum() {
                return Verdict::Drop(Ip4TtlError::BadChecksum);
            }
            match ip.decrement_ttl_update_checksum() {
                Some(ttl) if ttl > 0 => Verdict::Next(Ip4TtlNext::Tx),
                _ => Verdict::Drop(Ip4TtlError::TtlExpired),
            }
        });
    }

    fn format_trace(&self, pkt: Packet<'_>, out: &mut String) {
        use std::fmt::Write;
        let l2 = parse_l2(pkt.data()).ok();
        let l3 = l2.and_then(|l2| pkt.data().get(l2.l3_offset as usize..));
        let _ = match l3.and_then(|d| Ipv4Packet::new_checked(d).ok()) {
            Some(ip) => write!(
                out,
                "IP4: {} -> {} ttl {}",
                ip.src_addr(),
                ip.dst_addr(),
                ip.ttl()
            ),
            None => write!(out, "not an IPv4 frame, {} bytes", pkt.len()),
        };
    }
}

fn traffic() -> Vec<Vec<u8>> {
    let a: MacAddr = [0x02, 0, 0, 0, 0, 1].into();
    let b: MacAddr = [0x02, 0, 0, 0, 0, 2].into();
    let ip = |ttl: u8, i: u8| {
        PacketBuilder::ethernet(a, b)
            .ipv4(Ipv4Addr::new(10, 0, 0, i), Ipv4Addr::new(192, 168, 1, i))
            .ttl(ttl)
            .udp(1024 + i as u16, 53)
            .payload_len(18)
            .build()
    };
    let mut pkts: Vec<Vec<u8>> = (1..=12).map(|i| ip(64, i)).collect();
    // VLAN-tagged, still good.
    pkts.push(
        PacketBuilder::ethernet(a, b)
            .vlan(100)
            .ipv4(Ipv4Addr::new(10, 1, 0, 1), Ipv4Addr::new(10, 2, 0, 1))
            .udp(7, 7)
            .payload_len(18)
            .build(),
    );
    pkts.push(ip(1, 13)); // TTL expires here
    let mut bad = ip(64, 14);
    bad[14 + 10] ^= 0xff; // checksum broken
    pkts.push(bad);
    pkts.push(ip(64, 15)[..20].to_vec()); // truncated
    pkts.push(
        PacketBuilder::ethernet(a, b)
            .ipv6(
                "2001:db8::1".parse().unwrap(),
                "2001:db8::2".parse().unwrap(),
            )
            .udp(1, 2)
            .build(),
    );
    pkts
}

fn main() -> ExitCode {
    exit_code(run())
}

fn run() -> Result<(), Error> {
    let count: u64 = match std::env::args().nth(1) {
        Some(s) => s.parse().map_err(|e| format!("packet count {s:?}: {e}"))?,
        None => 200_000,
    };
    let mut b = GraphBuilder::new(GraphConfig::default());
    b.add("source", PacketSource::new(traffic()).with_limit(count))
        .add("ip4-ttl", Ip4Ttl)
        .add("tx", NullSink)
        .set_next("source", SourceNext::Out, "ip4-ttl");
    let mut graph = b.build(BufferPool::new(PoolConfig::default())?)?;
    // Runs until the source is done: trace of the first 4 packets, `show runtime`,
    // `show errors`, the rate and the conservation check.
    let report = Run::new("custom_node")
        .trace(4)
        .progress(count)
        .run(&mut graph);
    println!("{report}");
    report.check()
}
