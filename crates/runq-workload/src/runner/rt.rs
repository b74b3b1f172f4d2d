//! Real-time policies, checked before the first fork: for every group
//! that asks for SCHED_FIFO or SCHED_RR (its `policy`, or RtStarvation's
//! spinners), where its workers can have it, proven by a probe process
//! placed as a worker would be; or the refusal with its true cause (a
//! missing privilege, or RT group scheduling) and what to do. See
//! [`runq_kernel::cgroup::rt`].

use std::path::PathBuf;

use runq_kernel::cgroup::rt::{self, RtFacts, RtPlan, RtRefusal};
use runq_kernel::cgroup::{CgroupLayout, RunCgroups};

use super::RunError;
use crate::placement::SchedPolicy;
use crate::scenario::{GroupSpec, Scenario};
use crate::worktype::WorkType;

/// The RT priority a group's workers ask for, if any.
pub(super) fn rt_priority(g: &GroupSpec) -> Option<u32> {
    match (&g.setup.policy, &g.work) {
        (SchedPolicy::Fifo(p) | SchedPolicy::Rr(p), _) => Some(*p),
        (_, WorkType::RtStarvation(p)) if g.custom.is_none() => {
            Some(u32::try_from(p.rt_priority).unwrap_or(u32::MAX))
        }
        _ => None,
    }
}

/// The highest real-time priority any worker of `scn` may take: the
/// groups' RT policies, RtStarvation's spinners and PreemptStorm's FIFO
/// wakers (priority 1); 0 for none. runq's own boosted threads go above
/// it (see `spawn::boost`).
pub(super) fn worker_rt_ceiling(scn: &Scenario) -> u32 {
    let waker = |g: &GroupSpec| match &g.work {
        WorkType::PreemptStorm(p) if p.fifo && g.custom.is_none() => 1,
        _ => 0,
    };
    scn.groups
        .iter()
        .map(|g| rt_priority(g).unwrap_or(0).max(waker(g)))
        .max()
        .unwrap_or(0)
}

/// Per group, whether its workers stay out of runq's v1 cpu cgroup (RT
/// workers under v1 RT group scheduling); an error when a group's RT
/// policy cannot be had.
pub(super) fn plan_groups(
    scn: &Scenario,
    mut cgroups: Option<&mut RunCgroups>,
) -> Result<Vec<bool>, RunError> {
    let mut outside = vec![false; scn.groups.len()];
    let mut facts = None;
    for (idx, g) in scn.groups.iter().enumerate() {
        let Some(priority) = rt_priority(g) else {
            continue;
        };
        let facts = facts.get_or_insert_with(|| {
            // Without runq's cgroups the workers stay where runq runs,
            // whose cpu cgroup decides all the same.
            let detected = CgroupLayout::detect().ok();
            RtFacts::read(cgroups.as_deref().map(|r| r.layout()).or(detected.as_ref()))
        });
        let name = g.cgroup.as_deref().filter(|_| cgroups.is_some());
        let refuse = |why: RtRefusal| {
            let line = format!("group {}: {why}", g.name);
            if why.is_privilege() {
                RunError::NeedsPrivilege(line)
            } else {
                RunError::HostLacks(line)
            }
        };
        match rt::plan(facts, priority, name.is_some()) {
            RtPlan::Refuse(why) => return Err(refuse(why)),
            RtPlan::OutsideV1Cpu => outside[idx] = true,
            RtPlan::InGroup => {}
        }
        let (answer, dir) = match (name, cgroups.as_deref_mut()) {
            (Some(name), Some(run)) => {
                let cg = run.add_group(name, &Default::default())?;
                let dir = run.group(cg).v2_dir().map(PathBuf::from);
                let answer = rt::probe_fifo(priority, |pid| {
                    run.place_except_v1_cpu(cg, pid, outside[idx])
                })?;
                (answer, dir.unwrap_or_else(|| PathBuf::from(name)))
            }
            _ => (rt::probe_fifo(priority, |_| Ok(()))?, own_v2_dir(facts)),
        };
        if let Err(e) = answer {
            return Err(refuse(rt::refusal_after_probe(facts, &e, &dir)));
        }
    }
    Ok(outside)
}

/// The v2 cgroup runq itself runs in (where an unplaced worker stays).
fn own_v2_dir(facts: &RtFacts) -> PathBuf {
    let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let rel = own
        .lines()
        .find_map(|l| l.strip_prefix("0::"))
        .unwrap_or("/")
        .trim_start_matches('/');
    match &facts.v2_cpu {
        Some(root) => root.join(rel),
        None => PathBuf::from("/").join(rel),
    }
}
