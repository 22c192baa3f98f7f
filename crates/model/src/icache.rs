//! I1 misses from measured code lines on a set-associative LRU cache (the code-fetch term I
//! of the path-batcher model, with the footprint taken from the binary as it runs).
//!
//! The model's I = ⌈P/L⌉·A_M·W charges every call of a node its whole footprint P. That
//! holds when the code run between two calls of the node is far larger than the L1i (every
//! line is gone by the next call); when it nearly fits, a footprint cannot say which lines
//! survive. This module works line by line instead:
//!
//! * **Measured lines** ([`CodeLine`]): every 64-byte line of code a calibration run
//!   executed, its owner (a node, the dispatcher, the batcher and its packet source) and
//!   how often it ran per call and per packet of its owner
//!   (callgrind `--dump-instr=yes` on a few settings).
//! * **Touch rates** ([`CodeLine::touch_rate`]): for a setting, the owner's calls and
//!   packets per packet of traffic ([`NodeRate`]) give each line's touches per packet: a
//!   line run on every call is touched once per call; a rarer one (a branch taken by few
//!   packets, a tail loop) with probability 1 − (1 − ρ)^n in a call of n packets, ρ its
//!   runs per packet of the owner.
//! * **LRU per set** ([`lru_misses`]): lines map to sets by address (line mod sets). With
//!   LRU, a touch of line l misses iff at least `ways` other lines of its set were touched
//!   since l's previous touch. Over that gap (1/τ_l packets) another line m of the set is
//!   counted as touched with probability min(1, τ_m/τ_l) (evenly spread touches); the
//!   number touched is a sum of independent Bernoullis, and
//!   misses per packet = Σ_l τ_l · P(#others ≥ ways).
//!
//! * **Trace replay** ([`TraceReplay`], [`LruSets`]): instead of estimating each gap
//!   from rates, a caller replays the node calls in the order the graph dispatches them
//!   (each call its owner's lines, rarer lines drawn with [`CodeLine::touch_probability`])
//!   through an exact set-associative LRU, as cachegrind simulates it: which lines of an
//!   overfull set come between two touches then follows from the order, not from rates
//!   (the caller builds the order from the batcher's and `Graph::drain`'s rules).
//!
//! * **Order inside a call** ([`LineOrder`], [`call_events`],
//!   [`TraceReplay::call_ordered`]): where each line runs inside its owner's calls
//!   (measured with valgrind lackey's instruction trace on the calibration runs); a line
//!   run at the start and again at the end of a call (a loop's) is touched twice, so it
//!   is younger in its set than a line run once at the start.
//!
//! Code that fits (every set holds at most `ways` of the lines touched between two
//! touches) therefore has no misses beyond the compulsory ones, a footprint far beyond
//! the cache misses on every touch, and in between only the overfull sets miss — the
//! conflict misses that a capacity share (footprint / cache size) cannot see.
//!
//! ```
//! use pktvec_model::icache::{lru_misses, CacheGeometry};
//! let l1i = CacheGeometry { bytes: 8192, ways: 8, line: 64 }; // 16 sets
//! // 8 lines in set 0, each touched once per packet: they fit, nothing misses.
//! let fits: Vec<(u64, f64)> = (0..8).map(|k| (16 * k, 1.0)).collect();
//! assert_eq!(lru_misses(&fits, l1i), 0.0);
//! // 9 lines cycled through one 8-way set: LRU misses every touch.
//! let thrash: Vec<(u64, f64)> = (0..9).map(|k| (16 * k, 1.0)).collect();
//! assert!((lru_misses(&thrash, l1i) - 9.0).abs() < 1e-9);
//! ```

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A set-associative cache: size, associativity, line size (bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheGeometry {
    /// Capacity, bytes.
    pub bytes: usize,
    /// Ways per set.
    pub ways: usize,
    /// Line size, bytes.
    pub line: usize,
}

impl CacheGeometry {
    /// Number of sets: bytes / (ways × line), at least 1.
    ///
    /// ```
    /// use pktvec_model::icache::CacheGeometry;
    /// assert_eq!(CacheGeometry { bytes: 32768, ways: 8, line: 64 }.sets(), 64);
    /// ```
    pub fn sets(&self) -> usize {
        (self.bytes / (self.ways.max(1) * self.line.max(1))).max(1)
    }
}

/// A node's calls and packets per packet of traffic (what the runtime stats give, or the
/// path model predicts).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NodeRate {
    /// Calls of the node per packet of traffic.
    pub calls: f64,
    /// Packets through the node per packet of traffic.
    pub packets: f64,
}

impl NodeRate {
    /// Mean packets per call (0 when never called).
    pub fn per_call(&self) -> f64 {
        if self.calls > 0.0 {
            self.packets / self.calls
        } else {
            0.0
        }
    }
}

/// Runs per call at or above which a line counts as run on every call.
pub const EVERY_CALL: f64 = 0.9;

/// One executed line of code, measured on a calibration run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CodeLine {
    /// Line address (byte address / line size).
    pub line: u64,
    /// Owner: index into the caller's node list.
    pub node: usize,
    /// Runs per call of the owner (its most executed instruction) in the calibration run.
    pub per_call: f64,
    /// Runs per packet of the owner in the calibration run.
    pub per_packet: f64,
}

impl CodeLine {
    /// Builds a line from its runs per packet of traffic in a calibration run and its
    /// owner's [`NodeRate`] in that run.
    ///
    /// ```
    /// use pktvec_model::icache::{CodeLine, NodeRate};
    /// // Owner called every 32 packets with 32 packets: 1/32 runs per packet = once a call.
    /// let l = CodeLine::from_run(7, 0, 1.0 / 32.0, NodeRate { calls: 1.0 / 32.0, packets: 1.0 });
    /// assert!((l.per_call - 1.0).abs() < 1e-12 && (l.per_packet - 1.0 / 32.0).abs() < 1e-12);
    /// ```
    pub fn from_run(line: u64, node: usize, runs_per_packet: f64, owner: NodeRate) -> Self {
        let div = |a: f64, b: f64| if b > 0.0 { a / b } else { 0.0 };
        CodeLine {
            line,
            node,
            per_call: div(runs_per_packet, owner.calls),
            per_packet: div(runs_per_packet, owner.packets),
        }
    }

