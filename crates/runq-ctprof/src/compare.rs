//! The compare / show engine: groups threads, reduces every metric per
//! group, computes derived metrics, joins baseline with candidate, filters
//! by section and metric, sorts and limits. Rendering is in [`crate::render`].

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::avail::{metric_source, Capabilities, Reason, Source};
use crate::derived::{Metrics, CTPROF_DERIVED_METRICS};
use crate::group::{view_names, GroupBy, Grouping};
use crate::model::{CtprofSnapshot, ThreadState};
use crate::registry::{Aggregated, CtprofMetricDef, Section, Unit, CTPROF_METRICS};

/// One value cell.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Cell {
    /// A number.
    Num {
        /// The value.
        value: f64,
    },
    /// An ordinal range.
    Range {
        /// Smallest.
        min: i64,
        /// Largest.
        max: i64,
    },
    /// Text (mode, affinity, state), with a number when one exists.
    Text {
        /// Display text.
        text: String,
        /// Number for deltas, if any.
        scalar: Option<f64>,
    },
    /// Not computable or not present.
    Missing,
}

impl Cell {
    /// The number used for deltas and sorting.
    pub fn scalar(&self) -> Option<f64> {
        match self {
            Cell::Num { value } => Some(*value),
            Cell::Range { min, max } => Some((*min as f64 + *max as f64) / 2.0),
            Cell::Text { scalar, .. } => *scalar,
            Cell::Missing => None,
        }
    }

    /// Converts a group aggregate.
    pub fn from_agg(a: &Aggregated) -> Cell {
        match a {
            Aggregated::Scalar { value } => Cell::Num {
                value: *value as f64,
            },
            Aggregated::Range { min, max } => Cell::Range {
                min: *min,
                max: *max,
            },
            Aggregated::Mode {
                value,
                count,
                total,
            } => Cell::Text {
                text: format!("{value} ({count}/{total})"),
                scalar: None,
            },
            Aggregated::Affinity {
                min_cpus,
                max_cpus,
                uniform,
            } => {
                if *uniform {
                    Cell::Text {
                        text: format!("{max_cpus} cpus"),
                        scalar: Some(*max_cpus as f64),
                    }
                } else {
                    Cell::Text {
                        text: format!("{min_cpus}-{max_cpus} cpus (mixed)"),
                        scalar: None,
                    }
                }
            }
            Aggregated::Dead { nonzero: 0 } => Cell::Text {
                text: "dead".into(),
                scalar: None,
            },
            Aggregated::Dead { nonzero } => Cell::Text {
                text: format!("dead ({nonzero} non-zero)"),
                scalar: None,
            },
            Aggregated::Empty => Cell::Missing,
        }
    }

    fn text(&self) -> Option<&str> {
        match self {
            Cell::Text { text, .. } => Some(text.split(" (").next().unwrap_or(text)),
            _ => None,
        }
    }
}

/// Serializes a missing cell as JSON `null`.
fn cell_or_null<S: serde::Serializer>(c: &Cell, s: S) -> Result<S::Ok, S::Error> {
    match c {
        Cell::Missing => s.serialize_none(),
        c => c.serialize(s),
    }
}

/// The availability of one side of a view: host-wide reasons and counts of
/// per-thread exceptions (`source:reason` -> threads).
#[derive(Debug, Clone, Default, Serialize)]
pub struct SideCapabilities {
    /// Sources unavailable for every thread, with the reason.
    pub unavailable: BTreeMap<Source, Reason>,
    /// Threads missing a source, by `source:reason`.
    pub thread_exceptions: BTreeMap<String, u64>,
    /// True when inferred from a schema-1 file.
    pub inferred: bool,
}

impl SideCapabilities {
    /// Summarizes a snapshot; `None` when it carries no capabilities.
    pub fn of(snap: &CtprofSnapshot) -> Option<Self> {
        let caps = snap.capabilities.as_ref()?;
        let mut thread_exceptions = BTreeMap::new();
        for t in &snap.threads {
            for (src, why) in &t.unavailable {
                let key = format!("{}:{}", src.name(), why.name());
                *thread_exceptions.entry(key).or_insert(0) += 1;
            }
        }
        Some(SideCapabilities {
            unavailable: caps.unavailable.clone(),
            thread_exceptions,
            inferred: caps.inferred,
        })
    }
}

