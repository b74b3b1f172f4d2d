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
        if caps.unavailable.contains_key(&src) {
            continue;
        }
        if let Some(r) = shared_reason(snap, src) {
            caps.unavailable.insert(src, r);
        }
    }
    for t in &mut snap.threads {
        if !t.unavailable.is_empty() {
            // A host-wide reason covers the thread, unless it exited.
            t.unavailable
                .retain(|s, r| !caps.unavailable.contains_key(s) || *r == Reason::ThreadGone);
        }
    }
}

/// The reason every thread lacks `src` for, if they all share one. A
/// thread that exited during the capture does not count: a host whose
/// kernel lacks a source lacks it whatever its threads do meanwhile.
fn shared_reason(snap: &CtprofSnapshot, src: Source) -> Option<Reason> {
    let mut reasons = snap
        .threads
        .iter()
        .map(|t| t.unavailable.get(&src).copied())
        .filter(|r| *r != Some(Reason::ThreadGone));
    let first = reasons.next()??;
    reasons.all(|r| r == Some(first)).then_some(first)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ThreadState;

    fn thread(marks: &[(Source, Reason)]) -> ThreadState {
        let mut t = ThreadState::default();
        for &(s, r) in marks {
            t.mark(s, r);
        }
        t
    }

    /// A thread that exited mid-capture does not hide that the kernel
    /// lacks schedstats, and keeps its own reason.
    #[test]
    fn a_thread_gone_mid_capture_does_not_veto_a_host_wide_reason() {
        let none = (Source::Schedstats, Reason::NoSchedstats);
        let gone = (Source::Schedstats, Reason::ThreadGone);
        let mut snap = CtprofSnapshot {
            threads: vec![thread(&[none]), thread(&[gone]), thread(&[none])],
            ..Default::default()
        };
        let mut caps = Capabilities::default();
        consolidate(&mut snap, &mut caps);
        assert_eq!(
            caps.unavailable.get(&Source::Schedstats),
            Some(&Reason::NoSchedstats)
        );
        assert!(snap.threads[0].unavailable.is_empty());
        assert_eq!(
            snap.threads[1].unavailable.get(&Source::Schedstats),
            Some(&Reason::ThreadGone)
        );
    }

    /// Threads that disagree for another reason keep it per thread.
    #[test]
    fn threads_that_differ_keep_their_reasons() {
        let mut snap = CtprofSnapshot {
            threads: vec![
                thread(&[(Source::Schedstats, Reason::NoSchedstats)]),
                thread(&[(Source::Schedstats, Reason::Eperm)]),
            ],
            ..Default::default()
        };
        let mut caps = Capabilities::default();
        consolidate(&mut snap, &mut caps);
        assert!(caps.unavailable.is_empty());
        assert!(snap.threads.iter().all(|t| t.unavailable.len() == 1));
    }
}
