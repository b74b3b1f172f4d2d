//! runq's worker engine.
//!
//! Workers are `fork()`ed processes, each placed in its cgroup before it
//! starts (two-phase start), stopped by SIGUSR1, and handing back a
//! [`WorkerReport`] of telemetry through a socket pair. [`run_scenario`]
//! drives a whole [`Scenario`] and judges it ([`RunOutcome`]: per-group
//! summaries, checks, fairness). The saved document, a FAIL's evidence,
//! comparing two documents and their text are runq-results', which
//! depends on this crate, never the reverse.

mod alarm;
mod capacity;
pub mod catalog;
mod check_id;
mod checks;
mod fair_cause;
mod fair_model;
mod fairness;
mod fault;
mod fd;
mod gap;
mod own_numa;
mod placement;
pub mod primitives;
mod progress;
mod report;
mod reservoir;
mod runner;
mod scenario;
pub mod scenario_file;
pub mod scheduler;
pub mod series;
mod shared;
mod spawn;
mod spin;
mod stop;
mod summary;
mod task_recorder;
mod telemetry;
mod wake_stamp;
pub mod worktype;

pub use capacity::DEFAULT_WORKERS_PER_CPU;
pub use check_id::{CheckId, Direction, LoadEffect, PointsAt, SeriesPattern};
pub use checks::cause::{Cause, HeldBy, HeldParts, NamedHolder, NextStep, RecorderAccount};
pub use checks::detail::{
    Detail, GroupDetail, HostDetail, LostPartner, PlacementDetail, RateDetail, SchedExtDetail,
    SchedulerDetail, ScxEnd, SeriesDetail, SetupError, ShareDetail, Span, StuckHow, StuckWay,
};
pub use checks::mechanism::{Container, HeldFor, Mechanism, NamedTask, ShareTaker};
pub use checks::outside_load::{FiguresSay, LoadFigures, LoadSeen, OutsideLoad, WaitSpan};
pub use checks::{
    worker_pointed_at, CheckConfig, CheckResult, GroupWork, Op, SkippedCheck, Verdict,
};
pub use fault::{Fault, FaultStep};
pub use gap::GapSource;
pub use placement::{Affinity, MemPolicy, SchedPolicy, WorkerSetup};
pub use report::{Migration, WatchdogFiring, WorkerExitInfo, WorkerReport, MAX_WAKE_SAMPLES};
pub use runner::host_load::HostLoad;
pub use runner::{
    run_scenario, CgroupMode, Placement, RecorderSummary, RunError, RunOptions, RunOutcome,
};
pub use scenario::{
    CgroupSpec, GroupSpec, Scenario, ScenarioBuilder, ScenarioError, Step, StepAction,
    DEFAULT_DURATION,
};
pub use spawn::{
    CloneMode, CustomContext, CustomWork, Freeze, Watchdog, Work, WorkSpec, WorkloadHandle,
};
pub use summary::{summarize_group, GroupSummary};
pub use task_recorder::{Recorded, TaskRecorder};
pub use worktype::{net_figures, taobench_ops, NetFigures, OpsFigures, WakeFigure, WorkType};
