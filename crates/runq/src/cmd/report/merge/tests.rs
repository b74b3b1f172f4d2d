//! Merging shards: what is checked, what is missing, the verdict, the
//! document's schema and the files read.

use std::path::PathBuf;

use super::join::{join, Input};
use super::*;
use runq_vm::matrix_doc::{Matrix, MatrixId, Row, ShardPart};
use runq_vm::shard::Shard;
use serde_json::Value;

/// The cells of a 2-scenario × 3-topology matrix.
fn all_cells() -> Vec<String> {
    let mut v: Vec<String> = ["a", "b"]
        .iter()
        .flat_map(|s| ["1n2c1t", "1n1c2t", "2n2c2t"].map(|t| format!("{s}/{t}")))
        .collect();
    v.sort();
    v
}

fn row(cell: &str, verdict: &str) -> Row {
    let (scenario, topology) = cell.split_once('/').unwrap();
    let code = match verdict {
        "pass" => 0,
        "fail" => 1,
        _ => 75,
    };
    Row {
        cell: cell.into(),
        scenario: scenario.into(),
        topology: topology.into(),
        scheduler: None,
        exit_code: Some(code),
        verdict: Some(verdict.into()),
        failed_checks: if code == 1 {
            vec!["max_gap_ms[g]".into()]
        } else {
            Vec::new()
        },
        checks: Vec::new(),
        error: None,
        vm: Some(serde_json::json!({
            "accel": "tcg", "topology": topology, "cpus": 2, "numa_nodes": 1,
            "threads_per_core": 1, "memory_mib": 2048, "kernel_image": "/boot/vmlinuz",
            "boot_ms": 20000, "tcg_threads": "multi"
        })),
    }
}

/// Shard `k` of `n` of the matrix, every cell with `verdict`.
fn shard(k: u32, n: u32, verdict: &str) -> Input {
    let cells = all_cells();
    let picked: Vec<String> = Shard { index: k, count: n }
        .select(cells.iter().map(String::as_str))
        .into_iter()
        .map(String::from)
        .collect();
    Input {
        path: PathBuf::from(format!("shard-{k}.json")),
        doc: Matrix {
            matrix: MatrixId {
                cells,
                args: vec!["run".into(), "--vm-matrix".into()],
            },
            shard: ShardPart {
                index: k,
                count: n,
                cells: picked.clone(),
            },
            runs: picked.iter().map(|c| row(c, verdict)).collect(),
        },
    }
}

#[test]
fn every_shard_gives_the_whole_matrix_sorted() {
    for n in 1..=8 {
        let m = join(
            (1..=n).rev().map(|k| shard(k, n, "pass")).collect(),
            Vec::new(),
            false,
        )
        .unwrap();
        let ids: Vec<&str> = m.runs.iter().map(|r| r.cell.as_str()).collect();
        assert_eq!(ids, all_cells(), "{n} shards");
        let shards = m.shards.as_ref().unwrap();
        assert!(m.missing_cells.is_empty() && shards.missing.is_empty());
        assert_eq!((m.verdict, m.exit_code), ("pass", 0));
        assert_eq!(shards.present, (1..=n).collect::<Vec<_>>());
    }
}

#[test]
fn a_missing_shard_is_named_with_its_cells_and_the_matrix_is_incomplete() {
    let m = join(
        vec![shard(1, 4, "pass"), shard(4, 4, "fail")],
        Vec::new(),
        false,
    )
    .unwrap();
    assert_eq!(m.shards.as_ref().unwrap().missing, [2, 3]);
    let missing: Vec<&str> = m.missing_cells.iter().map(|c| c.cell.as_str()).collect();
    assert_eq!(missing, ["a/1n2c1t", "a/2n2c2t", "b/2n2c2t"]);
    assert!(m.missing_cells[0].why.contains("shard 2/4 is missing"));
    assert_eq!((m.verdict, m.exit_code), ("incomplete", 3));
    let text = report_text(&m);
    assert!(
        text.starts_with("6 cells, 2 of 4 shards; missing: shard 2/4, 3/4\n"),
        "{text}"
    );
    assert!(text.ends_with("verdict: INCOMPLETE (exit 3)\n"), "{text}");
    assert_eq!(text.matches("MISSING").count(), 3, "{text}");
}

