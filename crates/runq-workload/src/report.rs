//! What each worker hands back: the [`WorkerReport`] and its parts.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

/// Most samples kept per reservoir (wake latencies, iteration costs).
pub const MAX_WAKE_SAMPLES: usize = 100_000;

/// A move of the worker from one CPU to another, seen at a checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Migration {
    /// Time since the work loop started, in ms.
    pub at_ms: u64,
    /// CPU at the previous checkpoint.
    pub from_cpu: usize,
    /// CPU at this checkpoint.
    pub to_cpu: usize,
}

/// How a worker that handed back no report ended (snake_case in JSON,
/// `{"signaled": 9}`; documents of schema 1 spelled it `{"Signaled": 9}`,
/// which still reads).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkerExitInfo {
    /// Exited with this status code.
    #[serde(alias = "Exited")]
    Exited(i32),
    /// Killed by this signal number.
    #[serde(alias = "Signaled")]
    Signaled(i32),
    /// Still running at the collection deadline (then SIGKILLed).
    #[serde(alias = "TimedOut")]
    TimedOut,
    /// `waitpid` failed; the errno rendering.
    #[serde(alias = "WaitFailed")]
    WaitFailed(String),
    /// A thread-mode worker panicked; the panic message.
    #[serde(alias = "Panicked")]
    Panicked(String),
    /// The worker was never created (e.g. fork failed); why.
    #[serde(alias = "NotStarted")]
    NotStarted(String),
}

impl std::fmt::Display for WorkerExitInfo {
    /// How the worker ended, in words: "killed by SIGKILL", "exited with
    /// status 3", "still running at the collection deadline".
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WorkerExitInfo::Exited(code) => write!(f, "exited with status {code}"),
            WorkerExitInfo::Signaled(sig) => match signal_name(*sig) {
                Some(name) => write!(f, "killed by {name}"),
                None => write!(f, "killed by signal {sig}"),
            },
            WorkerExitInfo::TimedOut => {
                f.write_str("still running at the collection deadline (killed)")
            }
            WorkerExitInfo::WaitFailed(e) => write!(f, "could not be waited for: {e}"),
            WorkerExitInfo::Panicked(msg) => write!(f, "panicked: {msg}"),
            WorkerExitInfo::NotStarted(why) => write!(f, "never started: {why}"),
        }
    }
}

