//! Window selection and summaries on recorded event streams.

use runq_kernel::sched_trace::{read_trace, SchedEvent};
use runq_workload::CheckId;

use super::window::{holders, longest_wait, summarize, Names};
use super::*;

/// A recording as tracefs prints it (trace_clock mono, seconds): worker
/// 500 (spinners) runs on CPU 0, is preempted at 10.100 s by `yes` 900,
/// which holds CPU 0 until 13.000 s but for a kworker's 12 ms; 500 runs
/// again at 13.000 s. On CPU 1 a pipe pair ping-pongs throughout.
const RECORDING: &str = "\
# entries-in-buffer/entries-written: 9/9   #P:2
 spin-500 [000] d..2. 10.000000: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=spin next_pid=500 next_prio=120
 yes-900  [001] d..2. 10.050000: sched_migrate_task: comm=yes pid=900 prio=100 orig_cpu=1 dest_cpu=0
 spin-500 [000] d..2. 10.100000: sched_switch: prev_comm=spin prev_pid=500 prev_prio=120 prev_state=R+ ==> next_comm=yes next_pid=900 next_prio=100
 pp-601   [001] d..2. 10.200000: sched_switch: prev_comm=pp prev_pid=601 prev_prio=120 prev_state=S ==> next_comm=pp next_pid=602 next_prio=120
 yes-900  [000] d..2. 11.000000: sched_switch: prev_comm=yes prev_pid=900 prev_prio=100 prev_state=R+ ==> next_comm=kworker/0:1 next_pid=40 next_prio=120
 kworker/0:1-40 [000] d..2. 11.012000: sched_switch: prev_comm=kworker/0:1 prev_pid=40 prev_prio=120 prev_state=I ==> next_comm=yes next_pid=900 next_prio=100
 pp-602   [001] d..2. 12.000000: sched_switch: prev_comm=pp prev_pid=602 prev_prio=120 prev_state=S ==> next_comm=pp next_pid=601 next_prio=120
 yes-900  [000] d..2. 13.000000: sched_switch: prev_comm=yes prev_pid=900 prev_prio=100 prev_state=S ==> next_comm=spin next_pid=500 next_prio=120
 spin-500 [000] d..2. 13.500000: sched_switch: prev_comm=spin prev_pid=500 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120
";

fn events() -> Vec<SchedEvent> {
    read_trace(RECORDING.as_bytes()).unwrap().events
}

const S: u64 = 1_000_000_000;
const MS: u64 = 1_000_000;

fn names_test(f: impl FnOnce(&Names)) {
    let group_of = |pid: i32| (pid == 500).then(|| "spinners".to_string());
    let is_runq = |pid: i32| pid == 602;
    let wrapped = std::collections::BTreeMap::new();
    f(&Names {
        group_of: &group_of,
        is_runq: &is_runq,
        wrapped: &wrapped,
    });
}

fn moment(from_ms: u64, to_ms: u64) -> Moment {
    Moment {
        check: CheckId::MaxGapMs,
        group: "spinners".into(),
        tid: 500,
        task_group: Some("spinners".into()),
        cpu: Some(0),
        from_ns: from_ms * MS,
        to_ns: to_ms * MS,
        what: "waited 2900 ms runnable without a CPU".into(),
    }
}

#[test]
fn the_longest_wait_is_from_preemption_to_switch_in() {
    let ev = events();
    let w = longest_wait(&ev, 500, 10 * S, 14 * S).unwrap();
    assert_eq!((w.from_ns, w.to_ns), (10_100 * MS, 13 * S));
    assert_eq!((w.queued_cpu, w.ran_cpu), (0, 0));
    assert!(w.waker.is_none() && w.migrations.is_empty());
    // A window that ends before the wait began has none.
    assert_eq!(longest_wait(&ev, 500, 9 * S, 10 * S), None);
    assert_eq!(longest_wait(&ev, 777, 0, 20 * S), None);
}

#[test]
fn holders_are_who_ran_on_the_cpu_longest_first() {
    let ev = events();
    let h = holders(&ev, 0, 10_100 * MS, 13 * S);
    let got: Vec<(i32, u64)> = h.iter().map(|x| (x.task.pid, x.ns / MS)).collect();
    assert_eq!(got, vec![(900, 2_888), (40, 12)]);
    // Clipped to the window; the task before the first switch in it is
    // the one that switch takes off.
    let h = holders(&ev, 1, 11 * S, 12_500 * MS);
    let got: Vec<(i32, u64)> = h.iter().map(|x| (x.task.pid, x.ns / MS)).collect();
    assert_eq!(got, vec![(602, 1_000), (601, 500)]);
}

