//! What a check measured, in words: the sentence under a check, one
//! clause per fact the engine stated, joined with "; ".

use runq_common::units::fmt_ns;
use runq_kernel::cpulist::CpuListDisplay;
use runq_kernel::sched_ext_dump::{DSQ_GLOBAL, DSQ_LOCAL};
use runq_workload::series::dsq::{DsqDepth, DsqWaiter};
use runq_workload::series::Metric;
use runq_workload::{
    Detail, GapSource, GroupDetail, HostDetail, PlacementDetail, RateDetail, SchedExtDetail,
    SchedulerDetail, ScxEnd, SeriesDetail, ShareDetail, Span, StuckHow, StuckWay, WorkerExitInfo,
};

/// A check's details as one sentence, `a; b`, or `None` when it has
/// none.
pub fn details_sentence(ds: &[Detail]) -> Option<String> {
    (!ds.is_empty()).then(|| {
        ds.iter()
            .map(detail_sentence)
            .collect::<Vec<_>>()
            .join("; ")
    })
}

/// `worker 41 did 0 work units in 3.00 s`.
pub fn detail_sentence(d: &Detail) -> String {
    match d {
        Detail::Group(g) => group(g),
        Detail::Share(s) => share(s),
        Detail::Rate(r) => rate(r),
        Detail::Placement(p) => placement(p),
        Detail::Scheduler(s) => scheduler(s),
        Detail::Host(h) => host(h),
        Detail::SchedExt(e) => sched_ext(e),
        Detail::Series(s) => series(s),
    }
}

/// A group check's sentence.
fn group(g: &GroupDetail) -> String {
    match g {
        GroupDetail::PartnersLost { lost } => lost
            .iter()
            .map(|l| {
                format!(
                    "partner worker {} (pid {}) died ({}); worker pid {} saw its pipe close and \
                     stopped",
                    l.partner, l.partner_pid, l.how, l.worker
                )
            })
            .collect::<Vec<_>>()
            .join("; "),
        GroupDetail::Stuck { ways } => at_most(&ways.iter().map(stuck_way).collect::<Vec<_>>(), 5),
        GroupDetail::Gap {
            worker,
            source,
            gap_ms,
            at_ms,
            cpu,
        } => {
            let what = match source {
                GapSource::RunDelay => "waited runnable without a CPU (kernel run delay)",
                GapSource::IterationTime => "spent in one iteration beyond what it planned",
            };
            format!("worker {worker} {what} for {gap_ms} ms, {at_ms} ms into the run, on CPU {cpu}")
        }
        GroupDetail::SetupFailed { errors } => at_most(
            &errors
                .iter()
                .map(|e| format!("worker {}: {}", e.worker, e.error))
                .collect::<Vec<_>>(),
            3,
        ),
        GroupDetail::OffCpuSpread {
            most_worker,
            most_pct,
            least_worker,
            least_pct,
        } => format!(
            "worker {most_worker} was off CPU {most_pct:.1}% of its run, worker {least_worker} \
             {least_pct:.1}%"
        ),
        GroupDetail::LatencySamples {
            samples,
            live_workers,
        } => format!("over {samples} samples of {live_workers} live workers"),
        GroupDetail::LatencyFigure { figure } => {
            format!("judges the {}: {}", figure.label(), figure.meaning())
        }
    }
}

/// One way workers were stuck: `worker 7 ...`, or `3 workers ...`.
fn stuck_way(w: &StuckWay) -> String {
    let how = stuck_how(&w.how);
    match w.workers.as_slice() {
        [tid] if *tid != 0 => format!("worker {tid} {how}"),
        all => format!("{} workers {how}", all.len()),
    }
}

/// How a worker was stuck.
fn stuck_how(h: &StuckHow) -> String {
    match h {
        StuckHow::Ended { exit } => exit.to_string(),
        StuckHow::TimedOut {
            wall_ns,
            cpu_ns,
            run_delay_ns,
        } => format!(
            "{}: over its {:.1} s it ran {:.0} ms and waited {:.0} ms runnable without a CPU",
            WorkerExitInfo::TimedOut,
            secs(*wall_ns),
            *cpu_ns as f64 / 1e6,
            *run_delay_ns as f64 / 1e6
        ),
        StuckHow::NoWork {
            wall_ns,
            iterations,
            on_cpu_pct,
            waiting_pct,
            blocked_pct,
            group_did_work,
        } => format!(
            "completed no work unit in {:.1} s ({iterations} iterations; {on_cpu_pct:.0}% on a \
             CPU, {waiting_pct:.0}% waiting for one, {blocked_pct:.0}% blocked{})",
            secs(*wall_ns),
            if *group_did_work {
                ""
            } else {
                ", and no worker of its group did any work"
            }
        ),
    }
}

