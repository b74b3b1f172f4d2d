//! What took a worker's CPU time or caused a check's delay, in words:
//! the sentence after a failed check's `cause:`, one clause per
//! mechanism the engine found, joined with "; ".

use runq_common::units::fmt_ms_grouped as ms;
use runq_workload::{Container, HeldFor, Mechanism, ShareTaker, WorkerExitInfo};

/// The cause's mechanisms as one sentence, `a; b`, or `None` when it has
/// none.
pub fn mechanisms_sentence(ms: &[Mechanism]) -> Option<String> {
    (!ms.is_empty()).then(|| {
        ms.iter()
            .map(mechanism_sentence)
            .collect::<Vec<_>>()
            .join("; ")
    })
}

/// `the workers of the run's cgroup pingpong kept worker 8679 off its
/// CPU: ...`.
pub fn mechanism_sentence(m: &Mechanism) -> String {
    match m {
        Mechanism::NoCpuWait {
            worker,
            waited_ns,
            wall_ns,
            ran_ns,
            asleep_ns,
        } => no_cpu_wait(*worker, (*waited_ns, *wall_ns), *ran_ns, *asleep_ns),
        Mechanism::HoldersUnseen {
            worker,
            waited_ns,
            wall_ns,
        } => holders_unseen(*worker, *waited_ns, *wall_ns),
        Mechanism::InsideContainer {
            starved,
            container: c,
            worker,
            ran_ns,
            wall_ns,
            held,
        } => inside_container(*starved, c, *worker, (*ran_ns, *wall_ns), held),
        Mechanism::OtherGroups {
            containers,
            worker,
            held,
        } => other_groups(containers, *worker, held),
        Mechanism::RunqItself { worker, held } => format!(
            "runq itself kept worker {worker} off its CPU: runq's own threads (its collector, its \
             host monitor) held it for {}, not load outside the run",
            held_for(held)
        ),
        Mechanism::Outside { worker, held } => format!(
            "a task outside the run kept worker {worker} off its CPU: tasks outside the run held \
             it for {}",
            held_for(held)
        ),
        Mechanism::Ended {
            worker,
            how,
            ran_ns,
            waited_ns,
        } => ended(*worker, how, *ran_ns, *waited_ns),
        Mechanism::SharesWentOutside { group, short_cpus } => format!(
            "no other group of the run took the {short_cpus:.2} CPUs {group} was owed: they went \
             outside the run or stayed idle"
        ),
        Mechanism::RunTookShares {
            takers,
            cgroup_basis,
        } => run_took_shares(takers, cgroup_basis.as_deref()),
        Mechanism::WorkerStarvedInGroup {
            group,
            worker,
            got_pct,
            group_ratio,
            siblings,
            siblings_pct,
            siblings_cpus,
        } => worker_starved(
            group,
            (*worker, *got_pct),
            *group_ratio,
            (*siblings, *siblings_pct, *siblings_cpus),
        ),
        Mechanism::IdleBesideWaiting {
            idle_cpus,
            host_cpus,
            waited_share,
        } => idle_beside_waiting(*idle_cpus, *host_cpus, *waited_share),
        Mechanism::RunError { error } => format!("the run ended early: {error}"),
    }
}

/// `not a wait for a CPU: worker 8679 waited runnable 2,834 ms of its
/// 10,000 ms (28.3%), ran 214 ms and was asleep 6,952 ms`.
fn no_cpu_wait(
    worker: u32,
    (waited_ns, wall_ns): (u64, u64),
    ran_ns: u64,
    asleep_ns: u64,
) -> String {
    format!(
        "not a wait for a CPU: worker {worker} waited runnable {} of its {} ({:.1}%), ran {} \
         and was asleep {}",
        ms(waited_ns),
        ms(wall_ns),
        100.0 * waited_ns as f64 / wall_ns.max(1) as f64,
        ms(ran_ns),
        ms(asleep_ns)
    )
}

/// `the workers of the run's cgroup pingpong kept worker 8679 off its
/// CPU: they held it for ...`.
fn other_groups(containers: &[Container], worker: u32, held: &HeldFor) -> String {
    format!(
        "the workers of the run's {} kept worker {worker} off its CPU: they held it for {}",
        containers
            .iter()
            .map(container)
            .collect::<Vec<_>>()
            .join(", "),
        held_for(held)
    )
}

/// `worker 8679 waited runnable 2,940 ms of its 3,010 ms (97.7%), but
/// the sampled recorder found no other task on its CPUs: who held them
/// is not known`.
fn holders_unseen(worker: u32, waited_ns: u64, wall_ns: u64) -> String {
    format!(
        "worker {worker} waited runnable {} of its {} ({:.1}%), but the sampled recorder \
         found no other task on its CPUs: who held them is not known",
        ms(waited_ns),
        ms(wall_ns),
        100.0 * waited_ns as f64 / wall_ns.max(1) as f64,
    )
}

