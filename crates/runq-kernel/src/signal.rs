//! Signal handling shared by the tools: SIGINT/SIGTERM set a flag the
//! caller's loop polls (so a run stops its workers and removes its
//! cgroups, a recorder finishes its snapshot, instead of dying midway),
//! and a plain `sigaction` installer without `SA_RESTART`.

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
        install_handler(sig, on_signal as *const () as usize)?;
    }
    Ok(&INTERRUPTED)
}

/// The signal that interrupted the caller, if any.
pub fn received_signal() -> Option<i32> {
    match SIGNAL.load(Ordering::Relaxed) {
        0 => None,
        s => Some(s),
    }
}

/// Installs `handler` (a function address or `SIG_IGN`/`SIG_DFL`) for
/// `signal`, without `SA_RESTART`.
pub fn install_handler(signal: libc::c_int, handler: usize) -> std::io::Result<()> {
    // SAFETY: a zeroed sigaction is valid; the caller passes an
    // async-signal-safe handler (or SIG_IGN/SIG_DFL).
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = handler;
        libc::sigemptyset(&mut action.sa_mask);
        action.sa_flags = 0;
        if libc::sigaction(signal, &action, std::ptr::null_mut()) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}
