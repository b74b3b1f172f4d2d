//! The text report of one run ([`RunOutcome`]): the per-group table, what
//! its wake columns measure, the host's lines, lost workers and a dead
//! scheduler, the checks and the verdict. Every name and line that came
//! from outside runq (group and scenario names, a scheduler's stderr, the
//! kernel's log) is printed through [`printable`].

use std::fmt::Write;

use runq_common::color::paint;
use runq_common::table::{Align, Table};
use runq_common::text::printable;
use runq_common::units::{self, fmt_rate};

use runq_workload::{Placement, RunOutcome, WakeFigure, WorkerExitInfo, WorkerReport};

/// Formats ns with an SI unit (ns, µs, ms, s).
fn fmt_ns(ns: u64) -> String {
    units::fmt_ns(ns as f64)
}

fn opt_ns(v: Option<u64>) -> String {
    v.map_or_else(|| "-".to_string(), fmt_ns)
}

/// A latency figure, marked `*` when it is not a wake-up latency; `-`
/// when the group has no sample.
fn wake_cell(v: Option<u64>, figure: WakeFigure) -> String {
    match v {
        Some(ns) if !figure.is_wake_latency() => format!("{}*", fmt_ns(ns)),
        _ => opt_ns(v),
    }
}

/// The per-group table.
fn group_table(o: &RunOutcome) -> Table {
    let mut t = Table::new(&[
        ("group", Align::Left),
        ("type", Align::Left),
        ("workers", Align::Right),
        ("work/s", Align::Right),
        ("iter/s", Align::Right),
        ("off-cpu", Align::Right),
        ("wake p50", Align::Right),
        ("wake p99", Align::Right),
        ("wake max", Align::Right),
        ("migr", Align::Right),
        ("max gap", Align::Right),
    ]);
    for g in &o.groups {
        t.row(vec![
            g.name.clone(),
            g.work_type.clone(),
            g.workers.to_string(),
            fmt_rate(g.work_rate_per_s),
            fmt_rate(g.iterations_per_s),
            format!("{:.1}%", g.off_cpu_pct),
            wake_cell(g.wake_p50_ns, g.wake_figure),
            wake_cell(g.wake_p99_ns, g.wake_figure),
            wake_cell(g.wake_max_ns, g.wake_figure),
            g.migrations.to_string(),
            format!("{}ms", g.max_gap_ms),
        ]);
    }
    t
}

/// The requests of group `group_idx` due and not taken when the run
/// stopped, as the holder of its arrival clock counted them.
fn backlog(o: &RunOutcome, group_idx: usize) -> u64 {
    o.reports
        .iter()
        .filter(|r| r.group_idx == group_idx)
        .filter_map(|r| r.backlog)
        .sum()
}

/// What a type's request latency runs from and to.
fn request_meaning(work_type: &str) -> &'static str {
    match work_type {
        "Taobench" => {
            "from a client's first post to its operation's end, a miss's store wait and set \
             included"
        }
        _ => "from a worker's wake to its request's end, think time included, as schbench's",
    }
}

/// Taobench's throughput after its request latencies: ops/s and ops per
/// CPU-second of the group's live workers; empty for the other types.
fn ops_note(o: &RunOutcome, group_idx: usize, work_type: &str) -> String {
    if work_type != "Taobench" {
        return String::new();
    }
    let live: Vec<&WorkerReport> = o
        .reports
        .iter()
        .filter(|r| r.group_idx == group_idx && r.exit_info.is_none())
        .collect();
    runq_workload::taobench_ops(&live).map_or_else(String::new, |f| {
        format!(
            "; {} ops/s, {:.0} ops per CPU-second",
            fmt_rate(f.ops_per_s),
            f.ops_per_cpu_s
        )
    })
}