/// Serde's test for counters left out when zero.
fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Per-worker telemetry, produced by the worker at the end of its loop.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct WorkerReport {
    /// Thread id of the worker (its pid in process mode).
    pub tid: u32,
    /// Work units done (the unit depends on the work type).
    pub work_units: u64,
    /// CPU time of the worker's loop, in ns.
    pub cpu_time_ns: u64,
    /// Wall time of the worker's loop, in ns.
    pub wall_time_ns: u64,
    /// `wall_time_ns - cpu_time_ns`.
    pub off_cpu_ns: u64,
    /// CPU changes seen at checkpoints.
    pub migration_count: u64,
    /// Every CPU seen at a checkpoint.
    pub cpus_used: BTreeSet<usize>,
    /// The migrations themselves (first ones, capped).
    pub migrations: Vec<Migration>,
    /// The longest scheduling gap, in ms: the most time the worker spent
    /// runnable and not running within one 50 ms window (the kernel's
    /// run delay; see `crate::gap`). Sleeps it planned are not gaps.
    pub max_gap_ms: u64,
    /// CPU the worker was on when the window of the longest gap closed.
    pub max_gap_cpu: usize,
    /// When that window closed, in ms since the loop started.
    pub max_gap_at_ms: u64,
    /// What `max_gap_ms` was measured from.
    #[serde(default)]
    pub max_gap_source: crate::gap::GapSource,
    /// Reservoir sample of the type's latency figure, in ns; what it
    /// measures is the type's `WakeFigure`: for the types that block on a
    /// partner a wake-up latency, from the waker's stamp just before its
    /// wake call to running again (see `crate::wake_stamp`); for planned
    /// sleeps their overshoot; for yields and I/O the time across the call.
    pub resume_latencies_ns: Vec<u64>,
    /// Every wake latency observed, including those the reservoir dropped.
    pub wake_sample_total: u64,
    /// Reservoir sample of per-iteration wall-clock cost, in ns.
    pub iteration_costs_ns: Vec<u64>,
    /// Every iteration cost observed.
    pub iteration_cost_sample_total: u64,
    /// Reservoir sample of request latencies, ns (Schbench: from the
    /// worker's wake to its request's end, think time included; Taobench:
    /// from a client's first post to its operation's end); empty for the
    /// other types.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub request_latencies_ns: Vec<u64>,
    /// Every request latency observed.
    #[serde(skip_serializing_if = "is_zero")]
    pub request_sample_total: u64,
    /// Outer-loop iterations.
    pub iterations: u64,
    /// schedstat field 2 delta: time runnable but waiting, ns.
    pub schedstat_run_delay_ns: u64,
    /// schedstat field 3 delta: times picked to run.
    pub schedstat_run_count: u64,
    /// schedstat field 1 delta: time on CPU, ns.
    pub schedstat_cpu_time_ns: u64,
    /// True when the worker reached its natural end.
    pub completed: bool,
    /// Pages per NUMA node after the loop (from numa_maps).
    pub numa_pages: BTreeMap<usize, u64>,
    /// Host `numa_pages_migrated` delta across the loop.
    pub vmstat_numa_pages_migrated: u64,
    /// `Some` only on sentinel reports synthesised by the parent.
    pub exit_info: Option<WorkerExitInfo>,
    /// True for the messenger of a fan-out group.
    pub is_messenger: bool,
    /// The worker's role in its group, for types whose workers have
    /// different duties (0 for the rest; a fan-out's messenger 1; a
    /// priority inversion's low, medium and high 0, 1 and 2): checks that
    /// compare workers compare them within a role.
    #[serde(default)]
    pub role: u8,
    /// Index (in this group) of a partner the worker lost mid-run: its
    /// end of their pipes closed, so this worker stopped early.
    pub partner_lost: Option<usize>,
    /// Open-loop types (RequestRate): arrivals whose intended time had
    /// passed when the run stopped and that no worker had taken, counted
    /// by the worker holding the arrival clock (the others say `None`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backlog: Option<u64>,
    /// 0 for the primary group, 1..=N for composed groups.
    pub group_idx: usize,
    /// Why the requested affinity or memory policy could not be applied.
    pub affinity_error: Option<String>,
    /// Why the worker could not be started as planned: its cgroup
    /// placement or its start byte failed (sentinels only).
    pub start_error: Option<String>,
    /// The waits the worker declared as planned (sleeps, timed bursts, a
    /// partner's planned interval), ns, as declared: a sleep cut short by
    /// the stop counts whole. Tells planned idleness from being stuck.
    pub planned_wait_ns: u64,
    /// When this worker's watchdog signalled the scheduler, and the stall
    /// it saw (`None`: it never fired).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub watchdog: Option<WatchdogFiring>,
    /// A worker killed at the collection deadline that was runnable then
    /// (state R): its last wait had not ended, and schedstat, which counts
    /// a wait once it ends, left it out (sentinels only).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub runnable_at_deadline: bool,
}

/// A watchdog's firing: the worker went `stall_ms` without running while
/// runnable (or, without schedstat, without finishing an iteration),
/// and sent SIGUSR2 to the scheduler `at_ms` into its loop.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WatchdogFiring {
    /// When it fired, ms since the worker's loop started.
    pub at_ms: u64,
    /// The stall it saw, ms.
    pub stall_ms: u64,
}

impl WorkerReport {
    /// The report the parent synthesises for a worker that sent none.
    pub fn sentinel(tid: u32, group_idx: usize, exit_info: WorkerExitInfo) -> Self {
        WorkerReport {
            tid,
            group_idx,
            completed: false,
            exit_info: Some(exit_info),
            ..Default::default()
        }
    }
}

/// The name of signal `sig` among those a worker or a scheduler commonly
/// dies of, or `None`.
pub(crate) fn signal_name(sig: i32) -> Option<&'static str> {
    Some(match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGTERM => "SIGTERM",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_round_trip() {
        let mut r = WorkerReport {
            tid: 42,
            work_units: 7,
            completed: true,
            ..Default::default()
        };
        r.cpus_used.insert(1);
        r.numa_pages.insert(0, 12);
        r.migrations.push(Migration {
            at_ms: 3,
            from_cpu: 0,
            to_cpu: 1,
        });
        r.affinity_error = Some("EINVAL".into());
        let text = serde_json::to_string(&r).unwrap();
        assert_eq!(serde_json::from_str::<WorkerReport>(&text).unwrap(), r);
    }

    #[test]
    fn sentinel_is_incomplete() {
        let r = WorkerReport::sentinel(9, 2, WorkerExitInfo::Signaled(9));
        assert!(!r.completed);
        assert_eq!(r.group_idx, 2);
        assert_eq!(r.exit_info, Some(WorkerExitInfo::Signaled(9)));
        let back: WorkerReport = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
        assert_eq!(back, r);
    }

    #[test]
    fn missing_fields_default() {
        let r: WorkerReport = serde_json::from_str(r#"{"tid": 5, "future_field": 1}"#).unwrap();
        assert_eq!(r.tid, 5);
        assert_eq!(r.work_units, 0);
    }
}
