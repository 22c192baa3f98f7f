//! The NF runtime with a minimal NF: per-stripe packet counters. Exact counts under every
//! strategy (affinity hands each packet to its stripe's owner first), receive-ring
//! overflow counted when the offered rate is more than the worker takes, the profiler.

use pktvec_graph::node_errors;
use pktvec_nf::runtime::{self, Nf, NfWorker, RunConfig};
use pktvec_packet::PacketMut;
use pktvec_state::{Domain, Strategy, StripedArray, SyncConfig, WorkerSync};
use std::sync::Arc;

node_errors! {
    /// Why the counter drops packets.
    pub enum CountError {
        Empty = "empty frame",
    }
}

/// Counts packets per first byte (its stripe) in a shared array.
struct Counter {
    domain: Arc<Domain>,
    counts: StripedArray<u64>,
    /// Busy-work per packet (TSC ticks), to make a slow NF.
    spin: u64,
}

struct CounterWorker {
    nf: Arc<Counter>,
    sync: WorkerSync,
}

impl Counter {
    /// Under flow affinity, the owner of the frame's stripe (its first byte).
    fn owner(&self, frame: &[u8]) -> Option<usize> {
        frame.first().map(|&b| self.domain.owner(usize::from(b)))
    }
}

/// The NF: the counter behind an `Arc`, which each worker's side shares.
struct Shared(Arc<Counter>);

impl Nf for Shared {
    type Worker = CounterWorker;
    const NAME: &'static str = "counter";
    fn domain(&self) -> &Arc<Domain> {
        &self.0.domain
    }
    fn worker(&self, id: usize) -> CounterWorker {
        CounterWorker {
            nf: self.0.clone(),
            sync: self.0.domain.worker(id),
        }
    }
    fn owner(&self, frame: &[u8]) -> Option<usize> {
        self.0.owner(frame)
    }
}

impl NfWorker for CounterWorker {
    type Error = CountError;
    fn packet(&mut self, pkt: &mut PacketMut<'_>, _now: u64) -> Result<(), CountError> {
        let Some(&b) = pkt.data().first() else {
            return Err(CountError::Empty);
        };
        let i = usize::from(b);
        let nf = &self.nf;
        self.sync
            .section(nf.counts.stripe(i), |sec| *nf.counts.get_mut(sec, i) += 1);
        if nf.spin > 0 {
            let t = pktvec_graph::clock::now();
            while pktvec_graph::clock::now() - t < nf.spin {
                std::hint::spin_loop();
            }
        }
        Ok(())
    }
    fn sync(&mut self) -> &mut WorkerSync {
        &mut self.sync
    }
    fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![("sections", self.sync.stats().sections)]
    }
}

fn counter(strategy: Strategy, workers: usize, spin: u64) -> Arc<Shared> {
    let domain = Domain::new(SyncConfig {
        strategy,
        workers,
        stripes: 16,
        ..SyncConfig::default()
    })
    .unwrap();
    let counts = StripedArray::new(&domain, "counts", 16);
    Arc::new(Shared(Arc::new(Counter {
        domain,
        counts,
        spin,
    })))
}

/// 16 kinds of frame (first byte 0..16), 60 bytes each.
fn frames() -> Vec<Vec<u8>> {
    (0..16u8).map(|b| vec![b; 60]).collect()
}

fn totals(nf: &Shared) -> Vec<u64> {
    let d = &nf.0.domain;
    (0..16)
        .map(|i| {
            let mut w = d.worker(d.owner(i));
            w.section(i, |sec| *nf.0.counts.get(sec, i))
        })
        .collect()
}

#[test]
fn counts_are_exact_under_every_strategy() {
    for s in [Strategy::Coarse, Strategy::Fine, Strategy::Affinity] {
        for workers in [1, 2] {
            let nf = counter(s, workers, 0);
            let cfg = RunConfig {
                packets_per_worker: 16_000,
                pin: false,
                handoff_ring: 1 << 15,
                ..RunConfig::default()
            };
            let r = runtime::run(&nf, |_| frames(), &cfg).unwrap();
            let c = r.report.conservation();
            assert!(c.is_balanced(), "{s}/{workers}: {c:?}");
            assert_eq!(c.output, 16_000 * workers as u64, "{s}/{workers}");
            assert_eq!(
                totals(&nf),
                vec![1000 * workers as u64; 16],
                "{s}/{workers}"
            );
            assert_eq!(r.counter("sections"), 16_000 * workers as u64);
            if s == Strategy::Affinity && workers == 2 {
                // half the frames belong to the other worker's stripes
                assert_eq!(r.handoff.as_ref().unwrap().handed_off, 16_000);
                assert_eq!(r.sync.lock_acquisitions, 0);
            }
        }
    }
}

#[test]
fn an_offered_rate_beyond_the_worker_overflows_the_ring_and_is_counted() {
    // 2 µs a packet (about 500 kpps at most) offered 2 Mpps into a 64-descriptor ring
    let nf = counter(
        Strategy::Fine,
        1,
        (pktvec_graph::clock::tsc_hz() * 2e-6) as u64,
    );
    let cfg = RunConfig {
        packets_per_worker: 20_000,
        rate_pps: Some(2e6),
        rx_ring: 64,
        warmup: 100,
        pin: false,
        ..RunConfig::default()
    };
    let r = runtime::run(&nf, |_| frames(), &cfg).unwrap();
    let c = r.report.conservation();
    assert!(c.is_balanced(), "{c:?}");
    assert_eq!(c.input, 20_000);
    let lost = r.rx_overflow();
    assert!(lost > 5_000, "lost {lost}");
    assert_eq!(c.output + lost, 20_000);
    assert_eq!(totals(&nf).iter().sum::<u64>(), c.output);
    // a ring as deep as the run is long loses nothing whatever the scheduler does, and
    // pacing takes the run's length: 5,000 packets at 200 kpps, 25 ms
    let nf = counter(Strategy::Fine, 1, 0);
    let cfg = RunConfig {
        packets_per_worker: 5_000,
        rate_pps: Some(2e5),
        rx_ring: 5_000,
        pin: false,
        ..RunConfig::default()
    };
    let t = std::time::Instant::now();
    let r = runtime::run(&nf, |_| frames(), &cfg).unwrap();
    assert!(
        t.elapsed() >= std::time::Duration::from_millis(24),
        "{:?}",
        t.elapsed()
    );
    assert_eq!(r.rx_overflow(), 0);
    assert_eq!(r.report.conservation().output, 5_000);
}

#[test]
fn the_profile_sees_each_packets_section() {
    let nf = counter(Strategy::Coarse, 1, 0);
    let cfg = RunConfig {
        packets_per_worker: 1600,
        profile: true,
        pin: false,
        ..RunConfig::default()
    };
    let r = runtime::run(&nf, |_| frames(), &cfg).unwrap();
    let p = r.workers[0].profile.as_ref().unwrap();
    assert_eq!(p.packets(), 1600);
    let rows = p.conflicts(2..=16);
    // frames cycle through 16 kinds: packets conflict only 16 apart
    assert!(rows.iter().all(|r| r.pairs_by_object == 0.0), "{rows:?}");
}
