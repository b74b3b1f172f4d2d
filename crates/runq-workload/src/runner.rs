//! Runs a [`Scenario`]: creates its cgroups, forks and places the workers,
//! starts them together, waits out the duration (or an interrupt), stops
//! and collects them, and removes the cgroups.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use runq_kernel::cgroup::{cleanup_stale_runs, CgroupError, CgroupLayout, RunCgroups};
use serde::Serialize;

use crate::report::WorkerReport;
use crate::scenario::{Scenario, ScenarioError};
use crate::spawn::{WorkSpec, WorkloadHandle};
use crate::summary::{summarize_group, GroupSummary};

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
    /// One summary per group.
    pub groups: Vec<GroupSummary>,
    /// Every worker's report.
    pub reports: Vec<WorkerReport>,
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
    #[error("spawning workers: {0}")]
    Spawn(#[from] std::io::Error),
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
    let run_id = format!(
        "{}-{}",
        std::process::id(),
        crate::clock::monotonic_ns() / 1_000_000
    );
    let mut run = match RunCgroups::create(layout, &run_id) {
        Ok(run) => run,
        Err(e) if e.is_permission() && mode == CgroupMode::IfPermitted => {
            return unplaced(e.to_string())
        }
        Err(e) if e.is_permission() => return Err(RunError::NeedsPrivilege(e.to_string())),
        Err(e) => return Err(e.into()),
    };
    for c in &scn.cgroups {
        run.add_group(&c.name, &c.limits)?;
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

/// Runs `scn` to completion (or interruption).
pub fn run_scenario(scn: &Scenario, opts: RunOptions<'_>) -> Result<RunOutcome, RunError> {
    scn.validate()?;
    let (mut cgroups, placement, stale) = setup_cgroups(scn, opts.cgroups)?;
    let mut group_cgroup = Vec::new();
    for g in &scn.groups {
        let idx = match (&mut cgroups, &g.cgroup) {
            (Some(run), Some(name)) => Some(run.add_group(name, &Default::default())?),
            _ => None,
        };
        group_cgroup.push(idx);
    }
    let specs: Vec<WorkSpec> = scn
        .groups
        .iter()
        .enumerate()
        .map(|(i, g)| WorkSpec {
            group_idx: i,
            work: g.work.clone(),
            workers: g.workers,
        })
        .collect();
    let t_spawn = Instant::now();
    let mut handle = WorkloadHandle::spawn(&specs)?;
    if let Some(run) = &cgroups {
        for (pid, group_idx) in handle.pids() {
            if let Some(cg) = group_cgroup[group_idx] {
                run.place(cg, pid)?;
            }
        }
    }
    handle.start()?;
    let spawn_ns = elapsed_ns(t_spawn);
    let t_run = Instant::now();
    while t_run.elapsed() < scn.duration && !opts.interrupt.load(Ordering::Relaxed) {
        (opts.on_tick)(t_run.elapsed(), scn.duration);
        let left = scn.duration.saturating_sub(t_run.elapsed());
        std::thread::sleep(left.min(Duration::from_millis(100)));
    }
    let run_ns = elapsed_ns(t_run);
    let t_collect = Instant::now();
    let reports = handle.stop_and_collect(opts.collect_timeout);
    let collect_ns = elapsed_ns(t_collect);
    if let Some(mut run) = cgroups.take() {
        run.remove_all();
    }
    let groups = scn
        .groups
        .iter()
        .enumerate()
        .map(|(i, g)| summarize_group(i, &g.name, g.work.name(), &reports))
        .collect();
    Ok(RunOutcome {
        scenario: scn.name.clone(),
        placement,
        interrupted: opts.interrupt.load(Ordering::Relaxed),
        spawn_ns,
        run_ns,
        collect_ns,
        stale_cgroups_removed: stale,
        groups,
        reports,
    })
}

fn elapsed_ns(t: Instant) -> u64 {
    u64::try_from(t.elapsed().as_nanos()).unwrap_or(u64::MAX)
}
