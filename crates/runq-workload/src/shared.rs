//! Memory shared between forked workers (an anonymous `MAP_SHARED`
//! mapping made before fork) and the futex calls that synchronise on it.

use std::io;
use std::sync::atomic::AtomicU32;
use std::sync::Arc;

use runq_kernel::mapping::AnonMapping;

/// A shared anonymous mapping; clones refer to the same pages. Unmapped
/// when the last clone in a process drops.
#[derive(Debug, Clone)]
pub struct SharedRegion(Arc<AnonMapping>);

impl SharedRegion {
    /// Maps `len` zeroed bytes shared with future children.
    pub fn new(len: usize) -> io::Result<Self> {
        Ok(SharedRegion(Arc::new(AnonMapping::shared(len)?)))
    }

    /// The `AtomicU32` at byte `offset` (must be 4-aligned and in range).
    pub fn atomic_u32(&self, offset: usize) -> &AtomicU32 {
        assert!(
            offset % 4 == 0 && offset + 4 <= self.0.len(),
            "bad shared offset {offset}"
        );
        // SAFETY: in range, aligned, and the memory lives as long as self.
        unsafe { &*(self.0.as_ptr().add(offset) as *const AtomicU32) }
    }

    /// The `AtomicU32` at byte `offset` as a handle that keeps the region
    /// alive and reaches the word without a lookup (hot loops).
    pub fn word_u32(&self, offset: usize) -> SharedWord {
        let ptr = std::ptr::NonNull::from(self.atomic_u32(offset));
        SharedWord {
            _region: self.clone(),
            ptr,
        }
    }

    /// The `AtomicU64` at byte `offset` (must be 8-aligned and in range).
    pub fn atomic_u64(&self, offset: usize) -> &std::sync::atomic::AtomicU64 {
        assert!(
            offset % 8 == 0 && offset + 8 <= self.0.len(),
            "bad shared offset {offset}"
        );
        // SAFETY: in range, aligned, and the memory lives as long as self.
        unsafe { &*(self.0.as_ptr().add(offset) as *const std::sync::atomic::AtomicU64) }
    }
}

/// One shared `AtomicU32`, resolved once: the handle holds the region, so
/// the word stays mapped as long as the handle lives.
#[derive(Debug)]
pub struct SharedWord {
    _region: SharedRegion,
    ptr: std::ptr::NonNull<AtomicU32>,
}

impl SharedWord {
    /// The word.
    #[inline(always)]
    pub fn get(&self) -> &AtomicU32 {
        // SAFETY: checked in range and aligned when made, and `_region`
        // keeps the mapping alive for as long as `self`.
        unsafe { self.ptr.as_ref() }
    }
}

/// `FUTEX_WAIT` on a process-shared word while it holds `expected`, for at
/// most `timeout_ns`. Returns on wake, timeout, signal or value change:
/// true when a `FUTEX_WAKE` ended the wait (the caller slept and was
/// woken), false when it did not sleep (the word had changed) or was
/// ended by the timeout or a signal.
pub fn futex_wait(word: &AtomicU32, expected: u32, timeout_ns: u64) -> bool {
    let ts = libc::timespec {
        tv_sec: (timeout_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (timeout_ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: word points to a live u32; ts is valid for the call.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            expected,
            &ts as *const libc::timespec,
        )
    };
    rc == 0
}

/// `FUTEX_WAKE` up to `count` waiters on a process-shared word; returns
/// how many it woke (0 on error).
pub fn futex_wake(word: &AtomicU32, count: i32) -> u32 {
    // SAFETY: word points to a live u32.
    let woke = unsafe { libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAKE, count) };
    u32::try_from(woke).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    #[test]
    fn region_is_zeroed_and_shared_between_clones() {
        let r = SharedRegion::new(128).unwrap();
        let c = r.clone();
        assert_eq!(r.atomic_u32(64).load(Ordering::Relaxed), 0);
        c.atomic_u32(64).store(7, Ordering::Relaxed);
        assert_eq!(r.atomic_u32(64).load(Ordering::Relaxed), 7);
    }

    #[test]
    fn futex_wait_times_out_and_returns_on_mismatch() {
        let r = SharedRegion::new(64).unwrap();
        let w = r.atomic_u32(0);
        assert!(
            !futex_wait(w, 1, 1_000_000),
            "value is 0: returns at once, not woken"
        );
        let t = std::time::Instant::now();
        assert!(!futex_wait(w, 0, 2_000_000), "a timeout is not a wake");
        assert!(t.elapsed() >= std::time::Duration::from_millis(1));
    }

    #[test]
    fn futex_wait_says_when_a_wake_ended_it() {
        let r = SharedRegion::new(64).unwrap();
        let waiter = r.clone();
        let t = std::thread::spawn(move || futex_wait(waiter.atomic_u32(0), 0, 5_000_000_000));
        // Wake until the waiter is gone (it may not be asleep yet).
        while !t.is_finished() {
            futex_wake(r.atomic_u32(0), 1);
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert!(t.join().unwrap());
    }
}
