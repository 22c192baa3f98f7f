//! The worker runtime: graphs per worker, summed conservation, errors and panics surfaced,
//! clean stop.

use pktvec_graph::builtin::{NullSink, PacketSource, SourceNext};
use pktvec_graph::{next_nodes, Context, Frame, GraphBuilder, GraphConfig, NoError, Node, Verdict};
use pktvec_packet::{BufferPool, PoolConfig};
use pktvec_workers::runtime::{WorkerError, Workers, WorkersConfig};
use std::time::Duration;

next_nodes! {
    /// Arcs of `boom`.
    pub enum BoomNext { Tx = "tx" }
}

/// Forwards, and panics once it has seen `after` packets.
struct Boom {
    seen: u64,
    after: u64,
}

impl Node for Boom {
    type Next = BoomNext;
    type Error = NoError;
    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        self.seen += frame.len() as u64;
        assert!(self.seen < self.after, "boom after {} packets", self.seen);
        cx.process_packets(frame, |_| Verdict::Next(BoomNext::Tx));
    }
}

fn graph(
    packets: Option<u64>,
    boom_after: u64,
) -> Result<pktvec_graph::Graph, pktvec_workers::runtime::BuildError> {
    let mut b = GraphBuilder::new(GraphConfig::default());
    let src = PacketSource::new((0..16u8).map(|i| vec![i; 60 + i as usize]).collect());
    let src = match packets {
        Some(n) => src.with_limit(n),
        None => src,
    };
    b.add("source", src)
        .add(
            "boom",
            Boom {
                seen: 0,
                after: boom_after,
            },
        )
        .add("tx", NullSink)
        .set_next("source", SourceNext::Out, "boom");
    Ok(b.build(BufferPool::new(PoolConfig::default())?)?)
}

#[test]
fn one_to_four_workers_sum_to_exact_conservation() {
    for n in 1..=4 {
        let report = Workers::run(WorkersConfig::new(n), move |w| {
            graph(Some(10_000 + 1_000 * w.id as u64), u64::MAX)
        })
        .unwrap();
        assert_eq!(report.workers.len(), n);
        let expected: u64 = (0..n as u64).map(|i| 10_000 + 1_000 * i).sum();
        let c = report.conservation();
        assert_eq!(c.input, expected);
        assert_eq!(c.output, expected);
        assert!(c.is_balanced(), "{c}");
        assert_eq!(c.buffers_in_use, 0);
        for w in &report.workers {
            assert!(w.conservation.is_balanced());
        }
        assert_eq!(report.runtime().row("tx").unwrap().packets, expected);
        assert!(report.imbalance().packets >= 1.0);
        assert!(report.to_string().contains("conservation: in "));
    }
}

#[test]
fn a_build_error_is_returned() {
    let err = Workers::run(WorkersConfig::new(3), |w| {
        if w.id == 2 {
            Err("no table for worker 2".into())
        } else {
            graph(Some(1000), u64::MAX)
        }
    })
    .err()
    .unwrap();
    assert!(matches!(err, WorkerError::Build { worker: 2, .. }), "{err}");
    assert!(err.to_string().contains("no table for worker 2"));
}

#[test]
fn a_panicking_worker_stops_the_others_and_is_reported() {
    // worker 0 forwards without end; worker 1 panics after 5,000 packets: the caller gets
    // the panic as an error (the test would hang otherwise)
    let err = Workers::run(WorkersConfig::new(2), |w| {
        if w.id == 1 {
            graph(None, 5_000)
        } else {
            graph(None, u64::MAX)
        }
    })
    .err()
    .unwrap();
    match err {
        WorkerError::Panicked { worker, message } => {
            assert_eq!(worker, 1);
            assert!(message.contains("boom after"), "{message}");
        }
        e => panic!("expected a panic, got {e}"),
    }
}

#[test]
fn spawned_workers_stop_cleanly_with_nothing_in_flight() {
    let running = Workers::spawn(WorkersConfig::new(2), |_| graph(None, u64::MAX)).unwrap();
    running.wait_started();
    std::thread::sleep(Duration::from_millis(50));
    running.stop();
    let report = running.join().unwrap();
    let c = report.conservation();
    assert!(c.input > 0);
    assert!(c.is_balanced(), "{c}");
    assert_eq!(c.in_flight, 0);
    assert_eq!(c.buffers_in_use, 0);
}

#[test]
fn zero_workers_is_an_error() {
    assert!(matches!(
        Workers::run(WorkersConfig::new(0), |_| graph(Some(1), u64::MAX)),
        Err(WorkerError::NoWorkers)
    ));
}

#[test]
fn control_messages_reach_running_workers() {
    use pktvec_workers::runtime::Control;
    let running = Workers::spawn(WorkersConfig::new(2), |_| graph(None, u64::MAX)).unwrap();
    running.wait_started();
    assert_eq!(running.broadcast(|_| Control::VectorSize(32)), 2);
    assert!(running.send(1, Control::VectorSize(0))); // invalid: counted, the worker goes on
    assert!(!running.send(7, Control::SubBatch(4)));
    let (tx, rx) = std::sync::mpsc::channel();
    running.broadcast(|w| {
        let tx = tx.clone();
        Control::Apply(Box::new(move |g| {
            tx.send((w, g.config().vector_size)).unwrap();
        }))
    });
    let mut seen: Vec<(usize, usize)> = (0..2)
        .map(|_| rx.recv_timeout(Duration::from_secs(10)).unwrap())
        .collect();
    seen.sort();
    assert_eq!(seen, vec![(0, 32), (1, 32)]);
    running.stop();
    let report = running.join().unwrap();
    assert_eq!(report.workers[0].control_applied, 2);
    assert_eq!(report.workers[1].control_applied, 3);
    assert_eq!(report.workers[1].control_errors.len(), 1);
    assert!(report.workers[0].control_errors.is_empty());
    assert!(report.conservation().is_balanced());
}
