//! Starting workers: two-phase start, the stop protocol and RAII cleanup.
//!
//! The parent forks every worker first; each child arms
//! `PR_SET_PDEATHSIG`, installs its SIGUSR1 handler and blocks on its
//! socket pair. The caller then places the pids in cgroups and calls
//! [`WorkloadHandle::start`], which writes one byte down every socket pair,
//! so each worker runs its first work-loop instruction in its cgroup.
//! [`WorkloadHandle::stop_and_collect`] sends SIGUSR1, reads every report
//! and reaps every child under one deadline; dropping the handle SIGKILLs
//! and reaps whatever is left, and stops and joins thread workers (with a
//! bound). Thread-mode workers follow the same phases
//! inside the runq process (see [`threads`]).

pub(crate) mod boost;
mod collect;
mod spec;
mod threads;
pub(crate) mod worker;

use std::io::{self, Write};
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Once;
use std::time::{Duration, Instant};

pub use spec::{
    thread_capable, CloneMode, CustomContext, CustomWork, Freeze, Watchdog, Work, WorkSpec,
};

use crate::fault::{Fault, FaultStep};
use crate::fd::socket_pair;
use crate::report::WorkerReport;
use crate::stop::{install_stop_handler, reset_stop};
use crate::worktype::PreparedWork;
use collect::ProcWorker;
use runq_kernel::signal::{install_handler, BlockedSignals};
use threads::ThreadWorkers;

/// A started (or startable) worker, as the caller sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct WorkerId {
    /// pid of a process worker, tid of a thread worker.
    pub id: u32,
    /// The worker's group.
    pub group_idx: usize,
    /// True for thread-mode workers.
    pub thread: bool,
}

/// The live workers of a run. Dropping it kills and reaps them all.
#[derive(Default)]
pub struct WorkloadHandle {
    procs: Vec<ProcWorker>,
    threads: ThreadWorkers,
    /// Process workers forked so far (the spawn-order index of the next).
    forked: usize,
    fault: Option<Fault>,
}

impl std::fmt::Debug for WorkloadHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkloadHandle")
            .field("procs", &self.procs.len())
            .finish_non_exhaustive()
    }
}

impl WorkloadHandle {
    /// Creates every worker of every group; they wait for [`Self::start`].
    pub fn spawn(specs: &[WorkSpec]) -> io::Result<Self> {
        let mut handle = WorkloadHandle::default();
        for spec in specs {
            handle.add_group(spec)?;
        }
        Ok(handle)
    }

    /// Arms a fault for the start-up path (see `crate::fault`).
    pub(crate) fn inject_fault(&mut self, fault: Option<Fault>) {
        self.fault = fault;
    }

    /// True when the armed fault fires at `step` for process worker `pid`.
    pub(crate) fn fault_hits(&self, step: FaultStep, pid: u32) -> bool {
        self.procs
            .iter()
            .find(|w| w.pid == pid)
            .is_some_and(|w| Fault::hits(self.fault, step, w.index))
    }

