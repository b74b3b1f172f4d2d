//! Where the CPU time went when a fair share failed: to the run's other
//! groups (the scheduler's split between them, e.g. between cgroups), to
//! the group's own other workers (starvation inside the group), or to
//! neither (then outside the run, or left idle). Each cause names the
//! control run that tells it apart.

use crate::checks::cause::{Cause, NextStep};
use crate::fairness::{FairModel, FairShare};

/// Groups got more than this times their entitlement before they are
/// named as having taken a starved group's time.
const OVER_SERVED: f64 = 1.1;

/// The cause of group `s`'s failed share, among every group's `shares`.
pub fn group_share_cause(m: &FairModel, s: &FairShare, shares: &[FairShare]) -> Cause {
    let pct = |cpus: f64| 100.0 * cpus / s.pool_cpus.max(1e-9);
    let takers: Vec<String> = shares
        .iter()
        .filter(|o| o.group != s.group && o.got_cpus > OVER_SERVED * o.expected_cpus)
        .map(|o| {
            format!(
                "{} got {:.1}% ({:.2} CPUs), owed {:.0}%",
                m.group_names[o.group],
                pct(o.got_cpus),
                o.got_cpus,
                pct(o.expected_cpus)
            )
        })
        .collect();
    let by_cgroup = m.basis.contains("cpu.shares") || m.basis.contains("cpu.weight");
    let (mechanism, next_step) = if takers.is_empty() {
        (
            format!(
                "no other group of the run took the {:.2} CPUs {} was owed: they went outside the run or stayed idle",
                (s.expected_cpus - s.got_cpus).max(0.0),
                m.group_names[s.group]
            ),
            NextStep::FlightRecorder { worker: None },
        )
    } else if by_cgroup {
        (
            format!(
                "the run's own workers took its time: {}; the scheduler split the CPUs between the run's cgroups ({}) against their weights",
                takers.join(", "),
                m.basis
            ),
            NextStep::NoCgroupsControl,
        )
    } else {
        (
            format!(
                "the run's own workers took its time: {}; the scheduler split the CPUs between the run's tasks against their weights",
                takers.join(", ")
            ),
            NextStep::FlightRecorder { worker: None },
        )
    };
    Cause {
        mechanism: Some(mechanism),
        outside_load: None,
        next_step: Some(next_step),
        ..Cause::default()
    }
}

/// The cause of worker `tid`'s failed share of its group, `w`, when the
/// group as a whole got `group_ratio` of its entitlement.
pub fn worker_share_cause(m: &FairModel, tid: u32, w: &FairShare, group_ratio: f64) -> Cause {
    let others = m
        .workers
        .iter()
        .filter(|x| x.group == w.group && x.tid != tid)
        .count();
    let pct = |cpus: f64| 100.0 * cpus / w.pool_cpus.max(1e-9);
    let rest = (w.pool_cpus - w.got_cpus).max(0.0);
    let group = &m.group_names[w.group];
    let whole = if group_ratio >= 0.9 {
        format!(
            "while the group as a whole got {:.0}% of what it was owed",
            100.0 * group_ratio
        )
    } else {
        format!(
            "and the group as a whole got only {:.0}% of what it was owed",
            100.0 * group_ratio
        )
    };
    let siblings = match others {
        1 => "its other worker".to_string(),
        n => format!("its {n} other workers"),
    };
    Cause {
        mechanism: Some(format!(
            "starvation inside {group}: worker {tid} got {:.1}% of the group's CPU time {whole}; {siblings} took {:.1}% ({:.2} CPUs)",
            pct(w.got_cpus),
            pct(rest),
            rest
        )),
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

    #[test]
    fn a_group_starved_by_another_cgroup_names_it_and_the_control() {
        let m = model("equal cpu.shares", [5_000_000, 6_000_000, 1_900_000_000]);
        let shares = crate::fairness::group_shares(&m);
        let c = group_share_cause(&m, &shares[0], &shares);
        let text = c.mechanism.unwrap();
        assert!(
            text.contains("pingpong got 99.4% (1.90 CPUs), owed 50%"),
            "{text}"
        );
        assert!(
            text.contains("between the run's cgroups (equal cpu.shares)"),
            "{text}"
        );
        assert_eq!(c.next_step, Some(NextStep::NoCgroupsControl));
    }

    #[test]
    fn a_group_nobody_in_the_run_starved_says_so() {
        let m = model("equal cpu.shares", [300_000_000, 300_000_000, 600_000_000]);
        let shares = crate::fairness::group_shares(&m);
        let text = group_share_cause(&m, &shares[0], &shares)
            .mechanism
            .unwrap();
        assert!(text.starts_with("no other group of the run took"), "{text}");
    }

    #[test]
    fn a_worker_starved_by_its_siblings_is_starvation_inside_the_group() {
        let m = model("equal cpu.shares", [10_000_000, 990_000_000, 1_000_000_000]);
        let (tid, w) = crate::fairness::worst_worker(&m, 0).unwrap();
        let text = worker_share_cause(&m, tid, &w, 1.0).mechanism.unwrap();
        assert!(
            text.starts_with("starvation inside spinners: worker 11 got 1.0%"),
            "{text}"
        );
        assert!(
            text.contains("its other worker took 99.0% (0.99 CPUs)"),
            "{text}"
        );
    }
}
