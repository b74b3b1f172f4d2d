//! A thread that lives 200 ms between two `runq ctprof record` captures 1 s
//! apart shows up, with its CPU time, in the next snapshot's exited-thread
//! tally (taskstats exit notifications; root). Alone in its binary so that
//! no other test thread of this process exits meanwhile.

use std::time::{Duration, Instant};

use crate::common::{spawn, wait_for};

fn thread_cpu_ns() -> u64 {
    // SAFETY: ts is a valid out-pointer.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn short_lived_thread_is_in_the_next_exited_tally() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().to_str().unwrap();
    let child = spawn(&[
        "ctprof",
        "record",
        "--interval",
        "1s",
        "--count",
        "3",
        "-o",
        dir,
        "--no-jemalloc",
    ]);
    wait_for(Duration::from_secs(60), "the first snapshot", || {
        let n = runq_ctprof::record::list_snapshots(d.path()).ok()?.len();
        (n >= 1).then_some(())
    });
    let cpu = std::thread::spawn(|| {
        let t = Instant::now();
        let mut x = 0u64;
        while t.elapsed() < Duration::from_millis(200) {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
        }
        thread_cpu_ns()
    })
    .join()
    .unwrap();
    let exited_at = runq_kernel::clock::unix_ns();
    let out = child.wait_with_output().unwrap();
    crate::common::assert_success(&out);
    let next = runq_ctprof::record::list_snapshots(d.path())
        .unwrap()
        .into_iter()
        .map(|(p, _)| runq_ctprof::load(&p).unwrap())
        .find(|s| s.captured_at_unix_ns > exited_at)
        .expect("a snapshot after the thread exited");
    let me = std::process::id();
    let tally = next
        .exited
        .iter()
        .find(|e| e.tgid == me)
        .expect("our process in the exited tally");
    assert_eq!(tally.threads, 1);
    let ratio = tally.cpu_ns as f64 / cpu as f64;
    eprintln!(
        "exited tally {} ns, thread clock {cpu} ns, ratio {ratio:.4}",
        tally.cpu_ns
    );
    assert!(
        (0.9..=1.1).contains(&ratio),
        "tally {} ns vs thread clock {cpu} ns",
        tally.cpu_ns
    );
    assert!(
        !tally.cgroup.is_empty() && !tally.pcomm.is_empty(),
        "{tally:?}"
    );
}
