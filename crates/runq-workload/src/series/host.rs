//! The host monitor: every [`HOST_INTERVAL`] or so (every Nth snapshot),
//! each CPU's run-queue depth from debugfs `sched/debug`, summarized as
//! depth per CPU and imbalance (max − min depth at one sample); the
//! run-queue clocks' stalls from the same dump ([`super::rq_clock`]); the
//! sched_ext state and event counters from sysfs at the start and end of
//! the run, and, with a BPF scheduler enabled, its dispatch queues from
//! its debug dump ([`super::dsq`]); and, when a [`RunnableWaitProbe`] is given (the binary's is
//! BPF on the scheduler tracepoints, as root), the longest time any
//! runnable task on the host waited for a CPU.

use crate::checks::detail::HostDetail;
use crate::CheckId;
use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::check::unjudged;
use super::dsq::DsqSeries;
use super::rq_clock::RqClocks;
use crate::checks::{CheckResult, Detail, Op};

/// How often the host monitor samples, at most: less often when a read
/// costs more than 1% of this ([`super::host_monitor`]).
pub(crate) const HOST_INTERVAL: Duration = Duration::from_millis(500);

/// The host monitor's record of one run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HostSeries {
    /// Where the run-queue depths come from (`debugfs sched/debug`), or
    /// `None` when they could not be read.
    pub source: Option<String>,
    /// Why there are no run-queue depths, when there are none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
    /// Why sampling stopped before the end, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
    /// CPU time the monitor's thread spent, ns (not in `sampler_cpu_ns`).
    pub cpu_ns: u64,
    /// The CPUs, in the order of each sample's depths.
    pub cpus: Vec<u32>,
    /// When each sample was taken, ns from the start of the run.
    pub at_ns: Vec<u64>,
    /// Each sample's `nr_running` per CPU (the monitor's own thread not
    /// counted).
    pub nr_running: Vec<Vec<u32>>,
    /// The samples' summary, when there is a sample.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<RqSummary>,
    /// Runnable waits on the whole host over the run, when measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runnable_wait: Option<RunnableWait>,
    /// Why the runnable waits are not reported, when they are not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub longest_runnable_wait_unavailable: Option<String>,
    /// sched_ext over the run, `None` when the kernel has none.
    pub sched_ext: Option<HostSchedExt>,
    /// Each CPU's run-queue clock over the samples, when `sched/debug`
    /// gives it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rq_clock: Option<RqClocks>,
    /// Why there are no run-queue clocks, when sched/debug was read
    /// without them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rq_clock_unavailable: Option<String>,
    /// sched_ext's dispatch queues, from its debug dumps, when a BPF
    /// scheduler was enabled at the start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dsq: Option<DsqSeries>,
    /// Why there are no dumps of the dispatch queues, when there are none
    /// though a BPF scheduler was enabled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dsq_unavailable: Option<String>,
}

/// Measures how long runnable tasks wait for a CPU, on the whole host
/// (the `runq` binary's is BPF, from runq-hud; runq-workload needs none).
pub trait RunnableWaitProbe {
    /// Where the figures come from, for the report.
    fn source(&self) -> String;
    /// Counts the waits that end from now on (the run's start).
    fn begin(&mut self) -> Result<(), String>;
    /// The waits since [`RunnableWaitProbe::begin`].
    fn read(&mut self) -> Result<WaitFigures, String>;
}

/// What a [`RunnableWaitProbe`] measured.
pub use runq_kernel::runnable_wait::WaitFigures;

/// Runnable waits over the run, as reported.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunnableWait {
    /// Where the figures come from.
    pub source: String,
    /// The figures.
    #[serde(flatten)]
    pub figures: WaitFigures,
    /// The mean wait, ns (0 without a wait).
    pub mean_ns: u64,
}

impl RunnableWait {
    /// The report of `figures` from `source`, with their mean.
    pub fn new(source: String, figures: WaitFigures) -> RunnableWait {
        RunnableWait {
            source,
            mean_ns: figures.sum_ns.checked_div(figures.waits).unwrap_or(0),
            figures,
        }
    }
}

/// Run-queue depths over the run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RqSummary {
    /// Samples summarized.
    pub samples: u64,
    /// Mean depth over CPUs and samples.
    pub depth_mean: f64,
    /// Mean depth of each CPU, in `cpus` order.
    pub depth_mean_per_cpu: Vec<f64>,
    /// The deepest run queue seen.
    pub depth_max: u32,
    /// Mean imbalance (max − min depth across CPUs at one sample).
    pub imbalance_mean: f64,
    /// The largest imbalance.
    pub imbalance_max: u32,
    /// When the largest imbalance was first seen, ns from the start.
    pub imbalance_max_at_ns: u64,
}

