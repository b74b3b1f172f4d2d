//! Builds the fair-share model ([`crate::fairness`]) of a finished run
//! from its scenario and reports, and turns it into check results.

use crate::checks::detail::ShareDetail;
use crate::CheckId;
use std::collections::BTreeSet;

use runq_kernel::cgroup::UNLIMITED;

use crate::checks::{CheckResult, Detail, Op};
use crate::fair_cause::{group_share_cause, worker_share_cause};
use crate::fairness::{
    describe, group_shares, worst_worker, FairEntity, FairModel, FairShare, FairWorker,
};
use crate::placement::{Affinity, SchedPolicy};
use crate::report::WorkerReport;
use crate::scenario::Scenario;

/// Relative CFS weight of a SCHED_OTHER/BATCH/IDLE worker (1.0 at nice 0);
/// `None` for real-time and deadline workers, which are not judged.
fn task_weight(policy: &SchedPolicy, nice: Option<i32>) -> Option<f64> {
    match policy {
        SchedPolicy::Normal | SchedPolicy::Batch => {
            Some(1.25f64.powi(-nice.unwrap_or(0).clamp(-20, 19)))
        }
        SchedPolicy::Idle => Some(3.0 / 1024.0),
        _ => None,
    }
}

/// The model of a run. `weight_file` names the cgroup weight file the run
/// used (`cpu.shares` or `cpu.weight`), `None` when the workers ran
/// unplaced. `None` when the run cannot be judged (timed steps, no
/// reports).
pub fn model_from_run(
    scn: &Scenario,
    reports: &[WorkerReport],
    weight_file: Option<&str>,
    online: &BTreeSet<usize>,
) -> Option<FairModel> {
    if !scn.steps.is_empty() || online.is_empty() {
        return None;
    }
    // A dead worker, and the survivor that stopped when its partner died,
    // are reported once, by not_stuck, as the cause: neither is judged
    // for its share.
    let live: Vec<&WorkerReport> = reports
        .iter()
        .filter(|r| r.exit_info.is_none() && r.partner_lost.is_none())
        .collect();
    let window_ns = live
        .iter()
        .map(|r| r.wall_time_ns)
        .max()
        .filter(|&w| w > 0)?;
    let mut entities: Vec<FairEntity> = Vec::new();
    let mut cgroup_entity: Vec<(String, usize)> = Vec::new();
    let mut workers = Vec::new();
    for r in live {
        let g = scn.groups.get(r.group_idx)?;
        if sets_its_own_policy(&g.work) {
            continue;
        }
        let Some(weight) = task_weight(&g.setup.policy, worker_nice(g, r)) else {
            continue;
        };
        let cgroup = g.cgroup.as_ref().filter(|_| weight_file.is_some());
        let entity = match cgroup {
            Some(name) => match cgroup_entity.iter().find(|(n, _)| n == name) {
                Some(&(_, e)) => e,
                None => {
                    entities.push(cgroup_entity_of(scn, name, online));
                    cgroup_entity.push((name.clone(), entities.len() - 1));
                    entities.len() - 1
                }
            },
            None => {
                entities.push(FairEntity {
                    weight,
                    cpus: affinity_cpus(&g.setup.affinity, online),
                    quota_cpus: None,
                });
                entities.len() - 1
            }
        };
        workers.push(FairWorker {
            group: r.group_idx,
            entity,
            weight,
            demand: demand_of(r),
            cpu_ns: r.cpu_time_ns,
            tid: r.tid,
        });
    }
    let basis = basis(&entities, cgroup_entity.len(), weight_file);
    Some(FairModel {
        entities,
        workers,
        group_names: scn.groups.iter().map(|g| g.name.clone()).collect(),
        window_ns,
        basis,
    })
}

