//! The compare / show engine: groups threads, reduces every metric per
//! group, computes derived metrics, joins baseline with candidate, filters
//! by section and metric, sorts and limits. Rendering is in [`crate::render`].

use std::collections::{BTreeMap, BTreeSet};

use crate::avail::{Capabilities, Source};
use crate::derived::{Metrics, CTPROF_DERIVED_METRICS};
use crate::group::view_names;
use crate::model::{CtprofSnapshot, ThreadState};
use crate::registry::metric_source;
use crate::registry::{Aggregated, CtprofMetricDef, Unit, CTPROF_METRICS};
use crate::view::{Cell, Matched, Row, RowSpec, SideCapabilities, View, ViewOptions};

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

/// The compare of one thread: [`compare`] of `base` and `cand` each cut
/// down to the thread `tid` (its rows are that thread's values and
/// deltas; a thread on one side only has rows matched to that side, and
/// none when neither holds it). A thread renamed between them (a
/// kworker's comm names its current work) is still one thread: the
/// baseline's copy takes the candidate's names.
pub fn compare_thread(
    base: &CtprofSnapshot,
    cand: &CtprofSnapshot,
    tid: u32,
    opts: &ViewOptions,
) -> View {
    let (mut b, c) = (only_thread(base, tid), only_thread(cand, tid));
    if let (Some(bt), Some(ct)) = (b.threads.first_mut(), c.threads.first()) {
        bt.pcomm.clone_from(&ct.pcomm);
        bt.comm.clone_from(&ct.comm);
        bt.cgroup.clone_from(&ct.cgroup);
    }
    compare(&b, &c, opts)
}

/// `snap` with no thread but `tid` (and no cgroup stats but its cgroup's).
fn only_thread(snap: &CtprofSnapshot, tid: u32) -> CtprofSnapshot {
    let threads: Vec<ThreadState> = snap
        .threads
        .iter()
        .filter(|t| t.tid == tid)
        .cloned()
        .collect();
    let cgroup_stats = snap
        .cgroup_stats
        .iter()
        .filter(|(path, _)| threads.iter().any(|t| &t.cgroup == *path))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    CtprofSnapshot {
        threads,
        cgroup_stats,
        exited: Vec::new(),
        ..snap.clone_header()
    }
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
