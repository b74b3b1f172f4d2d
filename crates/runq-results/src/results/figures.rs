//! One group's figures in one repeat, as the saved document keeps them and
//! `runq compare` compares them: taken from the group's summary
//! ([`runq_workload::summarize_group`]), never recomputed.

use serde::{Deserialize, Serialize};

use runq_workload::{GroupSummary, WakeFigure};

/// Wake latency percentiles with schbench-style names, next to the number
/// of samples they were taken from.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WakePercentiles {
    /// Median, ns.
    pub p50: Option<u64>,
    /// 90th percentile, ns.
    pub p90: Option<u64>,
    /// 99th percentile, ns.
    pub p99: Option<u64>,
    /// 99.9th percentile, ns.
    #[serde(rename = "p99.9")]
    pub p99_9: Option<u64>,
    /// Samples the percentiles were computed from (the reservoirs).
    pub samples: u64,
    /// Wakes observed, sampled or not.
    pub total: u64,
}

/// One group's figures in one repeat: what `runq compare` compares.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupFigures {
    /// Group name.
    pub group: String,
    /// Work type name.
    pub work_type: String,
    /// Work units per second, summed over workers.
    pub work_rate_per_s: f64,
    /// The group's latency figure (its wake samples), ns: what it
    /// measures is `wake_figure`.
    pub wake_latency_ns: WakePercentiles,
    /// What `wake_latency_ns` measures: a wake-up latency (`latency`), or
    /// what it is instead (`sleep_overshoot`, `yield_wait`, `io_latency`,
    /// `lock_wait`, ...; `none` for a type that takes no sample). Files
    /// written before this field existed read as `latency`.
    #[serde(default)]
    pub wake_figure: WakeFigure,
    /// Off-CPU share of wall time, percent.
    pub off_cpu_pct: f64,
    /// Worst gap between checkpoints, ms.
    pub max_gap_ms: u64,
    /// Migrations over all workers.
    pub migrations: u64,
    /// Jain's fairness index of the workers' CPU time (1 = equal shares,
    /// 1/n = one worker got everything); `None` below two workers.
    pub fairness: Option<f64>,
    /// Share of the workers' wall time spent runnable but waiting for a
    /// CPU (schedstat run delay), percent; `None` without schedstat data
    /// (and in files written before this figure existed).
    #[serde(default)]
    pub run_delay_pct: Option<f64>,
}

impl From<&GroupSummary> for GroupFigures {
    fn from(g: &GroupSummary) -> Self {
        GroupFigures {
            group: g.name.clone(),
            work_type: g.work_type.clone(),
            work_rate_per_s: g.work_rate_per_s,
            wake_latency_ns: WakePercentiles {
                p50: g.wake_p50_ns,
                p90: g.wake_p90_ns,
                p99: g.wake_p99_ns,
                p99_9: g.wake_p99_9_ns,
                samples: g.wake_samples,
                total: g.wake_total,
            },
            wake_figure: g.wake_figure,
            off_cpu_pct: g.off_cpu_pct,
            max_gap_ms: g.max_gap_ms,
            migrations: g.migrations,
            fairness: g.fairness,
            run_delay_pct: g.run_delay_pct,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use runq_workload::summarize_group;
    use runq_workload::WorkerReport;

    #[test]
    fn percentile_names_are_schbench_style() {
        let w = WakePercentiles {
            p99_9: Some(7),
            samples: 3,
            ..Default::default()
        };
        let v = serde_json::to_value(&w).unwrap();
        assert_eq!(v["p99.9"], 7);
        assert_eq!(v["samples"], 3);
        assert!(v.get("p50").is_some());
    }

    #[test]
    fn figures_come_from_the_summary() {
        let worker = |cpu: u64, wakes: Vec<u64>| WorkerReport {
            group_idx: 0,
            wall_time_ns: 1_000_000_000,
            cpu_time_ns: cpu,
            resume_latencies_ns: wakes,
            wake_sample_total: 10,
            schedstat_run_count: 1,
            schedstat_run_delay_ns: 100_000_000,
            ..Default::default()
        };
        let reports = [worker(300, (1..=100).collect()), worker(100, vec![])];
        let s = summarize_group(0, "g", "PipeIo", WakeFigure::Latency, &reports);
        let f = GroupFigures::from(&s);
        let w = &f.wake_latency_ns;
        assert_eq!(
            (w.p50, w.p90, w.p99, w.p99_9),
            (Some(50), Some(90), Some(99), Some(100))
        );
        assert_eq!((w.samples, w.total), (100, 20));
        // Jain's index of 300 and 100: 400^2 / (2 * 100,000) = 0.8.
        assert!((f.fairness.unwrap() - 0.8).abs() < 1e-12);
        // 200 ms of delay over 2 s of wall time.
        assert!((f.run_delay_pct.unwrap() - 10.0).abs() < 1e-12);
    }
}
