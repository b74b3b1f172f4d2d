//! The flight recorder's recording, examined: after a FAIL, the evidence
//! of each failed check read from the events the binary's recorder kept
//! ([`report`], its trace files written beside), the report of a FAIL
//! without a recording ([`unavailable`]), and the evidence section of the
//! text report ([`with_report`]). The binary only starts and stops the
//! recorder.

use runq_workload::PointsAt;
use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use runq_common::safefile::{write_atomic, Replace};
use runq_common::text::printable;
use runq_kernel::sched_trace::{Recording, SchedEvent, EVENTS};
use runq_workload::RunOutcome;

use super::ctprof::{CtprofEvidence, Subject};
use super::window::Names;
use super::{Evidence, EvidenceReport};

/// What the binary knows of the recording besides its events.
pub struct Flown<'a> {
    /// The CPUs it recorded.
    pub cpus: &'a [u32],
    /// The run's start on the recording's clock (CLOCK_MONOTONIC), ns.
    pub base_ns: u64,
    /// runq's own threads (the sampler, the host monitor, the main thread).
    pub own: &'a HashSet<i32>,
}

/// The evidence of each failed check of `o` in `recording` (the trace
/// files written to `<prefix>-<check>-<group>.json`), with `ctprof`'s
/// compare of the threads each names.
pub fn report(
    o: &RunOutcome,
    recording: &Recording,
    flown: &Flown,
    prefix: &Path,
    ctprof: &dyn Fn(&[Subject]) -> Option<CtprofEvidence>,
) -> EvidenceReport {
    let events = &recording.events;
    let base = flown.base_ns;
    let mut report = EvidenceReport {
        source: Some(format!(
            "tracefs instance: {} on CPUs {}",
            EVENTS.join(", "),
            cpu_words(flown.cpus)
        )),
        events: events.len() as u64,
        events_written: recording.written,
        ..EvidenceReport::default()
    };
    let s = |ns: u64| (ns as f64 - base as f64) / 1e9;
    if let (Some(a), Some(b)) = (events.first(), events.last()) {
        report.recorded_s = Some([s(a.ts_ns()), s(b.ts_ns())]);
        report.frozen_s = recording.frozen.then(|| s(b.ts_ns()));
    }
    let frozen = recording
        .frozen
        .then(|| events.last().map(|e| e.ts_ns()))
        .flatten();
    report.checks = examine_all(
        o,
        (events, base, frozen),
        flown.own,
        &recording.wrapped_from_ns,
        prefix,
        ctprof,
    );
    if let Some(t) = report.frozen_s {
        note_after_freeze(&mut report.checks, t);
    }
    report
}

/// Each failed check's evidence in `events` (the recording froze at
/// `frozen`, absolute ns, when the trigger stopped it), its trace written to
/// `<prefix>-<check>-<group>.json` (checks that point at the same moment
/// share one file).
fn examine_all(
    o: &RunOutcome,
    (events, base, frozen): (&[SchedEvent], u64, Option<u64>),
    own: &HashSet<i32>,
    wrapped: &BTreeMap<u32, u64>,
    prefix: &Path,
    ctprof: &dyn Fn(&[Subject]) -> Option<CtprofEvidence>,
) -> Vec<Evidence> {
    let group_of = |tid: i32| super::group_of(o, tid);
    let is_runq = |tid: i32| own.contains(&tid);
    let names = Names {
        group_of: &group_of,
        is_runq: &is_runq,
        wrapped,
    };
    let moments = super::moments(o);
    let mut written: Vec<(super::MomentKey, String)> = Vec::new();
    let mut out = Vec::new();
    for c in o.checks.iter().filter(|c| !c.pass) {
        let moment = moments
            .iter()
            .find(|m| m.check == c.check && m.group == c.group);
        // A moment after the recording froze: the one it holds instead.
        let held = moment
            .filter(|m| frozen.is_some_and(|end| base + m.from_ns > end))
            .and_then(|m| super::before_freeze(o, m, events, base));
        let found = match held.as_ref().or(moment) {
            Some(m) => Some(super::examine(events, base, m, &names)),
            None if c.check.points_at() == PointsAt::WorstWakeups => {
                super::examine_wakes(o, c, events, base, &names)
            }
            None => super::examine_series(o, c, events, base, &names),
        };
        let Some(found) = found else {
            out.push(super::without_moment(c));
            continue;
        };
        let mut ev = found.evidence;
        if let Some(w) = written.iter().find(|w| w.0 == found.key) {
            ev.trace_file = Some(w.1.clone());
        } else if let Some(trace) = found.trace {
            let file = format!(
                "{}-{}-{}.json",
                prefix.display(),
                file_word(&c.check.to_string()),
                file_word(&c.group)
            );
            match write_atomic(
                Path::new(&file),
                trace.to_string().as_bytes(),
                Replace::OwnFile,
            ) {
                Ok(()) => {
                    written.push((found.key, file.clone()));
                    ev.trace_file = Some(file);
                }
                Err(e) => ev
                    .summary
                    .push_str(&format!(" (the trace could not be written to {file}: {e})")),
            }
        }
        ev.ctprof = ctprof(&found.subjects);
        out.push(ev);
    }
    out
}