/// The nice value `r` ran at: its group's, or, for PriorityInversion,
/// the one its role gives itself (its three roles are meant to be
/// unequal, and the kernel splits a shared CPU by their weights).
fn worker_nice(g: &crate::scenario::GroupSpec, r: &WorkerReport) -> Option<i32> {
    match g.work {
        crate::WorkType::PriorityInversion(_) if g.custom.is_none() => {
            Some(crate::worktype::locks::inversion_role_nice(r.role))
        }
        _ => g.setup.nice,
    }
}

/// Types whose workers pick their own policy and CPU, which the model
/// cannot see: RtStarvation's SCHED_OTHER workers get what the RT
/// throttle leaves on their pinned CPU (about 5% of it, shared by two),
/// which is the point of the type, not a share CFS owes them. They are
/// judged by `not_stuck` instead: they must still progress.
fn sets_its_own_policy(work: &crate::WorkType) -> bool {
    matches!(work, crate::WorkType::RtStarvation(_))
}

/// The share of a CPU `r` would have used had it never waited runnable:
/// its CPU time over the time it was not kept waiting (see
/// [`crate::fairness`]).
fn demand_of(r: &WorkerReport) -> f64 {
    let not_waiting = r.wall_time_ns.saturating_sub(r.schedstat_run_delay_ns);
    if not_waiting == 0 {
        return 1.0;
    }
    (r.cpu_time_ns as f64 / not_waiting as f64).min(1.0)
}

/// A run cgroup as an entity: its weight, quota, and the CPUs its cpuset
/// and its groups' affinities leave its workers.
fn cgroup_entity_of(scn: &Scenario, name: &str, online: &BTreeSet<usize>) -> FairEntity {
    let limits = scn
        .cgroups
        .iter()
        .find(|c| c.name == name)
        .map(|c| c.limits.clone())
        .unwrap_or_default();
    let allowed = match &limits.cpuset {
        Some(set) => set.intersection(online).copied().collect(),
        None => online.clone(),
    };
    // Its workers run only where both the cpuset and their affinity let
    // them: two spinners pinned to one CPU can use one CPU, whatever the
    // cgroup allows.
    let usable: BTreeSet<usize> = scn
        .groups
        .iter()
        .filter(|g| g.cgroup.as_deref() == Some(name))
        .flat_map(|g| affinity_cpus(&g.setup.affinity, &allowed))
        .collect();
    let cpus = usable.intersection(&allowed).copied().collect();
    FairEntity {
        weight: effective_weight(scn, name),
        cpus,
        quota_cpus: limits
            .cpu_max
            .filter(|&(q, p)| q != UNLIMITED && p > 0)
            .map(|(q, p)| q as f64 / p as f64),
    }
}

/// `name` and the cgroups above it, outermost first: `a`, `a/b`, `a/b/c`.
fn path_prefixes(name: &str) -> impl Iterator<Item = &str> {
    name.match_indices('/')
        .map(|(i, _)| &name[..i])
        .chain(std::iter::once(name))
}

/// A cgroup's weight as the kernel applies it down a hierarchy: its
/// outermost cgroup's weight (compared with the other top-level cgroups,
/// as a flat scenario's weights are), times at each level below its
/// share among the siblings there that hold workers. A light parent
/// holding a heavy child thus weighs what the parent does.
fn effective_weight(scn: &Scenario, name: &str) -> f64 {
    let weight = |n: &str| {
        let w = scn.cgroups.iter().find(|c| c.name == n);
        w.and_then(|c| c.limits.weight).unwrap_or(100) as f64 / 100.0
    };
    let occupied: Vec<&str> = scn
        .groups
        .iter()
        .filter_map(|g| g.cgroup.as_deref())
        .collect();
    let chain: Vec<&str> = path_prefixes(name).collect();
    let mut effective = weight(chain[0]);
    for depth in 1..chain.len() {
        let siblings: BTreeSet<&str> = occupied
            .iter()
            .filter(|o| path_prefixes(o).nth(depth - 1) == Some(chain[depth - 1]))
            .filter_map(|o| path_prefixes(o).nth(depth))
            .collect();
        let total: f64 = siblings.iter().map(|s| weight(s)).sum();
        if total > 0.0 {
            effective *= weight(chain[depth]) / total;
        }
    }
    effective
}