/// One output row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// Sub-table.
    pub section: Section,
    /// True for derived metrics (rendered in the derived table).
    pub derived: bool,
    /// Group key.
    pub group: String,
    /// Threads in the group: baseline, candidate.
    pub threads: (usize, usize),
    /// Metric name.
    pub metric: String,
    /// Display unit.
    pub unit: Unit,
    /// A `[0, 1]` ratio (no percent column).
    pub is_ratio: bool,
    /// Baseline value (the only value for `show`); `null` when missing.
    #[serde(serialize_with = "cell_or_null")]
    pub baseline: Cell,
    /// Candidate value (`null` for `show`).
    #[serde(serialize_with = "cell_or_null")]
    pub candidate: Cell,
    /// `candidate - baseline`, when both are numbers.
    pub delta: Option<f64>,
    /// Percent delta relative to the baseline.
    pub pct: Option<f64>,
    /// For text values: whether the two sides are equal.
    pub text_delta: Option<TextDelta>,
    /// On which sides the group was found.
    pub matched: Matched,
    /// Why the two sides cannot be compared (a source read on one side
    /// only, e.g. `taskstats eperm in candidate`); such rows sort last.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub incomparable: Option<String>,
    /// Two-directory compare: the sides' spreads and whether the change
    /// is within the noise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub noise: Option<median::Noise>,
}

/// On which sides a row's group was found (`show` rows are `both`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Matched {
    /// In both snapshots (or the one snapshot of `show`).
    Both,
    /// In the baseline only.
    BaselineOnly,
    /// In the candidate only.
    CandidateOnly,
}

impl Matched {
    /// Where a group was found: on the baseline `b`, on the candidate `c`,
    /// `comparing` two snapshots (else `show`).
    pub fn of(b: bool, c: bool, comparing: bool) -> Matched {
        match (b, c, comparing) {
            (true, true, _) | (true, false, false) => Matched::Both,
            (true, false, true) => Matched::BaselineOnly,
            _ => Matched::CandidateOnly,
        }
    }

    /// The JSON spelling, also printed next to unmatched groups.
    pub fn name(self) -> &'static str {
        match self {
            Matched::Both => "both",
            Matched::BaselineOnly => "baseline-only",
            Matched::CandidateOnly => "candidate-only",
        }
    }
}

/// How two text values compare.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TextDelta {
    /// Equal.
    Same,
    /// Not equal.
    Differs,
}

impl TextDelta {
    /// `same` or `differs`.
    pub fn name(self) -> &'static str {
        match self {
            TextDelta::Same => "same",
            TextDelta::Differs => "differs",
        }
    }
}

/// What a row shows apart from its two values: the input of
/// [`RowSpec::row`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct RowSpec<'a> {
    /// Sub-table.
    pub section: Section,
    /// A derived metric.
    pub derived: bool,
    /// Group key.
    pub group: &'a str,
    /// Threads in the group: baseline, candidate.
    pub threads: (usize, usize),
    /// Metric name.
    pub metric: &'a str,
    /// Display unit.
    pub unit: Unit,
    /// A `[0, 1]` ratio.
    pub is_ratio: bool,
    /// On which sides the group was found.
    pub matched: Matched,
}

impl RowSpec<'_> {
    /// The row of baseline value `b` and candidate value `c`, with their
    /// delta, percent change and text comparison.
    pub fn row(self, b: Cell, c: Cell) -> Row {
        let delta = match (b.scalar(), c.scalar()) {
            (Some(x), Some(y)) => Some(y - x),
            _ => None,
        };
        let pct = match (b.scalar(), delta) {
            (Some(x), Some(d)) if x != 0.0 && !self.is_ratio => Some(d / x.abs() * 100.0),
            _ => None,
        };
        let text_delta = match (b.text(), c.text()) {
            (Some(x), Some(y)) if x == y => Some(TextDelta::Same),
            (Some(_), Some(_)) => Some(TextDelta::Differs),
            _ => None,
        };
        Row {
            section: self.section,
            derived: self.derived,
            group: self.group.to_string(),
            threads: self.threads,
            metric: self.metric.to_string(),
            unit: self.unit,
            is_ratio: self.is_ratio,
            baseline: b,
            candidate: c,
            delta,
            pct,
            text_delta,
            matched: self.matched,
            incomparable: None,
            noise: None,
        }
    }
}