#[test]
fn the_summary_names_the_holder_and_the_window() {
    names_test(|names| {
        let base = 10 * S;
        let (s, from, to) = summarize(&events(), base, &moment(0, 3_100), names);
        assert!(
            s.starts_with(
                "worker 500 (spinners) waited 2900 ms runnable without a CPU: in the recording \
                 it waited 2,900 ms on CPU 0 from 0.100 s: CPU 0 ran `yes` 900 2,888 ms, \
                 `kworker/0:1` 40 12 ms; no migration"
            ),
            "{s}"
        );
        assert!(from < 10_100 * MS && to > 13 * S);
        // A moment the recording has no wait for says so, with the CPU's
        // holders; runq's own threads are marked.
        let mut m = moment(1_100, 1_400);
        m.tid = 601;
        m.cpu = Some(1);
        let (s, _, _) = summarize(&events(), base, &m, names);
        assert!(s.contains("holds no runnable wait"), "{s}");
        assert!(
            s.ends_with("CPU 1 ran `pp` 602 (runq itself) 300 ms"),
            "{s}"
        );
    });
}

#[test]
fn a_wrapped_buffer_is_named() {
    names_test(|names| {
        // A window inside the wait finds the whole wait.
        let (s, _, _) = summarize(&events(), 11 * S, &moment(0, 100), names);
        assert!(s.contains("waited 2,900 ms on CPU 0 from -0.900 s"), "{s}");
        let (s, _, _) = summarize(&events(), 5 * S, &moment(0, 100), names);
        assert!(s.contains("the buffer wrapped"), "{s}");
    });
}

#[test]
fn the_trace_has_cpu_tracks_and_the_wait() {
    names_test(|names| {
        let ev = events();
        let w = longest_wait(&ev, 500, 10 * S, 14 * S);
        let t = chrome::trace(&ev, 10 * S, (10 * S, 14 * S), 500, w.as_ref(), names);
        let list = t["traceEvents"].as_array().unwrap();
        let named = |n: &str| list.iter().filter(|e| e["name"] == n).count();
        assert_eq!(named("`yes` 900"), 2, "{t}");
        assert_eq!(named("runnable, queued on CPU 0"), 1, "{t}");
        let wait = list.iter().find(|e| e["cat"] == "wait").unwrap();
        assert_eq!(wait["dur"].as_f64(), Some(2_900_000.0));
        assert!(list
            .iter()
            .all(|e| e["ts"].as_f64().is_none_or(|ts| ts >= 0.0)));
    });
}

#[test]
fn the_worst_check_leads_the_headline() {
    use runq_workload::{CheckResult, Op};
    let c = |check: CheckId, measured: f64, op, bound: f64| CheckResult {
        check,
        group: "g".into(),
        measured,
        op,
        bound,
        pass: false,
        cause: None,
        detail: vec![
            runq_workload::Detail::Rate(runq_workload::RateDetail::SlowestWorker {
                worker: 3,
                work_units: 30,
                wall_ns: 10_000_000_000,
            }),
            runq_workload::Detail::Rate(runq_workload::RateDetail::NumaLocality),
        ],
        not_judged: None,
    };
    let rate = c(CheckId::MinWorkRate, 10.0, Op::AtLeast, 1e12);
    let gap = c(CheckId::MaxOffcpuSpreadPct, 80.0, Op::AtMost, 50.0);
    assert!(headline::severity(&rate) > headline::severity(&gap));
    assert_eq!(
        headline::severity(&c(CheckId::MinWorkRate, 0.0, Op::AtLeast, 1.0)),
        f64::INFINITY
    );
    let mut o = outcome();
    o.checks = vec![gap, rate];
    let worst = headline::worst(&o).unwrap();
    assert_eq!(worst.check, CheckId::MinWorkRate);
    assert_eq!(
        headline::line(&o, worst),
        "FAIL min_work_rate (g): measured 10 (bound >= 1000000000000): worker 3 did 30 work \
         units in 10.00 s"
    );
}

