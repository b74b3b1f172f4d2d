//! `runq compare MATRIX.json` on a matrix document with a scheduler
//! axis: per check, which scheduler passes and the band of its values;
//! exit 1 when a scheduler fails what the kernel's own passes. The
//! document is one `runq run --vm-matrix` writes (the VM tier runs real
//! matrices); each run's per-repeat check values come from a real run.

use std::path::Path;

use runq_testkit::assert_matches_schema;
use serde_json::{json, Value};

use crate::common::runq;

/// A row of the matrix: `sched`'s run of steady, with one check.
fn row(sched: &str, verdict: &str, passed: u32, measured: &[f64]) -> Value {
    json!({
        "cell": format!("steady/1n4c1t@{sched}"),
        "scenario": "steady",
        "topology": "1n4c1t",
        "scheduler": sched,
        "exit_code": if verdict == "pass" { 0 } else { 1 },
        "verdict": verdict,
        "failed_checks": if verdict == "pass" { vec![] } else { vec!["max_gap_ms[a]"] },
        "checks": [{"check": "max_gap_ms", "group": "a", "op": "<=", "bound": 100.0,
                    "passed": passed, "of": 3, "measured": measured}],
        "error": null,
        "vm": null,
    })
}

/// A whole matrix of steady under three schedulers.
fn matrix(dir: &Path) -> std::path::PathBuf {
    let rows = [
        row("kernel", "pass", 3, &[12.0, 10.0, 14.0]),
        row("scx_simple", "pass", 3, &[15.0, 11.0, 20.0]),
        row("scx_qmap", "fail", 0, &[230.0, 190.0, 260.0]),
    ];
    let mut cells: Vec<&str> = rows.iter().map(|r| r["cell"].as_str().unwrap()).collect();
    cells.sort();
    let doc = json!({
        "tool": "runq run --vm-matrix",
        "schema_version": 1,
        "matrix": {"cells": cells, "args": ["run", "steady", "--vm-matrix"]},
        "shard": {"index": 1, "count": 1, "cells": cells},
        "runs": rows,
    });
    assert_matches_schema("run-vm-matrix", &doc);
    let path = dir.join("matrix.json");
    std::fs::write(&path, doc.to_string()).unwrap();
    path
}

#[test]
fn a_matrix_sets_its_schedulers_side_by_side() {
    let dir = tempfile::tempdir().unwrap();
    let m = matrix(dir.path());
    let out = runq().arg("compare").arg(&m).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "qmap fails what kernel passes: {text}"
    );
    assert!(
        text.contains("checks it fails that kernel passes"),
        "{text}"
    );
    assert!(
        text.contains("steady/1n4c1t  max_gap_ms[a] <= 100"),
        "{text}"
    );
    assert!(
        text.contains("scx_qmap    FAIL 0/3  230 (190-260)"),
        "{text}"
    );
    assert!(text.contains("kernel      pass 3/3  12 (10-14)"), "{text}");
    let json = runq()
        .arg("compare")
        .arg(&m)
        .arg("--json")
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_matches_schema("compare-schedulers", &doc);
    assert_eq!(doc["reference"], "kernel");
    assert_eq!(doc["totals"][1]["regressed"], 1);
    assert_eq!(doc["checks"][0]["under"][1]["max"], 260.0);
}

/// A merge of the matrix's shards keeps each row's scheduler and checks,
/// and compares the same.
#[test]
fn a_merged_matrix_compares_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let m = matrix(dir.path());
    let merged = dir.path().join("merged.json");
    let out = runq()
        .args(["report", "merge"])
        .arg(&m)
        .arg("--output")
        .arg(&merged)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = |p: &Path| {
        let out = runq().arg("compare").arg(p).output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    assert_eq!(text(&merged), text(&m));
}

#[test]
fn a_matrix_without_a_scheduler_axis_or_a_run_alone_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("plain.json");
    let mut doc: Value =
        serde_json::from_str(&std::fs::read_to_string(matrix(dir.path())).unwrap()).unwrap();
    for r in doc["runs"].as_array_mut().unwrap() {
        r.as_object_mut().unwrap().remove("scheduler");
    }
    std::fs::write(&plain, doc.to_string()).unwrap();
    let out = runq().arg("compare").arg(&plain).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("a matrix without a scheduler axis"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

/// A run with repeats keeps each check's value in each repeat, which a
/// matrix row carries as its noise band.
#[test]
fn each_repeat_keeps_its_check_values() {
    let out = runq()
        .args(["run", "--work-type", "SpinWait", "--workers", "1"])
        .args([
            "--duration",
            "0.2",
            "--repeat",
            "2",
            "--no-cgroups",
            "--json",
        ])
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let repeats = doc["repeats"].as_array().unwrap();
    assert_eq!(repeats.len(), 2);
    for r in repeats {
        // A repeat judges the checks its figures allow (a fair share
        // needs a snapshot of the group), so the lists may differ.
        let checks = r["checks"].as_array().unwrap();
        assert!(checks.iter().any(|c| c["check"] == "not_stuck"), "{r}");
        assert!(checks
            .iter()
            .all(|c| c["group"] == "SpinWait" && c["measured"].is_number()));
    }
}