/// Filters and ordering shared by compare and show.
#[derive(Debug, Clone, Default)]
pub struct ViewOptions {
    /// Grouping.
    pub grouping: Grouping,
    /// Sections to render (empty: all).
    pub sections: Vec<Section>,
    /// Metric rows to keep in the primary / derived tables (empty: all).
    pub metrics: Vec<String>,
    /// `(metric, descending)`.
    pub sort_by: Option<(String, bool)>,
    /// Keep at most this many rows per table.
    pub limit: Option<usize>,
}

impl ViewOptions {
    fn wants(&self, s: Section) -> bool {
        self.sections.is_empty() || self.sections.contains(&s)
    }
}

/// Reduces one metric over the threads whose source was read; `Empty`
/// (rendered `-`) when the source is unavailable host-wide or for every
/// thread of the group.
pub fn reduce(
    def: &CtprofMetricDef,
    threads: &[&ThreadState],
    caps: Option<&Capabilities>,
) -> Aggregated {
    let Some(src) = metric_source(def) else {
        return def.rule.apply(threads);
    };
    if caps.is_some_and(|c| c.unavailable.contains_key(&src)) {
        return Aggregated::Empty;
    }
    if threads.iter().all(|t| !t.unavailable.contains_key(&src)) {
        return def.rule.apply(threads);
    }
    let read: Vec<&ThreadState> = threads
        .iter()
        .copied()
        .filter(|t| !t.unavailable.contains_key(&src))
        .collect();
    def.rule.apply(&read)
}

/// Every primary metric of one group; `caps` are the snapshot's host-wide
/// unavailable sources.
pub fn primary_metrics(threads: &[&ThreadState], caps: Option<&Capabilities>) -> Metrics {
    CTPROF_METRICS
        .iter()
        .map(|d| (d.name, reduce(d, threads, caps)))
        .collect()
}

/// The derived metrics of one group's primary metrics.
pub fn derived_metrics(m: &Metrics) -> BTreeMap<&'static str, Option<f64>> {
    CTPROF_DERIVED_METRICS
        .iter()
        .map(|d| (d.name, (d.compute)(m)))
        .collect()
}

/// Every primary metric plus the derived ones for one group.
pub fn group_metrics(
    threads: &[&ThreadState],
    caps: Option<&Capabilities>,
) -> (Metrics, BTreeMap<&'static str, Option<f64>>) {
    let m = primary_metrics(threads, caps);
    let d = derived_metrics(&m);
    (m, d)
}

/// Builds the primary, taskstats and derived rows.
fn metric_rows(base: &Side, cand: Option<&Side>, opts: &ViewOptions, mut sink: impl FnMut(Row)) {
    let keep = |name: &str| opts.metrics.is_empty() || opts.metrics.iter().any(|m| m == name);
    let groups: BTreeSet<&String> = base
        .keys()
        .chain(cand.iter().flat_map(|c| c.keys()))
        .collect();
    for g in groups {
        let b = base.get(g);
        let c = cand.and_then(|c| c.get(g));
        let matched = Matched::of(b.is_some(), c.is_some(), cand.is_some());
        let threads = (b.map_or(0, |x| x.threads), c.map_or(0, |x| x.threads));
        let flag = |srcs: &[Source]| b.zip(c).and_then(|(b, c)| side::incomparable(srcs, b, c));
        for d in CTPROF_METRICS
            .iter()
            .filter(|d| opts.wants(d.section) && keep(d.name))
        {
            let cell = |s: Option<&GroupData>| {
                s.and_then(|s| s.metrics.get(d.name))
                    .map_or(Cell::Missing, Cell::from_agg)
            };
            let unit = match d.rule.unit() {
                // Scaled by each snapshot's USER_HZ in `side`.
                Unit::Ticks => Unit::Ns,
                u => u,
            };
            let spec = RowSpec {
                section: d.section,
                derived: false,
                group: g,
                threads,
                metric: d.name,
                unit,
                is_ratio: false,
                matched,
            };
            let mut row = spec.row(cell(b), cell(c));
            row.incomparable = flag(metric_source(d).as_slice());
            sink(row);
        }
        for d in CTPROF_DERIVED_METRICS
            .iter()
            .filter(|d| opts.wants(d.section) && keep(d.name))
        {
            let cell = |s: Option<&GroupData>| {
                s.and_then(|s| s.derived.get(d.name).copied().flatten())
                    .map_or(Cell::Missing, |value| Cell::Num { value })
            };
            let spec = RowSpec {
                section: d.section,
                derived: true,
                group: g,
                threads,
                metric: d.name,
                unit: d.unit,
                is_ratio: d.is_ratio,
                matched,
            };
            let mut row = spec.row(cell(b), cell(c));
            row.incomparable = flag(&side::derived_sources(d));
            sink(row);
        }
    }
}

