//! `runq report merge FILE_OR_DIR…`: reads the shards' `--vm-matrix`
//! documents (through `runq_common::infile`), joins them (`join.rs`) and
//! prints one table and verdict, `--json` the merged document, `--junit`
//! one suite with a testcase per cell.

mod join;
#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use serde_json::Value;

use crate::exit;
use crate::junit::from_matrix;
use join::{join, Input, Merged};
use runq_common::safefile::{write_atomic, Replace};
use runq_vm::matrix_doc::{render, Matrix};

/// The largest shard document read: a matrix of thousands of cells is a
/// few MiB.
const MAX_DOC_BYTES: u64 = 64 << 20;

/// How deep a named directory is searched for documents (CI artifact
/// downloads put each artifact in a directory of its own).
const MAX_DEPTH: usize = 3;

/// Arguments of `runq report merge`.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
Exit status: the worst cell's, as runq run's: 0 every cell passed (or
some were skipped), 1 a check failed, 75 indeterminate, 77 every cell
skipped, 3 a cell gave no verdict or a shard is missing, 2 bad input
(not a --vm-matrix document, shards of different matrices, a shard twice).

Example:
  runq run steady --vm-matrix --shard 1/2 --json > shard-1.json
  runq run steady --vm-matrix --shard 2/2 --json > shard-2.json
  runq report merge shard-1.json shard-2.json --junit matrix.xml")]
pub struct MergeArgs {
    /// The shards' documents (`runq run --vm-matrix --json` output or
    /// `--output` files), or directories searched for `*.json` files
    /// (three levels deep)
    #[arg(value_name = "FILE_OR_DIR", required = true)]
    pub inputs: Vec<PathBuf>,
    /// Print the merged document as JSON
    #[arg(long)]
    pub json: bool,
    /// Write the merged document (as --json prints it) to FILE
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Write a JUnit XML report to FILE: one testcase per cell (a missing
    /// cell fails)
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
}

/// Merges the shards and prints the verdict.
pub fn execute(args: MergeArgs) -> anyhow::Result<ExitCode> {
    crate::outfile::check_outputs(&[
        ("--output", args.output.as_deref()),
        ("--junit", args.junit.as_deref()),
    ])?;
    let mut inputs = Vec::new();
    for path in files(&args.inputs)? {
        if let Some(doc) = read_shard(&path)? {
            inputs.push(Input { path, doc });
        }
    }
    if inputs.is_empty() {
        return Err(exit::usage(format!(
            "no --vm-matrix documents in {}; give the shards' `runq run --vm-matrix --json` \
             output",
            shown(&args.inputs)
        )));
    }
    let merged = join(inputs).map_err(exit::usage)?;
    let text = runq_common::json::to_pretty(&merged)?;
    if let Some(path) = &args.output {
        write_atomic(path, format!("{text}\n").as_bytes(), Replace::OwnFile)
            .map_err(|e| exit::run_error(format!("--output {}: {e}", path.display())))?;
    }
    if args.json {
        crate::outln!("{text}");
    } else {
        crate::out!("{}", report_text(&merged));
    }
    if let Some(path) = &args.junit {
        let s = &merged.shards;
        let name = format!(
            "runq report merge: {} cells, {} of {} shards",
            merged.matrix.cells.len(),
            s.present.len(),
            s.count
        );
        let took = Duration::ZERO;
        crate::junit::write(
            &from_matrix(name, &merged.runs, &merged.missing_cells, took),
            path,
        )?;
    }
    Ok(ExitCode::from(merged.exit_code))
}

/// The table, with a line on the shards before it and the verdict after.
fn report_text(m: &Merged) -> String {
    let s = &m.shards;
    let mut out = format!(
        "{} cells, {} of {} shards",
        m.matrix.cells.len(),
        s.present.len(),
        s.count
    );
    if !s.missing.is_empty() {
        let list: Vec<String> = s
            .missing
            .iter()
            .map(|k| format!("{k}/{}", s.count))
            .collect();
        out += &format!("; missing: shard {}", list.join(", "));
    }
    out += "\n";
    out += &render(&m.runs, &m.missing_cells);
    out += &format!(
        "verdict: {} (exit {})\n",
        m.verdict.to_uppercase(),
        m.exit_code
    );
    out
}

/// The named paths as one string, for an error.
fn shown(paths: &[PathBuf]) -> String {
    let v: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    v.join(", ")
}

/// The files to read: each named file, and the `*.json` files under each
/// named directory (sorted, at most [`MAX_DEPTH`] levels down).
fn files(inputs: &[PathBuf]) -> anyhow::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for p in inputs {
        if p.is_dir() {
            walk(p, 0, &mut out)
                .map_err(|e| exit::usage(format!("reading the directory {}: {e}", p.display())))?;
        } else {
            out.push(p.clone());
        }
    }
    Ok(out)
}

/// Adds the `*.json` regular files under `dir` to `out`.
fn walk(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    entries.sort();
    for p in entries {
        let ft = std::fs::symlink_metadata(&p)?.file_type();
        if ft.is_dir() && depth < MAX_DEPTH {
            walk(&p, depth + 1, out)?;
        } else if ft.is_file() && p.extension().is_some_and(|e| e == "json") {
            out.push(p);
        }
    }
    Ok(())
}

/// The shard document in `path`; `None` (said on stderr) for a run's
/// error document, which a shard that could not run prints with `--json`.
fn read_shard(path: &Path) -> anyhow::Result<Option<Matrix>> {
    let text = runq_common::infile::read_text(path, MAX_DOC_BYTES, "a --vm-matrix document")
        .map_err(exit::user_input)?;
    let bad = |why: String| {
        exit::usage(format!(
            "{}: {why}; give the shards' `runq run --vm-matrix --json` output or --output files",
            path.display()
        ))
    };
    let value: Value =
        serde_json::from_str(&text).map_err(|e| bad(format!("not a JSON document ({e})")))?;
    match (value["tool"].as_str(), value["schema_version"].as_u64()) {
        (Some("runq run --vm-matrix"), Some(1)) => {}
        (Some("runq run"), _) if value["verdict"] == "error" => {
            crate::errln!(
                "runq: report merge: {}: a shard that did not run ({}); its cells count as \
                 missing",
                path.display(),
                value["error"].as_str().unwrap_or("no error given")
            );
            return Ok(None);
        }
        (Some("runq run --vm-matrix"), v) => {
            return Err(bad(format!(
                "schema_version {v:?}, this runq reads 1: merge with the runq that wrote it"
            )))
        }
        (tool, _) => {
            return Err(bad(format!(
                "its tool is {tool:?}, not a --vm-matrix shard"
            )))
        }
    }
    let doc: Matrix = serde_json::from_value(value).map_err(|e| {
        bad(format!(
            "{e} (written by a runq without --shard? run the matrix again with this one)"
        ))
    })?;
    Ok(Some(doc))
}
