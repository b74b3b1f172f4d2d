//! The running scheduler: started in its own process group (so a Ctrl-C
//! meant for runq does not reach it, and runq can signal everything it
//! started at once), with `PR_SET_PDEATHSIG` so it dies with runq, waited
//! on until ready (by default, until the kernel reports the BPF scheduler
//! it enabled, see [`super::attach`]), watched during the run (its process
//! and sched_ext's state), and stopped after it: SIGINT to the group,
//! SIGTERM after 2 s, SIGKILL after 1 s more. Dropping a
//! [`SchedulerProc`] kills and reaps the group at once.

use std::io;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use runq_kernel::sched_ext_log::parse_uei_exit;

use super::attach::{ready_now, start_end, ScxWatch, Seen};
use super::output::{quote_streams, watch, Watched};
use super::state_dump::{DumpMoment, StateDumper};
use super::{describe_status, Readiness, SchedulerDeath, SchedulerRun, SchedulerSpec};

/// How long a scheduler gets to exit after SIGINT, then after SIGTERM.
const STOP_GRACE: [(libc::c_int, Duration); 2] = [
    (libc::SIGINT, Duration::from_secs(2)),
    (libc::SIGTERM, Duration::from_secs(1)),
];
const POLL: Duration = Duration::from_millis(10);
/// How long a scheduler sched_ext let go gets to exit on its own (scx's
/// user-space loops look at their exit flag once a second).
const EXIT_GRACE: Duration = Duration::from_millis(1500);

/// Why a scheduler could not be started or never became ready.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum StartError {
    /// The spec is unusable (empty command, unknown program, bad pattern).
    #[error("{0}")]
    Invalid(String),
    /// It could not be started, exited early, or was not ready in time.
    #[error("{0}")]
    Failed(String),
    /// SIGINT/SIGTERM arrived while waiting for it.
    #[error("{0}")]
    Interrupted(String),
}

/// A started scheduler process (the leader of its own process group).
#[derive(Debug)]
pub(crate) struct SchedulerProc {
    child: Option<Child>,
    command: String,
    stdout: Watched,
    stderr: Watched,
    /// sched_ext's word on it, from before its start.
    scx: ScxWatch,
    /// A departure from sched_ext that the kernel called an error before
    /// the scheduler was ready: the run's first death check reports it.
    start_death: Option<SchedulerDeath>,
    /// Its death was reported (once).
    reported: bool,
    /// Start to ready, ms.
    ready_ms: u64,
    /// The BPF scheduler sched_ext ran once this one was ready (its
    /// `root/ops` name and the state then), when the kernel has sched_ext.
    sched_ext_at_ready: Option<(Option<String>, String)>,
    /// When the spawn began: readiness and its delay count from here.
    spawned_at: Instant,
    /// The pid, kept after the process is reaped.
    pid: u32,
    /// Its state at the moment it fails (and when a stall builds).
    dumper: StateDumper,
}

/// Runs in the forked child before exec.
fn child_setup(parent: u32) -> io::Result<()> {
    // SAFETY: prctl, getppid and signal are async-signal-safe.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong);
        if libc::getppid() != parent as libc::pid_t {
            return Err(io::Error::other("runq exited before the scheduler started"));
        }
        // Dispositions runq's own parent may have set to ignore.
        for sig in [
            libc::SIGINT,
            libc::SIGTERM,
            libc::SIGHUP,
            libc::SIGQUIT,
            libc::SIGUSR2,
        ] {
            libc::signal(sig, libc::SIG_DFL);
        }
    }
    Ok(())
}

impl SchedulerProc {
    /// Starts the scheduler and waits until it is ready. Any failure kills
    /// and reaps what was started before returning.
    pub fn start(spec: &SchedulerSpec, interrupt: &AtomicBool) -> Result<Self, StartError> {
        spec.validate().map_err(StartError::Invalid)?;
        let mut proc = Self::spawn(spec)?;
        proc.wait_ready(spec, interrupt)?;
        Ok(proc)
    }