/// The first `n` of `lines` joined, and how many more there are.
fn at_most(lines: &[String], n: usize) -> String {
    let mut text = lines[..lines.len().min(n)].join("; ");
    if lines.len() > n {
        text.push_str(&format!("; and {} more", lines.len() - n));
    }
    text
}

/// A fair-share check's sentence.
fn share(s: &ShareDetail) -> String {
    match s {
        ShareDetail::FairShare {
            group,
            got_pct,
            expected_pct,
            basis,
        } => format!(
            "{group} got {got_pct:.1}% of the CPU time, expected {expected_pct:.0}% ({basis})"
        ),
        ShareDetail::WorkerFairShare {
            worker,
            got_pct,
            expected_pct,
        } => format!(
            "worker {worker} got {got_pct:.1}% of its group's CPU time, expected \
             {expected_pct:.0}%"
        ),
    }
}

/// A pace check's sentence.
fn rate(r: &RateDetail) -> String {
    match r {
        RateDetail::SlowestWorker {
            worker,
            work_units,
            wall_ns,
        } => format!(
            "worker {worker} did {work_units} work units in {:.2} s",
            secs(*wall_ns)
        ),
        RateDetail::Migrations {
            migrations,
            checkpoints,
        } => format!(
            "{migrations} migrations seen at {checkpoints} checkpoints (one every 1024 work units)"
        ),
        RateDetail::NumaLocality => {
            "share of each worker's pages on its busiest NUMA node; the lowest worker's".into()
        }
        RateDetail::WorkRates {
            workers,
            slowest_worker,
            slowest_per_s,
            fastest_worker,
            fastest_per_s,
        } => format!(
            "work rates of {workers} workers of one role: slowest worker {slowest_worker} at \
             {slowest_per_s:.0}/s, fastest {fastest_worker} at {fastest_per_s:.0}/s"
        ),
        RateDetail::SlowestIterations {
            worker,
            iterations,
            wall_ns,
        } => format!(
            "worker {worker} did {iterations} iterations in {:.2} s",
            secs(*wall_ns)
        ),
    }
}

/// A placement check's sentence.
fn placement(p: &PlacementDetail) -> String {
    match p {
        PlacementDetail::CpusetNotApplied => {
            "skipped: the run had no cgroups, so no cpuset applied".into()
        }
        PlacementDetail::CpusetKept { cpuset } => format!(
            "every CPU seen at a checkpoint was in the cpuset ({})",
            cpu_list(cpuset)
        ),
        PlacementDetail::CpusetLeft {
            worker,
            cpus,
            cpuset,
            more_workers,
        } => format!(
            "worker {worker} ran on CPU {} outside its cpuset {}{}",
            cpu_list(cpus),
            cpu_list(cpuset),
            match more_workers {
                0 => String::new(),
                n => format!(" ({n} more workers did too)"),
            }
        ),
        PlacementDetail::OneNumaNode { nodes } => {
            format!("skipped: this host has {nodes} NUMA node, so no migration can cross one")
        }
        PlacementDetail::TooFewMigrations {
            migrations,
            at_least,
        } => format!(
            "skipped: {migrations} migrations seen between checkpoints, too few for a share \
             (at least {at_least})"
        ),
        PlacementDetail::CrossNode {
            crossed,
            migrations,
        } => format!(
            "{crossed} of {migrations} migrations seen between checkpoints crossed NUMA nodes"
        ),
    }
}

/// CPUs in the kernel's list form, `1-3,6`.
fn cpu_list(cpus: &[usize]) -> String {
    CpuListDisplay(&cpus.iter().copied().collect()).to_string()
}

/// The scheduler under test's sentence: its end, or a check across it.
fn scheduler(s: &SchedulerDetail) -> String {
    match s {
        SchedulerDetail::GapBeforeScxEnd { end } => format!(
            "the worst gap came before sched_ext {} BPF scheduler {:?} (seen at {} ms): under \
             the BPF scheduler",
            ended(end),
            end.scheduler,
            end.at_ms
        ),
        SchedulerDetail::GapAfterScxEnd { end } => format!(
            "the worst gap came after sched_ext {} BPF scheduler {:?} (seen at {} ms): under \
             the kernel's fair class, not the BPF scheduler",
            ended(end),
            end.scheduler,
            end.at_ms
        ),
        SchedulerDetail::AcrossScxEnd { end } => format!(
            "judged over the whole run, across sched_ext's end of BPF scheduler {:?} at {} ms: \
             the part after it ran under the kernel's fair class",
            end.scheduler, end.at_ms
        ),
        SchedulerDetail::SchedulerEnded {
            status,
            at_ms,
            sched_ext_exit,
        } => {
            let own = format!("the scheduler {status} at {at_ms} ms");
            let Some(e) = sched_ext_exit else {
                return own;
            };
            // The kernel's ejection leads; an unregistration follows the
            // process's own end, which caused it.
            let (first, then) = if e.error {
                (e.describe(), own)
            } else {
                (own, e.describe())
            };
            format!(
                "{first}, and {then}; the rest of the run ran under the kernel's fair class, and \
                 each failed check says which part of the run it judges"
            )
        }
        SchedulerDetail::SchedulerRan { command } => format!("{command:?} ran until the end"),
    }
}

