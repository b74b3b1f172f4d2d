//! `not_stuck`: which workers count as stuck. A worker that died is. A
//! worker that completed no work unit is stuck only when nothing else
//! explains it: one that spent most of its run on a CPU was working on a
//! unit longer than the run (a 1024 x 1024 product, a spin of 10^12
//! units), and one that spent most of it blocked, not runnable, was
//! waiting by design (a sleep it planned: a one-hour timer period, a
//! request rate of 1/s) or for a partner of its group that was working.
//! What is left is the scheduler's: a worker kept runnable without a CPU,
//! or a whole group blocked with nothing planned.

use super::detail::StuckHow;
use crate::report::{WorkerExitInfo, WorkerReport};

/// The share of a worker's wall time that decides what it was doing.
const MOST: f64 = 0.5;

/// Why a worker is judged stuck, or `None` when it is not.
pub(super) fn stuck_reason(
    r: &WorkerReport,
    is_custom: bool,
    group_did_work: bool,
) -> Option<StuckHow> {
    if let Some(how) = &r.exit_info {
        return Some(match how {
            WorkerExitInfo::TimedOut if r.wall_time_ns > 0 => StuckHow::TimedOut {
                wall_ns: r.wall_time_ns,
                cpu_ns: r.cpu_time_ns,
                run_delay_ns: r.schedstat_run_delay_ns,
            },
            _ => StuckHow::Ended { exit: how.clone() },
        });
    }
    if is_custom || r.work_units > 0 {
        return None;
    }
    let wall = r.wall_time_ns.max(1) as f64;
    let on_cpu = r.cpu_time_ns as f64 / wall;
    let blocked = r
        .wall_time_ns
        .saturating_sub(r.cpu_time_ns)
        .saturating_sub(r.schedstat_run_delay_ns) as f64
        / wall;
    let planned = r.planned_wait_ns as f64 / wall;
    if on_cpu >= MOST || (blocked >= MOST && (group_did_work || planned >= MOST)) {
        return None;
    }
    Some(StuckHow::NoWork {
        wall_ns: r.wall_time_ns.max(1),
        iterations: r.iterations,
        on_cpu_pct: on_cpu * 100.0,
        waiting_pct: r.schedstat_run_delay_ns as f64 / wall * 100.0,
        blocked_pct: blocked * 100.0,
        group_did_work,
    })
}

/// Whether any worker of the group completed a work unit.
pub(super) fn group_did_work(all: &[&WorkerReport]) -> bool {
    all.iter().any(|r| r.work_units > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn worker(cpu_ms: u64, delay_ms: u64, planned_ms: u64, units: u64) -> WorkerReport {
        WorkerReport {
            tid: 7,
            work_units: units,
            wall_time_ns: 1_000_000_000,
            cpu_time_ns: cpu_ms * 1_000_000,
            schedstat_run_delay_ns: delay_ms * 1_000_000,
            planned_wait_ns: planned_ms * 1_000_000,
            completed: true,
            ..Default::default()
        }
    }

    #[test]
    fn a_worker_killed_at_the_deadline_says_how_long_it_waited_for_a_cpu() {
        let starved = WorkerReport {
            exit_info: Some(WorkerExitInfo::TimedOut),
            ..worker(40, 950, 0, 0)
        };
        assert_eq!(
            stuck_reason(&starved, false, true),
            Some(StuckHow::TimedOut {
                wall_ns: 1_000_000_000,
                cpu_ns: 40_000_000,
                run_delay_ns: 950_000_000,
            })
        );
        let unread = WorkerReport::sentinel(7, 0, WorkerExitInfo::TimedOut);
        assert_eq!(
            stuck_reason(&unread, false, true),
            Some(StuckHow::Ended {
                exit: WorkerExitInfo::TimedOut
            })
        );
    }

    #[test]
    fn a_worker_on_a_unit_longer_than_the_run_is_not_stuck() {
        assert_eq!(stuck_reason(&worker(990, 5, 0, 0), false, false), None);
    }

    #[test]
    fn planned_idleness_is_not_stuck() {
        // A one-hour timer period: asleep the whole run, as planned.
        assert_eq!(
            stuck_reason(&worker(1, 0, 3_600_000, 0), false, false),
            None
        );
    }

    #[test]
    fn waiting_for_a_working_partner_is_not_stuck() {
        assert_eq!(stuck_reason(&worker(1, 2, 0, 0), false, true), None);
    }

    #[test]
    fn a_whole_group_blocked_with_nothing_planned_is_stuck() {
        let why = stuck_reason(&worker(1, 2, 0, 0), false, false);
        assert!(
            matches!(
                why,
                Some(StuckHow::NoWork {
                    group_did_work: false,
                    ..
                })
            ),
            "{why:?}"
        );
    }

    #[test]
    fn a_worker_kept_runnable_without_a_cpu_is_stuck() {
        let Some(StuckHow::NoWork { waiting_pct, .. }) =
            stuck_reason(&worker(20, 950, 0, 0), false, true)
        else {
            panic!("kept runnable, it did no work");
        };
        assert!((waiting_pct - 95.0).abs() < 1e-9, "{waiting_pct}");
    }

    #[test]
    fn death_is_stuck_and_custom_work_is_judged_by_death_only() {
        let mut dead = worker(500, 0, 0, 10);
        dead.exit_info = Some(crate::report::WorkerExitInfo::TimedOut);
        assert!(stuck_reason(&dead, false, true).is_some());
        assert_eq!(stuck_reason(&worker(0, 0, 0, 0), true, false), None);
    }
}
