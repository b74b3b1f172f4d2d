//! Per-group worker setup applied in the worker right after its start
//! signal: CPU affinity, scheduling policy, nice and NUMA memory policy.
//! A failure is recorded in the report's `affinity_error`; the worker runs
//! on regardless.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

/// Where a worker may run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Affinity {
    /// Keep the parent's mask (and the cgroup's cpuset).
    #[default]
    Inherit,
    /// Exactly these CPUs.
    Cpus(BTreeSet<usize>),
    /// One CPU.
    Single(usize),
    /// A random subset of this many online CPUs, drawn per worker.
    Random(usize),
}

/// Scheduling policy of a worker.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SchedPolicy {
    /// SCHED_OTHER (CFS/EEVDF).
    #[default]
    Normal,
    /// SCHED_BATCH.
    Batch,
    /// SCHED_IDLE.
    Idle,
    /// SCHED_FIFO at this priority (1..=99).
    Fifo(u32),
    /// SCHED_RR at this priority (1..=99).
    Rr(u32),
    /// SCHED_EXT (policy 7): scheduled by the loaded sched_ext BPF
    /// scheduler. Needed when that scheduler is not in switch-all mode,
    /// where it only schedules the tasks that ask for it.
    Ext,
    /// SCHED_DEADLINE with these parameters, in µs.
    Deadline {
        /// Runtime per period.
        runtime_us: u64,
        /// Relative deadline.
        deadline_us: u64,
        /// Period.
        period_us: u64,
    },
}

/// NUMA memory policy (set_mempolicy) of a worker.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemPolicy {
    /// The default policy.
    #[default]
    Default,
    /// Allocate only on these nodes.
    Bind(BTreeSet<usize>),
    /// Prefer this node.
    Preferred(usize),
    /// Interleave across these nodes.
    Interleave(BTreeSet<usize>),
}

/// Everything applied to each worker of a group before its loop.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct WorkerSetup {
    /// CPU affinity.
    pub affinity: Affinity,
    /// Scheduling policy.
    pub policy: SchedPolicy,
    /// Nice value (-20..=19), applied to SCHED_OTHER/BATCH/IDLE.
    pub nice: Option<i32>,
    /// Memory policy.
    pub mempolicy: MemPolicy,
}

impl WorkerSetup {
    /// Checks values that can be judged before any worker runs.
    pub fn validate(&self) -> Result<(), String> {
        if let Some(n) = self.nice {
            if !(-20..=19).contains(&n) {
                return Err(format!("nice {n} is outside -20..=19"));
            }
        }
        match &self.policy {
            SchedPolicy::Fifo(p) | SchedPolicy::Rr(p) if !(1..=99).contains(p) => {
                return Err(format!("real-time priority {p} is outside 1..=99"));
            }
            SchedPolicy::Deadline {
                runtime_us,
                deadline_us,
                period_us,
            } if !(runtime_us <= deadline_us && deadline_us <= period_us && *runtime_us > 0) => {
                return Err(
                    "deadline parameters need 0 < runtime_us <= deadline_us <= period_us".into(),
                );
            }
            _ => {}
        }
        match &self.affinity {
            Affinity::Cpus(c) if c.is_empty() => Err("affinity CPU list is empty".into()),
            Affinity::Random(0) => Err("random affinity needs at least 1 CPU".into()),
            _ => Ok(()),
        }
    }

    /// True when the setup needs privileges a normal user lacks.
    pub fn needs_privilege(&self) -> bool {
        matches!(
            self.policy,
            SchedPolicy::Fifo(_) | SchedPolicy::Rr(_) | SchedPolicy::Deadline { .. }
        ) || self.nice.is_some_and(|n| n < 0)
    }

    /// Applies the setup to the calling thread. `seed` drives the random
    /// affinity draw. Returns every failure, joined, or `None`.
    pub fn apply(&self, seed: u64) -> Option<String> {
        let mut errors = Vec::new();
        if let Err(e) = apply_affinity(&self.affinity, seed) {
            errors.push(e);
        }
        if let Err(e) = apply_policy(&self.policy) {
            errors.push(format!("policy: {e}"));
        }
        if let Some(n) = self.nice {
            // SAFETY: setpriority on the calling thread.
            let rc =
                unsafe { libc::setpriority(libc::PRIO_PROCESS, runq_kernel::clock::gettid(), n) };
            if rc != 0 {
                errors.push(format!("nice {n}: {}", std::io::Error::last_os_error()));
            }
        }
        if let Err(e) = apply_mempolicy(&self.mempolicy) {
            errors.push(format!("mempolicy: {e}"));
        }
        (!errors.is_empty()).then(|| errors.join("; "))
    }
}

