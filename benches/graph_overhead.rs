//! Dispatch overhead on the topologies of DPDK's `graph_perf_autotest` (see
//! `pktvec::perf`): one iteration = one walk (every node called once). Criterion reports
//! time per walk and packets per second; cycles per node call = time × TSC rate / node
//! calls per walk. `pktvec-bench dispatch` prints those units directly, next to DPDK's.
//!
//! ```text
//! cargo bench --bench graph_overhead
//! ```

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use pktvec::perf::{build, topologies};
use std::time::Duration;

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("graph_overhead");
    for spec in topologies() {
        let mut g = build(&spec).expect("topology builds");
        // Throughput in node visits: packets summed over every node call of the walk.
        group.throughput(Throughput::Elements(spec.node_visits_per_walk as u64));
        group.bench_function(BenchmarkId::new("walk", spec.name), |b| {
            b.iter(|| g.run_once())
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(40);
    targets = bench
}
criterion_main!(benches);