    /// Touches per packet of traffic when the owner runs at `rate`: once per call for a
    /// line run on every call ([`EVERY_CALL`]), else 1 − (1 − ρ)^n per call of n packets.
    ///
    /// ```
    /// use pktvec_model::icache::{CodeLine, NodeRate};
    /// let rare = CodeLine { line: 0, node: 0, per_call: 0.05, per_packet: 0.01 };
    /// let r = NodeRate { calls: 0.01, packets: 1.0 }; // calls of 100 packets
    /// let t = rare.touch_rate(r);
    /// assert!((t - 0.01 * (1.0 - 0.99f64.powi(100))).abs() < 1e-12);
    /// ```
    pub fn touch_rate(&self, rate: NodeRate) -> f64 {
        if rate.calls <= 0.0 {
            return 0.0;
        }
        rate.calls * self.touch_probability(rate.per_call())
    }

    /// Probability that a call of `n` packets runs this line: 1 for a line run on every
    /// call ([`EVERY_CALL`]), else 1 − (1 − ρ)^n (n at least 1).
    ///
    /// ```
    /// use pktvec_model::icache::CodeLine;
    /// let rare = CodeLine { line: 0, node: 0, per_call: 0.2, per_packet: 0.1 };
    /// assert!((rare.touch_probability(2.0) - 0.19).abs() < 1e-12);
    /// assert_eq!(CodeLine { per_call: 1.0, ..rare }.touch_probability(2.0), 1.0);
    /// ```
    pub fn touch_probability(&self, n: f64) -> f64 {
        if self.per_call >= EVERY_CALL {
            1.0
        } else {
            1.0 - (1.0 - self.per_packet.clamp(0.0, 1.0)).powf(n.max(1.0))
        }
    }
}

/// An exact set-associative cache with LRU replacement over line addresses (set = line
/// mod sets): what cachegrind simulates for the L1i.
///
/// ```
/// use pktvec_model::icache::{CacheGeometry, LruSets};
/// let mut c = LruSets::new(CacheGeometry { bytes: 8192, ways: 8, line: 64 }); // 16 sets
/// // Nine lines of set 0 cycled: after the first pass every touch misses.
/// let cycle: Vec<u64> = (0..9).map(|k| 16 * k).collect();
/// assert_eq!(cycle.iter().filter(|&&l| c.touch(l)).count(), 9); // compulsory
/// assert_eq!(cycle.iter().filter(|&&l| c.touch(l)).count(), 9); // LRU thrashes
/// // The eight most recent (lines 1–8) are held: touched again, they all hit.
/// assert_eq!(cycle[1..].iter().filter(|&&l| c.touch(l)).count(), 0);
/// ```
#[derive(Clone, Debug)]
pub struct LruSets {
    /// Per set, its lines from least to most recently used (at most `ways`).
    sets: Vec<Vec<u64>>,
    ways: usize,
}

impl LruSets {
    /// An empty cache of geometry `geo`.
    pub fn new(geo: CacheGeometry) -> Self {
        LruSets {
            sets: vec![Vec::with_capacity(geo.ways); geo.sets()],
            ways: geo.ways.max(1),
        }
    }

    /// Touches `line`; returns true on a miss (the line is then the most recent of its
    /// set, evicting the least recent when the set was full).
    pub fn touch(&mut self, line: u64) -> bool {
        let n = self.sets.len() as u64;
        let set = &mut self.sets[(line % n) as usize];
        if let Some(i) = set.iter().position(|&l| l == line) {
            set.remove(i);
            set.push(line);
            return false;
        }
        if set.len() >= self.ways {
            set.remove(0);
        }
        set.push(line);
        true
    }
}

/// Trace-driven I1 misses: node calls replayed in dispatch order through an exact
/// [`LruSets`]. Each call runs its owner's measured [`CodeLine`]s in address order: a line
/// run on every call always, a rarer one with [`CodeLine::touch_probability`] for the
/// call's packets (drawn from a fixed-seed generator, so a replay is reproducible).
/// Misses and touches are counted per owner while counting is on (off for a warm-up).
///
/// Where [`code_misses_by_node`] estimates, per set, how many other lines fall between two
/// touches from rates alone, the replay takes them from the order of the calls: two nodes
/// whose lines share an overfull set conflict only if their calls interleave with
/// another's in between.
///
/// ```
/// use pktvec_model::icache::{CacheGeometry, CodeLine, TraceReplay};
/// let geo = CacheGeometry { bytes: 8192, ways: 8, line: 64 }; // 16 sets
/// let node = |n: usize, k: std::ops::Range<u64>| -> Vec<CodeLine> {
///     k.map(|k| CodeLine { line: 16 * k, node: n, per_call: 1.0, per_packet: 1.0 }).collect()
/// };
/// // Nodes 0 and 1: five and four lines of set 0 (nine > eight ways), called in turn.
/// let (a, b) = (node(0, 0..5), node(1, 5..9));
/// let mut r = TraceReplay::new(geo, 2, 1);
/// r.call(&a, 1.0);
/// r.call(&b, 1.0); // warm-up: compulsory misses, not counted
/// r.counting = true;
/// for _ in 0..10 {
///     r.call(&a, 1.0);
///     r.call(&b, 1.0);
/// }
/// assert_eq!(r.misses, vec![50, 40]); // every touch misses
/// ```
#[derive(Clone, Debug)]
pub struct TraceReplay {
    cache: LruSets,
    rng: u64,
    /// Count misses and touches (false during a warm-up).
    pub counting: bool,
    /// Misses per owner (index = [`CodeLine::node`]) while counting.
    pub misses: Vec<u64>,
    /// Touches per owner while counting.
    pub touches: Vec<u64>,
    /// Per line address, (touches, misses) while counting, if enabled
    /// ([`TraceReplay::with_lines`]): which lines and sets miss.
    pub by_line: Option<BTreeMap<u64, (u64, u64)>>,
    last: Vec<(u64, usize)>,
}

