//! Each detail's sentence, word for word as the report writes it.

use super::*;
use runq_kernel::sched_ext_log::ScxExit;
use runq_workload::{LostPartner, SetupError, WakeFigure};

const MS: u64 = 1_000_000;

fn say(d: Detail) -> String {
    detail_sentence(&d)
}

fn group(g: GroupDetail) -> Detail {
    Detail::Group(g)
}

#[test]
fn a_group_checks_details_name_the_worker_and_its_figures() {
    let lost = |partner: usize| LostPartner {
        partner,
        partner_pid: 77,
        how: WorkerExitInfo::Signaled(9),
        worker: 76,
    };
    assert_eq!(
        say(group(GroupDetail::PartnersLost {
            lost: vec![lost(1), lost(3)]
        })),
        "partner worker 1 (pid 77) died (killed by SIGKILL); worker pid 76 saw its pipe close \
         and stopped; partner worker 3 (pid 77) died (killed by SIGKILL); worker pid 76 saw its \
         pipe close and stopped"
    );
    assert_eq!(
        say(group(GroupDetail::Gap {
            worker: 41,
            source: GapSource::RunDelay,
            gap_ms: 3001,
            at_ms: 1200,
            cpu: 2,
        })),
        "worker 41 waited runnable without a CPU (kernel run delay) for 3001 ms, 1200 ms into \
         the run, on CPU 2"
    );
    assert_eq!(
        say(group(GroupDetail::Gap {
            worker: 41,
            source: GapSource::IterationTime,
            gap_ms: 80,
            at_ms: 5,
            cpu: 0,
        })),
        "worker 41 spent in one iteration beyond what it planned for 80 ms, 5 ms into the run, \
         on CPU 0"
    );
    let errors = (1..=4)
        .map(|worker| SetupError {
            worker,
            error: "EINVAL".into(),
        })
        .collect();
    assert_eq!(
        say(group(GroupDetail::SetupFailed { errors })),
        "worker 1: EINVAL; worker 2: EINVAL; worker 3: EINVAL; and 1 more"
    );
    assert_eq!(
        say(group(GroupDetail::OffCpuSpread {
            most_worker: 41,
            most_pct: 96.666,
            least_worker: 42,
            least_pct: 0.0,
        })),
        "worker 41 was off CPU 96.7% of its run, worker 42 0.0%"
    );
    assert_eq!(
        say(group(GroupDetail::LatencySamples {
            samples: 1000,
            live_workers: 2,
        })),
        "over 1000 samples of 2 live workers"
    );
    assert_eq!(
        say(group(GroupDetail::LatencyFigure {
            figure: WakeFigure::SleepOvershoot,
        })),
        format!(
            "judges the sleep overshoot: {}",
            WakeFigure::SleepOvershoot.meaning()
        )
    );
}

#[test]
fn stuck_workers_are_named_one_way_each_and_counted_past_five() {
    let way = |workers: Vec<u32>, how: StuckHow| StuckWay { workers, how };
    let timed_out = StuckHow::TimedOut {
        wall_ns: 1_000 * MS,
        cpu_ns: 40 * MS,
        run_delay_ns: 950 * MS,
    };
    let no_work = |group_did_work| StuckHow::NoWork {
        wall_ns: 3_000 * MS,
        iterations: 2,
        on_cpu_pct: 3.3,
        waiting_pct: 96.7,
        blocked_pct: 0.0,
        group_did_work,
    };
    let killed = StuckHow::Ended {
        exit: WorkerExitInfo::Signaled(9),
    };
    let ways = vec![
        way(vec![7], timed_out),
        way(vec![41], no_work(true)),
        way(vec![3, 4], no_work(false)),
        way(vec![0], killed.clone()),
        way(vec![8], killed.clone()),
        way(vec![9], killed),
    ];
    assert_eq!(
        say(group(GroupDetail::Stuck { ways })),
        "worker 7 still running at the collection deadline (killed): over its 1.0 s it ran 40 \
         ms and waited 950 ms runnable without a CPU; worker 41 completed no work unit in 3.0 s \
         (2 iterations; 3% on a CPU, 97% waiting for one, 0% blocked); 2 workers completed no \
         work unit in 3.0 s (2 iterations; 3% on a CPU, 97% waiting for one, 0% blocked, and no \
         worker of its group did any work); 1 workers killed by SIGKILL; worker 8 killed by \
         SIGKILL; and 1 more"
    );
}

