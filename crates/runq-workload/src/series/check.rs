//! Checks over time, judged on a group's snapshots (`[[group.series_check]]`
//! in a scenario file): a counter never goes down (nondecreasing), its
//! rate stays in a range (rate_within), varies little (steady_within),
//! ends near a target (converges_to), and never stops for long (stall).
//! A failure's detail names the window where it failed.

use crate::checks::detail::SeriesDetail;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{GroupSeries, Metric, RunSeries, Window};
use crate::check_id::{CheckId, SeriesPattern};
use crate::checks::detail::{Detail, Span};
use crate::checks::{CheckResult, Op};

/// One check over time on one of a group's counters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeriesCheck {
    /// The counter judged.
    pub metric: Metric,
    /// Warm-up: windows that start before this many ns into the run are
    /// not judged (0: every window).
    #[serde(default)]
    pub after_ns: u64,
    /// What is judged.
    pub kind: SeriesKind,
}

/// The pattern a check over time looks for, with its bounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SeriesKind {
    /// The counter never goes down from one snapshot to the next.
    Nondecreasing,
    /// Every interval's rate lies in `[min, max]` (either may be open).
    RateWithin {
        /// The lowest rate allowed.
        min: Option<f64>,
        /// The highest rate allowed.
        max: Option<f64>,
    },
    /// The intervals' rates vary little: their coefficient of variation
    /// (stddev / mean) is at most `max_cv`.
    SteadyWithin {
        /// The largest coefficient of variation allowed.
        max_cv: f64,
    },
    /// The rate over the end of the run is within `tolerance` (relative)
    /// of a target.
    ConvergesTo {
        /// The rate or share aimed at.
        target: Target,
        /// Allowed relative error, e.g. 0.1 for ±10%.
        tolerance: f64,
        /// The end window, ns (default: the last quarter of the group's
        /// snapshots).
        last_ns: Option<u64>,
    },
    /// The counter moves at least once every `max_stall_ns`.
    Stall {
        /// The longest time without progress allowed, ns.
        max_stall_ns: u64,
    },
}

/// What `converges_to` aims at.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Target {
    /// An absolute rate, in the metric's rate unit (per second, or CPUs).
    Rate(f64),
    /// A fraction of the metric's rate summed over every group that ran
    /// in the same window (0..=1).
    Share(f64),
}

impl SeriesKind {
    /// The kinds' names in scenario files.
    pub const NAMES: [&'static str; 5] = [
        "nondecreasing",
        "rate_within",
        "steady_within",
        "converges_to",
        "stall",
    ];

    /// This kind's name.
    pub fn name(&self) -> &'static str {
        self.pattern().name()
    }

    /// The pattern this kind looks for, without its bounds.
    pub fn pattern(&self) -> SeriesPattern {
        match self {
            SeriesKind::Nondecreasing => SeriesPattern::Nondecreasing,
            SeriesKind::RateWithin { .. } => SeriesPattern::RateWithin,
            SeriesKind::SteadyWithin { .. } => SeriesPattern::SteadyWithin,
            SeriesKind::ConvergesTo { .. } => SeriesPattern::ConvergesTo,
            SeriesKind::Stall { .. } => SeriesPattern::Stall,
        }
    }
}

impl SeriesCheck {
    /// The check's id in results, named `rate_within(work_units)`.
    pub fn id(&self) -> CheckId {
        CheckId::Series {
            pattern: self.kind.pattern(),
            metric: self.metric.name(),
        }
    }
}

impl SeriesCheck {
    /// Rejects bounds that cannot be met or judged in a run of `duration`.
    pub fn validate(&self, duration: Duration) -> Result<(), String> {
        let name = self.id();
        let bad = |why: &str| Err(format!("series_check {name}: {why}"));
        if Duration::from_nanos(self.after_ns) >= duration {
            return bad("after must be before the end of the run");
        }
        match &self.kind {
            SeriesKind::Nondecreasing => Ok(()),
            SeriesKind::RateWithin {
                min: None,
                max: None,
            } => bad("give min, max or both"),
            SeriesKind::RateWithin {
                min: Some(lo),
                max: Some(hi),
            } if lo > hi => bad("min is above max"),
            SeriesKind::RateWithin { .. } => Ok(()),
            SeriesKind::SteadyWithin { max_cv } if max_cv.is_nan() || *max_cv <= 0.0 => {
                bad("max_cv must be above 0")
            }
            SeriesKind::ConvergesTo { tolerance, .. }
                if tolerance.is_nan() || *tolerance <= 0.0 =>
            {
                bad("tolerance must be above 0")
            }
            SeriesKind::ConvergesTo {
                target: Target::Share(s),
                ..
            } if !(*s > 0.0 && *s <= 1.0) => bad("share must be above 0 and at most 1"),
            SeriesKind::Stall { max_stall_ns: 0 } => bad("max_stall must be above 0"),
            _ => Ok(()),
        }
    }
}