impl TraceReplay {
    /// An empty cache of geometry `geo`, `owners` owners, a generator seeded with `seed`;
    /// counting off.
    pub fn new(geo: CacheGeometry, owners: usize, seed: u64) -> Self {
        TraceReplay {
            cache: LruSets::new(geo),
            rng: seed,
            counting: false,
            misses: vec![0; owners],
            touches: vec![0; owners],
            by_line: None,
            last: Vec::new(),
        }
    }

    /// Also counts touches and misses per line ([`TraceReplay::by_line`]).
    pub fn with_lines(mut self) -> Self {
        self.by_line = Some(BTreeMap::new());
        self
    }

    /// One call of `packets` packets running `lines` (one owner's lines, or several).
    /// The lines touched are kept ([`TraceReplay::last`]) for a [`TraceReplay::retouch`].
    pub fn call(&mut self, lines: &[CodeLine], packets: f64) {
        self.last.clear();
        for l in lines {
            if l.per_call < EVERY_CALL {
                let p = l.touch_probability(packets);
                if self.uniform() >= p {
                    continue;
                }
            }
            self.last.push((l.line, l.node));
            self.touch(l.line, l.node);
        }
    }

    /// One call touching its lines in a measured order: `events` lists indices into
    /// `lines` in the order the call runs them (an index may occur twice: a line run at
    /// the start and again at the end of the call, e.g. a loop's lines, see
    /// [`call_events`]). Which lines run is drawn once per call, as in
    /// [`TraceReplay::call`], with `packets(line)` packets (a line whose owner gets no
    /// packets in this call, `packets` ≤ 0, does not run); a line that runs is touched at
    /// each of its events. The lines touched (once each, first-touch order) are kept for a
    /// [`TraceReplay::retouch`].
    ///
    /// ```
    /// use pktvec_model::icache::{CacheGeometry, CodeLine, TraceReplay};
    /// let geo = CacheGeometry { bytes: 8192, ways: 8, line: 64 }; // 16 sets
    /// let line = |n: usize, k: u64| CodeLine { line: 16 * k, node: n, per_call: 1.0, per_packet: 1.0 };
    /// // Set 0 holds nine lines: node 0's eight (lines 0–7) and node 1's one (line 8).
    /// let a: Vec<CodeLine> = (0..8).map(|k| line(0, k)).collect();
    /// let b = vec![line(1, 8)];
    /// let misses = |events: &[usize]| {
    ///     let mut r = TraceReplay::new(geo, 2, 1);
    ///     for round in 0..11 {
    ///         r.counting = round > 0;
    ///         r.call_ordered(&a, events, |_| 1.0);
    ///         r.call_ordered(&b, &[0], |_| 1.0);
    ///     }
    ///     (r.touches.clone(), r.misses.clone())
    /// };
    /// // Each line once per round: nine lines cycled through eight ways, all miss.
    /// assert_eq!(misses(&[0, 1, 2, 3, 4, 5, 6, 7]), (vec![80, 10], vec![80, 10]));
    /// // Line 0 runs at the start and again at the end of node 0's call: between its end
    /// // and the next start only node 1's line runs, so that touch hits (the end touch
    /// // sees the seven others in between: a hit too). 8 misses a round, not 9.
    /// assert_eq!(misses(&[0, 1, 2, 3, 4, 5, 6, 7, 0]), (vec![90, 10], vec![70, 10]));
    /// ```
    pub fn call_ordered(
        &mut self,
        lines: &[CodeLine],
        events: &[usize],
        packets: impl Fn(&CodeLine) -> f64,
    ) {
        self.last.clear();
        let mut runs = vec![false; lines.len()];
        for (l, run) in lines.iter().zip(runs.iter_mut()) {
            let n = packets(l);
            *run = n > 0.0 && (l.per_call >= EVERY_CALL || self.uniform() < l.touch_probability(n));
        }
        let mut seen = vec![false; lines.len()];
        for &i in events {
            let Some(l) = lines.get(i) else { continue };
            if !runs[i] {
                continue;
            }
            if !seen[i] {
                seen[i] = true;
                self.last.push((l.line, l.node));
            }
            self.touch(l.line, l.node);
        }
    }

    /// The `(line, owner)` pairs the last [`TraceReplay::call`] touched.
    pub fn last(&self) -> &[(u64, usize)] {
        &self.last
    }

    /// Touches `lines` again, in order: a caller's code that runs again after a callee
    /// returns (the dispatcher's loop after a node's call, the batcher's hand-over after
    /// its receive side), so the callee's lines count as older than the caller's.
    ///
    /// ```
    /// use pktvec_model::icache::{CacheGeometry, CodeLine, TraceReplay};
    /// let geo = CacheGeometry { bytes: 8192, ways: 8, line: 64 }; // 16 sets
    /// let line = |n: usize, k: u64| CodeLine { line: 16 * k, node: n, per_call: 1.0, per_packet: 1.0 };
    /// // Caller: 1 line; callee: 7; another node: 1, all in set 0 (nine lines).
    /// let (caller, callee, other) = (vec![line(0, 0)], (1..8).map(|k| line(1, k)).collect::<Vec<_>>(), vec![line(2, 8)]);
    /// let mut r = TraceReplay::new(geo, 3, 1);
    /// for round in 0..11 {
    ///     r.counting = round > 0;
    ///     r.call(&caller, 1.0);
    ///     let c = r.last().to_vec();
    ///     r.call(&callee, 1.0);
    ///     r.retouch(&c); // the caller's line is the most recent again
    ///     r.call(&other, 1.0);
    /// }
    /// // Between two touches of the caller's line: only `other`'s line (1 < 8): it hits;
    /// // the callee's and the other line see eight others: they miss.
    /// assert_eq!(r.misses, vec![0, 70, 10]);
    /// ```
    pub fn retouch(&mut self, lines: &[(u64, usize)]) {
        for &(line, node) in lines {
            self.touch(line, node);
        }
    }

