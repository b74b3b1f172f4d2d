//! Checks on worker reports and the run's verdict.
//!
//! Each check has a documented default and can be changed or disabled per
//! scenario (`[checks]` in a scenario file). Checks are evaluated per group;
//! every result carries the measured value beside its bound.

use serde::{Deserialize, Serialize};

use crate::report::WorkerReport;
use crate::summary::percentile;

/// Bounds of the checks. `None` disables a check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CheckConfig {
    /// Every worker did some work and sent a report. Default: on.
    pub not_stuck: bool,
    /// Longest gap between checkpoints of any worker, ms. Default: 2000.
    pub max_gap_ms: Option<u64>,
    /// Largest difference in off-CPU share between the workers of a group,
    /// percentage points. Default: 50.
    pub max_offcpu_spread_pct: Option<f64>,
    /// p99 wake latency of a group, µs. Default: 100000 (100 ms).
    pub max_p99_wake_latency_us: Option<u64>,
    /// Coefficient of variation (stddev / mean) of a group's wake
    /// latencies. Default: off.
    pub max_wake_latency_cv: Option<f64>,
    /// Minimum work units per second per worker. Default: off.
    pub min_work_rate: Option<f64>,
    /// Migrations per checkpoint (1024 work units). Default: off.
    pub max_migration_ratio: Option<f64>,
    /// Share of a worker's pages on its most-used NUMA node. Default: 0.5.
    pub min_numa_locality: Option<f64>,
    /// Pages migrated across nodes during the run (vmstat delta, largest
    /// worker value). Default: off.
    pub max_numa_pages_migrated: Option<u64>,
    /// Least share of its CPU entitlement each group (and each worker
    /// within its group) must get, 0..=1; see [`crate::fairness`].
    /// Default: 0.5.
    pub min_fair_share: Option<f64>,
    /// Names of checks to turn off (e.g. `["max_gap_ms"]`).
    pub disable: Vec<String>,
}

impl Default for CheckConfig {
    fn default() -> Self {
        CheckConfig {
            not_stuck: true,
            max_gap_ms: Some(2000),
            max_offcpu_spread_pct: Some(50.0),
            max_p99_wake_latency_us: Some(100_000),
            max_wake_latency_cv: None,
            min_work_rate: None,
            max_migration_ratio: None,
            min_numa_locality: Some(0.5),
            max_numa_pages_migrated: None,
            min_fair_share: Some(0.5),
            disable: Vec::new(),
        }
    }
}

/// Names accepted in `disable`.
pub const CHECK_NAMES: [&str; 10] = [
    "not_stuck",
    "max_gap_ms",
    "max_offcpu_spread_pct",
    "max_p99_wake_latency_us",
    "max_wake_latency_cv",
    "min_work_rate",
    "max_migration_ratio",
    "min_numa_locality",
    "max_numa_pages_migrated",
    "min_fair_share",
];

/// One evaluated check.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CheckResult {
    /// Check name.
    pub name: String,
    /// Group the check was evaluated on.
    pub group: String,
    /// What was measured.
    pub measured: f64,
    /// `<=` or `>=`.
    pub op: &'static str,
    /// The bound.
    pub bound: f64,
    /// Whether it held.
    pub pass: bool,
    /// A sentence on what was measured, when the numbers need one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// PASS when every check passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Verdict {
    /// Every check held.
    Pass,
    /// At least one did not.
    Fail,
}

impl CheckConfig {
    /// Rejects unknown names in `disable` and out-of-range bounds.
    pub fn validate(&self) -> Result<(), String> {
        for d in &self.disable {
            if !CHECK_NAMES.contains(&d.as_str()) {
                return Err(format!(
                    "unknown check {d:?} in disable (checks: {})",
                    CHECK_NAMES.join(", ")
                ));
            }
        }
        if self
            .max_offcpu_spread_pct
            .is_some_and(|v| !(0.0..=100.0).contains(&v))
        {
            return Err("max_offcpu_spread_pct must be between 0 and 100".into());
        }
        if self
            .min_numa_locality
            .is_some_and(|v| !(0.0..=1.0).contains(&v))
        {
            return Err("min_numa_locality must be between 0 and 1".into());
        }
        if self
            .min_fair_share
            .is_some_and(|v| !(0.0..=1.0).contains(&v))
        {
            return Err("min_fair_share must be between 0 and 1".into());
        }
        Ok(())
    }

