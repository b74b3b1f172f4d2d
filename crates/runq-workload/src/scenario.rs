//! A scenario: cgroups with limits, groups of workers placed in them, a
//! duration, timed steps, checks, and optionally a scheduler to watch.
//! Built in Rust with [`ScenarioBuilder`], read from a TOML file
//! ([`crate::scenario_file`]), or taken from the built-in default.

use std::time::Duration;

use runq_kernel::cgroup::{validate_group_path, CgroupLimits};
use serde::{Deserialize, Serialize};

use crate::checks::CheckConfig;
use crate::placement::WorkerSetup;
use crate::scheduler::SchedulerSpec;
use crate::series::SeriesCheck;
use crate::spawn::{thread_capable, CloneMode, CustomWork, Work};
use crate::worktype::{WakeFigure, WorkType, WorkTypeError};

/// A cgroup the scenario creates, relative to the run's directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CgroupSpec {
    /// Path under `runq/<run-id>/`, e.g. `spin` or `bench/a`.
    pub name: String,
    /// Limits applied when it is created.
    pub limits: CgroupLimits,
}

/// A group of identical workers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupSpec {
    /// Name shown in reports.
    pub name: String,
    /// What the workers do.
    pub work: WorkType,
    /// How many workers.
    pub workers: usize,
    /// The cgroup (a [`CgroupSpec`] name) the workers are placed in.
    pub cgroup: Option<String>,
    /// Affinity, policy, nice and memory policy.
    pub setup: WorkerSetup,
    /// Processes or threads.
    pub clone_mode: CloneMode,
    /// Started by an `add_group` step instead of at time zero.
    pub deferred: bool,
    /// Custom work (Rust API only): when set, the workers run this
    /// function instead of `work`, and only `not_stuck` judges the group.
    #[serde(skip)]
    pub custom: Option<CustomWork>,
    /// Checks over time on the group's snapshots (see [`crate::series`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub series_checks: Vec<SeriesCheck>,
}

impl GroupSpec {
    /// The name of what the workers do (the custom work's, if any).
    pub fn work_name(&self) -> &'static str {
        self.custom.map_or_else(|| self.work.name(), |c| c.name)
    }

    /// What the group's wake samples measure (custom work: latency).
    pub fn wake_figure(&self) -> WakeFigure {
        if self.custom.is_some() {
            WakeFigure::Latency
        } else {
            self.work.info().wake_figure
        }
    }
}

/// What a timed step does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepAction {
    /// Start a deferred group.
    AddGroup(String),
    /// Stop a running group and collect its reports.
    RemoveGroup(String),
    /// Change a cgroup's limits (only the limits given are written).
    SetLimits {
        /// The cgroup.
        cgroup: String,
        /// The new limits.
        limits: CgroupLimits,
    },
}

/// A step at a time offset from the start.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// When, from the start of the run.
    #[serde(rename = "at_ns", alias = "at", with = "runq_common::serde_ns")]
    pub at: Duration,
    /// What.
    pub action: StepAction,
}

/// A whole scenario.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Scenario {
    /// Scenario name.
    pub name: String,
    /// How long the workers run.
    #[serde(
        rename = "duration_ns",
        alias = "duration",
        with = "runq_common::serde_ns"
    )]
    pub duration: Duration,
    /// cgroups to create.
    pub cgroups: Vec<CgroupSpec>,
    /// Worker groups; index 0 is the primary group.
    pub groups: Vec<GroupSpec>,
    /// Timed steps, in time order.
    pub steps: Vec<Step>,
    /// Check bounds.
    pub checks: CheckConfig,
    /// A scheduler to start before the workers and watch.
    pub scheduler: Option<SchedulerSpec>,
    /// Time between snapshots of every group's counters (see
    /// [`crate::series`]); `None`: no snapshots. Default 100 ms.
    #[serde(
        rename = "snapshot_interval_ns",
        default = "default_snapshot_interval",
        with = "crate::series::opt_ns"
    )]
    pub snapshot_interval: Option<Duration>,
}

fn default_snapshot_interval() -> Option<Duration> {
    Some(crate::series::DEFAULT_INTERVAL)
}

