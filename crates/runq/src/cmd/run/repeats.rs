//! Running the scenario `--repeat` times, as a [`RunPlan`] says, with the
//! progress line, the ctprof hook and every repeat's report but the last.

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use runq_workload::{run_scenario, CgroupMode, Fault, RunError, RunOptions, RunOutcome, Scenario};

use super::evidence::{self, Flight};
use super::progress::Progress;
use crate::cmd::ctprof::run_hook::Recorder;

/// How `runq run` runs its scenario: everything each repeat needs besides
/// the scenario, the interrupt flag and the tick hooks.
#[derive(Debug, Clone, Copy)]
pub struct RunPlan {
    /// Whether the runs use cgroups (from the scenario, `--cgroup` and
    /// `--no-cgroups`).
    pub cgroups: CgroupMode,
    /// Deadline for collecting reports after the stop signal
    /// (`--collect-timeout`).
    pub collect_timeout: Duration,
    /// The start-up fault to inject (`RUNQ_FAULT`), if any.
    pub fault: Option<Fault>,
    /// Never signal the scenario's scheduler from the watchdog (`--repro`).
    pub repro: bool,
    /// The most workers per online CPU a run may start
    /// (`--max-workers-per-cpu`).
    pub max_workers_per_cpu: usize,
    /// How many times to run the scenario (`--repeat`).
    pub repeats: u32,
    /// Measure the host's runnable waits (`--runnable-wait`; also on when
    /// the scenario checks them).
    pub runnable_wait: bool,
    /// Record the scheduler's events for the evidence of a FAIL into this
    /// many MiB per CPU (`--flight-recorder`), or not at all.
    pub flight_recorder: Option<u32>,
    /// Freeze the recording at the first gap beyond `max_gap_ms` (not
    /// `--no-freeze`).
    pub freeze: bool,
    /// Record each worker's run time, waits and the holders of its CPU
    /// within this policy (`--evidence`, `--overhead-budget`), or not at
    /// all (`--evidence off`, `--no-recorder`).
    pub recorder: Result<runq_recorder::fidelity::Policy, &'static str>,
}

impl RunPlan {
    /// The options of one repeat of `scn`, with a fresh runnable-wait
    /// probe when the host monitor runs.
    fn options<'a>(
        &self,
        scn: &Scenario,
        interrupt: &'a AtomicBool,
        on_tick: &'a mut dyn FnMut(Duration, Duration),
    ) -> RunOptions<'a> {
        RunOptions {
            cgroups: self.cgroups,
            interrupt,
            on_tick,
            collect_timeout: self.collect_timeout,
            repro: self.repro,
            fault: self.fault,
            max_workers_per_cpu: self.max_workers_per_cpu,
            runnable_wait: super::hostwait::runnable_wait_probe(
                scn.snapshot_interval.is_some(),
                self.runnable_wait || scn.checks.max_runnable_wait_ms.is_some(),
                scn.total_workers(),
            ),
            freeze: None,
            recorder: super::recorder::task_recorder(self.recorder),
        }
    }
}

/// The error of a run that could not happen, its type kept (its exit
/// code is `exit`'s to choose), with the words that introduce it.
fn refusal(e: RunError) -> anyhow::Error {
    let intro = match &e {
        RunError::NeedsPrivilege(_) => {
            "this run asks for cgroups, which need root (or a delegated cgroup subtree)"
        }
        RunError::Capacity(_) => "the host cannot hold this run",
        RunError::HostLacks(_) => "skipped",
        _ => return e.into(),
    };
    anyhow::Error::new(e).context(intro)
}

/// What the repeats produced: every outcome, and the evidence of the last
/// failed one.
pub struct Repeats {
    /// Every repeat's outcome, in order.
    pub outcomes: Vec<RunOutcome>,
    /// The evidence of the last repeat that failed, if one did.
    pub evidence: Option<runq_results::evidence::EvidenceReport>,
}

/// Runs the scenario `plan.repeats` times, stopping early on an interrupt
/// or a run error; prints every repeat's report but the last unless
/// `json`. Each repeat has its own flight recorder; a failed one writes
/// its evidence under `evidence_dir`.
pub fn run_repeats(
    plan: &RunPlan,
    scn: &Scenario,
    json: bool,
    interrupt: &AtomicBool,
    ctprof: &mut Option<Recorder>,
    evidence_dir: &std::path::Path,
) -> anyhow::Result<Repeats> {
    let mut outcomes = Vec::new();
    let mut last_evidence = None;
    for n in 1..=plan.repeats {
        if plan.repeats > 1 && !json {
            crate::errln!("runq: repeat {n}/{}", plan.repeats);
        }
        let mut progress = Progress::new(scn.duration, json);
        let mut flight = Flight::start(plan.flight_recorder, scn.pinned_cpus());
        let freeze = flight.freeze(scn, plan.freeze);
        let mut on_tick = |e, t| {
            flight.tick(e);
            progress.tick(e, t);
            if let Some(r) = ctprof.as_mut() {
                r.tick(e, t);
            }
        };
        let mut opts = plan.options(scn, interrupt, &mut on_tick);
        opts.freeze = freeze;
        let outcome = run_scenario(scn, opts);
        progress.finish();
        let mut outcome = outcome.map_err(refusal)?;
        let tag = evidence::tag(n);
        let dumps = evidence_dir.join(format!("runq-scheduler-{tag}"));
        runq_results::evidence::scheduler_state::write_state_dumps(&mut outcome, &dumps);
        if let Some(ev) = flight.finish(&outcome, (evidence_dir, &tag), ctprof.as_ref()) {
            last_evidence = Some(ev);
        }
        let stop = outcome.interrupted || outcome.run_error.is_some();
        if !json && n < plan.repeats && !stop {
            crate::out!(
                "{}",
                runq_results::render::outcome(&outcome, crate::style::color_enabled())
            );
        }
        outcomes.push(outcome);
        if stop {
            break;
        }
    }
    Ok(Repeats {
        outcomes,
        evidence: last_evidence,
    })
}
