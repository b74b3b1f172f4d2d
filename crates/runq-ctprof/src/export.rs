//! `runq ctprof export`: a snapshot as OpenMetrics / Prometheus text (for
//! node_exporter's textfile collector or any OpenMetrics store) or as CSV.
//!
//! Every summable or peak metric of the registry becomes one family named
//! by Prometheus conventions: base units (seconds, bytes), counter samples
//! ending in `_total`. Two dialects ([`Dialect`]): OpenMetrics 1.0 declares
//! a counter family without the suffix (`# TYPE x counter`, sample
//! `x_total`), gives a `# UNIT` and closes with `# EOF`; the Prometheus
//! text format 0.0.4 declares the sample name itself. Labels carry the
//! grouping (`pcomm`, `cgroup` or `comm`); per-thread labels (`tgid`,
//! `tid`, ...) only with [`ExportGroup::Thread`]. A value whose source was
//! unavailable is left out, never written as 0.

mod csv;

use std::io::{self, Write};

use crate::avail::Capabilities;
use crate::compare::reduce;
use crate::group::{group_threads_named, GroupBy, Grouping};
use crate::model::{CtprofSnapshot, ThreadState};
use crate::registry::{AggRule, Aggregated, CtprofMetricDef, CTPROF_METRICS};

pub use csv::write_csv;

/// How exported rows are grouped.
#[derive(Debug, Clone)]
pub enum ExportGroup {
    /// One series per group of this grouping.
    By(Grouping),
    /// One series per thread (high cardinality: only on request).
    Thread,
}

/// The text format written by [`write_metrics`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// OpenMetrics 1.0 (`application/openmetrics-text`).
    OpenMetrics,
    /// The Prometheus text exposition format 0.0.4 (node_exporter's
    /// textfile collector).
    Prometheus,
}

/// The Prometheus type of a family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Monotonic: the sample name ends in `_total`.
    Counter,
    /// Instantaneous or a peak.
    Gauge,
}

/// One exported metric family.
#[derive(Debug, Clone)]
pub struct Family {
    /// The registry metric it comes from.
    pub def: &'static CtprofMetricDef,
    /// The sample name (`runq_thread_run_time_seconds_total`).
    pub name: String,
    /// Counter or gauge.
    pub kind: Kind,
    /// Divisor from the snapshot's unit to the exported base unit
    /// (division keeps `1500000 ns` exactly `0.0015`).
    pub divisor: f64,
}

fn base_name(name: &str) -> &str {
    ["_clock_ticks", "_ns", "_bytes"]
        .iter()
        .find_map(|s| name.strip_suffix(s))
        .unwrap_or(name)
}

/// The exported families, in registry order; `user_hz` converts ticks.
pub fn families(user_hz: u64) -> Vec<Family> {
    let tick = user_hz.max(1) as f64;
    CTPROF_METRICS
        .iter()
        .filter_map(|def| {
            let b = base_name(def.name);
            let (suffix, kind, divisor) = match def.rule {
                AggRule::SumNs(_) => ("_seconds_total", Kind::Counter, 1e9),
                AggRule::SumTicks(_) => ("_seconds_total", Kind::Counter, tick),
                AggRule::SumBytes(_) => ("_bytes_total", Kind::Counter, 1.0),
                AggRule::SumCount(_) => ("_total", Kind::Counter, 1.0),
                AggRule::MaxPeak(_) | AggRule::MaxGaugeNs(_) => ("_seconds", Kind::Gauge, 1e9),
                AggRule::MaxPeakBytes(_) => ("_bytes", Kind::Gauge, 1.0),
                AggRule::MaxGaugeCount(_) => ("", Kind::Gauge, 1.0),
                _ => return None,
            };
            Some(Family {
                def,
                name: format!("runq_thread_{b}{suffix}"),
                kind,
                divisor,
            })
        })
        .collect()
}

/// One labelled series set: label pairs, thread count and one value per
/// family (`None`: unavailable).
pub struct Series {
    /// `(label, value)` pairs.
    pub labels: Vec<(&'static str, String)>,
    /// Threads in the group.
    pub threads: usize,
    /// Values in the snapshot's units, by family index.
    pub values: Vec<Option<u64>>,
}

fn values(
    fams: &[Family],
    threads: &[&ThreadState],
    caps: Option<&Capabilities>,
) -> Vec<Option<u64>> {
    fams.iter()
        .map(|f| match reduce(f.def, threads, caps) {
            Aggregated::Scalar { value } => Some(value),
            _ => None,
        })
        .collect()
}

fn axis_label(by: GroupBy) -> &'static str {
    match by {
        GroupBy::Pcomm => "pcomm",
        GroupBy::Cgroup => "cgroup",
        GroupBy::Comm | GroupBy::CommExact => "comm",
    }
}

