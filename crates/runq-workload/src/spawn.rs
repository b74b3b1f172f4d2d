//! Forking workers: two-phase start, the stop protocol and RAII cleanup.
//!
//! The parent forks every worker first; each child arms
//! `PR_SET_PDEATHSIG`, installs its SIGUSR1 handler and blocks on its start
//! pipe. The caller then places the pids in cgroups and calls
//! [`WorkloadHandle::start`], which writes one byte down every start pipe,
//! so each worker runs its first work-loop instruction in its cgroup.
//! [`WorkloadHandle::stop_and_collect`] sends SIGUSR1, reads every report
//! and reaps every child under one deadline; dropping the handle SIGKILLs
//! and reaps whatever is left.

use std::io::{self, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

use crate::fd::pipe;
use crate::report::{WorkerExitInfo, WorkerReport};
use crate::stop::{install_handler, install_stop_handler, stop_requested};
use crate::telemetry::Telemetry;
use crate::worktype::{PreparedWork, WorkType};

/// What to fork for one group.
#[derive(Debug, Clone)]
pub struct WorkSpec {
    /// Index reported in each worker's `group_idx`.
    pub group_idx: usize,
    /// The work each worker does.
    pub work: WorkType,
    /// How many workers.
    pub workers: usize,
}

/// One forked worker, seen from the parent.
#[derive(Debug)]
struct WorkerProc {
    pid: i32,
    group_idx: usize,
    start_tx: Option<OwnedFd>,
    report_rx: Option<OwnedFd>,
    report: Vec<u8>,
    status: Option<Result<i32, String>>,
}

/// The live workers of a run. Dropping it kills and reaps them all.
#[derive(Debug, Default)]
pub struct WorkloadHandle {
    workers: Vec<WorkerProc>,
}

impl WorkloadHandle {
    /// Forks every worker of every group; they wait for [`Self::start`].
    pub fn spawn(specs: &[WorkSpec]) -> io::Result<Self> {
        let mut handle = WorkloadHandle::default();
        // SAFETY: getpid has no preconditions.
        let parent = unsafe { libc::getpid() };
        for spec in specs {
            let mut prepared = spec.work.prepare(spec.workers)?;
            for idx in 0..spec.workers {
                handle.fork_one(spec, prepared.as_mut(), idx, parent)?;
            }
            prepared.release_parent_copies();
        }
        Ok(handle)
    }

    fn fork_one(
        &mut self,
        spec: &WorkSpec,
        prepared: &mut dyn PreparedWork,
        idx: usize,
        parent: i32,
    ) -> io::Result<()> {
        let (start_rx, start_tx) = pipe()?;
        let (report_rx, report_tx) = pipe()?;
        // SAFETY: the child only runs worker code and always ends in _exit.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(io::Error::last_os_error());
        }
        if pid == 0 {
            // Close the parent's ends of every earlier worker's pipes.
            self.workers.clear();
            drop((start_tx, report_rx));
            let code = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                child_main(spec, prepared, idx, parent, start_rx, report_tx)
            }))
            .unwrap_or(101);
            // SAFETY: terminating the child without running parent cleanup.
            unsafe { libc::_exit(code) };
        }
        drop((start_rx, report_tx));
        self.workers.push(WorkerProc {
            pid,
            group_idx: spec.group_idx,
            start_tx: Some(start_tx),
            report_rx: Some(report_rx),
            report: Vec::new(),
            status: None,
        });
        Ok(())
    }

    /// `(pid, group_idx)` of every worker, in spawn order.
    pub fn pids(&self) -> Vec<(i32, usize)> {
        self.workers.iter().map(|w| (w.pid, w.group_idx)).collect()
    }

    /// Releases every worker into its work loop.
    pub fn start(&mut self) -> io::Result<()> {
        for w in &mut self.workers {
            if let Some(tx) = w.start_tx.take() {
                let mut f = std::fs::File::from(tx);
                f.write_all(&[1])?;
            }
        }
        Ok(())
    }

    /// Stops every worker (SIGUSR1), then reads the reports and reaps the
    /// children, all within `timeout`. A worker that sends no parseable
    /// report gets a sentinel with its exit shape.
    pub fn stop_and_collect(mut self, timeout: Duration) -> Vec<WorkerReport> {
        let deadline = Instant::now() + timeout;
        for w in &self.workers {
            // SAFETY: signalling our own child.
            unsafe { libc::kill(w.pid, libc::SIGUSR1) };
        }
        self.read_reports(deadline);
        self.reap(deadline);
        std::mem::take(&mut self.workers)
            .into_iter()
            .map(into_report)
            .collect()
    }

    /// Polls every report pipe until EOF or the deadline.
    fn read_reports(&mut self, deadline: Instant) {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let mut fds: Vec<libc::pollfd> = Vec::new();
            let mut owners = Vec::new();
            for (i, w) in self.workers.iter().enumerate() {
                if let Some(rx) = &w.report_rx {
                    fds.push(libc::pollfd {
                        fd: rx.as_raw_fd(),
                        events: libc::POLLIN,
                        revents: 0,
                    });
                    owners.push(i);
                }
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if fds.is_empty() || left.is_zero() {
                return;
            }
            let ms = i32::try_from(left.as_millis().max(1)).unwrap_or(i32::MAX);
            // SAFETY: fds is a valid array of pollfd.
            let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
            if n < 0 && io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
                return;
            }
            for (pfd, &i) in fds.iter().zip(&owners) {
                if pfd.revents == 0 {
                    continue;
                }
                let w = &mut self.workers[i];
                // SAFETY: reading into a valid buffer from an fd we own.
                let got = unsafe { libc::read(pfd.fd, buf.as_mut_ptr().cast(), buf.len()) };
                match got {
                    n if n > 0 => w.report.extend_from_slice(&buf[..n as usize]),
                    n if n < 0
                        && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted => {}
                    _ => w.report_rx = None,
                }
            }
        }
    }

    /// Waits for every child until the deadline, then SIGKILLs the rest.
    fn reap(&mut self, deadline: Instant) {
        loop {
            let mut pending = false;
            for w in self.workers.iter_mut().filter(|w| w.status.is_none()) {
                w.status = try_wait(w.pid, false);
                pending |= w.status.is_none();
            }
            if !pending {
                return;
            }
            if Instant::now() >= deadline {
                break;
            }
            std::thread::sleep(Duration::from_micros(500));
        }
        for w in self.workers.iter_mut().filter(|w| w.status.is_none()) {
            // SAFETY: killing our own unreaped child.
            unsafe { libc::kill(w.pid, libc::SIGKILL) };
            let _ = try_wait(w.pid, true);
            w.report.clear();
            w.status = Some(Err("timed out".into()));
        }
    }
}

