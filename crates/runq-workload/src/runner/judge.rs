//! Judging a run: every group's checks (the per-group table, fairness,
//! checks over time), the scheduler's survival, and the verdict.

use crate::checks::cause::Cause;
use crate::checks::cpu_wait::{run_wait_share, stall_wait};
use crate::checks::detail::SchedulerDetail;
use crate::checks::mechanism::Mechanism;
use crate::checks::outside_load::{
    judge_outside_load, load_explains_all, CpuWait, GroupFacts, WaitSpan,
};
use crate::checks::{verdict, CheckResult, Detail, GroupWork, Op, SkippedCheck, Verdict};
use crate::fair_model::{fair_share_checks, model_from_run};
use crate::report::WorkerReport;
use crate::runner::host_load::HostLoad;
use crate::scenario::Scenario;
use crate::scheduler::{SchedulerDeath, SchedulerSpec};
use crate::series::RunSeries;
use crate::summary::{summarize_group, GroupSummary};
use crate::task_recorder::Recorded;
use crate::CheckId;

/// The run's verdict. An interrupted run is INTERRUPTED whatever its
/// checks said (they are reported as reached: a run cut short cannot
/// PASS or FAIL as a whole), and so is one whose workers were never
/// started for want of anything but a failure. A FAIL whose every failed
/// check load outside the run can account for is INDETERMINATE.
pub(super) fn final_verdict(
    checks: &[CheckResult],
    failed: bool,
    interrupted: bool,
    aborted_at_start: bool,
) -> Verdict {
    match verdict(checks, failed) {
        _ if interrupted => Verdict::Interrupted,
        Verdict::Fail if aborted_at_start && !failed => Verdict::Interrupted,
        Verdict::Fail if !failed && load_explains_all(checks) => Verdict::Indeterminate,
        v => v,
    }
}

