//! Writing your own node: a graph of built-in nodes plus one user node in safe Rust.
//!
//! ```text
//! cargo run --release --example custom_node            # 1M packets
//! cargo run --release --example custom_node -- 5000000 # any count
//! ```
//!
//! Graph: `source` (built-in, replays generated packets) → `ip4-ttl` (the user node below:
//! checks Ethernet + IPv4, decrements the TTL with an incremental checksum update) →
//! `tx` (built-in null sink); drops go to the built-in `drop` node with a counted reason.
//! Prints a progress line, the runtime table (`show runtime`), the error counters
//! (`show errors`), the trace of the first packets (`show trace`) and the conservation check.

use pktvec::packet::wire::{parse_l2, EtherType, Ipv4Packet, MacAddr};
use pktvec::prelude::*;
use std::net::Ipv4Addr;
use std::time::Instant;

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
        // A prefetching 4/2/1 loop over the vector, then one bulk enqueue.
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
        match parse_l2(pkt.data())
            .ok()
            .and_then(|l2| Ipv4Packet::new_checked(pkt.data().get(l2.l3_offset as usize..)?).ok())
        {
            Some(ip) => {
                let _ = write!(
                    out,
                    "IP4: {} -> {} ttl {} len {} checksum {:#06x}",
                    ip.src_addr(),
                    ip.dst_addr(),
                    ip.ttl(),
                    ip.total_len(),
                    ip.checksum()
                );
            }
            None => {
                let _ = write!(out, "not an IPv4 frame, {} bytes", pkt.len());
            }
        }
    }
}

// ---- traffic and graph ------------------------------------------------------------------

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

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let count: u64 = match std::env::args().nth(1) {
        Some(s) => s.parse().map_err(|e| format!("packet count {s:?}: {e}"))?,
        None => 1_000_000,
    };
    let mut b = GraphBuilder::new(GraphConfig::default());
    b.add("source", PacketSource::new(traffic()).with_limit(count))
        .add("ip4-ttl", Ip4Ttl)
        .add("tx", NullSink)
        .set_next("source", SourceNext::Out, "ip4-ttl");
    let mut graph = b.build(BufferPool::new(PoolConfig::default())?)?;

    graph.trace_add(4);
    let start = Instant::now();
    let mut last = Instant::now();
    let mut done = 0u64;
    loop {
        let n = graph.run_once();
        done += n;
        if n == 0 {
            break;
        }
        if last.elapsed().as_secs_f64() >= 0.5 {
            last = Instant::now();
            eprintln!(
                "  {done:>10} / {count} packets, {:.2} Mpps",
                done as f64 / start.elapsed().as_secs_f64() / 1e6
            );
        }
        if graph.trace().is_active() {
            // The first turn traced the first packets; stop paying for tracing now.
            let trace = graph.trace().to_string();
            graph.trace_clear();
            println!("{trace}");
        }
    }
    let secs = start.elapsed().as_secs_f64();
    println!("{}", graph.runtime());
    println!();
    println!("{}", graph.errors());
    println!(
        "{done} packets in {:.3} s: {:.2} Mpps",
        secs,
        done as f64 / secs / 1e6
    );
    let c = graph.conservation();
    println!("conservation: {c}");
    if !c.is_balanced() || graph.pool().in_use() != 0 {
        return Err("packets were lost".into());
    }
    Ok(())
}