/// Tells each check whose window starts after the recording froze (at
/// `t`, s) why the recording shows nothing of it.
fn note_after_freeze(checks: &mut [Evidence], t: f64) {
    for e in checks {
        if e.window_s.is_some_and(|[a, _]| a > t) {
            e.summary.push_str(&format!(
                " (the recording froze at {t:.2} s, at an earlier gap or stall past its \
                 bound; --no-freeze records to the end)"
            ));
        }
    }
}

/// `name` with anything but letters, digits, `-` and `_` as `_` (a check
/// `stall(work_units)`, a group `a/b`).
fn file_word(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// `0, 1, 2`.
fn cpu_words(cpus: &[u32]) -> String {
    let list: Vec<String> = cpus.iter().map(u32::to_string).collect();
    list.join(", ")
}

/// The report of a FAIL without a recording: every failed check of `o`
/// says why (`why`).
pub fn unavailable(o: &RunOutcome, why: String) -> EvidenceReport {
    let mut report = EvidenceReport::default();
    for c in o.checks.iter().filter(|c| !c.pass) {
        let mut e = super::without_moment(c);
        e.summary = format!("no evidence: {why}");
        report.checks.push(e);
    }
    report.unavailable = Some(why);
    report
}

/// The text report with the evidence section just above its verdict line
/// (which stays last, for `| tail -1`). A report without a recording gets
/// none: the first line on stderr says why.
pub fn with_report(mut text: String, r: Option<&EvidenceReport>) -> String {
    let Some(r) = r.filter(|r| r.unavailable.is_none()) else {
        return text;
    };
    let at = text.rfind("verdict: ").unwrap_or(text.len());
    text.insert_str(at, &render(r));
    text
}

/// The evidence section of the text report (the tasks it names, by their
/// comm, through [`printable`]).
fn render(r: &EvidenceReport) -> String {
    let mut out = String::from("evidence");
    if let (Some(src), Some([a, b])) = (&r.source, r.recorded_s) {
        out.push_str(&format!(
            " ({src}; {} events kept of {} written, {a:.2} s to {b:.2} s)",
            r.events, r.events_written
        ));
    }
    out.push_str(":\n");
    if let Some(t) = r.frozen_s {
        out.push_str(&format!(
            "  the recording froze at {t:.2} s, when a worker's gap passed max_gap_ms \
             or a group's counter stalled past its stall check (--no-freeze records \
             to the end)\n"
        ));
    }
    for e in &r.checks {
        out.push_str(&format!(
            "  {} {}: {}\n",
            printable(&e.check),
            printable(&e.group),
            printable(&e.summary)
        ));
        if let Some(c) = &e.ctprof {
            out.push_str(&c.lines("    "));
        }
        if let Some(f) = &e.trace_file {
            out.push_str(&format!("    trace: {}\n", printable(f)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_section_goes_above_the_verdict() {
        let report = EvidenceReport {
            checks: vec![Evidence {
                check: "max_gap_ms".into(),
                group: "g".into(),
                summary: "worker 1 (g) waited".into(),
                window_s: None,
                trace_file: Some("/tmp/t.json".into()),
                ctprof: None,
            }],
            ..EvidenceReport::default()
        };
        let text = with_report("FAIL x\nverdict: FAIL\n".into(), Some(&report));
        assert_eq!(
            text,
            "FAIL x\nevidence:\n  max_gap_ms g: worker 1 (g) waited\n    trace: /tmp/t.json\nverdict: FAIL\n"
        );
        let off = EvidenceReport {
            unavailable: Some("off".into()),
            ..report
        };
        assert_eq!(
            with_report("verdict: FAIL\n".into(), Some(&off)),
            "verdict: FAIL\n"
        );
    }

    #[test]
    fn file_words_keep_only_safe_characters() {
        assert_eq!(file_word("stall(work_units)"), "stall_work_units_");
        assert_eq!(file_word("a/b-c_d"), "a_b-c_d");
        assert_eq!(cpu_words(&[0, 1, 2]), "0, 1, 2");
    }
}