/// sched_ext's state and counters over the run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HostSchedExt {
    /// `state` at the start of the run.
    pub state_start: String,
    /// `state` at the end.
    pub state_end: String,
    /// The scheduler loaded at the end (`root/ops`), if any.
    pub ops: Option<String>,
    /// `nr_rejected` over the run (end − start).
    pub nr_rejected: u64,
    /// `enable_seq` over the run: schedulers enabled during it.
    pub enabled: u64,
    /// `root/events` counters over the run; absent without a loaded
    /// scheduler or on kernels without the file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub events: Option<BTreeMap<String, u64>>,
}

/// Summarizes depth samples (one row per sample, one column per CPU).
pub fn summarize(at_ns: &[u64], rows: &[Vec<u32>]) -> Option<RqSummary> {
    let ncpu = rows.first()?.len();
    if ncpu == 0 {
        return None;
    }
    let n = rows.len() as f64;
    let mut per_cpu = vec![0.0; ncpu];
    let (mut depth_max, mut imb_sum) = (0, 0u64);
    let mut worst: Option<(u32, u64)> = None;
    for (row, &at) in rows.iter().zip(at_ns) {
        for (acc, &d) in per_cpu.iter_mut().zip(row) {
            *acc += f64::from(d);
        }
        let (lo, hi) = (row.iter().min()?, row.iter().max()?);
        depth_max = depth_max.max(*hi);
        let imb = hi - lo;
        imb_sum += u64::from(imb);
        if worst.is_none_or(|(w, _)| imb > w) {
            worst = Some((imb, at));
        }
    }
    let (imb_max, imb_at) = worst?;
    per_cpu.iter_mut().for_each(|v| *v /= n);
    Some(RqSummary {
        samples: rows.len() as u64,
        depth_mean: per_cpu.iter().sum::<f64>() / ncpu as f64,
        depth_mean_per_cpu: per_cpu,
        depth_max,
        imbalance_mean: imb_sum as f64 / n,
        imbalance_max: imb_max,
        imbalance_max_at_ns: imb_at,
    })
}

/// `max_rq_imbalance`: the largest run-queue imbalance against `bound`,
/// naming when it happened; a FAIL that says why when there was no sample.
pub(crate) fn judge_imbalance(bound: f64, host: Option<&HostSeries>) -> CheckResult {
    let result = |measured: f64, pass: bool, detail: Detail| CheckResult {
        check: CheckId::MaxRqImbalance,
        group: "host".into(),
        measured,
        op: Op::AtMost,
        bound,
        pass,
        cause: None,
        detail: vec![detail],
        not_judged: None,
    };
    let Some(sum) = host.and_then(|h| h.summary.as_ref()) else {
        let why = host.and_then(|h| h.unavailable.clone());
        let why = why.unwrap_or_else(|| "the host monitor took no sample".into());
        return unjudged(CheckId::MaxRqImbalance, "host", why);
    };
    let measured = f64::from(sum.imbalance_max);
    let detail = Detail::Host(HostDetail::RqImbalance {
        at_ns: sum.imbalance_max_at_ns,
        mean: sum.imbalance_mean,
        samples: sum.samples,
    });
    result(measured, measured <= bound, detail)
}

