//! The values of a compare or show view: cells, rows, the options that
//! shape them and the whole view. The engine ([`crate::compare`]) builds
//! them; the renderers ([`crate::render`], the JSON writer) read them.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::avail::{Reason, Source};
use crate::group::{GroupBy, Grouping};
use crate::model::CtprofSnapshot;
use crate::registry::{Aggregated, Section, Unit};

/// One value cell.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Cell {
    /// A number.
    Num {
        /// The value.
        value: f64,
    },
    /// An ordinal range.
    Range {
        /// Smallest.
        min: i64,
        /// Largest.
        max: i64,
    },
    /// Text (mode, affinity, state), with a number when one exists.
    Text {
        /// Display text.
        text: String,
        /// Number for deltas, if any.
        scalar: Option<f64>,
    },
    /// Not computable or not present.
    Missing,
}

impl Cell {
    /// The number used for deltas and sorting.
    pub fn scalar(&self) -> Option<f64> {
        match self {
            Cell::Num { value } => Some(*value),
            Cell::Range { min, max } => Some((*min as f64 + *max as f64) / 2.0),
            Cell::Text { scalar, .. } => *scalar,
            Cell::Missing => None,
        }
    }

    /// Converts a group aggregate.
    pub fn from_agg(a: &Aggregated) -> Cell {
        match a {
            Aggregated::Scalar { value } => Cell::Num {
                value: *value as f64,
            },
            Aggregated::Range { min, max } => Cell::Range {
                min: *min,
                max: *max,
            },
            Aggregated::Mode {
                value,
                count,
                total,
            } => Cell::Text {
                text: format!("{value} ({count}/{total})"),
                scalar: None,
            },
            Aggregated::Affinity {
                min_cpus,
                max_cpus,
                uniform,
            } => {
                if *uniform {
                    Cell::Text {
                        text: format!("{max_cpus} cpus"),
                        scalar: Some(*max_cpus as f64),
                    }
                } else {
                    Cell::Text {
                        text: format!("{min_cpus}-{max_cpus} cpus (mixed)"),
                        scalar: None,
                    }
                }
            }
            Aggregated::Dead { nonzero: 0 } => Cell::Text {
                text: "dead".into(),
                scalar: None,
            },
            Aggregated::Dead { nonzero } => Cell::Text {
                text: format!("dead ({nonzero} non-zero)"),
                scalar: None,
            },
            Aggregated::Empty => Cell::Missing,
        }
    }

    fn text(&self) -> Option<&str> {
        match self {
            Cell::Text { text, .. } => Some(text.split(" (").next().unwrap_or(text)),
            _ => None,
        }
    }
}

/// Serializes a missing cell as JSON `null`.
fn cell_or_null<S: serde::Serializer>(c: &Cell, s: S) -> Result<S::Ok, S::Error> {
    match c {
        Cell::Missing => s.serialize_none(),
        c => c.serialize(s),
    }
}

/// The availability of one side of a view: host-wide reasons and counts of
/// per-thread exceptions (`source:reason` -> threads).
#[derive(Debug, Clone, Default, Serialize)]
pub struct SideCapabilities {
    /// Sources unavailable for every thread, with the reason.
    pub unavailable: BTreeMap<Source, Reason>,
    /// Threads missing a source, by `source:reason`.
    pub thread_exceptions: BTreeMap<String, u64>,
    /// True when inferred from a schema-1 file.
    pub inferred: bool,
}

impl SideCapabilities {
    /// Summarizes a snapshot; `None` when it carries no capabilities.
    pub fn of(snap: &CtprofSnapshot) -> Option<Self> {
        let caps = snap.capabilities.as_ref()?;
        let mut thread_exceptions = BTreeMap::new();
        for t in &snap.threads {
            for (src, why) in &t.unavailable {
                let key = format!("{}:{}", src.name(), why.name());
                *thread_exceptions.entry(key).or_insert(0) += 1;
            }
        }
        Some(SideCapabilities {
            unavailable: caps.unavailable.clone(),
            thread_exceptions,
            inferred: caps.inferred,
        })
    }
}

