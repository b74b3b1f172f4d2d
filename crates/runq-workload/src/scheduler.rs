//! The scheduler process a scenario may name: started before the workers,
//! watched during the run, and stopped after it. Its death fails the run
//! and is reported with any sched_ext lines the kernel logged.

use std::io;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use runq_kernel::kmsg::KmsgCursor;
use serde::Serialize;

/// How the watched scheduler died.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SchedulerDeath {
    /// The command that was started.
    pub command: String,
    /// When it died, ms from the start of the run.
    pub at_ms: u64,
    /// Exit status or signal, as text.
    pub status: String,
    /// Kernel log lines about sched_ext logged during the run.
    pub kernel_log: Vec<String>,
}

/// A running scheduler process.
#[derive(Debug)]
pub struct SchedulerProc {
    child: Option<Child>,
    command: String,
    kmsg: Option<KmsgCursor>,
}

fn describe(status: std::process::ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(c), _) => format!("exited with status {c}"),
        (_, Some(s)) => format!("killed by signal {s}"),
        _ => status.to_string(),
    }
}

impl SchedulerProc {
    /// Starts `command` through `sh -c 'exec ...'` in its own process group
    /// (so Ctrl-C reaches runq, not it) and checks it survives 100 ms.
    pub fn start(command: &str) -> io::Result<Self> {
        let kmsg = KmsgCursor::open_at_end().ok();
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(format!("exec {command}"))
            .stdin(Stdio::null())
            .process_group(0);
        // SAFETY: prctl is async-signal-safe.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong);
                Ok(())
            });
        }
        let mut child = cmd.spawn()?;
        std::thread::sleep(Duration::from_millis(100));
        if let Some(status) = child.try_wait()? {
            return Err(io::Error::other(format!(
                "scheduler command {command:?} {} at once",
                describe(status)
            )));
        }
        Ok(SchedulerProc {
            child: Some(child),
            command: command.to_string(),
            kmsg,
        })
    }

    /// The scheduler's pid (the watchdog's target).
    pub fn pid(&self) -> i32 {
        self.child.as_ref().map_or(0, |c| c.id() as i32)
    }

    /// `Some` once the scheduler has died (reported once).
    pub fn check_death(&mut self, run_start: Instant) -> Option<SchedulerDeath> {
        let status = self.child.as_mut()?.try_wait().ok()??;
        self.child = None;
        let kernel_log = self
            .kmsg
            .as_mut()
            .map(|k| {
                k.read_new()
                    .into_iter()
                    .filter(|l| l.contains("sched_ext") || l.contains("scx"))
                    .collect()
            })
            .unwrap_or_default();
        Some(SchedulerDeath {
            command: self.command.clone(),
            at_ms: run_start.elapsed().as_millis() as u64,
            status: describe(status),
            kernel_log,
        })
    }

    /// Stops a still-running scheduler: SIGTERM, then SIGKILL after 1 s.
    pub fn shutdown(mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(1);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = child.kill();
        let _ = child.wait();
    }
}

impl Drop for SchedulerProc {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn death_is_seen_and_reported() {
        let mut s = SchedulerProc::start("sleep 30").unwrap();
        let t0 = Instant::now();
        assert!(s.check_death(t0).is_none());
        // SAFETY: signalling our own child.
        unsafe { libc::kill(s.pid(), libc::SIGUSR2) };
        let death = loop {
            if let Some(d) = s.check_death(t0) {
                break d;
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        assert_eq!(death.status, format!("killed by signal {}", libc::SIGUSR2));
        assert_eq!(death.command, "sleep 30");
    }

    #[test]
    fn a_command_that_fails_at_once_is_an_error() {
        let err = SchedulerProc::start("false").unwrap_err();
        assert!(err.to_string().contains("exited with status 1"), "{err}");
    }
}
