//! The fair-share check: each group's CPU time against the share its
//! configuration entitles it to.
//!
//! The model is CFS/EEVDF's for SCHED_OTHER tasks. The CPU time that the
//! judged workers of a pool got in total (so load from outside the run
//! does not count against a group) is divided among the pool's entities
//! (a run cgroup, or a worker outside any cgroup) in proportion to their
//! weights (`cpu.weight`/`cpu.shares`, or the nice weight of a lone task),
//! by weighted max-min fairness: an entity never gets more than it can
//! use, which is the least of its `cpu.max` quota, the number of CPUs its
//! workers may run on (cpuset and affinity) and the demand of its
//! workers, and entities that can run only on the same few CPUs share
//! them (two pinned to one CPU get one CPU between them). An entity's
//! CPU is divided the same way among its workers. A worker's demand is the
//! share of a CPU it would have used without waiting for one: its CPU time
//! over the time it was not kept waiting runnable, `CPU time / (wall time
//! − run delay)`, at most 1. A spinner kept off the CPU still wants all of
//! one; a sleeper's own sleeps lower its demand, and so does nothing of
//! its wake latency (a timer worker that used 1.2% of a CPU and waited
//! 8% of the run for one wanted 1.3%, not 9.2%).
//!
//! Assumptions: run cgroups are treated as siblings (nesting is ignored);
//! real-time and deadline groups are not judged; scenarios with timed steps are not judged
//! (their entitlements change mid-run).

use crate::checks::detail::ShareDetail;
use std::collections::BTreeSet;

use crate::checks::Detail;

/// One entity competing for CPU: a run cgroup, or a lone worker.
#[derive(Debug, Clone, PartialEq)]
pub struct FairEntity {
    /// Relative weight (1.0 = `cpu.weight` 100 = `cpu.shares` 1024 = nice 0).
    pub weight: f64,
    /// CPUs it may run on.
    pub cpus: BTreeSet<usize>,
    /// `cpu.max` quota in CPUs, if limited.
    pub quota_cpus: Option<f64>,
}

/// One worker as the check sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct FairWorker {
    /// Index of its group.
    pub group: usize,
    /// Index of its entity in [`FairModel::entities`].
    pub entity: usize,
    /// Its weight within the entity (nice weight; 1.0 at nice 0).
    pub weight: f64,
    /// Share of one CPU it wanted, 0..=1.
    pub demand: f64,
    /// CPU time it got, ns.
    pub cpu_ns: u64,
    /// Its tid, for messages.
    pub tid: u32,
}

/// Everything the check needs, independent of how it was measured.
#[derive(Debug, Clone, PartialEq)]
pub struct FairModel {
    /// The competing entities.
    pub entities: Vec<FairEntity>,
    /// The judged workers.
    pub workers: Vec<FairWorker>,
    /// Group names, by group index.
    pub group_names: Vec<String>,
    /// The measuring window, ns (the workers' wall time).
    pub window_ns: u64,
    /// How the weights were set, for messages (e.g. "equal cpu.shares").
    pub basis: String,
}

/// A group's (or worker's) CPU, got against expected.
#[derive(Debug, Clone, PartialEq)]
pub struct FairShare {
    /// Group index.
    pub group: usize,
    /// CPUs it got on average over the window.
    pub got_cpus: f64,
    /// CPUs it was entitled to.
    pub expected_cpus: f64,
    /// CPU time (in CPUs) that the pool it competed in got in total.
    pub pool_cpus: f64,
}

impl FairShare {
    /// got / expected; 1 when nothing was expected.
    pub fn ratio(&self) -> f64 {
        if self.expected_cpus < 1e-9 {
            1.0
        } else {
            self.got_cpus / self.expected_cpus
        }
    }
}

/// Weighted max-min fair division of `capacity` among `(weight, cap)`.
pub fn water_fill(capacity: f64, items: &[(f64, f64)]) -> Vec<f64> {
    fill_within_limits(capacity, items, &[])
}

/// A limit on what several items get together: the entities that can run
/// only on a set of CPUs get at most that many CPUs between them.
#[derive(Debug, Clone, PartialEq)]
pub struct SharedLimit {
    /// Indices of the items it binds.
    pub members: Vec<usize>,
    /// What they get together, at most.
    pub limit: f64,
}

