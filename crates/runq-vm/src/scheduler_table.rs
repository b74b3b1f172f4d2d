//! `runq compare MATRIX.json` on a matrix with a scheduler axis: for
//! each check of each scenario, which scheduler passes it, in how many
//! repeats, and the band its measured value spans over them; the cells'
//! verdicts counted per scheduler. The reference is the kernel's own
//! scheduler when the axis has it, else its first scheduler: a check
//! the reference passes in every repeat and another scheduler passes in
//! none is that scheduler's regression.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::matrix::KERNEL_SCHEDULER;
use crate::matrix_doc::{row_cell, CheckRow, Row};

/// The comparison of a matrix's schedulers.
#[derive(Debug, Clone, Serialize)]
pub struct SchedulerTable {
    /// The schedulers: the reference, then the others by name.
    pub schedulers: Vec<String>,
    /// The scheduler the others are held to.
    pub reference: String,
    /// Each scheduler's cells by verdict.
    pub totals: Vec<SchedulerTotals>,
    /// One line per check, group and cell less its scheduler.
    pub checks: Vec<CheckLine>,
}

/// One scheduler's cells by verdict.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SchedulerTotals {
    /// The scheduler.
    pub scheduler: String,
    /// Cells that passed.
    pub pass: u32,
    /// Cells that failed.
    pub fail: u32,
    /// Cells whose failures the outside load can explain.
    pub indeterminate: u32,
    /// Cells with no verdict (a boot or run error, a skip, interrupted).
    pub other: u32,
    /// Checks the reference passes in every repeat and this scheduler in
    /// none.
    pub regressed: u32,
}

/// One check of one scenario across the schedulers.
#[derive(Debug, Clone, Serialize)]
pub struct CheckLine {
    /// The cell's id less its scheduler (`scenario/topology[/kernel]`).
    pub cell: String,
    /// The check.
    pub check: String,
    /// The group it judges.
    pub group: String,
    /// How the value is held to the bound.
    pub op: String,
    /// The bound (the reference's, else the first scheduler's).
    pub bound: Option<f64>,
    /// Each scheduler's outcome, in [`SchedulerTable::schedulers`]'
    /// order (`None`: no outcome under it).
    pub under: Vec<Option<Outcome>>,
    /// Whether the schedulers disagree: one passes every repeat, another
    /// fails one or more.
    pub differs: bool,
}

/// One check under one scheduler: its tally and its band.
#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    /// Repeats that passed.
    pub passed: u32,
    /// Repeats judged.
    pub of: u32,
    /// The median of the measured values.
    pub median: Option<f64>,
    /// The smallest measured value.
    pub min: Option<f64>,
    /// The largest measured value.
    pub max: Option<f64>,
}

impl Outcome {
    fn of(c: &CheckRow) -> Self {
        let mut v: Vec<f64> = c
            .measured
            .iter()
            .copied()
            .filter(|x| x.is_finite())
            .collect();
        v.sort_by(f64::total_cmp);
        let median = (!v.is_empty()).then(|| {
            let mid = v.len() / 2;
            if v.len() % 2 == 1 {
                v[mid]
            } else {
                (v[mid - 1] + v[mid]) / 2.0
            }
        });
        Outcome {
            passed: c.passed,
            of: c.of,
            median,
            min: v.first().copied(),
            max: v.last().copied(),
        }
    }

    fn all_passed(&self) -> bool {
        self.of > 0 && self.passed == self.of
    }

    fn none_passed(&self) -> bool {
        self.of > 0 && self.passed == 0
    }
}

/// The table of `rows`; `None` when they have no scheduler axis.
pub fn scheduler_table(rows: &[Row]) -> Option<SchedulerTable> {
    let mut schedulers: Vec<String> = Vec::new();
    for s in rows.iter().filter_map(|r| r.scheduler.as_ref()) {
        if !schedulers.contains(s) {
            schedulers.push(s.clone());
        }
    }
    if schedulers.is_empty() {
        return None;
    }
    let reference = schedulers
        .iter()
        .find(|s| *s == KERNEL_SCHEDULER)
        .unwrap_or(&schedulers[0])
        .clone();
    // The same order from a matrix and from its merge (which sorts rows).
    schedulers.sort_by_key(|s| (*s != reference, s.clone()));
    let checks = check_lines(rows, &schedulers, &reference);
    let totals = totals(rows, &schedulers, &checks, &reference);
    Some(SchedulerTable {
        schedulers,
        reference,
        totals,
        checks,
    })
}

