//! A failed check explained by the per-task recorder: which worker the
//! check points at, how long it ran and waited runnable, and who held its
//! CPU while it waited, split into its own group's workers (starvation
//! inside its cgroup), the run's other groups, runq's own threads (its
//! collector and host monitor: runq measuring itself) and tasks outside
//! the run, each named with its pid, comm and held time. The largest part is the
//! mechanism; tasks outside the run that held most of the wait make load
//! outside the run the cause, others rule it out. Without a recorder the
//! causes keep what /proc and schedstat tell, and say what was missing.

use crate::CheckId;
use runq_kernel::task_record::{groups_of_class, Holder, Recorded, TaskRecord, RUNQ_CLASS};

use super::cause::{Cause, HeldBy, HeldParts, NamedHolder, NextStep, RecorderAccount};
use super::mechanism::{Container, HeldFor, Mechanism, NamedTask};
use super::outside_load::{LoadSeen, OutsideLoad};
use super::CheckResult;
use crate::report::WorkerReport;
use crate::scenario::Scenario;

/// Below this share of its wall time spent waiting for a CPU, a worker's
/// failure was not a wait for a CPU.
const MIN_WAIT_SHARE: f64 = 0.05;

/// Holders named per part.
const NAMED: usize = 3;

/// What the run knows about its groups, for naming them.
pub(crate) struct RunTasks<'a> {
    scn: &'a Scenario,
    /// Whether the groups were placed in runq's cgroups.
    in_cgroups: bool,
}

impl RunTasks<'_> {
    /// The cgroup group `g` ran in when runq made one for it, else the
    /// group itself.
    fn container(&self, g: usize) -> Container {
        let spec = &self.scn.groups[g];
        match (&spec.cgroup, self.in_cgroups) {
            (Some(cg), true) => Container::Cgroup { name: cg.clone() },
            _ => Container::Group {
                name: spec.name.clone(),
            },
        }
    }

    /// True when class `k` shares group `g`'s container: every group it
    /// stands for ([`groups_of_class`]) is `g` or ran in `g`'s cgroup.
    fn same_container(&self, k: u32, g: usize) -> bool {
        let cgroup = |i: usize| self.scn.groups.get(i).and_then(|x| x.cgroup.as_ref());
        let mut others = groups_of_class(k, self.scn.groups.len()).peekable();
        others.peek().is_some()
            && others.all(|other| {
                other == g || (self.in_cgroups && cgroup(g).is_some() && cgroup(g) == cgroup(other))
            })
    }

    /// The containers of the classes of `holders`, each once, in the
    /// order of the holders.
    fn containers_of(&self, holders: &[&Holder]) -> Vec<Container> {
        let mut names: Vec<Container> = Vec::new();
        for h in holders {
            for g in groups_of_class(h.class, self.scn.groups.len()) {
                let c = self.container(g);
                if !names.contains(&c) {
                    names.push(c);
                }
            }
        }
        names
    }
}

