//! runq's worker engine.
//!
//! Workers are `fork()`ed processes, each placed in its cgroup before it
//! starts (two-phase start), stopped by SIGUSR1, and handing back a
//! [`WorkerReport`] of telemetry through a pipe. [`runner::run_scenario`]
//! drives a whole [`Scenario`]; [`results`] turns its outcomes into the
//! saved document and [`compare`] judges two such documents.

pub mod capacity;
pub mod catalog;
pub mod checks;
pub mod compare;
pub mod fair_model;
pub mod fairness;
pub mod fault;
pub mod fd;
pub mod gap;
pub mod placement;
pub mod progress;
pub mod report;
pub mod reservoir;
pub mod results;
pub mod runner;
pub mod scenario;
pub mod scenario_file;
pub mod scheduler;
pub mod series;
pub mod shared;
pub mod spawn;
pub mod spin;
pub mod stop;
pub mod summary;
pub mod telemetry;
pub mod worktype;

pub use checks::{CheckConfig, CheckResult, Verdict};
pub use fault::{Fault, FaultStep};
pub use placement::{Affinity, MemPolicy, SchedPolicy, WorkerSetup};
pub use report::{Migration, WorkerExitInfo, WorkerReport, MAX_WAKE_SAMPLES};
pub use runner::{run_scenario, CgroupMode, Placement, RunError, RunOptions, RunOutcome};
pub use scenario::{
    CgroupSpec, GroupSpec, Scenario, ScenarioBuilder, ScenarioError, Step, StepAction,
};
pub use spawn::{
    CloneMode, CustomContext, CustomWork, Watchdog, Work, WorkSpec, WorkerId, WorkloadHandle,
};
pub use worktype::{WakeFigure, WorkType};
