use super::*;
use crate::avail::{Capabilities, Reason, Source};
use crate::group::{GroupBy, Grouping};
use crate::metric_types::*;
use crate::registry::Section;
use crate::view::TextDelta;

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
        .any(|r| r.group == "gone" && r.matched == Matched::BaselineOnly));
    assert!(v
        .rows
        .iter()
        .any(|r| r.group == "new" && r.matched == Matched::CandidateOnly));
    let pol = v
        .rows
        .iter()
        .find(|r| r.group == "app" && r.metric == "policy")
        .unwrap();
    assert_eq!(pol.text_delta, Some(TextDelta::Same));
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
    let a = snap(vec![
        t(1, "svc", "worker-3", 1000, 1),
        t(2, "svc", "main", 10, 1),
    ]);
    let b = snap(vec![
        t(3, "svc", "worker-7", 3000, 1),
        t(2, "svc", "main", 10, 1),
    ]);
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
        .map(|r| (r.group.as_str(), r.matched.name()))
        .collect();
    assert_eq!(groups, [("worker-{N}", "both"), ("main", "both")]);
    assert_eq!(v.rows[0].delta, Some(2000.0));
    // Show of either side alone keeps the literal name.
    let s = show(&a, &opts);
    assert!(s.rows.iter().any(|r| r.group == "worker-3"));
}

fn with_caps(mut s: CtprofSnapshot, un: &[(Source, Reason)]) -> CtprofSnapshot {
    s.capabilities = Some(Capabilities {
        unavailable: un.iter().copied().collect(),
        ..Default::default()
    });
    s
}

fn taskstats_thread(tid: u32, run: u64, rss: u64) -> ThreadState {
    ThreadState {
        hiwater_rss_bytes: PeakBytes(rss),
        cpu_delay_total_ns: MonotonicNs(run / 10),
        cpu_delay_count: MonotonicCount(5),
        ..t(tid, "app", "app", run, 1)
    }
}

/// A root capture (taskstats read) against a non-root one (refused): the
/// taskstats rows are flagged and sorted after every comparable row; the
/// procfs rows are compared as usual.
#[test]
fn root_vs_nonroot_taskstats_rows_are_incomparable() {
    let root = with_caps(snap(vec![taskstats_thread(1, 1000, 8 << 20)]), &[]);
    let mut user = snap(vec![taskstats_thread(1, 2000, 0)]);
    for th in &mut user.threads {
        th.mark(Source::Taskstats, Reason::Eperm);
        th.mark(Source::Delayacct, Reason::Eperm);
    }
    let user = with_caps(user, &[(Source::Taskstats, Reason::Eperm)]);
    let v = compare(&root, &user, &ViewOptions::default());
    let row = |m: &str| v.rows.iter().find(|r| r.metric == m).unwrap();
    let why = Some("taskstats eperm in candidate".to_string());
    assert_eq!(row("hiwater_rss_bytes").incomparable, why);
    assert_eq!(row("cpu_delay_total_ns").incomparable, why);
    assert_eq!(row("avg_cpu_delay_ns").incomparable, why, "derived too");
    assert_eq!(row("run_time_ns").incomparable, None);
    assert_eq!(row("run_time_ns").delta, Some(1000.0));
    let main: Vec<&Row> = v.rows.iter().filter(|r| !r.derived).collect();
    let first = main.iter().position(|r| r.incomparable.is_some()).unwrap();
    assert!(main[first..].iter().all(|r| r.incomparable.is_some()));
    let text = crate::render::render(&v, true, &[], false);
    assert!(
        text.contains("app [taskstats eperm in candidate]"),
        "{text}"
    );
    // The same pair the other way round names the baseline.
    let back = compare(&user, &root, &ViewOptions::default());
    let r = back.rows.iter().find(|r| r.metric == "hiwater_rss_bytes");
    assert_eq!(
        r.unwrap().incomparable.as_deref(),
        Some("taskstats eperm in baseline")
    );
}