    fn touch(&mut self, line: u64, node: usize) {
        let miss = self.cache.touch(line);
        if self.counting {
            if let Some(t) = self.touches.get_mut(node) {
                *t += 1;
                self.misses[node] += miss as u64;
            }
            if let Some(m) = &mut self.by_line {
                let e = m.entry(line).or_default();
                e.0 += 1;
                e.1 += miss as u64;
            }
        }
    }

    /// The next number of a SplitMix64 sequence, in [0, 1).
    fn uniform(&mut self) -> f64 {
        self.rng = self.rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Where a line runs inside a call of its owner, measured (valgrind lackey's instruction
/// trace on the calibration runs): the mean relative positions (0 = the call's start,
/// 1 = its end) of its first and last touch, and the share of calls in which it ran at two
/// separate moments (touched again after other lines of the call).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct LineOrder {
    /// Mean relative position of the line's first touch in a call.
    pub first: f64,
    /// Mean relative position of its last touch.
    pub last: f64,
    /// Share of the calls running it in which it ran at two or more separate moments.
    pub twice: f64,
}

/// The touch order of one call from its lines' [`LineOrder`]s: each line at its first
/// position, and once more at its last position when it ran at two separate moments in
/// at least half of the calls (`twice` ≥ 0.5) — repeats inside a loop collapsed to the
/// loop's first and last pass. Returns indices into `orders`, sorted by position (ties by
/// index): the `events` of [`TraceReplay::call_ordered`].
///
/// ```
/// use pktvec_model::icache::{call_events, LineOrder};
/// let o = |first, last, twice| LineOrder { first, last, twice };
/// // Line 0: a loop line (runs from 0.1 to 0.9); line 1: the prologue; line 2: the end.
/// let ev = call_events(&[o(0.1, 0.9, 1.0), o(0.0, 0.0, 0.0), o(0.95, 0.95, 0.0)]);
/// assert_eq!(ev, vec![1, 0, 0, 2]);
/// ```
pub fn call_events(orders: &[LineOrder]) -> Vec<usize> {
    let mut ev: Vec<(f64, usize)> = Vec::with_capacity(2 * orders.len());
    for (i, o) in orders.iter().enumerate() {
        ev.push((o.first, i));
        if o.twice >= 0.5 && o.last > o.first {
            ev.push((o.last, i));
        }
    }
    ev.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    ev.into_iter().map(|(_, i)| i).collect()
}

/// Which calibration family's lines a call of `n` packets runs, for a replay whose
/// families were measured at calls of 1 (narrow), 2 (dual), 7 (small), 64 (wide) and 256
/// (huge) packets.
///
/// pktvec's loops decide it (`graph/src/loops.rs`, `Context::enqueue_frame`): the quad
/// loop runs its 4-wide body while 4 or more packets are left, then the 2-wide body for
/// 2–3 left and the 1-wide for 1; the SIMD folds over a vector's next slots run a 16-wide
/// body for n ≥ [`SizeRule::CHUNK`], a 4-wide epilogue for 4 ≤ n < 16 (or n mod 16 ≥ 4)
/// and a scalar tail for n mod 4 ≠ 0. Calls of 1, 2, 64 and 256 packets never run the
/// 4-wide epilogue, 64 and 256 no tail at all; a call of 7 runs everything but the
/// 16-wide body.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SizeRule {
    /// Without a small family: 1 narrow, 2–3 dual, 4–96 wide, > 96 huge.
    #[serde(alias = "Session8")]
    NoSmallFamily,
    /// Calls of 4–15 packets run the small family's lines as measured; others as
    /// [`SizeRule::NoSmallFamily`].
    Small,
    /// The loop structure: calls of 4–15 packets the small family's lines, without its
    /// remainder lines ([`TailLine::remainder`]) when n mod 4 = 0; calls of more than 15
    /// that are not a multiple of 16 the wide (> 96: huge) lines plus the small family's
    /// tail lines ([`TailLine::tail`]; the remainder ones only when n mod 4 ≠ 0); calls
    /// of 1–3 and multiples of 16 as [`SizeRule::NoSmallFamily`].
    Tail,
}

/// The lines a call runs under a [`SizeRule`]: a family's, with the small family's tail
/// lines added or its remainder lines left out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallLines {
    /// The narrow family (calls of 1).
    Narrow,
    /// The dual family (calls of 2).
    Dual,
    /// The small family (calls of 7); `remainder`: with its remainder lines.
    Small {
        /// Include the lines [`TailLine::remainder`] marks.
        remainder: bool,
    },
    /// The wide family (calls of 64), `tail`: plus the small family's tail lines.
    Wide {
        /// The small family's tail lines to add.
        tail: Tail,
    },
    /// The huge family (calls of 256), `tail` as for [`CallLines::Wide`].
    Huge {
        /// The small family's tail lines to add.
        tail: Tail,
    },
}

/// Which of the small family's tail lines a [`CallLines::Wide`] or [`CallLines::Huge`]
/// call adds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tail {
    /// None (n a multiple of 16).
    None,
    /// The tail lines that are not remainder lines (n mod 4 = 0).
    NoRemainder,
    /// All tail lines.
    All,
}

/// Which families a replay has lines for (the narrow and wide ones always).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Families {
    /// Calls of 2 (dual loops).
    pub dual: bool,
    /// Calls of 7 (tails).
    pub small: bool,
    /// Calls of 256.
    pub huge: bool,
}

impl SizeRule {
    /// Packets per pass of the SIMD loops over next slots (below it they run only their
    /// 4-wide epilogue and scalar tail).
    pub const CHUNK: usize = 16;
    /// The quad loop's width.
    pub const WIDTH: usize = 4;

