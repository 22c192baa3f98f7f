//! # pktvec-model
//!
//! The seeds' two overhead models as typed functions, a machine probe, calibration from
//! measured runs, prediction, and an online tuner.
//!
//! * [`probe`]: cache line and cache sizes (sysfs), TSC rate, memory latency (pointer
//!   chase) and memory-level parallelism (several chases at once).
//! * [`batching`]: what vectors and sub-batches save, per node: per-packet cost
//!   Θ(B, b) = Δcompute(B) + Δstall(b)/b with Δcompute(B) = Δshared/B + Δnecessary and
//!   Δstall/B = Δfetch − Δhide/B, plus the sub-batch's own cost Δsub·(b − 1) that Δhide
//!   does not offset on cache-resident tables, and throughput = min(c, f_mem, f_dma).
//! * [`ppb`]: what batching by path saves (the path-batcher model): O_node = s·B_i + I + D, I = ⌈P/L⌉·A_M·W,
//!   D = k·⌈64/L⌉·A_M·W, O_vec, O_total; expected paths per vector for a traffic mix; I1
//!   and D1 misses per packet with and without the path batcher
//!   ([`ppb::misses_per_packet`]); cycles per packet with the batcher off or at a batch
//!   size for a path mix, calibrated per node ([`ppb::BatchedGraph`]: per call, per
//!   packet, per packet of a vector that splits into paths there).
//! * [`icache`]: I1 misses from the code lines a calibration run executed (owner node,
//!   runs per call and per packet) on a set-associative LRU cache: each line's touches per
//!   packet from its node's calls and packets, misses where a set holds more lines touched
//!   between two touches than it has ways; or the calls replayed in dispatch order through
//!   an exact LRU ([`icache::TraceReplay`]).
//! * [`calibrate`]: least-squares fits of those parameters from (vector size, sub-batch,
//!   cycles per packet) measurements, and of the miss parameters from cachegrind
//!   figures, serde-storable.
//! * [`tuner`]: picks (B, b) from a calibration, and re-decides online with bounded
//!   exploration when live cycles per packet drift from the prediction or the traffic
//!   profile (node shares of packets and cycles) changes; [`tuner::BatchTuner`] picks the
//!   path batcher's setting (off or a batch size) for the path mix and re-decides when
//!   the mix changes.
//!
//! ```
//! use pktvec_model::batching::{Compute, Stall, Node};
//! let lookup = Node { compute: Compute { delta_shared: 2000.0, delta_necessary: 20.0, delta_cache: 0.0 },
//!                     stall: Stall { delta_fetch: 60.0, delta_hide: 50.0, delta_sub: 0.0, hide_span: 0.0 } };
//! // Vectors of 256, sub-batches of 32: 2000/256 + 20 + (60 - 50·31/32) cycles per packet.
//! let c = lookup.cycles_per_packet(256, 32);
//! assert!((c - (2000.0 / 256.0 + 20.0 + 60.0 - 50.0 * 31.0 / 32.0)).abs() < 1e-9);
//! ```
#![warn(missing_docs)]

pub mod batching;
pub mod calibrate;
pub mod icache;
pub mod ppb;
pub mod probe;
pub mod tuner;
