//! Each mechanism's sentence, word for word as the report writes it.

use super::*;
use runq_workload::{NamedTask, WorkerExitInfo};

/// `n` named holders `comm[pid]` from pid 8680, and `more` unnamed.
fn held(held_ns: u64, waited_ns: u64, n: u32, more: usize) -> HeldFor {
    HeldFor {
        held_ns,
        waited_ns,
        holders: (0..n)
            .map(|i| NamedTask {
                comm: "runq".into(),
                pid: 8680 + i,
            })
            .collect(),
        more_holders: more,
    }
}

#[test]
fn the_recorders_mechanisms_name_the_part_its_time_and_its_tasks() {
    let no_wait = Mechanism::NoCpuWait {
        worker: 8679,
        waited_ns: 2_833_766_909,
        wall_ns: 10_000_000_000,
        ran_ns: 214_000_000,
        asleep_ns: 6_952_000_000,
    };
    assert_eq!(
        mechanism_sentence(&no_wait),
        "not a wait for a CPU: worker 8679 waited runnable 2,834 ms of its 10,000 ms (28.3%), \
         ran 214 ms and was asleep 6,952 ms"
    );
    let unseen = Mechanism::HoldersUnseen {
        worker: 8679,
        waited_ns: 2_940_000_000,
        wall_ns: 3_010_000_000,
    };
    assert_eq!(
        mechanism_sentence(&unseen),
        "worker 8679 waited runnable 2,940 ms of its 3,010 ms (97.7%), but the sampled \
         recorder found no other task on its CPUs: who held them is not known"
    );
    let inside = Mechanism::InsideContainer {
        starved: true,
        container: Container::Cgroup { name: "all".into() },
        worker: 8679,
        ran_ns: 214_000_000,
        wall_ns: 3_000_000_000,
        held: held(1_660_000_000, 2_834_000_000, 3, 2),
    };
    assert_eq!(
        mechanism_sentence(&inside),
        "starvation inside cgroup all: worker 8679 ran 214 ms of its 3,000 ms; the other \
         workers of its cgroup all held its CPU for 1,660 ms of the 2,834 ms it waited \
         (runq[8680], runq[8681], runq[8682], 2 more)"
    );
    let contention = Mechanism::InsideContainer {
        starved: false,
        container: Container::Group { name: "low".into() },
        worker: 7,
        ran_ns: 1_600_000_000,
        wall_ns: 3_000_000_000,
        held: held(10_000_000, 20_000_000, 0, 0),
    };
    assert_eq!(
        mechanism_sentence(&contention),
        "contention inside group low: worker 7 ran 1,600 ms of its 3,000 ms; the other workers \
         of its group low held its CPU for 10 ms of the 20 ms it waited"
    );
    let others = Mechanism::OtherGroups {
        containers: vec![
            Container::Cgroup {
                name: "pingpong".into(),
            },
            Container::Group { name: "b".into() },
        ],
        worker: 8679,
        held: held(1_559_000_000, 2_834_000_000, 1, 0),
    };
    assert_eq!(
        mechanism_sentence(&others),
        "the workers of the run's cgroup pingpong, group b kept worker 8679 off its CPU: they \
         held it for 1,559 ms of the 2,834 ms it waited (runq[8680])"
    );
}

#[test]
fn runq_outside_load_and_an_end_are_worded_as_such() {
    let runq = Mechanism::RunqItself {
        worker: 6432,
        held: held(69_000_000, 100_000_000, 1, 0),
    };
    assert_eq!(
        mechanism_sentence(&runq),
        "runq itself kept worker 6432 off its CPU: runq's own threads (its collector, its host \
         monitor) held it for 69 ms of the 100 ms it waited (runq[8680]), not load outside the \
         run"
    );
    let outside = Mechanism::Outside {
        worker: 6432,
        held: held(24_424_000_000, 24_500_000_000, 0, 0),
    };
    assert_eq!(
        mechanism_sentence(&outside),
        "a task outside the run kept worker 6432 off its CPU: tasks outside the run held it for \
         24,424 ms of the 24,500 ms it waited"
    );
    let ended = Mechanism::Ended {
        worker: 6432,
        how: WorkerExitInfo::Signaled(9),
        ran_ns: 40_000_000,
        waited_ns: 2_000_000_000,
    };
    assert_eq!(
        mechanism_sentence(&ended),
        "worker 6432 ended (killed by SIGKILL) after it ran 40 ms and waited 2,000 ms for a CPU: \
         its end, not a wait for a CPU, failed the check"
    );
    let error = Mechanism::RunError {
        error: "fork failed".into(),
    };
    assert_eq!(
        mechanism_sentence(&error),
        "the run ended early: fork failed"
    );
}

#[test]
fn the_fair_share_mechanisms_say_where_the_time_went() {
    let outside = Mechanism::SharesWentOutside {
        group: "spinners".into(),
        short_cpus: 0.4,
    };
    assert_eq!(
        mechanism_sentence(&outside),
        "no other group of the run took the 0.40 CPUs spinners was owed: they went outside the \
         run or stayed idle"
    );
    let takers = vec![ShareTaker {
        group: "pingpong".into(),
        got_pct: 99.4,
        got_cpus: 1.9,
        owed_pct: 50.0,
    }];
    let by_cgroup = Mechanism::RunTookShares {
        takers: takers.clone(),
        cgroup_basis: Some("equal cpu.shares".into()),
    };
    assert_eq!(
        mechanism_sentence(&by_cgroup),
        "the run's own workers took its time: pingpong got 99.4% (1.90 CPUs), owed 50%; the \
         scheduler split the CPUs between the run's cgroups (equal cpu.shares) against their \
         weights"
    );
    let by_task = Mechanism::RunTookShares {
        takers,
        cgroup_basis: None,
    };
    assert!(mechanism_sentence(&by_task)
        .ends_with("the scheduler split the CPUs between the run's tasks against their weights"));
    let worker = |group_ratio, siblings| Mechanism::WorkerStarvedInGroup {
        group: "spinners".into(),
        worker: 11,
        got_pct: 1.0,
        group_ratio,
        siblings,
        siblings_pct: 99.0,
        siblings_cpus: 0.99,
    };
    assert_eq!(
        mechanism_sentence(&worker(1.0, 1)),
        "starvation inside spinners: worker 11 got 1.0% of the group's CPU time while the group \
         as a whole got 100% of what it was owed; its other worker took 99.0% (0.99 CPUs)"
    );
    assert_eq!(
        mechanism_sentence(&worker(0.5, 3)),
        "starvation inside spinners: worker 11 got 1.0% of the group's CPU time and the group \
         as a whole got only 50% of what it was owed; its 3 other workers took 99.0% (0.99 CPUs)"
    );
}

#[test]
fn the_figures_clause_follows_the_recorders_after_a_semicolon() {
    let idle = Mechanism::IdleBesideWaiting {
        idle_cpus: 1.5,
        host_cpus: 4,
        waited_share: 0.8,
    };
    assert_eq!(
        mechanism_sentence(&idle),
        "meanwhile 1.50 of the host's 4 CPUs stayed idle while its workers waited runnable 80% \
         of their time: the scheduler did not move them to an idle CPU"
    );
    let error = Mechanism::RunError { error: "e".into() };
    assert_eq!(
        mechanisms_sentence(&[error, idle]).unwrap(),
        "the run ended early: e; meanwhile 1.50 of the host's 4 CPUs stayed idle while its \
         workers waited runnable 80% of their time: the scheduler did not move them to an idle \
         CPU"
    );
    assert_eq!(mechanisms_sentence(&[]), None);
}
