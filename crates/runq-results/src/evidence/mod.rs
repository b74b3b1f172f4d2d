//! Evidence for a FAIL: for the worst instance of each failed check (the
//! longest gap, the most starved worker, the host's longest runnable
//! wait), the [`Moment`] it points at, what a recording of the scheduler's
//! events shows about it (who held the CPU the worker waited on, who woke
//! it, whether it migrated: [`window`]), a Chrome/Perfetto trace of the
//! window ([`chrome`]), and the one line a FAIL starts with
//! ([`headline`]); for a wake-latency FAIL, the worst wakeups
//! ([`wakes`]); with `--ctprof`, the snapshot pair's compare of the
//! threads it names ([`ctprof`]); every failed check's evidence, its
//! trace files and the report's evidence section ([`flight`]). The events
//! come from runq-kernel's `sched_trace` recorder, which the binary
//! starts and stops; this module only reads them.

pub mod chrome;
pub mod ctprof;
pub mod flight;
pub mod headline;
pub mod scheduler_state;
pub mod series;
pub mod wakes;
pub mod window;

use serde::{Deserialize, Serialize};

use runq_workload::series::host::HostSeries;
use runq_workload::{worker_pointed_at, CheckId, CheckResult, PointsAt, RunOutcome, WorkerReport};

/// Slack before a gap's window in the report (a gap lies somewhere in the
/// 50 ms window that closed at `max_gap_at_ms`, or the iteration that
/// held it), ns.
const BEFORE_NS: u64 = 100_000_000;
/// Slack after it (ms rounding, the loop's start after the release), ns.
const AFTER_NS: u64 = 20_000_000;

/// The moment a failed check points at, ns from the run's start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Moment {
    /// The check.
    pub check: CheckId,
    /// Its group (`host` for host-wide checks).
    pub group: String,
    /// The task it is about (a worker's tid, or the host's waiting task).
    pub tid: i32,
    /// The task's group, when it is one of the run's workers.
    pub task_group: Option<String>,
    /// The CPU the report names, when it names one.
    pub cpu: Option<u32>,
    /// From, ns since the run started.
    pub from_ns: u64,
    /// To, ns since the run started.
    pub to_ns: u64,
    /// What the report says happened there.
    pub what: String,
}

/// The evidence of one failed check, as the report carries it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    /// The check.
    pub check: String,
    /// Its group.
    pub group: String,
    /// What the recording shows, in one sentence (or why it shows
    /// nothing).
    pub summary: String,
    /// The window written to the trace, seconds from the run's start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_s: Option<[f64; 2]>,
    /// The Chrome/Perfetto trace of the window, when one was written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_file: Option<String>,
    /// With `--ctprof`: the snapshot pair's compare of the threads the
    /// evidence names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ctprof: Option<ctprof::CtprofEvidence>,
}

/// Every failed check's evidence, and where it came from.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EvidenceReport {
    /// The recorder (`tracefs instance: sched_switch, ...`), when it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Why there is no recording, when there is none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
    /// Events kept in the recorder's buffer.
    pub events: u64,
    /// Events the kernel wrote (more than kept when the buffer wrapped).
    pub events_written: u64,
    /// When the stop-on-threshold trigger froze the recording (a worker's
    /// gap passed the bound), seconds from the run's start: the buffer
    /// holds the events up to that moment, none after it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frozen_s: Option<f64>,
    /// The span the kept events cover, seconds from the run's start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recorded_s: Option<[f64; 2]>,
    /// One entry per failed check.
    pub checks: Vec<Evidence>,
}

/// The moment each failed check of `o` points at, worst instance first
/// within each check; checks that name no moment are left out.
pub fn moments(o: &RunOutcome) -> Vec<Moment> {
    o.checks
        .iter()
        .filter(|c| !c.pass)
        .filter_map(|c| moment_of(o, c))
        .collect()
}

/// The group name of worker `tid`, if it is one.
pub fn group_of(o: &RunOutcome, tid: i32) -> Option<String> {
    let r = o.reports.iter().find(|r| r.tid as i32 == tid)?;
    let g = o.groups.iter().find(|g| g.group_idx == r.group_idx)?;
    Some(g.name.clone())
}

