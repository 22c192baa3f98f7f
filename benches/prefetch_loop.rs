//! A header-touching node (IPv4 TTL decrement with incremental checksum) over buffer pools
//! larger than L2 and than the last-level cache, visited in random order, with the
//! prefetching loop at distance d = 0 (no prefetch), 2, 4 and 8
//! (`pktvec::perf::prefetch_graph`).
//!
//! ```text
//! cargo bench --bench prefetch_loop
//! ```
//! Results: docs/results/dispatch.md (`pktvec-bench prefetch`).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use pktvec::perf::{prefetch_graph, BYTES_PER_BUFFER};
use std::time::Duration;

fn bench(c: &mut Criterion) {
    // 512 buffers ≈ 1.1 MiB (inside L2), 65,536 ≈ 140 MiB (above the 32 MiB L3 this VM
    // reports), 262,144 ≈ 560 MiB (above "hundreds of MiB", what the host's L3 may be).
    for buffers in [512u32, 65_536, 262_144] {
        let mut g = prefetch_graph(buffers).expect("pool fits in memory");
        let mib = buffers as f64 * BYTES_PER_BUFFER as f64 / (1 << 20) as f64;
        let mut group = c.benchmark_group(format!("prefetch_loop/pool_{buffers}_{mib:.0}MiB"));
        group.throughput(Throughput::Elements(256));
        for d in [0usize, 2, 4, 8] {
            g.set_prefetch_distance(d);
            group.bench_function(BenchmarkId::new("distance", d), |bch| {
                bch.iter(|| g.run_once())
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
