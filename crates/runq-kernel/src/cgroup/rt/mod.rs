//! Real-time policies (SCHED_FIFO, SCHED_RR) and RT group scheduling:
//! whether a task may enter them where runq places it and, when it may
//! not, the true cause and what to do.
//!
//! The kernel refuses an RT policy with EPERM for two unrelated reasons:
//! the caller lacks CAP_SYS_NICE and its RLIMIT_RTPRIO is below the
//! priority, or (CONFIG_RT_GROUP_SCHED) the task's cpu cgroup has no RT
//! runtime, whatever its capabilities. On cgroup v1 each cpu cgroup has a
//! `cpu.rt_runtime_us`, 0 in every new one, so runq's own cpu cgroups
//! refuse RT tasks; workers with an RT policy then stay in the cpu cgroup
//! runq itself runs in (RT tasks ignore `cpu.shares` and CFS quotas, so
//! they lose no limit). cgroup v2 has no RT runtime file: below the root
//! every cgroup with the cpu controller refuses RT tasks, and only a
//! kernel or boot option can change that.

use std::io;
use std::path::{Path, PathBuf};

use super::layout::{CgroupLayout, HierarchyKind};
use super::CgroupError;

/// The capability bit of CAP_SYS_NICE in `CapEff`.
const CAP_SYS_NICE: u32 = 23;

/// What decides an RT request besides cgroups.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RtFacts {
    /// The highest RT priority the process may take: 99 with
    /// CAP_SYS_NICE, else its RLIMIT_RTPRIO.
    pub max_priority: u32,
    /// On a v1 cpu hierarchy with RT group scheduling (a
    /// `cpu.rt_runtime_us` at its root): `cpu.rt_runtime_us` of every cpu
    /// cgroup from the root down to the one runq runs in.
    pub v1_chain: Option<Vec<(PathBuf, i64)>>,
    /// The v2 hierarchy's root, when runq's cgroups are on v2 and get the
    /// cpu controller (with RT group scheduling they refuse RT tasks).
    pub v2_cpu: Option<PathBuf>,
}

/// Where the workers of a group with an RT policy go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RtPlan {
    /// In the group's cgroups, as any worker (no RT group scheduling in
    /// the way, or no runq cgroup).
    InGroup,
    /// In the group's cgroups except the v1 cpu one: they stay in runq's
    /// own cpu cgroup, which has RT runtime.
    OutsideV1Cpu,
    /// Refused before the run.
    Refuse(RtRefusal),
}

/// Why an RT policy cannot be had, each with what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RtRefusal {
    /// Neither CAP_SYS_NICE nor a high enough RLIMIT_RTPRIO.
    #[error(
        "needs real-time priority {priority}, and this process has neither CAP_SYS_NICE nor \
         RLIMIT_RTPRIO of at least {priority} (it has {max}): run as root, or raise the limit \
         (`ulimit -r {priority}`)"
    )]
    Privilege {
        /// The priority asked for.
        priority: u32,
        /// The highest the process may take.
        max: u32,
    },
    /// v1 RT group scheduling, and runq's own cpu cgroup chain has a
    /// cgroup without RT runtime.
    #[error(
        "real-time policies are refused even to root here: the kernel has RT group scheduling \
         and the cpu cgroup {} that runq runs in has cpu.rt_runtime_us 0; run runq from a cpu \
         cgroup with RT runtime (e.g. `echo $$ > /sys/fs/cgroup/cpu/tasks` first) or give that \
         cgroup some (`echo 950000 > {}/cpu.rt_runtime_us`)",
        .0.display(),
        .0.display()
    )]
    NoV1Runtime(PathBuf),
    /// v2 with RT group scheduling: no cgroup below the root has RT
    /// runtime, and v2 offers no file to give it some.
    #[error(
        "real-time policies are refused even to root in {}: the kernel has RT group scheduling \
         (CONFIG_RT_GROUP_SCHED) and cgroup v2 gives no cgroup below the root RT runtime; boot \
         with `rt_group_sched=0` (kernel 6.16 or later) or a kernel without it, or run the \
         scenario in a VM (`--vm`)",
        .0.display()
    )]
    V2GroupSched(PathBuf),
    /// The kernel refused for a reason runq cannot name.
    #[error("the kernel refused SCHED_FIFO in {where_}: {error}")]
    Other {
        /// Where the probe ran.
        where_: String,
        /// The kernel's error.
        error: String,
    },
}

impl RtRefusal {
    /// True when the fix is a privilege (exit 77 as a missing privilege),
    /// false when the host itself cannot hold the run.
    pub fn is_privilege(&self) -> bool {
        matches!(self, RtRefusal::Privilege { .. })
    }
}

/// Decides where the workers of a group asking for RT `priority` go;
/// `in_runq_cgroup` is whether the group has a runq cgroup.
pub fn plan(facts: &RtFacts, priority: u32, in_runq_cgroup: bool) -> RtPlan {
    if facts.max_priority < priority {
        return RtPlan::Refuse(RtRefusal::Privilege {
            priority,
            max: facts.max_priority,
        });
    }
    if let Some(chain) = &facts.v1_chain {
        if let Some((dir, _)) = chain.iter().find(|(_, runtime)| *runtime == 0) {
            return RtPlan::Refuse(RtRefusal::NoV1Runtime(dir.clone()));
        }
        if in_runq_cgroup {
            return RtPlan::OutsideV1Cpu;
        }
    }
    RtPlan::InGroup
}

