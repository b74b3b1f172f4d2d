//! The one line a FAIL starts with: the worst failed check, what it
//! measured against its bound, and (added by the caller) its evidence.

use runq_common::units::fmt_measure;

use runq_workload::RunOutcome;
use runq_workload::{CheckResult, Op};

/// How far past its bound a failed check is (1.0: at the bound). A check
/// that measured nothing against an `at least` bound is infinitely far.
pub fn severity(c: &CheckResult) -> f64 {
    let (m, b) = (c.measured.abs(), c.bound.abs());
    match c.op {
        Op::AtMost if b > 0.0 => m / b,
        Op::AtMost => f64::INFINITY,
        Op::AtLeast if m > 0.0 => b / m,
        Op::AtLeast => f64::INFINITY,
    }
}

/// The worst failed check of `o` (the first of equals), if one failed.
pub fn worst(o: &RunOutcome) -> Option<&CheckResult> {
    let mut worst: Option<&CheckResult> = None;
    for c in o.checks.iter().filter(|c| !c.pass) {
        if worst.is_none_or(|w| severity(c) > severity(w)) {
            worst = Some(c);
        }
    }
    worst
}

/// The line for `c` (without the `runq: ` prefix and the evidence):
/// `FAIL max_gap_ms: worker 24571 (spinners) waited 3012 ms runnable
/// without a CPU (bound 2000 ms)`.
pub fn line(o: &RunOutcome, c: &CheckResult) -> String {
    let bound = fmt_measure(c.bound);
    if c.name == "max_gap_ms" {
        let idx = o
            .groups
            .iter()
            .find(|g| g.name == c.group)
            .map(|g| g.group_idx);
        let worker = o
            .reports
            .iter()
            .filter(|r| Some(r.group_idx) == idx && r.exit_info.is_none())
            .max_by_key(|r| r.max_gap_ms);
        if let Some(w) = worker {
            return format!(
                "FAIL max_gap_ms: worker {} ({}) waited {} ms runnable without a CPU on CPU {} \
                 at {:.2} s (bound {bound} ms)",
                w.tid,
                c.group,
                w.max_gap_ms,
                w.max_gap_cpu,
                w.max_gap_at_ms as f64 / 1000.0
            );
        }
    }
    let mut s = format!(
        "FAIL {} ({}): measured {} (bound {} {bound})",
        c.name,
        c.group,
        fmt_measure(c.measured),
        c.op
    );
    if let Some(d) = &c.detail {
        s.push_str(": ");
        s.push_str(&first_clause(d));
    }
    s
}

/// The detail up to its first `;` or ` (`, at most 160 characters.
fn first_clause(d: &str) -> String {
    let end = [d.find("; "), d.find(" (")]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(d.len());
    let clause = &d[..end];
    if clause.chars().count() > 160 {
        let cut: String = clause.chars().take(157).collect();
        format!("{cut}...")
    } else {
        clause.to_string()
    }
}
