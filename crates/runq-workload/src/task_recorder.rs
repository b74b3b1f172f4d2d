//! The per-task recorder as the run sees it: something that watches the
//! workers' threads as they are forked and, at the end, says what
//! happened to each ([`Recorded`]). The binary gives runq-recorder's BPF
//! programs; runq-workload itself depends on no BPF crate.

pub use runq_kernel::task_record::Recorded;

/// A recorder of the run's workers.
pub trait TaskRecorder {
    /// Watches thread `tid`, a worker of group `group` just forked (and
    /// what it clones).
    fn watch(&mut self, tid: u32, group: usize) -> Result<(), String>;
    /// What it saw, read once the workers stopped.
    fn read(&mut self) -> Result<Recorded, String>;
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

/// What the recorder saw, or why there is nothing.
pub(crate) fn finish(rec: MaybeRecorder) -> Result<Recorded, String> {
    let got = rec?.read();
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
