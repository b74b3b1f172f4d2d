//! The judgement on load outside the run, as the sentence under a failed
//! check's cause: what the host's CPU figures say and, when the per-task
//! recorder revised it, what it saw.

use runq_common::units::fmt_ms_grouped as ms;
use runq_workload::{CheckId, FiguresSay, LoadFigures, LoadSeen, OutsideLoad, WaitSpan};

/// `tasks outside the run used 0.52 of the host's 2 CPUs, and any of
/// them may have held a CPU its workers waited for; the recorder saw ...`
/// for check `check`.
pub fn outside_load_sentence(l: &OutsideLoad, check: &CheckId) -> String {
    let seen = l.recorded.as_ref().map(|s| seen_clause(s, check));
    match (&l.figures, seen) {
        (Some(f), None) => figures_clause(f, check),
        (Some(f), Some((seen, own))) if f.explains == l.explains => {
            format!("{}; {seen}, {own}", figures_clause(f, check))
        }
        (Some(f), Some((seen, _))) if l.explains => {
            format!("{}, and {seen}, so that load explains it", used(f))
        }
        (Some(f), Some((seen, own))) => format!(
            "{}, but {seen}, {own}, so that load does not explain it",
            used(f)
        ),
        (None, Some((seen, _))) => seen,
        (None, None) => String::new(),
    }
}

/// `tasks outside the run used 0.52 of the host's 2 CPUs`.
fn used(f: &LoadFigures) -> String {
    format!(
        "tasks outside the run used {:.2} of the host's {} CPUs",
        f.outside_cpus, f.host_cpus
    )
}

/// What the figures alone say.
fn figures_clause(f: &LoadFigures, check: &CheckId) -> String {
    let used = used(f);
    match &f.says {
        FiguresSay::OwnDemand {
            demand_cpus,
            usable_cpus,
        } => format!(
            "{used}, which cannot explain it: the run's own workers brought {demand_cpus:.1} \
             CPUs of runnable work to its {usable_cpus:.0} CPUs and waited behind each other \
             without it"
        ),
        FiguresSay::LittleCpuWait { share, span } => format!(
            "{used}, which cannot explain it: over {} its workers waited for a CPU only \
             {:.1}% of their time, so the delay was not a wait for a CPU",
            span_words(*span),
            100.0 * share
        ),
        FiguresSay::MayHoldACpu => {
            format!("{used}, and any of them may have held a CPU its workers waited for")
        }
        FiguresSay::MayHoldTheCpu => {
            format!("{used}, and any of them may have held the CPU this wait was for")
        }
        FiguresSay::AllCpus => format!("{used}: all of them, so it can explain any share"),
        FiguresSay::WithoutThem { best, bound } if f.explains => format!(
            "{used}: without them {check} could have reached {}, within its bound {}",
            fmt3(*best),
            fmt3(*bound)
        ),
        FiguresSay::WithoutThem { best, bound } => format!(
            "{used}, which cannot explain it: without them {check} would still be at most {}, \
             short of {}",
            fmt3(*best),
            fmt3(*bound)
        ),
    }
}

/// `the run`, `its longest stall (2.0 s)`.
fn span_words(span: WaitSpan) -> String {
    match span {
        WaitSpan::Run => "the run".into(),
        WaitSpan::LongestStall { ns } => format!("its longest stall ({:.1} s)", ns as f64 / 1e9),
    }
}

/// What the recorder saw (`the recorder saw tasks outside the run hold
/// its CPU for ...`) and the run's own part (`while the run's own workers
/// held it ...`).
fn seen_clause(s: &LoadSeen, check: &CheckId) -> (String, String) {
    let mut seen = format!(
        "the recorder saw tasks outside the run hold its CPU for {} of the {} worker {} waited",
        ms(s.outside_ns),
        ms(s.waited_ns),
        s.worker
    );
    if !s.outside_named.is_empty() {
        let mut names = s.outside_named.clone();
        if s.outside_more > 0 {
            names.push(format!("{} more", s.outside_more));
        }
        seen.push_str(&format!(" ({})", names.join(", ")));
    }
    if let Some(best) = s.best {
        seen.push_str(&format!(
            ": with its part of that time {check} could have reached about {best:.3}"
        ));
    }
    let mut own = format!("while the run's own workers held it {}", ms(s.run_ns));
    if s.runq_ns > 0 {
        own.push_str(&format!(" and runq's own threads {}", ms(s.runq_ns)));
    }
    (seen, own)
}

/// Three decimals below 100, none above.
fn fmt3(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.3}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures(explains: bool, says: FiguresSay) -> LoadFigures {
        LoadFigures {
            outside_cpus: 0.39,
            host_cpus: 2,
            explains,
            says,
        }
    }

    fn seen(best: Option<f64>) -> LoadSeen {
        LoadSeen {
            worker: 3497,
            outside_ns: 1_390_000_000,
            waited_ns: 2_746_000_000,
            outside_named: vec!["stress[88]".into(), "yes[90]".into(), "cc1[91]".into()],
            outside_more: 2,
            run_ns: 200_000_000,
            runq_ns: 10_000_000,
            best,
        }
    }

    #[test]
    fn the_figures_alone_say_why_with_their_numbers() {
        let share = FiguresSay::WithoutThem {
            best: 0.0138,
            bound: 0.5,
        };
        let l = OutsideLoad {
            explains: false,
            figures: Some(figures(false, share)),
            recorded: None,
        };
        assert_eq!(
            outside_load_sentence(&l, &CheckId::MinFairShare),
            "tasks outside the run used 0.39 of the host's 2 CPUs, which cannot explain it: \
             without them min_fair_share would still be at most 0.014, short of 0.500"
        );
        let stall = FiguresSay::LittleCpuWait {
            share: 0.002,
            span: WaitSpan::LongestStall { ns: 2_000_000_000 },
        };
        let text = figures_clause(&figures(false, stall), &CheckId::MaxGapMs);
        assert!(
            text.ends_with("over its longest stall (2.0 s) its workers waited for a CPU only 0.2% of their time, so the delay was not a wait for a CPU"),
            "{text}"
        );
    }

    #[test]
    fn the_recorder_revision_keeps_or_turns_the_figures_verdict() {
        let f = figures(true, FiguresSay::MayHoldACpu);
        let agree = OutsideLoad {
            explains: true,
            figures: Some(f.clone()),
            recorded: Some(seen(None)),
        };
        assert_eq!(
            outside_load_sentence(&agree, &CheckId::MaxGapMs),
            "tasks outside the run used 0.39 of the host's 2 CPUs, and any of them may have held \
             a CPU its workers waited for; the recorder saw tasks outside the run hold its CPU \
             for 1,390 ms of the 2,746 ms worker 3497 waited (stress[88], yes[90], cc1[91], 2 \
             more), while the run's own workers held it 200 ms and runq's own threads 10 ms"
        );
        let turned = OutsideLoad {
            explains: false,
            ..agree.clone()
        };
        let text = outside_load_sentence(&turned, &CheckId::MaxGapMs);
        assert!(
            text.starts_with(
                "tasks outside the run used 0.39 of the host's 2 CPUs, but the recorder saw"
            ) && text.ends_with("so that load does not explain it"),
            "{text}"
        );
        let alone = OutsideLoad {
            explains: true,
            figures: None,
            recorded: Some(seen(Some(0.558))),
        };
        let text = outside_load_sentence(&alone, &CheckId::MinFairShare);
        assert!(
            text.ends_with(
                "with its part of that time min_fair_share could have reached about 0.558"
            ),
            "{text}"
        );
    }
}
