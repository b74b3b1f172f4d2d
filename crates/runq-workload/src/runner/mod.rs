//! Runs a [`Scenario`]: creates its cgroups, starts the scheduler it names,
//! forks and places the workers, starts them together, applies the timed
//! steps, waits out the duration (or an interrupt, or the scheduler's
//! death), stops and collects the workers, removes the cgroups, and checks
//! the reports.

mod ejection;
mod host;
pub mod host_load;
mod interrupted;
mod judge;
mod recorder_summary;
mod rt;

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use runq_kernel::cgroup::{cleanup_stale_runs, CgroupError, CgroupLayout, RunCgroups};
use serde::Serialize;

use crate::alarm::{Freeze, Watchdog};
use crate::checks::{CheckResult, SkippedCheck, Verdict};
use crate::fault::{Fault, FaultStep};
use crate::report::{WorkerExitInfo, WorkerReport};
use crate::scenario::{Scenario, ScenarioError, StepAction};
use crate::scheduler::{SchedulerDeath, SchedulerProc, SchedulerRun, StartError};
use crate::series::host::RunnableWaitProbe;
use crate::series::sampler::Sampler;
use crate::series::RunSeries;
use crate::spawn::{WorkSpec, WorkloadHandle};
use crate::summary::GroupSummary;
use crate::task_recorder::{MaybeRecorder, Recorded};
use host::{start_scheduler, stop_scheduler, watchdog_for};
use host_load::HostLoad;
use judge::{final_verdict, judge_run, judge_sched_ext};
pub use recorder_summary::RecorderSummary;

/// Whether a run uses cgroups.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CgroupMode {
    /// Fail when cgroups cannot be created.
    Required,
    /// Use them when permitted, else run unplaced.
    IfPermitted,
    /// Never create cgroups.
    Off,
}

/// Where the workers ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Placement {
    /// In runq's cgroups under this run id.
    Cgroups {
        /// `runq/<run_id>` in each hierarchy.
        run_id: String,
        /// The hierarchy roots used.
        hierarchies: Vec<String>,
    },
    /// Without cgroups, and why.
    Unplaced {
        /// The reason, for the one-line notice.
        reason: String,
    },
}

/// Options of one run.
pub struct RunOptions<'a> {
    /// cgroup policy.
    pub cgroups: CgroupMode,
    /// Set by SIGINT/SIGTERM; the run stops early when it turns true.
    pub interrupt: &'a AtomicBool,
    /// Called about every 100 ms with (elapsed, planned duration).
    pub on_tick: &'a mut dyn FnMut(Duration, Duration),
    /// Deadline for collecting reports after the stop signal.
    pub collect_timeout: Duration,
    /// Repro mode: no watchdog signals to the scheduler.
    pub repro: bool,
    /// A start-up fault to inject (tests; `RUNQ_FAULT` in the binary).
    pub fault: Option<Fault>,
    /// The most workers per online CPU the run may start (see
    /// [`crate::capacity`]).
    pub max_workers_per_cpu: usize,
    /// The host monitor's runnable-wait probe, or why there is none (the
    /// report says so).
    pub runnable_wait: Result<Box<dyn RunnableWaitProbe>, String>,
    /// The flight recorder's stop-on-threshold trigger, armed in every
    /// framework worker, when the caller records.
    pub freeze: Option<Freeze>,
    /// The per-task recorder of the workers, or why there is none (the
    /// failed checks' causes then say so).
    pub recorder: MaybeRecorder,
}

