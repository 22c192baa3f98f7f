//! l2fwd and l3fwd through real DPDK ports (net_pcap virtual devices, no hugepages, no
//! PCI): the captures they write equal, packet for packet, what the pure-Rust pcap path
//! writes for the same input; conservation holds from the ports' counters through the
//! graph's drops; no mbuf leaks. `cargo test --features dpdk --test dpdk_apps`.
#![cfg(feature = "dpdk")]

#[path = "../nodes/tests/apps_common/mod.rs"]
mod apps_common;

use apps_common::{run_through_pcaps, write_inputs, TestDir};
use pktvec::batcher::{Batcher, BatcherConfig, BatcherNext};
use pktvec::graph::{GraphBuilder, GraphConfig};
use pktvec::io::capture::read_capture;
use pktvec::io::dpdk::{DpdkRx, DpdkRxNext, DpdkTx, Eal, Mempool, Port, PortConfig};
use pktvec::io::generator::Generator;
use pktvec::io::profile::TrafficProfile;
use pktvec::lookup::routes::{generate_ipv4, generate_ipv6};
use pktvec::nodes::apps::l2fwd::{L2fwd, L2fwdConfig};
use pktvec::nodes::apps::l3fwd::{L3fwd, L3fwdConfig};
use pktvec::packet::PoolConfig;
use std::sync::Mutex;

const PORTS: usize = 4;
static DPDK: Mutex<()> = Mutex::new(());

fn eal() -> Eal {
    Eal::init(&format!(
        "--no-huge -m 512 --no-pci --no-shconf --file-prefix=pktvec-apps-{} -l 0 --log-level=lib.eal:error",
        std::process::id()
    ))
    .unwrap()
}

/// Runs the forwarder built by `add` twice over the same per-port input: through
/// `PcapSource`s and pcap sinks, then through one net_pcap port per interface; checks the
/// outputs are identical and everything is accounted for. With `batched`, each DPDK rx
/// queue feeds a path batcher (`Batcher<DpdkRx>`) instead of being a node itself: the
/// batcher reorders packets by path, so each port's output is compared as a multiset.
fn same_through_dpdk(
    name: &str,
    per_port: Vec<Vec<Vec<u8>>>,
    entry: &str,
    batched: bool,
    add: impl Fn(&mut GraphBuilder) -> String,
) {
    let _g = DPDK.lock().unwrap_or_else(|e| e.into_inner());
    let dir = TestDir::new(&format!("dpdk-{name}"));
    let (g, reference) = run_through_pcaps(
        &dir,
        &per_port,
        256,
        PoolConfig {
            buffers: 4096,
            ..PoolConfig::default()
        },
        entry,
        PORTS,
        &add,
    );
    let ref_errors = apps_common::drops(&g);
    let forwarded: usize = reference.iter().map(Vec::len).sum();
    assert!(
        forwarded > 1000,
        "{name}: the reference forwards most packets ({forwarded})"
    );
    drop(g);

    let eal = eal();
    let inputs = write_inputs(&dir, &per_port);
    let mempool = Mempool::new(&eal, 4096, 2048).unwrap();
    let outs: Vec<_> = (0..PORTS)
        .map(|p| dir.path(&format!("dpdk-out-port{p}.pcap")))
        .collect();
    {
        let ports: Vec<_> = (0..PORTS)
            .map(|p| {
                let id = eal
                    .attach(&format!(
                        "net_pcap_{name}{p},rx_pcap={},tx_pcap={}",
                        inputs[p].display(),
                        outs[p].display()
                    ))
                    .unwrap();
                Port::start(&eal, id, &mempool, &PortConfig::default()).unwrap()
            })
            .collect();
        let mut b = GraphBuilder::new(GraphConfig::default());
        for (i, p) in ports.iter().enumerate() {
            let rx = format!("rx{i}");
            let node = DpdkRx::new(p, 0).with_rx_interface(i as u16);
            if batched {
                let cfg = BatcherConfig {
                    batch_size: 64,
                    max_queues: 4,
                    epoch_packets: 500,
                    ..BatcherConfig::default()
                };
                b.add(&rx, Batcher::new(node, cfg))
                    .set_next(&rx, BatcherNext::Out, entry)
                    .set_next(&rx, BatcherNext::Ip4, entry)
                    .set_next(&rx, BatcherNext::Ip6, entry);
            } else {
                b.add(&rx, node).set_next(&rx, DpdkRxNext::Out, entry);
            }
        }
        let tx = add(&mut b);
        let queues: Vec<_> = ports.iter().map(|p| (p.clone(), 0)).collect();
        b.add(&tx, DpdkTx::by_interface(&queues));
        let mut g = b.build(mempool.buffer_pool().unwrap()).unwrap();
        g.run_until_idle();
        let c = g.conservation();
        assert!(c.is_balanced() && c.buffers_in_use == 0, "{c}");
        let sent: usize = per_port.iter().map(Vec::len).sum();
        assert_eq!(c.input, sent as u64);
        let st: Vec<_> = ports.iter().map(|p| p.stats()).collect();
        assert_eq!(
            st.iter().map(|s| s.ipackets).sum::<u64>(),
            c.input,
            "port rx counters = graph input"
        );
        assert_eq!(
            st.iter().map(|s| s.opackets).sum::<u64>(),
            c.output,
            "port tx counters = graph output"
        );
        assert_eq!(
            apps_common::drops(&g),
            ref_errors,
            "same drops by (node, reason)"
        );
        if batched {
            // Every received packet went through a batcher's path queues.
            let classified: u64 = (0..PORTS)
                .filter_map(|i| g.node::<Batcher<DpdkRx>>(&format!("rx{i}")).ok())
                .flat_map(|bt| bt.stats().path_packets)
                .map(|(_, n)| n)
                .sum();
            assert_eq!(
                classified, c.input,
                "{name}: all classified by the batchers"
            );
        }
        drop(g);
    } // ports closed: tx pcaps flushed, rx rings emptied
    assert_eq!(mempool.available(), mempool.capacity(), "no mbuf leaked");
    for p in 0..PORTS {
        let mut got = read_capture(&outs[p]).unwrap().packets;
        assert_eq!(
            got.len(),
            reference[p].len(),
            "{name} port {p}: packet count"
        );
        if batched {
            let mut want = reference[p].clone();
            want.sort();
            got.sort();
            assert!(got == want, "{name} port {p}: same packets");
            continue;
        }
        for (k, (a, b)) in got.iter().zip(&reference[p]).enumerate() {
            assert_eq!(a, b, "{name} port {p}, packet {k}");
        }
    }
}

