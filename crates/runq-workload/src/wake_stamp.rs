//! The wake-latency figure's definition, shared by every work type whose
//! worker blocks on a partner: the time from the waker's timestamp, taken
//! just before its wake call (a `FUTEX_WAKE`, a pipe write, an unlock, an
//! exit), to the wakee running again after its blocking call returned.
//! That is schbench's definition, and the one the kernel's `sched_waking`
//! → `sched_switch` switch-in approximates from the other side; it leaves
//! out the time the wakee was asleep before the wake (its partner's turn,
//! a lock's hold, a child's life), which the blocking call's own length
//! holds.
//!
//! The waker publishes its stamp where the wakee reads it: a [`WakeStamp`]
//! in memory the two already share, or the message itself (a pipe's
//! 8-byte payload, see [`crate::fd::write_stamp`]). A sample counts only a
//! wait that a wake ended: a futex wait that returned woken, or a pipe
//! read whose message was written after the read began (one that found
//! its message already there never blocked).
//!
//! All stamps are readings of the work loops' clock
//! ([`runq_kernel::clock::fast::now_ns`]), one clock for every process.

use std::sync::atomic::{AtomicU64, Ordering};

use runq_kernel::clock::fast::now_ns;

/// A waker's timestamp slot in shared memory.
#[derive(Debug)]
pub struct WakeStamp<'a>(&'a AtomicU64);

impl<'a> WakeStamp<'a> {
    /// The slot at `word` (a zeroed word means "no stamp yet").
    pub fn new(word: &'a AtomicU64) -> Self {
        WakeStamp(word)
    }

    /// The waker's side: stamps now. Call it right before the store that
    /// hands the turn over and the wake call, so the wakee that sees the
    /// turn sees this stamp.
    #[inline(always)]
    pub fn mark(&self) {
        self.0.store(now_ns(), Ordering::Release);
    }

    /// The wakee's side: the last stamp (0: none yet).
    #[inline(always)]
    pub fn read(&self) -> u64 {
        self.0.load(Ordering::Acquire)
    }

    /// The waker's side where several wakes can be pending at once (a
    /// lock's waiters, woken one per unlock while others come and go):
    /// stamps now unless an earlier wake's stamp is still unclaimed, so a
    /// later unlock never makes a waiter's wait look shorter. Returns the
    /// stamp left, or 0; pass it to [`Self::withdraw`] if the wake woke
    /// no one.
    #[inline(always)]
    pub fn mark_pending(&self) -> u64 {
        let now = now_ns();
        match self
            .0
            .compare_exchange(0, now, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => now,
            Err(_) => 0,
        }
    }

    /// Takes back stamp `stamp` (from [`Self::mark_pending`]) when its
    /// wake woke no one, unless a wakee claimed it already.
    #[inline(always)]
    pub fn withdraw(&self, stamp: u64) {
        if stamp != 0 {
            let _ = self
                .0
                .compare_exchange(stamp, 0, Ordering::AcqRel, Ordering::Acquire);
        }
    }

    /// The wakee's side of [`Self::mark_pending`]: takes the pending
    /// stamp (0: none), leaving the slot free for the next wake.
    #[inline(always)]
    pub fn claim(&self) -> u64 {
        self.0.swap(0, Ordering::AcqRel)
    }
}

/// The wake latency of a wakee that resumed at `resumed_ns` after a wake
/// stamped `stamp_ns`: `None` without a stamp (0), else the difference
/// (0 when the clocks' readings crossed, which an invariant TSC does not
/// do by more than a few ns).
#[inline(always)]
pub fn wake_latency_ns(stamp_ns: u64, resumed_ns: u64) -> Option<u64> {
    (stamp_ns != 0).then(|| resumed_ns.saturating_sub(stamp_ns))
}

/// The wake latency of a blocking call (a pipe read, a `waitpid`) that
/// began at `wait_start_ns` and returned at `resumed_ns`, for an event
/// its waker stamped `stamp_ns`: `None` when the event was stamped before
/// the call began (a message already waiting in the pipe, a child already
/// gone: the call never blocked, nothing was woken) or carries no stamp.
#[inline(always)]
pub fn waited_wake_latency_ns(wait_start_ns: u64, stamp_ns: u64, resumed_ns: u64) -> Option<u64> {
    if stamp_ns < wait_start_ns {
        return None;
    }
    wake_latency_ns(stamp_ns, resumed_ns)
}

/// How late a sleep of `requested_ns` that began at `start_ns` returned
/// at `end_ns`: the elapsed time past the request (timer overshoot, with
/// the sleeper's timer slack in it; the overshoot types set theirs to
/// 1 ns, see [`crate::worktype::fine_timer_slack`]).
#[inline(always)]
pub fn overshoot_ns(start_ns: u64, end_ns: u64, requested_ns: u64) -> u64 {
    end_ns.saturating_sub(start_ns).saturating_sub(requested_ns)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wake_counts_from_the_wakers_stamp_not_from_when_the_wakee_slept() {
        // The wakee slept at 1,000 ns; its partner worked until 9,000 and
        // stamped just before its wake call; the wakee ran at 9,800.
        assert_eq!(wake_latency_ns(9_000, 9_800), Some(800));
        // Time asleep would have been 8,800: not the figure.
        assert_ne!(wake_latency_ns(9_000, 9_800), Some(9_800 - 1_000));
    }

    #[test]
    fn no_stamp_is_no_sample_and_crossed_readings_are_zero() {
        assert_eq!(wake_latency_ns(0, 5_000), None);
        assert_eq!(wake_latency_ns(5_010, 5_000), Some(0));
    }

    #[test]
    fn a_pipe_read_that_found_its_message_waiting_is_no_wake() {
        // Written at 2,000, read began at 3,000: the byte sat in the pipe.
        assert_eq!(waited_wake_latency_ns(3_000, 2_000, 3_300), None);
        // Read began at 3,000 and blocked; written at 7,000, ran at 7,900.
        assert_eq!(waited_wake_latency_ns(3_000, 7_000, 7_900), Some(900));
        // Written the same tick the read began: counted, from the stamp.
        assert_eq!(waited_wake_latency_ns(3_000, 3_000, 3_400), Some(400));
        assert_eq!(waited_wake_latency_ns(0, 0, 10), None);
    }

    #[test]
    fn overshoot_is_time_past_the_request() {
        assert_eq!(overshoot_ns(1_000, 1_000 + 100_000 + 2_500, 100_000), 2_500);
        assert_eq!(overshoot_ns(1_000, 50_000, 100_000), 0);
    }

    #[test]
    fn a_pending_stamp_is_kept_until_claimed_and_withdrawn_when_no_one_woke() {
        let word = AtomicU64::new(0);
        let s = WakeStamp::new(&word);
        let first = s.mark_pending();
        assert!(first > 0);
        // A second unlock while the first wakee has not run: the older
        // stamp stays, so that wakee's latency is not cut short.
        assert_eq!(s.mark_pending(), 0);
        assert_eq!(s.claim(), first);
        assert_eq!(s.claim(), 0, "claimed once");
        // A wake that woke no one takes its stamp back.
        let lonely = s.mark_pending();
        s.withdraw(lonely);
        assert_eq!(s.read(), 0);
    }

    #[test]
    fn a_stamp_is_seen_by_the_reader_of_the_slot() {
        let word = AtomicU64::new(0);
        let s = WakeStamp::new(&word);
        assert_eq!(s.read(), 0);
        s.mark();
        let stamp = s.read();
        assert!(stamp > 0);
        assert!(wake_latency_ns(stamp, now_ns()).is_some());
    }
}
