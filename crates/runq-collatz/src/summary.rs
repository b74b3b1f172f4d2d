//! From a sweep's measured points to its curves and the seed's figures:
//! per mode a curve of mean ticks per call, its two-elbow fit with R² and
//! residuals, and per profiler the latency, elbow migration, asymptotic
//! change, fixed shift, a paired slowdown and its own CPU per second.

use serde::Serialize;

use crate::fit::{fit_two_elbows, ElbowFit};
use crate::runner::RunResult;
use crate::tsc::TscInfo;

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
    /// Wall time from releasing the benchmark to its result, s: the
    /// window over which the profiler's CPU is read.
    pub cpu_window_s: f64,
    /// The profiler tree's CPU time over that window, s (its start-up and
    /// the settle time before are not counted).
    pub profiler_cpu_s: Option<f64>,
}

/// A fitted curve: mean ticks per call by process count.
#[derive(Debug, Clone, Serialize)]
pub struct Curve {
    /// `(procs, mean ticks_per_call)`, ascending.
    pub means: Vec<(usize, f64)>,
    /// The two-elbow fit; `None` when the curve is underdetermined (fewer
    /// than [`crate::fit::MIN_PROCESS_COUNTS`] process counts).
    pub fit: Option<ElbowFit>,
    /// `(procs, mean measured - fitted)`, ascending; empty without a fit.
    pub residuals: Vec<(usize, f64)>,
}

/// The slopes before and after a change, and the change.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SlopeChange {
    /// Without the profiler, ticks per call per process.
    pub baseline: f64,
    /// With it.
    pub profiled: f64,
    /// `profiled - baseline`.
    pub change: f64,
}

impl SlopeChange {
    fn new(baseline: f64, profiled: f64) -> Self {
        SlopeChange {
            baseline,
            profiled,
            change: profiled - baseline,
        }
    }
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
    /// The seed's asymptotic change: the slope after the first elbow (the
    /// fitted slope between the elbows), with against without the
    /// profiler. A profiler that makes the curve linear from the first
    /// elbow on shows here.
    pub asymptotic: SlopeChange,
    /// The slope after the second elbow (saturation), with against without.
    pub saturated: SlopeChange,
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
    /// over the baseline run of the same point and repeat, minus one, in
    /// percent: the slowdown, robust to drift and to single noisy runs.
    pub paired_slowdown_pct: f64,
    /// Profiler CPU seconds per second of the timed windows of its runs
    /// (its CPU read at each window's start and end).
    pub profiler_cpu_per_s: f64,
}

/// The sweep's outcome.
#[derive(Debug, Clone, Serialize)]
pub struct SweepResult {
    /// The counter the ticks come from.
    pub tsc: TscInfo,
    /// The seed of the run order (a JSON string: seeds pass 2^53).
    #[serde(serialize_with = "crate::config::u64_as_string")]
    pub seed: u64,
    /// Every run, in execution order.
    pub points: Vec<Point>,
    /// The curve without a profiler.
    pub baseline: Curve,
    /// Per profiler, in the order given.
    pub profiled: Vec<Profiled>,
}

/// Builds the curves and the derived figures from measured points.
pub fn summarize(tsc: TscInfo, seed: u64, points: Vec<Point>, profilers: &[String]) -> SweepResult {
    let baseline = curve(&points, None);
    let profiled = profilers
        .iter()
        .enumerate()
        .map(|(k, command)| {
            let curve = curve(&points, Some(k));
            let mine: Vec<&Point> = points.iter().filter(|p| p.profiler == Some(k)).collect();
            let cpu: f64 = mine.iter().filter_map(|p| p.profiler_cpu_s).sum();
            let window: f64 = mine.iter().map(|p| p.cpu_window_s).sum();
            Profiled {
                command: command.clone(),
                derived: derive(&baseline, &curve),
                curve,
                paired_slowdown_pct: paired_slowdown_pct(&points, k),
                profiler_cpu_per_s: if window > 0.0 { cpu / window } else { 0.0 },
            }
        })
        .collect();
    SweepResult {
        tsc,
        seed,
        points,
        baseline,
        profiled,
    }
}

