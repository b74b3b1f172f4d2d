//! Checks on worker reports and the run's verdict.
//!
//! Each check has a documented default and can be changed or disabled per
//! scenario (`[checks]` in a scenario file). Checks are evaluated per group;
//! every result carries the measured value beside its bound.

use crate::checks::detail::GroupDetail;
use std::fmt;

use serde::Serialize;

use cause::Cause;
pub(crate) use detail::Detail;
use detail::LostPartner;
pub use registry::CheckConfig;
pub(crate) use registry::SchedExtFigure;
pub use registry::CHECK_NAMES;
use registry::{Check, Scope, CHECKS};

use crate::check_id::{CheckId, PointsAt};
use crate::report::WorkerReport;

/// How a measured value must compare with its bound. Serialized and
/// printed as the operator, `<=` or `>=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Op {
    /// The measured value may not exceed the bound.
    #[serde(rename = "<=")]
    AtMost,
    /// The measured value must reach the bound.
    #[serde(rename = ">=")]
    AtLeast,
}

impl Op {
    /// Whether `measured` keeps to `bound`.
    pub fn holds(self, measured: f64, bound: f64) -> bool {
        match self {
            Op::AtMost => measured <= bound,
            Op::AtLeast => measured >= bound,
        }
    }

    /// The operator as text.
    pub fn symbol(self) -> &'static str {
        match self {
            Op::AtMost => "<=",
            Op::AtLeast => ">=",
        }
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.symbol())
    }
}

/// What one group's checks are measured on.
struct Observed<'a> {
    /// Every report, including dead workers' sentinels.
    all: &'a [&'a WorkerReport],
    /// Reports of the workers that did not die.
    live: Vec<&'a WorkerReport>,
    /// The live workers' wake latencies, sorted, ns.
    wakes: Vec<u64>,
    /// The group runs a custom command (no framework telemetry).
    is_custom: bool,
    /// Its workers race for their work (see [`GroupWork::Race`]).
    race: bool,
}

/// What a group's workers run, as the checks need to know it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupWork {
    /// A work type whose workers of one role do equal work.
    Framework,
    /// A work type whose workers race for the work (EpollStorm's
    /// consumers: every burst wakes them all, in the kernel's wait-queue
    /// order, and the first to run drains it). Their off-CPU shares tell
    /// who won the races, not how fairly the CPUs were shared, so
    /// `max_offcpu_spread_pct` does not judge them.
    Race,
    /// A custom command, without framework telemetry.
    Custom,
}

impl<'a> Observed<'a> {
    fn new(all: &'a [&'a WorkerReport], work: GroupWork) -> Self {
        let is_custom = work == GroupWork::Custom;
        let live: Vec<&WorkerReport> = all
            .iter()
            .copied()
            .filter(|r| r.exit_info.is_none())
            .collect();
        let mut wakes: Vec<u64> = Vec::new();
        if !is_custom {
            wakes = live
                .iter()
                .flat_map(|r| r.resume_latencies_ns.iter().copied())
                .collect();
            wakes.sort_unstable();
        }
        Observed {
            all,
            live,
            wakes,
            is_custom,
            race: work == GroupWork::Race,
        }
    }
}

/// One evaluated check.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CheckResult {
    /// Which check (`name` in JSON, under the check's name).
    #[serde(rename = "name")]
    pub check: CheckId,
    /// Group the check was evaluated on.
    pub group: String,
    /// What was measured.
    pub measured: f64,
    /// How the measured value must compare with the bound.
    pub op: Op,
    /// The bound.
    pub bound: f64,
    /// Whether it held.
    pub pass: bool,
    /// What was measured, when the numbers need more: the worker or task
    /// the figure came from, the figures beside it (see [`detail`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub detail: Vec<Detail>,
    /// Why a failed check failed, as far as the run's figures tell (see
    /// [`cause`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cause: Option<Cause>,
    /// Why the check could not be judged (its figure was not there: no
    /// snapshot of the group, no host monitor): it fails, unless the run
    /// was interrupted before it could be (then it passes, excused).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_judged: Option<String>,
}

/// A check that was on but not judged: the kernel does not give its
/// figure (e.g. sched_ext's event counters before 6.15).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkippedCheck {
    /// Which check (`name` in JSON).
    #[serde(rename = "name")]
    pub check: CheckId,
    /// What it would have been judged on (`scheduler`).
    pub group: String,
    /// Why it was not judged.
    pub reason: String,
}

/// PASS when every check passed (`"pass"`, `"fail"`, `"interrupted"`,
/// `"indeterminate"` in JSON).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Every check held.
    Pass,
    /// At least one did not.
    Fail,
    /// The run was interrupted (SIGINT, SIGTERM) before its end and every
    /// check of the part that ran held: neither a PASS nor a FAIL.
    Interrupted,
    /// Checks failed, but load outside the run can account for every one
    /// of them (see [`cause`]): a quieter host must decide.
    Indeterminate,
}

