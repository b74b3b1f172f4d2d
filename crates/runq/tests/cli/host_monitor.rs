//! The host monitor of `runq run`: a root run's JSON carries the run
//! queues under `series.host`, a `[checks] max_rq_imbalance` is judged on
//! them, and the host's mounts are left as they were (runq mounts
//! debugfs, when it must, in its monitor thread's own mount namespace).

use serde_json::Value;

use crate::common::runq;

/// Whether debugfs is mounted at /sys/kernel/debug.
fn debugfs_mounted() -> bool {
    std::fs::read_to_string("/proc/self/mounts")
        .unwrap()
        .lines()
        .any(|l| l.split_whitespace().nth(1) == Some("/sys/kernel/debug") && l.contains("debugfs"))
}

#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn a_root_run_reports_the_host_run_queues_and_judges_them() {
    let dir = tempfile::tempdir().unwrap();
    let scn = dir.path().join("host.toml");
    std::fs::write(
        &scn,
        "duration = \"1200ms\"\n[checks]\nmax_rq_imbalance = 100000\n\
         [[group]]\nname = \"spin\"\nwork_type = \"SpinWait\"\nworkers = 2\n",
    )
    .unwrap();
    let mounted_before = debugfs_mounted();
    let out = runq()
        .args(["run", scn.to_str().unwrap(), "--no-cgroups", "--json"])
        .output()
        .unwrap();
    assert!(matches!(out.status.code(), Some(0 | 1)), "{out:?}");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    runq_testkit::assert_matches_schema("run", &doc);
    let host = &doc["series"]["host"];
    assert_eq!(host["source"], "debugfs sched/debug", "{host}");
    assert!(host["summary"]["samples"].as_u64().unwrap() >= 2, "{host}");
    assert!(!host["cpus"].as_array().unwrap().is_empty(), "{host}");
    let check = doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "max_rq_imbalance")
        .expect("max_rq_imbalance judged");
    assert_eq!(check["pass"], true, "{check}");
    assert_eq!(
        debugfs_mounted(),
        mounted_before,
        "the host's mounts as found"
    );
}
