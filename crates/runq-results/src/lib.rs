//! What `runq run` and `runq compare` make of a run once the engine
//! (runq-workload) has carried it out and judged it: [`results`] turns the
//! engine's outcomes into the saved, versioned document, [`evidence`]
//! explains a FAIL from a recording of the scheduler's events,
//! [`compare`] judges two saved documents against each other, and
//! [`render`] writes all of them as text. Nothing here runs workers: the
//! engine does not depend on this crate, this crate depends on the
//! engine's types ([`runq_workload::RunOutcome`], its checks and
//! summaries).

pub mod compare;
pub mod evidence;
pub mod render;
pub mod results;
