//! The scheduler under test that a run may start (`runq run --scheduler`,
//! or `scheduler` in a scenario file): what to start and how to tell it is
//! ready ([`SchedulerSpec`]; by default, once the kernel reports the BPF
//! scheduler it enabled), the running process ([`SchedulerProc`]) and
//! sched_ext's word on it through the run (`attach`), and how it died or
//! the kernel let it go when that happened ([`SchedulerDeath`]).
//!
//! The command is split into words like a POSIX shell would (quotes and
//! backslashes, no expansion) and executed directly, so the pid runq
//! watches and signals is the scheduler's own; write `sh -c '...'` for
//! shell syntax.

mod attach;
mod output;
mod process;
mod quote;
mod state_dump;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub(crate) use process::{SchedulerProc, StartError};
pub use state_dump::{DumpMoment, StateDump};

/// How long a scheduler may take to become ready unless told otherwise
/// (a BPF scheduler takes 2-3 s to load under TCG, larger ones more).
pub(crate) const DEFAULT_READY_TIMEOUT: Duration = Duration::from_secs(15);
/// How long a scheduler must stay up to count as ready when no readiness
/// signal is named and the kernel has no sched_ext.
pub(crate) const DEFAULT_READY_AFTER: Duration = Duration::from_millis(100);

/// How the status of a scheduler the kernel ejected before it was ready
/// ends.
pub(crate) const BEFORE_START: &str = "before the workers started";

/// The file whose `enabled` marks a loaded sched_ext scheduler.
pub(crate) const SCHED_EXT_STATE: &str = "/sys/kernel/sched_ext/state";

/// When a started scheduler counts as ready for the workers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Readiness {
    /// Once it has stayed up this long.
    #[serde(rename = "after_ns", alias = "after")]
    After(#[serde(with = "runq_common::serde_ns")] Duration),
    /// Once a line of its stdout or stderr matches this regular
    /// expression (Rust schedulers log to stderr).
    Pattern(String),
    /// Once the kernel reports a BPF scheduler it enabled since the start
    /// (`/sys/kernel/sched_ext/state` `enabled`, a new `enable_seq`, a
    /// `root/ops` name); needs a kernel with sched_ext.
    SchedExt,
    /// The default: as [`Readiness::SchedExt`] on a kernel with sched_ext,
    /// once it has stayed up [`DEFAULT_READY_AFTER`] on one without.
    Auto,
}

/// A scheduler command to start before the workers and watch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SchedulerSpec {
    /// The command as written.
    pub command: String,
    /// When it counts as ready.
    pub ready: Readiness,
    /// How long to wait for readiness before the run errors out.
    #[serde(
        rename = "ready_timeout_ns",
        alias = "ready_timeout",
        with = "runq_common::serde_ns"
    )]
    pub ready_timeout: Duration,
    /// The watchdog's stall bound: a worker runnable and not run for
    /// longer sends SIGUSR2 to the scheduler (2 s by default).
    #[serde(
        rename = "watchdog_ns",
        default = "default_watchdog",
        with = "runq_common::serde_ns"
    )]
    pub watchdog: Duration,
}

/// The watchdog's default stall bound, as in ktstr.
pub(crate) const DEFAULT_WATCHDOG: Duration = Duration::from_secs(2);

fn default_watchdog() -> Duration {
    DEFAULT_WATCHDOG
}

impl SchedulerSpec {
    /// `command`, ready by [`Readiness::Auto`], with the default timeout.
    pub fn new(command: &str) -> Self {
        SchedulerSpec {
            command: command.to_string(),
            ready: Readiness::Auto,
            ready_timeout: DEFAULT_READY_TIMEOUT,
            watchdog: DEFAULT_WATCHDOG,
        }
    }

    /// The command's words (program first); errors name what is wrong.
    pub(crate) fn argv(&self) -> Result<Vec<String>, String> {
        let words = shlex::split(&self.command).ok_or_else(|| {
            format!(
                "scheduler command {:?}: unbalanced quotes or a trailing backslash",
                self.command
            )
        })?;
        if words.is_empty() {
            return Err("the scheduler command is empty (e.g. --scheduler 'scx_rusty')".into());
        }
        Ok(words)
    }

