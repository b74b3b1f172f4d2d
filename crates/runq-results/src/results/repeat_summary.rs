//! The summary of `--repeat N`: per group, the median and the range of its
//! work rate and wake p99 across the repeats; per check, how many repeats
//! it held in. Kept in the saved document as `repeat_summary`.

use runq_common::stats::median;
use serde::Serialize;

use super::Repeat;

/// A figure across repeats.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Spread {
    /// The median.
    pub median: f64,
    /// The smallest.
    pub min: f64,
    /// The largest.
    pub max: f64,
}

impl Spread {
    fn of(values: &[f64]) -> Option<Self> {
        Some(Spread {
            median: median(values)?,
            min: values.iter().copied().fold(f64::INFINITY, f64::min),
            max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        })
    }
}

/// One group across the repeats.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupSpread {
    /// The group.
    pub group: String,
    /// Work units per second.
    pub work_rate_per_s: Spread,
    /// Wake latency p99, ns (groups with wake samples only).
    pub wake_p99_ns: Option<Spread>,
}

/// One check across the repeats.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckTally {
    /// The group it judged.
    pub group: String,
    /// The check.
    pub check: String,
    /// Repeats it held in.
    pub passed: usize,
    /// Repeats run.
    pub of: usize,
}

/// The summary of every repeat.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RepeatSummary {
    /// Repeats run.
    pub repeats: usize,
    /// Per group.
    pub groups: Vec<GroupSpread>,
    /// Per check (group and name), in the report's order.
    pub checks: Vec<CheckTally>,
}

/// Summarizes `repeats`; `checks` are the (group, check) pairs judged.
pub fn summarize(repeats: &[Repeat], checks: &[(String, String)]) -> RepeatSummary {
    let names: Vec<&String> = repeats
        .first()
        .map(|r| r.groups.iter().map(|g| &g.group).collect())
        .unwrap_or_default();
    let groups = names
        .into_iter()
        .filter_map(|name| {
            let of_group = repeats
                .iter()
                .filter_map(|r| r.groups.iter().find(|g| &g.group == name));
            let rates: Vec<f64> = of_group.clone().map(|g| g.work_rate_per_s).collect();
            let p99: Vec<f64> = of_group
                .filter_map(|g| g.wake_latency_ns.p99.map(|v| v as f64))
                .collect();
            Some(GroupSpread {
                group: name.clone(),
                work_rate_per_s: Spread::of(&rates)?,
                wake_p99_ns: Spread::of(&p99),
            })
        })
        .collect();
    let checks = checks
        .iter()
        .map(|(group, check)| {
            let failed_as = format!("{group}: {check}");
            let failed = repeats
                .iter()
                .filter(|r| r.failed_checks.contains(&failed_as))
                .count();
            CheckTally {
                group: group.clone(),
                check: check.clone(),
                passed: repeats.len() - failed,
                of: repeats.len(),
            }
        })
        .collect();
    RepeatSummary {
        repeats: repeats.len(),
        groups,
        checks,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{GroupFigures, WakePercentiles};
    use runq_workload::Verdict;

    /// A repeat of one group `pipes` with this work rate and wake p99,
    /// and these failed checks.
    fn repeat(n: usize, rate: f64, p99: u64, failed: &[&str]) -> Repeat {
        Repeat {
            repeat: n,
            verdict: if failed.is_empty() {
                Verdict::Pass
            } else {
                Verdict::Fail
            },
            failed_checks: failed.iter().map(|s| s.to_string()).collect(),
            checks: Vec::new(),
            groups: vec![GroupFigures {
                group: "pipes".into(),
                work_type: "PipeIo".into(),
                work_rate_per_s: rate,
                wake_latency_ns: WakePercentiles {
                    p99: Some(p99),
                    ..Default::default()
                },
                wake_figure: Default::default(),
                off_cpu_pct: 0.0,
                max_gap_ms: 0,
                migrations: 0,
                fairness: None,
                run_delay_pct: None,
            }],
            scheduler_death: None,
        }
    }

    #[test]
    fn medians_ranges_and_pass_counts() {
        let reps = [
            repeat(1, 100.0, 30, &[]),
            repeat(2, 300.0, 10, &["pipes: max_gap_ms"]),
            repeat(3, 200.0, 20, &[]),
        ];
        let checks = [("pipes".to_string(), "max_gap_ms".to_string())];
        let s = summarize(&reps, &checks);
        let g = &s.groups[0];
        assert_eq!(
            g.work_rate_per_s,
            Spread {
                median: 200.0,
                min: 100.0,
                max: 300.0
            }
        );
        assert_eq!(g.wake_p99_ns.unwrap().median, 20.0);
        assert_eq!((s.checks[0].passed, s.checks[0].of), (2, 3));
    }
}