/// For a moment after the recording froze (its last event, absolute ns,
/// before the moment's window): the moment the recording does hold, the
/// longest runnable wait of a worker of the same group in it (the gap
/// that set off the trigger, or one like it); `None` when it holds none.
pub fn before_freeze(
    o: &RunOutcome,
    m: &Moment,
    events: &[runq_kernel::sched_trace::SchedEvent],
    base: u64,
) -> Option<Moment> {
    let end = events.last()?.ts_ns();
    let idx = o.groups.iter().find(|g| g.name == m.group)?.group_idx;
    let (tid, w) = o
        .reports
        .iter()
        .filter(|r| r.group_idx == idx)
        .filter_map(|r| {
            let tid = r.tid as i32;
            Some((tid, window::longest_wait(events, tid, base, end)?))
        })
        .max_by_key(|(_, w)| w.ns())?;
    let secs = |ns: u64| ns as f64 / 1e9;
    Some(Moment {
        tid,
        cpu: Some(w.queued_cpu),
        from_ns: w.from_ns.saturating_sub(base),
        to_ns: w.to_ns.saturating_sub(base),
        what: format!(
            "waited in the recording, which froze at {:.2} s, before the group's \
             worst instance (worker {} {} up to {:.2} s)",
            secs(end.saturating_sub(base)),
            m.tid,
            m.what,
            secs(m.to_ns)
        ),
        ..m.clone()
    })
}

fn moment_of(o: &RunOutcome, c: &CheckResult) -> Option<Moment> {
    if c.check == CheckId::MaxRunnableWaitMs {
        return host_wait_moment(o.series.as_ref().and_then(|s| s.host.as_ref()), c, o);
    }
    let idx = o.groups.iter().find(|g| g.name == c.group)?.group_idx;
    let live: Vec<&WorkerReport> = o
        .reports
        .iter()
        .filter(|r| r.group_idx == idx && r.exit_info.is_none())
        .collect();
    let worker = worker_pointed_at(c.check, &live)?;
    let what = match c.check.points_at() {
        PointsAt::LongestGap => format!("waited {} ms runnable without a CPU", worker.max_gap_ms),
        PointsAt::Stuck | PointsAt::LeastCpu | PointsAt::WorstWakeups | PointsAt::Nobody => {
            format!(
                "is the most starved worker: {} ms on a CPU in {} ms, longest wait {} ms",
                worker.cpu_time_ns / 1_000_000,
                worker.wall_time_ns / 1_000_000,
                worker.max_gap_ms
            )
        }
    };
    let gap_end = worker.max_gap_at_ms * 1_000_000;
    let gap_start = gap_end.saturating_sub(worker.max_gap_ms * 1_000_000);
    Some(Moment {
        check: c.check,
        group: c.group.clone(),
        tid: worker.tid as i32,
        task_group: Some(c.group.clone()),
        cpu: u32::try_from(worker.max_gap_cpu).ok(),
        from_ns: gap_start.saturating_sub(BEFORE_NS),
        to_ns: gap_end + AFTER_NS,
        what,
    })
}

fn host_wait_moment(h: Option<&HostSeries>, c: &CheckResult, o: &RunOutcome) -> Option<Moment> {
    let f = &h?.runnable_wait.as_ref()?.figures;
    let start = f.at_ns.saturating_sub(f.longest_ns);
    Some(Moment {
        check: c.check,
        group: c.group.clone(),
        tid: f.pid as i32,
        task_group: group_of(o, f.pid as i32),
        cpu: Some(f.cpu),
        from_ns: start.saturating_sub(AFTER_NS),
        to_ns: f.at_ns + AFTER_NS,
        what: format!(
            "waited {:.1} ms runnable (the host's longest)",
            f.longest_ns as f64 / 1e6
        ),
    })
}

/// One failed check's evidence as read from the recording.
pub struct Examined {
    /// The evidence.
    pub evidence: Evidence,
    /// The trace of its window, when the recording reaches it (a buffer
    /// that wrapped past it has none).
    pub trace: Option<serde_json::Value>,
    /// The moment as (task, from, to): checks with the same key share a
    /// trace file.
    pub key: MomentKey,
    /// The threads it names, the worker first.
    pub subjects: Vec<ctprof::Subject>,
}

/// A moment as (task, from, to), absolute ns.
pub type MomentKey = (i32, u64, u64);

