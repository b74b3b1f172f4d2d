//! The parent's own priority while it starts and collects its workers.
//! Once the first workers run, a parent at their priority competes with
//! them for the CPU: releasing or collecting 2,000 spinners on 2 CPUs then
//! took seconds, and the start was not simultaneous. While it holds a
//! [`Boost`], the calling thread runs at nice -10 when it may (root or
//! CAP_SYS_NICE); workers were forked before and do not inherit it.

/// The raised priority: low enough to be scheduled ahead of a crowd of
/// nice-0 workers, far from the real-time range.
const BOOST_NICE: libc::c_int = -10;

/// Raises the calling thread's priority until dropped (no-op without the
/// privilege).
pub(super) struct Boost {
    before: Option<libc::c_int>,
}

impl Boost {
    /// Raises the calling thread to [`BOOST_NICE`] if it may.
    pub(super) fn raise() -> Self {
        // SAFETY: getpriority/setpriority on the calling thread (who = 0).
        let before = unsafe {
            *libc::__errno_location() = 0;
            let nice = libc::getpriority(libc::PRIO_PROCESS, 0);
            if *libc::__errno_location() != 0 || nice <= BOOST_NICE {
                None
            } else if libc::setpriority(libc::PRIO_PROCESS, 0, BOOST_NICE) == 0 {
                Some(nice)
            } else {
                None
            }
        };
        Boost { before }
    }
}

impl Drop for Boost {
    fn drop(&mut self) {
        if let Some(nice) = self.before {
            // SAFETY: restoring the calling thread's own priority.
            unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, nice) };
        }
    }
}