/// Who held a worker's CPU while it waited, in three parts.
#[derive(Debug, Default)]
pub(crate) struct Split<'r> {
    /// Workers of its own group, their held time.
    pub own: (Vec<&'r Holder>, u64),
    /// Workers of the run's other groups.
    pub run: (Vec<&'r Holder>, u64),
    /// runq's own threads and what they started besides the workers.
    pub runq: (Vec<&'r Holder>, u64),
    /// Tasks outside the run.
    pub outside: (Vec<&'r Holder>, u64),
}

impl Split<'_> {
    fn total(&self) -> u64 {
        self.own.1 + self.run.1 + self.runq.1 + self.outside.1
    }
}

/// `w`'s held time split by whom its holders belong to, `w` being of
/// group `g` (its class is `g + 1`, 0 is outside the run): its own group
/// and those in its cgroup, the run's other workers, runq's own threads,
/// the rest.
pub(crate) fn split<'r>(w: &'r TaskRecord, g: usize, tasks: &RunTasks<'_>) -> Split<'r> {
    Split {
        own: w.held_by(|k| tasks.same_container(k, g)),
        run: w.held_by(|k| k != 0 && k != RUNQ_CLASS && !tasks.same_container(k, g)),
        runq: w.held_by(|k| k == RUNQ_CLASS),
        outside: w.held_by(|k| k == 0),
    }
}

/// How long `holders` held worker `w`'s CPU (`ns`; at most its wait:
/// held time can pass it by the turn in progress when it ended), the
/// first few of them named.
fn held_for(w: &TaskRecord, (holders, ns): &(Vec<&Holder>, u64)) -> HeldFor {
    HeldFor {
        held_ns: (*ns).min(w.wait_ns),
        waited_ns: w.wait_ns,
        holders: holders
            .iter()
            .take(NAMED)
            .map(|h| NamedTask {
                comm: h.comm.clone(),
                pid: h.pid,
            })
            .collect(),
        more_holders: holders.len().saturating_sub(NAMED),
    }
}

/// The worker check `c` points at: a stuck or dead one for `not_stuck`,
/// the longest gap for `max_gap_ms`, the one that ran least for a share
/// or a rate, else the one that waited longest for a CPU (over the whole
/// run for a check of the host).
fn subject<'r>(
    c: &CheckResult,
    scn: &Scenario,
    reports: &[WorkerReport],
    rec: &'r Recorded,
) -> Option<(&'r TaskRecord, Option<usize>)> {
    let g = scn.group_index(&c.group);
    let mine = || {
        reports
            .iter()
            .filter(move |r| g.is_none_or(|g| r.group_idx == g) && rec.worker(r.tid).is_some())
    };
    let candidates: Vec<&WorkerReport> = mine().collect();
    let chosen = super::worker_pointed_at(c.check, &candidates);
    let chosen =
        chosen.or_else(|| mine().max_by_key(|r| rec.worker(r.tid).map_or(0, |w| w.wait_ns)))?;
    Some((rec.worker(chosen.tid)?, Some(chosen.group_idx)))
}

/// The task that held the worker's CPU longest within the part that held
/// it longest (its own group, the run's others, runq, outside): the one
/// the mechanism's account leads with.
fn top_holder<'r>(s: &Split<'r>) -> Option<&'r Holder> {
    [&s.own, &s.run, &s.runq, &s.outside]
        .into_iter()
        .filter(|part| !part.0.is_empty())
        .max_by_key(|part| part.1)?
        .0
        .first()
        .copied()
}

/// The recorder's account of worker `w` (of `group`) as facts: its
/// record, how long each part held its CPU while it waited, and the
/// tasks that held the CPUs it waited on, named (`whose` names a class).
fn account(
    w: &TaskRecord,
    group: &str,
    s: &Split<'_>,
    whose: &dyn Fn(u32) -> String,
) -> RecorderAccount {
    let holders = w
        .holders
        .iter()
        .take(2 * NAMED)
        .map(|h| NamedHolder {
            comm: h.comm.clone(),
            pid: h.pid,
            whose: whose(h.class),
            held_ns: h.held_ns,
            samples: h.turns,
        })
        .collect();
    RecorderAccount {
        record: TaskRecord {
            holders: Vec::new(),
            ..w.clone()
        },
        group: group.to_string(),
        held: HeldParts {
            own_ns: s.own.1,
            run_ns: s.run.1,
            runq_ns: s.runq.1,
            outside_ns: s.outside.1,
        },
        holders,
    }
}

/// Not a wait for a CPU, when worker `w` (wall time `wall_ns`) barely
/// waited runnable, its CPU was held by nobody (`held` 0), or, `stuck`,
/// it slept more than twice as long as it waited: a stuck worker blocked
/// in a call. (A wake latency's worker sleeps between its wakes by
/// design, so only a stuck one is judged by its sleep.) Under sampled
/// fidelity a wait whose holders no sample found is a wait all the same:
/// its holders are unseen.
fn no_cpu_wait(w: &TaskRecord, wall_ns: u64, stuck: bool, held: u64) -> Option<Mechanism> {
    let asleep = wall_ns.saturating_sub(w.run_ns + w.wait_ns);
    let slept_through = stuck && asleep > 2 * w.wait_ns;
    let barely = (w.wait_ns as f64) < MIN_WAIT_SHARE * wall_ns as f64;
    if w.sampled.is_some() && held == 0 && !barely && !slept_through {
        return Some(Mechanism::HoldersUnseen {
            worker: w.worker,
            waited_ns: w.wait_ns,
            wall_ns,
        });
    }
    (barely || held == 0 || slept_through).then_some(Mechanism::NoCpuWait {
        worker: w.worker,
        waited_ns: w.wait_ns,
        wall_ns,
        ran_ns: w.run_ns,
        asleep_ns: asleep,
    })
}

