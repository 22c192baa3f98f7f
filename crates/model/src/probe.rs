//! Machine probe: cache geometry from sysfs, the TSC rate, memory latency by pointer
//! chasing and memory-level parallelism by several chases at once.

use serde::{Deserialize, Serialize};
use std::time::Instant;

/// What the probe found.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    /// Cache line, bytes.
    pub line: usize,
    /// L1 instruction cache, bytes (0 if unknown).
    pub l1i: usize,
    /// L1 data cache, bytes.
    pub l1d: usize,
    /// L2, bytes.
    pub l2: usize,
    /// Last-level cache, bytes.
    pub llc: usize,
    /// Time-stamp counter rate, Hz.
    pub tsc_hz: f64,
    /// Latency of a dependent load over `chase_bytes` of memory, nanoseconds.
    pub mem_latency_ns: f64,
    /// Memory-level parallelism: latency / time per load with `mlp_chains` chases at once.
    pub mlp: f64,
    /// Size of the chased buffer, bytes.
    pub chase_bytes: usize,
    /// Chases run at once for `mlp`.
    pub mlp_chains: usize,
}

/// Probe settings.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProbeConfig {
    /// Buffer to chase through (make it larger than the LLC to measure memory).
    pub chase_bytes: usize,
    /// Dependent loads per chase.
    pub loads: usize,
    /// Concurrent chases for the MLP measurement.
    pub chains: usize,
}

impl Default for ProbeConfig {
    fn default() -> Self {
        ProbeConfig {
            chase_bytes: 64 << 20,
            loads: 2_000_000,
            chains: 16,
        }
    }
}

fn sysfs(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

fn parse_size(s: &str) -> usize {
    let (num, mul) = match s.chars().last() {
        Some('K') => (&s[..s.len() - 1], 1 << 10),
        Some('M') => (&s[..s.len() - 1], 1 << 20),
        Some('G') => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.parse::<usize>().unwrap_or(0) * mul
}

/// Cache geometry of CPU 0 from `/sys/devices/system/cpu/cpu0/cache` (zeros if absent).
pub fn caches() -> (usize, usize, usize, usize, usize) {
    let (mut line, mut l1i, mut l1d, mut l2, mut llc) = (64, 0, 0, 0, 0);
    for i in 0..8 {
        let base = format!("/sys/devices/system/cpu/cpu0/cache/index{i}");
        let (Some(level), Some(ty), Some(size)) = (
            sysfs(&format!("{base}/level")),
            sysfs(&format!("{base}/type")),
            sysfs(&format!("{base}/size")),
        ) else {
            continue;
        };
        let size = parse_size(&size);
        if let Some(l) = sysfs(&format!("{base}/coherency_line_size")).and_then(|s| s.parse().ok())
        {
            line = l;
        }
        match (level.as_str(), ty.as_str()) {
            ("1", "Instruction") => l1i = size,
            ("1", "Data") => l1d = size,
            ("2", _) => l2 = size,
            (_, _) => llc = llc.max(size),
        }
    }
    (line, l1i, l1d, l2, llc)
}

/// A random cyclic permutation of cache lines: `next[i]` is the line after line `i`.
fn chain(lines: usize, seed: u64) -> Vec<u64> {
    let mut order: Vec<u64> = (0..lines as u64).collect();
    let mut x = seed | 1;
    for i in (1..lines).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        order.swap(i, (x % (i as u64 + 1)) as usize);
    }
    // 8 u64 per line: element 0 of each line holds the next line's index.
    let mut next = vec![0u64; lines * 8];
    for w in 0..lines {
        next[order[w] as usize * 8] = order[(w + 1) % lines] * 8;
    }
    next
}

/// Nanoseconds per load for `chains` independent chases of `loads` loads each.
fn chase(buf: &[u64], chains: usize, loads: usize) -> f64 {
    let lines = buf.len() / 8;
    let mut pos: Vec<u64> = (0..chains)
        .map(|c| ((c * lines / chains) * 8) as u64)
        .collect();
    // Start each chain on the cycle: follow it a little first.
    for p in pos.iter_mut() {
        *p = buf[*p as usize];
    }
    let t = Instant::now();
    for _ in 0..loads {
        for p in pos.iter_mut() {
            *p = buf[*p as usize];
        }
    }
    let ns = t.elapsed().as_nanos() as f64;
    std::hint::black_box(&pos);
    ns / (loads * chains) as f64
}

impl Machine {
    /// Probes this machine (takes about a second with the default settings).
    pub fn probe(cfg: ProbeConfig, tsc_hz: f64) -> Machine {
        let (line, l1i, l1d, l2, llc) = caches();
        let lines = (cfg.chase_bytes / 64).max(1024);
        let buf = chain(lines, 0x9e37_79b9_7f4a_7c15);
        let lat = chase(&buf, 1, cfg.loads);
        let per = chase(&buf, cfg.chains, cfg.loads / cfg.chains.max(1));
        Machine {
            line,
            l1i,
            l1d,
            l2,
            llc,
            tsc_hz,
            mem_latency_ns: lat,
            mlp: (lat / per).max(1.0),
            chase_bytes: lines * 64,
            mlp_chains: cfg.chains,
        }
    }

    /// Memory latency in TSC cycles.
    pub fn mem_latency_cycles(&self) -> f64 {
        self.mem_latency_ns * self.tsc_hz / 1e9
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chain_is_one_cycle() {
        let buf = chain(1000, 7);
        let mut p = 0u64;
        let mut seen = std::collections::HashSet::new();
        for _ in 0..1000 {
            p = buf[p as usize];
            assert!(seen.insert(p));
        }
        assert_eq!(
            buf[p as usize],
            *seen.iter().next().map(|_| &buf[p as usize]).unwrap()
        );
        assert_eq!(seen.len(), 1000);
        assert_eq!(parse_size("32K"), 32768);
        assert_eq!(parse_size("1M"), 1 << 20);
    }

    #[test]
    fn probe_finds_plausible_numbers() {
        let m = Machine::probe(
            ProbeConfig {
                chase_bytes: 4 << 20,
                loads: 200_000,
                chains: 8,
            },
            2.6e9,
        );
        assert!(m.line == 64 || m.line == 128);
        assert!(
            m.mem_latency_ns > 0.3 && m.mem_latency_ns < 10_000.0,
            "{m:?}"
        );
        assert!(m.mlp >= 1.0);
    }
}
