//! A scenario: cgroups with limits, groups of workers placed in them, and
//! a duration. Built in Rust with [`ScenarioBuilder`] or taken from the
//! built-in default.

use std::time::Duration;

use runq_kernel::cgroup::{validate_group_path, CgroupLimits};
use serde::{Deserialize, Serialize};

use crate::worktype::{WorkType, WorkTypeError};

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
}

/// A whole scenario.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Scenario {
    /// Scenario name.
    pub name: String,
    /// How long the workers run.
    pub duration: Duration,
    /// cgroups to create.
    pub cgroups: Vec<CgroupSpec>,
    /// Worker groups; index 0 is the primary group.
    pub groups: Vec<GroupSpec>,
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

impl Scenario {
    /// The scenario `runq run` runs with no argument: CPU spinners beside
    /// pipe ping-pong pairs, each group in its own cgroup, for 3 s.
    pub fn default_scenario() -> Self {
        ScenarioBuilder::new("default")
            .duration(Duration::from_secs(3))
            .cgroup("spinners", CgroupLimits::default())
            .cgroup("pingpong", CgroupLimits::default())
            .group(
                "spinners",
                WorkType::from_name("SpinWait").expect("built-in type"),
                2,
                Some("spinners"),
            )
            .group(
                "pingpong",
                WorkType::from_name("PipeIo").expect("built-in type"),
                4,
                Some("pingpong"),
            )
            .build()
    }

    /// Total workers over all groups.
    pub fn total_workers(&self) -> usize {
        self.groups.iter().map(|g| g.workers).sum()
    }

    /// True when the scenario asks for cgroups.
    pub fn wants_cgroups(&self) -> bool {
        !self.cgroups.is_empty() || self.groups.iter().any(|g| g.cgroup.is_some())
    }

    /// True when any cgroup carries a limit.
    pub fn has_limits(&self) -> bool {
        self.cgroups.iter().any(|c| !c.limits.is_empty())
    }

    /// Checks worker counts, cgroup names and references.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        if self.duration.is_zero() {
            return Err(ScenarioError::Invalid(
                "duration must be greater than zero".into(),
            ));
        }
        if self.groups.is_empty() {
            return Err(ScenarioError::Invalid(
                "the scenario has no worker groups".into(),
            ));
        }
        for c in &self.cgroups {
            validate_group_path(&c.name).map_err(|e| ScenarioError::Invalid(e.to_string()))?;
        }
        for g in &self.groups {
            g.work
                .validate_workers(g.workers)
                .map_err(|source| ScenarioError::WorkType {
                    group: g.name.clone(),
                    source,
                })?;
            if let Some(cg) = &g.cgroup {
                validate_group_path(cg).map_err(|e| ScenarioError::Invalid(e.to_string()))?;
            }
        }
        Ok(())
    }
}

/// Builds a [`Scenario`] in Rust.
#[derive(Debug, Clone)]
pub struct ScenarioBuilder(Scenario);

impl ScenarioBuilder {
    /// A new scenario with a 3 s duration and nothing in it.
    pub fn new(name: &str) -> Self {
        ScenarioBuilder(Scenario {
            name: name.to_string(),
            duration: Duration::from_secs(3),
            cgroups: Vec::new(),
            groups: Vec::new(),
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

    /// Adds a group of `workers` workers doing `work`, optionally in a cgroup.
    pub fn group(
        mut self,
        name: &str,
        work: WorkType,
        workers: usize,
        cgroup: Option<&str>,
    ) -> Self {
        self.0.groups.push(GroupSpec {
            name: name.to_string(),
            work,
            workers,
            cgroup: cgroup.map(str::to_string),
        });
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
            .group("a", spin, 1, Some("../escape"))
            .build();
        assert!(s.validate().is_err());
        assert!(ScenarioBuilder::new("x").build().validate().is_err());
    }
}