/// The mechanism the recorder shows for worker `w` of group `g` (wall
/// time `wall_ns`; `stuck`: it did not end) and the run to make next: the
/// largest part of the time its CPU was held from it, or no wait for a
/// CPU at all.
fn mechanism(
    w: &TaskRecord,
    g: usize,
    (wall_ns, stuck): (u64, bool),
    tasks: &RunTasks<'_>,
    s: &Split<'_>,
) -> (Mechanism, Option<NextStep>) {
    if let Some(m) = no_cpu_wait(w, wall_ns, stuck, s.total()) {
        // Unseen holders: the exact recorder would name them.
        let next =
            matches!(m, Mechanism::HoldersUnseen { .. }).then_some(NextStep::FlightRecorder {
                worker: Some(w.worker),
            });
        return (m, next);
    }
    let control = (tasks.in_cgroups && tasks.scn.groups[g].cgroup.is_some())
        .then_some(NextStep::NoCgroupsControl);
    let trace = || {
        Some(NextStep::FlightRecorder {
            worker: Some(w.worker),
        })
    };
    if s.own.1 >= s.run.1 && s.own.1 >= s.outside.1 && s.own.1 >= s.runq.1 {
        let m = Mechanism::InsideContainer {
            // A worker that ran most of its time was not starved: its
            // group mates only delayed it.
            starved: 2 * w.run_ns < wall_ns,
            container: tasks.container(g),
            worker: w.worker,
            ran_ns: w.run_ns,
            wall_ns,
            held: held_for(w, &s.own),
        };
        (m, control.or_else(trace))
    } else if s.run.1 >= s.outside.1 && s.run.1 >= s.runq.1 {
        let m = Mechanism::OtherGroups {
            containers: tasks.containers_of(&s.run.0),
            worker: w.worker,
            held: held_for(w, &s.run),
        };
        (m, control.or_else(trace))
    } else if s.runq.1 >= s.outside.1 {
        let m = Mechanism::RunqItself {
            worker: w.worker,
            held: held_for(w, &s.runq),
        };
        (m, Some(NextStep::LeaveRunqACpu))
    } else {
        let held = held_for(w, &s.outside);
        // The outside time can have no named holder (tasks that exited,
        // such as a fork storm's children, before the recorder named them).
        let next = match held.holders.first() {
            Some(top) => NextStep::StopHolder {
                comm: top.comm.clone(),
                pid: top.pid,
            },
            None => NextStep::KeepOffOutsideCpus,
        };
        let m = Mechanism::Outside {
            worker: w.worker,
            held,
        };
        (m, Some(next))
    }
}

/// Revises the judgement on outside load with what the recorder saw:
/// for a delay, tasks outside the run that held at least half of the time
/// the worker's CPU was held from it explain the figure, fewer do not,
/// whatever the host's load; a share or a rate is explained when the
/// worker, given its part of their time (in the proportion it got of the
/// run's time on its CPU), could have reached its bound.
fn revise_load(c: &mut CheckResult, w: &TaskRecord, s: &Split<'_>, wall_ns: u64) {
    if s.total() == 0 {
        return;
    }
    let outside = s.outside.1.min(w.wait_ns);
    let (explains, best) = recorded_explains(c, w, s, wall_ns);
    let held_outside: &[&Holder] = if outside > 0 { &s.outside.0 } else { &[] };
    let seen = LoadSeen {
        worker: w.worker,
        outside_ns: outside,
        waited_ns: w.wait_ns,
        outside_named: held_outside
            .iter()
            .take(NAMED)
            .map(|h| format!("{}[{}]", h.comm, h.pid))
            .collect(),
        outside_more: held_outside.len().saturating_sub(NAMED),
        run_ns: s.own.1 + s.run.1,
        runq_ns: s.runq.1,
        best,
    };
    let cause = c.cause.get_or_insert_with(Cause::default);
    let figures = cause.outside_load.take().and_then(|o| o.figures);
    if figures.is_none() && !explains {
        return;
    }
    cause.outside_load = Some(OutsideLoad {
        explains,
        figures,
        recorded: Some(seen),
    });
}

