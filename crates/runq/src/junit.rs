//! JUnit XML for CI systems: `runq run --junit` (one testcase per group and
//! check), `runq compare --junit` (one per group and figure), and
//! `--vm-matrix` and `runq report merge` (one per cell).

use runq_workload::CheckId;
use std::fmt::Write;
use std::path::Path;
use std::time::Duration;

use runq_common::safefile::{write_atomic, Replace};

use anyhow::Context;

use runq_results::results::RunDocument;
use runq_vm::matrix_doc::{row_cell, MissingCell, Row};

/// How a testcase ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Passed.
    Pass,
    /// Failed, with a one-line message and details.
    Failure {
        /// The short message (an attribute).
        message: String,
        /// Longer text (the element body).
        detail: String,
    },
    /// Neither passed nor failed (e.g. an inconclusive comparison).
    Skipped(String),
}

/// One testcase.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    /// `classname`: the group.
    pub class: String,
    /// `name`: the check or figure.
    pub name: String,
    /// How it ended.
    pub outcome: Outcome,
    /// Text for `<system-out>` (measured values), may be empty.
    pub output: String,
}

/// One testsuite (runq writes one per file).
#[derive(Debug, Clone, PartialEq)]
pub struct Suite {
    /// The suite's name.
    pub name: String,
    /// Total time, seconds.
    pub time_s: f64,
    /// The testcases.
    pub cases: Vec<Case>,
}

/// Escapes text for an XML attribute or element body.
fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // Control characters other than tab/newline are not valid XML 1.0.
            c if (c as u32) < 0x20 && c != '\t' && c != '\n' && c != '\r' => out.push('?'),
            c => out.push(c),
        }
    }
    out
}

/// Renders the suite as a JUnit XML document.
pub fn render(suite: &Suite) -> String {
    let count = |f: fn(&Outcome) -> bool| suite.cases.iter().filter(|c| f(&c.outcome)).count();
    let failures = count(|o| matches!(o, Outcome::Failure { .. }));
    let skipped = count(|o| matches!(o, Outcome::Skipped(_)));
    let mut x = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let head = format!(
        "name=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\" time=\"{:.3}\"",
        esc(&suite.name),
        suite.cases.len(),
        suite.time_s
    );
    let _ = writeln!(x, "<testsuites {head}>");
    let _ = writeln!(x, "  <testsuite {head}>");
    for c in &suite.cases {
        let _ = write!(
            x,
            "    <testcase classname=\"{}\" name=\"{}\" time=\"0\">",
            esc(&c.class),
            esc(&c.name)
        );
        match &c.outcome {
            Outcome::Pass => {}
            Outcome::Failure { message, detail } => {
                let _ = write!(
                    x,
                    "\n      <failure message=\"{}\" type=\"runq\">{}</failure>",
                    esc(message),
                    esc(detail)
                );
            }
            Outcome::Skipped(why) => {
                let _ = write!(x, "\n      <skipped message=\"{}\"/>", esc(why));
            }
        }
        if !c.output.is_empty() {
            let _ = write!(x, "\n      <system-out>{}</system-out>", esc(&c.output));
        }
        if c.outcome != Outcome::Pass || !c.output.is_empty() {
            x.push_str("\n    ");
        }
        x.push_str("</testcase>\n");
    }
    x.push_str("  </testsuite>\n</testsuites>\n");
    x
}

/// Writes the suite to `path`.
pub fn write(suite: &Suite, path: &Path) -> anyhow::Result<()> {
    let text = render(suite);
    write_atomic(path, text.as_bytes(), Replace::OwnFile)
        .with_context(|| format!("--junit: writing {}", path.display()))
}

/// Each repeat's scheduler death: status, stderr excerpt, kernel lines.
fn scheduler_deaths(doc: &RunDocument) -> String {
    let mut text = String::new();
    for (n, d) in doc
        .repeats
        .iter()
        .filter_map(|r| r.scheduler_death.as_ref().map(|d| (r.repeat, d)))
    {
        let _ = write!(text, "\nrepeat {n}: {}", d.summary());
        for l in &d.stderr {
            let _ = write!(text, "\n  stderr: {l}");
        }
        for l in &d.kernel_log {
            let _ = write!(text, "\n  kernel: {l}");
        }
    }
    text
}