/// Median of (profiled / baseline - 1) over the runs of profiler `k`, each
/// against the baseline run of the same process count and repeat.
pub fn paired_slowdown_pct(points: &[Point], k: usize) -> f64 {
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
    let mut procs: Vec<usize> = mine.iter().map(|p| p.procs).collect();
    procs.sort_unstable();
    procs.dedup();
    let means: Vec<(usize, f64)> = procs
        .into_iter()
        .map(|n| {
            let ys: Vec<f64> = mine
                .iter()
                .filter(|p| p.procs == n)
                .map(|p| p.result.ticks_per_call)
                .collect();
            (n, ys.iter().sum::<f64>() / ys.len() as f64)
        })
        .collect();
    let xy: Vec<(f64, f64)> = mine
        .iter()
        .map(|p| (p.procs as f64, p.result.ticks_per_call))
        .collect();
    let fit = fit_two_elbows(&xy);
    let residuals = fit.map_or_else(Vec::new, |f| {
        means
            .iter()
            .map(|&(n, y)| (n, y - f.value_at(n as f64)))
            .collect()
    });
    Curve {
        means,
        fit,
        residuals,
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
        asymptotic: SlopeChange::new(b.slope_middle, p.slope_middle),
        saturated: SlopeChange::new(b.slope_saturated, p.slope_saturated),
        fixed_shift_ticks_per_call: shifts.iter().sum::<f64>() / shifts.len().max(1) as f64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Config, Target};
    use crate::runner::RunResult;

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
            cpu_window_s: 2.0,
            profiler_cpu_s: profiler.map(|k| 0.5 * (k + 1) as f64),
        }
    }

    #[test]
    fn derives_latency_elbows_slopes_and_profiler_cpu() {
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
        let r = summarize(tsc, 9, pts, &["a {pid}".into(), "b {pid}".into()]);
        assert_eq!((r.seed, r.profiled.len()), (9, 2));
        let d = r.profiled[0].derived.expect("derived figures");
        assert!((d.latency_ticks_per_call - 3.0).abs() < 1e-6, "{d:?}");
        assert_eq!(d.elbow_shift, [-1.0, -1.0]);
        assert!((d.asymptotic.baseline - 2.0).abs() < 1e-6, "{d:?}");
        assert!(d.asymptotic.change.abs() < 1e-6, "{d:?}");
        assert!((d.saturated.change - 2.0).abs() < 1e-6, "{d:?}");
        // 0.5 CPU-s over 2 s windows.
        assert!((r.profiled[0].profiler_cpu_per_s - 0.25).abs() < 1e-9);
        let fit = r.baseline.fit.expect("a fit");
        assert!((fit.r_squared - 1.0).abs() < 1e-9);
        assert_eq!(r.baseline.residuals.len(), 12);
        assert!(r.baseline.residuals.iter().all(|(_, e)| e.abs() < 1e-6));
        let b = &r.profiled[1];
        assert_eq!(b.command, "b {pid}");
        assert!((b.paired_slowdown_pct - 1.0).abs() < 1e-9);
        assert!((b.profiler_cpu_per_s - 0.5).abs() < 1e-9);
    }

    #[test]
    fn a_curve_linear_after_the_first_elbow_shows_an_asymptotic_change() {
        let base = |x: f64| 20.0 + 0.2 * (x - 2.0).max(0.0) + 9.8 * (x - 5.0).max(0.0);
        let prof = |x: f64| 20.0 + 10.0 * (x - 2.0).max(0.0) + 0.5 * (x - 6.0).max(0.0);
        let pts: Vec<Point> = (1..=9)
            .flat_map(|n| {
                let x = n as f64;
                [point(n, None, base(x)), point(n, Some(0), prof(x))]
            })
            .collect();
        let tsc = TscInfo {
            hz: 1e9,
            invariant: true,
        };
        let r = summarize(tsc, 1, pts, &["p {pid}".into()]);
        let d = r.profiled[0].derived.expect("derived");
        assert!((d.asymptotic.baseline - 0.2).abs() < 1e-6, "{d:?}");
        assert!((d.asymptotic.profiled - 10.0).abs() < 1e-6, "{d:?}");
    }

    #[test]
    fn few_counts_leave_the_curve_unfitted() {
        let pts: Vec<Point> = (1..=4).map(|n| point(n, None, n as f64)).collect();
        let tsc = TscInfo {
            hz: 1e9,
            invariant: true,
        };
        let r = summarize(tsc, 1, pts, &[]);
        assert!(r.baseline.fit.is_none());
        assert!(r.baseline.residuals.is_empty());
        assert_eq!(r.baseline.means.len(), 4);
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
}