/// NetTraffic's throughput: the bytes and messages a second that arrived
/// (see `runq_workload::net_figures`); empty for the other types.
fn net_note(o: &RunOutcome, group_idx: usize, work_type: &str) -> String {
    if work_type != "NetTraffic" {
        return String::new();
    }
    let live: Vec<&WorkerReport> = o
        .reports
        .iter()
        .filter(|r| r.group_idx == group_idx && r.exit_info.is_none())
        .collect();
    runq_workload::net_figures(&live).map_or_else(String::new, |f| {
        format!(
            "; {}B/s and {} messages/s arrived",
            fmt_rate(f.bytes_per_s),
            fmt_rate(f.messages_per_s)
        )
    })
}

/// One line per marked group saying what its wake columns measure.
fn render_wake_legend(out: &mut String, o: &RunOutcome) {
    for g in &o.groups {
        let note: String = match g.wake_figure {
            WakeFigure::Latency | WakeFigure::None => continue,
            WakeFigure::RequestLatency => format!(
                "{}; work/s is requests served; {} due but not taken at the stop",
                g.wake_figure.meaning(),
                backlog(o, g.group_idx)
            ),
            other => format!(
                "{}{}",
                other.meaning(),
                net_note(o, g.group_idx, &g.work_type)
            ),
        };
        if g.wake_total > 0 {
            let _ = writeln!(
                out,
                "* {}: {}: {}",
                printable(&g.name),
                g.wake_figure.label(),
                printable(&note)
            );
        }
    }
    for g in &o.groups {
        if let (Some(p50), Some(p99)) = (g.request_p50_ns, g.request_p99_ns) {
            let _ = writeln!(
                out,
                "{}: request latency p50 {} p99 {} ({}){}",
                printable(&g.name),
                fmt_ns(p50),
                fmt_ns(p99),
                request_meaning(&g.work_type),
                ops_note(o, g.group_idx, &g.work_type)
            );
        }
    }
}

/// The report printed after a run (`color`: ANSI colours).
pub fn outcome(o: &RunOutcome, color: bool) -> String {
    let mut out = String::new();
    let workers: usize = o.groups.iter().map(|g| g.workers).sum();
    let place = match &o.placement {
        Placement::Cgroups { run_id, .. } => format!("cgroups runq/{run_id}"),
        Placement::Unplaced { .. } => "no cgroups".to_string(),
    };
    let _ = writeln!(
        out,
        "scenario {}: {} workers, ran {:.2}s, {} (spawn+start {}, stop+collect {})",
        printable(&o.scenario),
        workers,
        o.run_ns as f64 / 1e9,
        place,
        fmt_ns(o.spawn_ns),
        fmt_ns(o.collect_ns)
    );
    if let Some(s) = &o.scheduler {
        let bpf = match (&s.sched_ext_ops, &s.sched_ext_state) {
            (Some(ops), _) => format!(" (sched_ext ran BPF scheduler {ops:?})"),
            (None, Some(state)) => format!(" (sched_ext {})", printable(state)),
            (None, None) => String::new(),
        };
        let _ = writeln!(
            out,
            "scheduler {:?}: pid {}, ready after {}ms{bpf}; {}",
            s.command,
            s.pid,
            s.ready_ms,
            printable(&s.stopped)
        );
    }
    out.push_str(&group_table(o).render(|h| paint(h, 1, color)));
    render_wake_legend(&mut out, o);
    let host = o.series.as_ref().and_then(|s| s.host.as_ref());
    out.push_str(&super::host::host_lines(host));
    out.push_str(&super::instrument::instrument_line(
        o.host_load.as_ref(),
        &o.recorder,
    ));
    render_failures(&mut out, o, color);
    render_checks(&mut out, o, color);
    if o.interrupted {
        let _ = writeln!(out, "{}", paint("interrupted: partial results", 33, color));
    }
    out
}

/// One line per way workers were lost: a single worker by its tid, several
/// that failed the same way as a count.
fn lost_worker_lines(reports: &[WorkerReport]) -> Vec<String> {
    let mut ways: Vec<(String, Vec<u32>)> = Vec::new();
    for r in reports {
        let Some(info) = &r.exit_info else { continue };
        let mut how = match info {
            WorkerExitInfo::NotStarted(why) => format!("never started: {why}"),
            other => format!("sent no report: {other}"),
        };
        if let Some(e) = &r.start_error {
            let _ = write!(how, " ({e})");
        }
        let key = format!("(group {}) {how}", r.group_idx);
        match ways.iter_mut().find(|(k, _)| *k == key) {
            Some((_, tids)) => tids.push(r.tid),
            None => ways.push((key, vec![r.tid])),
        }
    }
    ways.into_iter()
        .map(|(key, tids)| match tids.as_slice() {
            [tid] if *tid != 0 => format!("worker {tid} {key}"),
            _ => format!("{} workers {key}", tids.len()),
        })
        .collect()
}

