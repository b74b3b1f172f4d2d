//! Thread-mode workers: the same two phases as process workers, inside
//! the runq process. Each thread reports its tid, waits for the start
//! signal, applies its setup and runs; a panic becomes a sentinel with
//! `Panicked`. The threads of a handle obey its own stop flag, and each
//! also gets a SIGUSR1 (tgkill) so blocking calls return.

use std::io;
use std::sync::mpsc::{channel, sync_channel, Receiver, RecvTimeoutError, Sender, SyncSender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::boost::{IdleLifter, LIFT_EVERY};
use super::spec::WorkSpec;
use super::worker::{apply_setup, build_body, run_worker};
use super::WorkerId;
use crate::report::{WorkerExitInfo, WorkerReport};
use crate::stop::{install_stop_handler, StopFlag};
use crate::worktype::{PreparedWork, WorkerBody};

/// A body moved into its thread. Only types listed by
/// [`super::thread_capable`] get here; their bodies own plain data, file
/// descriptors or shared mappings, all safe to move across threads.
struct SendBody(Option<Box<dyn WorkerBody>>);
// SAFETY: see above; the body is used by exactly one thread after the move.
unsafe impl Send for SendBody {}

type Outcome = (usize, Result<WorkerReport, String>);

struct Slot {
    tid: u32,
    group_idx: usize,
    start: Option<SyncSender<()>>,
    result: Option<Result<WorkerReport, String>>,
    thread: Option<JoinHandle<()>>,
}

/// How long dropping a handle waits for its threads to finish.
pub(super) const DROP_JOIN_BOUND: Duration = Duration::from_secs(5);

/// Every thread worker of a handle.
#[derive(Default)]
pub(super) struct ThreadWorkers {
    slots: Vec<Slot>,
    results: Option<(Sender<Outcome>, Receiver<Outcome>)>,
    stop: StopFlag,
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "panic with a non-string payload".into())
}

