//! Parent side of process workers: release, stop, read reports, reap,
//! and turn what came back into reports or sentinels.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::{Duration, Instant};

use super::boost::{IdleLifter, LIFT_EVERY};
use crate::report::{WorkerExitInfo, WorkerReport};

/// One forked worker, seen from the parent.
#[derive(Debug)]
pub(super) struct ProcWorker {
    pub(super) pid: u32,
    pub(super) group_idx: usize,
    /// Spawn-order index among the handle's process workers.
    pub(super) index: usize,
    /// Why the worker did not start as planned (placement, start byte).
    pub(super) start_error: Option<String>,
    /// The parent's end of the worker's socket pair: the start byte goes
    /// out on it, the report comes in; closed at the report's end.
    channel: Option<OwnedFd>,
    /// Whether the start byte was sent.
    released: bool,
    report: Vec<u8>,
    /// How it ended, once reaped (or given up on).
    status: Option<WorkerExitInfo>,
    /// When its start byte went out.
    released_at: Option<std::time::Instant>,
    /// Its schedstat just before it was killed at the collection
    /// deadline: how long it ran and waited for a CPU, for its sentinel.
    last_schedstat: Option<runq_kernel::schedstat::Schedstat>,
    /// Whether it was runnable (state R) when it was killed.
    runnable_at_deadline: bool,
}

impl ProcWorker {
    pub(super) fn new(pid: u32, group_idx: usize, channel: OwnedFd) -> Self {
        ProcWorker {
            pid,
            group_idx,
            index: 0,
            start_error: None,
            channel: Some(channel),
            released: false,
            report: Vec::new(),
            status: None,
            released_at: None,
            last_schedstat: None,
            runnable_at_deadline: false,
        }
    }

    /// Writes the start byte (once). A worker that died before it gets
    /// EPIPE; the error is kept for its sentinel.
    pub(super) fn release(&mut self) {
        if std::mem::replace(&mut self.released, true) {
            return;
        }
        self.released_at = Some(std::time::Instant::now());
        let sent = self.channel.as_ref().is_some_and(crate::fd::write_byte);
        if !sent {
            let e = io::Error::last_os_error();
            self.start_error.get_or_insert(format!("start byte: {e}"));
        }
    }

    /// SIGKILLs the worker and waits until it is dead, leaving it unreaped
    /// (the collect path reaps it and reads its exit shape).
    pub(super) fn kill_and_wait_dead(&self) {
        free_to_die(self.pid);
        // SAFETY: killing our own unreaped child.
        unsafe { libc::kill(self.pid as libc::pid_t, libc::SIGKILL) };
        loop {
            // SAFETY: a zeroed siginfo_t is a valid out-buffer.
            let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
            let flags = libc::WEXITED | libc::WNOWAIT;
            // SAFETY: waitid on our own child without reaping it.
            let rc = unsafe { libc::waitid(libc::P_PID, self.pid, &mut info, flags) };
            if rc == 0 || io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
                return;
            }
        }
    }
}

/// SIGUSR1 to every worker, then reports and reaping under `deadline`.
pub(super) fn stop_and_collect(
    mut workers: Vec<ProcWorker>,
    deadline: Instant,
) -> Vec<WorkerReport> {
    let started = Instant::now();
    let cpu_before = runq_kernel::clock::thread_cpu_ns();
    log::info!("collect: stopping {} workers", workers.len());
    signal_unreported(&workers);
    read_reports(&mut workers, deadline);
    let read = started.elapsed();
    let reported = workers.iter().filter(|w| w.channel.is_none()).count();
    let read_cpu = runq_kernel::clock::thread_cpu_ns() - cpu_before;
    let killed = reap(&mut workers, deadline);
    let reap_cpu = runq_kernel::clock::thread_cpu_ns() - cpu_before - read_cpu;
    log::info!(
        "collect: {reported} of {} workers reported in {:.0} ms; {killed} not gone by then were killed; all reaped at {:.0} ms (runq's own CPU: {:.0} ms reading, {:.0} ms reaping)",
        workers.len(),
        read.as_secs_f64() * 1e3,
        started.elapsed().as_secs_f64() * 1e3,
        read_cpu as f64 / 1e6,
        reap_cpu as f64 / 1e6
    );
    workers.into_iter().map(into_report).collect()
}

