//! End-to-end tests of `runq run` against the real kernel.

use std::os::unix::process::CommandExt;
use std::time::Duration;

use crate::common::*;
use serde_json::Value;

fn json_of(out: &std::process::Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "bad JSON ({e}); stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

#[test]
fn default_scenario_runs_end_to_end() {
    let child = spawn(&["run", "--duration", "1", "--json", "--raw"]);
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    let v = json_of(&out);
    // The verdict is the host's: on hosts whose scheduler starves the
    // spinners against pipe pairs in a sibling cgroup (cgroup v1 here), or
    // on a busy host, a bound can FAIL; the report must explain it.
    assert_explained_verdict("default", out.status.code(), &v);
    for c in v["checks"].as_array().unwrap() {
        if c["pass"] == false && c["name"] == "min_fair_share" {
            let d = &c["detail"][0];
            assert_eq!(d["kind"], "fair_share", "{d}");
            assert!(d["got_pct"].is_f64() && d["expected_pct"].is_f64(), "{d}");
        }
    }
    let groups = v["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 2);
    let reports = v["reports"].as_array().unwrap();
    assert_eq!(reports.len(), 6);
    for r in reports {
        assert_eq!(r["completed"], true, "{r}");
        assert!(r["exit_info"].is_null());
        // A busy host may start a worker's loop late, or leave it waiting
        // for a CPU most of the second: it still ran, or waited.
        let wall = r["wall_time_ns"].as_u64().unwrap();
        assert!(wall > 0 && wall < 10_000_000_000, "{r}");
        let waited = r["schedstat_run_delay_ns"].as_u64().unwrap() * 2 >= wall;
        assert!(r["iterations"].as_u64().unwrap() > 0 || waited, "{r}");
    }
    let pipe: Vec<_> = reports.iter().filter(|r| r["group_idx"] == 1).collect();
    assert_eq!(pipe.len(), 4);
    for r in pipe {
        assert!(
            r["wake_sample_total"].as_u64().unwrap() > 0,
            "PipeIo recorded no wakes: {r}"
        );
        assert!(!r["resume_latencies_ns"].as_array().unwrap().is_empty());
    }
    assert_eq!(v["raw_samples"], true);
    assert!(v["scenario_spec"]["duration_ns"].as_u64() == Some(1_000_000_000));
    if runq_testkit::is_root() {
        assert_eq!(
            v["placement"]["cgroups"]["run_id"]
                .as_str()
                .map(|s| s.starts_with(&format!("{pid}-"))),
            Some(true)
        );
        assert!(
            run_dirs_of(pid).is_empty(),
            "cgroups left behind: {:?}",
            run_dirs_of(pid)
        );
    } else {
        eprintln!("skipped (cgroup part): needs root");
    }
}

#[test]
fn human_report_has_a_row_per_group() {
    let out = runq()
        .args(["run", "--duration", "0.3", "--no-cgroups"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    // The report is what this test reads; its verdict (0 PASS, 1 FAIL) is
    // the host's: a 0.3 s run can miss a fairness bound on a busy host.
    assert!(
        matches!(out.status.code(), Some(0 | 1 | 75)),
        "{:?}: {text}{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("wake p99"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("spinners") && l.contains("SpinWait")),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("pingpong") && l.contains("PipeIo")),
        "{text}"
    );
    assert!(!text.contains('\x1b'), "colors on a pipe");
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let cases: &[(&[&str], &str)] = &[
        (&["run", "--work-type", "SpinWiat"], "did you mean SpinWait"),
        (&["run", "--workers", "0"], "got 0 workers"),
        (&["run", "--workers", "many"], "not a number"),
        (&["run", "--duration", "0"], "greater than zero"),
        (&["run", "--duration", "soon"], "invalid duration"),
        (&["run", "--cgroup", "../etc"], "invalid cgroup path"),
        (&["run", "--cgroup", "/abs"], "invalid cgroup path"),
        (
            &["run", "--work-type", "PipeIo", "--workers", "3"],
            "even number",
        ),
        (&["run", "--param", "burst_iters"], "KEY=VALUE"),
        (
            &["run", "--color", "bogus"],
            "possible values: auto, always, never",
        ),
        (&["run", "--jsn"], "a similar argument exists: '--json'"),
        (
            &["run", "--work-type", "PipeIo", "--param", "nope=1"],
            "unknown parameter",
        ),
        (
            &["run", "--param", "spin_iters=abc"],
            "spin_iters=abc: expected a whole number",
        ),
        (&["run", "--duration=-1s"], "negative"),
        (&["run", "/dev/zero"], "a character device, not a file"),
        (
            &["run", "--work-type", "CgroupChurn", "--no-cgroups"],
            "needs one of its own",
        ),
        (
            &["run", "--work-type", "CgroupAttachStorm", "--no-cgroups"],
            "CgroupAttachStorm moves tasks between cgroups and needs one of its own",
        ),
        (
            &[
                "run",
                "--work-type",
                "NetTraffic",
                "--param",
                "proto=udp",
                "--param",
                "msg_bytes=70000",
            ],
            "does not fit one UDP datagram",
        ),
        (
            &["run", "--work-type", "WakeChain", "--param", "wake=signal"],
            "unknown variant",
        ),
    ];
    for (args, needle) in cases {
        let out = runq().args(*args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    }
}

#[test]
fn outputs_through_symlinks_or_on_one_path_are_refused_before_the_run() {
    let d = tempfile::tempdir().unwrap();
    let victim = d.path().join("victim");
    std::fs::write(&victim, "precious").unwrap();
    let link = d.path().join("out.json");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    let dangling = d.path().join("dangling.xml");
    std::os::unix::fs::symlink(d.path().join("created"), &dangling).unwrap();
    let same = d.path().join("same");
    let cases: Vec<(Vec<&std::ffi::OsStr>, &str, i32)> = vec![
        (
            vec!["--output".as_ref(), link.as_os_str()],
            "is a symlink",
            2,
        ),
        (
            vec!["--junit".as_ref(), dangling.as_os_str()],
            "is a symlink",
            2,
        ),
        (
            vec![
                "--output".as_ref(),
                same.as_os_str(),
                "--junit".as_ref(),
                same.as_os_str(),
            ],
            "--output and --junit name the same file",
            2,
        ),
    ];
    for (flags, needle, code) in cases {
        let out = runq()
            .args(["run", "--duration", "300ms", "--no-cgroups"])
            .args(&flags)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{flags:?}: {err}");
        assert!(err.contains(needle), "{flags:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{flags:?}: {err}");
        assert!(out.stdout.is_empty(), "refused before the run: no report");
    }
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    assert!(!d.path().join("created").exists());
    assert!(!same.exists());
}

#[test]
fn sigkill_of_runq_leaves_no_worker_alive() {
    let mut child = spawn(&["run", "--duration", "30", "--no-cgroups"]);
    let pid = child.id();
    let workers = wait_for(Duration::from_secs(10), "6 workers", || {
        let kids = children(pid);
        (kids.len() == 6).then_some(kids)
    });
    signal(pid as i32, libc::SIGKILL);
    child.wait().unwrap();
    wait_for(Duration::from_secs(5), "workers to die", || {
        workers.iter().all(|w| !alive(*w)).then_some(())
    });
}

#[test]
fn killed_worker_yields_signaled_sentinel() {
    let child = spawn(&[
        "run",
        "--work-type",
        "SpinWait",
        "--workers",
        "2",
        "--duration",
        "2",
        "--json",
        "--no-cgroups",
    ]);
    let pid = child.id();
    let victim = wait_for(Duration::from_secs(10), "2 workers", || {
        let kids = children(pid);
        (kids.len() == 2).then(|| kids[0])
    });
    signal(victim, libc::SIGKILL);
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "a dead worker must fail the run"
    );
    let v = json_of(&out);
    let reports = v["reports"].as_array().unwrap();
    let dead: Vec<_> = reports
        .iter()
        .filter(|r| !r["exit_info"].is_null())
        .collect();
    assert_eq!(dead.len(), 1, "{reports:?}");
    assert_eq!(dead[0]["exit_info"]["signaled"], 9);
    assert_eq!(dead[0]["completed"], false);
    assert_eq!(dead[0]["tid"], victim);
}

#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn sigint_stops_collects_and_removes_cgroups() {
    // Spinners in one cgroup, not the default scenario: on cgroup-v1 hosts
    // the kernel may starve its spinners (the guide's `runq run` chapter),
    // and a worker that never
    // ran before the signal has no work to show.
    let child = spawn(&[
        "run",
        "--work-type",
        "SpinWait",
        "--workers",
        "6",
        "--cgroup",
        "sigint",
        "--duration",
        "30",
        "--json",
    ]);
    let pid = child.id();
    wait_for(Duration::from_secs(10), "workers placed", || {
        (children(pid).len() == 6).then_some(())
    });
    assert!(!run_dirs_of(pid).is_empty(), "no run cgroups while running");
    // Spinners spin only once started: the run has begun when one has run
    // 100 ms (on a busy host the start can come well after the fork).
    wait_for(Duration::from_secs(20), "a spinner at work", || {
        children(pid)
            .iter()
            .any(|&c| ran_ns(c) >= 100_000_000)
            .then_some(())
    });
    signal(pid as i32, libc::SIGINT);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    let v = json_of(&out);
    assert_eq!(v["interrupted"], true);
    let reports = v["reports"].as_array().unwrap();
    assert_eq!(reports.len(), 6);
    // An interrupted run waits up to 300 ms for reports, then kills the rest:
    // on a busy host a spinner may get no CPU in the run (it reports
    // completed with no work) or in that time (it is reported as timed
    // out), or its start may come after the signal (it says so); either
    // way it is accounted for.
    let unexplained: Vec<_> = reports
        .iter()
        .filter(|r| {
            r["completed"] != true
                && r["exit_info"] != "timed_out"
                && r["start_error"] != "interrupted before the start"
        })
        .collect();
    assert!(
        unexplained.is_empty(),
        "neither collected nor timed out: {unexplained:#?}"
    );
    // The spinner that ran 100 ms before the signal shows it: in its own
    // report, or, timed out, in the CPU time runq read for it (a CI host
    // starved by its hypervisor gave six spinners 14 ms of CPU each in
    // 3.6 s, and none reported within the window).
    assert!(
        reports.iter().any(|r| r["work_units"].as_u64().unwrap() > 0
            || (r["exit_info"] == "timed_out"
                && r["cpu_time_ns"].as_u64().unwrap() >= 100_000_000)),
        "no spinner did any work in the run: {reports:#?}"
    );
    assert!(
        run_dirs_of(pid).is_empty(),
        "cgroups left: {:?}",
        run_dirs_of(pid)
    );
}

#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn explicit_cgroup_without_privilege_exits_77() {
    // Run as nobody: cgroups cannot be created, and the run asked for one.
    let mut cmd = runq();
    cmd.args([
        "run",
        "--work-type",
        "SpinWait",
        "--workers",
        "1",
        "--duration",
        "0.2",
        "--cgroup",
        "x",
    ]);
    cmd.uid(65534).gid(65534); // nobody
    let out = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(77), "{err}");
    assert!(err.contains("need root"), "{err}");
    // The default scenario still runs for that user, unplaced.
    let mut cmd = runq();
    cmd.args(["run", "--duration", "0.3"]);
    cmd.uid(65534).gid(65534); // nobody
    let out = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("without cgroups"), "{err}");
}

