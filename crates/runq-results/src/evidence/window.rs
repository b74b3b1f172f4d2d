//! What a recording of scheduler events shows about a [`Moment`]: the
//! task's longest runnable wait in the window (from its wakeup or
//! preemption to its next switch-in), the CPU it was queued on, who ran on
//! that CPU meanwhile and for how long, who woke it, and its migrations.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use runq_kernel::sched_trace::{SchedEvent, Task};

use super::Moment;

/// One runnable wait of the task, absolute ns (CLOCK_MONOTONIC).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wait {
    /// When it became runnable (wakeup or preemption).
    pub from_ns: u64,
    /// When it got a CPU.
    pub to_ns: u64,
    /// The CPU whose queue it waited on (where it was woken or preempted).
    pub queued_cpu: u32,
    /// The CPU it then ran on.
    pub ran_cpu: u32,
    /// Who woke it, when a wakeup started the wait.
    pub waker: Option<Task>,
    /// Migrations during the wait: (ns, from, to).
    pub migrations: Vec<(u64, u32, u32)>,
}

impl Wait {
    /// Its length, ns.
    pub fn ns(&self) -> u64 {
        self.to_ns - self.from_ns
    }
}

/// A task that held a CPU in the window, and for how long.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    /// The task (pid 0: idle).
    pub task: Task,
    /// Time it held the CPU in the window, ns.
    pub ns: u64,
}

/// The longest runnable wait of `tid` that overlaps `[from, to]`
/// (absolute ns). Waits still open when the recording ends are closed at
/// its last event.
pub fn longest_wait(events: &[SchedEvent], tid: i32, from: u64, to: u64) -> Option<Wait> {
    let mut open: Option<Wait> = None;
    let mut best: Option<Wait> = None;
    let keep = |w: Wait, best: &mut Option<Wait>| {
        let overlaps = w.from_ns <= to && w.to_ns >= from;
        if overlaps && best.as_ref().is_none_or(|b| w.ns() > b.ns()) {
            *best = Some(w);
        }
    };
    let start = |ts, cpu, waker| Wait {
        from_ns: ts,
        to_ns: ts,
        queued_cpu: cpu,
        ran_cpu: cpu,
        waker,
        migrations: Vec::new(),
    };
    for e in events {
        match e {
            SchedEvent::Wakeup {
                ts_ns,
                task,
                waker,
                target_cpu,
                ..
            } if task.pid == tid && open.is_none() => {
                open = Some(start(*ts_ns, *target_cpu, Some(waker.clone())));
            }
            SchedEvent::Switch {
                ts_ns,
                cpu,
                prev,
                prev_runnable,
                next,
                ..
            } => {
                if prev.pid == tid {
                    open = prev_runnable.then(|| start(*ts_ns, *cpu, None));
                }
                if next.pid == tid {
                    if let Some(mut w) = open.take() {
                        w.to_ns = *ts_ns;
                        w.ran_cpu = *cpu;
                        keep(w, &mut best);
                    }
                }
            }
            SchedEvent::Migrate {
                ts_ns,
                task,
                orig_cpu,
                dest_cpu,
            } if task.pid == tid => {
                if let Some(w) = open.as_mut() {
                    w.migrations.push((*ts_ns, *orig_cpu, *dest_cpu));
                }
            }
            _ => {}
        }
    }
    if let (Some(mut w), Some(last)) = (open, events.last()) {
        w.to_ns = last.ts_ns().max(w.from_ns);
        keep(w, &mut best);
    }
    best
}