/// Workers that sent no report, a run error and a dead scheduler, in red.
/// Workers that failed the same way share one line (2,000 workers that
/// were never started are one line, not 2,000).
fn render_failures(out: &mut String, o: &RunOutcome, color: bool) {
    for line in lost_worker_lines(&o.reports) {
        let _ = writeln!(out, "{}", paint(&printable(&line), 31, color));
    }
    if let Some(e) = &o.run_error {
        let line = format!("run ended early: {}", printable(e));
        let _ = writeln!(out, "{}", paint(&line, 31, color));
    }
    if let Some(d) = &o.scheduler_death {
        let line = match d.still_running() {
            true => format!("sched_ext let the scheduler go at {}ms", d.at_ms),
            false => format!("the scheduler died at {}ms", d.at_ms),
        };
        let line = format!("{line}: {}", printable(&d.status));
        let _ = writeln!(out, "{}", paint(&line, 31, color));
    }
    // The watchdog's signals, whether the scheduler died of them or not.
    for r in o.reports.iter().filter(|r| r.watchdog.is_some()) {
        let w = r.watchdog.unwrap_or_default();
        let group = o.groups.iter().find(|g| g.group_idx == r.group_idx);
        let name = printable(group.map_or("?", |g| g.name.as_str()));
        let _ = writeln!(
            out,
            "  watchdog: worker {} ({name}) was kept from running for {} ms and signalled \
             the scheduler (SIGUSR2) {} ms into its loop",
            r.tid, w.stall_ms, w.at_ms
        );
    }
    if let Some(d) = &o.scheduler_death {
        for l in &d.stderr {
            let _ = writeln!(out, "  stderr: {}", printable(l));
        }
        if d.stderr_lines > d.stderr.len() as u64 {
            let _ = writeln!(
                out,
                "  ({} of {} stderr lines shown: error lines first, then the last)",
                d.stderr.len(),
                d.stderr_lines
            );
        }
        for l in &d.kernel_log {
            let _ = writeln!(out, "  kernel: {}", printable(l));
        }
    }
    for line in state_dump_lines(o) {
        let _ = writeln!(out, "  {line}");
    }
}

/// One line per state dump of the scheduler: when, where it went, and
/// what it holds or misses.
fn state_dump_lines(o: &RunOutcome) -> Vec<String> {
    let Some(s) = &o.scheduler else {
        return Vec::new();
    };
    s.state_dumps
        .iter()
        .map(|d| {
            let file = d
                .file
                .as_ref()
                .map_or_else(|| "not written".into(), |f| f.display().to_string());
            let mut parts = Vec::new();
            if let Some(t) = &d.kernel_trigger {
                parts.push(format!(
                    "the kernel's dump ({} lines, {:?})",
                    d.kernel_lines,
                    printable(t)
                ));
            }
            if d.maps > 0 {
                parts.push(format!("{} BPF maps ({} entries)", d.maps, d.map_entries));
            }
            parts.extend(d.missing.iter().map(|m| printable(m).into_owned()));
            format!(
                "scheduler state ({}, {} ms): {}: {}",
                d.moment.words(),
                d.at_ms,
                printable(&file),
                parts.join("; ")
            )
        })
        .collect()
}

