use std::path::{Path, PathBuf};

use super::*;
use crate::capture::{capture, CaptureOptions};
use crate::record::files::{delta_name, snapshot_name};
use crate::record::steady::Steady;
use runq_common::safefile::Replace;

const STAT: &str = "TID (COMM) S 1 1 0 0 -1 4194304 11 0 2 0 UT 40 0 0 20 0 NT 0 START 3133440 410 18446744073709551615 1 1 1 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 1 1 1 1 1 1 1 0\n";

/// Writes a fixture thread: stat (utime, thread count, start time),
/// schedstat, io and cgroup.
fn task(root: &Path, tgid: u32, tid: u32, comm: &str, ut: u64, nt: u32, run: u64) -> PathBuf {
    let d = root.join(format!("{tgid}/task/{tid}"));
    std::fs::create_dir_all(&d).unwrap();
    let stat = STAT
        .replace("TID", &tid.to_string())
        .replace("COMM", comm)
        .replace("UT", &ut.to_string())
        .replace("NT", &nt.to_string())
        .replace("START", &(1000 + tid).to_string());
    std::fs::write(d.join("stat"), stat).unwrap();
    std::fs::write(d.join("schedstat"), format!("{run} 20 {}\n", run / 100)).unwrap();
    std::fs::write(d.join("io"), format!("rchar: {ut}\nwchar: 5\n")).unwrap();
    std::fs::write(d.join("cgroup"), "0::/app\n").unwrap();
    d
}

fn opts(root: &Path) -> CaptureOptions {
    CaptureOptions::fixture(root, 2)
}

/// Captures through `steady` and writes the snapshot into `out` as a full
/// or a delta snapshot (against `prev`); returns the file name.
fn step(steady: &mut Steady, out: &Path, full: bool, base: &str, prev: &str) -> String {
    let snap = steady.next(full);
    let at = snap.captured_at_unix_ns;
    let name = if full {
        snapshot_name(at)
    } else {
        delta_name(at)
    };
    let path = out.join(&name);
    if full {
        crate::format::save_with(&snap, &path, Replace::Never).unwrap();
    } else {
        let d = make_delta(&steady.old, &steady.fresh, &snap, base, prev);
        crate::format::save_with(&d, &path, Replace::Never).unwrap();
    }
    steady.keep(snap);
    std::thread::sleep(std::time::Duration::from_millis(2));
    name
}

#[test]
fn full_plus_deltas_equals_a_full_capture_of_the_same_state() {
    let (d, out) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let root = d.path();
    task(root, 10, 10, "app", 30, 3, 1_000_000);
    task(root, 10, 11, "busy", 50, 3, 2_000_000);
    task(root, 10, 12, "idle", 7, 3, 300_000);
    task(root, 20, 20, "other", 9, 1, 400_000);
    let mut steady = Steady::new(&opts(root));
    let base = step(&mut steady, out.path(), true, "", "");
    // Interval 2: the busy thread ran; a thread of another process left.
    task(root, 10, 11, "busy", 60, 3, 2_500_000);
    std::fs::remove_dir_all(root.join("20")).unwrap();
    let d1 = step(&mut steady, out.path(), false, &base, &base);
    assert!(steady.fresh.contains(&11) && steady.fresh.contains(&10));
    assert!(!steady.fresh.contains(&12), "an idle thread is not re-read");
    // Interval 3: a new process, a new thread in the first one, and the
    // busy thread goes back to no write bytes (a field that disappears).
    task(root, 30, 30, "new", 1, 1, 100_000);
    task(root, 10, 13, "late", 2, 4, 50_000);
    let t = task(root, 10, 11, "busy", 70, 4, 3_000_000);
    std::fs::write(t.join("io"), "rchar: 70\nwchar: 0\n").unwrap();
    let d2 = step(&mut steady, out.path(), false, &base, &d1);

    let rebuilt = crate::load(&out.path().join(&d2)).unwrap();
    let fresh = capture(&opts(root));
    assert_eq!(rebuilt.threads, fresh.threads);
    assert_eq!(rebuilt.capabilities, fresh.capabilities);
    let middle = crate::load(&out.path().join(&d1)).unwrap();
    let tids: Vec<u32> = middle.threads.iter().map(|t| t.tid).collect();
    assert_eq!(
        tids,
        [10, 11, 12],
        "the gone process is gone, the new not yet"
    );
    assert_eq!(middle.threads[1].utime_clock_ticks.0, 60);
}

#[test]
fn a_broken_chain_is_an_error_naming_it() {
    let (d, out) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let root = d.path();
    task(root, 10, 10, "app", 30, 1, 1_000_000);
    let mut steady = Steady::new(&opts(root));
    let base = step(&mut steady, out.path(), true, "", "");
    task(root, 10, 10, "app", 31, 1, 1_100_000);
    let d1 = step(&mut steady, out.path(), false, &base, &base);
    task(root, 10, 10, "app", 32, 1, 1_200_000);
    let d2 = step(&mut steady, out.path(), false, &base, &d1);
    std::fs::remove_file(out.path().join(&d1)).unwrap();
    let e = crate::load(&out.path().join(&d2)).unwrap_err().to_string();
    assert!(e.contains("delta chain broken"), "{e}");
    std::fs::remove_file(out.path().join(&base)).unwrap();
    let e = crate::load(&out.path().join(&d2)).unwrap_err().to_string();
    assert!(e.contains("its full snapshot"), "{e}");
    let bytes = std::fs::read(out.path().join(&d2)).unwrap();
    assert!(crate::format::decode(&bytes, Path::new("x")).is_err());
}

#[test]
fn unchanged_threads_are_not_in_a_delta() {
    let old = crate::model::ThreadState {
        tid: 5,
        run_time_ns: crate::metric_types::MonotonicNs(10),
        comm: "w".into(),
        ..Default::default()
    };
    assert!(diff_thread(Some(&old), &old).is_none());
    let mut new = old.clone();
    new.run_time_ns.0 = 11;
    new.comm.clear();
    let d = diff_thread(Some(&old), &new).unwrap();
    assert_eq!(d.set.keys().collect::<Vec<_>>(), ["run_time_ns"]);
    assert_eq!(d.unset, ["comm"]);
}
