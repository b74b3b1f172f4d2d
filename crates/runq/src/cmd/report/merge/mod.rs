//! `runq report merge FILE_OR_DIR…`: reads the shards' `--vm-matrix`
//! documents (through `runq_common::infile`, header first: `read.rs`),
//! joins them (`join.rs`) and prints one table and verdict, `--json` the
//! merged document, `--junit` one suite with a testcase per cell.

mod join;
mod read;

pub(crate) use read::read_rows;
#[cfg(test)]
mod tests;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use crate::exit;
use crate::junit::{from_matrix, Case, Outcome, Suite};
use join::{join, Input, Merged};
use read::{read_shard, Read};
use runq_common::safefile::{write_atomic, Replace};
use runq_common::text::printable;
use runq_vm::matrix_doc::{render, MissingCell, Row};

/// How deep a named directory is searched for documents (CI artifact
/// downloads put each artifact in a directory of its own).
const MAX_DEPTH: usize = 3;

/// Arguments of `runq report merge`.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
Exit status: the worst cell's, as runq run's: 0 every cell passed (or
some were skipped), 1 a check failed, 75 indeterminate, 77 every cell
skipped (or every shard was skipped), 3 a cell gave no verdict or a shard
is missing (0 for the missing with --allow-missing), 2 bad input (not a
--vm-matrix document, a verdict runq never writes, shards of different
matrices, a shard twice).

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
    /// Judge the cells that ran and list the missing shards and cells
    /// without making the verdict INCOMPLETE (exit 3)
    #[arg(long)]
    pub allow_missing: bool,
}

/// Merges the shards and prints the verdict.
pub fn execute(args: MergeArgs) -> anyhow::Result<ExitCode> {
    crate::outfile::check_outputs(&[
        ("--output", args.output.as_deref()),
        ("--junit", args.junit.as_deref()),
    ])?;
    let (mut inputs, mut not_run) = (Vec::new(), Vec::new());
    for path in files(&args.inputs)? {
        match read_shard(&path)? {
            Read::Shard(doc) => inputs.push(Input { path, doc }),
            Read::NotRun(n) => {
                crate::errln!(
                    "runq: report merge: {}: a shard that did not run ({}); its cells count as \
                     missing",
                    printable(&n.path),
                    printable(&n.error)
                );
                not_run.push(n);
            }
        }
    }
    if inputs.is_empty() && not_run.is_empty() {
        return Err(exit::usage(format!(
            "no --vm-matrix documents in {}; give the shards' `runq run --vm-matrix --json` \
             output",
            printable(&shown(&args.inputs))
        )));
    }
    let merged = join(inputs, not_run, args.allow_missing)
        .map_err(|e| exit::usage(printable(&e).into_owned()))?;
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
        crate::junit::write(&suite(&merged), path)?;
    }
    Ok(ExitCode::from(merged.exit_code))
}

/// The first line of the text and the JUnit suite's name: how many cells
/// of how many shards, or that no shard ran.
fn headline(m: &Merged) -> String {
    match (&m.matrix, &m.shards) {
        (Some(matrix), Some(s)) => format!(
            "{} cells, {} of {} shards",
            matrix.cells.len(),
            s.present.len(),
            s.count
        ),
        _ => format!(
            "no shard ran: {} of {} skipped",
            m.not_run.iter().filter(|n| n.skipped()).count(),
            m.not_run.len()
        ),
    }
}

/// The JUnit suite: a testcase per cell (a missing one fails, or is
/// skipped with --allow-missing) and per shard that did not run (skipped,
/// or failed when it was not a skip).
fn suite(m: &Merged) -> Suite {
    let name = format!("runq report merge: {}", headline(m));
    let mut suite = from_matrix(name, &m.runs, &m.missing_cells, Duration::ZERO);
    if m.allow_missing {
        let missing: HashSet<&str> = m.missing_cells.iter().map(|c| c.cell.as_str()).collect();
        for case in &mut suite.cases {
            if let Outcome::Failure { message, .. } = &case.outcome {
                if missing.contains(case.name.as_str()) {
                    case.outcome = Outcome::Skipped(message.clone());
                }
            }
        }
    }
    suite.cases.extend(m.not_run.iter().map(|n| Case {
        class: "vm-matrix".into(),
        name: n.path.clone(),
        outcome: match n.skipped() {
            true => Outcome::Skipped(n.error.clone()),
            false => Outcome::Failure {
                message: format!("the shard did not run: {}", n.error),
                detail: String::new(),
            },
        },
        output: String::new(),
    }));
    suite
}

/// The table, with a line on the shards before it and the verdict after;
/// every name from the documents made printable.
fn report_text(m: &Merged) -> String {
    let mut out = headline(m);
    if let Some(s) = m.shards.as_ref().filter(|s| !s.missing.is_empty()) {
        let list: Vec<String> = s
            .missing
            .iter()
            .map(|k| format!("{k}/{}", s.count))
            .collect();
        out += &format!("; missing: shard {}", list.join(", "));
    }
    out += "\n";
    for n in &m.not_run {
        out += &format!(
            "not run: {} ({})\n",
            printable(&n.path),
            printable(&n.error)
        );
    }
    if m.matrix.is_some() {
        let rows: Vec<Row> = m.runs.iter().map(printable_row).collect();
        let missing: Vec<MissingCell> = m
            .missing_cells
            .iter()
            .map(|c| MissingCell {
                cell: printable(&c.cell).into_owned(),
                why: printable(&c.why).into_owned(),
            })
            .collect();
        out += &render(&rows, &missing);
    }
    let allowed = match (m.allow_missing, m.missing_cells.len()) {
        (true, n) if n > 0 => format!("; {n} missing cells allowed"),
        _ => String::new(),
    };
    out += &format!(
        "verdict: {} (exit {}){allowed}\n",
        m.verdict.to_uppercase(),
        m.exit_code
    );
    out
}

/// A row with its names made printable, for the table.
fn printable_row(r: &Row) -> Row {
    let p = |s: &str| printable(s).into_owned();
    Row {
        cell: p(&r.cell),
        scenario: p(&r.scenario),
        topology: p(&r.topology),
        scheduler: r.scheduler.as_deref().map(p),
        exit_code: r.exit_code,
        verdict: r.verdict.clone(),
        failed_checks: r.failed_checks.iter().map(|c| p(c)).collect(),
        checks: r.checks.clone(),
        error: r.error.as_deref().map(p),
        vm: r.vm.clone().map(|mut vm| {
            if let Some(accel) = vm.get_mut("accel") {
                if let Some(a) = accel.as_str() {
                    *accel = p(a).into();
                }
            }
            vm
        }),
    }
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
