//! The progress watchdog against a stand-in scheduler: a real shell
//! process that appends a line to a file for every SIGUSR2 it receives.
//! Planned sleeps and bursts of 3 s (longer than the 2 s threshold) must
//! never signal it; a worker stopped with SIGSTOP for 3 s must.

use std::path::PathBuf;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use runq_workload::{Watchdog, WorkSpec, WorkType, WorkerReport, WorkloadHandle};

const STUCK_NS: u64 = 2_000_000_000;
const THREE_S_NS: u64 = 3_000_000_000;

/// The stand-in scheduler; killed and reaped on drop.
struct StandIn {
    child: Child,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl StandIn {
    fn start() -> StandIn {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = dir.path().join("signals");
        std::fs::write(&log, "").expect("create log");
        let script = r#"trap 'echo usr2 >> "$0"' USR2; while :; do sleep 0.05; done"#;
        let child = Command::new("sh")
            .args(["-c", script])
            .arg(&log)
            .spawn()
            .expect("spawn sh");
        // Let the shell install its trap before anyone can signal it.
        wait_until(Duration::from_secs(10), || trap_installed(child.id()));
        StandIn {
            child,
            log,
            _dir: dir,
        }
    }

    fn watchdog(&self) -> Watchdog {
        Watchdog {
            scheduler_pid: self.child.id(),
            stuck_ns: STUCK_NS,
        }
    }

    fn signals(&self) -> usize {
        std::fs::read_to_string(&self.log)
            .expect("read log")
            .lines()
            .count()
    }
}

impl Drop for StandIn {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// True once `pid` catches SIGUSR2 (bit 11 of SigCgt in its status).
fn trap_installed(pid: u32) -> bool {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("SigCgt:"))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        .is_some_and(|mask| mask & (1 << (libc::SIGUSR2 - 1)) != 0)
}

fn wait_until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    done()
}

fn work(json: serde_json::Value) -> WorkType {
    serde_json::from_value(json).expect("work type")
}

/// Every type with a sleep or burst parameter, each set to 3 s.
fn three_second_types() -> Vec<(WorkType, usize)> {
    use serde_json::json;
    vec![
        (
            work(json!({"type": "Bursty", "burst_ms": 1, "sleep_ms": 3000})),
            1,
        ),
        (
            work(json!({"type": "Bursty", "burst_ms": 3000, "sleep_ms": 1})),
            1,
        ),
        (
            work(json!({"type": "IoSyncWrite", "sleep_us": 3_000_000})),
            1,
        ),
        (
            work(json!({"type": "TimerLatency", "period_us": 3_000_000, "mlock": false})),
            1,
        ),
        (
            work(json!({"type": "ThunderingHerd", "interval_us": 3_000_000})),
            3,
        ),
        (
            work(json!({"type": "PriorityInversion", "high_sleep_us": 3_000_000})),
            3,
        ),
        (
            work(json!({"type": "IdleChurn", "burst_us": 1, "sleep_us": 3_000_000})),
            1,
        ),
        (
            work(json!({"type": "Sequence", "phases": [{"kind": "Sleep", "ms": 3000}]})),
            1,
        ),
    ]
}

fn longest_iteration(reports: &[WorkerReport], group: usize) -> u64 {
    reports
        .iter()
        .filter(|r| r.group_idx == group)
        .flat_map(|r| r.iteration_costs_ns.iter().copied())
        .max()
        .unwrap_or(0)
}

#[test]
fn planned_three_second_sleeps_and_bursts_never_signal() {
    let sched = StandIn::start();
    let mut specs = Vec::new();
    for (group, (t, n)) in three_second_types().into_iter().enumerate() {
        let mut spec = WorkSpec::new(group, t, n);
        spec.watchdog = Some(sched.watchdog());
        specs.push(spec);
    }
    let mut handle = WorkloadHandle::spawn(&specs).expect("spawn");
    handle.start();
    std::thread::sleep(Duration::from_secs(7));
    let reports = handle.stop_and_collect(Duration::from_secs(20));
    for (group, spec) in specs.iter().enumerate() {
        let longest = longest_iteration(&reports, group);
        // Sequence's Sleep phase is made of <= 1 ms naps: no long iteration.
        if spec.work.name() != "Sequence" {
            assert!(
                longest >= THREE_S_NS,
                "{}: longest iteration {longest} ns, so the case tested nothing",
                spec.work.name()
            );
        }
    }
    assert!(reports.iter().all(|r| r.completed), "{reports:?}");
    // Give the shell's trap time to log a late signal, if any was sent.
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        sched.signals(),
        0,
        "a planned sleep signalled the scheduler"
    );
}

#[test]
fn a_worker_stopped_for_three_seconds_signals() {
    let sched = StandIn::start();
    let mut spec = WorkSpec::new(0, WorkType::from_name("SpinWait").unwrap(), 1);
    spec.watchdog = Some(sched.watchdog());
    let mut handle = WorkloadHandle::spawn(&[spec]).expect("spawn");
    handle.start();
    let pid = handle.pids()[0].0;
    std::thread::sleep(Duration::from_millis(200));
    // SAFETY: signals to our own child worker.
    unsafe { libc::kill(pid as libc::pid_t, libc::SIGSTOP) };
    std::thread::sleep(Duration::from_secs(3));
    // SAFETY: as above.
    unsafe { libc::kill(pid as libc::pid_t, libc::SIGCONT) };
    let seen = wait_until(Duration::from_secs(20), || sched.signals() > 0);
    let reports = handle.stop_and_collect(Duration::from_secs(10));
    assert!(seen, "a 3 s stall did not signal the scheduler");
    assert_eq!(sched.signals(), 1, "the watchdog signals once per worker");
    assert!(reports[0].completed, "{reports:?}");
}
