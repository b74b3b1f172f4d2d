//! Every JSON document a tool prints or writes carries `tool` and
//! `schema_version` and matches its JSON Schema in `schemas/`.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{assert_success, runq};

use runq_testkit::assert_matches_schema;

/// Runs runq with `args`, expects success, and parses stdout as JSON.
fn json_of(args: &[&str]) -> Value {
    let out = runq().args(args).output().unwrap();
    assert_success(&out);
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

fn path_str(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Two snapshots of this host in `dir`.
fn two_snapshots(dir: &Path) -> (PathBuf, PathBuf) {
    let (a, b) = (dir.join("a.ctprof.zst"), dir.join("b.ctprof.zst"));
    let doc = json_of(&["ctprof", "capture", "-o", path_str(&a), "--json"]);
    assert_matches_schema("ctprof-capture", &doc);
    json_of(&["ctprof", "capture", "-o", path_str(&b), "--json"]);
    (a, b)
}

#[test]
fn ctprof_documents_match_their_schemas() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = two_snapshots(dir.path());
    let show = json_of(&["ctprof", "show", path_str(&a), "--json"]);
    assert_eq!(show["tool"], "runq ctprof show");
    assert_matches_schema("ctprof-view", &show);
    let compare = json_of(&["ctprof", "compare", path_str(&a), path_str(&b), "--json"]);
    assert_eq!(compare["tool"], "runq ctprof compare");
    assert_matches_schema("ctprof-view", &compare);
    assert_matches_schema(
        "ctprof-metric-list",
        &json_of(&["ctprof", "metric-list", "--json"]),
    );
    let rec = dir.path().join("rec");
    let record = json_of(&[
        "ctprof",
        "record",
        "--interval",
        "100ms",
        "--count",
        "2",
        "-o",
        path_str(&rec),
        "--json",
    ]);
    assert_matches_schema("ctprof-record", &record);
}

#[test]
fn collatz_documents_match_their_schemas() {
    let run = json_of(&["collatz", "1", "1", "10", "J", "--json"]);
    assert_matches_schema("collatz-run", &run);
    assert_eq!(run["target"], "135435277615595687", "above 2^53: a string");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("sweep");
    let sweep = json_of(&[
        "collatz",
        "sweep",
        "--outer",
        "1",
        "--inner",
        "2000",
        "--max-procs",
        "1",
        "--repeat",
        "1",
        "--settle",
        "1ms",
        "--profiler",
        "sleep 30 # {pid}",
        "--output",
        path_str(&out),
        "--json",
    ]);
    assert_matches_schema("collatz-sweep", &sweep);
    let file: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("sweep.json")).unwrap()).unwrap();
    assert_matches_schema("collatz-sweep", &file);
    let perf = dir.path().join("perf.txt");
    std::fs::write(
        &perf,
        "runq 1 [000] 1.0: cpu-clock:\n\t    aaaa f001 (/x/runq)\n\t    bbbb main (/x/runq)\n\n",
    )
    .unwrap();
    let depth = json_of(&["collatz", "depth-report", path_str(&perf), "--json"]);
    assert_matches_schema("collatz-depth-report", &depth);
}

#[test]
fn run_and_compare_documents_match_their_schemas() {
    let dir = tempfile::tempdir().unwrap();
    let saved = dir.path().join("a.json");
    let out = runq()
        .args([
            "run",
            "--work-type",
            "PipeIo",
            "--workers",
            "2",
            "--duration",
            "200ms",
        ])
        .args([
            "--no-cgroups",
            "--repeat",
            "2",
            "--output",
            path_str(&saved),
        ])
        .output()
        .unwrap();
    assert!(matches!(out.status.code(), Some(0 | 1 | 75)), "{out:?}");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&saved).unwrap()).unwrap();
    assert_matches_schema("run", &doc);
    assert_eq!(
        doc["repeat_summary"]["repeats"], 2,
        "the repeats' summary is saved"
    );
    let cmp = runq()
        .args(["compare", path_str(&saved), path_str(&saved), "--json"])
        .output()
        .unwrap();
    assert_eq!(cmp.status.code(), Some(0), "{cmp:?}");
    assert_matches_schema("compare", &serde_json::from_slice(&cmp.stdout).unwrap());
    // Two repeats are too few for an interval: the text says so.
    let text = runq()
        .args(["compare", path_str(&saved), path_str(&saved)])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("): too few repeats (2 vs 2; need at least 4 on each side)"),
        "{text}"
    );
}

