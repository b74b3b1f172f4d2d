//! A delta snapshot file's shape: what changed since the previous file
//! of a recording, thread by thread (written and applied by
//! [`crate::record::delta`]).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::model::{CtprofParseSummary, CtprofProbeSummary, ExitedTally, Psi, TaskstatsSummary};

/// The `format` marker of a delta snapshot.
pub const DELTA_FORMAT: &str = "runq-ctprof-delta";

/// One thread's change: the fields whose value changed (all of them for a
/// new thread) and the fields that went back to their zero value.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ThreadDelta {
    /// Thread id.
    pub tid: u32,
    /// Start time, clock ticks (tells a reused tid apart).
    pub start: u64,
    /// Fields set to a new value (JSON names of [`crate::model::ThreadState`]).
    #[serde(skip_serializing_if = "Map::is_empty")]
    pub set: Map<String, Value>,
    /// Fields that are back to zero.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unset: Vec<String>,
}

/// A delta snapshot file. Host context, cgroup stats, sched_ext state and
/// capabilities are those of the segment's full snapshot (they are read
/// only when a full snapshot is taken).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DeltaFile {
    /// Always [`DELTA_FORMAT`].
    pub format: String,
    /// Schema version of the writer.
    pub schema_version: u32,
    /// File name of the segment's full snapshot.
    pub base: String,
    /// File name of the snapshot this delta applies to.
    pub prev: String,
    /// Wall-clock capture time, ns since the Unix epoch.
    pub captured_at_unix_ns: u64,
    /// Capture wall time, ns.
    pub capture_duration_ns: u64,
    /// Threads that are new or changed.
    pub threads: Vec<ThreadDelta>,
    /// Threads gone since `prev`, as `(tid, start)`.
    pub gone: Vec<(u32, u64)>,
    /// Host pressure (read every interval).
    pub psi: Psi,
    /// Read outcomes of this interval's reads.
    pub probe_summary: Option<CtprofProbeSummary>,
    /// Parse outcomes of this interval's reads.
    pub parse_summary: Option<CtprofParseSummary>,
    /// Taskstats outcomes of this interval's queries.
    pub taskstats_summary: Option<TaskstatsSummary>,
    /// Threads that exited during the interval.
    pub exited: Vec<ExitedTally>,
}
