//! Per-group summaries of worker reports: work rate, off-CPU share, wake
//! latency percentiles, migrations, the worst scheduling gap, fairness and
//! run delay. Computed once per group; the saved document's figures
//! (runq-results' `results::GroupFigures`) are taken from here.

use runq_common::stats::percentile;
use serde::Serialize;

use crate::report::WorkerReport;
use crate::worktype::WakeFigure;

/// One group's numbers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupSummary {
    /// Group index.
    pub group_idx: usize,
    /// Group name.
    pub name: String,
    /// Work type name.
    pub work_type: String,
    /// Workers in the group.
    pub workers: usize,
    /// Workers without a live report (sentinels).
    pub incomplete: usize,
    /// Total work units.
    pub work_units: u64,
    /// Work units per second of wall time, summed over workers.
    pub work_rate_per_s: f64,
    /// Outer iterations per second, summed over workers.
    pub iterations_per_s: f64,
    /// Off-CPU share of wall time, percent.
    pub off_cpu_pct: f64,
    /// What the wake samples measure (a latency, or a sleep's overshoot).
    pub wake_figure: WakeFigure,
    /// Wake latency percentiles over all sampled wakes, ns.
    pub wake_p50_ns: Option<u64>,
    /// 99th percentile, ns.
    pub wake_p99_ns: Option<u64>,
    /// Largest sampled wake latency, ns.
    pub wake_max_ns: Option<u64>,
    /// Wakes observed (including unsampled).
    pub wake_total: u64,
    /// Request latency percentiles (Schbench: from a worker's wake to its
    /// request's end; Taobench: from a client's first post to its
    /// operation's end), ns; absent for the other types.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_p50_ns: Option<u64>,
    /// 99th percentile, ns.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_p99_ns: Option<u64>,
    /// Migrations over all workers.
    pub migrations: u64,
    /// Worst gap between checkpoints, ms.
    pub max_gap_ms: u64,
    /// Summed schedstat run delay, ns.
    pub run_delay_ns: u64,
    // The figures below are the saved document's (its repeats carry them,
    // see runq-results' `results`); they stay out of the outcome's own JSON,
    // whose layout predates them.
    /// 90th percentile of the wake samples, ns.
    #[serde(skip)]
    pub wake_p90_ns: Option<u64>,
    /// 99.9th percentile of the wake samples, ns.
    #[serde(skip)]
    pub wake_p99_9_ns: Option<u64>,
    /// Wake samples the percentiles were computed from (the reservoirs).
    #[serde(skip)]
    pub wake_samples: u64,
    /// Jain's fairness index of the live workers' CPU time (1 = equal
    /// shares, 1/n = one worker got everything); `None` below two workers.
    #[serde(skip)]
    pub fairness: Option<f64>,
    /// Summed run delay over summed wall time, percent; `None` when no
    /// worker has schedstat data (no run was counted).
    #[serde(skip)]
    pub run_delay_pct: Option<f64>,
}

/// Jain's index of `xs`: `(sum x)^2 / (n * sum x^2)`; `None` below two
/// values or when every value is zero.
fn jain(xs: &[f64]) -> Option<f64> {
    let sq: f64 = xs.iter().map(|x| x * x).sum();
    (xs.len() >= 2 && sq > 0.0).then(|| {
        let s: f64 = xs.iter().sum();
        s * s / (xs.len() as f64 * sq)
    })
}

/// Summed schedstat run delay over summed wall time, percent; `None` when
/// no worker has schedstat data (no run was counted).
fn run_delay_pct(live: &[&&WorkerReport]) -> Option<f64> {
    let wall: u64 = live.iter().map(|r| r.wall_time_ns).sum();
    if wall == 0 || live.iter().all(|r| r.schedstat_run_count == 0) {
        return None;
    }
    let delay: u64 = live.iter().map(|r| r.schedstat_run_delay_ns).sum();
    Some(delay as f64 * 100.0 / wall as f64)
}

