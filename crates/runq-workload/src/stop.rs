//! The worker side of the stop protocol: SIGUSR1 sets a stop flag that
//! the work loop checks every iteration. The handler is installed without
//! `SA_RESTART`, so a worker blocked in `read`/`futex` returns `EINTR` and
//! sees the flag.
//!
//! A process worker obeys its process's flag. A thread worker obeys the
//! flag of its own workload ([`StopFlag`]), so thread-mode workloads of one
//! process stop independently of each other.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use runq_kernel::signal::install_handler;

static PROCESS_STOP: AtomicBool = AtomicBool::new(false);

/// Where a stop signal lands on a thread whose thread-mode work is done:
/// nobody reads it (its handle may signal it again while it ends).
static WORK_DONE: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// The flag this thread obeys: [`PROCESS_STOP`], or the flag of the
    /// thread-mode workload it works for (see [`StopFlag::obey`]).
    static OBEYED: Cell<*const AtomicBool> = const { Cell::new(&PROCESS_STOP) };
}

/// The flag the calling thread obeys.
#[inline]
fn obeyed() -> &'static AtomicBool {
    // SAFETY: the pointer is PROCESS_STOP, or a StopFlag's allocation that
    // the thread keeps alive for as long as it points there (`obey`).
    OBEYED.with(|f| unsafe { &*f.get() })
}

extern "C" fn on_sigusr1(_: libc::c_int) {
    // A const-initialised thread-local without a destructor is a plain TLS
    // access: nothing here allocates or locks.
    obeyed().store(true, Ordering::Relaxed);
}

/// True once the worker has been told to stop.
#[inline]
pub fn stop_requested() -> bool {
    obeyed().load(Ordering::Relaxed)
}

/// Sets the flag from inside the worker (e.g. its partner went away): the
/// worker's whole workload stops.
pub fn request_stop() {
    obeyed().store(true, Ordering::Relaxed);
}

/// Clears the process's flag (in a forked worker: the parent's may have
/// been set by a thread-mode run of its own that is ending).
pub fn reset_stop() {
    PROCESS_STOP.store(false, Ordering::Relaxed);
}

/// The stop flag of one thread-mode workload, shared by its threads.
#[derive(Debug, Clone, Default)]
pub struct StopFlag(Arc<AtomicBool>);

impl StopFlag {
    /// Tells every thread that obeys this flag to stop.
    pub fn set(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// Makes the calling thread obey this flag until the returned guard
    /// is dropped (then a stop signal no longer stops anything).
    #[must_use = "the thread obeys the flag only while the guard lives"]
    pub fn obey(&self) -> Obeying {
        let kept = self.clone();
        OBEYED.with(|f| f.set(Arc::as_ptr(&kept.0)));
        Obeying { _kept: kept }
    }
}

/// A thread's obedience to a [`StopFlag`]; it keeps the flag alive.
#[derive(Debug)]
pub struct Obeying {
    _kept: StopFlag,
}

impl Drop for Obeying {
    fn drop(&mut self) {
        // Point away before the flag can be freed: a late SIGUSR1 (the
        // handle signals a thread until its report arrives) then lands on
        // a flag nobody reads, never on the process's.
        OBEYED.with(|f| f.set(&WORK_DONE));
    }
}

/// Sleeps for `d` unless told to stop: a stop signal (SIGUSR1, installed
/// without `SA_RESTART`) ends the sleep at once, where `std::thread::sleep`
/// would sleep out the rest (a 6 s sleep held the stop for 5 s). Returns
/// false when the sleep was cut short by a stop.
pub fn sleep_unless_stopped(d: std::time::Duration) -> bool {
    let mut ts = libc::timespec {
        tv_sec: d.as_secs() as libc::time_t,
        tv_nsec: d.subsec_nanos() as libc::c_long,
    };
    loop {
        if stop_requested() {
            return false;
        }
        let mut rem = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: valid timespecs; `rem` receives the time left on EINTR.
        if unsafe { libc::nanosleep(&ts, &mut rem) } == 0 {
            return true;
        }
        ts = rem; // interrupted by another signal: sleep out the rest
    }
}

/// Installs the SIGUSR1 handler. Called in the child right after fork.
pub fn install_stop_handler() -> std::io::Result<()> {
    install_handler(libc::SIGUSR1, on_sigusr1 as *const () as usize)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn a_stop_ends_a_long_sleep_at_once() {
        install_stop_handler().unwrap();
        let _kept = StopFlag::default().obey();
        let me = unsafe { libc::pthread_self() };
        let sender = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            // SAFETY: signalling a live thread of this process.
            unsafe { libc::pthread_kill(me, libc::SIGUSR1) };
        });
        let t = Instant::now();
        assert!(!sleep_unless_stopped(Duration::from_secs(30)));
        assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
        sender.join().unwrap();
        assert!(
            !PROCESS_STOP.load(Ordering::Relaxed),
            "only this thread's flag"
        );
    }

    #[test]
    fn each_thread_workload_obeys_its_own_flag() {
        let (a, b) = (StopFlag::default(), StopFlag::default());
        let watch = |flag: &StopFlag| {
            let flag = flag.clone();
            std::thread::spawn(move || {
                let _kept = flag.obey();
                while !stop_requested() {
                    std::thread::sleep(Duration::from_millis(1));
                }
            })
        };
        let (ta, tb) = (watch(&a), watch(&b));
        a.set();
        ta.join().unwrap();
        std::thread::sleep(Duration::from_millis(20));
        assert!(!tb.is_finished(), "b stopped with a");
        b.set();
        tb.join().unwrap();
        assert!(!stop_requested(), "the process's flag is untouched");
    }

    #[test]
    fn a_stop_signal_after_the_work_is_done_leaves_the_process_flag() {
        install_stop_handler().unwrap();
        std::thread::spawn(|| {
            drop(StopFlag::default().obey());
            // SAFETY: signalling this live thread of the process.
            unsafe { libc::pthread_kill(libc::pthread_self(), libc::SIGUSR1) };
        })
        .join()
        .unwrap();
        assert!(!PROCESS_STOP.load(Ordering::Relaxed), "the process's flag");
    }
}