/// A FAIL of check `check` on `group` that could not be judged, and why.
pub(crate) fn unjudged(check: CheckId, group: &str, why: String) -> CheckResult {
    CheckResult {
        check,
        group: group.into(),
        measured: 0.0,
        op: Op::AtLeast,
        bound: 1.0,
        pass: false,
        cause: None,
        detail: Vec::new(),
        not_judged: Some(why),
    }
}

/// An interrupted run did not reach the windows its checks over time ask
/// for: a check that could not be judged is then no FAIL (the run's
/// verdict is INTERRUPTED when the rest held); its `not_judged` says why.
pub(crate) fn excuse_unjudged(checks: &mut [CheckResult]) {
    for c in checks.iter_mut().filter(|c| c.not_judged.is_some()) {
        c.pass = true;
    }
}

/// A judged check's figures: measured, operator, bound, pass, detail.
type Figures = (f64, Op, f64, bool, Option<Detail>);

/// A check's figures, or why it could not be judged.
type Judged = Result<Figures, String>;

/// Evaluates group `group`'s checks over time on the run's series.
pub(crate) fn evaluate(
    group: &str,
    checks: &[SeriesCheck],
    series: &RunSeries,
) -> Vec<CheckResult> {
    checks
        .iter()
        .map(|c| match judge(c, group, series) {
            Ok((measured, op, bound, pass, detail)) => CheckResult {
                check: c.id(),
                group: group.into(),
                measured,
                op,
                bound,
                pass,
                cause: None,
                detail: detail.into_iter().collect(),
                not_judged: None,
            },
            Err(why) => unjudged(c.id(), group, why),
        })
        .collect()
}

/// One check's figures, or why it could not be judged.
fn judge(c: &SeriesCheck, group: &str, series: &RunSeries) -> Judged {
    let Some(g) = series.group(group) else {
        return Err(format!("no snapshot of group {group:?}"));
    };
    if g.values(c.metric).is_none() {
        return Err(format!(
            "{} was not recorded (the sampler reads schedstat of at most 128 workers)",
            c.metric.name()
        ));
    }
    let windows = g.intervals(c.metric, c.after_ns);
    if windows.is_empty() {
        return Err(format!(
            "no interval between snapshots after {:.2} s ({} snapshots, the last at {:.2} s)",
            c.after_ns as f64 / 1e9,
            g.at_ns.len(),
            g.at_ns.last().copied().unwrap_or(0) as f64 / 1e9
        ));
    }
    match &c.kind {
        SeriesKind::Nondecreasing => Ok(nondecreasing(c.metric, &windows)),
        SeriesKind::RateWithin { min, max } => Ok(rate_within(c.metric, &windows, *min, *max)),
        SeriesKind::SteadyWithin { max_cv } => Ok(steady_within(c.metric, &windows, *max_cv)),
        SeriesKind::ConvergesTo {
            target,
            tolerance,
            last_ns,
        } => converges_to(c.metric, g, series, (*target, *tolerance, *last_ns)),
        SeriesKind::Stall { max_stall_ns } => Ok(stall(c.metric, &windows, *max_stall_ns)),
    }
}

/// `nondecreasing`: the number of intervals where the counter fell.
fn nondecreasing(metric: Metric, windows: &[Window]) -> Figures {
    let drops: Vec<&Window> = windows.iter().filter(|w| w.end < w.start).collect();
    let detail = drops.first().map(|w| {
        Detail::Series(SeriesDetail::Fell {
            metric,
            from: w.start,
            to: w.end,
            window: span(w),
            drops: drops.len(),
            intervals: windows.len(),
        })
    });
    let n = drops.len() as f64;
    (n, Op::AtMost, 0.0, drops.is_empty(), detail)
}

/// `rate_within`: the slowest interval against `min`, else the fastest
/// against `max`.
fn rate_within(metric: Metric, windows: &[Window], min: Option<f64>, max: Option<f64>) -> Figures {
    let low = windows.iter().min_by(|a, b| a.rate.total_cmp(&b.rate));
    let high = windows.iter().max_by(|a, b| a.rate.total_cmp(&b.rate));
    let (low, high) = (low.expect("windows"), high.expect("windows"));
    let outside = windows
        .iter()
        .filter(|w| min.is_some_and(|m| w.rate < m) || max.is_some_and(|m| w.rate > m))
        .count();
    let say = |w: &Window, above: bool, bound: f64| {
        Detail::Series(SeriesDetail::RateOutside {
            metric,
            rate: w.rate,
            window: span(w),
            above,
            bound,
            outside,
            intervals: windows.len(),
        })
    };
    match (min, max) {
        (Some(m), _) if low.rate < m => (low.rate, Op::AtLeast, m, false, Some(say(low, false, m))),
        (_, Some(m)) if high.rate > m => {
            (high.rate, Op::AtMost, m, false, Some(say(high, true, m)))
        }
        (Some(m), _) => (low.rate, Op::AtLeast, m, true, None),
        (None, m) => (
            high.rate,
            Op::AtMost,
            m.unwrap_or(f64::INFINITY),
            true,
            None,
        ),
    }
}

