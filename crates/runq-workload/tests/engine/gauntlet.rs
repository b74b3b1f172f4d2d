//! The liveness gauntlet: every work type runs briefly, in process mode
//! and (where allowed) thread mode, and must produce work units and the
//! telemetry it promises: wake latencies for types with a blocking step,
//! one messenger for the fan-out types, migrations for AffinityChurn.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use runq_workload::{CloneMode, WorkSpec, WorkType, WorkerReport, WorkloadHandle};

const RUN: Duration = Duration::from_millis(300);

/// Work types run side by side.
const LANES: usize = 3;

/// The smallest worker count of at least 3 that the type accepts, so
/// fan-outs have two receivers and PriorityInversion one triple.
fn workers_for(t: &WorkType) -> usize {
    (3..12)
        .find(|&n| t.validate_workers(n).is_ok())
        .expect("a valid count")
}

/// The type's reports, or `None` (said on stderr) when this host refuses
/// what the type needs, e.g. RtStarvation's SCHED_FIFO without privilege.
fn run(t: &WorkType, mode: CloneMode) -> Option<Vec<WorkerReport>> {
    let mut spec = WorkSpec::new(0, t.clone(), workers_for(t));
    spec.clone_mode = mode;
    let mut handle = match WorkloadHandle::spawn(&[spec]) {
        // Thread mode refuses the types that must stay processes.
        Err(e) if mode == CloneMode::Thread && e.to_string().contains("use process mode") => {
            eprintln!("gauntlet: skipped {} in thread mode: {e}", t.name());
            return None;
        }
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            eprintln!("gauntlet: skipped {}: {e}", t.name());
            return None;
        }
        spawned => spawned.expect("spawn"),
    };
    handle.start();
    std::thread::sleep(RUN);
    Some(handle.stop_and_collect(Duration::from_secs(5)))
}

/// Everything the type promised; one line per broken promise.
fn broken_promises(t: &WorkType, reports: &[WorkerReport]) -> Vec<String> {
    let name = t.name();
    let mut out = Vec::new();
    if reports.len() != workers_for(t) {
        out.push(format!("{name}: {} reports", reports.len()));
    }
    // A worker the host left waiting for a CPU most of the short run (a
    // busy host), or that reached its loop only late in it (its wall time
    // counts from there), cannot be held to its work; one that was blocked
    // in its loop, not waiting, can: it is stuck.
    let late = |r: &WorkerReport| r.wall_time_ns < RUN.as_nanos() as u64 / 2;
    let waited =
        |r: &WorkerReport| late(r) || r.schedstat_run_delay_ns * 2 >= r.wall_time_ns.max(1);
    // PriorityInversion's high worker (role 2) runs only when its low
    // worker (nice 10) lets go of the lock, and on a busy host the low one
    // may hold it through the whole short run, or take it back before the
    // woken high one gets a CPU: the inversion the type builds. It must end
    // cleanly, but is not held to progress here.
    let inversion_high = |r: &WorkerReport| {
        matches!(t, WorkType::PriorityInversion(_)) && r.role == 2 && r.work_units == 0
    };
    // A type with a blocking step waits on something, most often another
    // worker of its group (RequestRate's followers wait for the clock its
    // leader holds while it sleeps to the next arrival): when the host
    // starved one worker, the others may have had nothing to do.
    let partner_starved = t.info().wakes.is_some() && reports.iter().any(waited);
    let starved = |r: &WorkerReport| waited(r) || inversion_high(r) || partner_starved;
    for r in reports {
        if starved(r) && r.completed {
            eprintln!("{name}: worker {} starved by the host, not judged", r.tid);
            continue;
        }
        if !r.completed || r.work_units == 0 {
            out.push(format!(
                "{name}: worker {} completed={} work_units={} exit={:?} \
                 (wall {} ms, cpu {} ms, run delay {} ms, iterations {})",
                r.tid,
                r.completed,
                r.work_units,
                r.exit_info,
                r.wall_time_ns / 1_000_000,
                r.cpu_time_ns / 1_000_000,
                r.schedstat_run_delay_ns / 1_000_000,
                r.iterations
            ));
        }
    }
    let messengers: Vec<_> = reports.iter().filter(|r| r.is_messenger).collect();
    let fan_out = matches!(
        t,
        WorkType::FutexFanOut(_)
            | WorkType::FanOutCompute(_)
            | WorkType::ThunderingHerd(_)
            | WorkType::AsymmetricWaker(_)
            | WorkType::EpollStorm(_)
            | WorkType::Schbench(_)
    );
    if fan_out != (messengers.len() == 1) || messengers.len() > 1 {
        out.push(format!("{name}: {} messengers", messengers.len()));
    }
    if messengers.iter().any(|m| m.wake_sample_total > 0) {
        out.push(format!("{name}: the messenger recorded wake latencies"));
    }
    let wakes: u64 = reports.iter().map(|r| r.wake_sample_total).sum();
    // (The inversion's wakes are all its high worker's.)
    let unjudged = reports.iter().all(starved) || reports.iter().any(inversion_high);
    // A type that makes cgroups under its own (CgroupAttachStorm) runs
    // here in none: it reports why as a setup error and has nothing to time.
    let no_cgroup = t.needs_own_cgroup() && reports.iter().all(|r| r.affinity_error.is_some());
    if t.info().wakes.is_some() && wakes == 0 && !unjudged && !no_cgroup {
        out.push(format!("{name}: promises wake latencies but recorded none"));
    }
    if t.info().wakes.is_none() && wakes > 0 {
        out.push(format!(
            "{name}: recorded {wakes} wake latencies it does not promise"
        ));
    }
    let two_cpus = runq_kernel::cpulist::online_cpus().len() > 1;
    // A worker the host left waiting most of the run may not have got the
    // CPU it moved to before the end.
    if matches!(t, WorkType::AffinityChurn(_)) && two_cpus {
        if let Some(r) = reports.iter().find(|r| r.cpus_used.len() < 2 && !waited(r)) {
            out.push(format!(
                "{name}: worker {} never moved ({:?})",
                r.tid, r.cpus_used
            ));
        }
    }
    out
}

