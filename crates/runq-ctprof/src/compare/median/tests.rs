use std::path::Path;

use super::*;
use crate::metric_types::MonotonicNs;
use crate::model::ThreadState;
use crate::record::delta::for_each_snapshot;
use crate::record::files::snapshot_name;

/// Writes one snapshot per value into `dir`: a process "app" with one
/// thread whose run time is the value (ms).
fn fixture_dir(dir: &Path, run_ms: &[u64]) {
    for (i, ms) in run_ms.iter().enumerate() {
        let mut s = CtprofSnapshot::new();
        s.captured_at_unix_ns = 1_795_426_416_000_000_000 + i as u64 * 1_000_000_000;
        s.threads = vec![ThreadState {
            tid: 7,
            tgid: 7,
            pcomm: "app".into(),
            comm: "app".into(),
            run_time_ns: MonotonicNs(ms * 1_000_000),
            ..Default::default()
        }];
        crate::save(&s, &dir.join(snapshot_name(s.captured_at_unix_ns))).unwrap();
    }
}

fn samples(dir: &Path, g: &Grouping) -> (Samples, CtprofSnapshot) {
    let mut s = Samples::default();
    let last = for_each_snapshot(dir, |snap| s.add(snap, g)).unwrap();
    (s, last.unwrap())
}

fn run_time_row(a: &[u64], b: &[u64]) -> crate::compare::Row {
    let (da, db) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    fixture_dir(da.path(), a);
    fixture_dir(db.path(), b);
    let opts = ViewOptions {
        metrics: vec!["run_time_ns".into()],
        ..Default::default()
    };
    let (sa, la) = samples(da.path(), &opts.grouping);
    let (sb, lb) = samples(db.path(), &opts.grouping);
    assert_eq!((sa.count, sb.count), (a.len(), b.len()));
    let view = compare_samples(&sa, &sb, (&la, &lb), &opts);
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
    let view = crate::compare::View {
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
