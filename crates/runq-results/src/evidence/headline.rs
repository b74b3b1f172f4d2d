//! The lines a FAIL starts with on stderr. The first is one short line
//! (verdict, the worst failed check, what it measured against its bound,
//! its cause in a clause); the cause's detail, whether load outside the
//! run can account for it, the next step, the recorder's account and the
//! evidence follow, one indented line each (the trace file last, for
//! scripts). The engine gives facts ([`runq_workload::Cause`]); the
//! sentences are written here.

use runq_common::text::printable;
use runq_common::units::fmt_measure;
use runq_common::units::fmt_ms_grouped as ms;

use runq_workload::{
    worker_pointed_at, CheckId, CheckResult, HeldBy, Op, RunOutcome, Verdict, WorkerReport,
};

use super::EvidenceReport;
use crate::render::detail_of;

/// The longest first line, in characters: longer ones are cut at a
/// character boundary and end in `...` (the whole cause follows below).
pub const FIRST_LINE_MAX: usize = 160;

/// The lines of a FAIL or an INDETERMINATE run on stderr, joined by
/// newlines: `runq: FAIL <check> (<group>): measured ... (bound ...):
/// <clause>`, then `  cause: ...`, `  outside load: ...`, `  next: ...`,
/// the recorder's account and `  evidence: <file>`, each one printable
/// line (names escaped, [`printable`]). `None` when no check failed.
pub fn first_lines(o: &RunOutcome, report: Option<&EvidenceReport>) -> Option<String> {
    let worst = worst(o)?;
    let mut lines = vec![printable(&first_line(o, worst)).into_owned()];
    let held = worst.cause.as_ref().is_some_and(|k| k.held_by.is_some());
    // The first line gives the holder in place of the detail's clause.
    let detail = detail_of(worst).filter(|_| held);
    lines.extend(
        detail
            .into_iter()
            .chain(cause_lines(worst))
            .chain(scheduler_state_line(o, worst).or_else(|| evidence_line(worst, report)))
            .map(|l| format!("  {}", printable(&l))),
    );
    Some(lines.join("\n"))
}

/// The first line for the worst failed check `c`: the verdict, the check,
/// its figure and the cause in a clause, at most [`FIRST_LINE_MAX`]
/// characters.
fn first_line(o: &RunOutcome, c: &CheckResult) -> String {
    let cause = c.cause.as_ref();
    let mechanism = || {
        let m = crate::render::mechanism_sentence(cause?.mechanism.first()?);
        Some(first_clause(&m).split(": ").next()?.to_string())
    };
    // A gap's line names its worker, wait and CPU itself: its detail
    // would say them again.
    let worker_named = gap_worker(o, c).is_some();
    let held = cause.and_then(|k| k.held_by.as_ref());
    let clause = held.map(|h| held_clause(h, worker_named)).or_else(|| {
        (!worker_named)
            .then(|| detail_of(c).as_deref().map(first_clause))
            .flatten()
            .or_else(mechanism)
    });
    let mut text = head(o, c, clause);
    if o.verdict == Verdict::Indeterminate {
        text = text.replacen("FAIL", "INDETERMINATE", 1);
    }
    cut(&format!("runq: {text}"), FIRST_LINE_MAX)
}

/// `sh[4242] (outside) held worker 3151's CPU 912 of 951 ms`, or
/// `... held it 912 of 951 ms` where the line names the worker and its CPU
/// already.
fn held_clause(h: &HeldBy, worker_named: bool) -> String {
    let what = if worker_named {
        "it".to_string()
    } else {
        format!("worker {}'s CPU", h.worker)
    };
    let held = ms(h.held_ns);
    format!(
        "{}[{}] ({}) held {what} {} of {}",
        h.comm,
        h.pid,
        h.whose,
        held.trim_end_matches(" ms"),
        ms(h.wait_ns)
    )
}

/// The cause's lines: its mechanism, the judgement on outside load, the
/// next step, and the recorder's account or why there was none.
fn cause_lines(c: &CheckResult) -> Vec<String> {
    let Some(cause) = &c.cause else {
        return Vec::new();
    };
    let mut lines = Vec::new();
    let mechanism = crate::render::mechanisms_sentence(&cause.mechanism);
    let load = cause
        .outside_load
        .as_ref()
        .map(|l| crate::render::outside_load_sentence(l, &c.check));
    let next = cause
        .next_step
        .as_ref()
        .map(crate::render::next_step_sentence);
    for (label, part) in [
        ("cause", mechanism.as_deref()),
        ("outside load", load.as_deref()),
        ("next", next.as_deref()),
    ] {
        if let Some(p) = part {
            lines.push(format!("{label}: {p}"));
        }
    }
    if let Some(acc) = &cause.recorder {
        lines.push(crate::render::recorder_sentence(acc));
    }
    if let Some(why) = &cause.no_recorder {
        lines.push(no_recorder(why));
    }
    lines
}

