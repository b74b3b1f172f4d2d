//! ctprof: host-wide per-thread snapshots of scheduling, memory, I/O and
//! delay-accounting counters, and their comparison.
//!
//! - [`model`]: the snapshot types ([`model::CtprofSnapshot`],
//!   [`model::ThreadState`]), built from [`metric_types`] newtypes;
//! - [`capture`]: the best-effort walk of `/proc` that fills a snapshot;
//! - [`format`]: the `.ctprof.zst` file (zstd level 3 JSON, versioned).

pub mod capture;
pub mod format;
pub mod metric_types;
pub mod model;

pub use capture::{capture, CaptureOptions};
pub use format::{load, save, FormatError};
pub use model::{CtprofSnapshot, ThreadState};
pub mod agg;
pub mod avail;
pub mod compare;
pub mod derived;
pub mod export;
pub mod group;
pub mod hostview;
pub mod jemalloc;
pub mod record;
pub mod registry;
pub mod render;
pub mod safefile;
pub mod sections;
