//! Whether load outside the run can account for a failed check's figure,
//! as facts: what the host's CPU figures say ([`judge_outside_load`]) and,
//! when the per-task recorder ran, what it saw of the tasks that held the
//! worker's CPU (`recorded`'s revision). runq-results writes the sentence.
//!
//! The rule is arithmetic, not a threshold alone. A share or a rate is cut
//! by outside load at most in the proportion of the CPUs it took: with
//! `L` of `N` usable CPUs busy outside the run, the run had at least
//! `N - L` of them, so without that load a share could have been at most
//! `N / (N - L)` times what was measured. A FAIL whose figure stays short
//! of its bound even so cannot be the load's: 0.4 CPUs of outside load on
//! 2 CPUs lifts a share of 0.011 to at most 0.014, not to 0.5. A delay (a
//! gap, a wake-up's latency, a run-queue wait) can come from any task
//! that held the CPU, so a busy host can account for it. A check about
//! something else (a worker that died, a setting not applied, the
//! scheduler's survival, NUMA placement) is never the load's.

use serde::Serialize;

use super::cpu_wait::MIN_WAIT_SHARE;
use super::{CheckResult, Op};
use crate::check_id::{Direction, LoadEffect};
use crate::runner::host_load::HostLoad;

/// The judgement on the load outside the run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OutsideLoad {
    /// True when that load can account for the failed figure.
    pub explains: bool,
    /// What the host's CPU figures say; absent when only the recorder
    /// judged (the host was quiet by its figures).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub figures: Option<LoadFigures>,
    /// What the per-task recorder saw, when it revised the judgement.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recorded: Option<LoadSeen>,
}

/// The host's CPU figures and what they alone say.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LoadFigures {
    /// The CPUs tasks outside the run used, on average.
    pub outside_cpus: f64,
    /// The host's CPUs.
    pub host_cpus: usize,
    /// Whether the figures alone explain the failed figure.
    pub explains: bool,
    /// Why.
    pub says: FiguresSay,
}

/// Why the host's figures explain a failed figure or not.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum FiguresSay {
    /// Cannot: the run's own workers brought more runnable work than the
    /// CPUs they could use, and waited behind each other without it.
    OwnDemand {
        /// Their runnable work, in CPUs.
        demand_cpus: f64,
        /// The CPUs they could use.
        usable_cpus: f64,
    },
    /// Cannot: over `span` its workers waited for a CPU only `share` of
    /// their time, so the delay was not a wait for a CPU.
    LittleCpuWait {
        /// The share of their time spent runnable without a CPU.
        share: f64,
        /// Over what.
        span: WaitSpan,
    },
    /// Can: any of those tasks may have held a CPU the workers waited for.
    MayHoldACpu,
    /// Can: any of them may have held the CPU this wait was for.
    MayHoldTheCpu,
    /// Can: they took all the usable CPUs, so any share.
    AllCpus,
    /// Without them the figure could have reached `best` (it explains
    /// when that is within `bound`).
    WithoutThem {
        /// The best the figure could have been.
        best: f64,
        /// The check's bound.
        bound: f64,
    },
}

/// The span over which a group's wait for a CPU was measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "over", rename_all = "snake_case")]
pub enum WaitSpan {
    /// The whole run.
    Run,
    /// Its longest stall, this long.
    LongestStall {
        /// Its length, ns.
        ns: u64,
    },
}

/// What the per-task recorder saw of the tasks outside the run while the
/// worker a check points at waited.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LoadSeen {
    /// The worker (its tid).
    pub worker: u32,
    /// How long tasks outside the run held its CPU while it waited, ns.
    pub outside_ns: u64,
    /// How long it waited runnable, ns.
    pub waited_ns: u64,
    /// The first of those tasks, as `comm[pid]`, most first.
    pub outside_named: Vec<String>,
    /// How many more there were.
    pub outside_more: usize,
    /// How long the run's own workers held it, ns.
    pub run_ns: u64,
    /// How long runq's own threads held it, ns.
    pub runq_ns: u64,
    /// For a share or a rate: what the worker could have reached with
    /// its part of the outside tasks' time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub best: Option<f64>,
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