#[test]
fn a_dead_schedulers_fail_leads_without_asking_for_a_recording() {
    use runq_workload::{CheckResult, Op};
    let mut o = outcome();
    use runq_workload::{Detail, RateDetail, SchedulerDetail};
    let c = |check: CheckId, detail: Detail| CheckResult {
        check,
        group: "scheduler".into(),
        measured: 0.0,
        op: Op::AtLeast,
        bound: 1.0,
        pass: false,
        cause: None,
        detail: vec![detail],
        not_judged: None,
    };
    let ejected = runq_kernel::sched_ext_log::ScxExit {
        scheduler: "qmap".into(),
        reason: "runnable task stall".into(),
        error: true,
        message: None,
    };
    o.checks = vec![
        c(
            CheckId::MinWorkRate,
            Detail::Rate(RateDetail::SlowestWorker {
                worker: 0,
                work_units: 0,
                wall_ns: 1_000_000_000,
            }),
        ),
        c(
            CheckId::SchedulerAlive,
            Detail::Scheduler(SchedulerDetail::SchedulerEnded {
                status: "exited with code 0".into(),
                at_ms: 900,
                sched_ext_exit: Some(ejected),
            }),
        ),
    ];
    let lines = headline::first_lines(&o, None).unwrap();
    assert!(
        lines.starts_with("runq: FAIL scheduler_alive (scheduler): measured 0 (bound >= 1)"),
        "{lines}"
    );
    assert!(
        lines.contains("the kernel ejected BPF scheduler \"qmap\": runnable task stall, and"),
        "{lines}"
    );
    o.checks.remove(1);
    let lines = headline::first_lines(&o, None).unwrap();
    assert!(lines.ends_with("\n  no evidence recorded"), "{lines}");
}

/// 0.1 of 2 CPUs outside the run, which cannot lift a share of 0.245 to
/// 0.5.
fn little_outside_load() -> runq_workload::OutsideLoad {
    runq_workload::OutsideLoad {
        explains: false,
        figures: Some(runq_workload::LoadFigures {
            outside_cpus: 0.1,
            host_cpus: 2,
            explains: false,
            says: runq_workload::FiguresSay::WithoutThem {
                best: 0.13,
                bound: 0.5,
            },
        }),
        recorded: None,
    }
}

/// A detail whose sentence is `worker 1: {long}`.
fn long_detail(long: &str) -> runq_workload::Detail {
    runq_workload::Detail::Group(runq_workload::GroupDetail::SetupFailed {
        errors: vec![runq_workload::SetupError {
            worker: 1,
            error: long.into(),
        }],
    })
}

/// spinners' failed share, worker 500's CPU held by the pingpong
/// cgroup's runq[3502], with a detail that runs on for `long`.
fn pingpong_check(long: &str) -> runq_workload::CheckResult {
    use runq_workload::{Cause, CheckResult, HeldBy, Op};
    CheckResult {
        check: CheckId::MinFairShare,
        group: "spinners".into(),
        measured: 0.245,
        op: Op::AtLeast,
        bound: 0.5,
        pass: false,
        detail: std::iter::once(runq_workload::Detail::Share(
            runq_workload::ShareDetail::FairShare {
                group: "spinners".into(),
                got_pct: 12.2,
                expected_pct: 50.0,
                basis: "equal cpu.weight".into(),
            },
        ))
        .chain((!long.is_empty()).then(|| long_detail(long)))
        .collect(),
        cause: Some(Cause {
            mechanism: vec![runq_workload::Mechanism::OtherGroups {
                containers: vec![runq_workload::Container::Cgroup {
                    name: "pingpong".into(),
                }],
                worker: 500,
                held: runq_workload::HeldFor {
                    held_ns: 1_390_000_000,
                    waited_ns: 2_746_000_000,
                    holders: vec![runq_workload::NamedTask {
                        comm: "runq".into(),
                        pid: 3502,
                    }],
                    more_holders: 0,
                },
            }],
            outside_load: Some(little_outside_load()),
            next_step: Some(runq_workload::NextStep::NoCgroupsControl),
            recorder: Some(runq_workload::RecorderAccount {
                record: runq_kernel::task_record::TaskRecord {
                    worker: 500,
                    run_ns: 288_000_000,
                    ..Default::default()
                },
                group: "g".into(),
                held: runq_workload::HeldParts::default(),
                holders: Vec::new(),
            }),
            held_by: Some(HeldBy {
                worker: 500,
                comm: "runq".into(),
                pid: 3502,
                whose: "pingpong".into(),
                held_ns: 1_390_000_000,
                wait_ns: 2_746_000_000,
            }),
            no_recorder: None,
        }),
        not_judged: None,
    }
}