    /// The fair-share bound, unless the check is off.
    pub fn fair_share_bound(&self) -> Option<f64> {
        self.enabled("min_fair_share", self.min_fair_share)
    }

    fn enabled<T>(&self, name: &str, v: Option<T>) -> Option<T> {
        v.filter(|_| !self.disable.iter().any(|d| d == name))
    }

    /// Evaluates every enabled check on one group's reports. A failed
    /// `not_stuck` names the workers that died under a pipe partner.
    pub fn evaluate_group(
        &self,
        group: &str,
        reports: &[&WorkerReport],
        is_custom: bool,
    ) -> Vec<CheckResult> {
        let mut out = self.evaluate_bounds(group, reports, is_custom);
        if let Some(ns) = out.iter_mut().find(|r| r.name == "not_stuck") {
            ns.detail = lost_partners(reports);
        }
        out
    }

    /// The gap, off-CPU spread and wake-latency checks (p99 and CV) as
    /// (name, measured, op, bound).
    fn gap_and_wake_bounds(
        &self,
        live: &[&WorkerReport],
    ) -> Vec<(&'static str, f64, &'static str, f64)> {
        let mut out = Vec::new();
        if let Some(b) = self.enabled("max_gap_ms", self.max_gap_ms) {
            let gap = live.iter().map(|r| r.max_gap_ms).max().unwrap_or(0);
            out.push(("max_gap_ms", gap as f64, "<=", b as f64));
        }
        if let Some(b) = self.enabled("max_offcpu_spread_pct", self.max_offcpu_spread_pct) {
            out.push(("max_offcpu_spread_pct", offcpu_spread_pct(live), "<=", b));
        }
        let mut wakes: Vec<u64> = live
            .iter()
            .flat_map(|r| r.resume_latencies_ns.iter().copied())
            .collect();
        wakes.sort_unstable();
        if let (Some(b), Some(p99)) = (
            self.enabled("max_p99_wake_latency_us", self.max_p99_wake_latency_us),
            percentile(&wakes, 99.0),
        ) {
            out.push(("max_p99_wake_latency_us", p99 as f64 / 1e3, "<=", b as f64));
        }
        if let (Some(b), Some(cv)) = (
            self.enabled("max_wake_latency_cv", self.max_wake_latency_cv),
            coefficient_of_variation(&wakes),
        ) {
            out.push(("max_wake_latency_cv", cv, "<=", b));
        }
        out
    }

    fn evaluate_bounds(
        &self,
        group: &str,
        reports: &[&WorkerReport],
        is_custom: bool,
    ) -> Vec<CheckResult> {
        let mut out = Vec::new();
        let mut push = |name: &str, measured: f64, op: &'static str, bound: f64| {
            let pass = if op == "<=" {
                measured <= bound
            } else {
                measured >= bound
            };
            out.push(CheckResult {
                name: name.into(),
                group: group.into(),
                measured,
                op,
                bound,
                pass,
                detail: None,
            });
        };
        let live: Vec<&WorkerReport> = reports
            .iter()
            .copied()
            .filter(|r| r.exit_info.is_none())
            .collect();
        if self.enabled("not_stuck", Some(self.not_stuck)) == Some(true) {
            let stuck = reports
                .iter()
                .filter(|r| r.exit_info.is_some() || (!is_custom && r.work_units == 0))
                .count();
            push("not_stuck", stuck as f64, "<=", 0.0);
        }
        if is_custom {
            return out; // no framework telemetry to judge
        }
        for (name, measured, op, bound) in self.gap_and_wake_bounds(&live) {
            push(name, measured, op, bound);
        }
        if let Some(b) = self.enabled("min_work_rate", self.min_work_rate) {
            let slowest = live
                .iter()
                .map(|r| r.work_units as f64 * 1e9 / r.wall_time_ns.max(1) as f64)
                .fold(f64::INFINITY, f64::min);
            push(
                "min_work_rate",
                if slowest.is_finite() { slowest } else { 0.0 },
                ">=",
                b,
            );
        }
        if let Some(b) = self.enabled("max_migration_ratio", self.max_migration_ratio) {
            push("max_migration_ratio", migration_ratio(&live), "<=", b);
        }
        if let (Some(b), Some(loc)) = (
            self.enabled("min_numa_locality", self.min_numa_locality),
            numa_locality(&live),
        ) {
            push("min_numa_locality", loc, ">=", b);
        }
        if let Some(b) = self.enabled("max_numa_pages_migrated", self.max_numa_pages_migrated) {
            let worst = live
                .iter()
                .map(|r| r.vmstat_numa_pages_migrated)
                .max()
                .unwrap_or(0);
            push("max_numa_pages_migrated", worst as f64, "<=", b as f64);
        }
        out
    }
}

