//! The `--vm-matrix` document (`schemas/run-vm-matrix.schema.json`), its
//! table, its JUnit suite and its exit code: written by `runq run
//! --vm-matrix` (a whole matrix or one shard of it) and read back by
//! `runq report merge`, which joins shards with the same pieces.

use serde::{Deserialize, Serialize};

use crate::codes;
use crate::shard::Shard;

/// One cell's outcome.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Row {
    /// The cell's id (`scenario/topology[/kernel][@scheduler]`).
    pub cell: String,
    /// The scenario's name.
    pub scenario: String,
    /// The topology preset.
    pub topology: String,
    /// The scheduler, when the matrix has a scheduler axis (`kernel`:
    /// the kernel's own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduler: Option<String>,
    /// The guest runq's exit code (absent when the VM did not run it).
    pub exit_code: Option<u8>,
    /// `pass`, `fail`, `interrupted`, `indeterminate`, or absent.
    pub verdict: Option<String>,
    /// `check[group]` of every failed check.
    pub failed_checks: Vec<String>,
    /// Every check of the run, with its value in each repeat.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<CheckRow>,
    /// Why there is no verdict (a boot error, a skip, a run error).
    pub error: Option<String>,
    /// The VM, when it booted: its facts as a run's `host.vm`.
    pub vm: Option<serde_json::Value>,
}

/// One check of a cell's run: its bound, how many repeats passed it, and
/// what each measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckRow {
    /// The check's name.
    pub check: String,
    /// The group it judged.
    pub group: String,
    /// How the measured value is held to the bound (`<=`, `>=`).
    pub op: String,
    /// The bound (absent when the document had none).
    pub bound: Option<f64>,
    /// Repeats that passed it.
    pub passed: u32,
    /// Repeats that judged it.
    pub of: u32,
    /// The measured value in each repeat.
    pub measured: Vec<f64>,
}

/// What makes two documents parts of one matrix: every cell's id and
/// the command line less the shard and the outputs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MatrixId {
    /// Every cell of the whole matrix, sorted by id.
    pub cells: Vec<String>,
    /// runq's arguments less `--shard`, `--output`, `--junit`, `--json`,
    /// `-v` and `--color`.
    pub args: Vec<String>,
}

/// Which part of the matrix a document holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardPart {
    /// Which shard, from 1 to `count` (1 of 1: the whole matrix).
    pub index: u32,
    /// How many shards the matrix is split into.
    pub count: u32,
    /// The ids of the cells this shard was to run, sorted.
    pub cells: Vec<String>,
}

impl ShardPart {
    /// The shard as `K/N`.
    pub fn shard(&self) -> Shard {
        Shard {
            index: self.index,
            count: self.count,
        }
    }
}

/// `runq run --vm-matrix --json`: the matrix, the shard run, and every
/// cell's outcome.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Matrix {
    /// The whole matrix.
    pub matrix: MatrixId,
    /// The part of it this run ran.
    pub shard: ShardPart,
    /// One outcome per cell run, in `--topology`'s order.
    pub runs: Vec<Row>,
}

impl runq_common::json::JsonDocument for Matrix {
    const TOOL: &'static str = "runq run --vm-matrix";
    const SCHEMA_VERSION: u32 = 1;
}

/// The verdict cell of a row: PASS, FAIL, INDETERMINATE, INTERRUPTED,
/// SKIP (the guest run was skipped, exit 77) or ERROR.
pub fn row_cell(row: &Row) -> String {
    match (&row.verdict, &row.error) {
        (Some(v), _) => v.to_uppercase(),
        (None, Some(_)) if row.exit_code == Some(codes::SKIPPED) => "SKIP".into(),
        _ => "ERROR".into(),
    }
}

/// A cell that has no row, and why (`shard 3/4 is missing`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MissingCell {
    /// The cell's id.
    pub cell: String,
    /// Why it has no outcome.
    pub why: String,
}

