//! Cycle counter: the time-stamp counter on x86, a monotonic clock elsewhere.
//!
//! The dispatcher reads it once per node call and charges the difference to the node, as
//! VPP does; [`tsc_hz`] converts cycles to time for display.
//!
//! ```
//! let t0 = pktvec_graph::clock::now();
//! let t1 = pktvec_graph::clock::now();
//! assert!(t1 >= t0);
//! assert!(pktvec_graph::clock::tsc_hz() > 1.0e6);
//! ```

use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Current value of the cycle counter.
#[inline(always)]
pub fn now() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: RDTSC is available on every x86_64 CPU, reads a register and has no
        // memory effects; the function is only unsafe because it is an intrinsic.
        unsafe { std::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        static START: OnceLock<Instant> = OnceLock::new();
        START.get_or_init(Instant::now).elapsed().as_nanos() as u64
    }
}

/// Cycles per second of [`now`], measured once (about 20 ms) against the OS clock.
pub fn tsc_hz() -> f64 {
    static HZ: OnceLock<f64> = OnceLock::new();
    *HZ.get_or_init(|| {
        let mut best = f64::MAX;
        // Three short measurements; the smallest ratio is the least disturbed one.
        for _ in 0..3 {
            let t0 = Instant::now();
            let c0 = now();
            while t0.elapsed() < Duration::from_millis(7) {
                std::hint::spin_loop();
            }
            let c1 = now();
            let dt = t0.elapsed().as_secs_f64();
            let hz = (c1 - c0) as f64 / dt;
            if hz > 0.0 && hz < best {
                best = hz;
            }
        }
        if best == f64::MAX {
            1.0e9
        } else {
            best
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counter_advances_and_rate_is_plausible() {
        let a = now();
        let mut x = 0u64;
        for i in 0..10_000u64 {
            x = x.wrapping_add(std::hint::black_box(i));
        }
        std::hint::black_box(x);
        let b = now();
        assert!(b > a);
        let hz = tsc_hz();
        assert!((1.0e8..1.0e11).contains(&hz), "implausible TSC rate {hz}");
    }
}
