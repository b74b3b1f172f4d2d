//! Engine tests through the public API, in one test binary (one link):
//! custom and built-in workers, the liveness gauntlet of every work type,
//! the watchdog, partner loss, dropping a handle, scenarios with custom
//! groups, workers that move between cgroups.
//!
//! Thread-mode workers share the process-wide STOP flag and appear among
//! this process's threads, so tests that run them hold [`thread_mode`].

use std::sync::{Mutex, MutexGuard};

mod api;
mod cgroup_churn;
mod custom_scenario;
mod gauntlet;
mod pipe_partner;
mod series;
mod thread_drop;
mod watchdog;

/// Held by every test that runs thread-mode workers, one at a time.
pub fn thread_mode() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}
