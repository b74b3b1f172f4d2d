//! The scheduler's state dumps (taken by the engine when sched_ext let it
//! go, its process died, or a stall was building) written beside the
//! run's other evidence, one text file each, and their files noted in the
//! outcome.

use std::path::Path;

use runq_common::safefile::{write_atomic, Replace};
use runq_workload::RunOutcome;

/// Writes each state dump of `o`'s scheduler to
/// `<prefix>-<moment>-<at_ms>ms.txt` and notes the file in the dump; a
/// dump that cannot be written says why among what it misses.
pub fn write_state_dumps(o: &mut RunOutcome, prefix: &Path) {
    let Some(s) = o.scheduler.as_mut() else {
        return;
    };
    for d in s.state_dumps.iter_mut().filter(|d| d.file.is_none()) {
        let file = format!(
            "{}-{}-{}ms.txt",
            prefix.display(),
            d.moment.words().replace(' ', "-"),
            d.at_ms
        );
        let head = format!(
            "runq: the state of scheduler {:?} ({}, {} ms into the run)\n",
            s.command,
            d.moment.words(),
            d.at_ms
        );
        let text = head + &d.text;
        match write_atomic(Path::new(&file), text.as_bytes(), Replace::OwnFile) {
            Ok(()) => d.file = Some(file.into()),
            Err(e) => d
                .missing
                .push(format!("the dump was not written to {file}: {e}")),
        }
    }
}
