//! The scheduler events of a tracefs text trace (`sched_switch`,
//! `sched_wakeup`, `sched_wakeup_new`, `sched_migrate_task`) and a pure
//! parser of the lines the kernel prints for them.

use serde::{Deserialize, Serialize};

/// A task as an event names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Task {
    /// Thread id (0: the idle task).
    pub pid: i32,
    /// Its comm when the event fired.
    pub comm: String,
}

/// One scheduler event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SchedEvent {
    /// `sched_switch`: `prev` left `cpu`, `next` got it.
    Switch {
        /// CLOCK_MONOTONIC, ns.
        ts_ns: u64,
        /// The CPU.
        cpu: u32,
        /// The task that left.
        prev: Task,
        /// Whether it left still runnable (preempted: state `R` or `R+`).
        prev_runnable: bool,
        /// Its state as the kernel prints it (`S` sleeping, `D` in
        /// uninterruptible wait, `T` stopped, `R+` preempted, ...).
        prev_state: String,
        /// The task that got the CPU.
        next: Task,
    },
    /// `sched_wakeup` or `sched_wakeup_new`: `waker` made `task` runnable
    /// on `target_cpu`.
    Wakeup {
        /// CLOCK_MONOTONIC, ns.
        ts_ns: u64,
        /// The CPU the waker ran on.
        cpu: u32,
        /// The task woken.
        task: Task,
        /// The task that woke it (the one running when the event fired).
        waker: Task,
        /// The CPU it was queued on.
        target_cpu: u32,
        /// A new task's first wakeup (`sched_wakeup_new`).
        new: bool,
    },
    /// `sched_migrate_task`: `task` moved from `orig_cpu` to `dest_cpu`.
    Migrate {
        /// CLOCK_MONOTONIC, ns.
        ts_ns: u64,
        /// The task moved.
        task: Task,
        /// Where from.
        orig_cpu: u32,
        /// Where to.
        dest_cpu: u32,
    },
}

impl SchedEvent {
    /// When it happened, CLOCK_MONOTONIC ns.
    pub fn ts_ns(&self) -> u64 {
        match self {
            SchedEvent::Switch { ts_ns, .. }
            | SchedEvent::Wakeup { ts_ns, .. }
            | SchedEvent::Migrate { ts_ns, .. } => *ts_ns,
        }
    }
}

/// The value of `key=` in `body`, up to the next ` next_key=` (or the end
/// when `next_key` is empty). Comms may hold spaces, so values are cut at
/// the following key, not at a space.
fn field<'a>(body: &'a str, key: &str, next_key: &str) -> Option<&'a str> {
    let start = body.find(&format!("{key}="))? + key.len() + 1;
    let rest = &body[start..];
    if next_key.is_empty() {
        return Some(rest.split_whitespace().next().unwrap_or(""));
    }
    let end = rest.find(&format!(" {next_key}="))?;
    Some(&rest[..end])
}

fn num<T: std::str::FromStr>(body: &str, key: &str, next_key: &str) -> Option<T> {
    field(body, key, next_key)?.trim().parse().ok()
}

/// Parses one line of a tracefs `trace` file (trace_clock `mono`):
/// `  comm-pid  [001] d..2.  123.456789: sched_switch: prev_comm=...`.
/// `None` for comments, other events and lines it cannot read.
pub fn parse_line(line: &str) -> Option<SchedEvent> {
    let (head, rest) = line.split_once(": sched_")?;
    let (event, body) = rest.split_once(": ")?;
    let (task_cpu, ts) = head.rsplit_once(char::is_whitespace)?;
    let ts_ns = parse_ts(ts)?;
    let open = task_cpu.rfind('[')?;
    let cpu: u32 = task_cpu[open + 1..]
        .split(']')
        .next()?
        .trim()
        .parse()
        .ok()?;
    let current = task_cpu[..open].trim();
    match event {
        "switch" => parse_switch(ts_ns, cpu, body),
        "wakeup" | "wakeup_new" => {
            let (comm, pid) = current.rsplit_once('-')?;
            let waker = Task {
                pid: pid.parse().ok()?,
                comm: comm.trim().to_string(),
            };
            Some(SchedEvent::Wakeup {
                ts_ns,
                cpu,
                task: Task {
                    pid: num(body, "pid", "prio")?,
                    comm: field(body, "comm", "pid")?.to_string(),
                },
                waker,
                target_cpu: num(body, "target_cpu", "")?,
                new: event == "wakeup_new",
            })
        }
        "migrate_task" => Some(SchedEvent::Migrate {
            ts_ns,
            task: Task {
                pid: num(body, "pid", "prio")?,
                comm: field(body, "comm", "pid")?.to_string(),
            },
            orig_cpu: num(body, "orig_cpu", "dest_cpu")?,
            dest_cpu: num(body, "dest_cpu", "")?,
        }),
        _ => None,
    }
}

