use crate::CheckId;
use std::time::Duration;

use super::*;
use crate::report::Migration;
use crate::{ScenarioBuilder, WorkType};
use runq_kernel::cgroup::CgroupLimits;

fn cpuset(cpus: &[usize]) -> CgroupLimits {
    CgroupLimits {
        cpuset: Some(cpus.iter().copied().collect()),
        ..Default::default()
    }
}

/// `outer` (CPUs 0-3) holds `outer/inner` (CPUs 2-3, then 1 after a step)
/// with group 0 in it; group 1 runs in `free`, which has no cpuset.
fn nested() -> Scenario {
    let spin = WorkType::from_name("SpinWait").unwrap();
    ScenarioBuilder::new("nested")
        .cgroup("outer", cpuset(&[0, 1, 2, 3]))
        .cgroup("outer/inner", cpuset(&[2, 3]))
        .cgroup("free", CgroupLimits::default())
        .group("pinned", spin.clone(), 2, Some("outer/inner"))
        .group("free", spin, 1, Some("free"))
        .step(
            Duration::from_secs(1),
            StepAction::SetLimits {
                cgroup: "outer/inner".into(),
                limits: cpuset(&[1]),
            },
        )
        .build()
}

fn worker(tid: u32, group_idx: usize, cpus: &[usize]) -> WorkerReport {
    WorkerReport {
        tid,
        group_idx,
        cpus_used: cpus.iter().copied().collect(),
        ..Default::default()
    }
}

#[test]
fn the_allowed_cpus_are_every_cpuset_over_time_within_the_ancestors() {
    let scn = nested();
    assert_eq!(allowed_cpus(&scn, "outer/inner"), Some([1, 2, 3].into()));
    assert_eq!(allowed_cpus(&scn, "outer"), Some([0, 1, 2, 3].into()));
    assert_eq!(allowed_cpus(&scn, "free"), None);
}

#[test]
fn a_cpuset_set_only_by_a_step_allowed_every_cpu_before_it() {
    // cpuset_apply's shape: `work` starts unrestricted and is narrowed at
    // 1 s, so the CPUs its spinners used before then are no violation.
    let spin = WorkType::from_name("SpinWait").unwrap();
    let scn = ScenarioBuilder::new("apply")
        .cgroup("work", CgroupLimits::default())
        .group("spin", spin, 2, Some("work"))
        .step(
            Duration::from_secs(1),
            StepAction::SetLimits {
                cgroup: "work".into(),
                limits: cpuset(&[0]),
            },
        )
        .build();
    assert_eq!(allowed_cpus(&scn, "work"), None);
}

#[test]
fn a_worker_seen_outside_its_cpuset_fails_isolation_and_is_named() {
    let scn = nested();
    let reports = [
        worker(11, 0, &[2, 3]),
        worker(12, 0, &[1, 0]),
        worker(13, 1, &[0, 5]),
    ];
    let out = CheckConfig::default().evaluate_placement(&scn, &reports, true, &NodeMap::default());
    assert_eq!(
        out.len(),
        1,
        "the free group has no cpuset to judge: {out:?}"
    );
    let r = &out[0];
    assert_eq!(
        (r.check, r.group.as_str()),
        (CheckId::CpusetIsolation, "pinned")
    );
    assert!(!r.pass);
    assert_eq!(r.measured, 1.0);
    assert_eq!(
        r.detail,
        [Detail::Placement(PlacementDetail::CpusetLeft {
            worker: 12,
            cpus: vec![0],
            cpuset: vec![1, 2, 3],
            more_workers: 0,
        })]
    );
    let inside = [worker(11, 0, &[2, 3]), worker(12, 0, &[1])];
    let out = CheckConfig::default().evaluate_placement(&scn, &inside, true, &NodeMap::default());
    assert!(out[0].pass, "{out:?}");
}

#[test]
fn isolation_skips_without_cgroups_and_can_be_turned_off() {
    let scn = nested();
    let reports = [worker(12, 0, &[0])];
    let out = CheckConfig::default().evaluate_placement(&scn, &reports, false, &NodeMap::default());
    assert!(out[0].pass);
    assert_eq!(
        out[0].detail,
        [Detail::Placement(PlacementDetail::CpusetNotApplied)]
    );
    let off = CheckConfig {
        disable: vec!["cpuset_isolation".into()],
        ..Default::default()
    };
    assert!(off
        .evaluate_placement(&scn, &reports, true, &NodeMap::default())
        .is_empty());
}

fn migrating(tid: u32, moves: &[(usize, usize)]) -> WorkerReport {
    WorkerReport {
        tid,
        migrations: moves
            .iter()
            .map(|&(from_cpu, to_cpu)| Migration {
                at_ms: 0,
                from_cpu,
                to_cpu,
            })
            .collect(),
        ..Default::default()
    }
}

#[test]
fn cross_node_share_counts_migrations_between_nodes() {
    let two = NodeMap::from_pairs([(0, 0), (1, 0), (2, 1), (3, 1)]);
    let a = migrating(1, &[(0, 1), (1, 2), (2, 3), (3, 0)]);
    assert_eq!(cross_node_migrations(&[&a], &two), (2, 4));
    let scn = ScenarioBuilder::new("x")
        .group("g", WorkType::from_name("SpinWait").unwrap(), 1, None)
        .build();
    let cfg = CheckConfig {
        max_cross_node_migration_ratio: Some(0.25),
        ..Default::default()
    };
    let out = cfg.evaluate_placement(&scn, std::slice::from_ref(&a), true, &two);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].measured, 0.5);
    assert!(!out[0].pass);
    assert_eq!(
        out[0].detail,
        [Detail::Placement(PlacementDetail::CrossNode {
            crossed: 2,
            migrations: 4,
        })]
    );
}

#[test]
fn cross_node_share_skips_on_one_node_with_the_reason() {
    let one = NodeMap::from_pairs([(0, 0), (1, 0)]);
    let scn = ScenarioBuilder::new("x")
        .group("g", WorkType::from_name("SpinWait").unwrap(), 1, None)
        .build();
    let cfg = CheckConfig {
        max_cross_node_migration_ratio: Some(0.0),
        ..Default::default()
    };
    let out = cfg.evaluate_placement(&scn, &[migrating(1, &[(0, 1)])], true, &one);
    assert!(out[0].pass);
    assert_eq!(
        out[0].detail,
        [Detail::Placement(PlacementDetail::OneNumaNode { nodes: 1 })]
    );
}

#[test]
fn cross_node_share_of_one_migration_is_not_judged() {
    let two = NodeMap::from_pairs([(0, 0), (1, 1)]);
    let scn = ScenarioBuilder::new("x")
        .group("g", WorkType::from_name("SpinWait").unwrap(), 1, None)
        .build();
    let cfg = CheckConfig {
        max_cross_node_migration_ratio: Some(0.5),
        ..Default::default()
    };
    let out = cfg.evaluate_placement(&scn, &[migrating(1, &[(0, 1)])], true, &two);
    assert!(out[0].pass);
    assert_eq!(
        out[0].detail,
        [Detail::Placement(PlacementDetail::TooFewMigrations {
            migrations: 1,
            at_least: 4,
        })]
    );
}