impl CheckConfig {
    /// Rejects unknown names in `disable` and out-of-range bounds.
    pub fn validate(&self) -> Result<(), String> {
        for d in &self.disable {
            if !CHECK_NAMES.contains(&d.as_str()) {
                return Err(format!(
                    "unknown check {d:?} in disable (checks: {})",
                    CHECK_NAMES.join(", ")
                ));
            }
        }
        for c in &CHECKS {
            if let (Some((lo, hi)), Some(v)) = (c.range, (c.bound)(self)) {
                if !(lo..=hi).contains(&v) {
                    return Err(format!("{} must be between {lo} and {hi}", c.id));
                }
            }
        }
        Ok(())
    }

    /// The fair-share bound, unless the check is off.
    pub fn fair_share_bound(&self) -> Option<f64> {
        self.enabled(CheckId::MinFairShare, self.min_fair_share)
    }

    /// The run-queue imbalance bound, unless the check is off.
    pub fn rq_imbalance_bound(&self) -> Option<f64> {
        let bound = self.max_rq_imbalance.map(|b| b as f64);
        self.enabled(CheckId::MaxRqImbalance, bound)
    }

    /// The gap bound, ms, unless the check is off (the flight recorder's
    /// stop-on-threshold trigger freezes the recording past it).
    pub fn gap_bound_ms(&self) -> Option<u64> {
        self.enabled(CheckId::MaxGapMs, self.max_gap_ms)
    }

    /// The runnable-wait bound, ms, unless the check is off.
    pub fn runnable_wait_bound(&self) -> Option<f64> {
        let bound = self.max_runnable_wait_ms.map(|b| b as f64);
        self.enabled(CheckId::MaxRunnableWaitMs, bound)
    }

    /// Each sched_ext check that is on: its id, what it reads, its bound.
    pub(crate) fn sched_ext_bounds(&self) -> Vec<(CheckId, SchedExtFigure, f64)> {
        CHECKS
            .iter()
            .filter_map(|c| match c.scope {
                Scope::SchedExt(figure) => {
                    Some((c.id, figure, self.enabled(c.id, (c.bound)(self))?))
                }
                _ => None,
            })
            .collect()
    }

    /// `v`, unless check `id` is in `disable`.
    pub(crate) fn enabled<T>(&self, id: CheckId, v: Option<T>) -> Option<T> {
        v.filter(|_| {
            !self
                .disable
                .iter()
                .any(|d| Some(d.as_str()) == id.fixed_name())
        })
    }

    /// Evaluates every enabled check on one group's reports; a failed one
    /// carries its row's explanation.
    pub fn evaluate_group(
        &self,
        group: &str,
        reports: &[&WorkerReport],
        work: GroupWork,
    ) -> Vec<CheckResult> {
        let observed = Observed::new(reports, work);
        CHECKS
            .iter()
            .filter_map(|c| self.judge(c, group, &observed))
            .collect()
    }

    /// One group check's result, or `None` when it is off, judged across
    /// groups, or has nothing to measure.
    fn judge(&self, c: &Check, group: &str, observed: &Observed) -> Option<CheckResult> {
        let Scope::Group {
            measure,
            telemetry,
            explain,
        } = c.scope
        else {
            return None;
        };
        if telemetry && observed.is_custom {
            return None; // no framework telemetry to judge
        }
        let bound = self.enabled(c.id, (c.bound)(self))?;
        let measured = measure(observed)?;
        let pass = c.op.holds(measured, bound);
        Some(CheckResult {
            check: c.id,
            group: group.into(),
            measured,
            op: c.op,
            bound,
            pass,
            cause: None,
            detail: explain
                .filter(|_| !pass)
                .and_then(|f| f(observed))
                .into_iter()
                .collect(),
            not_judged: None,
        })
    }
}

/// The latency checks (`max_p99_wake_latency_us`, `max_wake_latency_cv`)
/// judge the group's latency figure, whatever it is; this says which in
/// each one's detail, before what the failure's explanation adds.
pub(crate) fn name_latency_figure(results: &mut [CheckResult], figure: crate::WakeFigure) {
    for r in results.iter_mut().filter(|r| r.check.judges_wake_latency()) {
        r.detail
            .insert(0, Detail::Group(GroupDetail::LatencyFigure { figure }));
    }
}

/// Names every worker that died under a partner which then saw their
/// pipes close (reports are in spawn order, so a partner index is a
/// position). A partner that ended normally (the usual stop race) is not
/// named.
fn lost_partners(reports: &[&WorkerReport]) -> Option<Detail> {
    let lost: Vec<LostPartner> = reports
        .iter()
        .filter_map(|r| {
            let j = r.partner_lost?;
            let dead = reports.get(j)?;
            Some(LostPartner {
                partner: j,
                partner_pid: dead.tid,
                how: dead.exit_info.clone()?,
                worker: r.tid,
            })
        })
        .collect();
    (!lost.is_empty()).then_some(Detail::Group(GroupDetail::PartnersLost { lost }))
}