/// Everything a run produced.
#[derive(Debug, Clone, Serialize)]
pub struct RunOutcome {
    /// Scenario name.
    pub scenario: String,
    /// Where the workers ran.
    pub placement: Placement,
    /// True when SIGINT/SIGTERM cut the run short.
    pub interrupted: bool,
    /// Time from first fork to every worker released, ns.
    pub spawn_ns: u64,
    /// Time the workers ran, ns.
    pub run_ns: u64,
    /// Time from the stop signal to every report collected, ns.
    pub collect_ns: u64,
    /// Stale run directories removed before this run.
    pub stale_cgroups_removed: usize,
    /// The scheduler under test (`--scheduler`), if one was started.
    pub scheduler: Option<SchedulerRun>,
    /// The watched scheduler's death, if it died.
    pub scheduler_death: Option<SchedulerDeath>,
    /// Why the run ended early, when it could not go as planned (a fork
    /// or a cgroup operation failed). The reports are complete regardless.
    pub run_error: Option<String>,
    /// One summary per group.
    pub groups: Vec<GroupSummary>,
    /// Every evaluated check.
    pub checks: Vec<CheckResult>,
    /// Checks that were on but not judged, and why (the kernel does not
    /// give their figure).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped_checks: Vec<SkippedCheck>,
    /// Every group's counters over time (absent when snapshots are off).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub series: Option<RunSeries>,
    /// PASS or FAIL.
    pub verdict: Verdict,
    /// How busy the host was beside the run, when `/proc/stat` was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_load: Option<HostLoad>,
    /// Every worker's report.
    pub reports: Vec<WorkerReport>,
    /// What the per-task recorder saw, or why there is nothing.
    #[serde(skip)]
    pub recorded: Result<Recorded, String>,
    /// The recorder's fidelity over the run and its programs' cost (or
    /// why there was no recorder): beside `host_load.runq_cpus`, what
    /// runq's instruments took from the run.
    #[serde(default)]
    pub recorder: RecorderSummary,
}

/// Why a run could not happen.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The scenario is inconsistent.
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    /// cgroups were required but not permitted.
    #[error("{0}")]
    NeedsPrivilege(String),
    /// A cgroup operation failed.
    #[error(transparent)]
    Cgroup(#[from] CgroupError),
    /// fork/pipe failed.
    #[error("starting the run: {0}")]
    Spawn(std::io::Error),
    /// The scheduler could not start, exited before it was ready, or was
    /// not ready in time.
    #[error("{0}")]
    Scheduler(String),
    /// SIGINT/SIGTERM arrived before the workers started.
    #[error("{0}")]
    Interrupted(String),
    /// The host cannot hold the run (checked before the first fork).
    #[error("{0}")]
    Capacity(String),
    /// The host lacks what the scenario needs (SMT siblings, NUMA nodes, a
    /// loaded sched_ext scheduler): the run is skipped, not run as
    /// something else. Checked before the first fork.
    #[error("{0}")]
    HostLacks(String),
}

impl From<StartError> for RunError {
    fn from(e: StartError) -> Self {
        match e {
            StartError::Invalid(m) => RunError::Scenario(ScenarioError::Invalid(m)),
            StartError::Failed(m) => RunError::Scheduler(m),
            StartError::Interrupted(m) => RunError::Interrupted(m),
        }
    }
}

impl From<std::io::Error> for RunError {
    fn from(e: std::io::Error) -> Self {
        RunError::Spawn(e)
    }
}

/// Creates the run's cgroups, or explains why it runs without them.
fn setup_cgroups(
    scn: &Scenario,
    mode: CgroupMode,
) -> Result<(Option<RunCgroups>, Placement, usize), RunError> {
    let unplaced = |reason: String| Ok((None, Placement::Unplaced { reason }, 0));
    if mode == CgroupMode::Off || !scn.wants_cgroups() {
        return unplaced("the scenario uses no cgroups".into());
    }
    let layout = match CgroupLayout::detect() {
        Ok(l) => l,
        Err(e) if mode == CgroupMode::Required => {
            return Err(RunError::NeedsPrivilege(e.to_string()))
        }
        Err(e) => return unplaced(e.to_string()),
    };
    let stale = cleanup_stale_runs(&layout);
    let run_id = next_run_id();
    let mut run = match RunCgroups::create(layout, &run_id) {
        Ok(run) => run,
        Err(e) if e.is_permission() && mode == CgroupMode::IfPermitted => {
            return unplaced(e.to_string())
        }
        Err(e) if e.is_permission() => return Err(RunError::NeedsPrivilege(e.to_string())),
        Err(e) => return Err(e.into()),
    };
    for name in scn.groups.iter().filter_map(|g| g.cgroup.as_deref()) {
        run.expect_workers_in(name);
    }
    for c in &scn.cgroups {
        run.add_group(&c.name, &c.limits).map_err(|e| match e {
            CgroupError::KernelLacks { .. } => RunError::HostLacks(e.to_string()),
            e => e.into(),
        })?;
    }
    for g in &scn.groups {
        if let Some(name) = &g.cgroup {
            run.add_group(name, &Default::default())?;
        }
    }
    let hierarchies = run
        .layout()
        .hierarchies
        .iter()
        .map(|h| h.root.display().to_string())
        .collect();
    Ok((
        Some(run),
        Placement::Cgroups {
            run_id,
            hierarchies,
        },
        stale,
    ))
}