#[test]
fn a_cell_an_interrupted_shard_did_not_run_is_missing() {
    let mut s = shard(1, 2, "pass");
    s.doc.runs.pop();
    let m = join(vec![s, shard(2, 2, "pass")], Vec::new(), false).unwrap();
    assert_eq!(m.missing_cells.len(), 1);
    assert!(m.missing_cells[0].why.contains("not run by shard 1/2"));
    assert_eq!(m.exit_code, 3);
}

#[test]
fn the_verdict_is_the_worst_cell() {
    let verdict = |shards: Vec<Input>| {
        let m = join(shards, Vec::new(), false).unwrap();
        (m.verdict, m.exit_code)
    };
    assert_eq!(
        verdict(vec![shard(1, 2, "pass"), shard(2, 2, "fail")]),
        ("fail", 1)
    );
    assert_eq!(
        verdict(vec![shard(1, 2, "indeterminate"), shard(2, 2, "pass")]),
        ("indeterminate", 75)
    );
    assert_eq!(
        verdict(vec![shard(1, 2, "indeterminate"), shard(2, 2, "fail")]),
        ("fail", 1)
    );
    let mut error = shard(2, 2, "fail");
    error.doc.runs[0].verdict = None;
    error.doc.runs[0].error = Some("did not boot".into());
    assert_eq!(verdict(vec![shard(1, 2, "pass"), error]), ("error", 3));
}

#[test]
fn a_shard_given_twice_is_refused() {
    let mut again = shard(2, 3, "pass");
    again.path = PathBuf::from("copy/shard-2.json");
    let e = join(vec![shard(2, 3, "pass"), again], Vec::new(), false).unwrap_err();
    assert_eq!(
        e,
        "shard-2.json and copy/shard-2.json are both shard 2/3; give each shard once"
    );
}

#[test]
fn a_cell_twice_is_refused() {
    let mut s = shard(1, 2, "pass");
    let dup = s.doc.runs[0].clone();
    s.doc.runs.push(dup);
    let e = join(vec![s], Vec::new(), false).unwrap_err();
    assert!(
        e.starts_with("cell a/1n1c2t is in shard-1.json and in shard-1.json"),
        "{e}"
    );
    let mut stray = shard(1, 2, "pass");
    stray.doc.runs.push(row("a/1n2c1t", "pass"));
    let e = join(vec![stray, shard(2, 2, "pass")], Vec::new(), false).unwrap_err();
    assert_eq!(e, "shard-1.json: cell a/1n2c1t is not shard 1/2's");
    let mut edited = shard(1, 2, "pass");
    edited.doc.shard.cells.push("a/1n2c1t".into());
    let e = join(vec![edited], Vec::new(), false).unwrap_err();
    assert!(e.contains("its cells are not those shard 1/2 takes"), "{e}");
}

#[test]
fn shards_of_different_matrices_are_refused() {
    let e = join(
        vec![shard(1, 2, "pass"), shard(2, 3, "pass")],
        Vec::new(),
        false,
    )
    .unwrap_err();
    assert!(
        e.contains("one of 2 shards and shard-2.json one of 3"),
        "{e}"
    );
    let mut other = shard(2, 2, "pass");
    other.doc.matrix.cells.retain(|c| c != "b/2n2c2t");
    other.doc.matrix.cells.push("c/2n2c2t".into());
    let e = join(vec![shard(1, 2, "pass"), other], Vec::new(), false).unwrap_err();
    assert!(e.contains("another matrix"), "{e}");
    assert!(e.contains("b/2n2c2t only in shard-1.json, c/2n2c2t only in shard-2.json"));
    let mut args = shard(2, 2, "pass");
    args.doc.matrix.args.push("--duration=2s".into());
    let e = join(vec![shard(1, 2, "pass"), args], Vec::new(), false).unwrap_err();
    assert!(
        e.contains("it ran `runq run --vm-matrix --duration=2s`"),
        "{e}"
    );
    assert!(!e.contains('\n'));
}

