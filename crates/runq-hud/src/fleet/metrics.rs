//! Continuous mode's figures as OpenMetrics / Prometheus text: per target
//! (by the name it was asked for) and per blocker (category, culprit
//! function), the findings and their time since hud began watching that
//! name (counters, across the target's restarts) and the longest finding
//! of the last window (a gauge); per target, whether it is watched, how
//! often it was attached, its workers and its lost events.
//!
//! Two dialects, as ctprof's export writes them: OpenMetrics 1.0 declares
//! a counter family without `_total` and ends with `# EOF` (the scrape
//! endpoint, when asked for it); the Prometheus text format 0.0.4 names
//! the sample itself (node_exporter's textfile collector, and scrapes that
//! do not ask for OpenMetrics). Memory is bounded: at most
//! [`MAX_ROWS`] blocker rows per target; later culprits are summed under
//! `[other]`.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use runq_common::openmetrics::escaped_label;

use crate::detect::Category;
use crate::report::{Blocker, Report};

/// Blocker rows kept per target; the rest go under [`OTHER`].
pub const MAX_ROWS: usize = 500;

/// The culprit of the rows past [`MAX_ROWS`].
pub const OTHER: &str = "[other]";

/// The text format of a scrape or a textfile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// OpenMetrics 1.0 (`application/openmetrics-text; version=1.0.0`).
    OpenMetrics,
    /// Prometheus text 0.0.4 (`text/plain; version=0.0.4`).
    Prometheus,
}

/// One blocker's figures.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Row {
    count: u64,
    total_ns: u64,
    /// The longest finding of the last window (0: none in it).
    window_max_ns: u64,
}

/// One target's figures.
#[derive(Debug, Clone, Default)]
struct Target {
    /// Workers per watched process (by pid).
    workers: BTreeMap<u32, u64>,
    attaches: u64,
    lost_events: u64,
    rows: BTreeMap<(Category, String), Row>,
}

/// Every target's figures, fed a window report at a time.
#[derive(Debug, Clone, Default)]
pub struct FleetMetrics {
    targets: BTreeMap<String, Target>,
}

impl FleetMetrics {
    /// A name is watched: it shows (with no process) before any attach.
    pub fn named(&mut self, name: &str) {
        self.targets.entry(name.to_string()).or_default();
    }

    /// A process `pid` of the target `name` is attached (a restarted
    /// target is a new process).
    pub fn attached(&mut self, name: &str, pid: u32) {
        let t = self.targets.entry(name.to_string()).or_default();
        t.workers.insert(pid, 0);
        t.attaches += 1;
    }

    /// The process `pid` of `name` is gone, or its session ended.
    pub fn down(&mut self, name: &str, pid: u32) {
        let t = self.targets.entry(name.to_string()).or_default();
        t.workers.remove(&pid);
    }

    /// Adds one window's report of the target `name`: its blockers and
    /// `block_in_place` rows to the counters, their longest findings as
    /// the window's maxima.
    pub fn add_window(&mut self, name: &str, r: &Report) {
        let t = self.targets.entry(name.to_string()).or_default();
        if let Some(w) = t.workers.get_mut(&r.pid) {
            *w = r.workers.len() as u64;
        }
        t.lost_events += r.lost_events;
        for row in t.rows.values_mut() {
            row.window_max_ns = 0;
        }
        for b in r.blockers.iter().chain(&r.block_in_place) {
            t.add(b);
        }
    }

    /// The figures as text in `dialect`.
    pub fn render(&self, dialect: Dialect) -> String {
        let mut out = String::new();
        self.family(&mut out, dialect, Family::PROCESSES, |t| {
            Some(t.workers.len() as f64)
        });
        self.family(&mut out, dialect, Family::ATTACHES, |t| {
            Some(t.attaches as f64)
        });
        self.family(&mut out, dialect, Family::WORKERS, |t| {
            Some(t.workers.values().sum::<u64>() as f64)
        });
        self.family(&mut out, dialect, Family::LOST, |t| {
            Some(t.lost_events as f64)
        });
        for (fam, value) in [
            (
                Family::FINDINGS,
                (|r: &Row| Some(r.count as f64)) as fn(&Row) -> Option<f64>,
            ),
            (Family::SECONDS, |r| Some(r.total_ns as f64 / 1e9)),
            (Family::MAX_SECONDS, |r| {
                (r.window_max_ns > 0).then_some(r.window_max_ns as f64 / 1e9)
            }),
        ] {
            self.blocker_family(&mut out, dialect, fam, value);
        }
        if dialect == Dialect::OpenMetrics {
            out.push_str("# EOF\n");
        }
        out
    }