#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn many_workers_in_a_cgroup() {
    let out = runq()
        .args([
            "run",
            "--work-type",
            "SpinWait",
            "--workers",
            "64",
            "--duration",
            "0.5",
            "--cgroup",
            "scale/a",
            "--json",
        ])
        .output()
        .unwrap();
    // This tests scale: 64 workers placed, run and reported. 64 spinners
    // for 0.5 s on a loaded 2-CPU machine may fail a gap or fairness check
    // (exit 1, or 75 when the load outside the run accounts for it); a
    // run error (3) or a usage error (2) is a failure.
    assert!(
        matches!(out.status.code(), Some(0 | 1 | 75)),
        "{:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json_of(&out);
    let reports = v["reports"].as_array().unwrap();
    assert_eq!(reports.len(), 64);
    // Each worker reports, or, starved of a CPU up to the collect
    // deadline (a CI host starved by its hypervisor), is named so.
    let lost: Vec<_> = reports
        .iter()
        .filter(|r| r["completed"] != true && r["runnable_at_deadline"] != true)
        .collect();
    assert!(lost.is_empty(), "unexplained reports: {lost:#?}");
}

/// The loop clock is recorded, and `RUNQ_CLOCK=monotonic` forces
/// CLOCK_MONOTONIC; either clock gives a cross-process wake figure.
#[test]
fn the_loop_clock_is_recorded_and_can_be_forced() {
    let trusted =
        std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource")
            .is_ok_and(|s| s.trim() == "tsc");
    for (forced, want) in [
        (None, if trusted { "tsc" } else { "monotonic" }),
        (Some("monotonic"), "monotonic"),
    ] {
        let mut cmd = runq();
        cmd.args(["run", "--work-type", "WakeChain", "--workers", "3"])
            .args(["--duration", "0.5", "--no-cgroups", "--json"]);
        match forced {
            Some(v) => cmd.env("RUNQ_CLOCK", v),
            None => cmd.env_remove("RUNQ_CLOCK"),
        };
        let doc = json_of(&cmd.output().unwrap());
        assert_eq!(doc["host"]["loop_clock"], want, "RUNQ_CLOCK={forced:?}");
        let g = &doc["groups"][0];
        let (p50, total) = (g["wake_p50_ns"].as_u64(), g["wake_total"].as_u64());
        assert!(total.unwrap_or(0) > 0, "no wakes: {g}");
        // A hop across processes: above zero, below the run itself.
        assert!(p50.is_some_and(|p| p > 0 && p < 500_000_000), "p50 {p50:?}");
    }
}

