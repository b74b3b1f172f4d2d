use std::path::Path;

use super::*;
use crate::capture::{capture, CaptureOptions};
use crate::compare::{compare, show};
use crate::model::{CtprofParseSummary, CtprofProbeSummary, CtprofSnapshot, TaskstatsSummary};
use crate::view::{Cell, ViewOptions};

const STAT: &str = "TID (w) S 1 1 0 0 -1 4194304 11 0 2 0 30 40 0 0 20 0 1 0 5000 3133440 410 18446744073709551615 1 1 1 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 1 1 1 1 1 1 1 0\n";

/// A /proc tree of one thread: schedstat present, a sched file without
/// the schedstat keys, io, and `kernel.task_delayacct = 0`.
fn fixture(root: &Path, run_ns: u64) {
    let d = root.join("10/task/10");
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("stat"), STAT.replace("TID", "10")).unwrap();
    std::fs::write(d.join("schedstat"), format!("{run_ns} 200 3\n")).unwrap();
    std::fs::write(
        d.join("sched"),
        "w (10, #threads: 1)\n---\nse.nr_migrations : 0\nnr_switches : 4\nnr_voluntary_switches : 4\nnr_involuntary_switches : 0\nse.slice : 3000000\n",
    )
    .unwrap();
    std::fs::write(d.join("io"), "rchar: 0\nwchar: 0\nsyscr: 0\n").unwrap();
    std::fs::create_dir_all(root.join("sys/kernel")).unwrap();
    std::fs::write(root.join("sys/kernel/task_delayacct"), "0\n").unwrap();
}

fn snap(root: &Path) -> CtprofSnapshot {
    capture(&CaptureOptions::fixture(root, 1))
}

fn row<'a>(v: &'a crate::view::View, metric: &str) -> &'a crate::view::Row {
    v.rows.iter().find(|r| r.metric == metric).unwrap()
}

#[test]
fn fixture_without_schedstats_and_delayacct() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    fixture(a.path(), 1000);
    fixture(b.path(), 5000);
    let (sa, sb) = (snap(a.path()), snap(b.path()));
    let caps = sa.capabilities.as_ref().unwrap();
    assert_eq!(
        caps.unavailable.get(&Source::Schedstats),
        Some(&Reason::NoSchedstats)
    );
    assert_eq!(
        caps.unavailable.get(&Source::Delayacct),
        Some(&Reason::DelayacctOff)
    );
    assert_eq!(
        caps.unavailable.get(&Source::Taskstats),
        Some(&Reason::NotQueried)
    );
    assert!(
        sa.threads[0].unavailable.is_empty(),
        "host-wide, not per thread"
    );
    let v = compare(&sa, &sb, &ViewOptions::default());
    // Read and non-zero, read and zero, unavailable.
    assert_eq!(row(&v, "run_time_ns").delta, Some(4000.0));
    assert_eq!(row(&v, "rchar").baseline, Cell::Num { value: 0.0 });
    for m in [
        "nr_wakeups",
        "wait_sum",
        "cpu_delay_total_ns",
        "hiwater_rss_bytes",
    ] {
        let r = row(&v, m);
        assert_eq!(
            (&r.baseline, &r.candidate),
            (&Cell::Missing, &Cell::Missing),
            "{m}"
        );
    }
    let d = v.rows.iter().find(|r| r.metric == "total_offcpu_delay_ns");
    assert!(d.is_none_or(|r| r.baseline == Cell::Missing));
    let text = crate::render::render(&v, true, &[], false);
    let line = text.lines().find(|l| l.contains(" nr_wakeups ")).unwrap();
    assert!(line.trim_end().ends_with('-'), "{line}");
    assert!(!line.contains(" 0 "), "{line}");
    assert!(text.contains("schedstats: kernel built without CONFIG_SCHEDSTATS"));
    let json = serde_json::to_value(&v).unwrap();
    let rows = json["rows"].as_array().unwrap();
    let wake = rows.iter().find(|r| r["metric"] == "nr_wakeups").unwrap();
    assert!(
        wake["baseline"].is_null() && wake["candidate"].is_null(),
        "{wake}"
    );
    let zero = rows.iter().find(|r| r["metric"] == "rchar").unwrap();
    assert_eq!(zero["baseline"]["value"], 0.0);
    assert_eq!(
        json["capabilities"]["baseline"]["unavailable"]["schedstats"],
        "no_schedstats"
    );
    assert_eq!(
        json["capabilities"]["candidate"]["unavailable"]["delayacct"],
        "delayacct_off"
    );
}

