//! Judging a run: every group's checks (the per-group table, fairness,
//! checks over time), the scheduler's survival, and the verdict.

use crate::checks::{verdict, CheckResult, GroupWork, Op, Verdict};
use crate::fair_model::{fair_share_checks, model_from_run};
use crate::report::WorkerReport;
use crate::scenario::Scenario;
use crate::scheduler::{SchedulerDeath, SchedulerSpec};
use crate::series::RunSeries;
use crate::summary::{summarize_group, GroupSummary};

/// The run's verdict. An interrupted run is INTERRUPTED whatever its
/// checks said (they are reported as reached: a run cut short cannot
/// PASS or FAIL as a whole), and so is one whose workers were never
/// started for want of anything but a failure.
pub(super) fn final_verdict(
    checks: &[CheckResult],
    failed: bool,
    interrupted: bool,
    aborted_at_start: bool,
) -> Verdict {
    match verdict(checks, failed) {
        _ if interrupted => Verdict::Interrupted,
        Verdict::Fail if aborted_at_start && !failed => Verdict::Interrupted,
        v => v,
    }
}

/// `scheduler_alive`: the scheduler under test lived through the run.
fn alive_check(spec: &SchedulerSpec, death: Option<&SchedulerDeath>) -> CheckResult {
    CheckResult {
        name: "scheduler_alive".into(),
        group: "scheduler".into(),
        measured: if death.is_some() { 0.0 } else { 1.0 },
        op: Op::AtLeast,
        bound: 1.0,
        pass: death.is_none(),
        detail: Some(match death {
            Some(d) => format!("the scheduler {} at {} ms", d.status, d.at_ms),
            None => format!("{:?} ran until the end", spec.command),
        }),
    }
}

/// The run's group summaries and checks: each group's own, the
/// scheduler's liveness when one was named, and the over-time checks an
/// interrupted run could not judge excused.
pub(super) fn judge_run(
    scn: &Scenario,
    reports: &[WorkerReport],
    weight_file: Option<&str>,
    series: Option<&RunSeries>,
    death: Option<&SchedulerDeath>,
    interrupted: bool,
) -> (Vec<GroupSummary>, Vec<CheckResult>) {
    let (groups, mut checks) = judge(scn, reports, weight_file, series);
    if let Some(spec) = &scn.scheduler {
        checks.push(alive_check(spec, death));
    }
    if interrupted {
        crate::series::check::excuse_unjudged(&mut checks);
    }
    (groups, checks)
}

/// Summaries and check results for every group, then the fair-share
/// check across groups.
fn judge(
    scn: &Scenario,
    reports: &[WorkerReport],
    weight_file: Option<&str>,
    series: Option<&RunSeries>,
) -> (Vec<GroupSummary>, Vec<CheckResult>) {
    let no_series = RunSeries::default();
    let mut groups = Vec::new();
    let mut checks = Vec::new();
    for (i, g) in scn.groups.iter().enumerate() {
        groups.push(summarize_group(
            i,
            &g.name,
            g.work_name(),
            g.wake_figure(),
            reports,
        ));
        let mine: Vec<&WorkerReport> = reports.iter().filter(|r| r.group_idx == i).collect();
        let mut mine_checks = scn.checks.evaluate_group(&g.name, &mine, group_work(g));
        crate::checks::name_latency_figure(&mut mine_checks, g.wake_figure());
        checks.extend(mine_checks);
        let series = series.unwrap_or(&no_series);
        checks.extend(crate::series::evaluate(&g.name, &g.series_checks, series));
    }
    let host = series.and_then(|s| s.host.as_ref());
    if let Some(bound) = scn.checks.rq_imbalance_bound() {
        checks.push(crate::series::host::judge_imbalance(bound, host));
    }
    if let Some(bound) = scn.checks.runnable_wait_bound() {
        checks.push(crate::series::host::judge_runnable_wait(bound, host));
    }
    if scn.groups.iter().any(|g| g.custom.is_some()) {
        // Custom workers report no CPU telemetry, so no fair-share model.
        return (groups, checks);
    }
    let online = runq_kernel::cpulist::online_cpus();
    if let (Some(bound), Some(model)) = (
        scn.checks.fair_share_bound(),
        model_from_run(scn, reports, weight_file, &online),
    ) {
        checks.extend(fair_share_checks(&model, bound));
    }
    (groups, checks)
}

/// How the checks must read group `g`'s workers.
fn group_work(g: &crate::scenario::GroupSpec) -> GroupWork {
    if g.custom.is_some() {
        GroupWork::Custom
    } else if matches!(g.work, crate::WorkType::EpollStorm(_)) {
        GroupWork::Race
    } else {
        GroupWork::Framework
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(pass: bool) -> CheckResult {
        CheckResult {
            name: "max_gap_ms".into(),
            group: "g".into(),
            measured: 1.0,
            op: Op::AtMost,
            bound: 1.0,
            pass,
            detail: None,
        }
    }

    #[test]
    fn an_interrupted_run_is_interrupted_whatever_its_checks_reached() {
        for (checks, failed) in [
            (vec![check(true)], false),
            (vec![check(false)], false),
            (vec![check(true)], true),
        ] {
            assert_eq!(
                final_verdict(&checks, failed, true, false),
                Verdict::Interrupted
            );
        }
        assert_eq!(
            final_verdict(&[check(false)], false, false, false),
            Verdict::Fail
        );
        assert_eq!(
            final_verdict(&[check(true)], false, false, false),
            Verdict::Pass
        );
        assert_eq!(
            final_verdict(&[check(false)], false, false, true),
            Verdict::Interrupted
        );
        assert_eq!(
            final_verdict(&[check(false)], true, false, true),
            Verdict::Fail
        );
    }
}