#[test]
fn shares_and_rates_state_the_figure_against_what_was_owed() {
    assert_eq!(
        say(Detail::Share(ShareDetail::FairShare {
            group: "a".into(),
            got_pct: 0.99,
            expected_pct: 20.0,
            basis: "cpu.shares 1024:4096".into(),
        })),
        "a got 1.0% of the CPU time, expected 20% (cpu.shares 1024:4096)"
    );
    assert_eq!(
        say(Detail::Share(ShareDetail::WorkerFairShare {
            worker: 12,
            got_pct: 12.25,
            expected_pct: 50.0,
        })),
        "worker 12 got 12.2% of its group's CPU time, expected 50%"
    );
    let rate = |r| say(Detail::Rate(r));
    assert_eq!(
        rate(RateDetail::SlowestWorker {
            worker: 41,
            work_units: 0,
            wall_ns: 3_000 * MS,
        }),
        "worker 41 did 0 work units in 3.00 s"
    );
    assert_eq!(
        rate(RateDetail::Migrations {
            migrations: 12,
            checkpoints: 30,
        }),
        "12 migrations seen at 30 checkpoints (one every 1024 work units)"
    );
    assert_eq!(
        rate(RateDetail::NumaLocality),
        "share of each worker's pages on its busiest NUMA node; the lowest worker's"
    );
    assert_eq!(
        rate(RateDetail::WorkRates {
            workers: 3,
            slowest_worker: 3,
            slowest_per_s: 50.0,
            fastest_worker: 1,
            fastest_per_s: 500.0,
        }),
        "work rates of 3 workers of one role: slowest worker 3 at 50/s, fastest 1 at 500/s"
    );
    assert_eq!(
        rate(RateDetail::SlowestIterations {
            worker: 2,
            iterations: 100,
            wall_ns: 2_000 * MS,
        }),
        "worker 2 did 100 iterations in 2.00 s"
    );
}

#[test]
fn placement_details_give_the_cpus_or_why_the_check_was_skipped() {
    let place = |p| say(Detail::Placement(p));
    assert_eq!(
        place(PlacementDetail::CpusetNotApplied),
        "skipped: the run had no cgroups, so no cpuset applied"
    );
    assert_eq!(
        place(PlacementDetail::CpusetKept {
            cpuset: vec![1, 2, 3],
        }),
        "every CPU seen at a checkpoint was in the cpuset (1-3)"
    );
    let left = |more_workers| PlacementDetail::CpusetLeft {
        worker: 12,
        cpus: vec![0],
        cpuset: vec![1, 2, 3],
        more_workers,
    };
    assert_eq!(
        place(left(0)),
        "worker 12 ran on CPU 0 outside its cpuset 1-3"
    );
    assert_eq!(
        place(left(2)),
        "worker 12 ran on CPU 0 outside its cpuset 1-3 (2 more workers did too)"
    );
    assert_eq!(
        place(PlacementDetail::OneNumaNode { nodes: 1 }),
        "skipped: this host has 1 NUMA node, so no migration can cross one"
    );
    assert_eq!(
        place(PlacementDetail::TooFewMigrations {
            migrations: 1,
            at_least: 4,
        }),
        "skipped: 1 migrations seen between checkpoints, too few for a share (at least 4)"
    );
    assert_eq!(
        place(PlacementDetail::CrossNode {
            crossed: 2,
            migrations: 4,
        }),
        "2 of 4 migrations seen between checkpoints crossed NUMA nodes"
    );
}

#[test]
fn the_schedulers_end_and_the_checks_across_it() {
    let end = |ejected| ScxEnd {
        ejected,
        scheduler: "qmap".into(),
        at_ms: 5_300,
    };
    let sched = |s| say(Detail::Scheduler(s));
    assert_eq!(
        sched(SchedulerDetail::GapBeforeScxEnd { end: end(true) }),
        "the worst gap came before sched_ext ejected BPF scheduler \"qmap\" (seen at 5300 ms): \
         under the BPF scheduler"
    );
    assert_eq!(
        sched(SchedulerDetail::GapAfterScxEnd { end: end(false) }),
        "the worst gap came after sched_ext disabled BPF scheduler \"qmap\" (seen at 5300 ms): \
         under the kernel's fair class, not the BPF scheduler"
    );
    assert_eq!(
        sched(SchedulerDetail::AcrossScxEnd { end: end(true) }),
        "judged over the whole run, across sched_ext's end of BPF scheduler \"qmap\" at 5300 \
         ms: the part after it ran under the kernel's fair class"
    );
    let exit = |error| ScxExit {
        scheduler: "qmap".into(),
        reason: "runnable task stall".into(),
        error,
        message: None,
    };
    let ended = |sched_ext_exit| SchedulerDetail::SchedulerEnded {
        status: "killed by signal 12 (SIGUSR2)".into(),
        at_ms: 5_300,
        sched_ext_exit,
    };
    assert_eq!(
        sched(ended(None)),
        "the scheduler killed by signal 12 (SIGUSR2) at 5300 ms"
    );
    let rest = "; the rest of the run ran under the kernel's fair class, and each failed check \
                says which part of the run it judges";
    let (kernel, own) = (
        exit(true).describe(),
        "the scheduler killed by signal 12 (SIGUSR2) at 5300 ms",
    );
    assert_eq!(
        sched(ended(Some(exit(true)))),
        format!("{kernel}, and {own}{rest}")
    );
    let kernel = exit(false).describe();
    assert_eq!(
        sched(ended(Some(exit(false)))),
        format!("{own}, and {kernel}{rest}")
    );
    assert_eq!(
        sched(SchedulerDetail::SchedulerRan {
            command: "scx_simple".into(),
        }),
        "\"scx_simple\" ran until the end"
    );
}

