//! `runq run --scheduler` end to end with stand-in schedulers (small shell
//! programs): readiness by output pattern and by delay, a death mid-run
//! quoted in every report, a scheduler that never becomes ready, runq
//! interrupted or killed, and bad input. Nothing may be left running.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use crate::common::*;
use serde_json::Value;

/// A scenario of one spinner for `duration`, with only the checks that do
/// not judge the CPU it gets (other test binaries may be running), and
/// `extra` top-level keys (e.g. a `[scheduler]` table).
fn scenario(dir: &Path, duration: &str, extra: &str) -> String {
    let path = dir.join("s.toml");
    let text = format!(
        "name = \"sched\"\nduration = \"{duration}\"\n{extra}\n\
         [checks]\ndisable = [\"max_gap_ms\", \"max_offcpu_spread_pct\", \"min_fair_share\", \
         \"min_numa_locality\", \"max_p99_wake_latency_us\"]\n\
         [[group]]\nname = \"spin\"\nwork_type = \"SpinWait\"\nworkers = 1\n"
    );
    std::fs::write(&path, text).unwrap();
    path.to_string_lossy().into_owned()
}

/// A stand-in that writes its pid to `dir/pid`, runs `body`, then sleeps.
fn stand_in(dir: &Path, body: &str) -> String {
    let pidfile = dir.join("pid");
    format!(
        "sh -c 'echo $$ > {}; {body}; exec sleep 1000'",
        pidfile.display()
    )
}

fn stand_in_pid(dir: &Path) -> i32 {
    wait_for(Duration::from_secs(10), "the stand-in's pid file", || {
        std::fs::read_to_string(dir.join("pid"))
            .ok()
            .and_then(|t| t.trim().parse().ok())
    })
}

fn run(args: &[&str]) -> Output {
    runq().args(args).output().expect("run runq")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn json_of(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("bad JSON ({e}); stderr: {}", stderr(out)))
}

fn check<'a>(v: &'a Value, name: &str) -> &'a Value {
    v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no {name} check in {}", v["checks"]))
}

/// Asserts a passing run with a live scheduler the whole time, and that
/// the stand-in is gone afterwards.
fn assert_passed_and_gone(out: &Output, dir: &Path, min_ready_ms: u64) {
    let v = json_of(out);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(out));
    assert_eq!(v["verdict"], "pass");
    assert_eq!(check(&v, "scheduler_alive")["pass"], true);
    let s = &v["scheduler"];
    let pid = stand_in_pid(dir);
    assert_eq!(s["pid"], pid, "the watched pid is the stand-in's own");
    assert!(s["ready_ms"].as_u64().unwrap() >= min_ready_ms, "{s}");
    assert!(s["stopped"].as_str().unwrap().contains("SIGINT"), "{s}");
    assert!(v["scheduler_death"].is_null());
    assert!(!alive(pid), "the stand-in {pid} outlived the run");
    assert_sched_ext_checks_judged_or_skipped(&v);
}

/// With a scheduler named, each sched_ext check is either judged or
/// skipped with its reason, never both and never silently dropped (the
/// host's kernel decides which: without sched_ext, all of them skip).
fn assert_sched_ext_checks_judged_or_skipped(v: &Value) {
    let skipped = v["skipped_checks"].as_array().cloned().unwrap_or_default();
    for name in [
        "max_scx_rejected_tasks",
        "max_scx_fallback_rate",
        "max_scx_keep_last_rate",
        "max_rq_clock_stall_ms",
        "max_scx_local_dsq_depth",
    ] {
        let judged = v["checks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["name"] == name);
        let skip = skipped.iter().find(|c| c["name"] == name);
        assert!(judged != skip.is_some(), "{name}: {}", v["skipped_checks"]);
        if let Some(s) = skip {
            assert_eq!(s["group"], "scheduler");
            assert!(!s["reason"].as_str().unwrap().is_empty(), "{s}");
        }
    }
}

#[test]
fn ready_by_stdout_pattern_then_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let scn = scenario(dir.path(), "500ms", "");
    let cmd = stand_in(dir.path(), "echo starting; sleep 0.1; echo ready");
    let out = run(&[
        "run",
        &scn,
        "--json",
        "--scheduler",
        &cmd,
        "--scheduler-ready-pattern",
        "^ready$",
    ]);
    assert_passed_and_gone(&out, dir.path(), 100);
}