/// A group's value of a metric or derived metric.
fn side_value(side: &Side, group: &str, metric: &str) -> Option<f64> {
    let g = side.get(group)?;
    match g.metrics.get(metric) {
        Some(a) => a.scalar(),
        None => g.derived.get(metric).copied().flatten(),
    }
}

/// The per-group sort key of `--sort-by metric`: its delta for compare,
/// its value for show.
fn group_order(base: &Side, cand: Option<&Side>, metric: &str) -> BTreeMap<String, Option<f64>> {
    let groups = base.keys().chain(cand.iter().flat_map(|c| c.keys()));
    groups
        .map(|g| {
            let b = side_value(base, g, metric);
            let v = match cand {
                None => b,
                Some(c) => side_value(c, g, metric).zip(b).map(|(c, b)| c - b),
            };
            (g.clone(), v)
        })
        .collect()
}

fn cmp_opt(x: Option<f64>, y: Option<f64>, desc: bool) -> std::cmp::Ordering {
    use std::cmp::Ordering::*;
    match (x, y) {
        (Some(x), Some(y)) if desc => y.total_cmp(&x),
        (Some(x), Some(y)) => x.total_cmp(&y),
        (Some(_), None) => Less,
        (None, Some(_)) => Greater,
        (None, None) => Equal,
    }
}

/// Sorts rows: with `order` (from `--sort-by`), groups by that key; else by
/// absolute delta (value for show). Rows without a number go last.
pub fn sort_rows(
    rows: &mut [Row],
    order: Option<(&BTreeMap<String, Option<f64>>, bool)>,
    show: bool,
) {
    let o = RowOrder { order, show };
    rows.sort_by(|a, b| o.cmp(a, b));
}

/// The whole result of a compare or show.
#[derive(Debug, Clone, Serialize)]
pub struct View {
    /// Grouping axis.
    pub group_by: GroupBy,
    /// Rows, table by table (primary and taskstats first, derived, then
    /// the secondary sections).
    pub rows: Vec<Row>,
    /// Baseline host context missing.
    pub baseline_host_missing: bool,
    /// Candidate host context missing (compare only).
    pub candidate_host_missing: bool,
    /// Host context by side (`baseline`, `candidate`), as recorded.
    pub hosts: BTreeMap<&'static str, crate::model::HostContext>,
    /// The host context and capability states as keys, with the keys whose
    /// values differ between the two sides marked.
    pub host: Vec<crate::hostview::HostRow>,
    /// Why values are missing, by side (`baseline`, `candidate`).
    pub capabilities: BTreeMap<&'static str, SideCapabilities>,
    /// Threads that exited before the (candidate) capture, from `record`.
    pub exited: Vec<crate::record::ExitedTally>,
    /// Rows left out by the limit: per-thread metrics, derived metrics.
    pub omitted_rows: (usize, usize),
    /// Rows left out by the limit in the secondary tables, by table name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub omitted_section_rows: BTreeMap<&'static str, usize>,
    /// Two-directory compare: the snapshots on each side (baseline,
    /// candidate) whose medians are compared.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub samples: Option<(usize, usize)>,
}

