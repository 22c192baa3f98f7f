//! l2fwd on two workers over DPDK ports (net_null virtual devices, no hugepages, no PCI),
//! as the forwarders' `--workers 2 --dpdk "..."` runs it: each worker polls its own rx
//! queue and sends on its own tx queue of every port, with its own buffer pool over the one
//! mempool; RSS configured on the ports; conservation exact per worker; every mbuf back.
//! `cargo test --features dpdk --test dpdk_workers`.
#![cfg(feature = "dpdk")]

use pktvec::app::dpdk::DpdkPorts;
use pktvec::graph::{GraphBuilder, GraphConfig};
use pktvec::io::dpdk::RssConfig;
use pktvec::nodes::apps::l2fwd::{L2fwd, L2fwdConfig};
use pktvec::workers::runtime::{Workers, WorkersConfig};

#[test]
fn l2fwd_on_two_workers_over_null_ports() {
    let cores = std::thread::available_parallelism().unwrap();
    let eal = format!(
        "--no-huge -m 512 --no-pci --no-shconf --file-prefix=pktvec-app-workers-{} -l 0 \
         --log-level=lib.eal:error --vdev=net_null0 --vdev=net_null1",
        std::process::id()
    );
    let ports = DpdkPorts::for_workers(&eal, 8192, 2, RssConfig::symmetric()).unwrap();
    // The EAL pinned the thread that initialised it, not this one: the workers get cores.
    assert_eq!(std::thread::available_parallelism().unwrap(), cores);
    assert_eq!((ports.ports().len(), ports.workers()), (2, 2));
    assert_eq!(ports.worker_id(), None);
    let e = ports.worker(2).unwrap_err().to_string();
    assert!(e.contains("no queues for worker 2"), "{e}");
    for p in ports.ports() {
        assert!(p.rss_active() && p.rss().key.as_deref() == Some(&RssConfig::symmetric().key[..]));
    }
    const N: u64 = 30_000;
    let shared = ports.clone();
    let cfg = WorkersConfig {
        pin: false,
        ..WorkersConfig::new(2)
    };
    let report = Workers::run(cfg, move |w| {
        let mine = shared.worker(w.id).map_err(|e| e.to_string())?;
        assert_eq!(mine.worker_id(), Some(w.id));
        let app = L2fwd::new(L2fwdConfig {
            ports: 2,
            table_size: 64,
            ..L2fwdConfig::default()
        })?;
        let mut b = GraphBuilder::new(GraphConfig::default());
        mine.input(N).add_to(&mut b, "input", app.entry());
        let nodes = app.add_to(&mut b);
        mine.output().add_to(&mut b, &nodes.output_to_tx.to);
        Ok(b.build(mine.pool().map_err(|e| e.to_string())?)?)
    })
    .unwrap();
    for w in &report.workers {
        let c = &w.conservation;
        assert!(
            c.is_balanced() && c.buffers_in_use == 0,
            "worker {}: {c}",
            w.worker
        );
        // net_null's frames are all zeros: an unknown destination, flooded out of the one
        // other port.
        assert_eq!((c.input, c.output, c.dropped), (N, N, 0), "{c}");
        for node in ["input", "input-1"] {
            assert_eq!(w.runtime.row(node).unwrap().packets, N / 2, "{node}");
        }
    }
    for r in ports.port_reports() {
        assert_eq!(r.queues.rx, vec![N / 2; 2], "{r}");
        assert_eq!(r.queues.tx, vec![N / 2; 2], "{r}");
        let text = r.to_string();
        assert!(
            text.ends_with(&format!(
                "| rx queues {h} {h}, tx queues {h} {h}, RSS on: fields 0x3afbc, symmetric key, \
                 RETA of 128 entries over the rx queues",
                h = N / 2
            )),
            "{text}"
        );
        assert_eq!(r.to_json()["queues"]["rx"][1], N / 2);
    }
    let mempool = ports.mempool().clone();
    drop(ports);
    assert_eq!(mempool.available(), mempool.capacity(), "no mbuf leaked");
}