/// Some threads of a group unreadable on one side only: flagged with the
/// count, so a partial sum never passes for a real drop.
#[test]
fn partially_read_group_is_flagged_with_counts() {
    let a = with_caps(
        snap(vec![t(1, "app", "a", 10, 1), t(2, "app", "b", 10, 1)]),
        &[],
    );
    let mut b = snap(vec![t(1, "app", "a", 10, 1), t(2, "app", "b", 10, 1)]);
    b.threads[1].mark(Source::Io, Reason::Eperm);
    let b = with_caps(b, &[]);
    let v = compare(&a, &b, &ViewOptions::default());
    let r = v.rows.iter().find(|r| r.metric == "rchar").unwrap();
    assert_eq!(
        r.incomparable.as_deref(),
        Some("io eperm for 1/2 threads in candidate")
    );
    // A thread that exited mid-capture is not a reason.
    let mut c = snap(vec![t(1, "app", "a", 10, 1), t(2, "app", "b", 10, 1)]);
    c.threads[1].mark(Source::Io, Reason::ThreadGone);
    let v = compare(&a, &with_caps(c, &[]), &ViewOptions::default());
    assert!(v.rows.iter().all(|r| r.incomparable.is_none()));
}

/// Tick counters are scaled by each side's USER_HZ: 100 ticks at 100 Hz
/// and 250 ticks at 250 Hz are the same second.
#[test]
fn ticks_scale_by_each_sides_user_hz() {
    let host = |hz| crate::model::HostContext {
        user_hz: hz,
        kernel_release: format!("k{hz}"),
        ..Default::default()
    };
    let mut a = snap(vec![ThreadState {
        utime_clock_ticks: ClockTicks(100),
        ..t(1, "app", "app", 10, 1)
    }]);
    a.host = Some(host(100));
    let mut b = snap(vec![ThreadState {
        utime_clock_ticks: ClockTicks(250),
        ..t(1, "app", "app", 10, 1)
    }]);
    b.host = Some(host(250));
    let v = compare(&a, &b, &ViewOptions::default());
    let r = v
        .rows
        .iter()
        .find(|r| r.metric == "utime_clock_ticks")
        .unwrap();
    assert_eq!(r.unit, Unit::Ns);
    assert_eq!(r.baseline, Cell::Num { value: 1e9 });
    assert_eq!(r.delta, Some(0.0));
    // The host context and its differences.
    let diff: Vec<&str> = v
        .host
        .iter()
        .filter(|h| h.differs)
        .map(|h| h.key.as_str())
        .collect();
    assert_eq!(diff, ["kernel_release", "user_hz"]);
    assert_eq!(v.hosts["candidate"].user_hz, 250);
    let text = crate::render::render(&v, true, &[], false);
    assert!(text.contains("## Host context"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("user_hz") && l.contains('*') && l.contains("250")),
        "{text}"
    );
    let json = serde_json::to_value(&v).unwrap();
    assert_eq!(json["hosts"]["baseline"]["user_hz"], 100);
}

/// Delay accounting off in the baseline and on in the candidate: the
/// delay-accounting rows are flagged, the runqueue delay (from sched_info,
/// filled either way) is not.
#[test]
fn delayacct_off_against_on_is_flagged() {
    let th = |blkio| ThreadState {
        blkio_delay_total_ns: MonotonicNs(blkio),
        ..taskstats_thread(1, 1000, 8 << 20)
    };
    let off = with_caps(
        snap(vec![th(0)]),
        &[(Source::Delayacct, Reason::DelayacctOff)],
    );
    let on = with_caps(snap(vec![th(5_000_000)]), &[]);
    let v = compare(&off, &on, &ViewOptions::default());
    let row = |m: &str| v.rows.iter().find(|r| r.metric == m).unwrap();
    assert_eq!(
        row("blkio_delay_total_ns").incomparable.as_deref(),
        Some("delayacct delayacct_off in baseline")
    );
    assert_eq!(row("blkio_delay_total_ns").baseline, Cell::Missing);
    assert_eq!(row("cpu_delay_total_ns").incomparable, None);
    assert_eq!(
        row("total_offcpu_delay_ns").incomparable.as_deref(),
        Some("delayacct delayacct_off in baseline")
    );
}