/// One output row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// Sub-table.
    pub section: Section,
    /// True for derived metrics (rendered in the derived table).
    pub derived: bool,
    /// Group key.
    pub group: String,
    /// Threads in the group: baseline, candidate.
    pub threads: (usize, usize),
    /// Metric name.
    pub metric: String,
    /// Display unit.
    pub unit: Unit,
    /// A `[0, 1]` ratio (no percent column).
    pub is_ratio: bool,
    /// Baseline value (the only value for `show`); `null` when missing.
    #[serde(serialize_with = "cell_or_null")]
    pub baseline: Cell,
    /// Candidate value (`null` for `show`).
    #[serde(serialize_with = "cell_or_null")]
    pub candidate: Cell,
    /// `candidate - baseline`, when both are numbers.
    pub delta: Option<f64>,
    /// Percent delta relative to the baseline.
    pub pct: Option<f64>,
    /// For text values: whether the two sides are equal.
    pub text_delta: Option<TextDelta>,
    /// On which sides the group was found.
    pub matched: Matched,
    /// Why the two sides cannot be compared (a source read on one side
    /// only, e.g. `taskstats eperm in candidate`); such rows sort last.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub incomparable: Option<String>,
    /// Two-directory compare: the sides' spreads and whether the change
    /// is within the noise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub noise: Option<Noise>,
}

/// On which sides a row's group was found (`show` rows are `both`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Matched {
    /// In both snapshots (or the one snapshot of `show`).
    Both,
    /// In the baseline only.
    BaselineOnly,
    /// In the candidate only.
    CandidateOnly,
}

impl Matched {
    /// Where a group was found: on the baseline `b`, on the candidate `c`,
    /// `comparing` two snapshots (else `show`).
    pub fn of(b: bool, c: bool, comparing: bool) -> Matched {
        match (b, c, comparing) {
            (true, true, _) | (true, false, false) => Matched::Both,
            (true, false, true) => Matched::BaselineOnly,
            _ => Matched::CandidateOnly,
        }
    }

    /// The JSON spelling, also printed next to unmatched groups.
    pub fn name(self) -> &'static str {
        match self {
            Matched::Both => "both",
            Matched::BaselineOnly => "baseline-only",
            Matched::CandidateOnly => "candidate-only",
        }
    }
}

/// How two text values compare.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TextDelta {
    /// Equal.
    Same,
    /// Not equal.
    Differs,
}

impl TextDelta {
    /// `same` or `differs`.
    pub fn name(self) -> &'static str {
        match self {
            TextDelta::Same => "same",
            TextDelta::Differs => "differs",
        }
    }
}

/// What a row shows apart from its two values: the input of
/// [`RowSpec::row`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct RowSpec<'a> {
    /// Sub-table.
    pub section: Section,
    /// A derived metric.
    pub derived: bool,
    /// Group key.
    pub group: &'a str,
    /// Threads in the group: baseline, candidate.
    pub threads: (usize, usize),
    /// Metric name.
    pub metric: &'a str,
    /// Display unit.
    pub unit: Unit,
    /// A `[0, 1]` ratio.
    pub is_ratio: bool,
    /// On which sides the group was found.
    pub matched: Matched,
}

impl RowSpec<'_> {
    /// The row of baseline value `b` and candidate value `c`, with their
    /// delta, percent change and text comparison.
    pub fn row(self, b: Cell, c: Cell) -> Row {
        let delta = match (b.scalar(), c.scalar()) {
            (Some(x), Some(y)) => Some(y - x),
            _ => None,
        };
        let pct = match (b.scalar(), delta) {
            (Some(x), Some(d)) if x != 0.0 && !self.is_ratio => Some(d / x.abs() * 100.0),
            _ => None,
        };
        let text_delta = match (b.text(), c.text()) {
            (Some(x), Some(y)) if x == y => Some(TextDelta::Same),
            (Some(_), Some(_)) => Some(TextDelta::Differs),
            _ => None,
        };
        Row {
            section: self.section,
            derived: self.derived,
            group: self.group.to_string(),
            threads: self.threads,
            metric: self.metric.to_string(),
            unit: self.unit,
            is_ratio: self.is_ratio,
            baseline: b,
            candidate: c,
            delta,
            pct,
            text_delta,
            matched: self.matched,
            incomparable: None,
            noise: None,
        }
    }
}

