//! Rendering of fixed fixture snapshots, one insta snapshot per section and
//! per grouping.

use std::collections::BTreeMap;

use runq_ctprof::compare::{compare, show};
use runq_ctprof::group::{Glob, GroupBy, Grouping};
use runq_ctprof::metric_types::*;
use runq_ctprof::model::*;
use runq_ctprof::registry::Section;
use runq_ctprof::render::render;
use runq_ctprof::view::ViewOptions;

fn thread(tid: u32, tgid: u32, pcomm: &str, comm: &str, cgroup: &str, scale: u64) -> ThreadState {
    ThreadState {
        tid,
        tgid,
        pcomm: pcomm.into(),
        comm: comm.into(),
        cgroup: cgroup.into(),
        start_time_clock_ticks: 100 + u64::from(tid),
        policy: CategoricalString("SCHED_OTHER".into()),
        nice: OrdinalI32((tid % 3) as i32),
        cpu_affinity: CpuSet(if tid % 2 == 0 { vec![0, 1] } else { vec![0] }),
        run_time_ns: MonotonicNs(1_500_000 * scale),
        wait_time_ns: MonotonicNs(300_000 * scale),
        timeslices: MonotonicCount(10 * scale),
        voluntary_csw: MonotonicCount(7 * scale),
        nonvoluntary_csw: MonotonicCount(3 * scale),
        utime_clock_ticks: ClockTicks(scale),
        state: 'S',
        fair_slice_ns: GaugeNs(3_000_000),
        nr_threads: GaugeCount(if tid == tgid { 2 } else { 0 }),
        minflt: MonotonicCount(100 * scale),
        rchar: Bytes(4096 * scale),
        read_bytes: Bytes(1024 * scale),
        cpu_delay_count: MonotonicCount(5 * scale),
        cpu_delay_total_ns: MonotonicNs(50_000 * scale),
        cpu_delay_max_ns: PeakNs(20_000 * scale),
        hiwater_rss_bytes: PeakBytes(8 << 20),
        smaps_rollup_kb: if tid == tgid {
            [("Rss".to_string(), 1024 * scale)].into()
        } else {
            BTreeMap::new()
        },
        ..Default::default()
    }
}

fn cgroup(usage: u64) -> CgroupStats {
    let mut st = CgroupStats::default();
    st.cpu.usage_usec = Some(usage);
    st.cpu.max_quota_us = Some(50_000);
    st.cpu.max_period_us = Some(100_000);
    st.memory.current = Some(usage * 10);
    st.memory.stat = [
        ("anon".to_string(), usage * 4),
        ("pgfault".to_string(), usage / 10),
    ]
    .into();
    st.memory.events = [("oom".to_string(), 0), ("high".to_string(), usage / 1000)].into();
    st.psi.cpu = Some(PsiResource {
        some: Some(PsiLine {
            avg10: 1.5,
            avg60: 0.0,
            avg300: 0.0,
            total_us: usage / 2,
        }),
        full: None,
    });
    st
}

fn fixture(scale: u64) -> CtprofSnapshot {
    let mut s = CtprofSnapshot::default();
    s.format = FORMAT_NAME.into();
    s.threads = vec![
        thread(10, 10, "server", "server", "/app/web", scale),
        thread(11, 10, "server", "tokio-worker-0", "/app/web", scale),
        thread(12, 10, "server", "tokio-worker-1", "/app/web", scale * 2),
        thread(20, 20, "db", "db", "/app/db", scale * 3),
        thread(
            21,
            20,
            "db",
            "kworker/0:1H-events_highpri",
            "/app/db",
            scale,
        ),
    ];
    s.cgroup_stats = [
        ("/app/web".to_string(), cgroup(1000 * scale)),
        ("/app/db".to_string(), cgroup(3000 * scale)),
    ]
    .into();
    s.psi.memory = Some(PsiResource {
        some: Some(PsiLine {
            avg10: 0.5,
            avg60: 0.25,
            avg300: 0.0,
            total_us: 40 * scale,
        }),
        full: None,
    });
    s.sched_ext = Some(SchedExtSysfs {
        state: "disabled".into(),
        enable_seq: scale,
        ..Default::default()
    });
    s
}

fn opts(by: GroupBy, sections: &[Section]) -> ViewOptions {
    ViewOptions {
        grouping: Grouping {
            by,
            normalize: true,
            flatten: vec![],
        },
        sections: sections.to_vec(),
        ..Default::default()
    }
}

#[test]
fn one_snapshot_per_section() {
    let (a, b) = (fixture(1), fixture(2));
    for s in Section::ALL {
        let by = if s.needs_cgroup_grouping() {
            GroupBy::Cgroup
        } else {
            GroupBy::Pcomm
        };
        let text = render(&compare(&a, &b, &opts(by, &[s])), true, &[], false);
        insta::assert_snapshot!(format!("section_{}", s.name()), text);
    }
}

#[test]
fn one_snapshot_per_grouping() {
    let (a, b) = (fixture(1), fixture(3));
    for (name, by) in [
        ("pcomm", GroupBy::Pcomm),
        ("cgroup", GroupBy::Cgroup),
        ("comm", GroupBy::Comm),
        ("comm-exact", GroupBy::CommExact),
    ] {
        let o = ViewOptions {
            metrics: vec![
                "run_time_ns".into(),
                "nonvoluntary_csw".into(),
                "avg_slice_ns".into(),
            ],
            ..opts(by, &[Section::Primary, Section::Derived])
        };
        insta::assert_snapshot!(
            format!("group_{name}"),
            render(&compare(&a, &b, &o), true, &[], false)
        );
    }
}

#[test]
fn show_and_flatten() {
    let mut o = opts(GroupBy::Cgroup, &[Section::Primary]);
    o.grouping.flatten = vec![Glob::new("/app/*").unwrap()];
    o.metrics = vec![
        "run_time_ns".into(),
        "cpu_affinity".into(),
        "nice".into(),
        "policy".into(),
    ];
    insta::assert_snapshot!(
        "show_flattened",
        render(&show(&fixture(1), &o), false, &[], false)
    );
}