fn capabilities(
    base: &CtprofSnapshot,
    cand: Option<&CtprofSnapshot>,
) -> BTreeMap<&'static str, SideCapabilities> {
    let mut m = BTreeMap::new();
    if let Some(c) = SideCapabilities::of(base) {
        m.insert("baseline", c);
    }
    if let Some(c) = cand.and_then(SideCapabilities::of) {
        m.insert("candidate", c);
    }
    m
}

fn hosts(
    base: &CtprofSnapshot,
    cand: Option<&CtprofSnapshot>,
) -> BTreeMap<&'static str, crate::model::HostContext> {
    let sides = [("baseline", Some(base)), ("candidate", cand)];
    sides
        .into_iter()
        .filter_map(|(k, s)| Some((k, s?.host.clone()?)))
        .collect()
}

/// Builds, orders and limits the metric rows: the per-thread metric table
/// first, then the derived table; returns how many rows each left out.
fn limited_rows(
    base: &Side,
    cand: Option<&Side>,
    opts: &ViewOptions,
) -> (Vec<Row>, (usize, usize)) {
    let order = opts
        .sort_by
        .as_ref()
        .map(|(m, desc)| (group_order(base, cand, m), *desc));
    let o = RowOrder {
        order: order.as_ref().map(|(o, d)| (o, *d)),
        show: cand.is_none(),
    };
    let (mut main, mut derived) = (TopRows::new(opts.limit, &o), TopRows::new(opts.limit, &o));
    metric_rows(base, cand, opts, |r| {
        if r.derived {
            derived.push(r)
        } else {
            main.push(r)
        }
    });
    let ((mut rows, a), (d, b)) = (main.finish(), derived.finish());
    rows.extend(d);
    (rows, (a, b))
}

/// Compares two snapshots.
pub fn compare(base: &CtprofSnapshot, cand: &CtprofSnapshot, opts: &ViewOptions) -> View {
    let names = view_names(&opts.grouping, [&base.threads[..], &cand.threads[..]]);
    let names = names.as_ref();
    let (b, c) = (
        side(base, &opts.grouping, names),
        side(cand, &opts.grouping, names),
    );
    let (rows, omitted_rows) = limited_rows(&b, Some(&c), opts);
    two_sided_view((base, cand), rows, omitted_rows, opts, names)
}

/// Finishes a compare view of `base` against `cand` around its primary
/// `rows`: their secondary sections, host context and capabilities, and
/// the candidate's exited tally.
pub(crate) fn two_sided_view(
    (base, cand): (&CtprofSnapshot, &CtprofSnapshot),
    mut rows: Vec<Row>,
    omitted_rows: (usize, usize),
    opts: &ViewOptions,
    names: Option<&crate::group::CommNames>,
) -> View {
    let (secondary, omitted_section_rows) =
        crate::sections::secondary_rows(base, Some(cand), opts, names);
    rows.extend(secondary);
    View {
        group_by: opts.grouping.by,
        rows,
        baseline_host_missing: base.host.is_none(),
        candidate_host_missing: cand.host.is_none(),
        hosts: hosts(base, Some(cand)),
        host: crate::hostview::host_rows(base, Some(cand)),
        capabilities: capabilities(base, Some(cand)),
        exited: cand.exited.clone(),
        omitted_rows,
        omitted_section_rows,
        samples: None,
    }
}

/// Renders one snapshot's groups.
pub fn show(snap: &CtprofSnapshot, opts: &ViewOptions) -> View {
    let names = view_names(&opts.grouping, [&snap.threads[..]]);
    let s = side(snap, &opts.grouping, names.as_ref());
    let (mut rows, omitted_rows) = limited_rows(&s, None, opts);
    let (secondary, omitted_section_rows) =
        crate::sections::secondary_rows(snap, None, opts, names.as_ref());
    rows.extend(secondary);
    View {
        group_by: opts.grouping.by,
        rows,
        baseline_host_missing: snap.host.is_none(),
        candidate_host_missing: false,
        hosts: hosts(snap, None),
        host: crate::hostview::host_rows(snap, None),
        capabilities: capabilities(snap, None),
        exited: snap.exited.clone(),
        omitted_rows,
        omitted_section_rows,
        samples: None,
    }
}

pub mod median;
pub mod side;
mod top;
use side::{side, GroupData, Side};
use top::{RowOrder, TopRows};

#[cfg(test)]
mod tests;