#[test]
fn ready_after_a_delay_from_the_scenario_file() {
    let dir = tempfile::tempdir().unwrap();
    let cmd = stand_in(dir.path(), "true");
    let table = format!("[scheduler]\ncommand = \"{cmd}\"\nready_after = \"150ms\"\n");
    let scn = scenario(dir.path(), "500ms", &table);
    let out = run(&["run", &scn, "--json"]);
    assert_passed_and_gone(&out, dir.path(), 150);
    // The flag overrides the file's readiness.
    let out = run(&["run", &scn, "--json", "--scheduler-ready-after", "300ms"]);
    assert_passed_and_gone(&out, dir.path(), 300);
    let v = json_of(&out);
    assert_eq!(
        v["scenario_spec"]["scheduler"]["ready"]["after_ns"],
        300_000_000
    );
}

/// A stand-in that prints noise and one error line on stderr, then exits
/// with status 3 about 300 ms into the run.
const DYING: &str =
    "echo ready; i=0; while [ $i -lt 60 ]; do echo noise line $i >&2; i=$((i+1)); done; \
     sleep 0.3; echo \"scx_bpf_error: invalid CPU -1\" >&2; echo noise tail >&2; exit 3";

#[test]
fn a_death_mid_run_fails_the_run_and_every_report_quotes_it() {
    let dir = tempfile::tempdir().unwrap();
    let scn = scenario(dir.path(), "2s", "");
    let cmd = format!("sh -c '{DYING}'");
    let (json, junit) = (dir.path().join("o.json"), dir.path().join("j.xml"));
    let out = run(&[
        "run",
        &scn,
        "--scheduler",
        &cmd,
        "--scheduler-ready-pattern",
        "ready",
        "--output",
        json.to_str().unwrap(),
        "--junit",
        junit.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("died at") && text.contains("exited with status 3"),
        "{text}"
    );
    assert!(
        text.contains("stderr: scx_bpf_error: invalid CPU -1"),
        "{text}"
    );
    assert!(text.contains("FAIL scheduler_alive"), "{text}");
    assert!(
        !text.contains("noise line 1\n") && !text.contains("noise line 30"),
        "{text}"
    );
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    runq_testkit::assert_matches_schema("run", &v);
    let death = &v["scheduler_death"];
    assert_eq!(death["exit_code"], 3);
    assert_eq!(death["stderr"][0], "scx_bpf_error: invalid CPU -1");
    assert!(death["stderr"].as_array().unwrap().len() <= 5);
    assert_eq!(death["stderr_lines"], 62);
    assert_eq!(v["repeats"][0]["scheduler_death"]["exit_code"], 3);
    assert!(
        v["run_ns"].as_u64().unwrap() < 1_900_000_000,
        "the run stops at the death"
    );
    let xml = std::fs::read_to_string(&junit).unwrap();
    let case = &xml[xml.find("name=\"scheduler_alive\"").expect("testcase")..];
    assert!(
        case.contains("<failure") && case.contains("exited with status 3"),
        "{xml}"
    );
    assert!(
        case.contains("stderr: scx_bpf_error: invalid CPU -1"),
        "{xml}"
    );
}

/// `--no-cgroups` unless root, in which case the run also places its
/// worker in a cgroup (to see none is left behind).
fn never_ready_args(dir: &Path) -> (Vec<String>, String) {
    let cgroup = "[[cgroup]]\nname = \"w\"\n";
    let root = runq_testkit::is_root();
    let mut scn = scenario(dir, "1s", if root { cgroup } else { "" });
    if root {
        let text = std::fs::read_to_string(&scn).unwrap() + "cgroup = \"w\"\n";
        scn = dir.join("c.toml").to_string_lossy().into_owned();
        std::fs::write(&scn, text).unwrap();
    }
    let cmd = stand_in(dir, "echo loading; echo libbpf: loading BPF >&2");
    let mut args: Vec<String> = ["run", &scn, "--scheduler", &cmd].map(String::from).into();
    args.extend(["--scheduler-ready-pattern", "^ready"].map(String::from));
    if !root {
        args.push("--no-cgroups".into());
    }
    (args, cmd)
}

#[test]
fn a_scheduler_that_never_becomes_ready_times_out_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let (mut args, cmd) = never_ready_args(dir.path());
    args.extend(["--scheduler-ready-timeout", "300ms"].map(String::from));
    let child = runq()
        .args(&args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let runq_pid = child.id();
    let out = child.wait_with_output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains(&format!("scheduler {cmd:?} was not ready after 300ms")),
        "{err}"
    );
    assert!(
        err.contains("no line of its stdout (1 lines, last \"loading\") or stderr (1 lines) matched /^ready/"),
        "{err}"
    );
    assert!(err.contains("stderr: libbpf: loading BPF"), "{err}");
    assert!(!alive(stand_in_pid(dir.path())));
    if runq_testkit::is_root() {
        assert_eq!(run_dirs_of(runq_pid), Vec::<PathBuf>::new());
    }
}

