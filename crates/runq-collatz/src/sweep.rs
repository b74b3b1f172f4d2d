//! The study of the seed in one call: run the benchmark from one process
//! to past the CPU count, each point without a profiler and then with each
//! profiler given (alternating, so every curve comes from the same
//! minutes), fit the curves and derive each profiler's latency and
//! overhead against the baseline.
//!
//! Each point runs the benchmark as a child process (`COMMAND N OUTER
//! INNER TARGET --json --hold`) that waits for one byte on stdin before it
//! forks its workers, so a profiler given the child's pid is attached
//! before the timed work starts.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::config::{Config, Target};
use crate::fit::{fit_two_elbows, ElbowFit};
use crate::proc_cpu::tree_cpu_seconds;
use crate::runner::RunResult;
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
}

/// One measured run.
#[derive(Debug, Clone, Serialize)]
pub struct Point {
    /// Processes.
    pub procs: usize,
    /// Repeat index.
    pub repeat: usize,
    /// The profiler attached (index into the sweep's profilers), if any.
    pub profiler: Option<usize>,
    /// The run's result.
    pub result: RunResult,
    /// The timed window of the run (mean over its processes), s.
    pub wall_s: f64,
    /// The profiler tree's CPU time during the point, s.
    pub profiler_cpu_s: Option<f64>,
}

/// A fitted curve: mean ticks per call by process count.
#[derive(Debug, Clone, Serialize)]
pub struct Curve {
    /// `(procs, mean ticks_per_call)`, ascending.
    pub means: Vec<(usize, f64)>,
    /// The two-elbow fit, when there are enough points.
    pub fit: Option<ElbowFit>,
}

/// What the profiler did to the curve.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Derived {
    /// Latency: shift of the flat part, ticks per call.
    pub latency_ticks_per_call: f64,
    /// The same, as a percentage of the baseline's flat level.
    pub latency_pct: f64,
    /// Elbow migration: profiled elbows minus baseline elbows, processes.
    pub elbow_shift: [f64; 2],
    /// Change of the slope after saturation, ticks per call per process.
    pub saturated_slope_change: f64,
    /// Fixed shift: mean difference over every process count.
    pub fixed_shift_ticks_per_call: f64,
}

/// One profiler's curve and what it did to the baseline.
#[derive(Debug, Clone, Serialize)]
pub struct Profiled {
    /// The profiler command.
    pub command: String,
    /// The curve with it attached.
    pub curve: Curve,
    /// Its comparison with the baseline (needs fits of both).
    pub derived: Option<Derived>,
    /// Median over every (process count, repeat) of its ticks per call
    /// over the baseline run of the same point and repeat, minus one, in percent: the
    /// slowdown, robust to drift and to single noisy runs.
    pub paired_slowdown_pct: f64,
    /// Profiler CPU seconds per second of profiled run.
    pub profiler_cpu_per_s: f64,
}

/// The sweep's outcome.
#[derive(Debug, Clone, Serialize)]
pub struct SweepResult {
    /// The counter the ticks come from.
    pub tsc: TscInfo,
    /// Every run, in execution order.
    pub points: Vec<Point>,
    /// The curve without a profiler.
    pub baseline: Curve,
    /// Per profiler, in the order given.
    pub profiled: Vec<Profiled>,
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
}

/// The order of runs: for each process count and repeat, the baseline,
/// then each profiler in turn.
pub fn schedule(cfg: &SweepConfig) -> Vec<(usize, usize, Option<usize>)> {
    let modes: Vec<Option<usize>> = std::iter::once(None)
        .chain((0..cfg.profilers.len()).map(Some))
        .collect();
    let mut out = Vec::new();
    for procs in 1..=cfg.max_procs {
        for repeat in 0..cfg.repeats {
            for &m in &modes {
                out.push((procs, repeat, m));
            }
        }
    }
    out
}

/// Runs the sweep; `progress(done, total)` is called after every run.
pub fn run_sweep(
    cfg: &SweepConfig,
    tsc: TscInfo,
    mut progress: impl FnMut(usize, usize),
) -> Result<SweepResult, SweepError> {
    let plan = schedule(cfg);
    let mut points = Vec::with_capacity(plan.len());
    for (i, &(procs, repeat, profiler)) in plan.iter().enumerate() {
        points.push(run_point(cfg, &tsc, procs, repeat, profiler)?);
        progress(i + 1, plan.len());
    }
    Ok(summarize(tsc, points, &cfg.profilers))
}

