//! Which check a result is, as a type: every check runq judges has one
//! [`CheckId`], serialized under its name in reports, JSON and scenario
//! files (`not_stuck`, `rate_within(work_units)`), and the traits that
//! follow from what it measures: how load outside the run can act on it
//! ([`LoadEffect`]) and which worker a failure of it points at
//! ([`PointsAt`]).
//!
//! A leaf: it uses nothing of the crate, so results, checks, series and
//! evidence can all name checks without a circle between them. A new
//! check is a variant here (its name and traits in the matches below,
//! which the compiler holds exhaustive) and its row in
//! `checks/registry.rs` (its bound in `CheckConfig`, its operator, its
//! scope).

use std::fmt;

use serde::{Serialize, Serializer};

/// One check, by what it judges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CheckId {
    /// Every worker did some work and sent a report.
    NotStuck,
    /// Every worker got the setup its group asked for.
    SetupApplied,
    /// The longest time any worker waited runnable without a CPU.
    MaxGapMs,
    /// The spread of off-CPU shares within a group's role.
    MaxOffcpuSpreadPct,
    /// A group's p99 wake latency.
    MaxP99WakeLatencyUs,
    /// A group's p99.9 wake latency (schbench's tail).
    MaxP999WakeLatencyUs,
    /// The coefficient of variation of a group's wake latencies.
    MaxWakeLatencyCv,
    /// The slowest worker's work units per second.
    MinWorkRate,
    /// Migrations per checkpoint.
    MaxMigrationRatio,
    /// Share of a worker's pages on its most-used NUMA node.
    MinNumaLocality,
    /// Pages migrated across NUMA nodes.
    MaxNumaPagesMigrated,
    /// Each group's share of its CPU entitlement.
    MinFairShare,
    /// Each worker's share of its CPU entitlement within its group.
    MinFairShareWorker,
    /// The host's run-queue imbalance.
    MaxRqImbalance,
    /// The longest runnable wait of any task on the host.
    MaxRunnableWaitMs,
    /// Tasks the BPF scheduler rejected.
    MaxScxRejectedTasks,
    /// sched_ext's select_cpu fallbacks per second.
    MaxScxFallbackRate,
    /// sched_ext's dispatches that kept the last task, per second.
    MaxScxKeepLastRate,
    /// The longest stand-still of a busy CPU's run-queue clock.
    MaxRqClockStallMs,
    /// The deepest local dispatch queue at a sched_ext dump.
    MaxScxLocalDsqDepth,
    /// The coefficient of variation of a group's work rates.
    MaxThroughputCv,
    /// The slowest worker's iterations per second.
    MinIterationRate,
    /// Every CPU a worker used is in its cgroup's cpuset.
    CpusetIsolation,
    /// Share of a group's migrations that crossed NUMA nodes.
    MaxCrossNodeMigrationRatio,
    /// The `--scheduler` under test stayed alive and attached.
    SchedulerAlive,
    /// A check over time on one of a group's counters.
    Series {
        /// The pattern it looks for.
        pattern: SeriesPattern,
        /// The counter's name (`work_units`).
        metric: &'static str,
    },
}

/// The pattern a check over time looks for (its bounds live with the
/// scenario's `SeriesCheck`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SeriesPattern {
    /// The counter never goes down.
    Nondecreasing,
    /// Every interval's rate lies in a range.
    RateWithin,
    /// The intervals' rates vary little.
    SteadyWithin,
    /// The rate over the end of the run is near a target.
    ConvergesTo,
    /// The counter never stops for long.
    Stall,
}

/// How load outside the run can act on a check's figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadEffect {
    /// It takes CPU time in proportion: a share or a rate.
    Proportional,
    /// It keeps a runnable worker off the CPU: the figure is a wait for a
    /// CPU itself (a gap, a runnable wait, a wake-up's latency).
    CpuWait,
    /// It delays, when the workers were waiting for a CPU (a stall, a
    /// spread, a worker without work).
    Delay,
    /// It cannot cause the failure (a death, a setting, placement, the
    /// scheduler's survival).
    None,
}

/// Which worker of the group a failed check points at, for the evidence
/// (the recorder's account, the moment in a flight recording).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PointsAt {
    /// A worker that died, else one that did no work.
    Stuck,
    /// The worker with the longest scheduling gap.
    LongestGap,
    /// The live worker that got the least CPU time.
    LeastCpu,
    /// The worst wakeups of the group's workers, found in a recording
    /// of the scheduler's events (a wake-latency tail).
    WorstWakeups,
    /// No one worker: the evidence looks at the worker that waited
    /// longest for a CPU, when there is a recording.
    Nobody,
}

/// Whether a check's bound is a floor or a ceiling, as [`LoadEffect`]
/// needs it for a check whose direction its scenario chooses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// The figure must reach the bound (a rate's floor).
    Floor,
    /// The figure may not exceed the bound.
    Ceiling,
}

