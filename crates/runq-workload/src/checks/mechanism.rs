//! What took a worker's CPU time or caused a check's delay, as facts: the
//! recorder's parts (its own group or cgroup, the run's other groups,
//! runq itself, tasks outside the run), no wait for a CPU, the worker's
//! end, the fair-share split between groups and inside one, a CPU left
//! idle beside waiting work, the run's own error. runq-results writes
//! each as a sentence (`render/mechanism.rs`).

use serde::Serialize;

use crate::report::WorkerExitInfo;

/// One mechanism behind a failed check, with the figures its sentence
/// states. A cause lists the recorder's first, the figures' after.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Mechanism {
    /// Not a wait for a CPU: the worker barely waited runnable, nobody
    /// held its CPU, or, stuck, it slept more than twice as long as it
    /// waited.
    NoCpuWait {
        /// The worker (its tid).
        worker: u32,
        /// How long it waited runnable, ns.
        waited_ns: u64,
        /// Its wall time, ns.
        wall_ns: u64,
        /// How long it ran, ns.
        ran_ns: u64,
        /// How long it was asleep (wall time less run and wait), ns.
        asleep_ns: u64,
    },
    /// The worker waited runnable, but the sampled recorder found no other
    /// task on its CPUs: who held them is not known (a wait, not "no
    /// wait").
    HoldersUnseen {
        /// The worker (its tid).
        worker: u32,
        /// How long it waited runnable, ns.
        waited_ns: u64,
        /// Its wall time, ns.
        wall_ns: u64,
    },
    /// The other workers of its own group or cgroup held its CPU most:
    /// starvation when it ran under half its wall time, contention
    /// otherwise.
    InsideContainer {
        /// It ran under half its wall time (starvation), not just
        /// delayed by its group mates (contention).
        starved: bool,
        /// Its group, or the cgroup runq made for it.
        container: Container,
        /// The worker (its tid).
        worker: u32,
        /// How long it ran, ns.
        ran_ns: u64,
        /// Its wall time, ns.
        wall_ns: u64,
        /// How long they held its CPU, and the first few of them.
        #[serde(flatten)]
        held: HeldFor,
    },
    /// The workers of the run's other groups held its CPU most.
    OtherGroups {
        /// Their groups or cgroups, each once.
        containers: Vec<Container>,
        /// The worker (its tid).
        worker: u32,
        /// How long they held its CPU, and the first few of them.
        #[serde(flatten)]
        held: HeldFor,
    },
    /// runq's own threads (its collector, its host monitor) held its CPU
    /// most: runq measured itself, not load outside the run.
    RunqItself {
        /// The worker (its tid).
        worker: u32,
        /// How long they held its CPU, and the first few of them.
        #[serde(flatten)]
        held: HeldFor,
    },
    /// Tasks outside the run held its CPU most.
    Outside {
        /// The worker (its tid).
        worker: u32,
        /// How long they held its CPU, and the first few of them (none
        /// when they exited before the recorder named them).
        #[serde(flatten)]
        held: HeldFor,
    },
    /// The worker ended (exited, was killed): its end, not a wait for a
    /// CPU, failed the check.
    Ended {
        /// The worker (its tid).
        worker: u32,
        /// How it ended.
        how: WorkerExitInfo,
        /// How long it ran, ns.
        ran_ns: u64,
        /// How long it waited for a CPU, ns.
        waited_ns: u64,
    },
    /// No other group of the run took the CPU time the group was owed:
    /// it went outside the run or stayed idle.
    SharesWentOutside {
        /// The group.
        group: String,
        /// The CPUs it was owed and did not get.
        short_cpus: f64,
    },
    /// The run's other groups took the group's time: the scheduler split
    /// the CPUs between the run's cgroups or tasks against their weights.
    RunTookShares {
        /// The groups that got more than they were owed.
        takers: Vec<ShareTaker>,
        /// What the cgroups' weights were (`equal cpu.shares`), when the
        /// scheduler split the CPUs between the run's cgroups; absent
        /// when it split them between its tasks.
        #[serde(skip_serializing_if = "Option::is_none")]
        cgroup_basis: Option<String>,
    },
    /// A worker got too little of its group's CPU time: starvation
    /// inside the group, its other workers took the rest.
    WorkerStarvedInGroup {
        /// The group.
        group: String,
        /// The worker (its tid).
        worker: u32,
        /// Its part of the group's CPU time, percent.
        got_pct: f64,
        /// What the group as a whole got of what it was owed (1.0: all).
        group_ratio: f64,
        /// How many other workers the group had.
        siblings: usize,
        /// Their part of the group's CPU time, percent.
        siblings_pct: f64,
        /// Their CPU time, in CPUs.
        siblings_cpus: f64,
    },
    /// CPUs of the host stayed idle while the group's workers waited
    /// runnable: the scheduler did not move them to an idle CPU.
    IdleBesideWaiting {
        /// The host's CPUs that stayed idle, on average.
        idle_cpus: f64,
        /// The host's CPUs.
        host_cpus: usize,
        /// The share of their time its workers waited runnable.
        waited_share: f64,
    },
    /// The run ended early on its own error.
    RunError {
        /// The error.
        error: String,
    },
}

