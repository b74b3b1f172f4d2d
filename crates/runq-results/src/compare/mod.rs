//! Did run B regress against run A? Per group and figure of two saved
//! documents ([`crate::results`]): medians over repeats, the difference, a
//! rank-test confidence interval of the shift ([`stats`]) and a verdict
//! against a threshold ([`analyze`]).

pub mod analyze;
mod body;
pub mod figures;
pub mod load;
pub mod stats;

use serde::Serialize;

pub use analyze::{Row, Verdict};
pub use figures::{Better, Unit};
pub use load::{differences, read_saved_run, Differences, LoadError, SavedRun};

/// How the interval is computed, as printed and kept in the comparison.
pub const METHOD: &str = "95% Hodges-Lehmann interval of the shift B-A from the Mann-Whitney rank \
                          test over repeats (exact up to 30 repeats per side)";

/// Why two runs could not be compared.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    /// The runs share no group, so there is no figure to compare.
    #[error("{a} and {b} have no group in common (groups: {} vs {})",
        groups_a.join(", "), groups_b.join(", "))]
    NoGroupInCommon {
        /// A's file.
        a: String,
        /// B's file.
        b: String,
        /// A's groups.
        groups_a: Vec<String>,
        /// B's groups.
        groups_b: Vec<String>,
    },
}

/// The whole comparison of B against A.
#[derive(Debug, Serialize)]
pub struct Comparison {
    /// A's file.
    pub a: String,
    /// B's file.
    pub b: String,
    /// Smallest change, in percent of A's median, that counts.
    pub threshold_pct: f64,
    /// [`METHOD`].
    pub method: &'static str,
    /// What makes the runs incomparable (every verdict is then
    /// inconclusive).
    pub mismatches: Vec<String>,
    /// What differs but is often the point of the A/B.
    pub notes: Vec<String>,
    /// Rows that regressed.
    pub regressed: usize,
    /// Rows that improved.
    pub improved: usize,
    /// Every group's figures in both runs.
    pub rows: Vec<Row>,
}

impl runq_common::json::JsonDocument for Comparison {
    const TOOL: &'static str = "runq compare";
    const SCHEMA_VERSION: u32 = 1;
}

impl Comparison {
    /// Compares B against A, given how they differ (from [`differences`]);
    /// `threshold_pct` (at least 0) is the smallest change, in percent of
    /// A's median, that counts as a regression or an improvement.
    pub fn new(
        a: &SavedRun,
        b: &SavedRun,
        threshold_pct: f64,
        differences: Differences,
    ) -> Result<Self, CompareError> {
        let Differences { mismatches, notes } = differences;
        let mismatch = (!mismatches.is_empty()).then(|| mismatches.join("; "));
        let rows = analyze::compare_all(a, b, threshold_pct, mismatch.as_deref());
        if rows.is_empty() {
            return Err(CompareError::NoGroupInCommon {
                a: a.path.clone(),
                b: b.path.clone(),
                groups_a: analyze::group_names(a),
                groups_b: analyze::group_names(b),
            });
        }
        let count = |v: Verdict| rows.iter().filter(|r| r.verdict == v).count();
        Ok(Comparison {
            a: a.path.clone(),
            b: b.path.clone(),
            threshold_pct,
            method: METHOD,
            mismatches,
            notes,
            regressed: count(Verdict::Regressed),
            improved: count(Verdict::Improved),
            rows,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(path: &str, group: &str) -> SavedRun {
        let text = format!(
            r#"{{"schema_version":2,"tool":"runq run","scenario":"s",
            "host":{{"hostname":"h","kernel_release":"6.18","cpu_model":"x","online_cpus":2,
                    "cgroup_layout":"v2","sched_ext":"no sched_ext","scheduler_command":null}},
            "scenario_spec":{{}},
            "repeats":[{{"groups":[{{"group":"{group}","work_type":"PipeIo",
              "work_rate_per_s":10.0,"wake_latency_ns":{{"p50":null,"p90":null,"p99":null,
              "p99.9":null,"samples":0,"total":0}},"off_cpu_pct":1.0,"max_gap_ms":2,
              "migrations":0,"fairness":null}}]}}]}}"#
        );
        load::parse_saved_run(path, &text).unwrap()
    }

    #[test]
    fn runs_without_a_common_group_are_an_error() {
        let (a, b) = (run("a.json", "pipes"), run("b.json", "spin"));
        let e = Comparison::new(&a, &b, 5.0, differences(&a, &b)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "a.json and b.json have no group in common (groups: pipes vs spin)"
        );
    }

    #[test]
    fn counts_and_method_travel_with_the_rows() {
        let (a, b) = (run("a.json", "pipes"), run("b.json", "pipes"));
        let c = Comparison::new(&a, &b, 5.0, differences(&a, &b)).unwrap();
        assert_eq!((c.regressed, c.improved, c.method), (0, 0, METHOD));
        // One repeat a side: every figure present is inconclusive.
        assert!(c.rows.iter().all(|r| r.verdict == Verdict::Inconclusive));
        assert_eq!(c.rows[0].unit, Unit::PerSec);
    }
}
