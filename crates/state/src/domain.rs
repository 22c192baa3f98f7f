//! The synchronisation domain: the locks every worker shares, and each worker's handle that
//! runs critical sections under the domain's [`Strategy`].

use crate::lock::SpinLock;
use crate::profile::Profiler;
use crate::rtm::{self, AbortCause, Rtm, RtmUnavailable};
use crate::strategy::Strategy;
use crossbeam_utils::CachePadded;
use std::sync::{Arc, Mutex};

/// Most stripes one section may hold.
pub const MAX_SECTION_STRIPES: usize = 4;

/// A domain's settings.
#[derive(Clone, Debug)]
pub struct SyncConfig {
    /// How sections synchronise.
    pub strategy: Strategy,
    /// Workers that will run sections (and, under flow affinity, own shards).
    pub workers: usize,
    /// Lock stripes (a power of two): every shared object belongs to one stripe, and a
    /// stripe's owner under flow affinity is `stripe % workers`.
    pub stripes: usize,
    /// Transactions tried per section before falling back to the lock.
    pub rtm_retries: u32,
}

impl Default for SyncConfig {
    fn default() -> Self {
        SyncConfig {
            strategy: Strategy::Fine,
            workers: 1,
            stripes: 1024,
            rtm_retries: 8,
        }
    }
}

/// Why a domain cannot be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SyncError {
    /// RTM was asked for and this machine has none.
    #[error("--sync {0}: {1}")]
    Rtm(Strategy, RtmUnavailable),
    /// Bad settings.
    #[error("synchronisation settings: {0}")]
    Config(String),
}

/// Shared by every worker: the strategy, the coarse lock, the striped locks, RTM.
///
/// ```
/// use pktvec_state::{Domain, Strategy, SyncConfig};
/// let d = Domain::new(SyncConfig { strategy: Strategy::Fine, workers: 2, stripes: 64, ..SyncConfig::default() })?;
/// let mut w = d.worker(0);
/// let s = d.stripe_of(0xdead_beef);
/// let x = w.section(s, |sec| sec.worker() + 1);
/// assert_eq!(x, 1);
/// assert_eq!(w.stats().sections, 1);
/// // an RTM strategy on a machine without RTM is a clear error
/// if pktvec_state::rtm::Rtm::detect().is_err() {
///     assert!(Domain::new(SyncConfig { strategy: Strategy::Rtm, ..SyncConfig::default() }).is_err());
/// }
/// # Ok::<(), pktvec_state::SyncError>(())
/// ```
#[derive(Debug)]
pub struct Domain {
    strategy: Strategy,
    workers: usize,
    stripe_mask: usize,
    global: CachePadded<SpinLock>,
    stripes: Box<[CachePadded<SpinLock>]>,
    rtm: Option<Rtm>,
    retries: u32,
    objects: Mutex<Vec<&'static str>>,
}

impl Domain {
    /// A domain; an RTM strategy fails with the reason when RTM is absent.
    pub fn new(cfg: SyncConfig) -> Result<Arc<Domain>, SyncError> {
        if !cfg.stripes.is_power_of_two() {
            return Err(SyncError::Config(format!(
                "stripes must be a power of two, not {}",
                cfg.stripes
            )));
        }
        if cfg.workers == 0 || cfg.workers > cfg.stripes {
            return Err(SyncError::Config(format!(
                "{} workers over {} stripes",
                cfg.workers, cfg.stripes
            )));
        }
        let rtm = match cfg.strategy.uses_rtm() {
            true => Some(Rtm::detect().map_err(|e| SyncError::Rtm(cfg.strategy, e))?),
            false => None,
        };
        Ok(Arc::new(Domain {
            strategy: cfg.strategy,
            workers: cfg.workers,
            stripe_mask: cfg.stripes - 1,
            global: CachePadded::new(SpinLock::new()),
            stripes: (0..cfg.stripes)
                .map(|_| CachePadded::new(SpinLock::new()))
                .collect(),
            rtm,
            retries: cfg.rtm_retries.max(1),
            objects: Mutex::new(Vec::new()),
        }))
    }

    /// The strategy.
    pub fn strategy(&self) -> Strategy {
        self.strategy
    }

    /// Workers.
    pub fn workers(&self) -> usize {
        self.workers
    }

