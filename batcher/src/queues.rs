//! Per-path queues, the round-robin (optionally weighted) scheduler, the flush deadline,
//! the elephant/mice queue assignment and the statistics. No packet bytes are touched here:
//! queues hold buffer indices in fixed rings and their arrival times as runs (one entry
//! per burst and next node, not per packet).

use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// Path ids the batcher tells apart; a path table id at or above this counts as the last.
pub const MAX_PATHS: usize = 256;

/// What to do with a packet whose queue is full.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FullPolicy {
    /// Drop it (counted as "batcher queue full").
    Drop,
    /// Send the queue's oldest packets on now, as a partial vector if need be, and keep it.
    Flush,
}

/// Batcher settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BatcherConfig {
    /// Off: packets pass straight through (same source, same cost of reading it), for
    /// comparisons; the graph is the same either way.
    pub enabled: bool,
    /// Packets per emitted vector (at most the graph's vector size).
    pub batch_size: usize,
    /// Number of queues (1..=64). Queue 0 is shared by the mice paths; each elephant path
    /// gets one of the others.
    pub max_queues: usize,
    /// Packets one queue may hold.
    pub queue_capacity: usize,
    /// A packet is never held longer than this (microseconds): its queue is sent on,
    /// partial, when its oldest packet reaches it.
    pub flush_deadline_us: f64,
    /// Full-queue policy.
    pub on_full: FullPolicy,
    /// A path carrying at least this share of an epoch's packets is an elephant.
    pub elephant_share: f64,
    /// Packets per epoch: the queue assignment is re-decided from the measured rates at
    /// the end of each.
    pub epoch_packets: u64,
    /// Weighted round robin: `[path, weight]` pairs (default weight 1): the queue of a path
    /// may send this many vectors in a row.
    pub weights: Vec<(u16, u32)>,
    /// On uniform traffic (nothing held, every burst a whole batch of one path and next
    /// node), let further bursts of the same path join the vector handed over, up to the
    /// graph's vector size: single-path traffic then runs in vectors of the graph's size
    /// instead of `batch_size` (the mean fill of such vectors exceeds 1). Off: every
    /// vector holds at most `batch_size` packets.
    pub uniform_vectors: bool,
}

impl Default for BatcherConfig {
    fn default() -> Self {
        BatcherConfig {
            enabled: true,
            batch_size: 256,
            max_queues: 8,
            queue_capacity: 1024,
            flush_deadline_us: 100.0,
            on_full: FullPolicy::Flush,
            elephant_share: 0.05,
            epoch_packets: 1 << 16,
            weights: Vec::new(),
            uniform_vectors: true,
        }
    }
}

/// Statistics of one queue.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct QueueStats {
    /// Paths assigned to it now.
    pub paths: Vec<u16>,
    /// Packets sent on.
    pub packets: u64,
    /// Vectors sent on.
    pub vectors: u64,
    /// Mean vector fill: packets / vectors / batch size (above 1 when uniform bursts
    /// joined into vectors larger than a batch, [`BatcherConfig::uniform_vectors`]).
    pub mean_fill: f64,
    /// Packets held now.
    pub held: usize,
    /// Vectors sent because of the deadline (partial).
    pub deadline_flushes: u64,
    /// Vectors sent early because the queue was full.
    pub full_flushes: u64,
    /// Vectors (of those counted in `vectors`) that left as the burst(s) they arrived in,
    /// without entering the queue: whole batches of one path and one arc whose queue was
    /// empty (several in one vector with [`BatcherConfig::uniform_vectors`]).
    pub passed_through: u64,
}

/// Statistics of the batcher.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BatcherStats {
    /// Per queue.
    pub queues: Vec<QueueStats>,
    /// Packets per path id (paths seen).
    pub path_packets: Vec<(u16, u64)>,
    /// Packets dropped because their queue was full.
    pub dropped_full: u64,
    /// Added latency (time held) of the packets sent on: median, in nanoseconds.
    pub latency_p50_ns: f64,
    /// 99th percentile, nanoseconds.
    pub latency_p99_ns: f64,
    /// Largest, nanoseconds.
    pub latency_max_ns: f64,
    /// Queue reassignments (elephant/mice decisions that changed something).
    pub remaps: u64,
}