/// Sends SIGUSR1 (the stop) to each worker whose report is still open.
/// Again and again while reading: a stop that lands between a worker's
/// look at its flag and its blocking call is lost, and the call (a UDP
/// receive whose sender has stopped, a futex wait) would block to the
/// deadline.
fn signal_unreported(workers: &[ProcWorker]) {
    for w in workers
        .iter()
        .filter(|w| w.channel.is_some() && w.status.is_none())
    {
        // SAFETY: signalling our own unreaped child (its pid is not reused).
        unsafe { libc::kill(w.pid as libc::pid_t, libc::SIGUSR1) };
    }
}

/// SIGKILLs and reaps every worker not yet reaped (the RAII path).
pub(super) fn kill_and_reap(workers: &mut [ProcWorker]) {
    for w in workers.iter().filter(|w| w.status.is_none()) {
        free_to_die(w.pid);
        // SAFETY: killing our own unreaped child.
        unsafe { libc::kill(w.pid as libc::pid_t, libc::SIGKILL) };
    }
    for w in workers.iter_mut().filter(|w| w.status.is_none()) {
        w.status = try_wait(w.pid, true);
    }
}

/// Reads every report socket until EOF or the deadline. The sockets are
/// watched with one epoll set, so each wakeup costs what is ready, not
/// the whole crowd (polling 2,000 descriptors per arriving report took
/// most of an interrupted run's collect budget).
fn read_reports(workers: &mut [ProcWorker], deadline: Instant) {
    // Without an epoll set (no descriptor left) no report is read: the
    // workers end as timed out, with the reason in their sentinels.
    let Some(set) = EpollSet::watch(workers) else {
        return;
    };
    let mut buf = vec![0u8; 64 * 1024];
    let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; 256];
    let mut open = workers.iter().filter(|w| w.channel.is_some()).count();
    let mut lifter = IdleLifter::default();
    let mut signalled = Instant::now();
    while open > 0 {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        if signalled.elapsed() >= LIFT_EVERY {
            signal_unreported(workers);
            signalled = Instant::now();
        }
        lifter.lift(
            workers
                .iter()
                .filter(|w| w.channel.is_some())
                .map(|w| w.pid),
        );
        let ms = i32::try_from(left.min(LIFT_EVERY).as_millis().max(1)).unwrap_or(i32::MAX);
        let n = set.wait(&mut events, ms);
        for ev in &events[..n] {
            let w = &mut workers[ev.u64 as usize];
            // A later worker forked with a copy of this socket keeps it
            // alive in the set after we closed ours: nothing more to read.
            let Some(rx) = &w.channel else { continue };
            let fd = rx.as_raw_fd();
            if !read_some(w, &mut buf) {
                set.forget(fd);
                w.channel = None;
                open -= 1;
            }
        }
    }
}

/// Reads what a worker's socket holds; false once it reached EOF
/// (or failed).
fn read_some(w: &mut ProcWorker, buf: &mut [u8]) -> bool {
    let Some(rx) = &w.channel else {
        return false;
    };
    // SAFETY: reading into a valid buffer from an fd we own.
    let got = unsafe { libc::read(rx.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
    match got {
        n if n > 0 => {
            w.report.extend_from_slice(&buf[..n as usize]);
            true
        }
        n => n < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted,
    }
}

/// An epoll set over the workers' sockets, each tagged with its
/// worker's index.
struct EpollSet(OwnedFd);

impl EpollSet {
    fn watch(workers: &[ProcWorker]) -> Option<EpollSet> {
        // SAFETY: epoll_create1 returns a new descriptor or -1.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return None;
        }
        // SAFETY: fd is a fresh descriptor we own.
        let set = EpollSet(unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) });
        for (i, w) in workers.iter().enumerate() {
            let Some(rx) = &w.channel else { continue };
            let mut ev = libc::epoll_event {
                events: libc::EPOLLIN as u32,
                u64: i as u64,
            };
            // SAFETY: adding a descriptor we own to our epoll set.
            let rc = unsafe {
                libc::epoll_ctl(
                    set.0.as_raw_fd(),
                    libc::EPOLL_CTL_ADD,
                    rx.as_raw_fd(),
                    &mut ev,
                )
            };
            if rc != 0 {
                return None;
            }
        }
        Some(set)
    }

    /// Stops watching `fd` (before it is closed: a copy of the socket in a
    /// later worker would keep it in the set).
    fn forget(&self, fd: i32) {
        // SAFETY: removing a descriptor from our own epoll set.
        unsafe {
            libc::epoll_ctl(
                self.0.as_raw_fd(),
                libc::EPOLL_CTL_DEL,
                fd,
                std::ptr::null_mut(),
            )
        };
    }

    /// Waits up to `ms` for ready sockets; how many events were filled.
    fn wait(&self, events: &mut [libc::epoll_event], ms: i32) -> usize {
        let max = i32::try_from(events.len()).unwrap_or(i32::MAX);
        // SAFETY: events is a valid buffer of `max` entries.
        let n = unsafe { libc::epoll_wait(self.0.as_raw_fd(), events.as_mut_ptr(), max, ms) };
        usize::try_from(n).unwrap_or(0)
    }
}

