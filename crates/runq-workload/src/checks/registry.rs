//! The table of checks: each check's bound in the scenario's `[checks]`
//! ([`CheckConfig`]), the range a bound may take, its operator, where it
//! is judged and how it is measured and explained. A new check is a
//! variant of [`CheckId`] (its name and traits, `check_id.rs`), its field
//! here and its row in [`CHECKS`].

use super::explain::{self, Explain};
use serde::{Deserialize, Serialize};

use super::{
    coefficient_of_variation, migration_ratio, numa_locality, offcpu_spread_by_role, rates, stuck,
    Observed, Op,
};
use crate::check_id::CheckId;
use runq_common::stats::percentile;
use runq_kernel::sched_ext::{EV_DISPATCH_KEEP_LAST, EV_SELECT_CPU_FALLBACK};

/// Bounds of the checks. `None` disables a check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CheckConfig {
    /// Every worker did some work and sent a report. Default: on.
    pub not_stuck: bool,
    /// Every worker got the setup its group asked for (affinity, policy,
    /// nice, mempolicy): a cpuset/affinity conflict fails the run unless
    /// the scenario turns this off. Default: on.
    pub setup_applied: bool,
    /// Longest scheduling gap of any worker (time runnable without a CPU,
    /// see `crate::gap`), ms. Default: 2000.
    pub max_gap_ms: Option<u64>,
    /// Largest difference in off-CPU share between the workers of a group,
    /// percentage points. Default: 50.
    pub max_offcpu_spread_pct: Option<f64>,
    /// p99 wake latency of a group, µs. Default: 100000 (100 ms).
    pub max_p99_wake_latency_us: Option<u64>,
    /// p99.9 wake latency of a group, µs (the tail schbench reports).
    /// Default: off.
    pub max_p999_wake_latency_us: Option<u64>,
    /// Coefficient of variation (stddev / mean) of a group's wake
    /// latencies. Default: off.
    pub max_wake_latency_cv: Option<f64>,
    /// Minimum work units per second per worker. Default: off.
    pub min_work_rate: Option<f64>,
    /// Migrations per checkpoint (1024 work units). Default: off.
    pub max_migration_ratio: Option<f64>,
    /// Share of a worker's pages on its most-used NUMA node. Default: 0.5.
    pub min_numa_locality: Option<f64>,
    /// Pages migrated across nodes during the run (vmstat delta, largest
    /// worker value). Default: off.
    pub max_numa_pages_migrated: Option<u64>,
    /// Least share of its CPU entitlement each group (and each worker
    /// within its group) must get, 0..=1; see `crate::fairness`.
    /// Default: 0.5.
    pub min_fair_share: Option<f64>,
    /// Largest run-queue imbalance on the host (max − min `nr_running`
    /// across CPUs at one sample of the host monitor). Default: off.
    pub max_rq_imbalance: Option<u64>,
    /// Longest time any runnable task on the host waited for a CPU during
    /// the run (the host monitor's runnable-wait probe: BPF, as root), ms.
    /// Default: off.
    pub max_runnable_wait_ms: Option<u64>,
    /// Tasks the BPF scheduler rejected during the run (sched_ext's
    /// `nr_rejected`), judged while a BPF scheduler runs. Default: 0.
    pub max_scx_rejected_tasks: Option<u64>,
    /// `SCX_EV_SELECT_CPU_FALLBACK` events per second (ops.select_cpu()
    /// chose a CPU the task may not use), judged while a BPF scheduler
    /// runs on a kernel with `root/events` (6.15+). Default: 1.
    pub max_scx_fallback_rate: Option<f64>,
    /// `SCX_EV_DISPATCH_KEEP_LAST` events per second (ops.dispatch() gave
    /// a CPU nothing and its last task kept it), as above. Default: 100.
    pub max_scx_keep_last_rate: Option<f64>,
    /// Longest time a busy CPU's run-queue clock stood still between two
    /// of the host monitor's `sched/debug` samples, ms, judged while a BPF
    /// scheduler runs. Default: 1000.
    pub max_rq_clock_stall_ms: Option<u64>,
    /// Most tasks queued on one CPU's local dispatch queue at a sched_ext
    /// debug dump (SysRq-D, every 2 s or so), judged while a BPF scheduler
    /// runs on a kernel with the `sched_ext_dump` trace event (6.12+).
    /// Default: 50.
    pub max_scx_local_dsq_depth: Option<u64>,
    /// Every CPU a worker was seen on is in its cgroup's cpuset (see
    /// [`super::placement`]); groups without a cpuset are not judged. Default: on.
    pub cpuset_isolation: bool,
    /// Coefficient of variation of the work rates of a group's workers
    /// (within each role). Default: off.
    pub max_throughput_cv: Option<f64>,
    /// Minimum iterations per second of the slowest worker. Default: off.
    pub min_iteration_rate: Option<f64>,
    /// Share of a group's migrations that crossed NUMA nodes, 0..=1 (one
    /// node: skipped). Default: off.
    pub max_cross_node_migration_ratio: Option<f64>,
    /// Names of checks to turn off (e.g. `["max_gap_ms"]`).
    pub disable: Vec<String>,
}

