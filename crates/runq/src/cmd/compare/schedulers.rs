//! `runq compare MATRIX.json`: a matrix's schedulers side by side (the
//! table is [`runq_vm::scheduler_table`]'s), as text, JSON or JUnit.

use std::process::ExitCode;

use runq_vm::scheduler_table::{render_scheduler_table, scheduler_table, SchedulerTable};

use crate::exit;
use crate::junit::{Case, Outcome, Suite};

/// `runq compare MATRIX.json --json`.
#[derive(serde::Serialize)]
struct SchedulerComparison<'a> {
    /// The matrix document read.
    matrix: String,
    #[serde(flatten)]
    table: &'a SchedulerTable,
}

impl runq_common::json::JsonDocument for SchedulerComparison<'_> {
    const TOOL: &'static str = "runq compare (schedulers)";
    const SCHEMA_VERSION: u32 = 1;
}

/// Reads the matrix document and prints its schedulers' table.
pub fn execute(args: &super::CompareArgs) -> anyhow::Result<ExitCode> {
    let rows = crate::cmd::report::read_rows(&args.a)?;
    let table = scheduler_table(&rows).ok_or_else(|| {
        exit::usage(format!(
            "{}: a matrix without a scheduler axis; give two saved runs (A.json B.json), or a \
             matrix run with --scheduler twice or more",
            args.a.display()
        ))
    })?;
    if args.json {
        let doc = SchedulerComparison {
            matrix: args.a.display().to_string(),
            table: &table,
        };
        crate::outln!("{}", runq_common::json::to_pretty(&doc)?);
    } else {
        crate::out!("{}", render_scheduler_table(&table, args.every_check));
    }
    if let Some(path) = &args.junit {
        crate::junit::write(&junit(&table, &args.a.display().to_string()), path)?;
    }
    Ok(if table.totals.iter().any(|t| t.regressed > 0) {
        exit::Exit::CheckFailed.exit_code()
    } else {
        ExitCode::SUCCESS
    })
}

/// One testcase per check and scheduler: a failure where the scheduler
/// fails in every repeat a check the reference passes in every repeat.
fn junit(t: &SchedulerTable, matrix: &str) -> Suite {
    let reference = t.schedulers.iter().position(|s| *s == t.reference);
    let mut cases = Vec::new();
    for line in &t.checks {
        let ref_passed = reference
            .and_then(|r| line.under[r].as_ref())
            .is_some_and(|o| o.of > 0 && o.passed == o.of);
        for (s, o) in t.schedulers.iter().zip(&line.under) {
            let Some(o) = o else { continue };
            let text = format!("passed {} of {} repeats", o.passed, o.of);
            let outcome = if ref_passed && o.of > 0 && o.passed == 0 {
                Outcome::Failure {
                    message: format!("fails what {} passes", t.reference),
                    detail: text.clone(),
                }
            } else {
                Outcome::Pass
            };
            cases.push(Case {
                class: s.clone(),
                name: format!("{} {}[{}]", line.cell, line.check, line.group),
                outcome,
                output: text,
            });
        }
    }
    Suite {
        name: format!("runq compare {matrix}"),
        time_s: 0.0,
        cases,
    }
}
