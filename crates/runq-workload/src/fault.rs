//! Deterministic fault injection for the start-up path.
//!
//! A [`Fault`] names one start-up step and the worker (by spawn order,
//! counting process workers from 0 across all groups) that fails at it.
//! The runq binary reads it from the `RUNQ_FAULT` environment variable,
//! e.g. `RUNQ_FAULT=start:0`; tests use it to reach every failure path
//! without racing the kernel.

use std::fmt;
use std::str::FromStr;

/// The start-up step at which the fault fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultStep {
    /// `fork()` of the worker fails (EAGAIN, as under a pids limit).
    Fork,
    /// Placing the worker in its cgroup fails.
    Place,
    /// The worker is SIGKILLed just before its start byte is written.
    Start,
    /// The worker SIGKILLs itself where its first iteration would begin.
    FirstIteration,
}

/// One injected fault: `step` fails for worker number `worker`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fault {
    /// Where it fires.
    pub step: FaultStep,
    /// Spawn-order index of the process worker it hits.
    pub worker: usize,
}

impl Fault {
    /// True when this fault fires at `step` for worker `worker`.
    pub fn hits(fault: Option<Fault>, step: FaultStep, worker: usize) -> bool {
        fault.is_some_and(|f| f.step == step && f.worker == worker)
    }
}

impl FromStr for Fault {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let usage =
            || format!("{s:?} is not STEP:WORKER (steps: fork, place, start, first; e.g. start:0)");
        let (step, worker) = s.split_once(':').ok_or_else(usage)?;
        let step = match step.trim() {
            "fork" => FaultStep::Fork,
            "place" => FaultStep::Place,
            "start" => FaultStep::Start,
            "first" => FaultStep::FirstIteration,
            _ => return Err(usage()),
        };
        let worker = worker.trim().parse().map_err(|_| usage())?;
        Ok(Fault { step, worker })
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let step = match self.step {
            FaultStep::Fork => "fork",
            FaultStep::Place => "place",
            FaultStep::Start => "start",
            FaultStep::FirstIteration => "first",
        };
        write!(f, "{step}:{}", self.worker)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_step_and_rejects_junk() {
        for (text, step) in [
            ("fork:3", FaultStep::Fork),
            ("place:3", FaultStep::Place),
            ("start:3", FaultStep::Start),
            ("first:3", FaultStep::FirstIteration),
        ] {
            let f: Fault = text.parse().unwrap();
            assert_eq!(f, Fault { step, worker: 3 });
            assert_eq!(f.to_string(), text);
        }
        for bad in ["", "fork", "fork:x", "boom:1", "start:-1"] {
            assert!(bad.parse::<Fault>().is_err(), "{bad}");
        }
        let f = Some("start:1".parse().unwrap());
        assert!(Fault::hits(f, FaultStep::Start, 1));
        assert!(!Fault::hits(f, FaultStep::Start, 0));
        assert!(!Fault::hits(f, FaultStep::Fork, 1));
        assert!(!Fault::hits(None, FaultStep::Fork, 1));
    }
}