/// The summary table: one line per row, then one per missing cell.
pub fn render(rows: &[Row], missing: &[MissingCell]) -> String {
    let width = rows
        .iter()
        .map(|r| r.cell.len())
        .chain(missing.iter().map(|m| m.cell.len()))
        .max()
        .unwrap_or(0)
        .max(4);
    let line = |cell: &str, accel: &str, boot: &str, verdict: &str, why: &str| {
        format!("{cell:<width$} {accel:<5} {boot:>7}  {verdict:<7} {why}\n")
    };
    let mut out = line("cell", "accel", "boot", "verdict", "failed checks / why");
    for r in rows {
        let accel =
            r.vm.as_ref()
                .and_then(|v| v["accel"].as_str())
                .unwrap_or("-");
        let boot = r.vm.as_ref().and_then(|v| v["boot_ms"].as_u64());
        let boot = boot.map_or("-".to_string(), |ms| format!("{:.1}s", ms as f64 / 1000.0));
        let why = match &r.error {
            Some(e) => e.clone(),
            None if r.failed_checks.is_empty() => "-".into(),
            None => r.failed_checks.join(" "),
        };
        out += &line(&r.cell, accel, &boot, &row_cell(r), &why);
    }
    for m in missing {
        out += &line(&m.cell, "-", "-", "MISSING", &m.why);
    }
    out
}

/// The exit code of a matrix, the worst of its cells: 3 when a cell had
/// no verdict (not a skip) or is missing, else 1 when one failed, else 75
/// when one was indeterminate, else 77 when all were skipped, else 0.
pub fn matrix_code(rows: &[Row], missing: usize) -> u8 {
    let cells: Vec<String> = rows.iter().map(row_cell).collect();
    let any = |word: &str| cells.iter().any(|c| c == word);
    if missing > 0 || any("ERROR") || any("INTERRUPTED") {
        codes::RUN_ERROR
    } else if any("FAIL") {
        codes::CHECK_FAILED
    } else if any("INDETERMINATE") {
        codes::INDETERMINATE
    } else if !cells.is_empty() && cells.iter().all(|c| c == "SKIP") {
        codes::SKIPPED
    } else {
        0
    }
}

/// The word of a matrix's exit code, for a merged document's `verdict`.
pub fn verdict_word(code: u8, missing: usize) -> &'static str {
    match code {
        0 => "pass",
        codes::CHECK_FAILED => "fail",
        codes::INDETERMINATE => "indeterminate",
        codes::SKIPPED => "skipped",
        _ if missing > 0 => "incomplete",
        _ => "error",
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A row of the cell `steady/2n2c2t`.
    pub(crate) fn row(verdict: Option<&str>, rc: Option<u8>, error: Option<&str>) -> Row {
        Row {
            cell: "steady/2n2c2t".into(),
            scenario: "steady".into(),
            topology: "2n2c2t".into(),
            scheduler: None,
            exit_code: rc,
            verdict: verdict.map(String::from),
            failed_checks: Vec::new(),
            checks: Vec::new(),
            error: error.map(String::from),
            vm: None,
        }
    }

    #[test]
    fn matrix_exit_codes_are_the_worst_cell() {
        let pass = || row(Some("pass"), Some(0), None);
        let fail = || row(Some("fail"), Some(1), None);
        let indet = || row(Some("indeterminate"), Some(75), None);
        let skip = || row(None, Some(77), Some("skipped: no SMT"));
        let unbooted = || row(None, None, Some("did not boot"));
        assert_eq!(matrix_code(&[pass()], 0), 0);
        assert_eq!(matrix_code(&[], 0), 0, "a shard with no cells");
        assert_eq!(matrix_code(&[pass(), fail()], 0), 1);
        assert_eq!(matrix_code(&[pass(), indet()], 0), 75);
        assert_eq!(matrix_code(&[indet(), fail()], 0), 1);
        assert_eq!(matrix_code(&[skip()], 0), 77);
        assert_eq!(matrix_code(&[skip(), pass()], 0), 0);
        assert_eq!(matrix_code(&[fail(), unbooted()], 0), 3);
        assert_eq!(matrix_code(&[pass()], 1), 3, "a missing cell");
        assert_eq!(verdict_word(3, 1), "incomplete");
        assert_eq!(verdict_word(3, 0), "error");
        assert_eq!(verdict_word(77, 0), "skipped");
    }

    #[test]
    fn the_table_has_a_line_per_cell() {
        let mut r = row(Some("fail"), Some(1), None);
        r.failed_checks = vec!["max_gap_ms[g]".into()];
        r.vm = Some(serde_json::json!({"accel": "tcg", "boot_ms": 4200}));
        let missing = [MissingCell {
            cell: "a-long-scenario/1n2c1t".into(),
            why: "shard 2/2 is missing".into(),
        }];
        let text = render(&[r], &missing);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert!(lines[0].starts_with("cell "), "{text}");
        assert!(
            lines[1].contains("tcg") && lines[1].contains("4.2s"),
            "{text}"
        );
        assert!(lines[1].contains("FAIL") && lines[1].ends_with("max_gap_ms[g]"));
        assert!(lines[2].contains("MISSING") && lines[2].ends_with("shard 2/2 is missing"));
    }
}
