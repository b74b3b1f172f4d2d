//! Evidence for a failed wake-latency check (`max_p99_wake_latency_us`):
//! the worst wakeups of the group's workers in the recording, each from
//! its `sched_wakeup` to the worker's next switch-in: who woke it, on
//! which CPU it was queued, how long it waited there, and what ran on that
//! CPU meanwhile.

use std::fmt::Write as _;

use runq_kernel::sched_trace::{SchedEvent, Task};

use super::ctprof::Subject;
use super::window::{holder_list, holders, Holder, Names, Wait};
use super::Evidence;
use runq_workload::CheckResult;
use runq_workload::RunOutcome;

/// How many of the worst wakeups the summary names.
pub const WORST: usize = 3;

/// One wakeup of a worker and its wait for a CPU, absolute ns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WakeRun {
    /// The worker woken.
    pub wakee: Task,
    /// Who woke it.
    pub waker: Task,
    /// When it was woken.
    pub woken_ns: u64,
    /// When it got a CPU.
    pub ran_ns: u64,
    /// The CPU it was queued on.
    pub target_cpu: u32,
    /// The CPU it ran on.
    pub ran_cpu: u32,
}

impl WakeRun {
    /// Wake to run, ns.
    pub fn latency_ns(&self) -> u64 {
        self.ran_ns - self.woken_ns
    }
}

