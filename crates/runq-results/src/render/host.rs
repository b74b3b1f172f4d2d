//! The host monitor's lines under the workers' table: run-queue depths
//! and imbalance, the longest runnable wait, sched_ext.

use runq_common::text::{hanging, printable, wrap, LIST_WIDTH};
use runq_common::units::fmt_ns;
use runq_workload::series::host::{HostSchedExt, HostSeries, RqSummary, RunnableWait};

/// The most CPUs whose mean depth is listed one by one; more are shown
/// as their lowest and highest.
const LISTED_CPUS: usize = 8;

/// The host lines, wrapped within 100 columns; empty without a monitor.
/// A task's name (any process's, set with prctl) and the kernel's words
/// are printed through [`printable`].
pub fn host_lines(host: Option<&HostSeries>) -> String {
    let Some(h) = host else {
        return String::new();
    };
    let rq = match (&h.summary, &h.unavailable) {
        (Some(s), _) => run_queues(h, s),
        (None, Some(why)) => format!("run queues: unavailable ({why})"),
        (None, None) => "run queues: no sample".to_string(),
    };
    let stopped = h
        .stopped
        .as_ref()
        .map_or(String::new(), |s| format!(" (stopped: {s})"));
    let wait = match (&h.runnable_wait, &h.longest_runnable_wait_unavailable) {
        (Some(w), _) => runnable_wait(w),
        (None, Some(why)) => format!("longest runnable wait: unavailable ({why})"),
        (None, None) => "longest runnable wait: not measured".to_string(),
    };
    let text = format!(
        "host: {rq}{stopped}; {wait}; sched_ext: {}",
        sched_ext(h.sched_ext.as_ref())
    );
    let lines = wrap(&printable(&text), LIST_WIDTH - 6);
    hanging(&lines[0], &lines[1..], 6)
}

/// `run queues (debugfs sched/debug, 11 samples): depth mean …`.
fn run_queues(h: &HostSeries, s: &RqSummary) -> String {
    let per: Vec<(u32, f64)> = h
        .cpus
        .iter()
        .copied()
        .zip(s.depth_mean_per_cpu.iter().copied())
        .collect();
    let cpus = if per.len() <= LISTED_CPUS {
        let each: Vec<String> = per.iter().map(|(c, d)| format!("cpu{c} {d:.1}")).collect();
        each.join(", ")
    } else {
        let by = |a: &&(u32, f64), b: &&(u32, f64)| a.1.total_cmp(&b.1);
        let lo = per.iter().min_by(by).map_or((0, 0.0), |p| *p);
        let hi = per.iter().max_by(by).map_or((0, 0.0), |p| *p);
        format!(
            "lowest cpu{} {:.1}, highest cpu{} {:.1}",
            lo.0, lo.1, hi.0, hi.1
        )
    };
    format!(
        "run queues ({}, {} samples): depth mean {:.1} [{cpus}], max {}; \
         imbalance mean {:.1}, max {} at {:.2} s",
        h.source.as_deref().unwrap_or("?"),
        s.samples,
        s.depth_mean,
        s.depth_max,
        s.imbalance_mean,
        s.imbalance_max,
        s.imbalance_max_at_ns as f64 / 1e9
    )
}

/// `longest runnable wait 12.30ms (pid 1234 yes, cpu 1, at 2.10 s), mean
/// 45.0µs over 12,345 waits`.
fn runnable_wait(w: &RunnableWait) -> String {
    let f = &w.figures;
    if f.waits == 0 {
        return "longest runnable wait: no wait ended during the run".to_string();
    }
    let untracked = match f.untracked {
        0 => String::new(),
        n => format!(" ({} enqueues not tracked: table full)", thousands(n)),
    };
    format!(
        "longest runnable wait {} (pid {} {}, cpu {}, at {:.2} s), mean {} over {} waits{untracked}",
        fmt_ns(f.longest_ns as f64),
        f.pid,
        f.comm,
        f.cpu,
        f.at_ns as f64 / 1e9,
        fmt_ns(w.mean_ns as f64),
        thousands(f.waits)
    )
}

/// `12345` as `12,345`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `absent`, or the state, the scheduler and its nonzero counters.
fn sched_ext(x: Option<&HostSchedExt>) -> String {
    let Some(x) = x else {
        return "absent".to_string();
    };
    let mut out = if x.state_start == x.state_end {
        x.state_end.clone()
    } else {
        format!("{} (was {})", x.state_end, x.state_start)
    };
    if let Some(ops) = &x.ops {
        out += &format!(", ops {ops}");
    }
    if x.enabled > 0 {
        out += &format!(", enabled {} time(s) during the run", x.enabled);
    }
    out += &format!(", {} task(s) rejected", x.nr_rejected);
    if let Some(ev) = &x.events {
        let nonzero: Vec<String> = ev
            .iter()
            .filter(|(_, &v)| v > 0)
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        out += &match nonzero.is_empty() {
            true => ", events: none".to_string(),
            false => format!(", events: {}", nonzero.join(", ")),
        };
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series() -> HostSeries {
        let at_ns = vec![0, 500_000_000, 1_000_000_000];
        let nr_running = vec![vec![3, 3], vec![5, 1], vec![4, 2]];
        HostSeries {
            source: Some("debugfs sched/debug".into()),
            summary: runq_workload::series::host::summarize(&at_ns, &nr_running),
            cpus: vec![0, 1],
            at_ns,
            nr_running,
            longest_runnable_wait_unavailable: Some("needs root".into()),
            ..HostSeries::default()
        }
    }

    #[test]
    fn lines_stay_within_100_columns() {
        let text = host_lines(Some(&series()));
        assert!(
            text.starts_with("host: run queues (debugfs sched/debug, 3 samples)"),
            "{text}"
        );
        assert!(text.contains("[cpu0 4.0, cpu1 2.0], max 5"), "{text}");
        assert!(
            text.contains("imbalance mean 2.0, max 4 at 0.50 s"),
            "{text}"
        );
        assert!(text.contains("sched_ext: absent"), "{text}");
        assert!(text.contains("longest runnable wait: unavailable (needs root)"));
        assert!(text.lines().all(|l| l.chars().count() <= 100), "{text}");
    }

    #[test]
    fn the_longest_wait_names_task_cpu_time_and_mean() {
        use runq_workload::series::host::WaitFigures;
        let figures = WaitFigures {
            longest_ns: 12_300_000,
            pid: 1234,
            comm: "yes".into(),
            cpu: 1,
            at_ns: 2_100_000_000,
            waits: 12_345,
            sum_ns: 12_345 * 45_000,
            untracked: 0,
        };
        let h = HostSeries {
            runnable_wait: Some(RunnableWait::new("BPF".into(), figures)),
            ..series()
        };
        let text = host_lines(Some(&h)).replace("\n      ", " ");
        assert!(
            text.contains(
                "longest runnable wait 12.30ms (pid 1234 yes, cpu 1, at 2.10 s), \
                 mean 45.0µs over 12,345 waits;"
            ),
            "{text}"
        );
        assert_eq!(
            (thousands(0), thousands(999), thousands(1_000)),
            ("0".into(), "999".into(), "1,000".into())
        );
    }

    #[test]
    fn unavailable_says_why_and_no_figures() {
        let h = HostSeries {
            unavailable: Some("debugfs is not mounted and mounting it needs root".into()),
            ..HostSeries::default()
        };
        let text = host_lines(Some(&h));
        assert!(
            text.contains("run queues: unavailable (debugfs is not mounted"),
            "{text}"
        );
        assert!(!text.contains("depth"), "{text}");
        assert_eq!(host_lines(None), "");
    }
}