impl Drop for WorkloadHandle {
    fn drop(&mut self) {
        for w in self.workers.iter().filter(|w| w.status.is_none()) {
            // SAFETY: killing our own unreaped child.
            unsafe { libc::kill(w.pid, libc::SIGKILL) };
        }
        for w in self.workers.iter_mut().filter(|w| w.status.is_none()) {
            w.status = try_wait(w.pid, true);
        }
    }
}

/// `waitpid`: `Some(Ok(raw status))` once reaped, `Some(Err(..))` when
/// waitpid fails, `None` while still running (non-blocking mode).
fn try_wait(pid: i32, block: bool) -> Option<Result<i32, String>> {
    let mut status = 0;
    loop {
        let flags = if block { 0 } else { libc::WNOHANG };
        // SAFETY: status is a valid out-pointer.
        let rc = unsafe { libc::waitpid(pid, &mut status, flags) };
        if rc == pid {
            return Some(Ok(status));
        }
        if rc == 0 {
            return None;
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Some(Err(err.to_string()));
        }
    }
}

/// Turns a reaped worker into its report, or a sentinel.
fn into_report(w: WorkerProc) -> WorkerReport {
    if let Ok(mut r) = serde_json::from_slice::<WorkerReport>(&w.report) {
        r.group_idx = w.group_idx;
        r.exit_info = None;
        return r;
    }
    let info = match w.status {
        Some(Ok(status)) if libc::WIFSIGNALED(status) => {
            WorkerExitInfo::Signaled(libc::WTERMSIG(status))
        }
        Some(Ok(status)) => WorkerExitInfo::Exited(libc::WEXITSTATUS(status)),
        Some(Err(e)) if e == "timed out" => WorkerExitInfo::TimedOut,
        Some(Err(e)) => WorkerExitInfo::WaitFailed(e),
        None => WorkerExitInfo::TimedOut,
    };
    WorkerReport::sentinel(w.pid, w.group_idx, info)
}

/// The child: arm death signal, wait for start, run, report. Returns the
/// exit code.
fn child_main(
    spec: &WorkSpec,
    prepared: &mut dyn PreparedWork,
    idx: usize,
    parent: i32,
    start_rx: OwnedFd,
    report_tx: OwnedFd,
) -> i32 {
    // SAFETY: prctl/getppid have no memory preconditions.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong);
        if libc::getppid() != parent {
            return 1; // the parent died before the death signal was armed
        }
    }
    if install_stop_handler().is_err() {
        return 2;
    }
    let _ = install_handler(libc::SIGINT, libc::SIG_IGN);
    let _ = install_handler(libc::SIGPIPE, libc::SIG_IGN);
    let mut go = [0u8; 1];
    let mut start = std::fs::File::from(start_rx);
    if std::io::Read::read(&mut start, &mut go).unwrap_or(0) != 1 {
        return 0; // the parent gave up before starting us
    }
    drop(start);
    let mut body = match prepared.worker(idx) {
        Ok(body) => body,
        Err(e) => {
            eprintln!(
                "runq: worker {idx} of group {}: setup failed: {e}",
                spec.group_idx
            );
            return 3;
        }
    };
    let mut tel = Telemetry::start();
    while !stop_requested() {
        let units = body.iterate(&mut tel);
        tel.end_iteration(units);
    }
    let report = tel.finish(spec.group_idx, body.is_messenger());
    let Ok(bytes) = serde_json::to_vec(&report) else {
        return 4;
    };
    // SAFETY: report_tx is an fd we own; File takes ownership.
    let mut out =
        unsafe { std::fs::File::from_raw_fd(std::os::fd::IntoRawFd::into_raw_fd(report_tx)) };
    if out.write_all(&bytes).is_err() {
        return 5;
    }
    0
}
