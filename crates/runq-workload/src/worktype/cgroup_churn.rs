//! CgroupChurn (ktstr's nested task move): each worker moves itself
//! between two leaf cgroups, `churn-a` and `churn-b`, made under its own
//! group's cgroup in every hierarchy runq placed it in (the v2 unified
//! one and, on hybrid hosts, the v1 `cpu` and `cpuset` ones), then spins.
//! Every iteration is a cgroup migration of a running task.
//!
//! The worker learns its cgroup from `/proc/self/cgroup` on its first
//! iteration. Every worker of the group creates the leaves, an existing
//! one being fine, so creation is race-free; on v1 cpuset each also copies
//! the parent's CPUs and memory nodes into them before moving in. A worker
//! in no runq cgroup (`--no-cgroups`, or not root) cannot churn: it spins
//! in place and reports why as a setup error (the `setup_applied` check).
//! Processes only: a thread cannot have a cgroup of its own.

use std::path::{Path, PathBuf};

use runq_kernel::cgroup::{create_child_cgroup, CgroupLayout, Hierarchy, RUNQ_PARENT};

use super::{independent, PreparedWork, SpinParams, TypeInfo, WorkerBody};
use crate::telemetry::Telemetry;

/// Description for `--list`.
pub const INFO: TypeInfo = TypeInfo {
    name: "CgroupChurn",
    summary: "each worker moves itself between two child cgroups (churn-a, churn-b) of its \
              group's cgroup every iteration, in every hierarchy it was placed in; needs the \
              group to have a cgroup (processes only)",
    units: "spin_iters units per move (at least 1)",
    wakes: None,
    workers: super::WorkerRule::Any,
    wake_figure: super::WakeFigure::None,
    params: super::ranges::SPIN,
    needs: super::HostNeed::Nothing,
};

/// The two leaves each worker alternates between.
const LEAVES: [&str; 2] = ["churn-a", "churn-b"];

/// One line of `/proc/self/cgroup`: the v1 controllers (`None` for the v2
/// unified hierarchy) and the path below the hierarchy's root.
#[derive(Debug, PartialEq, Eq)]
struct Membership<'a> {
    v1_controllers: Option<Vec<&'a str>>,
    path: &'a str,
}

/// The memberships listed in a `/proc/<pid>/cgroup` text.
fn parse_memberships(text: &str) -> Vec<Membership<'_>> {
    text.lines()
        .filter_map(|line| {
            let mut parts = line.splitn(3, ':');
            let (_id, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
            let v1_controllers =
                (!controllers.is_empty()).then(|| controllers.split(',').collect());
            Some(Membership {
                v1_controllers,
                path,
            })
        })
        .collect()
}

