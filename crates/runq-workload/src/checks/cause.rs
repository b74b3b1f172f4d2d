//! Why a failed check failed, as far as the run's own figures tell: what
//! took the CPU time a group was owed (the run's other groups, the
//! group's own workers, tasks outside the run), whether the load outside
//! the run can account for the figure at all, and what to run next.
//!
//! The load rule is arithmetic, not a threshold alone. A share or a rate
//! is cut by outside load at most in the proportion of the CPUs it took:
//! with `L` of `N` usable CPUs busy outside the run, the run had at least
//! `N - L` of them, so without that load a share could have been at most
//! `N / (N - L)` times what was measured. A FAIL whose figure stays short
//! of its bound even so cannot be the load's: 0.4 CPUs of outside load on
//! 2 CPUs lifts a share of 0.011 to at most 0.014, not to 0.5. A delay (a
//! gap, a wake-up's latency, a run-queue wait) can come from any task
//! that held the CPU, so a busy host can account for it. A check about
//! something else (a worker that died, a setting not applied, the
//! scheduler's survival, NUMA placement) is never the load's.

use serde::Serialize;

use runq_kernel::task_record::TaskRecord;

use super::cpu_wait::MIN_WAIT_SHARE;
use super::{CheckResult, Op};
use crate::check_id::{Direction, LoadEffect};
use crate::runner::host_load::HostLoad;

/// What the run's figures say about one failed check.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Cause {
    /// What took the time or caused the delay, with its figures.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mechanism: Option<String>,
    /// Whether load outside the run can account for the figure (absent
    /// for a check that load cannot touch, or when the host was quiet).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outside_load: Option<OutsideLoad>,
    /// The run to make next to tell the causes apart.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_step: Option<String>,
    /// What the per-task recorder saw of the worker the check points at:
    /// its run time and waits, who held its CPU while it waited (see
    /// [`super::recorded`]); runq-results writes it as a sentence.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recorder: Option<RecorderAccount>,
    /// The task that held the CPU of the worker the check points at for
    /// longest while it waited, when the recorder saw one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held_by: Option<HeldBy>,
    /// Why there was no per-task recorder (`--evidence off`, not root):
    /// the cause is then what /proc and schedstat tell.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub no_recorder: Option<String>,
}

/// The per-task recorder's account of the worker a failed check points
/// at: its own figures, whose tasks held its CPU while it waited, and the
/// tasks that held the CPUs it waited on, as facts.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RecorderAccount {
    /// The worker's record (its holders are in `holders`, named).
    pub record: TaskRecord,
    /// The worker's group.
    pub group: String,
    /// How long each part held the worker's CPU while it waited, ns.
    pub held: HeldParts,
    /// The tasks that held the CPUs it waited on while workers waited
    /// there, most first (at most six).
    pub holders: Vec<NamedHolder>,
}

/// Whose tasks held a worker's CPU while it waited, ns each.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct HeldParts {
    /// Workers of its own group or cgroup.
    pub own_ns: u64,
    /// Workers of the run's other groups.
    pub run_ns: u64,
    /// runq's own threads.
    pub runq_ns: u64,
    /// Tasks outside the run.
    pub outside_ns: u64,
}

/// A task that held a CPU a worker waited on, named.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NamedHolder {
    /// Its comm.
    pub comm: String,
    /// Its pid.
    pub pid: u32,
    /// Whose it is: a group of the run, `runq` or `outside`.
    pub whose: String,
    /// How long it held the CPU while workers waited there, ns.
    pub held_ns: u64,
    /// Under sampled fidelity, the samples that saw it there.
    pub samples: u64,
}

/// Who kept a worker off its CPU, as the recorder saw it: the facts a
/// FAIL's first line states in a clause.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HeldBy {
    /// The worker the check points at (its tid).
    pub worker: u32,
    /// The holder's comm.
    pub comm: String,
    /// The holder's pid.
    pub pid: u32,
    /// Whose the holder is: one of the run's groups, `runq` (runq's own
    /// threads) or `outside` (a task outside the run).
    pub whose: String,
    /// How long it held the worker's CPU while the worker waited, ns.
    pub held_ns: u64,
    /// How long the worker waited runnable in all, ns.
    pub wait_ns: u64,
}