#[test]
fn the_first_line_is_short_and_names_the_holder_the_rest_follows_indented() {
    let mut o = outcome();
    let long = "x".repeat(400);
    o.checks = vec![pingpong_check(&long)];
    let text = headline::first_lines(&o, None).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "runq: FAIL min_fair_share (spinners): measured 0.245 (bound >= 0.500): runq[3502] \
         (pingpong) held worker 500's CPU 1,390 of 2,746 ms"
    );
    assert!(lines[0].chars().count() <= headline::FIRST_LINE_MAX);
    assert!(
        lines[1].starts_with("  spinners got 12.2% of the CPU time"),
        "{text}"
    );
    assert_eq!(
        lines[2],
        "  cause: the workers of the run's cgroup pingpong kept worker 500 off its CPU: they \
         held it for 1,390 ms of the 2,746 ms it waited (runq[3502])"
    );
    assert_eq!(
        lines[3],
        "  outside load: tasks outside the run used 0.10 of the host's 2 CPUs, which cannot \
         explain it: without them min_fair_share would still be at most 0.130, short of 0.500"
    );
    assert_eq!(
        lines[4],
        "  next: for a control, run the same scenario with --no-cgroups (every worker then \
         competes as a task)"
    );
    assert_eq!(
        lines[5],
        "  recorder: worker 500 (g) ran 288 ms and never waited runnable (0 migrations)"
    );
    // Without the recorder's holder, the detail's clause; a long one is cut.
    let cause = o.checks[0].cause.as_mut().unwrap();
    cause.held_by = None;
    cause.recorder = None;
    cause.no_recorder = Some("off (--evidence off)".into());
    o.checks[0].detail = vec![long_detail(&long)];
    let text = headline::first_lines(&o, None).unwrap();
    let first = text.lines().next().unwrap();
    assert_eq!(first.chars().count(), headline::FIRST_LINE_MAX, "{first}");
    assert!(first.ends_with("xxx..."), "{first}");
    assert!(
        text.contains("\n  no recorder (off (--evidence off)): the cause is what /proc"),
        "{text}"
    );
}

#[test]
fn without_a_holder_or_a_detail_the_first_line_gives_the_mechanism() {
    let mut o = outcome();
    o.checks = vec![pingpong_check("")];
    let cause = o.checks[0].cause.as_mut().unwrap();
    cause.held_by = None;
    o.checks[0].detail = Vec::new();
    let text = headline::first_lines(&o, None).unwrap();
    assert_eq!(
        text.lines().next().unwrap(),
        "runq: FAIL min_fair_share (spinners): measured 0.245 (bound >= 0.500): the workers of \
         the run's cgroup pingpong kept worker 500 off its CPU"
    );
}

/// Two spinners of group `g`: 500 with a 2.9 s gap closing 3.0 s into its
/// loop on CPU 0, 501 with a 10 ms one; 500 also ran least.
fn outcome() -> RunOutcome {
    use runq_workload::WorkerReport;
    let w = |tid, gap, at, cpu_ms| WorkerReport {
        tid,
        max_gap_ms: gap,
        max_gap_at_ms: at,
        max_gap_cpu: 0,
        cpu_time_ns: cpu_ms * MS,
        wall_time_ns: 3 * S,
        work_units: 10,
        ..Default::default()
    };
    let reports = vec![w(500, 2_900, 3_000, 50), w(501, 10, 1_000, 2_900)];
    RunOutcome {
        scenario: "s".into(),
        placement: runq_workload::Placement::Unplaced {
            reason: "test".into(),
        },
        interrupted: false,
        spawn_ns: 0,
        run_ns: 3 * S,
        collect_ns: 0,
        stale_cgroups_removed: 0,
        scheduler: None,
        scheduler_death: None,
        run_error: None,
        groups: vec![runq_workload::summarize_group(
            0,
            "g",
            "SpinWait",
            runq_workload::WakeFigure::Latency,
            &reports,
        )],
        checks: Vec::new(),
        skipped_checks: Vec::new(),
        series: None,
        host_load: None,
        recorded: Err("no recorder in this test".into()),
        recorder: Default::default(),
        verdict: runq_workload::Verdict::Fail,
        reports,
    }
}

