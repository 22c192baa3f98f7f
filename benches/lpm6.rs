//! IPv6 LPM lookups (`pktvec::lookup::ipv6::Lpm6`): the seed's 200,000 generated /48–/64
//! prefixes (`routes::generate_ipv6`) and the real tier1 IPv6 table (160,147 prefixes) when
//! present; keys that mostly hit (90% inside a random route, 10% uniform in 2000::/3);
//! single lookups, `lookup_bulk`, and vectors of 256 keys without and with prefetch.
//!
//! ```text
//! cargo bench --bench lpm6 --no-run
//! flock /tmp/pktvec-bench.lock cargo bench --bench lpm6
//! ```
//!
//! Every iteration looks up one vector of 256 keys (throughput is in keys), walking through a
//! 1M-key array so the table lines are as cold as they are for real traffic. The DPDK
//! comparison on the same routes and keys is `pktvec-bench lpm6`.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use pktvec::lookup::ipv6::Lpm6;
use pktvec::lookup::routes::{self, Route6, SplitMix64};
use std::hint::black_box;
use std::time::Duration;

const VEC: usize = 256;
const N_KEYS: usize = 1 << 20;
const TIER1: &str = "/work/shared/data/routes/tier1-fulltable-ipv6.txt.xz";

fn tables() -> Vec<(&'static str, Vec<Route6>)> {
    let mut t = vec![("gen-200k-48-64", routes::generate_ipv6(200_000, 1))];
    if std::path::Path::new(TIER1).exists() {
        match routes::load_ipv6_file(TIER1) {
            Ok(r) => t.push(("tier1-160k", r)),
            Err(e) => eprintln!("note: tier1 table skipped: {e}"),
        }
    } else {
        eprintln!("note: {TIER1} not present; tier1 table skipped");
    }
    t
}

/// 90% of keys inside a random route, 10% uniform in 2000::/3, shuffled.
fn keys_for(table: &[Route6]) -> Vec<u128> {
    let inside = N_KEYS * 9 / 10;
    let mut keys: Vec<u128> = routes::random_keys_in(table, inside, 42)
        .into_iter()
        .chain(routes::random_ipv6_keys(N_KEYS - inside, 43))
        .map(u128::from)
        .collect();
    let mut rng = SplitMix64::new(44);
    for i in (1..keys.len()).rev() {
        keys.swap(i, rng.below(i as u64 + 1) as usize);
    }
    keys
}

fn bench(c: &mut Criterion) {
    for (name, table) in tables() {
        let mut lpm = Lpm6::from_routes(table.iter().map(|r| (r.addr, r.len, r.next_hop)))
            .expect("valid table");
        lpm.shrink_to_fit();
        let keys = keys_for(&table);
        let mut g = c.benchmark_group(format!("lpm6/{name}"));
        g.throughput(Throughput::Elements(VEC as u64))
            .sample_size(30)
            .warm_up_time(Duration::from_millis(500))
            .measurement_time(Duration::from_secs(3));
        let mut out = vec![None; VEC];
        let mut pos = 0usize;
        let mut next = move || {
            pos = (pos + VEC) % N_KEYS;
            pos
        };
        g.bench_function("single", |b| {
            b.iter(|| {
                let p = next();
                for &k in &keys[p..p + VEC] {
                    black_box(lpm.lookup(k));
                }
            })
        });
        g.bench_function("bulk-256", |b| {
            b.iter(|| {
                let p = next();
                lpm.lookup_bulk(&keys[p..p + VEC], &mut out).ok();
                black_box(&out);
            })
        });
        for (label, pf) in [
            ("vector-256-no-prefetch", false),
            ("vector-256-prefetch", true),
        ] {
            g.bench_function(label, |b| {
                b.iter(|| {
                    let p = next();
                    lpm.lookup_vector_with(&keys[p..p + VEC], &mut out, pf).ok();
                    black_box(&out);
                })
            });
        }
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
