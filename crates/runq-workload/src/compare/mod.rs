//! Did run B regress against run A? Per group and figure of two saved
//! documents ([`crate::results`]): medians over repeats, the difference, a
//! rank-test confidence interval of the shift ([`stats`]) and a verdict
//! against a threshold ([`analyze`]).

pub mod analyze;
pub mod figures;
pub mod load;
pub mod stats;

use serde::Serialize;

pub use analyze::{Row, Verdict};
pub use figures::{Better, Figure, Unit, FIGURES};
pub use load::{differences, read, Differences, LoadError, SavedRun};

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
