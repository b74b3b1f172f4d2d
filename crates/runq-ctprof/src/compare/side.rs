//! One snapshot's side of a view: its groups with their reduced metrics,
//! the sources each group could not read, and the rule that flags a row
//! whose source was read on one side only.

use std::collections::BTreeMap;

use crate::avail::{Reason, Source};
use crate::derived::{DerivedMetricDef, Metrics};
use crate::group::{group_threads_named, CommNames, Grouping};
use crate::model::{CtprofSnapshot, ThreadState};
use crate::registry::metric_source;
use crate::registry::{metric, AggRule, Aggregated, CTPROF_METRICS};

/// One group of one snapshot.
#[derive(Debug, Clone)]
pub struct GroupData {
    /// Threads in the group.
    pub threads: usize,
    /// Reduced metrics (tick counters already scaled to ns).
    pub metrics: Metrics,
    /// Derived metrics.
    pub derived: BTreeMap<&'static str, Option<f64>>,
    /// Sources some threads could not be read from: how many threads, and
    /// why (threads that exited mid-capture do not count).
    pub unread: BTreeMap<Source, (usize, Reason)>,
}

/// A snapshot's groups by row name.
pub type Side = BTreeMap<String, GroupData>;

/// The USER_HZ of the host a snapshot was taken on (this host's when the
/// snapshot does not say).
pub fn user_hz(snap: &CtprofSnapshot) -> u64 {
    match snap.host.as_ref().map(|h| h.user_hz) {
        Some(hz) if hz > 0 => hz,
        // SAFETY: sysconf has no preconditions.
        _ => u64::try_from(unsafe { libc::sysconf(libc::_SC_CLK_TCK) })
            .ok()
            .filter(|&hz| hz > 0)
            .unwrap_or(100),
    }
}

/// Converts clock-tick sums to ns with the snapshot's USER_HZ, so hosts
/// with different USER_HZ compare in one unit.
pub fn scale_ticks(m: &mut Metrics, hz: u64) {
    for d in CTPROF_METRICS {
        if let (AggRule::SumTicks(_), Some(Aggregated::Scalar { value })) =
            (d.rule, m.get_mut(d.name))
        {
            let ns = u128::from(*value) * 1_000_000_000 / u128::from(hz.max(1));
            *value = u64::try_from(ns).unwrap_or(u64::MAX);
        }
    }
}

/// The sources a group could not read: host-wide ones for every thread,
/// per-thread ones counted (a thread that exited is not a reason).
fn unread(threads: &[&ThreadState], snap: &CtprofSnapshot) -> BTreeMap<Source, (usize, Reason)> {
    let mut out: BTreeMap<Source, (usize, Reason)> = BTreeMap::new();
    let host = snap.capabilities.as_ref().map(|c| &c.unavailable);
    for (src, why) in host.into_iter().flatten() {
        out.insert(*src, (threads.len(), *why));
    }
    for t in threads {
        for (src, why) in &t.unavailable {
            if *why == Reason::ThreadGone || host.is_some_and(|h| h.contains_key(src)) {
                continue;
            }
            out.entry(*src).or_insert((0, *why)).0 += 1;
        }
    }
    out
}

/// Groups and reduces one snapshot.
pub fn side(snap: &CtprofSnapshot, g: &Grouping, names: Option<&CommNames>) -> Side {
    let hz = user_hz(snap);
    group_threads_named(&snap.threads, g, names)
        .into_iter()
        .map(|(k, v)| {
            let mut metrics = super::primary_metrics(&v, snap.capabilities.as_ref());
            scale_ticks(&mut metrics, hz);
            let derived = super::derived_metrics(&metrics);
            let unread = unread(&v, snap);
            let data = GroupData {
                threads: v.len(),
                metrics,
                derived,
                unread,
            };
            (k, data)
        })
        .collect()
}

/// The sources a derived metric's inputs come from.
pub fn derived_sources(d: &DerivedMetricDef) -> Vec<Source> {
    let mut v: Vec<Source> = d
        .formula
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter_map(metric)
        .filter_map(metric_source)
        .collect();
    if v.is_empty() && d.section == crate::registry::Section::TaskstatsDelay {
        v = vec![Source::Taskstats, Source::Delayacct];
    }
    v.sort();
    v.dedup();
    v
}

/// Why a row's two sides cannot be compared: one of its sources was read
/// for every thread on one side and not on the other (root against
/// non-root, delay accounting on against off). `None` when comparable.
pub fn incomparable(sources: &[Source], b: &GroupData, c: &GroupData) -> Option<String> {
    for src in sources {
        let (mb, mc) = (b.unread.get(src), c.unread.get(src));
        let (side, g, (missing, why)) = match (mb, mc) {
            (None, Some(m)) => ("candidate", c, m),
            (Some(m), None) => ("baseline", b, m),
            _ => continue,
        };
        return Some(if *missing >= g.threads {
            format!("{} {} in {side}", src.name(), why.name())
        } else {
            format!(
                "{} {} for {missing}/{} threads in {side}",
                src.name(),
                why.name(),
                g.threads
            )
        });
    }
    None
}
