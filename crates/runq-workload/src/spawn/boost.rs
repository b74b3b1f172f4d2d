//! The parent's own priority while it starts and collects its workers.
//! Once the first workers run, a parent at their priority competes with
//! them for the CPU: releasing or collecting 2,000 spinners on 2 CPUs then
//! took seconds, and the start was not simultaneous. Even at nice -10 a
//! parent gets its weight's share against a crowd (about 0.5% of the CPU
//! against 2,000 nice-0 spinners), so signalling them alone took up to
//! 0.4 s. While it holds a [`Boost`], the calling thread runs SCHED_FIFO
//! (priority 1, or one above the workers' real-time priorities) when it
//! may (root or CAP_SYS_NICE), or else at nice -10
//! when it may: it runs whenever it is runnable, and it never spins (it
//! blocks in poll, waitpid or short sleeps), so the workers get every
//! CPU cycle it does not need. The forking holds one too, and workers
//! forked or spawned under it start without it (`SCHED_RESET_ON_FORK`).
//! The host monitor's thread holds one for its life, and a run's own
//! thread holds one from its first fork to its last report.
//! While it collects, it also lifts stopped workers out of SCHED_IDLE
//! ([`IdleLifter`]) so that they can report.

use std::sync::atomic::{AtomicI32, Ordering};

/// The fallback: low enough to be scheduled ahead of a crowd of nice-0
/// workers, far from the real-time range.
const BOOST_NICE: libc::c_int = -10;

/// The highest real-time priority a worker of this process may hold (0:
/// none). A boost at or below it would never run beside spinning RT
/// workers (a woken SCHED_FIFO task does not preempt one of its own
/// priority), and would lose the share the RT throttle leaves SCHED_OTHER
/// tasks: two FIFO 1 spinners on 2 CPUs then held a run past its end for
/// minutes. The boost goes one above it, or falls back to nice at 99.
static WORKER_RT_CEILING: AtomicI32 = AtomicI32::new(0);

/// Declares the highest real-time priority the workers about to start
/// may take (0 for none); later boosts go above it.
pub(crate) fn set_worker_rt_ceiling(priority: u32) {
    WORKER_RT_CEILING.store(i32::try_from(priority).unwrap_or(99), Ordering::Relaxed);
}

/// The SCHED_FIFO priority of a boost, `None` when no priority is above
/// the workers'.
fn boost_priority() -> Option<libc::c_int> {
    let above = WORKER_RT_CEILING.load(Ordering::Relaxed).max(0) + 1;
    // SAFETY: sched_get_priority_max has no memory preconditions.
    let max = unsafe { libc::sched_get_priority_max(libc::SCHED_FIFO) };
    (above <= max).then_some(above)
}

/// What to restore when the boost ends.
#[derive(Debug, Clone, Copy)]
enum Before {
    /// The thread was SCHED_OTHER and is now SCHED_FIFO.
    Fair,
    /// The thread's nice value before it was lowered.
    Nice(libc::c_int),
    /// Nothing was changed.
    Unchanged,
}

/// Raises the calling thread's priority until dropped (no-op without the
/// privilege).
pub(crate) struct Boost {
    before: Before,
}

impl Boost {
    /// Raises the calling thread to SCHED_FIFO 1, or to [`BOOST_NICE`].
    /// Either way with `SCHED_RESET_ON_FORK`: a worker forked or spawned
    /// while the boost is held (a group a step adds mid-run) starts as
    /// SCHED_OTHER at nice 0 or above, never with the boost.
    pub(crate) fn raise() -> Self {
        let param = libc::sched_param {
            sched_priority: boost_priority().unwrap_or(0),
        };
        // SAFETY: sched_getscheduler/sched_setscheduler on the calling
        // thread (pid 0) with a valid parameter.
        let fifo = param.sched_priority > 0
            && unsafe {
                libc::sched_getscheduler(0) == libc::SCHED_OTHER
                    && libc::sched_setscheduler(
                        0,
                        libc::SCHED_FIFO | libc::SCHED_RESET_ON_FORK,
                        &param,
                    ) == 0
            };
        if fifo {
            return Boost {
                before: Before::Fair,
            };
        }
        let other = libc::sched_param { sched_priority: 0 };
        // SAFETY: as above. Setting the flag needs no privilege; a thread
        // that cannot lower its nice value keeps it, which is harmless
        // (its forks then start at nice 0 or above, as they would).
        let resets = unsafe {
            libc::sched_getscheduler(0) == libc::SCHED_OTHER
                && libc::sched_setscheduler(
                    0,
                    libc::SCHED_OTHER | libc::SCHED_RESET_ON_FORK,
                    &other,
                ) == 0
        };
        Boost {
            before: if resets {
                lower_nice().map_or(Before::Unchanged, Before::Nice)
            } else {
                Before::Unchanged
            },
        }
    }
}

/// Lowers the calling thread's nice value to [`BOOST_NICE`]; the value it
/// had, when it changed.
fn lower_nice() -> Option<libc::c_int> {
    // SAFETY: getpriority/setpriority on the calling thread (who = 0).
    unsafe {
        *libc::__errno_location() = 0;
        let nice = libc::getpriority(libc::PRIO_PROCESS, 0);
        if *libc::__errno_location() != 0 || nice <= BOOST_NICE {
            return None;
        }
        (libc::setpriority(libc::PRIO_PROCESS, 0, BOOST_NICE) == 0).then_some(nice)
    }
}

