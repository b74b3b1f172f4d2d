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
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::model::CtprofSnapshot;
use crate::registry::CtprofMetricDef;

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

/// The source a metric's value comes from, when it can be unavailable
/// independently of the thread's stat file.
pub fn metric_source(def: &CtprofMetricDef) -> Option<Source> {
    let gate = def.config_gates.first().copied().unwrap_or("");
    match gate {
        "CONFIG_SCHEDSTATS" => Some(Source::Schedstats),
        "CONFIG_SCHED_INFO" => Some(Source::Schedstat),
        "CONFIG_TASK_IO_ACCOUNTING" => Some(Source::Io),
        // The runqueue delay comes from sched_info and is filled even with
        // delay accounting off; the other categories need it on.
        "CONFIG_TASK_DELAY_ACCT" if def.name.starts_with("cpu_delay_") => Some(Source::Taskstats),
        "CONFIG_TASK_DELAY_ACCT" => Some(Source::Delayacct),
        "CONFIG_TASK_XACCT" => Some(Source::Taskstats),
        _ => match def.name {
            "nr_migrations" | "fair_slice_ns" => Some(Source::Sched),
            "allocated_bytes" | "deallocated_bytes" => Some(Source::Jemalloc),
            _ => None,
        },
    }
}

fn sysctl(proc_root: &Path, name: &str) -> Option<String> {
    std::fs::read_to_string(proc_root.join("sys/kernel").join(name))
        .ok()
        .map(|s| s.trim().to_string())
}

/// The schedstats reason on this host: off (sysctl present) or not built.
pub fn schedstats_reason(proc_root: &Path) -> Reason {
    match sysctl(proc_root, "sched_schedstats") {
        Some(_) => Reason::SchedstatsOff,
        None => Reason::NoSchedstats,
    }
}

fn cap(name: &str, state: &str, enable: Option<&str>) -> HostCapability {
    HostCapability {
        name: name.into(),
        state: state.into(),
        enable: enable.map(str::to_string),
    }
}

fn toggle(proc_root: &Path, name: &str, sysctl_name: &str) -> HostCapability {
    match sysctl(proc_root, sysctl_name).as_deref() {
        Some("0") => cap(name, "off", Some(&format!("sysctl kernel.{sysctl_name}=1"))),
        Some(_) => cap(name, "on", None),
        None => cap(name, "absent", None),
    }
}

/// Probes the host: schedstats, delay accounting, taskstats (from the
/// capture's outcome), PSI, sched_ext and the cgroup version.
pub fn host_capabilities(proc_root: &Path, snap: &CtprofSnapshot) -> Vec<HostCapability> {
    let mut v = vec![
        toggle(proc_root, "schedstats", "sched_schedstats"),
        toggle(proc_root, "delayacct", "task_delayacct"),
    ];
    let ts = snap.taskstats_summary.as_ref();
    v.push(match ts {
        Some(t) if t.unavailable.is_some() => cap("taskstats", "not-queried", None),
        Some(t) if t.eperm_count > 0 && t.ok_count == 0 => cap(
            "taskstats",
            "denied",
            Some("run as root (needs CAP_NET_ADMIN)"),
        ),
        Some(_) => cap("taskstats", "on", None),
        None => cap("taskstats", "not-queried", None),
    });
    v.push(if proc_root.join("pressure/cpu").exists() {
        cap("psi", "on", None)
    } else {
        cap("psi", "off", Some("boot with psi=1"))
    });
    v.push(match &snap.sched_ext {
        Some(s) => cap("sched_ext", &s.state, None),
        None => cap("sched_ext", "absent", None),
    });
    let roots = runq_kernel::cgroup_stats::CgroupRoots::detect();
    let version = match (roots.v2.is_some(), roots.v1.is_empty()) {
        (true, true) => "v2",
        (true, false) => "hybrid",
        (false, false) => "v1",
        (false, true) => "none",
    };
    v.push(cap("cgroup", version, None));
    v
}

/// Capabilities of a schema-1 file, inferred from its summaries.
pub fn infer_v1(snap: &CtprofSnapshot) -> Capabilities {
    let mut un = BTreeMap::new();
    if let (Some(p), Some(probe)) = (&snap.parse_summary, &snap.probe_summary) {
        let sched_ok = probe.read_ok.get("sched").copied().unwrap_or(0);
        if sched_ok > 0 && p.sched_without_schedstats >= sched_ok {
            un.insert(Source::Schedstats, Reason::NoSchedstats);
        }
    }
    if let Some(ts) = &snap.taskstats_summary {
        let reason = if ts.unavailable.is_some() {
            Some(Reason::NotQueried)
        } else if ts.eperm_count > 0 && ts.ok_count == 0 {
            Some(Reason::Eperm)
        } else {
            None
        };
        if let Some(r) = reason {
            un.insert(Source::Taskstats, r);
            un.insert(Source::Delayacct, r);
        } else if ts.delayacct_enabled == Some(false) {
            un.insert(Source::Delayacct, Reason::DelayacctOff);
        }
    }
    Capabilities {
        unavailable: un,
        host: Vec::new(),
        inferred: true,
    }
}

/// Moves sources that every thread lacks for the same reason to the
/// host-wide map, and drops per-thread entries a host-wide one covers.
pub fn consolidate(snap: &mut CtprofSnapshot, caps: &mut Capabilities) {
    for src in Source::ALL {
        if caps.unavailable.contains_key(&src) || snap.threads.is_empty() {
            continue;
        }
        let first = snap.threads[0].unavailable.get(&src).copied();
        if let Some(r) = first {
            if snap
                .threads
                .iter()
                .all(|t| t.unavailable.get(&src) == Some(&r))
            {
                caps.unavailable.insert(src, r);
            }
        }
    }
    for t in &mut snap.threads {
        if !t.unavailable.is_empty() {
            t.unavailable
                .retain(|s, _| !caps.unavailable.contains_key(s));
        }
    }
}

#[cfg(test)]
mod tests;