/// The CPUs a lone worker may use.
pub(crate) fn affinity_cpus(a: &Affinity, online: &BTreeSet<usize>) -> BTreeSet<usize> {
    match a {
        Affinity::Cpus(set) => set.intersection(online).copied().collect(),
        Affinity::Single(c) => online.iter().copied().filter(|o| o == c).collect(),
        Affinity::Inherit | Affinity::Random(_) => online.clone(),
    }
}

/// How the entitlements were set, for the message: "equal cpu.shares",
/// "cpu.weight 1:4", with ", cpu.max" / ", CPU sets" when cpusets or affinities
/// differ.
fn basis(entities: &[FairEntity], cgroups: usize, weight_file: Option<&str>) -> String {
    let mut text = match weight_file.filter(|_| cgroups > 0) {
        None => "no cgroups: one share per runnable worker".to_string(),
        Some(file) => {
            let scale = if file == "cpu.shares" { 1024.0 } else { 100.0 };
            let w: Vec<String> = entities
                .iter()
                .map(|e| format!("{:.0}", e.weight * scale))
                .collect();
            if w.windows(2).all(|p| p[0] == p[1]) {
                format!("equal {file}")
            } else {
                format!("{file} {}", w.join(":"))
            }
        }
    };
    if entities.iter().any(|e| e.quota_cpus.is_some()) {
        text.push_str(", cpu.max");
    }
    if entities.windows(2).any(|p| p[0].cpus != p[1].cpus) {
        text.push_str(", CPU sets");
    }
    text
}

/// Least CPU time a group or worker must be owed to be judged: below a
/// few scheduler periods, who ran first decides the share.
pub const MIN_JUDGED_NS: f64 = 100e6;

