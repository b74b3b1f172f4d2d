//! What a check measured, as facts: the worker or task its figure came
//! from, the figures beside it, why a placement check was skipped, what
//! a check over time saw in its window. A check gives one or more
//! (a latency check names its figure first; a check across a BPF
//! scheduler's end says which side it judged last). runq-results writes
//! each as a sentence (`render/detail.rs`).

use serde::Serialize;

use crate::gap::GapSource;
use crate::report::WorkerExitInfo;
use crate::series::dsq_entries::{DsqDepth, DsqWaiter};
use crate::series::Metric;
use crate::WakeFigure;
use runq_kernel::sched_ext_log::ScxExit;

/// One fact on what a check measured, with the figures its sentence
/// states; in JSON, `{kind, ...}` whatever the family.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Detail {
    /// A group check (`not_stuck`, `max_gap_ms`, `setup_applied`,
    /// `max_offcpu_spread_pct`, the latency checks).
    Group(GroupDetail),
    /// `min_fair_share` and `min_fair_share_worker`.
    Share(ShareDetail),
    /// `min_work_rate`, `min_iteration_rate`, `max_throughput_cv`,
    /// `max_migration_ratio`, `min_numa_locality`.
    Rate(RateDetail),
    /// `cpuset_isolation` and `max_cross_node_migration_ratio`.
    Placement(PlacementDetail),
    /// The scheduler under test: its end, the checks across it.
    Scheduler(SchedulerDetail),
    /// The host monitor's checks.
    Host(HostDetail),
    /// sched_ext's checks: its counters, the run-queue clocks, the
    /// dispatch queues.
    SchedExt(SchedExtDetail),
    /// A check over time.
    Series(SeriesDetail),
}

/// A group check's figures: the worker it came from, the figures beside
/// it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum GroupDetail {
    /// `not_stuck`: workers died under a pipe partner, which then saw
    /// their pipes close.
    PartnersLost {
        /// Each dead partner and the worker that saw it go.
        lost: Vec<LostPartner>,
    },
    /// `not_stuck`: the workers that died or did no work, one entry per
    /// way.
    Stuck {
        /// Each way, with its workers (all of them; the sentence names the
        /// first few).
        ways: Vec<StuckWay>,
    },
    /// `max_gap_ms`: the worker with the longest gap.
    Gap {
        /// The worker (its tid).
        worker: u32,
        /// What the gap was measured from.
        source: GapSource,
        /// The gap, ms.
        gap_ms: u64,
        /// When it ended, ms into the run.
        at_ms: u64,
        /// The CPU it was on.
        cpu: usize,
    },
    /// `setup_applied`: the workers whose setup failed.
    SetupFailed {
        /// Each worker and its error (all of them; the sentence names the
        /// first few).
        errors: Vec<SetupError>,
    },
    /// `max_offcpu_spread_pct`: the most and the least off-CPU workers of
    /// the worst role.
    OffCpuSpread {
        /// The most off-CPU worker (its tid).
        most_worker: u32,
        /// Its share of its run off a CPU, percent.
        most_pct: f64,
        /// The least off-CPU worker (its tid).
        least_worker: u32,
        /// Its share of its run off a CPU, percent.
        least_pct: f64,
    },
    /// The latency checks: what the figure was computed over.
    LatencySamples {
        /// The wake samples.
        samples: usize,
        /// The live workers they came from.
        live_workers: usize,
    },
    /// The latency checks: which of the group's figures they judge.
    LatencyFigure {
        /// The figure.
        figure: WakeFigure,
    },
}

/// A fair-share check's figures: the share got against the share owed.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ShareDetail {
    /// `min_fair_share`: a group's CPU time against its entitlement.
    FairShare {
        /// The group.
        group: String,
        /// Its share of the CPU time it could use, percent.
        got_pct: f64,
        /// The share it was owed, percent.
        expected_pct: f64,
        /// How the entitlements were set (`equal cpu.weight`,
        /// `cpu.weight 100:400, CPU sets`).
        basis: String,
    },
    /// `min_fair_share_worker`: a group's least-served worker against its
    /// share of the group.
    WorkerFairShare {
        /// The worker (its tid).
        worker: u32,
        /// Its share of its group's CPU time, percent.
        got_pct: f64,
        /// The share it was owed, percent.
        expected_pct: f64,
    },
}