/// Every wakeup of a task `member` accepts that the recording follows to
/// a switch-in, in order. A wakeup of a task already running or already
/// woken (a second wakeup before it ran) starts none.
pub fn wake_runs(events: &[SchedEvent], member: &dyn Fn(i32) -> bool) -> Vec<WakeRun> {
    let mut running: std::collections::HashSet<i32> = Default::default();
    let mut open: std::collections::HashMap<i32, WakeRun> = Default::default();
    let mut out = Vec::new();
    for e in events {
        match e {
            SchedEvent::Wakeup {
                ts_ns,
                task,
                waker,
                target_cpu,
                ..
            } if member(task.pid) && !running.contains(&task.pid) => {
                open.entry(task.pid).or_insert_with(|| WakeRun {
                    wakee: task.clone(),
                    waker: waker.clone(),
                    woken_ns: *ts_ns,
                    ran_ns: *ts_ns,
                    target_cpu: *target_cpu,
                    ran_cpu: *target_cpu,
                });
            }
            SchedEvent::Switch {
                ts_ns,
                cpu,
                prev,
                next,
                ..
            } => {
                running.remove(&prev.pid);
                open.remove(&prev.pid);
                if member(next.pid) {
                    running.insert(next.pid);
                    if let Some(mut w) = open.remove(&next.pid) {
                        w.ran_ns = *ts_ns;
                        w.ran_cpu = *cpu;
                        out.push(w);
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// The `n` longest of `runs`, longest first (the earlier first on a tie).
pub fn worst(mut runs: Vec<WakeRun>, n: usize) -> Vec<WakeRun> {
    runs.sort_by(|a, b| {
        b.latency_ns()
            .cmp(&a.latency_ns())
            .then(a.woken_ns.cmp(&b.woken_ns))
    });
    runs.truncate(n);
    runs
}

/// The `q` quantile (0..=1) of the runs' latencies, ns (nearest rank).
pub fn quantile_ns(runs: &[WakeRun], q: f64) -> Option<u64> {
    let mut l: Vec<u64> = runs.iter().map(WakeRun::latency_ns).collect();
    l.sort_unstable();
    let rank = ((q * l.len() as f64).ceil() as usize).clamp(1, l.len().max(1));
    l.get(rank - 1).copied()
}

/// Who ran on the CPU `w` was queued on while it waited.
pub fn holders_of(events: &[SchedEvent], w: &WakeRun) -> Vec<Holder> {
    holders(events, w.target_cpu, w.woken_ns, w.ran_ns)
}

/// What the evidence of a wake-latency FAIL found: the sentence, the
/// window around the worst wakeup (absolute ns), that wakeup as a wait
/// for the trace, and the tasks it is about (the worst wakeup's worker,
/// its waker, then who held its CPU).
pub struct WakeEvidence {
    /// The evidence.
    pub evidence: Evidence,
    /// The window around the worst wakeup, absolute ns.
    pub window: (u64, u64),
    /// The worst wakeup as a runnable wait, for the trace.
    pub wait: Wait,
    /// The worker of the worst wakeup.
    pub tid: i32,
    /// The tasks it names: the worker, its waker, who held its CPU.
    pub subjects: Vec<Subject>,
}

/// The evidence of a failed wake-latency check `c` of `o`; `None` when
/// the recording holds no wakeup of the group's workers followed to a
/// CPU.
pub fn examine(
    o: &RunOutcome,
    c: &CheckResult,
    events: &[SchedEvent],
    base: u64,
    names: &Names,
) -> Option<WakeEvidence> {
    let idx = o.groups.iter().find(|g| g.name == c.group)?.group_idx;
    let tids: Vec<i32> = o
        .reports
        .iter()
        .filter(|r| r.group_idx == idx)
        .map(|r| r.tid as i32)
        .collect();
    let runs = wake_runs(events, &|pid| tids.contains(&pid));
    let p99 = quantile_ns(&runs, 0.99)?;
    let count = runs.len();
    let top = worst(runs, WORST);
    let first = top.first()?.clone();
    let mut s = format!(
        "{count} wakeups of the group's workers in the recording, wake to run p99 {}; the worst:",
        ms(p99)
    );
    let mut subjects = vec![
        Subject {
            tid: first.wakee.pid,
            role: "worker",
        },
        Subject {
            tid: first.waker.pid,
            role: "waker",
        },
    ];
    for (i, w) in top.iter().enumerate() {
        let h = holders_of(events, w);
        if i == 0 {
            let held = h.iter().filter(|x| x.task.pid > 0).take(3);
            subjects.extend(held.map(|x| Subject {
                tid: x.task.pid,
                role: "holder",
            }));
        }
        let sep = if i == 0 { "" } else { ";" };
        let _ = write!(s, "{sep} {}", sentence(w, &h, base, names));
    }
    let margin = (first.latency_ns() / 10).max(20_000_000);
    let window = (first.woken_ns.saturating_sub(margin), first.ran_ns + margin);
    let secs = |ns: u64| ns.saturating_sub(base) as f64 / 1e9;
    let wait = Wait {
        from_ns: first.woken_ns,
        to_ns: first.ran_ns,
        queued_cpu: first.target_cpu,
        ran_cpu: first.ran_cpu,
        waker: Some(first.waker.clone()),
        migrations: Vec::new(),
    };
    let evidence = Evidence {
        check: c.check.to_string(),
        group: c.group.clone(),
        summary: s,
        window_s: Some([secs(window.0), secs(window.1)]),
        trace_file: None,
        ctprof: None,
    };
    Some(WakeEvidence {
        evidence,
        window,
        wait,
        tid: first.wakee.pid,
        subjects,
    })
}

/// One wakeup in words.
fn sentence(w: &WakeRun, h: &[Holder], base: u64, names: &Names) -> String {
    let mut s = format!(
        "{} woken by {} at {:.3} s waited {} for CPU {}, which ran {}",
        names.task(&w.wakee),
        names.task(&w.waker),
        w.woken_ns.saturating_sub(base) as f64 / 1e9,
        ms(w.latency_ns()),
        w.target_cpu,
        holder_list(h, names)
    );
    if w.ran_cpu != w.target_cpu {
        let _ = write!(s, ", then ran on CPU {}", w.ran_cpu);
    }
    s
}

/// ns as ms with three decimals (`0.052 ms`), wake latencies being short.
fn ms(ns: u64) -> String {
    format!("{:.3} ms", ns as f64 / 1e6)
}