/// The off-CPU spread within each role (a fan-out's messenger and its
/// receivers, a herd's waker and its waiters, a priority inversion's low,
/// medium and high workers have different duties and different off-CPU
/// shares by design): the largest of the roles' spreads.
pub fn offcpu_spread_by_role(reports: &[&WorkerReport]) -> f64 {
    worst_role(reports).map_or(0.0, |(spread, _)| spread)
}

/// The role whose workers' off-CPU shares spread the most: that spread
/// and those workers.
pub fn worst_role<'a>(reports: &[&'a WorkerReport]) -> Option<(f64, Vec<&'a WorkerReport>)> {
    let mut roles: std::collections::BTreeMap<u8, Vec<&WorkerReport>> = Default::default();
    for r in reports {
        roles.entry(r.role).or_default().push(r);
    }
    roles
        .into_values()
        .map(|members| (offcpu_spread_pct(&members), members))
        .max_by(|a, b| a.0.total_cmp(&b.0))
}

/// Max minus min off-CPU share (percent) across workers.
pub fn offcpu_spread_pct(reports: &[&WorkerReport]) -> f64 {
    let shares: Vec<f64> = reports
        .iter()
        .filter(|r| r.wall_time_ns > 0)
        .map(|r| r.off_cpu_ns as f64 * 100.0 / r.wall_time_ns as f64)
        .collect();
    let max = shares.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let min = shares.iter().copied().fold(f64::INFINITY, f64::min);
    if shares.is_empty() {
        0.0
    } else {
        max - min
    }
}

/// stddev / mean of the samples; `None` for fewer than 2 or a zero mean.
pub fn coefficient_of_variation(samples: &[u64]) -> Option<f64> {
    if samples.len() < 2 {
        return None;
    }
    let n = samples.len() as f64;
    let mean = samples.iter().map(|&v| v as f64).sum::<f64>() / n;
    if mean == 0.0 {
        return None;
    }
    let var = samples
        .iter()
        .map(|&v| (v as f64 - mean).powi(2))
        .sum::<f64>()
        / (n - 1.0);
    Some(var.sqrt() / mean)
}

/// Migrations per checkpoint over the group.
pub fn migration_ratio(reports: &[&WorkerReport]) -> f64 {
    let checks: u64 = reports
        .iter()
        .map(|r| r.work_units / crate::telemetry::CHECK_PERIOD_UNITS)
        .sum();
    let migrations: u64 = reports.iter().map(|r| r.migration_count).sum();
    if checks == 0 {
        0.0
    } else {
        migrations as f64 / checks as f64
    }
}

/// Lowest per-worker share of pages on the worker's most-used node;
/// `None` when no worker reported NUMA pages.
pub fn numa_locality(reports: &[&WorkerReport]) -> Option<f64> {
    reports
        .iter()
        .filter_map(|r| {
            let total: u64 = r.numa_pages.values().sum();
            let top = r.numa_pages.values().max().copied()?;
            (total > 0).then(|| top as f64 / total as f64)
        })
        .reduce(f64::min)
}

/// The worker of `workers` (one group's) that a failure of check `id`
/// points at, by the check's [`PointsAt`]: the evidence's recorder
/// account and its moment in a flight recording both look at this one.
pub fn worker_pointed_at<'a>(
    id: CheckId,
    workers: &[&'a WorkerReport],
) -> Option<&'a WorkerReport> {
    let live = || workers.iter().copied().filter(|r| r.exit_info.is_none());
    let least_cpu = || live().min_by_key(|r| r.cpu_time_ns);
    match id.points_at() {
        PointsAt::Stuck => workers
            .iter()
            .copied()
            .find(|r| r.exit_info.is_some())
            .or_else(|| live().find(|r| r.work_units == 0))
            .or_else(least_cpu),
        PointsAt::LongestGap => live().max_by_key(|r| r.max_gap_ms),
        PointsAt::LeastCpu => least_cpu(),
        PointsAt::WorstWakeups | PointsAt::Nobody => None,
    }
}

/// The verdict over all results (and any run-level failure).
pub fn verdict(results: &[CheckResult], run_failed: bool) -> Verdict {
    if run_failed || results.iter().any(|r| !r.pass) {
        Verdict::Fail
    } else {
        Verdict::Pass
    }
}

pub mod cause;
pub(crate) mod cpu_wait;
pub mod detail;
mod explain;
pub mod mechanism;
pub mod outside_load;
pub(crate) mod placement;
mod rates;
pub(crate) mod recorded;
mod registry;
mod stuck;

#[cfg(test)]
mod tests;