/// A placement check's figures, or why it was skipped: cpuset
/// isolation, cross-node migrations.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PlacementDetail {
    /// `cpuset_isolation` skipped: the run had no cgroups, so no cpuset
    /// applied.
    CpusetNotApplied,
    /// `cpuset_isolation`: every CPU seen at a checkpoint was in the
    /// cpuset.
    CpusetKept {
        /// The cpuset's CPUs.
        cpuset: Vec<usize>,
    },
    /// `cpuset_isolation`: workers ran outside their cpuset.
    CpusetLeft {
        /// The first such worker (its tid).
        worker: u32,
        /// The CPUs outside the cpuset it ran on.
        cpus: Vec<usize>,
        /// The cpuset's CPUs.
        cpuset: Vec<usize>,
        /// How many more workers did too.
        more_workers: usize,
    },
    /// `max_cross_node_migration_ratio` skipped: the host has one NUMA
    /// node.
    OneNumaNode {
        /// The host's NUMA nodes.
        nodes: usize,
    },
    /// `max_cross_node_migration_ratio` skipped: too few migrations for
    /// a share.
    TooFewMigrations {
        /// Migrations seen between checkpoints (with both nodes known).
        migrations: u64,
        /// The fewest judged.
        at_least: u64,
    },
    /// `max_cross_node_migration_ratio`: migrations that crossed NUMA
    /// nodes.
    CrossNode {
        /// Those that crossed.
        crossed: u64,
        /// Migrations seen between checkpoints (with both nodes known).
        migrations: u64,
    },
}

/// The scheduler under test: its end, and the checks across it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SchedulerDetail {
    /// A failed gap check whose worst gap came before sched_ext ended the
    /// BPF scheduler: under the BPF scheduler.
    GapBeforeScxEnd {
        /// The scheduler's end.
        #[serde(flatten)]
        end: ScxEnd,
    },
    /// A failed gap check whose worst gap came after sched_ext ended the
    /// BPF scheduler: under the kernel's fair class.
    GapAfterScxEnd {
        /// The scheduler's end.
        #[serde(flatten)]
        end: ScxEnd,
    },
    /// A failed check judged over the whole run, across sched_ext's end
    /// of the BPF scheduler.
    AcrossScxEnd {
        /// The scheduler's end.
        #[serde(flatten)]
        end: ScxEnd,
    },
    /// `scheduler_alive`: the scheduler under test ended during the run.
    SchedulerEnded {
        /// How it ended (`exited with code 1`, `killed by signal 9`).
        status: String,
        /// When, ms into the run.
        at_ms: u64,
        /// sched_ext's own account of the end, when the kernel logged one.
        #[serde(skip_serializing_if = "Option::is_none")]
        sched_ext_exit: Option<ScxExit>,
    },
    /// `scheduler_alive`: the scheduler under test ran until the end.
    SchedulerRan {
        /// Its command.
        command: String,
    },
}

/// The host monitor's figures: run-queue imbalance, the longest
/// runnable wait.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum HostDetail {
    /// `max_rq_imbalance`: the worst run-queue imbalance (max − min
    /// nr_running across CPUs).
    RqImbalance {
        /// When, ns into the run.
        at_ns: u64,
        /// The mean imbalance over the samples.
        mean: f64,
        /// The host monitor's samples.
        samples: u64,
    },
    /// `max_runnable_wait_ms`: the host's longest runnable wait.
    RunnableWait {
        /// The task (its pid).
        pid: u32,
        /// Its name.
        comm: String,
        /// How long it waited, ms.
        waited_ms: f64,
        /// The CPU it got.
        cpu: u32,
        /// When, ns into the run.
        at_ns: u64,
        /// Waits on the host.
        waits: u64,
        /// Their mean, ns.
        mean_ns: u64,
        /// Where the figures come from.
        source: String,
    },
}

