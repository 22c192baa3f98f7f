//! # pktvec-state
//!
//! Shared state for stateful network functions on many workers (seed `004_*`): write the
//! NF once against one API, run it under any synchronisation, chosen at run time.
//!
//! * [`Domain`] holds what every worker shares: the [`Strategy`], one coarse lock and a
//!   power-of-two number of cache-line padded lock stripes, and RTM when asked for
//!   ([`rtm`]: detected with CPUID and a probe transaction; asking for it where it is
//!   absent is an error naming the CPU).
//! * Each worker runs critical sections through its [`WorkerSync`]:
//!   [`section`](WorkerSync::section)`(stripe, |sec| …)` takes the coarse lock, the stripe's
//!   lock, nothing (flow affinity: the stripe must be this worker's, else it panics), or
//!   runs the closure as a hardware transaction eliding the lock, retried with back-off,
//!   then under the lock. [`SyncStats`] counts sections, lock waits, commits, aborts by
//!   cause and fallbacks.
//! * [`FlowTable`] (bucketised, fixed capacity, per-worker record stacks, idle expiry one
//!   bucket section at a time while packets flow) and [`StripedArray`] are the shared
//!   objects; every access checks that its section holds the object's stripe and feeds the
//!   conflict [`profile`]r when it runs.
//!
//! ```
//! use pktvec_state::{Domain, FlowTable, Strategy, SyncConfig, TableConfig};
//! use std::sync::Arc;
//! // one table, two workers counting packets per flow under fine-grained locks
//! let d = Domain::new(SyncConfig { strategy: Strategy::Fine, workers: 2, stripes: 64, ..SyncConfig::default() })?;
//! let t = Arc::new(FlowTable::<u32, u64>::new(&d, "counts", TableConfig { capacity: 4096, ..TableConfig::default() }));
//! std::thread::scope(|s| {
//!     for w in 0..2 {
//!         let (d, t) = (d.clone(), t.clone());
//!         s.spawn(move || {
//!             let (mut sync, mut tw) = (d.worker(w), t.worker(w));
//!             for i in 0..10_000u32 {
//!                 let flow = i % 100;
//!                 let h = (flow as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
//!                 sync.section(t.stripe(h), |sec| *t.entry(sec, &mut tw, flow, h, 0).unwrap().1 += 1);
//!             }
//!         });
//!     }
//! });
//! let mut sync = d.worker(0);
//! let h = 7u64.wrapping_mul(0x9e37_79b9_7f4a_7c15);
//! assert_eq!(sync.section(t.stripe(h), |sec| *t.find(sec, &7, h).unwrap().1), 200);
//! # Ok::<(), pktvec_state::SyncError>(())
//! ```
#![warn(missing_docs)]

pub mod domain;
pub mod lock;
pub mod profile;
pub mod rtm;
pub mod strategy;
pub mod table;

pub use domain::{Domain, Section, SyncConfig, SyncError, SyncStats, WorkerSync};
pub use strategy::{Strategy, UnknownStrategy};
pub use table::{FlowTable, InsertError, RecordId, StripedArray, TableConfig, TableWorker};