    fn spawn(spec: &SchedulerSpec) -> Result<Self, StartError> {
        let argv = spec.argv().map_err(StartError::Invalid)?;
        let pattern = match &spec.ready {
            Readiness::Pattern(p) => {
                Some(regex::Regex::new(p).map_err(|e| StartError::Invalid(e.to_string()))?)
            }
            _ => None,
        };
        let scx = ScxWatch::start();
        let dumper = StateDumper::start(scx.kernel_has_it(), spec.watchdog);
        let mut cmd = Command::new(&argv[0]);
        cmd.args(&argv[1..])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        let parent = std::process::id();
        // SAFETY: child_setup only makes async-signal-safe calls.
        unsafe { cmd.pre_exec(move || child_setup(parent)) };
        let failed = |e: io::Error| {
            StartError::Failed(format!("cannot start scheduler {:?}: {e}", spec.command))
        };
        // Readiness counts from before the spawn: the child may print its
        // first lines before spawn() returns to a busy parent.
        let spawned_at = Instant::now();
        let mut child = cmd.spawn().map_err(failed)?;
        let pid = child.id();
        let (out, err) = (child.stdout.take(), child.stderr.take());
        let mut proc = SchedulerProc {
            child: Some(child),
            command: spec.command.clone(),
            stdout: Watched::default(),
            stderr: Watched::default(),
            scx,
            start_death: None,
            reported: false,
            ready_ms: 0,
            sched_ext_at_ready: None,
            spawned_at,
            pid,
            dumper,
        };
        let matched = proc.stdout.matched.clone();
        if let Some(out) = out {
            let p = pattern.clone();
            proc.stdout = watch(out, "runq-sched-out", p, matched.clone()).map_err(failed)?;
        }
        if let Some(err) = err {
            proc.stderr = watch(err, "runq-sched-err", pattern, matched).map_err(failed)?;
        }
        Ok(proc)
    }

    /// Polls until `spec.ready` holds, the scheduler exits or sched_ext
    /// lets it go, runq is interrupted, or the ready timeout passes.
    fn wait_ready(
        &mut self,
        spec: &SchedulerSpec,
        interrupt: &AtomicBool,
    ) -> Result<(), StartError> {
        let t0 = self.spawned_at;
        let timeout = match spec.ready {
            Readiness::After(d) => spec.ready_timeout.max(d),
            _ => spec.ready_timeout,
        };
        loop {
            let seen = self.scx.poll();
            if let Seen::Left(how) = seen {
                return self.ended_at_start(Some(how));
            }
            if self.has_exited() {
                return self.ended_at_start(None);
            }
            let matched = self.stdout.matched.load(Ordering::Relaxed);
            let has_scx = self.scx.kernel_has_it();
            if ready_now(&spec.ready, has_scx, t0.elapsed(), &seen, matched) {
                self.ready_ms = t0.elapsed().as_millis() as u64;
                self.sched_ext_at_ready = sched_ext().map(|s| (s.ops, s.state));
                self.dumper.hold_maps(self.pid);
                return Ok(());
            }
            if interrupt.load(Ordering::Relaxed) {
                return Err(StartError::Interrupted(format!(
                    "interrupted while waiting for scheduler {:?} to be ready",
                    self.command
                )));
            }
            if t0.elapsed() >= timeout {
                return Err(StartError::Failed(self.timeout_message(spec)));
            }
            std::thread::sleep(POLL);
        }
    }

    /// The scheduler exited, or sched_ext let it go (`left`), before it
    /// was ready. An ejection (the kernel's error exit of the scheduler it
    /// enabled) is the run's FAIL, reported by its first death check;
    /// anything else is a start error quoting the kernel and both streams.
    fn ended_at_start(&mut self, left: Option<String>) -> Result<(), StartError> {
        let enabled = self.scx.was_enabled();
        if enabled {
            self.dumper.hold_maps(self.pid);
            self.dumper.at_end(DumpMoment::from_left(left.is_some()), 0);
        }
        let mut death = self.death_record(0, left.clone());
        let Err(kernel) = start_end(death.sched_ext_exit.as_ref(), left.as_deref(), enabled) else {
            self.ready_ms = self.spawned_at.elapsed().as_millis() as u64;
            death.status = format!("{} {}", death.status, super::BEFORE_START);
            self.start_death = Some(death);
            return Ok(());
        };
        Err(StartError::Failed(format!(
            "scheduler {:?} {} before it was ready{kernel}{}",
            self.command,
            death.status,
            self.streams_quote()
        )))
    }

    fn timeout_message(&self, spec: &SchedulerSpec) -> String {
        let mut advice = "fix the readiness signal or raise the ready timeout";
        let why = match &spec.ready {
            Readiness::Pattern(p) => {
                let (out, err) = (self.stdout.snapshot(), self.stderr.snapshot());
                let last = out
                    .last()
                    .map(|l| format!(", last {l:?}"))
                    .unwrap_or_default();
                format!(
                    "no line of its stdout ({} lines{last}) or stderr ({} lines) matched /{p}/",
                    out.total(),
                    err.total()
                )
            }
            Readiness::SchedExt | Readiness::Auto => {
                let now = sched_ext().unwrap_or_default();
                advice = "for a scheduler that is no BPF scheduler, name its readiness \
                          (--scheduler-ready-after, --scheduler-ready-pattern); else raise the \
                          ready timeout";
                format!(
                    "it never attached: sched_ext enabled no new BPF scheduler (state {:?}, \
                     enable_seq {})",
                    now.state, now.enable_seq
                )
            }
            Readiness::After(_) => "it did not stay up".into(),
        };
        format!(
            "scheduler {:?} was not ready after {:?}: {why}{}; {advice} \
             (--scheduler-ready-timeout)",
            self.command,
            spec.ready_timeout,
            self.streams_quote()
        )
    }

