use super::*;
use runq_kernel::clock::gettid;

#[test]
fn names_sort_by_utc_time() {
    assert_eq!(
        snapshot_name(1_795_426_416_559_552_400),
        "ctprof-20261123T093336.559Z.ctprof.zst"
    );
    assert_eq!(snapshot_name(0), "ctprof-19700101T000000.000Z.ctprof.zst");
    assert_eq!(files::civil_from_days(11_016), (2000, 2, 29));
    assert!(snapshot_name(1_000_000_000) < snapshot_name(1_001_000_000));
}

fn fixture_root(root: &Path) {
    let d = root.join("1/task/1");
    std::fs::create_dir_all(&d).unwrap();
    let stat = "1 (init) S 0 1 0 0 -1 4194304 11 0 2 0 30 40 0 0 20 0 1 0 5000 3133440 410 18446744073709551615 1 1 1 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 1 1 1 1 1 1 1 0\n";
    std::fs::write(d.join("stat"), stat).unwrap();
}

fn opts(root: &Path, out: &Path, stop: Stop, max_bytes: Option<u64>) -> RecordOptions {
    RecordOptions {
        dir: out.to_path_buf(),
        interval: Duration::from_millis(20),
        stop,
        max_bytes,
        full_every: 60,
        capture: CaptureOptions::fixture(root, 1),
    }
}

#[test]
fn count_writes_loadable_time_named_snapshots() {
    let (root, out) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    fixture_root(root.path());
    let stop = AtomicBool::new(false);
    let mut seen = Vec::new();
    let o = opts(root.path(), out.path(), Stop::Count(3), None);
    let sum = record(&o, &stop, |p, _| seen.push(p.to_path_buf())).unwrap();
    assert_eq!(sum.snapshots, 3);
    assert_eq!(sum.exited_threads, 0, "a fixture tree counts no host exits");
    assert!(sum
        .exits_unavailable
        .unwrap()
        .contains("not the live /proc"));
    let files = list_snapshots(out.path()).unwrap();
    assert_eq!(files.len(), 3);
    for (p, _) in &files {
        assert_eq!(crate::load(p).unwrap().threads.len(), 1);
    }
    assert_eq!(sum.bytes_on_disk, files.iter().map(|f| f.1).sum::<u64>());
    assert_eq!(
        std::fs::read_dir(out.path()).unwrap().count(),
        3,
        "no temp files"
    );
}

#[test]
fn max_bytes_keeps_disk_use_under_the_bound() {
    let (root, out) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    fixture_root(root.path());
    let stop = AtomicBool::new(false);
    let one = record(
        &opts(root.path(), out.path(), Stop::Count(1), None),
        &stop,
        |_, _| {},
    )
    .unwrap()
    .bytes_on_disk;
    let budget = one * 3 + one / 2;
    let mut peak = 0;
    let o = opts(root.path(), out.path(), Stop::Count(10), Some(budget));
    let sum = record(&o, &stop, |_, _| {
        peak = peak.max(
            list_snapshots(out.path())
                .unwrap()
                .iter()
                .map(|f| f.1)
                .sum::<u64>(),
        );
    })
    .unwrap();
    let left = list_snapshots(out.path()).unwrap();
    assert!(
        sum.bytes_on_disk <= budget,
        "{} > {budget}",
        sum.bytes_on_disk
    );
    assert_eq!(left.len(), 3);
    assert_eq!(sum.removed, 8, "the first run's file and 7 of this run's");
    // Between a write and the clean-up the directory holds one file more.
    assert!(peak <= budget + one + one / 4, "peak {peak}");
}

#[test]
fn interrupt_stops_after_a_whole_snapshot() {
    let (root, out) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    fixture_root(root.path());
    let stop = AtomicBool::new(false);
    let o = opts(
        root.path(),
        out.path(),
        Stop::Duration(Duration::from_secs(3600)),
        None,
    );
    let sum = record(&o, &stop, |_, _| stop.store(true, Ordering::Relaxed)).unwrap();
    assert!(sum.interrupted);
    assert_eq!(sum.snapshots, 1);
}

