//! The run's flight recorder (runq-kernel's `sched_trace`: a tracefs
//! instance of its own recording the scheduler events of the run's CPUs
//! into a fixed buffer per CPU) and, after a FAIL, the evidence of each
//! failed check read from it (runq-results' `evidence`): a sentence in
//! the report and a Chrome/Perfetto trace file per check.

use std::collections::{BTreeSet, HashSet};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::Duration;

use runq_common::safefile::{write_atomic, Replace};
use runq_kernel::sched_trace::{Recorder, EVENTS};
use runq_results::evidence::ctprof::{CtprofEvidence, Subject};
use runq_results::evidence::{self, window::Names, Evidence, EvidenceReport};
use runq_workload::{Freeze, RunOutcome, Scenario, Verdict};

use crate::cmd::ctprof::run_hook::Recorder as CtprofHook;

/// One run's recorder, or why there is none, and the run's start on its
/// clock (CLOCK_MONOTONIC, ns), learnt from the first tick.
pub struct Flight {
    /// The recorder's `tracing_on`, held open for the workers' freeze;
    /// closed before the recorder goes (its instance cannot be removed
    /// while a file in it is open), hence first.
    trigger: Option<std::fs::File>,
    /// The recorder and the CPUs it records, or why there is none.
    recorder: Result<(Recorder, Vec<u32>), String>,
    base_ns: Option<u64>,
    own: HashSet<i32>,
}

impl Flight {
    /// Starts recording into `mib_per_cpu` MiB per CPU, when given, on
    /// the CPUs `pinned` (the workers' when every group is pinned:
    /// [`Scenario::pinned_cpus`]) or on every online CPU; otherwise notes
    /// why not.
    pub fn start(mib_per_cpu: Option<u32>, pinned: Option<BTreeSet<usize>>) -> Flight {
        let recorder = match mib_per_cpu {
            Some(mib) => {
                let cpus = pinned
                    .unwrap_or_else(|| runq_kernel::cpulist::online_cpus().into_iter().collect());
                let cpus: Vec<u32> = cpus.iter().filter_map(|&c| u32::try_from(c).ok()).collect();
                Recorder::start(&cpus, u64::from(mib) * 1024)
                    .map(|r| (r, cpus))
                    .map_err(|e| e.to_string())
            }
            None => Err(
                "the flight recorder is off (pass --flight-recorder to record the \
                 scheduler's events; about 0.45 µs each)"
                    .into(),
            ),
        };
        Flight {
            trigger: None,
            recorder,
            base_ns: None,
            own: HashSet::new(),
        }
    }

    /// The stop-on-threshold trigger for `scn`'s run, when the recorder
    /// runs, `on`, and the scenario bounds gaps or stalls: the first gap
    /// beyond `max_gap_ms`, or the first stall past a `stall` check's
    /// bound, freezes the recording.
    pub fn freeze(&mut self, scn: &Scenario, on: bool) -> Option<Freeze> {
        let gap_ms = scn.checks.gap_bound_ms();
        let stalls = scn
            .groups
            .iter()
            .flat_map(|g| &g.series_checks)
            .any(|c| matches!(c.kind, runq_workload::series::SeriesKind::Stall { .. }));
        if !on || (gap_ms.is_none() && !stalls) {
            return None;
        }
        let file = self.recorder.as_ref().ok()?.0.trigger().ok()?;
        let fd = file.as_raw_fd();
        self.trigger = Some(file);
        Some(Freeze {
            tracing_on_fd: fd,
            gap_ns: gap_ms.map_or(u64::MAX, |ms| ms.saturating_mul(1_000_000)),
        })
    }

    /// On each tick of the run: the first gives the run's start; each
    /// notes runq's own threads (the sampler's, the host monitor's), which
    /// are gone when the evidence is read.
    pub fn tick(&mut self, elapsed: Duration) {
        if self.recorder.is_err() {
            return;
        }
        add_own_tids(&mut self.own);
        if self.base_ns.is_none() {
            let e = u64::try_from(elapsed.as_nanos()).unwrap_or(0);
            // CLOCK_MONOTONIC is the recorder's `mono` trace clock.
            self.base_ns = Some(runq_kernel::clock::monotonic_ns().saturating_sub(e));
        }
    }