impl Default for CheckConfig {
    fn default() -> Self {
        CheckConfig {
            not_stuck: true,
            setup_applied: true,
            max_gap_ms: Some(2000),
            max_offcpu_spread_pct: Some(50.0),
            max_p99_wake_latency_us: Some(100_000),
            max_p999_wake_latency_us: None,
            max_wake_latency_cv: None,
            min_work_rate: None,
            max_migration_ratio: None,
            min_numa_locality: Some(0.5),
            max_numa_pages_migrated: None,
            min_fair_share: Some(0.5),
            max_rq_imbalance: None,
            max_runnable_wait_ms: None,
            max_scx_rejected_tasks: Some(0),
            max_scx_fallback_rate: Some(1.0),
            max_scx_keep_last_rate: Some(100.0),
            max_rq_clock_stall_ms: Some(1000),
            max_scx_local_dsq_depth: Some(50),
            cpuset_isolation: true,
            max_throughput_cv: None,
            min_iteration_rate: None,
            max_cross_node_migration_ratio: None,
            disable: Vec::new(),
        }
    }
}

/// Where a check is judged.
pub(super) enum Scope {
    /// On each group; the function measures it, `None` when the group
    /// gives nothing to judge. `telemetry`: the measurement needs the
    /// framework's telemetry, so custom groups skip the check. `explain`:
    /// the sentence under its FAIL.
    Group {
        measure: fn(&Observed) -> Option<f64>,
        telemetry: bool,
        explain: Option<Explain>,
    },
    /// Across groups, by [`crate::fair_model`].
    AcrossGroups,
    /// On the host monitor's series, by [`crate::series::host`].
    Host,
    /// On sched_ext's counters over the run and the host monitor's
    /// samples, by [`crate::series::sched_ext`], which reads this figure.
    SchedExt(SchedExtFigure),
    /// With the scenario and the host's topology, by [`super::placement`].
    Placement,
}

/// What a sched_ext check reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SchedExtFigure {
    /// sched_ext's `nr_rejected` over the run.
    Rejected,
    /// A `root/events` counter (its kernel name) as a rate, with what it
    /// counts in words.
    EventRate(&'static str, &'static str),
    /// The longest stand-still of a busy CPU's run-queue clock.
    RqClockStall,
    /// The deepest local dispatch queue at a debug dump.
    LocalDsqDepth,
}

/// One check: its id (named in reports and `disable`), its bound taken from
/// the config (`None`: off), the range a bound may take, its operator and
/// where it is judged.
pub(super) struct Check {
    pub(super) id: CheckId,
    pub(super) bound: fn(&CheckConfig) -> Option<f64>,
    pub(super) range: Option<(f64, f64)>,
    pub(super) op: Op,
    pub(super) scope: Scope,
}

/// A check judged on each group from framework telemetry.
const fn telemetry(measure: fn(&Observed) -> Option<f64>, explain: Option<Explain>) -> Scope {
    Scope::Group {
        measure,
        telemetry: true,
        explain,
    }
}

