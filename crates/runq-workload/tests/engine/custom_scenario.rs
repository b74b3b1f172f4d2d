//! A custom-work group inside a scenario: it runs in its cgroup beside a
//! built-in group, and only `not_stuck` judges it (it has no framework
//! telemetry).

use runq_workload::CheckId;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use runq_workload::{
    CgroupMode, CustomContext, CustomWork, ScenarioBuilder, Verdict, WorkType, WorkerReport,
};

/// Checks it runs in the scenario's `custom` cgroup (panics otherwise, so
/// the worker dies and the verdict fails), then counts turns until STOP.
fn placed_worker(ctx: &CustomContext) -> WorkerReport {
    let cgroups = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    assert!(
        cgroups
            .lines()
            .any(|l| l.contains("/runq/") && l.ends_with("/custom")),
        "custom worker is not in its cgroup: {cgroups}"
    );
    let mut turns = 0u64;
    while !ctx.stop_requested() {
        turns += 1;
        std::thread::sleep(Duration::from_millis(1));
    }
    WorkerReport {
        work_units: turns,
        ..Default::default()
    }
}

#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn custom_group_runs_in_its_cgroup_and_is_judged_by_not_stuck_only() {
    let custom = CustomWork {
        name: "placed",
        run: placed_worker,
    };
    let scn = ScenarioBuilder::new("custom-in-scenario")
        .duration(Duration::from_millis(500))
        .cgroup("spin", Default::default())
        .cgroup("custom", Default::default())
        .group(
            "spin",
            WorkType::from_name("SpinWait").unwrap(),
            1,
            Some("spin"),
        )
        .custom_group("mine", custom, 2, Some("custom"))
        .build();
    let stop = AtomicBool::new(false);
    let out = crate::run_to_end(&scn, CgroupMode::Required, &stop);
    let mine: Vec<_> = out.checks.iter().filter(|c| c.group == "mine").collect();
    let names: Vec<String> = mine.iter().map(|c| c.check.to_string()).collect();
    assert_eq!(names, ["not_stuck", "setup_applied"], "{:?}", out.checks);
    assert!(out
        .checks
        .iter()
        .any(|c| c.group == "spin" && c.check == CheckId::MaxGapMs));
    assert!(out.checks.iter().all(|c| c.check != CheckId::MinFairShare));
    assert_eq!(out.verdict, Verdict::Pass, "{:?}", out.checks);
    assert_eq!(out.groups[1].work_type, "placed");
    let custom_reports: Vec<_> = out.reports.iter().filter(|r| r.group_idx == 1).collect();
    assert_eq!(custom_reports.len(), 2);
    // Each custom worker ran: it ended on its own or did work (on a busy
    // host one may still be in its last unit at the stop).
    assert!(
        custom_reports
            .iter()
            .all(|r| r.completed || r.work_units > 0),
        "{custom_reports:?}"
    );
    crate::assert_nothing_left(&out);
}