/// A scenario that cannot run as written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScenarioError {
    /// A work-type problem in a group.
    #[error("group {group:?}: {source}")]
    WorkType {
        /// Group name.
        group: String,
        /// The problem.
        source: WorkTypeError,
    },
    /// Any other inconsistency.
    #[error("{0}")]
    Invalid(String),
}

fn invalid(msg: String) -> ScenarioError {
    ScenarioError::Invalid(msg)
}

/// How long a scenario runs unless it says otherwise: the default
/// scenario, a scenario built in Rust, `runq run --work-type` without
/// `--duration`.
pub const DEFAULT_DURATION: Duration = Duration::from_secs(3);

impl Scenario {
    /// The scenario `runq run` runs with no argument: CPU spinners beside
    /// pipe ping-pong pairs, each group in its own cgroup, for 3 s.
    pub fn default_scenario() -> Self {
        let spin = WorkType::from_name("SpinWait").expect("built-in type");
        let pipe = WorkType::from_name("PipeIo").expect("built-in type");
        ScenarioBuilder::new("default")
            .cgroup("spinners", CgroupLimits::default())
            .cgroup("pingpong", CgroupLimits::default())
            .group("spinners", spin, 2, Some("spinners"))
            .group("pingpong", pipe, 4, Some("pingpong"))
            .build()
    }

    /// Total workers over all groups.
    pub fn total_workers(&self) -> usize {
        self.groups.iter().map(|g| g.workers).sum()
    }

    /// The CPUs every worker stays on, when each group pins its workers
    /// (`affinity` a CPU or a list) and none moves itself elsewhere
    /// (CrossAffinityChurn, NumaMigrationChurn and SmtSiblingSpin pick
    /// CPUs outside their group's set; a custom function may do anything);
    /// `None` when the workers may run anywhere.
    pub fn pinned_cpus(&self) -> Option<std::collections::BTreeSet<usize>> {
        const MOVERS: [&str; 3] = ["CrossAffinityChurn", "NumaMigrationChurn", "SmtSiblingSpin"];
        let mut all = std::collections::BTreeSet::new();
        for g in &self.groups {
            if g.custom.is_some() || MOVERS.contains(&g.work.name()) {
                return None;
            }
            match &g.setup.affinity {
                crate::placement::Affinity::Single(c) => {
                    all.insert(*c);
                }
                crate::placement::Affinity::Cpus(set) if !set.is_empty() => all.extend(set),
                _ => return None,
            }
        }
        (!all.is_empty()).then_some(all)
    }

    /// True when the scenario asks for cgroups.
    pub fn wants_cgroups(&self) -> bool {
        !self.cgroups.is_empty() || self.groups.iter().any(|g| g.cgroup.is_some())
    }

    /// True when any cgroup carries a limit or a step changes one.
    pub fn has_limits(&self) -> bool {
        self.cgroups.iter().any(|c| !c.limits.is_empty())
            || self
                .steps
                .iter()
                .any(|s| matches!(s.action, StepAction::SetLimits { .. }))
    }

    /// Index of the group named `name`.
    pub fn group_index(&self, name: &str) -> Option<usize> {
        self.groups.iter().position(|g| g.name == name)
    }

