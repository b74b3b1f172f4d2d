//! Per group and figure: medians over repeats, the difference, its
//! rank-test confidence interval, and a verdict.

use runq_common::stats::median;
use serde::Serialize;

use super::figures::{Better, Figure, Unit, FIGURES};
use super::load::SavedRun;
use super::stats::shift_interval;

/// The confidence level's complement (95% intervals).
pub(crate) const ALPHA: f64 = 0.05;

/// The verdict on one figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Better by more than the threshold, beyond doubt.
    Improved,
    /// Worse by more than the threshold, beyond doubt.
    Regressed,
    /// Within the threshold, beyond doubt.
    NoChange,
    /// The interval straddles the threshold, too few repeats, or the files
    /// are not comparable.
    Inconclusive,
}

impl Verdict {
    /// The word in the table.
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Improved => "improved",
            Verdict::Regressed => "regressed",
            Verdict::NoChange => "no change",
            Verdict::Inconclusive => "inconclusive",
        }
    }
}

/// One row: a group's figure in A and B.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// Group name.
    pub group: String,
    /// Figure name.
    pub figure: &'static str,
    /// Unit of the medians and the difference.
    #[serde(serialize_with = "Unit::serialize_suffix")]
    pub unit: Unit,
    /// Which way is better.
    pub better: Better,
    /// Repeats with a value in A and in B.
    pub repeats: [usize; 2],
    /// Medians over A's and B's repeats.
    pub median_a: Option<f64>,
    /// B's median.
    pub median_b: Option<f64>,
    /// `median_b - median_a`.
    pub diff: Option<f64>,
    /// The difference in percent of A's median.
    pub diff_pct: Option<f64>,
    /// The 95% interval of the shift B - A, in percent of A's median.
    pub ci_pct: Option<[f64; 2]>,
    /// Its actual coverage (the exact test is discrete).
    pub ci_coverage: Option<f64>,
    /// The verdict.
    pub verdict: Verdict,
    /// Why it is inconclusive, when it is.
    pub reason: Option<String>,
}

/// The verdict from the interval of the change in percent, oriented so
/// that positive is worse.
pub fn judge(worse_lo: f64, worse_hi: f64, threshold: f64) -> Verdict {
    if worse_lo > threshold {
        Verdict::Regressed
    } else if worse_hi < -threshold {
        Verdict::Improved
    } else if worse_lo >= -threshold && worse_hi <= threshold {
        Verdict::NoChange
    } else {
        Verdict::Inconclusive
    }
}

fn values(runs: &SavedRun, group: &str, f: &Figure) -> Vec<f64> {
    runs.repeats
        .iter()
        .filter_map(|groups| groups.iter().find(|g| g.group == group))
        .filter_map(|g| (f.get)(g))
        .filter(|v| v.is_finite())
        .collect()
}

/// Compares one figure of one group; `None` when neither file has it
/// (e.g. wake latency of a type that never sleeps).
pub(crate) fn compare_figure(
    a: &SavedRun,
    b: &SavedRun,
    group: &str,
    f: &Figure,
    threshold: f64,
    mismatch: Option<&str>,
) -> Option<Row> {
    let (va, vb) = (values(a, group, f), values(b, group, f));
    if va.is_empty() && vb.is_empty() {
        return None;
    }
    let (ma, mb) = (median(&va), median(&vb));
    let diff = ma.zip(mb).map(|(x, y)| y - x);
    let base = [ma, mb]
        .into_iter()
        .flatten()
        .map(f64::abs)
        .find(|v| *v > 0.0);
    let pct = |v: f64| base.map_or(0.0, |b| v / b * 100.0);
    let ci = shift_interval(&va, &vb, ALPHA);
    let ci_pct = ci.map(|c| [pct(c.low), pct(c.high)]);
    let (verdict, reason) = match (mismatch, ci_pct) {
        (Some(m), _) => (Verdict::Inconclusive, Some(m.to_string())),
        (None, None) => (
            Verdict::Inconclusive,
            Some(format!(
                "too few repeats ({} vs {}; need at least 4 on each side)",
                va.len(),
                vb.len()
            )),
        ),
        (None, Some([lo, hi])) => {
            let (wlo, whi) = match f.better {
                Better::Lower => (lo, hi),
                Better::Higher => (-hi, -lo),
            };
            let verdict = judge(wlo, whi, threshold);
            let reason = (verdict == Verdict::Inconclusive).then(|| {
                format!(
                    "the 95% interval is neither wholly within ±{threshold}% nor wholly past it; \
                     more repeats narrow it"
                )
            });
            (verdict, reason)
        }
    };
    Some(Row {
        group: group.to_string(),
        figure: f.name,
        unit: f.unit,
        better: f.better,
        repeats: [va.len(), vb.len()],
        median_a: ma,
        median_b: mb,
        diff,
        diff_pct: diff.map(pct),
        ci_pct,
        ci_coverage: ci.map(|c| c.coverage),
        verdict,
        reason,
    })
}

