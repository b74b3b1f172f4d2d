//! ctprof around the moment: with `runq run --ctprof`, the compare of the
//! run's two snapshots (taken as the workers start and just before the
//! planned end) for the threads a failed check's evidence names: the
//! worker, its waker, the tasks that held its CPU. The binary fills it
//! from runq-ctprof's compare; this module holds the report's shape and
//! its text.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use runq_common::text::printable;

/// A thread the evidence names, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Subject {
    /// Its tid.
    pub tid: i32,
    /// `worker`, `waker` or `holder`.
    pub role: &'static str,
}

/// The metrics each thread's line gives first, in this order (ctprof's
/// names): run-queue wait, on-CPU time, switches, migrations.
pub const KEY_METRICS: [&str; 5] = [
    "wait_time_ns",
    "run_time_ns",
    "voluntary_csw",
    "nonvoluntary_csw",
    "nr_migrations",
];

/// ctprof's compare of the evidence's threads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CtprofEvidence {
    /// When the two snapshots were taken, seconds from the run's start.
    pub snapshots_s: [f64; 2],
    /// One entry per thread the evidence names.
    pub threads: Vec<ThreadDeltas>,
}

/// Which snapshots hold a thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Presence {
    /// Both: the figures are its deltas between them.
    Both,
    /// The second only (it started between them): its figures since it
    /// started.
    AfterOnly,
    /// The first only (it ended between them): no figures.
    BeforeOnly,
    /// Neither (it lived between them): no figures.
    Neither,
}

/// One thread's deltas between the snapshots.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadDeltas {
    /// Its tid.
    pub tid: i32,
    /// `worker`, `waker` or `holder`.
    pub role: String,
    /// Its name in the snapshots (empty when in neither).
    pub comm: String,
    /// Which snapshots hold it.
    pub presence: Presence,
    /// The [`KEY_METRICS`] it has, in that order.
    pub deltas: Vec<MetricDelta>,
    /// The other metric that moved most (by its change relative to the
    /// first snapshot), when one moved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub most_moved: Option<MetricDelta>,
}

/// One metric's change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricDelta {
    /// ctprof's metric name.
    pub metric: String,
    /// Second snapshot minus first (the second's value for a thread
    /// started between them), in `unit`.
    pub delta: f64,
    /// ctprof's unit of the value: `ns`, `count`, `ticks`, `bytes` or
    /// `scalar`.
    pub unit: String,
    /// Change relative to the first snapshot, percent, when it had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pct: Option<f64>,
}

impl CtprofEvidence {
    /// The report's lines: `ctprof, snapshots at 0.10 s and 4.85 s:`,
    /// then one per thread (`worker 12 `spin` wait_time_ns +1502.0 ms,
    /// ...`), each starting with `indent`.
    pub fn lines(&self, indent: &str) -> String {
        let [a, b] = self.snapshots_s;
        let mut s = format!("{indent}ctprof, snapshots at {a:.2} s and {b:.2} s:\n");
        for t in &self.threads {
            let _ = writeln!(s, "{indent}  {}", t.words());
        }
        s
    }
}

impl ThreadDeltas {
    fn words(&self) -> String {
        let mut s = format!("{} {}", self.role, self.tid);
        if !self.comm.is_empty() {
            let _ = write!(s, " `{}`", printable(&self.comm));
        }
        match self.presence {
            Presence::Both => {}
            Presence::AfterOnly => s.push_str(" (started during the run, since its start)"),
            Presence::BeforeOnly => {
                s.push_str(" ended before the second snapshot: no deltas");
                return s;
            }
            Presence::Neither => {
                s.push_str(" is in neither snapshot (it lived between them): no deltas");
                return s;
            }
        }
        let parts: Vec<String> = self.deltas.iter().map(|m| m.words(false)).collect();
        let _ = write!(s, " {}", parts.join(", "));
        if let Some(m) = &self.most_moved {
            let _ = write!(s, "; moved most: {}", m.words(true));
        }
        s
    }
}

impl MetricDelta {
    /// `wait_time_ns +1502.0 ms`, `nonvoluntary_csw +45`, with the
    /// percent when asked for and known (a key metric's percent is of the
    /// thread's whole life before the first snapshot, which says little).
    fn words(&self, pct: bool) -> String {
        let sign = if self.delta < 0.0 { "-" } else { "+" };
        let v = self.delta.abs();
        let mut s = match self.unit.as_str() {
            "ns" => format!("{} {sign}{:.1} ms", self.metric, v / 1e6),
            "bytes" => format!("{} {sign}{:.1} KiB", self.metric, v / 1024.0),
            "scalar" => format!("{} {sign}{v:.3}", self.metric),
            _ => format!("{} {sign}{}", self.metric, v.round()),
        };
        if let Some(p) = self.pct.filter(|p| pct && p.is_finite()) {
            let _ = write!(s, " ({p:+.0}%)");
        }
        s
    }
}
