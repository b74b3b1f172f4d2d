//! Missing is not zero: which per-thread sources were read, and why the
//! others were not.
//!
//! A snapshot records unavailability at two levels. Host-wide reasons (no
//! schedstats, delay accounting off, taskstats refused) live once in
//! [`Capabilities::unavailable`]; per-thread exceptions (a file denied, a
//! thread gone before its taskstats query) live in the thread's
//! `unavailable` map. A value whose source is unavailable at either level
//! is rendered `-` (JSON `null`), never 0. A source absent from both maps
//! was read, so a zero value there is a real zero.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// A per-thread data source whose availability is tracked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// `/proc/<tid>/schedstat` (`CONFIG_SCHED_INFO`).
    Schedstat,
    /// `/proc/<tid>/sched` (`CONFIG_SCHED_DEBUG`).
    Sched,
    /// The schedstat-gated keys of the sched file (`CONFIG_SCHEDSTATS`).
    Schedstats,
    /// `/proc/<tid>/io` (`CONFIG_TASK_IO_ACCOUNTING`).
    Io,
    /// The taskstats genetlink query (watermarks).
    Taskstats,
    /// The delay-accounting fields of the taskstats answer.
    Delayacct,
    /// jemalloc's per-thread allocation counters (ptrace).
    Jemalloc,
    /// A process leader's `/proc/<pid>/smaps_rollup`.
    SmapsRollup,
}

impl Source {
    /// Every source.
    pub const ALL: [Source; 8] = [
        Source::Schedstat,
        Source::Sched,
        Source::Schedstats,
        Source::Io,
        Source::Taskstats,
        Source::Delayacct,
        Source::Jemalloc,
        Source::SmapsRollup,
    ];

    /// The snake_case name used in JSON and text.
    pub fn name(self) -> &'static str {
        match self {
            Source::Schedstat => "schedstat",
            Source::Sched => "sched",
            Source::Schedstats => "schedstats",
            Source::Io => "io",
            Source::Taskstats => "taskstats",
            Source::Delayacct => "delayacct",
            Source::Jemalloc => "jemalloc",
            Source::SmapsRollup => "smaps_rollup",
        }
    }
}

/// Why a source gave no value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// The kernel was built without `CONFIG_SCHEDSTATS`.
    NoSchedstats,
    /// `kernel.sched_schedstats` is 0.
    SchedstatsOff,
    /// `kernel.task_delayacct` is 0.
    DelayacctOff,
    /// Permission denied (`EPERM`/`EACCES`, or taskstats without
    /// `CAP_NET_ADMIN`).
    Eperm,
    /// The thread exited between listing and reading.
    ThreadGone,
    /// Not asked for (`--no-taskstats`) or the interface could not be opened.
    NotQueried,
    /// The kernel does not provide the file.
    Absent,
    /// Read or parse error.
    Error,
    /// The process maps a shared libjemalloc, whose counters are not read
    /// (only a statically linked jemalloc is).
    DynamicLib,
    /// Not read on this architecture (the reader is x86_64 only).
    UnsupportedArch,
    /// jemalloc is linked into the executable, which is stripped of the
    /// symbol or debug info that locates its counters.
    Stripped,
}

impl Reason {
    /// Every reason.
    pub const ALL: [Reason; 11] = [
        Reason::NoSchedstats,
        Reason::SchedstatsOff,
        Reason::DelayacctOff,
        Reason::Eperm,
        Reason::ThreadGone,
        Reason::NotQueried,
        Reason::Absent,
        Reason::Error,
        Reason::DynamicLib,
        Reason::UnsupportedArch,
        Reason::Stripped,
    ];

    /// The snake_case name used in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Reason::NoSchedstats => "no_schedstats",
            Reason::SchedstatsOff => "schedstats_off",
            Reason::DelayacctOff => "delayacct_off",
            Reason::Eperm => "eperm",
            Reason::ThreadGone => "thread_gone",
            Reason::NotQueried => "not_queried",
            Reason::Absent => "absent",
            Reason::Error => "error",
            Reason::DynamicLib => "dynamic_lib",
            Reason::UnsupportedArch => "unsupported_arch",
            Reason::Stripped => "stripped",
        }
    }

    /// One-line explanation with the fix where one exists.
    pub fn describe(self) -> &'static str {
        match self {
            Reason::NoSchedstats => "kernel built without CONFIG_SCHEDSTATS",
            Reason::SchedstatsOff => "schedstats off (sysctl kernel.sched_schedstats=1)",
            Reason::DelayacctOff => "delay accounting off (sysctl kernel.task_delayacct=1)",
            Reason::Eperm => "permission denied (run as root)",
            Reason::ThreadGone => "thread exited during the capture",
            Reason::NotQueried => "not queried",
            Reason::Absent => "not provided by this kernel",
            Reason::Error => "read or parse error",
            Reason::DynamicLib => "libjemalloc linked dynamically (only static jemalloc is read)",
            Reason::UnsupportedArch => "not read on this architecture (x86_64 only)",
            Reason::Stripped => {
                "jemalloc linked statically into a stripped executable (keep its symbols and debug info)"
            }
        }
    }
}

/// Deserializes a `source -> reason` map, dropping the entries this build
/// does not know (sources or reasons a newer writer added), so a newer
/// file still loads here.
pub fn lenient_map<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<BTreeMap<Source, Reason>, D::Error> {
    let raw = BTreeMap::<String, String>::deserialize(d)?;
    let known = |k: &str, v: &str| {
        let s = Source::ALL.into_iter().find(|s| s.name() == k)?;
        let r = Reason::ALL.into_iter().find(|r| r.name() == v)?;
        Some((s, r))
    };
    Ok(raw.iter().filter_map(|(k, v)| known(k, v)).collect())
}

/// One host capability as printed by `capture`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct HostCapability {
    /// `schedstats`, `delayacct`, `taskstats`, `psi`, `sched_ext`, `cgroup`.
    pub name: String,
    /// `on`, `off`, `absent`, `denied`, `v2`, `hybrid`, ...
    pub state: String,
    /// The command that turns it on, when one exists and it is not on.
    pub enable: Option<String>,
}

/// Host-wide availability of a snapshot (schema 2).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Capabilities {
    /// Sources unavailable for every thread, with the reason.
    #[serde(deserialize_with = "lenient_map")]
    pub unavailable: BTreeMap<Source, Reason>,
    /// The host capability line.
    pub host: Vec<HostCapability>,
    /// True when inferred from the summaries of a schema-1 file.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub inferred: bool,
}

impl Capabilities {
    /// The `capture` line: `name state (enable)` joined by `; `.
    pub fn host_line(&self) -> String {
        let parts: Vec<String> = self
            .host
            .iter()
            .map(|c| match &c.enable {
                Some(cmd) => format!("{} {} ({cmd})", c.name, c.state),
                None => format!("{} {}", c.name, c.state),
            })
            .collect();
        parts.join("; ")
    }
}

#[cfg(test)]
mod tests;
