//! The per-task recorder of each run: runq-recorder's BPF programs, given
//! to the run as runq-workload's [`TaskRecorder`] (runq-workload depends
//! on no BPF crate; the failed checks' causes read what it saw).

use runq_recorder::Recorder;
use runq_workload::{Recorded, TaskRecorder};

/// runq-recorder's [`Recorder`] as a [`TaskRecorder`].
struct BpfRecorder(Recorder);

impl TaskRecorder for BpfRecorder {
    fn watch(&mut self, tid: u32, group: usize) -> Result<(), String> {
        self.0.watch(tid, group).map_err(|e| e.to_string())
    }

    fn read(&mut self) -> Result<Recorded, String> {
        self.0.read().map_err(|e| e.to_string())
    }
}

/// The recorder of one run, loaded and attached now with runq's own
/// threads told apart from load outside the run, or why there is none
/// (`--no-recorder`, not root, a program that would not load).
pub fn task_recorder(on: bool) -> Result<Box<dyn TaskRecorder>, String> {
    if !on {
        return Err("off (--no-recorder)".into());
    }
    let mut r = Recorder::start().map_err(|e| e.to_string())?;
    log::info!("recorder: on the {} tracepoints", r.tracepoints().name());
    r.watch_own_threads().map_err(|e| e.to_string())?;
    Ok(Box::new(BpfRecorder(r)))
}
