//! Reading one input of `runq report merge`: its header first (`tool`,
//! `schema_version`, and for a run's error document its `verdict`,
//! `error` and `exit_code`; nothing else is built), then a shard's body
//! straight into its types (its lists of a bounded length, a cell's `vm`
//! facts a bounded JSON value, the whole within a budget of parts), so a
//! hostile file of the largest size read costs a few times its size.

use std::path::Path;

use serde::{Deserialize, Serialize};

use runq_common::json_read::{read_header, with_budget, Bounded, BoundedVec, HeaderValue};
use runq_common::text::printable;
use runq_vm::matrix_doc::{CheckRow, Matrix, MatrixId, Row, ShardPart};
use runq_vm::shard::MAX_SHARDS;

use crate::exit;

/// The largest shard document read: a matrix of thousands of cells is a
/// few MiB.
pub const MAX_DOC_BYTES: u64 = 64 << 20;

/// The most values a cell's `vm` facts may hold (runq writes about 20,
/// and a NUMA distance per pair of nodes).
const MAX_VM_VALUES: usize = 1_000;

/// The most cells a matrix may have: each is a VM booted (20-50 s under
/// TCG); a gauntlet of every scenario, topology and kernel is thousands.
const MAX_CELLS: usize = 100_000;

/// The most arguments or failed checks of one cell a document may list.
const MAX_LIST: usize = 10_000;

/// The most parts (list elements, JSON values) one document may build in
/// all: a matrix of 10,000 cells has about 300,000.
const MAX_PARTS: usize = 2_000_000;

/// The tool of a shard document.
const SHARD_TOOL: &str = "runq run --vm-matrix";

/// The tool of a merged document.
const MERGE_TOOL: &str = "runq report merge";

/// The tool of a run's error document, which a shard that could not run
/// prints with `--json`.
const RUN_TOOL: &str = "runq run";

/// A shard that could not run: the error document its `runq run --json`
/// printed instead of a matrix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NotRun {
    /// The file, as named (or found in a named directory).
    pub path: String,
    /// The error line the shard's runq printed.
    pub error: String,
    /// The exit code it ended with: 77 when it was skipped (no virtme-ng,
    /// no KVM and no TCG, ...); absent when the document gives none.
    pub exit_code: Option<u8>,
}

impl NotRun {
    /// Whether the shard was skipped (exit 77) rather than failing.
    pub fn skipped(&self) -> bool {
        self.exit_code == Some(crate::exit::NO_PRIVILEGE)
    }
}

/// What an input file held.
#[derive(Debug)]
pub enum Read {
    /// A shard's document.
    Shard(Matrix),
    /// A shard that did not run.
    NotRun(NotRun),
}

/// The fields that tell an input apart; every other is skipped.
#[derive(Deserialize)]
struct Header {
    tool: Option<HeaderValue>,
    schema_version: Option<HeaderValue>,
    verdict: Option<HeaderValue>,
    error: Option<HeaderValue>,
    exit_code: Option<HeaderValue>,
}

/// A shard document as read: [`Matrix`] with its lists and each row's
/// `vm` bounded.
#[derive(Deserialize)]
struct ShardIn {
    matrix: MatrixIn,
    shard: ShardPartIn,
    runs: BoundedVec<RowIn, MAX_CELLS>,
}

/// [`MatrixId`] as read.
#[derive(Deserialize)]
struct MatrixIn {
    cells: BoundedVec<String, MAX_CELLS>,
    args: BoundedVec<String, MAX_LIST>,
}

/// [`ShardPart`] as read.
#[derive(Deserialize)]
struct ShardPartIn {
    index: u32,
    count: u32,
    cells: BoundedVec<String, MAX_CELLS>,
}

/// [`Row`] as read.
#[derive(Deserialize)]
struct RowIn {
    cell: String,
    scenario: String,
    topology: String,
    #[serde(default)]
    scheduler: Option<String>,
    exit_code: Option<u8>,
    verdict: Option<String>,
    failed_checks: BoundedVec<String, MAX_LIST>,
    #[serde(default)]
    checks: BoundedVec<CheckRowIn, MAX_LIST>,
    error: Option<String>,
    vm: Option<Bounded<MAX_VM_VALUES>>,
}

/// [`CheckRow`] as read.
#[derive(Deserialize)]
struct CheckRowIn {
    check: String,
    group: String,
    op: String,
    bound: Option<f64>,
    passed: u32,
    of: u32,
    measured: BoundedVec<f64, MAX_LIST>,
}

impl From<CheckRowIn> for CheckRow {
    fn from(c: CheckRowIn) -> CheckRow {
        CheckRow {
            check: c.check,
            group: c.group,
            op: c.op,
            bound: c.bound,
            passed: c.passed,
            of: c.of,
            measured: c.measured.0,
        }
    }
}

impl From<RowIn> for Row {
    fn from(r: RowIn) -> Row {
        Row {
            cell: r.cell,
            scenario: r.scenario,
            topology: r.topology,
            scheduler: r.scheduler,
            exit_code: r.exit_code,
            verdict: r.verdict,
            failed_checks: r.failed_checks.0,
            checks: r.checks.0.into_iter().map(CheckRow::from).collect(),
            error: r.error,
            vm: r.vm.map(|b| b.0),
        }
    }
}

