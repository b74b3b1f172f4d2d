//! Signal handling shared by the tools: SIGINT, SIGTERM, SIGHUP (a closed
//! terminal) and SIGQUIT set a flag the caller's loop polls (so a run stops its workers and removes its
//! cgroups, a recorder finishes its snapshot, instead of dying midway),
//! and a plain `sigaction` installer without `SA_RESTART`.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);
static SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    SIGNAL.store(sig, Ordering::Relaxed);
    INTERRUPTED.store(true, Ordering::Relaxed);
}

/// The signals that end a long command the one way: a report of what it
/// had, cleanup, and exit 128+N.
pub const ENDING_SIGNALS: [libc::c_int; 4] =
    [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

/// Routes the [`ENDING_SIGNALS`] to the flag; returns it.
pub fn install() -> std::io::Result<&'static AtomicBool> {
    for sig in ENDING_SIGNALS {
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

/// Signals blocked in the calling thread until [`BlockedSignals::restore`]
/// (or drop). Held across `fork()`, it closes the window in which a new
/// child has the default action for a signal (SIGUSR1 terminates) before
/// it installs its own handler: the child inherits the blocked mask,
/// installs its handlers, then restores, and a signal sent meanwhile is
/// delivered then.
#[derive(Debug)]
pub struct BlockedSignals {
    old: libc::sigset_t,
    restored: bool,
}

impl BlockedSignals {
    /// Blocks `signals` in the calling thread.
    pub fn block(signals: &[libc::c_int]) -> std::io::Result<BlockedSignals> {
        // SAFETY: zeroed sigset_t values are initialised by sigemptyset
        // before use; pthread_sigmask only changes the calling thread.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            let mut old: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            for &s in signals {
                libc::sigaddset(&mut set, s);
            }
            let rc = libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
            if rc != 0 {
                return Err(std::io::Error::from_raw_os_error(rc));
            }
            Ok(BlockedSignals {
                old,
                restored: false,
            })
        }
    }

    /// Restores the mask the thread had before [`BlockedSignals::block`];
    /// signals that arrived meanwhile are delivered now.
    pub fn restore(&mut self) {
        if !self.restored {
            // SAFETY: `old` was filled by pthread_sigmask.
            unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &self.old, std::ptr::null_mut()) };
            self.restored = true;
        }
    }
}

impl Drop for BlockedSignals {
    fn drop(&mut self) {
        self.restore();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    static SEEN: AtomicUsize = AtomicUsize::new(0);

    extern "C" fn count(_: libc::c_int) {
        SEEN.fetch_add(1, Ordering::Relaxed);
    }

    #[test]
    fn a_signal_sent_while_blocked_is_delivered_on_restore() {
        install_handler(libc::SIGUSR2, count as *const () as usize).unwrap();
        let mut blocked = BlockedSignals::block(&[libc::SIGUSR2]).unwrap();
        // SAFETY: signalling the calling thread.
        unsafe { libc::pthread_kill(libc::pthread_self(), libc::SIGUSR2) };
        assert_eq!(SEEN.load(Ordering::Relaxed), 0, "delivered while blocked");
        blocked.restore();
        assert_eq!(SEEN.load(Ordering::Relaxed), 1, "not delivered on restore");
    }
}