/// The live state of a run between start and stop.
struct LiveRun<'s> {
    scn: &'s Scenario,
    cgroups: Option<RunCgroups>,
    handle: WorkloadHandle,
    watchdog: Option<Watchdog>,
    freeze: Option<Freeze>,
    reports: Vec<WorkerReport>,
    collect_timeout: Duration,
    sampler: Option<Sampler>,
    /// Per group, whether its workers stay out of runq's v1 cpu cgroup
    /// (RT workers under v1 RT group scheduling, see `rt.rs`).
    outside_v1_cpu: Vec<bool>,
    recorder: MaybeRecorder,
}

impl<'s> LiveRun<'s> {
    /// The recorder, taken at the run's end (before the workers are
    /// stopped, so that a sampling one stops sampling first).
    fn take_recorder(&mut self) -> MaybeRecorder {
        if let Ok(r) = &mut self.recorder {
            r.end_of_run();
        }
        std::mem::replace(&mut self.recorder, Err("read".into()))
    }

    /// Stops every worker within `timeout` and gathers its report (after
    /// those of groups removed earlier) and the snapshot series; hands
    /// back the run's cgroups for removal.
    fn collect(
        self,
        timeout: Duration,
    ) -> (Option<RunCgroups>, Vec<WorkerReport>, Option<RunSeries>) {
        let mut reports = self.reports;
        let series = self.sampler.map(Sampler::finish);
        reports.extend(self.handle.stop_and_collect(timeout));
        (self.cgroups, reports, series)
    }

    /// The run before its first worker: the scenario's cgroups, the
    /// watchdog and the snapshot sampler (which takes the runnable-wait
    /// probe).
    fn new(
        scn: &'s Scenario,
        cgroups: Option<RunCgroups>,
        watchdog: Option<Watchdog>,
        opts: &mut RunOptions<'_>,
    ) -> Self {
        let wait = std::mem::replace(&mut opts.runnable_wait, Err("used by the run".into()));
        let recorder = std::mem::replace(&mut opts.recorder, Err("used by the run".into()));
        let mut handle = WorkloadHandle::default();
        handle.inject_fault(opts.fault);
        LiveRun {
            scn,
            cgroups,
            handle,
            watchdog,
            freeze: opts.freeze,
            reports: Vec::new(),
            outside_v1_cpu: vec![false; scn.groups.len()],
            collect_timeout: opts.collect_timeout,
            recorder,
            sampler: scn
                .snapshot_interval
                .and_then(|i| Sampler::new(scn, i, wait).ok())
                .map(|mut s| {
                    s.arm_freeze(opts.freeze);
                    s
                }),
        }
    }

    fn spec(&self, idx: usize) -> WorkSpec {
        let g = &self.scn.groups[idx];
        let mut spec = match g.custom {
            Some(c) => WorkSpec::custom(idx, c, g.workers),
            None => WorkSpec::new(idx, g.work.clone(), g.workers),
        };
        spec.setup = g.setup.clone();
        spec.clone_mode = g.clone_mode;
        spec.watchdog = self.watchdog;
        spec.freeze = self.freeze;
        spec.progress = self.sampler.as_ref().map(|s| s.board(idx));
        spec
    }

    /// Launches every group that is not deferred to a step.
    fn launch_first_groups(&mut self) -> Result<(), RunError> {
        let first: Vec<usize> = (0..self.scn.groups.len())
            .filter(|&i| !self.scn.groups[i].deferred)
            .collect();
        self.launch(&first)
    }

    /// Forks the groups, places their new workers, and releases them. A
    /// fork failure stops the forking (the group's missing workers get
    /// `NotStarted` sentinels) but still releases the workers that exist;
    /// a worker whose placement fails is killed and reported.
    fn launch(&mut self, groups: &[usize]) -> Result<(), RunError> {
        let before = self.handle.pids().len();
        let mut result = Ok(());
        for &idx in groups {
            let spec = self.spec(idx);
            if let Err(e) = self.handle.add_group(&spec) {
                let have = self.handle.group_size(idx);
                let why = format!("group {}: {e}", self.scn.groups[idx].name);
                for _ in have..spec.workers {
                    let info = WorkerExitInfo::NotStarted(why.clone());
                    self.reports.push(WorkerReport::sentinel(0, idx, info));
                }
                result = Err(RunError::Spawn(std::io::Error::new(e.kind(), why)));
                break;
            }
        }
        if runq_kernel::signal::received_signal().is_some() {
            self.handle.abort_unstarted("interrupted before the start");
            return Err(RunError::Interrupted(
                "interrupted while starting the workers".into(),
            ));
        }
        for (pid, group_idx) in self.handle.pids().into_iter().skip(before) {
            if let Err(why) = self.place(pid, group_idx) {
                self.handle.fail_worker(pid, why);
            }
        }
        let ids = self
            .handle
            .workers()
            .into_iter()
            .map(|w| (w.id, w.group_idx));
        crate::task_recorder::watch_all(&mut self.recorder, ids);
        self.handle.start();
        if let Some(s) = &mut self.sampler {
            let workers = self.handle.workers();
            groups.iter().for_each(|&idx| s.activate(idx, &workers));
        }
        result
    }

