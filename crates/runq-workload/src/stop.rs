//! The worker side of the stop protocol: SIGUSR1 sets an atomic flag that
//! the work loop checks every iteration. The handler is installed without
//! `SA_RESTART`, so a worker blocked in `read`/`futex` returns `EINTR` and
//! sees the flag.

use std::sync::atomic::{AtomicBool, Ordering};

use runq_kernel::signal::install_handler;

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_sigusr1(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

/// True once the worker has been told to stop.
#[inline]
pub fn stop_requested() -> bool {
    STOP.load(Ordering::Relaxed)
}

/// Sets the flag from inside the worker (e.g. its partner went away).
pub fn request_stop() {
    STOP.store(true, Ordering::Relaxed);
}

/// Clears the flag (before a new run of thread-mode workers in this
/// process).
pub fn reset_stop() {
    STOP.store(false, Ordering::Relaxed);
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
        reset_stop();
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
        reset_stop();
        assert!(sleep_unless_stopped(Duration::from_millis(1)));
    }
}