#[test]
fn the_merged_document_matches_its_schema() {
    let mut interrupted = shard(1, 3, "fail");
    interrupted.doc.runs.pop();
    let m = join(vec![interrupted, shard(3, 3, "pass")], Vec::new(), false).unwrap();
    let v: Value = serde_json::from_str(&runq_common::json::to_pretty(&m).unwrap()).unwrap();
    assert_eq!(v["tool"], "runq report merge");
    assert_eq!(v["shards"]["missing"], serde_json::json!([2]));
    runq_testkit::assert_matches_schema("report-merge", &v);
}

/// The merged document's rows are the matrix document's: the two
/// schemas' `row` and `vm` definitions are the same.
#[test]
fn the_merged_schema_keeps_the_matrix_rows() {
    let read = |name: &str| -> Value {
        let p = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../schemas")
            .join(format!("{name}.schema.json"));
        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
    };
    let (matrix, merged) = (read("run-vm-matrix"), read("report-merge"));
    for def in ["row", "check_row", "vm", "matrix", "cell_id"] {
        assert_eq!(matrix["$defs"][def], merged["$defs"][def], "$defs.{def}");
    }
}

#[test]
fn files_are_found_in_directories_and_read_as_shards() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for k in 1..=2 {
        let sub = d.join(format!("shard-{k}"));
        std::fs::create_dir(&sub).unwrap();
        let doc = runq_common::json::to_pretty(&shard(k, 2, "pass").doc).unwrap();
        std::fs::write(sub.join("matrix.json"), doc).unwrap();
        std::fs::write(sub.join("junit.xml"), "<testsuite/>").unwrap();
    }
    let found = files(&[d.to_path_buf()]).unwrap();
    assert_eq!(
        found,
        [d.join("shard-1/matrix.json"), d.join("shard-2/matrix.json")]
    );
    let Read::Shard(read) = read_shard(&found[1]).unwrap() else {
        panic!("a shard document")
    };
    assert_eq!(read.shard.index, 2);
    let error = d.join("error.json");
    let doc = r#"{"tool":"runq run","schema_version":1,"verdict":"error","error":"no vng","exit_code":77}"#;
    std::fs::write(&error, doc).unwrap();
    let Read::NotRun(n) = read_shard(&error).unwrap() else {
        panic!("a shard that did not run")
    };
    assert_eq!((n.error.as_str(), n.exit_code), ("no vng", Some(77)));
    let other = d.join("other.json");
    std::fs::write(&other, r#"{"tool":"runq compare","schema_version":1}"#).unwrap();
    let e = read_shard(&other).unwrap_err();
    assert_eq!(exit::code_of(&e), exit::USAGE);
    assert!(e.to_string().contains("not a --vm-matrix shard"), "{e}");
    let e = read_shard(Path::new("/dev/zero")).unwrap_err();
    assert_eq!(exit::code_of(&e), exit::USAGE, "{e}");
}

/// The error document of a shard that could not run, as `runq run
/// --json` prints it.
fn not_run(path: &str, exit_code: u8) -> read::NotRun {
    read::NotRun {
        path: path.into(),
        error: if exit_code == 77 {
            "skipped: no vng"
        } else {
            "run error"
        }
        .into(),
        exit_code: Some(exit_code),
    }
}

#[test]
fn every_shard_skipped_merges_to_a_skipped_whole() {
    let m = join(
        Vec::new(),
        vec![not_run("s1.json", 77), not_run("s2.json", 77)],
        false,
    )
    .unwrap();
    assert_eq!((m.verdict, m.exit_code), ("skipped", 77));
    assert!(m.matrix.is_none() && m.shards.is_none());
    let v: Value = serde_json::from_str(&runq_common::json::to_pretty(&m).unwrap()).unwrap();
    runq_testkit::assert_matches_schema("report-merge", &v);
    assert_eq!(v["not_run"][1]["exit_code"], 77);
    let text = report_text(&m);
    assert!(text.starts_with("no shard ran: 2 of 2 skipped\n"), "{text}");
    assert!(
        text.contains("not run: s1.json (skipped: no vng)\n"),
        "{text}"
    );
    assert!(text.ends_with("verdict: SKIPPED (exit 77)\n"), "{text}");
    let cases = suite(&m).cases;
    assert!(
        cases
            .iter()
            .all(|c| matches!(c.outcome, Outcome::Skipped(_))),
        "{cases:?}"
    );
    let m = join(
        Vec::new(),
        vec![not_run("s1.json", 77), not_run("s2.json", 3)],
        true,
    )
    .unwrap();
    assert_eq!(
        (m.verdict, m.exit_code),
        ("error", 3),
        "--allow-missing runs nothing"
    );
    assert!(join(Vec::new(), Vec::new(), false).is_err());
}