/// What sched_ext did to the BPF scheduler.
fn ended(end: &ScxEnd) -> &'static str {
    if end.ejected {
        "ejected"
    } else {
        "disabled"
    }
}

/// The host monitor's sentence.
fn host(h: &HostDetail) -> String {
    match h {
        HostDetail::RqImbalance {
            at_ns,
            mean,
            samples,
        } => format!(
            "worst at {:.2} s (max − min nr_running across CPUs; mean {mean:.1} over {samples} \
             samples)",
            secs(*at_ns)
        ),
        HostDetail::RunnableWait {
            pid,
            comm,
            waited_ms,
            cpu,
            at_ns,
            waits,
            mean_ns,
            source,
        } => format!(
            "pid {pid} ({comm}) waited {waited_ms:.1} ms runnable before it got cpu {cpu}, at \
             {:.2} s (longest of {waits} waits on the host, mean {}; {source})",
            secs(*at_ns),
            fmt_ns(*mean_ns as f64)
        ),
    }
}

/// sched_ext's checks' sentence.
fn sched_ext(e: &SchedExtDetail) -> String {
    match e {
        SchedExtDetail::ScxRejected { rejected } => format!(
            "sched_ext's nr_rejected rose by {rejected} over the run (tasks the BPF scheduler \
             refused)"
        ),
        SchedExtDetail::ScxEvents {
            count,
            what,
            event,
            secs,
            per_s,
        } => format!("{count} {what} ({event}) in {secs:.1} s, {per_s:.1}/s"),
        SchedExtDetail::RqClockMoved { samples } => format!(
            "every busy CPU's run-queue clock moved from each of {samples} samples to the next"
        ),
        SchedExtDetail::RqClockStood {
            cpu,
            clock_ns,
            from_ns,
            to_ns,
            nr_running,
            curr_pid,
            samples,
        } => format!(
            "cpu {cpu}'s run-queue clock stood at {:.3} s from {:.2} s to {:.2} s of the run \
             with {nr_running} runnable task(s){} (longest of {samples} samples)",
            secs(*clock_ns),
            secs(*from_ns),
            secs(*to_ns),
            match curr_pid {
                Some(0) => {
                    " (its idle task on the CPU: runnable work waited on an idle CPU)".to_string()
                }
                Some(pid) => format!(" (pid {pid} on the CPU)"),
                None => String::new(),
            }
        ),
        SchedExtDetail::DsqDepths {
            dumps,
            local,
            other,
            held_max,
            longest_wait,
        } => dsq_depths(
            *dumps,
            (local.as_ref(), other.as_ref()),
            *held_max,
            longest_wait.as_ref(),
        ),
    }
}

/// `max_scx_local_dsq_depth`'s sentence: the deepest local DSQ, the
/// deepest other, the tasks held on none, the longest wait.
fn dsq_depths(
    dumps: u64,
    (local, other): (Option<&DsqDepth>, Option<&DsqDepth>),
    held_max: u32,
    longest_wait: Option<&DsqWaiter>,
) -> String {
    let at = |ns: u64| format!("{:.2} s", secs(ns));
    let mut text = match local {
        Some(m) => format!(
            "{} held {} queued task(s) at {}",
            dsq_name(m.dsq, m.cpu),
            m.tasks,
            at(m.at_ns)
        ),
        None => "no task waited on a local DSQ".into(),
    };
    text += &format!(" (deepest of {dumps} sched_ext dumps)");
    if let Some(m) = other {
        text += &format!(
            "; deepest other: {} with {} at {}",
            dsq_name(m.dsq, m.cpu),
            m.tasks,
            at(m.at_ns)
        );
    }
    if held_max > 0 {
        text += &format!("; the BPF scheduler held up to {held_max} waiting task(s) on no DSQ");
    }
    if let Some(w) = longest_wait {
        let place = w.dsq.map_or("held by the BPF scheduler".into(), |id| {
            format!("on {}", dsq_name(id, Some(w.cpu)))
        });
        text += &format!(
            "; longest wait: pid {} ({}) runnable {} ms on cpu {}, {place}, at {}",
            w.pid,
            w.comm,
            w.runnable_ms,
            w.cpu,
            at(w.at_ns)
        );
    }
    text
}

