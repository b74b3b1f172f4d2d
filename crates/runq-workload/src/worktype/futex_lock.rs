//! Process-shared locks on a futex word, for MutexContention and
//! PriorityInversion: a plain three-state futex mutex (0 free, 1 locked,
//! 2 locked with waiters) and a priority-inheriting one built on
//! `FUTEX_LOCK_PI`/`FUTEX_UNLOCK_PI`, where the word holds the owner's tid.
//!
//! Every wait is bounded so a stop request is seen; `lock` returns an
//! [`Acquired`] (the time spent waiting, and the unlocker's stamp when a
//! wake handed the lock over) or `None` on STOP. The word's neighbour at
//! +8 holds the stamp an unlocker takes just before its wake call (see
//! [`crate::wake_stamp`]).

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crate::wake_stamp::WakeStamp;

use crate::shared::futex_wait;
use crate::stop::stop_requested;
use runq_kernel::clock::fast::now_ns;
use runq_kernel::clock::gettid;

/// Longest single wait before rechecking STOP.
const WAIT_SLICE_NS: u64 = 100_000_000;

/// How a [`FutexLock::lock`] got the lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Acquired {
    /// From the failed fast path to ownership, ns (0: uncontended): the
    /// holder's hold is in it.
    pub waited_ns: u64,
    /// The unlocker's stamp, when the wait that ended in ownership was
    /// ended by its wake.
    pub wake_stamp: Option<u64>,
}

impl Acquired {
    const UNCONTENDED: Acquired = Acquired {
        waited_ns: 0,
        wake_stamp: None,
    };
}

/// A lock word in shared memory.
pub(super) struct FutexLock<'a> {
    word: &'a AtomicU32,
    stamp: WakeStamp<'a>,
    pi: bool,
}

impl<'a> FutexLock<'a> {
    /// Wraps `word`, with the unlocker's stamp in `stamp`; `pi` selects
    /// the priority-inheriting protocol.
    pub(super) fn new(word: &'a AtomicU32, stamp: &'a AtomicU64, pi: bool) -> Self {
        FutexLock {
            word,
            stamp: WakeStamp::new(stamp),
            pi,
        }
    }

    /// Takes the lock; see the module doc for the return value.
    pub(super) fn lock(&self) -> Option<Acquired> {
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
            let stamp = self.stamp.mark_pending();
            if crate::shared::futex_wake(self.word, 1) == 0 {
                self.stamp.withdraw(stamp);
            }
        }
    }

    fn lock_plain(&self) -> Option<Acquired> {
        let mut c = match self
            .word
            .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
        {
            Ok(_) => return Some(Acquired::UNCONTENDED),
            Err(c) => c,
        };
        let t0 = now_ns();
        if c != 2 {
            c = self.word.swap(2, Ordering::Acquire);
        }
        let mut wake_stamp = None;
        while c != 0 {
            if stop_requested() {
                return None;
            }
            // Every wake claims its stamp; the one that ended in ownership
            // is the sample.
            wake_stamp = futex_wait(self.word, 2, WAIT_SLICE_NS).then(|| self.stamp.claim());
            c = self.word.swap(2, Ordering::Acquire);
        }
        Some(Acquired {
            waited_ns: now_ns().saturating_sub(t0),
            wake_stamp: wake_stamp.filter(|&s| s != 0),
        })
    }

    fn lock_pi(&self) -> Option<Acquired> {
        let tid = gettid();
        if self
            .word
            .compare_exchange(0, tid, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            return Some(Acquired::UNCONTENDED);
        }
        let t0 = now_ns();
        loop {
            if stop_requested() {
                return None;
            }
            if futex_lock_pi(self.word, WAIT_SLICE_NS) {
                // The kernel handed the lock over on the owner's unlock.
                return Some(Acquired {
                    waited_ns: now_ns().saturating_sub(t0),
                    wake_stamp: Some(self.stamp.claim()).filter(|&s| s != 0),
                });
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
            self.stamp.mark_pending();
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