#[test]
fn with_json_a_scheduler_that_never_becomes_ready_still_prints_a_document() {
    let dir = tempfile::tempdir().unwrap();
    let (mut args, cmd) = never_ready_args(dir.path());
    args.extend(["--scheduler-ready-timeout", "200ms", "--json"].map(String::from));
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = run(&refs);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    runq_testkit::assert_matches_schema("run-error", &doc);
    assert_eq!(doc["exit_code"], 3);
    let line = doc["error"].as_str().unwrap();
    assert!(
        line.contains(&format!("scheduler {cmd:?} was not ready after 200ms")),
        "{line}"
    );
    assert!(stderr(&out).contains(line), "{}", stderr(&out));
}

#[test]
fn sigint_while_waiting_for_readiness_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (args, _) = never_ready_args(dir.path());
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let child = spawn(&refs);
    let runq_pid = child.id();
    let pid = stand_in_pid(dir.path());
    signal(runq_pid as i32, libc::SIGINT);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    assert!(stderr(&out).contains("interrupted while waiting for scheduler"));
    assert!(!alive(pid));
    if runq_testkit::is_root() {
        assert_eq!(run_dirs_of(runq_pid), Vec::<PathBuf>::new());
    }
}

#[test]
fn sigkill_of_runq_takes_the_scheduler_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let scn = scenario(dir.path(), "2s", "");
    let cmd = stand_in(dir.path(), "true");
    let child = spawn(&["run", &scn, "--no-cgroups", "--scheduler", &cmd]);
    let pid = stand_in_pid(dir.path());
    std::thread::sleep(Duration::from_millis(300));
    signal(child.id() as i32, libc::SIGKILL);
    let _ = child.wait_with_output();
    wait_for(Duration::from_secs(5), "the stand-in to die", || {
        (!alive(pid)).then_some(())
    });
}

#[test]
fn bad_scheduler_input_is_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let scn = scenario(dir.path(), "500ms", "");
    let cases: [(&[&str], &str); 5] = [
        (&["--scheduler", ""], "the scheduler command is empty"),
        (
            &["--scheduler", "runq-no-such-scx -v"],
            "runq-no-such-scx not found in PATH",
        ),
        (&["--scheduler", "sh -c 'x"], "unbalanced quotes"),
        (
            &["--scheduler", "sleep 9", "--scheduler-ready-pattern", "("],
            "unclosed group",
        ),
        (&["--scheduler-ready-after", "1s"], "need --scheduler CMD"),
    ];
    for (extra, want) in cases {
        let mut args = vec!["run", scn.as_str(), "--no-cgroups"];
        args.extend_from_slice(extra);
        let out = run(&args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {err}");
        assert!(err.contains(want), "{extra:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{extra:?}: {err}");
    }
    let bad = scenario(
        dir.path(),
        "500ms",
        "[scheduler]\ncommand = \"sleep 9\"\nready_patern = \"x\"\n",
    );
    let out = run(&["run", &bad]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("s.toml:3: scheduler: unknown key `ready_patern`"),
        "{err}"
    );
}
