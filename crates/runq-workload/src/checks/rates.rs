//! `max_throughput_cv` and `min_iteration_rate`: how evenly a group's
//! workers got through their work, and how fast the slowest one turned
//! its loop.

use crate::checks::detail::RateDetail;
use std::collections::BTreeMap;

use super::detail::Detail;
use crate::report::WorkerReport;

/// A worker's work units per second of its wall time.
fn work_rate(r: &WorkerReport) -> f64 {
    r.work_units as f64 * 1e9 / r.wall_time_ns.max(1) as f64
}

/// stddev / mean of `rates` (none negative); `None` for fewer than 2,
/// 0 when every rate is 0 (they are all equal).
fn cv(rates: &[f64]) -> Option<f64> {
    if rates.len() < 2 {
        return None;
    }
    let n = rates.len() as f64;
    let mean = rates.iter().sum::<f64>() / n;
    if mean <= 0.0 {
        return Some(0.0);
    }
    let var = rates.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
    Some(var.sqrt() / mean)
}

/// The workers of each role (a stream's senders and receivers, a
/// fan-out's messenger and receivers do different work by design). A
/// worker that never ran its loop counts, at a rate of 0.
fn by_role<'a>(reports: &[&'a WorkerReport]) -> BTreeMap<u8, Vec<&'a WorkerReport>> {
    let mut roles: BTreeMap<u8, Vec<&WorkerReport>> = BTreeMap::new();
    for r in reports {
        roles.entry(r.role).or_default().push(r);
    }
    roles
}

/// `max_throughput_cv`: the coefficient of variation of the live
/// workers' work rates within each role, the largest of the roles';
/// `None` when no role has two workers to compare.
pub(super) fn throughput_cv(reports: &[&WorkerReport]) -> Option<f64> {
    by_role(reports)
        .values()
        .filter_map(|members| cv(&members.iter().map(|r| work_rate(r)).collect::<Vec<_>>()))
        .reduce(f64::max)
}

/// `min_iteration_rate`: the slowest live worker's iterations per second
/// (0 for a group whose workers all died).
pub(super) fn slowest_iteration_rate(reports: &[&WorkerReport]) -> Option<f64> {
    let slowest = reports
        .iter()
        .map(|r| r.iterations as f64 * 1e9 / r.wall_time_ns.max(1) as f64)
        .fold(f64::INFINITY, f64::min);
    Some(if slowest.is_finite() { slowest } else { 0.0 })
}

/// The sentence under a FAIL of `max_throughput_cv`: the slowest and
/// fastest worker of the role whose rates vary most.
pub(super) fn explain_throughput_cv(reports: &[&WorkerReport]) -> Option<Detail> {
    let (_, members) = by_role(reports).into_iter().max_by(|a, b| {
        let cv_of = |m: &[&WorkerReport]| {
            cv(&m.iter().map(|r| work_rate(r)).collect::<Vec<_>>()).unwrap_or(0.0)
        };
        cv_of(&a.1).total_cmp(&cv_of(&b.1))
    })?;
    let slow = members
        .iter()
        .min_by(|a, b| work_rate(a).total_cmp(&work_rate(b)))?;
    let fast = members
        .iter()
        .max_by(|a, b| work_rate(a).total_cmp(&work_rate(b)))?;
    Some(Detail::Rate(RateDetail::WorkRates {
        workers: members.len(),
        slowest_worker: slow.tid,
        slowest_per_s: work_rate(slow),
        fastest_worker: fast.tid,
        fastest_per_s: work_rate(fast),
    }))
}

/// The sentence under a FAIL of `min_iteration_rate`: the slowest
/// worker's iterations.
pub(super) fn explain_iteration_rate(reports: &[&WorkerReport]) -> Option<Detail> {
    let slow = reports
        .iter()
        .min_by_key(|r| (r.iterations as u128 * 1_000_000_000) / r.wall_time_ns.max(1) as u128)?;
    Some(Detail::Rate(RateDetail::SlowestIterations {
        worker: slow.tid,
        iterations: slow.iterations,
        wall_ns: slow.wall_time_ns,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn worker(tid: u32, role: u8, units: u64, iterations: u64) -> WorkerReport {
        WorkerReport {
            tid,
            role,
            work_units: units,
            iterations,
            wall_time_ns: 2_000_000_000,
            ..Default::default()
        }
    }

    #[test]
    fn equal_workers_have_no_spread_and_an_outlier_raises_it() {
        let (a, b) = (worker(1, 0, 1000, 10), worker(2, 0, 1000, 10));
        assert_eq!(throughput_cv(&[&a, &b]), Some(0.0));
        let idle = [worker(4, 0, 0, 0), worker(5, 0, 0, 0)];
        assert_eq!(
            throughput_cv(&[&idle[0], &idle[1]]),
            Some(0.0),
            "equal at zero"
        );
        let c = worker(3, 0, 100, 10);
        let spread = throughput_cv(&[&a, &b, &c]).unwrap();
        // Rates 500, 500, 50: mean 350, sample stddev 259.8.
        assert!((spread - 0.742).abs() < 1e-3, "{spread}");
        let Some(Detail::Rate(RateDetail::WorkRates {
            workers: 3,
            slowest_worker: 3,
            slowest_per_s,
            ..
        })) = explain_throughput_cv(&[&a, &b, &c])
        else {
            panic!("the slowest of the three is worker 3");
        };
        assert!((slowest_per_s - 50.0).abs() < 1e-9, "{slowest_per_s}");
    }

    #[test]
    fn roles_are_compared_apart_and_a_lone_worker_is_not_judged() {
        let (tx, rx) = (worker(1, 0, 9000, 9), worker(2, 1, 10, 9));
        assert_eq!(throughput_cv(&[&tx, &rx]), None, "one worker per role");
        assert_eq!(throughput_cv(&[&tx]), None);
    }

    #[test]
    fn the_slowest_worker_sets_the_iteration_rate() {
        let (a, b) = (worker(1, 0, 1, 400), worker(2, 0, 1, 100));
        assert_eq!(slowest_iteration_rate(&[&a, &b]), Some(50.0));
        assert_eq!(slowest_iteration_rate(&[]), Some(0.0));
        assert_eq!(
            explain_iteration_rate(&[&a, &b]),
            Some(Detail::Rate(RateDetail::SlowestIterations {
                worker: 2,
                iterations: 100,
                wall_ns: 2_000_000_000,
            }))
        );
    }
}