#[test]
fn completions_are_generated() {
    let out = runq().args(["completions", "bash"]).output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("runq"));
}

/// Runs 3 SpinWait workers with `RUNQ_FAULT=fault`, in a cgroup when root.
fn run_with_fault(fault: &str, cgroup: bool) -> (std::process::Output, Value, u32) {
    let mut args = vec![
        "run",
        "--work-type",
        "SpinWait",
        "--workers",
        "3",
        "--duration",
        "0.5",
        "--json",
    ];
    if cgroup {
        args.extend(["--cgroup", "faults/a"]);
    } else {
        args.push("--no-cgroups");
    }
    let mut cmd = runq();
    cmd.args(&args)
        .env("RUNQ_FAULT", fault)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = cmd.spawn().unwrap();
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    let v = json_of(&out);
    (out, v, pid)
}

#[test]
fn a_fault_at_every_start_up_step_still_gives_a_full_report() {
    let root = runq_testkit::is_root();
    if !root {
        eprintln!("skipped (placement step, cgroups): needs root");
    }
    // (fault, exit code, exit_info of worker 1, start_error needle)
    let cases: &[(&str, i32, &str, Option<&str>)] = &[
        ("fork:1", 3, "not_started", None),
        (
            "place:1",
            1,
            "signaled",
            Some("placement in faults/a: injected"),
        ),
        ("start:1", 1, "signaled", Some("start byte: Broken pipe")),
        ("first:1", 1, "signaled", None),
    ];
    let cases = cases.iter().filter(|c| root || !c.0.starts_with("place"));
    // The runs go side by side; each is judged by its own pid.
    let runs: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = cases
            .map(|c| s.spawn(move || (c, run_with_fault(c.0, root))))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (&(fault, code, shape, start_error), (out, v, pid)) in runs {
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{fault}: {err}");
        assert_eq!(v["verdict"], "fail", "{fault}");
        let reports = v["reports"].as_array().unwrap();
        assert_eq!(reports.len(), 3, "{fault}: {reports:?}");
        let dead: Vec<&Value> = reports
            .iter()
            .filter(|r| !r["exit_info"].is_null())
            .collect();
        // A fork failure leaves worker 2 unforked as well.
        let want_dead = if fault.starts_with("fork") { 2 } else { 1 };
        assert_eq!(dead.len(), want_dead, "{fault}: {reports:?}");
        let info = &dead[0]["exit_info"][shape];
        match shape {
            "not_started" => assert!(info.as_str().unwrap().contains("fork"), "{info}"),
            _ => assert_eq!(info, 9, "{fault}: {:?}", dead[0]),
        }
        match start_error {
            Some(needle) => {
                let got = dead[0]["start_error"].as_str().unwrap_or_default();
                assert!(got.contains(needle), "{fault}: {got:?}");
            }
            None => assert!(dead[0]["start_error"].is_null(), "{fault}"),
        }
        if fault.starts_with("fork") {
            let why = v["run_error"].as_str().unwrap();
            assert!(why.contains("injected fault fork:1"), "{why}");
            assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        } else {
            assert!(v["run_error"].is_null(), "{fault}");
        }
        for r in reports {
            let tid = r["tid"].as_i64().unwrap() as i32;
            assert!(
                tid == 0 || !alive(tid),
                "{fault}: worker {tid} outlived runq"
            );
        }
        assert!(run_dirs_of(pid).is_empty(), "{fault}: cgroups left");
    }
}