/// Waits for every child until the deadline, then SIGKILLs the rest;
/// returns how many were killed.
fn reap(workers: &mut [ProcWorker], deadline: Instant) -> usize {
    loop {
        let mut pending = false;
        for w in workers.iter_mut().filter(|w| w.status.is_none()) {
            w.status = try_wait(w.pid, false);
            pending |= w.status.is_none();
        }
        if !pending {
            return 0;
        }
        if Instant::now() >= deadline {
            break;
        }
        std::thread::sleep(Duration::from_micros(500));
    }
    // What each straggler ran and waited, read before it is killed: the
    // sentinel of a worker starved to the deadline says so.
    for w in workers.iter_mut().filter(|w| w.status.is_none()) {
        let path = format!("/proc/{}/schedstat", w.pid);
        w.last_schedstat = runq_kernel::schedstat::read_schedstat(std::path::Path::new(&path));
        w.runnable_at_deadline = std::fs::read_to_string(format!("/proc/{}/stat", w.pid))
            .is_ok_and(|s| {
                s.rsplit_once(") ")
                    .is_some_and(|(_, rest)| rest.starts_with('R'))
            });
    }
    // Kill every straggler first, then wait: killed one by one, each
    // would have to be scheduled among the others still spinning. A
    // killed task must still run to exit: one starved on its CPU (nice 19
    // pinned beside a nice -20 hog) would hold the run for as long as it
    // is starved, so each is first let off its CPU and raised.
    for w in workers.iter().filter(|w| w.status.is_none()) {
        free_to_die(w.pid);
        // SAFETY: killing our own unreaped child.
        unsafe { libc::kill(w.pid as libc::pid_t, libc::SIGKILL) };
    }
    let mut killed = 0;
    let mut undead = Vec::new();
    let give_up = Instant::now() + DEATH_GRACE;
    for w in workers.iter_mut().filter(|w| w.status.is_none()) {
        while try_wait(w.pid, false).is_none() {
            if Instant::now() >= give_up {
                undead.push(w.pid);
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        w.report.clear();
        w.status = Some(WorkerExitInfo::TimedOut);
        killed += 1;
    }
    reap_in_background(undead);
    killed
}

/// How long killed stragglers get to die before they are left to a
/// background reaper: the run ends within its collect timeout and this.
const DEATH_GRACE: Duration = Duration::from_millis(500);

/// Lets a worker that is about to be killed run anywhere, at the highest
/// priority it can get (SCHED_FIFO where the host allows it, nice -20
/// else), each of its threads: a SIGKILLed task exits only once it runs.
fn free_to_die(pid: u32) {
    let tids: Vec<libc::pid_t> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_else(|_| vec![pid as libc::pid_t]);
    // SAFETY: CPU_SET on a zeroed set; the calls take our children's tids.
    unsafe {
        let mut all: libc::cpu_set_t = std::mem::zeroed();
        for cpu in 0..libc::CPU_SETSIZE as usize {
            libc::CPU_SET(cpu, &mut all);
        }
        let fifo = libc::sched_param { sched_priority: 1 };
        for tid in tids {
            libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &all);
            if libc::sched_setscheduler(tid, libc::SCHED_FIFO, &fifo) != 0 {
                libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, -20);
            }
        }
    }
}

