//! `runq ctprof` end to end: capture, show, compare, metric-list, bad
//! input, and `runq run --ctprof` on SpinWait workers in a cgroup (root).

use crate::common::runq;
use serde_json::Value;

/// The root tests one at a time: the run test judges the CPU its spinners
/// get, which a concurrent capture would take.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn run_ok(args: &[&str]) -> String {
    let out = runq().args(args).output().expect("run runq");
    assert!(
        out.status.success(),
        "runq {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn run_fail(args: &[&str]) -> (i32, String) {
    let out = runq().args(args).output().expect("run runq");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn capture_show_compare_roundtrip() {
    let d = tempfile::tempdir().unwrap();
    let a = d.path().join("a.ctprof.zst");
    let b = d.path().join("b.ctprof.zst");
    let summary: Value = serde_json::from_str(&run_ok(&[
        "ctprof",
        "capture",
        "-o",
        a.to_str().unwrap(),
        "--json",
    ]))
    .unwrap();
    assert!(summary["threads"].as_u64().unwrap() > 10);
    assert!(summary["bytes_per_thread"].as_f64().unwrap() < 300.0);
    run_ok(&[
        "ctprof",
        "capture",
        "-o",
        b.to_str().unwrap(),
        "--no-taskstats",
    ]);
    let text = run_ok(&[
        "ctprof",
        "compare",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--limit",
        "5",
    ]);
    assert!(text.contains("## Per-thread metrics by pcomm"), "{text}");
    let v: Value = serde_json::from_str(&run_ok(&[
        "ctprof",
        "show",
        b.to_str().unwrap(),
        "--json",
        "--sections",
        "primary",
        "--metrics",
        "run_time_ns",
    ]))
    .unwrap();
    let rows = v["rows"].as_array().unwrap();
    assert!(!rows.is_empty());
    assert!(rows.iter().all(|r| r["metric"] == "run_time_ns"));
    let list = run_ok(&["ctprof", "metric-list"]);
    let wakeups = list.lines().find(|l| l.starts_with("nr_wakeups ")).unwrap();
    assert!(wakeups.ends_with("[SCHEDSTATS][cfs-only]"), "{list}");
    assert!(list.contains("total_offcpu_delay_ns"));
}

#[test]
fn bad_input_is_one_clear_line() {
    let d = tempfile::tempdir().unwrap();
    let junk = d.path().join("junk.ctprof.zst");
    std::fs::write(&junk, b"not a snapshot").unwrap();
    let (code, err) = run_fail(&["ctprof", "show", junk.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(
        err.contains("not a ctprof snapshot") && err.lines().count() == 1,
        "{err}"
    );
    let good = d.path().join("g.ctprof.zst");
    run_ok(&[
        "ctprof",
        "capture",
        "-o",
        good.to_str().unwrap(),
        "--no-taskstats",
    ]);
    let bytes = std::fs::read(&good).unwrap();
    std::fs::write(&junk, &bytes[..bytes.len() / 2]).unwrap();
    let (code, err) = run_fail(&[
        "ctprof",
        "compare",
        good.to_str().unwrap(),
        junk.to_str().unwrap(),
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains("truncated or corrupt") || err.contains("not a ctprof snapshot"),
        "{err}"
    );
    let g = good.to_str().unwrap();
    let (code, err) = run_fail(&["ctprof", "show", g, "--metrics", "run_tme_ns"]);
    assert_eq!(code, 2);
    assert!(err.contains("did you mean \"run_time_ns\""), "{err}");
    let (code, err) = run_fail(&["ctprof", "show", g, "--cgroup-flatten", "/a/[b"]);
    assert_eq!(code, 2);
    assert!(err.contains("invalid --cgroup-flatten glob"), "{err}");
    let (code, err) = run_fail(&["ctprof", "show", g, "--sections", "nope"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("invalid value 'nope' for '--sections") && err.contains("host-pressure"),
        "{err}"
    );
    let out = runq()
        .args(["ctprof", "show", g, "--sections", "cgroup-stats"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("needs --group-by cgroup"));
    let (code, _) = run_fail(&["ctprof", "capture", "-o", d.path().to_str().unwrap()]);
    assert_eq!(code, 2);
    let (code, err) = run_fail(&["ctprof", "capture", "-o", "/nonexistent-dir/x.ctprof.zst"]);
    assert_eq!(code, 2);
    assert!(err.contains("does not exist"), "{err}");
}

fn delta(view: &Value, group_suffix: &str, metric: &str) -> f64 {
    view["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["metric"] == metric && r["group"].as_str().unwrap().ends_with(group_suffix))
        .unwrap_or_else(|| panic!("no {metric} row for *{group_suffix}"))["delta"]
        .as_f64()
        .unwrap_or(0.0)
}

#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn run_with_ctprof_compares_the_workload_cgroup() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("snaps");
    let started = std::time::Instant::now();
    let out = runq()
        .args([
            "run",
            "--work-type",
            "SpinWait",
            "--workers",
            "2",
            "--duration",
            "2s",
        ])
        .args(["--cgroup", "ctprof-e2e", "--ctprof", dir.to_str().unwrap()])
        .output()
        .unwrap();
    let wall_ns = started.elapsed().as_nanos() as f64;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("ctprof: compare of the run's cgroups"),
        "{stdout}"
    );
    let view: Value =
        serde_json::from_slice(&std::fs::read(dir.join("compare.json")).unwrap()).unwrap();
    runq_testkit::assert_matches_schema("ctprof-view", &view);
    assert_eq!(view["tool"], "runq ctprof compare");
    // Two spinners ran for 2 s: some CPU time (how much is the host's
    // load; a busy host gave them under 1 s), and at most all of runq's
    // wall time for each (a loaded host can stretch the run past 2 s).
    let run_time = delta(&view, "/ctprof-e2e", "run_time_ns");
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    assert!(
        run_time > 0.0 && run_time <= wall_ns * cpus.min(2.0),
        "two spinners for 2 s: {run_time} ns in runq's {wall_ns} ns"
    );
    let csw = delta(&view, "/ctprof-e2e", "voluntary_csw")
        + delta(&view, "/ctprof-e2e", "nonvoluntary_csw");
    assert!(csw > 0.0 || delta(&view, "/ctprof-e2e", "timeslices") > 0.0);
    // The same compare from the CLI on the written snapshots.
    let (b, a) = (dir.join("before.ctprof.zst"), dir.join("after.ctprof.zst"));
    let v: Value = serde_json::from_str(&run_ok(&[
        "ctprof",
        "compare",
        b.to_str().unwrap(),
        a.to_str().unwrap(),
        "--group-by",
        "cgroup",
        "--json",
    ]))
    .unwrap();
    assert_eq!(delta(&v, "/ctprof-e2e", "run_time_ns"), run_time);
}

/// A root capture against one taken as `nobody`: the taskstats rows are
/// flagged `taskstats eperm in candidate` and sorted after the comparable
/// rows, the host table marks the taskstats capability as differing.
#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn root_vs_nonroot_compare_flags_taskstats_rows() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let d = tempfile::tempdir().unwrap();
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let (a, b) = (
        d.path().join("root.ctprof.zst"),
        d.path().join("user.ctprof.zst"),
    );
    run_ok(&["ctprof", "capture", "-o", a.to_str().unwrap()]);
    let out = runq()
        .args(["ctprof", "capture", "-o", b.to_str().unwrap()])
        .uid(65534)
        .gid(65534)
        .output()
        .unwrap();
    crate::common::assert_success(&out);
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let args = ["ctprof", "compare", a, b, "--limit", "0", "--json"];
    let v: Value = serde_json::from_str(&run_ok(&args)).unwrap();
    let rows = v["rows"].as_array().unwrap();
    let flagged = |metric: &str| {
        rows.iter()
            .filter(|r| r["metric"] == metric && r["matched"] == "both")
            .map(|r| r["incomparable"].as_str().unwrap_or(""))
            .collect::<Vec<_>>()
    };
    let rss = flagged("hiwater_rss_bytes");
    assert!(!rss.is_empty());
    assert!(
        rss.iter().all(|w| *w == "taskstats eperm in candidate"),
        "{rss:?}"
    );
    let run = flagged("run_time_ns");
    assert!(run.iter().all(|w| w.is_empty()), "{run:?}");
    let taskstats = v["host"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["key"] == "capability.taskstats")
        .unwrap();
    assert_eq!(taskstats["differs"], true);
    assert_eq!(taskstats["candidate"], "denied");
    assert!(v["hosts"]["candidate"]["kernel_release"].is_string());
    let text = run_ok(&["ctprof", "compare", a, b, "--limit", "0"]);
    let lines: Vec<&str> = text.lines().collect();
    let first_flag = lines
        .iter()
        .position(|l| l.contains("[taskstats eperm in candidate]"));
    let last_run = lines
        .iter()
        .rposition(|l| l.contains(" run_time_ns ") && !l.contains("eperm"));
    assert!(
        first_flag.unwrap() > last_run.unwrap(),
        "flagged rows sort last"
    );
}
