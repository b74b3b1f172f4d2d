use super::*;
use crate::metric_types::*;

fn t(tid: u32, pcomm: &str, comm: &str, run: u64, vcsw: u64) -> ThreadState {
    ThreadState {
        tid,
        tgid: tid,
        pcomm: pcomm.into(),
        comm: comm.into(),
        cgroup: "/g".into(),
        run_time_ns: MonotonicNs(run),
        voluntary_csw: MonotonicCount(vcsw),
        wait_time_ns: MonotonicNs(run / 4),
        policy: CategoricalString("SCHED_OTHER".into()),
        ..Default::default()
    }
}

fn snap(threads: Vec<ThreadState>) -> CtprofSnapshot {
    let mut s = CtprofSnapshot::new();
    s.threads = threads;
    s
}

#[test]
fn deltas_unmatched_and_default_sort() {
    let a = snap(vec![
        t(1, "app", "app", 1000, 5),
        t(2, "gone", "gone", 10, 1),
    ]);
    let b = snap(vec![t(1, "app", "app", 4000, 6), t(3, "new", "new", 10, 1)]);
    let v = compare(&a, &b, &ViewOptions::default());
    let run = v
        .rows
        .iter()
        .find(|r| r.group == "app" && r.metric == "run_time_ns")
        .unwrap();
    assert_eq!(run.delta, Some(3000.0));
    assert_eq!(run.pct, Some(300.0));
    assert_eq!(v.rows[0].metric, "run_time_ns", "largest mover first");
    assert!(v
        .rows
        .iter()
        .any(|r| r.group == "gone" && r.matched == "baseline-only"));
    assert!(v
        .rows
        .iter()
        .any(|r| r.group == "new" && r.matched == "candidate-only"));
    let pol = v
        .rows
        .iter()
        .find(|r| r.group == "app" && r.metric == "policy")
        .unwrap();
    assert_eq!(pol.text_delta, Some("same"));
    let first_none = v.rows.iter().position(|r| r.delta.is_none()).unwrap();
    assert!(v.rows[first_none..]
        .iter()
        .filter(|r| !r.derived)
        .all(|r| r.delta.is_none()));
    let eff = v
        .rows
        .iter()
        .find(|r| r.group == "app" && r.metric == "cpu_efficiency")
        .unwrap();
    assert!(eff.is_ratio && eff.pct.is_none());
    assert!(v.baseline_host_missing);
}

#[test]
fn filters_and_sort_by() {
    let a = snap(vec![t(1, "x", "x", 100, 1), t(2, "y", "y", 100, 1)]);
    let b = snap(vec![t(1, "x", "x", 200, 1), t(2, "y", "y", 900, 1)]);
    let opts = ViewOptions {
        sections: vec![Section::Primary],
        metrics: vec!["run_time_ns".into(), "voluntary_csw".into()],
        sort_by: Some(("run_time_ns".into(), false)),
        ..Default::default()
    };
    let v = compare(&a, &b, &opts);
    assert_eq!(v.rows.len(), 4);
    assert_eq!(v.rows[0].group, "x", "ascending by run_time_ns delta");
    let s = show(
        &b,
        &ViewOptions {
            sort_by: Some(("run_time_ns".into(), true)),
            limit: Some(3),
            sections: vec![Section::Primary],
            ..Default::default()
        },
    );
    assert_eq!(s.rows.len(), 3);
    assert_eq!(s.rows[0].group, "y");
}

#[test]
fn missing_derived_input_renders_dash() {
    let a = snap(vec![t(1, "x", "x", 0, 0)]);
    let v = show(
        &a,
        &ViewOptions {
            sections: vec![Section::Derived],
            ..Default::default()
        },
    );
    let r = v.rows.iter().find(|r| r.metric == "avg_slice_ns").unwrap();
    assert_eq!(r.baseline, Cell::Missing);
    let text = crate::render::render(&v, false, &[], false);
    assert!(text.contains("## Derived metrics"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.contains("avg_slice_ns") && l.trim_end().ends_with('-')),
        "{text}"
    );
}

#[test]
fn sort_by_applies_to_derived_and_filtered_tables() {
    let a = snap(vec![t(1, "x", "x", 100, 1), t(2, "y", "y", 100, 1)]);
    let b = snap(vec![t(1, "x", "x", 200, 1), t(2, "y", "y", 900, 1)]);
    let opts = ViewOptions {
        metrics: vec!["voluntary_csw".into(), "avg_slice_ns".into()],
        sort_by: Some(("run_time_ns".into(), true)),
        ..Default::default()
    };
    let v = compare(&a, &b, &opts);
    let firsts: Vec<(&str, bool)> = v
        .rows
        .iter()
        .map(|r| (r.group.as_str(), r.derived))
        .collect();
    assert_eq!(firsts[0], ("y", false));
    let first_derived = firsts.iter().find(|(_, d)| *d).unwrap();
    assert_eq!(
        first_derived.0, "y",
        "derived rows follow the same group order"
    );
}

/// `worker-3` alone in the baseline and `worker-7` alone in the candidate
/// are the same logical pool: one matched row, not two unmatched ones.
#[test]
fn comm_rows_match_across_snapshots() {
    let a = snap(vec![t(1, "svc", "worker-3", 1000, 1), t(2, "svc", "main", 10, 1)]);
    let b = snap(vec![t(3, "svc", "worker-7", 3000, 1), t(2, "svc", "main", 10, 1)]);
    let opts = ViewOptions {
        grouping: Grouping {
            by: GroupBy::Comm,
            ..Default::default()
        },
        metrics: vec!["run_time_ns".into()],
        sections: vec![Section::Primary],
        ..Default::default()
    };
    let v = compare(&a, &b, &opts);
    let groups: Vec<(&str, &str)> = v
        .rows
        .iter()
        .map(|r| (r.group.as_str(), r.matched))
        .collect();
    assert_eq!(groups, [("worker-{N}", "both"), ("main", "both")]);
    assert_eq!(v.rows[0].delta, Some(2000.0));
    // Show of either side alone keeps the literal name.
    let s = show(&a, &opts);
    assert!(s.rows.iter().any(|r| r.group == "worker-3"));
}