#[test]
fn per_thread_exception_excludes_only_that_thread() {
    let d = tempfile::tempdir().unwrap();
    fixture(d.path(), 1000);
    let mut s = snap(d.path());
    let mut t2 = s.threads[0].clone();
    t2.tid = 11;
    t2.rchar = crate::metric_types::Bytes(7);
    s.threads[0].mark(Source::Io, Reason::Eperm);
    s.threads.push(t2);
    let v = show(&s, &ViewOptions::default());
    assert_eq!(row(&v, "rchar").baseline, Cell::Num { value: 7.0 });
    s.threads[1].mark(Source::Io, Reason::ThreadGone);
    let v = show(&s, &ViewOptions::default());
    assert_eq!(row(&v, "rchar").baseline, Cell::Missing);
    assert_eq!(v.capabilities["baseline"].thread_exceptions["io:eperm"], 1);
}

#[test]
fn schema_1_files_get_inferred_capabilities() {
    let mut s = CtprofSnapshot::new();
    s.schema_version = 1;
    s.probe_summary = Some(CtprofProbeSummary {
        read_ok: [("sched".to_string(), 4)].into(),
        ..Default::default()
    });
    s.parse_summary = Some(CtprofParseSummary {
        sched_without_schedstats: 4,
        ..Default::default()
    });
    s.taskstats_summary = Some(TaskstatsSummary {
        ok_count: 4,
        delayacct_enabled: Some(false),
        ..Default::default()
    });
    let bytes = crate::format::encode(&s).unwrap();
    let back = crate::format::decode(&bytes, Path::new("old.ctprof.zst")).unwrap();
    let caps = back.capabilities.unwrap();
    assert!(caps.inferred);
    assert_eq!(
        caps.unavailable,
        [
            (Source::Schedstats, Reason::NoSchedstats),
            (Source::Delayacct, Reason::DelayacctOff)
        ]
        .into()
    );
}

#[test]
fn host_line_names_the_fix() {
    let d = tempfile::tempdir().unwrap();
    fixture(d.path(), 1);
    std::fs::write(d.path().join("sys/kernel/sched_schedstats"), "0\n").unwrap();
    let s = snap(d.path());
    let line = s.capabilities.unwrap().host_line();
    assert!(
        line.starts_with("schedstats off (sysctl kernel.sched_schedstats=1); delayacct off (sysctl kernel.task_delayacct=1); taskstats not-queried; psi off (boot with psi=1); sched_ext absent; cgroup "),
        "{line}"
    );
}

/// Names a newer writer adds (a source or a reason this build does not
/// know) are dropped on load instead of failing the whole file.
#[test]
fn unknown_sources_and_reasons_are_dropped_on_load() {
    let t: crate::model::ThreadState = serde_json::from_str(
        r#"{"tid": 7, "unavailable": {"io": "eperm", "gpu": "eperm", "sched": "solar_flare"}}"#,
    )
    .unwrap();
    assert_eq!(t.tid, 7);
    assert_eq!(
        t.unavailable.into_iter().collect::<Vec<_>>(),
        [(Source::Io, Reason::Eperm)]
    );
    let c: Capabilities =
        serde_json::from_str(r#"{"unavailable": {"jemalloc": "dynamic_lib", "x": "y"}}"#).unwrap();
    assert_eq!(
        c.unavailable.get(&Source::Jemalloc),
        Some(&Reason::DynamicLib)
    );
    assert_eq!(c.unavailable.len(), 1);
    for s in Source::ALL {
        let json = serde_json::to_string(&s).unwrap();
        assert_eq!(json, format!("\"{}\"", s.name()));
    }
    for r in Reason::ALL {
        let json = serde_json::to_string(&r).unwrap();
        assert_eq!(json, format!("\"{}\"", r.name()));
    }
}