/// `max_runnable_wait_ms`: the longest runnable wait on the host against
/// `bound_ms`, naming the task, its CPU and when; a FAIL that says why
/// when it was not measured.
pub(crate) fn judge_runnable_wait(bound_ms: f64, host: Option<&HostSeries>) -> CheckResult {
    let result = |measured: f64, pass: bool, detail: Detail| CheckResult {
        check: CheckId::MaxRunnableWaitMs,
        group: "host".into(),
        measured,
        op: Op::AtMost,
        bound: bound_ms,
        pass,
        cause: None,
        detail: vec![detail],
        not_judged: None,
    };
    let Some(w) = host.and_then(|h| h.runnable_wait.as_ref()) else {
        let why = host.and_then(|h| h.longest_runnable_wait_unavailable.clone());
        let why = why.unwrap_or_else(|| "the host monitor did not run".into());
        let mut c = unjudged(CheckId::MaxRunnableWaitMs, "host", why);
        c.op = Op::AtMost;
        c.bound = bound_ms;
        return c;
    };
    let f = &w.figures;
    let measured = f.longest_ns as f64 / 1e6;
    let detail = Detail::Host(HostDetail::RunnableWait {
        pid: f.pid,
        comm: f.comm.clone(),
        waited_ms: measured,
        cpu: f.cpu,
        at_ns: f.at_ns,
        waits: f.waits,
        mean_ns: w.mean_ns,
        source: w.source.clone(),
    });
    result(measured, measured <= bound_ms, detail)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::series::host_monitor::delta;

    fn host(rows: Vec<Vec<u32>>) -> HostSeries {
        let at_ns: Vec<u64> = (0..rows.len() as u64).map(|i| i * 500_000_000).collect();
        HostSeries {
            summary: summarize(&at_ns, &rows),
            cpus: vec![0, 1, 2],
            at_ns,
            nr_running: rows,
            ..HostSeries::default()
        }
    }

    #[test]
    fn summary_math() {
        let h = host(vec![
            vec![2, 2, 2],
            vec![4, 0, 1],
            vec![3, 1, 2],
            vec![5, 1, 3],
        ]);
        let s = h.summary.unwrap();
        assert_eq!(s.samples, 4);
        assert_eq!(s.depth_mean_per_cpu, vec![3.5, 1.0, 2.0]);
        assert!((s.depth_mean - 6.5 / 3.0).abs() < 1e-9);
        assert_eq!(s.depth_max, 5);
        assert_eq!(s.imbalance_mean, 10.0 / 4.0); // 0, 4, 2, 4
                                                  // The first sample with the largest imbalance names the time.
        assert_eq!((s.imbalance_max, s.imbalance_max_at_ns), (4, 500_000_000));
        assert_eq!(summarize(&[], &[]), None);
    }

    #[test]
    fn imbalance_check_passes_fails_and_says_when() {
        let h = host(vec![vec![2, 2, 2], vec![4, 0, 1]]);
        let pass = judge_imbalance(4.0, Some(&h));
        assert!(pass.pass && pass.measured == 4.0);
        let fail = judge_imbalance(3.0, Some(&h));
        assert!(!fail.pass);
        assert_eq!(
            fail.detail,
            [Detail::Host(HostDetail::RqImbalance {
                at_ns: 500_000_000,
                mean: 2.0,
                samples: 2,
            })]
        );
        let none = HostSeries {
            unavailable: Some("debugfs is not mounted and mounting it needs root".into()),
            ..HostSeries::default()
        };
        let not_judged = judge_imbalance(3.0, Some(&none));
        assert!(!not_judged.pass);
        assert!(not_judged.not_judged.unwrap().contains("needs root"));
        assert!(!judge_imbalance(3.0, None).pass);
    }

    #[test]
    fn runnable_wait_check_names_the_task_cpu_and_time() {
        let figures = WaitFigures {
            longest_ns: 12_300_000,
            pid: 1234,
            comm: "yes".into(),
            cpu: 1,
            at_ns: 2_100_000_000,
            waits: 4,
            sum_ns: 12_480_000,
            untracked: 0,
        };
        let h = HostSeries {
            runnable_wait: Some(RunnableWait::new("BPF".into(), figures)),
            ..HostSeries::default()
        };
        assert_eq!(h.runnable_wait.as_ref().unwrap().mean_ns, 3_120_000);
        let pass = judge_runnable_wait(12.3, Some(&h));
        assert!(pass.pass && (pass.measured - 12.3).abs() < 1e-9, "{pass:?}");
        let fail = judge_runnable_wait(10.0, Some(&h));
        assert!(!fail.pass);
        assert_eq!(
            fail.detail,
            [Detail::Host(HostDetail::RunnableWait {
                pid: 1234,
                comm: "yes".into(),
                waited_ms: 12.3,
                cpu: 1,
                at_ns: 2_100_000_000,
                waits: 4,
                mean_ns: 3_120_000,
                source: "BPF".into(),
            })]
        );
        let none = HostSeries {
            longest_runnable_wait_unavailable: Some("loading BPF programs needs root".into()),
            ..HostSeries::default()
        };
        let not_judged = judge_runnable_wait(10.0, Some(&none));
        assert!(!not_judged.pass);
        assert!(not_judged.not_judged.unwrap().contains("needs root"));
        assert!(!judge_runnable_wait(10.0, None).pass);
        assert_eq!(
            RunnableWait::new(String::new(), WaitFigures::default()).mean_ns,
            0
        );
    }

    #[test]
    fn event_deltas_count_new_counters_from_zero() {
        let end: BTreeMap<String, u64> = [("A".into(), 7), ("B".into(), 2)].into();
        let start: BTreeMap<String, u64> = [("A".into(), 5)].into();
        let d = delta(&end, Some(&start));
        assert_eq!((d["A"], d["B"]), (2, 2));
    }
}
