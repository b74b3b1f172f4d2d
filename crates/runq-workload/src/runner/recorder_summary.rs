//! What a run's recorder was: its fidelity and cost, or why there was
//! none (the document's `recorder`).

use serde::Serialize;

use crate::task_recorder::Recorded;

/// What the recorder was over one run (see [`RunOutcome::recorder`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct RecorderSummary {
    /// Its fidelity and cost, when it ran and said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fidelity: Option<runq_kernel::task_record::Fidelity>,
    /// Why there was no recorder (`--evidence off`, not root, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub off: Option<String>,
}

impl RecorderSummary {
    /// The fidelity of `recorded`, or why there is none.
    pub fn of(recorded: &Result<Recorded, String>) -> Self {
        match recorded {
            Ok(r) => RecorderSummary {
                fidelity: r.fidelity.clone(),
                off: None,
            },
            Err(why) => RecorderSummary {
                fidelity: None,
                off: Some(why.clone()),
            },
        }
    }
}
