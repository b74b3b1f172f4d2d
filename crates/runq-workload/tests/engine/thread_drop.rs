//! Dropping a handle with live thread workers stops and joins them, both
//! after start and before it. It counts this process's worker threads, so
//! no other test's run beside it, and it begins once the threads of
//! earlier tests are gone (on a busy host a collect may leave a starved
//! thread detached past its deadline; it ends soon after).

use std::time::{Duration, Instant};

use runq_workload::{CloneMode, WorkSpec, WorkType, WorkloadHandle};

/// Threads of this process whose name marks them as workers.
fn worker_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .expect("task dir")
        .filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("comm")).ok())
        .filter(|comm| comm.starts_with("runq-w"))
        .count()
}

fn thread_spec(group: usize, name: &str, workers: usize) -> WorkSpec {
    let mut spec = WorkSpec::new(group, WorkType::from_name(name).unwrap(), workers);
    spec.clone_mode = CloneMode::Thread;
    spec
}

/// Waits until no worker thread is left (of another test, or one of this
/// test's that a busy host starved past a deadline).
fn wait_for_no_worker_threads() {
    let deadline = Instant::now() + Duration::from_secs(30);
    while worker_threads() > 0 {
        assert!(
            Instant::now() < deadline,
            "worker threads of earlier tests are still running"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Worker threads once at most `most` are left, or after 2 s, polled
/// every 10 ms: a joined thread can still be listed in /proc/self/task
/// for a moment (the join returns when the kernel clears its tid, before
/// the task is released).
fn worker_threads_settled(most: usize) -> usize {
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let n = worker_threads();
        if n <= most || Instant::now() >= deadline {
            return n;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Drops `handle` and checks that it joined every thread within its 5 s
/// bound, or, when the host starved one past it, waited all of it (the
/// thread then ends by itself).
fn drop_joins(handle: WorkloadHandle) {
    let t0 = Instant::now();
    drop(handle);
    let took = t0.elapsed();
    assert!(
        took < Duration::from_secs(6),
        "the join is bounded: {took:?}"
    );
    if worker_threads_settled(0) > 0 {
        assert!(took >= Duration::from_millis(4900), "left after {took:?}");
        wait_for_no_worker_threads();
    }
}

#[test]
fn dropping_the_handle_stops_and_joins_thread_workers() {
    let _alone = crate::threads_alone();
    wait_for_no_worker_threads();
    let specs = [
        thread_spec(0, "SpinWait", 2),
        thread_spec(1, "PipeIo", 2),
        thread_spec(2, "FutexPingPong", 2),
    ];
    let mut handle = WorkloadHandle::spawn(&specs).expect("spawn");
    handle.start();
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(worker_threads(), 6);
    drop_joins(handle);

    // Never started: the waiting threads return as well.
    let handle = WorkloadHandle::spawn(&specs[..1]).expect("spawn");
    assert_eq!(worker_threads(), 2);
    drop_joins(handle);

    // A new handle's workers obey a new flag: they run and report work.
    let mut handle = WorkloadHandle::spawn(&specs[..1]).expect("spawn");
    handle.start();
    std::thread::sleep(Duration::from_millis(100));
    let reports = handle.stop_and_collect(Duration::from_secs(5));
    assert!(reports.iter().any(|r| r.work_units > 0), "{reports:?}");
    // Collected threads are joined; one the host starved past the collect
    // deadline is reported timed out and ends by itself.
    let joined = reports.iter().filter(|r| r.completed).count();
    let left = worker_threads_settled(reports.len() - joined);
    assert!(left <= reports.len() - joined, "{left} left: {reports:?}");
    wait_for_no_worker_threads();
}