#[test]
fn the_host_monitors_figures() {
    assert_eq!(
        say(Detail::Host(HostDetail::RqImbalance {
            at_ns: 500 * MS,
            mean: 2.0,
            samples: 2,
        })),
        "worst at 0.50 s (max − min nr_running across CPUs; mean 2.0 over 2 samples)"
    );
    assert_eq!(
        say(Detail::Host(HostDetail::RunnableWait {
            pid: 1234,
            comm: "yes".into(),
            waited_ms: 12.3,
            cpu: 1,
            at_ns: 2_100 * MS,
            waits: 4,
            mean_ns: 3_120_000,
            source: "BPF".into(),
        })),
        "pid 1234 (yes) waited 12.3 ms runnable before it got cpu 1, at 2.10 s (longest of 4 \
         waits on the host, mean 3.12ms; BPF)"
    );
}

#[test]
fn sched_ext_counters_clocks_and_queues() {
    let ext = |e| say(Detail::SchedExt(e));
    assert_eq!(
        ext(SchedExtDetail::ScxRejected { rejected: 3 }),
        "sched_ext's nr_rejected rose by 3 over the run (tasks the BPF scheduler refused)"
    );
    assert_eq!(
        ext(SchedExtDetail::ScxEvents {
            count: 4,
            what: "select_cpu fallbacks".into(),
            event: "SCX_EV_SELECT_CPU_FALLBACK".into(),
            secs: 2.0,
            per_s: 2.0,
        }),
        "4 select_cpu fallbacks (SCX_EV_SELECT_CPU_FALLBACK) in 2.0 s, 2.0/s"
    );
    assert_eq!(
        ext(SchedExtDetail::RqClockMoved { samples: 2 }),
        "every busy CPU's run-queue clock moved from each of 2 samples to the next"
    );
    let stood = |curr_pid| SchedExtDetail::RqClockStood {
        cpu: 0,
        clock_ns: 100,
        from_ns: 0,
        to_ns: 1_000 * MS,
        nr_running: 1,
        curr_pid,
        samples: 5,
    };
    let head = "cpu 0's run-queue clock stood at 0.000 s from 0.00 s to 1.00 s of the run with 1 \
                runnable task(s)";
    assert_eq!(
        ext(stood(Some(0))),
        format!(
            "{head} (its idle task on the CPU: runnable work waited on an idle CPU) (longest of \
             5 samples)"
        )
    );
    assert_eq!(
        ext(stood(Some(77))),
        format!("{head} (pid 77 on the CPU) (longest of 5 samples)")
    );
    assert_eq!(ext(stood(None)), format!("{head} (longest of 5 samples)"));
}

#[test]
fn dsq_depths_name_the_deepest_queues_and_the_longest_wait() {
    let depth = |dsq, cpu, tasks, at_ns| DsqDepth {
        dsq,
        cpu,
        tasks,
        at_ns,
    };
    let waiter = |pid, dsq| DsqWaiter {
        pid,
        comm: format!("t{pid}"),
        cpu: 1,
        runnable_ms: 5030,
        dsq,
        at_ns: 2_000 * MS,
    };
    // A real 6.12 dump under scx_simple: one hog on its shared DSQ 0.
    let simple = SchedExtDetail::DsqDepths {
        dumps: 1,
        local: None,
        other: Some(depth(0, Some(3), 1, 1_000 * MS)),
        held_max: 0,
        longest_wait: Some(DsqWaiter {
            pid: 102,
            comm: "yes".into(),
            cpu: 3,
            runnable_ms: 7,
            dsq: Some(0),
            at_ns: 1_000 * MS,
        }),
    };
    assert_eq!(
        say(Detail::SchedExt(simple)),
        "no task waited on a local DSQ (deepest of 1 sched_ext dumps); deepest other: DSQ 0x0 \
         with 1 at 1.00 s; longest wait: pid 102 (yes) runnable 7 ms on cpu 3, on DSQ 0x0, at \
         1.00 s"
    );
    let busy = SchedExtDetail::DsqDepths {
        dumps: 2,
        local: Some(depth(DSQ_LOCAL, Some(0), 2, 500 * MS)),
        other: Some(depth(DSQ_GLOBAL, None, 1, 2_000 * MS)),
        held_max: 1,
        longest_wait: Some(waiter(4, None)),
    };
    assert_eq!(
        say(Detail::SchedExt(busy)),
        "cpu 0's local DSQ held 2 queued task(s) at 0.50 s (deepest of 2 sched_ext dumps); \
         deepest other: the global DSQ with 1 at 2.00 s; the BPF scheduler held up to 1 waiting \
         task(s) on no DSQ; longest wait: pid 4 (t4) runnable 5030 ms on cpu 1, held by the BPF \
         scheduler, at 2.00 s"
    );
    let local_wait = SchedExtDetail::DsqDepths {
        dumps: 1,
        local: None,
        other: None,
        held_max: 0,
        longest_wait: Some(waiter(5, Some(DSQ_LOCAL))),
    };
    assert_eq!(
        say(Detail::SchedExt(local_wait)),
        "no task waited on a local DSQ (deepest of 1 sched_ext dumps); longest wait: pid 5 (t5) \
         runnable 5030 ms on cpu 1, on cpu 1's local DSQ, at 2.00 s"
    );
}

