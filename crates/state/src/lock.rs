//! A test-and-test-and-set spin lock whose word transactions can read (lock elision).

use std::sync::atomic::{AtomicU32, Ordering};

/// A spin lock on one 32-bit word. Transactions that elide it read the word inside the
/// transaction ([`is_locked`](Self::is_locked)): a worker that really takes it writes the
/// word and so aborts every transaction that elided it.
///
/// ```
/// use pktvec_state::lock::SpinLock;
/// let l = SpinLock::new();
/// assert!(!l.lock()); // not contended
/// assert!(l.is_locked());
/// assert!(!l.try_lock());
/// l.unlock();
/// assert!(!l.is_locked());
/// ```
#[derive(Debug, Default)]
pub struct SpinLock {
    word: AtomicU32,
}

impl SpinLock {
    /// An unlocked lock.
    pub const fn new() -> SpinLock {
        SpinLock {
            word: AtomicU32::new(0),
        }
    }

    /// Takes the lock, spinning (reading, with `pause`) while another holds it. Returns
    /// whether it had to wait.
    #[inline]
    pub fn lock(&self) -> bool {
        if self.try_lock() {
            return false;
        }
        loop {
            while self.is_locked() {
                std::hint::spin_loop();
            }
            if self.try_lock() {
                return true;
            }
        }
    }

    /// Takes the lock if it is free.
    #[inline]
    pub fn try_lock(&self) -> bool {
        self.word
            .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    /// Releases the lock.
    #[inline]
    pub fn unlock(&self) {
        self.word.store(0, Ordering::Release);
    }

    /// Whether someone holds the lock (a transaction eliding it reads this).
    #[inline]
    pub fn is_locked(&self) -> bool {
        self.word.load(Ordering::Acquire) != 0
    }

    /// Waits until the lock is free, without taking it.
    #[inline]
    pub fn wait_free(&self) {
        while self.is_locked() {
            std::hint::spin_loop();
        }
    }
}