#[test]
fn select_first_last_and_time() {
    let d = tempfile::tempdir().unwrap();
    let t0 = 1_795_426_416_000_000_000u64;
    for s in [0u64, 60, 120] {
        std::fs::write(d.path().join(snapshot_name(t0 + s * 1_000_000_000)), b"x").unwrap();
    }
    let name = |p: PathBuf| p.file_name().unwrap().to_string_lossy().into_owned();
    assert_eq!(
        name(select(d.path(), "first").unwrap()),
        "ctprof-20261123T093336.000Z.ctprof.zst"
    );
    assert_eq!(
        name(select(d.path(), "last").unwrap()),
        "ctprof-20261123T093536.000Z.ctprof.zst"
    );
    assert_eq!(
        name(select(d.path(), "2026-11-23T09:35:00").unwrap()),
        "ctprof-20261123T093436.000Z.ctprof.zst"
    );
    assert_eq!(
        name(select(d.path(), "20261123T0934").unwrap()),
        "ctprof-20261123T093436.000Z.ctprof.zst",
        "a prefix means the end of that minute"
    );
    assert!(select(d.path(), "2026-11-23T09:00")
        .unwrap_err()
        .contains("first snapshot is"));
    assert!(select(d.path(), "yesterday")
        .unwrap_err()
        .contains("@first, @last"));
}

fn schedstat_fixture(root: &Path, run: u64) {
    std::fs::write(root.join("1/task/1/schedstat"), format!("{run} 5 {run}\n")).unwrap();
}

#[test]
fn max_bytes_removes_a_full_snapshot_only_with_its_deltas() {
    let (root, out) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    fixture_root(root.path());
    schedstat_fixture(root.path(), 1);
    let stop = AtomicBool::new(false);
    let mut o = opts(root.path(), out.path(), Stop::Count(1), None);
    let one = record(&o, &stop, |_, _| {}).unwrap().bytes_on_disk;
    std::fs::remove_dir_all(out.path()).unwrap();
    std::fs::create_dir(out.path()).unwrap();
    // Room for a few segments of one full snapshot and several deltas.
    let budget = one * 8;
    (o.stop, o.max_bytes, o.full_every) = (Stop::Count(60), Some(budget), 5);
    let mut run = 1;
    let sum = record(&o, &stop, |_, _| {
        run += 1;
        schedstat_fixture(root.path(), run);
    })
    .unwrap();
    assert!(sum.removed > 0 && sum.full_snapshots >= 12, "{sum:?}");
    assert!(
        sum.bytes_on_disk <= budget,
        "{} > {budget}",
        sum.bytes_on_disk
    );
    let left = list_snapshots(out.path()).unwrap();
    assert!(
        !files::is_delta(&left[0].0),
        "the oldest left is a full one"
    );
    assert!(left.iter().any(|(p, _)| files::is_delta(p)));
    for (p, _) in &left {
        let s = crate::load(p).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s.threads.len(), 1);
    }
    let last = crate::load(&left.last().unwrap().0).unwrap();
    assert_eq!(
        last.threads[0].run_time_ns.0,
        run - 1,
        "the last value written"
    );
}

#[test]
fn threads_that_come_and_go_are_rebuilt_and_tallied() {
    let out = tempfile::tempdir().unwrap();
    let stop = AtomicBool::new(false);
    let o = RecordOptions {
        dir: out.path().to_path_buf(),
        interval: Duration::from_millis(300),
        stop: Stop::Count(4),
        max_bytes: None,
        full_every: 60,
        capture: CaptureOptions {
            taskstats: false,
            jemalloc: false,
            cgroups: false,
            workers: 1,
            ..CaptureOptions::default()
        },
    };
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let (tid_tx, tid_rx) = std::sync::mpsc::channel();
    let mut worker = None;
    let mut rx = Some(rx);
    let mut n = 0;
    let sum = record(&o, &stop, |_, _| {
        n += 1;
        if n == 1 {
            let rx = rx.take().unwrap();
            let tid_tx = tid_tx.clone();
            worker = Some(std::thread::spawn(move || {
                tid_tx.send(gettid()).unwrap();
                let _ = rx.recv();
            }));
        } else if n == 2 {
            tx.send(()).unwrap();
            worker.take().unwrap().join().unwrap();
        }
    })
    .unwrap();
    let tid = tid_rx.recv().unwrap();
    let files = list_snapshots(out.path()).unwrap();
    assert_eq!(sum.full_snapshots, 1);
    let snaps: Vec<_> = files.iter().map(|(p, _)| crate::load(p).unwrap()).collect();
    let has = |i: usize| snaps[i].threads.iter().any(|t| t.tid == tid);
    assert!(
        !has(0) && has(1) && !has(2) && !has(3),
        "present in the 2nd only"
    );
    if sum.exits_unavailable.is_some() {
        eprintln!("skipped the exit tally: needs root");
        return;
    }
    let me = std::process::id();
    let tallied: u64 = snaps[2..]
        .iter()
        .flat_map(|s| &s.exited)
        .filter(|e| e.tgid == me)
        .map(|e| e.threads)
        .sum();
    assert!(tallied >= 1, "the exited thread is in a delta's tally");
}
