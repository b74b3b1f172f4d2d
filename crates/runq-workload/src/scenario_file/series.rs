//! The keys of checks over time: the top-level `snapshot_interval` and
//! each group's `[[group.series_check]]` tables. A kind or metric that does
//! not exist gets the closest name as a suggestion, and a key that does not
//! apply to the kind is an error at its own line.

use std::ops::Range;
use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use super::{Locator, RawDuration, ScenarioFileError};
use crate::series::{Metric, SeriesCheck, SeriesKind, Target};
use runq_common::closest;

/// One `[[group.series_check]]` table as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSeriesCheck {
    kind: Spanned<String>,
    metric: Option<Spanned<String>>,
    after: Option<Spanned<RawDuration>>,
    min: Option<Spanned<f64>>,
    max: Option<Spanned<f64>>,
    max_cv: Option<Spanned<f64>>,
    target: Option<Spanned<f64>>,
    share: Option<Spanned<f64>>,
    tolerance: Option<Spanned<f64>>,
    last: Option<Spanned<RawDuration>>,
    max_stall: Option<Spanned<RawDuration>>,
}

/// The keys each kind takes besides `kind`, `metric` and `after`.
const KIND_KEYS: [(&str, &[&str]); 5] = [
    ("nondecreasing", &[]),
    ("rate_within", &["min", "max"]),
    ("steady_within", &["max_cv"]),
    ("converges_to", &["target", "share", "tolerance", "last"]),
    ("stall", &["max_stall"]),
];

impl RawSeriesCheck {
    /// The kind-specific keys given, with their spans.
    fn given(&self) -> Vec<(&'static str, Range<usize>)> {
        let f = |k, v: &Option<Spanned<f64>>| v.as_ref().map(|v| (k, v.span()));
        let d = |k, v: &Option<Spanned<RawDuration>>| v.as_ref().map(|v| (k, v.span()));
        [
            f("min", &self.min),
            f("max", &self.max),
            f("max_cv", &self.max_cv),
            f("target", &self.target),
            f("share", &self.share),
            f("tolerance", &self.tolerance),
            d("last", &self.last),
            d("max_stall", &self.max_stall),
        ]
        .into_iter()
        .flatten()
        .collect()
    }
}

/// `snapshot_interval`: a duration, or `"off"` / `0` for no snapshots.
pub(super) fn interval(
    loc: &Locator<'_>,
    raw: Option<&Spanned<RawDuration>>,
) -> Result<Option<Duration>, ScenarioFileError> {
    let Some(raw) = raw else {
        return Ok(Some(crate::series::DEFAULT_INTERVAL));
    };
    match raw.get_ref() {
        RawDuration::Text(t) if matches!(t.trim(), "off" | "0") => return Ok(None),
        RawDuration::Seconds(s) if *s == 0.0 => return Ok(None),
        _ => {}
    }
    let d = loc.duration(raw, "snapshot_interval")?;
    if d < crate::series::MIN_INTERVAL {
        return loc.err(
            raw.span(),
            "snapshot_interval",
            format!("{d:?} is below the 10ms minimum (\"off\" turns snapshots off)"),
        );
    }
    Ok(Some(d))
}

/// Parses one group's checks over time, each judged sound for a run of
/// `duration`.
pub(super) fn checks(
    loc: &Locator<'_>,
    raw: &[RawSeriesCheck],
    duration: Duration,
) -> Result<Vec<SeriesCheck>, ScenarioFileError> {
    raw.iter()
        .map(|r| {
            let c = check(loc, r)?;
            c.validate(duration)
                .or_else(|e| loc.err(r.kind.span(), "series_check", e))?;
            Ok(c)
        })
        .collect()
}

/// One check: its kind and metric known, its keys those of its kind.
fn check(loc: &Locator<'_>, r: &RawSeriesCheck) -> Result<SeriesCheck, ScenarioFileError> {
    let kind_name = r.kind.get_ref().as_str();
    let Some((_, keys)) = KIND_KEYS.iter().find(|(k, _)| *k == kind_name) else {
        let names = KIND_KEYS.iter().map(|(k, _)| *k);
        let hint = match closest(kind_name, names, 3) {
            Some(near) => format!("did you mean {near:?}?"),
            None => format!("kinds: {}", SeriesKind::NAMES.join(", ")),
        };
        return loc.err(
            r.kind.span(),
            "kind",
            format!("unknown kind {kind_name:?} ({hint})"),
        );
    };
    if let Some((key, span)) = r.given().into_iter().find(|(k, _)| !keys.contains(k)) {
        let takes = if keys.is_empty() {
            "no other key".to_string()
        } else {
            keys.join(", ")
        };
        return loc.err(
            span,
            key,
            format!("does not apply to {kind_name} (it takes {takes})"),
        );
    }
    let metric = match &r.metric {
        None => Metric::WorkUnits,
        Some(m) => Metric::from_name(m.get_ref()).map_or_else(
            || {
                let names = Metric::ALL.iter().map(|(n, _)| *n);
                let hint = closest(m.get_ref(), names, 3).map_or_else(
                    || "metrics: work_units, iterations, cpu_time, run_delay".to_string(),
                    |near| format!("did you mean {near:?}?"),
                );
                loc.err(
                    m.span(),
                    "metric",
                    format!("unknown metric {:?} ({hint})", m.get_ref()),
                )
            },
            Ok,
        )?,
    };
    let after_ns = match &r.after {
        Some(a) => ns(loc.duration(a, "after")?),
        None => 0,
    };
    Ok(SeriesCheck {
        metric,
        after_ns,
        kind: kind(loc, r)?,
    })
}

/// The kind with its parameters; a required one missing is an error at
/// the `kind` line.
fn kind(loc: &Locator<'_>, r: &RawSeriesCheck) -> Result<SeriesKind, ScenarioFileError> {
    let v = |x: &Option<Spanned<f64>>| x.as_ref().map(|x| *x.get_ref());
    let need = |what: &str| {
        let text = format!("{} needs {what}", r.kind.get_ref());
        loc.err::<()>(r.kind.span(), "series_check", text)
            .expect_err("err always fails")
    };
    Ok(match r.kind.get_ref().as_str() {
        "nondecreasing" => SeriesKind::Nondecreasing,
        "rate_within" => SeriesKind::RateWithin {
            min: v(&r.min),
            max: v(&r.max),
        },
        "steady_within" => SeriesKind::SteadyWithin {
            max_cv: v(&r.max_cv).ok_or_else(|| need("max_cv"))?,
        },
        "converges_to" => SeriesKind::ConvergesTo {
            target: match (v(&r.target), v(&r.share)) {
                (Some(t), None) => Target::Rate(t),
                (None, Some(s)) => Target::Share(s),
                _ => return Err(need("exactly one of target (a rate) or share (a fraction)")),
            },
            tolerance: v(&r.tolerance).unwrap_or(0.1),
            last_ns: r
                .last
                .as_ref()
                .map(|l| loc.duration(l, "last").map(ns))
                .transpose()?,
        },
        _ => SeriesKind::Stall {
            max_stall_ns: match &r.max_stall {
                Some(m) => ns(loc.duration(m, "max_stall")?),
                None => return Err(need("max_stall (e.g. \"300ms\")")),
            },
        },
    })
}

fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}