/// Names every worker that died under a partner which then saw their
/// pipes close (reports are in spawn order, so a partner index is a
/// position). A partner that ended normally (the usual stop race) is not
/// named.
fn lost_partners(reports: &[&WorkerReport]) -> Option<String> {
    let lines: Vec<String> = reports
        .iter()
        .filter_map(|r| {
            let j = r.partner_lost?;
            let dead = reports.get(j)?;
            let how = dead.exit_info.as_ref()?;
            Some(format!(
                "partner worker {j} (pid {}) died ({how:?}); worker pid {} saw its pipe close and stopped",
                dead.tid, r.tid
            ))
        })
        .collect();
    (!lines.is_empty()).then(|| lines.join("; "))
}

/// Max minus min off-CPU share (percent) across workers.
pub fn offcpu_spread_pct(reports: &[&WorkerReport]) -> f64 {
    let shares: Vec<f64> = reports
        .iter()
        .filter(|r| r.wall_time_ns > 0)
        .map(|r| r.off_cpu_ns as f64 * 100.0 / r.wall_time_ns as f64)
        .collect();
    let max = shares.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let min = shares.iter().copied().fold(f64::INFINITY, f64::min);
    if shares.is_empty() {
        0.0
    } else {
        max - min
    }
}

/// stddev / mean of the samples; `None` for fewer than 2 or a zero mean.
pub fn coefficient_of_variation(samples: &[u64]) -> Option<f64> {
    if samples.len() < 2 {
        return None;
    }
    let n = samples.len() as f64;
    let mean = samples.iter().map(|&v| v as f64).sum::<f64>() / n;
    if mean == 0.0 {
        return None;
    }
    let var = samples
        .iter()
        .map(|&v| (v as f64 - mean).powi(2))
        .sum::<f64>()
        / (n - 1.0);
    Some(var.sqrt() / mean)
}

/// Migrations per checkpoint over the group.
pub fn migration_ratio(reports: &[&WorkerReport]) -> f64 {
    let checks: u64 = reports
        .iter()
        .map(|r| r.work_units / crate::telemetry::CHECK_PERIOD_UNITS)
        .sum();
    let migrations: u64 = reports.iter().map(|r| r.migration_count).sum();
    if checks == 0 {
        0.0
    } else {
        migrations as f64 / checks as f64
    }
}

/// Lowest per-worker share of pages on the worker's most-used node;
/// `None` when no worker reported NUMA pages.
pub fn numa_locality(reports: &[&WorkerReport]) -> Option<f64> {
    reports
        .iter()
        .filter_map(|r| {
            let total: u64 = r.numa_pages.values().sum();
            let top = r.numa_pages.values().max().copied()?;
            (total > 0).then(|| top as f64 / total as f64)
        })
        .reduce(f64::min)
}