/// Builds the curves and the derived figures from measured points.
pub fn summarize(tsc: TscInfo, points: Vec<Point>, profilers: &[String]) -> SweepResult {
    let baseline = curve(&points, None);
    let profiled = profilers
        .iter()
        .enumerate()
        .map(|(k, command)| {
            let curve = curve(&points, Some(k));
            let mine: Vec<&Point> = points.iter().filter(|p| p.profiler == Some(k)).collect();
            let cpu: f64 = mine.iter().filter_map(|p| p.profiler_cpu_s).sum();
            let wall: f64 = mine.iter().map(|p| p.wall_s).sum();
            Profiled {
                command: command.clone(),
                derived: derive(&baseline, &curve),
                curve,
                paired_slowdown_pct: paired_slowdown_pct(&points, k),
                profiler_cpu_per_s: if wall > 0.0 { cpu / wall } else { 0.0 },
            }
        })
        .collect();
    SweepResult {
        tsc,
        points,
        baseline,
        profiled,
    }
}

/// Median of (profiled / baseline - 1) over the runs of profiler `k`, each
/// against the baseline run of the same process count and repeat.
fn paired_slowdown_pct(points: &[Point], k: usize) -> f64 {
    let mut ratios: Vec<f64> = points
        .iter()
        .filter(|p| p.profiler == Some(k))
        .filter_map(|p| {
            let base = points
                .iter()
                .find(|b| b.profiler.is_none() && b.procs == p.procs && b.repeat == p.repeat)?;
            Some(p.result.ticks_per_call / base.result.ticks_per_call - 1.0)
        })
        .filter(|r| r.is_finite())
        .collect();
    if ratios.is_empty() {
        return 0.0;
    }
    ratios.sort_by(f64::total_cmp);
    let mid = ratios.len() / 2;
    let median = if ratios.len() % 2 == 1 {
        ratios[mid]
    } else {
        (ratios[mid - 1] + ratios[mid]) / 2.0
    };
    100.0 * median
}

fn curve(points: &[Point], profiler: Option<usize>) -> Curve {
    let mine: Vec<&Point> = points.iter().filter(|p| p.profiler == profiler).collect();
    let mut means: Vec<(usize, f64)> = Vec::new();
    let mut procs: Vec<usize> = mine.iter().map(|p| p.procs).collect();
    procs.sort_unstable();
    procs.dedup();
    for n in procs {
        let ys: Vec<f64> = mine
            .iter()
            .filter(|p| p.procs == n)
            .map(|p| p.result.ticks_per_call)
            .collect();
        means.push((n, ys.iter().sum::<f64>() / ys.len() as f64));
    }
    let xy: Vec<(f64, f64)> = mine
        .iter()
        .map(|p| (p.procs as f64, p.result.ticks_per_call))
        .collect();
    Curve {
        means,
        fit: fit_two_elbows(&xy),
    }
}

fn derive(base: &Curve, prof: &Curve) -> Option<Derived> {
    let (b, p) = (base.fit?, prof.fit?);
    let shifts: Vec<f64> = base
        .means
        .iter()
        .filter_map(|(n, yb)| {
            let yp = prof.means.iter().find(|(m, _)| m == n)?.1;
            Some(yp - yb)
        })
        .collect();
    Some(Derived {
        latency_ticks_per_call: p.flat_level - b.flat_level,
        latency_pct: 100.0 * (p.flat_level - b.flat_level) / b.flat_level,
        elbow_shift: [p.elbows[0] - b.elbows[0], p.elbows[1] - b.elbows[1]],
        saturated_slope_change: p.slope_saturated - b.slope_saturated,
        fixed_shift_ticks_per_call: shifts.iter().sum::<f64>() / shifts.len().max(1) as f64,
    })
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

/// Starts `sh -c CMD` with `{pid}` replaced, in its own process group.
fn spawn_profiler(template: &str, pid: u32) -> Result<Child, SweepError> {
    use std::os::unix::process::CommandExt;
    let command = template.replace("{pid}", &pid.to_string());
    Command::new("sh")
        .arg("-c")
        .arg(&command)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(|e| SweepError::Profiler {
            command,
            reason: e.to_string(),
        })
}

/// SIGINT to the profiler's group (profilers flush on it), SIGKILL after
/// 5 s, then reap.
fn stop_profiler(mut child: Child) {
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

fn run_point(
    cfg: &SweepConfig,
    tsc: &TscInfo,
    procs: usize,
    repeat: usize,
    profiler: Option<usize>,
) -> Result<Point, SweepError> {
    let fail = |reason: String| SweepError::Run { procs, reason };
    let mut child = spawn_benchmark(cfg, procs).map_err(|e| fail(e.to_string()))?;
    let abandon = |child: &mut Child| {
        let _ = child.kill();
        let _ = child.wait();
    };
    let mut prof = match profiler.map(|k| cfg.profilers[k].as_str()) {
        Some(t) => Some(spawn_profiler(t, child.id()).inspect_err(|_| abandon(&mut child))?),
        None => None,
    };
    if let Some(p) = prof.as_mut() {
        std::thread::sleep(cfg.settle);
        // A profiler that is already gone (command not found, no
        // permission) would make this run a second baseline.
        if let Ok(Some(status)) = p.try_wait() {
            abandon(&mut child);
            return Err(SweepError::Profiler {
                command: cfg.profilers[profiler.unwrap_or_default()].clone(),
                reason: format!("it exited ({status}) before the benchmark started"),
            });
        }
    }
    let released = child.stdin.take().map(|mut s| s.write_all(b"g"));
    let mut out = String::new();
    if let Some(mut o) = child.stdout.take() {
        let _ = o.read_to_string(&mut out);
    }
    let status = child.wait().map_err(|e| fail(e.to_string()))?;
    let profiler_cpu_s = prof.map(|p| {
        let cpu = tree_cpu_seconds(Path::new("/proc"), p.id() as i32);
        stop_profiler(p);
        cpu
    });
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
        profiler_cpu_s,
    })
}

