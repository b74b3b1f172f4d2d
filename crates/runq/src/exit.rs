//! Exit codes and the one-line error report.
//!
//! 0 ok, 1 check failed or runtime error, 2 usage error, 77 missing
//! privilege. Library errors travel as `anyhow::Error`; a [`Fail`] anywhere
//! in the chain chooses the code.

use std::fmt;
use std::process::ExitCode;

/// Usage error (bad flag value, unknown name).
pub const USAGE: u8 = 2;
/// Missing privilege (root, CAP_BPF, ...).
pub const NO_PRIVILEGE: u8 = 77;

/// An error that carries its exit code.
#[derive(Debug)]
pub struct Fail {
    /// Process exit code.
    pub code: u8,
    /// The one line to print.
    pub message: String,
}

impl fmt::Display for Fail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Fail {}

/// A usage error with exit code 2.
pub fn usage(message: impl Into<String>) -> anyhow::Error {
    Fail {
        code: USAGE,
        message: message.into(),
    }
    .into()
}

/// A missing-privilege error with exit code 77.
pub fn no_privilege(message: impl Into<String>) -> anyhow::Error {
    Fail {
        code: NO_PRIVILEGE,
        message: message.into(),
    }
    .into()
}

/// Prints `runq: <error>: <cause>...` on one line and returns its exit code.
pub fn report_error(err: &anyhow::Error) -> ExitCode {
    let code = err
        .chain()
        .find_map(|e| e.downcast_ref::<Fail>())
        .map_or(1, |f| f.code);
    let line = err
        .chain()
        .map(|e| e.to_string())
        .collect::<Vec<_>>()
        .join(": ");
    eprintln!("runq: {line}");
    ExitCode::from(code)
}
