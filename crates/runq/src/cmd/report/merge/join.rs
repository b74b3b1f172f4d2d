//! Joining shards: the checks that they are parts of one matrix, each
//! given once, and the merged document (`schemas/report-merge.schema.json`).

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Serialize;

use runq_vm::matrix_doc::{matrix_code, verdict_word, Matrix, MatrixId, MissingCell, Row};
use runq_vm::shard::Shard;

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
    /// The matrix the shards are parts of.
    pub matrix: MatrixId,
    /// Which shards were given and which are missing.
    pub shards: Shards,
    /// The files read.
    pub inputs: Vec<Source>,
    /// Every cell's outcome, sorted by cell id.
    pub runs: Vec<Row>,
    /// Cells with no outcome: in a missing shard, or not run by their
    /// shard (interrupted).
    pub missing_cells: Vec<MissingCell>,
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

/// Joins `inputs` (at least one) into the matrix's outcome; an error
/// (one line, for exit 2) when they are not distinct shards of one matrix.
pub fn join(inputs: Vec<Input>) -> Result<Merged, String> {
    let first = inputs.first().ok_or("no shard documents to merge")?;
    let (reference, count) = (first.doc.matrix.clone(), first.doc.shard.count);
    let first_path = first.path.display().to_string();
    let mut by_index: BTreeMap<u32, String> = BTreeMap::new();
    let mut seen: BTreeMap<String, String> = BTreeMap::new();
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
    for &index in &missing {
        let shard = Shard { index, count };
        missing_cells.extend(
            shard
                .select(reference.cells.iter().map(String::as_str))
                .into_iter()
                .map(|c| MissingCell {
                    cell: c.to_string(),
                    why: format!("shard {shard} is missing"),
                }),
        );
    }
    runs.sort_by(|a, b| a.cell.cmp(&b.cell));
    missing_cells.sort_by(|a, b| a.cell.cmp(&b.cell));
    let exit_code = matrix_code(&runs, missing_cells.len());
    Ok(Merged {
        matrix: reference,
        shards: Shards {
            count,
            present: by_index.into_keys().collect(),
            missing,
        },
        inputs: sources,
        runs,
        verdict: verdict_word(exit_code, missing_cells.len()),
        missing_cells,
        exit_code,
    })
}

/// Moves the rows of shard `shard` (from `name`) to `runs`, checking
/// each is one of its `expected` cells and in no other shard (`seen`:
/// cell to file); its expected cells without a row, as missing.
fn take_rows(
    name: &str,
    shard: Shard,
    expected: &[&str],
    rows: Vec<Row>,
    seen: &mut BTreeMap<String, String>,
    runs: &mut Vec<Row>,
) -> Result<Vec<MissingCell>, String> {
    let mut ran = Vec::new();
    for row in rows {
        if !expected.contains(&row.cell.as_str()) {
            return Err(format!("{name}: cell {} is not shard {shard}'s", row.cell));
        }
        if let Some(other) = seen.insert(row.cell.clone(), name.to_string()) {
            return Err(format!(
                "cell {} is in {other} and in {name}; give each shard once",
                row.cell
            ));
        }
        ran.push(row.cell.clone());
        runs.push(row);
    }
    Ok(expected
        .iter()
        .filter(|c| !ran.iter().any(|r| r == *c))
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
            a.cells
                .iter()
                .find(|c| !b.cells.contains(c))
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
