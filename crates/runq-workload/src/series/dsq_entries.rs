//! What a sched_ext dump says of one dispatch queue or one waiting
//! task: the entries of [`super::dsq::DsqSeries`], in a leaf module so
//! that a check's detail can carry them without depending on the series.

use serde::{Deserialize, Serialize};

/// One DSQ's depth at one dump.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DsqDepth {
    /// The DSQ's id (`SCX_DSQ_LOCAL`, `SCX_DSQ_GLOBAL` or the BPF
    /// scheduler's own).
    pub dsq: u64,
    /// The CPU, for a local DSQ.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<u32>,
    /// Tasks queued on it.
    pub tasks: u32,
    /// When, ns from the start of the run.
    pub at_ns: u64,
}

/// The runnable task that had waited longest in any dump.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DsqWaiter {
    /// Its pid.
    pub pid: i64,
    /// Its command name.
    pub comm: String,
    /// The CPU whose run queue listed it.
    pub cpu: u32,
    /// How long it had been runnable, ms.
    pub runnable_ms: u64,
    /// The DSQ it sat on; none when the BPF scheduler held it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dsq: Option<u64>,
    /// When, ns from the start of the run.
    pub at_ns: u64,
}
