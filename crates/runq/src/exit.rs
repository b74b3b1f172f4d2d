//! Exit codes and the one-line error report.
//!
//! 0 ok, 1 a check failed (a FAIL verdict, a regression, a profiler over
//! its bound), 2 usage error, 3 run error (the work could not be carried
//! out; every error without a code of its own), 77 skipped: a missing
//! privilege or a host feature the run needs (the autotools "skip" code),
//! 128+N interrupted by signal N. Library
//! errors travel as `anyhow::Error`; a [`Fail`] anywhere in the chain
//! chooses the code.

use std::fmt;
use std::process::ExitCode;

/// A check failed: a FAIL verdict, a regression, a bound passed.
pub const CHECK_FAILED: u8 = 1;
/// Usage error (bad flag value, unknown name).
pub const USAGE: u8 = 2;
/// `runq run` could not go as planned (fork, cgroup or scheduler failure).
pub const RUN_ERROR: u8 = 3;
/// Skipped: a missing privilege (root, CAP_BPF, ...) or a host feature
/// the run needs (SMT, NUMA, sched_ext).
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

/// A run error with exit code 3.
pub fn run_error(message: impl Into<String>) -> anyhow::Error {
    Fail {
        code: RUN_ERROR,
        message: message.into(),
    }
    .into()
}

/// An interruption (SIGINT/SIGTERM) before a run started: exit 128+N.
pub fn interrupted(message: impl Into<String>) -> anyhow::Error {
    let sig = runq_kernel::signal::received_signal().unwrap_or(libc::SIGINT);
    Fail {
        code: u8::try_from(128 + sig).unwrap_or(1),
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

/// A run skipped because the host lacks what it needs (exit 77, like a
/// missing privilege: nothing ran, and nothing failed).
pub fn skipped(why: impl fmt::Display) -> anyhow::Error {
    Fail {
        code: NO_PRIVILEGE,
        message: format!("skipped: {why}"),
    }
    .into()
}

/// Prints `runq: <error>: <cause>...` on one line and returns its exit code:
/// the one the error carries, or [`RUN_ERROR`] (1 is only ever a FAIL).
pub fn report_error(err: &anyhow::Error) -> ExitCode {
    let code = err
        .chain()
        .find_map(|e| e.downcast_ref::<Fail>())
        .map_or(RUN_ERROR, |f| f.code);
    crate::errln!("runq: {}", chain_line(err.chain().map(|e| e.to_string())));
    ExitCode::from(code)
}

/// Joins an error chain with ": ", leaving out a cause whose text the line
/// already holds (errors that print their source themselves).
fn chain_line(chain: impl Iterator<Item = String>) -> String {
    let mut line = String::new();
    for text in chain {
        if line.contains(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chain_prints_each_cause_once() {
        let chain = ["starting the run: Broken pipe", "Broken pipe"].map(String::from);
        assert_eq!(
            chain_line(chain.into_iter()),
            "starting the run: Broken pipe"
        );
        let chain = ["reading x", "No such file"].map(String::from);
        assert_eq!(chain_line(chain.into_iter()), "reading x: No such file");
    }
}
