//! The four NFs as `shared-state` drives them: how each is made, its traffic (each
//! worker's own, seeded by the worker), and the seed's figures for it.

use std::sync::Arc;

use pktvec::nf::runtime::Nf;
use pktvec::nf::{classifier, dhcpd, intruder, nat};
use pktvec::state::{Domain, Strategy, SyncConfig};

use crate::shared_state::{profile, search, Case, Frames, Setup};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// Frames per worker in each NF's traffic.
const FRAMES: usize = 100_000;

fn domain(strategy: Strategy, workers: usize, stripes: usize) -> Res<Arc<Domain>> {
    Ok(Domain::new(SyncConfig {
        strategy,
        workers,
        stripes,
        ..SyncConfig::default()
    })?)
}

/// Wraps an NF's setup as a [`Case`].
fn case_of<N: Nf>(
    name: &'static str,
    seed_tm_gain: f64,
    seed_commit: f64,
    setup: Arc<Setup<N>>,
    flow: fn(&[u8]) -> Option<u64>,
) -> Case {
    let s1 = setup.clone();
    Case {
        name,
        seed_tm_gain,
        seed_commit,
        fig7: Box::new(move |strategy, workers, cfg| search(&*s1, strategy, workers, cfg)),
        fig1: Box::new(move |packets| profile(&*setup, flow, packets)),
    }
}

/// The case of NF `name` (seed Fig. 7 and §6.2: TM over locks NAT +6%, Classifier +57%,
/// Intruder2 −8%, UDHCP +54%; commit rates 67/78/97/79%).
pub fn case(name: &str) -> Res<Case> {
    match name {
        "nat" => {
            // inside traffic and, after a first pass made the sessions, the outside's
            // replies to them: both directions, one for one
            let setup: Arc<Setup<nat::Nat>> = Arc::new(|strategy, workers| {
                let nat = Arc::new(nat::Nat::new(
                    domain(strategy, workers, 256)?,
                    nat::NatConfig::default(),
                )?);
                let traffic = nat::NatTraffic::new(2000, 1);
                let inside: Vec<Vec<Vec<u8>>> = (0..workers)
                    .map(|w| traffic.frames(w, FRAMES / 2))
                    .collect();
                let first = {
                    let f: Frames = inside.iter().cloned().map(Arc::new).collect();
                    let cfg = pktvec::nf::runtime::RunConfig {
                        packets_per_worker: (FRAMES / 2) as u64,
                        handoff_ring: 1 << 14,
                        ..Default::default()
                    };
                    pktvec::nf::runtime::run(&nat, move |w| f[w].clone(), &cfg)?
                };
                if first.counter("in2out") == 0 {
                    return Err("nat: the first pass translated nothing".into());
                }
                let sessions: Vec<_> = (0..workers)
                    .flat_map(|w| nat.worker(w).sessions())
                    .collect();
                let replies = nat::NatTraffic::replies(&sessions, 1);
                let frames: Frames = inside
                    .into_iter()
                    .enumerate()
                    .map(|(w, ins)| {
                        let back = replies.iter().skip(w).step_by(workers);
                        let mut mixed = Vec::with_capacity(FRAMES);
                        let mut back = back.cycle();
                        for f in ins {
                            mixed.push(f);
                            if let Some(b) = back.next() {
                                mixed.push(b.clone());
                            }
                        }
                        Arc::new(mixed)
                    })
                    .collect();
                Ok((nat, frames))
            });
            Ok(case_of("nat", 1.06, 0.67, setup, nat::flow_id))
        }
        "classifier" => {
            let setup: Arc<Setup<classifier::Classifier>> = Arc::new(|strategy, workers| {
                let d = domain(strategy, workers, 1024)?;
                let c = Arc::new(classifier::Classifier::new(
                    &d,
                    classifier::ClassifierConfig::default(),
                )?);
                let frames = (0..workers)
                    .map(|w| {
                        let cfg = classifier::TrafficConfig {
                            packets: FRAMES,
                            ..Default::default()
                        };
                        Arc::new(classifier::generate(&cfg, w).frames)
                    })
                    .collect();
                Ok((c, frames))
            });
            Ok(case_of("classifier", 1.57, 0.78, setup, |f| {
                classifier::FlowKey::of_frame(f).map(|k| k.hash())
            }))
        }
        "intruder" => {
            let setup: Arc<Setup<intruder::Intruder>> = Arc::new(|strategy, workers| {
                let d = domain(strategy, workers, 1024)?;
                let i = Arc::new(intruder::Intruder::new(
                    &d,
                    intruder::IntruderConfig::default(),
                )?);
                let t = intruder::generate(&intruder::TrafficConfig {
                    packets: FRAMES * workers,
                    ..Default::default()
                });
                let frames = t.split(workers).into_iter().map(Arc::new).collect();
                Ok((i, frames))
            });
            Ok(case_of("intruder", 0.92, 0.97, setup, intruder::frame_flow))
        }
        "dhcpd" => {
            let setup: Arc<Setup<dhcpd::Dhcpd>> = Arc::new(|strategy, workers| {
                let stripes = 256;
                let d = domain(strategy, workers, stripes)?;
                let cfg = dhcpd::DhcpConfig::default();
                let server = Arc::new(dhcpd::Dhcpd::new(&d, cfg.clone()));
                let t = dhcpd::TrafficConfig {
                    packets: FRAMES,
                    ..Default::default()
                };
                let frames = (0..workers)
                    .map(|w| Arc::new(dhcpd::traffic(&t, &cfg, stripes, w, workers)))
                    .collect();
                Ok((server, frames))
            });
            Ok(case_of("dhcpd", 1.54, 0.79, setup, dhcpd::flow_of))
        }
        other => Err(format!("{other}: not an NF this tool drives").into()),
    }
}
