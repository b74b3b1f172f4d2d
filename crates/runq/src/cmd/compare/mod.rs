//! `runq compare A.json B.json`: did B regress against A? The comparison
//! itself (medians over repeats, rank-test intervals, verdicts) is
//! [`runq_workload::compare`]'s; this module parses the arguments and
//! renders the result as a table, JSON or JUnit.

use std::fmt::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use runq_common::table::{Align, Table};
use runq_workload::compare::{self, Better, Comparison, Row, Unit, Verdict, METHOD};

use crate::exit;
use crate::junit::{Case, Outcome, Suite};

/// Arguments of `runq compare`.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
Exit status: 0 nothing regressed, 1 something regressed, 2 bad input.

Examples:
  runq run --work-type PipeIo --duration 1s --repeat 5 --output a.json
  runq run --work-type PipeIo --duration 1s --repeat 5 --output b.json
  runq compare a.json b.json --threshold-pct 10 --junit compare.xml")]
pub struct CompareArgs {
    /// The baseline (`runq run --output`).
    #[arg(value_name = "A.json")]
    pub a: PathBuf,
    /// The candidate.
    #[arg(value_name = "B.json")]
    pub b: PathBuf,
    /// Smallest change, in percent of A's median, that counts as a
    /// regression or an improvement.
    /// (`--threshold`, the old spelling, is still accepted.)
    #[arg(
        long = "threshold-pct",
        alias = "threshold",
        value_name = "PCT",
        default_value_t = 5.0
    )]
    pub threshold: f64,
    /// Print the comparison as JSON.
    #[arg(long)]
    pub json: bool,
    /// Write a JUnit XML report to FILE: one testcase per group and figure
    /// (regressed fails, inconclusive is skipped).
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
}

/// Compares two saved runs and prints the verdicts.
pub fn execute(args: CompareArgs) -> anyhow::Result<ExitCode> {
    if !(args.threshold.is_finite() && args.threshold >= 0.0) {
        return Err(exit::usage(format!(
            "--threshold-pct {}: expected a percentage >= 0, e.g. --threshold-pct 5",
            args.threshold
        )));
    }
    let a = compare::read_saved_run(&args.a)?;
    let b = compare::read_saved_run(&args.b)?;
    let differences = compare::differences(&a, &b);
    for m in &differences.mismatches {
        crate::errln!("runq: {m}; every verdict is inconclusive");
    }
    let report = Comparison::new(&a, &b, args.threshold, differences)?;
    if args.json {
        crate::outln!("{}", runq_common::json::to_pretty(&report)?);
    } else {
        crate::out!("{}", render(&report));
    }
    if let Some(path) = &args.junit {
        crate::junit::write(&junit(&report), path)?;
    }
    Ok(if report.regressed > 0 {
        exit::Exit::CheckFailed.exit_code()
    } else {
        ExitCode::SUCCESS
    })
}

/// A value with its unit, short.
fn fmt_value(v: Option<f64>, unit: Unit) -> String {
    v.map_or_else(|| "-".into(), |v| runq_common::units::fmt_short(v, unit))
}

fn pct(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:+.1}%"))
}

fn ci_text(r: &Row) -> String {
    r.ci_pct.map_or_else(
        || "-".into(),
        |[lo, hi]| format!("[{}, {}]", pct(Some(lo)), pct(Some(hi))),
    )
}

/// Why rows are inconclusive: each distinct reason with the rows it
/// covers (`PipeIo work_rate, PipeIo wake_p99`, or a count past three).
fn inconclusive_reasons(rows: &[Row]) -> Vec<(String, String)> {
    let mut by_reason: Vec<(String, Vec<String>)> = Vec::new();
    for r in rows {
        let Some(reason) = r
            .reason
            .as_ref()
            .filter(|_| r.verdict.word() == "inconclusive")
        else {
            continue;
        };
        let name = format!("{} {}", r.group, r.figure);
        match by_reason.iter_mut().find(|(k, _)| k == reason) {
            Some((_, names)) => names.push(name),
            None => by_reason.push((reason.clone(), vec![name])),
        }
    }
    by_reason
        .into_iter()
        .map(|(reason, names)| {
            let rows = if names.len() > 3 {
                format!("{} rows", names.len())
            } else {
                names.join(", ")
            };
            (reason, rows)
        })
        .collect()
}

/// The text table.
fn render(rep: &Comparison) -> String {
    let mut out = String::new();
    let reps = rep.rows.first().map_or([0, 0], |r| r.repeats);
    let _ = writeln!(
        out,
        "A {} ({} repeats) vs B {} ({} repeats); threshold {}%",
        rep.a, reps[0], rep.b, reps[1], rep.threshold_pct
    );
    let _ = writeln!(out, "interval: {METHOD}");
    for n in &rep.notes {
        let _ = writeln!(out, "note: {n}");
    }
    for m in &rep.mismatches {
        let _ = writeln!(out, "NOT COMPARABLE: {m}");
    }
    let mut t = Table::new(&[
        ("group", Align::Left),
        ("figure", Align::Left),
        ("A median", Align::Right),
        ("B median", Align::Right),
        ("diff", Align::Right),
        ("95% CI of diff", Align::Left),
        ("verdict", Align::Left),
    ]);
    for r in &rep.rows {
        t.row(vec![
            r.group.clone(),
            r.figure.to_string(),
            fmt_value(r.median_a, r.unit),
            fmt_value(r.median_b, r.unit),
            pct(r.diff_pct),
            ci_text(r),
            r.verdict.word().to_string(),
        ]);
    }
    out.push_str(&t.render(str::to_string));
    for (reason, rows) in inconclusive_reasons(&rep.rows) {
        let _ = writeln!(out, "inconclusive ({rows}): {reason}");
    }
    let _ = writeln!(
        out,
        "{} regressed, {} improved, {} figures compared",
        rep.regressed,
        rep.improved,
        rep.rows.len()
    );
    out
}

/// One testcase per group and figure.
fn junit(rep: &Comparison) -> Suite {
    let cases = rep
        .rows
        .iter()
        .map(|r| {
            let text = format!(
                "A median {}, B median {}, diff {}, 95% CI {} ({} better)",
                fmt_value(r.median_a, r.unit),
                fmt_value(r.median_b, r.unit),
                pct(r.diff_pct),
                ci_text(r),
                if r.better == Better::Higher {
                    "higher"
                } else {
                    "lower"
                }
            );
            let outcome = match r.verdict {
                Verdict::Regressed => Outcome::Failure {
                    message: format!("{} regressed ({})", r.figure, pct(r.diff_pct)),
                    detail: text.clone(),
                },
                Verdict::Inconclusive => Outcome::Skipped(
                    r.reason
                        .clone()
                        .unwrap_or_else(|| "interval straddles the threshold".into()),
                ),
                Verdict::Improved | Verdict::NoChange => Outcome::Pass,
            };
            Case {
                class: r.group.clone(),
                name: r.figure.to_string(),
                outcome,
                output: text,
            }
        })
        .collect();
    Suite {
        name: format!("runq compare {} {}", rep.a, rep.b),
        time_s: 0.0,
        cases,
    }
}
