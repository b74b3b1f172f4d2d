use super::*;

const STAT: &str = "TID (COMM) S 1 1 0 0 -1 4194304 11 0 2 0 30 40 0 0 20 0 NT 0 5000 3133440 410 18446744073709551615 1 1 1 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 1 1 1 1 1 1 1 0\n";

fn task(root: &Path, tgid: u32, tid: u32, comm: &str) -> PathBuf {
    let d = root.join(format!("{tgid}/task/{tid}"));
    std::fs::create_dir_all(&d).unwrap();
    let stat = STAT
        .replace("TID", &tid.to_string())
        .replace("COMM", comm)
        .replace("NT", "2");
    std::fs::write(d.join("stat"), stat).unwrap();
    d
}

fn opts(root: &Path) -> CaptureOptions {
    CaptureOptions::fixture(root, 2)
}

#[test]
fn synthetic_tree() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path();
    let leader = task(root, 10, 10, "my (odd) app");
    std::fs::write(leader.join("schedstat"), "1000 200 3\n").unwrap();
    std::fs::write(
        leader.join("sched"),
        "x (10, #threads: 2)\n---\nnr_voluntary_switches : 5\nnr_involuntary_switches : 6\nnr_switches : 11\nse.slice : 3000000\nstats.sum_sleep_runtime : 10.000000\nstats.sum_block_runtime : 4.000000\nstats.nr_wakeups : 9\n",
    )
    .unwrap();
    std::fs::write(leader.join("io"), "rchar: 100\nwchar: 5\n").unwrap();
    std::fs::write(leader.join("cgroup"), "1:cpu:/\n0::/a/b\n").unwrap();
    std::fs::write(leader.join("smaps_rollup"), "Rss: 12 kB\n").unwrap();
    // A worker thread with only stat + status (no sched: no SCHED_DEBUG).
    let w = task(root, 10, 11, "worker");
    std::fs::write(
        w.join("status"),
        "voluntary_ctxt_switches:\t7\nnonvoluntary_ctxt_switches:\t1\n",
    )
    .unwrap();
    std::fs::write(w.join("schedstat"), "garbage").unwrap();
    // A thread that vanished: task dir without stat.
    std::fs::create_dir_all(root.join("10/task/12")).unwrap();
    std::fs::create_dir_all(root.join("self")).unwrap();

    let s = capture(&opts(root));
    assert_eq!(s.threads.len(), 2);
    let l = &s.threads[0];
    assert_eq!(l.comm, "my (odd) app");
    assert_eq!(l.pcomm, "my (odd) app");
    assert_eq!(l.run_time_ns.0, 1000);
    assert_eq!(l.wait_time_ns.0, 200);
    assert_eq!(l.timeslices.0, 3);
    assert_eq!(l.voluntary_csw.0, 5);
    assert_eq!(l.voluntary_sleep_ns.0, 6_000_000);
    assert_eq!(l.block_sum.0, 4_000_000);
    assert_eq!(l.nr_wakeups.0, 9);
    assert_eq!(l.fair_slice_ns.0, 3_000_000);
    assert_eq!(l.nr_threads.0, 2);
    assert_eq!(l.start_time_clock_ticks, 5000);
    assert_eq!((l.utime_clock_ticks.0, l.stime_clock_ticks.0), (30, 40));
    assert_eq!(l.rchar.0, 100);
    assert_eq!(l.cgroup, "/a/b");
    assert_eq!(l.smaps_rollup_kb.get("Rss"), Some(&12));
    assert_eq!(l.policy.0, "SCHED_OTHER");
    let w = &s.threads[1];
    assert_eq!(w.pcomm, "my (odd) app");
    assert_eq!(w.comm, "worker");
    assert_eq!(w.voluntary_csw.0, 7);
    assert_eq!(w.nr_threads.0, 0, "nr_threads is leader-only");
    assert_eq!(w.run_time_ns.0, 0);
    let probe = s.probe_summary.unwrap();
    assert_eq!(probe.threads_listed, 3);
    assert_eq!(probe.threads_vanished, 1);
    assert_eq!(probe.read_missing.get("sched"), Some(&1));
    assert_eq!(probe.read_missing.get("io"), Some(&1));
    let parse = s.parse_summary.unwrap();
    assert_eq!(parse.failed.get("schedstat"), Some(&1));
    assert_eq!(parse.sched_without_schedstats, 0);
    assert!(s.taskstats_summary.unwrap().unavailable.is_some());
}

