//! The window around a moment as Chrome trace-event JSON (loads in
//! Perfetto and chrome://tracing, the format `runq hud --output` writes):
//! one track per CPU with a complete event per task's stretch on it, the
//! task's runnable wait on a track of its own, and its wakeups and
//! migrations as instant events. Times are µs from the run's start.

use serde_json::{json, Value};

use runq_kernel::sched_trace::SchedEvent;

use super::window::{Names, Wait};

/// The process id the CPU tracks are drawn under.
const CPUS_PID: i32 = 1;
/// The process id of the waiting task's track.
const TASK_PID: i32 = 2;
/// The most CPU stretches a trace keeps (about 150 bytes each): past it,
/// the shortest are left out, and the trace says how many and below what
/// length.
pub const MAX_SLICES: usize = 50_000;

/// The trace of `[from, to]` (absolute ns), `base` being the run's start.
pub fn trace(
    events: &[SchedEvent],
    base: u64,
    (from, to): (u64, u64),
    tid: i32,
    wait: Option<&Wait>,
    names: &Names,
) -> Value {
    let us = |ns: u64| ns.saturating_sub(base) as f64 / 1000.0;
    let mut out: Vec<Value> = vec![
        json!({"ph": "M", "name": "process_name", "pid": CPUS_PID, "args": {"name": "CPUs"}}),
        json!({"ph": "M", "name": "process_name", "pid": TASK_PID, "args": {"name": "waiting task"}}),
        json!({"ph": "M", "name": "thread_name", "pid": TASK_PID, "tid": tid,
               "args": {"name": format!("{tid}")}}),
    ];
    let mut slices: Vec<(u32, u64, u64, &runq_kernel::sched_trace::Task)> = Vec::new();
    let mut running: std::collections::BTreeMap<u32, (u64, &runq_kernel::sched_trace::Task)> =
        Default::default();
    for e in events.iter().filter(|e| e.ts_ns() <= to) {
        match e {
            SchedEvent::Switch {
                ts_ns,
                cpu,
                prev,
                next,
                ..
            } => {
                let start = running
                    .get(cpu)
                    .map_or(from.max(events[0].ts_ns()), |r| r.0);
                if *ts_ns > from && prev.pid != 0 {
                    let start = start.max(from);
                    slices.push((*cpu, start, ts_ns - start, prev));
                }
                running.insert(*cpu, (*ts_ns, next));
            }
            e => out.extend(task_instant(e, tid, from, base, names)),
        }
    }
    for (cpu, (start, task)) in &running {
        let start = (*start).max(from);
        if task.pid != 0 && start < to {
            slices.push((*cpu, start, to - start, task));
        }
    }
    let (cutoff, left_out) = shortest_kept(&mut slices);
    for (cpu, start, dur, task) in slices {
        out.push(json!({"ph": "X", "cat": "run", "pid": CPUS_PID, "tid": cpu,
            "name": names.task(task), "ts": us(start), "dur": dur as f64 / 1000.0}));
    }
    for cpu in running.keys() {
        out.push(
            json!({"ph": "M", "name": "thread_name", "pid": CPUS_PID, "tid": cpu,
                        "args": {"name": format!("CPU {cpu}")}}),
        );
    }
    if let Some(w) = wait {
        out.push(
            json!({"ph": "X", "cat": "wait", "pid": TASK_PID, "tid": tid,
            "name": format!("runnable, queued on CPU {}", w.queued_cpu),
            "ts": us(w.from_ns), "dur": w.ns() as f64 / 1000.0}),
        );
    }
    json!({"traceEvents": out, "displayTimeUnit": "ms",
           "runq_evidence": {"slices_left_out": left_out, "left_out_shorter_than_us": cutoff as f64 / 1000.0}})
}

/// A wakeup or a migration of `tid` at or after `from`, as an instant
/// event on its track.
fn task_instant(e: &SchedEvent, tid: i32, from: u64, base: u64, names: &Names) -> Option<Value> {
    let us = |ns: u64| ns.saturating_sub(base) as f64 / 1000.0;
    match e {
        SchedEvent::Wakeup {
            ts_ns,
            task,
            waker,
            target_cpu,
            ..
        } if task.pid == tid && *ts_ns >= from => Some(
            json!({"ph": "i", "s": "t", "cat": "wakeup", "pid": TASK_PID,
            "tid": tid, "name": "woken", "ts": us(*ts_ns),
            "args": {"waker": names.task(waker), "target_cpu": target_cpu}}),
        ),
        SchedEvent::Migrate {
            ts_ns,
            task,
            orig_cpu,
            dest_cpu,
        } if task.pid == tid && *ts_ns >= from => Some(
            json!({"ph": "i", "s": "t", "cat": "migrate", "pid": TASK_PID,
            "tid": tid, "name": format!("migrated {orig_cpu} -> {dest_cpu}"),
            "ts": us(*ts_ns)}),
        ),
        _ => None,
    }
}

/// Leaves out all but the [`MAX_SLICES`] longest stretches; returns the
/// length the kept ones reach (0 when none was left out) and how many went.
fn shortest_kept<T>(slices: &mut Vec<(u32, u64, u64, T)>) -> (u64, usize) {
    if slices.len() <= MAX_SLICES {
        return (0, 0);
    }
    let mut lens: Vec<u64> = slices.iter().map(|s| s.2).collect();
    lens.sort_unstable_by(|a, b| b.cmp(a));
    let cutoff = lens[MAX_SLICES - 1];
    let before = slices.len();
    slices.retain(|s| s.2 > cutoff);
    (cutoff, before - slices.len())
}
