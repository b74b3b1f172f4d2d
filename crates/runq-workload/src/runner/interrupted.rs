//! How long an interrupted run waits for its workers' reports.
//!
//! After Ctrl-C the user is waiting, so the stop has a budget: the run
//! should exit within about a second. Whatever has not reported when the
//! window closes is SIGKILLed and reaped, and that takes CPU time for
//! every worker (its exit and the parent's reaping of it). Among 4,000
//! spinners on 2 CPUs, a fixed 300 ms window left 0.5-0.9 s of killing
//! and reaping after it, and the exit came past 1 s in some runs. The
//! window therefore shrinks by what the reaping is expected to take on
//! the CPUs the run has.

use std::time::Duration;

/// From the stop to runq's exit, what an interrupted run aims for.
const BUDGET: Duration = Duration::from_millis(1000);

/// Kept for what follows the reaping: parsing the reports, judging,
/// removing cgroups, printing.
const AFTER_REAP: Duration = Duration::from_millis(150);

/// CPU time to kill and reap one process worker (its exit and the
/// parent's `waitpid`), from `scripts/sigint-at-scale` with no window:
/// 4,000 SpinWait workers killed and reaped in 0.62-0.76 s on 2 CPUs.
const REAP_CPU_PER_WORKER: Duration = Duration::from_micros(350);

/// The longest window: on a host with CPUs to spare, most reports arrive
/// well within it.
pub(super) const LONGEST: Duration = Duration::from_millis(300);

/// The shortest window: enough for the workers that are on a CPU at the
/// stop to send what they have.
const SHORTEST: Duration = Duration::from_millis(50);

/// The report window of an interrupted run with `workers` process
/// workers on `cpus` CPUs.
pub(super) fn report_window(workers: usize, cpus: usize) -> Duration {
    let per_cpu = u32::try_from(workers.div_ceil(cpus.max(1))).unwrap_or(u32::MAX);
    let reaping = REAP_CPU_PER_WORKER.saturating_mul(per_cpu);
    BUDGET
        .saturating_sub(AFTER_REAP)
        .saturating_sub(reaping)
        .clamp(SHORTEST, LONGEST)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_with_cpus_to_spare_gets_the_longest_window() {
        assert_eq!(report_window(1, 1), LONGEST);
        assert_eq!(report_window(256, 2), LONGEST);
        assert_eq!(report_window(4000, 16), LONGEST);
    }

    #[test]
    fn the_window_shrinks_by_the_reaping_it_leaves() {
        // 2,000 per CPU: 700 ms of reaping, 150 ms after it.
        assert_eq!(report_window(4000, 2), Duration::from_millis(150));
        assert!(report_window(3500, 2) < LONGEST);
        assert!(report_window(3500, 2) > report_window(4000, 2));
    }

    #[test]
    fn the_window_never_closes_entirely() {
        assert_eq!(report_window(100_000, 2), SHORTEST);
        assert_eq!(report_window(10, 0), report_window(10, 1));
    }
}
