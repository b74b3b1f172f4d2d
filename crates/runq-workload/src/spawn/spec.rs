//! What to start for one group: the work, the worker count, the per-worker
//! setup, process or thread mode, and the watchdog.

use serde::{Deserialize, Serialize};

use crate::placement::WorkerSetup;
use crate::progress::ProgressBoard;
use crate::report::WorkerReport;
use crate::worktype::WorkType;

/// Whether workers are processes or threads of the runq process.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CloneMode {
    /// fork()ed processes (the default; each can have its own cgroup).
    #[default]
    Process,
    /// Threads of the runq process (shared address space).
    Thread,
}

/// What a Custom worker's function is given: who it is, whether to stop,
/// and a way to build its report.
#[derive(Debug, Clone, Copy)]
pub struct CustomContext {
    /// Index of the worker in its group.
    pub worker_idx: usize,
    /// Index of the group.
    pub group_idx: usize,
    /// When the function was called (monotonic ns) and the thread's CPU
    /// time then, for [`Self::report`].
    pub(crate) started: (u64, u64),
}

impl CustomContext {
    /// The context of worker `worker_idx` of group `group_idx`, its
    /// clocks started now.
    pub(crate) fn start(worker_idx: usize, group_idx: usize) -> Self {
        let clocks = (
            runq_kernel::clock::monotonic_ns(),
            runq_kernel::clock::thread_cpu_ns(),
        );
        CustomContext {
            worker_idx,
            group_idx,
            started: clocks,
        }
    }

    /// True once the worker has been told to stop (poll it in your loop).
    pub fn stop_requested(&self) -> bool {
        crate::stop::stop_requested()
    }

    /// A report of `work_units` and `iterations` done since the function
    /// was called, with its wall time, its thread's CPU time and the time
    /// it spent off CPU filled in (what `min_work_rate`-style figures and
    /// the report's rates are computed from); return it from `run`.
    pub fn report(&self, work_units: u64, iterations: u64) -> WorkerReport {
        let wall = runq_kernel::clock::monotonic_ns().saturating_sub(self.started.0);
        let cpu = runq_kernel::clock::thread_cpu_ns().saturating_sub(self.started.1);
        WorkerReport {
            tid: runq_kernel::clock::gettid(),
            work_units,
            iterations,
            wall_time_ns: wall,
            cpu_time_ns: cpu,
            off_cpu_ns: wall.saturating_sub(cpu),
            ..Default::default()
        }
    }
}

/// A user-supplied worker: after fork, cgroup placement, the start signal,
/// affinity and scheduling policy, `run` takes over. The framework collects
/// no telemetry for it; the report `run` returns is what is reported.
#[derive(Debug, Clone, Copy)]
pub struct CustomWork {
    /// Name shown in reports.
    pub name: &'static str,
    /// The worker body; return when `ctx.stop_requested()` turns true.
    pub run: fn(&CustomContext) -> WorkerReport,
}

/// Two custom works are the same when they have the same name (function
/// addresses are not a reliable identity).
impl PartialEq for CustomWork {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

/// The work of a group: a built-in type or a custom function.
#[derive(Debug, Clone)]
pub enum Work {
    /// A built-in work type.
    Builtin(WorkType),
    /// A user function.
    Custom(CustomWork),
}

impl Work {
    /// The name shown in reports.
    pub fn name(&self) -> &'static str {
        match self {
            Work::Builtin(t) => t.name(),
            Work::Custom(c) => c.name,
        }
    }
}

impl From<WorkType> for Work {
    fn from(t: WorkType) -> Self {
        Work::Builtin(t)
    }
}

pub use crate::alarm::{Freeze, Watchdog};

/// What to start for one group.
#[derive(Debug, Clone)]
pub struct WorkSpec {
    /// Index reported in each worker's `group_idx`.
    pub group_idx: usize,
    /// The work each worker does.
    pub work: Work,
    /// How many workers.
    pub workers: usize,
    /// Affinity, policy, nice, memory policy.
    pub setup: WorkerSetup,
    /// Processes or threads.
    pub clone_mode: CloneMode,
    /// The watchdog, unless disabled (repro mode) or no scheduler is named.
    pub watchdog: Option<Watchdog>,
    /// The recorder's stop-on-threshold trigger, when one is armed.
    pub freeze: Option<Freeze>,
    /// Where the workers publish their progress for the run's snapshots
    /// (slot = worker index in the group); `None`: not published.
    pub(crate) progress: Option<ProgressBoard>,
}

impl WorkSpec {
    /// `workers` processes of a built-in type with default setup.
    pub fn new(group_idx: usize, work: WorkType, workers: usize) -> Self {
        WorkSpec {
            group_idx,
            work: Work::Builtin(work),
            workers,
            setup: WorkerSetup::default(),
            clone_mode: CloneMode::Process,
            watchdog: None,
            freeze: None,
            progress: None,
        }
    }

    /// `workers` processes running a custom function.
    pub fn custom(group_idx: usize, custom: CustomWork, workers: usize) -> Self {
        WorkSpec {
            work: Work::Custom(custom),
            ..WorkSpec::new(
                group_idx,
                WorkType::from_name("SpinWait").expect("built-in"),
                workers,
            )
        }
    }
}

/// Built-in types whose workers can run as threads: every type whose body
/// owns its resources outright. ForkExit stays a process: forking from a
/// thread of the runq process would copy runq itself, as would
/// CgroupAttachStorm's victims. CgroupChurn too: a thread cannot leave
/// the runq process's cgroup for one of its own.
pub fn thread_capable(work: &Work) -> bool {
    match work {
        Work::Custom(_) => true,
        Work::Builtin(t) => !matches!(
            t,
            WorkType::ForkExit(_) | WorkType::CgroupChurn(_) | WorkType::CgroupAttachStorm(_)
        ),
    }
}