/// Who ran on `cpu` during `[from, to]` (absolute ns), longest first: each
/// stretch is the task the switch that ends it takes off the CPU; the last
/// one, the task the last switch put on.
pub fn holders(events: &[SchedEvent], cpu: u32, from: u64, to: u64) -> Vec<Holder> {
    let mut time: BTreeMap<(i32, String), u64> = BTreeMap::new();
    let mut current: Option<&Task> = None;
    let mut since = from;
    for e in events {
        let SchedEvent::Switch {
            ts_ns,
            cpu: c,
            prev,
            next,
            ..
        } = e
        else {
            continue;
        };
        if *c != cpu {
            continue;
        }
        if *ts_ns <= from {
            current = Some(next);
            continue;
        }
        // The task switched out is the one that ran (with its comm as of
        // now: a task that exec'd while it ran has its new name).
        let running = prev;
        let end = (*ts_ns).min(to);
        *time.entry((running.pid, running.comm.clone())).or_default() += end - since;
        since = end;
        current = Some(next);
        if *ts_ns >= to {
            break;
        }
    }
    if since < to {
        if let Some(t) = current {
            let end = events.last().map_or(to, |e| e.ts_ns().clamp(since, to));
            *time.entry((t.pid, t.comm.clone())).or_default() += end - since;
        }
    }
    let mut out: Vec<Holder> = time
        .into_iter()
        .filter(|(_, ns)| *ns > 0)
        .map(|((pid, comm), ns)| Holder {
            task: Task { pid, comm },
            ns,
        })
        .collect();
    out.sort_by(|a, b| b.ns.cmp(&a.ns).then(a.task.pid.cmp(&b.task.pid)));
    out
}

/// Who ran on the CPUs `w` was queued on while it waited (the CPU it was
/// queued on, then each migration's destination), summed; and those CPUs,
/// each once, in order.
pub fn holders_along(
    events: &[SchedEvent],
    w: &Wait,
    wrapped: &BTreeMap<u32, u64>,
) -> (Vec<Holder>, Vec<u32>) {
    let mut stops: Vec<(u64, u32)> = vec![(w.from_ns, w.queued_cpu)];
    stops.extend(w.migrations.iter().map(|&(ts, _, to)| (ts, to)));
    let mut sum: BTreeMap<(i32, String), u64> = BTreeMap::new();
    let mut cpus: Vec<u32> = Vec::new();
    for (i, &(from, cpu)) in stops.iter().enumerate() {
        let to = stops.get(i + 1).map_or(w.to_ns, |s| s.0);
        if !cpus.contains(&cpu) {
            cpus.push(cpu);
        }
        let from = from.max(wrapped.get(&cpu).copied().unwrap_or(0));
        for h in holders(events, cpu, from, to.max(from)) {
            *sum.entry((h.task.pid, h.task.comm)).or_default() += h.ns;
        }
    }
    let mut out: Vec<Holder> = sum
        .into_iter()
        .map(|((pid, comm), ns)| Holder {
            task: Task { pid, comm },
            ns,
        })
        .collect();
    out.sort_by(|a, b| b.ns.cmp(&a.ns).then(a.task.pid.cmp(&b.task.pid)));
    (out, cpus)
}

fn join_cpus(cpus: &[u32]) -> String {
    let list: Vec<String> = cpus.iter().map(u32::to_string).collect();
    list.join(", ")
}

/// How the summary names the tasks it mentions.
pub struct Names<'a> {
    /// A run worker's group, by tid.
    pub group_of: &'a dyn Fn(i32) -> Option<String>,
    /// Whether a tid is one of runq's own threads.
    pub is_runq: &'a dyn Fn(i32) -> bool,
    /// The CPUs whose buffer wrapped, with the oldest time each holds.
    pub wrapped: &'a BTreeMap<u32, u64>,
}

impl Names<'_> {
    /// `` `comm` pid`` with the worker's group or "runq itself".
    pub fn task(&self, t: &Task) -> String {
        if t.pid == 0 {
            return "idle".into();
        }
        let mut s = format!("`{}` {}", t.comm, t.pid);
        if let Some(g) = (self.group_of)(t.pid) {
            let _ = write!(s, " ({g})");
        } else if (self.is_runq)(t.pid) {
            s.push_str(" (runq itself)");
        }
        s
    }
}

