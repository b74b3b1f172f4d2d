//! Which cgroup hierarchies runq uses on this host.
//!
//! Pure v2 hosts have one hierarchy at `/sys/fs/cgroup` with the controllers
//! in it. Hybrid hosts keep the controllers on v1 (`/sys/fs/cgroup/cpu`, ...)
//! and mount a controller-less v2 at `/sys/fs/cgroup/unified`. runq places
//! workers in the v2 hierarchy (for `cgroup.kill`, `cpu.stat`, PSI) and, for
//! each of `cpu` and `cpuset` that v2 does not offer, in its v1 hierarchy.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::mountinfo::{parse_mountinfo, CgroupMount};
use super::CgroupError;

/// The controllers whose limits runq sets.
pub const LIMIT_CONTROLLERS: [&str; 2] = ["cpu", "cpuset"];

/// What kind of hierarchy a directory lives in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HierarchyKind {
    /// The unified hierarchy; `controllers` are those its root gives its
    /// children.
    V2 {
        /// Controllers enabled in the root's `cgroup.subtree_control` (a
        /// controller the root has but does not enable there, as on a host
        /// without systemd, cannot limit runq's cgroups).
        controllers: BTreeSet<String>,
    },
    /// A v1 hierarchy carrying one limit controller (`cpu` or `cpuset`).
    V1 {
        /// The controller runq uses this hierarchy for.
        controller: String,
    },
}

/// One hierarchy runq will create directories in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hierarchy {
    /// Mount point of the hierarchy.
    pub root: PathBuf,
    /// Its kind.
    pub kind: HierarchyKind,
}

impl Hierarchy {
    /// Does this hierarchy carry `controller`?
    pub fn has_controller(&self, controller: &str) -> bool {
        match &self.kind {
            HierarchyKind::V2 { controllers } => controllers.contains(controller),
            HierarchyKind::V1 { controller: c } => c == controller,
        }
    }

    /// True for the unified hierarchy.
    pub fn is_v2(&self) -> bool {
        matches!(self.kind, HierarchyKind::V2 { .. })
    }
}

/// The set of hierarchies runq uses on a host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CgroupLayout {
    /// v2 first (when mounted), then v1 hierarchies for missing controllers.
    pub hierarchies: Vec<Hierarchy>,
}

impl CgroupLayout {
    /// Detects the layout of the running host from `/proc/self/mountinfo`.
    pub fn detect() -> Result<Self, CgroupError> {
        let path = Path::new("/proc/self/mountinfo");
        let text = std::fs::read_to_string(path)
            .map_err(|e| CgroupError::from_io(path.to_path_buf(), e))?;
        Self::from_mounts(&parse_mountinfo(&text), |root| {
            std::fs::read_to_string(root.join("cgroup.subtree_control")).unwrap_or_default()
        })
    }

    /// Builds a layout from parsed mounts; `read_controllers` returns the
    /// text of a v2 root's `cgroup.subtree_control`.
    pub fn from_mounts(
        mounts: &[CgroupMount],
        read_controllers: impl Fn(&Path) -> String,
    ) -> Result<Self, CgroupError> {
        let mut hierarchies = Vec::new();
        let mut v2_controllers = BTreeSet::new();
        if let Some(v2) = mounts.iter().find(|m| m.v1_controllers.is_none()) {
            v2_controllers = read_controllers(&v2.mount_point)
                .split_ascii_whitespace()
                .map(str::to_string)
                .collect();
            hierarchies.push(Hierarchy {
                root: v2.mount_point.clone(),
                kind: HierarchyKind::V2 {
                    controllers: v2_controllers.clone(),
                },
            });
        }
        for controller in LIMIT_CONTROLLERS {
            if v2_controllers.contains(controller) {
                continue;
            }
            let v1 = mounts.iter().find(|m| {
                m.v1_controllers
                    .as_ref()
                    .is_some_and(|c| c.iter().any(|c| c == controller))
            });
            if let Some(v1) = v1 {
                hierarchies.push(Hierarchy {
                    root: v1.mount_point.clone(),
                    kind: HierarchyKind::V1 {
                        controller: controller.to_string(),
                    },
                });
            }
        }
        if hierarchies.is_empty() {
            return Err(CgroupError::NotMounted);
        }
        Ok(CgroupLayout { hierarchies })
    }

    /// The hierarchy that carries `controller`, if any.
    pub fn for_controller(&self, controller: &str) -> Option<&Hierarchy> {
        self.hierarchies
            .iter()
            .find(|h| h.has_controller(controller))
    }

    /// The unified hierarchy, if mounted.
    pub fn v2(&self) -> Option<&Hierarchy> {
        self.hierarchies.iter().find(|h| h.is_v2())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v1(path: &str, controllers: &[&str]) -> CgroupMount {
        CgroupMount {
            mount_point: path.into(),
            v1_controllers: Some(controllers.iter().map(|c| c.to_string()).collect()),
        }
    }

    #[test]
    fn hybrid_uses_v1_for_limits() {
        let mounts = vec![
            CgroupMount {
                mount_point: "/sys/fs/cgroup/unified".into(),
                v1_controllers: None,
            },
            v1("/sys/fs/cgroup/cpu", &["cpu"]),
            v1("/sys/fs/cgroup/cpuset", &["cpuset"]),
        ];
        let layout = CgroupLayout::from_mounts(&mounts, |_| String::new()).unwrap();
        assert_eq!(layout.hierarchies.len(), 3);
        assert_eq!(
            layout.v2().unwrap().root,
            PathBuf::from("/sys/fs/cgroup/unified")
        );
        assert_eq!(
            layout.for_controller("cpu").unwrap().root,
            PathBuf::from("/sys/fs/cgroup/cpu")
        );
        assert_eq!(
            layout.for_controller("cpuset").unwrap().root,
            PathBuf::from("/sys/fs/cgroup/cpuset")
        );
    }

    #[test]
    fn pure_v2_uses_one_hierarchy() {
        let mounts = vec![CgroupMount {
            mount_point: "/sys/fs/cgroup".into(),
            v1_controllers: None,
        }];
        let layout =
            CgroupLayout::from_mounts(&mounts, |_| "cpuset cpu io memory pids".into()).unwrap();
        assert_eq!(layout.hierarchies.len(), 1);
        assert!(layout.for_controller("cpu").unwrap().is_v2());
        assert!(layout.for_controller("cpuset").unwrap().is_v2());
    }

    #[test]
    fn nothing_mounted_is_an_error() {
        assert!(matches!(
            CgroupLayout::from_mounts(&[], |_| String::new()),
            Err(CgroupError::NotMounted)
        ));
    }

    #[test]
    fn live_host_has_a_layout() {
        let layout = CgroupLayout::detect().unwrap();
        assert!(!layout.hierarchies.is_empty());
    }
}