    /// Lock stripes.
    pub fn stripes(&self) -> usize {
        self.stripe_mask + 1
    }

    /// The stripe of a hash (its low bits).
    #[inline]
    pub fn stripe_of(&self, hash: u64) -> usize {
        hash as usize & self.stripe_mask
    }

    /// The worker owning a stripe under flow affinity (`stripe % workers`); packets whose
    /// state lies in that stripe must be processed there.
    #[inline]
    pub fn owner(&self, stripe: usize) -> usize {
        (stripe & self.stripe_mask) % self.workers
    }

    /// The handle worker `id` runs sections through.
    pub fn worker(self: &Arc<Self>, id: usize) -> WorkerSync {
        assert!(id < self.workers, "worker {id} of {}", self.workers);
        WorkerSync {
            domain: self.clone(),
            id,
            stats: SyncStats::default(),
            rng: 0x9e37_79b9_7f4a_7c15 ^ (id as u64 + 1).wrapping_mul(0xbf58_476d_1ce4_e5b9),
            profile: None,
        }
    }

    /// Registers a shared object (a table, an array) under `name`: its tag in the conflict
    /// profiler.
    pub fn register(&self, name: &'static str) -> u16 {
        let mut o = self.objects.lock().unwrap_or_else(|e| e.into_inner());
        o.push(name);
        (o.len() - 1) as u16
    }

    /// The names registered, by tag.
    pub fn objects(&self) -> Vec<&'static str> {
        self.objects
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

/// What one worker's sections did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SyncStats {
    /// Sections run.
    pub sections: u64,
    /// Locks taken (coarse, fine, and RTM fallbacks).
    pub lock_acquisitions: u64,
    /// Lock acquisitions that had to wait.
    pub lock_contended: u64,
    /// Transactions committed.
    pub commits: u64,
    /// Transactions aborted by a conflict.
    pub abort_conflict: u64,
    /// Transactions aborted for capacity.
    pub abort_capacity: u64,
    /// Transactions aborted explicitly (the elided lock was taken).
    pub abort_explicit: u64,
    /// Transactions aborted for any other cause.
    pub abort_other: u64,
    /// Sections that gave up on transactions and took the lock.
    pub fallbacks: u64,
}

impl SyncStats {
    /// Transactions aborted, every cause.
    pub fn aborts(&self) -> u64 {
        self.abort_conflict + self.abort_capacity + self.abort_explicit + self.abort_other
    }

    /// Transactions started.
    pub fn transactions(&self) -> u64 {
        self.commits + self.aborts()
    }

    /// Share of transactions that committed (1 when none ran).
    pub fn commit_rate(&self) -> f64 {
        match self.transactions() {
            0 => 1.0,
            t => self.commits as f64 / t as f64,
        }
    }

    /// Adds another worker's counts.
    pub fn add(&mut self, o: &SyncStats) {
        self.sections += o.sections;
        self.lock_acquisitions += o.lock_acquisitions;
        self.lock_contended += o.lock_contended;
        self.commits += o.commits;
        self.abort_conflict += o.abort_conflict;
        self.abort_capacity += o.abort_capacity;
        self.abort_explicit += o.abort_explicit;
        self.abort_other += o.abort_other;
        self.fallbacks += o.fallbacks;
    }
}

/// One worker's way into the domain: runs critical sections, counts what they did, and
/// (when enabled) feeds the conflict profiler.
pub struct WorkerSync {
    domain: Arc<Domain>,
    id: usize,
    stats: SyncStats,
    rng: u64,
    profile: Option<Box<Profiler>>,
}

/// The stripes a section holds.
#[derive(Clone, Copy, Debug)]
struct Held {
    n: usize,
    s: [usize; MAX_SECTION_STRIPES],
}

impl Held {
    fn new(domain: &Domain, stripes: &[usize]) -> Held {
        assert!(
            !stripes.is_empty() && stripes.len() <= MAX_SECTION_STRIPES,
            "a section holds 1..={MAX_SECTION_STRIPES} stripes, not {}",
            stripes.len()
        );
        let mut h = Held {
            n: 0,
            s: [0; MAX_SECTION_STRIPES],
        };
        for &x in stripes {
            let x = x & domain.stripe_mask;
            if !h.s[..h.n].contains(&x) {
                h.s[h.n] = x;
                h.n += 1;
            }
        }
        // ascending: locks are always taken in one order, so two sections never deadlock
        h.s[..h.n].sort_unstable();
        h
    }

