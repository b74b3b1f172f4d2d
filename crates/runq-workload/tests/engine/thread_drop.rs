//! Dropping a handle with live thread workers stops and joins them, both
//! after start and before it. It counts this process's worker threads, so
//! no other test's run beside it.

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

#[test]
fn dropping_the_handle_stops_and_joins_thread_workers() {
    let _alone = crate::threads_alone();
    let specs = [
        thread_spec(0, "SpinWait", 2),
        thread_spec(1, "PipeIo", 2),
        thread_spec(2, "FutexPingPong", 2),
    ];
    let mut handle = WorkloadHandle::spawn(&specs).expect("spawn");
    handle.start();
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(worker_threads(), 6);
    let t0 = Instant::now();
    drop(handle);
    assert_eq!(worker_threads(), 0, "every worker thread was joined");
    assert!(t0.elapsed() < Duration::from_secs(6), "the join is bounded");

    // Never started: the waiting threads return as well.
    let handle = WorkloadHandle::spawn(&specs[..1]).expect("spawn");
    assert_eq!(worker_threads(), 2);
    drop(handle);
    assert_eq!(worker_threads(), 0);

    // A new handle's workers obey a new flag: they run and report work.
    let mut handle = WorkloadHandle::spawn(&specs[..1]).expect("spawn");
    handle.start();
    std::thread::sleep(Duration::from_millis(100));
    let reports = handle.stop_and_collect(Duration::from_secs(5));
    assert!(
        reports.iter().all(|r| r.completed && r.work_units > 0),
        "{reports:?}"
    );
    assert_eq!(worker_threads(), 0, "collected threads are joined too");
}
