use super::*;
use crate::group::{Glob, Grouping};
use crate::model::PsiLine;

#[test]
fn merge_rules() {
    let n = |value| Cell::Num { value };
    assert_eq!(merge(Merge::Sum, &n(2.0), n(3.0)), n(5.0));
    assert_eq!(merge(Merge::Max, &n(40.0), n(40.0)), n(40.0));
    assert_eq!(merge(Merge::Max, &n(10.0), n(40.0)), n(40.0));
    assert_eq!(merge(Merge::Range, &n(7.0), n(7.0)), n(7.0));
    let r = merge(Merge::Range, &n(9.0), n(7.0));
    assert_eq!(r, Cell::Range { min: 7, max: 9 });
    assert_eq!(
        merge(Merge::Range, &r, n(1.0)),
        Cell::Range { min: 1, max: 9 }
    );
    assert_eq!(merge(Merge::Sum, &Cell::Missing, n(1.0)), n(1.0));
    assert_eq!(merge(Merge::Max, &n(1.0), Cell::Missing), n(1.0));
    // "unlimited" (u64::MAX) saturates instead of wrapping negative.
    let big = merge(Merge::Range, &n(u64::MAX as f64), n(1.0));
    assert_eq!(
        big,
        Cell::Range {
            min: 1,
            max: i64::MAX
        }
    );
}

fn pod(avg10: f64, memory_max: u64, usage_usec: u64) -> CgroupStats {
    let mut st = CgroupStats::default();
    st.cpu.usage_usec = Some(usage_usec);
    st.memory.max = Some(memory_max);
    st.cpu.weight = Some(100);
    let line = PsiLine {
        avg10,
        avg60: avg10 / 2.0,
        avg300: avg10 / 4.0,
        total_us: 1_000_000,
    };
    st.psi.cpu = Some(PsiResource {
        some: Some(line),
        full: None,
    });
    st
}

/// Three pods stalled 40% of the time flatten to one row at 40%, not
/// 120%; their stall totals and usage add up; limits become a range.
#[test]
fn flattened_pressure_limits_and_usage() {
    let mut snap = CtprofSnapshot::new();
    for (name, max) in [
        ("pod-a", 1u64 << 30),
        ("pod-b", 2 << 30),
        ("pod-c", 1 << 30),
    ] {
        let path = format!("/kubepods/{name}/app");
        snap.cgroup_stats.insert(path, pod(40.0, max, 500_000));
    }
    let opts = ViewOptions {
        grouping: Grouping {
            by: GroupBy::Cgroup,
            normalize: true,
            flatten: vec![Glob::new("/kubepods/*").unwrap()],
        },
        ..Default::default()
    };
    let (rows, omitted) = secondary_rows(&snap, None, &opts, None);
    assert!(omitted.is_empty());
    // --limit holds for these tables as for the metric ones; --metrics
    // picks primary and derived rows and leaves these alone (the seed's
    // contract: it cannot name them, so it once dropped them all).
    let limited = ViewOptions {
        limit: Some(2),
        ..opts.clone()
    };
    let (few, omitted) = secondary_rows(&snap, None, &limited, None);
    let sections: std::collections::BTreeSet<_> = rows.iter().map(|r| r.section).collect();
    for s in &sections {
        assert!(few.iter().filter(|r| r.section == *s).count() <= 2);
        let all = rows.iter().filter(|r| r.section == *s).count();
        assert_eq!(
            omitted.get(s.name()).copied().unwrap_or(0),
            all.saturating_sub(2)
        );
    }
    let one_metric = ViewOptions {
        metrics: vec!["run_time_ns".into()],
        ..opts.clone()
    };
    let (kept, _) = secondary_rows(&snap, None, &one_metric, None);
    assert_eq!(kept.len(), rows.len());
    let get = |metric: &str| {
        let r = rows.iter().find(|r| r.metric == metric).unwrap();
        assert_eq!(r.group, "/kubepods/*/app");
        r.baseline.clone()
    };
    assert_eq!(get("cpu.some.avg10"), Cell::Num { value: 40.0 });
    assert_eq!(get("cpu.some.avg60"), Cell::Num { value: 20.0 });
    assert_eq!(get("cpu.some.avg300"), Cell::Num { value: 10.0 });
    assert_eq!(get("cpu.some.total"), Cell::Num { value: 3e9 });
    assert_eq!(get("cpu.usage"), Cell::Num { value: 1.5e9 });
    assert_eq!(
        get("memory.max"),
        Cell::Range {
            min: 1 << 30,
            max: 2 << 30
        }
    );
    assert_eq!(get("cpu.weight"), Cell::Num { value: 100.0 });
    let view = crate::compare::show(&snap, &opts);
    let text = crate::render::render(&view, false, &[], false);
    assert!(
        text.lines()
            .any(|l| l.contains("memory.max") && l.contains("[1.000GiB, 2.000GiB]")),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.contains("cpu.some.avg10") && l.trim_end().ends_with("40")),
        "{text}"
    );
}