/// Groups a snapshot into series.
pub fn series(snap: &CtprofSnapshot, group: &ExportGroup, fams: &[Family]) -> Vec<Series> {
    let caps = snap.capabilities.as_ref();
    match group {
        ExportGroup::Thread => snap
            .threads
            .iter()
            .map(|t| Series {
                labels: vec![
                    ("pcomm", t.pcomm.clone()),
                    ("comm", t.comm.clone()),
                    ("cgroup", t.cgroup.clone()),
                    ("tgid", t.tgid.to_string()),
                    ("tid", t.tid.to_string()),
                ],
                threads: 1,
                values: values(fams, &[t], caps),
            })
            .collect(),
        // Series names must not change from one export to the next, so a
        // comm pool is always its pattern (`worker-{N}`), never the literal
        // name a one-thread pool would keep in a view.
        ExportGroup::By(g) => group_threads_named(&snap.threads, g, None)
            .into_iter()
            .map(|(k, v)| Series {
                labels: vec![(axis_label(g.by), k)],
                threads: v.len(),
                values: values(fams, &v, caps),
            })
            .collect(),
    }
}

fn label_text(labels: &[(&str, String)]) -> String {
    let mut s = String::from("{");
    for (i, (k, v)) in labels.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        s.push_str(k);
        s.push_str("=\"");
        runq_common::openmetrics::escape_label(v, &mut s);
        s.push('"');
    }
    s.push('}');
    s
}

/// The metadata lines of the family whose samples are named `sample`.
fn header(
    out: &mut dyn Write,
    dialect: Dialect,
    sample: &str,
    kind: Kind,
    help: &str,
) -> io::Result<()> {
    let help = help.replace('\\', "\\\\").replace('\n', "\\n");
    let type_name = match kind {
        Kind::Counter => "counter",
        Kind::Gauge => "gauge",
    };
    if dialect == Dialect::Prometheus {
        return writeln!(out, "# HELP {sample} {help}\n# TYPE {sample} {type_name}");
    }
    let family = match kind {
        Kind::Counter => sample.strip_suffix("_total").unwrap_or(sample),
        Kind::Gauge => sample,
    };
    writeln!(out, "# HELP {family} {help}\n# TYPE {family} {type_name}")?;
    match ["seconds", "bytes"]
        .iter()
        .find(|u| family.ends_with(&format!("_{u}")))
    {
        Some(unit) => writeln!(out, "# UNIT {family} {unit}"),
        None => Ok(()),
    }
}

/// Writes `v` in the shortest exact decimal form (integers without `.0`).
fn number(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 9.0e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

/// Writes the snapshot as OpenMetrics or Prometheus text.
pub fn write_metrics(
    snap: &CtprofSnapshot,
    group: &ExportGroup,
    dialect: Dialect,
    out: &mut dyn Write,
) -> io::Result<()> {
    let user_hz = snap.host.as_ref().map_or(100, |h| h.user_hz).max(1);
    let fams = families(user_hz);
    let series = series(snap, group, &fams);
    let labels: Vec<String> = series.iter().map(|s| label_text(&s.labels)).collect();
    header(
        out,
        dialect,
        "runq_ctprof_capture_timestamp_seconds",
        Kind::Gauge,
        "When the snapshot was captured, Unix time.",
    )?;
    writeln!(
        out,
        "runq_ctprof_capture_timestamp_seconds {}",
        number(snap.captured_at_unix_ns as f64 / 1e9)
    )?;
    if let Some(caps) = &snap.capabilities {
        header(out, dialect, "runq_ctprof_source_unavailable", Kind::Gauge, "1 for each per-thread source the kernel did not provide; its series are absent, not zero.")?;
        for (src, why) in &caps.unavailable {
            writeln!(
                out,
                "runq_ctprof_source_unavailable{{source=\"{}\",reason=\"{}\"}} 1",
                src.name(),
                why.name()
            )?;
        }
    }
    header(
        out,
        dialect,
        "runq_ctprof_threads",
        Kind::Gauge,
        "Threads in the group.",
    )?;
    for (s, l) in series.iter().zip(&labels) {
        writeln!(out, "runq_ctprof_threads{l} {}", s.threads)?;
    }
    for (i, f) in fams.iter().enumerate() {
        // A family no group has a value for is left out whole (its source
        // is listed under runq_ctprof_source_unavailable).
        if series.iter().all(|s| s.values[i].is_none()) {
            continue;
        }
        header(out, dialect, &f.name, f.kind, f.def.description)?;
        for (s, l) in series.iter().zip(&labels) {
            if let Some(v) = s.values[i] {
                writeln!(out, "{}{l} {}", f.name, number(v as f64 / f.divisor))?;
            }
        }
    }
    match dialect {
        Dialect::OpenMetrics => writeln!(out, "# EOF"),
        Dialect::Prometheus => Ok(()),
    }
}

#[cfg(test)]
mod tests;
