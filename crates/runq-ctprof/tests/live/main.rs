//! Live captures against the running kernel (root tests are ignored
//! without root).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use runq_ctprof::{capture, CaptureOptions, ThreadState};
use runq_kernel::clock::gettid;

mod jemalloc;

fn pin_to_cpu0() {
    // SAFETY: zeroed cpu_set_t is valid; CPU_SET writes within it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(0, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// Spins `n` threads pinned to CPU 0 (so they wait for each other), each
/// sleeping briefly now and then; returns their tids and a stop flag.
fn busy_threads(n: usize) -> (Vec<u32>, Arc<AtomicBool>, Vec<std::thread::JoinHandle<()>>) {
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, rx) = std::sync::mpsc::channel();
    let handles = (0..n)
        .map(|_| {
            let stop = stop.clone();
            let tx = tx.clone();
            std::thread::spawn(move || {
                pin_to_cpu0();
                tx.send(gettid()).unwrap();
                while !stop.load(Ordering::Relaxed) {
                    let t = Instant::now();
                    while t.elapsed() < Duration::from_millis(20) {
                        std::hint::spin_loop();
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
            })
        })
        .collect();
    let tids = (0..n).map(|_| rx.recv().unwrap()).collect();
    (tids, stop, handles)
}

pub(crate) fn find(threads: &[ThreadState], tid: u32) -> &ThreadState {
    threads
        .iter()
        .find(|t| t.tid == tid)
        .expect("thread in snapshot")
}

#[test]
fn busy_thread_shows_run_time_and_switches() {
    let (tids, stop, handles) = busy_threads(1);
    // Until the thread has run 100 ms (a loaded machine gives it less than
    // its share), at most 10 s.
    let schedstat = format!("/proc/self/task/{}/schedstat", tids[0]);
    let ran_ns = || {
        std::fs::read_to_string(&schedstat)
            .ok()
            .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
            .unwrap_or(0)
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while ran_ns() < 100_000_000 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let snap = capture(&CaptureOptions {
        taskstats: false,
        cgroups: false,
        ..Default::default()
    });
    stop.store(true, Ordering::Relaxed);
    handles.into_iter().for_each(|h| h.join().unwrap());
    let t = find(&snap.threads, tids[0]);
    assert!(
        t.run_time_ns.0 >= 100_000_000,
        "run_time_ns {}",
        t.run_time_ns.0
    );
    assert!(t.timeslices.0 > 0);
    assert!(t.voluntary_csw.0 > 0, "the thread sleeps between spins");
    assert_eq!(t.tgid, std::process::id());
    assert_eq!(t.cpu_affinity.0, vec![0]);
    assert!(t.start_time_clock_ticks > 0);
    assert!(!t.pcomm.is_empty());
    let me = snap
        .threads
        .iter()
        .find(|t| t.tid == t.tgid && t.tgid == std::process::id())
        .unwrap();
    assert!(me.nr_threads.0 >= 2);
    assert!(me.smaps_rollup_kb.get("Rss").copied().unwrap_or(0) > 0);
    assert!(snap
        .host
        .as_ref()
        .is_some_and(|h| !h.kernel_release.is_empty()));
    let probe = snap.probe_summary.unwrap();
    assert!(probe.read_ok.get("stat").copied().unwrap_or(0) >= 2);
}

/// Restores `kernel.task_delayacct` when dropped.
struct DelayacctGuard(String);

impl Drop for DelayacctGuard {
    fn drop(&mut self) {
        let _ = std::fs::write("/proc/sys/kernel/task_delayacct", &self.0);
    }
}

#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn taskstats_delays_with_delayacct_on() {
    let Ok(old) = std::fs::read_to_string("/proc/sys/kernel/task_delayacct") else {
        eprintln!("skipped: kernel has no kernel.task_delayacct");
        return;
    };
    let _guard = DelayacctGuard(old);
    std::fs::write("/proc/sys/kernel/task_delayacct", "1").unwrap();
    let (tids, stop, handles) = busy_threads(2);
    std::thread::sleep(Duration::from_millis(400));
    let snap = capture(&CaptureOptions {
        cgroups: false,
        ..Default::default()
    });
    stop.store(true, Ordering::Relaxed);
    handles.into_iter().for_each(|h| h.join().unwrap());
    let ts = snap.taskstats_summary.unwrap();
    assert!(ts.ok_count > 0 && ts.eperm_count == 0, "{ts:?}");
    assert_eq!(ts.delayacct_enabled, Some(true));
    let t = find(&snap.threads, tids[0]);
    assert!(
        t.cpu_delay_count.0 > 0,
        "two threads share CPU 0: cpu delay count"
    );
    assert!(t.cpu_delay_total_ns.0 > 0);
    assert!(t.hiwater_vm_bytes.0 > 0 && t.hiwater_rss_bytes.0 > 0);
    let kernel_has_max = t.cpu_delay_max_ns.0 > 0;
    if kernel_has_max {
        assert!(t.cpu_delay_max_ns.0 >= t.cpu_delay_min_ns.0);
        assert!(t.cpu_delay_max_ns.0 <= t.cpu_delay_total_ns.0);
    }
}

#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn cgroup_enrichment_finds_test_cgroup() {
    let roots = runq_kernel::cgroup_stats::CgroupRoots::detect();
    let Some(v2) = roots.v2.clone() else {
        eprintln!("skipped: no cgroup v2 hierarchy mounted");
        return;
    };
    let name = format!("runq-ctprof-test-{}", std::process::id());
    let dir = v2.join(&name);
    std::fs::create_dir(&dir).unwrap();
    let mut child = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    let placed = std::fs::write(dir.join("cgroup.procs"), child.id().to_string());
    let snap = placed.as_ref().ok().map(|_| {
        capture(&CaptureOptions {
            taskstats: false,
            ..Default::default()
        })
    });
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir(&dir);
    placed.unwrap();
    let snap = snap.unwrap();
    let key = format!("/{name}");
    let t = snap
        .threads
        .iter()
        .find(|t| t.tid == child.id())
        .expect("child captured");
    assert_eq!(t.cgroup, key);
    assert_eq!(t.pcomm, "sleep");
    let st = snap
        .cgroup_stats
        .get(&key)
        .expect("stats for the test cgroup");
    assert!(st.cpu.usage_usec.is_some(), "{st:?}");
    assert_eq!(
        st.sources.get("cpu.usage_usec"),
        Some(&runq_kernel::cgroup_stats::CgroupVersion::V2)
    );
}

/// Two captures at once: a thread another tracer holds for a moment is
/// still read once it is let go (the seize of the second one used to fail
/// with EPERM, and its counters read as an error; and as the tracer's
/// exit detached it, `TracerPid` read 0 while the seize still met EPERM).
#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn a_thread_held_by_another_tracer_is_read_once_let_go() {
    let mut child = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    let tid = child.id() as i32;
    let (seized_tx, seized_rx) = std::sync::mpsc::channel();
    // The holder's exit detaches it from the thread.
    let holder = std::thread::spawn(move || {
        // SAFETY: seizes our own child; the thread's exit detaches it.
        let ok = unsafe { libc::ptrace(libc::PTRACE_SEIZE, tid, 0, 0) } == 0;
        seized_tx.send(ok).unwrap();
        std::thread::sleep(Duration::from_millis(20));
    });
    assert!(
        seized_rx.recv().unwrap(),
        "the holder could not seize {tid}"
    );
    let tp = runq_ctprof::jemalloc::thread_pointer(tid);
    holder.join().unwrap();
    let _ = child.kill();
    let _ = child.wait();
    assert!(tp.is_some_and(|tp| tp != 0), "thread pointer {tp:?}");
}