/// `worker 6432 ended (killed by SIGKILL) after it ran 40 ms and waited
/// 2,000 ms for a CPU: ...`.
fn ended(worker: u32, how: &WorkerExitInfo, ran_ns: u64, waited_ns: u64) -> String {
    format!(
        "worker {worker} ended ({how}) after it ran {} and waited {} for a CPU: its end, not a \
         wait for a CPU, failed the check",
        ms(ran_ns),
        ms(waited_ns)
    )
}

/// `meanwhile 1.50 of the host's 4 CPUs stayed idle while its workers
/// waited runnable 80% of their time: ...`.
fn idle_beside_waiting(idle_cpus: f64, host_cpus: usize, waited_share: f64) -> String {
    format!(
        "meanwhile {idle_cpus:.2} of the host's {host_cpus} CPUs stayed idle while its workers \
         waited runnable {:.0}% of their time: the scheduler did not move them to an idle CPU",
        100.0 * waited_share
    )
}

/// `starvation inside cgroup all: worker 8679 ran 214 ms of its 3,000
/// ms; the other workers of its cgroup all held its CPU for ...`.
fn inside_container(
    starved: bool,
    c: &Container,
    worker: u32,
    (ran_ns, wall_ns): (u64, u64),
    held: &HeldFor,
) -> String {
    let kind = if starved { "starvation" } else { "contention" };
    let c = container(c);
    format!(
        "{kind} inside {c}: worker {worker} ran {} of its {}; the other workers of its {c} held \
         its CPU for {}",
        ms(ran_ns),
        ms(wall_ns),
        held_for(held)
    )
}

/// `the run's own workers took its time: pingpong got 99.4% (1.90 CPUs),
/// owed 50%; the scheduler split the CPUs between the run's cgroups
/// (equal cpu.shares) against their weights`.
fn run_took_shares(takers: &[ShareTaker], cgroup_basis: Option<&str>) -> String {
    let between = match cgroup_basis {
        Some(basis) => format!("the run's cgroups ({basis})"),
        None => "the run's tasks".to_string(),
    };
    format!(
        "the run's own workers took its time: {}; the scheduler split the CPUs between \
         {between} against their weights",
        takers.iter().map(taker).collect::<Vec<_>>().join(", ")
    )
}

/// `starvation inside spinners: worker 11 got 1.0% of the group's CPU
/// time while the group as a whole got 100% of what it was owed; its
/// other worker took 99.0% (0.99 CPUs)`: worker `worker` got `got_pct`
/// of the group's time, the group `group_ratio` of what it was owed, its
/// `siblings` other workers the rest (percent, CPUs).
fn worker_starved(
    group: &str,
    (worker, got_pct): (u32, f64),
    group_ratio: f64,
    (siblings, siblings_pct, siblings_cpus): (usize, f64, f64),
) -> String {
    let whole = if group_ratio >= 0.9 {
        "while the group as a whole got"
    } else {
        "and the group as a whole got only"
    };
    let siblings = match siblings {
        1 => "its other worker".to_string(),
        n => format!("its {n} other workers"),
    };
    format!(
        "starvation inside {group}: worker {worker} got {got_pct:.1}% of the group's CPU time \
         {whole} {:.0}% of what it was owed; {siblings} took {siblings_pct:.1}% \
         ({siblings_cpus:.2} CPUs)",
        100.0 * group_ratio
    )
}

/// `pingpong got 99.4% (1.90 CPUs), owed 50%`.
fn taker(t: &ShareTaker) -> String {
    format!(
        "{} got {:.1}% ({:.2} CPUs), owed {:.0}%",
        t.group, t.got_pct, t.got_cpus, t.owed_pct
    )
}

/// `cgroup pingpong`, `group spinners`.
fn container(c: &Container) -> String {
    match c {
        Container::Cgroup { name } => format!("cgroup {name}"),
        Container::Group { name } => format!("group {name}"),
    }
}

/// `1,559 ms of the 2,834 ms it waited (runq[8680], runq[8681], 2
/// more)`; no parentheses when none is named (the tasks exited before
/// the recorder named them).
fn held_for(h: &HeldFor) -> String {
    let of = format!("{} of the {} it waited", ms(h.held_ns), ms(h.waited_ns));
    if h.holders.is_empty() {
        return of;
    }
    let mut parts: Vec<String> = h
        .holders
        .iter()
        .map(|t| format!("{}[{}]", t.comm, t.pid))
        .collect();
    if h.more_holders > 0 {
        parts.push(format!("{} more", h.more_holders));
    }
    format!("{of} ({})", parts.join(", "))
}

#[cfg(test)]
#[path = "mechanism_tests.rs"]
mod tests;