/// The judgement on the load outside the run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OutsideLoad {
    /// True when that load can account for the failed figure.
    pub explains: bool,
    /// Why, with the figures.
    pub reason: String,
}

/// How much the group checked waited for a CPU, where it matters.
#[derive(Debug, Clone, PartialEq)]
pub struct CpuWait {
    /// The share of its workers' time spent runnable without a CPU.
    pub share: f64,
    /// Over what: "the run", "its longest stall (2.0 s)".
    pub over: String,
}

/// The effect of outside load on check `c`, whose operator says whether
/// its bound is a floor or a ceiling.
fn effect_of(c: &CheckResult) -> LoadEffect {
    let direction = match c.op {
        Op::AtLeast => Direction::Floor,
        Op::AtMost => Direction::Ceiling,
    };
    c.check.load_effect(direction)
}

/// True when load outside the run can act on check `c` at all (a share,
/// a rate, a wait or a delay; not a death, a setting, the scheduler's
/// survival).
pub(crate) fn load_can_act(c: &CheckResult) -> bool {
    effect_of(c) != LoadEffect::None
}

/// True when load outside the run cuts check `c`'s figure in proportion
/// to the CPU time it took (a share, a rate).
pub(crate) fn is_proportional(c: &CheckResult) -> bool {
    effect_of(c) == LoadEffect::Proportional
}

/// What the run tells about the group a failed check judged.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GroupFacts {
    /// The CPUs its workers could use.
    pub usable_cpus: usize,
    /// A worker the check counts died or was killed (then the load is not
    /// the cause).
    pub died: bool,
    /// How much it waited for a CPU, where the check looks.
    pub wait: Option<CpuWait>,
    /// The CPUs' worth of runnable work (on a CPU or waiting for one) the
    /// run's own workers confined to those CPUs brought: past
    /// `usable_cpus`, they queue behind each other without any outside
    /// load.
    pub own_demand: f64,
}

/// The judgement on outside load for the failed check `c` of a group
/// described by `g`. `None` when load cannot act on the check, or the
/// host was quiet.
pub fn judge_outside_load(c: &CheckResult, load: &HostLoad, g: &GroupFacts) -> Option<OutsideLoad> {
    if c.pass || g.died {
        return None;
    }
    let n = g.usable_cpus.clamp(1, load.cpus.max(1)) as f64;
    // Outside load spread over the host, at most all of the usable CPUs.
    let l = (load.outside_cpus * n / load.cpus.max(1) as f64).min(n);
    let used = format!(
        "tasks outside the run used {:.2} of the host's {} CPUs",
        load.outside_cpus, load.cpus
    );
    let effect = effect_of(c);
    let waits = matches!(effect, LoadEffect::Delay | LoadEffect::CpuWait);
    match effect {
        LoadEffect::None => None,
        // A quiet host is no clause: load cannot be the cause.
        _ if !load.busy() => None,
        _ if waits && g.own_demand > n + 0.5 => Some(OutsideLoad {
            explains: false,
            reason: format!(
                "{used}, which cannot explain it: the run's own workers brought {:.1} CPUs of \
                 runnable work to its {n:.0} CPUs and waited behind each other without it",
                g.own_demand
            ),
        }),
        LoadEffect::Delay => match g.wait.as_ref().filter(|w| w.share < MIN_WAIT_SHARE) {
            Some(w) => Some(OutsideLoad {
                explains: false,
                reason: format!(
                    "{used}, which cannot explain it: over {} its workers waited for a CPU only \
                     {:.1}% of their time, so the delay was not a wait for a CPU",
                    w.over,
                    100.0 * w.share
                ),
            }),
            None => Some(OutsideLoad {
                explains: true,
                reason: format!(
                    "{used}, and any of them may have held a CPU its workers waited for"
                ),
            }),
        },
        LoadEffect::CpuWait => Some(OutsideLoad {
            explains: true,
            reason: format!("{used}, and any of them may have held the CPU this wait was for"),
        }),
        LoadEffect::Proportional => Some(proportional(c, n, l, &used)),
    }
}