/// Filters and ordering shared by compare and show.
#[derive(Debug, Clone, Default)]
pub struct ViewOptions {
    /// Grouping.
    pub grouping: Grouping,
    /// Sections to render (empty: all).
    pub sections: Vec<Section>,
    /// Metric rows to keep in the primary / derived tables (empty: all).
    pub metrics: Vec<String>,
    /// `(metric, descending)`.
    pub sort_by: Option<(String, bool)>,
    /// Keep at most this many rows per table.
    pub limit: Option<usize>,
}

impl ViewOptions {
    pub(crate) fn wants(&self, s: Section) -> bool {
        self.sections.is_empty() || self.sections.contains(&s)
    }
}

/// The whole result of a compare or show.
#[derive(Debug, Clone, Serialize)]
pub struct View {
    /// Grouping axis.
    pub group_by: GroupBy,
    /// Rows, table by table (primary and taskstats first, derived, then
    /// the secondary sections).
    pub rows: Vec<Row>,
    /// Baseline host context missing.
    pub baseline_host_missing: bool,
    /// Candidate host context missing (compare only).
    pub candidate_host_missing: bool,
    /// Host context by side (`baseline`, `candidate`), as recorded.
    pub hosts: BTreeMap<&'static str, crate::model::HostContext>,
    /// The host context and capability states as keys, with the keys whose
    /// values differ between the two sides marked.
    pub host: Vec<HostRow>,
    /// Why values are missing, by side (`baseline`, `candidate`).
    pub capabilities: BTreeMap<&'static str, SideCapabilities>,
    /// Threads that exited before the (candidate) capture, from `record`.
    pub exited: Vec<crate::model::ExitedTally>,
    /// Rows left out by the limit: per-thread metrics, derived metrics.
    pub omitted_rows: (usize, usize),
    /// Rows left out by the limit in the secondary tables, by table name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub omitted_section_rows: BTreeMap<&'static str, usize>,
    /// Two-directory compare: the snapshots on each side (baseline,
    /// candidate) whose medians are compared.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub samples: Option<(usize, usize)>,
}

/// A view as `runq ctprof show --json` prints it.
#[derive(Debug, Serialize)]
#[serde(transparent)]
pub struct ShowDocument<'a>(pub &'a View);

impl runq_common::json::JsonDocument for ShowDocument<'_> {
    const TOOL: &'static str = "runq ctprof show";
    const SCHEMA_VERSION: u32 = 1;
}

/// A view as `runq ctprof compare --json` prints it (and `runq run
/// --ctprof` writes to `compare.json`).
#[derive(Debug, Serialize)]
#[serde(transparent)]
pub struct CompareDocument<'a>(pub &'a View);

impl runq_common::json::JsonDocument for CompareDocument<'_> {
    const TOOL: &'static str = "runq ctprof compare";
    const SCHEMA_VERSION: u32 = 1;
}

/// One host-context key on each side (`None`: not recorded there).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HostRow {
    /// `kernel_release`, `sched.sched_rr_timeslice_ms`,
    /// `sched_debugfs.base_slice_ns`, `capability.delayacct`, ...
    pub key: String,
    /// Baseline value (the only one for show).
    pub baseline: Option<String>,
    /// Candidate value (compare only).
    pub candidate: Option<String>,
    /// True when a compare's two sides disagree.
    pub differs: bool,
}

/// One side's values of a row over its snapshots.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Spread {
    /// Snapshots that had the row.
    pub n: usize,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
}

/// The noise verdict of a two-directory compare row (decided by
/// [`crate::compare::median::within_noise`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Noise {
    /// True when the change is within the noise (see the module doc).
    pub within: bool,
    /// The baseline side's spread.
    pub baseline: Spread,
    /// The candidate side's spread.
    pub candidate: Spread,
}