/// The sentence on `m`: what the recording shows between `base` (the run's
/// start, absolute ns) plus the moment's window; and the window written.
pub fn summarize(
    events: &[SchedEvent],
    base: u64,
    m: &Moment,
    names: &Names,
) -> (String, u64, u64) {
    let (from, to) = (base + m.from_ns, base + m.to_ns);
    let who = match &m.task_group {
        Some(g) => format!("worker {} ({g})", m.tid),
        None => format!("task {}", m.tid),
    };
    let Some(w) = longest_wait(events, m.tid, from, to) else {
        let cpu = m.cpu.unwrap_or(0);
        let mut s = format!(
            "{who} {}; the recording holds no runnable wait of it from {:.3} s to {:.3} s",
            m.what,
            m.from_ns as f64 / 1e9,
            m.to_ns as f64 / 1e9,
        );
        let start = names
            .wrapped
            .get(&cpu)
            .copied()
            .or(events.first().map(SchedEvent::ts_ns));
        match start {
            Some(t) if t > from => {
                let _ = write!(
                    s,
                    " (CPU {cpu}'s recording starts at {:.3} s: the buffer wrapped)",
                    t.saturating_sub(base) as f64 / 1e9
                );
            }
            _ => {
                let h = holders(events, cpu, from, to);
                let _ = write!(s, "; CPU {cpu} ran {}", holder_list(&h, names));
            }
        }
        return (s, from, to);
    };
    let (h, cpus) = holders_along(events, &w, names.wrapped);
    let place = match cpus.as_slice() {
        [one] => format!("CPU {one}"),
        many => format!("CPUs {}", join_cpus(many)),
    };
    let mut s = format!(
        "{who} {}: in the recording it waited {} ms on {place} from {:.3} s: {} ran {}",
        m.what,
        group_thousands(w.ns() / 1_000_000),
        (w.from_ns as f64 - base as f64) / 1e9,
        if cpus.len() == 1 { &place } else { "they" },
        holder_list(&h, names)
    );
    for cpu in &cpus {
        if let Some(&since) = names.wrapped.get(cpu).filter(|&&t| t > w.from_ns) {
            let _ = write!(
                s,
                " (CPU {cpu}'s events before {:.3} s were overwritten: who ran there before is unknown)",
                (since as f64 - base as f64) / 1e9
            );
        }
    }
    if let Some(k) = &w.waker {
        let _ = write!(s, "; woken by {}", names.task(k));
    }
    match w.migrations.len() {
        0 if w.ran_cpu == w.queued_cpu => s.push_str("; no migration"),
        0 => {
            let _ = write!(s, "; then ran on CPU {}", w.ran_cpu);
        }
        n => {
            let _ = write!(
                s,
                "; moved {n} times while it waited, then ran on CPU {}",
                w.ran_cpu
            );
        }
    }
    let margin = (w.ns() / 10).max(50_000_000);
    (s, w.from_ns.saturating_sub(margin), w.to_ns + margin)
}

/// The three longest holders, then the rest as one figure.
pub fn holder_list(h: &[Holder], names: &Names) -> String {
    if h.is_empty() {
        return "nothing the recording shows".into();
    }
    let mut parts: Vec<String> = h
        .iter()
        .take(3)
        .map(|x| format!("{} {}", names.task(&x.task), fmt_ms(x.ns)))
        .collect();
    let rest: u64 = h.iter().skip(3).map(|x| x.ns).sum();
    if h.len() > 3 {
        parts.push(format!("{} others {}", h.len() - 3, fmt_ms(rest)));
    }
    parts.join(", ")
}

/// ns as ms: `3,011 ms`, or `0.4 ms` below 10 ms.
fn fmt_ms(ns: u64) -> String {
    if ns < 10_000_000 {
        format!("{:.1} ms", ns as f64 / 1e6)
    } else {
        format!("{} ms", group_thousands(ns / 1_000_000))
    }
}

/// 3011 as `3,011`.
pub fn group_thousands(v: u64) -> String {
    let digits = v.to_string();
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    out
}
