//! Where the CPU time went when a fair share failed: to the run's other
//! groups (the scheduler's split between them, e.g. between cgroups), to
//! the group's own other workers (starvation inside the group), or to
//! neither (then outside the run, or left idle). Each cause names the
//! control run that tells it apart.

use crate::checks::cause::{Cause, NextStep};
use crate::checks::mechanism::{Mechanism, ShareTaker};
use crate::fairness::{FairModel, FairShare};

/// Groups got more than this times their entitlement before they are
/// named as having taken a starved group's time.
const OVER_SERVED: f64 = 1.1;

/// The cause of group `s`'s failed share, among every group's `shares`.
pub fn group_share_cause(m: &FairModel, s: &FairShare, shares: &[FairShare]) -> Cause {
    let pct = |cpus: f64| 100.0 * cpus / s.pool_cpus.max(1e-9);
    let takers: Vec<ShareTaker> = shares
        .iter()
        .filter(|o| o.group != s.group && o.got_cpus > OVER_SERVED * o.expected_cpus)
        .map(|o| ShareTaker {
            group: m.group_names[o.group].clone(),
            got_pct: pct(o.got_cpus),
            got_cpus: o.got_cpus,
            owed_pct: pct(o.expected_cpus),
        })
        .collect();
    let by_cgroup = m.basis.contains("cpu.shares") || m.basis.contains("cpu.weight");
    let (mechanism, next_step) = if takers.is_empty() {
        (
            Mechanism::SharesWentOutside {
                group: m.group_names[s.group].clone(),
                short_cpus: (s.expected_cpus - s.got_cpus).max(0.0),
            },
            NextStep::FlightRecorder { worker: None },
        )
    } else if by_cgroup {
        (
            Mechanism::RunTookShares {
                takers,
                cgroup_basis: Some(m.basis.clone()),
            },
            NextStep::NoCgroupsControl,
        )
    } else {
        (
            Mechanism::RunTookShares {
                takers,
                cgroup_basis: None,
            },
            NextStep::FlightRecorder { worker: None },
        )
    };
    Cause {
        mechanism: vec![mechanism],
        outside_load: None,
        next_step: Some(next_step),
        ..Cause::default()
    }
}

/// The cause of worker `tid`'s failed share of its group, `w`, when the
/// group as a whole got `group_ratio` of its entitlement.
pub fn worker_share_cause(m: &FairModel, tid: u32, w: &FairShare, group_ratio: f64) -> Cause {
    let siblings = m
        .workers
        .iter()
        .filter(|x| x.group == w.group && x.tid != tid)
        .count();
    let pct = |cpus: f64| 100.0 * cpus / w.pool_cpus.max(1e-9);
    let rest = (w.pool_cpus - w.got_cpus).max(0.0);
    Cause {
        mechanism: vec![Mechanism::WorkerStarvedInGroup {
            group: m.group_names[w.group].clone(),
            worker: tid,
            got_pct: pct(w.got_cpus),
            group_ratio,
            siblings,
            siblings_pct: pct(rest),
            siblings_cpus: rest,
        }],
        outside_load: None,
        next_step: Some(NextStep::FlightRecorder { worker: Some(tid) }),
        ..Cause::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fairness::{FairEntity, FairWorker};

    fn model(basis: &str, cpu_ns: [u64; 3]) -> FairModel {
        let worker = |group, entity, tid, cpu_ns| FairWorker {
            group,
            entity,
            weight: 1.0,
            demand: 1.0,
            cpu_ns,
            tid,
        };
        let entity = FairEntity {
            weight: 1.0,
            cpus: [0, 1].into(),
            quota_cpus: None,
        };
        FairModel {
            entities: vec![entity.clone(), entity],
            workers: vec![
                worker(0, 0, 11, cpu_ns[0]),
                worker(0, 0, 12, cpu_ns[1]),
                worker(1, 1, 21, cpu_ns[2]),
            ],
            group_names: vec!["spinners".into(), "pingpong".into()],
            window_ns: 1_000_000_000,
            basis: basis.into(),
        }
    }

    /// `a` within 0.05 of `b`, as the sentence rounds it.
    fn near(a: f64, b: f64) -> bool {
        (a - b).abs() < 0.05
    }

    #[test]
    fn a_group_starved_by_another_cgroup_names_it_and_the_control() {
        let m = model("equal cpu.shares", [5_000_000, 6_000_000, 1_900_000_000]);
        let shares = crate::fairness::group_shares(&m);
        let c = group_share_cause(&m, &shares[0], &shares);
        let [Mechanism::RunTookShares {
            takers,
            cgroup_basis,
        }] = c.mechanism.as_slice()
        else {
            panic!("{:?}", c.mechanism);
        };
        assert_eq!(cgroup_basis.as_deref(), Some("equal cpu.shares"));
        let [t] = takers.as_slice() else {
            panic!("{takers:?}");
        };
        assert_eq!(t.group, "pingpong");
        assert!(
            near(t.got_pct, 99.4) && near(t.got_cpus, 1.9) && near(t.owed_pct, 50.0),
            "{t:?}"
        );
        assert_eq!(c.next_step, Some(NextStep::NoCgroupsControl));
    }

    #[test]
    fn a_group_nobody_in_the_run_starved_says_so() {
        let m = model("equal cpu.shares", [300_000_000, 300_000_000, 600_000_000]);
        let shares = crate::fairness::group_shares(&m);
        let c = group_share_cause(&m, &shares[0], &shares);
        assert!(
            matches!(
                c.mechanism.as_slice(),
                [Mechanism::SharesWentOutside { group, short_cpus }]
                    if group == "spinners" && near(*short_cpus, 0.0)
            ),
            "{:?}",
            c.mechanism
        );
    }

    #[test]
    fn a_worker_starved_by_its_siblings_is_starvation_inside_the_group() {
        let m = model("equal cpu.shares", [10_000_000, 990_000_000, 1_000_000_000]);
        let (tid, w) = crate::fairness::worst_worker(&m, 0).unwrap();
        let c = worker_share_cause(&m, tid, &w, 1.0);
        let [Mechanism::WorkerStarvedInGroup {
            group,
            worker,
            got_pct,
            group_ratio,
            siblings,
            siblings_pct,
            siblings_cpus,
        }] = c.mechanism.as_slice()
        else {
            panic!("{:?}", c.mechanism);
        };
        assert_eq!(
            (group.as_str(), *worker, *siblings, *group_ratio),
            ("spinners", 11, 1, 1.0)
        );
        assert!(near(*got_pct, 1.0), "{got_pct}");
        assert!(
            near(*siblings_pct, 99.0) && near(*siblings_cpus, 0.99),
            "{siblings_pct} {siblings_cpus}"
        );
    }
}