/// Runs every type allowed in `mode` and fails with every broken promise.
/// Types run three at a time: each run lasts [`RUN`] whatever else the
/// host runs, a worker the host starved is not judged, and each
/// thread-mode workload obeys its own stop flag. Thread workers never run
/// beside the process-mode gauntlet's forks (see [`crate::threads_alone`]).
fn gauntlet(mode: CloneMode) {
    let types: Vec<WorkType> = WorkType::all_defaults()
        .into_iter()
        .filter(
            |t| match t.info().needs.lacking(t.name(), Path::new("/sys")) {
                Some(why) => {
                    eprintln!("gauntlet: skipped: {why}");
                    false
                }
                None => true,
            },
        )
        .collect();
    let next = AtomicUsize::new(0);
    let failures = Mutex::new(Vec::new());
    let ran = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..LANES {
            s.spawn(|| {
                while let Some(t) = types.get(next.fetch_add(1, Ordering::Relaxed)) {
                    let Some(reports) = run(t, mode) else {
                        continue;
                    };
                    for e in reports.iter().filter_map(|r| r.affinity_error.as_ref()) {
                        eprintln!("gauntlet: {} reported a setup error: {e}", t.name());
                    }
                    let broken = broken_promises(t, &reports);
                    failures.lock().unwrap().extend(broken);
                    ran.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    eprintln!("gauntlet ({mode:?}): {} work types", ran.into_inner());
    assert!(
        failures.is_empty(),
        "{mode:?} mode:\n{}",
        failures.join("\n")
    );
}

#[test]
fn every_work_type_keeps_its_promises_as_processes() {
    let _no_thread_workers_beside = crate::threads_alone();
    gauntlet(CloneMode::Process);
}

#[test]
fn every_thread_capable_work_type_keeps_its_promises_as_threads() {
    let _threads = crate::thread_mode();
    gauntlet(CloneMode::Thread);
}
