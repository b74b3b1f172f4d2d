//! `runq hud` end to end (root) on runq-demo-actix, a service shaped like
//! actix-web: three workers, each its own `current_thread` runtime on a
//! thread named `actix-rt|system:0|arbiter:N`, and their blocking pools'
//! threads named `tokio-rt-worker`, Tokio's default worker name. hud
//! finds exactly the three workers, by their stacks, lists no pool
//! thread, and, when every handler offloads its work (`calm`), reports no
//! long poll on the pool's closures.

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::process::Command;

use serde_json::Value;

use super::hud::DEMO_LIFETIME;
use super::hud::{blockers, demo_bin, hud_then, mentions, runq_bin, start_command, KillOnDrop};

/// The threads of `pid` whose comm is `comm`.
fn threads_named(pid: u32, comm: &str) -> BTreeSet<u64> {
    let dir = std::fs::read_dir(format!("/proc/{pid}/task")).unwrap();
    dir.filter_map(|e| {
        let e = e.ok()?;
        let name = std::fs::read_to_string(e.path().join("comm")).ok()?;
        (name.trim() == comm).then(|| e.file_name().to_str()?.parse().ok())?
    })
    .collect()
}

/// A hud session of `secs` on the demo in `mode`; returns the report, the
/// workers (by their names, which the demo gives them: `late-rt` for the
/// one `late` starts) and the pool threads that existed at its end.
fn session(mode: &str, secs: u32, extra: &[&OsStr]) -> (Value, BTreeSet<u64>, BTreeSet<u64>) {
    let mut demo = Command::new(demo_bin("runq-demo-actix"));
    demo.args([DEMO_LIFETIME.to_string().as_str(), mode]);
    let (child, pid) = start_command(demo);
    let mut child = KillOnDrop(child);
    let mut truth = None;
    let (report, _) = hud_then(&runq_bin(), pid, secs, extra, || {
        let mut workers = threads_named(pid, "actix-rt|system");
        workers.extend(threads_named(pid, "late-rt"));
        truth = Some((workers, threads_named(pid, "tokio-rt-worker")));
        drop(child.0.kill());
    });
    let (workers, pool) = truth.unwrap();
    (report, workers, pool)
}

/// The report lists exactly `workers` (`n` of them), each a
/// `current_thread` runtime's, and none of `pool`.
fn judge_workers(report: &Value, n: usize, workers: &BTreeSet<u64>, pool: &BTreeSet<u64>) {
    assert_eq!(workers.len(), n, "the demo's workers: {workers:?}");
    let listed = report["workers"].as_array().unwrap();
    let tids: BTreeSet<u64> = listed.iter().map(|w| w["tid"].as_u64().unwrap()).collect();
    assert_eq!(&tids, workers, "pool threads {pool:?}: {report:#}");
    for w in listed {
        assert_eq!(w["runtime"], "current_thread", "{w:#}");
    }
    assert!(tids.is_disjoint(pool), "a pool thread listed: {report:#}");
}

#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn actix_shaped_workers_are_found_by_their_loop_and_their_blockers_named() {
    let (report, workers, pool) = session("blocking", 5, &[]);
    judge_workers(&report, 3, &workers, &pool);
    assert!(
        report["discovery"].as_str().unwrap().contains("stacks"),
        "{report:#}"
    );
    let calls = blockers(&report, "blocking_call");
    assert!(
        calls.iter().any(|b| mentions(b, "render_page")),
        "the render on the worker is no blocking call: {report:#}"
    );
}

#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn an_actix_shaped_service_that_offloads_its_work_has_no_long_poll() {
    let polls = OsStr::new("--exact-polls");
    let (report, workers, pool) = session("calm", 5, &[polls]);
    judge_workers(&report, 3, &workers, &pool);
    assert!(!pool.is_empty(), "the handlers used no pool: {report:#}");
    assert_eq!(report["poll_timing"]["method"], "exact", "{report:#}");
    let long = blockers(&report, "long_poll");
    assert!(long.is_empty(), "{report:#}");
    // Nothing the pool ran is a worker's blocker.
    for b in report["blockers"].as_array().unwrap() {
        for name in [
            "render_page",
            "compress_body",
            "write_access_log",
            "run_child",
        ] {
            assert!(!mentions(b, name), "offloaded work reported: {b:#}");
        }
    }
}

/// A runtime started 3 s after the demo printed its pid, on a thread of a
/// name discovery never saw (`late-rt`): it is watched on probation, its
/// loop makes it a worker, and its blocker is named.
#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn a_runtime_started_late_under_a_name_of_its_own_is_found() {
    let (report, workers, pool) = session("late", 7, &[]);
    judge_workers(&report, 4, &workers, &pool);
    let late = report["workers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["comm"] == "late-rt")
        .unwrap_or_else(|| panic!("{report:#}"));
    assert!(
        late["findings"]["blocking_call"].as_u64() > Some(0),
        "{late:#}"
    );
}