/// Where a group's workers ran: a cgroup runq made, or just the group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Container {
    /// A cgroup of the run's own making.
    Cgroup {
        /// Its name.
        name: String,
    },
    /// A group of the run, not in a cgroup of its own.
    Group {
        /// Its name.
        name: String,
    },
}

/// How long one part (a worker's group mates, the run's other groups,
/// runq, tasks outside the run) held a worker's CPU while it waited, and
/// the first few of its tasks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HeldFor {
    /// How long they held its CPU while it waited (at most `waited_ns`:
    /// not the turn in progress when it ended), ns.
    pub held_ns: u64,
    /// How long it waited runnable, ns.
    pub waited_ns: u64,
    /// The first few of them, most first.
    pub holders: Vec<NamedTask>,
    /// How many more held it, not named.
    pub more_holders: usize,
}

/// A task named by its comm and pid.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NamedTask {
    /// Its comm.
    pub comm: String,
    /// Its pid.
    pub pid: u32,
}

/// A group that got more than it was owed of the CPUs the run's groups
/// shared.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ShareTaker {
    /// The group.
    pub group: String,
    /// What it got, percent of the pool.
    pub got_pct: f64,
    /// What it got, in CPUs.
    pub got_cpus: f64,
    /// What it was owed, percent of the pool.
    pub owed_pct: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mechanism_is_its_kind_and_its_figures_flat() {
        let m = Mechanism::InsideContainer {
            starved: true,
            container: Container::Cgroup { name: "box".into() },
            worker: 7,
            ran_ns: 1,
            wall_ns: 9,
            held: HeldFor {
                held_ns: 5,
                waited_ns: 6,
                holders: vec![NamedTask {
                    comm: "runq".into(),
                    pid: 8,
                }],
                more_holders: 0,
            },
        };
        assert_eq!(
            serde_json::to_value(&m).unwrap(),
            serde_json::json!({
                "kind": "inside_container",
                "starved": true,
                "container": {"kind": "cgroup", "name": "box"},
                "worker": 7,
                "ran_ns": 1,
                "wall_ns": 9,
                "held_ns": 5,
                "waited_ns": 6,
                "holders": [{"comm": "runq", "pid": 8}],
                "more_holders": 0
            })
        );
        let shares = Mechanism::RunTookShares {
            takers: Vec::new(),
            cgroup_basis: None,
        };
        assert_eq!(
            serde_json::to_value(&shares).unwrap(),
            serde_json::json!({"kind": "run_took_shares", "takers": []})
        );
    }

    /// One of each kind.
    fn every_kind() -> Vec<Mechanism> {
        let held = || HeldFor {
            held_ns: 5,
            waited_ns: 6,
            holders: Vec::new(),
            more_holders: 2,
        };
        let group = || Container::Group { name: "g".into() };
        vec![
            Mechanism::NoCpuWait {
                worker: 1,
                waited_ns: 2,
                wall_ns: 3,
                ran_ns: 4,
                asleep_ns: 5,
            },
            Mechanism::HoldersUnseen {
                worker: 1,
                waited_ns: 2,
                wall_ns: 3,
            },
            Mechanism::InsideContainer {
                starved: false,
                container: group(),
                worker: 1,
                ran_ns: 2,
                wall_ns: 3,
                held: held(),
            },
            Mechanism::OtherGroups {
                containers: vec![group()],
                worker: 1,
                held: held(),
            },
            Mechanism::RunqItself {
                worker: 1,
                held: held(),
            },
            Mechanism::Outside {
                worker: 1,
                held: held(),
            },
            Mechanism::Ended {
                worker: 1,
                how: WorkerExitInfo::Signaled(9),
                ran_ns: 2,
                waited_ns: 3,
            },
            Mechanism::SharesWentOutside {
                group: "g".into(),
                short_cpus: 0.4,
            },
            Mechanism::RunTookShares {
                takers: vec![ShareTaker {
                    group: "h".into(),
                    got_pct: 99.4,
                    got_cpus: 1.9,
                    owed_pct: 50.0,
                }],
                cgroup_basis: Some("equal cpu.shares".into()),
            },
            Mechanism::WorkerStarvedInGroup {
                group: "g".into(),
                worker: 1,
                got_pct: 1.0,
                group_ratio: 0.5,
                siblings: 3,
                siblings_pct: 99.0,
                siblings_cpus: 0.99,
            },
            Mechanism::IdleBesideWaiting {
                idle_cpus: 1.5,
                host_cpus: 4,
                waited_share: 0.8,
            },
            Mechanism::RunError { error: "e".into() },
        ]
    }

    #[test]
    fn every_kind_matches_the_run_schema() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../schemas/run.schema.json");
        let root: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let schema = &root["$defs"]["mechanism"];
        for m in every_kind() {
            let doc = serde_json::to_value(&m).unwrap();
            let errors = runq_testkit::schema::violations(&root, schema, &doc);
            assert!(errors.is_empty(), "{doc}: {errors:?}");
        }
        let unknown = serde_json::json!({"kind": "no_cpu_wait", "worker": 1});
        assert!(!runq_testkit::schema::violations(&root, schema, &unknown).is_empty());
    }
}
