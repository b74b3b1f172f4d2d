//! Checks on where a group's workers ran, judged with the scenario and
//! the host's topology rather than the reports alone:
//!
//! - `cpuset_isolation`: every CPU a worker was seen on (its `cpus_used`,
//!   read at each checkpoint) is one its cgroup's cpuset allowed at some
//!   point of the run: the union of the cpusets its cgroup had (at
//!   creation and after every step), intersected over the cgroup and its
//!   ancestors. Groups without a cpuset are not judged.
//! - `max_cross_node_migration_ratio`: the share of a group's migrations
//!   (CPU changes seen between checkpoints) whose two CPUs are on
//!   different NUMA nodes. A host with one node cannot cross one, and a
//!   share of fewer than 4 migrations says nothing, so the check says it
//!   skipped and why.

use crate::checks::detail::PlacementDetail;
use crate::CheckId;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::detail::Detail;
use super::{CheckConfig, CheckResult, Op};
use crate::report::WorkerReport;
use crate::scenario::{GroupSpec, Scenario, StepAction};
use crate::spawn::CloneMode;

/// Which NUMA node each CPU is on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct NodeMap(BTreeMap<usize, usize>);

impl NodeMap {
    /// The live host's map, from sysfs under `sys_root`.
    pub(crate) fn read(sys_root: &Path) -> NodeMap {
        use runq_kernel::topology::{node_cpus, numa_nodes};
        let mut map = BTreeMap::new();
        for node in numa_nodes(sys_root) {
            for cpu in node_cpus(sys_root, node) {
                map.insert(cpu, node);
            }
        }
        NodeMap(map)
    }

    /// A map from `(cpu, node)` pairs.
    #[cfg(test)]
    pub(crate) fn from_pairs(pairs: impl IntoIterator<Item = (usize, usize)>) -> NodeMap {
        NodeMap(pairs.into_iter().collect())
    }

    /// How many nodes hold a CPU (1 when sysfs said nothing).
    pub(crate) fn nodes(&self) -> usize {
        self.0.values().collect::<BTreeSet<_>>().len().max(1)
    }
}

/// The CPUs a worker in cgroup `cgroup` may have run on over the run;
/// `None` when neither it nor an ancestor had a cpuset from the start (a
/// level whose cpuset a step sets later allowed every CPU before it).
pub(crate) fn allowed_cpus(scn: &Scenario, cgroup: &str) -> Option<BTreeSet<usize>> {
    let chain = cgroup
        .match_indices('/')
        .map(|(i, _)| &cgroup[..i])
        .chain([cgroup]);
    chain
        .filter_map(|name| {
            let initial = scn
                .cgroups
                .iter()
                .filter(|c| c.name == name)
                .find_map(|c| c.limits.cpuset.clone())?;
            let stepped = scn.steps.iter().filter_map(|s| match &s.action {
                StepAction::SetLimits { cgroup, limits } if cgroup == name => limits.cpuset.clone(),
                _ => None,
            });
            Some(stepped.fold(initial, |a, b| &a | &b))
        })
        .reduce(|a, b| &a & &b)
}

/// The workers seen on a CPU outside `allowed`: tid and those CPUs.
fn outside(reports: &[&WorkerReport], allowed: &BTreeSet<usize>) -> Vec<(u32, BTreeSet<usize>)> {
    reports
        .iter()
        .filter_map(|r| {
            let out: BTreeSet<usize> = r.cpus_used.difference(allowed).copied().collect();
            (!out.is_empty()).then_some((r.tid, out))
        })
        .collect()
}

/// `cpuset_isolation` on one group, or `None` when there is nothing to
/// judge; `placed`: the run had its cgroups.
fn cpuset_result(
    scn: &Scenario,
    g: &GroupSpec,
    reports: &[&WorkerReport],
    placed: bool,
) -> Option<CheckResult> {
    if g.custom.is_some() || g.clone_mode == CloneMode::Thread {
        return None;
    }
    let allowed = allowed_cpus(scn, g.cgroup.as_deref()?)?;
    let mut r = result(CheckId::CpusetIsolation, &g.name, 0.0, Op::AtMost, 0.0);
    if !placed {
        r.detail = vec![Detail::Placement(PlacementDetail::CpusetNotApplied)];
        return Some(r);
    }
    let seen = outside(reports, &allowed);
    r.measured = seen.len() as f64;
    r.pass = seen.is_empty();
    let cpuset: Vec<usize> = allowed.into_iter().collect();
    r.detail = vec![match seen.first() {
        None => Detail::Placement(PlacementDetail::CpusetKept { cpuset }),
        Some((tid, cpus)) => Detail::Placement(PlacementDetail::CpusetLeft {
            worker: *tid,
            cpus: cpus.iter().copied().collect(),
            cpuset,
            more_workers: seen.len() - 1,
        }),
    }];
    Some(r)
}

