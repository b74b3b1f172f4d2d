//! The parent's own priority while it starts and collects its workers.
//! Once the first workers run, a parent at their priority competes with
//! them for the CPU: releasing or collecting 2,000 spinners on 2 CPUs then
//! took seconds, and the start was not simultaneous. Even at nice -10 a
//! parent gets its weight's share against a crowd (about 0.5% of the CPU
//! against 2,000 nice-0 spinners), so signalling them alone took up to
//! 0.4 s. While it holds a [`Boost`], the calling thread runs SCHED_FIFO
//! (priority 1) when it may (root or CAP_SYS_NICE), or else at nice -10
//! when it may: it runs whenever it is runnable, and it never spins (it
//! blocks in poll, waitpid or short sleeps), so the workers get every
//! CPU cycle it does not need. Workers were forked before and do not
//! inherit it. The host monitor's thread holds one for its life too.

/// The fallback: low enough to be scheduled ahead of a crowd of nice-0
/// workers, far from the real-time range.
const BOOST_NICE: libc::c_int = -10;

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
    pub(crate) fn raise() -> Self {
        let param = libc::sched_param { sched_priority: 1 };
        // SAFETY: sched_getscheduler/sched_setscheduler on the calling
        // thread (pid 0) with a valid parameter.
        let fifo = unsafe {
            libc::sched_getscheduler(0) == libc::SCHED_OTHER
                && libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) == 0
        };
        if fifo {
            return Boost {
                before: Before::Fair,
            };
        }
        Boost {
            before: lower_nice().map_or(Before::Unchanged, Before::Nice),
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
