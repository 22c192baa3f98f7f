//! IPv4 LPM lookups (`pktvec::lookup::ipv4::Lpm4`): generated 1M-prefix tables with a real
//! BGP prefix-length distribution (uniformly placed, `routes::generate_ipv4`, and clustered
//! like a real table, `routes::generate_ipv4_clustered`), the real tier1 table (901,899
//! prefixes) and the union of tier1 and the RIPE 2010 fib (1,069,869 real prefixes,
//! `routes::union_prefixes`) when present;
//! random destinations; single lookup, and vectors of 256 keys without and with prefetch
//! (sub-batched, the staged `lookup_vector_raw` (AVX-512 where available) and its portable
//! loop, the staged form at b = 256 with its prefetch level forced to L1 or L2
//! (`PrefetchLevel`), and software-pipelined `lookup_vector_pipelined`), with the first level on
//! transparent huge pages (the default) and on 4 KiB pages (`huge_pages: false`).
//!
//! ```text
//! cargo bench --bench lpm4 --no-run
//! flock /tmp/pktvec-bench.lock cargo bench --bench lpm4
//! flock /tmp/pktvec-bench.lock cargo bench --bench lpm4 -- vector-256-raw   # the staged rows only
//! ```
//!
//! Every iteration looks up one vector of 256 keys (throughput is in keys), walking through a
//! 1M-key array so the first-level lines are cold as they are for real traffic.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use pktvec::lookup::ipv4::{Lpm4, Lpm4Config, PrefetchLevel, DEFAULT_PREFETCH_DISTANCE};
use pktvec::lookup::routes::{self, Route4};
use std::hint::black_box;
use std::time::Duration;

const VEC: usize = 256;
const N_KEYS: usize = 1 << 20;
const TIER1: &str = "/work/shared/data/routes/tier1-fulltable-ipv4.txt.xz";
const RIPE: &str = "/work/shared/data/routes/ripe-ris-bview-20100701.0759.peer-as4777.fib.tsv.xz";

fn tables() -> Vec<(&'static str, Vec<Route4>)> {
    let mut t = vec![
        ("gen-1M", routes::generate_ipv4(1_000_000, 1)),
        (
            "clustered-1M",
            routes::generate_ipv4_clustered(1_000_000, 1),
        ),
    ];
    match (routes::load_ipv4_file(TIER1), routes::load_ipv4_file(RIPE)) {
        (Ok(tier1), Ok(ripe)) => {
            let union = routes::union_prefixes(&[&tier1, &ripe]);
            t.push(("tier1-902k", tier1));
            t.push(("union-1070k", union));
        }
        (Ok(tier1), Err(e)) => {
            eprintln!("note: union table skipped: {e}");
            t.push(("tier1-902k", tier1));
        }
        (Err(e), _) => eprintln!("note: tier1 and union tables skipped: {e}"),
    }
    t
}

fn bench(c: &mut Criterion) {
    let keys: Vec<u32> = routes::random_ipv4_keys(N_KEYS, 42)
        .into_iter()
        .map(u32::from)
        .collect();
    for ((name, table), huge_pages) in tables()
        .into_iter()
        .flat_map(|t| [(t.clone(), true), (t, false)])
    {
        let cfg = Lpm4Config {
            huge_pages,
            ..Default::default()
        };
        let lpm = Lpm4::from_routes(cfg, &table).expect("table fits");
        let pages = if huge_pages { "thp" } else { "4k" };
        let mut g = c.benchmark_group(format!("lpm4/{name}/{pages}"));
        g.throughput(Throughput::Elements(VEC as u64))
            .sample_size(30)
            .warm_up_time(Duration::from_millis(500))
            .measurement_time(Duration::from_secs(3));
        let mut out = vec![None; VEC];
        let mut raw = vec![0u32; VEC];
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
        g.bench_function("bulk-256-no-prefetch", |b| {
            b.iter(|| {
                let p = next();
                lpm.lookup_bulk(&keys[p..p + VEC], &mut out);
                black_box(&out);
            })
        });
        for sub in [256usize, 32] {
            g.bench_with_input(
                BenchmarkId::new("vector-256-prefetch", sub),
                &sub,
                |b, &sub| {
                    b.iter(|| {
                        let p = next();
                        lpm.lookup_vector_batched(&keys[p..p + VEC], &mut out, sub);
                        black_box(&out);
                    })
                },
            );
        }
        // The staged `u32` form (AVX-512 where the CPU has it) and its portable loop.
        for (name, simd) in [("vector-256-raw", true), ("vector-256-raw-portable", false)] {
            g.bench_with_input(BenchmarkId::new(name, 128), &simd, |b, &simd| {
                b.iter(|| {
                    let p = next();
                    if simd {
                        lpm.lookup_vector_raw(&keys[p..p + VEC], &mut raw, 128);
                    } else {
                        lpm.lookup_vector_raw_portable(&keys[p..p + VEC], &mut raw, 128);
                    }
                    black_box(&raw);
                })
            });
        }
        // The staged form at b = 256 with the prefetch level forced (the rows above use
        // `PrefetchLevel::Auto`, which picks L2 at b = 256 on these tables).
        for level in [PrefetchLevel::L1, PrefetchLevel::L2] {
            let id = BenchmarkId::new(format!("vector-256-raw-{level:?}"), 256);
            g.bench_with_input(id, &level, |b, &level| {
                lpm.set_prefetch_level(level);
                b.iter(|| {
                    let p = next();
                    lpm.lookup_vector_raw(&keys[p..p + VEC], &mut raw, 256);
                    black_box(&raw);
                });
                lpm.set_prefetch_level(PrefetchLevel::Auto);
            });
        }
        g.bench_with_input(BenchmarkId::new("vector-256-raw", 256), &(), |b, _| {
            b.iter(|| {
                let p = next();
                lpm.lookup_vector_raw(&keys[p..p + VEC], &mut raw, 256);
                black_box(&raw);
            })
        });
        g.bench_function(
            BenchmarkId::new("vector-256-pipelined", DEFAULT_PREFETCH_DISTANCE),
            |b| {
                b.iter(|| {
                    let p = next();
                    lpm.lookup_vector_pipelined(
                        &keys[p..p + VEC],
                        &mut raw,
                        DEFAULT_PREFETCH_DISTANCE,
                    );
                    black_box(&raw);
                })
            },
        );
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
