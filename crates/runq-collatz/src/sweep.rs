//! The study of the seed in one call: run the benchmark from one process
//! to past the CPU count, each point without a profiler and with each
//! profiler given (in a seeded shuffled order, see [`crate::order`], so
//! every curve comes from the same minutes and drift tilts none), fit the
//! curves and derive each profiler's latency and overhead against the
//! baseline ([`crate::summary`]).
//!
//! Each point runs the benchmark as a child process (`COMMAND N OUTER
//! INNER TARGET --json --hold`) that waits for one byte on stdin before it
//! forks its workers, so a profiler given the child's pid is attached
//! before the timed work starts.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use runq_kernel::guard::Guard;

use crate::config::{Config, Target};
use crate::order::{self, PlannedRun};
use crate::proc_cpu::tree_cpu_seconds;
use crate::runner::RunResult;
pub use crate::summary::{summarize, Curve, Derived, Point, Profiled, SlopeChange, SweepResult};
use crate::tsc::TscInfo;

/// What to sweep.
#[derive(Debug, Clone)]
pub struct SweepConfig {
    /// The benchmark command: program and leading arguments (e.g. `runq
    /// collatz`); the point's arguments are appended.
    pub command: Vec<OsString>,
    /// Largest process count.
    pub max_procs: usize,
    /// Runs per point and mode.
    pub repeats: usize,
    /// Outer loops per run.
    pub outer: u64,
    /// Inner loops per run.
    pub inner: u64,
    /// Call-chain argument rule.
    pub target: Target,
    /// Profiler commands with `{pid}`, run through `sh -c`; each point runs
    /// once without and once with each of them.
    pub profilers: Vec<String>,
    /// Time given the profiler to attach before the work starts.
    pub settle: Duration,
    /// Seed of the run order.
    pub seed: u64,
}

/// Why a sweep stopped.
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    /// The benchmark child could not run or failed.
    #[error("benchmark run with {procs} processes failed: {reason}")]
    Run {
        /// Process count of the failing point.
        procs: usize,
        /// What went wrong.
        reason: String,
    },
    /// The profiler command could not start.
    #[error("could not start the profiler {command:?}: {reason}")]
    Profiler {
        /// The command.
        command: String,
        /// What went wrong.
        reason: String,
    },
    /// A signal (SIGINT, SIGTERM, SIGHUP, SIGQUIT) ended the sweep: the
    /// running benchmark was killed and its profiler stopped.
    #[error(
        "interrupted after {done} of {total} runs; the benchmark and its profiler were stopped"
    )]
    Interrupted {
        /// Runs finished.
        done: usize,
        /// Runs planned.
        total: usize,
    },
}

/// Every run of the sweep, in the order they run (see [`crate::order`]).
pub fn schedule(cfg: &SweepConfig) -> Vec<PlannedRun> {
    order::schedule(cfg.max_procs, cfg.repeats, cfg.profilers.len(), cfg.seed)
}

/// Runs the sweep; `progress(done, total)` is called after every run.
/// When `interrupt` turns true the running benchmark is killed, its
/// profiler stopped, and the sweep ends with [`SweepError::Interrupted`].
pub fn run_sweep(
    cfg: &SweepConfig,
    tsc: TscInfo,
    interrupt: &AtomicBool,
    mut progress: impl FnMut(usize, usize),
) -> Result<SweepResult, SweepError> {
    let plan = schedule(cfg);
    let mut points = Vec::with_capacity(plan.len());
    let interrupted = |done| SweepError::Interrupted {
        done,
        total: plan.len(),
    };
    for (i, &(procs, repeat, profiler)) in plan.iter().enumerate() {
        if interrupt.load(Ordering::Relaxed) {
            return Err(interrupted(i));
        }
        let point = run_point(cfg, &tsc, procs, repeat, profiler, interrupt);
        if interrupt.load(Ordering::Relaxed) {
            return Err(interrupted(i));
        }
        points.push(point?);
        progress(i + 1, plan.len());
    }
    Ok(summarize(tsc, cfg.seed, points, &cfg.profilers))
}