    /// Places one worker in its group's cgroup (if it has one).
    fn place(&mut self, pid: u32, group_idx: usize) -> Result<(), String> {
        let (Some(run), Some(name)) = (&mut self.cgroups, &self.scn.groups[group_idx].cgroup)
        else {
            return Ok(());
        };
        if self.handle.fault_hits(FaultStep::Place, pid) {
            return Err(format!("placement in {name}: injected fault"));
        }
        let outside = self.outside_v1_cpu[group_idx];
        let placed = run
            .add_group(name, &Default::default())
            .and_then(|cg| run.place_except_v1_cpu(cg, pid, outside));
        placed.map_err(|e| format!("placement in {name}: {e}"))
    }

    fn apply_step(&mut self, action: &StepAction) -> Result<(), RunError> {
        match action {
            StepAction::AddGroup(name) => {
                let idx = self.scn.group_index(name).expect("validated");
                self.launch(&[idx])
            }
            StepAction::RemoveGroup(name) => {
                let idx = self.scn.group_index(name).expect("validated");
                if let Some(s) = &mut self.sampler {
                    s.deactivate(idx);
                }
                let got = self.handle.stop_group(idx, self.collect_timeout);
                self.reports.extend(got);
                Ok(())
            }
            StepAction::SetLimits { cgroup, limits } => {
                if let Some(run) = &mut self.cgroups {
                    let idx = run.add_group(cgroup, &Default::default())?;
                    run.set_limits(idx, limits)?;
                }
                Ok(())
            }
        }
    }
}

/// The file that holds a cgroup's CPU weight in this run's cpu hierarchy.
fn cpu_weight_file(run: &RunCgroups) -> Option<&'static str> {
    let h = run
        .layout()
        .hierarchies
        .iter()
        .find(|h| h.has_controller("cpu"))?;
    Some(if h.is_v2() {
        "cpu.weight"
    } else {
        "cpu.shares"
    })
}

/// How long to wait for reports after the stop signal. Interrupted, the
/// user is waiting: what arrives within the report window (see
/// [`interrupted`]), then the rest is killed (and reported as timed out).
fn collect_timeout(opts: &RunOptions<'_>, workers: usize) -> Duration {
    if !opts.interrupt.load(Ordering::Relaxed) {
        return opts.collect_timeout;
    }
    let cpus = std::thread::available_parallelism().map_or(1, usize::from);
    let window = interrupted::report_window(workers, cpus);
    log::info!(
        "interrupted: waiting up to {} ms for the reports of {workers} workers",
        window.as_millis()
    );
    opts.collect_timeout.min(window)
}

/// The longest sleep of the run loop: how late it may notice an interrupt,
/// a due step or the scheduler's death.
const TICK: Duration = Duration::from_millis(25);