/// `steady_within`: the coefficient of variation of the intervals' rates.
fn steady_within(metric: Metric, windows: &[Window], max_cv: f64) -> Figures {
    let rates: Vec<f64> = windows.iter().map(|w| w.rate).collect();
    let mean = rates.iter().sum::<f64>() / rates.len() as f64;
    let cv = match rates.len() {
        1 => 0.0,
        _ if mean <= 0.0 => f64::INFINITY,
        n => {
            let var = rates.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / (n as f64 - 1.0);
            var.sqrt() / mean
        }
    };
    let pass = cv <= max_cv;
    let far = windows
        .iter()
        .max_by(|a, b| (a.rate - mean).abs().total_cmp(&(b.rate - mean).abs()))
        .expect("windows");
    let first = windows.first().expect("windows");
    let last = windows.last().expect("windows");
    let detail = (!pass).then_some(Detail::Series(SeriesDetail::Unsteady {
        metric,
        cv,
        window: Span {
            from_ns: first.from_ns,
            to_ns: last.to_ns,
        },
        intervals: windows.len(),
        mean,
        farthest: far.rate,
        farthest_from_ns: far.from_ns,
        farthest_to_ns: far.to_ns,
    }));
    // An infinite CV would print as null in JSON: report the bound's double.
    let measured = if cv.is_finite() { cv } else { max_cv * 2.0 };
    (measured, Op::AtMost, max_cv, pass, detail)
}

/// `stall`: the longest stretch of snapshots over which the counter did
/// not move.
fn stall(metric: Metric, windows: &[Window], max_stall_ns: u64) -> Figures {
    let mut longest: Option<(u64, u64)> = None;
    let mut since = windows[0].from_ns;
    let mut value = windows[0].start;
    for w in windows {
        if w.end != value {
            (since, value) = (w.to_ns, w.end);
            continue;
        }
        if longest.is_none_or(|(a, b)| w.to_ns - since > b - a) {
            longest = Some((since, w.to_ns));
        }
    }
    let (from, to) = longest.unwrap_or((0, 0));
    let flat_ms = (to - from) as f64 / 1e6;
    let bound_ms = max_stall_ns as f64 / 1e6;
    let pass = flat_ms <= bound_ms;
    let detail = (!pass).then_some(Detail::Series(SeriesDetail::Stalled {
        metric,
        window: Span {
            from_ns: from,
            to_ns: to,
        },
        flat_ms,
        bound_ms,
    }));
    (flat_ms, Op::AtMost, bound_ms, pass, detail)
}

/// `converges_to`: the relative error of the end window's rate (or share)
/// against the target.
fn converges_to(
    metric: Metric,
    g: &GroupSeries,
    series: &RunSeries,
    (target, tolerance, last_ns): (Target, f64, Option<u64>),
) -> Judged {
    let first = g.at_ns.first().copied().unwrap_or(0);
    let end = g.at_ns.last().copied().unwrap_or(0);
    let last = last_ns.unwrap_or((end - first) / 4).max(1);
    let Some(w) = g.span_from(metric, end.saturating_sub(last)) else {
        return Err(format!("no snapshot window in the last {last} ns"));
    };
    let window = span(&w);
    let (value, aim, detail) = match target {
        Target::Rate(r) => (
            w.rate,
            r,
            Detail::Series(SeriesDetail::ConvergeRate {
                metric,
                rate: w.rate,
                window,
                target: r,
                tolerance,
            }),
        ),
        Target::Share(s) => {
            let total: f64 = series
                .groups
                .iter()
                .filter_map(|o| o.span_from(metric, w.from_ns).map(|ow| ow.rate))
                .sum();
            let share = if total > 0.0 { w.rate / total } else { 0.0 };
            let detail = Detail::Series(SeriesDetail::ConvergeShare {
                metric,
                share,
                rate: w.rate,
                total,
                window,
                target: s,
                tolerance,
            });
            (share, s, detail)
        }
    };
    let err = if aim != 0.0 {
        (value - aim).abs() / aim.abs()
    } else {
        value.abs()
    };
    Ok((err, Op::AtMost, tolerance, err <= tolerance, Some(detail)))
}

/// A window's span as a detail states it.
fn span(w: &Window) -> Span {
    Span {
        from_ns: w.from_ns,
        to_ns: w.to_ns,
    }
}