/// The groups of a run, in first-repeat order.
pub(crate) fn group_names(r: &SavedRun) -> Vec<String> {
    r.repeats
        .first()
        .map(|g| g.iter().map(|g| g.group.clone()).collect())
        .unwrap_or_default()
}

/// Every row for the groups both runs have.
pub(crate) fn compare_all(
    a: &SavedRun,
    b: &SavedRun,
    threshold: f64,
    mismatch: Option<&str>,
) -> Vec<Row> {
    let names_b = group_names(b);
    group_names(a)
        .into_iter()
        .filter(|g| names_b.contains(g))
        .flat_map(|g| {
            FIGURES
                .iter()
                .filter_map(|f| compare_figure(a, b, &g, f, threshold, mismatch))
                .collect::<Vec<_>>()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{GroupFigures, HostFacts, WakePercentiles};

    fn run(rates: &[f64], p99: &[u64]) -> SavedRun {
        let repeats = rates
            .iter()
            .zip(p99)
            .map(|(&r, &p)| {
                vec![GroupFigures {
                    group: "g".into(),
                    work_type: "PipeIo".into(),
                    work_rate_per_s: r,
                    wake_latency_ns: WakePercentiles {
                        p99: Some(p),
                        ..Default::default()
                    },
                    wake_figure: Default::default(),
                    off_cpu_pct: 10.0,
                    max_gap_ms: 4,
                    migrations: 0,
                    fairness: None,
                    run_delay_pct: None,
                }]
            })
            .collect();
        SavedRun {
            path: "x".into(),
            host: HostFacts::read(None),
            scenario: serde_json::json!({}),
            scenario_name: "s".into(),
            repeats,
        }
    }

    fn row<'a>(rows: &'a [Row], fig: &str) -> &'a Row {
        rows.iter().find(|r| r.figure == fig).unwrap()
    }

    #[test]
    fn judge_rules() {
        assert_eq!(judge(6.0, 9.0, 5.0), Verdict::Regressed);
        assert_eq!(judge(-9.0, -6.0, 5.0), Verdict::Improved);
        assert_eq!(judge(-2.0, 3.0, 5.0), Verdict::NoChange);
        assert_eq!(judge(-2.0, 8.0, 5.0), Verdict::Inconclusive);
        assert_eq!(judge(3.0, 8.0, 5.0), Verdict::Inconclusive);
    }

    #[test]
    fn slower_and_later_is_regressed() {
        let a = run(
            &[100.0, 101.0, 99.0, 100.5, 99.5],
            &[1000, 1010, 990, 1005, 995],
        );
        let b = run(
            &[80.0, 81.0, 79.0, 80.5, 79.5],
            &[1200, 1210, 1190, 1205, 1195],
        );
        let rows = compare_all(&a, &b, 5.0, None);
        let rate = row(&rows, "work_rate");
        assert_eq!(rate.verdict, Verdict::Regressed);
        assert_eq!(rate.median_a, Some(100.0));
        assert_eq!(rate.diff_pct, Some(-20.0));
        assert_eq!(row(&rows, "wake_p99").verdict, Verdict::Regressed);
        // Identical constant figures: no change, interval [0, 0].
        assert_eq!(row(&rows, "off_cpu").verdict, Verdict::NoChange);
        assert_eq!(row(&rows, "migrations").verdict, Verdict::NoChange);
        // No wake p50 and no fairness on either side: no row.
        assert!(rows
            .iter()
            .all(|r| r.figure != "wake_p50" && r.figure != "fairness"));
        // Reversed, it is an improvement.
        let rows = compare_all(&b, &a, 5.0, None);
        assert_eq!(row(&rows, "work_rate").verdict, Verdict::Improved);
    }

    #[test]
    fn same_distribution_is_no_change_and_small_shift_under_threshold_too() {
        let a = run(&[100.0, 101.0, 99.0, 100.5, 99.5], &[1000; 5]);
        let b = run(&[100.2, 100.8, 99.3, 101.0, 99.9], &[1000; 5]);
        let rows = compare_all(&a, &b, 5.0, None);
        assert_eq!(row(&rows, "work_rate").verdict, Verdict::NoChange);
        let rows = compare_all(&a, &b, 0.1, None);
        assert_eq!(row(&rows, "work_rate").verdict, Verdict::Inconclusive);
    }

    #[test]
    fn too_few_repeats_or_mismatch_is_inconclusive() {
        let a = run(&[100.0, 101.0, 99.0], &[1000; 3]);
        let b = run(&[50.0, 51.0, 49.0], &[1000; 3]);
        let r = &compare_all(&a, &b, 5.0, None)[0];
        assert_eq!(r.verdict, Verdict::Inconclusive);
        assert!(r.reason.as_deref().unwrap().contains("too few repeats"));
        let a = run(&[100.0; 5], &[1000; 5]);
        let b = run(&[50.0; 5], &[1000; 5]);
        let rows = compare_all(&a, &b, 5.0, Some("different scenarios"));
        assert!(rows.iter().all(|r| r.verdict == Verdict::Inconclusive));
    }
}