    /// What a start error quotes of both streams (see [`quote_streams`]).
    fn streams_quote(&self) -> String {
        self.stderr.wait_done(Duration::from_millis(200));
        self.stdout.wait_done(Duration::from_millis(200));
        quote_streams(&self.stdout.snapshot(), &self.stderr.snapshot())
    }

    /// Whether the kernel ejected it before it was ready (the run's first
    /// death check reports it).
    pub fn ejected_at_start(&self) -> bool {
        self.start_death.is_some()
    }

    /// The scheduler's pid (the watchdog's target).
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// True once the scheduler process has exited (it is not reaped yet).
    fn has_exited(&self) -> bool {
        let Some(child) = &self.child else {
            return true;
        };
        // SAFETY: an all-zero siginfo_t is valid; waitid writes into it.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let flags = libc::WEXITED | libc::WNOHANG | libc::WNOWAIT;
        // SAFETY: waitid on our own child with a valid out pointer.
        let rc = unsafe { libc::waitid(libc::P_PID, child.id(), &mut info, flags) };
        // SAFETY: si_pid is valid for a SIGCHLD siginfo (zero when none).
        rc != 0 || unsafe { info.si_pid() } != 0
    }

    /// When the scheduler has exited: kills what is left of its process
    /// group, reaps it, and returns its status.
    fn reap_if_exited(&mut self) -> Option<ExitStatus> {
        if self.child.is_none() || !self.has_exited() {
            return None;
        }
        self.reap()
    }

    /// SIGKILLs the whole group (the leader's pid stays reserved until it
    /// is reaped), then reaps the leader.
    fn reap(&mut self) -> Option<ExitStatus> {
        let mut child = self.child.take()?;
        // SAFETY: signalling the process group we created.
        unsafe { libc::killpg(child.id() as libc::pid_t, libc::SIGKILL) };
        child.wait().ok()
    }

    /// `Some` once the scheduler has died or sched_ext stopped running it
    /// (reported once): how, what it said, and the kernel's words.
    pub(crate) fn check_death(&mut self, run_start: Instant) -> Option<SchedulerDeath> {
        if let Some(d) = self.start_death.take() {
            self.reported = true;
            return Some(d);
        }
        if self.reported {
            return None;
        }
        let at_ms = run_start.elapsed().as_millis() as u64;
        self.dumper.poll(at_ms);
        let left = match self.scx.poll_now_and_then() {
            Seen::Left(how) => Some(how),
            _ => None,
        };
        if left.is_none() && (self.child.is_none() || !self.has_exited()) {
            return None;
        }
        self.reported = true;
        self.dumper
            .at_end(DumpMoment::from_left(left.is_some()), at_ms);
        Some(self.death_record(at_ms, left))
    }

    /// The record of the scheduler's end: its process's status (reaped
    /// if it exited, given [`EXIT_GRACE`] when sched_ext let it go), its
    /// streams and the kernel's account.
    fn death_record(&mut self, at_ms: u64, left: Option<String>) -> SchedulerDeath {
        let end = Instant::now() + EXIT_GRACE;
        while left.is_some() && !self.has_exited() && Instant::now() < end {
            std::thread::sleep(POLL);
        }
        let status = self.reap_if_exited();
        if status.is_some() {
            self.stderr.wait_done(Duration::from_millis(300));
            self.stdout.wait_done(Duration::from_millis(300));
        }
        let (kernel_log, mut sched_ext_exit) = self.scx.kernel_exit();
        let err = self.stderr.snapshot();
        // Without the kernel's log: the exit info it handed the scheduler.
        if let (None, Some(ops)) = (&sched_ext_exit, self.scx.ops()) {
            let lines = err.excerpt();
            sched_ext_exit = lines.iter().find_map(|l| parse_uei_exit(ops, l));
        }
        let mut words = status.map_or_else(|| still_running(self.pid), describe);
        if let (Some(how), None) = (&left, status) {
            words = format!("{words} when sched_ext let it go ({how})");
        }
        SchedulerDeath {
            command: self.command.clone(),
            at_ms,
            status: words,
            exit_code: status.and_then(|s| s.code()),
            signal: status.and_then(|s| s.signal()),
            stderr: err.excerpt(),
            stderr_lines: err.total(),
            kernel_log,
            sched_ext_exit,
        }
    }