/// Reads the result a `--json` run printed.
pub fn parse_run_json(text: &str) -> Result<RunResult, String> {
    #[derive(serde::Deserialize)]
    struct Printed {
        procs: usize,
        outer: u64,
        inner: u64,
        target: u64,
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
            target: if p.target == 0 {
                Target::EachIndex
            } else {
                Target::Value(p.target)
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

    fn point(procs: usize, profiler: Option<usize>, tpc: f64) -> Point {
        Point {
            procs,
            repeat: 0,
            profiler,
            result: RunResult {
                config: Config {
                    procs,
                    outer: 1,
                    inner: 1,
                    target: Target::EachIndex,
                },
                total_calls: 1000,
                ticks: (tpc * 1000.0) as u64,
                ticks_per_call: tpc,
            },
            wall_s: 1.0,
            profiler_cpu_s: profiler.map(|k| 0.25 * (k + 1) as f64),
        }
    }

    #[test]
    fn derives_latency_elbows_and_profiler_cpu() {
        let base = |x: f64| 20.0 + 2.0 * (x - 4.0).max(0.0) + 8.0 * (x - 8.0).max(0.0);
        let prof = |x: f64| 23.0 + 2.0 * (x - 3.0).max(0.0) + 10.0 * (x - 7.0).max(0.0);
        let mut pts = Vec::new();
        for n in 1..=12 {
            pts.push(point(n, None, base(n as f64)));
            pts.push(point(n, Some(0), prof(n as f64)));
            pts.push(point(n, Some(1), 1.01 * base(n as f64)));
        }
        let tsc = TscInfo {
            hz: 1e9,
            invariant: true,
        };
        let r = summarize(tsc, pts, &["a {pid}".into(), "b {pid}".into()]);
        assert_eq!(r.profiled.len(), 2);
        let d = r.profiled[0].derived.expect("derived figures");
        assert!((d.latency_ticks_per_call - 3.0).abs() < 1e-6, "{d:?}");
        assert_eq!(d.elbow_shift, [-1.0, -1.0]);
        assert!((d.saturated_slope_change - 2.0).abs() < 1e-6, "{d:?}");
        assert!((r.profiled[0].profiler_cpu_per_s - 0.25).abs() < 1e-9);
        let b = &r.profiled[1];
        assert_eq!(b.command, "b {pid}");
        assert!(
            (b.paired_slowdown_pct - 1.0).abs() < 1e-9,
            "{}",
            b.paired_slowdown_pct
        );
        assert!((b.profiler_cpu_per_s - 0.5).abs() < 1e-9);
    }

    #[test]
    fn paired_slowdown_is_the_median_of_adjacent_ratios() {
        let mut pts = Vec::new();
        for (repeat, (b, p)) in [(10.0, 10.1), (10.0, 13.0), (20.0, 20.0)]
            .into_iter()
            .enumerate()
        {
            let mut base = point(1, None, b);
            base.repeat = repeat;
            let mut prof = point(1, Some(0), p);
            prof.repeat = repeat;
            pts.extend([base, prof]);
        }
        let got = paired_slowdown_pct(&pts, 0);
        assert!(
            (got - 1.0).abs() < 1e-9,
            "one noisy pair does not move the median: {got}"
        );
    }

    #[test]
    fn schedule_alternates_modes_per_point() {
        let cfg = SweepConfig {
            command: vec!["x".into()],
            max_procs: 2,
            repeats: 2,
            outer: 1,
            inner: 1,
            target: Target::EachIndex,
            profilers: vec!["p {pid}".into(), "q {pid}".into()],
            settle: Duration::ZERO,
        };
        let plan = schedule(&cfg);
        assert_eq!(plan.len(), 12);
        assert_eq!(plan[0], (1, 0, None));
        assert_eq!(plan[1], (1, 0, Some(0)));
        assert_eq!(plan[2], (1, 0, Some(1)));
        assert_eq!(plan[11], (2, 1, Some(1)));
    }

    #[test]
    fn reads_the_json_a_run_prints() {
        let text = r#"{"procs":2,"outer":1,"inner":5,"target":7,"total_calls":160,"ticks":800,"ticks_per_call":5.0,"units":{}}"#;
        let r = parse_run_json(text).unwrap();
        assert_eq!(r.config.target, Target::Value(7));
        assert_eq!(r.total_calls, 160);
        assert!(parse_run_json("not json").is_err());
    }
}
