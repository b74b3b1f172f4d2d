//! `runq hud`'s per-task attribution end to end (root): each finding
//! carries the Tokio task it ran in (read from the workers' thread-local
//! storage in an optimized build, by a uprobe on Tokio's
//! `set_current_task_id` in a debug one), each blocker its top tasks
//! named by their future; a stripped target says once that it has no
//! task ids and is watched all the same, and its debug file gives them
//! back. Without its debug file a stripped target gets no finding from a
//! guess: no stack can be checked (a worker's park and a blocking call,
//! task code and the runtime's, a worker and a blocking-pool thread of
//! the same name look alike), so only run-queue delays are reported, and
//! the report says which kinds are withheld and why.

use std::ffi::OsStr;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use super::hud::DEMO_LIFETIME;
use super::hud::{blockers, demo_bin, hud, hud_then, runq_bin, start_command, KillOnDrop};

/// Starts `exe` for the demos' lifetime.
fn start(exe: &std::path::Path) -> (KillOnDrop, u32) {
    let mut cmd = Command::new(exe);
    cmd.arg(DEMO_LIFETIME.to_string());
    let (child, pid) = start_command(cmd);
    (KillOnDrop(child), pid)
}

/// The row of `function` in `category`, if the report has it.
fn row<'a>(report: &'a Value, category: &str, function: &str) -> Option<&'a Value> {
    blockers(report, category)
        .into_iter()
        .find(|b| b["function"] == function)
}

/// The service as the workspace builds it (debug: Tokio keeps
/// `set_current_task_id` out of line): every handler runs in a task of
/// its own, spawned by `every`, so each handler's row has one task, named
/// `runq_demo_service::every`; a long poll carries its task too.
#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn every_blocker_names_the_tasks_it_ran_in() {
    let runq = runq_bin();
    let (mut child, pid) = start(&demo_bin("runq-demo-service"));
    let stop = || drop(child.0.kill());
    let (report, trace) = hud_then(&runq, pid, 5, &[OsStr::new("--exact-polls")], stop);
    assert_eq!(report["task_ids"]["tracked"], true, "{report:#}");
    assert_eq!(report["task_ids"]["method"], "uprobe", "a debug build");
    assert!(report["task_ids"]["instances"].as_u64().unwrap() >= 1);
    for (category, function) in [
        ("blocking_call", "runq_demo_service::render_invoice"),
        ("long_poll", "runq_demo_service::compress_orders"),
    ] {
        let b = row(&report, category, function)
            .unwrap_or_else(|| panic!("no {category} row for {function}: {report:#}"));
        assert_eq!(b["task_count"], 1, "one task runs {function}: {b:#}");
        let task = &b["tasks"][0];
        assert_eq!(task["future"], "runq_demo_service::every", "{b:#}");
        assert!(task["id"].as_u64().unwrap() >= 1, "{b:#}");
    }
    // The cooperative batches run in six tasks of their own.
    let burn = row(&report, "task_cpu_sampled", "runq_demo::burn");
    if let Some(b) = burn.filter(|b| b["count"].as_u64().unwrap() >= 30) {
        assert!(b["task_count"].as_u64().unwrap() >= 2, "{b:#}");
        assert_eq!(
            b["tasks"][0]["future"],
            "runq_demo_service::cooperative_batch"
        );
    }
    let tagged = trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X" && e["args"]["task_id"].is_u64())
        .count();
    assert!(tagged > 0, "the export's findings carry their task ids");
}

/// `--no-task-ids` leaves the uprobe out and says so.
#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn no_task_ids_leaves_the_findings_untagged() {
    let runq = runq_bin();
    let (_child, pid) = start(&demo_bin("runq-demo-tokio"));
    let (report, _) = hud(&runq, pid, 3, &[OsStr::new("--no-task-ids")]);
    assert_eq!(report["task_ids"]["tracked"], false, "{report:#}");
    assert_eq!(report["task_ids"]["reason"], "--no-task-ids");
    for b in report["blockers"].as_array().unwrap() {
        assert!(b.get("tasks").is_none() && b["task_count"] == 0, "{b:#}");
    }
}