    /// Which line set a call of `n` packets runs, given the families measured (a missing one
    /// falls back as without a small family: dual → narrow, huge → wide, small → the others).
    ///
    /// ```
    /// use pktvec_model::icache::{CallLines, Families, SizeRule, Tail};
    /// let all = Families { dual: true, small: true, huge: true };
    /// let r = SizeRule::Tail;
    /// assert_eq!(r.lines(3, all), CallLines::Dual);
    /// assert_eq!(r.lines(7, all), CallLines::Small { remainder: true });
    /// assert_eq!(r.lines(8, all), CallLines::Small { remainder: false });
    /// assert_eq!(r.lines(32, all), CallLines::Wide { tail: Tail::None });
    /// assert_eq!(r.lines(40, all), CallLines::Wide { tail: Tail::NoRemainder });
    /// assert_eq!(r.lines(45, all), CallLines::Wide { tail: Tail::All });
    /// assert_eq!(r.lines(200, all), CallLines::Huge { tail: Tail::NoRemainder });
    /// assert_eq!(SizeRule::NoSmallFamily.lines(8, all), CallLines::Wide { tail: Tail::None });
    /// assert_eq!(SizeRule::Small.lines(8, all), CallLines::Small { remainder: true });
    /// ```
    pub fn lines(self, n: usize, have: Families) -> CallLines {
        let none = Tail::None;
        let old = if n < Self::WIDTH {
            if n >= 2 && have.dual {
                CallLines::Dual
            } else {
                CallLines::Narrow
            }
        } else if n > 96 && have.huge {
            CallLines::Huge { tail: none }
        } else {
            CallLines::Wide { tail: none }
        };
        if !have.small || n < Self::WIDTH {
            return old;
        }
        let whole = n % Self::WIDTH == 0;
        match self {
            SizeRule::NoSmallFamily => old,
            SizeRule::Small if n < Self::CHUNK => CallLines::Small { remainder: true },
            SizeRule::Small => old,
            SizeRule::Tail if n < Self::CHUNK => CallLines::Small { remainder: !whole },
            SizeRule::Tail if n % Self::CHUNK == 0 => old,
            SizeRule::Tail => {
                let tail = if whole { Tail::NoRemainder } else { Tail::All };
                match old {
                    CallLines::Huge { .. } => CallLines::Huge { tail },
                    _ => CallLines::Wide { tail },
                }
            }
        }
    }
}

/// A small-family line's place in the loop structure ([`tail_lines`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TailLine {
    /// The small run ran it on every call ([`EVERY_CALL`]: structural code, not a branch
    /// some packets take) and the wide run (calls of 64: no tail) never: tail code (a
    /// 4-wide epilogue, a remainder loop).
    pub tail: bool,
    /// A tail line the narrow or the dual run ran too: 2- or 1-wide remainder code, run
    /// only when n mod 4 ≠ 0.
    pub remainder: bool,
}

/// Per line of `small` (one owner's lines of the small family), its [`TailLine`] from the
/// same owner's lines in the `wide`, `narrow` and `dual` families (by address). A line
/// the small run ran in some calls only (a branch, e.g. the path of a vector whose packets
/// all go to one next node, which calls of 1 always take and calls of 64 of mixed traffic
/// never) is no tail line: it keeps its measured rate.
///
/// ```
/// use pktvec_model::icache::{tail_lines, CodeLine, TailLine};
/// let l = |line| CodeLine { line, node: 0, per_call: 1.0, per_packet: 1.0 / 7.0 };
/// // 1: quad body (wide too); 2: 4-wide epilogue (small only); 3: scalar tail (narrow
/// // too); 4: a branch that 8% of the small run's calls took (narrow too).
/// let branch = CodeLine { per_call: 0.08, ..l(4) };
/// let t = tail_lines(&[l(1), l(2), l(3), branch], &[l(1)], &[l(3), l(4)], &[]);
/// assert_eq!(t[0], TailLine { tail: false, remainder: false });
/// assert_eq!(t[1], TailLine { tail: true, remainder: false });
/// assert_eq!(t[2], TailLine { tail: true, remainder: true });
/// assert_eq!(t[3], TailLine { tail: false, remainder: false });
/// ```
pub fn tail_lines(
    small: &[CodeLine],
    wide: &[CodeLine],
    narrow: &[CodeLine],
    dual: &[CodeLine],
) -> Vec<TailLine> {
    let has = |v: &[CodeLine], line: u64| v.iter().any(|x| x.line == line);
    small
        .iter()
        .map(|l| {
            let tail = l.per_call >= EVERY_CALL && !has(wide, l.line);
            TailLine {
                tail,
                remainder: tail && (has(narrow, l.line) || has(dual, l.line)),
            }
        })
        .collect()
}

/// Expected misses per packet of `(line address, touches per packet)` on an LRU cache of
/// geometry `geo` (see the module text). Entries of one line are merged (rates added).
pub fn lru_misses(lines: &[(u64, f64)], geo: CacheGeometry) -> f64 {
    lru_line_misses(lines, geo).iter().sum()
}

/// [`lru_misses`] per entry of `lines` (an entry sharing its line with others gets the
/// line's misses in proportion to its touches).
///
/// ```
/// use pktvec_model::icache::{lru_line_misses, CacheGeometry};
/// let geo = CacheGeometry { bytes: 8192, ways: 8, line: 64 };
/// // Nine lines of set 0 cycled once per packet; line 0 is shared by two owners, each
/// // touching it every other packet.
/// let mut lines: Vec<(u64, f64)> = (1..9).map(|k| (16 * k, 1.0)).collect();
/// lines.push((0, 0.5));
/// lines.push((0, 0.5));
/// let m = lru_line_misses(&lines, geo);
/// assert!((m[0] - 1.0).abs() < 1e-9); // 9 lines in 8 ways: every touch misses
/// assert!((m[8] - 0.5).abs() < 1e-9 && (m[9] - 0.5).abs() < 1e-9);
/// ```
pub fn lru_line_misses(lines: &[(u64, f64)], geo: CacheGeometry) -> Vec<f64> {
    let grouped: Vec<(u64, f64, usize)> = lines.iter().map(|&(l, t)| (l, t, 0)).collect();
    lru_line_misses_grouped(&grouped, geo, Spread::Even)
}