/// A DSQ's name: `cpu 3's local DSQ`, `the global DSQ`, `DSQ 0x0`.
fn dsq_name(dsq: u64, cpu: Option<u32>) -> String {
    match (dsq, cpu) {
        (DSQ_LOCAL, Some(c)) => format!("cpu {c}'s local DSQ"),
        (DSQ_GLOBAL, _) => "the global DSQ".into(),
        (id, _) => format!("DSQ {id:#x}"),
    }
}

/// A check over time's sentence.
fn series(s: &SeriesDetail) -> String {
    match s {
        SeriesDetail::Fell {
            metric,
            from,
            to,
            window,
            drops,
            intervals,
        } => fell(*metric, (*from, *to), window, (*drops, *intervals)),
        SeriesDetail::RateOutside {
            metric,
            rate,
            window,
            above,
            bound,
            outside,
            intervals,
        } => rate_outside(
            *metric,
            (*rate, window),
            (*above, *bound),
            (*outside, *intervals),
        ),
        SeriesDetail::Unsteady {
            metric,
            cv,
            window,
            intervals,
            mean,
            farthest,
            farthest_from_ns,
            farthest_to_ns,
        } => unsteady(
            *metric,
            (*cv, *mean),
            (window, *intervals),
            (*farthest, *farthest_from_ns, *farthest_to_ns),
        ),
        SeriesDetail::Stalled {
            metric,
            window,
            flat_ms,
            bound_ms,
        } => stalled(*metric, window, *flat_ms, *bound_ms),
        SeriesDetail::ConvergeRate {
            metric,
            rate,
            window,
            target,
            tolerance,
        } => converges(
            *metric,
            &format!("rate {}", metric.fmt_rate(*rate)),
            window,
            (&metric.fmt_rate(*target), *tolerance),
        ),
        SeriesDetail::ConvergeShare {
            metric,
            share,
            rate,
            total,
            window,
            target,
            tolerance,
        } => {
            let what = share_of(*metric, *share, *rate, *total);
            converges(
                *metric,
                &what,
                window,
                (&format!("share {target:.3}"), *tolerance),
            )
        }
    }
}

/// `nondecreasing`'s sentence: the first window where the counter fell.
fn fell(
    metric: Metric,
    (from, to): (u64, u64),
    window: &Span,
    (drops, n): (usize, usize),
) -> String {
    format!(
        "{} fell from {from} to {to} in {} ({drops} drop(s) in {n} intervals)",
        metric.name(),
        span(window)
    )
}

/// `rate_within`'s sentence: the window out of range, and how many were.
fn rate_outside(
    metric: Metric,
    (rate, window): (f64, &Span),
    (above, bound): (bool, f64),
    (outside, n): (usize, usize),
) -> String {
    format!(
        "{} rate {} in {}, {} {} ({outside} of {n} intervals out of range)",
        metric.name(),
        metric.fmt_rate(rate),
        span(window),
        if above { "above" } else { "below" },
        metric.fmt_rate(bound)
    )
}

/// `stall`'s sentence: the stretch without progress.
fn stalled(metric: Metric, window: &Span, flat_ms: f64, bound_ms: f64) -> String {
    format!(
        "{} did not move in {}: no progress for {flat_ms:.0} ms (at most {bound_ms:.0} ms \
         allowed)",
        metric.name(),
        span(window)
    )
}

/// `share 0.750 (0.75 CPU of 1.00 CPU)`.
fn share_of(metric: Metric, share: f64, rate: f64, total: f64) -> String {
    format!(
        "share {share:.3} ({} of {})",
        metric.fmt_rate(rate),
        metric.fmt_rate(total)
    )
}

/// `steady_within`'s sentence: the CV over the windows, and the window
/// farthest from their mean.
fn unsteady(
    metric: Metric,
    (cv, mean): (f64, f64),
    (window, intervals): (&Span, usize),
    (farthest, from_ns, to_ns): (f64, u64, u64),
) -> String {
    format!(
        "{} rate varied with CV {cv:.2} over {} ({intervals} intervals, mean {}); farthest from \
         the mean: {} in {}",
        metric.name(),
        span(window),
        metric.fmt_rate(mean),
        metric.fmt_rate(farthest),
        span(&Span { from_ns, to_ns })
    )
}

/// `converges_to`'s sentence: `work_units rate 10.0k/s over 2.50–3.00 s,
/// target 1.0k/s ± 10%`.
fn converges(metric: Metric, what: &str, window: &Span, (aim, tolerance): (&str, f64)) -> String {
    format!(
        "{} {what} over {}, target {aim} ± {:.0}%",
        metric.name(),
        span(window),
        tolerance * 100.0
    )
}

/// A window as text: `1.40–1.50 s`.
fn span(w: &Span) -> String {
    format!("{:.2}–{:.2} s", secs(w.from_ns), secs(w.to_ns))
}

/// ns as seconds.
fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

#[cfg(test)]
#[path = "detail_tests.rs"]
mod tests;
