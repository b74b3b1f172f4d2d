//! Evidence for a failed check over time (a stall, a rate out of bounds):
//! the window its FAIL names, and what each worker of the group did in it
//! according to the recording: time on a CPU, time runnable without one,
//! and time off the run queue by the state it left in (`S` sleeping, `D`
//! uninterruptible, `T` stopped, ...).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use runq_kernel::sched_trace::SchedEvent;

use super::Evidence;
use runq_workload::RunOutcome;
use runq_workload::{CheckResult, Detail, SeriesDetail, Span};

/// What one task did in a window, ns.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskTime {
    /// On a CPU.
    pub running_ns: u64,
    /// Runnable, without a CPU.
    pub runnable_ns: u64,
    /// Off the run queue, by the state it left the CPU in.
    pub blocked_ns: BTreeMap<String, u64>,
}

#[derive(Clone, PartialEq)]
enum State {
    Running,
    Runnable,
    Blocked(String),
}

impl TaskTime {
    fn add(&mut self, state: &State, ns: u64) {
        match state {
            State::Running => self.running_ns += ns,
            State::Runnable => self.runnable_ns += ns,
            State::Blocked(s) => *self.blocked_ns.entry(s.clone()).or_default() += ns,
        }
    }
}

/// What `tid` did in `[from, to]` (absolute ns). Its state before its
/// first event is read from that event (a switch-in: it was runnable; a
/// switch-out: running; a wakeup: blocked, `?`).
pub fn task_time(events: &[SchedEvent], tid: i32, from: u64, to: u64) -> TaskTime {
    let mut out = TaskTime::default();
    let mut state: Option<(State, u64)> = None;
    for e in events {
        let (ts, before, after) = match e {
            SchedEvent::Switch {
                ts_ns,
                prev,
                prev_runnable,
                prev_state,
                ..
            } if prev.pid == tid => {
                let after = if *prev_runnable {
                    State::Runnable
                } else {
                    State::Blocked(prev_state.clone())
                };
                (*ts_ns, State::Running, after)
            }
            SchedEvent::Switch { ts_ns, next, .. } if next.pid == tid => {
                (*ts_ns, State::Runnable, State::Running)
            }
            SchedEvent::Wakeup { ts_ns, task, .. } if task.pid == tid => {
                (*ts_ns, State::Blocked("?".into()), State::Runnable)
            }
            _ => continue,
        };
        if ts >= to {
            break;
        }
        let (current, since) = state.take().unwrap_or((before, from));
        out.add(&current, ts.saturating_sub(since));
        state = Some((after, ts.max(from)));
    }
    if let Some((current, since)) = state {
        out.add(&current, to.saturating_sub(since));
    }
    out
}

/// The window a series check's FAIL names, in seconds from the run's
/// start, to the hundredth its sentence gives.
pub fn named_window(details: &[Detail]) -> Option<(f64, f64)> {
    let w = details.iter().find_map(|d| match d {
        Detail::Series(s) => Some(series_window(s)),
        Detail::Group(_)
        | Detail::Share(_)
        | Detail::Rate(_)
        | Detail::Placement(_)
        | Detail::Scheduler(_)
        | Detail::Host(_)
        | Detail::SchedExt(_) => None,
    })?;
    let s = |ns: u64| (ns as f64 / 1e7).round() / 100.0;
    Some((s(w.from_ns), s(w.to_ns)))
}

/// The window a check over time names first.
fn series_window(s: &SeriesDetail) -> Span {
    match s {
        SeriesDetail::Fell { window, .. }
        | SeriesDetail::RateOutside { window, .. }
        | SeriesDetail::Unsteady { window, .. }
        | SeriesDetail::Stalled { window, .. }
        | SeriesDetail::ConvergeRate { window, .. }
        | SeriesDetail::ConvergeShare { window, .. } => *window,
    }
}

/// The evidence of a failed series check of `o`: each worker of its group
/// in the window it names; `None` when it names none. Also returns the
/// window (absolute ns) and the worker that was off a CPU longest.
pub fn examine(
    o: &RunOutcome,
    c: &CheckResult,
    events: &[SchedEvent],
    base: u64,
) -> Option<(Evidence, (u64, u64), i32)> {
    let (a, b) = named_window(&c.detail)?;
    let idx = o.groups.iter().find(|g| g.name == c.group)?.group_idx;
    let (from, to) = (base + (a * 1e9) as u64, base + (b * 1e9) as u64);
    let mut s = format!("in {a:.2}–{b:.2} s");
    let mut worst = (0, 0u64);
    for r in o.reports.iter().filter(|r| r.group_idx == idx) {
        let tid = r.tid as i32;
        let t = task_time(events, tid, from, to);
        let off: u64 = t.runnable_ns + t.blocked_ns.values().sum::<u64>();
        if off >= worst.1 {
            worst = (tid, off);
        }
        let _ = write!(
            s,
            "; worker {tid} ran {} ms, waited runnable {} ms",
            t.running_ns / 1_000_000,
            t.runnable_ns / 1_000_000
        );
        for (state, ns) in t.blocked_ns.iter().filter(|(_, ns)| **ns >= 1_000_000) {
            let _ = write!(s, ", {} {} ms", state_word(state), ns / 1_000_000);
        }
    }
    let evidence = Evidence {
        check: c.check.to_string(),
        group: c.group.clone(),
        summary: s,
        window_s: Some([a, b]),
        trace_file: None,
        ctprof: None,
    };
    Some((evidence, (from, to), worst.0))
}

/// A state letter as words.
fn state_word(state: &str) -> String {
    let word = match state.chars().next() {
        Some('S') => "slept (S)",
        Some('D') => "waited uninterruptibly (D)",
        Some('T') | Some('t') => "was stopped (T)",
        Some('I') => "was idle (I)",
        Some('X') | Some('Z') => "exited",
        _ => return format!("was off the CPU in state {state}"),
    };
    word.to_string()
}