/// Picks `count` distinct CPUs from `online` with a xorshift draw.
pub fn random_subset(online: &BTreeSet<usize>, count: usize, seed: u64) -> BTreeSet<usize> {
    let mut pool: Vec<usize> = online.iter().copied().collect();
    let mut x = seed | 1;
    let mut out = BTreeSet::new();
    while out.len() < count.min(pool.len() + out.len()) && !pool.is_empty() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let i = (x % pool.len() as u64) as usize;
        out.insert(pool.swap_remove(i));
    }
    out
}

/// Sets the calling thread's CPU mask.
pub fn set_affinity(cpus: &BTreeSet<usize>) -> std::io::Result<()> {
    // SAFETY: a zeroed cpu_set_t is valid; CPU_SET bounds-checks via the size.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &cpu in cpus {
            if cpu >= libc::CPU_SETSIZE as usize {
                return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
            }
            libc::CPU_SET(cpu, &mut set);
        }
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The calling thread's CPU affinity mask (empty if it cannot be read).
pub fn current_affinity() -> BTreeSet<usize> {
    // SAFETY: a zeroed cpu_set_t is valid; the kernel fills it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return BTreeSet::new();
        }
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect()
    }
}

/// Pins the calling thread; the error names the CPUs that were asked for.
fn apply_affinity(a: &Affinity, seed: u64) -> Result<(), String> {
    let cpus = match a {
        Affinity::Inherit => return Ok(()),
        Affinity::Cpus(cpus) => cpus.clone(),
        Affinity::Single(cpu) => BTreeSet::from([*cpu]),
        Affinity::Random(n) => random_subset(&runq_kernel::cpulist::online_cpus(), *n, seed),
    };
    set_affinity(&cpus).map_err(|e| {
        let list: Vec<String> = cpus.iter().map(usize::to_string).collect();
        format!("affinity to CPUs {}: {e}", list.join(","))
    })
}

/// The sched_ext class's policy number (`SCHED_EXT` in linux/sched.h; not
/// in libc yet).
const SCHED_EXT: i32 = 7;

/// The kernel's `struct sched_attr` (for SCHED_DEADLINE).
#[repr(C)]
#[derive(Default)]
struct SchedAttr {
    size: u32,
    sched_policy: u32,
    sched_flags: u64,
    sched_nice: i32,
    sched_priority: u32,
    sched_runtime: u64,
    sched_deadline: u64,
    sched_period: u64,
}