    /// A per-target family.
    fn family(
        &self,
        out: &mut String,
        d: Dialect,
        f: Family,
        value: impl Fn(&Target) -> Option<f64>,
    ) {
        f.header(out, d);
        for (name, t) in &self.targets {
            if let Some(v) = value(t) {
                let _ = writeln!(
                    out,
                    "{}{{target=\"{}\"}} {v}",
                    f.sample(),
                    escaped_label(name)
                );
            }
        }
    }

    /// A per-blocker family.
    fn blocker_family(
        &self,
        out: &mut String,
        d: Dialect,
        f: Family,
        value: fn(&Row) -> Option<f64>,
    ) {
        f.header(out, d);
        for (name, t) in &self.targets {
            for ((category, function), row) in &t.rows {
                let Some(v) = value(row) else { continue };
                let _ = writeln!(
                    out,
                    "{}{{target=\"{}\",category=\"{}\",function=\"{}\"}} {v}",
                    f.sample(),
                    escaped_label(name),
                    category_name(*category),
                    escaped_label(function)
                );
            }
        }
    }
}

impl Target {
    fn add(&mut self, b: &Blocker) {
        let mut key = (b.category, b.function.clone());
        if !self.rows.contains_key(&key) && self.rows.len() >= MAX_ROWS - 1 {
            key.1 = OTHER.to_string();
        }
        let row = self.rows.entry(key).or_default();
        row.count += b.count;
        row.total_ns += b.total_ns;
        row.window_max_ns = row.window_max_ns.max(b.max_ns);
    }
}

/// A metric family: its name, type, unit and help.
#[derive(Debug, Clone, Copy)]
struct Family {
    name: &'static str,
    counter: bool,
    unit: Option<&'static str>,
    help: &'static str,
}

impl Family {
    const PROCESSES: Family = Family {
        name: "runq_hud_target_processes",
        counter: false,
        unit: None,
        help: "Processes of the target attached and watched now (0: none running)",
    };
    const ATTACHES: Family = Family {
        name: "runq_hud_target_attaches",
        counter: true,
        unit: None,
        help: "Processes of the target attached since hud started (a restart attaches again)",
    };
    const WORKERS: Family = Family {
        name: "runq_hud_workers",
        counter: false,
        unit: None,
        help: "Worker threads of the target's processes in their last window",
    };
    const LOST: Family = Family {
        name: "runq_hud_lost_events",
        counter: true,
        unit: None,
        help: "Events the kernel could not queue (ring buffer full)",
    };
    const FINDINGS: Family = Family {
        name: "runq_hud_blocker_findings",
        counter: true,
        unit: None,
        help: "Findings of a blocker (category, culprit function): intervals, or samples for on-CPU rows",
    };
    const SECONDS: Family = Family {
        name: "runq_hud_blocker_seconds",
        counter: true,
        unit: Some("seconds"),
        help: "Time of a blocker's findings",
    };
    const MAX_SECONDS: Family = Family {
        name: "runq_hud_blocker_max_seconds",
        counter: false,
        unit: Some("seconds"),
        help: "The longest finding of a blocker in the last window",
    };

    /// The sample name: a counter's ends in `_total`.
    fn sample(self) -> String {
        match self.counter {
            true => format!("{}_total", self.name),
            false => self.name.to_string(),
        }
    }

    fn header(self, out: &mut String, d: Dialect) {
        let kind = if self.counter { "counter" } else { "gauge" };
        let declared = match d {
            Dialect::OpenMetrics => self.name.to_string(),
            Dialect::Prometheus => self.sample(),
        };
        let _ = writeln!(out, "# HELP {declared} {}", self.help);
        let _ = writeln!(out, "# TYPE {declared} {kind}");
        if let (Dialect::OpenMetrics, Some(unit)) = (d, self.unit) {
            let _ = writeln!(out, "# UNIT {declared} {unit}");
        }
    }
}

/// A category's name as its JSON spells it (`blocking_call`).
fn category_name(c: Category) -> String {
    serde_json::to_value(c)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests;