/// Reaps, on a thread of its own, killed workers that did not die within
/// [`DEATH_GRACE`] (still starved of a CPU their cpuset allows), so the
/// run does not wait for them; logged.
fn reap_in_background(pids: Vec<u32>) {
    if pids.is_empty() {
        return;
    }
    log::warn!(
        "{} killed workers had not exited {} ms after SIGKILL (starved of a CPU); \
         they are reaped in the background",
        pids.len(),
        DEATH_GRACE.as_millis()
    );
    std::thread::spawn(move || {
        for pid in pids {
            let _ = try_wait(pid, true);
        }
    });
}

/// `waitpid`: how the worker ended once it is reaped (or why it could not
/// be waited for), `None` while it still runs (non-blocking mode).
fn try_wait(pid: u32, block: bool) -> Option<WorkerExitInfo> {
    let mut status = 0;
    loop {
        let flags = if block { 0 } else { libc::WNOHANG };
        // SAFETY: status is a valid out-pointer.
        let rc = unsafe { libc::waitpid(pid as libc::pid_t, &mut status, flags) };
        if rc == pid as libc::pid_t {
            return Some(exit_shape(status));
        }
        if rc == 0 {
            return None;
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Some(WorkerExitInfo::WaitFailed(err.to_string()));
        }
    }
}

/// Turns a reaped worker into its report, or a sentinel. A worker that
/// exited on its own after the reading stopped left its whole report in
/// its socket: that is read first (at an interrupt among 4,000 spinners,
/// up to 617 reports were there, unread).
fn into_report(mut w: ProcWorker) -> WorkerReport {
    if matches!(w.status, Some(WorkerExitInfo::Exited(0))) {
        drain_left(&mut w);
    }
    if let Ok(mut r) = serde_json::from_slice::<WorkerReport>(&w.report) {
        r.group_idx = w.group_idx;
        r.exit_info = None;
        return r;
    }
    let ended = w.status.unwrap_or(WorkerExitInfo::TimedOut);
    let mut r = WorkerReport::sentinel(w.pid, w.group_idx, ended);
    r.start_error = w.start_error;
    r.runnable_at_deadline = w.runnable_at_deadline;
    if let (Some(st), Some(at)) = (w.last_schedstat, w.released_at) {
        r.cpu_time_ns = st.cpu_time_ns;
        r.schedstat_run_delay_ns = st.run_delay_ns;
        r.wall_time_ns = at.elapsed().as_nanos() as u64;
    }
    r
}

/// Reads what is left in an exited worker's socket without waiting (a
/// child the worker forked may still hold its end open).
fn drain_left(w: &mut ProcWorker) {
    let Some(fd) = w.channel.take() else { return };
    let mut buf = [0u8; 16 * 1024];
    loop {
        // SAFETY: reading into a valid buffer from a socket we own.
        let n = unsafe {
            libc::recv(
                fd.as_raw_fd(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                libc::MSG_DONTWAIT,
            )
        };
        match usize::try_from(n) {
            Ok(0) | Err(_) => return,
            Ok(n) => w.report.extend_from_slice(&buf[..n]),
        }
    }
}

/// How a reaped worker ended, from its raw wait status.
fn exit_shape(status: i32) -> WorkerExitInfo {
    if libc::WIFSIGNALED(status) {
        WorkerExitInfo::Signaled(libc::WTERMSIG(status))
    } else {
        WorkerExitInfo::Exited(libc::WEXITSTATUS(status))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_shapes() {
        assert_eq!(exit_shape(9), WorkerExitInfo::Signaled(9));
        assert_eq!(exit_shape(3 << 8), WorkerExitInfo::Exited(3));
    }

    #[test]
    fn a_pid_that_is_no_child_cannot_be_waited_for() {
        // pid 1 is never this test's child: waitpid fails with ECHILD.
        assert!(matches!(
            try_wait(1, false),
            Some(WorkerExitInfo::WaitFailed(_))
        ));
    }
}