/// Summarises the reports of group `group_idx`.
pub fn summarize_group(
    group_idx: usize,
    name: &str,
    work_type: &str,
    wake_figure: WakeFigure,
    reports: &[WorkerReport],
) -> GroupSummary {
    let mine: Vec<&WorkerReport> = reports
        .iter()
        .filter(|r| r.group_idx == group_idx)
        .collect();
    let live: Vec<&&WorkerReport> = mine.iter().filter(|r| r.exit_info.is_none()).collect();
    let mut wakes: Vec<u64> = live
        .iter()
        .flat_map(|r| r.resume_latencies_ns.iter().copied())
        .collect();
    wakes.sort_unstable();
    let mut requests: Vec<u64> = live
        .iter()
        .flat_map(|r| r.request_latencies_ns.iter().copied())
        .collect();
    requests.sort_unstable();
    let rate = |f: fn(&WorkerReport) -> u64| -> f64 {
        live.iter()
            .filter(|r| r.wall_time_ns > 0)
            .map(|r| f(r) as f64 * 1e9 / r.wall_time_ns as f64)
            .sum()
    };
    let wall: u64 = live.iter().map(|r| r.wall_time_ns).sum();
    let off: u64 = live.iter().map(|r| r.off_cpu_ns).sum();
    let cpu: Vec<f64> = live.iter().map(|r| r.cpu_time_ns as f64).collect();
    GroupSummary {
        group_idx,
        name: name.to_string(),
        work_type: work_type.to_string(),
        workers: mine.len(),
        incomplete: mine.len() - live.len(),
        work_units: live.iter().map(|r| r.work_units).sum(),
        work_rate_per_s: rate(|r| r.work_units),
        iterations_per_s: rate(|r| r.iterations),
        off_cpu_pct: if wall == 0 {
            0.0
        } else {
            off as f64 * 100.0 / wall as f64
        },
        wake_figure,
        wake_p50_ns: percentile(&wakes, 50.0),
        wake_p99_ns: percentile(&wakes, 99.0),
        wake_max_ns: wakes.last().copied(),
        wake_total: live.iter().map(|r| r.wake_sample_total).sum(),
        request_p50_ns: percentile(&requests, 50.0),
        request_p99_ns: percentile(&requests, 99.0),
        migrations: live.iter().map(|r| r.migration_count).sum(),
        max_gap_ms: live.iter().map(|r| r.max_gap_ms).max().unwrap_or(0),
        run_delay_ns: live.iter().map(|r| r.schedstat_run_delay_ns).sum(),
        wake_p90_ns: percentile(&wakes, 90.0),
        wake_p99_9_ns: percentile(&wakes, 99.9),
        wake_samples: wakes.len() as u64,
        fairness: jain(&cpu),
        run_delay_pct: run_delay_pct(&live),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::WorkerExitInfo;

    #[test]
    fn jain_index() {
        assert_eq!(jain(&[5.0, 5.0]), Some(1.0));
        assert_eq!(jain(&[1.0, 0.0]), Some(0.5));
        assert_eq!(jain(&[1.0]), None);
        assert_eq!(jain(&[0.0, 0.0]), None);
    }

    #[test]
    fn summary_counts_sentinels_apart() {
        let live = WorkerReport {
            group_idx: 1,
            work_units: 2000,
            iterations: 10,
            wall_time_ns: 1_000_000_000,
            off_cpu_ns: 250_000_000,
            resume_latencies_ns: vec![10, 20, 30],
            wake_sample_total: 3,
            migration_count: 2,
            max_gap_ms: 7,
            completed: true,
            ..Default::default()
        };
        let dead = WorkerReport::sentinel(5, 1, WorkerExitInfo::Signaled(9));
        let other = WorkerReport {
            group_idx: 0,
            work_units: 99,
            ..Default::default()
        };
        let s = summarize_group(
            1,
            "g",
            "SpinWait",
            WakeFigure::Latency,
            &[live, dead, other],
        );
        assert_eq!((s.workers, s.incomplete, s.work_units), (2, 1, 2000));
        assert!((s.work_rate_per_s - 2000.0).abs() < 1e-6);
        assert!((s.off_cpu_pct - 25.0).abs() < 1e-9);
        assert_eq!(
            (s.wake_p50_ns, s.wake_max_ns, s.wake_total),
            (Some(20), Some(30), 3)
        );
        assert_eq!((s.migrations, s.max_gap_ms), (2, 7));
        assert_eq!(
            (s.wake_p90_ns, s.wake_p99_9_ns, s.wake_samples),
            (Some(30), Some(30), 3)
        );
        // One live worker, no schedstat runs: no fairness, no run delay.
        assert_eq!((s.fairness, s.run_delay_pct), (None, None));
    }
}
