//! `runq compare A.json B.json`: did B regress against A? The comparison
//! itself (medians over repeats, rank-test intervals, verdicts) is
//! [`runq_results::compare`]'s and its text [`runq_results::render`]'s;
//! this module parses the arguments and prints the result as text, JSON
//! or JUnit. `runq compare MATRIX.json` on a matrix with a scheduler
//! axis sets its schedulers side by side (`schedulers`).

mod schedulers;

use std::path::PathBuf;
use std::process::ExitCode;

use runq_results::compare::{self, Better, Comparison, Verdict};
use runq_results::render::{ci_text, pct_text, value_text};

use crate::exit;
use crate::junit::{Case, Outcome, Suite};

/// Arguments of `runq compare`.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
Exit status: 0 nothing regressed, 1 something regressed, 2 bad input.
With one matrix document: 1 when a scheduler fails, in every repeat, a
check the reference (the kernel's own, else the first) passes in every
repeat.

Examples:
  runq run --work-type PipeIo --duration 1s --repeat 5 --output a.json
  runq run --work-type PipeIo --duration 1s --repeat 5 --output b.json
  runq compare a.json b.json --threshold-pct 10 --junit compare.xml
  runq run catalog --vm-matrix --kernel DIR --topology 1n4c1t --repeat 3 \\
    --scheduler kernel --scheduler DIR/scx/scx_simple -o matrix.json
  runq compare matrix.json")]
pub struct CompareArgs {
    /// The baseline (`runq run --output`), or alone, a matrix document
    /// with a scheduler axis (`runq run --vm-matrix --scheduler A
    /// --scheduler B`, or `runq report merge`'s).
    #[arg(value_name = "A.json")]
    pub a: PathBuf,
    /// The candidate.
    #[arg(value_name = "B.json")]
    pub b: Option<PathBuf>,
    /// With a matrix document, list every check, not only those on which
    /// the schedulers disagree.
    #[arg(long)]
    pub every_check: bool,
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
    let Some(b_path) = &args.b else {
        return schedulers::execute(&args);
    };
    if args.every_check {
        return Err(exit::usage(
            "--every-check lists a matrix's checks: give one matrix document, not two runs",
        ));
    }
    let a = compare::read_saved_run(&args.a)?;
    let b = compare::read_saved_run(b_path)?;
    let differences = compare::differences(&a, &b);
    for m in &differences.mismatches {
        crate::errln!("runq: {m}; every verdict is inconclusive");
    }
    let report = Comparison::new(&a, &b, args.threshold, differences)?;
    if args.json {
        crate::outln!("{}", runq_common::json::to_pretty(&report)?);
    } else {
        crate::out!("{}", runq_results::render::comparison(&report));
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

/// One testcase per group and figure.
fn junit(rep: &Comparison) -> Suite {
    let cases = rep
        .rows
        .iter()
        .map(|r| {
            let text = format!(
                "A median {}, B median {}, diff {}, 95% CI {} ({} better)",
                value_text(r.median_a, r.unit),
                value_text(r.median_b, r.unit),
                pct_text(r.diff_pct),
                ci_text(r),
                if r.better == Better::Higher {
                    "higher"
                } else {
                    "lower"
                }
            );
            let outcome = match r.verdict {
                Verdict::Regressed => Outcome::Failure {
                    message: format!("{} regressed ({})", r.figure, pct_text(r.diff_pct)),
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
