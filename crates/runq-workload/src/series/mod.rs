//! Counters over time: every snapshot interval (100 ms by default) the run
//! loop records each running group's summed counters ([`sampler`]), and
//! the checks over time ([`check`]: nondecreasing, rate_within,
//! steady_within, converges_to, stall) judge those series, naming the
//! window where one failed; the host monitor ([`host`]) samples every
//! CPU's run queue beside them, on its own thread.

pub mod check;
pub mod dsq;
pub mod dsq_entries;
pub mod host;
mod host_monitor;
pub mod rq_clock;
pub(crate) mod sampler;
pub(crate) mod sched_ext;

use std::time::Duration;

use serde::{Deserialize, Serialize};

pub(crate) use check::evaluate;
pub use check::{SeriesCheck, SeriesKind, Target};

/// The default snapshot interval.
pub(crate) const DEFAULT_INTERVAL: Duration = Duration::from_millis(100);

/// The shortest snapshot interval a scenario may ask for.
pub const MIN_INTERVAL: Duration = Duration::from_millis(10);

/// A counter a check over time looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Work units, summed over the group's workers.
    WorkUnits,
    /// Loop iterations, summed.
    Iterations,
    /// Time on a CPU (schedstat), summed; its rate is in CPUs.
    CpuTime,
    /// Time runnable without a CPU (schedstat run delay), summed; its
    /// rate is in CPUs' worth of waiting.
    RunDelay,
}

impl Metric {
    /// Every metric with its name in scenario files.
    pub const ALL: [(&'static str, Metric); 4] = [
        ("work_units", Metric::WorkUnits),
        ("iterations", Metric::Iterations),
        ("cpu_time", Metric::CpuTime),
        ("run_delay", Metric::RunDelay),
    ];

    /// The metric's name in scenario files and reports.
    pub fn name(self) -> &'static str {
        Metric::ALL
            .iter()
            .find(|(_, m)| *m == self)
            .map_or("?", |(n, _)| n)
    }

    /// The metric named `name`.
    pub fn from_name(name: &str) -> Option<Metric> {
        Metric::ALL
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, m)| *m)
    }

    /// What one unit of the counter is worth in the rate's unit: the
    /// time counters are ns, and their rates are in CPUs (s per s).
    fn per_unit(self) -> f64 {
        match self {
            Metric::WorkUnits | Metric::Iterations => 1.0,
            Metric::CpuTime | Metric::RunDelay => 1e-9,
        }
    }

    /// A rate of this metric as text: `1.20M/s`, or `0.52 CPU`.
    pub fn fmt_rate(self, rate: f64) -> String {
        match self {
            Metric::WorkUnits | Metric::Iterations => {
                format!("{}/s", runq_common::units::fmt_rate(rate))
            }
            Metric::CpuTime | Metric::RunDelay => format!("{rate:.2} CPU"),
        }
    }
}

/// One group's snapshots: the time of each (from the start of the run)
/// and the group's counters then, one column per counter.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GroupSeries {
    /// Group name.
    pub group: String,
    /// When each snapshot was taken, ns from the start of the run.
    pub at_ns: Vec<u64>,
    /// Work units so far, summed over the group's workers.
    pub work_units: Vec<u64>,
    /// Iterations so far, summed.
    pub iterations: Vec<u64>,
    /// On-CPU time so far (schedstat), summed, ns; absent when the
    /// workers' schedstat was not read (too many workers, no schedstat).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_time_ns: Option<Vec<u64>>,
    /// Run delay so far (schedstat), summed, ns; absent like `cpu_time_ns`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_delay_ns: Option<Vec<u64>>,
}

impl GroupSeries {
    /// The column of `metric`, when it was recorded.
    pub fn values(&self, metric: Metric) -> Option<&[u64]> {
        match metric {
            Metric::WorkUnits => Some(&self.work_units),
            Metric::Iterations => Some(&self.iterations),
            Metric::CpuTime => self.cpu_time_ns.as_deref(),
            Metric::RunDelay => self.run_delay_ns.as_deref(),
        }
    }