#[test]
fn a_skipped_shard_beside_one_that_ran_leaves_its_cells_missing() {
    let m = join(
        vec![shard(1, 2, "pass")],
        vec![not_run("s2.json", 77)],
        false,
    )
    .unwrap();
    assert_eq!((m.verdict, m.exit_code), ("incomplete", 3));
    assert_eq!(m.not_run.len(), 1);
    let m = join(
        vec![shard(1, 2, "pass")],
        vec![not_run("s2.json", 77)],
        true,
    )
    .unwrap();
    assert_eq!((m.verdict, m.exit_code), ("pass", 0));
}

#[test]
fn a_verdict_runq_never_writes_is_refused_naming_the_file_and_the_value() {
    let mut s = shard(1, 2, "pass");
    s.doc.runs[1].verdict = Some("bogus".into());
    let e = join(vec![s, shard(2, 2, "pass")], Vec::new(), false).unwrap_err();
    assert!(e.starts_with("shard-1.json: cell "), "{e}");
    assert!(
        e.contains("has the verdict `bogus`, which runq never writes"),
        "{e}"
    );
    for v in ["PASS", "skip", ""] {
        let mut s = shard(1, 1, "pass");
        s.doc.runs[0].verdict = Some(v.into());
        assert!(join(vec![s], Vec::new(), false).is_err(), "{v:?}");
    }
}

#[test]
fn a_missing_shard_is_incomplete_even_without_cells_unless_allowed() {
    // Eight shards of six cells: shards 7 and 8 have none.
    let six: Vec<Input> = (1..=6).map(|k| shard(k, 8, "pass")).collect();
    let m = join(six, Vec::new(), false).unwrap();
    assert!(m.missing_cells.is_empty());
    assert_eq!(m.shards.as_ref().unwrap().missing, [7, 8]);
    assert_eq!((m.verdict, m.exit_code), ("incomplete", 3));
    let six: Vec<Input> = (1..=6).map(|k| shard(k, 8, "pass")).collect();
    let m = join(six, Vec::new(), true).unwrap();
    assert_eq!((m.verdict, m.exit_code), ("pass", 0));
    let m = join(
        vec![shard(1, 4, "pass"), shard(4, 4, "pass")],
        Vec::new(),
        true,
    )
    .unwrap();
    assert_eq!((m.verdict, m.exit_code), ("pass", 0));
    assert_eq!(m.missing_cells.len(), 3, "still listed");
    let text = report_text(&m);
    assert_eq!(text.matches("MISSING").count(), 3, "{text}");
    assert!(
        text.ends_with("verdict: PASS (exit 0); 3 missing cells allowed\n"),
        "{text}"
    );
    let skipped = suite(&m)
        .cases
        .iter()
        .filter(|c| matches!(c.outcome, Outcome::Skipped(_)))
        .count();
    assert_eq!(
        skipped, 3,
        "a missing cell is skipped in the JUnit, not failed"
    );
    let m = join(
        vec![shard(1, 4, "fail"), shard(4, 4, "pass")],
        Vec::new(),
        true,
    )
    .unwrap();
    assert_eq!(
        (m.verdict, m.exit_code),
        ("fail", 1),
        "the cells that ran still count"
    );
}

