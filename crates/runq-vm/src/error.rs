//! The VM runner's errors, each of one kind the binary turns into its
//! exit code.

/// Why a VM run could not be carried out.
#[derive(Debug, thiserror::Error)]
pub enum VmError {
    /// A flag's value the user must fix (exit 2).
    #[error("{0}")]
    Usage(String),
    /// The host lacks what a VM needs (vng, qemu, a kernel): exit 77.
    #[error("skipped: {0}")]
    Skipped(String),
    /// The VM or the guest's run failed (exit 3).
    #[error("{0}")]
    Run(String),
    /// SIGINT or SIGTERM stopped it (exit 128+N).
    #[error("{0}")]
    Interrupted(String),
}

impl VmError {
    /// A run error naming what failed and why.
    pub(crate) fn io(what: impl std::fmt::Display, e: std::io::Error) -> Self {
        VmError::Run(format!("{what}: {e}"))
    }
}