    /// The intervals between consecutive snapshots that start at or after
    /// `after_ns`, with `metric`'s rate over each.
    pub fn intervals(&self, metric: Metric, after_ns: u64) -> Vec<Window> {
        let Some(v) = self.values(metric) else {
            return Vec::new();
        };
        (1..self.at_ns.len().min(v.len()))
            .filter(|&i| self.at_ns[i - 1] >= after_ns)
            .map(|i| Window::between(metric, (self.at_ns[i - 1], v[i - 1]), (self.at_ns[i], v[i])))
            .collect()
    }

    /// One window from the first snapshot at or after `from_ns` to the
    /// last one, when there are two.
    pub(crate) fn span_from(&self, metric: Metric, from_ns: u64) -> Option<Window> {
        let v = self.values(metric)?;
        let first = self.at_ns.iter().position(|&t| t >= from_ns)?;
        let last = self.at_ns.len().min(v.len()).checked_sub(1)?;
        (last > first).then(|| {
            Window::between(
                metric,
                (self.at_ns[first], v[first]),
                (self.at_ns[last], v[last]),
            )
        })
    }
}

/// A stretch of time between two snapshots and a metric's rate over it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Window {
    /// Start, ns from the start of the run.
    pub from_ns: u64,
    /// End, ns from the start of the run.
    pub to_ns: u64,
    /// The counter at the start.
    pub start: u64,
    /// The counter at the end.
    pub end: u64,
    /// The change per second, in the metric's rate unit (negative when
    /// the counter went down).
    pub rate: f64,
}

impl Window {
    /// The window between two `(at_ns, value)` snapshots.
    pub fn between(metric: Metric, (t0, v0): (u64, u64), (t1, v1): (u64, u64)) -> Window {
        let secs = t1.saturating_sub(t0).max(1) as f64 / 1e9;
        let delta = v1 as f64 - v0 as f64;
        Window {
            from_ns: t0,
            to_ns: t1,
            start: v0,
            end: v1,
            rate: delta * metric.per_unit() / secs,
        }
    }

    /// The window's time span as text: `1.40–1.50 s`.
    pub fn span(&self) -> String {
        format!(
            "{:.2}–{:.2} s",
            self.from_ns as f64 / 1e9,
            self.to_ns as f64 / 1e9
        )
    }
}

/// Every group's snapshots in one run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunSeries {
    /// The planned time between snapshots, ns.
    pub interval_ns: u64,
    /// Snapshots taken (each covers every running group).
    pub snapshots: u64,
    /// CPU time the run loop spent taking them, ns (its own cost).
    pub sampler_cpu_ns: u64,
    /// One series per group that ran, in scenario order.
    pub groups: Vec<GroupSeries>,
    /// The host monitor's record (run queues, sched_ext).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<host::HostSeries>,
}

impl RunSeries {
    /// The series of the group named `name`.
    pub fn group(&self, name: &str) -> Option<&GroupSeries> {
        self.groups.iter().find(|g| g.group == name)
    }
}

/// Checks that `scn`'s snapshot interval is long enough, and that every
/// check over time has snapshots to judge and sound bounds.
pub(crate) fn validate_scenario(scn: &crate::Scenario) -> Result<(), String> {
    if let Some(i) = scn.snapshot_interval.filter(|i| *i < MIN_INTERVAL) {
        return Err(format!(
            "snapshot_interval {i:?} is below the 10ms minimum (\"off\" turns snapshots off)"
        ));
    }
    for g in scn.groups.iter().filter(|g| !g.series_checks.is_empty()) {
        let err = |msg: String| format!("group {:?}: {msg}", g.name);
        if scn.snapshot_interval.is_none() {
            return Err(err(
                "series_check needs snapshots, and snapshot_interval is off".into(),
            ));
        }
        for c in &g.series_checks {
            c.validate(scn.duration).map_err(err)?;
            if g.custom.is_some() && matches!(c.metric, Metric::WorkUnits | Metric::Iterations) {
                return Err(err(format!(
                    "series_check {}: custom work publishes no progress; judge cpu_time or run_delay",
                    c.id()
                )));
            }
        }
    }
    Ok(())
}

/// `Option<Duration>` as integer nanoseconds or `null` in JSON.
pub mod opt_ns {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    /// Writes whole nanoseconds, or `null` for `None`.
    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_some(&u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)),
            None => s.serialize_none(),
        }
    }

    /// Reads nanoseconds or `null`.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        Ok(Option::<u64>::deserialize(d)?.map(Duration::from_nanos))
    }
}

#[cfg(test)]
mod tests;
