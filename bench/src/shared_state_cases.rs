//! The four NFs as `shared-state` drives them: how each is made, its traffic (each
//! worker's own, seeded by the worker), and the seed's figures for it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use pktvec::nf::runtime::Nf;
use pktvec::nf::{classifier, dhcpd, intruder, nat};
use pktvec::state::{Domain, Strategy, SyncConfig};

use crate::shared_state::{profile, search, Case, Frames, Setup};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// NAT traffic: the inside packets a session's reply comes after (a round trip).
const RTT_PACKETS: usize = 64;

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

/// Each worker count's traffic, generated once (every run of a search uses a fresh NF but
/// the same frames).
type Cache<T> = Mutex<HashMap<usize, T>>;

fn cached<T: Clone>(cache: &Cache<T>, workers: usize, make: impl FnOnce() -> T) -> T {
    let mut c = cache.lock().unwrap_or_else(|e| e.into_inner());
    c.entry(workers).or_insert_with(make).clone()
}

/// The NAT key of an inside frame the NAT's traffic generator made (Ethernet, IPv4 without
/// options' surprises: the header length is read).
fn in_key(f: &[u8]) -> Option<nat::InKey> {
    let ip = f.get(14..34)?;
    let l4 = 14 + usize::from(ip[0] & 15) * 4;
    let word =
        |at: usize| -> Option<u16> { Some(u16::from_be_bytes([*f.get(at)?, *f.get(at + 1)?])) };
    let (sport, dport) = match ip[9] {
        1 => (word(l4 + 4)?, 0),
        _ => (word(l4)?, word(l4 + 2)?),
    };
    Some(nat::InKey {
        src: u32::from_be_bytes([ip[12], ip[13], ip[14], ip[15]]),
        dst: u32::from_be_bytes([ip[16], ip[17], ip[18], ip[19]]),
        sport,
        dport,
        proto: ip[9],
    })
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
            let cache: Cache<Arc<Vec<Vec<Vec<u8>>>>> = Mutex::default();
            let setup: Arc<Setup<nat::Nat>> = Arc::new(move |strategy, workers| {
                let nat = Arc::new(nat::Nat::new(
                    domain(strategy, workers, 256)?,
                    nat::NatConfig::default(),
                )?);
                let inside = cached(&cache, workers, || {
                    let traffic = nat::NatTraffic::new(2000, 1);
                    Arc::new(
                        (0..workers)
                            .map(|w| traffic.frames(w, FRAMES / 2))
                            .collect(),
                    )
                });
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
                // the replies name the ports this NAT gave out: made for each fresh one; each
                // inside packet is answered by a reply of its session a round trip later
                let replies: HashMap<nat::InKey, Vec<u8>> = (0..workers)
                    .flat_map(|w| nat.worker(w).sessions())
                    .filter_map(|s| {
                        let r = nat::NatTraffic::replies(std::slice::from_ref(&s), 1);
                        r.into_iter().next().map(|f| (s.key, f))
                    })
                    .collect();
                let frames: Frames = inside
                    .iter()
                    .map(|ins| {
                        let mut mixed = Vec::with_capacity(2 * ins.len());
                        let mut in_flight = std::collections::VecDeque::new();
                        for f in ins {
                            mixed.push(f.clone());
                            if let Some(r) = in_key(f).and_then(|k| replies.get(&k)) {
                                in_flight.push_back(r.clone());
                            }
                            if in_flight.len() > RTT_PACKETS {
                                mixed.extend(in_flight.pop_front());
                            }
                        }
                        mixed.extend(in_flight);
                        Arc::new(mixed)
                    })
                    .collect();
                Ok((nat, frames))
            });
            Ok(case_of("nat", 1.06, 0.67, setup, nat::flow_id))
        }
        "classifier" => {
            let cache: Cache<Frames> = Mutex::default();
            let setup: Arc<Setup<classifier::Classifier>> = Arc::new(move |strategy, workers| {
                let d = domain(strategy, workers, 1024)?;
                let c = Arc::new(classifier::Classifier::new(
                    &d,
                    classifier::ClassifierConfig::default(),
                )?);
                let frames = cached(&cache, workers, || {
                    (0..workers)
                        .map(|w| {
                            let cfg = classifier::TrafficConfig {
                                packets: FRAMES,
                                ..Default::default()
                            };
                            Arc::new(classifier::generate(&cfg, w).frames)
                        })
                        .collect()
                });
                Ok((c, frames))
            });
            Ok(case_of("classifier", 1.57, 0.78, setup, |f| {
                classifier::FlowKey::of_frame(f).map(|k| k.hash())
            }))
        }
        "intruder" => {
            let cache: Cache<Frames> = Mutex::default();
            let setup: Arc<Setup<intruder::Intruder>> = Arc::new(move |strategy, workers| {
                let d = domain(strategy, workers, 1024)?;
                let i = Arc::new(intruder::Intruder::new(
                    &d,
                    intruder::IntruderConfig::default(),
                )?);
                let frames = cached(&cache, workers, || {
                    let t = intruder::generate(&intruder::TrafficConfig {
                        packets: FRAMES * workers,
                        ..Default::default()
                    });
                    t.split(workers).into_iter().map(Arc::new).collect()
                });
                Ok((i, frames))
            });
            Ok(case_of("intruder", 0.92, 0.97, setup, intruder::frame_flow))
        }
        "dhcpd" => {
            let cache: Cache<Frames> = Mutex::default();
            let setup: Arc<Setup<dhcpd::Dhcpd>> = Arc::new(move |strategy, workers| {
                let stripes = 256;
                let d = domain(strategy, workers, stripes)?;
                let cfg = dhcpd::DhcpConfig::default();
                let server = Arc::new(dhcpd::Dhcpd::new(&d, cfg.clone()));
                let frames = cached(&cache, workers, || {
                    let t = dhcpd::TrafficConfig {
                        packets: FRAMES,
                        ..Default::default()
                    };
                    (0..workers)
                        .map(|w| Arc::new(dhcpd::traffic(&t, &cfg, stripes, w, workers)))
                        .collect()
                });
                Ok((server, frames))
            });
            Ok(case_of("dhcpd", 1.54, 0.79, setup, dhcpd::flow_of))
        }
        other => Err(format!("{other}: not an NF this tool drives").into()),
    }
}
