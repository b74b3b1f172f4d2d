//! The scenario suite: files under scenarios/ run end to end with their
//! verdicts asserted, the watchdog with a stand-in scheduler, and bad
//! scenario files.

use std::path::PathBuf;
use std::time::Duration;

use crate::common::*;
use serde_json::Value;

pub(crate) fn scenario(name: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios")
        .join(name);
    p.to_string_lossy().into_owned()
}

pub(crate) fn run_json(args: &[&str]) -> (Option<i32>, Value, String) {
    let out = runq().args(args).arg("--json").output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let v = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}; {err}"));
    (out.status.code(), v, err)
}

pub(crate) fn failed_checks(v: &Value) -> Vec<String> {
    v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["pass"] == false)
        .map(|c| c.to_string())
        .collect()
}

/// Each suite scenario runs to the end: every worker completes, the
/// verdict is explained by its checks (the weight split and the steps
/// have tests of their own below).
#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn suite_scenarios_run_to_an_explained_verdict() {
    let names = SUITE
        .iter()
        .filter(|n| !n.contains("weight") && !n.contains("add-remove"));
    // Side by side: each lasts its duration, and its verdict is the host's.
    let runs: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = names
            .map(|name| s.spawn(move || (name, run_json(&["run", &scenario(name)]))))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (name, (code, v, err)) in runs {
        assert_explained_verdict(name, code, &v);
        let reports = v["reports"].as_array().unwrap();
        assert!(
            reports.iter().all(|r| r["completed"] == true),
            "{name}: {err}"
        );
    }
}

/// The scenario files the suite runs (the benchmark tier expects each to
/// PASS on a quiet host).
pub(crate) const SUITE: [&str; 5] = [
    "tests/cpuset-split.toml",
    "tests/weight-1-4.toml",
    "tests/quota-step.toml",
    "tests/add-remove.toml",
    "annotated.toml",
];

/// The fair-share checks of a 1:4 weight split state what each group is
/// owed; whether it got it is judged in the benchmark tier. A group owed
/// less than 100 ms of CPU (the run got little on a busy host) is not
/// judged, so each check present is held to its group's share.
#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn a_one_to_four_weight_split_states_its_owed_shares() {
    let (code, v, _) = run_json(&["run", &scenario("tests/weight-1-4.toml")]);
    assert_explained_verdict("weight-1-4", code, &v);
    let fair: Vec<&Value> = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["name"] == "min_fair_share")
        .collect();
    assert!(fair.len() <= 2, "{fair:?}");
    // light is owed 20% of what the run got, heavy 80%.
    for check in &fair {
        let detail = &check["detail"][0];
        assert_eq!(detail["kind"], "fair_share", "{detail}");
        let owed = match check["group"].as_str().unwrap() {
            "light" => 20.0,
            "heavy" => 80.0,
            g => panic!("a fair-share check of an unknown group {g}"),
        };
        // As the report rounds it.
        let expected = detail["expected_pct"].as_f64().unwrap();
        assert_eq!(expected.round(), owed, "{detail}");
        let basis = detail["basis"].as_str().unwrap();
        assert!(
            basis == "cpu.shares 1024:4096" || basis == "cpu.weight 100:400",
            "{detail}"
        );
    }
    if fair.len() < 2 {
        eprintln!("a group was owed under 100 ms of CPU on this host: {fair:?}");
    }
}

#[test]
fn steps_add_and_remove_groups() {
    let (code, v, _) = run_json(&["run", &scenario("tests/add-remove.toml")]);
    assert_explained_verdict("add-remove", code, &v);
    let reports = v["reports"].as_array().unwrap();
    let of = |g: u64| {
        reports
            .iter()
            .filter(|r| r["group_idx"] == g)
            .collect::<Vec<_>>()
    };
    // Thread-mode workers report their own tids, inside runq's process.
    assert_eq!(of(1).len(), 2);
    // The late group joined at 300 ms and the leaver left at 800 ms of
    // 1500. A loaded host can start any worker late, the base one included
    // (a clean-clone CI run saw it start 670 ms late), so each bound is
    // held against the run's own phases, never against another worker.
    let ns = |k: &str| v[k].as_u64().unwrap();
    let (run_ns, collect_ns) = (ns("run_ns"), ns("collect_ns"));
    let late_wall = of(2)[0]["wall_time_ns"].as_u64().unwrap();
    let leaver_wall = of(3)[0]["wall_time_ns"].as_u64().unwrap();
    assert!(
        late_wall + 300_000_000 <= run_ns + collect_ns,
        "late {late_wall} run {run_ns} collect {collect_ns}"
    );
    assert!(
        leaver_wall > 0 && leaver_wall < run_ns,
        "leaver {leaver_wall} run {run_ns}"
    );
}

#[test]
fn impossible_bound_fails_with_exit_1() {
    let (code, v, _) = run_json(&["run", &scenario("tests/impossible-bound.toml")]);
    assert_eq!(code, Some(1));
    assert_eq!(v["verdict"], "fail");
    // The impossible bound fails whatever the host; a loaded host may
    // fail another bound too.
    let failed = failed_checks(&v);
    assert!(
        failed.iter().any(|c| c.contains("min_work_rate")),
        "{failed:?}"
    );
}

