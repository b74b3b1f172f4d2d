//! Joining shards: the checks that they are parts of one matrix, each
//! given once, and the merged document (`schemas/report-merge.schema.json`).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::PathBuf;

use serde::Serialize;

use runq_vm::codes;
use runq_vm::matrix_doc::{matrix_code, verdict_word, Matrix, MatrixId, MissingCell, Row};
use runq_vm::shard::Shard;

use super::read::NotRun;

/// A shard document and the file it came from.
#[derive(Debug, Clone)]
pub struct Input {
    /// The file.
    pub path: PathBuf,
    /// Its document.
    pub doc: Matrix,
}

/// The shards present and missing.
#[derive(Debug, Serialize)]
pub struct Shards {
    /// N: how many shards the matrix was split into.
    pub count: u32,
    /// The indices given, ascending.
    pub present: Vec<u32>,
    /// The indices not given, ascending.
    pub missing: Vec<u32>,
}

/// One input file and the shard it held.
#[derive(Debug, Serialize)]
pub struct Source {
    /// The file, as named (or found in a named directory).
    pub path: String,
    /// Its shard's index.
    pub shard: u32,
}

/// `runq report merge --json`: the whole matrix's outcome.
#[derive(Debug, Serialize)]
pub struct Merged {
    /// The matrix the shards are parts of; `None` when no shard ran
    /// (every input was a shard's error document).
    pub matrix: Option<MatrixId>,
    /// Which shards were given and which are missing; `None` when no
    /// shard ran.
    pub shards: Option<Shards>,
    /// The files read.
    pub inputs: Vec<Source>,
    /// The inputs that were the error document of a shard that could not
    /// run (skipped, or a run error): their cells count as missing.
    pub not_run: Vec<NotRun>,
    /// Every cell's outcome, sorted by cell id.
    pub runs: Vec<Row>,
    /// Cells with no outcome: in a missing shard, or not run by their
    /// shard (interrupted).
    pub missing_cells: Vec<MissingCell>,
    /// Whether `--allow-missing` was given: missing shards and cells are
    /// listed but leave the verdict to the cells that ran.
    pub allow_missing: bool,
    /// `pass`, `fail`, `indeterminate`, `skipped`, `error` or
    /// `incomplete`: the worst of the cells.
    pub verdict: &'static str,
    /// runq's exit code for that verdict.
    pub exit_code: u8,
}

impl runq_common::json::JsonDocument for Merged {
    const TOOL: &'static str = "runq report merge";
    const SCHEMA_VERSION: u32 = 1;
}

/// The verdicts a cell's row may carry (`None`: it gave none).
const VERDICTS: [&str; 4] = ["pass", "fail", "interrupted", "indeterminate"];

/// Joins `inputs` and `not_run` into the matrix's outcome; an error (one
/// line, for exit 2) when there is neither, or when the inputs are not
/// distinct shards of one matrix. A missing shard or cell makes the
/// verdict incomplete (exit 3) unless `allow_missing`.
pub fn join(
    inputs: Vec<Input>,
    not_run: Vec<NotRun>,
    allow_missing: bool,
) -> Result<Merged, String> {
    let Some(first) = inputs.first() else {
        return nothing_ran(not_run, allow_missing);
    };
    let (reference, count) = (first.doc.matrix.clone(), first.doc.shard.count);
    let first_path = first.path.display().to_string();
    let mut by_index: BTreeMap<u32, String> = BTreeMap::new();
    let mut seen: HashMap<String, String> = HashMap::new();
    let mut runs = Vec::new();
    let mut missing_cells = Vec::new();
    let mut sources = Vec::new();
    for Input { path, doc } in inputs {
        let name = path.display().to_string();
        same_matrix(&first_path, &reference, count, &name, &doc)?;
        let shard = doc.shard.shard();
        if let Some(other) = by_index.insert(shard.index, name.clone()) {
            return Err(format!(
                "{other} and {name} are both shard {shard}; give each shard once"
            ));
        }
        let expected = shard.select(reference.cells.iter().map(String::as_str));
        if doc.shard.cells != expected {
            return Err(format!(
                "{name}: its cells are not those shard {shard} takes from its matrix (positions \
                 {}, {}+{count}, ... of the id-sorted list); was it edited, or written by another \
                 runq?",
                shard.index - 1,
                shard.index - 1
            ));
        }
        missing_cells.extend(take_rows(
            &name, shard, &expected, doc.runs, &mut seen, &mut runs,
        )?);
        sources.push(Source {
            path: name,
            shard: shard.index,
        });
    }
    let missing: Vec<u32> = (1..=count).filter(|k| !by_index.contains_key(k)).collect();
    missing_cells.extend(missing_shard_cells(&reference, count, &missing));
    runs.sort_by(|a, b| a.cell.cmp(&b.cell));
    missing_cells.sort_by(|a, b| a.cell.cmp(&b.cell));
    // A missing shard makes the matrix incomplete even when it had no
    // cells of its own (N larger than the matrix).
    let gaps = match allow_missing {
        true => 0,
        false => missing_cells.len() + missing.len(),
    };
    let exit_code = matrix_code(&runs, gaps);
    Ok(Merged {
        matrix: Some(reference),
        shards: Some(Shards {
            count,
            present: by_index.into_keys().collect(),
            missing,
        }),
        inputs: sources,
        not_run,
        runs,
        verdict: verdict_word(exit_code, gaps),
        missing_cells,
        allow_missing,
        exit_code,
    })
}

