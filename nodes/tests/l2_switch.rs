//! The L2 switch (l2-learn → l2-forward → interface-output) against an independent model:
//! a plain map of learned stations, updated packet by packet.

use pktvec_graph::{Context, Frame, GraphBuilder, GraphConfig, NoError, NoNext, Node, NodeKind};
use pktvec_nodes::l2::{L2Fib, L2Forward, L2Learn, UnknownUnicast};
use pktvec_nodes::output::{InterfaceOutput, OutputNext};
use pktvec_packet::{BufferPool, PoolConfig};
use std::collections::HashMap;

#[derive(Default)]
struct Recorder(Vec<(u16, Vec<u8>)>);
impl Node for Recorder {
    type Next = NoNext;
    type Error = NoError;
    const KIND: NodeKind = NodeKind::Sink;
    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        for &bi in frame.buffers() {
            self.0
                .push((cx.pool().meta(bi).tx_if, cx.pool().data(bi).to_vec()));
        }
        cx.free_frame(frame);
    }
}

fn mac(i: u8) -> [u8; 6] {
    [2, 0, 0, 0, 0, i]
}

fn frame(src: u8, dst: [u8; 6], tag: u8) -> Vec<u8> {
    let mut f = dst.to_vec();
    f.extend_from_slice(&mac(src));
    f.extend_from_slice(&[0x88, 0xb5, tag]);
    f.resize(60, 0);
    f
}

pktvec_graph::next_nodes! {
    /// Arc of the test source.
    pub enum SrcNext { Out = "l2-learn" }
}

/// Emits the frames in order; each arrives on its source station's interface (i % ports).
struct Stations {
    frames: Vec<Vec<u8>>,
    pos: usize,
    ports: u16,
}

impl Node for Stations {
    type Next = SrcNext;
    type Error = NoError;
    const KIND: NodeKind = NodeKind::Input;
    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        let n = cx.vector_size().min(self.frames.len() - self.pos);
        let got = cx.alloc_into(frame, n);
        for k in 0..got {
            let bi = frame.buffers()[k];
            let f = &self.frames[self.pos];
            self.pos += 1;
            let mut p = cx.packet_mut(bi);
            p.append(f.len()).unwrap().copy_from_slice(f);
            p.meta_mut().rx_if = f[11] as u16 % self.ports;
        }
        cx.enqueue_all(frame, SrcNext::Out);
    }
}

#[test]
fn switch_matches_the_model() {
    const PORTS: u16 = 3;
    // Station i is behind interface i % 3; frames go between random stations, some to the
    // broadcast address, some to stations not yet learned.
    let mut seq = Vec::new();
    let mut x: u32 = 12345;
    for k in 0..3000u32 {
        x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
        let src = (x >> 8) as u8 % 40;
        let dst = if k % 17 == 0 {
            [0xff; 6]
        } else {
            mac((x >> 20) as u8 % 48)
        };
        seq.push((src, dst, (k % 251) as u8));
    }
    for (vector_size, policy) in [
        (256, UnknownUnicast::Flood),
        (7, UnknownUnicast::Drop),
        (1, UnknownUnicast::Flood),
    ] {
        let fib = L2Fib::with_capacity(64).unwrap();
        let mut b = GraphBuilder::new(GraphConfig {
            vector_size,
            ..GraphConfig::default()
        });
        b.add(
            "stations",
            Stations {
                frames: seq.iter().map(|&(s, d, t)| frame(s, d, t)).collect(),
                pos: 0,
                ports: PORTS,
            },
        );
        b.add("l2-learn", L2Learn::new(fib.clone()))
            .add("l2-forward", L2Forward::new(fib.clone(), PORTS, policy))
            .add("interface-output", InterfaceOutput::new(PORTS as usize))
            .add("tx", Recorder::default())
            .set_next("interface-output", OutputNext::Tx, "tx");
        let mut g = b
            .build(
                BufferPool::new(PoolConfig {
                    buffers: 4096,
                    ..PoolConfig::default()
                })
                .unwrap(),
            )
            .unwrap();
        g.run_until_idle();

        // The model: per vector, every source station is learned (l2-learn runs on the
        // whole vector before l2-forward sees it), then every frame is forwarded.
        let mut learned: HashMap<[u8; 6], u16> = HashMap::new();
        let mut want: Vec<(u16, Vec<u8>)> = Vec::new();
        let mut filtered = 0u64;
        let mut unknown = 0u64;
        for vec in seq.chunks(vector_size) {
            for &(s, _, _) in vec {
                learned.insert(mac(s), s as u16 % PORTS);
            }
            for &(s, d, t) in vec {
                let rx = s as u16 % PORTS;
                match learned.get(&d).copied().filter(|_| d[0] & 1 == 0) {
                    Some(port) if port == rx => filtered += 1,
                    Some(port) => want.push((port, frame(s, d, t))),
                    None if d[0] & 1 == 0 && policy == UnknownUnicast::Drop => unknown += 1,
                    None => {
                        for q in (0..PORTS).filter(|&q| q != rx) {
                            want.push((q, frame(s, d, t)));
                        }
                    }
                }
            }
        }
        let mut got = g.node::<Recorder>("tx").unwrap().0.clone();
        got.sort();
        want.sort();
        assert_eq!(got.len(), want.len(), "V={vector_size} {policy:?}");
        assert_eq!(got, want, "V={vector_size} {policy:?}");
        let e = g.errors();
        assert_eq!(
            e.count("l2-forward", "destination on the receiving interface"),
            filtered
        );
        assert_eq!(e.count("l2-forward", "unknown unicast"), unknown);
        assert_eq!(g.pool().in_use(), 0);
        // The flood copies are made by l2-forward: counted as created, so conservation is
        // exact with them.
        let c = g.conservation();
        assert!(c.is_balanced() && c.in_flight == 0, "{c}");
        let copies = want.len() as u64 - (seq.len() as u64 - filtered - unknown);
        assert_eq!(c.created, copies, "V={vector_size} {policy:?}");
        assert_eq!(g.created().count("l2-forward", "flood copy"), copies);
        assert_eq!(g.runtime().row("l2-forward").unwrap().created, copies);
    }
}