#[test]
#[should_panic(expected = "collatz-run")]
fn a_document_without_its_envelope_fails_its_schema() {
    let doc = serde_json::json!({"procs": 1, "outer": 1, "inner": 1, "target": "7",
        "total_calls": 1, "ticks": 1, "ticks_per_call": 1.0, "tsc_hz": 1.0});
    assert_matches_schema("collatz-run", &doc);
}

/// The listings match their schemas: every work type (`--list`), one
/// with no wake point, one with a worker rule and a wake point, and the
/// one whose default is a list of phases (`--explain`), and every
/// ready-made scenario (`--list-scenarios`).
#[test]
fn listings_match_their_schemas() {
    let list = json_of(&["run", "--list", "--json"]);
    assert_eq!(list["tool"], "runq run --list");
    assert_matches_schema("run-list", &list);
    for name in ["SpinWait", "PipeIo", "Sequence"] {
        let doc = json_of(&["run", "--explain", name, "--json"]);
        assert_eq!(doc["tool"], "runq run --explain", "{name}");
        assert_eq!(doc["name"], name);
        assert_matches_schema("run-explain", &doc);
        let listed = list["work_types"].as_array().unwrap().iter();
        let item = listed.clone().find(|t| t["name"] == name).unwrap();
        for (key, value) in item.as_object().unwrap() {
            assert_eq!(&doc[key], value, "{name}: --explain's {key} is --list's");
        }
    }
    let scenarios = json_of(&["run", "--list-scenarios", "--json"]);
    assert_eq!(scenarios["tool"], "runq run --list-scenarios");
    assert_matches_schema("run-list-scenarios", &scenarios);
}

/// A shard with no cells of its own runs no VM, so `--vm-matrix --shard`
/// writes a real document on any host; `runq report merge` of it alone
/// names the missing shard (exit 3), and with the other shard (its cell
/// passed; written here, as a VM would) gives one verdict (exit 0). Every
/// document matches its schema.
#[test]
fn vm_matrix_shards_and_their_merge_match_their_schemas() {
    let dir = tempfile::tempdir().unwrap();
    let (empty, full) = (dir.path().join("s2.json"), dir.path().join("s1.json"));
    let out = runq()
        .args(["run", "--work-type", "SpinWait", "--duration", "1s"])
        .args([
            "--vm-matrix",
            "--topology",
            "2n2c2t",
            "--shard",
            "2/2",
            "--json",
        ])
        .args(["-o", path_str(&empty)])
        .output()
        .unwrap();
    assert_success(&out);
    let shard: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_matches_schema("run-vm-matrix", &shard);
    assert_eq!(shard["shard"]["index"], 2);
    assert_eq!(
        shard["matrix"]["cells"],
        serde_json::json!(["SpinWait/2n2c2t"])
    );
    assert_eq!(shard["runs"], serde_json::json!([]));
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&empty).unwrap()).unwrap();
    assert_eq!(saved, shard, "--output holds what --json printed");

    let merge = |files: &[&Path]| {
        let mut cmd = runq();
        cmd.args(["report", "merge", "--json"]).args(files);
        cmd.output().unwrap()
    };
    let alone = merge(&[&empty]);
    assert_eq!(alone.status.code(), Some(3), "{alone:?}");
    let doc: Value = serde_json::from_slice(&alone.stdout).unwrap();
    assert_matches_schema("report-merge", &doc);
    assert_eq!(doc["verdict"], "incomplete");
    assert_eq!(doc["missing_cells"][0]["cell"], "SpinWait/2n2c2t");

    let mut passed = shard.clone();
    passed["shard"]["index"] = 1.into();
    passed["shard"]["cells"] = serde_json::json!(["SpinWait/2n2c2t"]);
    passed["runs"] = serde_json::json!([{
        "cell": "SpinWait/2n2c2t", "scenario": "SpinWait", "topology": "2n2c2t",
        "exit_code": 0, "verdict": "pass", "failed_checks": [], "error": null,
        "vm": {"accel": "tcg", "topology": "2n2c2t", "cpus": 8, "numa_nodes": 2,
               "threads_per_core": 2, "memory_mib": 2048, "kernel_image": "/boot/vmlinuz",
               "boot_ms": 41000, "tcg_threads": "multi"}
    }]);
    assert_matches_schema("run-vm-matrix", &passed);
    std::fs::write(&full, passed.to_string()).unwrap();
    let both = merge(&[dir.path()]);
    assert_eq!(both.status.code(), Some(0), "{both:?}");
    let doc: Value = serde_json::from_slice(&both.stdout).unwrap();
    assert_matches_schema("report-merge", &doc);
    assert_eq!(doc["verdict"], "pass");
    assert_eq!(doc["shards"]["present"], serde_json::json!([1, 2]));
}
