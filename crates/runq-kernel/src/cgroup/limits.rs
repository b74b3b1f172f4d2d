//! Limits runq can put on a cgroup, written in v2 or v1 syntax as the
//! hierarchy requires.

use std::collections::BTreeSet;

use super::layout::Hierarchy;
use crate::cpulist::CpuListDisplay;

/// CPU limits for one cgroup. `None` leaves the kernel default.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CgroupLimits {
    /// CPUs the cgroup may run on (cpuset.cpus).
    pub cpuset: Option<BTreeSet<usize>>,
    /// Bandwidth: `(quota_us, period_us)`, as in v2 `cpu.max`; a quota of
    /// [`UNLIMITED`] removes the limit.
    pub cpu_max: Option<(u64, u64)>,
    /// Relative weight, 1..=10000 as in v2 `cpu.weight` (default 100).
    pub weight: Option<u64>,
}

impl CgroupLimits {
    /// True when no limit is set.
    pub fn is_empty(&self) -> bool {
        self.cpuset.is_none() && self.cpu_max.is_none() && self.weight.is_none()
    }

    /// The `(file, value)` writes that apply these limits in `hierarchy`.
    pub fn writes_for(&self, hierarchy: &Hierarchy) -> Vec<(&'static str, String)> {
        let mut writes = Vec::new();
        let v2 = hierarchy.is_v2();
        if let (Some(cpus), true) = (&self.cpuset, hierarchy.has_controller("cpuset")) {
            writes.push(("cpuset.cpus", CpuListDisplay(cpus).to_string()));
        }
        if hierarchy.has_controller("cpu") {
            if let Some((quota, period)) = self.cpu_max {
                let unlimited = quota == UNLIMITED;
                if v2 {
                    let q = if unlimited {
                        "max".to_string()
                    } else {
                        quota.to_string()
                    };
                    writes.push(("cpu.max", format!("{q} {period}")));
                } else {
                    let q = if unlimited {
                        "-1".to_string()
                    } else {
                        quota.to_string()
                    };
                    writes.push(("cpu.cfs_period_us", period.to_string()));
                    writes.push(("cpu.cfs_quota_us", q));
                }
            }
            if let Some(weight) = self.weight {
                if v2 {
                    writes.push(("cpu.weight", weight.to_string()));
                } else {
                    writes.push(("cpu.shares", weight_to_shares(weight).to_string()));
                }
            }
        }
        writes
    }
}

/// The quota that means "no bandwidth limit" (`max` in v2, `-1` in v1).
pub const UNLIMITED: u64 = u64::MAX;

/// Maps a v2 weight (default 100) to v1 shares (default 1024).
pub fn weight_to_shares(weight: u64) -> u64 {
    (weight.saturating_mul(1024) / 100).max(2)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cgroup::HierarchyKind;

    fn v1(controller: &str) -> Hierarchy {
        Hierarchy {
            root: "/x".into(),
            kind: HierarchyKind::V1 {
                controller: controller.into(),
            },
        }
    }

    #[test]
    fn v1_syntax() {
        let limits = CgroupLimits {
            cpuset: Some([0, 1].into()),
            cpu_max: Some((50_000, 100_000)),
            weight: Some(200),
        };
        assert_eq!(
            limits.writes_for(&v1("cpuset")),
            vec![("cpuset.cpus", "0-1".to_string())]
        );
        assert_eq!(
            limits.writes_for(&v1("cpu")),
            vec![
                ("cpu.cfs_period_us", "100000".to_string()),
                ("cpu.cfs_quota_us", "50000".to_string()),
                ("cpu.shares", "2048".to_string())
            ]
        );
    }

    #[test]
    fn v2_syntax() {
        let h = Hierarchy {
            root: "/x".into(),
            kind: HierarchyKind::V2 {
                controllers: ["cpu".to_string(), "cpuset".to_string()].into(),
            },
        };
        let limits = CgroupLimits {
            cpuset: Some([1].into()),
            cpu_max: Some((10_000, 100_000)),
            weight: Some(50),
        };
        assert_eq!(
            limits.writes_for(&h),
            vec![
                ("cpuset.cpus", "1".to_string()),
                ("cpu.max", "10000 100000".to_string()),
                ("cpu.weight", "50".to_string())
            ]
        );
    }

    #[test]
    fn v2_without_controllers_writes_nothing() {
        let h = Hierarchy {
            root: "/x".into(),
            kind: HierarchyKind::V2 {
                controllers: BTreeSet::new(),
            },
        };
        let limits = CgroupLimits {
            cpuset: Some([1].into()),
            cpu_max: Some((1, 2)),
            weight: Some(5),
        };
        assert!(limits.writes_for(&h).is_empty());
    }
}
