//! The worker side, shared by process and thread workers: apply the setup,
//! run the loop (or the custom function) until STOP, build the report.

use std::io;

use super::spec::{CustomContext, Work, WorkSpec};
use crate::report::WorkerReport;
use crate::telemetry::Telemetry;
use crate::worktype::{PreparedWork, WorkerBody};

/// Seed for per-worker random draws (affinity subsets).
fn worker_seed(spec: &WorkSpec, idx: usize) -> u64 {
    runq_kernel::clock::monotonic_ns()
        ^ ((spec.group_idx as u64) << 48)
        ^ ((idx as u64) << 32)
        ^ u64::from(runq_kernel::clock::gettid())
}

/// Builds worker `idx`'s body (built-in work only).
pub(super) fn build_body(
    prepared: Option<&mut (dyn PreparedWork + 'static)>,
    idx: usize,
) -> io::Result<Option<Box<dyn WorkerBody>>> {
    match prepared {
        Some(p) => p.worker(idx).map(Some),
        None => Ok(None),
    }
}

/// Runs one worker to completion in the calling thread. `body` is `None`
/// for custom work. Setup failures land in `affinity_error`.
pub(super) fn run_worker(
    spec: &WorkSpec,
    idx: usize,
    body: Option<Box<dyn WorkerBody>>,
    setup_error: Option<String>,
) -> WorkerReport {
    let mut report = match (&spec.work, body) {
        (Work::Custom(c), _) => {
            let mut r = (c.run)(&CustomContext::start(idx, spec.group_idx));
            r.completed = true;
            if r.tid == 0 {
                r.tid = runq_kernel::clock::gettid();
            }
            r
        }
        (Work::Builtin(_), Some(mut body)) => work_loop(spec, idx, body.as_mut()),
        (Work::Builtin(_), None) => WorkerReport {
            tid: runq_kernel::clock::gettid(),
            ..Default::default()
        },
    };
    report.group_idx = spec.group_idx;
    report.exit_info = None;
    if setup_error.is_some() {
        report.affinity_error = setup_error;
    }
    report
}

/// Applies the group's setup to the calling thread.
pub(super) fn apply_setup(spec: &WorkSpec, idx: usize) -> Option<String> {
    spec.setup.apply(worker_seed(spec, idx))
}

/// The framework loop: iterate until STOP, with the watchdog armed. The
/// watchdog looks at the worker's gaps (see [`crate::gap`]): time it was
/// runnable and not run, so a planned sleep or a wait for a partner never
/// signals the scheduler, while starvation does.
fn work_loop(spec: &WorkSpec, idx: usize, body: &mut dyn WorkerBody) -> WorkerReport {
    let mut tel = Telemetry::start();
    if let Some(slot) = spec.progress.as_ref().and_then(|b| b.slot(idx)) {
        tel.publish_to(slot);
    }
    if let Some(w) = spec.watchdog {
        tel.arm_watchdog(w);
    }
    if let Some(f) = spec.freeze {
        tel.arm_freeze(f);
    }
    body.run_until_stop(&mut tel);
    let mut report = tel.finish(spec.group_idx, body.is_messenger());
    report.partner_lost = body.partner_lost();
    report.role = body.role();
    report.backlog = body.backlog();
    if let Some(e) = body.setup_error() {
        report.affinity_error = Some(e);
    }
    report
}
