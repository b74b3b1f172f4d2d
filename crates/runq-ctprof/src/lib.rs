//! ctprof: host-wide per-thread snapshots of scheduling, memory, I/O and
//! delay-accounting counters, and their comparison.
//!
//! Reading the host:
//! - [`capture`]: the best-effort walk of `/proc` that fills a snapshot
//!   (with [`jemalloc`] counters read from a target's allocator);
//! - [`avail`]: which per-thread sources were read, and why not (missing
//!   is not zero);
//! - [`record`]: snapshots at an interval into a directory, deltas
//!   between full ones.
//!
//! The model and its files:
//! - [`model`]: the snapshot types ([`model::CtprofSnapshot`],
//!   [`model::ThreadState`]), built from [`metric_types`] newtypes;
//! - [`format`]: the `.ctprof.zst` file (zstd level 3 JSON, versioned),
//!   written through `runq_common::safefile` (no symlink races in
//!   shared directories).
//!
//! Modelling a view:
//! - [`registry`]: every per-thread metric with its aggregation rule and
//!   unit; [`derived`]: formulas over aggregated metrics;
//! - [`group`]: grouping threads (process, cgroup, thread name);
//!   [`agg`]: reducing a metric across a group;
//! - [`view`]: what a show or compare produces (cells, rows, options, the
//!   view), below both the engine and the renderers;
//! - [`compare`]: the show / compare engine over one or two snapshots (or
//!   directories of them); [`sections`]: the secondary tables (cgroups,
//!   limits, PSI, smaps); [`hostview`]: the host context rows.
//!
//! Rendering:
//! - [`render`]: views as aligned text; [`export`]: OpenMetrics,
//!   Prometheus text and CSV.

pub mod agg;
pub mod avail;
pub mod capture;
pub mod compare;
pub mod derived;
pub mod export;
pub mod format;
pub mod group;
pub mod hostview;
pub mod jemalloc;
pub mod metric_types;
pub mod model;
pub mod record;
pub mod registry;
pub mod render;
pub mod sections;
pub mod view;

pub use capture::{capture, CaptureOptions};
pub use format::{save, FormatError};
pub use model::{CtprofSnapshot, ThreadState};
pub use record::load;