/// Every check, in the order results are reported.
pub(super) const CHECKS: [Check; 23] = [
    Check {
        id: CheckId::NotStuck,
        bound: |c| c.not_stuck.then_some(0.0),
        range: None,
        op: Op::AtMost,
        scope: Scope::Group {
            measure: stuck_workers,
            telemetry: false,
            explain: Some(explain::not_stuck),
        },
    },
    Check {
        id: CheckId::SetupApplied,
        bound: |c| c.setup_applied.then_some(0.0),
        range: None,
        op: Op::AtMost,
        scope: Scope::Group {
            measure: |o| Some(o.live.iter().filter(|r| r.affinity_error.is_some()).count() as f64),
            telemetry: false,
            explain: Some(explain::setup_applied),
        },
    },
    Check {
        id: CheckId::MaxGapMs,
        bound: |c| c.max_gap_ms.map(|b| b as f64),
        range: None,
        op: Op::AtMost,
        scope: telemetry(
            |o| Some(o.live.iter().map(|r| r.max_gap_ms).max().unwrap_or(0) as f64),
            Some(explain::max_gap),
        ),
    },
    Check {
        id: CheckId::MaxOffcpuSpreadPct,
        bound: |c| c.max_offcpu_spread_pct,
        range: Some((0.0, 100.0)),
        op: Op::AtMost,
        scope: telemetry(
            |o| (!o.race).then(|| offcpu_spread_by_role(&o.live)),
            Some(explain::offcpu_spread_of_worst_role),
        ),
    },
    Check {
        id: CheckId::MaxP99WakeLatencyUs,
        bound: |c| c.max_p99_wake_latency_us.map(|b| b as f64),
        range: None,
        op: Op::AtMost,
        scope: telemetry(
            |o| percentile(&o.wakes, 99.0).map(|ns| ns as f64 / 1e3),
            Some(explain::latency_samples),
        ),
    },
    Check {
        id: CheckId::MaxP999WakeLatencyUs,
        bound: |c| c.max_p999_wake_latency_us.map(|b| b as f64),
        range: None,
        op: Op::AtMost,
        scope: telemetry(
            |o| percentile(&o.wakes, 99.9).map(|ns| ns as f64 / 1e3),
            Some(explain::latency_samples),
        ),
    },
    Check {
        id: CheckId::MaxWakeLatencyCv,
        bound: |c| c.max_wake_latency_cv,
        range: None,
        op: Op::AtMost,
        scope: telemetry(
            |o| coefficient_of_variation(&o.wakes),
            Some(explain::latency_samples),
        ),
    },
    Check {
        id: CheckId::MinWorkRate,
        bound: |c| c.min_work_rate,
        range: None,
        op: Op::AtLeast,
        scope: telemetry(slowest_work_rate, Some(explain::min_work_rate)),
    },
    Check {
        id: CheckId::MaxMigrationRatio,
        bound: |c| c.max_migration_ratio,
        range: None,
        op: Op::AtMost,
        scope: telemetry(
            |o| Some(migration_ratio(&o.live)),
            Some(explain::migrations),
        ),
    },
    Check {
        id: CheckId::MinNumaLocality,
        bound: |c| c.min_numa_locality,
        range: Some((0.0, 1.0)),
        op: Op::AtLeast,
        scope: telemetry(|o| numa_locality(&o.live), Some(explain::numa_locality)),
    },
    Check {
        id: CheckId::MaxNumaPagesMigrated,
        bound: |c| c.max_numa_pages_migrated.map(|b| b as f64),
        range: None,
        op: Op::AtMost,
        scope: telemetry(
            |o| {
                let worst = o.live.iter().map(|r| r.vmstat_numa_pages_migrated).max();
                Some(worst.unwrap_or(0) as f64)
            },
            None,
        ),
    },
    Check {
        id: CheckId::MinFairShare,
        bound: |c| c.min_fair_share,
        range: Some((0.0, 1.0)),
        op: Op::AtLeast,
        scope: Scope::AcrossGroups,
    },
    Check {
        id: CheckId::MaxRqImbalance,
        bound: |c| c.max_rq_imbalance.map(|b| b as f64),
        range: None,
        op: Op::AtMost,
        scope: Scope::Host,
    },
    Check {
        id: CheckId::MaxRunnableWaitMs,
        bound: |c| c.max_runnable_wait_ms.map(|b| b as f64),
        range: None,
        op: Op::AtMost,
        scope: Scope::Host,
    },
    Check {
        id: CheckId::MaxScxRejectedTasks,
        bound: |c| c.max_scx_rejected_tasks.map(|b| b as f64),
        range: None,
        op: Op::AtMost,
        scope: Scope::SchedExt(SchedExtFigure::Rejected),
    },
    Check {
        id: CheckId::MaxScxFallbackRate,
        bound: |c| c.max_scx_fallback_rate,
        range: Some((0.0, f64::MAX)),
        op: Op::AtMost,
        scope: Scope::SchedExt(SchedExtFigure::EventRate(
            EV_SELECT_CPU_FALLBACK,
            "select_cpu fallbacks",
        )),
    },
    Check {
        id: CheckId::MaxScxKeepLastRate,
        bound: |c| c.max_scx_keep_last_rate,
        range: Some((0.0, f64::MAX)),
        op: Op::AtMost,
        scope: Scope::SchedExt(SchedExtFigure::EventRate(
            EV_DISPATCH_KEEP_LAST,
            "dispatches that kept the last task",
        )),
    },
    Check {
        id: CheckId::MaxRqClockStallMs,
        bound: |c| c.max_rq_clock_stall_ms.map(|b| b as f64),
        range: None,
        op: Op::AtMost,
        scope: Scope::SchedExt(SchedExtFigure::RqClockStall),
    },
    Check {
        id: CheckId::MaxScxLocalDsqDepth,
        bound: |c| c.max_scx_local_dsq_depth.map(|b| b as f64),
        range: None,
        op: Op::AtMost,
        scope: Scope::SchedExt(SchedExtFigure::LocalDsqDepth),
    },
    Check {
        id: CheckId::MaxThroughputCv,
        bound: |c| c.max_throughput_cv,
        range: Some((0.0, f64::MAX)),
        op: Op::AtMost,
        scope: telemetry(
            |o| rates::throughput_cv(&o.live),
            Some(explain::throughput_cv),
        ),
    },
    Check {
        id: CheckId::MinIterationRate,
        bound: |c| c.min_iteration_rate,
        range: Some((0.0, f64::MAX)),
        op: Op::AtLeast,
        scope: telemetry(
            |o| rates::slowest_iteration_rate(&o.live),
            Some(explain::iteration_rate),
        ),
    },
    Check {
        id: CheckId::CpusetIsolation,
        bound: |c| c.cpuset_isolation.then_some(0.0),
        range: None,
        op: Op::AtMost,
        scope: Scope::Placement,
    },
    Check {
        id: CheckId::MaxCrossNodeMigrationRatio,
        bound: |c| c.max_cross_node_migration_ratio,
        range: Some((0.0, 1.0)),
        op: Op::AtMost,
        scope: Scope::Placement,
    },
];

/// Names accepted in `disable`.
pub const CHECK_NAMES: [&str; CHECKS.len()] = {
    let mut names = [""; CHECKS.len()];
    let mut i = 0;
    while i < CHECKS.len() {
        names[i] = match CHECKS[i].id.fixed_name() {
            Some(name) => name,
            None => panic!("a row of the table is a check over time"),
        };
        i += 1;
    }
    names
};

/// `not_stuck`: workers that died, or did no work for a reason that is
/// not the work's own (see [`stuck`]).
fn stuck_workers(o: &Observed) -> Option<f64> {
    let group_did_work = stuck::group_did_work(o.all);
    let stuck = o
        .all
        .iter()
        .filter(|r| stuck::stuck_reason(r, o.is_custom, group_did_work).is_some())
        .count();
    Some(stuck as f64)
}

/// `min_work_rate`: the slowest live worker's work units per second.
fn slowest_work_rate(o: &Observed) -> Option<f64> {
    let slowest = o
        .live
        .iter()
        .map(|r| r.work_units as f64 * 1e9 / r.wall_time_ns.max(1) as f64)
        .fold(f64::INFINITY, f64::min);
    Some(if slowest.is_finite() { slowest } else { 0.0 })
}
