//! `runq ctprof record` end to end: SIGINT leaves only whole snapshots,
//! and `compare DIR@first DIR@last` reads a recording.

use std::path::Path;
use std::time::Duration;

use crate::common::{runq, signal, spawn, wait_for};

fn snapshots(dir: &Path) -> Vec<std::path::PathBuf> {
    runq_ctprof::record::list_snapshots(dir)
        .unwrap()
        .into_iter()
        .map(|s| s.0)
        .collect()
}

#[test]
fn sigint_leaves_whole_snapshots_only() {
    for (round, delay_ms) in [0u64, 23, 61].into_iter().enumerate() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().to_str().unwrap();
        let child = spawn(&[
            "ctprof",
            "record",
            "--interval",
            "50ms",
            "--duration",
            "1h",
            "--output",
            dir,
            "--no-jemalloc",
        ]);
        wait_for(Duration::from_secs(60), "two snapshots", || {
            (snapshots(d.path()).len() >= 2).then_some(())
        });
        std::thread::sleep(Duration::from_millis(delay_ms));
        signal(child.id() as i32, libc::SIGINT);
        let out = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        // The whole record, marked interrupted, and 128+SIGINT.
        assert_eq!(
            out.status.code(),
            Some(130),
            "round {round}: {stdout} {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(stdout.contains("(interrupted)"), "{stdout}");
        let entries: Vec<_> = std::fs::read_dir(d.path()).unwrap().flatten().collect();
        assert_eq!(
            entries.len(),
            snapshots(d.path()).len(),
            "round {round}: a temp file was left"
        );
        for p in snapshots(d.path()) {
            runq_ctprof::load(&p).unwrap_or_else(|e| panic!("round {round}: {e}"));
        }
    }
}

#[test]
fn compare_reads_a_recording_directory() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().to_str().unwrap();
    let out = runq()
        .args([
            "ctprof",
            "record",
            "--interval",
            "100ms",
            "--count",
            "3",
            "-o",
            dir,
            "--no-taskstats",
        ])
        .output()
        .unwrap();
    crate::common::assert_success(&out);
    assert_eq!(snapshots(d.path()).len(), 3);
    let (first, last) = (format!("{dir}@first"), format!("{dir}@last"));
    let out = runq()
        .args(["ctprof", "compare", &first, &last, "--limit", "3"])
        .output()
        .unwrap();
    crate::common::assert_success(&out);
    assert!(String::from_utf8_lossy(&out.stdout).contains("## Per-thread metrics by pcomm"));
    let out = runq().args(["ctprof", "show", dir]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("@first"));
    let out = runq()
        .args(["ctprof", "show", &format!("{dir}@noon")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn bad_record_flags_are_usage_errors() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().to_str().unwrap();
    for args in [
        vec!["--interval", "1s", "-o", dir],
        vec![
            "--interval",
            "1s",
            "--count",
            "2",
            "--duration",
            "1m",
            "-o",
            dir,
        ],
        vec!["--interval", "0s", "--count", "2", "-o", dir],
        vec![
            "--interval",
            "1s",
            "--count",
            "2",
            "--max-bytes",
            "12Q",
            "-o",
            dir,
        ],
    ] {
        let out = runq()
            .args(["ctprof", "record"])
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
    }
    assert_eq!(
        std::fs::read_dir(d.path()).unwrap().count(),
        0,
        "nothing left behind"
    );
}

#[test]
fn compare_two_directories_by_medians() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let dir = a.path().to_str().unwrap();
    let out = runq()
        .args(["ctprof", "record", "--interval", "50ms", "--count", "3"])
        .args([
            "--full-every",
            "2",
            "-o",
            dir,
            "--no-taskstats",
            "--no-jemalloc",
        ])
        .output()
        .unwrap();
    crate::common::assert_success(&out);
    assert!(String::from_utf8_lossy(&out.stdout).contains("3 snapshots (2 full)"));
    for (p, _) in runq_ctprof::record::list_snapshots(a.path()).unwrap() {
        std::fs::copy(&p, b.path().join(p.file_name().unwrap())).unwrap();
    }
    let bdir = b.path().to_str().unwrap();
    let out = runq()
        .args(["ctprof", "compare", dir, bdir, "--json", "--limit", "0"])
        .output()
        .unwrap();
    crate::common::assert_success(&out);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["samples"], serde_json::json!([3, 3]));
    let rows = v["rows"].as_array().unwrap();
    let noisy: Vec<_> = rows.iter().filter(|r| r.get("noise").is_some()).collect();
    assert!(!noisy.is_empty());
    assert!(
        noisy.iter().all(|r| r["noise"]["within"] == true),
        "the same snapshots on both sides never differ beyond the noise"
    );
    let out = runq()
        .args(["ctprof", "compare", dir, bdir])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("medians over 3 baseline and 3 candidate snapshots"),
        "{text}"
    );
}
