//! The parent's SIGINT/SIGTERM handling: the signal sets a flag the run
//! loop polls, so workers are stopped and collected and cgroups removed
//! instead of the parent dying mid-run.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);
static SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    SIGNAL.store(sig, Ordering::Relaxed);
    INTERRUPTED.store(true, Ordering::Relaxed);
}

/// Routes SIGINT and SIGTERM to the flag; returns it.
pub fn install() -> std::io::Result<&'static AtomicBool> {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        crate::stop::install_handler(sig, on_signal as *const () as usize)?;
    }
    Ok(&INTERRUPTED)
}

/// The signal that interrupted the run, if any.
pub fn received_signal() -> Option<i32> {
    match SIGNAL.load(Ordering::Relaxed) {
        0 => None,
        s => Some(s),
    }
}