/// Starts the watchdog scenario, starves its worker for 2 s with a
/// SCHED_FIFO hog pinned to the worker's CPU, and returns the exit code
/// and JSON.
fn run_watchdog(extra: &[&str]) -> (Option<i32>, Value) {
    let _alone = crate::evidence::STARVATION
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let path = scenario("tests/watchdog.toml");
    let mut args = vec!["run", path.as_str(), "--json"];
    args.extend_from_slice(extra);
    let child = spawn(&args);
    let pid = child.id();
    // The scheduler is forked first and is also called runq until it has
    // exec'd `sleep`: wait for that, then the worker is the other child.
    let comm = |c: i32| std::fs::read_to_string(format!("/proc/{c}/comm")).unwrap_or_default();
    let worker = wait_for(
        Duration::from_secs(10),
        "the scheduler and the worker",
        || {
            let kids = children(pid);
            let scheduler_ready = kids.iter().any(|&c| comm(c).trim() == "sleep");
            let workers: Vec<i32> = kids
                .into_iter()
                .filter(|&c| comm(c).trim() == "runq")
                .collect();
            (scheduler_ready && workers.len() == 1).then(|| workers[0])
        },
    );
    std::thread::sleep(Duration::from_millis(200));
    runq_testkit::starve::RtHog::starve_for(worker, Duration::from_secs(2));
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        serde_json::from_slice(&out.stdout).unwrap(),
    )
}

#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn starved_worker_kills_the_scheduler_and_fails_the_run() {
    let (code, v) = run_watchdog(&[]);
    assert_eq!(code, Some(1));
    assert_eq!(v["verdict"], "fail");
    let death = &v["scheduler_death"];
    assert_eq!(death["command"], "sleep 600");
    assert_eq!(
        death["status"],
        format!("killed by signal {} (SIGUSR2)", libc::SIGUSR2)
    );
    assert_eq!(death["signal"], libc::SIGUSR2);
    // The worker that fired says when and what it saw.
    let fired = &v["reports"][0]["watchdog"];
    assert!(fired["stall_ms"].as_u64().unwrap() > 500, "{fired}");
    // The death comes within the hog's 2 s (later on a loaded host); a
    // run that went on to its end would last the scenario's 10 s.
    assert!(
        v["run_ns"].as_u64().unwrap() < 9_000_000_000,
        "the run should stop at the death"
    );
}

#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn repro_mode_keeps_the_scheduler_alive() {
    let (code, v) = run_watchdog(&["--repro", "--duration", "4s"]);
    assert!(v["scheduler_death"].is_null(), "{}", v["scheduler_death"]);
    assert!(v["reports"][0]["watchdog"].is_null());
    assert_eq!(v["verdict"], "pass", "{:?}", failed_checks(&v));
    assert_eq!(code, Some(0));
}

#[test]
fn a_long_partner_turn_does_not_fire_the_watchdog() {
    // Each turn spins about 3 s: the waiting partner is blocked, not
    // starved, and the spinner makes progress in every chunk.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pingpong.toml");
    std::fs::write(
        &path,
        "duration = \"2s\"\n[scheduler]\ncommand = \"sleep 600\"\nwatchdog = \"1s\"\n\
         [[group]]\nname = \"pp\"\nwork_type = \"FutexPingPong\"\nworkers = 2\n\
         params = { spin_iters = 700000000 }\n",
    )
    .unwrap();
    let (_, v, _) = run_json(&["run", path.to_str().unwrap(), "--no-cgroups"]);
    assert!(v["scheduler_death"].is_null(), "{}", v["scheduler_death"]);
    // Only a true stall may fire it: one the kernel saw as run delay (a
    // loaded host can starve a spinner for a second).
    for r in v["reports"].as_array().unwrap() {
        let delay = r["schedstat_run_delay_ns"].as_u64().unwrap();
        assert!(r["watchdog"].is_null() || delay >= 1_000_000_000, "{r}");
    }
}

#[test]
fn bad_scenario_files_name_file_line_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "unknown.toml",
            "duration = \"1s\"\nbogus = 1\n",
            ":2:",
            "unknown field `bogus`",
        ),
        (
            "cpuset.toml",
            "duration = 1\n[[cgroup]]\nname = \"a\"\ncpuset = \"0-9999\"\n",
            ":4: cpuset:",
            "not all online",
        ),
        (
            "negative.toml",
            "duration = \"-2s\"\n",
            ":1: duration:",
            "invalid duration",
        ),
        (
            "type.toml",
            "duration = 1\n[[group]]\nname = \"g\"\nwork_type = \"SpinWait\"\nworkers = \"x\"\n",
            ":5:",
            "invalid type",
        ),
    ];
    for (file, text, loc, msg) in cases {
        let path = dir.path().join(file);
        std::fs::write(&path, text).unwrap();
        let out = runq()
            .args(["run", path.to_str().unwrap()])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{file}: {err}");
        assert!(err.contains(&format!("{file}{loc}")), "{file}: {err}");
        assert!(err.contains(msg), "{file}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{file}: {err}");
    }
    let out = runq()
        .args(["run", "/nonexistent/x.toml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read the scenario file"));
}

#[test]
fn list_and_explain() {
    let out = runq().args(["run", "--list"]).output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("FutexPingPong"));
    let out = runq()
        .args(["run", "--explain", "Bursty"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("sleep overshoot"));
    let out = runq().args(["run", "--explain", "Burst"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}