#[test]
fn moments_are_the_worst_instances_of_the_failed_checks() {
    use runq_workload::{CheckResult, Op};
    let mut o = outcome();
    let c = |check: CheckId, pass| CheckResult {
        check,
        group: "g".into(),
        measured: 2_900.0,
        op: Op::AtMost,
        bound: 2_000.0,
        pass,
        cause: None,
        detail: Vec::new(),
        not_judged: None,
    };
    o.checks = vec![
        c(CheckId::MaxGapMs, false),
        c(CheckId::MinFairShare, false),
        c(CheckId::MaxP99WakeLatencyUs, false),
        c(CheckId::MaxOffcpuSpreadPct, true),
    ];
    let m = moments(&o);
    assert_eq!(m.len(), 2, "{m:?}");
    assert_eq!((m[0].tid, m[0].cpu), (500, Some(0)));
    assert!(m[0].from_ns <= 100 * MS && m[0].to_ns >= 3 * S, "{m:?}");
    assert_eq!(m[0].what, "waited 2900 ms runnable without a CPU");
    assert_eq!(m[1].tid, 500, "the most starved worker");
    assert!(
        m[1].what.starts_with("is the most starved worker: 50 ms"),
        "{m:?}"
    );
    let line = headline::line(&o, &o.checks[0]);
    assert_eq!(
        line,
        "FAIL max_gap_ms: worker 500 (g) waited 2900 ms for CPU 0 at 3.00 s (bound 2000 ms)"
    );
    assert!(without_moment(&o.checks[2])
        .summary
        .starts_with("no evidence"));
}

#[test]
fn a_series_window_shows_each_workers_time_by_state() {
    // Worker 601 leaves CPU 1 stopped (T) at 10.2 s and is switched in again
    // at 12.0 s; in 10.5-11.5 s it was stopped throughout.
    let mut text = RECORDING.replace(
        "prev_comm=pp prev_pid=601 prev_prio=120 prev_state=S",
        "prev_comm=pp prev_pid=601 prev_prio=120 prev_state=T",
    );
    text.push('\n');
    let ev = read_trace(text.as_bytes()).unwrap().events;
    let t = series::task_time(&ev, 601, 10_500 * MS, 11_500 * MS);
    assert_eq!((t.running_ns, t.runnable_ns), (0, 0));
    assert_eq!(t.blocked_ns.get("T"), Some(&(1_000 * MS)));
    // 602 ran from 10.2 s to 12.0 s.
    let t = series::task_time(&ev, 602, 10_500 * MS, 11_500 * MS);
    assert_eq!(t.running_ns, 1_000 * MS);
    // 500: running until 10.1 s, then runnable.
    let t = series::task_time(&ev, 500, 10 * S, 11 * S);
    assert_eq!((t.running_ns, t.runnable_ns), (100 * MS, 900 * MS));
    let stalled = runq_workload::Detail::Series(runq_workload::SeriesDetail::Stalled {
        metric: runq_workload::series::Metric::WorkUnits,
        window: runq_workload::Span {
            from_ns: 2_014 * MS,
            to_ns: 3_449 * MS,
        },
        flat_ms: 1435.0,
        bound_ms: 500.0,
    });
    assert_eq!(series::named_window(&[stalled]), Some((2.01, 3.45)));
    assert_eq!(series::named_window(&[]), None);
}

#[test]
fn a_cpu_whose_buffer_wrapped_is_attributed_only_from_its_oldest_event() {
    let group_of = |pid: i32| (pid == 500).then(|| "spinners".to_string());
    let is_runq = |_| false;
    let wrapped = std::collections::BTreeMap::from([(0, 10_500 * MS)]);
    let names = Names {
        group_of: &group_of,
        is_runq: &is_runq,
        wrapped: &wrapped,
    };
    let (s, _, _) = summarize(&events(), 10 * S, &moment(0, 3_100), &names);
    // 10.5-13.0 s only: `yes` 2,488 ms, the kworker 12 ms.
    assert!(
        s.contains("CPU 0 ran `yes` 900 2,488 ms, `kworker/0:1` 40 12 ms"),
        "{s}"
    );
    assert!(
        s.contains(
            "(CPU 0's events before 0.500 s were overwritten: who ran there before is unknown)"
        ),
        "{s}"
    );
}