/// How much the group checked waited for a CPU, where it matters.
#[derive(Debug, Clone, PartialEq)]
pub struct CpuWait {
    /// The share of its workers' time spent runnable without a CPU.
    pub share: f64,
    /// Over what: the run, or its longest stall.
    pub over: WaitSpan,
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
    let effect = effect_of(c);
    let waits = matches!(effect, LoadEffect::Delay | LoadEffect::CpuWait);
    let says = match effect {
        LoadEffect::None => return None,
        // A quiet host is no clause: load cannot be the cause.
        _ if !load.busy() => return None,
        _ if waits && g.own_demand > n + 0.5 => FiguresSay::OwnDemand {
            demand_cpus: g.own_demand,
            usable_cpus: n,
        },
        LoadEffect::Delay => match g.wait.as_ref().filter(|w| w.share < MIN_WAIT_SHARE) {
            Some(w) => FiguresSay::LittleCpuWait {
                share: w.share,
                span: w.over,
            },
            None => FiguresSay::MayHoldACpu,
        },
        LoadEffect::CpuWait => FiguresSay::MayHoldTheCpu,
        LoadEffect::Proportional => proportional(c, n, l),
    };
    let explains = match &says {
        FiguresSay::OwnDemand { .. } | FiguresSay::LittleCpuWait { .. } => false,
        FiguresSay::MayHoldACpu | FiguresSay::MayHoldTheCpu | FiguresSay::AllCpus => true,
        FiguresSay::WithoutThem { best, bound } => c.op == Op::AtLeast && best >= bound,
    };
    let figures = LoadFigures {
        outside_cpus: load.outside_cpus,
        host_cpus: load.cpus,
        explains,
        says,
    };
    Some(OutsideLoad {
        explains,
        figures: Some(figures),
        recorded: None,
    })
}

/// A share or a rate cut by outside load at most by `(n - l) / n`.
fn proportional(c: &CheckResult, n: f64, l: f64) -> FiguresSay {
    let spare = n - l;
    if spare <= 1e-9 {
        return FiguresSay::AllCpus;
    }
    FiguresSay::WithoutThem {
        best: c.measured * n / spare,
        bound: c.bound,
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
    use crate::checks::cause::Cause;
    use crate::CheckId;

    fn failed(check: CheckId, measured: f64, op: Op, bound: f64) -> CheckResult {
        CheckResult {
            check,
            group: "g".into(),
            measured,
            op,
            bound,
            pass: false,
            detail: Vec::new(),
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
    fn a_run_that_oversubscribes_its_cpus_waits_without_any_load() {
        let c = failed(CheckId::MaxRunnableWaitMs, 40.0, Op::AtMost, 1.0);
        let crowded = GroupFacts {
            own_demand: 3.0,
            ..facts(1, false, None)
        };
        let j = judge_outside_load(&c, &load(2, 0.8), &crowded).unwrap();
        let says = j.figures.as_ref().map(|f| f.says.clone());
        assert!(
            !j.explains
                && matches!(says, Some(FiguresSay::OwnDemand { demand_cpus, .. }) if demand_cpus == 3.0),
            "{j:?}"
        );
    }

    #[test]
    fn a_tiny_share_is_not_explained_by_a_little_load() {
        // The default scenario's FAIL: 0.011 of its share at 0.39 of 2 CPUs.
        let c = failed(CheckId::MinFairShare, 0.011, Op::AtLeast, 0.5);
        let j = judge_outside_load(&c, &load(2, 0.39), &facts(2, false, None)).unwrap();
        assert!(!j.explains, "{j:?}");
        let says = j.figures.unwrap().says;
        let FiguresSay::WithoutThem { best, bound } = says else {
            panic!("{says:?}")
        };
        assert!(
            (best - 0.0138).abs() < 1e-3 && bound == 0.5,
            "{best} {bound}"
        );
    }

    #[test]
    fn a_share_near_its_bound_is_explained_by_enough_load() {
        let c = failed(CheckId::MinFairShare, 0.4, Op::AtLeast, 0.5);
        let j = judge_outside_load(&c, &load(2, 0.5), &facts(2, false, None)).unwrap();
        assert!(j.explains, "{j:?}");
        // A pinned group sees its part of the load: 1 of 2 CPUs, 0.25.
        let pinned = judge_outside_load(&c, &load(2, 0.5), &facts(1, false, None)).unwrap();
        assert!(pinned.explains, "{pinned:?}");
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
            over: WaitSpan::LongestStall { ns: 2_000_000_000 },
        };
        let j =
            judge_outside_load(&c, &load(2, 1.2), &facts(2, false, Some(asleep.clone()))).unwrap();
        let says = j.figures.as_ref().map(|f| f.says.clone());
        assert!(
            !j.explains
                && matches!(says, Some(FiguresSay::LittleCpuWait { share, .. }) if share == 0.002),
            "{j:?}"
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
            over: WaitSpan::Run,
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
                    figures: None,
                    recorded: None,
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