impl ThreadWorkers {
    /// Starts the threads of one group; each waits for [`Self::start`].
    pub(super) fn spawn_group(
        &mut self,
        spec: &WorkSpec,
        mut prepared: Option<Box<dyn PreparedWork>>,
    ) -> io::Result<()> {
        install_stop_handler()?;
        let results_tx = self.results.get_or_insert_with(channel).0.clone();
        for idx in 0..spec.workers {
            let body = SendBody(build_body(prepared.as_deref_mut(), idx)?);
            let (tid_tx, tid_rx) = sync_channel(1);
            let (start_tx, start_rx) = sync_channel::<()>(1);
            let (spec_c, tx, slot) = (spec.clone(), results_tx.clone(), self.slots.len());
            let stop = self.stop.clone();
            let thread = std::thread::Builder::new()
                .name(format!("runq-w{}-{idx}", spec.group_idx))
                .spawn(move || {
                    let _obeyed = stop.obey();
                    let _ = tid_tx.send(runq_kernel::clock::gettid());
                    if start_rx.recv().is_err() {
                        return; // the handle was dropped before start
                    }
                    let body = body;
                    let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
                        let setup_error = apply_setup(&spec_c, idx);
                        run_worker(&spec_c, idx, body.0, setup_error)
                    }));
                    let _ = tx.send((slot, run.map_err(|p| panic_message(p.as_ref()))));
                })?;
            let tid = tid_rx
                .recv()
                .map_err(|_| io::Error::other("worker thread died before reporting its tid"))?;
            self.slots.push(Slot {
                tid,
                group_idx: spec.group_idx,
                start: Some(start_tx),
                result: None,
                thread: Some(thread),
            });
        }
        if let Some(p) = prepared.as_mut() {
            p.release_parent_copies();
        }
        Ok(())
    }

    /// The thread workers' ids.
    pub(super) fn ids(&self) -> impl Iterator<Item = WorkerId> + '_ {
        self.slots.iter().map(|s| WorkerId {
            id: s.tid,
            group_idx: s.group_idx,
            thread: true,
        })
    }

    /// Releases every waiting thread.
    pub(super) fn start(&mut self) {
        for s in &mut self.slots {
            if let Some(tx) = s.start.take() {
                let _ = tx.send(());
            }
        }
    }

    /// Sets the handle's stop flag and interrupts every thread's blocking
    /// call; threads never started are released to return at once.
    fn signal_stop(&mut self) {
        self.stop.set();
        for s in &mut self.slots {
            s.start = None; // a waiting thread sees the channel close
        }
        self.interrupt_unreported();
    }

    /// Sends SIGUSR1 to each live thread that has not reported. Again and
    /// again while collecting: a signal that lands between a thread's
    /// look at its flag and its blocking call is lost, and the call (a
    /// pipe read whose writer end a forked process also holds, a futex
    /// wait) would block to the deadline.
    fn interrupt_unreported(&self) {
        // SAFETY: getpid has no preconditions.
        let pid = unsafe { libc::getpid() };
        let live =
            |s: &&Slot| s.result.is_none() && s.thread.as_ref().is_some_and(|t| !t.is_finished());
        for s in self.slots.iter().filter(live) {
            // SAFETY: tgkill on a live thread of this process (its tid is
            // not reused while it runs); past its work, the signal stops
            // nothing (see `StopFlag::obey`).
            unsafe { libc::syscall(libc::SYS_tgkill, pid, s.tid as libc::pid_t, libc::SIGUSR1) };
        }
    }

    /// Stops every thread and joins those that finish by `deadline`
    /// (dropping a handle without collecting). Returns how many threads
    /// are still running at the deadline; they are left detached.
    pub(super) fn stop_and_join(mut self, deadline: Instant) -> usize {
        if self.slots.is_empty() {
            return 0;
        }
        self.signal_stop();
        let mut signalled = Instant::now();
        while self
            .slots
            .iter()
            .any(|s| s.thread.as_ref().is_some_and(|t| !t.is_finished()))
            && Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(1));
            if signalled.elapsed() >= LIFT_EVERY {
                self.interrupt_unreported();
                signalled = Instant::now();
            }
        }
        let mut running = 0;
        for t in self.slots.iter_mut().filter_map(|s| s.thread.take()) {
            match t.is_finished() {
                true => drop(t.join()),
                false => running += 1,
            }
        }
        running
    }

    /// Stops every thread and gathers results until `deadline`.
    pub(super) fn stop_and_collect(mut self, deadline: Instant) -> Vec<WorkerReport> {
        if self.slots.is_empty() {
            return Vec::new();
        }
        self.signal_stop();
        if let Some((tx, rx)) = self.results.take() {
            drop(tx);
            let mut lifter = IdleLifter::default();
            let mut signalled = Instant::now();
            while self.slots.iter().any(|s| s.result.is_none()) {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break;
                }
                let waiting = self.slots.iter().filter(|s| s.result.is_none());
                lifter.lift(waiting.map(|s| s.tid));
                if signalled.elapsed() >= LIFT_EVERY {
                    self.interrupt_unreported();
                    signalled = Instant::now();
                }
                match rx.recv_timeout(left.min(LIFT_EVERY)) {
                    Ok((slot, r)) => self.slots[slot].result = Some(r),
                    Err(RecvTimeoutError::Timeout) => {}
                    Err(RecvTimeoutError::Disconnected) => break,
                }
            }
        }
        for s in self.slots.iter_mut().filter(|s| s.result.is_some()) {
            if let Some(t) = s.thread.take() {
                let _ = t.join(); // it returns right after sending
            }
        }
        self.slots.into_iter().map(slot_report).collect()
    }
}

fn slot_report(s: Slot) -> WorkerReport {
    match s.result {
        Some(Ok(r)) => r,
        Some(Err(msg)) => WorkerReport::sentinel(s.tid, s.group_idx, WorkerExitInfo::Panicked(msg)),
        None => WorkerReport::sentinel(s.tid, s.group_idx, WorkerExitInfo::TimedOut),
    }
}