    /// Adds one group's workers (they too wait for [`Self::start`]). On a
    /// fork failure the workers forked before it stay in the handle.
    ///
    /// Groups are added one at a time per process: between `prepare` and
    /// `release_parent_copies` the parent holds every pipe end of the
    /// group, and a fork for another handle (another thread) in that window
    /// would copy them into a foreign child, so a dead partner's pipe
    /// would never read EOF.
    pub(crate) fn add_group(&mut self, spec: &WorkSpec) -> io::Result<()> {
        static ONE_GROUP_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
        let _forking = ONE_GROUP_AT_A_TIME
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // Calibrate the work loops' clock before forking, so every worker
        // shares one tick scale (stamps cross processes).
        runq_kernel::clock::fast::init();
        // The same for the host's NUMA nodes, which every worker's report
        // needs as it stops.
        crate::own_numa::host_nodes();
        if spec.clone_mode == CloneMode::Thread && !thread_capable(&spec.work) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{} cannot run in thread mode; use process mode",
                    spec.work.name()
                ),
            ));
        }
        let mut prepared = match &spec.work {
            Work::Builtin(t) => Some(t.prepare(spec.workers)?),
            Work::Custom(_) => None,
        };
        if spec.clone_mode == CloneMode::Thread {
            return self.threads.spawn_group(spec, prepared);
        }
        let parent = std::process::id();
        // Forked children run their set-up beside the parent: at their
        // priority, the parent forking 4,000 of them got its turns seconds
        // apart (the children start without the boost, see `boost`).
        let _boost = boost::Boost::raise();
        let mut forked = Ok(());
        for idx in 0..spec.workers {
            // SIGINT/SIGTERM (runq_kernel::signal) stop the forking at once:
            // a run of thousands of workers must not ignore Ctrl-C.
            if let Some(sig) = runq_kernel::signal::received_signal() {
                forked = Err(io::Error::new(
                    io::ErrorKind::Interrupted,
                    format!(
                        "signal {sig} while forking worker {idx} of {}",
                        spec.workers
                    ),
                ));
                break;
            }
            forked = self.fork_one(spec, prepared.as_deref_mut(), idx, parent);
            if forked.is_err() {
                break;
            }
        }
        // Also after a failure: the forked workers must see their partners'
        // pipes close.
        if let Some(p) = prepared.as_mut() {
            p.release_parent_copies();
        }
        forked
    }

    fn fork_one(
        &mut self,
        spec: &WorkSpec,
        prepared: Option<&mut (dyn PreparedWork + 'static)>,
        idx: usize,
        parent: u32,
    ) -> io::Result<()> {
        let index = self.forked;
        if Fault::hits(self.fault, FaultStep::Fork, index) {
            return Err(io::Error::new(
                io::ErrorKind::WouldBlock,
                format!("fork of worker {idx}: injected fault fork:{index}"),
            ));
        }
        let die_first = Fault::hits(self.fault, FaultStep::FirstIteration, index);
        // One socket pair: the start byte goes down it, the report comes
        // back. Every later fork inherits the parent's end until that
        // worker closes it, so each descriptor here costs N forks a copy
        // and a close (two pipes made 16M of them at 4,000 workers).
        let (parent_end, child_end) = socket_pair()?;
        // Until the child has its handlers, a stop (SIGUSR1) or a Ctrl-C
        // sent to it would kill it: both wait, blocked, until it has them.
        let mut blocked = BlockedSignals::block(&[libc::SIGUSR1, libc::SIGINT])?;
        wrap_panic_hook_for_workers();
        // SAFETY: the child only runs worker code and always ends in _exit.
        let pid = unsafe { libc::fork() };
        if pid != 0 {
            blocked.restore();
        }
        if pid < 0 {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(
                e.kind(),
                format!(
                    "fork of worker {idx}: {e}{}",
                    crate::capacity::fork_failure_hint(&e)
                ),
            ));
        }
        if pid == 0 {
            // Close the parent's ends of every earlier worker's socket,
            // and its probes' links: they stay attached while any copy
            // of them lives.
            self.procs.clear();
            crate::fd::close_inherited_probes();
            IN_FORKED_WORKER.store(true, Ordering::Relaxed);
            drop(parent_end);
            let code = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let mut child = Child {
                    idx,
                    parent,
                    die_first,
                    blocked,
                };
                child_main(spec, prepared, &mut child, child_end)
            }))
            .unwrap_or(101);
            // SAFETY: terminating the child without running parent cleanup.
            unsafe { libc::_exit(code) };
        }
        drop(child_end);
        let pid = pid as u32; // the parent side: positive
        let mut w = ProcWorker::new(pid, spec.group_idx, parent_end);
        w.index = index;
        self.procs.push(w);
        self.forked += 1;
        Ok(())
    }

    /// Every worker, in spawn order (processes first, then threads).
    pub(crate) fn workers(&self) -> Vec<WorkerId> {
        let procs = self.procs.iter().map(|w| WorkerId {
            id: w.pid,
            group_idx: w.group_idx,
            thread: false,
        });
        procs.chain(self.threads.ids()).collect()
    }

    /// `(pid, group_idx)` of every process worker.
    pub fn pids(&self) -> Vec<(u32, usize)> {
        self.procs.iter().map(|w| (w.pid, w.group_idx)).collect()
    }

    /// Releases every not-yet-started worker into its work loop. A worker
    /// that cannot be released (it died) keeps the error for its sentinel
    /// report; the others start regardless.
    ///
    /// A SIGINT/SIGTERM (runq_kernel::signal) stops the releasing: the
    /// workers not yet released are killed and keep that as their error.
    pub fn start(&mut self) {
        let _boost = boost::Boost::raise();
        for w in &mut self.procs {
            if runq_kernel::signal::received_signal().is_some() {
                // Reaped with the others at collection; not waited for
                // here, one at a time among the released workers.
                // SAFETY: killing our own unreaped child.
                unsafe { libc::kill(w.pid as libc::pid_t, libc::SIGKILL) };
                w.start_error = Some("interrupted before the start".into());
                continue;
            }
            if Fault::hits(self.fault, FaultStep::Start, w.index) {
                w.kill_and_wait_dead();
            }
            w.release();
        }
        self.threads.start();
    }

    /// Gives up on process worker `pid` before it starts: SIGKILLs it and
    /// records `why` for its sentinel report.
    pub(crate) fn fail_worker(&mut self, pid: u32, why: String) {
        if let Some(w) = self.procs.iter_mut().find(|w| w.pid == pid) {
            w.kill_and_wait_dead();
            w.start_error = Some(why);
        }
    }

    /// Gives up on every process worker not yet started (an interrupt
    /// before the start): SIGKILLs them all, then reaps them, recording
    /// `why` for their sentinel reports.
    pub(crate) fn abort_unstarted(&mut self, why: &str) {
        collect::kill_and_reap(&mut self.procs);
        for w in &mut self.procs {
            w.start_error = Some(why.to_string());
        }
    }

    /// How many workers of group `group_idx` the handle holds.
    pub(crate) fn group_size(&self, group_idx: usize) -> usize {
        self.workers()
            .iter()
            .filter(|w| w.group_idx == group_idx)
            .count()
    }

    /// Stops and collects only the workers of group `group_idx`.
    pub(crate) fn stop_group(&mut self, group_idx: usize, timeout: Duration) -> Vec<WorkerReport> {
        let (mine, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut self.procs)
            .into_iter()
            .partition(|w| w.group_idx == group_idx);
        self.procs = rest;
        collect::stop_and_collect(mine, Instant::now() + timeout)
    }

    /// Stops every worker (SIGUSR1), then reads the reports and reaps the
    /// children, all within `timeout`. A worker that sends no parseable
    /// report gets a sentinel with its exit shape.
    pub fn stop_and_collect(mut self, timeout: Duration) -> Vec<WorkerReport> {
        let _boost = boost::Boost::raise();
        let deadline = Instant::now() + timeout;
        let mut reports = collect::stop_and_collect(std::mem::take(&mut self.procs), deadline);
        reports.extend(std::mem::take(&mut self.threads).stop_and_collect(deadline));
        reports
    }
}

