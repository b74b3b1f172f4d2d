//! Shared by the floor benchmarks: the runq side of a pinned pair, forked
//! bare references that report a rate through a pipe, and medians.

use std::collections::BTreeSet;
use std::time::Duration;

use runq_workload::{Affinity, WorkSpec, WorkType, WorkloadHandle};

/// Round trips per second of a runq pair of `work` (with `params`), both
/// workers pinned to CPU 0: the first worker's iterations over its wall
/// time (one iteration is one round trip).
pub fn engine_round_trips(work: &str, params: &[(&str, &str)], secs: f64) -> f64 {
    let params: Vec<(String, String)> = params
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let work = WorkType::from_name(work)
        .expect("type")
        .with_params(&params)
        .expect("params");
    let mut spec = WorkSpec::new(0, work, 2);
    spec.setup.affinity = Affinity::Cpus(BTreeSet::from([0]));
    let mut handle = WorkloadHandle::spawn(&[spec]).expect("spawn");
    handle.start();
    std::thread::sleep(Duration::from_secs_f64(secs));
    let reports = handle.stop_and_collect(Duration::from_secs(5));
    let r = &reports[0];
    assert!(r.exit_info.is_none(), "worker died: {r:?}");
    r.iterations as f64 * 1e9 / r.wall_time_ns as f64
}

/// Pins the calling process to CPU 0.
pub fn pin_cpu0() {
    runq_workload::placement::set_affinity(&BTreeSet::from([0])).expect("pin to CPU 0");
}

/// Runs `body` in a forked child pinned to CPU 0 and returns the `f64` it
/// produced (sent back through a pipe).
pub fn in_child(body: impl FnOnce() -> f64) -> f64 {
    let (rx, tx) = runq_workload::fd::pipe().expect("pipe");
    // SAFETY: the child runs `body`, writes 8 bytes and _exits.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        drop(rx);
        pin_cpu0();
        let bytes = body().to_le_bytes();
        // SAFETY: writing 8 bytes from a valid buffer, then exiting.
        unsafe {
            libc::write(
                std::os::fd::AsRawFd::as_raw_fd(&tx),
                bytes.as_ptr().cast(),
                8,
            );
            libc::_exit(0);
        }
    }
    drop(tx);
    let mut buf = [0u8; 8];
    let mut f = std::fs::File::from(rx);
    std::io::Read::read_exact(&mut f, &mut buf).expect("child result");
    // SAFETY: reaping our child.
    unsafe { libc::waitpid(pid, std::ptr::null_mut(), 0) };
    f64::from_le_bytes(buf)
}

/// The median of `v` (the upper one for an even count).
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// `[SECONDS] [ROUNDS]` from the command line (defaults 2 s, 5 rounds).
pub fn args() -> (f64, usize) {
    let mut args = std::env::args().skip(1);
    let secs = args.next().and_then(|a| a.parse().ok()).unwrap_or(2.0);
    let rounds = args.next().and_then(|a| a.parse().ok()).unwrap_or(5);
    (secs, rounds)
}
