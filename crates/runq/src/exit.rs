//! Exit codes and the one-line error report: every code runq exits with
//! is decided here.
//!
//! 0 ok, 1 a check failed (a FAIL verdict, a regression, a profiler over
//! its bound), 2 usage error, 3 run error (the work could not be carried
//! out; every error without a code of its own), 75 indeterminate (every
//! failed check can be the load outside the run's), 77 skipped: a missing
//! privilege or a host feature the run needs (the autotools "skip" code),
//! 128+N interrupted by signal N. Library errors travel as
//! `anyhow::Error` with their type kept; [`exit_of`] maps each library
//! error type to its code, and a [`Fail`] (the binary's own errors) or a
//! [`UserInput`] anywhere in the chain carries one.

use std::error::Error;
use std::fmt;
use std::process::ExitCode;

use runq_hud::bpf::BpfError;
use runq_hud::session::HudError;
use runq_kernel::tracefs::TracefsError;

/// The exit-code table, as `--help` and every man page list it.
pub const EXIT_CODES_HELP: &str =
    "Exit codes:\n  0    success: PASS, no regression, the work done\n  \
    1    a check failed: a FAIL verdict, a regression, a profiler over its bound\n  \
    2    usage error: a bad flag, value, name or input file\n  \
    3    run error: the work could not be carried out (fork, cgroup, I/O, stdout)\n  \
    75   INDETERMINATE: every failed check can be the load outside the run's\n  \
    77   skipped: a missing privilege or host feature\n  \
    128+N ended by signal N (130 SIGINT, 143 SIGTERM, 129 SIGHUP, 131 SIGQUIT)";

/// A check failed: a FAIL verdict, a regression, a bound passed.
pub const CHECK_FAILED: u8 = 1;
/// The checks that failed can all be the load outside the run's (an
/// INDETERMINATE verdict): `EX_TEMPFAIL`, run it again on a quieter host.
pub const INDETERMINATE: u8 = 75;
/// Usage error (bad flag value, unknown name).
pub const USAGE: u8 = 2;
/// The work could not be carried out (fork, cgroup or scheduler failure).
pub const RUN_ERROR: u8 = 3;
/// Skipped: a missing privilege (root, CAP_BPF, ...) or a host feature
/// the run needs (SMT, NUMA, sched_ext).
pub const NO_PRIVILEGE: u8 = 77;

/// How a command ended, short of success.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// [`CHECK_FAILED`].
    CheckFailed,
    /// [`USAGE`].
    Usage,
    /// [`RUN_ERROR`].
    RunError,
    /// [`NO_PRIVILEGE`]: a missing privilege or host feature.
    Skipped,
    /// 128+N: interrupted by signal N.
    Interrupted(i32),
}

impl Exit {
    /// The exit code's number.
    pub fn code(self) -> u8 {
        match self {
            Exit::CheckFailed => CHECK_FAILED,
            Exit::Usage => USAGE,
            Exit::RunError => RUN_ERROR,
            Exit::Skipped => NO_PRIVILEGE,
            Exit::Interrupted(sig) => u8::try_from(128 + sig).unwrap_or(RUN_ERROR),
        }
    }

    /// The process's exit code.
    pub fn exit_code(self) -> ExitCode {
        ExitCode::from(self.code())
    }

    /// Interrupted by the signal runq received (SIGINT when none was
    /// recorded).
    pub fn interrupted() -> Exit {
        Exit::Interrupted(runq_kernel::signal::received_signal().unwrap_or(libc::SIGINT))
    }
}

/// The code of a run's verdict: 0 for a pass, 1 for a FAIL, 128+N when a
/// signal interrupted it, 3 when it could not be carried out.
pub fn verdict_code(outcome: &runq_workload::RunOutcome) -> ExitCode {
    if outcome.run_error.is_some() {
        return Exit::RunError.exit_code();
    }
    if outcome.interrupted {
        return Exit::interrupted().exit_code();
    }
    match outcome.verdict {
        runq_workload::Verdict::Pass => ExitCode::SUCCESS,
        runq_workload::Verdict::Fail => Exit::CheckFailed.exit_code(),
        runq_workload::Verdict::Indeterminate => ExitCode::from(INDETERMINATE),
        // Only when not flagged as interrupted above, which cannot happen.
        runq_workload::Verdict::Interrupted => Exit::RunError.exit_code(),
    }
}