/// A process with a shared libjemalloc (LD_PRELOAD) is marked unavailable,
/// so its allocator rows read `-`, not a zero that says "no jemalloc".
#[test]
fn shared_libjemalloc_is_unavailable_not_zero() {
    let lib = [
        "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2",
        "/usr/lib64/libjemalloc.so.2",
    ]
    .into_iter()
    .find(|p| std::path::Path::new(p).exists());
    let Some(lib) = lib else {
        eprintln!("skipped: needs libjemalloc.so.2 (apt-get install libjemalloc2)");
        return;
    };
    // sleep under a name no other process on the host has: a symlink, as
    // the name comes from the path executed. (A copy written by this
    // process could not be executed while another test's fork held the
    // copy's descriptor: ETXTBSY.)
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("jemalloc-shared");
    std::os::unix::fs::symlink("/bin/sleep", &bin).unwrap();
    let mut child = std::process::Command::new(&bin)
        .arg("30")
        .env("LD_PRELOAD", lib)
        .spawn()
        .unwrap();
    let maps = format!("/proc/{}/maps", child.id());
    let deadline = Instant::now() + Duration::from_secs(10);
    while !std::fs::read_to_string(&maps).is_ok_and(|m| m.contains("libjemalloc")) {
        assert!(Instant::now() < deadline, "sleep never mapped {lib}");
        std::thread::sleep(Duration::from_millis(10));
    }
    let snap = capture(&CaptureOptions {
        taskstats: false,
        cgroups: false,
        ..Default::default()
    });
    let _ = child.kill();
    let _ = child.wait();
    use runq_ctprof::avail::{Reason, Source};
    let t = find(&snap.threads, child.id());
    assert_eq!(
        t.unavailable.get(&Source::Jemalloc),
        Some(&Reason::DynamicLib)
    );
    let view = runq_ctprof::compare::show(&snap, &Default::default());
    let row = view
        .rows
        .iter()
        .find(|r| r.group == "jemalloc-shared" && r.metric == "allocated_bytes")
        .unwrap();
    assert_eq!(row.baseline, runq_ctprof::view::Cell::Missing);
    // Processes without jemalloc still read a real zero.
    let me = find(&snap.threads, std::process::id());
    assert!(!me.unavailable.contains_key(&Source::Jemalloc));
}
