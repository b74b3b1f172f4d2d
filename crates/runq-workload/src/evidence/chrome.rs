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
                    out.push(json!({"ph": "X", "cat": "run", "pid": CPUS_PID, "tid": cpu,
                        "name": names.task(prev), "ts": us(start.max(from)),
                        "dur": (ts_ns - start.max(from)) as f64 / 1000.0}));
                }
                running.insert(*cpu, (*ts_ns, next));
            }
            SchedEvent::Wakeup {
                ts_ns,
                task,
                waker,
                target_cpu,
                ..
            } if task.pid == tid && *ts_ns >= from => {
                out.push(
                    json!({"ph": "i", "s": "t", "cat": "wakeup", "pid": TASK_PID,
                    "tid": tid, "name": "woken", "ts": us(*ts_ns),
                    "args": {"waker": names.task(waker), "target_cpu": target_cpu}}),
                );
            }
            SchedEvent::Migrate {
                ts_ns,
                task,
                orig_cpu,
                dest_cpu,
            } if task.pid == tid && *ts_ns >= from => {
                out.push(
                    json!({"ph": "i", "s": "t", "cat": "migrate", "pid": TASK_PID,
                    "tid": tid, "name": format!("migrated {orig_cpu} -> {dest_cpu}"),
                    "ts": us(*ts_ns)}),
                );
            }
            _ => {}
        }
    }
    for (cpu, (start, task)) in &running {
        let start = (*start).max(from);
        if task.pid != 0 && start < to {
            out.push(json!({"ph": "X", "cat": "run", "pid": CPUS_PID, "tid": cpu,
                "name": names.task(task), "ts": us(start), "dur": (to - start) as f64 / 1000.0}));
        }
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
    json!({"traceEvents": out, "displayTimeUnit": "ms"})
}
