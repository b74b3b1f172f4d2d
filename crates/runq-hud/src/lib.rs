//! runq hud: find what blocks a Tokio runtime's worker threads.
//!
//! BPF programs on the scheduler tracepoints and a cpu-clock sampler
//! ([`bpf`]) report, for the target's worker threads only, sleeps and
//! run-queue waits above a threshold and periodic stacks ([`event`]):
//! frame-pointer walks, or copies of the stack that [`unwind`] unwinds
//! with DWARF CFI ([`prep`] picks and applies the way, [`health`] says
//! when stacks are cut short). The stacks are symbolized ([`symbols`])
//! and classified ([`classify`]), both cached per address ([`stacks`]);
//! the detector ([`detect`]) names the culprit in three categories, and a
//! session ([`session`]) turns it all into a report ([`report`]) and a
//! Chrome trace ([`export`]); [`live`] is the ratatui view. Workers are
//! found by [`discovery`]. With `--exact-polls`, uprobes time every poll
//! of Tokio's tasks ([`polls`] finds them; [`poll_culprit`] names a long
//! one from the samples taken during it). Every event carries the Tokio
//! task being polled, from a uprobe on Tokio's `set_current_task_id`
//! ([`task_ids`] finds it).
//!
//! [`fleet`] is continuous mode: hud as a host's service, exporting
//! OpenMetrics.
//!
//! [`mapped`] maps the binaries it parses, rather than reading them.
//!
//! Beside hud, [`hostwait`] measures the longest runnable wait on the whole
//! host (for `runq run`'s host monitor).

pub mod bpf;
pub mod classify;
pub mod culprit;
pub mod detect;
pub mod discovery;
pub mod event;
pub mod export;
pub mod fleet;
pub mod health;
pub mod hostwait;
pub mod live;
pub mod mapped;
pub mod poll_culprit;
pub mod polls;
pub mod prep;
pub mod report;
pub mod session;
pub mod sleep_call;
pub mod stacks;
pub mod symbols;
pub mod task_ids;
pub mod unwind;