/// Migrations whose CPUs are on different nodes, and migrations whose
/// nodes are both known, over the reports' recorded migrations.
pub(crate) fn cross_node_migrations(reports: &[&WorkerReport], nodes: &NodeMap) -> (u64, u64) {
    let node = |cpu: usize| nodes.0.get(&cpu);
    let mut cross = 0;
    let mut known = 0;
    for m in reports.iter().flat_map(|r| &r.migrations) {
        if let (Some(a), Some(b)) = (node(m.from_cpu), node(m.to_cpu)) {
            known += 1;
            cross += u64::from(a != b);
        }
    }
    (cross, known)
}

/// The fewest migrations whose cross-node share is judged: one move that
/// crossed (a share of 1, seen on a 2-node guest) says nothing of where
/// the scheduler places the group.
const MIN_MIGRATIONS: u64 = 4;

/// `max_cross_node_migration_ratio` on one group.
fn cross_node_result(
    bound: f64,
    g: &GroupSpec,
    reports: &[&WorkerReport],
    nodes: &NodeMap,
) -> Option<CheckResult> {
    if g.custom.is_some() {
        return None;
    }
    let mut r = result(
        CheckId::MaxCrossNodeMigrationRatio,
        &g.name,
        0.0,
        Op::AtMost,
        bound,
    );
    if nodes.nodes() < 2 {
        r.detail = vec![Detail::Placement(PlacementDetail::OneNumaNode {
            nodes: nodes.nodes(),
        })];
        return Some(r);
    }
    let (cross, known) = cross_node_migrations(reports, nodes);
    if known < MIN_MIGRATIONS {
        r.detail = vec![Detail::Placement(PlacementDetail::TooFewMigrations {
            migrations: known,
            at_least: MIN_MIGRATIONS,
        })];
        return Some(r);
    }
    r.measured = cross as f64 / known as f64;
    r.pass = r.measured <= bound;
    r.detail = vec![Detail::Placement(PlacementDetail::CrossNode {
        crossed: cross,
        migrations: known,
    })];
    Some(r)
}

fn result(check: CheckId, group: &str, measured: f64, op: Op, bound: f64) -> CheckResult {
    CheckResult {
        check,
        group: group.into(),
        measured,
        op,
        bound,
        pass: true,
        detail: Vec::new(),
        cause: None,
        not_judged: None,
    }
}

impl CheckConfig {
    /// The placement checks of every group: `placed` says the run had
    /// its cgroups, `nodes` is the host's CPU-to-node map.
    pub(crate) fn evaluate_placement(
        &self,
        scn: &Scenario,
        reports: &[WorkerReport],
        placed: bool,
        nodes: &NodeMap,
    ) -> Vec<CheckResult> {
        let isolation = self.enabled(
            CheckId::CpusetIsolation,
            self.cpuset_isolation.then_some(()),
        );
        let cross = self.enabled(
            CheckId::MaxCrossNodeMigrationRatio,
            self.max_cross_node_migration_ratio,
        );
        let mut out = Vec::new();
        for (i, g) in scn.groups.iter().enumerate() {
            let mine: Vec<&WorkerReport> = reports
                .iter()
                .filter(|r| r.group_idx == i && r.exit_info.is_none())
                .collect();
            if isolation.is_some() {
                out.extend(cpuset_result(scn, g, &mine, placed));
            }
            if let Some(bound) = cross {
                out.extend(cross_node_result(bound, g, &mine, nodes));
            }
        }
        out
    }
}

#[cfg(test)]
#[path = "placement_tests.rs"]
mod tests;
