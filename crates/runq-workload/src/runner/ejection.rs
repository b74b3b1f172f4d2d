//! A run whose BPF scheduler sched_ext disabled before the end (the
//! kernel ejected it, or it unregistered when its process died): from
//! then on the kernel's fair class ran the workers, so each failed group
//! check says which part of the run it judges: before the end (under the
//! BPF scheduler) or after it (under the fair class) where the check's
//! worst moment is known (a worker's longest gap), both otherwise.

use crate::checks::detail::SchedulerDetail;
use crate::checks::detail::ScxEnd;
use crate::checks::{CheckResult, Detail};
use crate::report::WorkerReport;
use crate::scenario::Scenario;
use crate::scheduler::SchedulerDeath;
use crate::CheckId;

/// Adds to each failed group check of a run whose BPF scheduler ended
/// during it the part of the run its failure falls in.
pub(super) fn split_at_ejection(
    scn: &Scenario,
    reports: &[WorkerReport],
    death: Option<&SchedulerDeath>,
    checks: &mut [CheckResult],
) {
    let Some((d, exit)) = death.and_then(|d| Some((d, d.sched_ext_exit.as_ref()?))) else {
        return;
    };
    let end = ScxEnd {
        ejected: exit.error,
        scheduler: exit.scheduler.clone(),
        at_ms: d.at_ms,
    };
    for c in checks.iter_mut().filter(|c| !c.pass) {
        let Some(g) = scn.group_index(&c.group) else {
            continue;
        };
        let moment = (c.check == CheckId::MaxGapMs)
            .then(|| worst_gap_end_ms(reports, g))
            .flatten();
        let end = end.clone();
        c.detail.push(match moment {
            Some(at) if at <= d.at_ms => {
                Detail::Scheduler(SchedulerDetail::GapBeforeScxEnd { end })
            }
            Some(_) => Detail::Scheduler(SchedulerDetail::GapAfterScxEnd { end }),
            None => Detail::Scheduler(SchedulerDetail::AcrossScxEnd { end }),
        });
    }
}

/// When the window of group `g`'s longest gap closed, ms from the start.
fn worst_gap_end_ms(reports: &[WorkerReport], g: usize) -> Option<u64> {
    reports
        .iter()
        .filter(|r| r.group_idx == g)
        .max_by_key(|r| r.max_gap_ms)
        .map(|r| r.max_gap_at_ms)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::Op;
    use runq_kernel::sched_ext_log::ScxExit;

    fn failed(check: CheckId, group: &str) -> CheckResult {
        CheckResult {
            check,
            group: group.into(),
            measured: 4974.0,
            op: Op::AtMost,
            bound: 2000.0,
            pass: false,
            cause: None,
            detail: Vec::new(),
            not_judged: None,
        }
    }

    /// scx_qmap -t 5 on 6.12: the watchdog's ejection, seen at 5,300 ms.
    fn death() -> SchedulerDeath {
        SchedulerDeath {
            command: "scx_qmap -t 5".into(),
            at_ms: 5_300,
            status: "killed by signal 12 (SIGUSR2)".into(),
            exit_code: None,
            signal: Some(12),
            stderr: Vec::new(),
            stderr_lines: 0,
            kernel_log: Vec::new(),
            sched_ext_exit: Some(ScxExit {
                scheduler: "qmap".into(),
                reason: "runnable task stall".into(),
                error: true,
                message: Some("runq[81] failed to run for 5.067s".into()),
            }),
        }
    }

    fn report(gap_ms: u64, at_ms: u64) -> WorkerReport {
        WorkerReport {
            group_idx: 0,
            max_gap_ms: gap_ms,
            max_gap_at_ms: at_ms,
            ..Default::default()
        }
    }

    #[test]
    fn each_failed_group_check_says_which_side_of_the_ejection_it_judges() {
        let scn = Scenario::default_scenario();
        let g = scn.groups[0].name.clone();
        let mut checks = vec![
            failed(CheckId::MaxGapMs, &g),
            failed(CheckId::MaxP99WakeLatencyUs, &g),
            failed(CheckId::SchedulerAlive, "scheduler"),
        ];
        let before = [report(4974, 5_050), report(100, 7_000)];
        split_at_ejection(&scn, &before, Some(&death()), &mut checks);
        let end = ScxEnd {
            ejected: true,
            scheduler: "qmap".into(),
            at_ms: 5_300,
        };
        assert_eq!(
            checks[0].detail,
            [Detail::Scheduler(SchedulerDetail::GapBeforeScxEnd {
                end: end.clone()
            })]
        );
        assert_eq!(
            checks[1].detail,
            [Detail::Scheduler(SchedulerDetail::AcrossScxEnd {
                end: end.clone()
            })]
        );
        assert_eq!(
            checks[2].detail,
            [],
            "the scheduler's own check is not a group's"
        );
        let mut after = vec![failed(CheckId::MaxGapMs, &g)];
        split_at_ejection(&scn, &[report(2500, 8_000)], Some(&death()), &mut after);
        assert_eq!(
            after[0].detail,
            [Detail::Scheduler(SchedulerDetail::GapAfterScxEnd { end })]
        );
    }

    #[test]
    fn a_run_without_a_sched_ext_end_is_left_as_it_is() {
        let scn = Scenario::default_scenario();
        let mut checks = vec![failed(CheckId::MaxGapMs, &scn.groups[0].name)];
        let mut plain = death();
        plain.sched_ext_exit = None;
        split_at_ejection(&scn, &[report(4974, 5_050)], Some(&plain), &mut checks);
        split_at_ejection(&scn, &[report(4974, 5_050)], None, &mut checks);
        assert_eq!(checks[0].detail, []);
    }
}
