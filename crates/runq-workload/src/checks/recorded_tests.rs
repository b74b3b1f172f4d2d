//! The recorder's explanations on two recorded runs (the maps read at the
//! end of real runs on a busy 2-CPU host, `fixtures/recorded-*.json`):
//! the default scenario, whose spinner 8679 lost its CPU mostly to the
//! pingpong cgroup's workers and partly to tasks outside the run, and a
//! nice-19 worker pinned beside a nice -20 busy loop (`sh`, pid 6408).

use std::time::Duration;

use runq_kernel::cgroup::CgroupLimits;

use super::*;
use crate::checks::cause::NextStep;
use crate::checks::mechanism::{Container, HeldFor, Mechanism, NamedTask};
use crate::checks::outside_load::{FiguresSay, LoadFigures};
use crate::checks::Op;
use crate::report::WorkerExitInfo;
use crate::scenario::ScenarioBuilder;
use crate::WorkType;

fn fixture(name: &str) -> Recorded {
    let path = format!("{}/src/checks/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// A report for each recorded worker, in `group_of`'s group, with its
/// recorded run time as its CPU time.
fn reports(rec: &Recorded, group_of: impl Fn(u32) -> usize) -> Vec<WorkerReport> {
    rec.workers
        .iter()
        .map(|w| {
            let mut r =
                WorkerReport::sentinel(w.worker, group_of(w.worker), WorkerExitInfo::TimedOut);
            r.exit_info = None;
            r.cpu_time_ns = w.run_ns;
            r.wall_time_ns = 3_000_000_000;
            r.work_units = 1;
            r
        })
        .collect()
}

fn failed(check: CheckId, group: &str) -> CheckResult {
    CheckResult {
        check,
        group: group.into(),
        measured: 0.343,
        op: Op::AtLeast,
        bound: 0.5,
        pass: false,
        detail: Vec::new(),
        cause: None,
        not_judged: None,
    }
}

fn default_run(cgroups: [&str; 2]) -> (Scenario, Vec<WorkerReport>, Recorded) {
    let rec = fixture("recorded-default.json");
    let spin = WorkType::from_name("SpinWait").unwrap();
    let pipe = WorkType::from_name("PipeIo").unwrap();
    let scn = ScenarioBuilder::new("default")
        .duration(Duration::from_secs(3))
        .cgroup(cgroups[0], CgroupLimits::default())
        .cgroup(cgroups[1], CgroupLimits::default())
        .group("spinners", spin, 2, Some(cgroups[0]))
        .group("pingpong", pipe, 4, Some(cgroups[1]))
        .build();
    let reports = reports(&rec, |tid| usize::from(tid >= 8680));
    (scn, reports, rec)
}

fn explain(scn: &Scenario, reports: &[WorkerReport], rec: &Recorded, c: CheckResult) -> Cause {
    let mut checks = [c];
    explain_all(scn, reports, Ok(rec), true, &mut checks);
    let [c] = checks;
    c.cause.expect("a cause")
}

#[test]
fn the_default_scenarios_spinner_lost_its_cpu_to_the_other_cgroup() {
    let (scn, reports, rec) = default_run(["spinners", "pingpong"]);
    let cause = explain(
        &scn,
        &reports,
        &rec,
        failed(CheckId::MinFairShare, "spinners"),
    );
    let Some(Mechanism::OtherGroups {
        containers,
        worker: 8679,
        held,
    }) = cause.mechanism.first()
    else {
        panic!("{:?}", cause.mechanism);
    };
    assert_eq!(containers, &[cgroup("pingpong")]);
    assert_eq!((ms_of(held.held_ns), ms_of(held.waited_ns)), (1_559, 2_834));
    assert_eq!(cause.next_step, Some(NextStep::NoCgroupsControl));
    let acc = cause.recorder.as_ref().expect("the recorder's account");
    assert_eq!(
        (
            acc.record.worker,
            acc.group.as_str(),
            ms_of(acc.record.run_ns)
        ),
        (8679, "spinners", 214)
    );
    let top = &acc.holders[0];
    assert_eq!(
        (
            top.comm.as_str(),
            top.pid,
            top.whose.as_str(),
            ms_of(top.held_ns)
        ),
        ("runq", 8680, "pingpong", 804)
    );
    assert!(acc.record.holders.is_empty(), "named once, in holders");
    // The first line's fact: the task that held its CPU longest.
    let held = cause.held_by.expect("a holder");
    assert_eq!(
        (held.worker, held.whose.as_str(), held.wait_ns),
        (8679, "pingpong", 2_833_766_909)
    );
    assert_eq!((held.pid, held.held_ns), (8680, 803_984_124), "{held:?}");
    // Outside the run held 1,177 ms; its part of that (214 of the 1,874
    // ms the run had on its CPUs) lifts 0.343 to 0.558, past the bound.
    let load = cause.outside_load.unwrap();
    assert!(load.explains, "{load:?}");
    let seen = load.recorded.expect("the recorder's revision");
    assert!(
        seen.best.is_some_and(|b| (b - 0.558).abs() < 5e-4),
        "{seen:?}"
    );
}

#[test]
fn one_cgroup_for_both_groups_is_starvation_inside_it() {
    let (scn, reports, rec) = default_run(["all", "all"]);
    let cause = explain(
        &scn,
        &reports,
        &rec,
        failed(CheckId::MinFairShare, "spinners"),
    );
    let Some(Mechanism::InsideContainer {
        starved: true,
        container,
        worker: 8679,
        ran_ns,
        wall_ns: 3_000_000_000,
        held,
    }) = cause.mechanism.first()
    else {
        panic!("{:?}", cause.mechanism);
    };
    assert_eq!(container, &cgroup("all"));
    assert_eq!(
        (ms_of(*ran_ns), ms_of(held.held_ns), ms_of(held.waited_ns)),
        (214, 1_660, 2_834)
    );
}

/// The cgroup named `name`.
fn cgroup(name: &str) -> Container {
    Container::Cgroup { name: name.into() }
}

/// A worker that ran most of its time (here 1,600 of its 3,000 ms) was
/// delayed by its group mates, not starved.
#[test]
fn a_worker_that_ran_most_of_its_time_met_contention_not_starvation() {
    let (scn, reports, mut rec) = default_run(["all", "all"]);
    let w = rec.workers.iter_mut().find(|w| w.worker == 8679).unwrap();
    w.run_ns = 1_600_000_000;
    let c = failed(CheckId::MaxP99WakeLatencyUs, "spinners");
    let m = explain(&scn, &reports, &rec, c).mechanism;
    assert!(
        matches!(
            m.first(),
            Some(Mechanism::InsideContainer {
                starved: false,
                container,
                worker: 8679,
                ran_ns: 1_600_000_000,
                wall_ns: 3_000_000_000,
                ..
            }) if *container == cgroup("all")
        ),
        "{m:?}"
    );
}

#[test]
fn a_busy_host_clause_gives_way_to_what_the_recorder_saw() {
    let (scn, reports, rec) = default_run(["spinners", "pingpong"]);
    let mut c = failed(CheckId::MinFairShare, "spinners");
    c.measured = 0.2;
    c.cause = Some(Cause {
        outside_load: Some(OutsideLoad {
            explains: true,
            figures: Some(LoadFigures {
                outside_cpus: 0.9,
                host_cpus: 2,
                explains: true,
                says: FiguresSay::MayHoldACpu,
            }),
            recorded: None,
        }),
        ..Cause::default()
    });
    let load = explain(&scn, &reports, &rec, c).outside_load.unwrap();
    // The figures said yes; what the recorder saw turns it.
    assert!(!load.explains, "{load:?}");
    assert!(
        load.figures.as_ref().is_some_and(|f| f.explains),
        "{load:?}"
    );
    let seen = load.recorded.expect("the recorder's revision");
    assert_eq!(
        (seen.outside_ns / 1_000_000, seen.waited_ns / 1_000_000),
        (1177, 2833),
        "{seen:?}"
    );
}

/// The cause of `not_stuck` for the one stuck worker of `rec` (a group
/// `low` of one spinner, not in a cgroup).
fn stuck_spinner_cause(rec: &Recorded) -> Cause {
    let spin = WorkType::from_name("SpinWait").unwrap();
    let scn = ScenarioBuilder::new("hog")
        .group("low", spin, 1, None)
        .build();
    let mut reports = reports(rec, |_| 0);
    reports[0].exit_info = Some(WorkerExitInfo::TimedOut);
    let mut checks = [failed(CheckId::NotStuck, "low")];
    explain_all(&scn, &reports, Ok(rec), false, &mut checks);
    checks[0].cause.clone().unwrap()
}

#[test]
fn not_stuck_beside_a_nice_hog_names_the_hog() {
    let cause = stuck_spinner_cause(&fixture("recorded-nice-hog.json"));
    let Some(Mechanism::Outside { worker: 6432, held }) = cause.mechanism.first() else {
        panic!("{:?}", cause.mechanism);
    };
    assert_eq!(held.holders[..2], [task("sh", 6408), task("rustc", 6463)]);
    assert_eq!(
        cause.next_step,
        Some(NextStep::StopHolder {
            comm: "sh".into(),
            pid: 6408
        })
    );
    let load = cause.outside_load.unwrap();
    assert!(load.explains, "{load:?}");
    let acc = cause.recorder.unwrap();
    assert!(acc.holders.iter().any(|h| (
        h.comm.as_str(),
        h.pid,
        h.whose.as_str(),
        ms_of(h.held_ns)
    ) == ("sh", 6408, "outside", 24_424)));
}

/// The nice-hog run as a sampled recorder that found no other task on
/// the worker's CPUs: the worker still waited nearly all its time, so
/// the mechanism is a wait whose holders are unseen, and the next step
/// the exact recorder, never "not a wait for a CPU".
#[test]
fn a_sampled_wait_without_holders_is_a_wait_whose_holders_are_unseen() {
    let mut rec = fixture("recorded-nice-hog.json");
    let w = &mut rec.workers[0];
    w.holders.clear();
    w.held_by_class.iter_mut().for_each(|c| *c = 0);
    w.sampled = Some(runq_kernel::task_record::SampledBasis::default());
    let cause = stuck_spinner_cause(&rec);
    let Some(&Mechanism::HoldersUnseen {
        worker: 6432,
        waited_ns,
        ..
    }) = cause.mechanism.first()
    else {
        panic!("{:?}", cause.mechanism);
    };
    assert!(waited_ns > 0);
    assert_eq!(
        cause.next_step,
        Some(NextStep::FlightRecorder { worker: Some(6432) })
    );
}

/// The nice-hog run with the hog's time given to runq's own threads, as
/// a 2-vCPU guest under TCG showed (runq[755] held a worker's CPU 69 ms).
#[test]
fn runq_holding_a_workers_cpu_is_runq_itself_not_outside_load() {
    use runq_kernel::task_record::RUNQ_CLASS;
    let mut rec = fixture("recorded-nice-hog.json");
    let w = &mut rec.workers[0];
    w.held_by_class[RUNQ_CLASS as usize] = w.held_by_class[0];
    w.held_by_class[0] /= 100;
    for h in w.holders.iter_mut().filter(|h| h.pid == 6408) {
        h.comm = "runq-host".into();
        h.class = RUNQ_CLASS;
    }
    let cause = stuck_spinner_cause(&rec);
    let Some(Mechanism::RunqItself { worker: 6432, held }) = cause.mechanism.first() else {
        panic!("{:?}", cause.mechanism);
    };
    assert_eq!(
        (held.holders.as_slice(), held.more_holders),
        ([task("runq-host", 6408)].as_slice(), 0)
    );
    assert!(
        cause.next_step == Some(NextStep::LeaveRunqACpu),
        "never advise stopping runq"
    );
    assert!(cause.outside_load.is_none_or(|l| !l.explains));
    let acc = cause.recorder.unwrap();
    assert!(
        acc.holders
            .iter()
            .any(|h| h.comm == "runq-host" && h.pid == 6408 && h.whose == "runq"),
        "{acc:?}"
    );
    assert_eq!(ms_of(acc.held.runq_ns), 25_240, "{acc:?}");
    // The first line names the holder of the part the mechanism blames.
    let held = cause.held_by.unwrap();
    assert_eq!(
        (held.comm.as_str(), held.whose.as_str()),
        ("runq-host", "runq")
    );
}

#[test]
fn a_killed_worker_is_its_end_not_the_load() {
    let rec = fixture("recorded-nice-hog.json");
    let spin = WorkType::from_name("SpinWait").unwrap();
    let scn = ScenarioBuilder::new("hog")
        .group("low", spin, 1, None)
        .build();
    let mut reports = reports(&rec, |_| 0);
    reports[0].exit_info = Some(WorkerExitInfo::Signaled(9));
    let mut checks = [failed(CheckId::NotStuck, "low")];
    explain_all(&scn, &reports, Ok(&rec), false, &mut checks);
    let cause = checks[0].cause.clone().unwrap();
    assert!(
        matches!(
            cause.mechanism.as_slice(),
            [Mechanism::Ended {
                worker: 6432,
                how: WorkerExitInfo::Signaled(9),
                ..
            }]
        ),
        "{:?}",
        cause.mechanism
    );
    assert_eq!(cause.outside_load, None);
}

#[test]
fn without_a_recorder_each_failed_check_says_what_is_missing() {
    let (scn, reports, _) = default_run(["spinners", "pingpong"]);
    let mut checks = [
        failed(CheckId::MinFairShare, "spinners"),
        CheckResult {
            pass: true,
            ..failed(CheckId::MaxGapMs, "spinners")
        },
    ];
    explain_all(
        &scn,
        &reports,
        Err("off (--no-recorder)"),
        true,
        &mut checks,
    );
    let cause = checks[0].cause.as_ref().unwrap();
    assert_eq!(cause.no_recorder.as_deref(), Some("off (--no-recorder)"));
    assert_eq!((&cause.recorder, &cause.held_by), (&None, &None));
    assert_eq!(checks[1].cause, None);
}

#[test]
fn a_worker_with_wakers_is_never_woken_zero_times() {
    let (scn, reports, mut rec) = default_run(["spinners", "pingpong"]);
    let w = rec.workers.iter_mut().find(|w| w.worker == 8679).unwrap();
    w.wakeups = 0;
    w.wakers = vec![runq_kernel::task_record::Waker {
        pid: 29,
        comm: "rcu_tasks_trace".into(),
        wakeups: 3,
    }];
    let cause = explain(
        &scn,
        &reports,
        &rec,
        failed(CheckId::MinFairShare, "spinners"),
    );
    let acc = cause.recorder.unwrap();
    assert_eq!(acc.record.wakers[0].comm, "rcu_tasks_trace");
    assert_eq!(acc.record.wakers[0].wakeups, 3);
}

#[test]
fn a_worker_asleep_at_the_deadline_is_no_wait_for_a_cpu() {
    // The spinner's record over a 10 s life that ended past the
    // collection deadline: 214 ms run, 2,834 ms runnable, the rest asleep
    // (a receive its stop never interrupted, say).
    let (scn, mut reports, rec) = default_run(["spinners", "pingpong"]);
    let r = reports.iter_mut().find(|r| r.tid == 8679).unwrap();
    r.wall_time_ns = 10_000_000_000;
    r.exit_info = Some(WorkerExitInfo::TimedOut);
    let cause = explain(&scn, &reports, &rec, failed(CheckId::NotStuck, "spinners"));
    let Some(&Mechanism::NoCpuWait {
        worker: 8679,
        waited_ns,
        wall_ns: 10_000_000_000,
        ran_ns,
        asleep_ns,
    }) = cause.mechanism.first()
    else {
        panic!("{:?}", cause.mechanism);
    };
    assert_eq!(
        (ms_of(waited_ns), ms_of(ran_ns), ms_of(asleep_ns)),
        (2_834, 214, 6_952)
    );
}

#[test]
fn the_first_three_holders_are_named_the_rest_counted_the_time_within_the_wait() {
    let w = TaskRecord {
        wait_ns: 100,
        ..TaskRecord::default()
    };
    let none = held_for(&w, &(Vec::new(), 0));
    assert_eq!((none.holders.len(), none.more_holders), (0, 0));
    let h = |pid: u32| runq_kernel::task_record::Holder {
        pid,
        comm: "yes".into(),
        ..Default::default()
    };
    let hs = [h(7), h(8), h(9), h(10), h(11)];
    let held = held_for(&w, &(hs.iter().collect(), 120));
    assert_eq!(
        held,
        HeldFor {
            held_ns: 100,
            waited_ns: 100,
            holders: vec![task("yes", 7), task("yes", 8), task("yes", 9)],
            more_holders: 2,
        }
    );
}

/// A task named `comm`, pid `pid`.
fn task(comm: &str, pid: u32) -> NamedTask {
    NamedTask {
        comm: comm.into(),
        pid,
    }
}

/// ns as whole ms, rounded, as the report writes them.
fn ms_of(ns: u64) -> u64 {
    (ns as f64 / 1e6).round() as u64
}
