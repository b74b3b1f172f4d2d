//! The sched_ext checks, judged on sched_ext's counters over the run (the
//! host monitor's record, [`super::host::HostSchedExt`]): tasks the BPF
//! scheduler rejected (`nr_rejected`, every kernel with sched_ext), and
//! the rates of its `root/events` counters (6.15+): select_cpu fallbacks
//! and dispatches that left the last task on its CPU; and on the host
//! monitor's samples: a busy CPU's stuck run-queue clock
//! ([`super::rq_clock`]) and the local dispatch queues' depth from
//! sched_ext's debug dumps ([`super::dsq`]). A check whose
//! figure the kernel does not give is skipped with the reason, never
//! passed; with no BPF scheduler at the start of the run and none named,
//! there is nothing to judge.

use crate::checks::detail::SchedExtDetail;
use std::collections::BTreeMap;

use super::host::{HostSchedExt, HostSeries};
use crate::check_id::CheckId;
use crate::checks::{CheckResult, Detail, Op, SchedExtFigure, SkippedCheck};

/// What the checks are judged on.
pub(crate) struct SchedExtRun<'a> {
    /// The host monitor's record.
    pub host: Option<&'a HostSeries>,
    /// Whether the run named a scheduler under test.
    pub scheduler: bool,
    /// How long the workers ran, ns.
    pub run_ns: u64,
}

/// Judges each check of `bounds` (id, figure, bound) on the run: the
/// results and the checks skipped with their reasons.
pub(crate) fn judge(
    bounds: &[(CheckId, SchedExtFigure, f64)],
    run: &SchedExtRun,
) -> (Vec<CheckResult>, Vec<SkippedCheck>) {
    let ext = run.host.and_then(|h| h.sched_ext.as_ref());
    let loaded = ext.is_some_and(|e| e.state_start == "enabled");
    if bounds.is_empty() || (!loaded && !run.scheduler) {
        return (Vec::new(), Vec::new());
    }
    let whole = match (run.host, ext) {
        (None, _) => Some("the host monitor did not run (snapshots are off)".to_string()),
        (Some(_), None) => {
            Some("this kernel has no /sys/kernel/sched_ext (CONFIG_SCHED_CLASS_EXT)".into())
        }
        (Some(_), Some(e)) if !loaded => Some(format!(
            "no BPF scheduler was enabled when the run started (sched_ext state: {})",
            e.state_start
        )),
        _ => None,
    };
    let mut checks = Vec::new();
    let mut skipped = Vec::new();
    for &(check, figure, bound) in bounds {
        let judged = match (&whole, ext) {
            (Some(why), _) => Err(why.clone()),
            (None, Some(e)) => measure(figure, e, run),
            (None, None) => continue,
        };
        match judged {
            Ok((measured, detail)) => checks.push(CheckResult {
                check,
                group: "scheduler".into(),
                measured,
                op: Op::AtMost,
                bound,
                pass: measured <= bound,
                detail: vec![detail],
                cause: None,
                not_judged: None,
            }),
            Err(reason) => skipped.push(SkippedCheck {
                check,
                group: "scheduler".into(),
                reason,
            }),
        }
    }
    (checks, skipped)
}

/// The value of `figure` and what it was measured from, or why there is
/// none.
fn measure(
    figure: SchedExtFigure,
    e: &HostSchedExt,
    run: &SchedExtRun,
) -> Result<(f64, Detail), String> {
    let host = run.host;
    let (event, what) = match figure {
        SchedExtFigure::RqClockStall => {
            let why = host.and_then(|h| h.rq_clock_unavailable.as_ref().or(h.unavailable.as_ref()));
            return super::rq_clock::measure(
                host.and_then(|h| h.rq_clock.as_ref()),
                why.map(String::as_str),
            );
        }
        SchedExtFigure::LocalDsqDepth => {
            let why = host.and_then(|h| h.dsq_unavailable.as_deref());
            return super::dsq::measure(host.and_then(|h| h.dsq.as_ref()), why);
        }
        SchedExtFigure::Rejected => {
            return Ok((
                e.nr_rejected as f64,
                Detail::SchedExt(SchedExtDetail::ScxRejected {
                    rejected: e.nr_rejected,
                }),
            ))
        }
        SchedExtFigure::EventRate(event, what) => (event, what),
    };
    let count = *events(e)?
        .get(event)
        .ok_or_else(|| format!("this kernel's root/events has no {event}"))?;
    let secs = run.run_ns.max(1) as f64 / 1e9;
    let rate = count as f64 / secs;
    Ok((
        rate,
        Detail::SchedExt(SchedExtDetail::ScxEvents {
            count,
            what: what.into(),
            event: event.into(),
            secs,
            per_s: rate,
        }),
    ))
}