    /// Stops recording; after a FAIL, reads the recording and writes the
    /// evidence of each failed check (its trace files under `dir`, named
    /// after `tag`), with `ctprof`'s compare of the threads each names
    /// when `--ctprof` took snapshots.
    pub fn finish(
        self,
        o: &RunOutcome,
        (dir, tag): (&Path, &str),
        ctprof: Option<&CtprofHook>,
    ) -> Option<EvidenceReport> {
        drop(self.trigger);
        if !matches!(o.verdict, Verdict::Fail | Verdict::Indeterminate) {
            return None;
        }
        let mut report = EvidenceReport::default();
        let ((rec, cpus), base) = match (self.recorder, self.base_ns) {
            (Ok(r), Some(b)) => (r, b),
            (Err(why), _) => return Some(unavailable(o, report, format!("no recording: {why}"))),
            (Ok(_), None) => {
                let why = "no recording: the run never started".to_string();
                return Some(unavailable(o, report, why));
            }
        };
        let recording = match rec.stop() {
            Ok(r) => r,
            Err(e) => return Some(unavailable(o, report, format!("no recording: {e}"))),
        };
        drop(rec);
        let events = recording.events;
        report.source = Some(format!(
            "tracefs instance: {} on CPUs {}",
            EVENTS.join(", "),
            cpu_words(&cpus)
        ));
        report.events = events.len() as u64;
        report.events_written = recording.written;
        let s = |ns: u64| (ns as f64 - base as f64) / 1e9;
        if let (Some(a), Some(b)) = (events.first(), events.last()) {
            report.recorded_s = Some([s(a.ts_ns()), s(b.ts_ns())]);
            report.frozen_s = recording.frozen.then(|| s(b.ts_ns()));
        }
        let wrapped = recording.wrapped_from_ns;
        let around = |subjects: &[Subject]| ctprof.and_then(|c| c.around(subjects));
        let frozen = recording
            .frozen
            .then(|| events.last().map(|e| e.ts_ns()))
            .flatten();
        report.checks = examine_all(
            o,
            (&events, base, frozen),
            &self.own,
            &wrapped,
            &dir.join(format!("runq-evidence-{tag}")),
            &around,
        );
        if let Some(t) = report.frozen_s {
            note_after_freeze(&mut report.checks, t);
        }
        Some(report)
    }
}

/// Each failed check's evidence in `events` (the recording froze at
/// `frozen`, absolute ns, when the trigger stopped it), its trace written to
/// `<prefix>-<check>-<group>.json` (checks that point at the same moment
/// share one file).
fn examine_all(
    o: &RunOutcome,
    (events, base, frozen): (&[runq_kernel::sched_trace::SchedEvent], u64, Option<u64>),
    own: &HashSet<i32>,
    wrapped: &std::collections::BTreeMap<u32, u64>,
    prefix: &Path,
    ctprof: &dyn Fn(&[Subject]) -> Option<CtprofEvidence>,
) -> Vec<Evidence> {
    let group_of = |tid: i32| evidence::group_of(o, tid);
    let is_runq = |tid: i32| own.contains(&tid);
    let names = Names {
        group_of: &group_of,
        is_runq: &is_runq,
        wrapped,
    };
    let moments = evidence::moments(o);
    let mut written: Vec<(evidence::MomentKey, String)> = Vec::new();
    let mut out = Vec::new();
    for c in o.checks.iter().filter(|c| !c.pass) {
        let moment = moments
            .iter()
            .find(|m| m.check == c.name && m.group == c.group);
        // A moment after the recording froze: the one it holds instead.
        let held = moment
            .filter(|m| frozen.is_some_and(|end| base + m.from_ns > end))
            .and_then(|m| evidence::before_freeze(o, m, events, base));
        let found = match held.as_ref().or(moment) {
            Some(m) => Some(evidence::examine(events, base, m, &names)),
            None if c.name == "max_p99_wake_latency_us" => {
                evidence::examine_wakes(o, c, events, base, &names)
            }
            None => evidence::examine_series(o, c, events, base, &names),
        };
        let Some(found) = found else {
            out.push(evidence::without_moment(c));
            continue;
        };
        let mut ev = found.evidence;
        if let Some(w) = written.iter().find(|w| w.0 == found.key) {
            ev.trace_file = Some(w.1.clone());
        } else if let Some(trace) = found.trace {
            let file = format!(
                "{}-{}-{}.json",
                prefix.display(),
                file_word(&c.name),
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

/// The report of a FAIL without a recording: every failed check says why.
fn unavailable(o: &RunOutcome, mut report: EvidenceReport, why: String) -> EvidenceReport {
    for c in o.checks.iter().filter(|c| !c.pass) {
        let mut e = evidence::without_moment(c);
        e.summary = format!("no evidence: {why}");
        report.checks.push(e);
    }
    report.unavailable = Some(why);
    report
}

/// The directory evidence files go to: `--evidence-dir`, or the system's
/// temporary directory.
pub fn dir(arg: Option<&Path>) -> PathBuf {
    arg.map_or_else(std::env::temp_dir, Path::to_path_buf)
}

/// A name for this run's files: the pid and the time, and the repeat.
pub fn tag(repeat: u32) -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    format!("{}-{secs}-{repeat}", std::process::id())
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

/// The evidence section of the text report.
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
        out.push_str(&format!("  {} {}: {}\n", e.check, e.group, e.summary));
        if let Some(c) = &e.ctprof {
            out.push_str(&c.lines("    "));
        }
        if let Some(f) = &e.trace_file {
            out.push_str(&format!("    trace: {f}\n"));
        }
    }
    out
}

/// Adds runq's own threads (the sampler, the host monitor, the main
/// thread) to `tids`.
fn add_own_tids(tids: &mut HashSet<i32>) {
    if let Ok(dir) = std::fs::read_dir("/proc/self/task") {
        for e in dir.flatten() {
            if let Some(t) = e.file_name().to_str().and_then(|s| s.parse().ok()) {
                tids.insert(t);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use runq_results::evidence::Evidence;

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
}