impl CheckId {
    /// Every check with a fixed name, in the order results are reported.
    pub const FIXED: [CheckId; 25] = [
        CheckId::NotStuck,
        CheckId::SetupApplied,
        CheckId::MaxGapMs,
        CheckId::MaxOffcpuSpreadPct,
        CheckId::MaxP99WakeLatencyUs,
        CheckId::MaxP999WakeLatencyUs,
        CheckId::MaxWakeLatencyCv,
        CheckId::MinWorkRate,
        CheckId::MaxMigrationRatio,
        CheckId::MinNumaLocality,
        CheckId::MaxNumaPagesMigrated,
        CheckId::MinFairShare,
        CheckId::MinFairShareWorker,
        CheckId::MaxRqImbalance,
        CheckId::MaxRunnableWaitMs,
        CheckId::MaxScxRejectedTasks,
        CheckId::MaxScxFallbackRate,
        CheckId::MaxScxKeepLastRate,
        CheckId::MaxRqClockStallMs,
        CheckId::MaxScxLocalDsqDepth,
        CheckId::MaxThroughputCv,
        CheckId::MinIterationRate,
        CheckId::CpusetIsolation,
        CheckId::MaxCrossNodeMigrationRatio,
        CheckId::SchedulerAlive,
    ];

    /// The check's name in reports, JSON and `disable`; a check over time
    /// is named by its pattern and counter, written out by `Display`.
    pub const fn fixed_name(self) -> Option<&'static str> {
        Some(match self {
            CheckId::NotStuck => "not_stuck",
            CheckId::SetupApplied => "setup_applied",
            CheckId::MaxGapMs => "max_gap_ms",
            CheckId::MaxOffcpuSpreadPct => "max_offcpu_spread_pct",
            CheckId::MaxP99WakeLatencyUs => "max_p99_wake_latency_us",
            CheckId::MaxP999WakeLatencyUs => "max_p999_wake_latency_us",
            CheckId::MaxWakeLatencyCv => "max_wake_latency_cv",
            CheckId::MinWorkRate => "min_work_rate",
            CheckId::MaxMigrationRatio => "max_migration_ratio",
            CheckId::MinNumaLocality => "min_numa_locality",
            CheckId::MaxNumaPagesMigrated => "max_numa_pages_migrated",
            CheckId::MinFairShare => "min_fair_share",
            CheckId::MinFairShareWorker => "min_fair_share_worker",
            CheckId::MaxRqImbalance => "max_rq_imbalance",
            CheckId::MaxRunnableWaitMs => "max_runnable_wait_ms",
            CheckId::MaxScxRejectedTasks => "max_scx_rejected_tasks",
            CheckId::MaxScxFallbackRate => "max_scx_fallback_rate",
            CheckId::MaxScxKeepLastRate => "max_scx_keep_last_rate",
            CheckId::MaxRqClockStallMs => "max_rq_clock_stall_ms",
            CheckId::MaxScxLocalDsqDepth => "max_scx_local_dsq_depth",
            CheckId::MaxThroughputCv => "max_throughput_cv",
            CheckId::MinIterationRate => "min_iteration_rate",
            CheckId::CpusetIsolation => "cpuset_isolation",
            CheckId::MaxCrossNodeMigrationRatio => "max_cross_node_migration_ratio",
            CheckId::SchedulerAlive => "scheduler_alive",
            CheckId::Series { .. } => return None,
        })
    }

    /// The check with a fixed name `name`.
    pub fn from_fixed_name(name: &str) -> Option<CheckId> {
        CheckId::FIXED
            .into_iter()
            .find(|id| id.fixed_name() == Some(name))
    }

    /// How load outside the run can act on this check, whose bound is a
    /// floor or a ceiling (`direction`, for a check whose scenario
    /// chooses it): load can lower a rate, never raise it.
    pub fn load_effect(self, direction: Direction) -> LoadEffect {
        match self {
            CheckId::MinFairShare
            | CheckId::MinFairShareWorker
            | CheckId::MinWorkRate
            | CheckId::MinIterationRate => LoadEffect::Proportional,
            CheckId::MaxGapMs
            | CheckId::MaxP99WakeLatencyUs
            | CheckId::MaxP999WakeLatencyUs
            | CheckId::MaxRunnableWaitMs
            | CheckId::MaxRqImbalance => LoadEffect::CpuWait,
            CheckId::MaxWakeLatencyCv
            | CheckId::MaxThroughputCv
            | CheckId::MaxOffcpuSpreadPct
            | CheckId::NotStuck => LoadEffect::Delay,
            CheckId::Series { pattern, .. } => pattern.load_effect(direction),
            CheckId::SetupApplied
            | CheckId::MaxMigrationRatio
            | CheckId::MinNumaLocality
            | CheckId::MaxNumaPagesMigrated
            | CheckId::MaxScxRejectedTasks
            | CheckId::MaxScxFallbackRate
            | CheckId::MaxScxKeepLastRate
            | CheckId::MaxRqClockStallMs
            | CheckId::MaxScxLocalDsqDepth
            | CheckId::CpusetIsolation
            | CheckId::MaxCrossNodeMigrationRatio
            | CheckId::SchedulerAlive => LoadEffect::None,
        }
    }

    /// Which worker a failure of this check points at.
    pub fn points_at(self) -> PointsAt {
        match self {
            CheckId::NotStuck => PointsAt::Stuck,
            CheckId::MaxGapMs => PointsAt::LongestGap,
            CheckId::MinFairShare
            | CheckId::MinFairShareWorker
            | CheckId::MinWorkRate
            | CheckId::MinIterationRate
            | CheckId::MaxOffcpuSpreadPct => PointsAt::LeastCpu,
            CheckId::Series { pattern, .. } => match pattern {
                SeriesPattern::RateWithin => PointsAt::LeastCpu,
                SeriesPattern::Nondecreasing
                | SeriesPattern::SteadyWithin
                | SeriesPattern::ConvergesTo
                | SeriesPattern::Stall => PointsAt::Nobody,
            },
            CheckId::MaxP99WakeLatencyUs | CheckId::MaxP999WakeLatencyUs => PointsAt::WorstWakeups,
            CheckId::SetupApplied
            | CheckId::MaxWakeLatencyCv
            | CheckId::MaxMigrationRatio
            | CheckId::MinNumaLocality
            | CheckId::MaxNumaPagesMigrated
            | CheckId::MaxRqImbalance
            | CheckId::MaxRunnableWaitMs
            | CheckId::MaxScxRejectedTasks
            | CheckId::MaxScxFallbackRate
            | CheckId::MaxScxKeepLastRate
            | CheckId::MaxRqClockStallMs
            | CheckId::MaxScxLocalDsqDepth
            | CheckId::MaxThroughputCv
            | CheckId::CpusetIsolation
            | CheckId::MaxCrossNodeMigrationRatio
            | CheckId::SchedulerAlive => PointsAt::Nobody,
        }
    }

    /// True for the checks that judge a group's wake-latency figure.
    pub fn judges_wake_latency(self) -> bool {
        matches!(
            self,
            CheckId::MaxP99WakeLatencyUs | CheckId::MaxWakeLatencyCv
        )
    }
}