    /// Checks the command alone: it splits into words and names a program
    /// that exists (what a matrix checks on the host before its VMs run
    /// it; readiness is the guest kernel's).
    pub fn validate_command(&self) -> Result<(), String> {
        let argv = self.argv()?;
        resolve_program(&argv[0])
            .map_err(|why| format!("scheduler command {:?}: {why}", self.command))?;
        Ok(())
    }

    /// Checks the command splits, its program exists and is executable,
    /// the pattern compiles and the timeout is not zero.
    pub fn validate(&self) -> Result<(), String> {
        self.validate_command()?;
        if let Readiness::Pattern(p) = &self.ready {
            regex::Regex::new(p)
                .map_err(|e| format!("scheduler ready pattern {p:?}: {}", one_line(&e)))?;
        }
        if self.ready == Readiness::SchedExt && !Path::new(SCHED_EXT_STATE).exists() {
            return Err(format!(
                "readiness by sched_ext state: this kernel has no sched_ext ({SCHED_EXT_STATE} \
                 is missing); wait for an output pattern or a delay instead"
            ));
        }
        if self.ready_timeout.is_zero() {
            return Err("the scheduler ready timeout must be greater than zero".into());
        }
        Ok(())
    }
}

/// The regex crate's multi-line messages on one line.
fn one_line(e: &regex::Error) -> String {
    let text = e.to_string();
    text.lines()
        .find_map(|l| l.trim().strip_prefix("error: "))
        .map_or_else(|| text.replace('\n', " "), str::to_string)
}