/// The id of a row's cell less its scheduler.
fn cell_less_scheduler(row: &Row) -> String {
    match row.cell.rsplit_once('@') {
        Some((cell, _)) if row.scheduler.is_some() => cell.to_string(),
        _ => row.cell.clone(),
    }
}

/// The check lines, in the order of the rows' cells and checks.
fn check_lines(rows: &[Row], schedulers: &[String], reference: &str) -> Vec<CheckLine> {
    let mut order: Vec<(String, String, String)> = Vec::new();
    let mut lines: BTreeMap<(String, String, String), CheckLine> = BTreeMap::new();
    for row in rows {
        let Some(at) = row
            .scheduler
            .as_ref()
            .and_then(|s| schedulers.iter().position(|x| x == s))
        else {
            continue;
        };
        let cell = cell_less_scheduler(row);
        for c in &row.checks {
            let key = (cell.clone(), c.check.clone(), c.group.clone());
            let line = lines.entry(key.clone()).or_insert_with(|| {
                order.push(key);
                CheckLine {
                    cell: cell.clone(),
                    check: c.check.clone(),
                    group: c.group.clone(),
                    op: c.op.clone(),
                    bound: c.bound,
                    under: vec![None; schedulers.len()],
                    differs: false,
                }
            });
            if schedulers[at] == reference {
                line.bound = c.bound;
            }
            line.under[at] = Some(Outcome::of(c));
        }
    }
    order
        .into_iter()
        .filter_map(|k| lines.remove(&k))
        .map(|mut l| {
            let seen = l.under.iter().flatten();
            let (any_pass, any_fail) = seen.fold((false, false), |(p, f), o| {
                (p || o.all_passed(), f || !o.all_passed())
            });
            l.differs = any_pass && any_fail;
            l
        })
        .collect()
}

/// Each scheduler's cells by verdict and its regressions against the
/// reference.
fn totals(
    rows: &[Row],
    schedulers: &[String],
    lines: &[CheckLine],
    reference: &str,
) -> Vec<SchedulerTotals> {
    let ref_at = schedulers.iter().position(|s| s == reference);
    schedulers
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let mut t = SchedulerTotals {
                scheduler: s.clone(),
                ..Default::default()
            };
            for r in rows.iter().filter(|r| r.scheduler.as_ref() == Some(s)) {
                match row_cell(r).as_str() {
                    "PASS" => t.pass += 1,
                    "FAIL" => t.fail += 1,
                    "INDETERMINATE" => t.indeterminate += 1,
                    _ => t.other += 1,
                }
            }
            t.regressed = lines
                .iter()
                .filter(|l| {
                    let reference = ref_at.and_then(|r| l.under[r].as_ref());
                    let here = l.under[i].as_ref();
                    reference.is_some_and(Outcome::all_passed)
                        && here.is_some_and(Outcome::none_passed)
                })
                .count() as u32;
            t
        })
        .collect()
}

/// The table as text: the verdicts per scheduler, then each check on
/// which the schedulers disagree (every check with `all`), a line per
/// scheduler with its tally and band.
pub fn render_scheduler_table(t: &SchedulerTable, all: bool) -> String {
    let width = t
        .schedulers
        .iter()
        .map(String::len)
        .max()
        .unwrap_or(9)
        .max(9);
    let mut out = format!(
        "{:<width$}  {:>5} {:>5} {:>5} {:>13} {:>5}  checks it fails that {} passes\n",
        "scheduler", "cells", "pass", "fail", "indeterminate", "other", t.reference
    );
    for s in &t.totals {
        let cells = s.pass + s.fail + s.indeterminate + s.other;
        out += &format!(
            "{:<width$}  {cells:>5} {:>5} {:>5} {:>13} {:>5}  {}\n",
            s.scheduler, s.pass, s.fail, s.indeterminate, s.other, s.regressed
        );
    }
    let shown: Vec<&CheckLine> = t.checks.iter().filter(|l| all || l.differs).collect();
    out += &format!(
        "\n{} of {} checks differ between the schedulers{}\n",
        t.checks.iter().filter(|l| l.differs).count(),
        t.checks.len(),
        if all { "; every check:" } else { ":" }
    );
    for l in shown {
        out += &check_block(l, &t.schedulers, width);
    }
    out
}

