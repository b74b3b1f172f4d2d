//! What is stated under each FAIL of a group check: what was measured,
//! on which worker, so that a failed bound can be acted on without
//! reading the JSON (as [`Detail`]s; runq-results words them).

use super::detail::{Detail, SetupError, StuckWay};
use super::Observed;
use crate::checks::detail::{GroupDetail, RateDetail};
use crate::report::WorkerReport;

/// Type of a row's explanation: what is stated under its FAIL on `o`.
pub(super) type Explain = fn(&Observed<'_>) -> Option<Detail>;

/// `not_stuck`: the workers that died under a pipe partner, else which
/// workers died or did no work.
pub(super) fn not_stuck(o: &Observed<'_>) -> Option<Detail> {
    super::lost_partners(o.all).or_else(|| stuck(o))
}

/// `max_gap_ms`: the worker with the longest gap.
pub(super) fn max_gap(o: &Observed<'_>) -> Option<Detail> {
    let w = o.live.iter().max_by_key(|r| r.max_gap_ms)?;
    Some(Detail::Group(GroupDetail::Gap {
        worker: w.tid,
        source: w.max_gap_source,
        gap_ms: w.max_gap_ms,
        at_ms: w.max_gap_at_ms,
        cpu: w.max_gap_cpu,
    }))
}

/// `setup_applied`: the workers whose setup failed, and why.
pub(super) fn setup_applied(o: &Observed<'_>) -> Option<Detail> {
    let errors: Vec<SetupError> = o
        .live
        .iter()
        .filter_map(|r| {
            Some(SetupError {
                worker: r.tid,
                error: r.affinity_error.clone()?,
            })
        })
        .collect();
    (!errors.is_empty()).then_some(Detail::Group(GroupDetail::SetupFailed { errors }))
}

/// `max_offcpu_spread_pct`: the most and the least off-CPU workers of
/// the worst role.
pub(super) fn offcpu_spread_of_worst_role(o: &Observed<'_>) -> Option<Detail> {
    let (_, live) = super::worst_role(&o.live)?;
    let pct = |r: &&WorkerReport| r.off_cpu_ns as f64 * 100.0 / r.wall_time_ns.max(1) as f64;
    let most = live.iter().max_by(|a, b| pct(a).total_cmp(&pct(b)))?;
    let least = live.iter().min_by(|a, b| pct(a).total_cmp(&pct(b)))?;
    Some(Detail::Group(GroupDetail::OffCpuSpread {
        most_worker: most.tid,
        most_pct: pct(most),
        least_worker: least.tid,
        least_pct: pct(least),
    }))
}

/// The latency checks: what the figure was computed over.
pub(super) fn latency_samples(o: &Observed<'_>) -> Option<Detail> {
    Some(Detail::Group(GroupDetail::LatencySamples {
        samples: o.wakes.len(),
        live_workers: o.live.len(),
    }))
}

/// `min_work_rate`: the slowest worker's rate.
pub(super) fn min_work_rate(o: &Observed<'_>) -> Option<Detail> {
    let rate = |r: &&WorkerReport| r.work_units as f64 * 1e9 / r.wall_time_ns.max(1) as f64;
    let w = o.live.iter().min_by(|a, b| rate(a).total_cmp(&rate(b)))?;
    Some(Detail::Rate(RateDetail::SlowestWorker {
        worker: w.tid,
        work_units: w.work_units,
        wall_ns: w.wall_time_ns,
    }))
}

/// `max_migration_ratio`: migrations against checkpoints.
pub(super) fn migrations(o: &Observed<'_>) -> Option<Detail> {
    Some(Detail::Rate(RateDetail::Migrations {
        migrations: o.live.iter().map(|r| r.migration_count).sum(),
        checkpoints: o
            .live
            .iter()
            .map(|r| r.work_units / crate::telemetry::CHECK_PERIOD_UNITS)
            .sum(),
    }))
}

/// `min_numa_locality`: what the figure is.
pub(super) fn numa_locality(_: &Observed<'_>) -> Option<Detail> {
    Some(Detail::Rate(RateDetail::NumaLocality))
}

/// `max_throughput_cv`: the slowest and fastest worker of the worst role.
pub(super) fn throughput_cv(o: &Observed<'_>) -> Option<Detail> {
    super::rates::explain_throughput_cv(&o.live)
}

/// `min_iteration_rate`: the slowest worker's iterations.
pub(super) fn iteration_rate(o: &Observed<'_>) -> Option<Detail> {
    super::rates::explain_iteration_rate(&o.live)
}

/// Which workers died or did no work, and how: one entry per way (ways
/// that read the same count together).
fn stuck(o: &Observed<'_>) -> Option<Detail> {
    let mut ways: Vec<StuckWay> = Vec::new();
    let group_did_work = super::stuck::group_did_work(o.all);
    for r in o.all {
        let Some(how) = super::stuck::stuck_reason(r, o.is_custom, group_did_work) else {
            continue;
        };
        match ways.iter_mut().find(|w| w.how.same_as(&how)) {
            Some(w) => w.workers.push(r.tid),
            None => ways.push(StuckWay {
                workers: vec![r.tid],
                how,
            }),
        }
    }
    (!ways.is_empty()).then_some(Detail::Group(GroupDetail::Stuck { ways }))
}
