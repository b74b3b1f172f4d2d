//! The per-task recorder of each run: runq-recorder's BPF programs, given
//! to the run as runq-workload's [`TaskRecorder`] (runq-workload depends
//! on no BPF crate; the failed checks' causes read what it saw).

use runq_recorder::fidelity::{Evidence, Policy};
use runq_recorder::Recorder;
use runq_workload::{Recorded, TaskRecorder};

use super::RunArgs;

/// `--evidence`: the recorder's fidelity, or none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum EvidenceArg {
    /// Exact while it fits the budget, sampled when not.
    Auto,
    /// Exact, whatever it costs.
    Exact,
    /// Sampled from the start.
    Sampled,
    /// No recorder.
    Off,
}

/// Parses `--overhead-budget`: `1%`, `0.5%` or a fraction of one CPU
/// (`0.01`), above 0 and at most 100%.
pub fn parse_budget(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let share = match t.strip_suffix('%') {
        Some(pct) => pct.trim().parse::<f64>().map(|p| p / 100.0),
        None => t.parse::<f64>(),
    }
    .map_err(|_| {
        format!("{text:?} is not a share: give a percentage of one CPU, e.g. 1% or 0.5%")
    })?;
    if !(share > 0.0 && share <= 1.0) {
        return Err(format!("{text:?}: give a share above 0 and at most 100%"));
    }
    Ok(share)
}

impl RunArgs {
    /// The recorder's policy, or why it is off.
    pub fn recorder_policy(&self) -> Result<Policy, &'static str> {
        let evidence = match (self.no_recorder, self.evidence) {
            (true, _) => return Err("off (--no-recorder)"),
            (_, EvidenceArg::Off) => return Err("off (--evidence off)"),
            (_, EvidenceArg::Auto) => Evidence::Auto,
            (_, EvidenceArg::Exact) => Evidence::Exact,
            (_, EvidenceArg::Sampled) => Evidence::Sampled,
        };
        Ok(Policy {
            evidence,
            budget_cpus: self.overhead_budget,
            ..Policy::default()
        })
    }
}

/// runq-recorder's [`Recorder`] as a [`TaskRecorder`], within its policy.
struct BpfRecorder(Recorder, Policy);

impl TaskRecorder for BpfRecorder {
    fn watch(&mut self, tid: u32, group: usize) -> Result<(), String> {
        self.0.watch(tid, group).map_err(|e| e.to_string())
    }

    fn read(&mut self) -> Result<Recorded, String> {
        self.0.read().map_err(|e| e.to_string())
    }

    fn tick(&mut self) {
        self.0.tick(&self.1);
    }

    fn end_of_run(&mut self) {
        self.0.stop_sampling();
    }
}

/// The recorder of one run, loaded and attached now with runq's own
/// threads told apart from load outside the run, or why there is none
/// (`--evidence off`, not root, a program that would not load).
pub fn task_recorder(policy: Result<Policy, &str>) -> Result<Box<dyn TaskRecorder>, String> {
    let policy = policy?;
    let mut r = Recorder::start().map_err(|e| e.to_string())?;
    log::info!("recorder: on the {} tracepoints", r.tracepoints().name());
    r.watch_own_threads().map_err(|e| e.to_string())?;
    Ok(Box::new(BpfRecorder(r, policy)))
}