/// Worker 500 sleeps on CPU 0 and is woken by `pp` 601 at 20.000 s while
/// `yes` 900 holds CPU 0: it runs 8 ms later. Woken again while it runs
/// (20.004 s: no wait). Then it sleeps, a kworker wakes it at 20.100 s onto
/// idle CPU 1: it runs 0.1 ms later. Worker 501 is woken by 500 at 20.200 s
/// onto CPU 1 and runs on CPU 0 3 ms later.
const WAKES: &str = "\
# entries-in-buffer/entries-written: 10/10   #P:2
 spin-500 [000] d..2. 19.990000: sched_switch: prev_comm=spin prev_pid=500 prev_prio=120 prev_state=S ==> next_comm=yes next_pid=900 next_prio=120
 pp-601   [001] d..2. 20.000000: sched_wakeup: comm=spin pid=500 prio=120 target_cpu=000
 yes-900  [000] d..2. 20.008000: sched_switch: prev_comm=yes prev_pid=900 prev_prio=120 prev_state=R+ ==> next_comm=spin next_pid=500 next_prio=120
 pp-601   [001] d..2. 20.009000: sched_wakeup: comm=spin pid=500 prio=120 target_cpu=000
 spin-500 [000] d..2. 20.050000: sched_switch: prev_comm=spin prev_pid=500 prev_prio=120 prev_state=S ==> next_comm=yes next_pid=900 next_prio=120
 kworker/1:0-41 [001] d..2. 20.100000: sched_wakeup: comm=spin pid=500 prio=120 target_cpu=001
 <idle>-0 [001] d..2. 20.100100: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=spin next_pid=500 next_prio=120
 spin-500 [001] d..2. 20.200000: sched_wakeup: comm=spin pid=501 prio=120 target_cpu=001
 yes-900  [000] d..2. 20.203000: sched_switch: prev_comm=yes prev_pid=900 prev_prio=120 prev_state=R+ ==> next_comm=spin next_pid=501 next_prio=120
 spin-500 [001] d..2. 20.300000: sched_switch: prev_comm=spin prev_pid=500 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
";

#[test]
fn wake_runs_go_from_a_wakeup_to_the_next_switch_in() {
    let ev = read_trace(WAKES.as_bytes()).unwrap().events;
    let runs = wakes::wake_runs(&ev, &|pid| pid == 500 || pid == 501);
    let got: Vec<(i32, i32, u64, u32, u32)> = runs
        .iter()
        .map(|w| {
            let us = w.latency_ns() / 1_000;
            (w.wakee.pid, w.waker.pid, us, w.target_cpu, w.ran_cpu)
        })
        .collect();
    // The wakeup of a running worker (20.009 s) opens no wait.
    assert_eq!(
        got,
        vec![
            (500, 601, 8_000, 0, 0),
            (500, 41, 100, 1, 1),
            (501, 500, 3_000, 1, 0)
        ]
    );
    let worst = wakes::worst(runs.clone(), 2);
    assert_eq!(worst[0].latency_ns(), 8 * MS);
    assert_eq!(worst[1].wakee.pid, 501);
    assert_eq!(wakes::quantile_ns(&runs, 0.99), Some(8 * MS));
    assert_eq!(wakes::quantile_ns(&runs, 0.5), Some(3 * MS));
    let h = wakes::holders_of(&ev, &worst[0]);
    assert_eq!(h.len(), 1);
    assert_eq!((h[0].task.pid, h[0].ns), (900, 8 * MS));
}