/// The executable `program` names: a path as given, or a name looked up
/// in `$PATH` as a shell would.
pub(crate) fn resolve_program(program: &str) -> Result<PathBuf, String> {
    if program.contains('/') {
        let p = PathBuf::from(program);
        return if is_executable(&p) {
            Ok(p)
        } else {
            Err(format!("{program} does not exist or is not executable"))
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|p| is_executable(p))
        .ok_or_else(|| format!("{program} not found in PATH (give its path, or install it)"))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The scheduler under test in one run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SchedulerRun {
    /// The command that was started.
    pub command: String,
    /// Its pid (the watchdog's target).
    pub pid: u32,
    /// From its start until it was ready, ms.
    pub ready_ms: u64,
    /// How it ended: stopped after the run (`exited with status 0 after
    /// runq sent SIGINT`), or died or was let go by sched_ext during it.
    pub stopped: String,
    /// The BPF scheduler sched_ext ran once it was ready (`root/ops`:
    /// `qmap`, `simple`), when one was loaded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sched_ext_ops: Option<String>,
    /// sched_ext's state once it was ready (`enabled`), on a kernel with
    /// sched_ext.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sched_ext_state: Option<String>,
    /// Its state when it failed, and when a stall was building.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub state_dumps: Vec<StateDump>,
}

/// How the watched scheduler died during the run, or sched_ext stopped
/// running it (the kernel ejected it, or it unregistered) whether its
/// process lived on or not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SchedulerDeath {
    /// The command that was started.
    pub command: String,
    /// When it died, ms from the start of the run (0 when
    /// `before_start`).
    pub at_ms: u64,
    /// Exit status or signal, as text (`exited with status 1`,
    /// `killed by signal 12 (SIGUSR2)`; `was still running, stopped
    /// (state T), when sched_ext let it go (sched_ext state "disabled")`
    /// when its process lived on), ending `before the workers started`
    /// when it ended before it was ready.
    pub status: String,
    /// Its exit code, when it exited.
    pub exit_code: Option<i32>,
    /// The signal that killed it, when one did.
    pub signal: Option<i32>,
    /// At most [`output::EXCERPT_LINES`] lines of its stderr: lines mentioning
    /// "error" first, then its last lines.
    pub stderr: Vec<String>,
    /// Lines it wrote to stderr in all.
    pub stderr_lines: u64,
    /// Kernel log lines about sched_ext logged during the run.
    pub kernel_log: Vec<String>,
    /// The BPF scheduler's end as the kernel logged it (why sched_ext
    /// disabled it), whatever the process's own exit status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sched_ext_exit: Option<runq_kernel::sched_ext_log::ScxExit>,
}

impl SchedulerDeath {
    /// One line: command, status and time, and first why the kernel
    /// disabled it when it logged that.
    pub fn summary(&self) -> String {
        let own = format!("{:?} {} at {} ms", self.command, self.status, self.at_ms);
        match &self.sched_ext_exit {
            Some(e) => format!("{}; then the scheduler {own}", e.describe()),
            None => own,
        }
    }

    /// It ended before the workers started (the kernel ejected it as it
    /// started).
    pub fn before_start(&self) -> bool {
        self.status.ends_with(BEFORE_START)
    }

    /// Its process was still running when sched_ext let it go (it has
    /// neither an exit code nor a signal).
    pub fn still_running(&self) -> bool {
        self.exit_code.is_none() && self.signal.is_none()
    }
}

/// A wait status in words: `exited with status N` or
/// `killed by signal N (SIGNAME)`.
pub(crate) fn describe_status(code: Option<i32>, signal: Option<i32>) -> String {
    match (code, signal) {
        (Some(c), _) => format!("exited with status {c}"),
        (_, Some(s)) => match crate::report::signal_name(s) {
            Some(name) => format!("killed by signal {s} ({name})"),
            None => format!("killed by signal {s}"),
        },
        _ => "ended (status unknown)".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_split_like_a_shell() {
        let s = SchedulerSpec::new("sh -c 'sleep 0.1; echo \"ready\"' x\\ y");
        assert_eq!(
            s.argv().unwrap(),
            ["sh", "-c", "sleep 0.1; echo \"ready\"", "x y"]
        );
        assert!(SchedulerSpec::new("  ")
            .argv()
            .unwrap_err()
            .contains("empty"));
        assert!(SchedulerSpec::new("sh -c 'x")
            .argv()
            .unwrap_err()
            .contains("unbalanced"));
    }

    #[test]
    fn validation_names_the_problem() {
        assert!(SchedulerSpec::new("sleep 1").validate().is_ok());
        let e = SchedulerSpec::new("runq-no-such-scheduler --x")
            .validate()
            .unwrap_err();
        assert!(
            e.contains("runq-no-such-scheduler not found in PATH"),
            "{e}"
        );
        let e = SchedulerSpec::new("/nonexistent/scx")
            .validate()
            .unwrap_err();
        assert!(e.contains("does not exist"), "{e}");
        let mut s = SchedulerSpec::new("sleep 1");
        s.ready = Readiness::Pattern("(".into());
        let e = s.validate().unwrap_err();
        assert_eq!(e, "scheduler ready pattern \"(\": unclosed group");
        s.ready = Readiness::SchedExt;
        if !Path::new(SCHED_EXT_STATE).exists() {
            assert!(s.validate().unwrap_err().contains("no sched_ext"));
        }
        s.ready = Readiness::Pattern("ready".into());
        s.ready_timeout = Duration::ZERO;
        assert!(s.validate().unwrap_err().contains("timeout"));
    }

    #[test]
    fn a_death_says_whether_its_process_lived_and_whether_workers_ran() {
        let ejected = SchedulerDeath {
            command: "scx_qmap -t 5".into(),
            at_ms: 0,
            status: format!("exited with status 0 {BEFORE_START}"),
            exit_code: Some(0),
            signal: None,
            stderr: Vec::new(),
            stderr_lines: 0,
            kernel_log: Vec::new(),
            sched_ext_exit: None,
        };
        assert!(ejected.before_start() && !ejected.still_running());
        let lives = SchedulerDeath {
            status: "was still running when sched_ext let it go (sched_ext state \"disabled\")"
                .into(),
            exit_code: None,
            at_ms: 5069,
            ..ejected.clone()
        };
        assert!(lives.still_running() && !lives.before_start());
        assert_eq!(
            lives.summary(),
            "\"scx_qmap -t 5\" was still running when sched_ext let it go (sched_ext state \
             \"disabled\") at 5069 ms"
        );
    }

    #[test]
    fn statuses_read_well() {
        assert_eq!(describe_status(Some(1), None), "exited with status 1");
        assert_eq!(
            describe_status(None, Some(libc::SIGUSR2)),
            "killed by signal 12 (SIGUSR2)"
        );
        assert_eq!(describe_status(None, Some(40)), "killed by signal 40");
    }
}
