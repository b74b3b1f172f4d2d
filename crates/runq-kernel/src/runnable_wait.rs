//! The figures of a host-wide runnable-wait measurement: how long tasks
//! waited, runnable, for a CPU. runq-hud's BPF probe produces them and
//! `runq run`'s host monitor reports them; this crate, below both, holds
//! the one definition.

use serde::{Deserialize, Serialize};

/// Runnable waits that ended while a probe watched.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WaitFigures {
    /// The longest wait, ns (0 when no wait ended).
    pub longest_ns: u64,
    /// The task that waited it (its thread id).
    pub pid: u32,
    /// Its name (comm) when it got the CPU.
    pub comm: String,
    /// The CPU it got after the wait.
    pub cpu: u32,
    /// When that wait ended, ns after the probe began.
    pub at_ns: u64,
    /// Waits that ended.
    pub waits: u64,
    /// Their total, ns.
    pub sum_ns: u64,
    /// Enqueues the probe could not note (its table was full): their
    /// waits are missing.
    pub untracked: u64,
}