/// The BPF scheduler's event counters over the run, or why they cannot
/// be read as one scheduler's.
fn events(e: &HostSchedExt) -> Result<&BTreeMap<String, u64>, String> {
    if e.enabled > 0 {
        return Err(format!(
            "a BPF scheduler was enabled during the run (enable_seq rose by {}), so its \
             counters do not cover the run",
            e.enabled
        ));
    }
    if e.state_end != "enabled" {
        return Err(format!(
            "the BPF scheduler was gone by the end of the run (sched_ext state: {}), and its \
             counters with it",
            e.state_end
        ));
    }
    e.events.as_ref().ok_or_else(|| {
        "this kernel has no /sys/kernel/sched_ext/root/events (6.15 and later have it)".into()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::checks::CheckConfig;
    use runq_kernel::sched_ext::{EV_DISPATCH_KEEP_LAST, EV_SELECT_CPU_FALLBACK};

    /// The default bounds of the checks on sched_ext's counters.
    fn counter_bounds() -> Vec<(CheckId, SchedExtFigure, f64)> {
        let counters = [
            CheckId::MaxScxRejectedTasks,
            CheckId::MaxScxFallbackRate,
            CheckId::MaxScxKeepLastRate,
        ];
        let mut bounds = CheckConfig::default().sched_ext_bounds();
        bounds.retain(|(id, _, _)| counters.contains(id));
        bounds
    }

    /// sched_ext over a 2 s run with scx_simple on 6.12, as a real guest's
    /// sysfs gave it (`runq-kernel/tests/fixtures/sched_ext/6.12-*`).
    fn simple_6_12() -> HostSchedExt {
        HostSchedExt {
            state_start: "enabled".into(),
            state_end: "enabled".into(),
            ops: Some("simple".into()),
            nr_rejected: 0,
            enabled: 0,
            events: None,
        }
    }

    fn host(e: Option<HostSchedExt>) -> HostSeries {
        HostSeries {
            sched_ext: e,
            ..HostSeries::default()
        }
    }

    fn run(h: &HostSeries, scheduler: bool) -> (Vec<CheckResult>, Vec<SkippedCheck>) {
        let r = SchedExtRun {
            host: Some(h),
            scheduler,
            run_ns: 2_000_000_000,
        };
        judge(&counter_bounds(), &r)
    }

    #[test]
    fn on_6_12_rejections_are_judged_and_event_rates_skipped() {
        let (checks, skipped) = run(&host(Some(simple_6_12())), true);
        assert_eq!(checks.len(), 1);
        assert_eq!(checks[0].check, CheckId::MaxScxRejectedTasks);
        assert!(checks[0].pass && checks[0].measured == 0.0);
        let names: Vec<String> = skipped.iter().map(|s| s.check.to_string()).collect();
        assert_eq!(names, ["max_scx_fallback_rate", "max_scx_keep_last_rate"]);
        assert!(skipped[0]
            .reason
            .contains("no /sys/kernel/sched_ext/root/events"));
    }

    #[test]
    fn event_rates_over_the_run_on_kernels_with_events() {
        let mut e = simple_6_12();
        e.nr_rejected = 3;
        e.events = Some(BTreeMap::from([
            (EV_SELECT_CPU_FALLBACK.to_string(), 4),
            (EV_DISPATCH_KEEP_LAST.to_string(), 150),
        ]));
        let (checks, skipped) = run(&host(Some(e)), true);
        assert!(skipped.is_empty(), "{skipped:?}");
        let got: Vec<(f64, bool)> = checks.iter().map(|c| (c.measured, c.pass)).collect();
        assert_eq!(got, [(3.0, false), (2.0, false), (75.0, true)]);
        assert_eq!(
            checks[1].detail,
            [Detail::SchedExt(SchedExtDetail::ScxEvents {
                count: 4,
                what: "select_cpu fallbacks".into(),
                event: EV_SELECT_CPU_FALLBACK.into(),
                secs: 2.0,
                per_s: 2.0,
            })]
        );
    }

    #[test]
    fn an_ejected_or_replaced_scheduler_leaves_no_rates() {
        let mut ejected = simple_6_12();
        ejected.state_end = "disabled".into();
        ejected.ops = None;
        let (checks, skipped) = run(&host(Some(ejected)), true);
        assert_eq!(checks.len(), 1, "nr_rejected is the kernel's, still judged");
        assert!(skipped[0].reason.contains("gone by the end"), "{skipped:?}");
        let mut replaced = simple_6_12();
        replaced.enabled = 1;
        let (_, skipped) = run(&host(Some(replaced)), true);
        assert!(skipped[0].reason.contains("enabled during the run"));
    }

    #[test]
    fn without_sched_ext_a_named_scheduler_skips_all_and_none_judges_nothing() {
        let (checks, skipped) = run(&host(None), true);
        assert!(checks.is_empty());
        assert_eq!(skipped.len(), 3);
        assert!(skipped[0].reason.contains("no /sys/kernel/sched_ext ("));
        assert_eq!(run(&host(None), false), (Vec::new(), Vec::new()));
        let mut off = simple_6_12();
        off.state_start = "disabled".into();
        assert_eq!(run(&host(Some(off.clone())), false).1.len(), 0);
        let (_, skipped) = run(&host(Some(off)), true);
        assert!(skipped[2].reason.contains("no BPF scheduler was enabled"));
        let none = SchedExtRun {
            host: None,
            scheduler: true,
            run_ns: 1,
        };
        assert!(judge(&counter_bounds(), &none).1[0]
            .reason
            .contains("host monitor did not run"));
    }

    #[test]
    fn a_stuck_clock_and_dsq_depth_are_judged_on_the_monitors_samples_or_skipped() {
        use crate::series::rq_clock::{RqClockStall, RqClocks};
        let mut bounds = CheckConfig::default().sched_ext_bounds();
        bounds.retain(|(id, _, _)| {
            matches!(
                id,
                CheckId::MaxRqClockStallMs | CheckId::MaxScxLocalDsqDepth
            )
        });
        let mut ejected = simple_6_12();
        ejected.state_end = "disabled".into();
        let mut h = host(Some(ejected));
        h.rq_clock = Some(RqClocks {
            samples: 4,
            longest_stall: Some(RqClockStall {
                cpu: 1,
                clock_ns: 5_000_000_000,
                from_ns: 0,
                to_ns: 1_500_000_000,
                nr_running: 2,
                curr_pid: Some(0),
            }),
        });
        h.dsq_unavailable = Some("this kernel has no sched_ext_dump trace event".into());
        let (checks, skipped) = judge(
            &bounds,
            &SchedExtRun {
                host: Some(&h),
                scheduler: true,
                run_ns: 1,
            },
        );
        assert_eq!(
            checks.len(),
            1,
            "judged though the scheduler was gone by the end"
        );
        assert_eq!((checks[0].measured, checks[0].pass), (1500.0, false));
        assert!(
            matches!(
                checks[0].detail[..],
                [Detail::SchedExt(SchedExtDetail::RqClockStood {
                    cpu: 1,
                    ..
                })]
            ),
            "{:?}",
            checks[0].detail
        );
        assert_eq!(skipped[0].check, CheckId::MaxScxLocalDsqDepth);
        assert!(skipped[0]
            .reason
            .starts_with("no sched_ext dump: this kernel has no"));
    }
}