/// A share or a rate cut by outside load at most by `(n - l) / n`.
fn proportional(c: &CheckResult, n: f64, l: f64, used: &str) -> OutsideLoad {
    let spare = n - l;
    let best = if spare <= 1e-9 {
        f64::INFINITY
    } else {
        c.measured * n / spare
    };
    let explains = c.op == Op::AtLeast && best >= c.bound;
    let reason = if best.is_infinite() {
        format!("{used}: all of them, so it can explain any share")
    } else if explains {
        format!(
            "{used}: without them {} could have reached {}, within its bound {}",
            c.check,
            fmt3(best),
            fmt3(c.bound)
        )
    } else {
        format!(
            "{used}, which cannot explain it: without them {} would still be at most {}, short of {}",
            c.check,
            fmt3(best),
            fmt3(c.bound)
        )
    };
    OutsideLoad { explains, reason }
}

fn fmt3(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.3}")
    }
}

/// True when every failed check is one that outside load explains: the
/// run's FAIL is then INDETERMINATE (a quieter host must decide it).
pub fn load_explains_all(checks: &[CheckResult]) -> bool {
    let mut failed = checks.iter().filter(|c| !c.pass).peekable();
    failed.peek().is_some()
        && failed.all(|c| {
            c.cause
                .as_ref()
                .and_then(|k| k.outside_load.as_ref())
                .is_some_and(|o| o.explains)
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CheckId;

    fn failed(check: CheckId, measured: f64, op: Op, bound: f64) -> CheckResult {
        CheckResult {
            check,
            group: "g".into(),
            measured,
            op,
            bound,
            pass: false,
            detail: None,
            cause: None,
            not_judged: None,
        }
    }

    fn facts(usable_cpus: usize, died: bool, wait: Option<CpuWait>) -> GroupFacts {
        GroupFacts {
            usable_cpus,
            died,
            wait,
            own_demand: 0.5,
        }
    }

    #[test]
    fn a_run_that_oversubscribes_its_cpus_waits_without_any_load() {
        let c = failed(CheckId::MaxRunnableWaitMs, 40.0, Op::AtMost, 1.0);
        let crowded = GroupFacts {
            own_demand: 3.0,
            ..facts(1, false, None)
        };
        let j = judge_outside_load(&c, &load(2, 0.8), &crowded).unwrap();
        assert!(
            !j.explains && j.reason.contains("3.0 CPUs of runnable work"),
            "{}",
            j.reason
        );
    }

    fn load(cpus: usize, outside: f64) -> HostLoad {
        HostLoad {
            cpus,
            busy_cpus: outside + 1.0,
            run_cpus: 1.0,
            outside_cpus: outside,
            runq_cpus: 0.0,
        }
    }

    #[test]
    fn every_rate_and_spread_of_the_table_is_one_load_can_act_on() {
        for (check, op) in [
            (CheckId::MinIterationRate, Op::AtLeast),
            (CheckId::MinWorkRate, Op::AtLeast),
            (CheckId::MaxThroughputCv, Op::AtMost),
        ] {
            assert!(load_can_act(&failed(check, 1.0, op, 2.0)), "{check}");
        }
        assert!(is_proportional(&failed(
            CheckId::MinIterationRate,
            88.0,
            Op::AtLeast,
            100.0
        )));
        assert!(!load_can_act(&failed(
            CheckId::CpusetIsolation,
            4.0,
            Op::AtMost,
            0.0
        )));
    }

    #[test]
    fn a_tiny_share_is_not_explained_by_a_little_load() {
        // The default scenario's FAIL: 0.011 of its share at 0.39 of 2 CPUs.
        let c = failed(CheckId::MinFairShare, 0.011, Op::AtLeast, 0.5);
        let j = judge_outside_load(&c, &load(2, 0.39), &facts(2, false, None)).unwrap();
        assert!(!j.explains, "{}", j.reason);
        assert!(j.reason.contains("cannot explain it"), "{}", j.reason);
        assert!(j.reason.contains("at most 0.014"), "{}", j.reason);
    }

    #[test]
    fn a_share_near_its_bound_is_explained_by_enough_load() {
        let c = failed(CheckId::MinFairShare, 0.4, Op::AtLeast, 0.5);
        let j = judge_outside_load(&c, &load(2, 0.5), &facts(2, false, None)).unwrap();
        assert!(j.explains, "{}", j.reason);
        // A pinned group sees its part of the load: 1 of 2 CPUs, 0.25.
        let pinned = judge_outside_load(&c, &load(2, 0.5), &facts(1, false, None)).unwrap();
        assert!(pinned.explains, "{}", pinned.reason);
        let short = failed(CheckId::MinFairShare, 0.3, Op::AtLeast, 0.5);
        assert!(
            !judge_outside_load(&short, &load(2, 0.5), &facts(1, false, None))
                .unwrap()
                .explains
        );
    }

    #[test]
    fn load_is_named_only_on_a_busy_host() {
        let c = failed(CheckId::MaxGapMs, 3000.0, Op::AtMost, 2000.0);
        assert_eq!(
            judge_outside_load(&c, &load(2, 0.1), &facts(2, false, None)),
            None
        );
        let share = failed(CheckId::MinFairShare, 0.011, Op::AtLeast, 0.5);
        assert_eq!(
            judge_outside_load(&share, &load(2, 0.1), &facts(2, false, None)),
            None
        );
        assert!(
            judge_outside_load(&c, &load(2, 0.6), &facts(2, false, None))
                .unwrap()
                .explains
        );
    }

    #[test]
    fn a_stall_without_a_wait_for_a_cpu_is_not_the_loads() {
        let stall = CheckId::Series {
            pattern: crate::SeriesPattern::Stall,
            metric: "work_units",
        };
        let c = failed(stall, 2000.0, Op::AtMost, 1000.0);
        let asleep = CpuWait {
            share: 0.002,
            over: "its longest stall (2.0 s)".into(),
        };
        let j =
            judge_outside_load(&c, &load(2, 1.2), &facts(2, false, Some(asleep.clone()))).unwrap();
        assert!(
            !j.explains && j.reason.contains("waited for a CPU only 0.2%"),
            "{}",
            j.reason
        );
        let starved = CpuWait {
            share: 0.6,
            ..asleep
        };
        assert!(
            judge_outside_load(&c, &load(2, 1.2), &facts(2, false, Some(starved.clone())))
                .unwrap()
                .explains
        );
        // A gap is a wait for a CPU by its definition.
        let gap = failed(CheckId::MaxGapMs, 3000.0, Op::AtMost, 2000.0);
        let quiet_wait = CpuWait {
            share: 0.001,
            over: "the run".into(),
        };
        assert!(
            judge_outside_load(
                &gap,
                &load(2, 1.2),
                &facts(2, false, Some(quiet_wait.clone()))
            )
            .unwrap()
            .explains
        );
    }

    #[test]
    fn a_death_or_a_setting_is_never_the_loads() {
        let stuck = failed(CheckId::NotStuck, 1.0, Op::AtMost, 0.0);
        assert_eq!(
            judge_outside_load(&stuck, &load(2, 1.5), &facts(2, true, None)),
            None
        );
        for check in [
            CheckId::SchedulerAlive,
            CheckId::SetupApplied,
            CheckId::MinNumaLocality,
        ] {
            let c = failed(check, 0.0, Op::AtLeast, 1.0);
            assert_eq!(
                judge_outside_load(&c, &load(2, 1.9), &facts(2, false, None)),
                None,
                "{check}"
            );
        }
    }

    #[test]
    fn indeterminate_needs_every_failure_explained() {
        let explained = |check: CheckId| CheckResult {
            cause: Some(Cause {
                outside_load: Some(OutsideLoad {
                    explains: true,
                    reason: String::new(),
                }),
                ..Cause::default()
            }),
            ..failed(check, 1.0, Op::AtMost, 0.0)
        };
        assert!(load_explains_all(&[explained(CheckId::MaxGapMs)]));
        assert!(!load_explains_all(&[
            explained(CheckId::MaxGapMs),
            failed(CheckId::SetupApplied, 1.0, Op::AtMost, 0.0)
        ]));
        assert!(!load_explains_all(&[]));
    }
}