impl Drop for WorkloadHandle {
    /// Kills and reaps the process workers; stops and joins the thread
    /// workers, waiting at most [`threads::DROP_JOIN_BOUND`] for them.
    fn drop(&mut self) {
        collect::kill_and_reap(&mut self.procs);
        let deadline = Instant::now() + threads::DROP_JOIN_BOUND;
        let running = std::mem::take(&mut self.threads).stop_and_join(deadline);
        if running > 0 {
            // A closed stderr must not panic a drop.
            let _ = writeln!(
                io::stderr(),
                "runq: {running} worker thread(s) did not stop within 5 s; left running"
            );
        }
    }
}

/// Who a forked child is.
struct Child {
    /// Index in its group.
    idx: usize,
    /// The runq process.
    parent: u32,
    /// Injected fault: die where the first iteration would begin.
    die_first: bool,
    /// SIGUSR1 and SIGINT, blocked across the fork until the handlers are
    /// in place.
    blocked: BlockedSignals,
}

/// Set in a forked worker's own copy of memory, right after the fork.
static IN_FORKED_WORKER: AtomicBool = AtomicBool::new(false);

/// Wraps the process's panic hook once, before the first fork, so that a
/// panic in a forked worker prints its message and location with one
/// `write(2)` and no backtrace; elsewhere the previous hook runs as before.
/// The default hook takes locks that another thread of the parent may have
/// held at the fork (stderr's, the backtrace's: a thread-mode worker
/// panicking at that moment), and the child then waits for ever; a panicking
/// worker of the test suite did not exit within 30 s. Setting a hook in the
/// child instead would take the hook's own lock for writing, which a thread
/// inside the hook at the fork holds.
fn wrap_panic_hook_for_workers() {
    static WRAPPED: Once = Once::new();
    WRAPPED.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !IN_FORKED_WORKER.load(Ordering::Relaxed) {
                return previous(info);
            }
            let text = format!("runq: worker {} {info}\n", std::process::id());
            // SAFETY: writing a valid buffer to fd 2.
            unsafe { libc::write(2, text.as_ptr().cast(), text.len()) };
        }));
    });
}

