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

/// Installs the SIGUSR1 handler. Called in the child right after fork.
pub fn install_stop_handler() -> std::io::Result<()> {
    install_handler(libc::SIGUSR1, on_sigusr1 as *const () as usize)
}
