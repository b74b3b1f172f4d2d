//! Engine tests through the public API, in one test binary (one link):
//! custom and built-in workers, the liveness gauntlet of every work type,
//! the watchdog, partner loss, dropping a handle, scenarios with custom
//! groups, workers that move between cgroups.
//!
//! Thread-mode workers appear among this process's threads, so tests that
//! run them hold [`thread_mode`], and a test that counts them holds
//! [`threads_alone`].

use std::sync::atomic::AtomicBool;
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

use runq_workload::{run_scenario, CgroupMode, Placement, RunOptions, RunOutcome, Scenario};

mod api;
mod cgroup_churn;
mod custom_scenario;
mod gauntlet;
mod pipe_partner;
mod series;
mod thread_drop;
mod watchdog;

/// Held (shared) by every test that runs thread-mode workers: each
/// workload obeys its own stop flag, so they run side by side.
pub fn thread_mode() -> RwLockReadGuard<'static, ()> {
    THREAD_WORKERS.read().unwrap_or_else(|e| e.into_inner())
}

/// Held by a test that must have no other test's thread workers beside
/// it: one that counts this process's worker threads, and the
/// process-mode gauntlet. Beside its hundreds of forks of this process, on
/// a loaded host, a SpinWait thread twice did no work in its 300 ms while
/// not waiting for a CPU: most likely held in its set-up while a forking
/// thread held the process's memory map (a fork stalls a sibling's mmap
/// and page faults for tens of ms, measured; the full cause is unproven).
pub fn threads_alone() -> RwLockWriteGuard<'static, ()> {
    THREAD_WORKERS.write().unwrap_or_else(|e| e.into_inner())
}

static THREAD_WORKERS: RwLock<()> = RwLock::new(());

/// Runs `scn` to its end (or until `stop` is set) with the defaults of a
/// plain `runq run`: no fault, the default worker cap, 10 s to collect.
pub fn run_to_end(scn: &Scenario, cgroups: CgroupMode, stop: &AtomicBool) -> RunOutcome {
    run_scenario(
        scn,
        RunOptions {
            cgroups,
            interrupt: stop,
            on_tick: &mut |_, _| {},
            collect_timeout: Duration::from_secs(10),
            repro: false,
            fault: None,
            max_workers_per_cpu: runq_workload::DEFAULT_WORKERS_PER_CPU,
            runnable_wait: Err("the engine tests run no probe".into()),
            recorder: Err("the engine tests run no recorder".into()),
            freeze: None,
        },
    )
    .expect("run")
}

/// The run's directory is gone from every hierarchy it was placed in.
pub fn assert_nothing_left(out: &RunOutcome) {
    let Placement::Cgroups {
        run_id,
        hierarchies,
    } = &out.placement
    else {
        panic!("not placed: {:?}", out.placement);
    };
    for h in hierarchies {
        let dir = std::path::Path::new(h).join("runq").join(run_id);
        assert!(!dir.exists(), "{} left behind", dir.display());
    }
}
