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

/// One SpinWait worker whose watchdog has a 500 ms bound, started; its
/// pid.
fn spinner_watched_by(sched: &StandIn) -> (WorkloadHandle, i32) {
    let mut spec = WorkSpec::new(0, WorkType::from_name("SpinWait").unwrap(), 1);
    spec.watchdog = Some(Watchdog {
        stuck_ns: 500_000_000,
        ..sched.watchdog()
    });
    let mut handle = WorkloadHandle::spawn(&[spec]).expect("spawn");
    handle.start();
    let pid = handle.pids()[0].0 as i32;
    (handle, pid)
}

#[test]
#[cfg_attr(not(runq_root), ignore = "needs root (a SCHED_FIFO hog)")]
fn a_worker_starved_on_its_cpu_signals_once_and_says_so() {
    let sched = StandIn::start();
    let (handle, pid) = spinner_watched_by(&sched);
    std::thread::sleep(Duration::from_millis(200));
    let hog = runq_testkit::starve::RtHog::starve(pid);
    let seen = wait_until(Duration::from_secs(10), || sched.signals() > 0);
    drop(hog);
    let reports = handle.stop_and_collect(Duration::from_secs(10));
    assert!(seen, "a starved worker did not signal the scheduler");
    assert_eq!(sched.signals(), 1, "the watchdog signals once per worker");
    let fired = reports[0].watchdog.expect("the report says it fired");
    assert!(fired.stall_ms >= 500, "{fired:?}");
    assert!(reports[0].completed, "{reports:?}");
}

#[test]
fn a_stopped_worker_is_not_starved_and_does_not_signal() {
    // SIGSTOP takes the worker off the run queue: no run delay, nothing
    // the scheduler under test did.
    let sched = StandIn::start();
    let (handle, pid) = spinner_watched_by(&sched);
    std::thread::sleep(Duration::from_millis(100));
    // SAFETY: signals to our own child worker.
    unsafe { libc::kill(pid, libc::SIGSTOP) };
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: as above.
    unsafe { libc::kill(pid, libc::SIGCONT) };
    std::thread::sleep(Duration::from_millis(300));
    let reports = handle.stop_and_collect(Duration::from_secs(10));
    std::thread::sleep(Duration::from_millis(300));
    let r = &reports[0];
    // Unless the host itself kept it waiting that long after the resume.
    if r.schedstat_run_delay_ns < 500_000_000 {
        assert_eq!(sched.signals(), 0, "{r:?}");
        assert!(r.watchdog.is_none(), "{r:?}");
    }
}