/// A check over time: what the counter did in the window it names.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SeriesDetail {
    /// `nondecreasing`: a counter fell.
    Fell {
        /// The counter.
        metric: Metric,
        /// Its value at the window's start.
        from: u64,
        /// Its value at the window's end.
        to: u64,
        /// The first window where it fell.
        #[serde(flatten)]
        window: Span,
        /// Windows where it fell.
        drops: usize,
        /// Windows in all.
        intervals: usize,
    },
    /// `rate_within`: the slowest (or fastest) window out of range.
    RateOutside {
        /// The counter.
        metric: Metric,
        /// Its rate there, in the metric's rate unit.
        rate: f64,
        /// The window.
        #[serde(flatten)]
        window: Span,
        /// Above the bound (else below).
        above: bool,
        /// The bound it passed.
        bound: f64,
        /// Windows out of range.
        outside: usize,
        /// Windows in all.
        intervals: usize,
    },
    /// `steady_within`: the windows' rates varied.
    Unsteady {
        /// The counter.
        metric: Metric,
        /// Their coefficient of variation (infinite, null in JSON, when
        /// the mean rate was 0 or below).
        cv: f64,
        /// From the first window's start to the last one's end.
        #[serde(flatten)]
        window: Span,
        /// Windows.
        intervals: usize,
        /// Their mean rate.
        mean: f64,
        /// The rate farthest from the mean.
        farthest: f64,
        /// Where it was, ns into the run.
        farthest_from_ns: u64,
        /// Its end, ns into the run.
        farthest_to_ns: u64,
    },
    /// `stall`: the longest stretch over which a counter did not move.
    Stalled {
        /// The counter.
        metric: Metric,
        /// The stretch.
        #[serde(flatten)]
        window: Span,
        /// Its length, ms.
        flat_ms: f64,
        /// The longest allowed, ms.
        bound_ms: f64,
    },
    /// `converges_to` a rate: the end window's rate against the target.
    ConvergeRate {
        /// The counter.
        metric: Metric,
        /// Its rate in the end window.
        rate: f64,
        /// The end window.
        #[serde(flatten)]
        window: Span,
        /// The target rate.
        target: f64,
        /// The relative error allowed.
        tolerance: f64,
    },
    /// `converges_to` a share: the group's share of all groups' rate in
    /// the end window against the target.
    ConvergeShare {
        /// The counter.
        metric: Metric,
        /// The group's share.
        share: f64,
        /// The group's rate.
        rate: f64,
        /// Every group's rate together.
        total: f64,
        /// The end window.
        #[serde(flatten)]
        window: Span,
        /// The target share.
        target: f64,
        /// The relative error allowed.
        tolerance: f64,
    },
}

/// A group's workers' pace and placement: the slowest worker,
/// migrations, NUMA locality, the spread of work rates.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RateDetail {
    /// `min_work_rate`: the slowest worker.
    SlowestWorker {
        /// The worker (its tid).
        worker: u32,
        /// Its work units.
        work_units: u64,
        /// Its wall time, ns.
        wall_ns: u64,
    },
    /// `max_migration_ratio`: migrations against checkpoints (one every
    /// 1024 work units).
    Migrations {
        /// Migrations seen.
        migrations: u64,
        /// Checkpoints passed.
        checkpoints: u64,
    },
    /// `min_numa_locality`: the figure is each worker's share of pages on
    /// its busiest NUMA node, the lowest worker's.
    NumaLocality,
    /// `max_throughput_cv`: the slowest and the fastest worker of the
    /// role whose rates spread most.
    WorkRates {
        /// The role's workers.
        workers: usize,
        /// The slowest worker (its tid).
        slowest_worker: u32,
        /// Its work units per second.
        slowest_per_s: f64,
        /// The fastest worker (its tid).
        fastest_worker: u32,
        /// Its work units per second.
        fastest_per_s: f64,
    },
    /// `min_iteration_rate`: the slowest worker's iterations.
    SlowestIterations {
        /// The worker (its tid).
        worker: u32,
        /// Its iterations.
        iterations: u64,
        /// Its wall time, ns.
        wall_ns: u64,
    },
}

/// sched_ext's counters over the run, the run-queue clocks and the
/// dispatch queues.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SchedExtDetail {
    /// `max_scx_rejected`: how much sched_ext's nr_rejected rose.
    ScxRejected {
        /// Tasks the BPF scheduler refused.
        rejected: u64,
    },
    /// A sched_ext event counter's rate over the run.
    ScxEvents {
        /// How much it rose.
        count: u64,
        /// What it counts (`fallbacks to the default CPU`).
        what: String,
        /// The counter (`SCX_EV_SELECT_CPU_FALLBACK`).
        event: String,
        /// The run's length, s.
        secs: f64,
        /// Its rate, per second.
        per_s: f64,
    },
    /// `max_rq_clock_stall_ms`: every busy CPU's run-queue clock moved
    /// between samples.
    RqClockMoved {
        /// The host monitor's samples.
        samples: u64,
    },
    /// `max_rq_clock_stall_ms`: a busy CPU's run-queue clock stood still.
    RqClockStood {
        /// The CPU.
        cpu: u32,
        /// Where its clock stood, ns.
        clock_ns: u64,
        /// The first sample that saw it busy at that clock, ns into the
        /// run.
        from_ns: u64,
        /// The last, ns into the run.
        to_ns: u64,
        /// Its runnable tasks.
        nr_running: u32,
        /// The task on it (0: its idle task).
        #[serde(skip_serializing_if = "Option::is_none")]
        curr_pid: Option<i64>,
        /// The host monitor's samples.
        samples: u64,
    },
    /// `max_scx_local_dsq_depth`: the deepest dispatch queues over
    /// sched_ext's dumps.
    DsqDepths {
        /// Dumps taken.
        dumps: u64,
        /// The deepest local DSQ, none when no task waited on one.
        #[serde(skip_serializing_if = "Option::is_none")]
        local: Option<DsqDepth>,
        /// The deepest other DSQ.
        #[serde(skip_serializing_if = "Option::is_none")]
        other: Option<DsqDepth>,
        /// The most waiting tasks the BPF scheduler held on no DSQ.
        held_max: u32,
        /// The task that waited longest.
        #[serde(skip_serializing_if = "Option::is_none")]
        longest_wait: Option<DsqWaiter>,
    },
}