/// The directory of each hierarchy of `layout` in which the memberships
/// put the task inside runq's own subtree.
fn placed_dirs(memberships: &[Membership<'_>], layout: &CgroupLayout) -> Vec<(Hierarchy, PathBuf)> {
    let runq_prefix = format!("/{RUNQ_PARENT}/");
    layout
        .hierarchies
        .iter()
        .filter_map(|h| {
            let m = memberships.iter().find(|m| match &m.v1_controllers {
                None => h.is_v2(),
                Some(cs) => !h.is_v2() && cs.iter().any(|c| h.has_controller(c)),
            })?;
            m.path
                .starts_with(&runq_prefix)
                .then(|| (h.clone(), h.root.join(m.path.trim_start_matches('/'))))
        })
        .collect()
}

/// Finds the worker's group cgroups and makes the two leaves under each:
/// per hierarchy, the leaves' directories.
fn make_leaves() -> Result<Vec<[PathBuf; 2]>, String> {
    let text = std::fs::read_to_string("/proc/self/cgroup")
        .map_err(|e| format!("CgroupChurn: /proc/self/cgroup: {e}"))?;
    let layout = CgroupLayout::detect().map_err(|e| format!("CgroupChurn: {e}"))?;
    let dirs = placed_dirs(&parse_memberships(&text), &layout);
    if dirs.is_empty() {
        return Err(
            "CgroupChurn: the worker is in no runq cgroup (the group needs a cgroup, \
                    root, and no --no-cgroups), so it spun without moving"
                .into(),
        );
    }
    dirs.iter()
        .map(|(h, dir)| {
            let leaves = LEAVES.map(|leaf| dir.join(leaf));
            for leaf in &leaves {
                create_child_cgroup(h, leaf).map_err(|e| format!("CgroupChurn: {e}"))?;
            }
            Ok(leaves)
        })
        .collect()
}

/// Moves the calling process into the cgroup `dir`.
fn move_into(dir: &Path) -> Result<(), String> {
    let procs = dir.join("cgroup.procs");
    std::fs::write(&procs, std::process::id().to_string())
        .map_err(|e| format!("CgroupChurn: moving into {}: {e}", procs.display()))
}

struct Body {
    spin: u64,
    /// Per hierarchy, the two leaves; `None` before the first iteration.
    leaves: Option<Vec<[PathBuf; 2]>>,
    /// The leaf (0 or 1) the next move goes to.
    next: usize,
    /// The first failure to set up or move; the worker spins on.
    error: Option<String>,
}

impl Body {
    /// Moves to the next leaf in every hierarchy.
    fn move_on(&mut self) {
        let leaves = self.leaves.get_or_insert_with(|| {
            make_leaves().unwrap_or_else(|e| {
                self.error.get_or_insert(e);
                Vec::new()
            })
        });
        for pair in leaves.iter() {
            if let Err(e) = move_into(&pair[self.next]) {
                self.error.get_or_insert(e);
            }
        }
        self.next ^= 1;
    }
}

impl WorkerBody for Body {
    #[inline(always)]
    fn iterate(&mut self, tel: &mut Telemetry) -> u64 {
        self.move_on();
        tel.spin(self.spin)
    }

    fn setup_error(&self) -> Option<String> {
        self.error.clone()
    }
}

/// Builds the per-worker bodies.
pub fn prepare(p: &SpinParams) -> Box<dyn PreparedWork> {
    let spin = p.spin_iters;
    independent(move |_| {
        Ok(Box::new(Body {
            spin,
            leaves: None,
            next: 0,
            error: None,
        }))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use runq_kernel::cgroup::HierarchyKind;

    fn hybrid() -> CgroupLayout {
        let v1 = |c: &str| Hierarchy {
            root: format!("/sys/fs/cgroup/{c}").into(),
            kind: HierarchyKind::V1 {
                controller: c.into(),
            },
        };
        CgroupLayout {
            hierarchies: vec![
                Hierarchy {
                    root: "/sys/fs/cgroup/unified".into(),
                    kind: HierarchyKind::V2 {
                        controllers: Default::default(),
                    },
                },
                v1("cpu"),
                v1("cpuset"),
            ],
        }
    }

    const HYBRID: &str = "12:memory:/user.slice\n\
                          5:cpu,cpuacct:/runq/9-1/nest/churn\n\
                          3:cpuset:/runq/9-1/nest/churn\n\
                          0::/runq/9-1/nest/churn\n";

    #[test]
    fn memberships_parse_v1_and_v2_lines() {
        let m = parse_memberships(HYBRID);
        assert_eq!(m.len(), 4);
        assert_eq!(m[1].v1_controllers, Some(vec!["cpu", "cpuacct"]));
        assert_eq!(
            m[3],
            Membership {
                v1_controllers: None,
                path: "/runq/9-1/nest/churn"
            }
        );
    }

    #[test]
    fn the_group_is_found_in_every_hierarchy_runq_placed_it_in() {
        let dirs: Vec<PathBuf> = placed_dirs(&parse_memberships(HYBRID), &hybrid())
            .into_iter()
            .map(|(_, d)| d)
            .collect();
        assert_eq!(
            dirs,
            [
                "/sys/fs/cgroup/unified/runq/9-1/nest/churn",
                "/sys/fs/cgroup/cpu/runq/9-1/nest/churn",
                "/sys/fs/cgroup/cpuset/runq/9-1/nest/churn",
            ]
            .map(PathBuf::from)
        );
    }

    #[test]
    fn a_task_outside_runq_has_nowhere_to_churn() {
        let outside = "3:cpuset:/\n0::/user.slice/session-1.scope\n";
        assert!(placed_dirs(&parse_memberships(outside), &hybrid()).is_empty());
    }
}