impl SeriesPattern {
    /// The pattern's name in scenario files and check names.
    pub const fn name(self) -> &'static str {
        match self {
            SeriesPattern::Nondecreasing => "nondecreasing",
            SeriesPattern::RateWithin => "rate_within",
            SeriesPattern::SteadyWithin => "steady_within",
            SeriesPattern::ConvergesTo => "converges_to",
            SeriesPattern::Stall => "stall",
        }
    }

    /// How load outside the run acts on a check of this pattern.
    fn load_effect(self, direction: Direction) -> LoadEffect {
        match self {
            SeriesPattern::RateWithin if direction == Direction::Floor => LoadEffect::Proportional,
            SeriesPattern::RateWithin | SeriesPattern::Nondecreasing => LoadEffect::None,
            SeriesPattern::Stall | SeriesPattern::SteadyWithin | SeriesPattern::ConvergesTo => {
                LoadEffect::Delay
            }
        }
    }
}

impl fmt::Display for CheckId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CheckId::Series { pattern, metric } => f.pad(&format!("{}({metric})", pattern.name())),
            fixed => f.pad(fixed.fixed_name().unwrap_or_default()),
        }
    }
}

impl Serialize for CheckId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_fixed_check_has_a_distinct_name_that_reads_back() {
        let mut names: Vec<&str> = CheckId::FIXED
            .iter()
            .map(|id| id.fixed_name().expect("fixed"))
            .collect();
        for (id, name) in CheckId::FIXED.iter().zip(&names) {
            assert_eq!(CheckId::from_fixed_name(name), Some(*id));
            assert_eq!(id.to_string(), *name);
        }
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), CheckId::FIXED.len());
    }

    #[test]
    fn a_check_over_time_is_named_by_its_pattern_and_counter() {
        let id = CheckId::Series {
            pattern: SeriesPattern::RateWithin,
            metric: "work_units",
        };
        assert_eq!(id.to_string(), "rate_within(work_units)");
        assert_eq!(
            serde_json::to_string(&id).unwrap(),
            "\"rate_within(work_units)\""
        );
        assert_eq!(CheckId::from_fixed_name("rate_within(work_units)"), None);
    }

    #[test]
    fn load_lowers_a_rate_floor_but_cannot_raise_a_ceiling() {
        let rate = CheckId::Series {
            pattern: SeriesPattern::RateWithin,
            metric: "work_units",
        };
        assert_eq!(rate.load_effect(Direction::Floor), LoadEffect::Proportional);
        assert_eq!(rate.load_effect(Direction::Ceiling), LoadEffect::None);
        assert_eq!(
            CheckId::SchedulerAlive.load_effect(Direction::Ceiling),
            LoadEffect::None
        );
    }
}