/// The `min_fair_share` results: one per group against its entitlement,
/// and one per multi-worker group for its least-served worker. Shares
/// owed less than [`MIN_JUDGED_NS`] of CPU time are not judged.
pub fn fair_share_checks(m: &FairModel, bound: f64) -> Vec<CheckResult> {
    let mut out = Vec::new();
    let judged = |s: &FairShare| s.expected_cpus * m.window_ns as f64 >= MIN_JUDGED_NS;
    let shares = group_shares(m);
    for s in shares.iter().filter(|s| judged(s)) {
        let ratio = s.ratio();
        let pass = Op::AtLeast.holds(ratio, bound);
        out.push(CheckResult {
            check: CheckId::MinFairShare,
            group: m.group_names[s.group].clone(),
            measured: ratio,
            op: Op::AtLeast,
            bound,
            pass,
            cause: (!pass).then(|| group_share_cause(m, s, &shares)),
            detail: vec![describe(m, s)],
            not_judged: None,
        });
        if let Some((tid, w)) = worst_worker(m, s.group).filter(|(_, w)| judged(w)) {
            let group_ratio = ratio;
            let ratio = w.ratio();
            let pass = Op::AtLeast.holds(ratio, bound);
            let pct = |c: f64| 100.0 * c / w.pool_cpus.max(1e-9);
            out.push(CheckResult {
                check: CheckId::MinFairShareWorker,
                group: m.group_names[s.group].clone(),
                measured: ratio,
                op: Op::AtLeast,
                bound,
                pass,
                cause: (!pass).then(|| worker_share_cause(m, tid, &w, group_ratio)),
                detail: vec![Detail::Share(ShareDetail::WorkerFairShare {
                    worker: tid,
                    got_pct: pct(w.got_cpus),
                    expected_pct: pct(w.expected_cpus),
                })],
                not_judged: None,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::ScenarioBuilder;
    use crate::worktype::WorkType;
    use runq_kernel::cgroup::CgroupLimits;

    fn spin() -> WorkType {
        WorkType::from_name("SpinWait").unwrap()
    }

    fn report(group_idx: usize, cpu_ms: u64, delay_ms: u64) -> WorkerReport {
        WorkerReport {
            group_idx,
            cpu_time_ns: cpu_ms * 1_000_000,
            schedstat_run_delay_ns: delay_ms * 1_000_000,
            wall_time_ns: 1_000_000_000,
            completed: true,
            ..Default::default()
        }
    }

    fn weighted(w: u64) -> CgroupLimits {
        CgroupLimits {
            weight: Some(w),
            ..Default::default()
        }
    }

    #[test]
    fn a_starved_cgroup_fails_with_the_weights_named() {
        let scn = ScenarioBuilder::new("s")
            .cgroup("a", weighted(100))
            .cgroup("b", weighted(400))
            .group("a", spin(), 1, Some("a"))
            .group("b", spin(), 1, Some("b"))
            .build();
        let reports = [report(0, 10, 990), report(1, 990, 10)];
        let online = BTreeSet::from([0, 1]);
        let m = model_from_run(&scn, &reports, Some("cpu.shares"), &online).unwrap();
        assert_eq!(m.basis, "cpu.shares 1024:4096");
        let res = fair_share_checks(&m, 0.5);
        let a = res.iter().find(|c| c.group == "a").unwrap();
        assert!(!a.pass, "{res:?}");
        let [Detail::Share(ShareDetail::FairShare {
            group,
            got_pct,
            expected_pct,
            basis,
        })] = &a.detail[..]
        else {
            panic!("{:?}", a.detail);
        };
        assert_eq!(
            (group.as_str(), basis.as_str()),
            ("a", "cpu.shares 1024:4096")
        );
        assert!((got_pct - 1.0).abs() < 1e-9 && (expected_pct - 20.0).abs() < 1e-9);
        // Unplaced, the same workers are two equal tasks.
        let m = model_from_run(&scn, &reports, None, &online).unwrap();
        assert_eq!(m.basis, "no cgroups: one share per runnable worker");
        assert_eq!(m.entities.len(), 2);
    }

    #[test]
    fn nested_weights_are_the_parents_share_split_among_the_children() {
        let scn = ScenarioBuilder::new("s")
            .cgroup("light", weighted(50))
            .cgroup("light/heavy", weighted(1000))
            .cgroup("heavy", weighted(500))
            .cgroup("heavy/light", weighted(10))
            .cgroup("heavy/other", weighted(30))
            .group("a", spin(), 1, Some("light/heavy"))
            .group("b", spin(), 1, Some("heavy/light"))
            .group("c", spin(), 1, Some("heavy/other"))
            .build();
        let w = |n: &str| effective_weight(&scn, n);
        assert_eq!(w("light/heavy"), 0.5, "alone under its parent");
        assert!((w("heavy/light") - 5.0 * 0.25).abs() < 1e-9);
        assert!((w("heavy/other") - 5.0 * 0.75).abs() < 1e-9);
        // The kernel's split, 1:10 between the parents, passes.
        let reports = [report(0, 91, 909), report(1, 227, 773), report(2, 682, 318)];
        let m = model_from_run(&scn, &reports, Some("cpu.weight"), &BTreeSet::from([0])).unwrap();
        let res = fair_share_checks(&m, 0.5);
        assert!(res.iter().all(|c| c.pass), "{res:?}");
    }

    #[test]
    fn a_cgroups_cpus_are_those_its_workers_may_run_on() {
        let mut scn = ScenarioBuilder::new("s")
            .cgroup("p", weighted(100))
            .cgroup("f", weighted(100))
            .group("pinned", spin(), 2, Some("p"))
            .group("free", spin(), 4, Some("f"))
            .build();
        scn.groups[0].setup.affinity = Affinity::Single(0);
        let mut reports = vec![report(0, 470, 530), report(0, 470, 530)];
        reports.extend((0..4).map(|_| report(1, 760, 240)));
        let online = BTreeSet::from([0, 1, 2, 3]);
        let m = model_from_run(&scn, &reports, Some("cpu.weight"), &online).unwrap();
        assert_eq!(m.entities[0].cpus, BTreeSet::from([0]));
        assert_eq!(m.basis, "equal cpu.weight, CPU sets");
        let res = fair_share_checks(&m, 0.5);
        assert!(res.iter().all(|c| c.pass), "{res:?}");
    }

    #[test]
    fn real_time_groups_and_stepped_runs_are_not_judged() {
        let mut scn = ScenarioBuilder::new("s")
            .group("rt", spin(), 1, None)
            .group("other", spin(), 1, None)
            .build();
        scn.groups[0].setup.policy = SchedPolicy::Fifo(10);
        let reports = [report(0, 900, 0), report(1, 100, 900)];
        let online = BTreeSet::from([0]);
        let m = model_from_run(&scn, &reports, None, &online).unwrap();
        assert_eq!(m.workers.len(), 1);
        assert!(fair_share_checks(&m, 0.5)
            .iter()
            .all(|c| c.group == "other"));
        assert!(task_weight(&SchedPolicy::Normal, Some(5)).unwrap() < 0.33);
        let stepped = ScenarioBuilder::new("s")
            .group("late", spin(), 1, None)
            .build();
        let mut stepped = stepped;
        stepped.steps.push(crate::scenario::Step {
            at: std::time::Duration::from_millis(5),
            action: crate::scenario::StepAction::RemoveGroup("late".into()),
        });
        assert!(model_from_run(&stepped, &reports, None, &online).is_none());
    }

    #[test]
    fn a_sleepers_wake_latency_is_not_cpu_it_wanted() {
        // A timer worker: 1.2% on a CPU, 8% waiting for one, asleep the rest.
        let timer = report(0, 12, 80);
        assert!((demand_of(&timer) - 12.0 / 920.0).abs() < 1e-9);
        // A spinner kept off the CPU still wants a whole one.
        assert_eq!(demand_of(&report(0, 20, 980)), 1.0);
        assert_eq!(demand_of(&report(0, 0, 1000)), 1.0);
        // Beside two busy spinners on one CPU, the timers get what they
        // want: the check passes.
        let scn = ScenarioBuilder::new("s")
            .group("timers", spin(), 1, None)
            .group("hogs", spin(), 2, None)
            .build();
        let reports = [timer, report(1, 494, 506), report(1, 494, 506)];
        let m = model_from_run(&scn, &reports, None, &BTreeSet::from([0])).unwrap();
        let res = fair_share_checks(&m, 0.5);
        assert!(res.iter().all(|c| c.pass), "{res:?}");
    }

    #[test]
    fn inversion_roles_are_owed_the_shares_of_their_nice_values() {
        // Low (nice 10), medium (nice 5) and high (nice 0, asleep) on one
        // CPU: the kernel gives low 110/445 of it, as measured on a quiet
        // host (737 of 3,000 ms); equal weights would owe it half.
        let mut scn = ScenarioBuilder::new("s")
            .group(
                "inversion",
                WorkType::from_name("PriorityInversion").unwrap(),
                3,
                None,
            )
            .build();
        scn.groups[0].setup.affinity = Affinity::Single(0);
        let mut reports = [report(0, 247, 753), report(0, 748, 252), report(0, 4, 1)];
        for (role, r) in reports.iter_mut().enumerate() {
            r.role = role as u8;
        }
        let m = model_from_run(&scn, &reports, None, &BTreeSet::from([0, 1])).unwrap();
        let weights: Vec<f64> = m.workers.iter().map(|w| w.weight).collect();
        assert_eq!(weights, [1.25f64.powi(-10), 1.25f64.powi(-5), 1.0]);
        let res = fair_share_checks(&m, 0.8);
        assert!(res.iter().all(|c| c.pass), "{res:?}");
    }
}