/// A window of the run, ns from its start.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Span {
    /// Its start.
    pub from_ns: u64,
    /// Its end.
    pub to_ns: u64,
}

/// A BPF scheduler's end, as a check across it states it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScxEnd {
    /// The kernel ejected it (an error), not just disabled it.
    pub ejected: bool,
    /// The BPF scheduler's ops name.
    pub scheduler: String,
    /// When runq saw it, ms into the run.
    pub at_ms: u64,
}

/// A worker that died under its pipe partner.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LostPartner {
    /// The dead partner's index among the group's workers.
    pub partner: usize,
    /// Its pid.
    pub partner_pid: u32,
    /// How it died.
    pub how: WorkerExitInfo,
    /// The worker that saw its pipe close (its pid).
    pub worker: u32,
}

/// A way workers died or did no work, and which did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StuckWay {
    /// The workers (their tids; 0 for one whose tid is unknown).
    pub workers: Vec<u32>,
    /// How, with the first worker's figures.
    pub how: StuckHow,
}

/// How a worker died or did no work.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "way", rename_all = "snake_case")]
pub enum StuckHow {
    /// It ended (exited, was killed).
    Ended {
        /// How.
        exit: WorkerExitInfo,
    },
    /// It timed out after running for a while.
    TimedOut {
        /// Its wall time, ns.
        wall_ns: u64,
        /// Its CPU time, ns.
        cpu_ns: u64,
        /// Its wait runnable without a CPU, ns.
        run_delay_ns: u64,
    },
    /// It completed no work unit.
    NoWork {
        /// Its wall time, ns.
        wall_ns: u64,
        /// Its iterations.
        iterations: u64,
        /// Its share of the time on a CPU, percent.
        on_cpu_pct: f64,
        /// Waiting for a CPU, percent.
        waiting_pct: f64,
        /// Blocked, percent.
        blocked_pct: f64,
        /// Another worker of its group did work.
        group_did_work: bool,
    },
}

impl StuckHow {
    /// Whether two ways read the same at the precision their sentence
    /// gives (workers that did so are counted together).
    pub(crate) fn same_as(&self, other: &StuckHow) -> bool {
        let r = |v: f64, scale: f64| (v * scale).round();
        let s = |ns: u64| r(ns as f64 / 1e9, 10.0);
        let ms = |ns: u64| r(ns as f64 / 1e6, 1.0);
        match (self, other) {
            (Self::Ended { exit: a }, Self::Ended { exit: b }) => a == b,
            (
                Self::TimedOut {
                    wall_ns: w1,
                    cpu_ns: c1,
                    run_delay_ns: d1,
                },
                Self::TimedOut {
                    wall_ns: w2,
                    cpu_ns: c2,
                    run_delay_ns: d2,
                },
            ) => (s(*w1), ms(*c1), ms(*d1)) == (s(*w2), ms(*c2), ms(*d2)),
            (a @ Self::NoWork { .. }, b @ Self::NoWork { .. }) => no_work_key(a) == no_work_key(b),
            _ => false,
        }
    }
}

/// A `NoWork`'s figures at their sentence's precision.
fn no_work_key(h: &StuckHow) -> Option<(f64, u64, [f64; 3], bool)> {
    let StuckHow::NoWork {
        wall_ns,
        iterations,
        on_cpu_pct,
        waiting_pct,
        blocked_pct,
        group_did_work,
    } = h
    else {
        return None;
    };
    let pct = [on_cpu_pct, waiting_pct, blocked_pct].map(|p| p.round());
    let wall = (*wall_ns as f64 / 1e8).round();
    Some((wall, *iterations, pct, *group_did_work))
}

/// A worker whose setup failed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SetupError {
    /// The worker (its tid).
    pub worker: u32,
    /// Its error.
    pub error: String,
}
