use std::path::Path;

use super::*;
use crate::metric_types::MonotonicNs;
use crate::model::ThreadState;
use crate::record::delta::for_each_snapshot;
use crate::record::files::snapshot_name;

/// Writes one snapshot per value into `dir`: a process "app" with one
/// thread whose run time is the value (ms).
fn fixture_dir(dir: &Path, run_ms: &[u64]) {
    fixture_dir_named(dir, run_ms, "app");
}

/// The same, the thread named `comm`.
fn fixture_dir_named(dir: &Path, run_ms: &[u64], comm: &str) {
    for (i, ms) in run_ms.iter().enumerate() {
        let mut s = CtprofSnapshot::new();
        s.captured_at_unix_ns = 1_795_426_416_000_000_000 + i as u64 * 1_000_000_000;
        s.threads = vec![ThreadState {
            tid: 7,
            tgid: 7,
            pcomm: "app".into(),
            comm: comm.into(),
            run_time_ns: MonotonicNs(ms * 1_000_000),
            ..Default::default()
        }];
        crate::save(&s, &dir.join(snapshot_name(s.captured_at_unix_ns))).unwrap();
    }
}

fn samples(dir: &Path, g: &Grouping, names: Option<&CommNames>) -> (Samples, CtprofSnapshot) {
    let mut s = Samples::default();
    let last = for_each_snapshot(dir, |snap| s.add(snap, g, names)).unwrap();
    (s, last.unwrap())
}

fn run_time_row(a: &[u64], b: &[u64]) -> crate::view::Row {
    let (da, db) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    fixture_dir(da.path(), a);
    fixture_dir(db.path(), b);
    let opts = ViewOptions {
        metrics: vec!["run_time_ns".into()],
        ..Default::default()
    };
    let (sa, la) = samples(da.path(), &opts.grouping, None);
    let (sb, lb) = samples(db.path(), &opts.grouping, None);
    assert_eq!((sa.count, sb.count), (a.len(), b.len()));
    let view = compare_samples(&sa, &sb, (&la, &lb), &opts, None);
    assert_eq!(view.samples, Some((a.len(), b.len())));
    view.rows
        .into_iter()
        .find(|r| r.metric == "run_time_ns" && r.group == "app")
        .expect("the app row")
}

#[test]
fn medians_are_compared() {
    let r = run_time_row(&[100, 130, 110], &[300, 200, 210, 220]);
    assert_eq!(r.baseline.scalar(), Some(110e6));
    assert_eq!(
        r.candidate.scalar(),
        Some(215e6),
        "the mean of the middle two"
    );
    let n = r.noise.unwrap();
    assert!(!n.within, "{n:?}");
    assert_eq!((n.baseline.min, n.baseline.max), (100e6, 130e6));
    assert_eq!(n.candidate.n, 4);
}

#[test]
fn a_change_inside_the_spread_is_noise() {
    let r = run_time_row(&[100, 110, 120], &[118, 125, 131]);
    assert_eq!(r.delta, Some(15e6));
    assert!(r.noise.unwrap().within, "ranges overlap");
    // No overlap, but the change is within the candidate's own range.
    let r = run_time_row(&[100, 101, 102], &[103, 110, 160]);
    assert!(r.noise.unwrap().within);
    let mut text = Vec::new();
    let view = crate::view::View {
        rows: vec![r],
        samples: Some((3, 3)),
        ..crate::compare::compare(
            &CtprofSnapshot::new(),
            &CtprofSnapshot::new(),
            &ViewOptions::default(),
        )
    };
    crate::render::render_to(&view, true, &[], false, &mut text).unwrap();
    let text = String::from_utf8(text).unwrap();
    assert!(text.contains("+9.000ms ~"), "{text}");
    assert!(
        text.contains("medians over 3 baseline and 3 candidate"),
        "{text}"
    );
}

#[test]
fn the_rule() {
    let s = |min, max| Spread { n: 3, min, max };
    assert!(within_noise(s(1.0, 2.0), s(2.0, 3.0), 1.5, 2.5));
    assert!(!within_noise(s(1.0, 2.0), s(5.0, 6.0), 1.5, 5.5));
    assert!(within_noise(s(1.0, 1.0), s(1.5, 5.0), 1.0, 1.6));
}

/// `worker-3` in one directory and `worker-7` in the other are one pool:
/// their row name is decided over both sides, as in a two-file compare.
#[test]
fn comm_rows_are_named_over_both_directories() {
    let (da, db) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    fixture_dir_named(da.path(), &[100, 110], "worker-3");
    fixture_dir_named(db.path(), &[200, 210], "worker-7");
    let opts = ViewOptions {
        metrics: vec!["run_time_ns".into()],
        grouping: Grouping {
            by: GroupBy::Comm,
            ..Default::default()
        },
        ..Default::default()
    };
    let names = comm_names_over_dirs(&[da.path(), db.path()], &opts.grouping).unwrap();
    let (sa, la) = samples(da.path(), &opts.grouping, names.as_ref());
    let (sb, lb) = samples(db.path(), &opts.grouping, names.as_ref());
    let view = compare_samples(&sa, &sb, (&la, &lb), &opts, names.as_ref());
    let groups: Vec<&str> = view.rows.iter().map(|r| r.group.as_str()).collect();
    assert_eq!(groups, ["worker-{N}"], "{groups:?}");
    assert!(view.rows[0].delta.is_some(), "both sides on one row");
    let pcomm = comm_names_over_dirs(&[da.path()], &Grouping::default()).unwrap();
    assert!(pcomm.is_none(), "only --group-by comm decides names");
}