/// A stripped executable has no symbol for Tokio's function: the session
/// runs without task ids and says why; with its unstripped copy as
/// `--debug-file` the uprobe goes to the stripped executable at the
/// places the copy's symbols give.
#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn a_stripped_target_runs_without_task_ids_until_given_its_symbols() {
    let runq = runq_bin();
    let dir = tempfile::tempdir().unwrap();
    let stripped = dir.path().join("runq-demo-tokio");
    let unstripped = demo_bin("runq-demo-tokio");
    let status = Command::new("strip")
        .arg("-o")
        .arg(&stripped)
        .arg(&unstripped)
        .status()
        .expect("strip (binutils)");
    assert!(status.success());
    let (_child, pid) = start(&stripped);
    let (plain, _) = hud(&runq, pid, 3, &[]);
    assert_eq!(plain["task_ids"]["tracked"], false, "{plain:#}");
    let why = plain["task_ids"]["reason"].as_str().unwrap();
    assert!(why.contains("set_current_task_id"), "{why}");
    let (given, _) = hud(
        &runq,
        pid,
        3,
        &["--debug-file".as_ref(), unstripped.as_ref()],
    );
    assert_eq!(given["task_ids"]["tracked"], true, "{given:#}");
    let tasks = given["blockers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["task_count"].as_u64().unwrap())
        .sum::<u64>();
    assert!(tasks > 0, "no blocker has a task: {given:#}");
}

/// The service built with cargo's release defaults inlines Tokio's
/// setting of the current task into its poll, where no uprobe sees it:
/// the task ids are read from the workers' thread-local storage instead,
/// and name the same tasks.
#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn an_optimized_build_gives_its_task_ids_through_thread_local_storage() {
    let runq = runq_bin();
    let service = runq_testkit::demo_with_cargo_defaults("runq-demo-service");
    let (_child, pid) = start(&service);
    let (report, _) = hud(&runq, pid, 5, &[]);
    assert_eq!(report["task_ids"]["method"], "tls", "{report:#}");
    assert_eq!(report["task_ids"]["tracked"], true, "{report:#}");
    let b = row(
        &report,
        "blocking_call",
        "runq_demo_service::render_invoice",
    )
    .unwrap_or_else(|| panic!("no render_invoice row: {report:#}"));
    assert_eq!(b["task_count"], 1, "{b:#}");
    assert_eq!(b["tasks"][0]["future"], "runq_demo_service::every", "{b:#}");
}

/// The kinds of finding that need the executable's symbols.
const NEEDS_SYMBOLS: [&str; 3] = ["blocking_call", "task_cpu_sampled", "block_in_place"];

/// A hud session of 4 s on `exe` run in `mode` (`calm`: every blocking
/// part through `spawn_blocking`; `blocking`: the blockers in task code
/// too).
fn session(exe: &Path, mode: &str) -> Value {
    let mut cmd = Command::new(exe);
    cmd.args([DEMO_LIFETIME.to_string().as_str(), mode]);
    let (child, pid) = start_command(cmd);
    let _child = KillOnDrop(child);
    hud(&runq_bin(), pid, 4, &[]).0
}

#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn a_stripped_target_gets_no_finding_from_a_guess() {
    let dir = tempfile::tempdir().unwrap();
    let stripped = dir.path().join("runq-demo-tokio");
    let status = Command::new("strip")
        .arg("--strip-all")
        .arg("-o")
        .arg(&stripped)
        .arg(demo_bin("runq-demo-tokio"))
        .status()
        .expect("strip (binutils)");
    assert!(status.success());
    for mode in ["calm", "blocking"] {
        let report = session(&stripped, mode);
        for kind in NEEDS_SYMBOLS {
            assert!(blockers(&report, kind).is_empty(), "{mode}: {report:#}");
        }
        assert!(
            report["block_in_place"].as_array().unwrap().is_empty(),
            "{mode}: {report:#}"
        );
        let withheld = report["withheld"].as_array().unwrap();
        let kinds: Vec<&str> = withheld
            .iter()
            .map(|w| w["category"].as_str().unwrap())
            .collect();
        assert_eq!(kinds, NEEDS_SYMBOLS, "{mode}: {report:#}");
        assert!(
            withheld
                .iter()
                .all(|w| w["reason"].as_str().unwrap().contains("no symbols")),
            "{mode}: {report:#}"
        );
        // The park and the twins' sleeps were seen, and set aside.
        assert!(
            withheld[0]["events"].as_u64().unwrap() > 0,
            "{mode}: {report:#}"
        );
        assert_eq!(
            report["events"]["withheld_waits"], report["events"]["blocked_events"],
            "{mode}: {report:#}"
        );
        let discovery = report["discovery"].as_str().unwrap();
        assert!(discovery.contains("not checked"), "{discovery}");
    }
}