/// The checks table and the verdict line.
fn render_checks(out: &mut String, o: &RunOutcome, color: bool) {
    if o.checks.is_empty() {
        return;
    }
    let _ = writeln!(out);
    for c in &o.checks {
        let (word, code) = if c.pass { ("PASS", 32) } else { ("FAIL", 31) };
        let _ = writeln!(
            out,
            "{} {:<24} {:<12} {:>12} {} {}",
            paint(word, code, color),
            printable(&c.check.to_string()),
            printable(&c.group),
            units::fmt_measure(c.measured),
            c.op,
            units::fmt_measure(c.bound)
        );
        if let (false, Some(d)) = (c.pass, detail_of(c)) {
            let _ = writeln!(out, "     {}", printable(&d));
        }
        if let (false, Some(cause)) = (c.pass, &c.cause) {
            render_cause(out, cause, &c.check);
        }
    }
    for c in &o.skipped_checks {
        let _ = writeln!(
            out,
            "{} {:<24} {:<12} {}",
            paint("SKIP", 33, color),
            printable(&c.check.to_string()),
            printable(&c.group),
            printable(&c.reason)
        );
    }
    if o.verdict == runq_workload::Verdict::Indeterminate {
        let _ = writeln!(out, "{}", paint(INDETERMINATE_NOTE, 33, color));
    }
    let (word, code) = verdict_word(o.verdict);
    let _ = writeln!(out, "verdict: {}", paint(word, code, color));
}

/// What an INDETERMINATE verdict means, under it.
pub const INDETERMINATE_NOTE: &str = "load outside the run can account for every failed check: \
     run it again on a quieter host to decide PASS or FAIL";

/// The verdict's word and its colour code.
pub fn verdict_word(v: runq_workload::Verdict) -> (&'static str, u8) {
    match v {
        runq_workload::Verdict::Pass => ("PASS", 32),
        runq_workload::Verdict::Fail => ("FAIL", 31),
        runq_workload::Verdict::Interrupted => ("INTERRUPTED", 33),
        runq_workload::Verdict::Indeterminate => ("INDETERMINATE", 33),
    }
}

/// The sentence under a check: its detail, or why it could not be
/// judged.
pub fn detail_of(c: &runq_workload::CheckResult) -> Option<String> {
    super::details_sentence(&c.detail).or_else(|| {
        c.not_judged
            .as_ref()
            .map(|why| format!("not judged: {why}"))
    })
}

/// A failed check's cause, one labelled line each, under its detail.
fn render_cause(out: &mut String, cause: &runq_workload::Cause, check: &runq_workload::CheckId) {
    if let Some(m) = super::mechanisms_sentence(&cause.mechanism) {
        let _ = writeln!(out, "     cause: {}", printable(&m));
    }
    if let Some(l) = &cause.outside_load {
        let line = super::outside_load_sentence(l, check);
        let _ = writeln!(out, "     outside load: {}", printable(&line));
    }
    if let Some(n) = &cause.next_step {
        let line = super::next_step_sentence(n);
        let _ = writeln!(out, "     next: {}", printable(&line));
    }
    if let Some(acc) = &cause.recorder {
        let line = super::recorder_sentence(acc);
        let _ = writeln!(out, "     {}", printable(&line));
    }
    if let Some(why) = &cause.no_recorder {
        let line = crate::evidence::headline::no_recorder(why);
        let _ = writeln!(out, "     {}", printable(&line));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overshoot_figures_are_marked_and_latencies_are_not() {
        assert_eq!(wake_cell(Some(1_500), WakeFigure::Latency), "1.5µs");
        assert_eq!(wake_cell(Some(1_500), WakeFigure::SleepOvershoot), "1.5µs*");
        assert_eq!(wake_cell(Some(1_500), WakeFigure::Mixed), "1.5µs*");
        assert_eq!(wake_cell(Some(1_500), WakeFigure::RequestLatency), "1.5µs*");
        assert_eq!(wake_cell(None, WakeFigure::SleepOvershoot), "-");
        assert_eq!(wake_cell(Some(1_500), WakeFigure::YieldWait), "1.5µs*");
        assert_eq!(wake_cell(Some(1_500), WakeFigure::IoLatency), "1.5µs*");
        assert_eq!(wake_cell(Some(1_500), WakeFigure::LockWait), "1.5µs*");
        assert_eq!(wake_cell(None, WakeFigure::None), "-");
    }
}
