//! The example binary runs its custom group beside a built-in one and
//! reports both, judged like any run.

use std::process::Command;

#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn the_custom_worker_runs_in_its_cgroup_and_reports_its_work() {
    let out = Command::new(env!("CARGO_BIN_EXE_runq-custom-example"))
        .args(["--duration", "1", "--workers", "2"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{text}\n{stderr}");
    let custom = text
        .lines()
        .find(|l| l.starts_with("group checksum (Checksum): 2 workers, "))
        .unwrap_or_else(|| panic!("{text}"));
    let rate: f64 = custom
        .rsplit(", ")
        .next()
        .and_then(|r| r.split(' ').next())
        .and_then(|r| r.parse().ok())
        .unwrap_or_else(|| panic!("{custom}"));
    assert!(rate > 0.0, "{custom}");
    assert!(text.contains("PASS not_stuck checksum 0 <= 0"), "{text}");
    assert!(text.lines().any(|l| l.starts_with("verdict: ")), "{text}");
}

#[test]
fn a_bad_argument_is_a_usage_error_on_one_line() {
    let out = Command::new(env!("CARGO_BIN_EXE_runq-custom-example"))
        .args(["--workers", "many"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        err.trim(),
        "runq-custom-example: --workers many: expected 1 to 64"
    );
}