/// Weighted max-min fair division of `capacity` among `(weight, cap)`,
/// under `shared` limits too, by progressive filling: every open item
/// grows in proportion to its weight until a limit it is bound by (its
/// cap, a shared limit or the capacity) is reached; the items of that
/// limit stop there and the rest go on.
pub fn fill_within_limits(capacity: f64, items: &[(f64, f64)], shared: &[SharedLimit]) -> Vec<f64> {
    let mut limits: Vec<SharedLimit> = shared.to_vec();
    limits.push(SharedLimit {
        members: (0..items.len()).collect(),
        limit: capacity.max(0.0),
    });
    limits.extend(items.iter().enumerate().map(|(i, &(_, cap))| SharedLimit {
        members: vec![i],
        limit: cap,
    }));
    let mut alloc = vec![0.0; items.len()];
    let mut open: Vec<bool> = items.iter().map(|&(w, cap)| w > 0.0 && cap > 0.0).collect();
    while open.iter().any(|&o| o) {
        let steps: Vec<f64> = limits
            .iter()
            .map(|l| step_to_limit(l, items, &alloc, &open))
            .collect();
        let step = steps.iter().copied().fold(f64::INFINITY, f64::min);
        if !step.is_finite() {
            break;
        }
        for i in (0..items.len()).filter(|&i| open[i]) {
            alloc[i] += step * items[i].0;
        }
        for (l, _) in limits
            .iter()
            .zip(&steps)
            .filter(|(_, &s)| s <= step + 1e-12)
        {
            for &i in &l.members {
                open[i] = false;
            }
        }
    }
    alloc
}

/// How far the open members of `l` can still grow (in units of weight)
/// before `l` is reached; infinite when none of them is open.
fn step_to_limit(l: &SharedLimit, items: &[(f64, f64)], alloc: &[f64], open: &[bool]) -> f64 {
    let rate: f64 = l
        .members
        .iter()
        .filter(|&&i| open[i])
        .map(|&i| items[i].0)
        .sum();
    if rate <= 0.0 {
        return f64::INFINITY;
    }
    let used: f64 = l.members.iter().map(|&i| alloc[i]).sum();
    (l.limit - used).max(0.0) / rate
}

/// Groups of entities that compete for the same CPUs: entities whose
/// cpusets are equal or disjoint form separate pools; any partial overlap
/// puts everyone in one pool (each entity still capped by its cpuset).
fn pools(entities: &[FairEntity]) -> Vec<(Vec<usize>, BTreeSet<usize>)> {
    let mut sets: Vec<&BTreeSet<usize>> = entities.iter().map(|e| &e.cpus).collect();
    sets.sort();
    sets.dedup();
    let clean = sets
        .iter()
        .enumerate()
        .all(|(i, a)| sets[i + 1..].iter().all(|b| a.is_disjoint(b)));
    if !clean {
        let all = (0..entities.len()).collect();
        let union = entities
            .iter()
            .flat_map(|e| e.cpus.iter().copied())
            .collect();
        return vec![(all, union)];
    }
    sets.into_iter()
        .map(|set| {
            let members = (0..entities.len())
                .filter(|&i| &entities[i].cpus == set)
                .collect();
            (members, set.clone())
        })
        .collect()
}

/// One shared limit per distinct CPU set among `members` (indices into
/// `entities`): the members that can run only inside a set get at most
/// that many CPUs between them (two lone workers pinned to one CPU share
/// it). The limits bind positions in `members`.
fn cpu_set_limits(entities: &[FairEntity], members: &[usize]) -> Vec<SharedLimit> {
    let mut sets: Vec<&BTreeSet<usize>> = members.iter().map(|&e| &entities[e].cpus).collect();
    sets.sort();
    sets.dedup();
    sets.into_iter()
        .map(|set| SharedLimit {
            members: (0..members.len())
                .filter(|&k| entities[members[k]].cpus.is_subset(set))
                .collect(),
            limit: set.len() as f64,
        })
        .collect()
}