/// One failed check's evidence from `events` (absolute ns; `base` is the
/// run's start on the same clock).
pub fn examine(
    events: &[runq_kernel::sched_trace::SchedEvent],
    base: u64,
    m: &Moment,
    names: &window::Names,
) -> Examined {
    let (summary, from, to) = window::summarize(events, base, m, names);
    let wait = window::longest_wait(events, m.tid, base + m.from_ns, base + m.to_ns);
    let trace = reaches(events, to)
        .then(|| chrome::trace(events, base, (from, to), m.tid, wait.as_ref(), names));
    let mut subjects = vec![subject(m.tid, "worker")];
    if let Some(w) = &wait {
        subjects.extend(w.waker.as_ref().map(|k| subject(k.pid, "waker")));
        let (h, _) = window::holders_along(events, w, names.wrapped);
        subjects.extend(holder_subjects(&h));
    }
    let s = |ns: u64| ns.saturating_sub(base) as f64 / 1e9;
    let evidence = Evidence {
        check: m.check.to_string(),
        group: m.group.clone(),
        summary,
        window_s: Some([s(from), s(to)]),
        trace_file: None,
        ctprof: None,
    };
    Examined {
        evidence,
        trace,
        key: (m.tid, m.from_ns, m.to_ns),
        subjects: dedup(subjects),
    }
}

/// Whether the recording reaches back to `to` (absolute ns).
fn reaches(events: &[runq_kernel::sched_trace::SchedEvent], to: u64) -> bool {
    events.first().is_some_and(|e| e.ts_ns() <= to)
}

fn subject(tid: i32, role: &'static str) -> ctprof::Subject {
    ctprof::Subject { tid, role }
}

/// The three longest holders that are tasks (not idle, not the idle
/// task's pid 0).
fn holder_subjects(h: &[window::Holder]) -> impl Iterator<Item = ctprof::Subject> + '_ {
    h.iter()
        .filter(|x| x.task.pid > 0)
        .take(3)
        .map(|x| subject(x.task.pid, "holder"))
}

/// `subjects` with each tid once (its first role), pid 0 left out.
fn dedup(subjects: Vec<ctprof::Subject>) -> Vec<ctprof::Subject> {
    let mut out: Vec<ctprof::Subject> = Vec::new();
    for s in subjects {
        if s.tid > 0 && !out.iter().any(|o| o.tid == s.tid) {
            out.push(s);
        }
    }
    out
}

/// The evidence of a failed series check (a stall, a rate out of bounds):
/// each worker of its group in the window its FAIL names, and the trace of
/// that window around the worker off a CPU longest; `None` when it names
/// no window.
pub fn examine_series(
    o: &RunOutcome,
    c: &CheckResult,
    events: &[runq_kernel::sched_trace::SchedEvent],
    base: u64,
    names: &window::Names,
) -> Option<Examined> {
    let (mut evidence, (from, to), tid) = series::examine(o, c, events, base)?;
    for (cpu, since) in names.wrapped.iter().filter(|(_, t)| **t > from) {
        evidence.summary.push_str(&format!(
            " (CPU {cpu}'s recording starts at {:.3} s: its buffer wrapped, so a worker's \
             state there before then is guessed from its last event elsewhere; a larger \
             --flight-recorder buffer keeps more)",
            since.saturating_sub(base) as f64 / 1e9
        ));
    }
    let trace =
        reaches(events, to).then(|| chrome::trace(events, base, (from, to), tid, None, names));
    Some(Examined {
        evidence,
        trace,
        key: (tid, from, to),
        subjects: dedup(vec![subject(tid, "worker")]),
    })
}

/// The evidence of a failed wake-latency check: the worst wakeups of its
/// group's workers, and the trace around the worst; `None` when the
/// recording holds none.
pub fn examine_wakes(
    o: &RunOutcome,
    c: &CheckResult,
    events: &[runq_kernel::sched_trace::SchedEvent],
    base: u64,
    names: &window::Names,
) -> Option<Examined> {
    let w = wakes::examine(o, c, events, base, names)?;
    let (from, to) = w.window;
    let trace = chrome::trace(events, base, (from, to), w.tid, Some(&w.wait), names);
    Some(Examined {
        evidence: w.evidence,
        trace: Some(trace),
        key: (w.tid, from, to),
        subjects: dedup(w.subjects),
    })
}

/// The evidence of a failed check that names no moment (a wake-latency
/// CV, a series check without a window): why there is none.
pub fn without_moment(c: &CheckResult) -> Evidence {
    Evidence {
        check: c.check.to_string(),
        group: c.group.clone(),
        summary: format!(
            "no evidence: {} names no worker and moment to look at in the recording",
            c.check
        ),
        window_s: None,
        trace_file: None,
        ctprof: None,
    }
}

#[cfg(test)]
mod tests;
