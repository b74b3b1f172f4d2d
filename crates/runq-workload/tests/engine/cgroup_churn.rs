//! The catalog's `nested_task_move`: CgroupChurn workers move between the
//! leaf cgroups they make below their nested group while a steady group
//! spins; every move succeeds, and the run's tree, the workers' own
//! leaves included, is gone afterwards, also when the run is interrupted.

use runq_workload::CheckId;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use runq_workload::catalog::{find, HostShape};
use runq_workload::{CgroupMode, RunOutcome};

/// Runs `nested_task_move` for `duration`, interrupted after `interrupt`
/// when given.
fn run(duration: Duration, interrupt: Option<Duration>) -> RunOutcome {
    let host = HostShape::read(Path::new("/sys"));
    let mut scn = find("nested_task_move")
        .expect("in the catalog")
        .scenario(&host)
        .expect("parses");
    scn.duration = duration;
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        if let Some(after) = interrupt {
            let stop = &stop;
            s.spawn(move || {
                std::thread::sleep(after);
                stop.store(true, Ordering::Relaxed);
            });
        }
        crate::run_to_end(&scn, CgroupMode::Required, &stop)
    })
}

#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn churning_workers_move_and_leave_no_cgroup_behind() {
    let out = run(Duration::from_millis(600), None);
    let churn: Vec<_> = out.reports.iter().filter(|r| r.group_idx == 0).collect();
    assert!(!churn.is_empty());
    for r in &churn {
        assert_eq!(r.affinity_error, None, "a move failed");
        // A worker may get no CPU in 600 ms on a busy host (one ran 0.3 ms
        // of its last 4 ms), but it ends on its own.
        assert!(r.completed, "{r:?}");
    }
    let setup = out
        .checks
        .iter()
        .find(|c| c.group == "churn" && c.check == CheckId::SetupApplied)
        .expect("setup_applied judged");
    assert!(setup.pass, "{setup:?}");
    crate::assert_nothing_left(&out);
}

#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn an_interrupted_churn_leaves_no_cgroup_behind() {
    let out = run(Duration::from_secs(30), Some(Duration::from_millis(300)));
    assert!(out.interrupted);
    crate::assert_nothing_left(&out);
}