/// Runs `scn` to completion (or interruption). Once workers exist, every
/// failure ends the run early with a full report and `run_error` set.
pub fn run_scenario(scn: &Scenario, mut opts: RunOptions<'_>) -> Result<RunOutcome, RunError> {
    let (cgroups, placement, stale, outside_v1_cpu) = prepare_host(scn, &opts)?;
    let weight_file = cgroups.as_ref().and_then(cpu_weight_file);
    let mut scheduler = start_scheduler(scn, opts.interrupt)?;
    let watchdog = watchdog_for(scn, scheduler.as_ref(), opts.repro);
    let mut live = LiveRun::new(scn, cgroups, watchdog, &mut opts);
    live.outside_v1_cpu = outside_v1_cpu;
    // Raised from the first fork to the last report (see `Boost`).
    let boost = crate::spawn::boost::Boost::raise();
    let t_spawn = Instant::now();
    let launched = live.launch_first_groups();
    let spawn_ns = elapsed_ns(t_spawn);
    let t_run = Instant::now();
    let mut load = host_load::HostLoadMeter::start();
    let aborted_at_start = matches!(launched, Err(RunError::Interrupted(_)));
    let (mut scheduler_death, run_error) = match launched {
        Ok(()) => drive(&mut live, scheduler.as_mut(), opts.interrupt, opts.on_tick),
        Err(RunError::Interrupted(_)) => (None, None),
        Err(e) => (None, Some(e.to_string())),
    };
    let run_ns = elapsed_ns(t_run);
    let recorder = live.take_recorder();
    load.stop();
    let t_collect = Instant::now();
    let timeout = collect_timeout(&opts, live.handle.pids().len());
    let (cgroups, mut reports, series) = live.collect(timeout);
    let recorded = crate::task_recorder::finish(recorder, &reports);
    let host_load = load.finish(run_ns, &reports);
    let collect_ns = elapsed_ns(t_collect);
    drop(boost);
    // A death while the workers were being stopped counts too.
    scheduler_death =
        scheduler_death.or_else(|| scheduler.as_mut().and_then(|s| s.check_death(t_run)));
    let scheduler = stop_scheduler(scheduler, scheduler_death.as_ref());
    remove_cgroups(cgroups);
    reports.sort_by_key(|r| r.group_idx);
    let interrupted = opts.interrupt.load(Ordering::Relaxed);
    let died = scheduler_death.as_ref();
    let (groups, mut checks) = judge_run(
        scn,
        &reports,
        weight_file,
        series.as_ref(),
        died,
        interrupted,
        (
            host_load.as_ref(),
            recorded.as_ref().map_err(String::as_str),
        ),
    );
    if let Some(e) = &run_error {
        judge::blame_the_run_error(e, &mut checks);
    }
    let skipped_checks = judge_sched_ext(scn, series.as_ref(), run_ns, &mut checks);
    checks.extend(judge_placement(scn, &reports, &placement));
    let failed = scheduler_death.is_some() || run_error.is_some();
    let verdict = final_verdict(&checks, failed, interrupted, aborted_at_start);
    Ok(RunOutcome {
        scenario: scn.name.clone(),
        placement,
        interrupted,
        spawn_ns,
        run_ns,
        collect_ns,
        stale_cgroups_removed: stale,
        scheduler,
        scheduler_death,
        run_error,
        groups,
        verdict,
        checks,
        skipped_checks,
        series,
        host_load,
        reports,
        recorder: RecorderSummary::of(&recorded),
        recorded,
    })
}

/// The checks that need the run's placement and the host's NUMA nodes
/// (cpuset isolation, cross-node migrations).
fn judge_placement(
    scn: &Scenario,
    reports: &[WorkerReport],
    placement: &Placement,
) -> Vec<CheckResult> {
    let placed = matches!(placement, Placement::Cgroups { .. });
    let nodes = crate::checks::placement::NodeMap::read(std::path::Path::new("/sys"));
    scn.checks.evaluate_placement(scn, reports, placed, &nodes)
}

/// Removes the run's cgroups (once every worker is gone), logging how
/// long it took.
fn remove_cgroups(cgroups: Option<RunCgroups>) {
    let Some(mut run) = cgroups else { return };
    let t_remove = Instant::now();
    run.remove_all();
    log::info!(
        "cgroups removed in {:.0} ms",
        t_remove.elapsed().as_secs_f64() * 1e3
    );
}

/// Everything decided before the first fork: the scenario and the host's
/// capacity checked, the run's cgroups (their placement and the stale
/// ones removed), where RT workers go, and the RT priority runq's own
/// threads must stay above.
fn prepare_host(
    scn: &Scenario,
    opts: &RunOptions<'_>,
) -> Result<(Option<RunCgroups>, Placement, usize, Vec<bool>), RunError> {
    scn.validate()?;
    let workers = scn.groups.iter().map(|g| g.workers).sum();
    check_capacity(scn, workers, opts.max_workers_per_cpu)?;
    let (mut cgroups, placement, stale) = setup_cgroups(scn, opts.cgroups)?;
    log::info!("placement: {placement:?}; {stale} stale run cgroups removed");
    let outside_v1_cpu = rt::plan_groups(scn, cgroups.as_mut())?;
    // Before any thread of runq's own is boosted (the host monitor's too).
    crate::spawn::boost::set_worker_rt_ceiling(rt::worker_rt_ceiling(scn));
    Ok((cgroups, placement, stale, outside_v1_cpu))
}