/// `scheduler_alive`: the scheduler under test lived through the run.
fn alive_check(spec: &SchedulerSpec, death: Option<&SchedulerDeath>) -> CheckResult {
    CheckResult {
        check: CheckId::SchedulerAlive,
        group: "scheduler".into(),
        measured: if death.is_some() { 0.0 } else { 1.0 },
        op: Op::AtLeast,
        bound: 1.0,
        pass: death.is_none(),
        cause: None,
        detail: vec![match death {
            Some(d) => Detail::Scheduler(SchedulerDetail::SchedulerEnded {
                status: d.status.clone(),
                at_ms: d.at_ms,
                sched_ext_exit: d.sched_ext_exit.clone(),
            }),
            None => Detail::Scheduler(SchedulerDetail::SchedulerRan {
                command: spec.command.clone(),
            }),
        }],
        not_judged: None,
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
    (load, recorded): (Option<&HostLoad>, Result<&Recorded, &str>),
) -> (Vec<GroupSummary>, Vec<CheckResult>) {
    let (groups, mut checks) = judge(scn, reports, weight_file, series);
    super::ejection::split_at_ejection(scn, reports, death, &mut checks);
    if let Some(spec) = &scn.scheduler {
        checks.push(alive_check(spec, death));
    }
    if interrupted {
        crate::series::check::excuse_unjudged(&mut checks);
    }
    if let Some(load) = load {
        judge_load(scn, reports, series, load, &mut checks);
    }
    let in_cgroups = weight_file.is_some();
    crate::checks::recorded::explain_all(scn, reports, recorded, in_cgroups, &mut checks);
    (groups, checks)
}

/// The sched_ext checks of the run's bounds, judged on sched_ext's
/// counters over the run (`series.host.sched_ext`) and added to
/// `checks`; the checks the kernel gives no figure for, skipped.
pub(super) fn judge_sched_ext(
    scn: &Scenario,
    series: Option<&RunSeries>,
    run_ns: u64,
    checks: &mut Vec<CheckResult>,
) -> Vec<SkippedCheck> {
    let run = crate::series::sched_ext::SchedExtRun {
        host: series.and_then(|s| s.host.as_ref()),
        scheduler: scn.scheduler.is_some(),
        run_ns,
    };
    let (judged, skipped) = crate::series::sched_ext::judge(&scn.checks.sched_ext_bounds(), &run);
    checks.extend(judged);
    skipped
}

/// How much group `g` waited for a CPU where check `c` looks: over its
/// longest stall for a check over time, over the run otherwise.
fn cpu_wait_of(
    c: &CheckResult,
    g: usize,
    reports: &[WorkerReport],
    series: Option<&RunSeries>,
) -> Option<CpuWait> {
    let mine: Vec<&WorkerReport> = reports.iter().filter(|r| r.group_idx == g).collect();
    let metric = if let CheckId::Series { metric, .. } = c.check {
        crate::series::Metric::from_name(metric)
    } else {
        None
    };
    let group = series.and_then(|s| s.groups.iter().find(|s| s.group == c.group));
    let stalled = metric
        .zip(group)
        .and_then(|(metric, group)| stall_wait(group, metric, mine.len()));
    if let Some((span, share)) = stalled {
        return Some(CpuWait {
            share,
            over: WaitSpan::LongestStall { ns: span },
        });
    }
    Some(CpuWait {
        share: run_wait_share(&mine)?,
        over: WaitSpan::Run,
    })
}

/// Adds to each failed check whether the load outside the run can
/// account for it, for the CPUs its group could use and with a worker
/// that died or was killed counted as not the load's.
fn judge_load(
    scn: &Scenario,
    reports: &[WorkerReport],
    series: Option<&RunSeries>,
    load: &HostLoad,
    checks: &mut [CheckResult],
) {
    let online = runq_kernel::cpulist::online_cpus();
    let cpus_of =
        |i: usize| crate::fair_model::affinity_cpus(&scn.groups[i].setup.affinity, &online);
    for c in checks.iter_mut().filter(|c| !c.pass) {
        let idx = scn.group_index(&c.group);
        let usable = idx.map_or_else(|| online.clone(), cpus_of);
        // The runnable work of the run's workers confined to those CPUs.
        let own_demand = reports
            .iter()
            .filter(|r| r.group_idx < scn.groups.len() && cpus_of(r.group_idx).is_subset(&usable))
            .map(|r| {
                (r.cpu_time_ns + r.schedstat_run_delay_ns) as f64 / r.wall_time_ns.max(1) as f64
            })
            .sum();
        let facts = GroupFacts {
            usable_cpus: usable.len(),
            // A worker still running at the deadline was not killed by its
            // own fault: it may have been kept off its CPU.
            died: reports.iter().any(|r| {
                Some(r.group_idx) == idx
                    && r.exit_info
                        .as_ref()
                        .is_some_and(|e| *e != crate::report::WorkerExitInfo::TimedOut)
            }),
            wait: idx.and_then(|i| cpu_wait_of(c, i, reports, series)),
            own_demand,
        };
        if let Some(idle) = idle_beside_waiting(c, load, &facts) {
            let cause = c.cause.get_or_insert_with(Cause::default);
            cause.mechanism.push(idle);
        }
        if let Some(judged) = judge_outside_load(c, load, &facts) {
            c.cause.get_or_insert_with(Cause::default).outside_load = Some(judged);
        }
    }
}

/// For a failed share whose workers mostly waited runnable while CPUs of
/// the host stayed idle: the scheduler left work waiting beside an idle
/// CPU (the CPUs a group may use are all of the host's here: a pinned
/// group is not judged, its CPUs may be the busy ones).
fn idle_beside_waiting(c: &CheckResult, load: &HostLoad, g: &GroupFacts) -> Option<Mechanism> {
    let share_check = matches!(c.check, CheckId::MinFairShare | CheckId::MinFairShareWorker);
    let idle = load.cpus as f64 - load.busy_cpus;
    let waited = g.wait.as_ref()?.share;
    (share_check && g.usable_cpus == load.cpus && idle >= 0.2 && waited >= 0.5).then_some(
        Mechanism::IdleBesideWaiting {
            idle_cpus: idle,
            host_cpus: load.cpus,
            waited_share: waited,
        },
    )
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

/// A run that ended on its own error (a fork, a cgroup write that
/// failed) failed its checks because of that error, not because of other
/// tasks: each failed check's cause says so, in place of what load or the
/// recorder would have suggested.
pub(super) fn blame_the_run_error(error: &str, checks: &mut [crate::CheckResult]) {
    for c in checks.iter_mut().filter(|c| !c.pass) {
        c.cause = Some(crate::checks::cause::Cause {
            mechanism: vec![Mechanism::RunError {
                error: error.to_string(),
            }],
            next_step: Some(crate::checks::cause::NextStep::FixRunError),
            ..Default::default()
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(pass: bool) -> CheckResult {
        CheckResult {
            check: CheckId::MaxGapMs,
            group: "g".into(),
            measured: 1.0,
            op: Op::AtMost,
            bound: 1.0,
            pass,
            cause: None,
            detail: Vec::new(),
            not_judged: None,
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

    #[test]
    fn a_run_error_is_the_cause_of_every_failed_check() {
        let mut checks = [check(false), check(true)];
        blame_the_run_error("fork failed", &mut checks);
        let cause = checks[0].cause.as_ref().unwrap();
        assert_eq!(
            cause.mechanism,
            [Mechanism::RunError {
                error: "fork failed".into()
            }]
        );
        assert_eq!(checks[1].cause, None);
    }

    #[test]
    fn a_share_that_waited_beside_idle_cpus_says_how_many_stayed_idle() {
        let load = HostLoad {
            cpus: 4,
            busy_cpus: 2.5,
            run_cpus: 2.4,
            outside_cpus: 0.1,
            runq_cpus: 0.0,
        };
        let facts = GroupFacts {
            usable_cpus: 4,
            wait: Some(CpuWait {
                share: 0.8,
                over: WaitSpan::Run,
            }),
            ..GroupFacts::default()
        };
        let share = CheckResult {
            check: CheckId::MinFairShare,
            ..check(false)
        };
        assert_eq!(
            idle_beside_waiting(&share, &load, &facts),
            Some(Mechanism::IdleBesideWaiting {
                idle_cpus: 1.5,
                host_cpus: 4,
                waited_share: 0.8
            })
        );
        assert_eq!(idle_beside_waiting(&check(false), &load, &facts), None);
    }
}
