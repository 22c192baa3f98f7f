//! A fixed MAC-lookup workload for instruction counting (not a timing benchmark): fills a
//! `MacTable` with `size` distinct pseudo-random MACs, then looks up `lookups` keys drawn
//! uniformly from it (all hits, or `miss_pct` percent misses) with `lookup_bulk`, 256 keys
//! per call, as the `hash` benchmark does.
//!
//! ```text
//! cargo build --release -p pktvec-lookup --example hash_ir
//! valgrind --tool=cachegrind --cache-sim=no --toggle-collect='*hash_ir::run*' \
//!     target/release/examples/hash_ir 1024 1048576
//! ```
//!
//! Ir of `run` divided by `lookups` is the instructions per lookup.

use std::hint::black_box;

use pktvec_lookup::hash::{HashTable, MacTable};
use pktvec_packet::wire::MacAddr;

/// A bijection of 48-bit integers: distinct indices give distinct, random-looking MACs.
fn mac(i: u64) -> MacAddr {
    const M: u64 = (1 << 48) - 1;
    let mut x = i.wrapping_add(0x1234_5678_9abc) & M;
    x = x.wrapping_mul(0x9e37_79b9_7f4b) & M;
    x ^= x >> 23;
    x = x.wrapping_mul(0xc2b2_ae3d_27d5) & M;
    x ^= x >> 19;
    let b = x.to_be_bytes();
    MacAddr::new([b[2], b[3], b[4], b[5], b[6], b[7]])
}

/// The lookups, kept out of line so that a profiler can count them alone.
#[inline(never)]
fn run(t: &MacTable, seq: &[MacAddr], out: &mut [Option<u32>]) -> usize {
    let mut hits = 0;
    for half in seq.chunks(256) {
        let o = &mut out[..half.len()];
        hits += t.lookup_bulk(half, o);
        black_box(o[0]);
    }
    hits
}

fn main() {
    let mut args = std::env::args().skip(1);
    let size: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(1024);
    let lookups: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(1 << 20);
    let miss_pct: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(0);
    let mut t: MacTable = HashTable::new(size).expect("table");
    for i in 0..size as u64 {
        t.insert(mac(i), i as u32).expect("insert");
    }
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let seq: Vec<MacAddr> = (0..lookups)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if x % 100 < miss_pct {
                mac(size as u64 + x % (1 << 40))
            } else {
                mac(((x as u128 * size as u128) >> 64) as u64)
            }
        })
        .collect();
    let mut out = vec![None; 256];
    let hits = run(&t, &seq, &mut out);
    println!(
        "size {size} lookups {lookups} hits {hits} in_secondary {}",
        t.stats().in_secondary
    );
}