    fn stripes(&self) -> &[usize] {
        &self.s[..self.n]
    }
}

impl WorkerSync {
    /// This worker's index.
    pub fn id(&self) -> usize {
        self.id
    }

    /// The domain.
    pub fn domain(&self) -> &Arc<Domain> {
        &self.domain
    }

    /// What this worker's sections did.
    pub fn stats(&self) -> &SyncStats {
        &self.stats
    }

    /// Starts recording every section's accesses (the conflict profiler).
    pub fn enable_profile(&mut self) {
        self.profile = Some(Box::default());
    }

    /// The profiler, if enabled.
    pub fn profile_mut(&mut self) -> Option<&mut Profiler> {
        self.profile.as_deref_mut()
    }

    /// Stops profiling and returns what was recorded.
    pub fn take_profile(&mut self) -> Option<Profiler> {
        self.profile.take().map(|b| *b)
    }

    /// Runs `f` as a critical section over `stripe`'s state (see
    /// [`section_multi`](Self::section_multi)).
    #[inline]
    pub fn section<R>(&mut self, stripe: usize, f: impl FnMut(&mut Section<'_>) -> R) -> R {
        self.section_multi(&[stripe], f)
    }

    /// Runs `f` as a critical section over the state of up to [`MAX_SECTION_STRIPES`]
    /// stripes, under the domain's strategy:
    ///
    /// * coarse: the one lock; fine: each stripe's lock, ascending;
    /// * affinity: no lock; every stripe must be owned by this worker;
    /// * rtm / rtm-coarse: a transaction that reads the stripes' (or the coarse) lock
    ///   words and aborts if one is taken; after `rtm_retries` aborts (fewer if the CPU
    ///   says a retry cannot succeed), the locks. `f` may therefore run more than once,
    ///   but only one run's effects on memory remain.
    ///
    /// Inside, `f` may touch only objects of the stripes it holds (coarse: any stripe;
    /// affinity: any stripe this worker owns); the accessors check it.
    ///
    /// # Panics
    /// Under flow affinity, when a stripe belongs to another worker: the packet should
    /// have been handed to its owner.
    pub fn section_multi<R>(
        &mut self,
        stripes: &[usize],
        mut f: impl FnMut(&mut Section<'_>) -> R,
    ) -> R {
        let d = &*self.domain;
        let held = Held::new(d, stripes);
        self.stats.sections += 1;
        let mut sec = Section {
            domain: d,
            worker: self.id,
            held,
            profile: self.profile.as_deref_mut(),
        };
        match d.strategy {
            Strategy::Affinity => {
                for &s in held.stripes() {
                    assert_eq!(
                        d.owner(s),
                        self.id,
                        "flow affinity: worker {} touched stripe {s}, owned by worker {}",
                        self.id,
                        d.owner(s)
                    );
                }
                f(&mut sec)
            }
            Strategy::Coarse => {
                let _g = LockGuard::take_refs(&mut self.stats, &[&*d.global]);
                f(&mut sec)
            }
            Strategy::Fine => {
                let mut locks = [&*d.global; MAX_SECTION_STRIPES];
                for (i, &s) in held.stripes().iter().enumerate() {
                    locks[i] = &*d.stripes[s];
                }
                let _g = LockGuard::take_refs(&mut self.stats, &locks[..held.n]);
                f(&mut sec)
            }
            Strategy::Rtm | Strategy::RtmCoarse => {
                let rtm = d.rtm.expect("an RTM domain detected RTM");
                let mut locks = [&*d.global; MAX_SECTION_STRIPES];
                let n = match d.strategy {
                    Strategy::RtmCoarse => 1,
                    _ => {
                        for (i, &s) in held.stripes().iter().enumerate() {
                            locks[i] = &*d.stripes[s];
                        }
                        held.n
                    }
                };
                let locks = &locks[..n];
                for attempt in 0..d.retries {
                    let status = rtm.begin();
                    if status == rtm::STARTED {
                        // the lock words join the read set: a worker that takes one of
                        // the locks for real aborts this transaction
                        if locks.iter().any(|l| l.is_locked()) {
                            rtm.abort_lock_busy();
                        }
                        let r = f(&mut sec);
                        rtm.end();
                        self.stats.commits += 1;
                        return r;
                    }
                    let cause = AbortCause::of(status);
                    match cause {
                        AbortCause::Conflict => self.stats.abort_conflict += 1,
                        AbortCause::Capacity => self.stats.abort_capacity += 1,
                        AbortCause::Explicit(_) => self.stats.abort_explicit += 1,
                        AbortCause::Other => self.stats.abort_other += 1,
                    }
                    if let AbortCause::Explicit(rtm::LOCK_BUSY) = cause {
                        // wait for the holder to leave rather than abort against it again
                        for l in locks {
                            l.wait_free();
                        }
                    } else if status & rtm::ABORT_RETRY == 0 && cause != AbortCause::Conflict {
                        break; // the CPU says retrying cannot help (capacity, faults)
                    }
                    // randomised exponential back-off before the next try
                    self.rng ^= self.rng << 13;
                    self.rng ^= self.rng >> 7;
                    self.rng ^= self.rng << 17;
                    let spins = self.rng & ((16u64 << attempt.min(8)) - 1);
                    for _ in 0..spins {
                        std::hint::spin_loop();
                    }
                }
                self.stats.fallbacks += 1;
                let _g = LockGuard::take_refs(&mut self.stats, locks);
                f(&mut sec)
            }
        }
    }
}

/// Releases the locks it took when dropped (also when the section panics).
struct LockGuard<'a> {
    locks: [Option<&'a SpinLock>; MAX_SECTION_STRIPES],
}

impl<'a> LockGuard<'a> {
    fn take_refs(stats: &mut SyncStats, locks: &[&'a SpinLock]) -> LockGuard<'a> {
        let mut g = LockGuard {
            locks: [None; MAX_SECTION_STRIPES],
        };
        for (i, l) in locks.iter().enumerate() {
            stats.lock_acquisitions += 1;
            stats.lock_contended += u64::from(l.lock());
            g.locks[i] = Some(l);
        }
        g
    }
}

impl Drop for LockGuard<'_> {
    fn drop(&mut self) {
        for l in self.locks.iter().rev().flatten() {
            l.unlock();
        }
    }
}

/// Inside a critical section: which stripes may be touched, and the profiler.
pub struct Section<'a> {
    domain: &'a Domain,
    worker: usize,
    held: Held,
    profile: Option<&'a mut Profiler>,
}

impl Section<'_> {
    /// The worker running the section.
    #[inline]
    pub fn worker(&self) -> usize {
        self.worker
    }

    /// The domain.
    #[inline]
    pub fn domain(&self) -> &Domain {
        self.domain
    }

    /// Whether this section may touch `stripe`'s objects.
    #[inline]
    pub fn holds(&self, stripe: usize) -> bool {
        let s = stripe & self.domain.stripe_mask;
        match self.domain.strategy {
            Strategy::Coarse | Strategy::RtmCoarse => true,
            Strategy::Affinity => self.domain.owner(s) == self.worker,
            Strategy::Fine | Strategy::Rtm => self.held.stripes().contains(&s),
        }
    }

    /// Panics unless this section may touch `stripe`'s objects: touching another stripe
    /// would race with the worker holding it (under flow affinity: its owner).
    #[inline]
    #[track_caller]
    pub fn check(&self, stripe: usize) {
        if !self.holds(stripe) {
            panic!(
                "{} section of worker {} (stripes {:?}) touched stripe {} (owner {})",
                self.domain.strategy,
                self.worker,
                self.held.stripes(),
                stripe & self.domain.stripe_mask,
                self.domain.owner(stripe)
            );
        }
    }

    /// Records a read of `len` bytes at `addr` of object `index` of registered object `tag`
    /// (no-op unless profiling).
    #[inline]
    pub fn note_read(&mut self, tag: u16, index: u64, addr: *const u8, len: usize) {
        if let Some(p) = self.profile.as_deref_mut() {
            p.access(tag, index, addr as usize, len, false);
        }
    }

    /// Records a write (see [`note_read`](Self::note_read)).
    #[inline]
    pub fn note_write(&mut self, tag: u16, index: u64, addr: *const u8, len: usize) {
        if let Some(p) = self.profile.as_deref_mut() {
            p.access(tag, index, addr as usize, len, true);
        }
    }
}