/// Kills the benchmark child `pid` when `interrupt` turns true (its
/// output is read with blocking reads that a signal does not end); stops
/// watching once `done` is set.
fn kill_on_interrupt(pid: u32, interrupt: &AtomicBool, done: &AtomicBool) {
    while !done.load(Ordering::Relaxed) {
        if interrupt.load(Ordering::Relaxed) {
            // SAFETY: killing our own child, reaped only after `done`.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Starts the benchmark child, held before its work starts.
fn spawn_benchmark(cfg: &SweepConfig, procs: usize) -> std::io::Result<Child> {
    let (program, lead) = cfg.command.split_first().expect("a benchmark command");
    Command::new(program)
        .args(lead)
        .args([
            procs.to_string(),
            cfg.outer.to_string(),
            cfg.inner.to_string(),
            cfg.target.as_number().to_string(),
        ])
        .args(["--json", "--hold"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
}

/// Starts `sh -c CMD` with `{pid}` replaced, in its own process group,
/// which `guard` SIGKILLs if runq dies before it stops the profiler.
fn spawn_profiler(template: &str, pid: u32, guard: Option<&Guard>) -> Result<Child, SweepError> {
    use std::os::unix::process::CommandExt;
    let command = template.replace("{pid}", &pid.to_string());
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(&command)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0);
    if let Some(fd) = guard.map(Guard::announce_fd) {
        let parent = std::process::id() as libc::pid_t;
        // SAFETY: announce_group makes only async-signal-safe calls.
        unsafe { cmd.pre_exec(move || runq_kernel::guard::announce_group(fd, parent)) };
    }
    cmd.spawn().map_err(|e| SweepError::Profiler {
        command,
        reason: e.to_string(),
    })
}

/// A profiler's process group, SIGKILLed by a guard process if runq dies
/// before [`stop_profiler`] (a SIGKILL of runq would leave it running).
struct Profiler {
    child: Child,
    _guard: Option<Guard>,
}

/// SIGINT to the profiler's group (profilers flush on it), SIGKILL after
/// 5 s, then reap.
fn stop_profiler(Profiler { mut child, .. }: Profiler) {
    let pgid = child.id() as i32;
    // SAFETY: signalling a process group we created.
    unsafe { libc::kill(-pgid, libc::SIGINT) };
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: as above.
    unsafe { libc::kill(-pgid, libc::SIGKILL) };
    let _ = child.wait();
}

/// Starts profiler `k` on the held benchmark and gives it the settle
/// time; an error when it is gone by then (command not found, no
/// permission), which would make the run a second baseline.
fn attach_profiler(cfg: &SweepConfig, k: usize, child: &mut Child) -> Result<Profiler, SweepError> {
    let abandon = |child: &mut Child| {
        let _ = child.kill();
        let _ = child.wait();
    };
    let guard = Guard::spawn(Vec::new()).ok();
    let mut p = spawn_profiler(&cfg.profilers[k], child.id(), guard.as_ref())
        .inspect_err(|_| abandon(child))?;
    std::thread::sleep(cfg.settle);
    if let Ok(Some(status)) = p.try_wait() {
        abandon(child);
        return Err(SweepError::Profiler {
            command: cfg.profilers[k].clone(),
            reason: format!("it exited ({status}) before the benchmark started"),
        });
    }
    Ok(Profiler {
        child: p,
        _guard: guard,
    })
}

/// CPU seconds of the profiler's process tree now.
fn profiler_cpu(p: Option<&Profiler>) -> Option<f64> {
    p.map(|p| tree_cpu_seconds(Path::new("/proc"), p.child.id() as i32))
}

fn run_point(
    cfg: &SweepConfig,
    tsc: &TscInfo,
    procs: usize,
    repeat: usize,
    profiler: Option<usize>,
    interrupt: &AtomicBool,
) -> Result<Point, SweepError> {
    let fail = |reason: String| SweepError::Run { procs, reason };
    let mut child = spawn_benchmark(cfg, procs).map_err(|e| fail(e.to_string()))?;
    let (pid, done) = (child.id(), AtomicBool::new(false));
    std::thread::scope(|s| {
        s.spawn(|| kill_on_interrupt(pid, interrupt, &done));
        let point = measure_point(cfg, tsc, (procs, repeat, profiler), &mut child);
        done.store(true, Ordering::Relaxed);
        point
    })
}

/// Runs one point on the held benchmark `child`: attaches the profiler,
/// releases the benchmark and reads its result.
fn measure_point(
    cfg: &SweepConfig,
    tsc: &TscInfo,
    (procs, repeat, profiler): PlannedRun,
    child: &mut Child,
) -> Result<Point, SweepError> {
    let fail = |reason: String| SweepError::Run { procs, reason };
    let prof = match profiler {
        Some(k) => Some(attach_profiler(cfg, k, child)?),
        None => None,
    };
    // The window: from releasing the benchmark to its result. The
    // profiler's CPU is read at both ends, so its start-up is not counted.
    let (cpu_start, window_start) = (profiler_cpu(prof.as_ref()), Instant::now());
    let released = child.stdin.take().map(|mut s| s.write_all(b"g"));
    let mut out = String::new();
    if let Some(mut o) = child.stdout.take() {
        let _ = o.read_to_string(&mut out);
    }
    let (cpu_end, cpu_window_s) = (
        profiler_cpu(prof.as_ref()),
        window_start.elapsed().as_secs_f64(),
    );
    let status = child.wait().map_err(|e| fail(e.to_string()));
    if let Some(p) = prof {
        stop_profiler(p);
    }
    let status = status?;
    if !status.success() || !matches!(released, Some(Ok(()))) {
        let mut err = String::new();
        if let Some(mut e) = child.stderr.take() {
            let _ = e.read_to_string(&mut err);
        }
        return Err(fail(format!("{status}: {}", err.trim())));
    }
    let result: RunResult = parse_run_json(&out).map_err(fail)?;
    // The timed window: mean per-process ticks, in seconds.
    let wall_s = result.ticks as f64 / procs.max(1) as f64 / tsc.hz;
    Ok(Point {
        procs,
        repeat,
        profiler,
        result,
        wall_s,
        cpu_window_s,
        profiler_cpu_s: cpu_start.zip(cpu_end).map(|(a, b)| (b - a).max(0.0)),
    })
}

/// A `u64` written as a JSON string (or, by older runq, as a number).
#[derive(serde::Deserialize)]
#[serde(untagged)]
enum NumberText {
    Number(u64),
    Text(String),
}

impl NumberText {
    fn value(&self) -> Result<u64, String> {
        match self {
            NumberText::Number(v) => Ok(*v),
            NumberText::Text(t) => t.parse().map_err(|_| format!("{t:?} is not a count")),
        }
    }
}

/// Reads the result a `--json` run printed.
pub fn parse_run_json(text: &str) -> Result<RunResult, String> {
    #[derive(serde::Deserialize)]
    struct Printed {
        procs: usize,
        outer: u64,
        inner: u64,
        target: NumberText,
        total_calls: u64,
        ticks: u64,
        ticks_per_call: f64,
    }
    let p: Printed = serde_json::from_str(text.trim())
        .map_err(|e| format!("unreadable benchmark output ({e}): {:?}", text.trim()))?;
    Ok(RunResult {
        config: Config {
            procs: p.procs,
            outer: p.outer,
            inner: p.inner,
            target: match p.target.value()? {
                0 => Target::EachIndex,
                v => Target::Value(v),
            },
        },
        total_calls: p.total_calls,
        ticks: p.ticks,
        ticks_per_call: p.ticks_per_call,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schedule_follows_the_seed() {
        let cfg = SweepConfig {
            command: vec!["x".into()],
            max_procs: 3,
            repeats: 2,
            outer: 1,
            inner: 1,
            target: Target::EachIndex,
            profilers: vec!["p {pid}".into()],
            settle: Duration::ZERO,
            seed: 5,
        };
        assert_eq!(schedule(&cfg), order::schedule(3, 2, 1, 5));
        assert_eq!(schedule(&cfg).len(), 12);
    }

    #[test]
    fn reads_the_json_a_run_prints() {
        let text = r#"{"procs":2,"outer":1,"inner":5,"target":"7","total_calls":160,"ticks":800,"ticks_per_call":5.0,"units":{}}"#;
        let r = parse_run_json(text).unwrap();
        assert_eq!(r.config.target, Target::Value(7));
        assert_eq!(r.total_calls, 160);
        assert!(parse_run_json("not json").is_err());
    }
}
