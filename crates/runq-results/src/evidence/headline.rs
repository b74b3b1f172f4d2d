//! The one line a FAIL starts with: the worst failed check, what it
//! measured against its bound, its cause as far as the run's figures
//! tell, whether load outside the run can account for it, and its
//! evidence (the trace file stays last, for scripts).

use runq_common::text::printable;
use runq_common::units::fmt_measure;
use runq_workload::CheckId;

use runq_workload::{CheckResult, Op, RunOutcome, Verdict};

use super::EvidenceReport;

/// The first line of a FAIL or an INDETERMINATE run on stderr: `runq:
/// FAIL <check> (<group>): measured ...: <detail>; cause: ...; outside
/// load: ...; next: ...; evidence: <file>`, one printable line (the
/// names in it escaped, [`printable`]). `None` when no check failed.
pub fn first_line(o: &RunOutcome, report: Option<&EvidenceReport>) -> Option<String> {
    let worst = worst(o)?;
    let mut text = line(o, worst);
    if o.verdict == Verdict::Indeterminate {
        text = text.replacen("FAIL", "INDETERMINATE", 1);
    }
    let mut line = format!("runq: {text}");
    if let Some(cause) = &worst.cause {
        for (label, part) in [
            ("cause", cause.mechanism.as_deref()),
            (
                "outside load",
                cause.outside_load.as_ref().map(|l| l.reason.as_str()),
            ),
            ("next", cause.next_step.as_deref()),
        ] {
            if let Some(p) = part {
                line.push_str(&format!("; {label}: {p}"));
            }
        }
    }
    let ev = report.and_then(|r| {
        r.checks
            .iter()
            .find(|e| e.check == worst.check.to_string() && e.group == worst.group)
    });
    let recorded = worst.cause.as_ref().and_then(|c| c.evidence.as_deref());
    if let Some(r) = recorded {
        line.push_str(&format!("; {r}"));
    }
    // The per-task recorder's evidence stands without the stream, and so
    // does a dead scheduler's: its exit and the kernel's words are in the
    // detail.
    let stands_alone = recorded.is_some() || worst.check == CheckId::SchedulerAlive;
    match ev {
        Some(e) => match &e.trace_file {
            Some(f) => line.push_str(&format!("; evidence: {f}")),
            None if stands_alone && report.is_some_and(|r| r.unavailable.is_some()) => {}
            None => line.push_str(&format!("; {}", e.summary)),
        },
        None if stands_alone => {}
        None => line.push_str("; no evidence recorded"),
    }
    Some(printable(&line).into_owned())
}

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

/// The worst failed check of `o` (the first of equals), if one failed. A
/// scheduler that died comes first: every other figure after its death
/// is the fallback scheduler's.
pub fn worst(o: &RunOutcome) -> Option<&CheckResult> {
    if let Some(dead) = o
        .checks
        .iter()
        .find(|c| !c.pass && c.check == CheckId::SchedulerAlive)
    {
        return Some(dead);
    }
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
    if c.check == CheckId::MaxGapMs {
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
        c.check,
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