#[test]
fn a_bad_fault_spec_is_a_usage_error() {
    let out = runq()
        .args(["run", "--duration", "0.1", "--no-cgroups"])
        .env("RUNQ_FAULT", "boom:1")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("RUNQ_FAULT"), "{err}");
}

/// A scenario of `workers` SpinWait workers in one cgroup (when root).
fn crowd_scenario(dir: &std::path::Path, workers: usize) -> std::path::PathBuf {
    let cgroup = if runq_testkit::is_root() {
        "[[cgroup]]\nname = \"crowd\"\n"
    } else {
        ""
    };
    let place = if runq_testkit::is_root() {
        "cgroup = \"crowd\"\n"
    } else {
        ""
    };
    let path = dir.join("crowd.toml");
    std::fs::write(
        &path,
        format!(
            "duration = \"5s\"\n{cgroup}[[group]]\nname = \"many\"\nwork_type = \"SpinWait\"\nworkers = {workers}\n{place}"
        ),
    )
    .unwrap();
    path
}

#[test]
fn a_run_the_host_cannot_hold_is_refused_before_the_first_fork() {
    let dir = tempfile::tempdir().unwrap();
    let scn = crowd_scenario(dir.path(), 100_000);
    let child = spawn(&["run", scn.to_str().unwrap()]);
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("100000 workers is more than 1024 per CPU"),
        "{err}"
    );
    assert!(err.contains("--max-workers-per-cpu"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(run_dirs_of_if_root(pid).is_empty());
}

/// `run_dirs_of` where cgroups can exist (root), nothing otherwise.
fn run_dirs_of_if_root(pid: u32) -> Vec<std::path::PathBuf> {
    if runq_testkit::is_root() {
        run_dirs_of(pid)
    } else {
        Vec::new()
    }
}

/// SIGINT while 2,000 workers are forked: exit 130, every worker reaped,
/// no cgroup left (how fast is the benchmark tier's figure).
#[test]
fn sigint_during_the_spawn_of_2000_workers_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let scn = crowd_scenario(dir.path(), 2000);
    let child = spawn(&["run", scn.to_str().unwrap()]);
    let pid = child.id();
    wait_for(Duration::from_secs(20), "the first workers", || {
        (children(pid).len() > 50).then_some(())
    });
    signal(pid as i32, libc::SIGINT);
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(130), "{text}");
    assert!(text.contains("verdict: INTERRUPTED"), "{text}");
    // Workers are forks of runq: their command line names the scenario.
    assert_eq!(processes_naming(scn.to_str().unwrap()), 0, "workers left");
    assert!(run_dirs_of_if_root(pid).is_empty(), "cgroups left behind");
}

