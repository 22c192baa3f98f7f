//! x86 Restricted Transactional Memory (`xbegin`/`xend`/`xabort`/`xtest`) through stable
//! inline assembly, detected at run time.
//!
//! Rust's RTM intrinsics are unstable; the four instructions are a few lines of `asm!`.
//! [`Rtm::detect`] checks CPUID (leaf 7, EBX bit 11) and then runs a probe transaction
//! that must commit: CPUs whose microcode disables TSX keep the CPUID bit on some kernels
//! but abort every transaction, and RTM on them is reported absent. Only a detected
//! [`Rtm`] executes the instructions, so a CPU without them never sees one.
//!
//! ```
//! use pktvec_state::rtm::Rtm;
//! match Rtm::detect() {
//!     Ok(rtm) => {
//!         let mut x = 0u64;
//!         // retried until it commits (bounded), as a lock-eliding section would
//!         let committed = (0..100).any(|_| rtm.run(|| x += 1).is_ok());
//!         assert!(committed && x == 1);
//!     }
//!     Err(why) => println!("no RTM here: {why}"),
//! }
//! ```

use std::fmt;

/// `xbegin`'s value when the transaction started (and `eax` was left as set).
pub const STARTED: u32 = u32::MAX;
/// Abort status bit: `xabort` executed (its code is in bits 24..32).
pub const ABORT_EXPLICIT: u32 = 1 << 0;
/// Abort status bit: the transaction may succeed on a retry.
pub const ABORT_RETRY: u32 = 1 << 1;
/// Abort status bit: another processor conflicted with the read or write set.
pub const ABORT_CONFLICT: u32 = 1 << 2;
/// Abort status bit: the read or write set overflowed the transactional buffer.
pub const ABORT_CAPACITY: u32 = 1 << 3;
/// The `xabort` code a lock-eliding section uses when it finds the lock taken.
pub const LOCK_BUSY: u8 = 0xff;

/// Why a transaction aborted, from its status word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AbortCause {
    /// Another processor touched a line in the read or write set.
    Conflict,
    /// The read or write set did not fit.
    Capacity,
    /// `xabort` (for lock elision: the lock was taken).
    Explicit(u8),
    /// Anything else: interrupts, page faults, unsupported instructions, debug, nesting.
    Other,
}

impl AbortCause {
    /// The cause of an abort status (not [`STARTED`]).
    ///
    /// ```
    /// use pktvec_state::rtm::{AbortCause, ABORT_CONFLICT, ABORT_RETRY, ABORT_EXPLICIT};
    /// assert_eq!(AbortCause::of(ABORT_CONFLICT | ABORT_RETRY), AbortCause::Conflict);
    /// assert_eq!(AbortCause::of(ABORT_EXPLICIT | 0xff << 24), AbortCause::Explicit(0xff));
    /// assert_eq!(AbortCause::of(0), AbortCause::Other);
    /// ```
    pub fn of(status: u32) -> AbortCause {
        if status & ABORT_EXPLICIT != 0 {
            AbortCause::Explicit((status >> 24) as u8)
        } else if status & ABORT_CONFLICT != 0 {
            AbortCause::Conflict
        } else if status & ABORT_CAPACITY != 0 {
            AbortCause::Capacity
        } else {
            AbortCause::Other
        }
    }
}

/// Why RTM cannot be used on this machine.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RtmUnavailable {
    /// Not an x86-64 build.
    #[error("hardware transactions need x86-64 RTM; this build is for another architecture")]
    NotX86,
    /// CPUID does not list RTM (AMD processors, and Intel ones with TSX disabled).
    #[error("this CPU ({0}) has no RTM (CPUID leaf 7 EBX bit 11 is clear; `grep -w rtm /proc/cpuinfo` finds nothing)")]
    NoCpuid(String),
    /// CPUID lists RTM but no probe transaction committed.
    #[error("this CPU ({cpu}) lists RTM but none of {tries} probe transactions committed (last status {status:#x}): TSX is disabled by microcode or the kernel")]
    ProbeFailed {
        /// The CPU's brand string.
        cpu: String,
        /// Probe transactions tried.
        tries: u32,
        /// The last abort status.
        status: u32,
    },
}

/// Proof that this CPU runs RTM transactions: only [`Rtm::detect`] makes one.
#[derive(Clone, Copy)]
pub struct Rtm {
    _detected: (),
}

impl fmt::Debug for Rtm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Rtm")
    }
}