    /// Checks worker counts, names, references and steps.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        if self.duration.is_zero() {
            return Err(invalid("duration must be greater than zero".into()));
        }
        if self.groups.is_empty() {
            return Err(invalid("the scenario has no worker groups".into()));
        }
        self.checks.validate().map_err(invalid)?;
        crate::series::validate_scenario(self).map_err(invalid)?;
        if let Some(s) = &self.scheduler {
            s.validate().map_err(invalid)?;
        }
        for c in &self.cgroups {
            validate_group_path(&c.name).map_err(|e| invalid(e.to_string()))?;
        }
        for (i, g) in self.groups.iter().enumerate() {
            self.validate_group(i, g)?;
        }
        self.steps.iter().try_for_each(|s| self.validate_step(s))
    }

    fn validate_group(&self, i: usize, g: &GroupSpec) -> Result<(), ScenarioError> {
        let err = |msg: String| invalid(format!("group {:?}: {msg}", g.name));
        if g.custom.is_none() {
            g.work
                .validate_workers(g.workers)
                .map_err(|source| ScenarioError::WorkType {
                    group: g.name.clone(),
                    source,
                })?;
            g.work.validate_params().map_err(err)?;
        } else if g.workers == 0 {
            return Err(err("a custom group needs at least 1 worker".into()));
        }
        g.setup.validate().map_err(err)?;
        if self.groups[..i].iter().any(|o| o.name == g.name) {
            return Err(err("duplicate group name".into()));
        }
        if let Some(cg) = &g.cgroup {
            validate_group_path(cg).map_err(|e| err(e.to_string()))?;
        }
        if g.clone_mode == CloneMode::Thread {
            if g.custom.is_none() && !thread_capable(&Work::Builtin(g.work.clone())) {
                return Err(err(format!("{} cannot run in thread mode", g.work.name())));
            }
            if g.cgroup.is_some() {
                return Err(err(
                    "thread-mode workers share runq's process and cannot have their own cgroup"
                        .into(),
                ));
            }
        }
        Ok(())
    }

    fn validate_step(&self, s: &Step) -> Result<(), ScenarioError> {
        if s.at >= self.duration {
            return Err(invalid(format!(
                "step at {:?} is not before the end of the run ({:?})",
                s.at, self.duration
            )));
        }
        match &s.action {
            StepAction::AddGroup(name) | StepAction::RemoveGroup(name) => {
                let g = self.group_index(name).map(|i| &self.groups[i]);
                let g = g.ok_or_else(|| invalid(format!("step names unknown group {name:?}")))?;
                if matches!(s.action, StepAction::AddGroup(_)) && !g.deferred {
                    return Err(invalid(format!(
                        "add_group {name:?}: the group must be declared with deferred = true"
                    )));
                }
                if matches!(s.action, StepAction::RemoveGroup(_))
                    && g.clone_mode == CloneMode::Thread
                {
                    return Err(invalid(format!(
                        "remove_group {name:?}: thread-mode groups stop only at the end"
                    )));
                }
                Ok(())
            }
            StepAction::SetLimits { cgroup, .. }
                if !self.cgroups.iter().any(|c| &c.name == cgroup) =>
            {
                Err(invalid(format!("step changes unknown cgroup {cgroup:?}")))
            }
            StepAction::SetLimits { .. } => Ok(()),
        }
    }
}

/// Builds a [`Scenario`] in Rust.
#[derive(Debug, Clone)]
pub struct ScenarioBuilder(Scenario);

impl ScenarioBuilder {
    /// A new scenario with a 3 s duration, default checks, nothing in it.
    pub fn new(name: &str) -> Self {
        ScenarioBuilder(Scenario {
            name: name.to_string(),
            duration: DEFAULT_DURATION,
            cgroups: Vec::new(),
            groups: Vec::new(),
            steps: Vec::new(),
            checks: CheckConfig::default(),
            scheduler: None,
            snapshot_interval: default_snapshot_interval(),
        })
    }

    /// Sets the duration.
    pub fn duration(mut self, d: Duration) -> Self {
        self.0.duration = d;
        self
    }

    /// Adds a cgroup.
    pub fn cgroup(mut self, name: &str, limits: CgroupLimits) -> Self {
        self.0.cgroups.push(CgroupSpec {
            name: name.to_string(),
            limits,
        });
        self
    }

    /// Adds a group of `workers` process workers doing `work`.
    pub fn group(self, name: &str, work: WorkType, workers: usize, cgroup: Option<&str>) -> Self {
        self.group_spec(GroupSpec {
            name: name.to_string(),
            work,
            workers,
            cgroup: cgroup.map(str::to_string),
            setup: WorkerSetup::default(),
            clone_mode: CloneMode::Process,
            deferred: false,
            custom: None,
            series_checks: Vec::new(),
        })
    }

    /// Adds a group of `workers` process workers running a custom
    /// function (see [`CustomWork`]).
    pub fn custom_group(
        self,
        name: &str,
        custom: CustomWork,
        workers: usize,
        cgroup: Option<&str>,
    ) -> Self {
        let spin = WorkType::from_name("SpinWait").expect("built-in");
        let mut b = self.group(name, spin, workers, cgroup);
        if let Some(last) = b.0.groups.last_mut() {
            last.custom = Some(custom);
        }
        b
    }

