//! The run or the look to make next after a FAIL, in words.

use runq_workload::NextStep;

/// `for a control, run the same scenario with --no-cgroups ...`.
pub fn next_step_sentence(n: &NextStep) -> String {
    match n {
        NextStep::NoCgroupsControl => "for a control, run the same scenario with --no-cgroups \
             (every worker then competes as a task)"
            .into(),
        NextStep::FlightRecorder { worker: Some(w) } => {
            format!("rerun with --flight-recorder to see who held worker {w}'s CPU")
        }
        NextStep::FlightRecorder { worker: None } => {
            "rerun with --flight-recorder to see who held its CPUs".into()
        }
        NextStep::StopHolder { comm, pid } => {
            format!("stop {comm}[{pid}] or keep the run off the CPU it holds, then rerun")
        }
        NextStep::KeepOffOutsideCpus => {
            "keep the run off the CPUs that tasks outside it held, then rerun".into()
        }
        NextStep::LeaveRunqACpu => "leave runq a CPU: run fewer workers than CPUs, so that its \
             collector and host monitor need not take a worker's, then rerun"
            .into(),
        NextStep::FindWhatEndedIt => "look for what ended it: its exit status, the kernel log \
             (the OOM killer), a fault injected with RUNQ_FAULT"
            .into(),
        NextStep::FixRunError => "fix what the error names, then run again".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_step_names_what_to_run_or_stop() {
        let stop = NextStep::StopHolder {
            comm: "sh".into(),
            pid: 6408,
        };
        assert_eq!(
            next_step_sentence(&stop),
            "stop sh[6408] or keep the run off the CPU it holds, then rerun"
        );
        assert!(next_step_sentence(&NextStep::NoCgroupsControl).contains("--no-cgroups"));
        assert_eq!(
            next_step_sentence(&NextStep::FlightRecorder { worker: Some(106) }),
            "rerun with --flight-recorder to see who held worker 106's CPU"
        );
        assert!(next_step_sentence(&NextStep::LeaveRunqACpu).starts_with("leave runq a CPU"));
    }
}