    /// Stops a still-running scheduler: SIGINT to its group, SIGTERM after
    /// 2 s, SIGKILL after 1 s more; reaps it and says how it ended, e.g.
    /// `exited with status 0 after runq sent SIGINT`.
    pub(crate) fn shutdown(mut self) -> String {
        let Some(pgid) = self.child.as_ref().map(|c| c.id() as libc::pid_t) else {
            return "had already exited".into();
        };
        // A stopped scheduler (SIGSTOP) would hold every signal pending.
        // SAFETY: signalling the process group we created.
        unsafe { libc::killpg(pgid, libc::SIGCONT) };
        let mut sent = Vec::new();
        for (sig, grace) in STOP_GRACE {
            if self.has_exited() {
                break;
            }
            // SAFETY: signalling the process group we created.
            unsafe { libc::killpg(pgid, sig) };
            sent.push(crate::report::signal_name(sig).unwrap_or("?"));
            let end = Instant::now() + grace;
            while !self.has_exited() && Instant::now() < end {
                std::thread::sleep(POLL);
            }
        }
        if !self.has_exited() {
            sent.push("SIGKILL");
        }
        let how = self.reap().map_or_else(|| "ended".into(), describe);
        match sent.is_empty() {
            true => how,
            false => format!("{how} after runq sent {}", sent.join(", ")),
        }
    }

    /// The process, the command and how long it took to become ready.
    pub(crate) fn run_info(&self) -> SchedulerRun {
        let (sched_ext_ops, sched_ext_state) = self.sched_ext_at_ready.clone().unzip();
        SchedulerRun {
            command: self.command.clone(),
            pid: self.pid(),
            ready_ms: self.ready_ms,
            stopped: String::new(),
            sched_ext_ops: self
                .scx
                .ops()
                .map(str::to_string)
                .or(sched_ext_ops.flatten()),
            sched_ext_state,
            state_dumps: self.dumper.dumps(),
        }
    }
}

impl Drop for SchedulerProc {
    fn drop(&mut self) {
        self.reap();
    }
}

fn describe(status: ExitStatus) -> String {
    describe_status(status.code(), status.signal())
}

/// The status of a process sched_ext let go while it lived:
/// `was still running`, or `was still running, stopped (state T)` when
/// something stopped it (SIGSTOP, a debugger).
fn still_running(pid: u32) -> String {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    match stat
        .rsplit_once(") ")
        .and_then(|(_, rest)| rest.chars().next())
    {
        Some(s @ ('T' | 't')) => format!("was still running, stopped (state {s}),"),
        _ => "was still running".into(),
    }
}

