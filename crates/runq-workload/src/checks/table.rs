//! The table of checks: each check's name, where its bound comes from,
//! the range a bound may take, its operator and where it is judged.

use super::{
    coefficient_of_variation, migration_ratio, numa_locality, offcpu_spread_by_role, rates, stuck,
    CheckConfig, Observed, Op,
};
use runq_common::stats::percentile;

/// Where a check is judged.
pub(super) enum Scope {
    /// On each group; the function measures it, `None` when the group
    /// gives nothing to judge. `telemetry`: the measurement needs the
    /// framework's telemetry, so custom groups skip the check.
    Group {
        measure: fn(&Observed) -> Option<f64>,
        telemetry: bool,
    },
    /// Across groups, by [`crate::fair_model`].
    AcrossGroups,
    /// On the host monitor's series, by [`crate::series::host`].
    Host,
    /// On sched_ext's counters over the run, by
    /// [`crate::series::sched_ext`].
    SchedExt,
    /// With the scenario and the host's topology, by [`placement`].
    Placement,
}

/// One check: its name (in reports and `disable`), its bound taken from
/// the config (`None`: off), the range a bound may take, its operator and
/// where it is judged.
pub(super) struct Check {
    pub(super) name: &'static str,
    pub(super) bound: fn(&CheckConfig) -> Option<f64>,
    pub(super) range: Option<(f64, f64)>,
    pub(super) op: Op,
    pub(super) scope: Scope,
}

/// A check judged on each group from framework telemetry.
const fn telemetry(measure: fn(&Observed) -> Option<f64>) -> Scope {
    Scope::Group {
        measure,
        telemetry: true,
    }
}

/// Every check, in the order results are reported.
pub(super) const CHECKS: [Check; 22] = [
    Check {
        name: "not_stuck",
        bound: |c| c.not_stuck.then_some(0.0),
        range: None,
        op: Op::AtMost,
        scope: Scope::Group {
            measure: stuck_workers,
            telemetry: false,
        },
    },
    Check {
        name: "setup_applied",
        bound: |c| c.setup_applied.then_some(0.0),
        range: None,
        op: Op::AtMost,
        scope: Scope::Group {
            measure: |o| Some(o.live.iter().filter(|r| r.affinity_error.is_some()).count() as f64),
            telemetry: false,
        },
    },
    Check {
        name: "max_gap_ms",
        bound: |c| c.max_gap_ms.map(|b| b as f64),
        range: None,
        op: Op::AtMost,
        scope: telemetry(|o| Some(o.live.iter().map(|r| r.max_gap_ms).max().unwrap_or(0) as f64)),
    },
    Check {
        name: "max_offcpu_spread_pct",
        bound: |c| c.max_offcpu_spread_pct,
        range: Some((0.0, 100.0)),
        op: Op::AtMost,
        scope: telemetry(|o| (!o.race).then(|| offcpu_spread_by_role(&o.live))),
    },
    Check {
        name: "max_p99_wake_latency_us",
        bound: |c| c.max_p99_wake_latency_us.map(|b| b as f64),
        range: None,
        op: Op::AtMost,
        scope: telemetry(|o| percentile(&o.wakes, 99.0).map(|ns| ns as f64 / 1e3)),
    },
    Check {
        name: "max_wake_latency_cv",
        bound: |c| c.max_wake_latency_cv,
        range: None,
        op: Op::AtMost,
        scope: telemetry(|o| coefficient_of_variation(&o.wakes)),
    },
    Check {
        name: "min_work_rate",
        bound: |c| c.min_work_rate,
        range: None,
        op: Op::AtLeast,
        scope: telemetry(slowest_work_rate),
    },
    Check {
        name: "max_migration_ratio",
        bound: |c| c.max_migration_ratio,
        range: None,
        op: Op::AtMost,
        scope: telemetry(|o| Some(migration_ratio(&o.live))),
    },
    Check {
        name: "min_numa_locality",
        bound: |c| c.min_numa_locality,
        range: Some((0.0, 1.0)),
        op: Op::AtLeast,
        scope: telemetry(|o| numa_locality(&o.live)),
    },
    Check {
        name: "max_numa_pages_migrated",
        bound: |c| c.max_numa_pages_migrated.map(|b| b as f64),
        range: None,
        op: Op::AtMost,
        scope: telemetry(|o| {
            let worst = o.live.iter().map(|r| r.vmstat_numa_pages_migrated).max();
            Some(worst.unwrap_or(0) as f64)
        }),
    },
    Check {
        name: "min_fair_share",
        bound: |c| c.min_fair_share,
        range: Some((0.0, 1.0)),
        op: Op::AtLeast,
        scope: Scope::AcrossGroups,
    },
    Check {
        name: "max_rq_imbalance",
        bound: |c| c.max_rq_imbalance.map(|b| b as f64),
        range: None,
        op: Op::AtMost,
        scope: Scope::Host,
    },
    Check {
        name: "max_runnable_wait_ms",
        bound: |c| c.max_runnable_wait_ms.map(|b| b as f64),
        range: None,
        op: Op::AtMost,
        scope: Scope::Host,
    },
    Check {
        name: "max_scx_rejected_tasks",
        bound: |c| c.max_scx_rejected_tasks.map(|b| b as f64),
        range: None,
        op: Op::AtMost,
        scope: Scope::SchedExt,
    },
    Check {
        name: "max_scx_fallback_rate",
        bound: |c| c.max_scx_fallback_rate,
        range: Some((0.0, f64::MAX)),
        op: Op::AtMost,
        scope: Scope::SchedExt,
    },
    Check {
        name: "max_scx_keep_last_rate",
        bound: |c| c.max_scx_keep_last_rate,
        range: Some((0.0, f64::MAX)),
        op: Op::AtMost,
        scope: Scope::SchedExt,
    },
    Check {
        name: "max_rq_clock_stall_ms",
        bound: |c| c.max_rq_clock_stall_ms.map(|b| b as f64),
        range: None,
        op: Op::AtMost,
        scope: Scope::SchedExt,
    },
    Check {
        name: "max_scx_local_dsq_depth",
        bound: |c| c.max_scx_local_dsq_depth.map(|b| b as f64),
        range: None,
        op: Op::AtMost,
        scope: Scope::SchedExt,
    },
    Check {
        name: "max_throughput_cv",
        bound: |c| c.max_throughput_cv,
        range: Some((0.0, f64::MAX)),
        op: Op::AtMost,
        scope: telemetry(|o| rates::throughput_cv(&o.live)),
    },
    Check {
        name: "min_iteration_rate",
        bound: |c| c.min_iteration_rate,
        range: Some((0.0, f64::MAX)),
        op: Op::AtLeast,
        scope: telemetry(|o| rates::slowest_iteration_rate(&o.live)),
    },
    Check {
        name: "cpuset_isolation",
        bound: |c| c.cpuset_isolation.then_some(0.0),
        range: None,
        op: Op::AtMost,
        scope: Scope::Placement,
    },
    Check {
        name: "max_cross_node_migration_ratio",
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
        names[i] = CHECKS[i].name;
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
