//! A cell's row from what its guest run left: the exit code, the
//! verdict, the failed checks, and every check with its bound and its
//! measured value in each repeat (what `runq compare` sets side by side
//! across a scheduler axis).

use serde_json::Value;

use crate::matrix_doc::{CheckRow, Row};
use crate::run::GuestRun;
use crate::shard::Cell;

/// A cell's row before its run.
pub(super) fn empty_row(cell: &Cell) -> Row {
    Row {
        cell: cell.id(),
        scenario: cell.scenario.clone(),
        topology: cell.topology.clone(),
        scheduler: cell.scheduler.clone(),
        exit_code: None,
        verdict: None,
        failed_checks: Vec::new(),
        checks: Vec::new(),
        error: None,
        vm: None,
    }
}

/// Fills a row from the guest's run whose files start with `files`.
pub(super) fn fill_row(row: &mut Row, run: &GuestRun, files: &str) {
    row.vm = serde_json::to_value(&run.facts).ok();
    match run.rc_of(files) {
        Ok(rc) => row.exit_code = Some(rc),
        Err(e) => {
            row.error = Some(e.to_string());
            return;
        }
    }
    let stdout = run.read(&format!("{files}stdout")).unwrap_or_default();
    let stderr = || run.read(&format!("{files}stderr")).unwrap_or_default();
    fill_from_output(row, &stdout, stderr);
}

/// Fills a row from a guest run's JSON output (its stderr's last line
/// when there is none).
fn fill_from_output(row: &mut Row, stdout: &str, stderr: impl FnOnce() -> String) {
    match serde_json::from_str::<Value>(stdout) {
        // A run that could not be carried out (or was skipped) prints its
        // error document: no verdict, its error line.
        Ok(doc) if doc["verdict"] == "error" => {
            row.error = Some(doc["error"].as_str().unwrap_or("no report").to_string());
        }
        Ok(doc) => {
            row.verdict = doc["verdict"].as_str().map(String::from);
            row.failed_checks = failed_checks(&doc);
            row.checks = check_rows(&doc);
        }
        Err(_) => {
            let err = stderr();
            row.error = Some(err.lines().last().unwrap_or("no report").to_string());
        }
    }
}

/// A run document's failed checks, as `name[group]`: those that failed
/// in any repeat (`repeat_summary`), else in the run.
pub fn failed_checks(doc: &Value) -> Vec<String> {
    let named = |name: &Value, group: &Value| {
        format!(
            "{}[{}]",
            name.as_str().unwrap_or("?"),
            group.as_str().unwrap_or("?")
        )
    };
    if let Some(tally) = doc["repeat_summary"]["checks"].as_array() {
        return tally
            .iter()
            .filter(|t| count(&t["passed"]) < count(&t["of"]))
            .map(|t| named(&t["check"], &t["group"]))
            .collect();
    }
    doc["checks"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c["pass"] == false)
        .map(|c| named(&c["name"], &c["group"]))
        .collect()
}

/// Every check of a run document: its bound from the last repeat, its
/// tally over the repeats (`repeat_summary`), and its measured value in
/// each repeat (`repeats[].checks`; the last repeat's alone in a
/// document without them).
pub(crate) fn check_rows(doc: &Value) -> Vec<CheckRow> {
    let tally = |name: &str, group: &str| {
        doc["repeat_summary"]["checks"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|t| t["check"] == name && t["group"] == group)
            .map(|t| (count(&t["passed"]), count(&t["of"])))
    };
    let per_repeat = |name: &str, group: &str| -> Vec<f64> {
        let repeats = doc["repeats"].as_array().into_iter().flatten();
        repeats
            .filter_map(|r| {
                let checks = r["checks"].as_array()?;
                let c = checks
                    .iter()
                    .find(|c| c["check"] == name && c["group"] == group)?;
                c["measured"].as_f64()
            })
            .collect()
    };
    let checks = doc["checks"].as_array().into_iter().flatten();
    checks
        .filter_map(|c| {
            let (name, group) = (c["name"].as_str()?, c["group"].as_str()?);
            let pass = c["pass"] == true;
            let (passed, of) = tally(name, group).unwrap_or((u32::from(pass), 1));
            let mut measured = per_repeat(name, group);
            if measured.is_empty() {
                measured.extend(c["measured"].as_f64());
            }
            Some(CheckRow {
                check: name.to_string(),
                group: group.to_string(),
                op: c["op"].as_str().unwrap_or("?").to_string(),
                bound: c["bound"].as_f64(),
                passed,
                of,
                measured,
            })
        })
        .collect()
}

/// A JSON count, 0 when absent.
fn count(v: &Value) -> u32 {
    v.as_u64().and_then(|n| u32::try_from(n).ok()).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_error_document_is_the_rows_error_and_a_skip_says_so() {
        let cell = Cell {
            scenario: "sched_ext_opt_in".into(),
            topology: "1n4c1t".into(),
            kernel: None,
            scheduler: Some("kernel".into()),
        };
        let mut row = empty_row(&cell);
        row.exit_code = Some(crate::codes::SKIPPED);
        let doc = r#"{"tool": "runq run", "verdict": "error", "error": "needs sched_ext"}"#;
        fill_from_output(&mut row, doc, String::new);
        assert_eq!(row.verdict, None, "the schema's verdicts hold no \"error\"");
        assert_eq!(row.error.as_deref(), Some("needs sched_ext"));
        assert_eq!(crate::matrix_doc::row_cell(&row), "SKIP");
        let mut broken = empty_row(&cell);
        fill_from_output(&mut broken, "", || "runq: first\nrunq: last\n".into());
        assert_eq!(broken.error.as_deref(), Some("runq: last"));
    }

    #[test]
    fn a_check_carries_its_tally_and_each_repeats_value() {
        let doc = json!({
            "checks": [
                {"name": "max_gap_ms", "group": "a", "measured": 30.0, "op": "<=",
                 "bound": 100.0, "pass": true},
                {"name": "not_stuck", "group": "a", "measured": 1.0, "op": "<=",
                 "bound": 0.0, "pass": false},
            ],
            "repeat_summary": {"checks": [
                {"check": "max_gap_ms", "group": "a", "passed": 2, "of": 3},
            ]},
            "repeats": [
                {"checks": [{"check": "max_gap_ms", "group": "a", "measured": 120.0}]},
                {"checks": [{"check": "max_gap_ms", "group": "a", "measured": 20.0}]},
                {"checks": [{"check": "max_gap_ms", "group": "a", "measured": 30.0}]},
            ],
        });
        let rows = check_rows(&doc);
        assert_eq!(rows.len(), 2);
        assert_eq!((rows[0].passed, rows[0].of), (2, 3));
        assert_eq!(rows[0].measured, [120.0, 20.0, 30.0]);
        assert_eq!(rows[0].bound, Some(100.0));
        assert_eq!(
            (rows[1].passed, rows[1].of),
            (0, 1),
            "no tally: the last run's"
        );
        assert_eq!(rows[1].measured, [1.0]);
        assert_eq!(
            failed_checks(&doc),
            ["max_gap_ms[a]"],
            "failed in one repeat of three, though the last passed"
        );
        assert_eq!(
            failed_checks(&json!({"checks": doc["checks"]})),
            ["not_stuck[a]"]
        );
    }
}
