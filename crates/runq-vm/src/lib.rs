//! runq's VM runner: `runq run --vm` boots a guest of a chosen topology
//! with virtme-ng over the host's root filesystem and runs the same runq
//! in it (`run`, `guest`, `launch`, `topology`); `--vm-matrix` runs one
//! guest per cell and `--shard` a part of the cells (`matrix`, `shard`,
//! `matrix_doc`); `kernel` builds and caches the kernels they boot. The
//! binary parses the flags into a [`VmConfig`] and
//! prints what these return.

mod accel;
pub mod distro;
mod error;
pub mod evidence;
pub mod guest;
pub mod guest_topology;
pub mod kernel;
pub mod launch;
pub mod matrix;
pub mod matrix_doc;
pub mod run;
pub mod scheduler_table;
pub mod scx;
pub mod scx_deps;
pub mod shard;
mod shared_dir;
pub mod topology;

pub use error::VmError;
pub use run::{Accel, TcgThreads, VmConfig, VmFacts};
pub use topology::presets;

/// The exit codes of runq that the VM runner reads from a guest's run or
/// gives a matrix (the binary's `exit.rs` holds the same numbers, and a
/// test there checks they agree).
pub mod codes {
    /// A check failed.
    pub const CHECK_FAILED: u8 = 1;
    /// The work could not be carried out.
    pub const RUN_ERROR: u8 = 3;
    /// Every failed check can be the load outside the run's.
    pub const INDETERMINATE: u8 = 75;
    /// Skipped: a missing privilege or host feature.
    pub const SKIPPED: u8 = 77;
}