/// The CPU's brand string (CPUID leaves 0x8000_0002..4), for messages.
pub fn cpu_brand() -> String {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::__cpuid;
        // CPUID is unprivileged and present on every x86-64 CPU; leaf 0x8000_0000 says
        // how many extended leaves exist before any is read.
        let max = __cpuid(0x8000_0000).eax;
        if max < 0x8000_0004 {
            return "unknown CPU".into();
        }
        let mut bytes = Vec::with_capacity(48);
        for leaf in 0x8000_0002u32..=0x8000_0004 {
            let r = __cpuid(leaf);
            for w in [r.eax, r.ebx, r.ecx, r.edx] {
                bytes.extend_from_slice(&w.to_le_bytes());
            }
        }
        String::from_utf8_lossy(&bytes)
            .trim_matches(char::from(0))
            .trim()
            .to_string()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        "unknown CPU".into()
    }
}

impl Rtm {
    /// Probe transactions tried before RTM is declared unusable.
    pub const PROBE_TRIES: u32 = 64;

    /// RTM if CPUID lists it and a probe transaction commits.
    pub fn detect() -> Result<Rtm, RtmUnavailable> {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{__cpuid, __cpuid_count};
            if __cpuid(0).eax < 7 || __cpuid_count(7, 0).ebx & (1 << 11) == 0 {
                return Err(RtmUnavailable::NoCpuid(cpu_brand()));
            }
            let rtm = Rtm { _detected: () };
            let mut status = 0;
            for _ in 0..Self::PROBE_TRIES {
                let mut x = 0u32;
                match rtm.run(|| x += 1) {
                    Ok(()) if x == 1 => return Ok(rtm),
                    Ok(()) => {}
                    Err(s) => status = s,
                }
            }
            Err(RtmUnavailable::ProbeFailed {
                cpu: cpu_brand(),
                tries: Self::PROBE_TRIES,
                status,
            })
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            Err(RtmUnavailable::NotX86)
        }
    }

    /// Starts a transaction: [`STARTED`], or (execution resumes here after an abort, with
    /// every memory write since undone) the abort status.
    ///
    /// Between `begin` returning [`STARTED`] and [`end`](Self::end) nothing may make a
    /// system call or do I/O that must not be repeated: an abort rolls memory and
    /// registers back to this point and `begin` returns again.
    #[inline(always)]
    pub fn begin(self) -> u32 {
        #[cfg(target_arch = "x86_64")]
        {
            let status: u32;
            // SAFETY: `Rtm` exists only after `detect` saw CPUID's RTM bit and committed
            // a probe transaction, so `xbegin` is a valid instruction here. The assembly
            // sets eax to STARTED and begins a transaction whose fallback address is the
            // label right after it; on an abort the CPU restores every register but eax
            // to its value at `xbegin`, discards the transaction's memory writes and
            // jumps to the label with the status in eax. To the compiler this block
            // therefore returns once per attempt with the state it had on entry, as if
            // the code run speculatively had never run: the block is not `nomem`, so no
            // memory access is moved across it.
            unsafe {
                std::arch::asm!(
                    "mov eax, 0xffffffff",
                    "xbegin 2f",
                    "2:",
                    out("eax") status,
                    options(nostack),
                );
            }
            status
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            0
        }
    }

    /// Commits the transaction [`begin`](Self::begin) started.
    ///
    /// # Panics
    /// If no transaction is active (`xend` outside one would fault).
    #[inline(always)]
    pub fn end(self) {
        assert!(self.in_transaction(), "Rtm::end outside a transaction");
        #[cfg(target_arch = "x86_64")]
        // SAFETY: RTM is present (see `begin`) and a transaction is active (checked
        // above with `xtest`), so `xend` commits it and cannot raise #GP.
        unsafe {
            std::arch::asm!("xend", options(nostack));
        }
    }

    /// Aborts the active transaction with [`LOCK_BUSY`] (a no-op outside one): execution
    /// continues at [`begin`](Self::begin), which returns the explicit-abort status.
    #[inline(always)]
    pub fn abort_lock_busy(self) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: RTM is present (see `begin`); `xabort` outside a transaction is a
        // no-op, inside one it ends it the way `begin` documents.
        unsafe {
            std::arch::asm!("xabort 0xff", options(nostack));
        }
    }

    /// Whether a transaction is active (`xtest`).
    #[inline(always)]
    pub fn in_transaction(self) -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            let inside: u8;
            // SAFETY: RTM is present (see `begin`); `xtest` only sets ZF (clear inside a
            // transaction) and touches no memory.
            unsafe {
                std::arch::asm!(
                    "xtest",
                    "setnz {x}",
                    x = out(reg_byte) inside,
                    options(nostack, nomem),
                );
            }
            inside != 0
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            false
        }
    }

    /// Runs `f` in one transaction: `Ok` if it committed, `Err(status)` if it aborted
    /// (its memory writes undone). `f` must not make system calls or panic.
    #[inline(always)]
    pub fn run<R>(self, mut f: impl FnMut() -> R) -> Result<R, u32> {
        let status = self.begin();
        if status != STARTED {
            return Err(status);
        }
        let r = f();
        self.end();
        Ok(r)
    }
}