/// Refuses, before any fork, a run the host cannot hold: too many
/// workers, buffers past MemAvailable, files past the temporary
/// directory's free space.
fn check_capacity(scn: &Scenario, workers: usize, per_cpu: usize) -> Result<(), RunError> {
    let limits = crate::capacity::HostLimits::read(Path::new("/proc"));
    limits.check(workers, per_cpu).map_err(RunError::Capacity)?;
    let buffers: Vec<_> = scn
        .groups
        .iter()
        .map(|g| (g.name.clone(), g.work.clone(), g.workers))
        .collect();
    crate::capacity::check_buffers(&buffers, limits.mem_available).map_err(RunError::Capacity)?;
    crate::capacity::check_files(&buffers, &std::env::temp_dir()).map_err(RunError::Capacity)?;
    log::info!(
        "run {}: {workers} workers in {} groups for {:?} (capacity: {} CPUs, MemAvailable {} MiB)",
        scn.name,
        scn.groups.len(),
        scn.duration,
        limits.cpus,
        limits.mem_available.unwrap_or(0) >> 20
    );
    Ok(())
}

/// Waits out the duration (see [`drive_steps`]), taking a snapshot every
/// interval and a last one at the end.
fn drive(
    live: &mut LiveRun<'_>,
    scheduler: Option<&mut SchedulerProc>,
    interrupt: &AtomicBool,
    on_tick: &mut dyn FnMut(Duration, Duration),
) -> (Option<SchedulerDeath>, Option<String>) {
    if let Some(s) = &mut live.sampler {
        s.begin();
    }
    let ended = drive_steps(live, scheduler, interrupt, on_tick);
    if let Some(s) = &mut live.sampler {
        s.snapshot_all();
    }
    ended
}

/// Waits out the duration, applying the timed steps, until the end, an
/// interrupt, the scheduler's death or a failed step.
fn drive_steps(
    live: &mut LiveRun<'_>,
    mut scheduler: Option<&mut SchedulerProc>,
    interrupt: &AtomicBool,
    on_tick: &mut dyn FnMut(Duration, Duration),
) -> (Option<SchedulerDeath>, Option<String>) {
    let scn = live.scn;
    let t_run = Instant::now();
    let mut steps = scn.steps.iter().peekable();
    while t_run.elapsed() < scn.duration && !interrupt.load(Ordering::Relaxed) {
        while let Some(step) = steps.next_if(|s| s.at <= t_run.elapsed()) {
            if let Err(e) = live.apply_step(&step.action) {
                return (None, Some(format!("step at {:?}: {e}", step.at)));
            }
        }
        if let Some(death) = scheduler.as_mut().and_then(|s| s.check_death(t_run)) {
            return (Some(death), None);
        }
        on_tick(t_run.elapsed(), scn.duration);
        if let Ok(r) = &mut live.recorder {
            r.tick();
        }
        let sample_in = live.sampler.as_mut().map_or(TICK, |s| {
            s.tick();
            s.until_due()
        });
        let next_step = steps.peek().map_or(scn.duration, |s| s.at);
        let left = next_step.min(scn.duration).saturating_sub(t_run.elapsed());
        let left = left.min(sample_in);
        std::thread::sleep(left.clamp(Duration::from_millis(1), TICK));
    }
    (None, None)
}

fn elapsed_ns(t: Instant) -> u64 {
    u64::try_from(t.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// A run id unique on the host: the owner's pid (stale-run cleanup reads
/// it), the time in ms, and the process's own count of runs, so that two
/// runs a library user starts in the same millisecond get two trees.
fn next_run_id() -> String {
    static RUNS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    format!(
        "{}-{}-{}",
        std::process::id(),
        runq_kernel::clock::monotonic_ns() / 1_000_000,
        RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    )
}

#[cfg(test)]
mod tests {
    /// Two runs of one process in one millisecond still get two trees.
    #[test]
    fn run_ids_of_one_process_differ_and_lead_with_its_pid() {
        let (a, b) = (super::next_run_id(), super::next_run_id());
        assert_ne!(a, b);
        let pid = std::process::id().to_string();
        assert_eq!(a.split('-').next(), Some(pid.as_str()));
    }
}