#[test]
fn a_wake_latency_fail_names_the_worst_wakeup_its_waker_and_the_cpus_holder() {
    use runq_workload::{CheckResult, Op};
    let mut o = outcome();
    o.checks = vec![CheckResult {
        check: CheckId::MaxP99WakeLatencyUs,
        group: "g".into(),
        measured: 8_000.0,
        op: Op::AtMost,
        bound: 1_000.0,
        pass: false,
        cause: None,
        detail: Vec::new(),
        not_judged: None,
    }];
    let ev = read_trace(WAKES.as_bytes()).unwrap().events;
    let group_of = |pid: i32| [500, 501].contains(&pid).then(|| "g".to_string());
    let is_runq = |_| false;
    let wrapped = std::collections::BTreeMap::new();
    let names = Names {
        group_of: &group_of,
        is_runq: &is_runq,
        wrapped: &wrapped,
    };
    let x = examine_wakes(&o, &o.checks[0], &ev, 19 * S, &names).expect("wakeups recorded");
    let s = &x.evidence.summary;
    assert!(
        s.starts_with(
            "3 wakeups of the group's workers in the recording, wake to run p99 8.000 ms; \
             the worst: `spin` 500 (g) woken by `pp` 601 at 1.000 s waited 8.000 ms for CPU 0, \
             which ran `yes` 900 8.0 ms;"
        ),
        "{s}"
    );
    // 500 kept CPU 1 after waking 501, which then ran on CPU 0.
    assert!(
        s.contains(
            "`spin` 501 (g) woken by `spin` 500 (g) at 1.200 s waited 3.000 ms for CPU 1, \
             which ran `spin` 500 (g) 3.0 ms, then ran on CPU 0"
        ),
        "{s}"
    );
    let roles: Vec<(i32, &str)> = x.subjects.iter().map(|s| (s.tid, s.role)).collect();
    assert_eq!(
        roles,
        vec![(500, "worker"), (601, "waker"), (900, "holder")]
    );
    assert!(x.trace.is_some());
    let [a, b] = x.evidence.window_s.unwrap();
    assert!(a < 1.0 && b > 1.008, "{a} {b}");
}

#[test]
fn a_moment_after_the_freeze_falls_back_to_the_wait_the_recording_holds() {
    let o = outcome();
    let mut late = moment(20_000, 21_000);
    late.group = "g".into();
    late.tid = 501;
    // The run started at 10 s: the recording (10.0-13.5 s) froze before
    // the worst instance at 30-31 s; it holds 500's wait of 10.1-13.0 s.
    let m = before_freeze(&o, &late, &events(), 10 * S).expect("a wait in the recording");
    assert_eq!((m.tid, m.cpu), (500, Some(0)));
    assert_eq!((m.from_ns, m.to_ns), (100 * MS, 3 * S));
    assert!(
        m.what.starts_with(
            "waited in the recording, which froze at 3.50 s, before the group's worst \
             instance (worker 501 waited 2900 ms"
        ),
        "{}",
        m.what
    );
    assert_eq!(m.check, CheckId::MaxGapMs);
}

#[test]
fn a_series_window_on_a_wrapped_cpu_says_its_states_are_guessed() {
    use runq_workload::{CheckResult, Op};
    let o = outcome();
    let c = CheckResult {
        check: CheckId::Series {
            pattern: runq_workload::SeriesPattern::Stall,
            metric: "work_units",
        },
        group: "g".into(),
        measured: 1_000.0,
        op: Op::AtMost,
        bound: 500.0,
        pass: false,
        cause: None,
        detail: vec![runq_workload::Detail::Series(
            runq_workload::SeriesDetail::Stalled {
                metric: runq_workload::series::Metric::WorkUnits,
                window: runq_workload::Span {
                    from_ns: 500_000_000,
                    to_ns: 1_500_000_000,
                },
                flat_ms: 1000.0,
                bound_ms: 500.0,
            },
        )],
        not_judged: None,
    };
    let group_of = |_| None;
    let is_runq = |_| false;
    let wrapped = std::collections::BTreeMap::from([(0, 11 * S), (1, 10 * S)]);
    let names = Names {
        group_of: &group_of,
        is_runq: &is_runq,
        wrapped: &wrapped,
    };
    let x = examine_series(&o, &c, &events(), 10 * S, &names).expect("a window");
    let s = &x.evidence.summary;
    assert!(s.starts_with("in 0.50–1.50 s; worker 500 ran "), "{s}");
    assert!(
        s.contains("(CPU 0's recording starts at 1.000 s: its buffer wrapped"),
        "{s}"
    );
    assert!(!s.contains("CPU 1's"), "CPU 1 holds the whole window: {s}");
}
