//! Process-shared locks on a futex word, for MutexContention and
//! PriorityInversion: a plain three-state futex mutex (0 free, 1 locked,
//! 2 locked with waiters) and a priority-inheriting one built on
//! `FUTEX_LOCK_PI`/`FUTEX_UNLOCK_PI`, where the word holds the owner's tid.
//!
//! Every wait is bounded so a stop request is seen; `lock` returns the ns
//! spent waiting (`Some(0)` when uncontended) or `None` on STOP.

use std::sync::atomic::{AtomicU32, Ordering};

use crate::shared::futex_wait;
use crate::stop::stop_requested;
use runq_kernel::clock::fast::now_ns;
use runq_kernel::clock::gettid;

/// Longest single wait before rechecking STOP.
const WAIT_SLICE_NS: u64 = 100_000_000;

/// A lock word in shared memory.
pub(super) struct FutexLock<'a> {
    word: &'a AtomicU32,
    pi: bool,
}

impl<'a> FutexLock<'a> {
    /// Wraps `word`; `pi` selects the priority-inheriting protocol.
    pub(super) fn new(word: &'a AtomicU32, pi: bool) -> Self {
        FutexLock { word, pi }
    }

    /// Takes the lock; see the module doc for the return value.
    pub(super) fn lock(&self) -> Option<u64> {
        if self.pi {
            self.lock_pi()
        } else {
            self.lock_plain()
        }
    }

    /// Releases a lock taken by this thread.
    pub(super) fn unlock(&self) {
        if self.pi {
            self.unlock_pi();
        } else if self.word.fetch_sub(1, Ordering::Release) != 1 {
            self.word.store(0, Ordering::Release);
            crate::shared::futex_wake(self.word, 1);
        }
    }

    fn lock_plain(&self) -> Option<u64> {
        let mut c = match self
            .word
            .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
        {
            Ok(_) => return Some(0),
            Err(c) => c,
        };
        let t0 = now_ns();
        if c != 2 {
            c = self.word.swap(2, Ordering::Acquire);
        }
        while c != 0 {
            if stop_requested() {
                return None;
            }
            futex_wait(self.word, 2, WAIT_SLICE_NS);
            c = self.word.swap(2, Ordering::Acquire);
        }
        Some(now_ns().saturating_sub(t0))
    }

    fn lock_pi(&self) -> Option<u64> {
        let tid = gettid();
        if self
            .word
            .compare_exchange(0, tid, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            return Some(0);
        }
        let t0 = now_ns();
        loop {
            if stop_requested() {
                return None;
            }
            if futex_lock_pi(self.word, WAIT_SLICE_NS) {
                return Some(now_ns().saturating_sub(t0));
            }
        }
    }

    fn unlock_pi(&self) {
        let tid = gettid();
        if self
            .word
            .compare_exchange(tid, 0, Ordering::Release, Ordering::Relaxed)
            .is_err()
        {
            // Waiters are queued in the kernel: let it hand the lock over.
            // SAFETY: the word is a live u32 owned by this thread.
            unsafe { libc::syscall(libc::SYS_futex, self.word.as_ptr(), libc::FUTEX_UNLOCK_PI) };
        }
    }
}

/// One `FUTEX_LOCK_PI` attempt bounded by `timeout_ns`; true when the
/// kernel gave us the lock.
fn futex_lock_pi(word: &AtomicU32, timeout_ns: u64) -> bool {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid out-pointer. LOCK_PI timeouts are CLOCK_REALTIME.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut now) };
    let total = now.tv_nsec as u64 + timeout_ns;
    let deadline = libc::timespec {
        tv_sec: now.tv_sec + (total / 1_000_000_000) as libc::time_t,
        tv_nsec: (total % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: word is a live u32; deadline is valid for the call.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_LOCK_PI,
            0,
            &deadline as *const libc::timespec,
        )
    };
    rc == 0
}
