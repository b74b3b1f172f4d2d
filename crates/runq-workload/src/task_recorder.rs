//! The per-task recorder as the run sees it: something that watches the
//! workers' threads as they are forked and, at the end, says what
//! happened to each ([`Recorded`]). The binary gives runq-recorder's BPF
//! programs; runq-workload itself depends on no BPF crate.

pub use runq_kernel::task_record::Recorded;

use crate::report::WorkerReport;

/// A recorder of the run's workers.
pub trait TaskRecorder {
    /// Watches thread `tid`, a worker of group `group` just forked (and
    /// what it clones).
    fn watch(&mut self, tid: u32, group: usize) -> Result<(), String>;
    /// What it saw, read once the workers stopped.
    fn read(&mut self) -> Result<Recorded, String>;
    /// Called on each tick of the run after the workers' release: a
    /// recorder within a budget measures itself here and may lower its
    /// fidelity (see runq-recorder's `fidelity`).
    fn tick(&mut self) {}
    /// Called at the run's end, before the workers are stopped: a
    /// sampling recorder stops sampling, so that the collection (a killed
    /// worker's last run, to die) is not taken for the run.
    fn end_of_run(&mut self) {}
}

/// The run's recorder, or why there is none.
pub(crate) type MaybeRecorder = Result<Box<dyn TaskRecorder>, String>;

/// Watches `tids` (with their groups); a recorder that cannot watch one is dropped, and the
/// reason kept (the run goes on without it).
pub(crate) fn watch_all(rec: &mut MaybeRecorder, tids: impl Iterator<Item = (u32, usize)>) {
    let Ok(r) = rec else { return };
    for (tid, group) in tids.filter(|&(t, _)| t != 0) {
        if let Err(e) = r.watch(tid, group) {
            log::warn!("recorder: watching worker {tid}: {e}");
            *rec = Err(format!("watching worker {tid} failed: {e}"));
            return;
        }
    }
}

/// What the recorder saw, or why there is nothing; a sampled worker's
/// run and wait are its report's (schedstat), its holders' times their
/// shares of that wait.
pub(crate) fn finish(rec: MaybeRecorder, reports: &[WorkerReport]) -> Result<Recorded, String> {
    let mut got = rec?.read();
    if let Ok(r) = &mut got {
        for w in r.workers.iter_mut().filter(|w| w.sampled.is_some()) {
            let Some(report) = reports.iter().find(|r| r.tid == w.worker) else {
                continue;
            };
            // The wait since it was last seen on a CPU counts only for a
            // worker that was still runnable when it was killed.
            if let (false, Some(b)) = (report.runnable_at_deadline, &mut w.sampled) {
                b.unended_wait_ns = 0;
            }
            w.scale_to_wait(report.cpu_time_ns, report.schedstat_run_delay_ns);
        }
    }
    if let Ok(r) = &got {
        log::info!(
            "recorder: {} workers, {} bytes read from its maps, {} pairs lost",
            r.workers.len(),
            r.bytes_read,
            r.lost_pairs
        );
        log::debug!("recorded: {}", serde_json::to_string(r).unwrap_or_default());
    }
    got
}