/// Broadcast frames flooded through switches of 1 to 8 interfaces with only `SLACK` free
/// buffers for the copies: the copies that find no buffer are counted drops ("flood copy: no
/// buffer"), every copy attempted is counted as created, and conservation is exact.
#[test]
fn flooding_with_the_pool_nearly_empty_counts_every_copy() {
    const FRAMES: u32 = 20;
    const SLACK: u32 = 5;
    for ports in 1..=8u16 {
        let fib = L2Fib::with_capacity(64).unwrap();
        let mut b = GraphBuilder::new(GraphConfig::default());
        b.add(
            "l2-forward",
            L2Forward::new(fib, ports, UnknownUnicast::Flood),
        )
        .add("interface-output", InterfaceOutput::new(ports as usize))
        .add("tx", Recorder::default())
        .set_next("interface-output", OutputNext::Tx, "tx");
        let pool = BufferPool::new(PoolConfig {
            buffers: FRAMES + SLACK,
            ..PoolConfig::default()
        })
        .unwrap();
        let mut g = b.build(pool).unwrap();
        let bis: Vec<u32> = (0..FRAMES)
            .map(|k| {
                let bi = g
                    .pool_mut()
                    .alloc_with(&frame(1, [0xff; 6], k as u8))
                    .unwrap();
                g.pool_mut().meta_mut(bi).rx_if = 0;
                bi
            })
            .collect();
        let fwd = g.node_id("l2-forward").unwrap();
        assert!(g.inject(fwd, &bis));
        g.dispatch_pending();

        // Each frame goes out of every interface but interface 0: the original out of the
        // first, a copy out of each further one.
        let wanted = u64::from(ports.saturating_sub(2)) * u64::from(FRAMES);
        let made = wanted.min(u64::from(SLACK));
        let c = g.conservation();
        assert!(c.is_balanced() && c.in_flight == 0, "ports {ports}: {c}");
        assert_eq!(c.created, wanted, "ports {ports}: {c}");
        assert_eq!(
            c.dropped_without_buffer,
            wanted - made,
            "ports {ports}: {c}"
        );
        let e = g.errors();
        assert_eq!(
            e.count("l2-forward", "flood copy: no buffer"),
            wanted - made
        );
        let no_target = if ports == 1 { u64::from(FRAMES) } else { 0 };
        assert_eq!(e.count("l2-forward", "no interface to flood to"), no_target);
        let sent = g.node::<Recorder>("tx").unwrap().0.len() as u64;
        assert_eq!(sent, u64::from(FRAMES) - no_target + made, "ports {ports}");
        assert_eq!(c.output, sent);
        assert!(g
            .node::<Recorder>("tx")
            .unwrap()
            .0
            .iter()
            .all(|(q, _)| *q != 0 && *q < ports));
        assert_eq!(g.pool().in_use(), 0, "ports {ports}: every buffer back");
        assert_eq!(g.pool().double_frees(), 0);
    }
}