/// Names the cause of an EPERM (or other error) from a probe that tried
/// the policy where the plan put it; `dir` is the cgroup the probe ran in.
pub fn refusal_after_probe(facts: &RtFacts, error: &io::Error, dir: &Path) -> RtRefusal {
    let eperm = error.raw_os_error() == Some(libc::EPERM);
    match &facts.v2_cpu {
        Some(root) if eperm && dir != root => RtRefusal::V2GroupSched(dir.to_path_buf()),
        _ => RtRefusal::Other {
            where_: dir.display().to_string(),
            error: error.to_string(),
        },
    }
}

impl RtFacts {
    /// Reads the facts of the running process and host.
    pub fn read(layout: Option<&CgroupLayout>) -> Self {
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        RtFacts {
            max_priority: max_priority(cap_eff(&status), rlimit_rtprio()),
            v1_chain: layout.and_then(|l| v1_rt_chain(l, &own)),
            v2_cpu: layout
                .and_then(CgroupLayout::v2)
                .filter(|h| h.has_controller("cpu"))
                .map(|h| h.root.clone()),
        }
    }
}

/// The `CapEff` mask of a `/proc/<pid>/status` text.
pub fn cap_eff(status: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
}

/// The highest RT priority a process with these may take.
pub fn max_priority(cap_eff: Option<u64>, rlimit_rtprio: u64) -> u32 {
    if cap_eff.is_some_and(|c| c & (1 << CAP_SYS_NICE) != 0) {
        99
    } else {
        rlimit_rtprio.min(99) as u32
    }
}

fn rlimit_rtprio() -> u64 {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we own.
    if unsafe { libc::getrlimit(libc::RLIMIT_RTPRIO, &mut lim) } != 0 {
        return 0;
    }
    lim.rlim_cur
}

/// On a v1 cpu hierarchy with RT group scheduling, `cpu.rt_runtime_us`
/// from its root down to the cgroup that `own_cgroup` (a
/// `/proc/self/cgroup` text) puts runq in; `None` without one.
pub fn v1_rt_chain(layout: &CgroupLayout, own_cgroup: &str) -> Option<Vec<(PathBuf, i64)>> {
    let cpu = layout
        .hierarchies
        .iter()
        .find(|h| matches!(&h.kind, HierarchyKind::V1 { controller } if controller == "cpu"))?;
    let rel = own_cgroup.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        controllers.split(',').any(|c| c == "cpu").then_some(path)
    })?;
    let read = |dir: &Path| -> Option<i64> {
        std::fs::read_to_string(dir.join("cpu.rt_runtime_us"))
            .ok()?
            .trim()
            .parse()
            .ok()
    };
    let mut dir = cpu.root.clone();
    let mut chain = vec![(dir.clone(), read(&dir)?)];
    for part in rel.split('/').filter(|p| !p.is_empty()) {
        dir.push(part);
        chain.push((dir.clone(), read(&dir).unwrap_or(0)));
    }
    Some(chain)
}

/// Tries SCHED_FIFO at `priority` in a child process that `place` puts
/// where a worker would be (it gets the child's pid), and returns the
/// kernel's answer. The child runs only async-signal-safe calls: it waits
/// on a pipe until placed, asks for the policy, and exits with the errno.
pub fn probe_fifo(
    priority: u32,
    place: impl FnOnce(u32) -> Result<(), CgroupError>,
) -> Result<Result<(), io::Error>, CgroupError> {
    let io_err = |what: &str| CgroupError::Io {
        path: PathBuf::from(what),
        source: io::Error::last_os_error(),
    };
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills the two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io_err("pipe for the SCHED_FIFO probe"));
    }
    // SAFETY: the child only calls read, sched_setscheduler and _exit.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        let mut byte = 0u8;
        let param = libc::sched_param {
            sched_priority: priority as i32,
        };
        // SAFETY: async-signal-safe calls on our own descriptors and self.
        unsafe {
            libc::close(fds[1]);
            let placed = libc::read(fds[0], (&mut byte as *mut u8).cast(), 1) == 1;
            if !placed {
                libc::_exit(125);
            }
            let rc = libc::sched_setscheduler(0, libc::SCHED_FIFO, &param);
            libc::_exit(if rc == 0 {
                0
            } else {
                *libc::__errno_location()
            });
        }
    }
    // SAFETY: closing our copy of the read end.
    unsafe { libc::close(fds[0]) };
    if pid < 0 {
        // SAFETY: closing the write end we own.
        unsafe { libc::close(fds[1]) };
        return Err(io_err("fork for the SCHED_FIFO probe"));
    }
    let placed = place(pid as u32);
    if placed.is_ok() {
        // SAFETY: one byte from a live buffer into our pipe.
        unsafe { libc::write(fds[1], b"g".as_ptr().cast(), 1) };
    }
    // SAFETY: closing the write end (an unplaced child reads EOF and exits).
    unsafe { libc::close(fds[1]) };
    let mut status = 0;
    // SAFETY: reaping our own child.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    placed?;
    let code = libc::WEXITSTATUS(status);
    Ok(match code {
        0 => Ok(()),
        errno => Err(io::Error::from_raw_os_error(errno)),
    })
}

#[cfg(test)]
mod tests;