/// One check's block: its cell, check and bound, then a line per
/// scheduler.
fn check_block(l: &CheckLine, schedulers: &[String], width: usize) -> String {
    let bound = l.bound.map_or("-".to_string(), number);
    let mut out = format!("\n{}  {}[{}] {} {bound}\n", l.cell, l.check, l.group, l.op);
    for (s, o) in schedulers.iter().zip(&l.under) {
        let Some(o) = o else {
            out += &format!("  {s:<width$}  -\n");
            continue;
        };
        let word = if o.all_passed() { "pass" } else { "FAIL" };
        let band = match (o.min, o.max) {
            (Some(lo), Some(hi)) if lo < hi => format!(" ({}-{})", number(lo), number(hi)),
            _ => String::new(),
        };
        let median = o.median.map_or("-".to_string(), number);
        out += &format!(
            "  {s:<width$}  {word} {}/{}  {median}{band}\n",
            o.passed, o.of
        );
    }
    out
}

/// A figure with as many decimals as it needs (at most 2).
fn number(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{x:.0}")
    } else if x.abs() >= 100.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix_doc::tests::row;

    fn check(name: &str, passed: u32, of: u32, measured: &[f64]) -> CheckRow {
        CheckRow {
            check: name.into(),
            group: "g".into(),
            op: "<=".into(),
            bound: Some(100.0),
            passed,
            of,
            measured: measured.to_vec(),
        }
    }

    fn cell(sched: &str, verdict: &str, checks: Vec<CheckRow>) -> Row {
        let mut r = row(Some(verdict), Some(u8::from(verdict != "pass")), None);
        r.cell = format!("steady/1n4c1t@{sched}");
        r.scheduler = Some(sched.into());
        r.checks = checks;
        r
    }

    fn rows() -> Vec<Row> {
        vec![
            cell(
                "scx_qmap",
                "fail",
                vec![check("max_gap_ms", 0, 3, &[230.0, 190.0, 260.0])],
            ),
            cell(
                "kernel",
                "pass",
                vec![check("max_gap_ms", 3, 3, &[12.0, 10.0, 14.0])],
            ),
            cell(
                "scx_simple",
                "pass",
                vec![check("max_gap_ms", 3, 3, &[15.0])],
            ),
        ]
    }

    #[test]
    fn the_kernels_own_is_the_reference_and_a_check_it_passes_is_a_regression() {
        let t = scheduler_table(&rows()).unwrap();
        assert_eq!(t.schedulers, ["kernel", "scx_qmap", "scx_simple"]);
        assert_eq!(t.reference, "kernel");
        assert_eq!(t.checks.len(), 1, "one line for the three cells");
        let l = &t.checks[0];
        assert_eq!(l.cell, "steady/1n4c1t");
        assert!(l.differs);
        let qmap = l.under[1].as_ref().unwrap();
        assert_eq!(qmap.median, Some(230.0));
        assert_eq!((qmap.min, qmap.max), (Some(190.0), Some(260.0)));
        let regressed: Vec<u32> = t.totals.iter().map(|s| s.regressed).collect();
        assert_eq!(regressed, [0, 1, 0]);
        assert_eq!((t.totals[1].fail, t.totals[0].pass), (1, 1));
    }

    #[test]
    fn the_text_names_who_passes_with_the_band() {
        let text = render_scheduler_table(&scheduler_table(&rows()).unwrap(), false);
        assert!(
            text.contains("checks it fails that kernel passes"),
            "{text}"
        );
        assert!(
            text.contains("1 of 1 checks differ between the schedulers:"),
            "{text}"
        );
        assert!(
            text.contains("steady/1n4c1t  max_gap_ms[g] <= 100"),
            "{text}"
        );
        assert!(
            text.contains("scx_qmap    FAIL 0/3  230 (190-260)"),
            "{text}"
        );
        assert!(text.contains("kernel      pass 3/3  12 (10-14)"), "{text}");
        assert!(
            text.contains("scx_simple  pass 3/3  15\n"),
            "one value, no band: {text}"
        );
    }

    #[test]
    fn rows_without_a_scheduler_axis_make_no_table() {
        assert!(scheduler_table(&[row(Some("pass"), Some(0), None)]).is_none());
    }
}