/// How the touches of lines of *different* owners fall between two touches of a line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Spread {
    /// Evenly (periodic calls, e.g. strictly alternating paths): a line touched at a
    /// fraction r of another's rate is touched between two of its touches with probability
    /// min(1, r).
    #[default]
    Even,
    /// At random (paths drawn per packet): with probability 1 − e^(−r) (Poisson). Lines of
    /// the same owner run in the same calls and keep the even form.
    Random,
}

/// [`lru_line_misses`] with each entry's owner (`(line, touches per packet, owner)`) and
/// the [`Spread`] of touches between owners.
///
/// ```
/// use pktvec_model::icache::{lru_line_misses_grouped, CacheGeometry, Spread};
/// let geo = CacheGeometry { bytes: 8192, ways: 8, line: 64 };
/// // Line 0 (owner 0) every packet; eight lines of owner 1 in its set every packet too.
/// let mut lines = vec![(0u64, 1.0, 0usize)];
/// lines.extend((1..9).map(|k| (16 * k, 1.0, 1)));
/// let even: f64 = lru_line_misses_grouped(&lines, geo, Spread::Even).iter().sum();
/// let random: f64 = lru_line_misses_grouped(&lines, geo, Spread::Random).iter().sum();
/// assert!((even - 9.0).abs() < 1e-9); // nine lines cycled through eight ways
/// // At random, line 0 sees all eight others only with probability (1 − 1/e)^8, and each
/// // other line sees line 0 in its gap with probability 1 − 1/e.
/// let p = 1.0 - (-1.0f64).exp();
/// assert!((random - (p.powi(8) + 8.0 * p)).abs() < 1e-9);
/// ```
pub fn lru_line_misses_grouped(
    lines: &[(u64, f64, usize)],
    geo: CacheGeometry,
    spread: Spread,
) -> Vec<f64> {
    let sets = geo.sets() as u64;
    let mut merged: BTreeMap<u64, (f64, usize)> = BTreeMap::new();
    for &(l, t, g) in lines {
        if t > 0.0 {
            merged.entry(l).or_insert((0.0, g)).0 += t;
        }
    }
    let mut by_set: BTreeMap<u64, Vec<(u64, f64, usize)>> = BTreeMap::new();
    for (l, (t, g)) in merged {
        by_set.entry(l % sets).or_default().push((l, t, g));
    }
    let ways = geo.ways;
    let mut per_line: BTreeMap<u64, f64> = BTreeMap::new();
    for rates in by_set.values() {
        if rates.len() <= ways {
            continue; // all fit: compulsory misses only
        }
        for (i, &(l, tl, gl)) in rates.iter().enumerate() {
            // dist[k] = P(k other lines touched in the gap), k capped at `ways`.
            let mut dist = vec![0.0; ways + 1];
            dist[0] = 1.0;
            for (j, &(_, tm, gm)) in rates.iter().enumerate() {
                if j == i {
                    continue;
                }
                let r = tm / tl;
                let p = match spread {
                    Spread::Random if gm != gl => 1.0 - (-r).exp(),
                    _ => r.min(1.0),
                };
                for k in (0..=ways).rev() {
                    let from = if k > 0 { dist[k - 1] * p } else { 0.0 };
                    dist[k] = if k == ways {
                        dist[k] + from
                    } else {
                        dist[k] * (1.0 - p) + from
                    };
                }
            }
            per_line.insert(l, tl * dist[ways]);
        }
    }
    let total: BTreeMap<u64, f64> = lines.iter().fold(BTreeMap::new(), |mut m, &(l, t, _)| {
        *m.entry(l).or_default() += t.max(0.0);
        m
    });
    lines
        .iter()
        .map(|&(l, t, _)| match (per_line.get(&l), total.get(&l)) {
            (Some(m), Some(&tt)) if tt > 0.0 && t > 0.0 => m * t / tt,
            _ => 0.0,
        })
        .collect()
}

/// I1 misses per packet for a setting: each line's touch rate from its owner's
/// [`NodeRate`] (`rates[line.node]`), then [`lru_misses`].
///
/// ```
/// use pktvec_model::icache::{code_misses, CacheGeometry, CodeLine, NodeRate};
/// let l1i = CacheGeometry { bytes: 8192, ways: 8, line: 64 };
/// // Node 0: 12 lines in set 0, run on every call; called once per 64 packets.
/// let lines: Vec<CodeLine> = (0..12)
///     .map(|k| CodeLine { line: 16 * k, node: 0, per_call: 1.0, per_packet: 1.0 / 64.0 })
///     .collect();
/// let m = code_misses(&lines, &[NodeRate { calls: 1.0 / 64.0, packets: 1.0 }], l1i);
/// assert!((m - 12.0 / 64.0).abs() < 1e-9); // all 12 miss on every call
/// ```
pub fn code_misses(lines: &[CodeLine], rates: &[NodeRate], geo: CacheGeometry) -> f64 {
    code_misses_by_node(lines, rates, geo, Spread::Even)
        .iter()
        .sum()
}

/// [`code_misses`] per owner (index as in `rates`): which node's code misses; `spread`:
/// how touches of different nodes' lines fall between each other ([`Spread`]).
pub fn code_misses_by_node(
    lines: &[CodeLine],
    rates: &[NodeRate],
    geo: CacheGeometry,
    spread: Spread,
) -> Vec<f64> {
    let touched: Vec<(u64, f64, usize)> = lines
        .iter()
        .map(|l| {
            let r = rates.get(l.node).copied().unwrap_or_default();
            (l.line, l.touch_rate(r), l.node)
        })
        .collect();
    let mut by_node = vec![0.0; rates.len()];
    for (l, m) in lines
        .iter()
        .zip(lru_line_misses_grouped(&touched, geo, spread))
    {
        if let Some(x) = by_node.get_mut(l.node) {
            *x += m;
        }
    }
    by_node
}

#[cfg(test)]
mod tests {
    use super::*;