/// The usage error of a file that is not a shard document: one printable
/// line naming it.
fn bad(path: &Path, why: &str) -> anyhow::Error {
    exit::usage(format!(
        "{}: {}; give the shards' `runq run --vm-matrix --json` output or --output files",
        printable(&path.display().to_string()),
        printable(why)
    ))
}

/// The document in `path`: a shard's, or the error document of a shard
/// that did not run; a usage error for anything else (another tool's
/// document, another layout, damaged fields, not JSON).
pub fn read_shard(path: &Path) -> anyhow::Result<Read> {
    let text = runq_common::infile::read_text(path, MAX_DOC_BYTES, "a --vm-matrix document")
        .map_err(exit::user_input)?;
    let header = read_header::<Header>(&text)
        .map_err(|e| bad(path, &format!("not a JSON document ({e})")))?
        .ok_or_else(|| bad(path, "not a JSON object"))?;
    let tool = header.tool.as_ref().and_then(HeaderValue::as_str);
    match (tool, header.schema_version.as_ref()) {
        (Some(SHARD_TOOL), Some(HeaderValue::U64(1))) => {}
        (Some(RUN_TOOL), _)
            if header.verdict.as_ref().and_then(HeaderValue::as_str) == Some("error") =>
        {
            return Ok(Read::NotRun(not_run(path, &header)));
        }
        (Some(SHARD_TOOL), v) => {
            let v = v.map_or("none".to_string(), HeaderValue::to_string);
            return Err(bad(
                path,
                &format!(
                    "schema_version {v}, this runq reads 1: merge with the runq that wrote it"
                ),
            ));
        }
        (Some(RUN_TOOL), _) => {
            return Err(bad(
                path,
                "a single run's document (tool \"runq run\"), not a --vm-matrix shard",
            ))
        }
        (_, _) => {
            let why = match &header.tool {
                Some(t) => format!("its tool is {t}, not a --vm-matrix shard"),
                None => "it has no tool field: not a --vm-matrix shard".to_string(),
            };
            return Err(bad(path, &why));
        }
    }
    let doc: ShardIn = with_budget(MAX_PARTS, || serde_json::from_str(&text)).map_err(|e| {
        let e = e.to_string();
        match e.starts_with("missing field") {
            true => bad(
                path,
                &format!(
                    "{e} (written by a runq without --shard? run the matrix again with this one)"
                ),
            ),
            false => bad(path, &e),
        }
    })?;
    let (index, count) = (doc.shard.index, doc.shard.count);
    if index == 0 || index > count || count > MAX_SHARDS {
        return Err(bad(
            path,
            &format!(
                "its shard is {index}/{count}, which runq never writes (K from 1 to N, N at most \
                 {MAX_SHARDS})"
            ),
        ));
    }
    Ok(Read::Shard(Matrix {
        matrix: MatrixId {
            cells: doc.matrix.cells.0,
            args: doc.matrix.args.0,
        },
        shard: ShardPart {
            index: doc.shard.index,
            count: doc.shard.count,
            cells: doc.shard.cells.0,
        },
        runs: doc.runs.0.into_iter().map(Row::from).collect(),
    }))
}

/// A merged document as read: its rows.
#[derive(Deserialize)]
struct MergedIn {
    runs: BoundedVec<RowIn, MAX_CELLS>,
}

/// The rows of a matrix document in `path`: a whole matrix's or a
/// shard's (`runq run --vm-matrix`), or a merge's (`runq report
/// merge`); a usage error for anything else.
pub fn read_rows(path: &Path) -> anyhow::Result<Vec<Row>> {
    let text = runq_common::infile::read_text(path, MAX_DOC_BYTES, "a --vm-matrix document")
        .map_err(exit::user_input)?;
    let header = read_header::<Header>(&text)
        .map_err(|e| bad(path, &format!("not a JSON document ({e})")))?
        .ok_or_else(|| bad(path, "not a JSON object"))?;
    if header.tool.as_ref().and_then(HeaderValue::as_str) == Some(MERGE_TOOL) {
        let doc: MergedIn = with_budget(MAX_PARTS, || serde_json::from_str(&text))
            .map_err(|e| bad(path, &e.to_string()))?;
        return Ok(doc.runs.0.into_iter().map(Row::from).collect());
    }
    match read_shard(path)? {
        Read::Shard(m) => Ok(m.runs),
        Read::NotRun(n) => Err(bad(path, &format!("a shard that did not run: {}", n.error))),
    }
}

/// The shard that did not run, from its error document's header.
fn not_run(path: &Path, header: &Header) -> NotRun {
    NotRun {
        path: path.display().to_string(),
        error: header
            .error
            .as_ref()
            .and_then(HeaderValue::as_str)
            .unwrap_or("no error given")
            .to_string(),
        exit_code: header
            .exit_code
            .as_ref()
            .and_then(HeaderValue::as_u64)
            .and_then(|c| u8::try_from(c).ok()),
    }
}