fn parse_switch(ts_ns: u64, cpu: u32, body: &str) -> Option<SchedEvent> {
    let (prev_part, next_part) = body.split_once(" ==> ")?;
    let state = field(prev_part, "prev_state", "")?;
    Some(SchedEvent::Switch {
        ts_ns,
        cpu,
        prev: Task {
            pid: num(prev_part, "prev_pid", "prev_prio")?,
            comm: field(prev_part, "prev_comm", "prev_pid")?.to_string(),
        },
        prev_runnable: state.starts_with('R'),
        prev_state: state.to_string(),
        next: Task {
            pid: num(next_part, "next_pid", "next_prio")?,
            comm: field(next_part, "next_comm", "next_pid")?.to_string(),
        },
    })
}

/// `123.456789` (seconds, µs or ns digits) as ns.
fn parse_ts(ts: &str) -> Option<u64> {
    let (s, frac) = ts.split_once('.')?;
    let s: u64 = s.trim().parse().ok()?;
    if frac.is_empty() || frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let f: u64 = frac.parse().ok()?;
    Some(s * 1_000_000_000 + f * 10u64.pow(9 - frac.len() as u32))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(pid: i32, comm: &str) -> Task {
        Task {
            pid,
            comm: comm.into(),
        }
    }

    #[test]
    fn parses_the_kernels_lines() {
        let sw = " tokio-rt-worker-25552   [001] d..2.  3424.321080: sched_switch: \
            prev_comm=tokio rt worker prev_pid=25552 prev_prio=120 prev_state=R+ ==> \
            next_comm=pool-5 next_pid=25538 next_prio=120";
        assert_eq!(
            parse_line(sw),
            Some(SchedEvent::Switch {
                ts_ns: 3_424_321_080_000,
                cpu: 1,
                prev: task(25552, "tokio rt worker"),
                prev_runnable: true,
                prev_state: "R+".into(),
                next: task(25538, "pool-5"),
            })
        );
        let wk = "             cat-26082   [000] dNh4.  3424.322386: sched_wakeup: \
            comm=pool-0 pid=25524 prio=120 target_cpu=000";
        assert_eq!(
            parse_line(wk),
            Some(SchedEvent::Wakeup {
                ts_ns: 3_424_322_386_000,
                cpu: 0,
                task: task(25524, "pool-0"),
                waker: task(26082, "cat"),
                target_cpu: 0,
                new: false,
            })
        );
        let mg = "     migration/0-18      [000] d..3.  3424.323124: sched_migrate_task: \
            comm=bash pid=26082 prio=120 orig_cpu=0 dest_cpu=1";
        assert_eq!(
            parse_line(mg),
            Some(SchedEvent::Migrate {
                ts_ns: 3_424_323_124_000,
                task: task(26082, "bash"),
                orig_cpu: 0,
                dest_cpu: 1,
            })
        );
        let sleep = "  a-1 [000] d..2. 1.000000001: sched_switch: prev_comm=a prev_pid=1 \
            prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120";
        match parse_line(sleep) {
            Some(SchedEvent::Switch {
                prev_runnable,
                ts_ns,
                ..
            }) => assert_eq!((prev_runnable, ts_ns), (false, 1_000_000_001)),
            other => panic!("{other:?}"),
        }
        assert_eq!(parse_line("# tracer: nop"), None);
        assert_eq!(
            parse_line("  a-1 [000] d..2. 1.5: sched_stat_runtime: x"),
            None
        );
        assert_eq!(parse_line("  a-1 [000] d..2. x: sched_switch: prev"), None);
    }
}