/// The kernel's sched_ext state, when it has sched_ext.
fn sched_ext() -> Option<runq_kernel::sched_ext::SchedExtSysfs> {
    runq_kernel::sched_ext::read_sched_ext(std::path::Path::new("/sys"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(cmd: &str, ready: Readiness) -> SchedulerSpec {
        SchedulerSpec {
            ready,
            ready_timeout: Duration::from_secs(5),
            ..SchedulerSpec::new(cmd)
        }
    }

    /// True when `pid` is gone or a zombie (within 1 s: SIGKILL is
    /// delivered asynchronously).
    fn gone(pid: u32) -> bool {
        let end = Instant::now() + Duration::from_secs(1);
        loop {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let state = stat
                .rsplit_once(") ")
                .map(|(_, rest)| rest.starts_with('Z'));
            if state != Some(false) {
                return true;
            }
            if Instant::now() > end {
                return false;
            }
            std::thread::sleep(POLL);
        }
    }

    #[test]
    fn death_is_seen_and_reported() {
        let no = AtomicBool::new(false);
        let mut s = SchedulerProc::start(&spec("sleep 30", Readiness::After(POLL)), &no).unwrap();
        let t0 = Instant::now();
        assert!(s.check_death(t0).is_none());
        // SAFETY: signalling our own child.
        unsafe { libc::kill(s.pid() as libc::pid_t, libc::SIGUSR2) };
        let death = loop {
            if let Some(d) = s.check_death(t0) {
                break d;
            }
            std::thread::sleep(POLL);
        };
        assert_eq!(death.status, "killed by signal 12 (SIGUSR2)");
        assert_eq!(death.signal, Some(libc::SIGUSR2));
        assert_eq!(death.command, "sleep 30");
        assert!(s.check_death(t0).is_none(), "reported once");
    }

    #[test]
    fn a_pattern_on_stdout_makes_it_ready_and_sigint_stops_it() {
        let no = AtomicBool::new(false);
        let cmd = "sh -c 'echo starting; sleep 0.1; echo READY now; exec sleep 30'";
        let s = SchedulerProc::start(&spec(cmd, Readiness::Pattern("^READY".into())), &no).unwrap();
        assert!(s.stdout.snapshot().total() >= 2);
        let pid = s.pid();
        assert!(std::path::Path::new(&format!("/proc/{pid}")).exists());
        assert!(s.run_info().ready_ms >= 100);
        assert_eq!(
            s.shutdown(),
            "killed by signal 2 (SIGINT) after runq sent SIGINT"
        );
        assert!(gone(pid));
    }

    #[test]
    fn its_children_go_with_it_and_an_ignored_sigint_gets_sigterm() {
        let no = AtomicBool::new(false);
        // A background child (which ignores SIGINT, as a non-interactive
        // shell's background jobs do) and a leader that ignores SIGINT.
        let cmd = "sh -c 'trap \"\" INT; sleep 1000 & echo $!; echo ready; wait'";
        let s = SchedulerProc::start(&spec(cmd, Readiness::Pattern("^ready".into())), &no).unwrap();
        let out = s.stdout.snapshot();
        let child: u32 = out.excerpt()[0].parse().unwrap();
        let (pid, t0) = (s.pid(), Instant::now());
        assert!(std::path::Path::new(&format!("/proc/{child}")).exists());
        let how = s.shutdown();
        assert!(how.ends_with("after runq sent SIGINT, SIGTERM"), "{how}");
        assert!(t0.elapsed() >= Duration::from_secs(2));
        assert!(gone(pid) && gone(child), "{pid} or {child} survived");
    }

    #[test]
    fn a_pattern_may_match_stderr_where_rust_schedulers_log() {
        let no = AtomicBool::new(false);
        let cmd = "sh -c 'echo \"INFO scx_x: scheduler started\" >&2; exec sleep 30'";
        let s = SchedulerProc::start(&spec(cmd, Readiness::Pattern("started$".into())), &no);
        assert!(s.is_ok(), "{:?}", s.err());
    }

    #[test]
    fn an_early_exit_quotes_stderr() {
        let no = AtomicBool::new(false);
        let cmd = "sh -c 'echo loading >&2; echo \"Error: no BPF\" >&2; exit 4'";
        let err =
            SchedulerProc::start(&spec(cmd, Readiness::Pattern("x".into())), &no).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("exited with status 4 before it was ready"),
            "{text}"
        );
        assert!(text.ends_with("; stderr: Error: no BPF"), "{text}");
    }

    #[test]
    fn a_failed_start_quotes_the_verifier_on_stdout_and_the_error_on_stderr() {
        let no = AtomicBool::new(false);
        let cmd = "sh -c 'echo \"libbpf: prog '\\''x_enqueue'\\'': -- BEGIN PROG LOAD LOG --\"; \
                   echo \"R2 invalid mem access\"; echo \"processed 9 insns\"; \
                   echo \"-- END PROG LOAD LOG --\"; echo \"Error: Failed to load BPF program\" >&2; \
                   echo \"Stack backtrace:\" >&2; echo \"  0: anyhow::error\" >&2; exit 1'";
        let err = SchedulerProc::start(&spec(cmd, Readiness::Auto), &no).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "scheduler {cmd:?} exited with status 1 before it was ready; the verifier \
                 rejected prog 'x_enqueue': R2 invalid mem access; stderr: Error: Failed to \
                 load BPF program"
            )
        );
    }

    #[test]
    fn by_default_a_kernel_without_sched_ext_waits_100_ms() {
        if std::path::Path::new(crate::scheduler::SCHED_EXT_STATE).exists() {
            return;
        }
        let no = AtomicBool::new(false);
        let s = SchedulerProc::start(&spec("sleep 30", Readiness::Auto), &no).unwrap();
        assert!(s.run_info().ready_ms >= 100, "{:?}", s.run_info());
        assert_eq!(s.run_info().sched_ext_ops, None);
    }

    #[test]
    fn an_interrupt_ends_the_wait() {
        let yes = AtomicBool::new(true);
        let err = SchedulerProc::start(&spec("sleep 30", Readiness::Pattern("x".into())), &yes)
            .unwrap_err();
        assert!(matches!(err, StartError::Interrupted(_)), "{err}");
    }
}