/// An error of the binary's own, with its exit code.
#[derive(Debug)]
pub struct Fail {
    /// How the command ends.
    pub exit: Exit,
    /// The one line to print.
    pub message: String,
}

impl fmt::Display for Fail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl Error for Fail {}

/// A library error caused by what the user passed (a file they named, a
/// pattern), where the same type elsewhere is a run error: exit 2, with
/// the error itself kept (its text and causes are printed as they are).
#[derive(Debug)]
pub struct UserInput(Box<dyn Error + Send + Sync>);

impl fmt::Display for UserInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl Error for UserInput {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        self.0.source()
    }
}

/// Marks `e` as the user's input to fix (exit 2); see [`UserInput`].
pub fn user_input(e: impl Error + Send + Sync + 'static) -> anyhow::Error {
    UserInput(Box::new(e)).into()
}

fn fail(exit: Exit, message: String) -> anyhow::Error {
    Fail { exit, message }.into()
}

/// A usage error with exit code 2.
pub fn usage(message: impl Into<String>) -> anyhow::Error {
    fail(Exit::Usage, message.into())
}

/// A run error with exit code 3.
pub fn run_error(message: impl Into<String>) -> anyhow::Error {
    fail(Exit::RunError, message.into())
}

/// An interruption (SIGINT/SIGTERM) before a run started: exit 128+N.
pub fn interrupted(message: impl Into<String>) -> anyhow::Error {
    fail(Exit::interrupted(), message.into())
}

/// A missing-privilege error with exit code 77.
pub fn no_privilege(message: impl Into<String>) -> anyhow::Error {
    fail(Exit::Skipped, message.into())
}

