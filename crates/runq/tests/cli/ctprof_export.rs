//! `runq ctprof export` and the safe-file rules end to end: OpenMetrics to
//! a file, a symlink at `--output` refused with its target untouched, the
//! capture's capability line.

use crate::common::runq;

/// Captures a snapshot into `dir` and checks the capability line.
fn capture(dir: &std::path::Path) -> std::path::PathBuf {
    let snap = dir.join("s.ctprof.zst");
    let out = runq()
        .args([
            "ctprof",
            "capture",
            "-o",
            snap.to_str().unwrap(),
            "--no-jemalloc",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let caps = text
        .lines()
        .find(|l| l.starts_with("capabilities: "))
        .unwrap();
    for name in [
        "schedstats ",
        "delayacct ",
        "taskstats ",
        "psi ",
        "sched_ext ",
        "cgroup ",
    ] {
        assert!(caps.contains(name), "{caps}");
    }
    snap
}

#[test]
fn export_writes_openmetrics_to_a_file() {
    let d = tempfile::tempdir().unwrap();
    let snap = capture(d.path());
    let prom = d.path().join("runq.prom");
    let out = runq()
        .args([
            "ctprof",
            "export",
            "--format",
            "openmetrics",
            "--group-by",
            "cgroup",
        ])
        .args([snap.to_str().unwrap(), "-o", prom.to_str().unwrap()])
        .output()
        .unwrap();
    crate::common::assert_success(&out);
    let body = std::fs::read_to_string(&prom).unwrap();
    assert!(
        body.ends_with("# EOF\n") && body.contains("runq_thread_run_time_seconds_total{cgroup=\"")
    );
}

#[test]
fn a_symlink_at_the_output_is_refused_and_a_bad_format_is_a_usage_error() {
    let d = tempfile::tempdir().unwrap();
    let snap = capture(d.path());
    let victim = d.path().join("victim");
    std::fs::write(&victim, "keep\n").unwrap();
    let link = d.path().join("link.prom");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    for args in [
        vec![
            "ctprof",
            "export",
            "--format",
            "csv",
            snap.to_str().unwrap(),
            "-o",
            link.to_str().unwrap(),
        ],
        vec![
            "ctprof",
            "capture",
            "--no-jemalloc",
            "-o",
            link.to_str().unwrap(),
        ],
    ] {
        let out = runq().args(&args).output().unwrap();
        assert!(!out.status.success(), "{args:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("is a symlink"),
            "{args:?}"
        );
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep\n");
    }
    let out = runq()
        .args([
            "ctprof",
            "export",
            "--format",
            "xml",
            snap.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}