fn traffic(seed: u64, extra: &str) -> TrafficProfile {
    TrafficProfile::from_toml(&format!(
        "seed = {seed}\n[mix]\nipv4 = 4.0\nipv6 = 2.0\narp = 0.3\nndn = 0.2\nunknown_ethertype = 0.2\nmalformed = 1.5\nvlan = 0.2\nqinq = 0.1\n[flows]\ncount = 300\n[sizes]\nuniform = {{ min = 64, max = 1514 }}\n{extra}"
    ))
    .unwrap()
}

fn split(all: Vec<Vec<u8>>, rx_ports: usize) -> Vec<Vec<Vec<u8>>> {
    let mut per_port = vec![Vec::new(); PORTS];
    for (i, f) in all.into_iter().enumerate() {
        per_port[i % rx_ports].push(f);
    }
    per_port
}

#[test]
fn l3fwd_over_net_pcap_equals_the_pcap_path() {
    let mut r4 = generate_ipv4(2000, 7);
    r4.retain(|r| r.len > 0);
    let r6 = generate_ipv6(300, 8);
    let app = L3fwd::with_routes(
        L3fwdConfig {
            ports: PORTS as u16,
            ..L3fwdConfig::default()
        },
        r4.clone(),
        r6.clone(),
    )
    .unwrap();
    let profile = traffic(
        7,
        "[destinations]\nipv4_hit_rate = 0.85\nipv6_hit_rate = 0.85",
    );
    let mut gen = Generator::builder(profile)
        .ipv4_prefixes(r4.iter().map(|r| (r.addr, r.len)).collect())
        .ipv6_prefixes(r6.iter().map(|r| (r.addr, r.len)).collect())
        .build()
        .unwrap();
    let all: Vec<Vec<u8>> = (0..3000).map(|_| gen.next_packet().1.to_vec()).collect();
    same_through_dpdk("l3", split(all.clone(), 2), app.entry(), false, |b| {
        app.add_to(b).output_to_tx.to
    });
    // The same with a path batcher polling each DPDK rx queue.
    same_through_dpdk("l3b", split(all, 2), app.entry(), true, |b| {
        app.add_to(b).output_to_tx.to
    });
}

#[test]
fn l2fwd_over_net_pcap_equals_the_pcap_path() {
    let profile = traffic(9, &format!("[l2]\nhosts = 64\nports = {PORTS}"));
    let mut gen = Generator::builder(profile).build().unwrap();
    let all: Vec<Vec<u8>> = (0..3000).map(|_| gen.next_packet().1.to_vec()).collect();
    // A fresh app (and so an empty MAC table) for each run.
    let make = || {
        L2fwd::new(L2fwdConfig {
            ports: PORTS as u16,
            table_size: 64,
            ..L2fwdConfig::default()
        })
        .unwrap()
    };
    let entry = make().entry().to_string();
    same_through_dpdk("l2", split(all, PORTS), &entry, false, |b| {
        make().add_to(b).output_to_tx.to
    });
}
