//! Why a failed check failed, as far as the run's own figures tell: what
//! took the CPU time a group was owed (the run's other groups, the
//! group's own workers, tasks outside the run), whether the load outside
//! the run can account for the figure at all, and what to run next.
//! (The load's part: `outside_load`; the mechanism's: `mechanism`.)

use serde::Serialize;

use runq_kernel::task_record::TaskRecord;

use super::mechanism::Mechanism;
use super::outside_load::OutsideLoad;

/// What the run's figures say about one failed check.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Cause {
    /// What took the time or caused the delay, with its figures: the
    /// recorder's mechanism first, the figures' after (runq-results
    /// writes each as a clause).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub mechanism: Vec<Mechanism>,
    /// Whether load outside the run can account for the figure (absent
    /// for a check that load cannot touch, or when the host was quiet).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outside_load: Option<OutsideLoad>,
    /// The run to make next to tell the causes apart.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_step: Option<NextStep>,
    /// What the per-task recorder saw of the worker the check points at:
    /// its run time and waits, who held its CPU while it waited (see
    /// [`super::recorded`]); runq-results writes it as a sentence.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recorder: Option<RecorderAccount>,
    /// The task that held the CPU of the worker the check points at for
    /// longest while it waited, when the recorder saw one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held_by: Option<HeldBy>,
    /// Why there was no per-task recorder (`--evidence off`, not root):
    /// the cause is then what /proc and schedstat tell.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub no_recorder: Option<String>,
}

/// The run or the look to make next after a FAIL, as runq-results words
/// it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum NextStep {
    /// The same scenario with `--no-cgroups`, as a control: every worker
    /// then competes as a task.
    NoCgroupsControl,
    /// A rerun with `--flight-recorder`, to see who held the worker's CPU
    /// (the group's CPUs when `None`).
    FlightRecorder {
        /// The worker, when the check points at one.
        worker: Option<u32>,
    },
    /// Stop the task outside the run that held the worker's CPU, or keep
    /// the run off that CPU.
    StopHolder {
        /// Its comm.
        comm: String,
        /// Its pid.
        pid: u32,
    },
    /// Keep the run off the CPUs tasks outside it held (none named).
    KeepOffOutsideCpus,
    /// Leave runq a CPU: fewer workers than CPUs.
    LeaveRunqACpu,
    /// Look for what ended the worker.
    FindWhatEndedIt,
    /// Fix the run's own error.
    FixRunError,
}

/// The per-task recorder's account of the worker a failed check points
/// at: its own figures, whose tasks held its CPU while it waited, and the
/// tasks that held the CPUs it waited on, as facts.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RecorderAccount {
    /// The worker's record (its holders are in `holders`, named).
    pub record: TaskRecord,
    /// The worker's group.
    pub group: String,
    /// How long each part held the worker's CPU while it waited, ns.
    pub held: HeldParts,
    /// The tasks that held the CPUs it waited on while workers waited
    /// there, most first (at most six).
    pub holders: Vec<NamedHolder>,
}

/// Whose tasks held a worker's CPU while it waited, ns each.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct HeldParts {
    /// Workers of its own group or cgroup.
    pub own_ns: u64,
    /// Workers of the run's other groups.
    pub run_ns: u64,
    /// runq's own threads.
    pub runq_ns: u64,
    /// Tasks outside the run.
    pub outside_ns: u64,
}

/// A task that held a CPU a worker waited on, named.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NamedHolder {
    /// Its comm.
    pub comm: String,
    /// Its pid.
    pub pid: u32,
    /// Whose it is: a group of the run, `runq` or `outside`.
    pub whose: String,
    /// How long it held the CPU while workers waited there, ns.
    pub held_ns: u64,
    /// Under sampled fidelity, the samples that saw it there.
    pub samples: u64,
}

/// Who kept a worker off its CPU, as the recorder saw it: the facts a
/// FAIL's first line states in a clause.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HeldBy {
    /// The worker the check points at (its tid).
    pub worker: u32,
    /// The holder's comm.
    pub comm: String,
    /// The holder's pid.
    pub pid: u32,
    /// Whose the holder is: one of the run's groups, `runq` (runq's own
    /// threads) or `outside` (a task outside the run).
    pub whose: String,
    /// How long it held the worker's CPU while the worker waited, ns.
    pub held_ns: u64,
    /// How long the worker waited runnable in all, ns.
    pub wait_ns: u64,
}