/// Held-time histogram: 8 linear sub-buckets per power of two of TSC cycles.
#[derive(Clone, Debug)]
pub(crate) struct Histogram {
    buckets: Vec<u64>,
    max: u64,
}

impl Histogram {
    pub(crate) fn new() -> Self {
        Histogram {
            buckets: vec![0; 64 * 8],
            max: 0,
        }
    }
    #[inline]
    fn index(v: u64) -> usize {
        if v < 8 {
            return v as usize;
        }
        let msb = 63 - v.leading_zeros() as usize;
        msb * 8 + ((v >> (msb - 3)) & 7) as usize
    }
    #[inline]
    pub(crate) fn add(&mut self, v: u64, n: u64) {
        self.buckets[Self::index(v)] += n;
        self.max = self.max.max(v);
    }
    /// Upper bound of the bucket holding quantile `q` (cycles).
    pub(crate) fn quantile(&self, q: f64) -> u64 {
        let total: u64 = self.buckets.iter().sum();
        if total == 0 {
            return 0;
        }
        let want = ((total as f64 * q).ceil() as u64).max(1);
        let mut acc = 0;
        for (i, &c) in self.buckets.iter().enumerate() {
            acc += c;
            if acc >= want {
                if i < 8 {
                    return i as u64;
                }
                let (msb, sub) = (i / 8, (i % 8) as u64);
                return ((8 + sub + 1) << (msb - 3)) - 1;
            }
        }
        self.max
    }
}

/// A fixed ring of buffer indices (power-of-two size, allocated once).
pub(crate) struct Ring {
    buf: Box<[u32]>,
    head: usize,
    len: usize,
}

impl Ring {
    pub(crate) fn new(min: usize) -> Self {
        Ring {
            buf: vec![0; min.max(1).next_power_of_two()].into_boxed_slice(),
            head: 0,
            len: 0,
        }
    }
    #[inline(always)]
    pub(crate) fn len(&self) -> usize {
        self.len
    }
    #[inline(always)]
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Slots in all.
    pub(crate) fn size(&self) -> usize {
        self.buf.len()
    }
    #[inline(always)]
    pub(crate) fn room(&self) -> usize {
        self.buf.len() - self.len
    }
    /// Appends one index; the caller checked [`room`](Self::room).
    #[inline(always)]
    pub(crate) fn push(&mut self, bi: u32) {
        let mask = self.buf.len() - 1;
        self.buf[(self.head + self.len) & mask] = bi;
        self.len += 1;
    }
    /// Appends a slice (at most two bulk copies); the caller checked [`room`](Self::room).
    #[inline]
    pub(crate) fn extend(&mut self, bis: &[u32]) {
        let size = self.buf.len();
        let tail = (self.head + self.len) & (size - 1);
        let first = bis.len().min(size - tail);
        self.buf[tail..tail + first].copy_from_slice(&bis[..first]);
        self.buf[..bis.len() - first].copy_from_slice(&bis[first..]);
        self.len += bis.len();
    }
    /// Appends, in order, the indices of `bis` whose class in `cls` is `c`; the caller
    /// checked that [`room`](Self::room) exceeds their number. Branch-free: every index is
    /// written at the tail and only the matching ones advance it (the slot written last
    /// is free, hence the one slot to spare).
    #[inline]
    pub(crate) fn extend_matching(&mut self, bis: &[u32], cls: &[u16], c: u16) {
        let mask = self.buf.len() - 1;
        let mut t = self.head + self.len;
        for (&bi, &x) in bis.iter().zip(cls) {
            self.buf[t & mask] = bi;
            t += (x == c) as usize;
        }
        self.len = t - self.head;
    }
    /// The first `k` indices (`k ≤ len`) as at most two slices; then [`pop`](Self::pop).
    #[inline]
    pub(crate) fn front(&self, k: usize) -> (&[u32], &[u32]) {
        let size = self.buf.len();
        let first = k.min(size - self.head);
        (
            &self.buf[self.head..self.head + first],
            &self.buf[..k - first],
        )
    }
    /// Removes the first `k` indices (`k ≤ len`).
    #[inline]
    pub(crate) fn pop(&mut self, k: usize) {
        self.head = (self.head + k) & (self.buf.len() - 1);
        self.len -= k;
    }
}

