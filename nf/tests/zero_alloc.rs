//! Every NF's per-packet code makes no heap allocation in steady state.
//!
//! A counting global allocator wraps the system allocator. Each NF's worker side is
//! driven directly over its own generated traffic (a first pass warms it: tables filled,
//! stacks at their working size), then a second pass over the same traffic, with the
//! expiry sweeps, must not allocate, reallocate or free once. The count is per thread.

use pktvec_nf::runtime::{Nf, NfWorker};
use pktvec_nf::{classifier, dhcpd, intruder, nat};
use pktvec_packet::{BufferMeta, PacketMut};
use pktvec_state::{Domain, Strategy, SyncConfig};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::Arc;

struct Counting;
thread_local! {
    /// Allocator calls made by this thread (const-initialised: reading it never allocates).
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}

fn count() {
    let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
}

fn allocs() -> u64 {
    ALLOCS.with(Cell::get)
}

// SAFETY: forwards every call unchanged to the system allocator; only counts them.
unsafe impl GlobalAlloc for Counting {
    // SAFETY: (trait contract) callers pass a valid non-zero-size layout, as to System.
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        count();
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(l) }
    }
    // SAFETY: (trait contract) `p` came from this allocator with layout `l`.
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        count();
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(p, l) }
    }
    // SAFETY: (trait contract) `p` came from this allocator with layout `l`, `n` > 0.
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        count();
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(p, l, n) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Headroom before each frame in its buffer, and the buffer's size.
const HEADROOM: usize = 128;
const BUF: usize = 2048 + HEADROOM;

/// Runs `w` over `frames` `passes` times (each frame copied into one preallocated buffer,
/// as a pool would hand it), the expiry sweeps after every 256 packets; returns the
/// allocator calls of the last pass.
fn drive<W: NfWorker>(w: &mut W, frames: &[Vec<u8>], passes: usize) -> u64 {
    let mut buf = vec![0u8; BUF];
    let mut meta = BufferMeta::default();
    let mut last = 0;
    for _ in 0..passes {
        let before = allocs();
        for (i, f) in frames.iter().enumerate() {
            let n = f.len().min(BUF - HEADROOM);
            buf[HEADROOM..HEADROOM + n].copy_from_slice(&f[..n]);
            meta.data_offset = HEADROOM as u16;
            meta.len = n as u16;
            let now = pktvec_graph::clock::now();
            let _ = w.packet(&mut PacketMut::new(&mut meta, &mut buf), now);
            if i % 256 == 255 {
                w.after_vector(now);
            }
        }
        last = allocs() - before;
    }
    last
}

/// The packets reached the state: nearly every one ran a section (the traffic's
/// malformed frames excepted).
fn worked<W: NfWorker>(w: &mut W, packets: usize) {
    let sections = w.sync().stats().sections as usize;
    assert!(
        sections * 10 >= packets * 9,
        "{sections} sections for {packets} packets"
    );
}

fn domain(stripes: usize) -> Arc<Domain> {
    Domain::new(SyncConfig {
        strategy: Strategy::Fine,
        workers: 1,
        stripes,
        ..SyncConfig::default()
    })
    .unwrap()
}

#[test]
fn nat_allocates_nothing_per_packet() {
    let nat = Arc::new(nat::Nat::new(domain(256), nat::NatConfig::default()).unwrap());
    let inside = nat::NatTraffic::new(2000, 7).frames(0, 20_000);
    let mut w = nat.worker(0);
    drive(&mut w, &inside, 1);
    // both directions: the replies to the sessions the first pass made
    let mut frames = inside.clone();
    frames.extend(nat::NatTraffic::replies(&w.sessions(), 1));
    assert_eq!(drive(&mut w, &frames, 2), 0);
    worked(&mut w, inside.len() + 2 * frames.len());
}

#[test]
fn classifier_allocates_nothing_per_packet() {
    let d = domain(1024);
    let c =
        Arc::new(classifier::Classifier::new(&d, classifier::ClassifierConfig::default()).unwrap());
    let t = classifier::generate(
        &classifier::TrafficConfig {
            packets: 20_000,
            ..Default::default()
        },
        0,
    );
    let mut w = c.worker(0);
    assert_eq!(drive(&mut w, &t.frames, 2), 0);
    worked(&mut w, 2 * t.frames.len());
}

#[test]
fn intruder_allocates_nothing_per_packet() {
    let d = domain(1024);
    let i = Arc::new(intruder::Intruder::new(&d, intruder::IntruderConfig::default()).unwrap());
    let t = intruder::generate(&intruder::TrafficConfig {
        packets: 20_000,
        ..Default::default()
    });
    let mut w = i.worker(0);
    assert_eq!(drive(&mut w, &t.frames, 2), 0);
    worked(&mut w, 2 * t.frames.len());
}

#[test]
fn dhcpd_allocates_nothing_per_packet() {
    let d = domain(256);
    let cfg = dhcpd::DhcpConfig::default();
    let server = Arc::new(dhcpd::Dhcpd::new(&d, cfg.clone()));
    let t = dhcpd::TrafficConfig {
        packets: 20_000,
        ..Default::default()
    };
    let frames = dhcpd::traffic(&t, &cfg, 256, 0, 1);
    let mut w = server.worker(0);
    assert_eq!(drive(&mut w, &frames, 2), 0);
    worked(&mut w, 2 * frames.len());
}