impl Drop for Boost {
    fn drop(&mut self) {
        match self.before {
            Before::Fair => {
                let param = libc::sched_param { sched_priority: 0 };
                // SAFETY: restoring the calling thread's own policy.
                unsafe { libc::sched_setscheduler(0, libc::SCHED_OTHER, &param) };
            }
            // SAFETY: restoring the calling thread's own priority.
            Before::Nice(nice) => unsafe {
                libc::setpriority(libc::PRIO_PROCESS, 0, nice);
            },
            Before::Unchanged => {}
        }
    }
}

/// How often a collecting parent lifts stopped workers out of SCHED_IDLE.
pub(crate) const LIFT_EVERY: std::time::Duration = std::time::Duration::from_millis(50);

/// Moves stopped workers from SCHED_IDLE back to SCHED_OTHER, so that they
/// get the CPU to finish and write their reports: on a busy host an
/// idle-class worker (PolicyChurn cycles through that class) got none
/// within the 5 s collect deadline. A collector calls [`Self::lift`] on
/// the workers that have not reported, again and again, because a
/// worker's last iteration may enter the class again; it acts at most
/// every [`LIFT_EVERY`]. Other classes are left alone, and so are workers
/// it lacks the privilege to move.
#[derive(Debug, Default)]
pub(crate) struct IdleLifter {
    last: Option<std::time::Instant>,
}

impl IdleLifter {
    /// Lifts every idle-class thread of `tids`, unless it did so less than
    /// [`LIFT_EVERY`] ago.
    pub(crate) fn lift(&mut self, tids: impl Iterator<Item = u32>) {
        if self.last.is_some_and(|t| t.elapsed() < LIFT_EVERY) {
            return;
        }
        self.last = Some(std::time::Instant::now());
        let param = libc::sched_param { sched_priority: 0 };
        for tid in tids {
            // SAFETY: querying and setting the policy of our own worker.
            unsafe {
                if libc::sched_getscheduler(tid as libc::pid_t) == libc::SCHED_IDLE {
                    libc::sched_setscheduler(tid as libc::pid_t, libc::SCHED_OTHER, &param);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc::channel;

    fn policy(tid: u32) -> libc::c_int {
        // SAFETY: querying a thread of this process.
        unsafe { libc::sched_getscheduler(tid as libc::pid_t) }
    }

    /// A thread that enters `class`, reports its tid and waits for `done`.
    fn thread_in(class: libc::c_int) -> (u32, std::sync::mpsc::Sender<()>) {
        let (tid_tx, tid_rx) = channel();
        let (done_tx, done_rx) = channel::<()>();
        std::thread::spawn(move || {
            let param = libc::sched_param { sched_priority: 0 };
            // SAFETY: changing the calling thread's own policy.
            unsafe { libc::sched_setscheduler(0, class, &param) };
            tid_tx.send(runq_kernel::clock::gettid()).unwrap();
            let _ = done_rx.recv();
        });
        (tid_rx.recv().unwrap(), done_tx)
    }

    #[test]
    fn other_classes_are_left_alone() {
        let (batch, _b) = thread_in(libc::SCHED_BATCH);
        IdleLifter::default().lift(std::iter::once(batch));
        assert_eq!(policy(batch), libc::SCHED_BATCH);
    }

    #[test]
    #[cfg_attr(not(runq_root), ignore = "needs root")]
    fn idle_class_workers_are_lifted_at_most_every_lift_every() {
        let (idle, _a) = thread_in(libc::SCHED_IDLE);
        assert_eq!(policy(idle), libc::SCHED_IDLE);
        let mut lifter = IdleLifter::default();
        lifter.lift(std::iter::once(idle));
        assert_eq!(policy(idle), libc::SCHED_OTHER);
        // Within LIFT_EVERY of the last lift, nothing is done.
        let (again, _c) = thread_in(libc::SCHED_IDLE);
        lifter.lift(std::iter::once(again));
        assert_eq!(policy(again), libc::SCHED_IDLE);
        std::thread::sleep(LIFT_EVERY);
        lifter.lift(std::iter::once(again));
        assert_eq!(policy(again), libc::SCHED_OTHER);
    }

    #[test]
    #[cfg_attr(not(runq_root), ignore = "needs root")]
    fn work_started_under_a_boost_starts_without_it() {
        std::thread::spawn(|| {
            let boost = Boost::raise();
            let mine = policy(0);
            assert_eq!(mine & !libc::SCHED_RESET_ON_FORK, libc::SCHED_FIFO);
            // A nested boost changes nothing and restores nothing.
            drop(Boost::raise());
            assert_eq!(policy(0), mine);
            let spawned = std::thread::spawn(|| policy(0)).join().unwrap();
            assert_eq!(spawned, libc::SCHED_OTHER);
            // SAFETY: the child only queries its policy and _exits.
            let pid = unsafe { libc::fork() };
            if pid == 0 {
                let code = i32::from(policy(0) != libc::SCHED_OTHER);
                // SAFETY: ending the forked child at once.
                unsafe { libc::_exit(code) };
            }
            let mut status = 0;
            // SAFETY: waiting for our own child.
            unsafe { libc::waitpid(pid, &mut status, 0) };
            assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
            drop(boost);
            assert_eq!(policy(0), libc::SCHED_OTHER);
        })
        .join()
        .unwrap();
    }
}
