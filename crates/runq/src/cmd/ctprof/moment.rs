//! The ctprof part of a FAIL's evidence: runq-ctprof's compare of the
//! run's two snapshots for each thread the evidence names (the worker,
//! its waker, who held its CPU), cut down to the figures that tell a
//! scheduling story (run-queue wait, CPU time, switches, migrations) and
//! the one other per-thread metric that moved most.

use runq_ctprof::compare::compare_thread;
use runq_ctprof::registry::Section;
use runq_ctprof::view::{Matched, Row, ViewOptions};
use runq_ctprof::CtprofSnapshot;
use runq_results::evidence::ctprof::{MetricDelta, Presence, Subject, ThreadDeltas, KEY_METRICS};

/// The deltas of `s`'s thread between `before` and `after`.
pub fn thread_deltas(before: &CtprofSnapshot, after: &CtprofSnapshot, s: Subject) -> ThreadDeltas {
    let tid = u32::try_from(s.tid).unwrap_or(0);
    let find = |snap: &CtprofSnapshot| snap.threads.iter().find(|t| t.tid == tid).cloned();
    let (b, a) = (find(before), find(after));
    let presence = match (&b, &a) {
        (Some(_), Some(_)) => Presence::Both,
        (None, Some(_)) => Presence::AfterOnly,
        (Some(_), None) => Presence::BeforeOnly,
        (None, None) => Presence::Neither,
    };
    let comm = a.or(b).map(|t| t.comm).unwrap_or_default();
    let mut out = ThreadDeltas {
        tid: s.tid,
        role: s.role.to_string(),
        comm,
        presence,
        deltas: Vec::new(),
        most_moved: None,
    };
    if matches!(presence, Presence::Both | Presence::AfterOnly) {
        let view = compare_thread(before, after, tid, &ViewOptions::default());
        let rows: Vec<&Row> = view.rows.iter().filter(|r| per_thread(r)).collect();
        out.deltas = KEY_METRICS
            .iter()
            .filter_map(|k| rows.iter().find(|r| r.metric == *k))
            .filter_map(|r| delta_of(r))
            .collect();
        out.most_moved = (presence == Presence::Both)
            .then(|| most_moved(&rows))
            .flatten();
    }
    out
}

/// A per-thread figure (not a cgroup's, a process's or the host's).
fn per_thread(r: &Row) -> bool {
    matches!(
        r.section,
        Section::Primary | Section::TaskstatsDelay | Section::Derived
    )
}

/// A row's change: the delta of a thread in both snapshots, the second
/// snapshot's value of one started between them.
fn delta_of(r: &Row) -> Option<MetricDelta> {
    let delta = match r.matched {
        Matched::CandidateOnly => r.candidate.scalar()?,
        _ => r.delta?,
    };
    let unit = serde_json::to_value(r.unit)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    Some(MetricDelta {
        metric: r.metric.clone(),
        delta,
        unit,
        pct: r.pct.filter(|p| p.is_finite()),
    })
}

/// The row outside [`KEY_METRICS`] whose value changed most relative to
/// the first snapshot (numbers only: a policy or an affinity that changed
/// has no percentage).
fn most_moved(rows: &[&Row]) -> Option<MetricDelta> {
    rows.iter()
        .filter(|r| !KEY_METRICS.contains(&r.metric.as_str()) && r.text_delta.is_none())
        .filter(|r| r.delta.is_some_and(|d| d != 0.0))
        .filter_map(|r| Some((r, r.pct.filter(|p| p.is_finite())?.abs())))
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .and_then(|(r, _)| delta_of(r))
}

#[cfg(test)]
mod tests {
    use super::*;
    use runq_ctprof::metric_types::{MonotonicCount, MonotonicNs};
    use runq_ctprof::ThreadState;

    fn thread(tid: u32, comm: &str, wait_ms: u64, nvcsw: u64, blocks: u64) -> ThreadState {
        let mut t = ThreadState {
            tid,
            tgid: tid,
            comm: comm.into(),
            pcomm: comm.into(),
            ..Default::default()
        };
        t.wait_time_ns = MonotonicNs(wait_ms * 1_000_000);
        t.nonvoluntary_csw = MonotonicCount(nvcsw);
        t.block_sum = MonotonicNs(blocks * 1_000_000);
        t
    }

    fn snap(threads: Vec<ThreadState>) -> CtprofSnapshot {
        let mut s = CtprofSnapshot::new();
        s.threads = threads;
        s
    }

    #[test]
    fn a_threads_deltas_come_from_ctprofs_compare() {
        let before = snap(vec![
            thread(10, "spin", 5, 2, 100),
            thread(20, "yes", 0, 0, 0),
        ]);
        let after = snap(vec![
            thread(10, "spin", 1_505, 47, 300),
            thread(30, "hog", 7, 3, 0),
        ]);
        let worker = Subject {
            tid: 10,
            role: "worker",
        };
        let d = thread_deltas(&before, &after, worker);
        assert_eq!(d.presence, Presence::Both);
        assert_eq!(d.comm, "spin");
        let got: Vec<(&str, f64)> = d
            .deltas
            .iter()
            .map(|m| (m.metric.as_str(), m.delta))
            .collect();
        assert!(got.contains(&("wait_time_ns", 1_500_000_000.0)), "{got:?}");
        assert!(got.contains(&("nonvoluntary_csw", 45.0)), "{got:?}");
        assert_eq!(got[0].0, "wait_time_ns", "the key metrics in their order");
        let m = d.most_moved.expect("block_sum moved");
        assert_eq!((m.metric.as_str(), m.delta), ("block_sum", 200_000_000.0));
        // Started between the snapshots: its figures since it started.
        let hog = thread_deltas(
            &before,
            &after,
            Subject {
                tid: 30,
                role: "holder",
            },
        );
        assert_eq!(hog.presence, Presence::AfterOnly);
        assert!(hog
            .deltas
            .iter()
            .any(|m| m.metric == "wait_time_ns" && m.delta == 7_000_000.0));
        assert!(hog.most_moved.is_none());
        // Renamed between the snapshots (a kworker's comm names its work):
        // still one thread with deltas.
        let mut renamed = after.clone();
        renamed.threads[0].comm = "spin-2".into();
        renamed.threads[0].pcomm = "spin-2".into();
        let d = thread_deltas(&before, &renamed, worker);
        assert_eq!((d.presence, d.comm.as_str()), (Presence::Both, "spin-2"));
        assert_eq!(d.deltas.len(), got.len(), "{d:?}");
        // Ended, or never seen: no figures.
        let gone = thread_deltas(
            &before,
            &after,
            Subject {
                tid: 20,
                role: "holder",
            },
        );
        assert_eq!(
            (gone.presence, gone.deltas.len()),
            (Presence::BeforeOnly, 0)
        );
        let none = thread_deltas(
            &before,
            &after,
            Subject {
                tid: 99,
                role: "waker",
            },
        );
        assert_eq!((none.presence, none.comm.as_str()), (Presence::Neither, ""));
    }
}