/// The testcases of a run: one per group and check; a check fails when it
/// failed in any repeat.
pub fn from_run(doc: &RunDocument) -> Suite {
    let o = &doc.last;
    let cases: Vec<Case> = o
        .checks
        .iter()
        .map(|c| {
            let key = format!("{}: {}", c.group, c.check);
            let failed_in: Vec<String> = doc
                .repeats
                .iter()
                .filter(|r| r.failed_checks.contains(&key))
                .map(|r| r.repeat.to_string())
                .collect();
            let mut measured =
                format!("measured {} {} {} (last repeat)", c.measured, c.op, c.bound);
            if c.check == CheckId::SchedulerAlive {
                measured.push_str(&scheduler_deaths(doc));
            }
            let first_death = doc.repeats.iter().find_map(|r| r.scheduler_death.as_ref());
            let why = match first_death {
                Some(d) if c.check == CheckId::SchedulerAlive => format!(": {}", d.summary()),
                _ => String::new(),
            };
            let outcome = if failed_in.is_empty() {
                Outcome::Pass
            } else {
                Outcome::Failure {
                    message: format!(
                        "{} failed in repeat(s) {} of {}{why}",
                        c.check,
                        failed_in.join(", "),
                        doc.repeats.len()
                    ),
                    detail: measured.clone(),
                }
            };
            Case {
                class: c.group.clone(),
                name: c.check.to_string(),
                outcome,
                output: measured,
            }
        })
        .collect();
    Suite {
        name: format!("runq run {}", o.scenario),
        time_s: o.run_ns as f64 / 1e9 * doc.repeats.len() as f64,
        cases,
    }
}

/// One testcase per cell (class `vm-matrix`, name the cell's id); a
/// missing cell fails.
pub fn from_matrix(name: String, rows: &[Row], missing: &[MissingCell], took: Duration) -> Suite {
    let mut cases: Vec<Case> = rows
        .iter()
        .map(|r| {
            let outcome = match row_cell(r).as_str() {
                "PASS" => Outcome::Pass,
                "SKIP" => Outcome::Skipped(r.error.clone().unwrap_or_default()),
                _ => Outcome::Failure {
                    message: r.error.clone().unwrap_or_else(|| r.failed_checks.join(" ")),
                    detail: r.failed_checks.join("\n"),
                },
            };
            let output = r.vm.as_ref().map(|v| {
                let accel = v["accel"].as_str().unwrap_or("?");
                format!("{accel} boot {} ms", v["boot_ms"].as_u64().unwrap_or(0))
            });
            Case {
                class: "vm-matrix".into(),
                name: r.cell.clone(),
                outcome,
                output: output.unwrap_or_default(),
            }
        })
        .collect();
    cases.extend(missing.iter().map(|m| Case {
        class: "vm-matrix".into(),
        name: m.cell.clone(),
        outcome: Outcome::Failure {
            message: format!("not run: {}", m.why),
            detail: String::new(),
        },
        output: String::new(),
    }));
    Suite {
        name,
        time_s: took.as_secs_f64(),
        cases,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A row of the cell `steady/2n2c2t`.
    fn row(verdict: Option<&str>, rc: Option<u8>, error: Option<&str>) -> Row {
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
    fn one_testcase_per_cell_and_missing_cells_fail() {
        let missing = [MissingCell {
            cell: "steady/1n2c1t".into(),
            why: "shard 2/2 is missing".into(),
        }];
        let s = from_matrix(
            "m".into(),
            &[
                row(Some("pass"), Some(0), None),
                row(None, None, Some("did not boot")),
            ],
            &missing,
            Duration::from_secs(1),
        );
        assert_eq!(s.cases.len(), 3);
        assert_eq!(s.cases[0].outcome, Outcome::Pass);
        assert_eq!(s.cases[0].name, "steady/2n2c2t");
        assert!(
            matches!(&s.cases[1].outcome, Outcome::Failure { message, .. } if message == "did not boot")
        );
        assert!(
            matches!(&s.cases[2].outcome, Outcome::Failure { message, .. } if message == "not run: shard 2/2 is missing")
        );
    }

    #[test]
    fn escapes_and_counts() {
        let suite = Suite {
            name: "a<b>".into(),
            time_s: 1.5,
            cases: vec![
                Case {
                    class: "g".into(),
                    name: "ok".into(),
                    outcome: Outcome::Pass,
                    output: String::new(),
                },
                Case {
                    class: "g".into(),
                    name: "x&y".into(),
                    outcome: Outcome::Failure {
                        message: "\"bad\"".into(),
                        detail: "1 < 2".into(),
                    },
                    output: "o".into(),
                },
                Case {
                    class: "g".into(),
                    name: "s".into(),
                    outcome: Outcome::Skipped("why".into()),
                    output: String::new(),
                },
            ],
        };
        let x = render(&suite);
        assert!(x.contains("name=\"a&lt;b&gt;\" tests=\"3\" failures=\"1\""));
        assert!(x.contains("skipped=\"1\""));
        assert!(x.contains("name=\"x&amp;y\""));
        assert!(x.contains("<failure message=\"&quot;bad&quot;\" type=\"runq\">1 &lt; 2</failure>"));
        assert!(x.contains("<testcase classname=\"g\" name=\"ok\" time=\"0\"></testcase>"));
    }
}