/// The sentence for a cause without a recorder.
pub fn no_recorder(why: &str) -> String {
    format!("no recorder ({why}): the cause is what /proc and schedstat tell")
}

/// The evidence's line: its trace file, or why there is none. The
/// per-task recorder's account stands without the stream, and so does a
/// dead scheduler's (its exit and the kernel's words are in the detail),
/// so they ask for no recording.
fn evidence_line(c: &CheckResult, report: Option<&EvidenceReport>) -> Option<String> {
    let ev = report.and_then(|r| {
        r.checks
            .iter()
            .find(|e| e.check == c.check.to_string() && e.group == c.group)
    });
    let recorded = c.cause.as_ref().is_some_and(|k| k.recorder.is_some());
    let stands_alone = recorded || c.check == CheckId::SchedulerAlive;
    let no_recording = report.is_some_and(|r| r.unavailable.is_some());
    match ev {
        Some(e) => match &e.trace_file {
            Some(f) => Some(format!("evidence: {f}")),
            None if stands_alone && no_recording => None,
            None => Some(e.summary.clone()),
        },
        None if stands_alone => None,
        None => Some("no evidence recorded".into()),
    }
}

/// A dead or let-go scheduler's evidence: the file of its state at the
/// end (the kernel's dump and its BPF maps), when one was written.
fn scheduler_state_line(o: &RunOutcome, c: &CheckResult) -> Option<String> {
    if c.check != CheckId::SchedulerAlive {
        return None;
    }
    let dumps = &o.scheduler.as_ref()?.state_dumps;
    let file = dumps.iter().rev().find_map(|d| d.file.as_ref())?;
    Some(format!(
        "evidence: {} (the scheduler's state)",
        file.display()
    ))
}

/// `text` cut to at most `max` characters, ending in `...` when cut.
fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let kept: String = text.chars().take(max.saturating_sub(3)).collect();
    format!("{}...", kept.trim_end())
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
/// `FAIL max_gap_ms: worker 24571 (spinners) waited 3012 ms for CPU 0 at
/// 1.20 s (bound 2000 ms)` (a runnable wait), or the check's figure and its
/// detail's first clause.
pub fn line(o: &RunOutcome, c: &CheckResult) -> String {
    let clause = gap_worker(o, c)
        .is_none()
        .then(|| detail_of(c).as_deref().map(first_clause))
        .flatten();
    head(o, c, clause)
}

/// The check's figure against its bound, and `clause` after it (a gap's
/// line gives its worker's wait instead of the figure).
fn head(o: &RunOutcome, c: &CheckResult, clause: Option<String>) -> String {
    let bound = fmt_measure(c.bound);
    let mut s = match gap_worker(o, c) {
        Some(w) => format!(
            "FAIL max_gap_ms: worker {} ({}) waited {} ms for CPU {} at {:.2} s (bound {bound} \
             ms)",
            w.tid,
            c.group,
            w.max_gap_ms,
            w.max_gap_cpu,
            w.max_gap_at_ms as f64 / 1000.0
        ),
        None => format!(
            "FAIL {} ({}): measured {} (bound {} {bound})",
            c.check,
            c.group,
            fmt_measure(c.measured),
            c.op
        ),
    };
    if let Some(clause) = clause {
        s.push_str(": ");
        s.push_str(&clause);
    }
    s
}

/// For a failed `max_gap_ms`, the worker it points at.
fn gap_worker<'o>(o: &'o RunOutcome, c: &CheckResult) -> Option<&'o WorkerReport> {
    if c.check != CheckId::MaxGapMs {
        return None;
    }
    let idx = o.groups.iter().find(|g| g.name == c.group)?.group_idx;
    let mine: Vec<&WorkerReport> = o.reports.iter().filter(|r| r.group_idx == idx).collect();
    worker_pointed_at(c.check, &mine)
}

/// A text up to its first `;` or ` (`.
fn first_clause(d: &str) -> String {
    let end = [d.find("; "), d.find(" (")]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(d.len());
    d[..end].to_string()
}
