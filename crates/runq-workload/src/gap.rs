//! Scheduling gaps: the longest time a worker was runnable and did not
//! run. The kernel counts that time per thread as `run_delay`, the second
//! field of `/proc/thread-self/schedstat` (CONFIG_SCHED_INFO; no
//! schedstats needed). The meter reads it at the end of the first
//! iteration that closes each window of [`WINDOW_NS`]. A window's gap is
//! its run delay, but no more than its longest unplanned iteration (a
//! single wait cannot outlast the iteration it happened in; several short
//! waits in one window are not one long gap). A worker that sleeps (by
//! design, or waiting for a partner) accrues no run delay, so planned
//! sleeps and a partner's long spin are never gaps, while a worker left on
//! a run queue for 3 s shows a 3 s gap whatever its work-unit cadence.
//!
//! Where the kernel has no schedstat file, the meter falls back to the
//! longest unplanned iteration time (its wall time minus the sleeps and
//! bursts it planned), the watchdog's measure, and says so.

use std::fs::File;
use std::os::unix::fs::FileExt;

use serde::{Deserialize, Serialize};

use runq_kernel::clock::current_cpu;

/// The window over which run delay is summed (the loop clock's ns).
pub const WINDOW_NS: u64 = 50_000_000;

/// What a report's `max_gap_ms` was measured from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GapSource {
    /// The kernel's run delay, the most in one window.
    #[default]
    RunDelay,
    /// The longest unplanned iteration time (no schedstat file).
    IterationTime,
}

/// The longest gap seen, where and when.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Gap {
    /// Its length, ns.
    pub ns: u64,
    /// The CPU the worker was on when the window closed.
    pub cpu: usize,
    /// When the window closed, ns since the loop started.
    pub at_ns: u64,
}

/// Measures one worker's gaps (see the module doc).
#[derive(Debug)]
pub struct GapMeter {
    schedstat: Option<File>,
    window_start_ns: u64,
    run_delay_at_start: u64,
    loop_start_ns: u64,
    /// The longest unplanned iteration of the current window.
    window_longest_ns: u64,
    max: Gap,
}

impl GapMeter {
    /// Starts measuring at `now` (the loop clock) on the calling thread.
    pub fn start(now: u64) -> Self {
        let schedstat = File::open("/proc/thread-self/schedstat").ok();
        let mut meter = GapMeter {
            schedstat,
            window_start_ns: now,
            run_delay_at_start: 0,
            loop_start_ns: now,
            window_longest_ns: 0,
            max: Gap::default(),
        };
        match meter.run_delay() {
            Some(rd) => meter.run_delay_at_start = rd,
            None => meter.schedstat = None,
        }
        meter
    }

    /// A meter on the fallback measure (unplanned iteration time), for
    /// tests of what acts on gaps.
    #[cfg(test)]
    pub(crate) fn on_iteration_time(now: u64) -> Self {
        let mut m = GapMeter::start(now);
        m.schedstat = None;
        m
    }

    /// Where the gaps come from.
    pub fn source(&self) -> GapSource {
        if self.schedstat.is_some() {
            GapSource::RunDelay
        } else {
            GapSource::IterationTime
        }
    }

    /// After each iteration: `now` its end, `unplanned_ns` its wall time
    /// beyond what it planned. One comparison unless a window closes.
    #[inline(always)]
    pub fn after_iteration(&mut self, now: u64, unplanned_ns: u64) {
        if self.schedstat.is_none() {
            self.record(unplanned_ns, now);
            return;
        }
        self.window_longest_ns = self.window_longest_ns.max(unplanned_ns);
        if now.wrapping_sub(self.window_start_ns) >= WINDOW_NS {
            self.close_window(now);
        }
    }

    /// The longest gap of the windows closed so far, ns.
    #[inline(always)]
    pub fn longest_ns(&self) -> u64 {
        self.max.ns
    }

    /// Closes the last window and returns the longest gap.
    pub fn finish(mut self, now: u64) -> Gap {
        if self.schedstat.is_some() {
            self.close_window(now);
        }
        self.max
    }

    #[cold]
    fn close_window(&mut self, now: u64) {
        let Some(rd) = self.run_delay() else { return };
        let delay = rd.saturating_sub(self.run_delay_at_start);
        let longest = std::mem::take(&mut self.window_longest_ns);
        self.record(window_gap(delay, longest), now);
        self.run_delay_at_start = rd;
        self.window_start_ns = now;
    }

    fn record(&mut self, ns: u64, now: u64) {
        if ns > self.max.ns {
            self.max = Gap {
                ns,
                cpu: current_cpu(),
                at_ns: now.saturating_sub(self.loop_start_ns),
            };
        }
    }

    /// The thread's run delay so far (ns), read with one pread.
    fn run_delay(&self) -> Option<u64> {
        let mut buf = [0u8; 96];
        let n = self.schedstat.as_ref()?.read_at(&mut buf, 0).ok()?;
        let text = std::str::from_utf8(&buf[..n]).ok()?;
        runq_kernel::schedstat::parse_schedstat(text).map(|s| s.run_delay_ns)
    }
}

/// A window's gap: its run delay, but no more than its longest unplanned
/// iteration (one wait cannot outlast the iteration it happened in).
fn window_gap(run_delay_ns: u64, longest_iteration_ns: u64) -> u64 {
    run_delay_ns.min(longest_iteration_ns)
}

#[cfg(test)]
mod tests {
    use super::*;
    use runq_kernel::clock::fast::now_ns;

    #[test]
    fn sleeping_is_not_a_gap() {
        let t0 = std::time::Instant::now();
        let mut m = GapMeter::start(now_ns());
        if m.source() != GapSource::RunDelay {
            eprintln!("skipped: no /proc/thread-self/schedstat (the fallback test covers it)");
            return;
        }
        for _ in 0..3 {
            std::thread::sleep(std::time::Duration::from_millis(30));
            m.after_iteration(now_ns(), 30_000_000);
        }
        let gap = m.finish(now_ns());
        // Run delay only accrues outside the 90 ms asleep, however loaded
        // the host is.
        let awake = t0.elapsed().as_nanos() as u64 - 90_000_000;
        assert!(
            gap.ns <= awake + 1_000_000,
            "gap {} ns, awake {awake} ns",
            gap.ns
        );
    }

    #[test]
    fn a_window_gap_is_capped_by_its_longest_iteration() {
        assert_eq!(
            window_gap(30_000_000, 8_000_000),
            8_000_000,
            "short waits do not add up"
        );
        assert_eq!(
            window_gap(3_000_000_000, 3_100_000_000),
            3_000_000_000,
            "one long wait"
        );
        assert_eq!(window_gap(0, 3_000_000_000), 0, "a long sleep is not a gap");
    }

    #[test]
    fn without_schedstat_the_unplanned_time_counts() {
        let mut m = GapMeter::start(now_ns());
        m.schedstat = None;
        m.after_iteration(now_ns(), 5);
        m.after_iteration(now_ns(), 7_000);
        m.after_iteration(now_ns(), 9);
        assert_eq!(m.source(), GapSource::IterationTime);
        assert_eq!(m.finish(now_ns()).ns, 7_000);
    }
}