/// Puts the calling thread in `p`. `Normal` is applied too when the
/// thread is not SCHED_OTHER: a worker must not inherit a real-time policy
/// from the shell that started runq (`chrt -f 2 runq run` left 2,000
/// FIFO spinners that never yielded to the parent).
fn apply_policy(p: &SchedPolicy) -> std::io::Result<()> {
    let (policy, prio) = match p {
        // SAFETY: sched_getscheduler on the calling thread.
        SchedPolicy::Normal if unsafe { libc::sched_getscheduler(0) } == libc::SCHED_OTHER => {
            return Ok(())
        }
        SchedPolicy::Normal => (libc::SCHED_OTHER, 0),
        SchedPolicy::Batch => (libc::SCHED_BATCH, 0),
        SchedPolicy::Idle => (libc::SCHED_IDLE, 0),
        SchedPolicy::Fifo(p) => (libc::SCHED_FIFO, *p as i32),
        SchedPolicy::Rr(p) => (libc::SCHED_RR, *p as i32),
        SchedPolicy::Ext => (SCHED_EXT, 0),
        SchedPolicy::Deadline {
            runtime_us,
            deadline_us,
            period_us,
        } => {
            let attr = SchedAttr {
                size: std::mem::size_of::<SchedAttr>() as u32,
                sched_policy: 6, // SCHED_DEADLINE
                sched_runtime: runtime_us * 1000,
                sched_deadline: deadline_us * 1000,
                sched_period: period_us * 1000,
                ..Default::default()
            };
            // SAFETY: attr is a valid sched_attr for the calling thread.
            let rc =
                unsafe { libc::syscall(libc::SYS_sched_setattr, 0, &attr as *const SchedAttr, 0) };
            return if rc == 0 {
                Ok(())
            } else {
                Err(std::io::Error::last_os_error())
            };
        }
    };
    let param = libc::sched_param {
        sched_priority: prio,
    };
    // SAFETY: param is valid; 0 means the calling thread.
    if unsafe { libc::sched_setscheduler(0, policy, &param) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

fn node_mask(nodes: &BTreeSet<usize>) -> std::io::Result<[libc::c_ulong; 16]> {
    let mut mask = [0 as libc::c_ulong; 16];
    let bits = libc::c_ulong::BITS as usize;
    for &n in nodes {
        if n >= mask.len() * bits {
            return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
        }
        mask[n / bits] |= 1 << (n % bits);
    }
    Ok(mask)
}

fn apply_mempolicy(m: &MemPolicy) -> std::io::Result<()> {
    const MPOL_PREFERRED: i32 = 1;
    const MPOL_BIND: i32 = 2;
    const MPOL_INTERLEAVE: i32 = 3;
    let (mode, nodes) = match m {
        MemPolicy::Default => return Ok(()),
        MemPolicy::Bind(n) => (MPOL_BIND, n.clone()),
        MemPolicy::Preferred(n) => (MPOL_PREFERRED, BTreeSet::from([*n])),
        MemPolicy::Interleave(n) => (MPOL_INTERLEAVE, n.clone()),
    };
    let mask = node_mask(&nodes)?;
    let maxnode = (mask.len() * libc::c_ulong::BITS as usize + 1) as libc::c_ulong;
    // SAFETY: mask outlives the call; maxnode matches its size.
    let rc = unsafe { libc::syscall(libc::SYS_set_mempolicy, mode, mask.as_ptr(), maxnode) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg_attr(not(runq_root), ignore = "needs root")]
    fn a_normal_worker_does_not_keep_an_inherited_real_time_policy() {
        std::thread::spawn(|| {
            let fifo = libc::sched_param { sched_priority: 1 };
            // SAFETY: sched_setscheduler on this test's own thread.
            assert_eq!(
                unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &fifo) },
                0
            );
            apply_policy(&SchedPolicy::Normal).unwrap();
            // SAFETY: sched_getscheduler on the calling thread.
            assert_eq!(unsafe { libc::sched_getscheduler(0) }, libc::SCHED_OTHER);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn random_subset_is_distinct_and_bounded() {
        let online: BTreeSet<usize> = (0..8).collect();
        for seed in 0..50 {
            let s = random_subset(&online, 3, seed);
            assert_eq!(s.len(), 3);
            assert!(s.is_subset(&online));
        }
        assert_eq!(random_subset(&online, 20, 1), online);
    }

    #[test]
    fn validation_catches_bad_values() {
        let bad = [
            WorkerSetup {
                nice: Some(20),
                ..Default::default()
            },
            WorkerSetup {
                policy: SchedPolicy::Fifo(0),
                ..Default::default()
            },
            WorkerSetup {
                policy: SchedPolicy::Deadline {
                    runtime_us: 10,
                    deadline_us: 5,
                    period_us: 20,
                },
                ..Default::default()
            },
            WorkerSetup {
                affinity: Affinity::Cpus(BTreeSet::new()),
                ..Default::default()
            },
            WorkerSetup {
                affinity: Affinity::Random(0),
                ..Default::default()
            },
        ];
        for s in bad {
            assert!(s.validate().is_err(), "{s:?}");
        }
        assert!(WorkerSetup::default().validate().is_ok());
    }

    #[test]
    fn bad_affinity_is_reported_not_fatal() {
        // Run in a thread so the test runner's mask is untouched.
        let err = std::thread::spawn(|| {
            WorkerSetup {
                affinity: Affinity::Single(100_000),
                ..Default::default()
            }
            .apply(1)
        })
        .join()
        .unwrap();
        assert!(err.unwrap().starts_with("affinity to CPUs"));
    }

    #[test]
    fn batch_policy_and_nice_apply_to_a_thread() {
        let setup = WorkerSetup {
            policy: SchedPolicy::Batch,
            nice: Some(5),
            ..Default::default()
        };
        let (err, policy) = std::thread::spawn(move || {
            // SAFETY: querying the calling thread's policy.
            (setup.apply(1), unsafe { libc::sched_getscheduler(0) })
        })
        .join()
        .unwrap();
        assert_eq!(err, None);
        assert_eq!(policy, libc::SCHED_BATCH);
    }
}