/// Whether what the recorder saw explains check `c` by load outside the
/// run, and for a share or a rate the best its worker could have reached.
fn recorded_explains(
    c: &CheckResult,
    w: &TaskRecord,
    s: &Split<'_>,
    wall_ns: u64,
) -> (bool, Option<f64>) {
    let outside = s.outside.1.min(w.wait_ns);
    if super::outside_load::is_proportional(c) {
        // A share or a rate: what the worker would have done had their
        // time gone to it in the proportion it got of the run's time there.
        let run_time = (w.run_ns + s.own.1 + s.run.1 + s.runq.1).max(1) as f64;
        let best = c.measured * (1.0 + outside as f64 / run_time);
        return (c.op == super::Op::AtLeast && best >= c.bound, Some(best));
    }
    // A delay the figures did not take for a wait for a CPU is the load's
    // only when the worker waited most of its time.
    let waited_most = 2 * w.wait_ns >= wall_ns;
    let judged = cause_says(c).unwrap_or(true);
    (
        2 * s.outside.1 >= s.total() && (judged || waited_most),
        None,
    )
}

/// Whether the figures' judgement on outside load (when there is one)
/// says it explains check `c`.
fn cause_says(c: &CheckResult) -> Option<bool> {
    c.cause.as_ref()?.outside_load.as_ref().map(|o| o.explains)
}

/// The cause of a check failed by worker `w`'s end (`how`): the end
/// itself, not a wait for a CPU.
fn died_cause(cause: &mut Cause, w: &TaskRecord, how: &crate::report::WorkerExitInfo) {
    if cause.mechanism.is_empty() {
        cause.mechanism.push(Mechanism::Ended {
            worker: w.worker,
            how: how.clone(),
            ran_ns: w.run_ns,
            waited_ns: w.wait_ns,
        });
    }
    cause.next_step.get_or_insert(NextStep::FindWhatEndedIt);
}

/// Adds the recorder's evidence to every failed check (its mechanism
/// first, the figures' after; its next step; the judgement on outside
/// load by the holders it named), or, without a recorder, says why there
/// is none.
pub(crate) fn explain_all(
    scn: &Scenario,
    reports: &[WorkerReport],
    rec: Result<&Recorded, &str>,
    in_cgroups: bool,
    checks: &mut [CheckResult],
) {
    let rec = match rec {
        Ok(r) => r,
        Err(why) => {
            for c in checks.iter_mut().filter(|c| !c.pass) {
                c.cause.get_or_insert_with(Cause::default).no_recorder = Some(why.to_string());
            }
            return;
        }
    };
    let tasks = RunTasks { scn, in_cgroups };
    for c in checks.iter_mut().filter(|c| !c.pass) {
        if !super::outside_load::load_can_act(c) {
            continue;
        }
        let Some((w, Some(g))) = subject(c, scn, reports, rec) else {
            continue;
        };
        let report = reports.iter().find(|r| r.tid == w.worker);
        let wall = report.map_or(w.run_ns + w.wait_ns, |r| r.wall_time_ns);
        let died = report.and_then(|r| {
            r.exit_info
                .as_ref()
                .filter(|e| **e != crate::report::WorkerExitInfo::TimedOut)
        });
        let s = split(w, g, &tasks);
        let stuck = c.check == CheckId::NotStuck;
        let (mechanism, next) = mechanism(w, g, (wall, stuck), &tasks, &s);
        // A delay the figures found was no wait for a CPU (a partner
        // stopped, a sleep) keeps that account unless the worker waited
        // most of its time.
        let not_a_wait = !super::outside_load::is_proportional(c)
            && cause_says(c) == Some(false)
            && 2 * w.wait_ns < wall;
        let cause = c.cause.get_or_insert_with(Cause::default);
        let whose = |k: u32| match k {
            0 => "outside".to_string(),
            RUNQ_CLASS => "runq".to_string(),
            k => scn
                .groups
                .get(k as usize - 1)
                .map_or_else(|| "the run".into(), |x| x.name.clone()),
        };
        let acc = account(w, &scn.groups[g].name, &s, &whose);
        cause.held_by = top_holder(&s).filter(|_| w.wait_ns > 0).map(|h| HeldBy {
            worker: w.worker,
            comm: h.comm.clone(),
            pid: h.pid,
            whose: whose(h.class),
            held_ns: h.held_ns,
            wait_ns: w.wait_ns,
        });
        cause.recorder = Some(acc);
        if let Some(how) = died {
            died_cause(cause, w, how);
            continue;
        }
        if not_a_wait {
            continue;
        }
        cause.mechanism.insert(0, mechanism);
        if next.is_some() {
            cause.next_step = next;
        }
        revise_load(c, w, &s, wall);
    }
}

#[cfg(test)]
#[path = "recorded_tests.rs"]
mod tests;
