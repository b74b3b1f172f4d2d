//! One sentence under each FAIL of a group check: what was measured, on
//! which worker, so that a failed bound can be acted on without reading
//! the JSON.

use super::Observed;
use crate::gap::GapSource;
use crate::report::WorkerReport;

/// Type of a row's explanation: the sentence under its FAIL on `o`.
pub(super) type Explain = fn(&Observed<'_>) -> Option<String>;

/// `not_stuck`: the workers that died under a pipe partner, else which
/// workers died or did no work.
pub(super) fn not_stuck(o: &Observed<'_>) -> Option<String> {
    super::lost_partners(o.all).or_else(|| stuck(o))
}

/// `max_gap_ms`: the worker with the longest gap.
pub(super) fn max_gap(o: &Observed<'_>) -> Option<String> {
    gap(&o.live)
}

/// `setup_applied`: the workers whose setup failed.
pub(super) fn setup_applied(o: &Observed<'_>) -> Option<String> {
    setup_errors(&o.live)
}

/// `max_offcpu_spread_pct`: the extremes of the worst role.
pub(super) fn offcpu_spread_of_worst_role(o: &Observed<'_>) -> Option<String> {
    super::worst_role(&o.live).and_then(|(_, members)| offcpu_spread(&members))
}

/// The latency checks: what the figure was computed over.
pub(super) fn latency_samples(o: &Observed<'_>) -> Option<String> {
    Some(format!(
        "over {} samples of {} live workers",
        o.wakes.len(),
        o.live.len()
    ))
}

/// `min_work_rate`: the slowest worker.
pub(super) fn min_work_rate(o: &Observed<'_>) -> Option<String> {
    slowest(&o.live)
}

/// `max_migration_ratio`: migrations against checkpoints.
pub(super) fn migrations(o: &Observed<'_>) -> Option<String> {
    Some(format!(
        "{} migrations seen at {} checkpoints (one every 1024 work units)",
        o.live.iter().map(|r| r.migration_count).sum::<u64>(),
        o.live
            .iter()
            .map(|r| r.work_units / crate::telemetry::CHECK_PERIOD_UNITS)
            .sum::<u64>()
    ))
}

/// `min_numa_locality`: what the figure is.
pub(super) fn numa_locality(_: &Observed<'_>) -> Option<String> {
    Some("share of each worker's pages on its busiest NUMA node; the lowest worker's".into())
}

/// `max_throughput_cv`: the slowest and fastest worker of the worst role.
pub(super) fn throughput_cv(o: &Observed<'_>) -> Option<String> {
    super::rates::explain_throughput_cv(&o.live)
}

/// `min_iteration_rate`: the slowest worker's iterations.
pub(super) fn iteration_rate(o: &Observed<'_>) -> Option<String> {
    super::rates::explain_iteration_rate(&o.live)
}

/// Which workers died or did no work, and how: one entry per way, a
/// single worker by its tid, several as a count.
fn stuck(o: &Observed<'_>) -> Option<String> {
    let mut ways: Vec<(String, Vec<u32>)> = Vec::new();
    let group_did_work = super::stuck::group_did_work(o.all);
    for r in o.all {
        let Some(how) = super::stuck::stuck_reason(r, o.is_custom, group_did_work) else {
            continue;
        };
        match ways.iter_mut().find(|(k, _)| *k == how) {
            Some((_, tids)) => tids.push(r.tid),
            None => ways.push((how, vec![r.tid])),
        }
    }
    let lines: Vec<String> = ways
        .into_iter()
        .map(|(how, tids)| match tids.as_slice() {
            [tid] if *tid != 0 => format!("worker {tid} {how}"),
            _ => format!("{} workers {how}", tids.len()),
        })
        .collect();
    (!lines.is_empty()).then(|| at_most(&lines, 5))
}

/// The first `n` of `lines` joined, and how many more there are.
fn at_most(lines: &[String], n: usize) -> String {
    let mut text = lines[..lines.len().min(n)].join("; ");
    if lines.len() > n {
        text.push_str(&format!("; and {} more", lines.len() - n));
    }
    text
}

/// The worker with the longest gap, and what the gap is.
fn gap(live: &[&WorkerReport]) -> Option<String> {
    let w = live.iter().max_by_key(|r| r.max_gap_ms)?;
    let what = match w.max_gap_source {
        GapSource::RunDelay => "waited runnable without a CPU (kernel run delay)",
        GapSource::IterationTime => "spent in one iteration beyond what it planned",
    };
    Some(format!(
        "worker {} {what} for {} ms, {} ms into the run, on CPU {}",
        w.tid, w.max_gap_ms, w.max_gap_at_ms, w.max_gap_cpu
    ))
}

/// The most and the least off-CPU workers.
fn offcpu_spread(live: &[&WorkerReport]) -> Option<String> {
    let pct = |r: &&WorkerReport| r.off_cpu_ns as f64 * 100.0 / r.wall_time_ns.max(1) as f64;
    let most = live.iter().max_by(|a, b| pct(a).total_cmp(&pct(b)))?;
    let least = live.iter().min_by(|a, b| pct(a).total_cmp(&pct(b)))?;
    Some(format!(
        "worker {} was off CPU {:.1}% of its run, worker {} {:.1}%",
        most.tid,
        pct(most),
        least.tid,
        pct(least)
    ))
}

/// The slowest worker's rate.
fn slowest(live: &[&WorkerReport]) -> Option<String> {
    let rate = |r: &&WorkerReport| r.work_units as f64 * 1e9 / r.wall_time_ns.max(1) as f64;
    let w = live.iter().min_by(|a, b| rate(a).total_cmp(&rate(b)))?;
    Some(format!(
        "worker {} did {} work units in {:.2} s",
        w.tid,
        w.work_units,
        w.wall_time_ns as f64 / 1e9
    ))
}

/// The workers whose setup failed, and why.
fn setup_errors(live: &[&WorkerReport]) -> Option<String> {
    let lines: Vec<String> = live
        .iter()
        .filter_map(|r| Some(format!("worker {}: {}", r.tid, r.affinity_error.as_ref()?)))
        .collect();
    (!lines.is_empty()).then(|| at_most(&lines, 3))
}