/// The child: arm the death signal, wait for start, set up, run, report.
/// Returns the exit code.
fn child_main(
    spec: &WorkSpec,
    mut prepared: Option<&mut (dyn PreparedWork + 'static)>,
    child: &mut Child,
    channel: OwnedFd,
) -> i32 {
    let (idx, parent) = (child.idx, child.parent);
    // SAFETY: prctl/getppid have no memory preconditions.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong);
        if libc::getppid() != parent as libc::pid_t {
            return 1; // the parent died before the death signal was armed
        }
    }
    // The parent's own stop flag may have been set by a SIGUSR1 it received
    // (its handler is installed for thread workers): this worker's run has
    // not been told to stop.
    reset_stop();
    if install_stop_handler().is_err() {
        return 2;
    }
    let _ = install_handler(libc::SIGINT, libc::SIG_IGN);
    let _ = install_handler(libc::SIGPIPE, libc::SIG_IGN);
    child.blocked.restore();
    let mut go = [0u8; 1];
    let mut channel = std::fs::File::from(channel);
    // The stop (SIGUSR1, no SA_RESTART) may come before a released worker
    // first gets a CPU: read_exact reads through it, and the worker then
    // reports at once. Taking it for the parent giving up left the start
    // byte unread and the worker unreported (20 of 64 at four runs side by
    // side).
    if std::io::Read::read_exact(&mut channel, &mut go).is_err() {
        return 0; // the parent gave up before starting us
    }
    let setup_error = worker::apply_setup(spec, idx);
    let body = match worker::build_body(prepared.as_deref_mut(), idx) {
        Ok(body) => body,
        Err(e) => {
            let _ = writeln!(
                io::stderr(),
                "runq: worker {idx} of group {}: setup failed: {e}",
                spec.group_idx
            );
            return 3;
        }
    };
    if let Some(p) = prepared {
        p.release_parent_copies(); // close what belongs to other workers
    }
    if child.die_first {
        // SAFETY: raising a signal on ourselves.
        unsafe { libc::raise(libc::SIGKILL) };
    }
    let report = worker::run_worker(spec, idx, body, setup_error);
    let Ok(bytes) = serde_json::to_vec(&report) else {
        return 4;
    };
    if channel.write_all(&bytes).is_err() {
        return 5;
    }
    0
}