#[test]
fn names_with_control_characters_print_as_escapes() {
    let mut s = shard(1, 1, "fail");
    s.doc.runs[1].failed_checks = vec!["max_gap_ms[\x1b[2Jg\nFAKE]".into()];
    s.doc.runs[0].error = Some("\x07boom\r".into());
    s.doc.runs[0].vm.as_mut().unwrap()["accel"] = "\x1b]0;t\x07".into();
    let m = join(vec![s], Vec::new(), false).unwrap();
    let text = report_text(&m);
    assert!(!text.contains(['\x1b', '\x07', '\r']), "{text:?}");
    assert!(text.contains("max_gap_ms[\\x1b[2Jg\\nFAKE]"), "{text}");
    assert_eq!(text.lines().count(), 2 + 6 + 1, "{text}");
    let v: Value = serde_json::from_str(&runq_common::json::to_pretty(&m).unwrap()).unwrap();
    let kept = v["runs"].as_array().unwrap().iter();
    let kept = kept.filter(|r| r["failed_checks"][0] == "max_gap_ms[\x1b[2Jg\nFAKE]");
    assert_eq!(kept.count(), 1, "the JSON keeps the name as read: {v}");
}

/// Writes `text` to a file in `dir` and reads it as an input.
fn read_text(dir: &Path, text: &str) -> anyhow::Result<Read> {
    let path = dir.join("input.json");
    std::fs::write(&path, text).unwrap();
    read_shard(&path)
}

#[test]
fn refusals_name_the_value_and_never_in_debug_form() {
    let dir = tempfile::tempdir().unwrap();
    let doc = runq_common::json::to_pretty(&shard(1, 2, "pass").doc).unwrap();
    for (text, says) in [
        (
            r#"{"tool":"runq run","schema_version":1,"verdict":"pass"}"#.to_string(),
            "a single run's document (tool \"runq run\")",
        ),
        (
            doc.replace("\"schema_version\": 1", "\"schema_version\": 2"),
            "schema_version 2, this runq reads 1",
        ),
        (
            doc.replace("\"schema_version\": 1,", ""),
            "schema_version none, this runq reads 1",
        ),
        (
            r#"{"tool":["x"]}"#.into(),
            "its tool is an array, not a --vm-matrix shard",
        ),
        (
            r#"{"tool":"runq ctprof\u001b[2J"}"#.into(),
            "its tool is \"runq ctprof\\x1b[2J\"",
        ),
        ("{}".into(), "it has no tool field"),
        (r#"["runq run --vm-matrix",1]"#.into(), "not a JSON object"),
        ("{".into(), "not a JSON document"),
    ] {
        let e = read_text(dir.path(), &text).unwrap_err();
        assert_eq!(exit::code_of(&e), exit::USAGE, "{e}");
        let line = e.to_string();
        assert!(line.contains(says), "{says}: {line}");
        assert!(!line.contains("Some(") && !line.contains('\x1b'), "{line}");
    }
}

#[test]
fn a_shard_is_read_into_its_types_with_its_vm_facts_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let doc = runq_common::json::to_pretty(&shard(1, 2, "pass").doc).unwrap();
    let Read::Shard(m) = read_text(dir.path(), &doc).unwrap() else {
        panic!("a shard")
    };
    assert_eq!(m.runs[0].vm.as_ref().unwrap()["boot_ms"], 20000);
    for (from, to) in [
        ("\"index\": 1", "\"index\": 0"),
        ("\"count\": 2", "\"count\": 0"),
    ] {
        let e = read_text(dir.path(), &doc.replace(from, to)).unwrap_err();
        assert_eq!(exit::code_of(&e), exit::USAGE, "{e}");
        assert!(e.to_string().contains("its shard is"), "{e}");
    }
    let many = format!("\"failed_checks\": [{}\"\"]", "\"\",".repeat(10_000));
    let e = read_text(dir.path(), &doc.replacen("\"failed_checks\": []", &many, 1));
    let e = e.unwrap_err().to_string();
    assert!(e.contains("more than 10000 items"), "{e}");
    let huge = format!("[{}0]", "0,".repeat(5000));
    let e = read_text(
        dir.path(),
        &doc.replace("\"boot_ms\": 20000", &format!("\"boot_ms\": {huge}")),
    );
    let e = e.unwrap_err().to_string();
    assert!(e.contains("more than 1000 values"), "{e}");
}
