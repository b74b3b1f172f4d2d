//! Merging shards: what is checked, what is missing, the verdict, the
//! document's schema and the files read.

use std::path::PathBuf;

use super::join::{join, Input};
use super::*;
use runq_vm::matrix_doc::{MatrixId, Row, ShardPart};
use runq_vm::shard::Shard;

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
        exit_code: Some(code),
        verdict: Some(verdict.into()),
        failed_checks: if code == 1 {
            vec!["max_gap_ms[g]".into()]
        } else {
            Vec::new()
        },
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
        let m = join((1..=n).rev().map(|k| shard(k, n, "pass")).collect()).unwrap();
        let ids: Vec<&str> = m.runs.iter().map(|r| r.cell.as_str()).collect();
        assert_eq!(ids, all_cells(), "{n} shards");
        assert!(m.missing_cells.is_empty() && m.shards.missing.is_empty());
        assert_eq!((m.verdict, m.exit_code), ("pass", 0));
        assert_eq!(m.shards.present, (1..=n).collect::<Vec<_>>());
    }
}

#[test]
fn a_missing_shard_is_named_with_its_cells_and_the_matrix_is_incomplete() {
    let m = join(vec![shard(1, 4, "pass"), shard(4, 4, "fail")]).unwrap();
    assert_eq!(m.shards.missing, [2, 3]);
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
    let m = join(vec![s, shard(2, 2, "pass")]).unwrap();
    assert_eq!(m.missing_cells.len(), 1);
    assert!(m.missing_cells[0].why.contains("not run by shard 1/2"));
    assert_eq!(m.exit_code, 3);
}

#[test]
fn the_verdict_is_the_worst_cell() {
    let verdict = |shards: Vec<Input>| {
        let m = join(shards).unwrap();
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
    let e = join(vec![shard(2, 3, "pass"), again]).unwrap_err();
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
    let e = join(vec![s]).unwrap_err();
    assert!(
        e.starts_with("cell a/1n1c2t is in shard-1.json and in shard-1.json"),
        "{e}"
    );
    let mut stray = shard(1, 2, "pass");
    stray.doc.runs.push(row("a/1n2c1t", "pass"));
    let e = join(vec![stray, shard(2, 2, "pass")]).unwrap_err();
    assert_eq!(e, "shard-1.json: cell a/1n2c1t is not shard 1/2's");
    let mut edited = shard(1, 2, "pass");
    edited.doc.shard.cells.push("a/1n2c1t".into());
    let e = join(vec![edited]).unwrap_err();
    assert!(e.contains("its cells are not those shard 1/2 takes"), "{e}");
}

#[test]
fn shards_of_different_matrices_are_refused() {
    let e = join(vec![shard(1, 2, "pass"), shard(2, 3, "pass")]).unwrap_err();
    assert!(
        e.contains("one of 2 shards and shard-2.json one of 3"),
        "{e}"
    );
    let mut other = shard(2, 2, "pass");
    other.doc.matrix.cells.retain(|c| c != "b/2n2c2t");
    other.doc.matrix.cells.push("c/2n2c2t".into());
    let e = join(vec![shard(1, 2, "pass"), other]).unwrap_err();
    assert!(e.contains("another matrix"), "{e}");
    assert!(e.contains("b/2n2c2t only in shard-1.json, c/2n2c2t only in shard-2.json"));
    let mut args = shard(2, 2, "pass");
    args.doc.matrix.args.push("--duration=2s".into());
    let e = join(vec![shard(1, 2, "pass"), args]).unwrap_err();
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
    let m = join(vec![interrupted, shard(3, 3, "pass")]).unwrap();
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
    for def in ["row", "vm", "matrix", "cell_id"] {
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
    let read = read_shard(&found[1]).unwrap().unwrap();
    assert_eq!(read.shard.index, 2);
    let error = d.join("error.json");
    let doc = r#"{"tool":"runq run","schema_version":1,"verdict":"error","error":"no vng","exit_code":77}"#;
    std::fs::write(&error, doc).unwrap();
    assert!(
        read_shard(&error).unwrap().is_none(),
        "a shard that did not run"
    );
    let other = d.join("other.json");
    std::fs::write(&other, r#"{"tool":"runq compare","schema_version":1}"#).unwrap();
    let e = read_shard(&other).unwrap_err();
    assert_eq!(exit::code_of(&e), exit::USAGE);
    assert!(e.to_string().contains("not a --vm-matrix shard"), "{e}");
    let e = read_shard(Path::new("/dev/zero")).unwrap_err();
    assert_eq!(exit::code_of(&e), exit::USAGE, "{e}");
}