    /// Adds a fully specified group.
    pub fn group_spec(mut self, g: GroupSpec) -> Self {
        self.0.groups.push(g);
        self
    }

    /// Adds a timed step.
    pub fn step(mut self, at: Duration, action: StepAction) -> Self {
        self.0.steps.push(Step { at, action });
        self.0.steps.sort_by_key(|s| s.at);
        self
    }

    /// Replaces the check bounds.
    pub fn checks(mut self, checks: CheckConfig) -> Self {
        self.0.checks = checks;
        self
    }

    /// Sets the snapshot interval (`None`: no snapshots).
    pub fn snapshot_interval(mut self, interval: Option<Duration>) -> Self {
        self.0.snapshot_interval = interval;
        self
    }

    /// Names a scheduler to start before the workers and watch.
    pub fn scheduler(mut self, spec: SchedulerSpec) -> Self {
        self.0.scheduler = Some(spec);
        self
    }

    /// The finished scenario (validate it before running).
    pub fn build(self) -> Scenario {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_is_valid() {
        let s = Scenario::default_scenario();
        s.validate().unwrap();
        assert_eq!(s.total_workers(), 6);
        assert!(s.wants_cgroups());
        assert!(!s.has_limits());
    }

    #[test]
    fn rejects_bad_groups() {
        let spin = WorkType::from_name("SpinWait").unwrap();
        let s = ScenarioBuilder::new("x")
            .group("a", spin.clone(), 0, None)
            .build();
        assert!(s
            .validate()
            .unwrap_err()
            .to_string()
            .contains("got 0 workers"));
        let s = ScenarioBuilder::new("x")
            .group("a", spin.clone(), 1, Some("../escape"))
            .build();
        assert!(s.validate().is_err());
        assert!(ScenarioBuilder::new("x").build().validate().is_err());
        let s = ScenarioBuilder::new("x")
            .group("a", spin.clone(), 1, None)
            .group("a", spin, 1, None)
            .build();
        assert!(s.validate().unwrap_err().to_string().contains("duplicate"));
    }

    #[test]
    fn steps_must_name_real_things_in_time() {
        let spin = WorkType::from_name("SpinWait").unwrap();
        let base = ScenarioBuilder::new("x")
            .duration(Duration::from_secs(2))
            .group("a", spin, 1, None);
        let late = base
            .clone()
            .step(Duration::from_secs(3), StepAction::RemoveGroup("a".into()))
            .build();
        assert!(late
            .validate()
            .unwrap_err()
            .to_string()
            .contains("before the end"));
        let unknown = base
            .clone()
            .step(Duration::from_secs(1), StepAction::RemoveGroup("b".into()))
            .build();
        assert!(unknown.validate().is_err());
        let not_deferred = base
            .clone()
            .step(Duration::from_secs(1), StepAction::AddGroup("a".into()))
            .build();
        assert!(not_deferred
            .validate()
            .unwrap_err()
            .to_string()
            .contains("deferred"));
        let ok = base
            .step(Duration::from_secs(1), StepAction::RemoveGroup("a".into()))
            .build();
        ok.validate().unwrap();
    }

    #[test]
    fn pinned_cpus_are_known_only_when_every_group_stays_pinned() {
        use crate::placement::Affinity;
        let spin = WorkType::from_name("SpinWait").unwrap();
        let mut s = ScenarioBuilder::new("x")
            .group("a", spin.clone(), 1, None)
            .group("b", spin, 1, None)
            .build();
        assert_eq!(s.pinned_cpus(), None, "unpinned");
        s.groups[0].setup.affinity = Affinity::Single(3);
        assert_eq!(s.pinned_cpus(), None, "one group unpinned");
        s.groups[1].setup.affinity = Affinity::Cpus([0, 1].into());
        assert_eq!(s.pinned_cpus(), Some([0, 1, 3].into()));
        s.groups[1].work = WorkType::from_name("CrossAffinityChurn").unwrap();
        assert_eq!(s.pinned_cpus(), None, "a type that leaves its set");
    }
}
