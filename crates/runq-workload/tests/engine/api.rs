//! Engine tests through the public API: Custom workers (process and thread
//! mode, including panics), thread-mode built-in workers, and setup
//! failures that are recorded instead of killing the worker.
//!
//! Thread-mode workers share the process-wide STOP flag, so everything that
//! runs threads lives in one test function.

use std::time::Duration;

use runq_workload::Affinity;
use runq_workload::{
    CloneMode, CustomContext, CustomWork, WorkSpec, WorkType, WorkerExitInfo, WorkerReport,
    WorkloadHandle,
};

const RUN: Duration = Duration::from_millis(200);
/// Long enough for a panicking worker to print its backtrace and exit on
/// a loaded host (symbolizing this test binary's backtrace under
/// RUST_BACKTRACE took over 5 s beside the gauntlet).
const COLLECT: Duration = Duration::from_secs(30);

/// Counts loop turns until told to stop; reports them as work units.
fn counting_worker(ctx: &CustomContext) -> WorkerReport {
    let mut turns = 0u64;
    while !ctx.stop_requested() {
        turns += 1;
        std::thread::sleep(Duration::from_micros(200));
    }
    WorkerReport {
        work_units: turns,
        iterations: turns,
        ..Default::default()
    }
}

/// Panics as soon as it runs.
fn panicking_worker(_: &CustomContext) -> WorkerReport {
    panic!("custom worker gave up");
}

fn run_for(specs: &[WorkSpec]) -> Vec<WorkerReport> {
    let mut handle = WorkloadHandle::spawn(specs).expect("spawn");
    handle.start();
    std::thread::sleep(RUN);
    handle.stop_and_collect(COLLECT)
}

fn custom(name: &'static str, run: fn(&CustomContext) -> WorkerReport, n: usize) -> WorkSpec {
    WorkSpec::custom(1, CustomWork { name, run }, n)
}

#[test]
fn custom_process_workers_report_what_their_function_returns() {
    let reports = run_for(&[custom("counter", counting_worker, 2)]);
    assert_eq!(reports.len(), 2);
    let me = std::process::id();
    for r in &reports {
        assert!(r.completed, "{r:?}");
        assert_eq!(r.group_idx, 1);
        assert!(r.work_units > 10, "only {} turns in 200 ms", r.work_units);
        assert_eq!(r.work_units, r.iterations);
        assert!(r.tid > 0 && r.tid != me, "process worker has its own pid");
    }
}

#[test]
fn custom_process_panic_becomes_exit_101_sentinel() {
    let reports = run_for(&[custom("boom", panicking_worker, 1)]);
    assert_eq!(reports.len(), 1);
    assert!(!reports[0].completed);
    assert_eq!(reports[0].exit_info, Some(WorkerExitInfo::Exited(101)));
}

#[test]
fn impossible_affinity_is_recorded_and_the_worker_still_runs() {
    let mut spec = WorkSpec::new(0, WorkType::from_name("SpinWait").unwrap(), 1);
    spec.setup.affinity = Affinity::Single(4095);
    let reports = run_for(&[spec]);
    let r = &reports[0];
    assert!(r.completed, "{r:?}");
    assert!(r.work_units > 0);
    let err = r.affinity_error.as_deref().expect("affinity_error set");
    assert!(err.contains("4095"), "error names the CPU: {err}");
}

#[test]
fn thread_mode_workers_and_panics() {
    let _threads = crate::thread_mode();
    let mut spin = WorkSpec::new(0, WorkType::from_name("SpinWait").unwrap(), 2);
    spin.clone_mode = CloneMode::Thread;
    let mut pipes = WorkSpec::new(1, WorkType::from_name("PipeIo").unwrap(), 2);
    pipes.clone_mode = CloneMode::Thread;
    let mut boom = custom("boom", panicking_worker, 1);
    boom.group_idx = 2;
    boom.clone_mode = CloneMode::Thread;
    let reports = run_for(&[spin, pipes, boom]);
    assert_eq!(reports.len(), 5);

    let me = std::process::id();
    let tids: std::collections::BTreeSet<u32> = reports.iter().map(|r| r.tid).collect();
    assert_eq!(tids.len(), 5, "every thread has its own tid: {tids:?}");
    assert!(!tids.contains(&me));

    for r in reports.iter().filter(|r| r.group_idx < 2) {
        assert!(r.completed, "{r:?}");
        assert!(r.work_units > 0);
        // About 200 ms, or less when a loaded host starts the thread late.
        assert!(
            r.wall_time_ns > 0 && r.wall_time_ns < 5_000_000_000,
            "{r:?}"
        );
    }
    let pipe_wakes: u64 = reports
        .iter()
        .filter(|r| r.group_idx == 1)
        .map(|r| r.wake_sample_total)
        .sum();
    assert!(pipe_wakes > 0, "PipeIo threads record wake latencies");

    let panicked = reports.iter().find(|r| r.group_idx == 2).unwrap();
    assert!(!panicked.completed);
    match &panicked.exit_info {
        Some(WorkerExitInfo::Panicked(msg)) => assert!(msg.contains("gave up"), "{msg}"),
        other => panic!("expected Panicked, got {other:?}"),
    }
}

/// Sleeps through its first stop signal, as a worker does whose signal
/// lands between its look at the flag and its blocking call; ends at the
/// second.
fn deaf_to_one_stop(_: &CustomContext) -> WorkerReport {
    for _ in 0..2 {
        // SAFETY: pause(2) returns once a signal was handled.
        unsafe { libc::pause() };
    }
    WorkerReport {
        work_units: 1,
        iterations: 1,
        ..Default::default()
    }
}

/// One started worker (a thread or a process) that sleeps through its
/// first stop signal, [`RUN`] into its run.
fn started_deaf(mode: CloneMode) -> WorkloadHandle {
    let mut deaf = custom("deaf", deaf_to_one_stop, 1);
    deaf.clone_mode = mode;
    let mut handle = WorkloadHandle::spawn(&[deaf]).expect("spawn");
    handle.start();
    std::thread::sleep(RUN);
    handle
}

#[test]
fn a_thread_worker_that_missed_the_stop_signal_is_signalled_again() {
    let _threads = crate::thread_mode();
    let reports = started_deaf(CloneMode::Thread).stop_and_collect(Duration::from_secs(3));
    assert!(reports[0].completed, "{:?}", reports[0]);
}

#[test]
fn dropping_a_handle_signals_a_deaf_thread_worker_again() {
    let _threads = crate::thread_mode();
    let handle = started_deaf(CloneMode::Thread);
    let t = std::time::Instant::now();
    drop(handle);
    // Signalled once, it would be waited for to the 5 s bound and left.
    assert!(t.elapsed() < Duration::from_secs(4), "{:?}", t.elapsed());
}

#[test]
fn a_process_worker_that_missed_the_stop_signal_is_signalled_again() {
    let reports = started_deaf(CloneMode::Process).stop_and_collect(Duration::from_secs(3));
    assert!(reports[0].completed, "{:?}", reports[0]);
}