/// The code one error in a chain chooses, if it chooses one: the one
/// table from the libraries' error types to exit codes.
fn exit_of(e: &(dyn Error + 'static)) -> Option<Exit> {
    use runq_workload::RunError;
    if let Some(f) = e.downcast_ref::<Fail>() {
        return Some(f.exit);
    }
    if e.is::<UserInput>()
        || e.is::<runq_common::infile::InputError>()
        || e.is::<runq_results::compare::LoadError>()
        || e.is::<runq_results::compare::CompareError>()
        || e.is::<runq_workload::scenario_file::ScenarioFileError>()
        || e.is::<runq_ctprof::group::GlobError>()
        || e.is::<runq_hud::discovery::DiscoveryError>()
    {
        return Some(Exit::Usage);
    }
    if let Some(e) = e.downcast_ref::<RunError>() {
        return Some(match e {
            RunError::NeedsPrivilege(_) | RunError::HostLacks(_) => Exit::Skipped,
            RunError::Scenario(_) | RunError::Capacity(_) => Exit::Usage,
            RunError::Interrupted(_) => Exit::interrupted(),
            _ => Exit::RunError,
        });
    }
    if let Some(v) = e.downcast_ref::<runq_vm::VmError>() {
        use runq_vm::VmError as V;
        return Some(match v {
            V::Usage(_) => Exit::Usage,
            V::Skipped(_) => Exit::Skipped,
            V::Run(_) => Exit::RunError,
            V::Interrupted(_) => Exit::interrupted(),
        });
    }
    if let Some(f) = e.downcast_ref::<runq_ctprof::format::FormatError>() {
        use runq_ctprof::format::FormatError as F;
        // A file the user named that is not a snapshot is theirs to fix;
        // a write that failed is not.
        return match f {
            F::Io { .. } => None,
            _ => Some(Exit::Usage),
        };
    }
    match e.downcast_ref::<runq_collatz::sweep::SweepError>() {
        // The profiler command is the user's to fix.
        Some(runq_collatz::sweep::SweepError::Profiler { .. }) => return Some(Exit::Usage),
        Some(runq_collatz::sweep::SweepError::Interrupted { .. }) => {
            return Some(Exit::interrupted())
        }
        _ => {}
    }
    match e.downcast_ref::<HudError>()? {
        // Discovery problems are the user's to fix, a tracefs that may
        // not be mounted is a missing privilege.
        HudError::Discovery(_) | HudError::Target(_) => Some(Exit::Usage),
        HudError::Bpf(BpfError::Tracefs(TracefsError::NotPermitted)) => Some(Exit::Skipped),
        _ => None,
    }
}

/// The code the first error in `err`'s chain chooses, or a run error.
fn exit_of_chain(err: &anyhow::Error) -> Exit {
    err.chain().find_map(exit_of).unwrap_or(Exit::RunError)
}

/// Prints `runq: <error>: <cause>...` on one line and returns its exit code:
/// the one the first error in the chain chooses, or [`RUN_ERROR`] (1 is
/// only ever a FAIL).
pub fn report_error(err: &anyhow::Error) -> ExitCode {
    let exit = exit_of_chain(err);
    crate::errln!("runq: {}", error_line(err));
    exit.exit_code()
}

/// The one line [`report_error`] prints for `err`, without `runq: `.
pub fn error_line(err: &anyhow::Error) -> String {
    chain_line(err.chain().map(|e| e.to_string()))
}

/// The exit code [`report_error`] ends with for `err`.
pub fn code_of(err: &anyhow::Error) -> u8 {
    exit_of_chain(err).code()
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

    use runq_workload::RunError;

    fn line(err: &anyhow::Error) -> String {
        chain_line(err.chain().map(|e| e.to_string()))
    }

    #[test]
    fn each_exit_has_its_documented_code() {
        let table = [
            (Exit::CheckFailed, 1),
            (Exit::Usage, 2),
            (Exit::RunError, 3),
            (Exit::Skipped, 77),
            (Exit::Interrupted(libc::SIGINT), 130),
            (Exit::Interrupted(libc::SIGTERM), 143),
        ];
        for (exit, code) in table {
            assert_eq!(exit.code(), code, "{exit:?}");
        }
    }

    #[test]
    fn the_vm_runner_reads_the_same_codes() {
        use runq_vm::codes;
        assert_eq!(codes::CHECK_FAILED, CHECK_FAILED);
        assert_eq!(codes::RUN_ERROR, RUN_ERROR);
        assert_eq!(codes::INDETERMINATE, INDETERMINATE);
        assert_eq!(codes::SKIPPED, NO_PRIVILEGE);
        let skip = anyhow::Error::from(runq_vm::VmError::Skipped("no vng".into()));
        assert_eq!(exit_of_chain(&skip), Exit::Skipped);
        assert_eq!(line(&skip), "skipped: no vng");
        let usage = anyhow::Error::from(runq_vm::VmError::Usage("--topology: x".into()));
        assert_eq!(exit_of_chain(&usage.context("c")), Exit::Usage);
    }

    #[test]
    fn library_errors_choose_their_code_through_context() {
        let cases: [(anyhow::Error, Exit); 7] = [
            (RunError::Capacity("x".into()).into(), Exit::Usage),
            (RunError::NeedsPrivilege("x".into()).into(), Exit::Skipped),
            (RunError::HostLacks("x".into()).into(), Exit::Skipped),
            (RunError::Scheduler("x".into()).into(), Exit::RunError),
            (user_input(std::io::Error::other("x")), Exit::Usage),
            (anyhow::anyhow!("no code of its own"), Exit::RunError),
            (usage("bad flag"), Exit::Usage),
        ];
        for (err, exit) in cases {
            let wrapped = err.context("while doing y");
            assert_eq!(exit_of_chain(&wrapped), exit, "{wrapped:#}");
        }
        let sig = anyhow::Error::from(RunError::Interrupted("x".into()));
        assert!(matches!(exit_of_chain(&sig), Exit::Interrupted(_)));
    }

    #[test]
    fn a_typed_error_prints_as_its_text_did() {
        let e = anyhow::Error::new(RunError::Capacity("20 workers".into()))
            .context("the host cannot hold this run");
        assert_eq!(line(&e), "the host cannot hold this run: 20 workers");
        let e = user_input(std::io::Error::other("a.ctprof.zst: gone"));
        assert_eq!(line(&e), "a.ctprof.zst: gone");
    }

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
