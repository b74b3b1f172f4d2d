//! TimerLatency: cyclictest's measurement as a work type. Each worker
//! sleeps to absolute deadlines `period_us` apart with
//! `clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)`; the latency of a
//! wakeup is the time it resumed minus the deadline. Timer slack is set to
//! 1 ns, as cyclictest does, so the figure is the kernel's wakeup path.
//! With `mlock` (the default, like cyclictest `-m`) the worker's pages are
//! locked as it touches them, and the measured path is touched once before
//! the first deadline, so a page once used never faults again. Both are
//! set up when the worker is built, not in its first iteration.

use serde::{Deserialize, Serialize};

use super::{independent, PreparedWork, TypeInfo, WorkerBody};
use crate::telemetry::Telemetry;
use runq_kernel::clock::monotonic_ns;

/// TimerLatency parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Params {
    /// Wakeup period, µs.
    pub period_us: u64,
    /// `mlockall(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT)` in the worker:
    /// each page is locked when first touched (best effort: without the
    /// privilege the worker runs unlocked). In thread mode it locks the
    /// whole runq process.
    pub mlock: bool,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            period_us: 1000,
            mlock: true,
        }
    }
}

/// Description for `--list`.
pub const INFO: TypeInfo = TypeInfo {
    name: "TimerLatency",
    summary: "periodic absolute-deadline clock_nanosleep wakeups, like cyclictest",
    units: "one unit per wakeup; checkpoint every 1024 iterations",
    wakes: Some("actual wakeup time minus the deadline (missed periods are skipped, not queued)"),
    workers: super::WorkerRule::Any,
    wake_figure: super::WakeFigure::Latency,
    params: &[super::ranges::ParamRange::new(
        "period_us",
        1,
        super::ranges::MAX_US,
    )],
    needs: super::HostNeed::Nothing,
};

struct Body {
    period_ns: u64,
    next_ns: u64,
}

/// Sleeps until `deadline_ns` on CLOCK_MONOTONIC; false if interrupted.
pub(super) fn sleep_until(deadline_ns: u64) -> bool {
    let ts = libc::timespec {
        tv_sec: (deadline_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (deadline_ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: valid timespec; no remainder is needed for absolute sleeps.
    let rc = unsafe {
        libc::clock_nanosleep(
            libc::CLOCK_MONOTONIC,
            libc::TIMER_ABSTIME,
            &ts,
            std::ptr::null_mut(),
        )
    };
    rc == 0
}

impl WorkerBody for Body {
    #[inline(always)]
    fn iterate(&mut self, tel: &mut Telemetry) -> u64 {
        if self.next_ns == 0 {
            // In the worker's own thread (thread workers are built in the
            // spawner's): measure the timer, not 50 µs of timer slack.
            super::fine_timer_slack();
            self.next_ns = monotonic_ns() + self.period_ns;
        }
        tel.plan(self.next_ns.saturating_sub(monotonic_ns()));
        if !sleep_until(self.next_ns) {
            return 0; // a stop signal
        }
        let now = monotonic_ns();
        tel.record_wake(now.saturating_sub(self.next_ns));
        self.next_ns += self.period_ns;
        if self.next_ns <= now {
            // Overran one or more periods: restart the grid from now.
            self.next_ns = now + self.period_ns;
        }
        1
    }
}

/// Locks the worker's memory as cyclictest `-m` does, but each page when
/// it is first touched (`MCL_ONFAULT`, Linux 4.4): locking every mapping
/// at once reads the whole runq image in, and `mlockall` cannot be
/// interrupted by the stop. On a cold or network-backed file that takes
/// seconds (a VM's 9p root under emulation: over 5 s, every worker timed
/// out). One short sleep then touches the measured path (the clock, the
/// sleep) before the first deadline. Best effort: without the privilege
/// or under RLIMIT_MEMLOCK the worker runs unlocked; a kernel without
/// `MCL_ONFAULT` locks everything at once.
fn lock_memory_as_touched() {
    let now = libc::MCL_CURRENT | libc::MCL_FUTURE;
    // SAFETY: mlockall has no memory preconditions.
    let rc = unsafe { libc::mlockall(now | libc::MCL_ONFAULT) };
    if rc != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINVAL) {
        // SAFETY: as above.
        unsafe { libc::mlockall(now) };
    }
    sleep_until(monotonic_ns() + 1_000);
}

/// Builds the per-worker bodies.
pub fn prepare(p: &Params) -> Box<dyn PreparedWork> {
    let period_ns = p.period_us * 1000;
    let mlock = p.mlock;
    independent(move |_| {
        if mlock {
            lock_memory_as_touched();
        }
        Ok(Box::new(Body {
            period_ns,
            next_ns: 0,
        }))
    })
}
