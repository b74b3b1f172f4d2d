//! The ready-made scenarios: listed, printed as TOML that runs, run by
//! name, and a mistyped name or a missing sched_ext answered in one line.

use serde_json::Value;

use crate::common::{assert_explained_verdict, runq};

fn names() -> Vec<String> {
    let out = runq()
        .args(["run", "--list-scenarios", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn the_list_holds_ktstrs_catalog_and_runqs_own() {
    let names = names();
    for want in [
        "steady",
        "cpuset_resize",
        "nested_steady",
        "sched_ext_opt_in",
    ] {
        assert!(names.iter().any(|n| n == want), "{want}: {names:?}");
    }
    assert!(names.len() >= 17, "{names:?}");
}

#[test]
fn a_printed_scenario_runs_from_stdin_and_by_name() {
    let printed = runq()
        .args(["run", "--print-scenario", "cgroup_add"])
        .output()
        .unwrap();
    assert!(printed.status.success());
    let text = String::from_utf8(printed.stdout).unwrap();
    assert!(text.contains("add_group = \"second\""), "{text}");
    let short = text.replace("at = \"1s\"", "at = \"100ms\"");
    let mut child = runq()
        .args(["run", "-", "--duration", "300ms", "--no-cgroups", "--json"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(short.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_explained_verdict("cgroup_add from stdin", out.status.code(), &v);
    let by_name = runq()
        .args(["run", "affinity_change", "--duration", "200ms", "--json"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&by_name.stdout).unwrap();
    assert_eq!(v["scenario"], "affinity_change");
    assert_explained_verdict("affinity_change", by_name.status.code(), &v);
}

#[test]
fn a_mistyped_name_is_a_usage_error_with_a_suggestion() {
    let out = runq().args(["run", "stedy"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("did you mean `steady`"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

/// Without sched_ext (or with no BPF scheduler loaded), SCHED_EXT
/// workers are refused before any fork: skipped (77), with what the host
/// lacks.
#[test]
fn policy_ext_without_a_loaded_scheduler_is_skipped() {
    let loaded =
        std::fs::read_to_string("/sys/kernel/sched_ext/state").is_ok_and(|s| s.trim() == "enabled");
    if loaded {
        eprintln!("skipped: a sched_ext scheduler is loaded here");
        return;
    }
    let out = runq()
        .args(["run", "--work-type", "SpinWait", "--workers", "1"])
        .args(["--policy", "ext", "--duration", "200ms"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(77));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("runq: skipped: "), "{err}");
    assert!(err.contains("sched_ext"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}
