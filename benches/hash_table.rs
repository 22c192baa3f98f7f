//! The L2 switch's MAC lookups on `pktvec::lookup::hash::MacTable`: per iteration one
//! vector of 256 packets, two lookups per packet (its 256 source MACs, then its 256
//! destination MACs, in one table as VPP's l2fib does), keys drawn uniformly from the table.
//! Tables of 1K, 64K, 1M, 16M and 96M entries (96M: a 1.33 GiB bucket array, far above this
//! VM's 32 MiB L3 and any per-CCD L3 of the host). Variants: one `lookup` per key (no
//! prefetch), `lookup_bulk` (hash + prefetch all 256, then search), `lookup_bulk_sub` with
//! sub-batches of 16 and 32 (seed `000_*` Algorithm 1), and, up to 16M, std's `HashMap`
//! (hashbrown) with the same hash function, which cannot prefetch.
//!
//! ```text
//! cargo bench --bench hash_table
//! PKTVEC_HASH_SIZES=1K,1M cargo bench --bench hash_table     # a subset (K = 2^10, M = 2^20)
//! ```
//! Throughput is in lookups (512 per iteration). Cycle figures and the rte_hash comparison:
//! `pktvec-bench hash`, docs/results/lookup-tables.md.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use pktvec::lookup::hash::{hash_u64, HashTable, MacTable};
use pktvec::packet::wire::MacAddr;
use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::hint::black_box;
use std::time::Duration;

/// Distinct pseudo-random MACs (a bijection of 48-bit integers, as in `pktvec-bench hash`).
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

/// std's HashMap keyed by the same one-word hash the table uses.
#[derive(Clone, Copy, Default)]
struct MacHash;
#[derive(Default)]
struct MacHasher(u64);
impl Hasher for MacHasher {
    fn finish(&self) -> u64 {
        hash_u64(self.0, 0x5eed)
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) | u64::from(b);
        }
    }
}
impl BuildHasher for MacHash {
    type Hasher = MacHasher;
    fn build_hasher(&self) -> MacHasher {
        MacHasher(0)
    }
}

/// One half-vector lookup: keys in, values out.
type LookupFn<'a> = dyn FnMut(&[MacAddr], &mut [Option<u32>]) + 'a;

fn sizes() -> Vec<usize> {
    let spec = std::env::var("PKTVEC_HASH_SIZES").unwrap_or_else(|_| "1K,64K,1M,16M,96M".into());
    spec.split(',')
        .map(|s| {
            let s = s.trim();
            let (n, m) = match s.chars().last() {
                Some('K') => (&s[..s.len() - 1], 1usize << 10),
                Some('M') => (&s[..s.len() - 1], 1 << 20),
                _ => (s, 1),
            };
            n.parse::<usize>()
                .expect("PKTVEC_HASH_SIZES: sizes like 1K,64K,1M")
                * m
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    const SEQ: usize = 1 << 20;
    for n in sizes() {
        let keys: Vec<MacAddr> = (0..n as u64).map(mac).collect();
        let mut t: MacTable = HashTable::new(n).expect("table fits in memory");
        for (i, k) in keys.iter().enumerate() {
            t.insert(*k, i as u32).expect("capacity n holds n keys");
        }
        let mut x = 0x2545_f491_4f6c_dd1du64 ^ n as u64;
        let seq: Vec<MacAddr> = (0..SEQ)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                keys[((x as u128 * n as u128) >> 64) as usize]
            })
            .collect();
        let std_map: Option<HashMap<MacAddr, u32, MacHash>> = (n <= 16 << 20).then(|| {
            let mut m = HashMap::with_capacity_and_hasher(n, MacHash);
            m.extend(keys.iter().enumerate().map(|(i, k)| (*k, i as u32)));
            m
        });
        drop(keys);

        let mut group = c.benchmark_group(format!(
            "hash_table/mac_{n}_{:.0}MiB",
            t.memory_bytes() as f64 / (1 << 20) as f64
        ));
        group.throughput(Throughput::Elements(512));
        let mut out = [None; 256];
        let mut run = |name: &str, param: usize, f: &mut LookupFn| {
            let mut pos = 0;
            group.bench_function(BenchmarkId::new(name.to_string(), param), |b| {
                b.iter(|| {
                    let v = &seq[pos..pos + 512];
                    pos = (pos + 512) % SEQ;
                    f(&v[..256], &mut out);
                    black_box(out[0]);
                    f(&v[256..], &mut out);
                    black_box(out[255]);
                })
            });
        };
        run("no_prefetch", 1, &mut |k, o| {
            t.lookup_bulk_no_prefetch(k, o);
        });
        run("bulk", 256, &mut |k, o| {
            t.lookup_bulk(k, o);
        });
        for b in [16usize, 32] {
            run("sub_batch", b, &mut |k, o| {
                t.lookup_bulk_sub(k, o, b);
            });
        }
        if let Some(m) = &std_map {
            run("std_hashmap", 1, &mut |k, o| {
                for (k, o) in k.iter().zip(o.iter_mut()) {
                    *o = m.get(k).copied();
                }
            });
        }
        group.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(30);
    targets = bench
}
criterion_main!(benches);