    const L1I: CacheGeometry = CacheGeometry {
        bytes: 8192,
        ways: 8,
        line: 64,
    };

    #[test]
    fn size_rule_follows_the_loop_structure() {
        let all = Families {
            dual: true,
            small: true,
            huge: true,
        };
        for n in 1..=300usize {
            let got = SizeRule::Tail.lines(n, all);
            let old = SizeRule::NoSmallFamily.lines(n, all);
            match n {
                1 => assert_eq!(got, CallLines::Narrow),
                2 | 3 => assert_eq!(got, CallLines::Dual),
                // Below a chunk: the small family; its 2-/1-wide remainder only when the
                // quad loop leaves packets over.
                4..=15 => assert_eq!(
                    got,
                    CallLines::Small {
                        remainder: n % 4 != 0
                    }
                ),
                // Whole chunks: no tail, as before.
                _ if n % 16 == 0 => assert_eq!(got, old),
                _ => {
                    let tail = if n % 4 == 0 {
                        Tail::NoRemainder
                    } else {
                        Tail::All
                    };
                    let want = if n > 96 {
                        CallLines::Huge { tail }
                    } else {
                        CallLines::Wide { tail }
                    };
                    assert_eq!(got, want, "n = {n}");
                }
            }
            // Without the small family every rule is the no-small-family one.
            let no_small = Families {
                small: false,
                ..all
            };
            assert_eq!(SizeRule::Tail.lines(n, no_small), old);
            assert_eq!(SizeRule::Small.lines(n, no_small), old);
        }
        // Missing families fall back: dual → narrow, huge → wide.
        let bare = Families::default();
        assert_eq!(SizeRule::Tail.lines(2, bare), CallLines::Narrow);
        assert_eq!(
            SizeRule::Tail.lines(200, bare),
            CallLines::Wide { tail: Tail::None }
        );
    }

    #[test]
    fn lines_of_other_sets_do_not_conflict() {
        // 8 lines in each of the 16 sets (128 lines = 8 KiB): everything fits.
        let all: Vec<(u64, f64)> = (0..128).map(|l| (l, 0.5)).collect();
        assert_eq!(lru_misses(&all, L1I), 0.0);
        // One more line in set 3: only set 3 thrashes (9 lines at 0.5 touches per packet).
        let mut over = all.clone();
        over.push((128 + 3, 0.5));
        assert!((lru_misses(&over, L1I) - 9.0 * 0.5).abs() < 1e-9);
    }

    #[test]
    fn a_rare_line_evicts_little() {
        // 8 hot lines and a ninth touched once every 100 hot rounds in one set: a hot line
        // misses only when the rare one came in between (1/100), the rare one on every
        // touch (eight hot lines were touched since).
        let mut lines: Vec<(u64, f64)> = (0..8).map(|k| (16 * k, 1.0)).collect();
        lines.push((16 * 8, 0.01));
        let m = lru_misses(&lines, L1I);
        let expect = 8.0 * 1.0 * 0.01 + 0.01;
        assert!((m - expect).abs() < 1e-9, "{m} vs {expect}");
    }

    #[test]
    fn misses_are_charged_to_the_node_whose_lines_miss() {
        // Node 0: 8 lines in set 0 (fits alone); node 1: 4 lines in set 0 and 4 in set 1.
        // Both called once per 32 packets: set 0 holds 12 lines touched per round, set 1
        // four. Set 0 thrashes (all 12 miss each round), set 1 fits.
        let line = |l: u64, node: usize| CodeLine {
            line: l,
            node,
            per_call: 1.0,
            per_packet: 1.0 / 32.0,
        };
        let mut lines: Vec<CodeLine> = (0..8).map(|k| line(16 * k, 0)).collect();
        lines.extend((8..12).map(|k| line(16 * k, 1)));
        lines.extend((0..4).map(|k| line(16 * k + 1, 1)));
        let r = NodeRate {
            calls: 1.0 / 32.0,
            packets: 1.0,
        };
        let by = code_misses_by_node(&lines, &[r, r], L1I, Spread::Even);
        assert!((by[0] - 8.0 / 32.0).abs() < 1e-9, "{by:?}");
        assert!((by[1] - 4.0 / 32.0).abs() < 1e-9, "{by:?}");
        // Node 1 not called: node 0's 8 lines fit, nothing misses.
        let by = code_misses_by_node(&lines, &[r, NodeRate::default()], L1I, Spread::Even);
        assert_eq!(by, vec![0.0, 0.0]);
        // Every miss is a touch: misses per packet never exceed touches per packet.
        assert!(code_misses(&lines, &[r, r], L1I) <= 16.0 / 32.0 + 1e-12);
    }

    /// Lines `k` of set 0 (8 KiB: 16 sets) owned by `node`, run on every call.
    fn set0(node: usize, k: std::ops::Range<u64>) -> Vec<CodeLine> {
        k.map(|k| CodeLine {
            line: 16 * k,
            node,
            per_call: 1.0,
            per_packet: 1.0,
        })
        .collect()
    }

    #[test]
    fn lru_sets_evicts_the_least_recent() {
        let mut c = LruSets::new(L1I);
        for k in 0..8 {
            assert!(c.touch(16 * k));
        }
        assert!(!c.touch(0)); // line 0 is now the most recent; line 16 the least
        assert!(c.touch(16 * 8)); // evicts line 16
        assert!(!c.touch(0));
        assert!(c.touch(16)); // gone: evicts line 32
        assert!(c.touch(32));
        // Another set is untouched by all this.
        assert!(c.touch(1));
        assert!(!c.touch(1));
    }

