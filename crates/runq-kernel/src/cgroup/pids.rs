//! How many more tasks the pids controller lets runq's own cgroup make:
//! the tightest `pids.max - pids.current` from the hierarchy's root down
//! to the cgroup `/proc/self/cgroup` names (a container's pids limit, a
//! systemd unit's `TasksMax=`). runq forks its workers there before it
//! moves them, so a run that needs more is refused before the first fork,
//! and a fork that fails with EAGAIN is explained by it.

use std::path::{Path, PathBuf};

use super::{parse_mountinfo, CgroupMount, Hierarchy, HierarchyKind};

/// The tightest pids limit on runq's cgroup chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PidsRoom {
    /// The cgroup directory whose limit is tightest.
    pub dir: PathBuf,
    /// Its `pids.max`.
    pub max: u64,
    /// Its `pids.current`.
    pub current: u64,
}

impl PidsRoom {
    /// Tasks that can still be made.
    pub fn room(&self) -> u64 {
        self.max.saturating_sub(self.current)
    }
}

/// The hierarchy that carries pids among `mounts`: its v1 mount, else
/// the unified one (where each cgroup's `pids.max` says whether it is on).
pub fn pids_hierarchy(mounts: &[CgroupMount]) -> Option<Hierarchy> {
    let v1 = mounts.iter().find(|m| {
        m.v1_controllers
            .as_ref()
            .is_some_and(|c| c.iter().any(|c| c == "pids"))
    });
    let (mount, kind) = match v1 {
        Some(m) => (
            m,
            HierarchyKind::V1 {
                controller: "pids".into(),
            },
        ),
        None => (
            mounts.iter().find(|m| m.v1_controllers.is_none())?,
            HierarchyKind::V2 {
                controllers: ["pids".to_string()].into(),
            },
        ),
    };
    Some(Hierarchy {
        root: mount.mount_point.clone(),
        kind,
    })
}

/// The tightest pids limit of the cgroup that `own_cgroup` (a
/// `/proc/self/cgroup` text) names in the pids hierarchy `h`; `None`
/// without a limit.
pub fn pids_room(h: &Hierarchy, own_cgroup: &str) -> Option<PidsRoom> {
    let rel = own_cgroup.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let wanted = if h.is_v2() {
            controllers.is_empty()
        } else {
            controllers.split(',').any(|c| c == "pids")
        };
        wanted.then_some(path)
    })?;
    let mut dir = h.root.clone();
    let mut tightest = limit_at(&dir);
    for part in rel.split('/').filter(|p| !p.is_empty()) {
        dir.push(part);
        if let Some(here) = limit_at(&dir) {
            if tightest.as_ref().is_none_or(|t| here.room() < t.room()) {
                tightest = Some(here);
            }
        }
    }
    tightest
}

/// The pids limit of one directory; `None` when it has none (`max`, or
/// no such file: the root has none).
fn limit_at(dir: &Path) -> Option<PidsRoom> {
    let read = |file: &str| std::fs::read_to_string(dir.join(file)).ok();
    let max = read("pids.max")?.trim().parse().ok()?;
    let current = read("pids.current")?.trim().parse().unwrap_or(0);
    Some(PidsRoom {
        dir: dir.to_path_buf(),
        max,
        current,
    })
}

/// Reads runq's own pids limit on this host.
pub fn own_pids_room() -> Option<PidsRoom> {
    let mounts = parse_mountinfo(&std::fs::read_to_string("/proc/self/mountinfo").ok()?);
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    pids_room(&pids_hierarchy(&mounts)?, &own)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tightest_limit_on_the_chain_is_found() {
        let root = tempfile::tempdir().unwrap();
        let outer = root.path().join("box");
        let inner = outer.join("job");
        std::fs::create_dir_all(&inner).unwrap();
        for (dir, max, cur) in [(&outer, "100", "90"), (&inner, "max", "5")] {
            std::fs::write(dir.join("pids.max"), format!("{max}\n")).unwrap();
            std::fs::write(dir.join("pids.current"), format!("{cur}\n")).unwrap();
        }
        let mounts = [
            CgroupMount {
                mount_point: "/sys/fs/cgroup/unified".into(),
                v1_controllers: None,
            },
            CgroupMount {
                mount_point: root.path().to_path_buf(),
                v1_controllers: Some(vec!["pids".into()]),
            },
        ];
        let h = pids_hierarchy(&mounts).unwrap();
        assert_eq!(h.root, root.path());
        let own = "12:pids:/box/job\n11:cpu,cpuacct:/box\n";
        let room = pids_room(&h, own).unwrap();
        assert_eq!(room.dir, outer);
        assert_eq!((room.max, room.current, room.room()), (100, 90, 10));
        assert_eq!(pids_room(&h, "11:cpu:/box\n"), None);
        let v2 = pids_hierarchy(&mounts[..1]).unwrap();
        assert!(v2.is_v2());
    }
}
