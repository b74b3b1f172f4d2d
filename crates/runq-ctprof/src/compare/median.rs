//! Two-directory compare: each side is several snapshots (repeats of one
//! situation, or a recording), every row compares the two sides' medians,
//! and a change the sides' own spread could explain is marked as within
//! the noise.
//!
//! A change is within the noise when the two sides' min–max ranges
//! overlap, or when it is no larger than either side's own range.
//! Secondary sections (cgroup stats, PSI, host) and the exited-thread
//! tally come from each side's last snapshot.

use std::collections::BTreeMap;
use std::path::Path;

use runq_common::stats::median;

use super::side::{side, GroupData, Side};
use super::{limited_rows, two_sided_view, ViewOptions};
use crate::format::FormatError;
use crate::group::{CommNameSet, CommNames, GroupBy, Grouping};
use crate::model::CtprofSnapshot;
use crate::record::delta::for_each_snapshot;
use crate::registry::Aggregated;

use crate::view::{Noise, Spread};

/// The decision rule of [`Noise::within`].
pub fn within_noise(a: Spread, b: Spread, median_a: f64, median_b: f64) -> bool {
    let overlap = a.max >= b.min && b.max >= a.min;
    let change = (median_b - median_a).abs();
    overlap || change <= (a.max - a.min).max(b.max - b.min)
}

#[derive(Debug, Default)]
struct GroupSamples {
    threads: Vec<usize>,
    metrics: BTreeMap<&'static str, Vec<Aggregated>>,
    derived: BTreeMap<&'static str, Vec<f64>>,
    last: Option<GroupData>,
}

/// One side of a two-directory compare: per group and metric, the values
/// of every snapshot added.
#[derive(Debug, Default)]
pub struct Samples {
    groups: BTreeMap<String, GroupSamples>,
    /// Snapshots added.
    pub count: usize,
}

fn spread(v: &[f64]) -> Option<Spread> {
    let min = v.iter().copied().reduce(f64::min)?;
    let max = v.iter().copied().reduce(f64::max)?;
    Some(Spread {
        n: v.len(),
        min,
        max,
    })
}

impl Samples {
    /// Adds one snapshot's groups; under `--group-by comm` their row names
    /// come from `names`, decided over every snapshot of both sides.
    pub fn add(&mut self, snap: &CtprofSnapshot, grouping: &Grouping, names: Option<&CommNames>) {
        for (g, data) in side(snap, grouping, names) {
            let s = self.groups.entry(g).or_default();
            s.threads.push(data.threads);
            for (m, a) in &data.metrics {
                s.metrics.entry(m).or_default().push(a.clone());
            }
            for (m, v) in &data.derived {
                s.derived.entry(m).or_default().extend(*v);
            }
            s.last = Some(data);
        }
        self.count += 1;
    }

    /// A row's values over the snapshots (numbers only).
    fn values(&self, group: &str, metric: &str) -> Vec<f64> {
        let Some(g) = self.groups.get(group) else {
            return Vec::new();
        };
        match g.metrics.get(metric) {
            Some(v) => v.iter().filter_map(Aggregated::scalar).collect(),
            None => g.derived.get(metric).cloned().unwrap_or_default(),
        }
    }

    /// The side of medians: numbers are medians over the snapshots, other
    /// values (modes, ranges) those of the last snapshot.
    fn median_side(&self) -> Side {
        let mut out = Side::new();
        for (g, s) in &self.groups {
            let Some(mut data) = s.last.clone() else {
                continue;
            };
            let t: Vec<f64> = s.threads.iter().map(|&n| n as f64).collect();
            data.threads = median(&t).map_or(0, |m| m.round() as usize);
            for (m, vals) in &s.metrics {
                let v: Vec<f64> = vals.iter().filter_map(Aggregated::scalar).collect();
                let all_scalar = vals.iter().all(|a| matches!(a, Aggregated::Scalar { .. }));
                if let (true, Some(med)) = (all_scalar, median(&v)) {
                    let value = med.round() as u64;
                    data.metrics.insert(m, Aggregated::Scalar { value });
                }
            }
            for (m, vals) in &s.derived {
                data.derived.insert(m, median(vals));
            }
            out.insert(g.clone(), data);
        }
        out
    }
}

/// The comm row names of a compare of directories: under normalized
/// `--group-by comm`, decided over every snapshot of every directory (a
/// first pass that reads only thread names), so `worker-3` on one side
/// and `worker-7` on the other meet on one row; `None` for other axes.
pub fn comm_names_over_dirs(
    dirs: &[&Path],
    grouping: &Grouping,
) -> Result<Option<CommNames>, FormatError> {
    if grouping.by != GroupBy::Comm || !grouping.normalize {
        return Ok(None);
    }
    let mut seen = CommNameSet::default();
    for dir in dirs {
        for_each_snapshot(dir, |snap| seen.observe(&snap.threads))?;
    }
    Ok(Some(seen.decide()))
}

/// Compares two sides of several snapshots each; `last` are each side's
/// newest snapshot (secondary sections, host context, exited threads), and
/// `names` the comm row names the samples were added with.
pub fn compare_samples(
    a: &Samples,
    b: &Samples,
    last: (&CtprofSnapshot, &CtprofSnapshot),
    opts: &ViewOptions,
    names: Option<&CommNames>,
) -> super::View {
    let (sa, sb) = (a.median_side(), b.median_side());
    let (mut rows, omitted_rows) = limited_rows(&sa, Some(&sb), opts);
    for r in &mut rows {
        let (va, vb) = (a.values(&r.group, &r.metric), b.values(&r.group, &r.metric));
        let (Some(x), Some(y)) = (spread(&va), spread(&vb)) else {
            continue;
        };
        if let (Some(ma), Some(mb)) = (r.baseline.scalar(), r.candidate.scalar()) {
            r.noise = Some(Noise {
                within: within_noise(x, y, ma, mb),
                baseline: x,
                candidate: y,
            });
        }
    }
    super::View {
        samples: Some((a.count, b.count)),
        ..two_sided_view(last, rows, omitted_rows, opts, names)
    }
}

#[cfg(test)]
mod tests;