/// A leader whose smaps_rollup was denied on one side: its rows are
/// flagged incomparable, not reported as a process that went away.
#[test]
fn denied_smaps_rollup_is_incomparable_not_unmatched() {
    let leader = |denied: bool| {
        let mut t = crate::model::ThreadState {
            tid: 5,
            tgid: 5,
            pcomm: "app".into(),
            comm: "app".into(),
            ..Default::default()
        };
        if denied {
            t.mark(Source::SmapsRollup, Reason::Eperm);
        } else {
            t.smaps_rollup_kb = [("Rss".to_string(), 4)].into();
        }
        t
    };
    let (mut a, mut b) = (CtprofSnapshot::new(), CtprofSnapshot::new());
    a.threads = vec![leader(false)];
    b.threads = vec![leader(true)];
    let opts = ViewOptions {
        sections: vec![Section::SmapsRollup],
        ..Default::default()
    };
    let rows = secondary_rows(&a, Some(&b), &opts, None).0;
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].matched, Matched::Both);
    assert_eq!(
        rows[0].incomparable.as_deref(),
        Some("smaps_rollup eperm in candidate")
    );
    assert_eq!(rows[0].baseline, Cell::Num { value: 4096.0 });
    // A process really gone stays unmatched.
    b.threads.clear();
    let rows = secondary_rows(&a, Some(&b), &opts, None).0;
    assert_eq!(rows[0].matched, Matched::BaselineOnly);
    assert_eq!(rows[0].incomparable, None);
}

/// A `max` limit reads "unlimited", not "-" (which means unavailable).
#[test]
fn an_unlimited_limit_is_spelled_out() {
    let mut snap = CtprofSnapshot::new();
    let unlimited = runq_kernel::cgroup_stats::UNLIMITED;
    snap.cgroup_stats
        .insert("/svc".into(), pod(0.0, unlimited, 1));
    let opts = ViewOptions {
        grouping: Grouping {
            by: GroupBy::Cgroup,
            normalize: true,
            flatten: vec![],
        },
        ..Default::default()
    };
    let (rows, _) = secondary_rows(&snap, None, &opts, None);
    let max = rows.iter().find(|r| r.metric == "memory.max").unwrap();
    let text = Cell::Text {
        text: "unlimited".into(),
        scalar: None,
    };
    assert_eq!(max.baseline, text);
    // A limit never read stays unavailable, not unlimited.
    let high = rows.iter().find(|r| r.metric == "memory.high").unwrap();
    assert_eq!(high.baseline, Cell::Missing);
}

/// v1's memory.stat limits are bytes, and "unlimited" when at the
/// kernel's maximum (it printed as 9223372.037T).
#[test]
fn v1_memory_stat_limits_read_unlimited() {
    assert_eq!(memory_stat_unit("hierarchical_memory_limit"), Unit::Bytes);
    assert_eq!(memory_stat_unit("pgfault"), Unit::Count);
    let text = Cell::Text {
        text: "unlimited".into(),
        scalar: None,
    };
    assert_eq!(
        memory_stat_cell("hierarchical_memsw_limit", 9_223_372_036_854_771_712),
        text
    );
    assert_eq!(
        memory_stat_cell("hierarchical_memory_limit", 1 << 30),
        Cell::Num {
            value: (1u64 << 30) as f64
        }
    );
}