/// Live processes whose command line contains `needle`.
fn processes_naming(needle: &str) -> usize {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .filter(|c| String::from_utf8_lossy(c).contains(needle))
        .count()
}

/// Without --raw the document keeps the summaries and drops the
/// reservoirs of samples: a pair of ping-pong workers' 1 s document stays
/// small.
#[test]
fn json_carries_raw_samples_only_when_asked() {
    let out = crate::common::runq()
        .args(["run", "--work-type", "FutexPingPong", "--workers", "2"])
        .args(["--duration", "500ms", "--no-cgroups", "--json"])
        .output()
        .unwrap();
    let v = json_of(&out);
    assert_eq!(v["raw_samples"], false);
    for r in v["reports"].as_array().unwrap() {
        assert!(r["resume_latencies_ns"].as_array().unwrap().is_empty());
        assert!(r["wake_sample_total"].as_u64().unwrap() > 0);
    }
    assert!(
        v["groups"][0]["wake_p99_ns"].as_u64().unwrap() > 0,
        "the summary stays"
    );
    assert!(out.stdout.len() < 200_000, "{} bytes", out.stdout.len());
}

/// Parameters at the top of their ranges cannot outlast the stop: a spin
/// of 10^12 units, an ALU loop of 10^12 rounds and a 1024 x 1024 matrix
/// product each stop within their run, well before the 5 s deadline at
/// which runq kills a worker that has not reported.
#[test]
fn the_largest_parameters_still_stop_in_time() {
    for (work, param, workers) in [
        ("SpinWait", "spin_iters=1000000000000", "2"),
        ("AluHot", "rounds=1000000000000", "2"),
        ("FanOutCompute", "matrix_size=1024", "3"),
        ("Schbench", "cache_footprint_kb=24576", "3"),
        ("Taobench", "miss_us=3600000000", "3"),
        ("Taobench", "cache_kb=262144", "3"),
        ("FutexPingPong", "spin_iters=1000000000000", "2"),
        ("IrqWake", "period_us=3600000000", "2"),
        ("IrqWake", "handler_iters=1000000000000", "2"),
        ("NetTraffic", "msg_bytes=1048576", "2"),
        ("NetTraffic", "spin_iters=1000000000000", "2"),
    ] {
        let out = runq()
            .args([
                "run",
                "--work-type",
                work,
                "--param",
                param,
                "--workers",
                workers,
            ])
            .args(["--duration", "300ms", "--no-cgroups", "--json"])
            .output()
            .unwrap();
        let doc = json_of(&out);
        for r in doc["reports"].as_array().unwrap() {
            assert!(r["exit_info"].is_null(), "{work} {param}: {r}");
            assert_eq!(r["completed"], true, "{work} {param}: {r}");
        }
        // Collected long before the deadline (a loaded host may still
        // starve a worker, which not_stuck then rightly reports).
        assert!(
            doc["collect_ns"].as_u64().unwrap() < 4_000_000_000,
            "{work} {param}"
        );
    }
}
