//! Per-group summaries of worker reports: work rate, off-CPU share, wake
//! latency percentiles, migrations and the worst scheduling gap.

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
    /// Migrations over all workers.
    pub migrations: u64,
    /// Worst gap between checkpoints, ms.
    pub max_gap_ms: u64,
    /// Summed schedstat run delay, ns.
    pub run_delay_ns: u64,
}

/// Nearest-rank percentile of sorted values (`p` in 0..=100).
pub fn percentile(sorted: &[u64], p: f64) -> Option<u64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
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
    let rate = |f: fn(&WorkerReport) -> u64| -> f64 {
        live.iter()
            .filter(|r| r.wall_time_ns > 0)
            .map(|r| f(r) as f64 * 1e9 / r.wall_time_ns as f64)
            .sum()
    };
    let wall: u64 = live.iter().map(|r| r.wall_time_ns).sum();
    let off: u64 = live.iter().map(|r| r.off_cpu_ns).sum();
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
        migrations: live.iter().map(|r| r.migration_count).sum(),
        max_gap_ms: live.iter().map(|r| r.max_gap_ms).max().unwrap_or(0),
        run_delay_ns: live.iter().map(|r| r.schedstat_run_delay_ns).sum(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::WorkerExitInfo;

    #[test]
    fn percentiles_nearest_rank() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&v, 50.0), Some(50));
        assert_eq!(percentile(&v, 99.0), Some(99));
        assert_eq!(percentile(&v, 100.0), Some(100));
        assert_eq!(percentile(&v, 0.0), Some(1));
        assert_eq!(percentile(&[], 50.0), None);
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
    }
}
