//! CgroupChurn (ktstr's nested task move): each worker moves itself
//! round `groups` leaf cgroups (`churn-a`, `churn-b`, ...), made under its
//! own group's cgroup in every hierarchy runq placed it in (the v2 unified
//! one and, on hybrid hosts, the v1 `cpu` and `cpuset` ones), and spins
//! between moves. With `cycle_ms = 0` every iteration is a move (a cgroup
//! migration of a running task); otherwise a worker moves once per
//! `cycle_ms`, so a lap of the leaves takes `groups × cycle_ms`.
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
use runq_kernel::clock::monotonic_ns;
use serde::{Deserialize, Serialize};

use super::ranges::{ParamRange, MAX_ITERS, MAX_MS};
use super::{independent, PreparedWork, TypeInfo, WorkerBody};
use crate::telemetry::Telemetry;

/// CgroupChurn parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Params {
    /// Spin units per iteration.
    pub spin_iters: u64,
    /// Leaf cgroups each worker moves round, 2 to 26.
    pub groups: u64,
    /// Time between a worker's moves, ms; 0: a move every iteration.
    pub cycle_ms: u64,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            spin_iters: 1024,
            groups: 2,
            cycle_ms: 0,
        }
    }
}

/// Description for `--list`.
pub const INFO: TypeInfo = TypeInfo {
    name: "CgroupChurn",
    summary: "each worker moves itself round `groups` child cgroups (churn-a, churn-b, ...) of \
              its group's cgroup, every iteration or once per cycle_ms, in every hierarchy it \
              was placed in; needs the group to have a cgroup (processes only)",
    units: "spin_iters units per iteration (at least 1); a move every iteration at cycle_ms = 0",
    wakes: None,
    workers: super::WorkerRule::Any,
    wake_figure: super::WakeFigure::None,
    params: &[
        ParamRange::new("spin_iters", 0, MAX_ITERS),
        ParamRange::new("groups", 2, LEAF_NAMES.len() as i64),
        ParamRange::new("cycle_ms", 0, MAX_MS),
    ],
    needs: super::HostNeed::Nothing,
};

/// The leaves' names; a worker uses the first `groups`.
const LEAF_NAMES: [&str; 26] = [
    "churn-a", "churn-b", "churn-c", "churn-d", "churn-e", "churn-f", "churn-g", "churn-h",
    "churn-i", "churn-j", "churn-k", "churn-l", "churn-m", "churn-n", "churn-o", "churn-p",
    "churn-q", "churn-r", "churn-s", "churn-t", "churn-u", "churn-v", "churn-w", "churn-x",
    "churn-y", "churn-z",
];

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

/// The runq cgroups (hierarchy and directory) the calling process is in;
/// `who` names the type in the error when it is in none.
pub(super) fn own_group_dirs(who: &str) -> Result<Vec<(Hierarchy, PathBuf)>, String> {
    let text = std::fs::read_to_string("/proc/self/cgroup")
        .map_err(|e| format!("{who}: /proc/self/cgroup: {e}"))?;
    let layout = CgroupLayout::detect().map_err(|e| format!("{who}: {e}"))?;
    let dirs = placed_dirs(&parse_memberships(&text), &layout);
    if dirs.is_empty() {
        return Err(format!(
            "{who}: the worker is in no runq cgroup (the group needs a cgroup, root, and no \
             --no-cgroups)"
        ));
    }
    Ok(dirs)
}

/// Finds the worker's group cgroups and makes `groups` leaves under each:
/// per hierarchy, the leaves' directories.
fn make_leaves(groups: usize) -> Result<Vec<Vec<PathBuf>>, String> {
    let dirs = own_group_dirs("CgroupChurn").map_err(|e| format!("{e}, so it spun in place"))?;
    dirs.iter()
        .map(|(h, dir)| {
            let leaves: Vec<PathBuf> = LEAF_NAMES[..groups].iter().map(|l| dir.join(l)).collect();
            for leaf in &leaves {
                create_child_cgroup(h, leaf).map_err(|e| format!("CgroupChurn: {e}"))?;
            }
            Ok(leaves)
        })
        .collect()
}

/// Moves process `pid` into the cgroup `dir` (a `cgroup.procs` write);
/// `who` names the type in the error.
pub(super) fn move_into(dir: &Path, pid: u32, who: &str) -> Result<(), String> {
    let procs = dir.join("cgroup.procs");
    std::fs::write(&procs, pid.to_string())
        .map_err(|e| format!("{who}: moving {pid} into {}: {e}", procs.display()))
}

struct Body {
    spin: u64,
    groups: usize,
    cycle_ns: u64,
    /// When the next move is due (monotonic ns; 0: at once).
    due_ns: u64,
    /// Per hierarchy, the leaves; `None` before the first iteration.
    leaves: Option<Vec<Vec<PathBuf>>>,
    /// The leaf the next move goes to.
    next: usize,
    /// The first failure to set up or move; the worker spins on.
    error: Option<String>,
}

impl Body {
    /// Moves to the next leaf in every hierarchy.
    fn move_on(&mut self) {
        let groups = self.groups;
        let leaves = self.leaves.get_or_insert_with(|| {
            make_leaves(groups).unwrap_or_else(|e| {
                self.error.get_or_insert(e);
                Vec::new()
            })
        });
        for ring in leaves.iter() {
            if let Err(e) = move_into(&ring[self.next], std::process::id(), "CgroupChurn") {
                self.error.get_or_insert(e);
            }
        }
        self.next = (self.next + 1) % self.groups;
    }
}

impl WorkerBody for Body {
    #[inline(always)]
    fn iterate(&mut self, tel: &mut Telemetry) -> u64 {
        if self.cycle_ns == 0 {
            self.move_on();
        } else {
            let now = monotonic_ns();
            if now >= self.due_ns {
                self.move_on();
                self.due_ns = now + self.cycle_ns;
            }
        }
        tel.spin(self.spin)
    }

    fn setup_error(&self) -> Option<String> {
        self.error.clone()
    }
}

/// Builds the per-worker bodies.
pub fn prepare(p: &Params) -> Box<dyn PreparedWork> {
    let (spin, groups, cycle_ns) = (p.spin_iters, p.groups as usize, p.cycle_ms * 1_000_000);
    independent(move |_| {
        Ok(Box::new(Body {
            spin,
            groups,
            cycle_ns,
            due_ns: 0,
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
    fn group_count_and_cycle_are_parameters_with_ranges() {
        let t = crate::WorkType::from_name("CgroupChurn").unwrap();
        let set = |k: &str, v: &str| t.with_params(&[(k.into(), v.into())]);
        let t2 = set("groups", "5").unwrap();
        assert_eq!(
            t2,
            crate::WorkType::CgroupChurn(Params {
                groups: 5,
                ..Params::default()
            })
        );
        assert!(set("groups", "1").is_err(), "a ring of one moves nowhere");
        assert!(set("groups", "27").is_err(), "26 leaf names");
        assert!(set("cycle_ms", "250").is_ok());
    }

    #[test]
    fn a_task_outside_runq_has_nowhere_to_churn() {
        let outside = "3:cpuset:/\n0::/user.slice/session-1.scope\n";
        assert!(placed_dirs(&parse_memberships(outside), &hybrid()).is_empty());
    }
}