#[test]
fn checks_over_time_name_their_window() {
    let w = |from_ms: u64, to_ms: u64| Span {
        from_ns: from_ms * MS,
        to_ns: to_ms * MS,
    };
    let series = |s| say(Detail::Series(s));
    assert_eq!(
        series(SeriesDetail::Fell {
            metric: Metric::WorkUnits,
            from: 5000,
            to: 10,
            window: w(500, 600),
            drops: 1,
            intervals: 9,
        }),
        "work_units fell from 5000 to 10 in 0.50–0.60 s (1 drop(s) in 9 intervals)"
    );
    let outside = |above, bound| SeriesDetail::RateOutside {
        metric: Metric::WorkUnits,
        rate: 1_000.0,
        window: w(300, 400),
        above,
        bound,
        outside: 1,
        intervals: 9,
    };
    assert_eq!(
        series(outside(false, 5_000.0)),
        "work_units rate 1.0k/s in 0.30–0.40 s, below 5.0k/s (1 of 9 intervals out of range)"
    );
    assert_eq!(
        series(outside(true, 500.0)),
        "work_units rate 1.0k/s in 0.30–0.40 s, above 500/s (1 of 9 intervals out of range)"
    );
    assert_eq!(
        series(SeriesDetail::Unsteady {
            metric: Metric::WorkUnits,
            cv: 1.234,
            window: w(0, 900),
            intervals: 9,
            mean: 15_000.0,
            farthest: 60_000.0,
            farthest_from_ns: 700 * MS,
            farthest_to_ns: 800 * MS,
        }),
        "work_units rate varied with CV 1.23 over 0.00–0.90 s (9 intervals, mean 15.0k/s); \
         farthest from the mean: 60.0k/s in 0.70–0.80 s"
    );
    assert_eq!(
        series(SeriesDetail::Stalled {
            metric: Metric::WorkUnits,
            window: w(300, 700),
            flat_ms: 400.0,
            bound_ms: 250.0,
        }),
        "work_units did not move in 0.30–0.70 s: no progress for 400 ms (at most 250 ms allowed)"
    );
    assert_eq!(
        series(SeriesDetail::ConvergeRate {
            metric: Metric::WorkUnits,
            rate: 10_000.0,
            window: w(2500, 3000),
            target: 1_000.0,
            tolerance: 0.1,
        }),
        "work_units rate 10.0k/s over 2.50–3.00 s, target 1.0k/s ± 10%"
    );
    assert_eq!(
        series(SeriesDetail::ConvergeShare {
            metric: Metric::CpuTime,
            share: 0.75,
            rate: 0.75,
            total: 1.0,
            window: w(800, 1000),
            target: 0.5,
            tolerance: 0.05,
        }),
        "cpu_time share 0.750 (0.75 CPU of 1.00 CPU) over 0.80–1.00 s, target share 0.500 ± 5%"
    );
}

#[test]
fn a_checks_details_are_joined_in_order() {
    let figure = group(GroupDetail::LatencyFigure {
        figure: WakeFigure::Latency,
    });
    let samples = group(GroupDetail::LatencySamples {
        samples: 10,
        live_workers: 1,
    });
    assert_eq!(details_sentence(&[]), None);
    assert_eq!(
        details_sentence(&[figure.clone(), samples.clone()]),
        Some(format!(
            "{}; {}",
            detail_sentence(&figure),
            detail_sentence(&samples)
        ))
    );
    assert!(detail_sentence(&figure).starts_with("judges the wake latency: from the waker's"));
}