    #[test]
    fn replay_depends_on_the_order_of_calls() {
        // Set 0 holds A's 4 lines, B's 3 and C's 3: ten lines, eight ways.
        let (a, b, c) = (set0(0, 0..4), set0(1, 4..7), set0(2, 7..10));
        let run = |order: &[&Vec<CodeLine>]| {
            let mut r = TraceReplay::new(L1I, 3, 7);
            for round in 0..21 {
                r.counting = round > 0;
                for calls in order {
                    r.call(calls, 1.0);
                }
            }
            r.misses
        };
        // A, B, C in turn: ten lines cycled, every touch misses (20 rounds).
        assert_eq!(run(&[&a, &b, &c]), vec![80, 60, 60]);
        // A, B, A, C: between two calls of A only 3 lines of B or C and A's own 3 others
        // (6 < 8): A always hits. Between two calls of B: A's 4, C's 3, B's 2 others = 9
        // ≥ 8: B misses, and C likewise. 6 misses per round.
        assert_eq!(run(&[&a, &b, &a, &c]), vec![0, 60, 60]);
        // The rate-based estimate cannot tell the two apart beyond the rates: it charges
        // A's lines in the second order too (B and C each come back in half of A's gaps).
        let rates = |ta: f64| -> Vec<(u64, f64, usize)> {
            let mut v: Vec<(u64, f64, usize)> = a.iter().map(|l| (l.line, ta, 0)).collect();
            v.extend(b.iter().map(|l| (l.line, 1.0, 1)));
            v.extend(c.iter().map(|l| (l.line, 1.0, 2)));
            v
        };
        let even: f64 = lru_line_misses_grouped(&rates(2.0), L1I, Spread::Even)
            .iter()
            .sum();
        assert!(even > 6.0, "{even}");
    }

    #[test]
    fn replay_draws_rare_lines_at_their_probability() {
        // Eight hot lines of set 0 every call, and a ninth run by 1% of packets: calls of
        // one packet touch it in ≈ 1% of calls, and it always misses. Touched last in its
        // call, it evicts the least recent hot line h0; in the next call h0 misses and
        // evicts h1, h1 evicts h2, … h7 evicts the rare line: 8 hot misses per rare touch
        // (as the rate-based estimate, `a_rare_line_evicts_little`).
        let mut lines = set0(0, 0..8);
        lines.push(CodeLine {
            line: 16 * 8,
            node: 1,
            per_call: 0.01,
            per_packet: 0.01,
        });
        let mut r = TraceReplay::new(L1I, 2, 3);
        r.call(&lines[..8], 1.0);
        r.counting = true;
        let calls = 200_000;
        for _ in 0..calls {
            r.call(&lines, 1.0);
        }
        let rare = r.touches[1] as f64 / calls as f64;
        assert!((rare - 0.01).abs() < 0.001, "{rare}");
        assert_eq!(r.misses[1], r.touches[1]); // 8 hot lines since: always a miss
        let per_rare = r.misses[0] as f64 / r.touches[1] as f64;
        assert!((per_rare - 8.0).abs() < 0.01, "{per_rare}");
        assert_eq!(r.touches[0], 8 * calls as u64);
    }

    #[test]
    fn ordered_calls_touch_repeats_and_skip_owners_without_packets() {
        // Owner 0: lines 0 and 1 (a loop: line 0 at the start and the end); owner 1: line
        // 2, run only in calls where it gets packets (a receive side).
        let l = |k: u64, node: usize| CodeLine {
            line: 16 * k,
            node,
            per_call: 1.0,
            per_packet: 1.0,
        };
        let lines = vec![l(0, 0), l(1, 0), l(2, 1)];
        let o = |first, last, twice| LineOrder { first, last, twice };
        let ev = call_events(&[o(0.0, 1.0, 0.9), o(0.5, 0.5, 0.0), o(0.7, 0.7, 0.0)]);
        assert_eq!(ev, vec![0, 1, 2, 0]);
        // A line that ran twice in fewer than half of the calls gets one event.
        assert_eq!(
            call_events(&[o(0.0, 1.0, 0.4), o(0.5, 0.5, 0.0)]),
            vec![0, 1]
        );
        let mut r = TraceReplay::new(L1I, 2, 5);
        r.counting = true;
        r.call_ordered(&lines, &ev, |line| if line.node == 1 { 0.0 } else { 4.0 });
        assert_eq!(r.touches, vec![3, 0]); // line 0 twice, line 1; line 2 not run
        assert_eq!(r.misses, vec![2, 0]); // compulsory: lines 0 and 1 once each
        assert_eq!(r.last(), &[(0, 0), (16, 0)]);
        r.call_ordered(&lines, &ev, |_| 4.0);
        assert_eq!(r.touches, vec![6, 1]);
        // Only line 2 is new.
        assert_eq!(r.misses, vec![2, 1]);
        // A rare line (ρ = 0.01 per packet) runs in about 1 − 0.99^n of the calls.
        let rare = vec![CodeLine {
            line: 3,
            node: 0,
            per_call: 0.1,
            per_packet: 0.01,
        }];
        let mut r = TraceReplay::new(L1I, 1, 9);
        r.counting = true;
        for _ in 0..20_000 {
            r.call_ordered(&rare, &[0], |_| 10.0);
        }
        let share = r.touches[0] as f64 / 20_000.0;
        assert!((share - (1.0 - 0.99f64.powi(10))).abs() < 0.01, "{share}");
    }

    #[test]
    fn touch_rate_follows_packets_per_call() {
        let rare = CodeLine {
            line: 0,
            node: 0,
            per_call: 0.1,
            per_packet: 0.02,
        };
        let every = CodeLine {
            per_call: 1.0,
            ..rare.clone()
        };
        // Calls of 1 packet: a rare line runs in 2% of calls; an every-call line always.
        let r1 = NodeRate {
            calls: 1.0,
            packets: 1.0,
        };
        assert!((rare.touch_rate(r1) - 0.02).abs() < 1e-12);
        assert_eq!(every.touch_rate(r1), 1.0);
        // Calls of 256: the rare line is touched in almost every call.
        let r256 = NodeRate {
            calls: 1.0 / 256.0,
            packets: 1.0,
        };
        let t = rare.touch_rate(r256) * 256.0;
        assert!(t > 0.99 && t < 1.0, "{t}");
        // A node never called touches nothing.
        assert_eq!(every.touch_rate(NodeRate::default()), 0.0);
    }
}