#[test]
fn unreadable_file_counts_as_denied() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        // Root reads mode-000 files, so make the file a directory instead:
        // reading it fails with EISDIR ("other").
        let d = tempfile::tempdir().unwrap();
        let t = task(d.path(), 5, 5, "x");
        std::fs::create_dir(t.join("io")).unwrap();
        let s = capture(&opts(d.path()));
        assert_eq!(s.threads.len(), 1);
        assert_eq!(s.probe_summary.unwrap().read_other.get("io"), Some(&1));
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let d = tempfile::tempdir().unwrap();
    let t = task(d.path(), 5, 5, "x");
    std::fs::write(t.join("io"), "rchar: 1\n").unwrap();
    std::fs::set_permissions(t.join("io"), std::fs::Permissions::from_mode(0o000)).unwrap();
    let s = capture(&opts(d.path()));
    assert_eq!(s.probe_summary.unwrap().read_denied.get("io"), Some(&1));
}

#[test]
fn empty_root_gives_empty_snapshot() {
    let d = tempfile::tempdir().unwrap();
    let s = capture(&opts(d.path()));
    assert!(s.threads.is_empty());
    assert_eq!(s.format, crate::model::FORMAT_NAME);
}

#[test]
fn default_workers_are_one_per_available_cpu() {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    assert_eq!(super::worker_count(0), cpus, "no cap below the CPU count");
    assert_eq!(super::worker_count(3), 3);
}

/// A v2 cgroup of the synthetic tree (`<root>/sys/fs/cgroup/<rel>`).
fn v2_cgroup(root: &Path, rel: &str, kind: &str) {
    let d = root.join("sys/fs/cgroup").join(rel);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("cgroup.procs"), "").unwrap();
    std::fs::write(d.join("cgroup.type"), format!("{kind}\n")).unwrap();
}

#[test]
fn a_domain_cgroup_is_read_once_per_process() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path();
    v2_cgroup(root, "app", "domain");
    v2_cgroup(root, "pool", "domain threaded");
    v2_cgroup(root, "pool/io", "threaded");
    // Process 10 in a domain: its second thread's file is not read (here
    // it has none), yet the thread holds the process's cgroup.
    std::fs::write(task(root, 10, 10, "app").join("cgroup"), "0::/app\n").unwrap();
    task(root, 10, 11, "app-worker");
    // Process 20 in a threaded domain: each thread's own file counts.
    std::fs::write(task(root, 20, 20, "pool").join("cgroup"), "0::/pool\n").unwrap();
    std::fs::write(
        task(root, 20, 21, "pool-io").join("cgroup"),
        "0::/pool/io\n",
    )
    .unwrap();
    let s = capture(&CaptureOptions::fixture(root, 1));
    let cgroups: Vec<(u32, &str)> = s
        .threads
        .iter()
        .map(|t| (t.tid, t.cgroup.as_str()))
        .collect();
    assert_eq!(
        cgroups,
        [(10, "/app"), (11, "/app"), (20, "/pool"), (21, "/pool/io")]
    );
    let probe = s.probe_summary.unwrap();
    assert_eq!(probe.read_ok.get("cgroup"), Some(&4));
    assert_eq!(probe.read_missing.get("cgroup"), None);
}

#[test]
fn workers_take_every_listed_thread_once() {
    let listed: Vec<(u32, u32)> = (0..super::MAX_CHUNK as u32 * 3 + 7)
        .map(|i| (1, i))
        .collect();
    let size = super::chunk_size(listed.len(), 2);
    assert_eq!(size, super::MAX_CHUNK.min(listed.len() / 16));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut seen = Vec::new();
    while let Some((start, part)) = super::take_chunk(&next, size, &listed) {
        assert!(part.len() <= size);
        assert_eq!(start, seen.len());
        seen.extend_from_slice(part);
    }
    assert_eq!(seen, listed);
    assert_eq!(
        super::take_chunk(&next, size, &listed),
        None,
        "stays exhausted"
    );
    let fresh = std::sync::atomic::AtomicUsize::new(0);
    assert_eq!(super::take_chunk(&fresh, size, &[]), None);
    // A small host is still shared among the workers; a large one is
    // taken at most MAX_CHUNK threads at a time.
    assert_eq!(super::chunk_size(200, 2), 16);
    assert_eq!(super::chunk_size(0, 2), 16);
    assert_eq!(super::chunk_size(100_000, 2), super::MAX_CHUNK);
}