/// The verdict over all results (and any run-level failure).
pub fn verdict(results: &[CheckResult], run_failed: bool) -> Verdict {
    if run_failed || results.iter().any(|r| !r.pass) {
        Verdict::Fail
    } else {
        Verdict::Pass
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::WorkerExitInfo;

    fn report(units: u64, wall: u64, off: u64, gap: u64) -> WorkerReport {
        WorkerReport {
            work_units: units,
            wall_time_ns: wall,
            off_cpu_ns: off,
            max_gap_ms: gap,
            completed: true,
            ..Default::default()
        }
    }

    #[test]
    fn defaults_pass_a_healthy_group() {
        let a = report(10_240, 1_000_000_000, 100_000_000, 5);
        let b = report(20_480, 1_000_000_000, 200_000_000, 9);
        let res = CheckConfig::default().evaluate_group("g", &[&a, &b], false);
        assert!(res.iter().all(|r| r.pass), "{res:?}");
        assert_eq!(verdict(&res, false), Verdict::Pass);
        assert_eq!(verdict(&res, true), Verdict::Fail);
    }

    #[test]
    fn stuck_and_dead_workers_fail() {
        let idle = report(0, 1_000_000_000, 0, 0);
        let dead = WorkerReport::sentinel(1, 0, WorkerExitInfo::Signaled(9));
        let res = CheckConfig::default().evaluate_group("g", &[&idle, &dead], false);
        let ns = res.iter().find(|r| r.name == "not_stuck").unwrap();
        assert_eq!((ns.measured, ns.pass), (2.0, false));
    }

    #[test]
    fn a_dead_partner_is_named_and_a_normal_stop_is_not() {
        let mut survivor = report(1024, 1_000_000_000, 0, 0);
        survivor.tid = 76;
        survivor.partner_lost = Some(1);
        let dead = WorkerReport::sentinel(77, 0, WorkerExitInfo::Signaled(9));
        let res = CheckConfig::default().evaluate_group("g", &[&survivor, &dead], false);
        let ns = res.iter().find(|r| r.name == "not_stuck").unwrap();
        assert!(!ns.pass);
        let detail = ns.detail.as_deref().expect("detail names the partner");
        assert!(
            detail.contains("partner worker 1 (pid 77) died (Signaled(9))"),
            "{detail}"
        );
        assert!(detail.contains("worker pid 76"), "{detail}");
        let mut other = report(1024, 1_000_000_000, 0, 0);
        other.partner_lost = Some(0);
        let res = CheckConfig::default().evaluate_group("g", &[&survivor, &other], false);
        let ns = res.iter().find(|r| r.name == "not_stuck").unwrap();
        assert!(ns.pass && ns.detail.is_none(), "{ns:?}");
    }

    #[test]
    fn gap_and_spread_bounds() {
        let a = report(1024, 1_000_000_000, 0, 2500);
        let b = report(1024, 1_000_000_000, 900_000_000, 1);
        let res = CheckConfig::default().evaluate_group("g", &[&a, &b], false);
        let get = |n: &str| res.iter().find(|r| r.name == n).unwrap().clone();
        assert!(!get("max_gap_ms").pass);
        assert_eq!(get("max_gap_ms").measured, 2500.0);
        assert!(!get("max_offcpu_spread_pct").pass);
        assert!((get("max_offcpu_spread_pct").measured - 90.0).abs() < 1e-9);
    }

    #[test]
    fn disable_and_validate() {
        let cfg = CheckConfig {
            disable: vec!["max_gap_ms".into()],
            ..Default::default()
        };
        let a = report(1024, 1_000_000_000, 0, 99_999);
        assert!(cfg
            .evaluate_group("g", &[&a], false)
            .iter()
            .all(|r| r.name != "max_gap_ms"));
        assert!(CheckConfig {
            disable: vec!["nope".into()],
            ..Default::default()
        }
        .validate()
        .is_err());
    }

    #[test]
    fn statistics() {
        assert_eq!(coefficient_of_variation(&[5, 5, 5]), Some(0.0));
        assert!(coefficient_of_variation(&[1]).is_none());
        let cv = coefficient_of_variation(&[1, 3]).unwrap();
        assert!((cv - std::f64::consts::SQRT_2 / 2.0).abs() < 1e-9);
        let mut a = report(4096, 1, 0, 0);
        a.migration_count = 2;
        assert_eq!(migration_ratio(&[&a]), 0.5);
        a.numa_pages = [(0, 30), (1, 10)].into();
        assert_eq!(numa_locality(&[&a]), Some(0.75));
    }

    #[test]
    fn custom_groups_skip_telemetry_checks() {
        let a = report(0, 0, 0, 99_999);
        let res = CheckConfig::default().evaluate_group("c", &[&a], true);
        assert_eq!(res.len(), 1);
        assert!(res[0].pass);
    }
}