/// The cells of the `missing` shards of `count`, each saying so: one pass
/// over the id-sorted cells (the cell at position i is shard i mod N + 1's,
/// as [`Shard::select`] takes them).
fn missing_shard_cells(reference: &MatrixId, count: u32, missing: &[u32]) -> Vec<MissingCell> {
    let mut ids: Vec<&str> = reference.cells.iter().map(String::as_str).collect();
    ids.sort_unstable();
    ids.dedup();
    let missing: HashSet<u32> = missing.iter().copied().collect();
    ids.into_iter()
        .enumerate()
        .filter_map(|(position, cell)| {
            let shard = Shard {
                index: (position % count as usize) as u32 + 1,
                count,
            };
            missing.contains(&shard.index).then(|| MissingCell {
                cell: cell.to_string(),
                why: format!("shard {shard} is missing"),
            })
        })
        .collect()
}

/// The outcome when no shard ran: skipped (exit 77) when every shard was
/// skipped, else an error (exit 3); an error (for exit 2) when there was
/// no input at all.
fn nothing_ran(not_run: Vec<NotRun>, allow_missing: bool) -> Result<Merged, String> {
    if not_run.is_empty() {
        return Err("no shard documents to merge".into());
    }
    let (verdict, exit_code) = match not_run.iter().all(NotRun::skipped) {
        true => ("skipped", codes::SKIPPED),
        false => ("error", codes::RUN_ERROR),
    };
    Ok(Merged {
        matrix: None,
        shards: None,
        inputs: Vec::new(),
        not_run,
        runs: Vec::new(),
        missing_cells: Vec::new(),
        allow_missing,
        verdict,
        exit_code,
    })
}

/// Moves the rows of shard `shard` (from `name`) to `runs`, checking
/// each is one of its `expected` cells, in no other shard (`seen`: cell to
/// file) and with a verdict runq writes; its expected cells without a
/// row, as missing.
fn take_rows(
    name: &str,
    shard: Shard,
    expected: &[&str],
    rows: Vec<Row>,
    seen: &mut HashMap<String, String>,
    runs: &mut Vec<Row>,
) -> Result<Vec<MissingCell>, String> {
    let wanted: HashSet<&str> = expected.iter().copied().collect();
    let mut ran: HashSet<String> = HashSet::new();
    for row in rows {
        if !wanted.contains(row.cell.as_str()) {
            return Err(format!("{name}: cell {} is not shard {shard}'s", row.cell));
        }
        if let Some(v) = row.verdict.as_deref().filter(|v| !VERDICTS.contains(v)) {
            return Err(format!(
                "{name}: cell {} has the verdict `{v}`, which runq never writes (it writes {}, or \
                 null); was the file edited, or written by another runq?",
                row.cell,
                VERDICTS.join(", ")
            ));
        }
        if let Some(other) = seen.insert(row.cell.clone(), name.to_string()) {
            return Err(format!(
                "cell {} is in {other} and in {name}; give each shard once",
                row.cell
            ));
        }
        ran.insert(row.cell.clone());
        runs.push(row);
    }
    Ok(expected
        .iter()
        .filter(|c| !ran.contains(**c))
        .map(|c| MissingCell {
            cell: c.to_string(),
            why: format!("not run by shard {shard} ({name}: interrupted?)"),
        })
        .collect())
}

/// An error when `doc` (from `name`) is not a shard of the matrix of
/// the first document, `first`.
fn same_matrix(
    first: &str,
    reference: &MatrixId,
    count: u32,
    name: &str,
    doc: &Matrix,
) -> Result<(), String> {
    if doc.shard.count != count {
        return Err(format!(
            "{first} is one of {count} shards and {name} one of {}; merge the shards of one \
             split",
            doc.shard.count
        ));
    }
    if doc.matrix.cells != reference.cells {
        let only = |a: &MatrixId, b: &MatrixId| {
            let others: BTreeSet<&String> = b.cells.iter().collect();
            a.cells
                .iter()
                .find(|c| !others.contains(c))
                .cloned()
                .unwrap_or_else(|| "(none)".into())
        };
        return Err(format!(
            "{name} is a shard of another matrix than {first}: their cells differ (e.g. {} only \
             in {first}, {} only in {name})",
            only(reference, &doc.matrix),
            only(&doc.matrix, reference)
        ));
    }
    if doc.matrix.args != reference.args {
        return Err(format!(
            "{name} is a shard of another matrix than {first}: it ran `runq {}`, {first} `runq \
             {}`",
            doc.matrix.args.join(" "),
            reference.args.join(" ")
        ));
    }
    Ok(())
}