/// Packets of one queue that arrived in one burst and go to the same next node.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Run {
    /// Arrival time (TSC).
    pub t: u64,
    /// Packets.
    pub n: u32,
    /// Where they enter the graph (the batcher's arc index).
    pub arc: u16,
}

pub(crate) struct Queue {
    pub bufs: Ring,
    pub runs: VecDeque<Run>,
    pub stats: QueueStats,
    pub weight: u32,
}

impl Queue {
    /// Appends `n` packets that arrived at `t` for arc `arc` to the runs (the indices go
    /// to `bufs` separately).
    #[inline(always)]
    pub(crate) fn note(&mut self, t: u64, n: u32, arc: u16) {
        match self.runs.back_mut() {
            Some(r) if r.t == t && r.arc == arc => r.n += n,
            // Never reallocates: a run holds at least one packet and the deque was
            // allocated for the ring's size.
            _ => self.runs.push_back(Run { t, n, arc }),
        }
    }
}

/// The queues and the scheduler state.
pub(crate) struct Queues {
    pub q: Vec<Queue>,
    /// Path → queue.
    pub map: Vec<u8>,
    pub rr: usize,
    pub burst_left: u32,
    pub epoch_counts: Vec<u64>,
    pub total_counts: Vec<u64>,
    pub epoch_seen: u64,
    pub pending_map: Option<Vec<u8>>,
    pub hist: Histogram,
    pub dropped_full: u64,
    pub remaps: u64,
    pub held: usize,
}

impl Queues {
    /// Indices one queue's ring holds (all rings have the same size).
    pub(crate) fn ring_size(&self) -> usize {
        self.q.iter().map(|q| q.bufs.size()).min().unwrap_or(0)
    }

    pub(crate) fn new(cfg: &BatcherConfig) -> Self {
        let n = cfg.max_queues.clamp(1, 64);
        let cap = cfg.queue_capacity.max(cfg.batch_size);
        // A queue holds at most its capacity plus one burst (a burst is at most a batch).
        let ring = cap + cfg.batch_size;
        Queues {
            q: (0..n)
                .map(|_| Queue {
                    bufs: Ring::new(ring),
                    runs: VecDeque::with_capacity(ring.next_power_of_two()),
                    stats: QueueStats::default(),
                    weight: 1,
                })
                .collect(),
            // Until the first epoch ends, paths take queues in order of their ids.
            map: (0..MAX_PATHS).map(|p| (p % n) as u8).collect(),
            rr: 0,
            burst_left: 0,
            epoch_counts: vec![0; MAX_PATHS],
            total_counts: vec![0; MAX_PATHS],
            epoch_seen: 0,
            pending_map: None,
            hist: Histogram::new(),
            dropped_full: 0,
            remaps: 0,
            held: 0,
        }
    }

    /// At an epoch's end: elephants (share ≥ threshold, largest first) get queues 1..n, the
    /// rest share queue 0. Returns the new map if it differs.
    pub(crate) fn decide(&mut self, cfg: &BatcherConfig) -> Option<Vec<u8>> {
        let n = self.q.len();
        let total: u64 = self.epoch_counts.iter().sum();
        if total == 0 {
            return None;
        }
        let mut paths: Vec<(u64, usize)> = self
            .epoch_counts
            .iter()
            .enumerate()
            .filter(|(_, &c)| c as f64 >= cfg.elephant_share * total as f64 && c > 0)
            .map(|(p, &c)| (c, p))
            .collect();
        paths.sort_unstable_by(|a, b| b.cmp(a));
        let mut map = vec![0u8; MAX_PATHS];
        if n == 1 {
            // One queue: everything shares it.
        } else if paths.len() < n {
            // Every elephant gets its own queue (1..); mice share 0.
            for (k, &(_, p)) in paths.iter().enumerate() {
                map[p] = (k + 1) as u8;
            }
        } else {
            for (k, &(_, p)) in paths.iter().take(n - 1).enumerate() {
                map[p] = (k + 1) as u8;
            }
        }
        for c in self.epoch_counts.iter_mut() {
            *c = 0;
        }
        self.epoch_seen = 0;
        (map != self.map).then_some(map)
    }
}
