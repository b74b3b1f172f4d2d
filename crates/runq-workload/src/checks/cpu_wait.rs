//! How much of a group's time its workers spent runnable without a CPU,
//! over the whole run or over its longest stall: load outside the run can
//! only delay a worker by keeping it off a CPU it waits for, so a delay
//! during which the group hardly waited for a CPU (a partner stopped, a
//! lock held, a sleep) is not the load's.

use crate::report::WorkerReport;
use crate::series::{GroupSeries, Metric};

/// Below this share of their time spent waiting for a CPU, a group's
/// delays are not the load's.
pub const MIN_WAIT_SHARE: f64 = 0.05;

/// The share of the workers' wall time spent runnable without a CPU
/// (schedstat run delay); `None` without wall time.
pub fn run_wait_share(reports: &[&WorkerReport]) -> Option<f64> {
    let wall: u64 = reports.iter().map(|r| r.wall_time_ns).sum();
    let waited: u64 = reports.iter().map(|r| r.schedstat_run_delay_ns).sum();
    (wall > 0).then(|| waited as f64 / wall as f64)
}

/// Over the longest span in which `metric` did not move: its length and
/// the share of it the group's `workers` spent waiting for a CPU; `None`
/// when nothing stalled between two snapshots or run delay was not
/// recorded.
pub fn stall_wait(g: &GroupSeries, metric: Metric, workers: usize) -> Option<(u64, f64)> {
    let values = g.values(metric)?;
    let delay = g.run_delay_ns.as_deref()?;
    let n = g.at_ns.len().min(values.len()).min(delay.len());
    let (mut best, mut start) = (None::<(usize, usize)>, 0);
    for i in 1..n {
        if values[i] != values[start] {
            start = i;
        } else if best.is_none_or(|(a, b)| g.at_ns[i] - g.at_ns[start] > g.at_ns[b] - g.at_ns[a]) {
            best = Some((start, i));
        }
    }
    let (a, b) = best?;
    let span = g.at_ns[b] - g.at_ns[a];
    let waited = delay[b].saturating_sub(delay[a]) as f64;
    Some((span, waited / (span.max(1) as f64 * workers.max(1) as f64)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stall_asleep_is_not_a_wait_for_a_cpu() {
        let ms = 1_000_000;
        let g = GroupSeries {
            group: "pipes".into(),
            at_ns: vec![0, 100 * ms, 200 * ms, 1200 * ms, 2200 * ms, 2300 * ms],
            work_units: vec![0, 10, 20, 20, 20, 30],
            iterations: vec![0; 6],
            cpu_time_ns: None,
            run_delay_ns: Some(vec![0, ms, 2 * ms, 3 * ms, 4 * ms, 20 * ms]),
        };
        let (span, share) = stall_wait(&g, Metric::WorkUnits, 2).unwrap();
        assert_eq!(span, 2000 * ms);
        assert!(share < 0.001, "{share}");
        let starved = GroupSeries {
            run_delay_ns: Some(vec![0, ms, 2 * ms, 1002 * ms, 2002 * ms, 2003 * ms]),
            ..g
        };
        let (_, share) = stall_wait(&starved, Metric::WorkUnits, 2).unwrap();
        assert!((share - 0.5).abs() < 1e-3, "{share}");
    }
}
