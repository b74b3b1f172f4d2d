//! The host's capabilities as a capture finds them: the sysctls behind
//! schedstats and delay accounting, taskstats' outcome, PSI, sched_ext and
//! the cgroup version, and the sources every thread lacked.

use std::path::Path;

use crate::avail::{Capabilities, HostCapability, Reason, Source};
use crate::model::CtprofSnapshot;

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