/// CPUs each worker is entitled to, and what its pool got in total.
pub fn expected_per_worker(m: &FairModel) -> Vec<(f64, f64)> {
    let mut out = vec![(0.0, 0.0); m.workers.len()];
    let window = m.window_ns.max(1) as f64;
    for (members, _) in pools(&m.entities) {
        let capacity: f64 = m
            .workers
            .iter()
            .filter(|w| members.contains(&w.entity))
            .map(|w| w.cpu_ns as f64 / window)
            .sum();
        let caps: Vec<(f64, f64)> = members
            .iter()
            .map(|&e| {
                let ent = &m.entities[e];
                let demand: f64 = m
                    .workers
                    .iter()
                    .filter(|w| w.entity == e)
                    .map(|w| w.demand.clamp(0.0, 1.0))
                    .sum();
                let cap = ent.quota_cpus.unwrap_or(f64::INFINITY);
                (ent.weight, demand.min(ent.cpus.len() as f64).min(cap))
            })
            .collect();
        let alloc = fill_within_limits(capacity, &caps, &cpu_set_limits(&m.entities, &members));
        for (&e, &got) in members.iter().zip(&alloc) {
            let mine: Vec<usize> = (0..m.workers.len())
                .filter(|&i| m.workers[i].entity == e)
                .collect();
            let items: Vec<(f64, f64)> = mine
                .iter()
                .map(|&i| (m.workers[i].weight, m.workers[i].demand.clamp(0.0, 1.0)))
                .collect();
            for (&i, &x) in mine.iter().zip(&water_fill(got, &items)) {
                out[i] = (x, capacity);
            }
        }
    }
    out
}

/// Every group's share, got against expected.
pub fn group_shares(m: &FairModel) -> Vec<FairShare> {
    let per_worker = expected_per_worker(m);
    let window = m.window_ns.max(1) as f64;
    (0..m.group_names.len())
        .filter_map(|g| {
            let mine: Vec<usize> = (0..m.workers.len())
                .filter(|&i| m.workers[i].group == g)
                .collect();
            let first = *mine.first()?;
            Some(FairShare {
                group: g,
                got_cpus: mine
                    .iter()
                    .map(|&i| m.workers[i].cpu_ns as f64)
                    .sum::<f64>()
                    / window,
                expected_cpus: mine.iter().map(|&i| per_worker[i].0).sum(),
                pool_cpus: per_worker[first].1,
            })
        })
        .collect()
}

/// Within group `g`: the worker that got least of its fair part of the
/// group's own CPU (equal weights, capped by demand), as (tid, share).
pub fn worst_worker(m: &FairModel, g: usize) -> Option<(u32, FairShare)> {
    let window = m.window_ns.max(1) as f64;
    let mine: Vec<&FairWorker> = m.workers.iter().filter(|w| w.group == g).collect();
    if mine.len() < 2 {
        return None;
    }
    let total: f64 = mine.iter().map(|w| w.cpu_ns as f64).sum::<f64>() / window;
    let items: Vec<(f64, f64)> = mine
        .iter()
        .map(|w| (w.weight, w.demand.clamp(0.0, 1.0)))
        .collect();
    let fair = water_fill(total, &items);
    mine.iter()
        .zip(fair)
        .map(|(w, expected_cpus)| {
            let share = FairShare {
                group: g,
                got_cpus: w.cpu_ns as f64 / window,
                expected_cpus,
                pool_cpus: total,
            };
            (w.tid, share)
        })
        .min_by(|a, b| a.1.ratio().total_cmp(&b.1.ratio()))
}

/// What a group's share check states: the share it got, the share it
/// was owed, and how the entitlements were set.
pub fn describe(m: &FairModel, s: &FairShare) -> Detail {
    let pct = |cpus: f64| 100.0 * cpus / s.pool_cpus.max(1e-9);
    Detail::Share(ShareDetail::FairShare {
        group: m.group_names[s.group].clone(),
        got_pct: pct(s.got_cpus),
        expected_pct: pct(s.expected_cpus),
        basis: m.basis.clone(),
    })
}

#[cfg(test)]
#[path = "fairness_tests.rs"]
mod tests;
